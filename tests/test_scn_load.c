/*
 * test_scn_load.c: tests for the scenario loader (scenarios/scn_load.c).
 *
 * Every file in tests/corpus/scenario_bad/ must be rejected with exactly the
 * "line:col: message" its manifest (EXPECTED) gives, and every file there
 * must be listed; a wrong expectation must be caught. The good files in
 * tests/corpus/scenario_good/ must load, and their fields (defaults, repeat
 * expansion, cases, rates, every field of the format) are asserted. Limits
 * (actors, steps, stale rows) are checked with generated text. Run from the
 * repository root (SCN_BAD_DIR and SCN_GOOD_DIR override the corpus paths).
 */
#define _POSIX_C_SOURCE 200809L /* opendir */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/scn.h"

#define BAD_DIR "tests/corpus/scenario_bad"
#define GOOD_DIR "tests/corpus/scenario_good"
#define S(x) ((int64_t)(x) * 1000000LL)
#define MS(x) ((int64_t)(x) * 1000LL)

static scn_scenario g_sc; /* large: kept off the stack */
static int g_quiet;       /* set while deliberately checking wrong expectations */

static const char *bad_dir(void) {
  const char *d = getenv("SCN_BAD_DIR");
  return d ? d : BAD_DIR;
}

static const char *good_dir(void) {
  const char *d = getenv("SCN_GOOD_DIR");
  return d ? d : GOOD_DIR;
}

/* Loads good_dir()/name, which must succeed, into g_sc. */
static scn_scenario *load_good(const char *name) {
  char path[512], err[1024] = "";
  snprintf(path, sizeof path, "%s/%s", good_dir(), name);
  int rc = scn_load(path, &g_sc, err, sizeof err);
  if (rc != 0) print_error("%s\n", err);
  assert_int_equal(rc, 0);
  assert_string_equal(g_sc.file, path);
  assert_non_null(g_sc.source);
  return &g_sc;
}

/* Loads text that must fail with exactly "t.json:" + expect. */
static void load_bad_text(const char *text, const char *expect) {
  char err[1024] = "", want[1024];
  snprintf(want, sizeof want, "t.json:%s", expect);
  assert_int_equal(scn_load_text("t.json", text, strlen(text), &g_sc, err, sizeof err), -1);
  assert_string_equal(err, want);
  assert_null(g_sc.source);
}

/* ---------------------------------------------------------------- bad corpus */

/* Checks that dir/name fails with exactly "dir/name:" + expect; 0 on a match. */
static int check_bad_case(const char *dir, const char *name, const char *expect) {
  char path[512], want[1024], err[1024] = "";
  int rc;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(want, sizeof want, "%s:%s", path, expect);
  rc = scn_load(path, &g_sc, err, sizeof err);
  scn_free(&g_sc);
  if (g_quiet && (rc == 0 || strcmp(err, want) != 0)) return 1;
  if (rc == 0) {
    print_error("%s: accepted, expected \"%s\"\n", name, expect);
    return 1;
  }
  if (strcmp(err, want) != 0) {
    print_error("%s:\n   got: %s\n  want: %s\n", name, err, want);
    return 1;
  }
  return 0;
}

/* Reads the manifest, checking each entry; returns mismatches (+1 if unreadable). */
static int run_manifest(const char *dir, int *cases, char names[][128], int max_names) {
  char path[512], line[1024];
  int bad = 0;
  FILE *f;
  snprintf(path, sizeof path, "%s/EXPECTED", dir);
  if (!(f = fopen(path, "r"))) {
    print_error("cannot open %s (run the tests from the repository root)\n", path);
    return 1;
  }
  *cases = 0;
  while (fgets(line, sizeof line, f)) {
    char *tab = strchr(line, '\t');
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0') continue;
    if (!tab) {
      print_error("EXPECTED: no tab in line \"%s\"\n", line);
      bad++;
      continue;
    }
    *tab = '\0';
    if (*cases < max_names) snprintf(names[*cases], 128, "%.127s", line);
    (*cases)++;
    bad += check_bad_case(dir, line, tab + 1);
  }
  fclose(f);
  return bad;
}

/* Counts files in dir (other than EXPECTED and dot files) missing from names. */
static int unlisted_files(const char *dir, char names[][128], int n) {
  DIR *dh = opendir(dir);
  struct dirent *e;
  int missing = 0, k;
  if (!dh) return 1;
  while ((e = readdir(dh))) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "EXPECTED") == 0) continue;
    for (k = 0; k < n && strcmp(names[k], e->d_name) != 0; k++)
      ;
    if (k == n) {
      print_error("%s/%s is not listed in EXPECTED\n", dir, e->d_name);
      missing++;
    }
  }
  closedir(dh);
  return missing;
}

static void test_bad_corpus(void **state) {
  static char names[256][128];
  int cases = 0;
  (void)state;
  assert_int_equal(run_manifest(bad_dir(), &cases, names, 256), 0);
  assert_true(cases >= 50 && cases <= 256);
  assert_int_equal(unlisted_files(bad_dir(), names, cases), 0);
}

/* A wrong column, a wrong message, a missing file or an accepted file is caught. */
static void test_wrong_expectation_is_caught(void **state) {
  (void)state;
  g_quiet = 1;
  assert_int_equal(check_bad_case(bad_dir(), "missing_name.json",
                                  "1:1: missing required field \"name\""), 0);
  assert_int_equal(check_bad_case(bad_dir(), "missing_name.json",
                                  "1:2: missing required field \"name\""), 1);
  assert_int_equal(check_bad_case(bad_dir(), "missing_name.json",
                                  "1:1: missing required field \"nam\""), 1);
  assert_int_equal(check_bad_case(bad_dir(), "no_such_file.json", "1:1: x"), 1);
  assert_int_equal(check_bad_case(good_dir(), "minimal.json", "1:1: x"), 1);
  g_quiet = 0;
}

/* ---------------------------------------------------------------- good files */

static void test_minimal_defaults(void **state) {
  scn_scenario *sc = load_good("minimal.json");
  rt_config def;
  chk_params p;
  (void)state;
  rt_config_default(&def);
  chk_params_default(&p);
  assert_string_equal(sc->name, "minimal");
  assert_string_equal(sc->description, "");
  assert_int_equal(sc->seed, 1);
  assert_int_equal(sc->duration_us, S(60));
  assert_int_equal(sc->strategy, SIM_FIFO);
  assert_int_equal(sc->pct_depth, 3);
  assert_int_equal(sc->n_actors, 1);
  assert_string_equal(sc->actors[0].id, "solo");
  assert_string_equal(sc->actors[0].cls, "Agent");
  assert_int_equal(sc->actors[0].on_start_us, 0);
  assert_int_equal(sc->actors[0].on_start_throws, RT_THROW_NEVER);
  assert_int_equal(sc->actors[0].stuck, RT_STUCK_NONE);
  assert_int_equal(sc->actors[0].n_children + sc->actors[0].n_policies, 0);
  assert_int_equal(sc->n_programs + sc->n_work + sc->n_faults + sc->n_stale, 0);
  assert_int_equal(sc->n_cases, 1);
  assert_string_equal(sc->cases[0].label, "default");
  assert_int_equal(sc->cases[0].hold_mask | sc->cases[0].violate_mask, 0);
  assert_string_equal(sc->cases[0].expect_text, "");
  assert_int_equal(sc->cases[0].cfg.gate_ceiling_us, def.gate_ceiling_us);
  assert_int_equal(sc->cases[0].cfg.idle_max_us, def.idle_max_us);
  assert_int_equal(sc->cases[0].cfg.toolrun, def.toolrun);
  assert_int_equal(sc->cases[0].cfg.commit_window_us, def.commit_window_us);
  assert_int_equal(sc->params.wedge_k, p.wedge_k);
  assert_int_equal(sc->params.serve_bound_us, p.serve_bound_us);
  assert_int_equal(sc->params.enabled_mask, p.enabled_mask);
  assert_int_equal(strncmp(sc->source, "// The smallest scenario", 24), 0);
  scn_free(sc);
}

static void assert_step(const rt_step *s, rt_step_kind kind, int64_t lo, int64_t hi) {
  assert_int_equal(s->kind, kind);
  assert_int_equal(s->min_us, lo);
  assert_int_equal(s->max_us, hi);
}

static void test_repeat_expansion(void **state) {
  scn_scenario *sc = load_good("repeat.json");
  const rt_program *p = &sc->programs[0];
  int k, r;
  (void)state;
  assert_int_equal(sc->n_programs, 2);
  assert_string_equal(p->name, "outer");
  assert_ptr_equal(p->steps, sc->steps[0]);
  assert_int_equal(p->n_steps, 18); /* 1 + 2 * (1 + 3 * 2 + 1) + 1 */
  assert_step(&p->steps[0], RT_STEP_WORK, S(1), S(1));
  for (r = 0; r < 2; r++) {
    const rt_step *b = &p->steps[1 + r * 8];
    assert_int_equal(b[0].kind, RT_STEP_EFFECT);
    assert_string_equal(b[0].name, "a");
    for (k = 0; k < 3; k++) {
      assert_step(&b[1 + 2 * k], RT_STEP_WORK, MS(10), MS(20));
      assert_int_equal(b[2 + 2 * k].kind, RT_STEP_STASH);
    }
    assert_int_equal(b[7].kind, RT_STEP_CALL);
    assert_int_equal(b[7].target, 1);
  }
  assert_int_equal(p->steps[17].kind, RT_STEP_FAIL);
  assert_string_equal(sc->programs[1].name, "max");
  assert_ptr_equal(sc->programs[1].steps, sc->steps[1]);
  assert_int_equal(sc->programs[1].n_steps, SCN_MAX_STEPS);
  assert_int_equal(sc->programs[1].steps[255].kind, RT_STEP_STASH);
  assert_int_equal(sc->work[0].kind, SCN_W_FIBER);
  assert_int_equal(sc->work[0].program, 0);
  scn_free(sc);
}

static void test_cases(void **state) {
  scn_scenario *sc = load_good("cases.json");
  (void)state;
  assert_int_equal(sc->seed, 12345);
  assert_int_equal(sc->n_cases, 3);
  assert_string_equal(sc->cases[0].label, "gated");
  assert_int_equal(sc->cases[0].cfg.toolrun, RT_TOOLRUN_GATED);
  assert_int_equal(sc->cases[0].cfg.rpc_latency_us, MS(5));
  assert_int_equal(sc->cases[0].cfg.heartbeat, RT_HB_SCHEDULE);
  assert_int_equal(sc->cases[0].hold_mask, 0);
  assert_int_equal(sc->cases[0].violate_mask,
                   (1u << CHK_NO_WEDGE) | (1u << CHK_RECOVERY_FINISHES));
  assert_string_equal(sc->cases[0].expect_text, "violate: no_wedge, recovery_finishes");
  assert_string_equal(sc->cases[1].label, "deferred");
  assert_int_equal(sc->cases[1].cfg.toolrun, RT_TOOLRUN_DEFERRED);
  assert_int_equal(sc->cases[1].cfg.rpc_latency_us, MS(3));
  assert_int_equal(sc->cases[1].cfg.heartbeat, RT_HB_SCHEDULE);
  assert_int_equal(sc->cases[1].hold_mask, (1u << CHK_NO_WEDGE) | (1u << CHK_STARTUP_SNAPSHOT));
  assert_int_equal(sc->cases[1].violate_mask, 1u << CHK_KEEPALIVE_HOLDS);
  assert_string_equal(sc->cases[1].expect_text,
                      "hold: no_wedge, startup_snapshot; violate: keepalive_holds");
  assert_string_equal(sc->cases[2].label, "plain");
  assert_int_equal(sc->cases[2].cfg.rpc_latency_us, MS(3));
  assert_string_equal(sc->cases[2].expect_text, "");
  assert_int_equal(sc->actors[0].n_children, 1);
  assert_int_equal(sc->actors[0].children[0], 1);
  scn_free(sc);
}

static void test_rates(void **state) {
  scn_scenario *sc = load_good("rates.json");
  const scn_fault *f = sc->faults;
  (void)state;
  assert_int_equal(sc->seed, 0xdeadbeefcafef00dULL);
  assert_int_equal(sc->n_faults, 5);
  assert_int_equal(f[0].kind, FLT_EVICT);
  assert_int_equal(f[0].actor, RT_NO_ACTOR);
  assert_int_equal(f[0].at_us, -1);
  assert_int_equal(f[0].per_day, 2);
  assert_int_equal(f[0].until_us, 0);
  assert_int_equal(f[1].actor, 1);
  assert_int_equal(f[1].per_day, 72);
  assert_int_equal(f[1].until_us, S(86400));
  assert_int_equal(f[2].kind, FLT_RESTART);
  assert_int_equal(f[2].per_day, 100000);
  assert_int_equal(f[3].kind, FLT_STORAGE_FAIL);
  assert_int_equal(f[3].ppm, 10000);
  assert_int_equal(f[3].count, 0);
  assert_int_equal(f[3].per_day, 24);
  assert_int_equal(f[3].until_us, S(12 * 3600));
  assert_int_equal(f[4].kind, FLT_SIGKILL);
  assert_int_equal(f[4].at_us, S(2 * 86400)); /* "at" may equal the duration */
  assert_int_equal(f[4].per_day, 0);
  scn_free(sc);
}

static void check_full_header(const scn_scenario *sc) {
  const rt_config *c = &sc->cases[0].cfg;
  assert_string_equal(sc->description, "every field");
  assert_int_equal(sc->seed, 42);
  assert_int_equal(sc->strategy, SIM_PCT);
  assert_int_equal(sc->pct_depth, 5);
  assert_int_equal(c->heartbeat, RT_HB_SCHEDULE);
  assert_int_equal(c->dispose, RT_DISPOSE_FIXED);
  assert_int_equal(c->toolrun, RT_TOOLRUN_GATED);
  assert_int_equal(c->commit, RT_COMMIT_IMMEDIATE);
  assert_int_equal(c->commit_window_us, MS(5));
  assert_int_equal(c->gate_ceiling_us, S(20));
  assert_int_equal(c->keepalive_interval_us, S(15));
  assert_int_equal(c->heartbeat_schedule_us, S(5));
  assert_int_equal(c->idle_min_us, S(60));
  assert_int_equal(c->idle_max_us, S(90));
  assert_int_equal(c->alarm_retry_base_us, S(1));
  assert_int_equal(c->alarm_retry_max, 0);
  assert_int_equal(c->rpc_latency_us, 0);
  assert_int_equal(c->inspect_timeout_us, S(3));
  assert_int_equal(c->inspect_total_us, S(8));
  assert_int_equal(c->alarm_limit_us, S(600));
  assert_int_equal(c->hook_timeout_us, S(60));
  assert_int_equal(c->workerd_name_bug, 1);
  assert_int_equal(sc->params.wedge_k, 4);
  assert_int_equal(sc->params.serve_bound_us, S(120));
  assert_int_equal(sc->params.recovery_bound_us, S(180));
  assert_int_equal(sc->params.keepalive_idle_us, S(240));
  assert_int_equal(sc->cases[0].hold_mask,
                   (1u << CHK_RECOVERY_FINISHES) | (1u << CHK_STASH_DURABLE));
  assert_int_equal(sc->cases[0].violate_mask, 1u << CHK_NO_WEDGE);
  assert_string_equal(sc->cases[0].expect_text,
                      "hold: recovery_finishes, stash_durable; violate: no_wedge");
}

static void check_full_actors(const scn_scenario *sc) {
  const rt_actor_spec *p = &sc->actors[0], *c = &sc->actors[1];
  assert_int_equal(sc->n_actors, 3);
  assert_string_equal(p->cls, "ParentAgent");
  assert_int_equal(p->n_children, 2);
  assert_int_equal(p->children[0], 1);
  assert_int_equal(p->children[1], 2);
  assert_int_equal(p->on_start_us, MS(100));
  assert_int_equal(p->on_start_throws, RT_THROW_UNTIL_FRESH_REQUEST);
  assert_int_equal(p->serve_us, MS(2));
  assert_int_equal(p->child_inspect_us, MS(7));
  assert_int_equal(p->n_policies, 2);
  assert_string_equal(p->policies[0].fiber_name, "job");
  assert_int_equal(p->policies[0].action, RT_RECOVER_RESTART);
  assert_int_equal(p->policies[0].hook_us, MS(40));
  assert_string_equal(p->policies[1].fiber_name, "");
  assert_int_equal(p->policies[1].action, RT_RECOVER_THROW);
  assert_int_equal(c->stuck, RT_STUCK_LATE);
  assert_int_equal(c->stuck_delay_us, S(5));
  assert_int_equal(c->on_start_throws, RT_THROW_ALWAYS);
  assert_string_equal(sc->actors[2].cls, "Agent");
  assert_int_equal(sc->actors[2].stuck, RT_STUCK_NEVER_ANSWERS);
  assert_int_equal(sc->actors[2].policies[0].action, RT_RECOVER_DROP);
}

static void check_full_stale(const scn_scenario *sc) {
  const scn_stale *s = sc->stale;
  assert_int_equal(sc->n_stale, 5);
  assert_true(s[0].is_toolrun && s[0].actor == 0 && s[0].child == 1);
  assert_int_equal(s[0].status, RT_TR_STARTING);
  assert_int_equal(s[0].child_status, RT_TR_ABORTED);
  assert_true(s[1].is_toolrun && s[1].child == 2);
  assert_int_equal(s[1].status, RT_TR_RUNNING);
  assert_int_equal(s[1].child_status, 0);
  assert_true(!s[2].is_toolrun && s[2].actor == 0 && s[2].program == 0);
  assert_int_equal(s[2].snapshot, 3);
  assert_int_equal(s[3].program, 1);
  assert_int_equal(s[3].snapshot, -1);
  assert_int_equal(s[4].snapshot, -1);
}

static void check_full_programs_work(const scn_scenario *sc) {
  const rt_step *j = sc->programs[0].steps;
  const scn_work *w = sc->work;
  assert_int_equal(sc->programs[0].n_steps, 5);
  assert_step(&j[0], RT_STEP_WORK, MS(500), MS(500));
  assert_string_equal(j[1].name, "log");
  assert_int_equal(j[2].kind, RT_STEP_STASH);
  assert_true(j[3].kind == RT_STEP_CALL && j[3].target == 1);
  assert_int_equal(j[4].kind, RT_STEP_FAIL);
  assert_step(&sc->programs[1].steps[0], RT_STEP_WORK, MS(100), MS(900));
  assert_int_equal(sc->n_work, 4);
  assert_true(w[0].kind == SCN_W_REQUEST && w[0].actor == 0 && w[0].entry == RT_ENTRY_SETNAME);
  assert_true(w[0].at_us == S(1) && w[0].every_us == S(30) && w[0].until_us == S(540));
  assert_true(w[1].actor == 1 && w[1].entry == RT_ENTRY_FETCH && w[1].at_us == 0);
  assert_true(w[1].every_us == 0 && w[1].until_us == S(600));
  assert_true(w[2].kind == SCN_W_FIBER && w[2].program == 0 && w[2].actor == 0);
  assert_true(w[2].every_us == S(60) && w[2].until_us == S(600));
  assert_true(w[3].kind == SCN_W_TOOLRUN && w[3].actor == 0 && w[3].child == 1);
  assert_true(w[3].work_us == S(10) && w[3].at_us == S(3));
}

static void check_full_faults(const scn_scenario *sc) {
  const scn_fault *f = sc->faults;
  static const flt_kind kinds[] = {FLT_EVICT, FLT_RESTART, FLT_CRASH, FLT_SIGKILL,
                                   FLT_STUCK_CHILD, FLT_STUCK_CHILD, FLT_STORAGE_FAIL,
                                   FLT_STORAGE_FAIL, FLT_STORAGE_FAIL, FLT_RPC_DELAY,
                                   FLT_RPC_DROP, FLT_ALARM_DELAY, FLT_GATE_TIMEOUT};
  int k;
  assert_int_equal(sc->n_faults, 13);
  for (k = 0; k < 13; k++) {
    assert_int_equal(f[k].kind, kinds[k]);
    assert_int_equal(f[k].per_day, 0);
  }
  assert_true(f[0].actor == 1 && f[0].at_us == S(1));
  assert_true(f[1].actor == RT_NO_ACTOR && f[2].at_us == 3001000);
  assert_true(f[4].actor == 1 && f[4].stuck == RT_STUCK_LATE && f[4].delay_us == S(6));
  assert_true(f[4].at_us == 0);
  assert_true(f[5].actor == 2 && f[5].stuck == RT_STUCK_STARTUP && f[5].delay_us == 0);
  assert_true(f[6].actor == 0 && f[6].count == 2 && f[6].ppm == 0);
  assert_true(f[7].actor == RT_NO_ACTOR && f[7].count == 0 && f[7].ppm == 10000);
  assert_true(f[8].count == 1 && f[8].ppm == 0);
  assert_true(f[9].delay_us == S(3) && f[10].ppm == 100000 && f[11].delay_us == S(1));
  assert_true(f[12].actor == 0 && f[12].delay_us == S(31) && f[12].at_us == S(600));
}

static void test_full(void **state) {
  scn_scenario *sc = load_good("full.json");
  (void)state;
  check_full_header(sc);
  check_full_actors(sc);
  check_full_stale(sc);
  check_full_programs_work(sc);
  check_full_faults(sc);
  scn_free(sc);
}

/* The walk-through scenario of docs/scenarios.md. */
static void test_walkthrough(void **state) {
  scn_scenario *sc = load_good("walkthrough.json");
  (void)state;
  assert_string_equal(sc->name, "nightly-sync");
  assert_int_equal(sc->n_cases, 2);
  assert_int_equal(sc->programs[0].n_steps, 24);
  scn_free(sc);
}

/* Every file of the good corpus loads. */
static void test_every_good_file(void **state) {
  DIR *dh = opendir(good_dir());
  struct dirent *e;
  int n = 0;
  (void)state;
  assert_non_null(dh);
  while ((e = readdir(dh))) {
    if (e->d_name[0] == '.') continue;
    load_good(e->d_name);
    scn_free(&g_sc);
    n++;
  }
  closedir(dh);
  assert_true(n >= 6);
}

/* ---------------------------------------------------------------- API and limits */

static void test_api(void **state) {
  static const char ok[] = "{\"name\": \"x\", \"duration\": \"1s\", \"actors\": [{\"id\": \"a\"}]}";
  char err[16];
  (void)state;
  assert_int_equal(scn_load_text(NULL, ok, strlen(ok), &g_sc, NULL, 0), 0);
  assert_string_equal(g_sc.file, "<input>");
  assert_string_equal(g_sc.source, ok);
  scn_free(&g_sc);
  assert_null(g_sc.source);
  scn_free(&g_sc); /* twice is harmless */
  scn_free(NULL);
  /* len bounds the text; a short buffer gets a cut, terminated message. */
  assert_int_equal(scn_load_text("t.json", ok, 10, &g_sc, err, sizeof err), -1);
  assert_string_equal(err, "t.json:1:10: un"); /* unterminated string */
  assert_null(g_sc.source);
  assert_int_equal(scn_load("tests/corpus/scenario_good/none.json", &g_sc, err, sizeof err), -1);
  assert_int_equal(strncmp(err, "tests/corpus/", 13), 0);
  load_bad_text("", "1:1: expected a value: the file is empty (or only whitespace and comments)");
}

/* Appends printf-style text to a growing buffer. */
static void add(char **buf, size_t *len, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  *buf = realloc(*buf, *len + (size_t)n + 1);
  assert_non_null(*buf);
  va_start(ap, fmt);
  vsnprintf(*buf + *len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  *len += (size_t)n;
}

/* 64 actors load, 65 do not; the unknown-actor list is cut with "...". */
static void test_actor_limit(void **state) {
  char *t = NULL, want[64];
  size_t n = 0;
  int k;
  (void)state;
  add(&t, &n, "{\"name\": \"x\", \"duration\": \"1s\", \"actors\": [");
  for (k = 0; k < 64; k++) add(&t, &n, "%s{\"id\": \"actor-number-%02d\"}", k ? "," : "", k);
  add(&t, &n, "]}");
  assert_int_equal(scn_load_text("t.json", t, n, &g_sc, NULL, 0), 0);
  assert_int_equal(g_sc.n_actors, 64);
  scn_free(&g_sc);
  t[n - 2] = '\0';
  n -= 2;
  add(&t, &n, ",{\"id\": \"one-more\"}]}");
  snprintf(want, sizeof want, "1:43: \"actors\": expected 1 to 64 actors, found 65");
  load_bad_text(t, want);
  t[n - 21] = '\0'; /* drop ,{"id": "one-more"}]} */
  n -= 21;
  add(&t, &n, "], \"workload\": [{\"request\": \"zz\"}]}");
  {
    char err[1024];
    assert_int_equal(scn_load_text("t.json", t, n, &g_sc, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown actor \"zz\"; declared actors: actor-number-00, "));
    assert_non_null(strstr(err, ", ..."));
  }
  free(t);
}

/* 256 expanded steps load, 257 do not; 64 stale rows load, 65 do not. */
static void test_step_and_stale_limits(void **state) {
  char *t = NULL;
  size_t n = 0;
  int k;
  (void)state;
  add(&t, &n, "{\"name\": \"x\", \"duration\": \"1s\",\n\"programs\": {\"p\": [");
  add(&t, &n, "{\"repeat\": 255, \"steps\": [{\"stash\": true}]}, {\"fail\": true}]},\n");
  add(&t, &n, "\"actors\": [{\"id\": \"a\", \"stale\": {\"fibers\": [");
  for (k = 0; k < 64; k++) add(&t, &n, "%s{\"program\": \"p\", \"snapshot\": 256}", k ? "," : "");
  add(&t, &n, "]}}]}");
  assert_int_equal(scn_load_text("t.json", t, n, &g_sc, NULL, 0), 0);
  assert_int_equal(g_sc.programs[0].n_steps, 256);
  assert_int_equal(g_sc.n_stale, 64);
  assert_int_equal(g_sc.stale[63].snapshot, 256);
  scn_free(&g_sc);
  t[n - 5] = '\0';
  n -= 5;
  add(&t, &n, ",{\"program\": \"p\"}]}}]}");
  load_bad_text(t, "3:44: \"fibers\": expected 0 to 64 rows, found 65");
  memcpy(strstr(t, "255"), "256", 3);
  load_bad_text(t, "2:74: program \"p\" has more than 256 steps once \"repeat\" blocks are "
                   "expanded");
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_corpus),
      cmocka_unit_test(test_wrong_expectation_is_caught),
      cmocka_unit_test(test_minimal_defaults),
      cmocka_unit_test(test_repeat_expansion),
      cmocka_unit_test(test_cases),
      cmocka_unit_test(test_rates),
      cmocka_unit_test(test_full),
      cmocka_unit_test(test_walkthrough),
      cmocka_unit_test(test_every_good_file),
      cmocka_unit_test(test_api),
      cmocka_unit_test(test_actor_limit),
      cmocka_unit_test(test_step_and_stale_limits),
  };
  return cmocka_run_group_tests_name("scn_load", tests, NULL, NULL) != 0;
}
