/*
** test_inject.c: failure injection at the runtime's call sites
** (runtime/rt_inject.h, issue #16 item 7). A counting run of a scenario
** lists every allocation and SQLite site it calls; then, for each site,
** one run fails the site's first call and one fails a later call. Every
** such run must end by itself (a verdict, or a scenario error), free what it
** allocated (asan build), fire its target, and give the same trace hash
** when run again with the same target. The disarmed run's hash must equal
** a run with the seam never armed.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "scenarios/scn.h"

#define MAX_SITES 1024

typedef struct one_run {
  int rc, passed;
  uint64_t hash;
  char failure[160];
} one_run;

static scn_scenario SC;

/* Removes every file of dir (the databases of a file-backed run). */
static void empty_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[1024];
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
}

static one_run run_case(int ci) {
  scn_result res;
  one_run r = {0};
  if (SC.cases[ci].cfg.storage_files) empty_dir(SC.cases[ci].cfg.storage_dir);
  r.rc = scn_run_case(&SC, ci, SC.seed, SC.strategy, &res);
  r.passed = res.passed;
  r.hash = res.trace_hash;
  snprintf(r.failure, sizeof r.failure, "%.150s", res.failure);
  scn_result_free(&res);
  return r;
}

/* Fails call nth of site s in case ci twice: it fires, and both runs agree. */
static void fail_once(const char *file, int ci, const rt_inject_site *s, uint64_t nth,
                      int *fired) {
  rt_inject_target(s->file, s->line, nth);
  one_run a = run_case(ci);
  int f = rt_inject_fired();
  rt_inject_target(s->file, s->line, nth);
  one_run b = run_case(ci);
  rt_inject_off();
  if (a.hash != b.hash || a.passed != b.passed || a.rc != b.rc || f != rt_inject_fired())
    fail_msg("%s case %d: failing %s:%d call %llu twice gave %016llx/%d then %016llx/%d",
             file, ci, s->file, s->line, (unsigned long long)nth,
             (unsigned long long)a.hash, a.passed, (unsigned long long)b.hash, b.passed);
  if (!f)
    fail_msg("%s case %d: %s:%d call %llu was counted but never failed", file, ci, s->file,
             s->line, (unsigned long long)nth);
  *fired += f;
}

/* The sweep of case ci of one scenario file (over database files in
** `dir` when dir is not NULL); returns the sites swept. */
static int sweep_in(const char *file, int ci, const char *dir) {
  char err[512];
  if (scn_load(file, &SC, err, sizeof err) != 0) fail_msg("%s", err);
  if (dir) {
    SC.cases[ci].cfg.storage_files = 1;
    snprintf(SC.cases[ci].cfg.storage_dir, sizeof SC.cases[ci].cfg.storage_dir, "%s", dir);
  }
  one_run plain = run_case(ci);
  rt_inject_count();
  one_run counted = run_case(ci);
  rt_inject_off();
  assert_int_equal(counted.hash, plain.hash); /* counting changes nothing */
  const rt_inject_site *view;
  int n = rt_inject_sites(&view);
  static rt_inject_site sites[MAX_SITES];
  assert_true(n > 0 && n <= MAX_SITES);
  memcpy(sites, view, (size_t)n * sizeof *sites);
  int fired = 0;
  for (int i = 0; i < n; i++) {
    fail_once(file, ci, &sites[i], 1, &fired);
    if (sites[i].calls > 1) fail_once(file, ci, &sites[i], 1 + sites[i].calls / 2, &fired);
  }
  scn_free(&SC);
  return n;
}

static int sweep(const char *file, int ci) { return sweep_in(file, ci, NULL); }

/* 1 if the file's runs fork worker processes (their calls are not counted
** here: test_sweep_file_storage covers file-backed storage in-process). */
static int sigkill_file(const char *file) {
  char err[512];
  scn_scenario sc;
  if (scn_load(file, &sc, err, sizeof err) != 0) fail_msg("%s", err);
  int k = scn_has_sigkill(&sc);
  scn_free(&sc);
  return k;
}

/* The counting pass sees the sites a scenario reaches, in a stable order. */
static void test_sites_counted_in_order(void **st) {
  (void)st;
  char err[512];
  assert_int_equal(scn_load("scenarios/examples/fiber-crash-recover.json", &SC, err, sizeof err), 0);
  rt_inject_count();
  run_case(0);
  rt_inject_off();
  const rt_inject_site *s;
  int n = rt_inject_sites(&s);
  assert_true(n > 5);
  int storage = 0;
  for (int i = 0; i < n; i++) {
    assert_true(s[i].calls > 0);
    if (i) {
      int c = strcmp(s[i - 1].file, s[i].file);
      assert_true(c < 0 || (c == 0 && s[i - 1].line < s[i].line));
    }
    storage += strcmp(s[i].file, "runtime/rt_storage.c") == 0;
  }
  assert_true(storage > 0);
  /* A target that is never reached fails nothing and changes nothing. */
  one_run plain = run_case(0);
  rt_inject_target("runtime/rt_storage.c", 1, 1);
  one_run none = run_case(0);
  rt_inject_off();
  assert_false(rt_inject_fired());
  assert_int_equal(none.hash, plain.hash);
  scn_free(&SC);
}

static void test_sweep_declarative(void **st) {
  (void)st;
  sweep("scenarios/examples/fiber-crash-recover.json", 0);
  sweep("scenarios/examples/storage-fail.json", 0);
  sweep("scenarios/examples/gate-timeout.json", 0);
  sweep("scenarios/examples/slow-recovery-hook.json", 0);
  sweep("scenarios/incidents/agents-1729.json", 0);
  sweep("scenarios/examples/keepalive-dispose.json", 0);
  sweep("scenarios/examples/recovery-drop.json", 0);
  sweep("scenarios/conformance/fiber-recover-multiple.json", 0);
  sweep("scenarios/conformance/fiber-hook-throws.json", 0);
  sweep("scenarios/conformance/wake-entry-points.json", 0);
}

static void test_sweep_schedules(void **st) {
  (void)st;
  sweep("scenarios/examples/schedules-keepalive.json", 0);
  sweep("scenarios/examples/alarm-wake.json", 0);
  sweep("scenarios/conformance/schedule-cron.json", 0);
}

static void test_sweep_lua(void **st) {
  (void)st;
  sweep("scenarios/examples/lua-effects-once.json", 0);
  sweep("scenarios/scripted/orders.json", 0);
  sweep("scenarios/scripted/hook-throws-once.json", 0);
  sweep("scenarios/scripted/subagent.json", 0);
  sweep("scenarios/scripted/onstart-schedule.json", 0);
}

static void test_sweep_chat(void **st) {
  (void)st;
  sweep("scenarios/examples/chat-recovery.json", 0);
  sweep("scenarios/conformance/chat-direct-calls.json", 0);
  sweep("scenarios/conformance/chat-orphan-continuation-merges.json", 0);
  sweep("scenarios/incidents/agents-1630.json", 0);
}

static void test_sweep_toolrun(void **st) {
  (void)st;
  sweep("scenarios/examples/toolrun-onstart.json", 0);
  sweep("scenarios/examples/toolrun-stuck-child.json", 0);
  sweep("scenarios/examples/lua-toolruns-settle.json", 0);
}

static void test_sweep_executor_thread(void **st) {
  (void)st;
  sweep("scenarios/examples/executor-checkpoints.json", 0);
  sweep("scenarios/examples/thread-store.json", 0);
  sweep("scenarios/incidents/agents-1703.json", 0);
}

/* With REVENANT_INJECT_ALL=1 (main): every file of the library (case 0, no sigkill
** runs), about half a minute of CPU at -O2: for a runtime change that adds
** sites or failure paths (docs/bench.md). */
static void test_sweep_library(void **st) {
  (void)st;
  static const char *const dirs[] = {"scenarios/examples", "scenarios/scripted",
                                     "scenarios/regression", "scenarios/incidents",
                                     "scenarios/conformance"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    struct dirent **names;
    int n = scandir(dirs[i], &names, NULL, alphasort); /* by name: a fixed order */
    assert_true(n >= 0);
    for (int k = 0; k < n; k++) {
      char path[1024];
      size_t len = strlen(names[k]->d_name);
      snprintf(path, sizeof path, "%s/%s", dirs[i], names[k]->d_name);
      if (len > 5 && strcmp(names[k]->d_name + len - 5, ".json") == 0 && !sigkill_file(path))
        sweep(path, 0);
      free(names[k]);
    }
    free(names);
  }
}

/* File-backed storage (WAL databases, as the generations of a sigkill run
** use): opening files, the pragmas, the schema of a new file. */
static void test_sweep_file_storage(void **st) {
  (void)st;
  char dir[] = "/tmp/revenant-inject-XXXXXX";
  assert_non_null(mkdtemp(dir));
  sweep_in("scenarios/examples/fiber-crash-recover.json", 0, dir);
  sweep_in("scenarios/scripted/orders.json", 0, dir);
  empty_dir(dir);
  rmdir(dir);
}

/* The line of runtime/rt_storage.c that prepares an SDK statement (found
** in the source, so that the test follows the file), or -1. */
static int prepare_line(void) {
  FILE *f = fopen("runtime/rt_storage.c", "r");
  char line[512];
  int n = 0, at = -1;
  assert_non_null(f);
  while (at < 0 && fgets(line, sizeof line, f)) {
    n++;
    if (strstr(line, "sqlite3_prepare_v3(d->db, m->sql[k]")) at = n;
  }
  fclose(f);
  return at;
}

/* Every call of the statement prepare site fails once in turn (each
** statement of the agent store is prepared once per database, so every
** statement's refusal path runs): each run ends by itself, fires, and
** repeats its hash. Returns the calls swept. */
static int sweep_prepare(const char *file) {
  char err[512];
  int line = prepare_line(), fired = 0;
  assert_true(line > 0);
  if (scn_load(file, &SC, err, sizeof err) != 0) fail_msg("%s", err);
  rt_inject_count();
  run_case(0);
  rt_inject_off();
  const rt_inject_site *view, *site = NULL;
  int n = rt_inject_sites(&view);
  for (int i = 0; i < n; i++)
    if (!strcmp(view[i].file, "runtime/rt_storage.c") && (view[i].line == line || view[i].line == line + 1))
      site = &view[i];
  assert_non_null(site);
  rt_inject_site s = *site;
  assert_true(s.calls > 3);
  for (uint64_t nth = 1; nth <= s.calls; nth++) fail_once(file, 0, &s, nth, &fired);
  assert_int_equal((uint64_t)fired, s.calls);
  scn_free(&SC);
  return (int)s.calls;
}

static void test_sweep_every_prepare(void **st) {
  (void)st;
  int n = sweep_prepare("scenarios/examples/fiber-crash-recover.json");
  n += sweep_prepare("scenarios/examples/schedules-keepalive.json");
  n += sweep_prepare("scenarios/conformance/schedule-cron.json");
  n += sweep_prepare("scenarios/examples/toolrun-onstart.json");
  print_message("prepare calls failed one by one: %d\n", n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites_counted_in_order),
      cmocka_unit_test(test_sweep_declarative),
      cmocka_unit_test(test_sweep_schedules),
      cmocka_unit_test(test_sweep_lua),
      cmocka_unit_test(test_sweep_chat),
      cmocka_unit_test(test_sweep_toolrun),
      cmocka_unit_test(test_sweep_executor_thread),
      cmocka_unit_test(test_sweep_file_storage),
      cmocka_unit_test(test_sweep_every_prepare),
  };
  const struct CMUnitTest library[] = {cmocka_unit_test(test_sweep_library)};
  const char *all = getenv("REVENANT_INJECT_ALL");
  if (all && strcmp(all, "1") == 0) return cmocka_run_group_tests(library, NULL, NULL);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
