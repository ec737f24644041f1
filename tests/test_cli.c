/*
** test_cli.c: the command line as a user meets it: exit codes, the final
** line, bad input, reports, repro and replay, crash points. Runs the binary
** named by $REVENANT (default ./revenant) from the repository root.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 16];
static const char *bin(void) {
  const char *b = getenv("REVENANT");
  return b && *b ? b : "./revenant";
}

/* Runs `revenant ARGS` (stdout and stderr together into out); returns the
** exit status. */
static int rv(const char *fmt, ...) {
  char args[1024], cmd[1400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin(), args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const char *last_line(void) {
  size_t n = strlen(out);
  while (n > 0 && out[n - 1] == '\n') out[--n] = 0;
  const char *nl = strrchr(out, '\n');
  return nl ? nl + 1 : out;
}

static char tmpdir[] = "/tmp/revenant-cli-XXXXXX";

static int setup(void **st) {
  (void)st;
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **st) {
  char cmd[128];
  (void)st;
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) != 0;
}

static void test_version_and_help(void **st) {
  (void)st;
  assert_int_equal(rv("--version"), 0);
  assert_non_null(strstr(out, "revenant "));
  assert_int_equal(rv("--help"), 0);
  assert_non_null(strstr(out, "commands:"));
  assert_int_equal(rv("run --help"), 0);
  assert_non_null(strstr(out, "--crash-points"));
  assert_int_equal(rv("check --help"), 0);
  assert_int_equal(rv("replay --help"), 0);
}

static void test_usage_errors(void **st) {
  (void)st;
  assert_int_equal(rv(""), 2);
  assert_int_equal(rv("frobnicate"), 2);
  assert_non_null(strstr(out, "unknown command 'frobnicate'"));
  assert_int_equal(rv("run --bogus tests/corpus/cli/passing.json"), 2);
  assert_non_null(strstr(out, "unknown option --bogus"));
  assert_int_equal(rv("run"), 2);
  assert_int_equal(rv("run tests/corpus/cli/passing.json --seed"), 2);
  assert_int_equal(rv("run tests/corpus/cli/passing.json --seed xyz"), 2);
  assert_int_equal(rv("run tests/corpus/cli/passing.json --seeds 5..2"), 2);
  assert_int_equal(rv("run tests/corpus/cli/passing.json --strategy lifo"), 2);
  assert_int_equal(rv("run /no/such/file.json"), 2);
}

static void test_run_pass_and_final_line(void **st) {
  (void)st;
  assert_int_equal(rv("run tests/corpus/cli/passing.json"), 0);
  assert_string_equal(last_line(), "1 passed, 0 failed");
  assert_int_equal(rv("run tests/corpus/cli/passing.json --seeds 1..3 --strategy random"), 0);
  assert_string_equal(last_line(), "3 passed, 0 failed");
  assert_int_equal(rv("run tests/corpus/cli/passing.json --check-determinism -q"), 0);
  assert_string_equal(last_line(), "1 passed, 0 failed");
  assert_null(strchr(out, '\n')); /* -q: nothing but the summary */
}

static void test_run_fail_repro_replay(void **st) {
  (void)st;
  assert_int_equal(rv("run tests/corpus/cli/failing.json --repro-dir %s", tmpdir), 1);
  assert_string_equal(last_line(), "0 passed, 1 failed");
  assert_non_null(strstr(out, "expected no_wedge to hold"));
  assert_non_null(strstr(out, "replay: revenant run"));
  char repro[512];
  snprintf(repro, sizeof repro, "%s/repro-failing-cli-failing-default-0x1.json", tmpdir);
  assert_int_equal(access(repro, R_OK), 0);
  assert_int_equal(rv("replay %s", repro), 0);
  assert_non_null(strstr(out, "REPRODUCED"));
}

static void test_check_bad_file(void **st) {
  (void)st;
  assert_int_equal(rv("check scenarios/examples"), 0);
  assert_non_null(strstr(out, " 0 invalid"));
  assert_int_equal(rv("check tests/corpus/scenario_bad/duplicate_actor_id.json"), 2);
  assert_non_null(strstr(out, "duplicate_actor_id.json:"));
  assert_non_null(strstr(out, "1 invalid"));
  int line = 0, col = 0;
  const char *p = strstr(out, ".json:");
  assert_non_null(p);
  assert_int_equal(sscanf(p, ".json:%d:%d:", &line, &col), 2);
  assert_true(line > 0 && col > 0);
}

static void test_reports_written(void **st) {
  (void)st;
  char cmd[1024];
  assert_int_equal(rv("run tests/corpus/cli/passing.json -q --json %s/r.json --junit %s/r.xml "
                      "--trace %s/t.json", tmpdir, tmpdir, tmpdir), 0);
  snprintf(cmd, sizeof cmd, "%s/r.json", tmpdir);
  FILE *f = fopen(cmd, "r");
  assert_non_null(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = 0;
  fclose(f);
  cJSON *doc = cJSON_Parse(out);
  assert_non_null(doc);
  assert_string_equal(cJSON_GetObjectItem(doc, "schema")->valuestring, "revenant.results/1");
  cJSON_Delete(doc);
  snprintf(cmd, sizeof cmd, "command -v xmllint >/dev/null || exit 0; xmllint --noout %s/r.xml", tmpdir);
  assert_int_equal(system(cmd), 0);
}

/* Reads the whole file path into out; returns its length. */
static size_t slurp(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = 0;
  fclose(f);
  return n;
}

/* --html on run (more runs than the first allocation of run records:
** their report fields must survive the realloc), replay and swarm; the
** page is the same bytes on a second run. */
static void test_html_reports(void **st) {
  (void)st;
  char path[512], cmd[1200];
  assert_int_equal(rv("run tests/corpus/cli/passing.json -q --seeds 1..40 --json %s/m.json "
                      "--html %s/m.html", tmpdir, tmpdir), 0);
  snprintf(path, sizeof path, "%s/m.json", tmpdir);
  slurp(path);
  cJSON *doc = cJSON_Parse(out);
  assert_non_null(doc);
  cJSON *runs = cJSON_GetObjectItem(doc, "runs");
  assert_int_equal(cJSON_GetArraySize(runs), 40);
  assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 39), "replay")->valuestring,
                         "--seed 0x28"));
  cJSON_Delete(doc);
  snprintf(path, sizeof path, "%s/m.html", tmpdir);
  slurp(path);
  assert_int_equal(strncmp(out, "<!DOCTYPE html>", 15), 0);
  snprintf(cmd, sizeof cmd, "grep -q '\"seed\":\"0x28\"' %s/m.html && tail -1 %s/m.html | grep -q '</html>'",
           tmpdir, tmpdir);
  assert_int_equal(system(cmd), 0); /* the 40th run, and the page is complete */
  assert_int_equal(rv("run tests/corpus/cli/failing.json -q --repro-dir %s --html %s/f1.html", tmpdir, tmpdir), 1);
  assert_int_equal(rv("run tests/corpus/cli/failing.json -q --repro-dir %s --html %s/f2.html", tmpdir, tmpdir), 1);
  snprintf(cmd, sizeof cmd, "cmp -s %s/f1.html %s/f2.html", tmpdir, tmpdir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(rv("replay \"$(ls %s/repro-*cli-failing-default-0x1.json | head -n 1)\" --html %s/rp.html",
                      tmpdir, tmpdir), 0);
  snprintf(path, sizeof path, "%s/rp.html", tmpdir);
  slurp(path);
  assert_non_null(strstr(out, "\"viols\":[\n{\"inv\":\"no_wedge\""));
  assert_int_equal(rv("replay --html"), 2);
  assert_int_equal(rv("swarm tests/corpus/cli/failing.json --seeds 4 -j 1 -q --repro-dir %s --html %s/s.html",
                      tmpdir, tmpdir), 1);
  snprintf(path, sizeof path, "%s/s.html", tmpdir);
  slurp(path);
  assert_non_null(strstr(out, "\"swarm\":{"));
  assert_non_null(strstr(out, "\"count\":4"));
}

static void test_crash_points_find_lost_work(void **st) {
  (void)st;
  assert_int_equal(rv("run tests/corpus/cli/throwing-hook.json"), 0);
  assert_int_equal(rv("run tests/corpus/cli/throwing-hook.json --crash-points"), 1);
  assert_non_null(strstr(out, "FAIL crash-points cli-throwing-hook"));
  assert_non_null(strstr(out, "--crash-at"));
  assert_int_equal(rv("run tests/corpus/cli/passing.json --crash-points"), 0);
  assert_non_null(strstr(out, "PASS crash-points"));
  assert_int_equal(rv("run tests/corpus/cli/throwing-hook.json --crash-at 3"), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_and_help),
      cmocka_unit_test(test_usage_errors),
      cmocka_unit_test(test_run_pass_and_final_line),
      cmocka_unit_test(test_run_fail_repro_replay),
      cmocka_unit_test(test_check_bad_file),
      cmocka_unit_test(test_reports_written),
      cmocka_unit_test(test_html_reports),
      cmocka_unit_test(test_crash_points_find_lost_work),
  };
  return cmocka_run_group_tests_name("cli", tests, setup, teardown) != 0;
}
