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
#include "runtime/rt_events.h"
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

/* Runs case ci with seed and strategy, full (early = 0) or stopping once
** decided. */
static void run_with(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strat, int early,
                     scn_result *res) {
  scn_run_opts o;
  memset(&o, 0, sizeof o);
  o.stop_when_decided = early;
  o.lean = 1;
  assert_int_equal(scn_run_case_ex(sc, ci, seed, strat, &o, res), 0);
}

/* Runs case ci with the file's seed, fifo. */
static void run(const scn_scenario *sc, int ci, int early, scn_result *res) {
  run_with(sc, ci, sc->seed, SIM_FIFO, early, res);
}

/* The early run once more gives the same prefix (hash and end), as every
** run is deterministic; then frees the two results and the scenario. */
static void assert_early_repeats_then_free(scn_scenario *sc, int ci, scn_result *full,
                                           scn_result *early) {
  scn_result again;
  run(sc, ci, 1, &again);
  assert_int_equal(early->trace_hash, again.trace_hash);
  assert_int_equal(early->end_us, again.end_us);
  scn_result_free(full);
  scn_result_free(early);
  scn_result_free(&again);
  unload(sc);
}

/* Appends a fault of kind k to sc (zeroed otherwise: every actor, no
** down time) and returns it. */
static scn_fault *add_fault(scn_scenario *sc, flt_kind k) {
  scn_fault *f = &sc->faults[sc->n_faults++];
  memset(f, 0, sizeof *f);
  f->kind = k;
  f->actor = RT_NO_ACTOR;
  f->at_us = -1;
  return f;
}

/* The same verdict, the same violated invariants among those the case
** judges (hold and violate) and the same signature: what a swarm reports
** of a run (a stopped run's violations may be timed from the last fault of
** its prefix, not of the whole run, and later violations of invariants
** the case does not judge are not looked for). */
static void assert_same_verdict(const scn_scenario *sc, int ci, const scn_result *full,
                                const scn_result *early) {
  char a[256], b[256];
  uint32_t judged = sc->cases[ci].hold_mask | sc->cases[ci].violate_mask;
  assert_int_equal(full->passed, early->passed);
  assert_int_equal(scn_seen_mask(sc, full) & judged, scn_seen_mask(sc, early) & judged);
  assert_string_equal(scn_signature(sc, ci, full, a, sizeof a), scn_signature(sc, ci, early, b, sizeof b));
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
  scn_result full, early;
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  assert_true(full.passed);
  assert_int_equal(full.end_us, sc->duration_us);
  /* the wedge is proven at the third gate reset (92 s); not a day later */
  assert_true(early.end_us < 10 * 60 * 1000000LL);
  assert_true(early.events * 50 < full.events);
  assert_same_report(&full, &early);
  /* deterministic, like every run */
  assert_early_repeats_then_free(sc, ci, &full, &early);
}

/* A fault still to come that may change what a wake does (an rpc_delay on
** day 5) keeps the run going until it has passed; evictions of an actor
** the wedge never wakes (the coder: the parent's cascade blocks on the
** researcher first) find it dead and only write their fault record, so
** they do not: the run stops long before the last of them, with the full
** week's verdict. */
static void test_rated_fault_to_come_waits_for_it(void **st) {
  (void)st;
  int ci;
  scn_scenario *sc = load_gated(&ci);
  scn_fault *d = add_fault(sc, FLT_RPC_DELAY);
  d->at_us = 5 * 86400 * 1000000LL;
  d->delay_us = 100000;
  scn_result full, early;
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  assert_true(full.passed);
  assert_true(early.end_us > d->at_us);
  assert_same_report(&full, &early);
  scn_result_free(&full);
  scn_result_free(&early);
  sc->n_faults--;
  scn_fault *f = add_fault(sc, FLT_EVICT);
  f->actor = 2; /* the coder */
  f->per_day = 2; /* about 14 evictions over the week */
  int64_t times[64];
  int n = flt_times(sc->seed, sc->faults, sc->n_faults, sc->duration_us, FLT_EVICT, times, 64);
  assert_true(n > 1);
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  assert_true(full.passed);
  assert_true(early.end_us < times[n - 1]);
  assert_same_verdict(sc, ci, &full, &early);
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

/* The steady wedge: whole-process restarts still to come, or evictions of
** the wedged parent, replay the startup the wedge failed, so the run stops
** after the first of them (the wedge seen again after a restart) with
** the full week's verdict, invariants and signature; deterministic. */
static void test_steady_wedge_under_restarts_stops_early(void **st) {
  (void)st;
  int ci;
  scn_scenario *sc = load_gated(&ci);
  add_fault(sc, FLT_RESTART)->per_day = 6;
  scn_fault *e = add_fault(sc, FLT_EVICT);
  e->actor = 0; /* the parent itself */
  e->per_day = 4;
  int64_t times[128];
  int n = flt_times(sc->seed, sc->faults, sc->n_faults, sc->duration_us, FLT_RESTART, times, 128);
  assert_true(n > 10);
  scn_result full, early;
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  assert_true(full.passed);
  assert_true(early.end_us > times[0]);        /* not before a restart was seen */
  assert_true(early.end_us < times[n - 1]);    /* but long before the last one */
  assert_true(early.events * 4 < full.events);
  assert_same_verdict(sc, ci, &full, &early);
  assert_early_repeats_then_free(sc, ci, &full, &early);
}

/* Where the steady rule must not fire: restarts on day 3 and 30 s before
** the end. After the first the wedge is steady and only a restart is to
** come, but the last one leaves no wake with recovery_bound (1 min) after
** it, so the full run does NOT report recovery_finishes: deciding
** "violated" on day 3 would be wrong. Without the late restart the run
** stops minutes after the day-3 one (the wedge seen again after it). */
static void test_steady_rule_waits_when_it_must(void **st) {
  (void)st;
  int ci;
  scn_scenario *sc = load_gated(&ci);
  add_fault(sc, FLT_RESTART)->at_us = 3 * 86400 * 1000000LL;
  add_fault(sc, FLT_RESTART)->at_us = sc->duration_us - 30 * 1000000LL;
  scn_result full, early;
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  assert_false(full.passed); /* missing:recovery_finishes */
  assert_int_equal(early.end_us, sc->duration_us);
  assert_same_verdict(sc, ci, &full, &early);
  scn_result_free(&full);
  scn_result_free(&early);
  sc->n_faults--; /* the day-3 restart only */
  run(sc, ci, 0, &full);
  run(sc, ci, 1, &early);
  assert_true(full.passed);
  assert_true(early.end_us > 3 * 86400 * 1000000LL);
  assert_true(early.end_us < 3 * 86400 * 1000000LL + 10 * 60 * 1000000LL);
  assert_same_verdict(sc, ci, &full, &early);
  scn_result_free(&full);
  scn_result_free(&early);
  unload(sc);
}

/* Over the swarm's own fault mixes: every run that stopped early has the
** verdict, violated invariants and signature of its full run (a run that
** did not stop is the full run). 200 seeds of each case of #1595, as a
** swarm runs them (scn_swarm_mix, random strategy); and the steady rule
** must have stopped a good share of the gated ones. */
static void test_early_matches_full_over_swarm_seeds(void **st) {
  (void)st;
  char err[1024];
  scn_scenario *base = calloc(1, sizeof *base), *m = calloc(1, sizeof *m);
  assert_non_null(base);
  assert_non_null(m);
  if (scn_load(INCIDENT, base, err, sizeof err)) fail_msg("%s", err);
  for (int ci = 0; ci < base->n_cases; ci++) {
    int stopped = 0, compared = 0;
    for (uint64_t seed = base->seed; seed < base->seed + 200; seed++) {
      scn_mix mix;
      scn_result full, early;
      scn_copy(m, base);
      scn_swarm_mix(m, seed, &mix);
      run_with(m, ci, seed, SIM_RANDOM, 1, &early);
      if (early.end_us < m->duration_us) {
        run_with(m, ci, seed, SIM_RANDOM, 0, &full);
        uint32_t judged = m->cases[ci].hold_mask | m->cases[ci].violate_mask;
        if (full.passed != early.passed || ((scn_seen_mask(m, &full) ^ scn_seen_mask(m, &early)) & judged))
          fail_msg("seed 0x%llx case %s: %s", (unsigned long long)seed, m->cases[ci].label, mix.text);
        assert_same_verdict(m, ci, &full, &early);
        stopped += !m->cases[ci].hold_mask;
        compared++;
        scn_result_free(&full);
      }
      scn_result_free(&early);
    }
    if (!strcmp(base->cases[ci].label, "gated")) assert_true(stopped >= 80); /* 103 of 200 measured */
    (void)compared;
  }
  scn_free(base);
  free(base);
  free(m);
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

/* The gated case with rpc drops from 1 s to the end at `ppm`, kept (not
** lean): its full run, the number of the parent's gate resets and the
** time of the last drop record. */
static void run_drops(uint32_t ppm, int early, scn_result *res, int *resets, int64_t *last_drop) {
  int ci;
  scn_scenario *sc = load_gated(&ci);
  scn_fault *f = add_fault(sc, FLT_RPC_DROP);
  f->at_us = 1000000;
  f->ppm = ppm;
  scn_run_opts o;
  memset(&o, 0, sizeof o);
  o.stop_when_decided = early;
  assert_int_equal(scn_run_case_ex(sc, ci, sc->seed, SIM_FIFO, &o, res), 0);
  *resets = 0;
  *last_drop = -1;
  const sim_trace *t = &res->s->trace;
  for (size_t i = 0; i < t->n; i++) {
    const sim_rec *r = &t->recs[i];
    if (r->kind == RT_EV_GATE_TIMEOUT && r->actor == 0) ++*resets;
    if (r->kind == RT_EV_FAULT && !strcmp(sim_trace_str(t, r->s), "rpc_drop")) *last_drop = r->t_us;
  }
  assert_int_equal(res->end_us, sc->duration_us); /* drops on: never decided early */
  unload(sc);
}

/* Why per-call drops keep even a steady wedge running (docs/swarm.md,
** "The steady wedge"): a dropped call to the researcher, which never
** answers anyway, changes nothing in the world (the parent's gate is reset
** just as often), yet its fault record restarts the clock of the
** end-of-run judgement. With drops at 30 % the last one falls in the last
** minute and the full run does NOT report recovery_finishes; at 1 % it
** falls earlier and it does. Which one is decided by the drop draws of the
** last cycles, so no rule can accept the wedge on day one. */
static void test_late_drop_decides_the_verdict(void **st) {
  (void)st;
  int ci;
  scn_scenario *sc = load_gated(&ci);
  uint32_t rf = scn_inv_bit(sc, CHK_RECOVERY_FINISHES), nw = scn_inv_bit(sc, CHK_NO_WEDGE);
  int64_t end = sc->duration_us, bound = sc->params.recovery_bound_us;
  scn_result hi, lo, early;
  int resets_hi, resets_lo, resets_early;
  int64_t last_hi, last_lo, last_early;
  run_drops(300000, 0, &hi, &resets_hi, &last_hi);
  run_drops(10000, 0, &lo, &resets_lo, &last_lo);
  assert_int_equal(resets_hi, resets_lo);          /* the same wedge, cycle for cycle */
  assert_true(last_hi > end - bound);              /* a drop in the last minute */
  assert_true(last_lo < end - 2 * bound);
  assert_int_equal(scn_seen_mask(sc, &hi) & (rf | nw), nw); /* not reported */
  assert_int_equal(scn_seen_mask(sc, &lo) & (rf | nw), rf | nw);
  run_drops(300000, 1, &early, &resets_early, &last_early);
  assert_int_equal(early.passed, hi.passed);
  assert_int_equal(early.trace_hash, hi.trace_hash);
  scn_result_free(&hi);
  scn_result_free(&lo);
  scn_result_free(&early);
  unload(sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_proven_wedge_stops_early),
      cmocka_unit_test(test_rated_fault_to_come_waits_for_it),
      cmocka_unit_test(test_per_call_fault_runs_to_the_end),
      cmocka_unit_test(test_steady_wedge_under_restarts_stops_early),
      cmocka_unit_test(test_steady_rule_waits_when_it_must),
      cmocka_unit_test(test_early_matches_full_over_swarm_seeds),
      cmocka_unit_test(test_missing_failure_is_not_rerun_kept),
      cmocka_unit_test(test_late_drop_decides_the_verdict),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
