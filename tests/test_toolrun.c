/*
** test_toolrun.c: sub-agent tool runs and startup reconciliation (seed
** 003, reference A.11): the #1595 wedge under `gated`, PR #1604's fix
** under `deferred`.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "scenarios/scn.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

static sim s;
static rt_world *w;

static void world(rt_toolrun_mode mode, int n_actors) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&s, &sc), 0);
  rt_config_default(&c);
  c.toolrun = mode;
  w = rt_world_new(&s, &c);
  for (int i = 0; i < n_actors; i++) {
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, "a%d", i);
    snprintf(sp.cls, sizeof sp.cls, "Agent");
    rt_actor_add(w, &sp);
  }
}

static void done(void) {
  rt_world_free(w);
  sim_free(&s);
}

static size_t count(uint32_t kind, uint32_t actor) {
  size_t n = 0;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == kind && s.trace.recs[i].actor == actor) n++;
  return n;
}

static const sim_rec *first(uint32_t kind, uint32_t actor) {
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == kind && s.trace.recs[i].actor == actor) return &s.trace.recs[i];
  return NULL;
}

/* A child that never answers: the deferred reconciliation finalizes the
** row interrupted 2 s after the yield, with the documented reason. */
static void test_stuck_child_interrupted_after_2s(void **st) {
  (void)st;
  world(RT_TOOLRUN_DEFERRED, 2);
  int64_t run = rt_seed_stale_toolrun(w, 0, 1, RT_TR_RUNNING, RT_TR_RUNNING);
  rt_set_stuck(w, 1, RT_STUCK_NEVER_ANSWERS, 0);
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(10));
  sim_run(&s, S(60), 0);
  assert_int_equal(rt_toolrun_status_of(w, 0, run), RT_TR_INTERRUPTED);
  const sim_rec *r = first(RT_EV_TOOLRUN_STATUS, 0);
  assert_non_null(r);
  assert_int_equal(r->t_us, S(10) + S(2));
  assert_string_equal(sim_trace_str(&s.trace, r->s), RT_MSG_TR_TIMED_OUT);
  const sim_rec *ok = first(RT_EV_REQUEST_OK, 0);
  assert_non_null(ok);
  assert_int_equal(ok->t_us, S(10)); /* served before reconciliation */
  done();
}

/* The child answers: its status maps to the parent's terminal status. */
static void test_inspected_child_status_maps(void **st) {
  static const int child[] = {RT_TR_COMPLETED, RT_TR_ERROR, RT_TR_RUNNING, 0};
  static const int parent[] = {RT_TR_COMPLETED, RT_TR_ERROR, RT_TR_INTERRUPTED,
                               RT_TR_INTERRUPTED};
  (void)st;
  for (int i = 0; i < 4; i++) {
    world(RT_TOOLRUN_DEFERRED, 2);
    int64_t run = rt_seed_stale_toolrun(w, 0, 1, RT_TR_STARTING, child[i]);
    rt_request_at(w, 0, RT_ENTRY_FETCH, S(1));
    sim_run(&s, S(30), 0);
    assert_int_equal(rt_toolrun_status_of(w, 0, run), parent[i]);
    done();
  }
}

/* A second wake while reconciliation runs starts no second one. */
static void test_single_flight(void **st) {
  (void)st;
  world(RT_TOOLRUN_DEFERRED, 2);
  rt_seed_stale_toolrun(w, 0, 1, RT_TR_RUNNING, RT_TR_RUNNING);
  rt_set_stuck(w, 1, RT_STUCK_LATE, S(1));
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(1));
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(1) + MS(500));
  rt_request_at(w, 0, RT_ENTRY_WS, S(1) + MS(700));
  sim_run(&s, S(30), 0);
  size_t begins = 0;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == RT_EV_TOOLRUN_RECOVERY && s.trace.recs[i].a == 1) begins++;
  assert_int_equal(begins, 1);
  assert_int_equal(count(RT_EV_TOOLRUN_STATUS, 0), 1);
  assert_int_equal(count(RT_EV_REQUEST_OK, 0), 3);
  done();
}

/* A child that completes after its row was finalized interrupted cannot
** rewrite the terminal row (@1604: terminal rows are immutable). */
static void test_terminal_rows_never_rewritten(void **st) {
  (void)st;
  world(RT_TOOLRUN_DEFERRED, 2);
  rt_toolrun_at(w, 0, 1, S(20), S(1)); /* live run, child works 20 s */
  rt_set_stuck(w, 1, RT_STUCK_LATE, S(5));
  sim_run(&s, S(2), 0);
  rt_kill_actor(w, 0, RT_DEATH_EVICT); /* parent loses its live wait */
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(3)); /* inspection answers after 5 s: timed out */
  sim_run(&s, S(120), 0);
  int64_t run = first(RT_EV_TOOLRUN_INSERT, 0)->a;
  assert_int_equal(rt_toolrun_status_of(w, 0, run), RT_TR_INTERRUPTED);
  size_t changes = 0;
  for (size_t i = 0; i < s.trace.n; i++) {
    const sim_rec *r = &s.trace.recs[i];
    if (r->kind != RT_EV_TOOLRUN_STATUS) continue;
    assert_false(RT_TR_IS_TERMINAL(r->c)); /* never from a terminal status */
    changes++;
  }
  assert_true(changes >= 1);
  done();
}

/* Under `gated`, one wedged grandchild keeps the parent's gate past 30 s:
** reset, rows untouched, again on every wake. */
static void test_gated_wedges(void **st) {
  (void)st;
  world(RT_TOOLRUN_GATED, 3);
  int64_t run = rt_seed_stale_toolrun(w, 0, 1, RT_TR_RUNNING, RT_TR_RUNNING);
  rt_seed_stale_toolrun(w, 1, 2, RT_TR_RUNNING, RT_TR_RUNNING);
  rt_set_stuck(w, 2, RT_STUCK_STARTUP, 0);
  for (int k = 0; k < 5; k++) rt_request_at(w, 0, RT_ENTRY_FETCH, S(1) + k * S(31));
  sim_run(&s, S(200), 0);
  assert_int_equal(count(RT_EV_GATE_TIMEOUT, 0), 5);
  assert_int_equal(count(RT_EV_REQUEST_OK, 0), 0);
  assert_int_equal(rt_toolrun_status_of(w, 0, run), RT_TR_RUNNING);
  const sim_rec *t0 = first(RT_EV_GATE_TIMEOUT, 0), *t1 = first(RT_EV_GATE_TIMEOUT, 1);
  assert_int_equal(t1->t_us - t0->t_us, MS(1)); /* child resets 1 ms after the parent */
  done();
}

/* A run the user's onStart starts is not in the startup snapshot: the
** fixed reconciliation leaves it alone; the unsnapshotted variant
** finalizes it. */
/* A parent with one open run to each of two children: the workload's abort
** of child 2 aborts that run only (the run to child 1 runs on). Then nine
** clients reconnect at once: one replay runs, seven queue behind it, the
** ninth is refused ("too many reconnecting clients") and the eight queued
** replays all end. */
static void test_abort_by_child_and_replay_limit(void **st) {
  (void)st;
  world(RT_TOOLRUN_DEFERRED, 3);
  int64_t r1 = rt_seed_stale_toolrun(w, 0, 1, RT_TR_RUNNING, RT_TR_RUNNING);
  int64_t r2 = rt_seed_stale_toolrun(w, 0, 2, RT_TR_RUNNING, RT_TR_RUNNING);
  assert_true(r1 > 0 && r2 > 0);
  assert_int_equal(rt_toolrun_abort_at(w, 0, 2, S(1)), 0);
  for (int i = 0; i < 9; i++) assert_int_equal(rt_toolrun_replay_at(w, 0, -1, S(5)), 0);
  sim_run(&s, S(60), 0);
  size_t aborts = 0;
  for (size_t i = 0; i < s.trace.n; i++) {
    const sim_rec *r = &s.trace.recs[i];
    if (r->kind == RT_EV_TOOLRUN_ABORT) {
      aborts++;
      assert_int_equal(r->a, r2);
      assert_int_equal(r->b, 2);
    }
  }
  assert_int_equal(aborts, 1);
  assert_int_equal(rt_toolrun_status_of(w, 0, r2), RT_TR_ABORTED);
  assert_int_equal(count(RT_EV_TOOLRUN_REPLAY, 0), 8);
  size_t refused = 0;
  for (size_t i = 0; i < s.trace.n; i++) {
    const sim_rec *r = &s.trace.recs[i];
    if (r->kind == RT_EV_REQUEST_FAIL && r->actor == 0) {
      assert_string_equal(sim_trace_str(&s.trace, r->s), "too many reconnecting clients");
      assert_int_equal(r->t_us, S(5));
      refused++;
    }
  }
  assert_int_equal(refused, 1);
  assert_int_equal(rt_toolrun_status_of(w, 5, r1), -1); /* no such parent */
  done();
}

static void onstart_world(rt_toolrun_mode mode, int64_t *fresh_run) {
  world(mode, 3);
  rt_seed_stale_toolrun(w, 0, 1, RT_TR_RUNNING, RT_TR_COMPLETED);
  rt_actor_spec *sp = (rt_actor_spec *)rt_actor_spec_of(w, 0);
  sp->on_start_tool_run = 1;
  sp->on_start_child = 2;
  sp->on_start_work_us = S(20);
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(1));
  sim_run(&s, S(60), 0);
  *fresh_run = 0;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == RT_EV_TOOLRUN_INSERT && s.trace.recs[i].b == 2)
      *fresh_run = s.trace.recs[i].a;
  assert_true(*fresh_run > 0);
}

static void test_onstart_run_survives_recovery(void **st) {
  int64_t run;
  (void)st;
  onstart_world(RT_TOOLRUN_DEFERRED, &run);
  assert_int_equal(rt_toolrun_status_of(w, 0, run), RT_TR_COMPLETED);
  assert_int_equal(count(RT_EV_TOOLRUN_SNAPSHOT, 0), 1);
  done();
  onstart_world(RT_TOOLRUN_UNSNAPSHOTTED, &run);
  assert_int_equal(rt_toolrun_status_of(w, 0, run), RT_TR_INTERRUPTED);
  assert_int_equal(count(RT_EV_TOOLRUN_SNAPSHOT, 0), 0);
  done();
}

/* The later 5 s total deadline (#1611): with three children that each
** answer after 4 s, the first row is inspected in time, the rest are
** finalized as the deadline passes. */
static void test_total_deadline(void **st) {
  (void)st;
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&s, &sc), 0);
  rt_config_default(&c);
  c.inspect_timeout_us = S(30);
  c.inspect_total_us = S(5);
  w = rt_world_new(&s, &c);
  for (int i = 0; i < 4; i++) {
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, "a%d", i);
    rt_actor_add(w, &sp);
  }
  for (uint32_t k = 1; k <= 3; k++) {
    rt_seed_stale_toolrun(w, 0, k, RT_TR_RUNNING, RT_TR_COMPLETED);
    rt_set_stuck(w, k, RT_STUCK_LATE, S(4));
  }
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(1));
  sim_run(&s, S(60), 0);
  assert_int_equal(rt_toolrun_status_of(w, 0, 1), RT_TR_COMPLETED);
  assert_int_equal(rt_toolrun_status_of(w, 0, 2), RT_TR_INTERRUPTED);
  assert_int_equal(rt_toolrun_status_of(w, 0, 3), RT_TR_INTERRUPTED);
  const sim_rec *last = NULL;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == RT_EV_TOOLRUN_STATUS) last = &s.trace.recs[i];
  assert_true(last->t_us <= S(1) + S(5) + MS(10));
  done();
}

static void load_incident(scn_scenario *sc) {
  char err[512];
  int rc = scn_load("scenarios/incidents/issue-1595.json", sc, err, sizeof err);
  if (rc) fprintf(stderr, "%s\n", err);
  assert_int_equal(rc, 0);
}

static int case_index(const scn_scenario *sc, const char *label) {
  for (int i = 0; i < sc->n_cases; i++)
    if (!strcmp(sc->cases[i].label, label)) return i;
  fail_msg("no case %s", label);
  return -1;
}

/* The incident over many seeds and both random strategies: the wedge
** always reproduces under gated and never under deferred. */
static void test_incident_many_seeds(void **st) {
  static scn_scenario sc;
  (void)st;
  load_incident(&sc);
  sc.duration_us = S(3600); /* an hour is enough to see the wedge */
  sc.n_facts = 0; /* the file's facts pin its own week-long run, not these */
  int gated = case_index(&sc, "gated"), deferred = case_index(&sc, "deferred");
  for (uint64_t seed = 1; seed <= 12; seed++) {
    sim_strategy strat = seed % 2 ? SIM_RANDOM : SIM_PCT;
    scn_result r;
    assert_int_equal(scn_run_case(&sc, gated, seed, strat, &r), 0);
    assert_true(r.passed);
    scn_result_free(&r);
    assert_int_equal(scn_run_case(&sc, deferred, seed, strat, &r), 0);
    if (!r.passed) fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, r.failure);
    assert_true(r.passed);
    scn_result_free(&r);
  }
  scn_free(&sc);
}

/* Startup scans kept while the tables are unchanged give the same runs as
** scans that always read SQLite: every case of the files that recover
** tool runs and fibers, several seeds and strategies, the same trace hash
** with the cache on and off. */
static void test_scan_cache_same_hashes(void **state) {
  (void)state;
  static const char *const files[] = {
      "scenarios/incidents/issue-1595.json", "scenarios/examples/toolrun-stuck-child.json",
      "scenarios/examples/toolrun-onstart.json", "scenarios/examples/fiber-crash-recover.json",
      "scenarios/examples/evict-restart-rates.json", "scenarios/examples/storage-fail.json",
      "scenarios/regression/hook-resume-before-failed-onstart.json"};
  int compared = 0;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    scn_scenario sc;
    char err[1024];
    if (scn_load(files[f], &sc, err, sizeof err)) fail_msg("%s", err);
    scn_truncate(&sc, 6 * 3600 * 1000000LL); /* 6 h: enough wakes, quick */
    for (int ci = 0; ci < sc.n_cases; ci++)
      for (uint64_t seed = 1; seed <= 3; seed++)
        for (int st = SIM_FIFO; st <= SIM_RANDOM; st++) {
          scn_result on, off;
          rt_scan_cache_set(0);
          assert_int_equal(scn_run_case_ex(&sc, ci, seed, (sim_strategy)st, NULL, &off), 0);
          rt_scan_cache_set(1);
          assert_int_equal(scn_run_case_ex(&sc, ci, seed, (sim_strategy)st, NULL, &on), 0);
          assert_true(on.trace_hash == off.trace_hash);
          assert_int_equal(on.events, off.events);
          scn_result_free(&on);
          scn_result_free(&off);
          compared++;
        }
    scn_free(&sc);
  }
  assert_true(compared >= 40);
}

/* A lean run (no trace records kept) is the same run as a kept one: same
** hash, events, verdict, violations and figures. It keeps no records when
** it passes; when it fails it is run again with its records kept, so that
** its report can print chains. */
static void test_lean_same_run(void **state) {
  (void)state;
  scn_scenario sc;
  char err[1024];
  if (scn_load("scenarios/incidents/issue-1595.json", &sc, err, sizeof err)) fail_msg("%s", err);
  scn_truncate(&sc, 2 * 3600 * 1000000LL);
  int failed = 0;
  for (int flip = 0; flip < 2; flip++) {
    if (flip) /* the gated case then fails: it must hold what it violates */
      for (int ci = 0; ci < sc.n_cases; ci++) {
        sc.cases[ci].hold_mask |= sc.cases[ci].violate_mask;
        sc.cases[ci].violate_mask = 0;
      }
    for (int ci = 0; ci < sc.n_cases; ci++) {
      scn_result kept, lean, bare;
      scn_run_opts ok = {0}, ol = {.lean = 1}, ob = {.lean = 1, .waits_only_rerun = 1, .no_figures = 1};
      assert_int_equal(scn_run_case_ex(&sc, ci, sc.seed, SIM_RANDOM, &ok, &kept), 0);
      assert_int_equal(scn_run_case_ex(&sc, ci, sc.seed, SIM_RANDOM, &ol, &lean), 0);
      assert_int_equal(scn_run_case_ex(&sc, ci, sc.seed, SIM_RANDOM, &ob, &bare), 0);
      /* a swarm worker's run: the same run, without figures */
      assert_true(bare.trace_hash == kept.trace_hash);
      assert_int_equal(bare.events, kept.events);
      assert_int_equal(bare.passed, kept.passed);
      assert_string_equal(bare.failure, kept.failure);
      assert_int_equal(chk_violation_count(bare.checks), chk_violation_count(kept.checks));
      assert_int_equal(bare.n_figures, 0);
      assert_true(kept.n_figures > 0);
      scn_result_free(&bare);
      assert_true(kept.trace_hash == lean.trace_hash);
      assert_int_equal(kept.events, lean.events);
      assert_int_equal(kept.passed, lean.passed);
      assert_string_equal(kept.failure, lean.failure);
      assert_int_equal(chk_violation_count(kept.checks), chk_violation_count(lean.checks));
      assert_int_equal(kept.n_figures, lean.n_figures);
      assert_memory_equal(kept.figures, lean.figures, sizeof kept.figures);
      assert_int_equal(kept.s->trace.n, kept.events);
      assert_int_equal(lean.s->trace.n, lean.passed ? 0 : lean.events);
      failed += !lean.passed;
      scn_result_free(&kept);
      scn_result_free(&lean);
    }
  }
  assert_true(failed >= 1); /* the re-run path ran */
  scn_free(&sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stuck_child_interrupted_after_2s),
      cmocka_unit_test(test_inspected_child_status_maps),
      cmocka_unit_test(test_single_flight),
      cmocka_unit_test(test_terminal_rows_never_rewritten),
      cmocka_unit_test(test_gated_wedges),
      cmocka_unit_test(test_abort_by_child_and_replay_limit),
      cmocka_unit_test(test_onstart_run_survives_recovery),
      cmocka_unit_test(test_total_deadline),
      cmocka_unit_test(test_incident_many_seeds),
      cmocka_unit_test(test_scan_cache_same_hashes),
      cmocka_unit_test(test_lean_same_run),
  };
  return cmocka_run_group_tests_name("toolrun", tests, NULL, NULL) != 0;
}
