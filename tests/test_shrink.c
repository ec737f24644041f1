/*
 * test_shrink.c: tests for scenarios/scn_write.c, scn_mutate.c and
 * scn_shrink.c (library level; run from the repository root).
 *
 * Checked: every scenario of the library and of the good corpus survives
 * load -> scn_write -> load with the same trace hash for every case, also
 * after a swarm fault mix is added; the mix is a pure function of the seed
 * and respects the fault limit; failure signatures name the invariant, the
 * actor class and the open waits; shrinking the #1595 incident (case
 * gated) gives a scenario that is smaller in every measure, still violates
 * no_wedge with the same seed once written and loaded back, and shrinking
 * a run that violates nothing is refused.
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

static scn_scenario g_a, g_b, g_m; /* large: kept off the stack */

/* Hash of case ci of sc with the scenario's own seed and strategy, or 1
** when the run cannot be made (a scenario the runner refuses must be
** refused after the round trip too). */
static uint64_t hash_of(const scn_scenario *sc, int ci) {
  scn_result r;
  int rc = scn_run_case(sc, ci, sc->seed, sc->strategy, &r);
  uint64_t h = rc == 0 ? r.trace_hash : 1;
  scn_result_free(&r);
  return h;
}

/* Writes sc, loads the text back into g_b, compares every case's hash. */
static void round_trip(const scn_scenario *sc) {
  char err[1024] = "";
  char *text = scn_write_string(sc);
  assert_non_null(text);
  int rc = scn_load_text("written.json", text, strlen(text), &g_b, err, sizeof err);
  if (rc) print_error("%s: %s\n%s\n", sc->file, err, text);
  assert_int_equal(rc, 0);
  assert_int_equal(g_b.n_cases, sc->n_cases);
  assert_int_equal(g_b.n_faults, sc->n_faults);
  for (int c = 0; c < sc->n_cases; c++) {
    assert_int_equal(g_b.cases[c].hold_mask, sc->cases[c].hold_mask);
    assert_int_equal(g_b.cases[c].violate_mask, sc->cases[c].violate_mask);
    if (hash_of(sc, c) != hash_of(&g_b, c)) fail_msg("%s case %d: hash differs after scn_write", sc->file, c);
  }
  scn_free(&g_b);
  free(text);
}

/* Round-trips every *.json below dir (one level of subdirectories). */
static int round_trip_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  assert_non_null(d);
  while ((e = readdir(d))) {
    char path[512], err[1024];
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 5, ".json")) {
      if (!strchr(e->d_name, '.')) n += round_trip_dir(path);
      continue;
    }
    if (len >= 13 && !strcmp(e->d_name + len - 13, "baseline.json")) continue; /* a swarm baseline */
    if (scn_load(path, &g_a, err, sizeof err)) fail_msg("%s", err);
    round_trip(&g_a);
    scn_copy(&g_m, &g_a);
    scn_mix mix;
    scn_swarm_mix(&g_m, 0x5eed + (uint64_t)n, &mix);
    round_trip(&g_m);
    scn_free(&g_a);
    n++;
  }
  closedir(d);
  return n;
}

static void test_write_round_trip(void **state) {
  (void)state;
  assert_true(round_trip_dir("scenarios") >= 10);
  assert_true(round_trip_dir("tests/corpus/scenario_good") >= 5);
}

static void load(const char *path, scn_scenario *sc) {
  char err[1024];
  if (scn_load(path, sc, err, sizeof err)) fail_msg("%s", err);
}

static void test_mix_pure_and_bounded(void **state) {
  scn_mix m1, m2;
  char first[sizeof m1.text] = "";
  int differ = 0, total = 0;
  (void)state;
  load("scenarios/incidents/issue-1595.json", &g_a);
  for (uint64_t seed = 1; seed <= 64; seed++) {
    scn_copy(&g_m, &g_a);
    int n = scn_swarm_mix(&g_m, seed, &m1);
    scn_copy(&g_b, &g_a);
    assert_int_equal(scn_swarm_mix(&g_b, seed, &m2), n);
    assert_string_equal(m1.text, m2.text);
    assert_memory_equal(g_m.faults, g_b.faults, sizeof g_m.faults[0] * (size_t)g_m.n_faults);
    assert_int_equal(g_m.n_faults, g_a.n_faults + n);
    assert_true(g_m.seed == seed);
    if (seed == 1) memcpy(first, m1.text, sizeof first);
    differ += strcmp(m1.text, first) != 0;
    total += n;
  }
  assert_true(differ > 32);
  assert_true(total > 64 && total < 64 * 8);
  g_a.n_faults = SCN_MAX_FAULTS - 1; /* a full list takes at most what fits */
  for (int i = 2; i < SCN_MAX_FAULTS - 1; i++) g_a.faults[i] = g_a.faults[0];
  scn_copy(&g_m, &g_a);
  scn_swarm_mix(&g_m, 3, &m1);
  assert_true(g_m.n_faults <= SCN_MAX_FAULTS);
  scn_free(&g_a);
}

static void test_signature(void **state) {
  scn_result r;
  char sig[256];
  (void)state;
  load("scenarios/incidents/issue-1595.json", &g_a);
  assert_string_equal(g_a.cases[0].label, "gated");
  assert_int_equal(scn_run_case(&g_a, 0, g_a.seed, g_a.strategy, &r), 0);
  assert_true(r.passed);
  assert_string_equal(scn_signature(&g_a, 0, &r, sig, sizeof sig), "");
  scn_result_free(&r);
  /* the same run judged as "no_wedge must hold": a failure with a signature */
  g_a.cases[0].hold_mask = 1u << CHK_NO_WEDGE;
  g_a.cases[0].violate_mask = 0;
  assert_int_equal(scn_run_case(&g_a, 0, g_a.seed, g_a.strategy, &r), 0);
  assert_false(r.passed);
  scn_signature(&g_a, 0, &r, sig, sizeof sig);
  assert_true(strncmp(sig, "no_wedge/ChatAgent/", 19) == 0);
  assert_non_null(strstr(sig, "gate"));
  scn_result_free(&r);
  /* expecting a violation that does not happen */
  g_a.cases[0].hold_mask = 0;
  g_a.cases[0].violate_mask = 1u << CHK_EFFECTS_ONCE;
  assert_int_equal(scn_run_case(&g_a, 0, g_a.seed, g_a.strategy, &r), 0);
  assert_string_equal(scn_signature(&g_a, 0, &r, sig, sizeof sig), "missing:effects_once/-/-");
  scn_result_free(&r);
  scn_free(&g_a);
}

static int never_stop(void *ctx) {
  (void)ctx;
  return 0;
}

static void test_shrink_1595(void **state) {
  scn_shrink_stats st;
  scn_shrink_opts o = {-1, never_stop, NULL};
  char err[512], b1[300], b2[300];
  (void)state;
  load("scenarios/incidents/issue-1595.json", &g_a);
  assert_int_equal(scn_shrink(&g_a, 0, g_a.seed, g_a.strategy, &o, &g_m, &st, err, sizeof err), 0);
  print_message("# before: %s\n# after:  %s\n", scn_size_text(&st.before, b1, sizeof b1),
                scn_size_text(&st.after, b2, sizeof b2));
  assert_int_equal(st.invariant, CHK_NO_WEDGE);
  assert_false(st.stopped);
  assert_true(st.after.actors < st.before.actors);
  assert_true(st.after.arrivals < st.before.arrivals);
  assert_true(st.after.stale < st.before.stale);
  assert_true(st.after.duration_us < st.before.duration_us / 100);
  assert_true(st.after.bytes < st.before.bytes);
  assert_int_equal(g_m.n_cases, 1);
  assert_int_equal(g_m.cases[0].violate_mask, 1u << CHK_NO_WEDGE);
  /* written, loaded back, run with its own seed: still violates no_wedge */
  char *text = scn_write_string(&g_m);
  assert_int_equal(scn_load_text("shrunk.json", text, strlen(text), &g_b, err, sizeof err), 0);
  scn_result r;
  assert_int_equal(scn_run_case(&g_b, 0, g_b.seed, g_b.strategy, &r), 0);
  assert_true(r.passed); /* its expectation is "violate: no_wedge" */
  int seen = 0;
  for (size_t i = 0; i < chk_violation_count(r.checks); i++)
    seen |= chk_violation_at(r.checks, i)->inv == CHK_NO_WEDGE;
  assert_true(seen);
  scn_result_free(&r);
  free(text);
  scn_free(&g_b);
  scn_free(&g_m);
  scn_free(&g_a);
}

static void test_shrink_refuses_passing_run(void **state) {
  scn_shrink_stats st;
  char err[512] = "";
  (void)state;
  load("scenarios/incidents/issue-1595.json", &g_a);
  assert_string_equal(g_a.cases[1].label, "deferred");
  assert_int_equal(scn_shrink(&g_a, 1, g_a.seed, g_a.strategy, NULL, &g_m, &st, err, sizeof err), -1);
  assert_non_null(strstr(err, "violates no invariant"));
  scn_shrink_opts o = {CHK_EFFECTS_ONCE, NULL, NULL};
  assert_int_equal(scn_shrink(&g_a, 0, g_a.seed, g_a.strategy, &o, &g_m, &st, err, sizeof err), -1);
  assert_non_null(strstr(err, "does not violate effects_once"));
  scn_free(&g_a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_write_round_trip),
      cmocka_unit_test(test_mix_pure_and_bounded),
      cmocka_unit_test(test_signature),
      cmocka_unit_test(test_shrink_1595),
      cmocka_unit_test(test_shrink_refuses_passing_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
