/*
** test_faults.c: every fault kind is observable in the trace with the
** effect docs/faults.md documents; rated faults are drawn from their own
** streams.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "faults/flt.h"
#include "scenarios/scn.h"
#include "scenarios/scn_internal.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)
#define DAY S(86400)

static sim s;
static rt_world *w;

static void world(uint64_t seed, int n_actors) {
  sim_config sc = {seed, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&s, &sc), 0);
  rt_config_default(&c);
  w = rt_world_new(&s, &c);
  for (int i = 0; i < n_actors; i++) {
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, "a%d", i);
    rt_actor_add(w, &sp);
  }
}

static void done(void) {
  rt_world_free(w);
  sim_free(&s);
  flt_reset();
}

static size_t count(uint32_t kind, int64_t a) {
  size_t n = 0;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == kind && (a < 0 || s.trace.recs[i].a == a)) n++;
  return n;
}

static const sim_rec *first(uint32_t kind) {
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == kind) return &s.trace.recs[i];
  return NULL;
}

static flt_fault fault(flt_kind k, uint32_t actor, int64_t at) {
  flt_fault f = {k, actor, at, 0, 0, 0, RT_STUCK_NONE, 0, 0};
  return f;
}

static void test_kill_kinds(void **st) {
  static const struct { flt_kind k; rt_death_cause cause; int all; } cases[] = {
      {FLT_EVICT, RT_DEATH_EVICT, 0}, {FLT_RESTART, RT_DEATH_RESTART, 1},
      {FLT_CRASH, RT_DEATH_CRASH, 1}, {FLT_SIGKILL, RT_DEATH_SIGKILL, 1}};
  (void)st;
  for (size_t i = 0; i < 4; i++) {
    world(1, 3);
    for (uint32_t a = 0; a < 3; a++) rt_request_at(w, a, RT_ENTRY_FETCH, S(1));
    flt_fault f = fault(cases[i].k, 1, S(2));
    assert_int_equal(flt_plan(w, &f, 1, S(10)), 1);
    sim_run(&s, S(3), 0);
    assert_int_equal(count(RT_EV_FAULT, -1), 1);
    assert_int_equal(count(RT_EV_ACTOR_DEATH, cases[i].cause), cases[i].all ? 3 : 1);
    assert_int_equal(rt_actor_alive(w, 1), 0);
    assert_int_equal(rt_actor_alive(w, 0), !cases[i].all);
    done();
  }
}

static void test_gate_timeout_fault(void **st) {
  (void)st;
  world(1, 1);
  flt_fault f = fault(FLT_GATE_TIMEOUT, 0, S(1));
  f.delay_us = S(31);
  flt_plan(w, &f, 1, S(100));
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(2));
  sim_run(&s, S(40), 0);
  const sim_rec *r = first(RT_EV_GATE_TIMEOUT);
  assert_non_null(r);
  assert_int_equal(r->t_us, S(32));
  assert_int_equal(count(RT_EV_ACTOR_DEATH, RT_DEATH_GATE_RESET), 1);
  done();
}

/* A parent with one stale tool run on child 1, woken at 1 s. */
static void toolrun_world(flt_fault *f) {
  world(1, 2);
  rt_seed_stale_toolrun(w, 0, 1, RT_TR_RUNNING, RT_TR_COMPLETED);
  flt_plan(w, f, 1, S(100));
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(1));
  sim_run(&s, S(60), 0);
}

static void test_stuck_child_modes(void **st) {
  (void)st;
  flt_fault f = fault(FLT_STUCK_CHILD, 1, 0);
  f.stuck = RT_STUCK_NEVER_ANSWERS;
  toolrun_world(&f);
  assert_int_equal(count(RT_EV_TOOLRUN_STATUS, -1), 1);
  assert_int_equal(rt_toolrun_status_of(w, 0, 1), RT_TR_INTERRUPTED);
  const sim_rec *ins = first(RT_EV_TOOLRUN_INSPECT);
  assert_int_equal(ins->b, 2); /* timed out */
  assert_int_equal(ins->t_us, S(1) + S(2));
  done();
  f.stuck = RT_STUCK_LATE;
  f.delay_us = MS(500);
  toolrun_world(&f);
  assert_int_equal(rt_toolrun_status_of(w, 0, 1), RT_TR_COMPLETED);
  assert_true(first(RT_EV_TOOLRUN_INSPECT)->t_us >= S(1) + MS(500));
  done();
  f.stuck = RT_STUCK_STARTUP;
  toolrun_world(&f);
  assert_int_equal(rt_toolrun_status_of(w, 0, 1), RT_TR_INTERRUPTED);
  assert_true(count(RT_EV_GATE_TIMEOUT, -1) >= 1); /* the child's own startup */
  done();
}

static void test_storage_fail_count_and_ppm(void **st) {
  (void)st;
  world(1, 1);
  flt_fault f = fault(FLT_STORAGE_FAIL, 0, MS(500));
  f.count = 2;
  flt_plan(w, &f, 1, S(10));
  rt_alarm_preset(w, 0, S(100));
  for (int i = 1; i <= 4; i++) rt_request_at(w, 0, RT_ENTRY_FETCH, S(i));
  rt_step steps[1] = {{RT_STEP_STASH, 0, 0, 0, "", 0, 0}};
  rt_program p = {"p", steps, 1};
  for (int i = 1; i <= 4; i++) rt_fiber_at(w, 0, &p, S(i));
  sim_run(&s, S(10), 0);
  assert_int_equal(count(RT_EV_STORAGE_FAIL, -1), 2);
  assert_int_equal(count(RT_EV_ACTOR_DEATH, RT_DEATH_STORAGE), 2);
  done();
  world(1, 1);
  f = fault(FLT_STORAGE_FAIL, RT_NO_ACTOR, MS(500));
  f.ppm = 1000000; /* every commit, through the libfiu point */
  flt_plan(w, &f, 1, S(10));
  rt_fiber_at(w, 0, &p, S(1));
  sim_run(&s, S(2), 0);
  assert_int_equal(count(RT_EV_STORAGE_FAIL, -1), 1);
  assert_int_equal(count(RT_EV_TXN_COMMIT, -1), 0);
  done();
}

static void test_rpc_and_alarm_delays(void **st) {
  (void)st;
  flt_fault f = fault(FLT_RPC_DELAY, RT_NO_ACTOR, 0);
  f.delay_us = MS(1500);
  toolrun_world(&f);
  assert_int_equal(rt_toolrun_status_of(w, 0, 1), RT_TR_INTERRUPTED); /* 2 x 1.5 s > 2 s */
  done();
  f = fault(FLT_RPC_DROP, RT_NO_ACTOR, 0);
  f.ppm = 1000000;
  toolrun_world(&f);
  assert_true(count(RT_EV_FAULT, -1) >= 2); /* the planned fault, then each drop */
  assert_int_equal(count(RT_EV_RPC_REPLY, -1), 0);
  done();
  world(1, 1);
  f = fault(FLT_ALARM_DELAY, RT_NO_ACTOR, 0);
  f.delay_us = S(7);
  flt_plan(w, &f, 1, S(100));
  rt_alarm_preset(w, 0, S(10));
  sim_run(&s, S(30), 0);
  assert_int_equal(first(RT_EV_ALARM_FIRE)->t_us, S(17));
  done();
}

/* Rated faults: deterministic, about the rate, and one kind's stream is
** not shifted by another kind being switched on. */
static void test_rates_and_streams(void **st) {
  flt_fault two[2] = {fault(FLT_RESTART, RT_NO_ACTOR, -1), fault(FLT_EVICT, RT_NO_ACTOR, -1)};
  int64_t a[512], b[512];
  (void)st;
  two[0].per_day = 24;
  two[1].per_day = 48;
  int na = flt_times(7, two, 1, 10 * DAY, FLT_RESTART, a, 512);
  int nb = flt_times(7, two, 2, 10 * DAY, FLT_RESTART, b, 512);
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, (size_t)na * sizeof a[0]);
  assert_in_range(na, 180, 300); /* 240 expected */
  assert_int_equal(flt_times(8, two, 1, 10 * DAY, FLT_RESTART, b, 512) == na &&
                       memcmp(a, b, (size_t)na * sizeof a[0]) == 0,
                   0);
  for (int i = 1; i < na; i++) assert_true(a[i] > a[i - 1]);
}

/* The 15-minute alarm handler limit covers the whole invocation: here a
** 20-minute recovery hook in the startup the alarm triggers (with the gate
** ceiling raised so that the gate does not reset first). */
static void test_alarm_limit(void **st) {
  (void)st;
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  sim_init(&s, &sc);
  rt_config_default(&c);
  c.gate_ceiling_us = S(3600);
  w = rt_world_new(&s, &c);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "a");
  sp.policies[0] = (rt_recovery_policy){"", RT_RECOVER_DROP, S(20 * 60), 0, ""};
  sp.n_policies = 1;
  rt_actor_add(w, &sp);
  rt_step steps[1] = {{RT_STEP_WORK, S(1), S(1), 0, "", 0, 0}};
  rt_program p = {"p", steps, 1};
  rt_seed_orphan_fiber(w, 0, &p, -1);
  rt_alarm_preset(w, 0, S(1));
  sim_run(&s, S(2000), 0);
  const sim_rec *cut = NULL;
  for (size_t i = 0; i < s.trace.n && !cut; i++)
    if (s.trace.recs[i].kind == RT_EV_FAULT &&
        !strcmp(sim_trace_str(&s.trace, s.trace.recs[i].s), "alarm_limit"))
      cut = &s.trace.recs[i];
  assert_non_null(cut);
  assert_int_equal(cut->t_us, S(1) + S(15 * 60));
  const sim_rec *retry = first(RT_EV_ALARM_RETRY);
  assert_non_null(retry);
  assert_int_equal(retry->a, S(1) + S(15 * 60) + S(2));
  done();
}

/* Rated faults are planned lazily: a rate of 100000/h over a year leaves
** one pending event per fault, and the arrivals that fire are exactly the
** times flt_times draws (the same streams, the same order). */
static void test_rated_lazy_matches_times(void **st) {
  (void)st;
  flt_fault f[2] = {fault(FLT_EVICT, RT_NO_ACTOR, -1), fault(FLT_RESTART, RT_NO_ACTOR, -1)};
  f[0].per_day = 100000 * 24;
  f[1].per_day = 48;
  static int64_t want[4096];
  for (int round = 0; round < 2; round++) {
    world(5, 3);
    assert_int_equal(flt_plan(w, f, 2, 365 * DAY), 2);
    assert_int_equal(sim_pending(&s), 2);
    sim_run(&s, S(60), 0);
    assert_true(sim_pending(&s) <= 2);
    int n = flt_times(5, f, 2, 365 * DAY, FLT_EVICT, want, 4096), k = 0;
    assert_true(n == 4096);
    uint32_t ev = sim_trace_intern(&s.trace, "evict");
    for (size_t i = 0; i < s.trace.n; i++) {
      const sim_rec *r = &s.trace.recs[i];
      if (r->kind != RT_EV_FAULT || r->s != ev) continue;
      assert_int_equal(r->t_us, want[k]);
      k++;
    }
    assert_in_range(k, 1400, 1950); /* 1,667 expected in 60 s */
    assert_true(want[k] > S(60));
    static uint64_t first_hash;
    if (round == 0) first_hash = s.trace.hash;
    else assert_true(s.trace.hash == first_hash);
    done();
  }
}

/* Repeating workload is planned lazily: a request every 1 ms over a day
** leaves one arrival and one chain event pending, and the arrivals come on
** time. */
static void test_workload_lazy(void **st) {
  (void)st;
  static const char text[] =
      "{\"name\": \"dense\", \"duration\": \"1d\", \"actors\": [{\"id\": \"a\"}],"
      " \"workload\": [{\"request\": \"a\", \"at\": \"0s\", \"every\": \"1ms\"}],"
      " \"cases\": [{\"name\": \"c\"}]}";
  scn_scenario sc;
  char err[512];
  if (scn_load_text("dense.json", text, sizeof text - 1, &sc, err, sizeof err)) fail_msg("%s", err);
  sim_config cfg = {1, SIM_FIFO, 3, 1000};
  assert_int_equal(sim_init(&s, &cfg), 0);
  w = rt_world_new(&s, &sc.cases[0].cfg);
  scn_result names;
  memset(&names, 0, sizeof names);
  assert_int_equal(scn__add_actors(&sc, w, &names), 0);
  assert_int_equal(scn__plan_workload(&sc, w, 0), 0);
  assert_true(sim_pending(&s) <= 2);
  sim_run(&s, S(1), 0);
  assert_int_equal(count(RT_EV_REQUEST_ARRIVE, -1), 1001); /* 0, 1 ms, ..., 1 s */
  assert_true(sim_pending(&s) < 50);
  assert_int_equal(scn__plan_failed(), 0);
  done();
  scn_result_free(&names);
  scn_free(&sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rated_lazy_matches_times),
      cmocka_unit_test(test_workload_lazy),
      cmocka_unit_test(test_kill_kinds),
      cmocka_unit_test(test_gate_timeout_fault),
      cmocka_unit_test(test_stuck_child_modes),
      cmocka_unit_test(test_storage_fail_count_and_ppm),
      cmocka_unit_test(test_rpc_and_alarm_delays),
      cmocka_unit_test(test_rates_and_streams),
      cmocka_unit_test(test_alarm_limit),
  };
  return cmocka_run_group_tests_name("faults", tests, NULL, NULL) != 0;
}
