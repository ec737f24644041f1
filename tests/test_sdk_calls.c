/*
** test_sdk_calls.c: the synchronous SDK calls of user code (rt_sdk.h),
** each checked against what it must do and what it must refuse, through a
** table written here in C (issue #16 item 7: the tests reach every guard of
** runtime/rt_sdk.c). Identity and the user PRNG stream; runFiber, stash and
** ctx.snapshot inside and outside a fiber; keepAlive leases and their
** disposers; schedule refusals; effects with and without a key; a request
** handler that yields work and answers later.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_models.h"
#include "sim/sim_rng.h"

#define S(x) ((int64_t)(x) * 1000000)

static sim SIM;
static rt_world *W;

/* What the request handler saw, filled in the call (the handle is valid only
** during it). */
static struct {
  int calls;
  uint32_t index;
  char id[64], cls[64];
  int alive;
  int64_t now_us, fiber;
  uint64_t rnd[2];
  int stash_outside, fiber_noname, fiber_null;
  int64_t fiber_id;
  int64_t lease;
  int dispose1, dispose2;
  int64_t sched_neg, sched_noname, sched_ok, every_zero, every_ok;
  int cancel_none, cancel_every;
  int ka_cycle_fails, ka_live_fails, ka_refs_after_cycles, ka_refs_live; /* mode 7 */
  int64_t ka_17th;
} R;

/* What the fiber body saw. */
static struct {
  int calls;
  int64_t key, current;
  char snap0[128], snap1[128];
  int snap_small, stash_null, stash_other;
} F;

/* 0: the SDK tour; 1: the handler yields 1..3 s of work; 2: onStart yields
** 1..2 s of work; 3: onStart yields a command it cannot wait for; 4: the
** handler does; 5: the fiber body does; 6: the handler starts a fiber that
** stashes and works 5 s (recovered without onFiberRecovered); 7: keepAlive
** leases past the 16 slots */
static int mode;
static const rt_usercode *table_seen;
static char resumed_from[128];

static rt_uc_status p_on_request(void *st, rt_sdk_actor *self, const char *method,
                                 const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)method;
  (void)args;
  (void)fr;
  R.calls++;
  table_seen = rt_usercode_of(self);
  if (mode == 1 || mode == 4) {
    out->status = RT_UC_YIELD;
    out->cmd.kind = mode == 1 ? RT_UC_CMD_WORK : RT_UC_CMD_AWAIT_FIBER;
    out->cmd.min_us = S(1);
    out->cmd.max_us = S(3);
    return out->status;
  }
  if (mode == 7) { /* 40 keepAlive()/dispose pairs, then 16 live and a 17th */
    int64_t live[16];
    for (int i = 0; i < 40; i++) {
      int64_t l = rt_sdk_keepalive(self);
      R.ka_cycle_fails += l < 0 || rt_sdk_keepalive_dispose(self, l) != 0;
    }
    R.ka_refs_after_cycles = rt_keepalive_refs(self->w, self->a);
    for (int i = 0; i < 16; i++) R.ka_live_fails += (live[i] = rt_sdk_keepalive(self)) < 0;
    R.ka_17th = rt_sdk_keepalive(self);
    R.ka_refs_live = rt_keepalive_refs(self->w, self->a);
    for (int i = 0; i < 16; i++) rt_sdk_keepalive_dispose(self, live[i]);
    return out->status = RT_UC_DONE;
  }
  if (mode == 5 || mode == 6) { /* the second request of mode 6 only wakes the actor */
    if (R.calls == 1) R.fiber_id = rt_sdk_run_fiber(self, "job", NULL);
    return out->status = RT_UC_DONE;
  }
  R.index = rt_sdk_index(self);
  snprintf(R.id, sizeof R.id, "%s", rt_sdk_id(self));
  snprintf(R.cls, sizeof R.cls, "%s", rt_sdk_class(self));
  R.alive = rt_sdk_alive(self);
  R.now_us = rt_sdk_now_us(self);
  R.fiber = rt_sdk_current_fiber(self);
  R.rnd[0] = rt_sdk_random(self);
  R.rnd[1] = rt_sdk_random(self);
  R.stash_outside = rt_sdk_stash(self, 0, "{\"x\":1}", 0);
  R.fiber_noname = (int)rt_sdk_run_fiber(self, "", NULL);
  R.fiber_null = (int)rt_sdk_run_fiber(self, NULL, NULL);
  R.fiber_id = rt_sdk_run_fiber(self, "job", "{\"n\":1}");
  R.lease = rt_sdk_keepalive(self);
  R.dispose1 = rt_sdk_keepalive_dispose(self, R.lease);
  R.dispose2 = rt_sdk_keepalive_dispose(self, R.lease);
  R.sched_neg = rt_sdk_schedule(self, -1, "tick", NULL);
  R.sched_noname = rt_sdk_schedule(self, S(5), "", NULL);
  R.sched_ok = rt_sdk_schedule(self, S(5), "tick", NULL);
  R.every_zero = rt_sdk_schedule_every(self, 0, "beat", NULL);
  R.every_ok = rt_sdk_schedule_every(self, S(10), "beat", NULL);
  R.cancel_none = rt_sdk_cancel_schedule(self, "nothing");
  R.cancel_every = rt_sdk_cancel_schedule(self, "beat");
  rt_sdk_effect(self, "mail", NULL);
  snprintf(out->value, sizeof out->value, "\"toured\"");
  return out->status = RT_UC_DONE;
}

static rt_uc_status p_fiber_body(void *st, rt_sdk_actor *self, const char *name,
                                 const char *snapshot, rt_uc_frame *fr, rt_uc_out *out) {
  char tiny[1];
  (void)st;
  (void)name;
  (void)snapshot;
  F.calls++;
  if (mode == 5) {
    out->status = RT_UC_YIELD;
    out->cmd.kind = RT_UC_CMD_TOOL;
    return out->status;
  }
  if (mode == 6) {
    rt_sdk_snapshot(self, 0, resumed_from, sizeof resumed_from);
    if (strcmp(resumed_from, "{\"n\":2}") == 0) {
      snprintf(out->value, sizeof out->value, "\"resumed\"");
      return out->status = RT_UC_DONE;
    }
    rt_sdk_stash(self, 0, "{\"n\":2}", 0);
    out->status = RT_UC_YIELD;
    out->cmd.kind = RT_UC_CMD_SLEEP;
    out->cmd.min_us = S(5);
    return out->status;
  }
  F.key = fr->key;
  F.current = rt_sdk_current_fiber(self);
  rt_sdk_snapshot(self, 0, F.snap0, sizeof F.snap0);
  F.stash_null = rt_sdk_stash(self, 0, NULL, 0);
  F.stash_other = rt_sdk_stash(self, F.key + 1000, "{\"n\":9}", 0);
  rt_sdk_stash(self, 0, "{\"n\":2}", 1);
  rt_sdk_snapshot(self, F.key, F.snap1, sizeof F.snap1);
  F.snap_small = rt_sdk_snapshot(self, 0, tiny, 0);
  rt_sdk_effect(self, "mail", "k1");
  snprintf(out->value, sizeof out->value, "\"sent\"");
  return out->status = RT_UC_DONE;
}

static rt_uc_status p_on_start(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)fr;
  if (mode != 2 && mode != 3) return out->status = RT_UC_DONE;
  out->status = RT_UC_YIELD;
  out->cmd.kind = mode == 2 ? RT_UC_CMD_WORK : RT_UC_CMD_CALL;
  out->cmd.min_us = S(1);
  out->cmd.max_us = S(2);
  return out->status;
}

static rt_uc_status p_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr, const rt_uc_in *in,
                             rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)in;
  if (fr->hook == RT_UC_ON_START) return out->status = RT_UC_DONE;
  if (fr->hook != RT_UC_ON_REQUEST) return out->status = RT_UC_THREW;
  snprintf(out->value, sizeof out->value, "\"worked\"");
  return out->status = RT_UC_DONE;
}

/* onFiberRecovered that works 1..2 s (a yielded command), then resumes. */
static int hook_calls, hook_resumes;
static rt_uc_status p_on_fiber_recovered(void *st, rt_sdk_actor *self, const rt_uc_recovery *ctx,
                                         rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)ctx;
  (void)fr;
  hook_calls++;
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_WORK;
  out->cmd.min_us = S(1);
  out->cmd.max_us = S(2);
  return out->status;
}

static rt_uc_status p_hook_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                  const rt_uc_in *in, rt_uc_out *out) {
  if (fr->hook != RT_UC_ON_FIBER_RECOVERED) return p_resume(st, self, fr, in, out);
  hook_resumes++;
  out->action = RT_RECOVER_RESUME;
  return out->status = RT_UC_DONE;
}

static const rt_usercode probe_uc = {
    .name = "sdk-probe",
    .on_start = p_on_start,
    .on_request = p_on_request,
    .fiber_body = p_fiber_body,
    .resume = p_resume,
};

/* As a sub-agent: the tool run works 1..2 s (drawn), then completes. */
static rt_uc_status p_tool_run(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)fr;
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_WORK;
  out->cmd.min_us = S(1);
  out->cmd.max_us = S(2);
  return out->status;
}

static rt_uc_status p_tool_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                  const rt_uc_in *in, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)fr;
  (void)in;
  return out->status = RT_UC_DONE;
}

static const rt_usercode worker_uc = {
    .name = "sdk-worker",
    .tool_run = p_tool_run,
    .resume = p_tool_resume,
};

static const rt_usercode hooked_uc = {
    .name = "sdk-probe-hooked",
    .on_start = p_on_start,
    .on_request = p_on_request,
    .fiber_body = p_fiber_body,
    .on_fiber_recovered = p_on_fiber_recovered,
    .resume = p_hook_resume,
};

/* ---- harness ------------------------------------------------------------- */

static uint32_t add(const char *id, const char *cls) {
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "%s", id);
  snprintf(sp.cls, sizeof sp.cls, "%s", cls);
  uint32_t a = rt_actor_add(W, &sp);
  assert_int_equal(rt__usercode_set(W, a, &probe_uc), 0);
  return a;
}

static void world(uint64_t seed) {
  sim_config sc = {seed, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&SIM, &sc), 0);
  rt_config_default(&c);
  W = rt_world_new(&SIM, &c);
  assert_non_null(W);
  memset(&R, 0, sizeof R);
  memset(&F, 0, sizeof F);
  mode = 0;
}

static void done(void) {
  rt_world_free(W);
  sim_free(&SIM);
  W = NULL;
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

/* 1 if a record of this kind carries a string containing needle. */
static int said(uint32_t kind, const char *needle) {
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind == kind && r->s && strstr(sim_trace_str(&SIM.trace, r->s), needle)) return 1;
  }
  return 0;
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  (void)arg;
  rt_kill_all(ctx, RT_DEATH_CRASH);
}

static const sim_rec *last(uint32_t kind) {
  const sim_rec *found = NULL;
  for (size_t i = 0; i < SIM.trace.n; i++)
    if (SIM.trace.recs[i].kind == kind) found = &SIM.trace.recs[i];
  return found;
}

/* ---- tests ----------------------------------------------------------------- */

/* Identity, clock and the user stream: the draws are the stream
** "user.<id>" of the seed, the same in every run, and another actor's
** stream differs. */
static void test_identity_and_random(void **st) {
  (void)st;
  world(7);
  add("first", "Probe");
  uint32_t b = add("second", "Probe");
  assert_int_equal(rt_request_at(W, b, RT_ENTRY_FETCH, S(2)), 0);
  sim_run(&SIM, S(10), 0);
  assert_int_equal(R.calls, 1);
  assert_int_equal(R.index, b);
  assert_string_equal(R.id, "second");
  assert_string_equal(R.cls, "Probe");
  assert_int_equal(R.alive, 1);
  assert_true(R.now_us >= S(2) && R.now_us < S(3));
  assert_int_equal(R.fiber, 0); /* a request handler runs in no fiber */
  sim_rng want;
  sim_rng_stream(&want, 7, "user.second");
  assert_true(R.rnd[0] == sim_rng_next(&want));
  assert_true(R.rnd[1] == sim_rng_next(&want));
  assert_true(R.rnd[0] != R.rnd[1]);
  assert_int_equal(count(RT_EV_REQUEST_OK, "\"toured\""), 1);
  uint64_t mine = R.rnd[0];
  done();
  /* the other actor, same seed: its own stream */
  world(7);
  uint32_t a = add("first", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(2)), 0);
  sim_run(&SIM, S(10), 0);
  sim_rng_stream(&want, 7, "user.first");
  assert_true(R.rnd[0] == sim_rng_next(&want));
  assert_true(R.rnd[0] != mine);
  done();
}

/* runFiber refuses a missing name; stash outside a fiber fails; inside the
** body, ctx.snapshot sees the initial snapshot, then the turn's own stash;
** a stash of NULL or of a fiber that does not exist fails; effects carry
** "name" or "name:key". */
static void test_fibers_stash_snapshot(void **st) {
  (void)st;
  world(3);
  uint32_t a = add("shop", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_run(&SIM, S(10), 0);
  assert_int_equal(R.stash_outside, -1);
  assert_int_equal(R.fiber_noname, -1);
  assert_int_equal(R.fiber_null, -1);
  assert_true(R.fiber_id > 0);
  assert_int_equal(F.calls, 1);
  assert_true(F.key == R.fiber_id);
  assert_true(F.current == R.fiber_id);
  assert_string_equal(F.snap0, "{\"n\":1}");
  assert_string_equal(F.snap1, "{\"n\":2}");
  assert_int_equal(F.snap_small, -1);
  assert_int_equal(F.stash_null, -1);
  assert_int_equal(F.stash_other, -1);
  assert_int_equal(count(RT_EV_FIBER_READ, "{\"n\":1}"), 1);
  assert_int_equal(count(RT_EV_FIBER_READ, "{\"n\":2}"), 1);
  assert_int_equal(count(RT_EV_STASH, "{\"n\":2}"), 1);
  assert_int_equal(count(RT_EV_STASH, "{\"n\":9}"), 0);
  assert_int_equal(count(RT_EV_EFFECT, "mail"), 1);
  assert_int_equal(count(RT_EV_EFFECT, "mail:k1"), 1);
  assert_int_equal(count(RT_EV_FIBER_DONE, "job"), 1);
  assert_int_equal(rt_count_fiber_rows(W, a), 0);
  done();
}

/* Disposed leases free their slots: 40 keepAlive()/dispose pairs leave no
** ref (a disposer whose lease found no slot was lost, and its ref with it);
** with 16 live leases a 17th is refused, not taken without a disposer. */
static void test_keepalive_lease_slots(void **st) {
  (void)st;
  world(3);
  mode = 7;
  uint32_t a = add("shop", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_run(&SIM, S(3), 0);
  assert_int_equal(R.ka_cycle_fails, 0);
  assert_int_equal(R.ka_refs_after_cycles, 0);
  assert_int_equal(R.ka_live_fails, 0);
  assert_int_equal(R.ka_17th, -1);
  assert_int_equal(R.ka_refs_live, 16);
  assert_int_equal(rt_keepalive_refs(W, a), 0);
  mode = 0;
  done();
}

/* keepAlive takes a ref and names its disposer; the first dispose releases
** it, the second does nothing (released 0). Schedules refuse a negative
** delay, an empty callback and a zero interval; cancel deletes the row it
** names and reports none for an unknown callback. */
static void test_keepalive_and_schedules(void **st) {
  (void)st;
  world(3);
  uint32_t a = add("shop", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_run(&SIM, S(3), 0);
  assert_true(R.lease > 0);
  assert_int_equal(R.dispose1, 0);
  assert_int_equal(R.dispose2, 0);
  size_t disposes = 0, released = 0;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind != RT_EV_KEEPALIVE_DISPOSE) continue;
    disposes++;
    released += r->a == 1;
  }
  assert_int_equal(disposes, 2);
  assert_int_equal(released, 1);
  assert_int_equal(R.sched_neg, -1);
  assert_int_equal(R.sched_noname, -1);
  assert_true(R.sched_ok > 0);
  assert_int_equal(R.every_zero, -1);
  assert_true(R.every_ok > 0);
  assert_int_equal(R.cancel_none, 0);
  assert_int_equal(R.cancel_every, 1);
  assert_int_equal(count(RT_EV_SCHEDULE_SET, "tick"), 1);
  done();
}

/* A handler that yields 1..3 s of work answers when the work is done, with
** the value its continuation returns; two runs give one trace. */
static void test_request_yields_work(void **st) {
  uint64_t h[2];
  (void)st;
  for (int k = 0; k < 2; k++) {
    world(5);
    mode = 1;
    uint32_t a = add("shop", "Probe");
    assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
    sim_run(&SIM, S(10), 0);
    assert_int_equal(R.calls, 1);
    const sim_rec *ok = last(RT_EV_REQUEST_OK);
    assert_non_null(ok);
    assert_string_equal(sim_trace_str(&SIM.trace, ok->s), "\"worked\"");
    assert_true(ok->t_us >= S(2) && ok->t_us <= S(4) + 100000);
    assert_true(table_seen == &probe_uc);
    h[k] = SIM.trace.hash;
    done();
  }
  assert_true(h[0] == h[1]);
}

/* Every hook has its SDK name (trace records and Lua use them); an index
** outside the table has none. */
static void test_hook_names(void **st) {
  (void)st;
  assert_string_equal(rt_uc_hook_name(RT_UC_ON_START), "onStart");
  assert_string_equal(rt_uc_hook_name(RT_UC_ON_FIBER_RECOVERED), "onFiberRecovered");
  assert_string_equal(rt_uc_hook_name(RT_UC_TOOL_RUN), "runAgentTool");
  for (int h = 0; h < RT_UC_HOOKS; h++) assert_non_null(rt_uc_hook_name((rt_uc_hook)h));
  assert_null(rt_uc_hook_name(RT_UC_HOOKS));
  assert_null(rt_uc_hook_name((rt_uc_hook)-1));
}

/* onStart that works 1..2 s holds the request until it returns. */
static void test_onstart_yields_work(void **st) {
  (void)st;
  world(5);
  mode = 2;
  uint32_t a = add("shop", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_run(&SIM, S(10), 0);
  const sim_rec *ok = last(RT_EV_REQUEST_OK);
  assert_non_null(ok);
  assert_true(ok->t_us >= S(2) && ok->t_us <= S(3) + 100000);
  assert_int_equal(count(RT_EV_STARTUP_FAIL, NULL), 0);
  done();
}

/* A callback that yields a command its hook cannot wait for fails with a
** message naming the hook: onStart fails the startup, onRequest the
** request, a fiber body its fiber. */
static void test_unsupported_commands(void **st) {
  (void)st;
  world(5);
  mode = 3;
  uint32_t a = add("shop", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_run(&SIM, S(10), 0);
  assert_true(said(RT_EV_STARTUP_FAIL, "onStart: unsupported command"));
  assert_int_equal(count(RT_EV_REQUEST_OK, NULL), 0);
  assert_true(count(RT_EV_REQUEST_FAIL, NULL) >= 1);
  done();
  world(5);
  mode = 4;
  a = add("shop", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_run(&SIM, S(10), 0);
  assert_true(said(RT_EV_REQUEST_FAIL, "onRequest: unsupported command"));
  assert_int_equal(count(RT_EV_REQUEST_OK, NULL), 0);
  done();
  world(5);
  mode = 5;
  a = add("shop", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_run(&SIM, S(10), 0);
  assert_true(R.fiber_id > 0);
  assert_int_equal(F.calls, 1);
  const sim_rec *d = last(RT_EV_FIBER_DONE);
  assert_non_null(d);
  assert_int_equal(d->b, 0); /* not ok */
  assert_non_null(d->s2);
  assert_non_null(strstr(sim_trace_str(&SIM.trace, d->s2), "runFiber: unsupported command"));
  assert_int_equal(rt_count_fiber_rows(W, a), 0);
  done();
}

/* A class without onFiberRecovered: the SDK resumes an interrupted fiber
** itself, from its stash. */
static void test_recovery_without_hook(void **st) {
  (void)st;
  world(5);
  mode = 6;
  uint32_t a = add("shop", "Probe");
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_at(&SIM, S(3), 0, crash_cb, W, 0);
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(10)), 0);
  sim_run(&SIM, S(60), 0);
  assert_int_equal(F.calls, 2);
  assert_string_equal(resumed_from, "{\"n\":2}");
  assert_true(count(RT_EV_FIBER_RECOVERED, NULL) >= 1);
  assert_int_equal(rt_count_fiber_rows(W, a), 0);
  done();
}

/* A recovery hook that awaits work before it decides: the fiber is resumed
** from its stash after the hook's 1..2 s; the world's probe counters agree
** with the probe records of the trace. */
static void test_hook_yields_work(void **st) {
  (void)st;
  world(5);
  mode = 6;
  hook_calls = hook_resumes = 0;
  uint32_t a = add("shop", "Probe");
  assert_int_equal(rt__usercode_set(W, a, &hooked_uc), 0);
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_at(&SIM, S(3), 0, crash_cb, W, 0);
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(10)), 0);
  sim_run(&SIM, S(60), 0);
  assert_int_equal(hook_calls, 1);
  assert_int_equal(hook_resumes, 1);
  assert_int_equal(F.calls, 2);
  assert_string_equal(resumed_from, "{\"n\":2}");
  const sim_rec *rec = last(RT_EV_FIBER_RECOVERED);
  assert_non_null(rec);
  assert_true(rec->t_us >= S(11) && rec->t_us <= S(12) + 100000); /* after the hook's work */
  for (int p = 0; p < RT_PROBE_COUNT; p++) {
    uint32_t n = 0;
    for (size_t i = 0; i < SIM.trace.n; i++)
      n += SIM.trace.recs[i].kind == RT_EV_PROBE && SIM.trace.recs[i].a == p;
    assert_true(rt_probe_hits(W, p) >= n);
    assert_true((rt_probe_hits(W, p) == 0) == (n == 0));
  }
  assert_int_equal(rt_probe_hits(W, -1), 0);
  assert_int_equal(rt_probe_hits(W, RT_PROBE_COUNT), 0);
  done();
}

/* A sub-agent whose tool run works a drawn 1..2 s: the parent's run
** completes when the body says, not after the 60 s the parent asked. */
static void test_child_tool_run_drawn_work(void **st) {
  (void)st;
  world(5);
  uint32_t parent = add("parent", "Parent");
  assert_int_equal(rt__usercode_set(W, parent, &rt__uc_declarative), 0);
  uint32_t child = add("worker", "Worker");
  assert_int_equal(rt__usercode_set(W, child, &worker_uc), 0);
  assert_int_equal(rt_toolrun_at(W, parent, child, S(60), S(1)), 0);
  sim_run(&SIM, S(30), 0);
  int done_n = 0;
  int64_t at = -1;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind == RT_EV_TOOLRUN_STATUS && r->b == RT_TR_COMPLETED && r->actor == parent) {
      done_n++;
      at = r->t_us;
    }
  }
  assert_int_equal(done_n, 1);
  assert_true(at > S(2) && at < S(3) + 500000);
  done();
}

/* rt_fail_commits(RT_NO_ACTOR, 1): the next commit of any actor fails (the
** turn rolls back, the actor is reset), and the actor serves again after. */
static void test_fail_any_commit(void **st) {
  (void)st;
  world(5);
  mode = 6;
  uint32_t a = add("shop", "Probe");
  rt_fail_commits(W, RT_NO_ACTOR, 1);
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(10)), 0);
  sim_run(&SIM, S(60), 0);
  assert_int_equal(count(RT_EV_STORAGE_FAIL, NULL), 1);
  assert_true(count(RT_EV_ACTOR_DEATH, NULL) >= 1);
  const sim_rec *ok = last(RT_EV_REQUEST_OK);
  assert_non_null(ok); /* the request after the reset is served */
  assert_true(ok->t_us >= S(10));
  done();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identity_and_random),
      cmocka_unit_test(test_fibers_stash_snapshot),
      cmocka_unit_test(test_keepalive_and_schedules),
      cmocka_unit_test(test_keepalive_lease_slots),
      cmocka_unit_test(test_request_yields_work),
      cmocka_unit_test(test_hook_names),
      cmocka_unit_test(test_onstart_yields_work),
      cmocka_unit_test(test_unsupported_commands),
      cmocka_unit_test(test_recovery_without_hook),
      cmocka_unit_test(test_hook_yields_work),
      cmocka_unit_test(test_child_tool_run_drawn_work),
      cmocka_unit_test(test_fail_any_commit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
