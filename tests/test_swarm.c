/*
 * test_swarm.c: tests for `revenant swarm` and `revenant merge`
 * (cli/cmd_swarm.c over scenarios/scn_swarm.c, cli/cmd_merge.c), run through the binary ($REVENANT,
 * default ./revenant; run from the repository root).
 *
 * Checked: the same seeds give byte-identical stdout and results JSON with
 * -j 1 and -j 2 (several files and cases, with failures); the shards of a
 * seed range (--shard and the Slurm variables) cover it exactly once with
 * the same trace hashes as the unsharded run, and `merge` of the shards
 * equals the unsharded run; a worker that segfaults on one seed
 * (REVENANT_TEST_CRASH_SEED) or hangs (REVENANT_TEST_HANG_SEED, --timeout)
 * is reported as a failure with that seed while every other seed runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char g_dir[64];

static const char *bin(void) {
  const char *b = getenv("REVENANT");
  return b && *b ? b : "./revenant";
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (buf) buf[n] = 0;
  fclose(f);
  return buf;
}

/* Runs `env bin args > dir/out 2> dir/err`; returns the exit status. */
static int run(const char *env, const char *out, const char *fmt, ...) {
  char args[1024], cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "%s %s %s > %s/%s 2> %s/%s.err", env ? env : "", bin(), args, g_dir, out,
           g_dir, out);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *file_in_dir(const char *name) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  return slurp(path);
}

static int files_equal(const char *a, const char *b) {
  char *x = file_in_dir(a), *y = file_in_dir(b);
  int eq = x && y && strcmp(x, y) == 0;
  free(x);
  free(y);
  return eq;
}

static int setup(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "/tmp/revenant-test-swarm-XXXXXX");
  return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
  char cmd[128];
  (void)state;
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* The runs of a results file as "variant seed hash passed" lines. */
static char *runs_of(const char *name, int *n_runs, int *n_failed) {
  char *text = file_in_dir(name), *out = calloc(1, 1 << 20);
  cJSON *doc = text ? cJSON_Parse(text) : NULL, *r;
  size_t o = 0;
  *n_runs = *n_failed = 0;
  assert_non_null(doc);
  assert_string_equal(cJSON_GetObjectItem(doc, "schema")->valuestring, "revenant.results/1");
  cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "runs")) {
    int passed = cJSON_IsTrue(cJSON_GetObjectItem(r, "passed"));
    o += (size_t)snprintf(out + o, (1 << 20) - o, "%s %s %s %s %d\n",
                          cJSON_GetObjectItem(r, "scenario")->valuestring,
                          cJSON_GetObjectItem(r, "variant")->valuestring,
                          cJSON_GetObjectItem(r, "seed")->valuestring,
                          cJSON_GetObjectItem(r, "trace_hash")->valuestring, passed);
    (*n_runs)++;
    *n_failed += !passed;
  }
  cJSON_Delete(doc);
  free(text);
  return out;
}

#define FILES "swarm scenarios/examples/keepalive-dispose.json scenarios/examples/evict-restart-rates.json"

static void test_j1_equals_j2(void **state) {
  int n1, f1, n2, f2;
  (void)state;
  int rc1 = run(NULL, "j1.out", FILES " --seeds 16 -j 1 --json %s/j1.json --repro-dir %s/r1", g_dir, g_dir);
  int rc2 = run(NULL, "j2.out", FILES " --seeds 16 -j 2 --json %s/j2.json --repro-dir %s/r1", g_dir, g_dir);
  assert_int_equal(rc1, rc2);
  assert_true(rc1 == 0 || rc1 == 1);
  assert_true(files_equal("j1.json", "j2.json"));
  assert_true(files_equal("j1.out", "j2.out"));
  char *a = runs_of("j1.json", &n1, &f1), *b = runs_of("j2.json", &n2, &f2);
  assert_int_equal(n1, 16 * 3 + 16);
  assert_string_equal(a, b);
  assert_int_equal(rc1, f1 ? 1 : 0);
  free(a);
  free(b);
}

/* Seeds of the runs of case `variant` in a results file, as a bitmap. */
static void seeds_of(const char *name, uint64_t base, int *count, int n) {
  char *text = file_in_dir(name);
  cJSON *doc = cJSON_Parse(text), *r;
  assert_non_null(doc);
  cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "runs")) {
    uint64_t s = strtoull(cJSON_GetObjectItem(r, "seed")->valuestring, NULL, 16);
    assert_true(s >= base && s < base + (uint64_t)n);
    count[s - base]++;
  }
  cJSON_Delete(doc);
  free(text);
}

#define SHARD_FILE "swarm scenarios/examples/keepalive-dispose.json --seeds 23 --seed-base 100 -q"

static void test_shards_cover_once(void **state) {
  int count[23] = {0}, n, f;
  (void)state;
  assert_true(run(NULL, "all.out", SHARD_FILE " --json %s/all.json --repro-dir %s/r2", g_dir, g_dir) <= 1);
  for (int i = 1; i <= 4; i++) {
    char name[32];
    snprintf(name, sizeof name, "s%d.json", i);
    assert_true(run(NULL, "s.out", SHARD_FILE " --shard %d/4 --json %s/%s --repro-dir %s/r2", i, g_dir,
                    name, g_dir) <= 1);
    seeds_of(name, 100, count, 23);
  }
  for (int k = 0; k < 23; k++) assert_int_equal(count[k], 3); /* 3 cases, each seed once */
  /* Slurm array ids 7..10 (SLURM_ARRAY_TASK_MIN 7): id 9 is shard 3/4. */
  assert_true(run("SLURM_ARRAY_TASK_ID=9 SLURM_ARRAY_TASK_MIN=7 SLURM_ARRAY_TASK_COUNT=4", "slurm.out",
                  SHARD_FILE " --json %s/slurm.json --repro-dir %s/r2", g_dir, g_dir) <= 1);
  assert_true(files_equal("slurm.json", "s3.json"));
  assert_true(run("JOB_COMPLETION_INDEX=2 REVENANT_SHARD_COUNT=4", "k8s.out",
                  SHARD_FILE " --json %s/k8s.json --repro-dir %s/r2", g_dir, g_dir) <= 1);
  assert_true(files_equal("k8s.json", "s3.json"));
  /* merge of the shards = the unsharded run */
  int rc = run(NULL, "merge.out", "merge %s/s1.json %s/s2.json %s/s3.json %s/s4.json -o %s/merged.json",
               g_dir, g_dir, g_dir, g_dir, g_dir);
  assert_true(rc == 0 || rc == 1);
  char *a = runs_of("merged.json", &n, &f), *b = runs_of("all.json", &n, &f);
  assert_string_equal(a, b);
  assert_true(files_equal("merged.json", "all.json"));
  free(a);
  free(b);
}

static void test_crash_reported_with_seed(void **state) {
  int n, f;
  (void)state;
  /* handle_segv=0: under AddressSanitizer the worker must still die of the signal */
  int rc = run("ASAN_OPTIONS=handle_segv=0 REVENANT_TEST_CRASH_SEED=0x66", "crash.out",
               "swarm scenarios/examples/gate-timeout.json --seeds 8 --seed-base 0x63 -j 2 --json %s/crash.json "
               "--repro-dir %s/r3",
               g_dir, g_dir);
  assert_int_equal(rc, 1);
  char *out = file_in_dir("crash.out"), *runs = runs_of("crash.json", &n, &f);
  assert_non_null(strstr(out, "seed=0x66"));
  assert_non_null(strstr(out, "SIGSEGV"));
  assert_non_null(strstr(out, "crash:SIGSEGV"));
  assert_non_null(strstr(out, "7 passed, 1 failed"));
  assert_int_equal(n, 8);
  assert_int_equal(f, 1);
  assert_non_null(strstr(runs, " 0x66 0x0000000000000000 0\n"));
  char path[256];
  snprintf(path, sizeof path, "%s/r3/swarm-gate-timeout-default-0x66.json", g_dir);
  char *repro = slurp(path);
  assert_non_null(repro);
  assert_non_null(strstr(repro, "\"seed\":\t\"0x66\""));
  free(repro);
  free(out);
  free(runs);
}

static void test_hang_times_out(void **state) {
  (void)state;
  int rc = run("REVENANT_TEST_HANG_SEED=0x64", "hang.out",
               "swarm scenarios/examples/gate-timeout.json --seeds 4 --seed-base 0x63 -j 2 --timeout 500ms -q "
               "--repro-dir %s/r4", g_dir);
  assert_int_equal(rc, 1);
  char *out = file_in_dir("hang.out");
  assert_non_null(strstr(out, "timeout/-/-"));
  assert_non_null(strstr(out, "0x64"));
  assert_non_null(strstr(out, "3 passed, 1 failed"));
  free(out);
}

static void test_usage_errors(void **state) {
  (void)state;
  assert_int_equal(run(NULL, "u1.out", "swarm scenarios/examples/gate-timeout.json"), 2);
  assert_int_equal(run(NULL, "u2.out", "swarm scenarios/examples/gate-timeout.json --seeds 3 --shard 5/4"), 2);
  assert_int_equal(run(NULL, "u3.out", "swarm scenarios/examples/gate-timeout.json --seeds 3 --case nope"), 2);
  assert_int_equal(run("JOB_COMPLETION_INDEX=1", "u4.out", "swarm scenarios/examples/gate-timeout.json --seeds 3"), 2);
  assert_int_equal(run(NULL, "u5.out", "merge scenarios/examples/gate-timeout.json"), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_j1_equals_j2),
      cmocka_unit_test(test_shards_cover_once),
      cmocka_unit_test(test_crash_reported_with_seed),
      cmocka_unit_test(test_hang_times_out),
      cmocka_unit_test(test_usage_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
