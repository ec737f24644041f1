/*
** test_schedule.c: schedules as the SDK runs them (issue #14): the dedup
** keys of schedule / scheduleEvery (and the old callback-only key kept as
** a variant), callbacks retried with tryN's jittered backoff and dropped
** after the last failure, hung intervals, the lost-alarm fault and
** down_for. Each test builds a small world, runs it and reads the trace;
** one runs a world twice and compares the trace hashes.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_models.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

static sim SIM;
static rt_world *W;

static void world(uint64_t seed, const rt_config *cfg) {
  sim_config sc = {seed, SIM_FIFO, 3, 1000};
  rt_config c;
  rt_actor_spec sp;
  assert_int_equal(sim_init(&SIM, &sc), 0);
  if (cfg)
    c = *cfg;
  else
    rt_config_default(&c);
  W = rt_world_new(&SIM, &c);
  assert_non_null(W);
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "agent");
  snprintf(sp.cls, sizeof sp.cls, "Agent");
  assert_int_equal(rt_actor_add(W, &sp), 0);
}

static void done(void) {
  rt_world_free(W);
  sim_free(&SIM);
}

static size_t count(uint32_t kind, const char *str) {
  size_t n = 0;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind == kind && (!str || !strcmp(sim_trace_str(&SIM.trace, r->s), str))) n++;
  }
  return n;
}

static const sim_rec *nth(uint32_t kind, size_t k) {
  for (size_t i = 0; i < SIM.trace.n; i++)
    if (SIM.trace.recs[i].kind == kind && k-- == 0) return &SIM.trace.recs[i];
  return NULL;
}

/* Rows inserted (schedule_set with an `at`), not deletions. */
static size_t inserts(const char *cb) {
  size_t n = 0;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind == RT_EV_SCHEDULE_SET && r->b >= 0 && !strcmp(sim_trace_str(&SIM.trace, r->s), cb))
      n++;
  }
  return n;
}

static void every(const char *cb, int64_t iv, const char *payload, int64_t at) {
  rt_schedule_spec sp = {0, iv, NULL, payload, -1};
  assert_int_equal(rt_schedule_ex_at(W, 0, cb, &sp, at), 0);
}

/* scheduleEvery keys on (type, callback, interval, payload): another
** interval or payload is a row of its own, the same call is a hit that
** writes nothing (insertIntervalForOwner). */
static void test_every_key_sdk(void **st) {
  (void)st;
  world(1, NULL);
  every("poll", S(30), NULL, S(1));
  every("poll", S(60), NULL, S(2));
  every("poll", S(30), "{\"a\":1}", S(3));
  every("poll", S(30), "{\"a\":1}", S(4));
  every("poll", S(30), NULL, S(5));
  sim_run(&SIM, S(20), 0);
  assert_int_equal(inserts("poll"), 3);
  assert_int_equal(count(RT_EV_SCHEDULE_DEDUP, "poll"), 2);
  done();
}

/* The old model's key (schedule_every_key "callback"): one row per callback,
** whatever the interval or payload: the test above fails under it. */
static void test_every_key_callback_bug(void **st) {
  rt_config c;
  (void)st;
  rt_config_default(&c);
  c.every_key = RT_EVERY_KEY_CALLBACK;
  world(1, &c);
  every("poll", S(30), NULL, S(1));
  every("poll", S(60), NULL, S(2));
  every("poll", S(30), "{\"a\":1}", S(3));
  sim_run(&SIM, S(20), 0);
  assert_int_equal(inserts("poll"), 1);
  assert_int_equal(count(RT_EV_SCHEDULE_DEDUP, "poll"), 2);
  done();
}

/* Delayed rows dedup only when asked (idempotent: true) on (callback,
** payload); a hit still calls _scheduleNextAlarm. */
static void test_delayed_idempotent_opt_in(void **st) {
  rt_schedule_spec plain = {S(60), 0, NULL, NULL, -1}, idem = {S(60), 0, NULL, NULL, 1};
  (void)st;
  world(1, NULL);
  rt_schedule_ex_at(W, 0, "report", &plain, S(1));
  rt_schedule_ex_at(W, 0, "report", &plain, S(2));
  rt_schedule_ex_at(W, 0, "report", &idem, S(3));
  sim_run(&SIM, S(30), 0);
  assert_int_equal(inserts("report"), 2);
  assert_int_equal(count(RT_EV_SCHEDULE_DEDUP, "report"), 1);
  done();
}

/* A callback that always throws: 3 attempts, waits drawn below
** min(2^n * 100 ms, 3000 ms), schedule_error with attempts 3, and the
** one-shot row deleted anyway (@1604). */
static void test_retry_then_drop(void **st) {
  rt_step fail = {RT_STEP_FAIL, 0, 0, 0, "boom", 0, 0};
  rt_program p = {"broken", &fail, 1};
  (void)st;
  world(7, NULL);
  assert_true(rt_program_register(W, &p) >= 0);
  rt_schedule_at(W, 0, "broken", S(10), 0, S(1));
  sim_run(&SIM, S(60), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RETRY, "broken"), 2);
  const sim_rec *r1 = nth(RT_EV_SCHEDULE_RETRY, 0), *r2 = nth(RT_EV_SCHEDULE_RETRY, 1);
  assert_int_equal(r1->b, 2);
  assert_true(r1->c >= 0 && r1->c < MS(200));
  assert_int_equal(r2->b, 3);
  assert_true(r2->c >= 0 && r2->c < MS(400));
  assert_int_equal(r2->t_us - r1->t_us, r1->c); /* the second attempt came after the wait */
  const sim_rec *e = nth(RT_EV_SCHEDULE_ERROR, 0);
  assert_non_null(e);
  assert_int_equal(e->b, 3);
  assert_string_equal(sim_trace_str(&SIM.trace, e->s2), "boom");
  const sim_rec *del = NULL;
  for (size_t i = 0; i < SIM.trace.n; i++)
    if (SIM.trace.recs[i].kind == RT_EV_SCHEDULE_SET && SIM.trace.recs[i].b < 0) del = &SIM.trace.recs[i];
  assert_non_null(del);
  assert_int_equal(del->t_us, e->t_us);
  assert_int_equal(rt_alarm_of(W, 0), -1);
  done();
}

/* A fail step with attempts 1 throws once: one retry, then success. */
static void test_retry_succeeds(void **st) {
  rt_step steps[2] = {{RT_STEP_FAIL, 1, 0, 0, "flaky", 0, 0}, {RT_STEP_EFFECT, 0, 0, 0, "sent", 0, 0}};
  rt_program p = {"flaky", steps, 2};
  (void)st;
  world(7, NULL);
  assert_true(rt_program_register(W, &p) >= 0);
  rt_schedule_at(W, 0, "flaky", S(10), 0, S(1));
  sim_run(&SIM, S(60), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RETRY, "flaky"), 1);
  assert_int_equal(count(RT_EV_SCHEDULE_ERROR, NULL), 0);
  const sim_rec *eff = nth(RT_EV_SCHEDULE_EFFECT, 0);
  assert_non_null(eff);
  assert_int_equal(eff->c, 2); /* the effect of attempt 2 */
  assert_int_equal(eff->b, S(11)); /* of the occurrence due at 11 s */
  done();
}

/* Seeds actor 0 with a "poll" interval row (every 60 s, due at 10 s) marked
** running since `started_us` (-1: no execution_started_at). */
static void seed_running_poll(int64_t started_us) {
  rt_schedule_seed sd;
  memset(&sd, 0, sizeof sd);
  snprintf(sd.callback, sizeof sd.callback, "poll");
  sd.time_us = S(10);
  sd.interval_us = S(60);
  sd.running = 1;
  sd.started_us = started_us;
  assert_true(rt_seed_schedule(W, 0, &sd) > 0);
}

/* A running interval started 10 s before the alarm is skipped; the alarm
** comes back at started + 30 s (A.4) and the row is force-reset and run. */
static void test_hung_interval(void **st) {
  (void)st;
  world(1, NULL);
  seed_running_poll(0);
  sim_run(&SIM, S(100), 0);
  const sim_rec *skip = nth(RT_EV_SCHEDULE_SKIP, 0), *hung = nth(RT_EV_SCHEDULE_HUNG, 0);
  assert_non_null(skip);
  assert_int_equal(skip->t_us, S(10));
  assert_non_null(hung);
  assert_int_equal(hung->t_us, S(30));
  assert_int_equal(nth(RT_EV_SCHEDULE_RUN, 0)->t_us, S(30));
  assert_int_equal(nth(RT_EV_SCHEDULE_RUN, 1)->t_us, S(90));
  done();
}

/* The lost alarm: nothing fires until a schedule call re-arms it. */
static void test_lost_alarm_rearmed(void **st) {
  (void)st;
  world(1, NULL);
  every("poll", S(30), NULL, S(1));
  sim_run(&SIM, S(5), 0);
  assert_int_equal(rt_alarm_of(W, 0), S(31));
  rt_lose_alarm(W, RT_NO_ACTOR);
  assert_int_equal(rt_alarm_of(W, 0), -1);
  every("poll", S(30), NULL, S(50));
  sim_run(&SIM, S(55), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_DEDUP, "poll"), 1);
  const sim_rec *run = nth(RT_EV_SCHEDULE_RUN, 0);
  assert_non_null(run);
  assert_int_equal(run->t_us, S(50) + MS(1)); /* max(time, now + 1 ms) */
  done();
}

/* down_for: a request meanwhile fails with RT_MSG_DOWN; the alarm due
** meanwhile is delivered when the process is back. */
static void test_down_for(void **st) {
  (void)st;
  world(1, NULL);
  rt_schedule_at(W, 0, "report", S(20), 0, S(1));
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(15));
  sim_run(&SIM, S(10), 0);
  rt_kill_all(W, RT_DEATH_CRASH);
  rt_set_down(W, S(40));
  sim_run(&SIM, S(60), 0);
  const sim_rec *f = nth(RT_EV_REQUEST_FAIL, 0);
  assert_non_null(f);
  assert_int_equal(f->t_us, S(15));
  assert_string_equal(sim_trace_str(&SIM.trace, f->s), RT_MSG_DOWN);
  const sim_rec *run = nth(RT_EV_SCHEDULE_RUN, 0);
  assert_non_null(run);
  assert_int_equal(run->t_us, S(40));
  done();
}

/* A stored cron expression that never fires again (Feb 30): after its run
** the row is deleted, not rescheduled (the SDK's getNextCronTime would
** throw), and no alarm is left. */
static void test_cron_never_again(void **st) {
  rt_schedule_seed sd;
  (void)st;
  world(1, NULL);
  memset(&sd, 0, sizeof sd);
  snprintf(sd.callback, sizeof sd.callback, "feb30");
  snprintf(sd.cron, sizeof sd.cron, "0 0 30 2 *");
  sd.time_us = S(10);
  sd.started_us = -1;
  int64_t id = rt_seed_schedule(W, 0, &sd);
  assert_true(id > 0);
  sim_run(&SIM, S(100), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RUN, "feb30"), 1);
  const sim_rec *del = NULL;
  for (size_t i = 0; i < SIM.trace.n; i++)
    if (SIM.trace.recs[i].kind == RT_EV_SCHEDULE_SET && SIM.trace.recs[i].a == id)
      del = &SIM.trace.recs[i]; /* the row's last change */
  assert_non_null(del);
  assert_int_equal(del->b, -1);
  assert_int_equal(del->t_us, S(10));
  assert_int_equal(rt_alarm_of(W, 0), -1);
  done();
}

/* schedule(cron) with a bad expression fails the request with
** cron-schedule's message and writes no row. */
static void test_bad_cron_request(void **st) {
  rt_schedule_spec sp = {0, 0, "x * * * *", NULL, -1};
  (void)st;
  world(1, NULL);
  assert_int_equal(rt_schedule_ex_at(W, 0, "bad", &sp, S(1)), 0);
  sim_run(&SIM, S(10), 0);
  const sim_rec *f = nth(RT_EV_REQUEST_FAIL, 0);
  assert_non_null(f);
  assert_string_equal(sim_trace_str(&SIM.trace, f->s), "Failed to parse x: x is NaN.");
  assert_int_equal(count(RT_EV_SCHEDULE_SET, NULL), 0);
  assert_int_equal(rt_alarm_of(W, 0), -1);
  done();
}

/* scheduleEvery under a second stores interval 1 s (whole seconds). */
static void test_every_subsecond(void **st) {
  (void)st;
  world(1, NULL);
  every("tick", MS(500), NULL, S(1));
  sim_run(&SIM, S(3) + MS(500), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RUN, "tick"), 2); /* at 2 s and 3 s */
  assert_int_equal(nth(RT_EV_SCHEDULE_RUN, 0)->t_us, S(2));
  assert_int_equal(nth(RT_EV_SCHEDULE_RUN, 1)->t_us, S(3));
  done();
}

/* A running interval row with no execution_started_at is hung at once:
** force-reset (started -1) and run at its time, not skipped. */
static void test_running_without_start(void **st) {
  (void)st;
  world(1, NULL);
  seed_running_poll(-1);
  sim_run(&SIM, S(20), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_SKIP, NULL), 0);
  const sim_rec *hung = nth(RT_EV_SCHEDULE_HUNG, 0);
  assert_non_null(hung);
  assert_int_equal(hung->t_us, S(10));
  assert_int_equal(hung->b, -1);
  assert_int_equal(nth(RT_EV_SCHEDULE_RUN, 0)->t_us, S(10));
  done();
}

/* tryN's backoff: min(2^attempt * base, max) caps every wait at max (base
** 300 ms, max 400 ms: the second wait is drawn below 400 ms, not 600); a
** zero base retries at once. */
static void test_retry_backoff_cap(void **st) {
  rt_step fail = {RT_STEP_FAIL, 0, 0, 0, "boom", 0, 0};
  rt_program p = {"broken", &fail, 1};
  rt_config c;
  (void)st;
  for (int zero = 0; zero < 2; zero++) {
    rt_config_default(&c);
    c.schedule_attempts = 6;
    c.schedule_retry_base_us = zero ? 0 : MS(300);
    c.schedule_retry_max_us = MS(400);
    world(11, &c);
    assert_true(rt_program_register(W, &p) >= 0);
    rt_schedule_at(W, 0, "broken", S(10), 0, S(1));
    sim_run(&SIM, S(60), 0);
    assert_int_equal(count(RT_EV_SCHEDULE_RETRY, "broken"), 5);
    int64_t longest = 0;
    for (int k = 0; k < 5; k++) {
      const sim_rec *r = nth(RT_EV_SCHEDULE_RETRY, (size_t)k);
      assert_true(r->c >= 0 && r->c < MS(400));
      if (zero) assert_int_equal(r->c, 0);
      if (r->c > longest) longest = r->c;
    }
    if (!zero) assert_true(longest > 0);
    assert_int_equal(nth(RT_EV_SCHEDULE_ERROR, 0)->b, 6);
    done();
  }
}

static const sim_rec *fault(const char *name, size_t k) {
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind == RT_EV_FAULT && !strcmp(sim_trace_str(&SIM.trace, r->s), name) && k-- == 0)
      return r;
  }
  return NULL;
}

/* The platform cuts an alarm invocation at 15 minutes (A.0): a schedule
** callback that works 20 minutes is cut, the alarm fails and is retried
** (2 s later), and the retry runs the callback again. With the default
** 70-140 s idle window: a running alarm handler is an event in flight, so
** the actor is not evicted as idle under it. */
static void test_alarm_cut_running_handler(void **st) {
  rt_step slow = {RT_STEP_WORK, S(1200), S(1200), 0, "", 0, 0};
  rt_program p = {"slow", &slow, 1};
  (void)st;
  world(1, NULL);
  assert_true(rt_program_register(W, &p) >= 0);
  rt_schedule_at(W, 0, "slow", S(10), 0, S(1));
  sim_run(&SIM, S(11) + S(900) + S(5), 0);
  const sim_rec *cut = fault("alarm_limit", 0);
  assert_non_null(cut);
  assert_int_equal(cut->t_us, S(11) + S(900));
  const sim_rec *retry = nth(RT_EV_ALARM_RETRY, 0);
  assert_non_null(retry);
  assert_int_equal(retry->a, cut->t_us + S(2));
  assert_int_equal(count(RT_EV_SCHEDULE_RUN, "slow"), 2); /* the retry runs it again */
  done();
}

/* The limit covers the startup too: an alarm that arrives while a request's
** startup runs a 20-minute onStart (a gate ceiling raised to an hour) waits
** behind the request; it is cut while it still waits, and retried, and the
** request held before it is still served when the startup ends. */
static void test_alarm_cut_in_startup(void **st) {
  rt_config c;
  (void)st;
  rt_config_default(&c);
  c.gate_ceiling_us = S(3600);
  c.idle_min_us = c.idle_max_us = S(7200);
  world(1, &c);
  rt_set_onstart_us(W, 0, S(1200));
  assert_int_equal(rt_request_at(W, 0, RT_ENTRY_FETCH, S(4)), 0);
  assert_int_equal(rt_alarm_preset(W, 0, S(5)), 0);
  sim_run(&SIM, S(5) + S(900) + S(1), 0);
  const sim_rec *cut = fault("alarm_limit", 0);
  assert_non_null(cut);
  assert_int_equal(cut->t_us, S(5) + S(900));
  assert_non_null(nth(RT_EV_ALARM_RETRY, 0));
  assert_null(nth(RT_EV_ONSTART_END, 0)); /* the startup still runs */
  assert_null(nth(RT_EV_REQUEST_OK, 0));
  sim_run(&SIM, S(4) + S(1200) + S(1), 0);
  const sim_rec *ok = nth(RT_EV_REQUEST_OK, 0);
  assert_non_null(ok);
  assert_int_equal(ok->t_us, S(4) + S(1200));
  done();
}

/* A declarative callback that works a drawn 1-2 s and then throws with no
** message: each attempt works again, and the final error carries the
** default message "schedule callback threw". */
static void test_unnamed_throw_after_work(void **st) {
  rt_step steps[2] = {{RT_STEP_WORK, S(1), S(2), 0, "", 0, 0}, {RT_STEP_FAIL, 0, 0, 0, "", 0, 0}};
  rt_program p = {"quiet", steps, 2};
  (void)st;
  world(5, NULL);
  assert_true(rt_program_register(W, &p) >= 0);
  rt_schedule_at(W, 0, "quiet", S(10), 0, S(1));
  sim_run(&SIM, S(60), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RETRY, "quiet"), 2);
  const sim_rec *e = nth(RT_EV_SCHEDULE_ERROR, 0);
  assert_non_null(e);
  assert_string_equal(sim_trace_str(&SIM.trace, e->s2), "schedule callback threw");
  const sim_rec *r1 = nth(RT_EV_SCHEDULE_RETRY, 0);
  assert_true(r1->t_us >= S(12) && r1->t_us <= S(13)); /* after one drawn work */
  done();
}

/* The same world twice: the same trace hash (retries draw from their own
** stream, "runtime.schedule.retry"). */
static uint64_t retry_world_hash(uint64_t seed) {
  rt_step fail = {RT_STEP_FAIL, 0, 0, 0, "boom", 0, 0};
  rt_program p = {"broken", &fail, 1};
  world(seed, NULL);
  rt_program_register(W, &p);
  rt_schedule_at(W, 0, "broken", S(10), 0, S(1));
  every("poll", S(7), "{\"x\":[1,2]}", S(2));
  sim_run(&SIM, S(120), 0);
  uint64_t h = SIM.trace.hash;
  done();
  return h;
}

static void test_determinism(void **st) {
  (void)st;
  assert_int_equal(retry_world_hash(3), retry_world_hash(3));
  assert_int_not_equal(retry_world_hash(3), retry_world_hash(4)); /* the jitter is drawn */
}

/* ---- the SDK calls of rt_sdk.h, from C-coded user code (issue #14 item 5:
** what the Lua binding calls) -------------------------------------------- */

static int64_t ids[4];
static int created[4], n_req, sched_calls, attempts_seen[8];
static char errs[4][160], payload_arg[64], payload_sdk[64];

static rt_uc_status c_on_request(void *st, rt_sdk_actor *self, const char *method,
                                 const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  rt_sdk_when cron = {0, 0, n_req == 2 ? "61 * * * *" : "*/10 * * * * *"};
  (void)st;
  (void)method;
  (void)args;
  (void)fr;
  int k = n_req++;
  ids[k] = rt_sdk_schedule_with(self, "tick", &cron, "{\"n\":1}", -1, &created[k], errs[k],
                                sizeof errs[k]);
  return out->status = RT_UC_DONE;
}

static rt_uc_status c_on_schedule(void *st, rt_sdk_actor *self, const char *callback,
                                  const char *payload, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)callback;
  (void)fr;
  snprintf(payload_arg, sizeof payload_arg, "%s", payload ? payload : "(none)");
  rt_sdk_schedule_payload(self, payload_sdk, sizeof payload_sdk);
  attempts_seen[sched_calls++ & 7] = rt_sdk_schedule_attempt(self);
  if (rt_sdk_schedule_attempt(self) == 1) { /* throws on each first attempt */
    snprintf(out->value, sizeof out->value, "first try");
    return out->status = RT_UC_THREW;
  }
  if (sched_calls >= 4) rt_sdk_cancel_schedule_id(self, ids[0]); /* the second run cancels */
  return out->status = RT_UC_DONE;
}

static rt_uc_status c_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr, const rt_uc_in *in,
                             rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)fr;
  (void)in;
  return out->status = RT_UC_DONE;
}

static const rt_usercode coded = {
    .name = "coded", .on_request = c_on_request, .on_schedule = c_on_schedule, .resume = c_resume};

static void test_sdk_calls(void **st) {
  (void)st;
  world(1, NULL);
  assert_int_equal(rt__usercode_set(W, 0, &coded), 0);
  n_req = sched_calls = 0;
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(1));
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(2));
  rt_request_at(W, 0, RT_ENTRY_FETCH, S(3));
  sim_run(&SIM, S(60), 0);
  assert_true(ids[0] > 0);
  assert_int_equal(created[0], 1);
  assert_int_equal(ids[1], ids[0]); /* cron calls are idempotent by default */
  assert_int_equal(created[1], 0);
  assert_int_equal(ids[2], -1);
  assert_string_equal(errs[2], "Failed to parse 61: 61 is outside of constraint range of 0 - 59.");
  assert_string_equal(payload_arg, "{\"n\":1}");
  assert_string_equal(payload_sdk, "{\"n\":1}");
  assert_int_equal(sched_calls, 4); /* 10 s: 1 throws, 2 ok; 20 s: 1 throws, 2 ok + cancel */
  assert_int_equal(attempts_seen[0], 1);
  assert_int_equal(attempts_seen[1], 2);
  assert_int_equal(count(RT_EV_SCHEDULE_RUN, "tick"), 2);
  assert_int_equal(rt_alarm_of(W, 0), -1); /* cancelled: nothing left to fire */
  done();
}

/* A C-coded schedule callback that sleeps 1 s and then asks for an RPC: a
** schedule callback may only work or sleep, so the call is refused as a
** throw ("unsupported command 3"), retried by tryN, and dropped after the
** last attempt. */
static int sleeps;
static rt_uc_status y_on_schedule(void *st, rt_sdk_actor *self, const char *callback,
                                  const char *payload, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st, (void)self, (void)callback, (void)payload, (void)fr;
  sleeps++;
  out->cmd.kind = RT_UC_CMD_SLEEP;
  out->cmd.min_us = S(1);
  return out->status = RT_UC_YIELD;
}

static rt_uc_status y_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr, const rt_uc_in *in,
                             rt_uc_out *out) {
  (void)st, (void)self, (void)fr, (void)in;
  memset(&out->cmd, 0, sizeof out->cmd);
  out->cmd.kind = RT_UC_CMD_CALL;
  out->cmd.target = 0;
  return out->status = RT_UC_YIELD;
}

static const rt_usercode yields_call = {
    .name = "yields_call", .on_schedule = y_on_schedule, .resume = y_resume};

static void test_callback_unsupported_command(void **st) {
  (void)st;
  world(2, NULL);
  assert_int_equal(rt__usercode_set(W, 0, &yields_call), 0);
  sleeps = 0;
  rt_schedule_at(W, 0, "tick", S(10), 0, S(1));
  sim_run(&SIM, S(60), 0);
  assert_int_equal(sleeps, 3);
  assert_int_equal(count(RT_EV_SCHEDULE_RETRY, "tick"), 2);
  const sim_rec *r1 = nth(RT_EV_SCHEDULE_RETRY, 0);
  assert_int_equal(r1->t_us, S(12)); /* after the 1 s sleep of attempt 1 */
  const sim_rec *e = nth(RT_EV_SCHEDULE_ERROR, 0);
  assert_non_null(e);
  assert_string_equal(sim_trace_str(&SIM.trace, e->s2), "schedule callback: unsupported command 3");
  assert_int_equal(count(RT_EV_RPC_SEND, NULL), 0); /* no call went out */
  done();
}

/* Declarative callbacks: a return step ends the callback at once (the
** effect after it never runs); a stash step is refused as a throw (a
** schedule callback has no fiber), retried and dropped. */
static void test_declarative_return_and_refused_step(void **st) {
  rt_step ret[2] = {{RT_STEP_RETURN, 0, 0, 0, "{\"ok\":1}", 0, 0},
                    {RT_STEP_EFFECT, 0, 0, 0, "never", 0, 0}};
  rt_step stash = {RT_STEP_STASH, 0, 0, 0, "", 0, 0};
  rt_program pr = {"early", ret, 2}, ps = {"stasher", &stash, 1};
  (void)st;
  world(3, NULL);
  assert_true(rt_program_register(W, &pr) >= 0);
  assert_true(rt_program_register(W, &ps) >= 0);
  rt_schedule_at(W, 0, "early", S(5), 0, S(1));
  rt_schedule_at(W, 0, "stasher", S(20), 0, S(1));
  sim_run(&SIM, S(60), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RUN, "early"), 1);
  assert_int_equal(count(RT_EV_SCHEDULE_EFFECT, NULL), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RETRY, "early"), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RETRY, "stasher"), 2);
  const sim_rec *e = nth(RT_EV_SCHEDULE_ERROR, 0);
  assert_non_null(e);
  assert_string_equal(sim_trace_str(&SIM.trace, e->s),
                      "stasher");
  assert_string_equal(sim_trace_str(&SIM.trace, e->s2),
                      "declarative: a schedule callback has no fiber to stash, read or call from");
  done();
}

/* With a keepAlive ref held (raw-alarm heartbeat), the alarm is the
** earlier of the heartbeat (now + 30 s) and the next schedule: a schedule
** due in 5 s sets it to that, and after it ran the heartbeat takes over. */
static void test_schedule_before_heartbeat(void **st) {
  (void)st;
  world(1, NULL);
  assert_int_equal(rt_keepalive_acquire_at(W, 0, "lease", S(1)), 0);
  rt_schedule_at(W, 0, "soon", S(5), 0, S(2));
  sim_run(&SIM, S(3), 0);
  assert_int_equal(rt_keepalive_refs(W, 0), 1);
  assert_int_equal(rt_alarm_of(W, 0), S(7));
  sim_run(&SIM, S(8), 0);
  assert_int_equal(count(RT_EV_SCHEDULE_RUN, "soon"), 1);
  assert_int_equal(rt_alarm_of(W, 0), S(7) + S(30));
  done();
}

/* An alarm that fails with its startup (onStart throws) and has no retry
** left is dropped; its 15-minute cut timer, still pending, later finds
** nothing to cut: the alarm is not failed a second time. */
static void test_stale_alarm_cut(void **st) {
  rt_config c;
  (void)st;
  rt_config_default(&c);
  c.alarm_retry_max = 0;
  c.idle_min_us = c.idle_max_us = S(7200);
  world(1, &c);
  rt_onstart_throws(W, 0, 1);
  assert_int_equal(rt_alarm_preset(W, 0, S(5)), 0);
  sim_run(&SIM, S(5) + S(901), 0);
  assert_non_null(nth(RT_EV_STARTUP_FAIL, 0));
  assert_int_equal(count(RT_EV_ALARM_DONE, NULL), 1);
  assert_int_equal(nth(RT_EV_ALARM_DONE, 0)->a, 0);
  assert_null(fault("alarm_limit", 0));
  assert_int_equal(rt_probe_hits(W, RT_PROBE_ALARM_RETRIES_EXHAUSTED), 1);
  assert_int_equal(rt_alarm_of(W, 0), -1);
  done();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_key_sdk),
      cmocka_unit_test(test_every_key_callback_bug),
      cmocka_unit_test(test_delayed_idempotent_opt_in),
      cmocka_unit_test(test_retry_then_drop),
      cmocka_unit_test(test_retry_succeeds),
      cmocka_unit_test(test_hung_interval),
      cmocka_unit_test(test_lost_alarm_rearmed),
      cmocka_unit_test(test_down_for),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_cron_never_again),
      cmocka_unit_test(test_bad_cron_request),
      cmocka_unit_test(test_every_subsecond),
      cmocka_unit_test(test_running_without_start),
      cmocka_unit_test(test_retry_backoff_cap),
      cmocka_unit_test(test_alarm_cut_running_handler),
      cmocka_unit_test(test_alarm_cut_in_startup),
      cmocka_unit_test(test_unnamed_throw_after_work),
      cmocka_unit_test(test_sdk_calls),
      cmocka_unit_test(test_callback_unsupported_command),
      cmocka_unit_test(test_declarative_return_and_refused_step),
      cmocka_unit_test(test_schedule_before_heartbeat),
      cmocka_unit_test(test_stale_alarm_cut),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
