/*
** test_runtime.c: the actor host and agent layer, behaviour by behaviour
** (issue: runtime). Each test builds a small world, runs it, and reads the
** trace and the durable state.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

typedef struct fx {
  sim s;
  rt_world *w;
  rt_config cfg;
  rt_step steps[64];
  rt_program prog;
} fx;

static fx F;

static void fx_init(uint64_t seed, const rt_config *cfg) {
  sim_config sc = {seed, SIM_FIFO, 3, 1000};
  assert_int_equal(sim_init(&F.s, &sc), 0);
  if (cfg)
    F.cfg = *cfg;
  else
    rt_config_default(&F.cfg);
  F.w = rt_world_new(&F.s, &F.cfg);
  assert_non_null(F.w);
}

static uint32_t fx_actor(const char *id) {
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "%s", id);
  snprintf(sp.cls, sizeof sp.cls, "Agent");
  return rt_actor_add(F.w, &sp);
}

/* The observed loop of workerd-observed.md: n steps of 500 ms, each
** logging and stashing. */
static rt_program *fx_job(int n) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    F.steps[k++] = (rt_step){RT_STEP_WORK, MS(500), MS(500), 0, "", 0, 0};
    F.steps[k++] = (rt_step){RT_STEP_EFFECT, 0, 0, 0, "log", 0, 0};
    F.steps[k++] = (rt_step){RT_STEP_STASH, 0, 0, 0, "", 0, 0};
  }
  snprintf(F.prog.name, sizeof F.prog.name, "job");
  F.prog.steps = F.steps;
  F.prog.n_steps = k;
  return &F.prog;
}

static void fx_free(void) {
  rt_world_free(F.w);
  sim_free(&F.s);
  memset(&F, 0, sizeof F);
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_all(ctx, (rt_death_cause)arg);
}

static void evict_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_actor(ctx, (uint32_t)arg, RT_DEATH_EVICT);
}

static size_t count_kind(uint32_t kind, uint32_t actor) {
  size_t n = 0;
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == kind && (actor == RT_NO_ACTOR || F.s.trace.recs[i].actor == actor))
      n++;
  return n;
}

static const sim_rec *find_kind(uint32_t kind, size_t nth) {
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == kind && nth-- == 0) return &F.s.trace.recs[i];
  return NULL;
}

/* ---- tests ------------------------------------------------------------ */

/* Crash 1 ms after step 4's turn: the turn is still in the commit window,
** so recovery sees step 3's snapshot (workerd-observed.md item 1). */
static void test_crash_in_commit_window_loses_turn(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(1) + 4 * MS(500) + MS(1), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(5));
  sim_run(&F.s, S(60), 0);
  const sim_rec *rec = find_kind(RT_EV_FIBER_RECOVERED, 0);
  assert_non_null(rec);
  assert_int_equal(rec->b, 9); /* pc after step 3's stash */
  assert_int_equal(count_kind(RT_EV_FIBER_RECOVERED, 0), 1);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 0); /* resumed fiber finished */
  assert_int_equal(count_kind(RT_EV_FIBER_DONE, 0), 1);
  fx_free();
}

/* The same crash after the commit window: step 4's snapshot survives. */
static void test_crash_after_commit_keeps_turn(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(1) + 4 * MS(500) + MS(10), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(5));
  sim_run(&F.s, S(60), 0);
  const sim_rec *rec = find_kind(RT_EV_FIBER_RECOVERED, 0);
  assert_non_null(rec);
  assert_int_equal(rec->b, 12);
  fx_free();
}

/* Immediate commits (the seeds' model): durable when stash returns. */
static void test_immediate_commit_variant(void **st) {
  (void)st;
  rt_config c;
  rt_config_default(&c);
  c.commit = RT_COMMIT_IMMEDIATE;
  fx_init(1, &c);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(1) + 4 * MS(500) + MS(1), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(5));
  sim_run(&F.s, S(60), 0);
  const sim_rec *rec = find_kind(RT_EV_FIBER_RECOVERED, 0);
  assert_non_null(rec);
  assert_int_equal(rec->b, 12);
  fx_free();
}

/* An alarm during a running fiber: housekeeping skips the active fiber. */
static void test_active_fiber_not_recovered(void **st) {
  (void)st;
  rt_config c;
  rt_config_default(&c);
  c.keepalive_interval_us = S(2);
  fx_init(1, &c);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(10), S(1)); /* runs 5 s; heartbeats every 2 s */
  sim_run(&F.s, S(30), 0);
  assert_true(count_kind(RT_EV_ALARM_FIRE, 0) >= 2);
  assert_int_equal(count_kind(RT_EV_FIBER_RECOVERED, RT_NO_ACTOR), 0);
  assert_int_equal(count_kind(RT_EV_FIBER_DONE, 0), 1);
  fx_free();
}

/* Killed with an armed heartbeat and woken by the alarm alone: startup and
** housekeeping both scan, the orphan is handed over once. */
static void test_orphan_recovered_once_by_alarm_wake(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(3) + MS(100), 0, crash_cb, F.w, RT_DEATH_CRASH);
  sim_run(&F.s, S(120), 0);
  /* every startup scans, and every handled alarm scans again */
  assert_int_equal(count_kind(RT_EV_RECOVERY_SCAN, 0),
                   count_kind(RT_EV_STARTUP_BEGIN, 0) + count_kind(RT_EV_ALARM_FIRE, 0));
  assert_int_equal(count_kind(RT_EV_FIBER_RECOVERED, 0), 1);
  const sim_rec *wake = find_kind(RT_EV_ACTOR_WAKE, 1);
  assert_non_null(wake);
  assert_int_equal(wake->b, RT_ENTRY_ALARM);
  assert_int_equal(wake->t_us, S(31)); /* last heartbeat (1 s) + 30 s */
  fx_free();
}

/* A request and the overdue alarm arrive at the same instant. */
static void test_request_and_alarm_same_instant(void **st) {
  (void)st;
  fx_init(7, NULL);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(3) + MS(100), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(31));
  sim_run(&F.s, S(120), 0);
  assert_int_equal(count_kind(RT_EV_FIBER_RECOVERED, 0), 1);
  fx_free();
}

/* A plain RPC method does not run onStart, so it does not recover. */
static void test_rpc_wake_does_not_recover(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(2), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_alarm_preset(F.w, 0, S(500)); /* push the heartbeat out of the way */
  rt_request_at(F.w, 0, RT_ENTRY_RPC, S(5));
  sim_run(&F.s, S(10), 0);
  assert_int_equal(count_kind(RT_EV_REQUEST_OK, 0), 2);
  assert_int_equal(count_kind(RT_EV_STARTUP_BEGIN, 0), 1);
  assert_int_equal(count_kind(RT_EV_FIBER_RECOVERED, 0), 0);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 1);
  fx_free();
}

/* A held keepAlive keeps the actor alive past the 140 s idle limit. */
static void test_keepalive_holds_past_idle(void **st) {
  (void)st;
  fx_init(3, NULL);
  fx_actor("a");
  rt_step steps[2] = {{RT_STEP_WORK, S(400), S(400), 0, "", 0, 0}, {RT_STEP_STASH, 0, 0, 0, "", 0, 0}};
  rt_program p = {"long", steps, 2};
  rt_fiber_at(F.w, 0, &p, S(1));
  sim_run(&F.s, S(600), 0);
  const sim_rec *death = find_kind(RT_EV_ACTOR_DEATH, 0);
  assert_non_null(death);
  assert_true(death->t_us > S(401)); /* idle only after the fiber ended */
  assert_int_equal(count_kind(RT_EV_FIBER_DONE, 0), 1);
  assert_true(count_kind(RT_EV_ALARM_FIRE, 0) >= 13);
  fx_free();
}

/* Without keepAlive, a fiber whose step outlasts the idle limit is evicted. */
static void test_no_keepalive_is_evicted(void **st) {
  (void)st;
  rt_config c;
  rt_config_default(&c);
  c.keepalive_interval_us = S(1000); /* heartbeat too slow to help */
  fx_init(3, &c);
  fx_actor("a");
  rt_step steps[1] = {{RT_STEP_WORK, S(400), S(400), 0, "", 0, 0}};
  rt_program p = {"long", steps, 1};
  rt_fiber_at(F.w, 0, &p, S(1));
  sim_run(&F.s, S(600), 0);
  const sim_rec *death = find_kind(RT_EV_ACTOR_DEATH, 0);
  assert_non_null(death);
  assert_int_equal(death->a, RT_DEATH_IDLE);
  assert_true(death->t_us <= S(1 + 140));
  fx_free();
}

static void run_dispose(rt_dispose d, size_t *fires_after_done) {
  rt_config c;
  rt_config_default(&c);
  c.dispose = d;
  fx_init(5, &c);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(2), S(1)); /* done at 2 s */
  sim_run(&F.s, S(300), 0);
  const sim_rec *done = find_kind(RT_EV_FIBER_DONE, 0);
  assert_non_null(done);
  *fires_after_done = 0;
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == RT_EV_ALARM_FIRE && F.s.trace.recs[i].t_us > done->t_us)
      (*fires_after_done)++;
  assert_int_equal(rt_alarm_of(F.w, 0), -1); /* no alarm remains */
  assert_non_null(find_kind(RT_EV_ACTOR_DEATH, 0)); /* it went idle */
}

static void test_dispose_1604_one_stale_heartbeat(void **st) {
  (void)st;
  size_t fires;
  run_dispose(RT_DISPOSE_SDK1604, &fires);
  assert_int_equal(fires, 1);
  fx_free();
}

static void test_dispose_fixed_clears_alarm(void **st) {
  (void)st;
  size_t fires;
  run_dispose(RT_DISPOSE_FIXED, &fires);
  assert_int_equal(fires, 0);
  fx_free();
}

/* Seed 001's heartbeat: an interval schedule every 10 s. */
static void test_heartbeat_schedule_design(void **st) {
  (void)st;
  rt_config c;
  rt_config_default(&c);
  c.heartbeat = RT_HB_SCHEDULE;
  fx_init(5, &c);
  fx_actor("a");
  rt_step steps[1] = {{RT_STEP_WORK, S(35), S(35), 0, "", 0, 0}};
  rt_program p = {"p", steps, 1};
  rt_fiber_at(F.w, 0, &p, S(0));
  sim_run(&F.s, S(60), 0);
  assert_int_equal(count_kind(RT_EV_SCHEDULE_RUN, 0), 3); /* 10, 20, 30 s */
  const sim_rec *r = find_kind(RT_EV_SCHEDULE_RUN, 0);
  assert_int_equal(r->t_us, S(10));
  assert_string_equal(sim_trace_str(&F.s.trace, r->s), "_cf_fiberHeartbeat");
  assert_int_equal(rt_alarm_of(F.w, 0), -1);
  fx_free();
}

/* Every wake records its actor's own class name, also after actors added
** later moved the actor table (the name's id is kept per actor). */
static void test_wake_records_its_class(void **st) {
  (void)st;
  fx_init(1, NULL);
  uint32_t a = fx_actor("a");
  rt_request_at(F.w, a, RT_ENTRY_FETCH, S(1));
  sim_run(&F.s, S(2), 0);
  rt_kill_actor(F.w, a, RT_DEATH_EVICT);
  for (int i = 0; i < 10; i++) { /* past the table's first 8 slots */
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, "b%d", i);
    snprintf(sp.cls, sizeof sp.cls, "Class%d", i);
    uint32_t b = rt_actor_add(F.w, &sp);
    rt_request_at(F.w, b, RT_ENTRY_FETCH, S(3 + i));
  }
  rt_request_at(F.w, a, RT_ENTRY_FETCH, S(20));
  sim_run(&F.s, S(30), 0);
  size_t wakes = count_kind(RT_EV_ACTOR_WAKE, RT_NO_ACTOR);
  assert_int_equal(wakes, 12);
  for (size_t k = 0; k < wakes; k++) {
    const sim_rec *r = find_kind(RT_EV_ACTOR_WAKE, k);
    assert_string_equal(sim_trace_str(&F.s.trace, r->s), rt_actor_spec_of(F.w, r->actor)->cls);
  }
  fx_free();
}

/* A gate held 31 s resets the actor; pending callers get the message. */
static void test_gate_timeout_resets(void **st) {
  (void)st;
  fx_init(1, NULL);
  uint32_t a = fx_actor("a");
  rt_set_onstart_us(F.w, a, S(31));
  rt_request_at(F.w, a, RT_ENTRY_FETCH, S(1));
  rt_request_at(F.w, a, RT_ENTRY_FETCH, S(2));
  sim_run(&F.s, S(40), 0);
  const sim_rec *to = find_kind(RT_EV_GATE_TIMEOUT, 0);
  assert_non_null(to);
  assert_int_equal(to->t_us, S(31));
  const sim_rec *d = find_kind(RT_EV_ACTOR_DEATH, 0);
  assert_int_equal(d->a, RT_DEATH_GATE_RESET);
  assert_int_equal(count_kind(RT_EV_REQUEST_FAIL, a), 2);
  const sim_rec *f = find_kind(RT_EV_REQUEST_FAIL, 1);
  assert_string_equal(sim_trace_str(&F.s.trace, f->s), RT_MSG_GATE_RESET);
  assert_int_equal(count_kind(RT_EV_REQUEST_OK, a), 0);
  fx_free();
}

/* A recovery hook that throws: the row is still deleted (@1604). */
static void test_throwing_hook_deletes_row(void **st) {
  (void)st;
  fx_init(1, NULL);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "a");
  sp.policies[0] = (rt_recovery_policy){"", RT_RECOVER_THROW, 0, 0, ""};
  sp.n_policies = 1;
  rt_actor_add(F.w, &sp);
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(3), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(4));
  sim_run(&F.s, S(10), 0);
  assert_int_equal(count_kind(RT_EV_FIBER_HOOK_THREW, 0), 1);
  assert_int_equal(count_kind(RT_EV_FIBER_RECOVERED, 0), 0);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 0);
  fx_free();
}

/* A slow user hook runs inside the gate: 40 s of hook resets the actor,
** and the rows are never deleted (A.7 and D.9). */
static void test_slow_hook_wedges(void **st) {
  (void)st;
  fx_init(1, NULL);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "a");
  sp.policies[0] = (rt_recovery_policy){"", RT_RECOVER_RESUME, S(40), 0, ""};
  sp.n_policies = 1;
  rt_actor_add(F.w, &sp);
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(3), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(4));
  sim_run(&F.s, S(50), 0);
  assert_int_equal(count_kind(RT_EV_GATE_TIMEOUT, 0), 1);
  assert_int_equal(count_kind(RT_EV_FIBER_RECOVERED, 0), 0);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 1);
  fx_free();
}

/* Eviction keeps storage: the alarm and the rows survive. */
static void test_evict_keeps_storage(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job(10), S(1));
  sim_at(&F.s, S(2) + MS(100), 0, evict_cb, F.w, 0);
  sim_run(&F.s, S(2) + MS(200), 0);
  assert_false(rt_actor_alive(F.w, 0));
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 1);
  assert_int_equal(rt_alarm_of(F.w, 0), S(31));
  fx_free();
}

/* Storage failure at commit: the turn is lost and the actor is reset. */
static void test_commit_failure_resets(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_fail_commits(F.w, 0, 1);
  rt_fiber_at(F.w, 0, fx_job(3), S(1));
  sim_run(&F.s, S(2), 0);
  assert_int_equal(count_kind(RT_EV_STORAGE_FAIL, 0), 1);
  const sim_rec *d = find_kind(RT_EV_ACTOR_DEATH, 0);
  assert_non_null(d);
  assert_int_equal(d->a, RT_DEATH_STORAGE);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 0); /* the insert rolled back */
  fx_free();
}

/* Alarm handler failure retries with 2 s doubling backoff. */
static void test_alarm_retry_backoff(void **st) {
  (void)st;
  fx_init(1, NULL);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "a");
  sp.on_start_throws = RT_THROW_ALWAYS;
  rt_actor_add(F.w, &sp);
  rt_alarm_preset(F.w, 0, S(10));
  sim_run(&F.s, S(300), 0);
  assert_int_equal(count_kind(RT_EV_ALARM_RETRY, 0), 6);
  int64_t expect = S(10);
  for (size_t i = 0; i < 6; i++) {
    const sim_rec *r = find_kind(RT_EV_ALARM_RETRY, i);
    expect += S(2) << i;
    assert_int_equal(r->a, expect);
  }
  assert_int_equal(count_kind(RT_EV_ALARM_FIRE, 0), 7);
  assert_int_equal(rt_alarm_of(F.w, 0), -1);
  fx_free();
}

static size_t count_str(uint32_t kind, const char *str) {
  size_t n = 0;
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == kind &&
        !strcmp(sim_trace_str(&F.s.trace, F.s.trace.recs[i].s), str))
      n++;
  return n;
}

/* schedule(delay) fires once at its second; the row goes, the alarm too. */
static void test_schedule_one_shot(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_schedule_at(F.w, 0, "report", S(30), 0, S(1));
  sim_run(&F.s, S(200), 0);
  assert_int_equal(count_str(RT_EV_SCHEDULE_RUN, "report"), 1);
  const sim_rec *r = find_kind(RT_EV_SCHEDULE_RUN, 0);
  assert_int_equal(r->t_us, S(31));
  assert_int_equal(rt_alarm_of(F.w, 0), -1);
  fx_free();
}

/* scheduleEvery is idempotent, fires every interval, and cancelSchedule
** stops it (A.10). */
static void test_schedule_every_and_cancel(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_schedule_at(F.w, 0, "poll", 0, S(10), S(0));
  rt_schedule_at(F.w, 0, "poll", 0, S(10), S(5)); /* same callback: no second row */
  rt_cancel_schedule_at(F.w, 0, "poll", S(45));
  sim_run(&F.s, S(120), 0);
  assert_int_equal(count_str(RT_EV_SCHEDULE_RUN, "poll"), 4); /* 10, 20, 30, 40 s */
  assert_int_equal(rt_alarm_of(F.w, 0), -1);
  fx_free();
}

/* keepAliveWhile holds a ref for the whole of fn: no idle eviction during
** a 5-minute fn, and the request answers when fn returns. */
static void test_keepalive_while(void **st) {
  (void)st;
  fx_init(1, NULL);
  fx_actor("a");
  rt_keepalive_while_at(F.w, 0, S(300), S(1));
  sim_run(&F.s, S(600), 0);
  const sim_rec *ok = find_kind(RT_EV_REQUEST_OK, 0);
  assert_non_null(ok);
  assert_int_equal(ok->t_us, S(301));
  const sim_rec *d = find_kind(RT_EV_ACTOR_DEATH, 0);
  assert_non_null(d);
  assert_true(d->t_us > S(301));
  assert_true(count_kind(RT_EV_ALARM_FIRE, 0) >= 9); /* heartbeats every 30 s */
  fx_free();
}

static uint64_t run_hash(uint64_t seed, sim_strategy st) {
  sim_config sc = {seed, st, 3, 1000};
  sim_init(&F.s, &sc);
  rt_config_default(&F.cfg);
  F.w = rt_world_new(&F.s, &F.cfg);
  fx_actor("a");
  fx_actor("b");
  for (int k = 0; k < 3; k++) rt_fiber_at(F.w, (uint32_t)(k % 2), fx_job(6), S(1));
  sim_at(&F.s, S(2) + MS(1), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(4));
  rt_request_at(F.w, 1, RT_ENTRY_FETCH, S(4));
  sim_run(&F.s, S(400), 0);
  uint64_t h = F.s.trace.hash;
  fx_free();
  return h;
}

/* Same seed, same hash; and the random strategy gives another order. */
static void test_determinism(void **st) {
  (void)st;
  for (int strat = 0; strat < 3; strat++)
    assert_true(run_hash(11, (sim_strategy)strat) == run_hash(11, (sim_strategy)strat));
  int differs = 0;
  for (uint64_t s = 1; s < 6 && !differs; s++)
    differs = run_hash(s, SIM_RANDOM) != run_hash(s + 100, SIM_RANDOM);
  assert_true(differs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crash_in_commit_window_loses_turn),
      cmocka_unit_test(test_crash_after_commit_keeps_turn),
      cmocka_unit_test(test_immediate_commit_variant),
      cmocka_unit_test(test_active_fiber_not_recovered),
      cmocka_unit_test(test_orphan_recovered_once_by_alarm_wake),
      cmocka_unit_test(test_request_and_alarm_same_instant),
      cmocka_unit_test(test_rpc_wake_does_not_recover),
      cmocka_unit_test(test_keepalive_holds_past_idle),
      cmocka_unit_test(test_no_keepalive_is_evicted),
      cmocka_unit_test(test_dispose_1604_one_stale_heartbeat),
      cmocka_unit_test(test_dispose_fixed_clears_alarm),
      cmocka_unit_test(test_heartbeat_schedule_design),
      cmocka_unit_test(test_wake_records_its_class),
      cmocka_unit_test(test_gate_timeout_resets),
      cmocka_unit_test(test_throwing_hook_deletes_row),
      cmocka_unit_test(test_slow_hook_wedges),
      cmocka_unit_test(test_evict_keeps_storage),
      cmocka_unit_test(test_commit_failure_resets),
      cmocka_unit_test(test_alarm_retry_backoff),
      cmocka_unit_test(test_schedule_one_shot),
      cmocka_unit_test(test_schedule_every_and_cancel),
      cmocka_unit_test(test_keepalive_while),
      cmocka_unit_test(test_determinism),
  };
  return cmocka_run_group_tests_name("runtime", tests, NULL, NULL) != 0;
}
