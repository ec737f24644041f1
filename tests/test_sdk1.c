/*
** test_sdk1.c: the Agents SDK surface of issue #14 (fibers: resume point,
** JSON stash values, awaited runFiber, stash outside a fiber, recovery hooks
** that vary per call; the #1729 retain-on-throw variant). Each test builds a
** small world, runs it, and reads the trace and the durable state.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "faults/flt.h"
#include "runtime/rt.h"
#include "runtime/rt_agent.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

static sim SIM;
static rt_world *W;

static void world(const rt_config *cfg) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&SIM, &sc), 0);
  if (cfg)
    c = *cfg;
  else
    rt_config_default(&c);
  W = rt_world_new(&SIM, &c);
  assert_non_null(W);
}

static uint32_t actor(const char *id, const rt_recovery_policy *p) {
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "%s", id);
  snprintf(sp.cls, sizeof sp.cls, "Agent");
  if (p) sp.policies[sp.n_policies++] = *p;
  return rt_actor_add(W, &sp);
}

static void done(void) {
  rt_world_free(W);
  sim_free(&SIM);
  W = NULL;
}

static rt_step step(rt_step_kind k, int64_t us, const char *text, int has_value) {
  rt_step s;
  memset(&s, 0, sizeof s);
  s.kind = k;
  s.min_us = s.max_us = us;
  snprintf(s.name, sizeof s.name, "%s", text);
  s.has_value = has_value;
  return s;
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_all(ctx, (rt_death_cause)arg);
}

static size_t count(uint32_t kind, const char *s_is) {
  size_t n = 0;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind != kind) continue;
    if (s_is && (!r->s || strcmp(sim_trace_str(&SIM.trace, r->s), s_is) != 0)) continue;
    n++;
  }
  return n;
}

static const sim_rec *nth(uint32_t kind, size_t k) {
  for (size_t i = 0; i < SIM.trace.n; i++)
    if (SIM.trace.recs[i].kind == kind && k-- == 0) return &SIM.trace.recs[i];
  return NULL;
}

/* [work, stash, effect] x3: a crash after the second turn committed resumes
** after that turn (pc 6), so no effect runs twice; a crash inside its commit
** window resumes after the first turn (pc 3) and the second effect repeats. */
static void run_resume(int64_t crash_at, int want_pc, size_t want_effects) {
  rt_step st[9];
  rt_program p = {"job", st, 9};
  for (int i = 0; i < 3; i++) {
    st[3 * i] = step(RT_STEP_WORK, MS(500), "", 0);
    st[3 * i + 1] = step(RT_STEP_STASH, 0, "", 0);
    st[3 * i + 2] = step(RT_STEP_EFFECT, 0, "send", 0);
  }
  world(NULL);
  actor("a", NULL);
  assert_int_equal(rt_fiber_at(W, 0, &p, S(1)), 0);
  sim_at(&SIM, crash_at, 0, crash_cb, W, RT_DEATH_CRASH);
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(5));
  sim_run(&SIM, S(30), 0);
  const sim_rec *h = nth(RT_EV_FIBER_RECOVERED, 0);
  assert_non_null(h);
  assert_int_equal(h->b, want_pc);
  assert_int_equal(count(RT_EV_EFFECT, "send"), want_effects);
  assert_int_equal(rt_count_fiber_rows(W, 0), 0);
  done();
}

static void test_resume_after_the_stash_turn(void **st) {
  (void)st;
  run_resume(S(2) + MS(100), 6, 3);
}

static void test_commit_window_reruns_the_effect(void **st) {
  (void)st;
  run_resume(S(2) + MS(1), 3, 4);
}

/* Awaited runFiber: the request answers with the return value, or fails
** with the body's message; this.stash() outside a fiber fails. */
static void test_awaited_run_fiber(void **st) {
  rt_step ok[4] = {step(RT_STEP_WORK, MS(100), "", 0), step(RT_STEP_STASH, 0, "{\"k\":1}", 1),
                   step(RT_STEP_READ, 0, "", 0), step(RT_STEP_RETURN, 0, "{\"answer\":42}", 0)};
  rt_step bad[2] = {step(RT_STEP_WORK, MS(100), "", 0), step(RT_STEP_FAIL, 0, "quota", 0)};
  rt_program po = {"ok", ok, 4}, pb = {"bad", bad, 2};
  (void)st;
  world(NULL);
  actor("a", NULL);
  assert_int_equal(rt_fiber_awaited_at(W, 0, &po, S(1)), 0);
  assert_int_equal(rt_fiber_awaited_at(W, 0, &pb, S(2)), 0);
  assert_int_equal(rt_stash_outside_at(W, 0, S(3)), 0);
  sim_run(&SIM, S(10), 0);
  assert_int_equal(count(RT_EV_REQUEST_OK, "{\"answer\":42}"), 1);
  const sim_rec *ok_rec = NULL;
  for (size_t i = 0; i < SIM.trace.n; i++)
    if (SIM.trace.recs[i].kind == RT_EV_REQUEST_OK && SIM.trace.recs[i].s) ok_rec = &SIM.trace.recs[i];
  assert_non_null(ok_rec);
  assert_int_equal(ok_rec->b, MS(100)); /* the caller waited for the body */
  assert_int_equal(count(RT_EV_REQUEST_FAIL, "quota"), 1);
  assert_int_equal(count(RT_EV_REQUEST_FAIL, "stash() called outside a fiber"), 1);
  assert_int_equal(count(RT_EV_FIBER_READ, "{\"k\":1}"), 1);
  assert_int_equal(count(RT_EV_STASH, "{\"k\":1}"), 1);
  assert_int_equal(rt_count_fiber_rows(W, 0), 0);
  done();
}

/* require_field: a value snapshot with the member resumes (after the
** stash's turn, carrying the value); one without is acknowledged only. */
static void test_require_field(void **st) {
  rt_step a[4] = {step(RT_STEP_WORK, MS(100), "", 0), step(RT_STEP_STASH, 0, "{\"cursor\":3}", 1),
                  step(RT_STEP_WORK, S(5), "", 0), step(RT_STEP_EFFECT, 0, "finish", 0)};
  rt_step b[4] = {step(RT_STEP_WORK, MS(100), "", 0), step(RT_STEP_STASH, 0, "{\"cursors\":3}", 1),
                  step(RT_STEP_WORK, S(5), "", 0), step(RT_STEP_EFFECT, 0, "finish", 0)};
  rt_program pa = {"with", a, 4}, pb = {"without", b, 4};
  rt_recovery_policy pol;
  (void)st;
  memset(&pol, 0, sizeof pol);
  pol.action = RT_RECOVER_RESUME;
  snprintf(pol.require_field, sizeof pol.require_field, "cursor");
  world(NULL);
  actor("a", &pol);
  rt_fiber_at(W, 0, &pa, S(1));
  rt_fiber_at(W, 0, &pb, S(1));
  sim_at(&SIM, S(2), 0, crash_cb, W, RT_DEATH_CRASH);
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(3));
  sim_run(&SIM, S(20), 0);
  assert_int_equal(count(RT_EV_FIBER_RECOVERED, "with"), 1);
  assert_int_equal(count(RT_EV_FIBER_RECOVERED, "without"), 1);
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind != RT_EV_FIBER_RECOVERED) continue;
    int is_with = strcmp(sim_trace_str(&SIM.trace, r->s), "with") == 0;
    assert_int_equal(r->c, is_with ? RT_RECOVER_RESUME : RT_RECOVER_DROP);
  }
  assert_int_equal(count(RT_EV_EFFECT, "finish"), 1);
  assert_int_equal(count(RT_EV_STASH, "{\"cursor\":3}"), 2); /* the resumed fiber carries it */
  done();
}

/* #1729: a hook that throws twice keeps its row, is retried on follow-up
** alarms backing off (60 s, then 120 s) and resumes on the third call; at
** #1604 the row is deleted after the first throw. */
static void run_1729(rt_retain retain, int64_t max_age, size_t want_hooks, size_t want_skipped) {
  rt_step st[2] = {step(RT_STEP_WORK, S(2), "", 0), step(RT_STEP_STASH, 0, "", 0)};
  rt_program p = {"job", st, 2};
  rt_recovery_policy pol;
  rt_config c;
  rt_config_default(&c);
  c.retain = retain;
  if (max_age) c.fiber_max_age_us = max_age < 0 ? 0 : max_age; /* -1: 0, keep forever */
  memset(&pol, 0, sizeof pol);
  pol.action = RT_RECOVER_RESUME;
  pol.throws = 2;
  world(&c);
  actor("a", &pol);
  rt_fiber_at(W, 0, &p, S(1));
  sim_at(&SIM, S(2), 0, crash_cb, W, RT_DEATH_RESTART);
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(10));
  sim_run(&SIM, S(600), 0);
  assert_int_equal(count(RT_EV_HOOK_BEGIN, NULL), want_hooks);
  assert_int_equal(count(RT_EV_FIBER_SKIPPED, NULL), want_skipped);
  assert_int_equal(rt_count_fiber_rows(W, 0), 0);
  if (retain == RT_RETAIN_1729 && !want_skipped) {
    assert_int_equal(nth(RT_EV_HOOK_BEGIN, 1)->t_us, S(70));
    assert_int_equal(nth(RT_EV_HOOK_BEGIN, 2)->t_us, S(190));
    assert_int_equal(count(RT_EV_FIBER_RECOVERED, NULL), 1);
    assert_int_equal(count(RT_EV_FIBER_RETAINED, NULL), 2);
  }
  done();
}

static void test_1729_retains_and_retries(void **st) {
  (void)st;
  run_1729(RT_RETAIN_1729, 0, 3, 0);
}

static void test_1604_deletes_after_a_throw(void **st) {
  (void)st;
  run_1729(RT_RETAIN_NONE, 0, 1, 0);
}

static void test_1729_max_age_gives_up(void **st) {
  (void)st;
  run_1729(RT_RETAIN_1729, S(60), 2, 1);
}

/* fiberRecoveryMaxAgeMs 0 keeps a retained row forever: the hook that
** gave up at 60 s above is retried until it resumes. */
static void test_1729_max_age_zero_keeps(void **st) {
  (void)st;
  run_1729(RT_RETAIN_1729, -1, 3, 0);
}

/* The follow-up delay doubles from the keepAlive interval and stops at 5 min. */
static void test_1729_backoff(void **st) {
  rt_config c;
  (void)st;
  rt_config_default(&c);
  c.retain = RT_RETAIN_1729;
  world(&c);
  assert_int_equal(rt__recovery_backoff_us(W, 0), S(30));
  assert_int_equal(rt__recovery_backoff_us(W, 1), S(60));
  assert_int_equal(rt__recovery_backoff_us(W, 3), S(240));
  assert_int_equal(rt__recovery_backoff_us(W, 4), S(300));
  assert_int_equal(rt__recovery_backoff_us(W, 1000), S(300));
  done();
}

/* Same scenario twice, same trace hash (determinism of the new paths). */
static void test_1729_deterministic(void **st) {
  uint64_t h[2];
  (void)st;
  for (int k = 0; k < 2; k++) {
    rt_step s2[3] = {step(RT_STEP_WORK, S(2), "", 0), step(RT_STEP_STASH, 0, "{\"a\":1}", 1),
                     step(RT_STEP_RETURN, 0, "7", 0)};
    rt_program p = {"job", s2, 3};
    rt_recovery_policy pol;
    rt_config c;
    rt_config_default(&c);
    c.retain = RT_RETAIN_1729;
    memset(&pol, 0, sizeof pol);
    pol.action = RT_RECOVER_RESUME;
    pol.throws = 1;
    world(&c);
    actor("a", &pol);
    rt_fiber_awaited_at(W, 0, &p, S(1));
    sim_at(&SIM, S(3) + MS(100), 0, crash_cb, W, RT_DEATH_CRASH);
    rt_request_at(W, 0, RT_ENTRY_FETCH, S(10));
    sim_run(&SIM, S(600), 0);
    h[k] = SIM.trace.hash;
    done();
  }
  assert_true(h[0] == h[1]);
}

static void world_seeded(uint64_t seed, sim_strategy strat, const rt_config *cfg) {
  sim_config sc = {seed, strat, 3, 1000};
  assert_int_equal(sim_init(&SIM, &sc), 0);
  W = rt_world_new(&SIM, cfg);
  assert_non_null(W);
}

/* keepAlive() and its disposer as separate requests; a second dispose is a
** no-op; keepAliveWhile(fn) that throws releases and fails the request. */
static void test_keepalive_leases(void **st) {
  (void)st;
  world(NULL);
  actor("a", NULL);
  assert_int_equal(rt_keepalive_acquire_at(W, 0, "l1", S(1)), 0);
  assert_int_equal(rt_keepalive_dispose_at(W, 0, "l1", S(5)), 0);
  assert_int_equal(rt_keepalive_dispose_at(W, 0, "l1", S(6)), 0);
  assert_int_equal(rt_keepalive_dispose_at(W, 0, "never", S(7)), 0);
  assert_int_equal(rt_keepalive_while_throws_at(W, 0, S(2), "boom", S(10)), 0);
  assert_int_equal(rt_keepalive_acquire_at(W, 0, "", S(1)), -1);
  sim_run(&SIM, S(3), 0);
  assert_int_equal(rt_keepalive_refs(W, 0), 1);
  assert_int_equal(rt_alarm_of(W, 0), S(31));
  sim_run(&SIM, S(11), 0);
  assert_int_equal(rt_keepalive_refs(W, 0), 1); /* keepAliveWhile's ref */
  sim_run(&SIM, S(20), 0);
  assert_int_equal(rt_keepalive_refs(W, 0), 0);
  size_t released = 0, noop = 0;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind == RT_EV_KEEPALIVE_DISPOSE && r->a) released++;
    if (r->kind == RT_EV_KEEPALIVE_DISPOSE && !r->a) noop++;
  }
  assert_int_equal(released, 1);
  assert_int_equal(noop, 2);
  assert_int_equal(count(RT_EV_REQUEST_FAIL, "boom"), 1);
  done();
}

/* The SDK's #1707 disposer defers its reschedule: over seeds of the random
** strategy, some order of {dispose, re-take} at one instant leaves a held
** ref with no alarm; the immediate ("fixed") disposer never does. */
static int race_seen(rt_dispose d) {
  int seen = 0;
  for (uint64_t seed = 1; seed <= 200 && !seen; seed++) {
    rt_config c;
    rt_config_default(&c);
    c.dispose = d;
    world_seeded(seed, SIM_RANDOM, &c);
    actor("a", NULL);
    rt_keepalive_acquire_at(W, 0, "l2", S(20));
    rt_keepalive_dispose_at(W, 0, "l2", S(25));
    rt_keepalive_acquire_at(W, 0, "l3", S(25));
    sim_run(&SIM, S(25) + MS(1), 0);
    assert_int_equal(rt_keepalive_refs(W, 0), 1);
    seen = rt_alarm_of(W, 0) < 0;
    done();
  }
  return seen;
}

static void test_sdk1707_dispose_race(void **st) {
  (void)st;
  assert_true(race_seen(RT_DISPOSE_SDK1707));
  assert_false(race_seen(RT_DISPOSE_FIXED));
}

/* count limits a rate's arrivals to the first N of the same draws. */
static void test_fault_count_limits_rate(void **st) {
  flt_fault f;
  int64_t all[64], two[64];
  (void)st;
  memset(&f, 0, sizeof f);
  f.kind = FLT_EVICT;
  f.actor = RT_NO_ACTOR;
  f.at_us = -1;
  f.per_day = 200;
  int n = flt_times(5, &f, 1, S(86400), FLT_EVICT, all, 64);
  assert_true(n > 10);
  f.count = 2;
  assert_int_equal(flt_times(5, &f, 1, S(86400), FLT_EVICT, two, 64), 2);
  assert_true(two[0] == all[0] && two[1] == all[1]);
  f.kind = FLT_STORAGE_FAIL; /* count is per arrival there: the rate is not limited */
  assert_int_equal(flt_times(5, &f, 1, S(86400), FLT_STORAGE_FAIL, two, 64), n);
}

/* onstart_throw: exactly the next N onStart calls throw. */
static void test_onstart_throws_once(void **st) {
  (void)st;
  world(NULL);
  actor("a", NULL);
  rt_onstart_throws(W, 0, 1);
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(1));
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(2));
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(3));
  sim_run(&SIM, S(10), 0);
  assert_int_equal(count(RT_EV_STARTUP_FAIL, NULL), 1);
  assert_int_equal(count(RT_EV_STARTUP_OK, NULL), 1);
  assert_int_equal(count(RT_EV_REQUEST_FAIL, "onStart threw"), 1);
  assert_int_equal(count(RT_EV_REQUEST_OK, NULL), 2);
  done();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resume_after_the_stash_turn),
      cmocka_unit_test(test_commit_window_reruns_the_effect),
      cmocka_unit_test(test_awaited_run_fiber),
      cmocka_unit_test(test_require_field),
      cmocka_unit_test(test_1729_retains_and_retries),
      cmocka_unit_test(test_1604_deletes_after_a_throw),
      cmocka_unit_test(test_1729_max_age_gives_up),
      cmocka_unit_test(test_1729_max_age_zero_keeps),
      cmocka_unit_test(test_1729_backoff),
      cmocka_unit_test(test_1729_deterministic),
      cmocka_unit_test(test_keepalive_leases),
      cmocka_unit_test(test_sdk1707_dispose_race),
      cmocka_unit_test(test_fault_count_limits_rate),
      cmocka_unit_test(test_onstart_throws_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
