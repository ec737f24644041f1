/*
** test_early_verdict.c: the early liveness verdict of stop_when_decided
** (chk_on_certain, scenarios/scn_run.c). A case that expects the #1595
** wedge stops once the wedge is proven and no fault can come any more, with
** the verdict and the violations (invariant, actor, time) of the full
** week's run; a fault still to come (a rated eviction, per-call rpc drops)
** keeps the run going until it can no longer change the verdict. And the
** swarm's lean re-run rule (waits_only_rerun): a failure is run again with
** its trace kept only when a "hold" invariant was violated. Run from the
** repository root (it loads scenarios/ files).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults/flt.h"
#include "scenarios/scn.h"

#define INCIDENT "scenarios/incidents/issue-1595.json"

static scn_scenario *load_gated(int *ci) {
  char err[1024];
  scn_scenario *sc = calloc(1, sizeof *sc);
  assert_non_null(sc);
  if (scn_load(INCIDENT, sc, err, sizeof err)) fail_msg("%s", err);
  sc->n_facts = 0; /* as in a swarm: its facts pin the file's own run */
  *ci = -1;
  for (int i = 0; i < sc->n_cases; i++)
    if (!strcmp(sc->cases[i].label, "gated")) *ci = i;
  assert_true(*ci >= 0);
  return sc;
}

static void unload(scn_scenario *sc) {
  scn_free(sc);
  free(sc);
}

/* Runs case ci, full (early = 0) or stopping once decided. */
static void run(const scn_scenario *sc, int ci, int early, scn_result *res) {
  scn_run_opts o;
  memset(&o, 0, sizeof o);
  o.stop_when_decided = early;
  o.lean = 1;
  assert_int_equal(scn_run_case_ex(sc, ci, sc->seed, SIM_FIFO, &o, res), 0);
}

/* The same verdict and violated invariants, and every violation the early
** run reports is one of the full run's (invariant, actor, time, subject):
** it only leaves out later violations of invariants already decided. */
static void assert_same_report(const scn_result *full, const scn_result *early) {
  assert_int_equal(full->passed, early->passed);
  uint32_t inv_full = 0, inv_early = 0;
  size_t n = chk_violation_count(full->checks), m = chk_violation_count(early->checks);
  for (size_t i = 0; i < n; i++) inv_full |= 1u << chk_violation_at(full->checks, i)->inv;
  for (size_t j = 0; j < m; j++) {
    const chk_violation *b = chk_violation_at(early->checks, j);
    int found = 0;
    inv_early |= 1u << b->inv;
    for (size_t i = 0; i < n && !found; i++) {
      const chk_violation *a = chk_violation_at(full->checks, i);
      found = a->inv == b->inv && a->actor == b->actor && a->t_us == b->t_us &&
              a->subject == b->subject;
    }
    if (!found) fail_msg("early violation not in the full run: %s", b->msg);
  }
  assert_int_equal(inv_full, inv_early);
}

static void test_proven_wedge_stops_early(void **st) {
  (void)st;
  int ci;
  scn_scenario *sc = load_gated(&ci);
  scn_result full, early, again;
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  assert_true(full.passed);
  assert_int_equal(full.end_us, sc->duration_us);
  /* the wedge is proven at the third gate reset (92 s); not a day later */
  assert_true(early.end_us < 10 * 60 * 1000000LL);
  assert_true(early.events * 50 < full.events);
  assert_same_report(&full, &early);
  /* deterministic, like every run */
  run(sc, ci, 1, &again);
  assert_int_equal(early.trace_hash, again.trace_hash);
  assert_int_equal(early.end_us, again.end_us);
  scn_result_free(&full);
  scn_result_free(&early);
  scn_result_free(&again);
  unload(sc);
}

static void test_rated_fault_to_come_waits_for_it(void **st) {
  (void)st;
  int ci;
  scn_scenario *sc = load_gated(&ci);
  scn_fault *f = &sc->faults[sc->n_faults++];
  memset(f, 0, sizeof *f);
  f->kind = FLT_EVICT;
  f->actor = 0;
  f->at_us = -1;
  f->per_day = 2; /* about 14 evictions of the parent over the week */
  int64_t times[64];
  int n = flt_times(sc->seed, sc->faults, sc->n_faults, sc->duration_us, FLT_EVICT, times, 64);
  assert_true(n > 1);
  scn_result full, early;
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  /* not decided before the last eviction: it could move the end-of-run
  ** judgement of recovery_finishes */
  assert_true(early.end_us > times[n - 1]);
  assert_same_report(&full, &early);
  scn_result_free(&full);
  scn_result_free(&early);
  unload(sc);
}

static void test_per_call_fault_runs_to_the_end(void **st) {
  (void)st;
  int ci;
  scn_scenario *sc = load_gated(&ci);
  scn_fault *f = &sc->faults[sc->n_faults++];
  memset(f, 0, sizeof *f);
  f->kind = FLT_RPC_DROP;
  f->actor = RT_NO_ACTOR;
  f->at_us = 1000000;
  f->ppm = 1000; /* drops decided per call: no time is the last fault's */
  scn_result full, early;
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  assert_true(full.passed); /* both expected violations fired, yet not decided early */
  assert_int_equal(early.end_us, sc->duration_us);
  assert_same_report(&full, &early);
  scn_result_free(&full);
  scn_result_free(&early);
  unload(sc);
}

/* The gated case without its stuck grandchildren: no wedge, so the run
** fails with "missing:" only. A swarm worker needs no records for that. */
static void test_missing_failure_is_not_rerun_kept(void **st) {
  (void)st;
  int ci;
  scn_scenario *sc = load_gated(&ci);
  sc->n_faults = 0;
  sc->duration_us = 10 * 60 * 1000000LL;
  scn_run_opts o;
  memset(&o, 0, sizeof o);
  o.stop_when_decided = 1;
  o.lean = 1;
  scn_result a, b;
  assert_int_equal(scn_run_case_ex(sc, ci, sc->seed, SIM_FIFO, &o, &a), 0);
  o.waits_only_rerun = 1;
  assert_int_equal(scn_run_case_ex(sc, ci, sc->seed, SIM_FIFO, &o, &b), 0);
  assert_false(a.passed);
  assert_false(b.passed);
  char sa[128], sb[128];
  assert_string_equal(scn_signature(sc, ci, &a, sa, sizeof sa), "missing:recovery_finishes/-/-");
  assert_string_equal(scn_signature(sc, ci, &b, sb, sizeof sb), sa);
  assert_int_equal(a.trace_hash, b.trace_hash);
  assert_int_equal(a.s->trace.keep, 1); /* re-run with its records */
  assert_int_equal(b.s->trace.keep, 0); /* not re-run */
  scn_result_free(&a);
  scn_result_free(&b);
  unload(sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_proven_wedge_stops_early),
      cmocka_unit_test(test_rated_fault_to_come_waits_for_it),
      cmocka_unit_test(test_per_call_fault_runs_to_the_end),
      cmocka_unit_test(test_missing_failure_is_not_rerun_kept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
