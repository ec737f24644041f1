/*
** test_executor.c: the checkpoint executor of seed 002 (runtime/rt_executor.c)
** and its contract checker (checks/chk_executor.c). Each rule of the seed
** gets a world that shows it, checked on the trace and through restore();
** checkpoint_contract fires on the broken adapter and on crafted traces that
** break each rule, and stays quiet on the correct adapters.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk.h"
#include "runtime/rt.h"
#include "scenarios/scn.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

typedef struct fx {
  sim s;
  rt_world *w;
  chk_set *c;
} fx;

static fx F;

static sim_strategy fx_strat = SIM_FIFO;

static void fx_init(uint64_t seed, int adapter) {
  sim_config sc = {seed, fx_strat, 3, 1000};
  rt_config cfg;
  rt_actor_spec sp;
  assert_int_equal(sim_init(&F.s, &sc), 0);
  rt_config_default(&cfg);
  cfg.exec_adapter = (rt_exec_adapter)adapter;
  F.w = rt_world_new(&F.s, &cfg);
  assert_non_null(F.w);
  F.c = chk_new(&F.s.trace, NULL);
  assert_non_null(F.c);
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "beach");
  snprintf(sp.cls, sizeof sp.cls, "BeachAgent");
  assert_int_equal(rt_actor_add(F.w, &sp), 0);
}

static void fx_free(void) {
  rt_world_free(F.w);
  chk_free(F.c);
  sim_free(&F.s);
  memset(&F, 0, sizeof F);
}

static void run_to(int64_t t) {
  sim_run(&F.s, t, 0);
  chk_finish(F.c, F.s.now_us);
}

/* A turn with `tools` tool calls at at_us; fail / cancel / dup as given. */
static void turn_at(int64_t at_us, int tools, int fail_phase, int64_t cancel_us, uint32_t dup) {
  rt_exec_turn_spec t;
  rt_exec_turn_default(&t);
  t.tools = tools;
  t.fail_phase = fail_phase;
  t.cancel_after_us = cancel_us;
  t.dup_ppm = dup;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &t, at_us), 0);
}

static size_t count_kind(uint32_t kind) {
  size_t n = 0;
  for (size_t i = 0; i < F.s.trace.n; i++) n += F.s.trace.recs[i].kind == kind;
  return n;
}

/* Index of the n-th record of kind with field b == b (b < 0: any), or -1. */
static long find(uint32_t kind, int64_t b, size_t nth) {
  for (size_t i = 0; i < F.s.trace.n; i++) {
    const sim_rec *r = &F.s.trace.recs[i];
    if (r->kind == kind && (b < 0 || r->b == b) && nth-- == 0) return (long)i;
  }
  return -1;
}

static int violated(chk_invariant inv) {
  for (size_t i = 0; i < chk_violation_count(F.c); i++)
    if (chk_violation_at(F.c, i)->inv == inv) return 1;
  return 0;
}

static int64_t first_turn(void) {
  long i = find(RT_EV_EXEC_TURN, RT_TS_OPEN, 0);
  assert_true(i >= 0);
  return F.s.trace.recs[i].a;
}

/* The phases of the first (non-retry) checkpoint calls, in order. */
static int call_phases(int *out, int cap) {
  int n = 0;
  for (size_t i = 0; i < F.s.trace.n && n < cap; i++) {
    const sim_rec *r = &F.s.trace.recs[i];
    if (r->kind == RT_EV_EXEC_CHECKPOINT && r->s2 == 0) out[n++] = (int)r->b;
  }
  return n;
}

/* ---- the actor runner ----------------------------------------------------- */

/* "started when the turn opens, llm-complete after each LLM iteration,
** tool-received as tool results land, settled at terminal". */
static void test_lifecycle_phases(void **st) {
  static const int want[] = {RT_PH_STARTED, RT_PH_LLM_COMPLETE, RT_PH_TOOL_DISPATCHED,
                             RT_PH_TOOL_RECEIVED, RT_PH_TOOL_DISPATCHED, RT_PH_TOOL_RECEIVED,
                             RT_PH_TOOL_DISPATCHED, RT_PH_TOOL_RECEIVED, RT_PH_LLM_COMPLETE,
                             RT_PH_SETTLED};
  int got[32];
  (void)st;
  fx_init(1, RT_EXEC_SQLITE);
  turn_at(S(1), 3, 0, 0, 0);
  run_to(S(60));
  assert_int_equal(call_phases(got, 32), 10);
  assert_memory_equal(got, want, sizeof want);
  assert_true(find(RT_EV_EXEC_TURN, RT_TS_RUNNING, 0) > find(RT_EV_EXEC_ACK, -1, 0));
  assert_true(find(RT_EV_EXEC_TURN, RT_TS_COMPLETE, 0) >= 0);
  assert_int_equal(count_kind(RT_EV_REQUEST_OK), 1);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* restore() returns every checkpoint of the turn oldest first: started
** first, settled last (the seed's in-memory test), for both adapters. */
static void test_restore_chronological(void **st) {
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_MEMORY; ad++) {
    rt_checkpoint cp[32];
    fx_init(2, ad);
    turn_at(S(1), 2, 0, 0, 0);
    run_to(S(30));
    int n = rt_exec_restore(F.w, 0, (rt_exec_adapter)ad, first_turn(), cp, 32);
    assert_int_equal(n, 8);
    assert_string_equal(cp[0].phase, "started");
    assert_string_equal(cp[n - 1].phase, "settled");
    for (int i = 1; i < n; i++) assert_true(cp[i].timestamp_ms > cp[i - 1].timestamp_ms);
    assert_non_null(strstr(cp[0].state, "\"slotKey\":"));
    assert_non_null(strstr(cp[n - 1].state, "\"turnState\":\"complete\""));
    long r = find(RT_EV_EXEC_RESTORE, 8, 0); /* the audit restore after settled */
    assert_true(r >= 0);
    assert_int_equal(F.s.trace.recs[r + 1].b, RT_PH_STARTED);
    assert_int_equal(F.s.trace.recs[r + 8].b, RT_PH_SETTLED);
    assert_int_equal(chk_violation_count(F.c), 0);
    fx_free();
  }
}

/* "even when two lifecycle events fire in the same wall-clock millisecond,
** their timestamps differ by at least 1 ms". */
static void test_timestamps_monotonic(void **st) {
  int64_t last = -1;
  int same_ms = 0;
  (void)st;
  fx_init(3, RT_EXEC_SQLITE);
  turn_at(S(1), 4, 0, 0, 0);
  run_to(S(60));
  for (size_t i = 0; i < F.s.trace.n; i++) {
    const sim_rec *r = &F.s.trace.recs[i];
    if (r->kind != RT_EV_EXEC_CHECKPOINT) continue;
    assert_true(r->c > last);
    if (r->c > r->t_us / 1000) same_ms++; /* bumped past the clock's millisecond */
    last = r->c;
  }
  assert_true(same_ms >= 4); /* llm-complete → tool-dispatched, received → dispatched */
  assert_false(violated(CHK_CHECKPOINT_CONTRACT));
  fx_free();
}

/* Every call delivered twice (network retries): one stored checkpoint per
** (turnId, phase, timestamp), for both correct adapters. */
static void test_retries_idempotent(void **st) {
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_MEMORY; ad++) {
    fx_init(4, ad);
    turn_at(S(1), 3, 0, 0, 1000000);
    run_to(S(30));
    assert_int_equal(count_kind(RT_EV_EXEC_CHECKPOINT), 20);
    long r = find(RT_EV_EXEC_RESTORE, -1, 0);
    assert_true(r >= 0);
    assert_int_equal(F.s.trace.recs[r].b, 10);
    assert_false(violated(CHK_CHECKPOINT_CONTRACT));
    fx_free();
  }
}

/* Direct calls: identical (turnId, phase, timestamp) store one checkpoint;
** the same (turnId, phase) with another timestamp is a second one, except
** in the broken adapter, which dedupes on (turnId, phase). */
static void test_direct_idempotency_key(void **st) {
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_BROKEN; ad++) {
    rt_checkpoint cp = {77, "s", "tool-received", "{}", 1000}, out[8];
    fx_init(5, ad);
    rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(1)); /* an incarnation holds the memory */
    sim_run(&F.s, S(2), 0);
    assert_int_equal(rt_exec_checkpoint(F.w, 0, (rt_exec_adapter)ad, &cp), 0);
    assert_int_equal(rt_exec_checkpoint(F.w, 0, (rt_exec_adapter)ad, &cp), 0);
    assert_int_equal(rt_exec_restore(F.w, 0, (rt_exec_adapter)ad, 77, out, 8), 1);
    cp.timestamp_ms = 1001;
    assert_int_equal(rt_exec_checkpoint(F.w, 0, (rt_exec_adapter)ad, &cp), 0);
    int n = rt_exec_restore(F.w, 0, (rt_exec_adapter)ad, 77, out, 8);
    assert_int_equal(n, ad == RT_EXEC_BROKEN ? 1 : 2);
    assert_int_equal(violated(CHK_CHECKPOINT_CONTRACT), ad == RT_EXEC_BROKEN);
    fx_free();
  }
}

/* "Dedupe on (turnId, phase) alone ... collapses these into one checkpoint
** and silently loses tool results": the audit restore after settled shows
** it; sqlite and memory stay quiet on the same turn. */
static void test_broken_adapter_caught(void **st) {
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_BROKEN; ad++) {
    fx_init(6, ad);
    turn_at(S(1), 3, 0, 0, 0);
    run_to(S(30));
    assert_int_equal(violated(CHK_CHECKPOINT_CONTRACT), ad == RT_EXEC_BROKEN);
    if (ad == RT_EXEC_BROKEN) {
      const chk_violation *v = chk_violation_at(F.c, 0);
      assert_int_equal(v->subject, first_turn());
      assert_non_null(strstr(v->msg, "deduplicated on (turnId, phase)"));
      assert_true(v->n_chain >= 2);
    }
    fx_free();
  }
}

/* "A turn whose started checkpoint cannot be persisted does not run", and
** nothing of it is restored or resumed after the storage reset. */
static void test_failed_started_does_not_run(void **st) {
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_MEMORY; ad++) {
    fx_init(7, ad);
    turn_at(S(1), 2, RT_PH_STARTED, 0, 0);
    rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(5)); /* wakes it again after the reset */
    run_to(S(30));
    assert_true(find(RT_EV_EXEC_TURN, RT_TS_NOT_RUN, 0) >= 0);
    assert_int_equal(find(RT_EV_EXEC_TURN, RT_TS_RUNNING, 0), -1);
    assert_int_equal(find(RT_EV_EXEC_TURN, RT_TS_RESUMED, 0), -1);
    assert_int_equal(count_kind(RT_EV_EXEC_CHECKPOINT), 1);
    assert_int_equal(count_kind(RT_EV_REQUEST_FAIL), 1);
    assert_int_equal(count_kind(RT_EV_ACTOR_DEATH) > 0, ad == RT_EXEC_SQLITE);
    assert_false(violated(CHK_CHECKPOINT_CONTRACT));
    fx_free();
  }
}

/* "Failures propagate and abort the turn": nothing after the failed call. */
static void test_failed_checkpoint_aborts(void **st) {
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_MEMORY; ad++) {
    fx_init(8, ad);
    turn_at(S(1), 3, RT_PH_TOOL_RECEIVED, 0, 0);
    run_to(MS(8000));
    long fail = find(RT_EV_EXEC_ACK, 0, 0), abort = find(RT_EV_EXEC_TURN, RT_TS_ABORTED, 0);
    assert_true(fail >= 0 && abort > fail);
    assert_int_equal(F.s.trace.recs[fail].c, RT_PH_TOOL_RECEIVED);
    for (long i = fail + 1; i < (long)F.s.trace.n; i++) { /* nothing more in that life */
      if (F.s.trace.recs[i].kind == RT_EV_ACTOR_DEATH) break;
      assert_int_not_equal(F.s.trace.recs[i].kind, RT_EV_EXEC_CHECKPOINT);
    }
    assert_int_equal(find(RT_EV_EXEC_TURN, RT_TS_COMPLETE, 0), -1);
    assert_false(violated(CHK_CHECKPOINT_CONTRACT));
    fx_free();
  }
}

/* cancelTurn: the abort signal fires at once (the tool in flight stops),
** the slot is torn down only after the durable settled (turnState
** cancelled). */
static void test_cancel_awaits_settled(void **st) {
  rt_checkpoint cp[32];
  (void)st;
  fx_init(9, RT_EXEC_SQLITE);
  turn_at(S(1), 3, 0, MS(1500), 0);
  run_to(S(30));
  long cancel = find(RT_EV_EXEC_TURN, RT_TS_CANCEL, 0);
  long settled = find(RT_EV_EXEC_ACK, 1, (size_t)count_kind(RT_EV_EXEC_ACK) - 1);
  long done = find(RT_EV_EXEC_TURN, RT_TS_CANCELLED, 0);
  assert_true(cancel >= 0 && settled > cancel && done > settled);
  assert_int_equal(F.s.trace.recs[settled].c, RT_PH_SETTLED);
  assert_int_equal(F.s.trace.recs[cancel].t_us, S(1) + MS(1500));
  assert_int_equal(find(RT_EV_EXEC_TURN, RT_TS_COMPLETE, 0), -1);
  int n = rt_exec_restore(F.w, 0, RT_EXEC_SQLITE, first_turn(), cp, 32);
  assert_non_null(strstr(cp[n - 1].state, "\"turnState\":\"cancelled\""));
  assert_false(violated(CHK_CHECKPOINT_CONTRACT));
  fx_free();
}

/* cancelTurn at the very instant a checkpoint was called, before its ack:
** no timer runs then, so the abort waits for the ack, which then settles
** the turn (settled, then cancelled) instead of running the next step.
** Equal instants run in drawn order under the random strategy; the instant
** is taken from the same seed run without a cancel, and the first seed
** whose draw puts the cancel between the checkpoint and its ack is used. */
static void test_cancel_while_ack_pending(void **st) {
  int found = 0;
  (void)st;
  fx_strat = SIM_RANDOM;
  for (uint64_t seed = 1; seed <= 200 && !found; seed++) {
    fx_init(seed, RT_EXEC_SQLITE);
    turn_at(S(1), 3, 0, 0, 0);
    run_to(S(30));
    long open = find(RT_EV_EXEC_TURN, RT_TS_OPEN, 0);
    long llm = find(RT_EV_EXEC_CHECKPOINT, RT_PH_LLM_COMPLETE, 0);
    assert_true(open >= 0 && llm > open);
    int64_t at = F.s.trace.recs[llm].t_us - F.s.trace.recs[open].t_us;
    fx_free();

    fx_init(seed, RT_EXEC_SQLITE);
    turn_at(S(1), 3, 0, at, 0);
    run_to(S(30));
    long cancel = find(RT_EV_EXEC_TURN, RT_TS_CANCEL, 0);
    llm = find(RT_EV_EXEC_CHECKPOINT, RT_PH_LLM_COMPLETE, 0);
    if (llm >= 0 && cancel > llm && F.s.trace.recs[cancel].t_us == F.s.trace.recs[llm].t_us) {
      found = 1;
      assert_int_equal(find(RT_EV_EXEC_CHECKPOINT, RT_PH_TOOL_DISPATCHED, 0), -1);
      long done = find(RT_EV_EXEC_TURN, RT_TS_CANCELLED, 0);
      assert_true(done > cancel);
      assert_int_equal(find(RT_EV_EXEC_TURN, RT_TS_COMPLETE, 0), -1);
      assert_false(violated(CHK_CHECKPOINT_CONTRACT));
    }
    fx_free();
  }
  fx_strat = SIM_FIFO;
  assert_true(found);
}

/* A cancelTurn that arrives after its turn settled does nothing, even when
** a newer turn runs in the same slot. */
static void test_late_cancel_ignored(void **st) {
  (void)st;
  fx_init(12, RT_EXEC_SQLITE);
  turn_at(S(1), 0, 0, S(20), 0); /* done long before 21 s */
  turn_at(S(15), 8, 0, 0, 0);    /* still running at 21 s */
  run_to(S(60));
  assert_int_equal(find(RT_EV_EXEC_TURN, RT_TS_CANCEL, 0), -1);
  assert_int_equal(count_kind(RT_EV_EXEC_TURN), 6); /* open, running, complete x 2 */
  assert_true(find(RT_EV_EXEC_TURN, RT_TS_COMPLETE, 1) >= 0);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_all(ctx, (rt_death_cause)arg);
}

/* A crash mid-turn: the next wake restores the turn and resumes it from its
** last checkpoint (timestamps go on after the restored ones); the
** in-memory adapter has nothing left to restore. */
static void test_crash_restore_resume(void **st) {
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_MEMORY; ad++) {
    fx_init(10, ad);
    turn_at(S(1), 3, 0, 0, 0);
    sim_at(&F.s, MS(2500), 0, crash_cb, F.w, RT_DEATH_CRASH);
    rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(10));
    run_to(S(60));
    long resumed = find(RT_EV_EXEC_TURN, RT_TS_RESUMED, 0);
    if (ad == RT_EXEC_MEMORY) {
      assert_int_equal(resumed, -1);
      assert_int_equal(find(RT_EV_EXEC_TURN, RT_TS_COMPLETE, 0), -1);
    } else {
      long restore = find(RT_EV_EXEC_RESTORE, -1, 0);
      assert_true(restore >= 0 && resumed > restore);
      assert_int_equal(F.s.trace.recs[restore].c, 1); /* recovery restore */
      assert_true(find(RT_EV_EXEC_TURN, RT_TS_COMPLETE, 0) > resumed);
      assert_int_equal(F.s.trace.recs[resumed].a, first_turn());
    }
    assert_false(violated(CHK_CHECKPOINT_CONTRACT));
    fx_free();
  }
}

/* Turns a previous process left at each canonical phase (written through
** the SQL adapter): the next startup restores each open turn and runs it on
** from the step after its last checkpoint. */
static int64_t put_turn(int64_t turn, int tools, const char *const *phases, int n) {
  rt_checkpoint cp;
  for (int i = 0; i < n; i++) {
    memset(&cp, 0, sizeof cp);
    cp.turn_id = turn;
    snprintf(cp.session_id, sizeof cp.session_id, "s%lld", (long long)turn);
    snprintf(cp.phase, sizeof cp.phase, "%s", phases[i]);
    if (tools >= 0 && i == 0)
      snprintf(cp.state, sizeof cp.state, "{\"tools\":%d,\"adapter\":\"sqlite\"}", tools);
    else
      snprintf(cp.state, sizeof cp.state, "{}");
    cp.timestamp_ms = 10 * (i + 1);
    assert_int_equal(rt_exec_checkpoint(F.w, 0, RT_EXEC_SQLITE, &cp), 0);
  }
  return turn;
}

/* The phase name of the first checkpoint call of `turn` after trace index
** `from`, or "" if none. */
static const char *next_phase(int64_t turn, long from) {
  for (size_t i = (size_t)from + 1; i < F.s.trace.n; i++) {
    const sim_rec *r = &F.s.trace.recs[i];
    if (r->kind == RT_EV_EXEC_CHECKPOINT && r->a == turn) return sim_trace_str(&F.s.trace, r->s);
  }
  return "";
}

static long resumed_at(int64_t turn) {
  for (size_t i = 0; i < F.s.trace.n; i++) {
    const sim_rec *r = &F.s.trace.recs[i];
    if (r->kind == RT_EV_EXEC_TURN && r->b == RT_TS_RESUMED && r->a == turn) return (long)i;
  }
  return -1;
}

static void test_restore_resumes_each_phase(void **st) {
  static const char *const dispatch[] = {"started", "llm-complete"};
  static const char *const second_llm[] = {"started", "llm-complete", "llm-complete"};
  static const char *const dispatched[] = {"started", "llm-complete", "tool-dispatched"};
  static const char *const one_back[] = {"started", "llm-complete", "tool-dispatched",
                                         "tool-received"};
  static const char *const no_spec[] = {"started", "llm-complete"};
  (void)st;
  fx_init(12, RT_EXEC_SQLITE);
  int64_t t1 = put_turn(101, 2, dispatch, 2);     /* tools to dispatch */
  int64_t t2 = put_turn(102, 1, second_llm, 3);   /* the second LLM call: settle */
  int64_t t3 = put_turn(103, 1, dispatched, 3);   /* a tool out: await it */
  int64_t t4 = put_turn(104, 2, one_back, 4);     /* one of two back: dispatch the next */
  int64_t t5 = put_turn(105, -1, no_spec, 2);     /* started without its spec */
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(1));
  run_to(S(60));
  assert_true(resumed_at(t1) >= 0);
  assert_string_equal(next_phase(t1, resumed_at(t1)), "tool-dispatched");
  assert_string_equal(next_phase(t2, resumed_at(t2)), "settled");
  assert_string_equal(next_phase(t3, resumed_at(t3)), "tool-received");
  assert_string_equal(next_phase(t4, resumed_at(t4)), "tool-dispatched");
  assert_int_equal(resumed_at(t5), -1);
  assert_false(violated(CHK_CHECKPOINT_CONTRACT));
  fx_free();
}

/* Direct checkpoints out of timestamp order, one delivered twice, through
** each adapter: restore gives them oldest first, the duplicate once, and
** says how many there are even past its cap. */
static void test_direct_restore_order_and_cap(void **st) {
  static const char *const ph[] = {"started", "llm-complete", "tool-dispatched", "started"};
  static const int64_t ts[] = {30, 10, 20, 30};
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_MEMORY; ad++) {
    rt_checkpoint cp, out[2];
    fx_init(13, ad);
    for (int i = 0; i < 4; i++) {
      memset(&cp, 0, sizeof cp);
      cp.turn_id = 7;
      snprintf(cp.phase, sizeof cp.phase, "%s", ph[i]);
      snprintf(cp.state, sizeof cp.state, "{}");
      cp.timestamp_ms = ts[i];
      assert_int_equal(rt_exec_checkpoint(F.w, 0, (rt_exec_adapter)ad, &cp), 0);
    }
    assert_int_equal(rt_exec_restore(F.w, 0, (rt_exec_adapter)ad, 7, out, 2), 3);
    assert_int_equal(out[0].timestamp_ms, 10);
    assert_string_equal(out[0].phase, "llm-complete");
    assert_int_equal(out[1].timestamp_ms, 20);
    assert_int_equal(rt_exec_restore(F.w, 0, (rt_exec_adapter)ad, 8, out, 2), 0);
    fx_free();
  }
}

/* ---- the phase registry ------------------------------------------------- */

static void test_phase_registry(void **st) {
  rt_checkpoint cp = {5, "s", "peer-call-dispatched", "{}", 10}, out[4];
  (void)st;
  fx_init(11, RT_EXEC_SQLITE);
  assert_int_equal(rt_exec_phase_id(F.w, "started"), RT_PH_STARTED);
  assert_int_equal(rt_exec_phase_id(F.w, "settled"), RT_PH_SETTLED);
  assert_string_equal(rt_exec_phase_of(F.w, RT_PH_TOOL_DISPATCHED), "tool-dispatched");
  assert_int_equal(rt_exec_checkpoint(F.w, 0, RT_EXEC_SQLITE, &cp), -1); /* not registered */
  int id = rt_exec_phase_register(F.w, "peer-call-dispatched",
                                  "A long-running A2A peer call has been dispatched.");
  assert_int_equal(id, RT_PH_FIRST_CUSTOM);
  assert_int_equal(rt_exec_phase_register(F.w, "peer-call-dispatched", ""), -1);
  assert_int_equal(rt_exec_phase_register(F.w, "", ""), -1);
  assert_int_equal(rt_exec_phase_register(F.w, "settled", ""), -1);
  assert_int_equal(rt_exec_checkpoint(F.w, 0, RT_EXEC_SQLITE, &cp), 0);
  assert_int_equal(rt_exec_restore(F.w, 0, RT_EXEC_SQLITE, 5, out, 4), 1);
  assert_string_equal(out[0].phase, "peer-call-dispatched");
  assert_int_equal(F.s.trace.recs[find(RT_EV_EXEC_RESTORED, -1, 0)].b, id);
  assert_string_equal(rt_exec_phase_name(RT_PH_LLM_COMPLETE), "llm-complete");
  assert_string_equal(rt_exec_phase_name(RT_PH_FIRST_CUSTOM), "?");
  fx_free();
}

/* ---- the checker over crafted traces ---------------------------------- */

typedef struct tfx {
  sim_trace t;
  chk_set *c;
} tfx;

static void tfx_init(tfx *f) {
  assert_int_equal(sim_trace_init(&f->t), 0);
  f->c = chk_new(&f->t, NULL);
  assert_non_null(f->c);
}

static void tfx_free(tfx *f) {
  chk_free(f->c);
  sim_trace_free(&f->t);
}

static void rec(tfx *f, int64_t t, uint32_t kind, int64_t a, int64_t b, int64_t c, const char *s) {
  sim_rec r;
  memset(&r, 0, sizeof r);
  r.t_us = t;
  r.kind = kind;
  r.actor = 0;
  r.a = a;
  r.b = b;
  r.c = c;
  r.s = sim_trace_intern(&f->t, s);
  sim_trace_append(&f->t, &r);
}

/* A durable call: CHECKPOINT + ACK ok. */
static void call_ok(tfx *f, int64_t t, int phase, int64_t ts) {
  rec(f, t, RT_EV_EXEC_CHECKPOINT, 1, phase, ts, rt_exec_phase_name(phase));
  rec(f, t, RT_EV_EXEC_ACK, 1, 1, phase, NULL);
}

static void restore(tfx *f, int64_t t, int n, const int *phase, const int64_t *ts) {
  rec(f, t, RT_EV_EXEC_RESTORE, 1, n, 2, NULL);
  for (int i = 0; i < n; i++)
    rec(f, t, RT_EV_EXEC_RESTORED, 1, phase[i], ts[i], rt_exec_phase_name(phase[i]));
}

static int tfx_fired(tfx *f, const char *needle) {
  for (size_t i = 0; i < chk_violation_count(f->c); i++) {
    const chk_violation *v = chk_violation_at(f->c, i);
    if (v->inv == CHK_CHECKPOINT_CONTRACT && strstr(v->msg, needle)) return 1;
  }
  return 0;
}

static void open_turn(tfx *f) {
  rec(f, 0, RT_EV_ACTOR_WAKE, 1, RT_ENTRY_FETCH, 0, "A");
  rec(f, 0, RT_EV_EXEC_TURN, 1, RT_TS_OPEN, RT_EXEC_SQLITE, NULL);
}

static void test_chk_monotonic(void **st) {
  tfx f;
  (void)st;
  tfx_init(&f);
  open_turn(&f);
  call_ok(&f, 10, RT_PH_STARTED, 5);
  call_ok(&f, 20, RT_PH_LLM_COMPLETE, 6);
  call_ok(&f, 20, RT_PH_LLM_COMPLETE, 6); /* a retry: fine */
  assert_int_equal(chk_violation_count(f.c), 0);
  call_ok(&f, 30, RT_PH_TOOL_DISPATCHED, 6); /* same ms, another phase */
  assert_true(tfx_fired(&f, "strictly monotonic"));
  tfx_free(&f);
}

static void test_chk_restore_rules(void **st) {
  static const int ph[] = {RT_PH_STARTED, RT_PH_TOOL_RECEIVED, RT_PH_TOOL_RECEIVED};
  static const int64_t good[] = {1, 2, 3}, unordered[] = {1, 3, 2}, twice[] = {1, 2, 2};
  (void)st;
  for (int k = 0; k < 4; k++) {
    tfx f;
    tfx_init(&f);
    open_turn(&f);
    call_ok(&f, 1, RT_PH_STARTED, 1);
    call_ok(&f, 2, RT_PH_TOOL_RECEIVED, 2);
    call_ok(&f, 3, RT_PH_TOOL_RECEIVED, 3);
    if (k == 0) restore(&f, 4, 3, ph, good);
    if (k == 1) restore(&f, 4, 3, ph, unordered);
    if (k == 2) restore(&f, 4, 3, ph, twice);
    if (k == 3) restore(&f, 4, 2, ph, good); /* one tool-received collapsed */
    assert_int_equal(chk_violation_count(f.c), k == 0 ? 0 : k == 2 ? 2 : 1); /* twice: and 3 missing */
    if (k == 1) assert_true(tfx_fired(&f, "not chronological"));
    if (k == 2) assert_true(tfx_fired(&f, "twice"));
    if (k == 3) assert_true(tfx_fired(&f, "deduplicated on (turnId, phase)"));
    tfx_free(&f);
  }
}

static void test_chk_failures(void **st) {
  (void)st;
  for (int k = 0; k < 4; k++) {
    tfx f;
    tfx_init(&f);
    open_turn(&f);
    int first = k < 2 ? RT_PH_STARTED : RT_PH_LLM_COMPLETE;
    if (k >= 2) call_ok(&f, 1, RT_PH_STARTED, 1);
    rec(&f, 2, RT_EV_EXEC_CHECKPOINT, 1, first, 2, rt_exec_phase_name(first));
    rec(&f, 2, RT_EV_EXEC_ACK, 1, 0, first, "failed");
    if (k == 0) rec(&f, 3, RT_EV_EXEC_TURN, 1, RT_TS_RUNNING, 0, NULL); /* ran anyway */
    if (k == 1) rec(&f, 3, RT_EV_EXEC_TURN, 1, RT_TS_NOT_RUN, 0, NULL); /* correct */
    if (k == 2) call_ok(&f, 3, RT_PH_TOOL_DISPATCHED, 3);               /* went on */
    if (k == 3) { /* aborted; a later life resumes it: allowed */
      rec(&f, 3, RT_EV_EXEC_TURN, 1, RT_TS_ABORTED, 0, NULL);
      rec(&f, 4, RT_EV_ACTOR_DEATH, RT_DEATH_STORAGE, 1, 0, NULL);
      rec(&f, 5, RT_EV_ACTOR_WAKE, 2, RT_ENTRY_FETCH, 0, "A");
      rec(&f, 5, RT_EV_EXEC_TURN, 1, RT_TS_RESUMED, 0, NULL);
      call_ok(&f, 5, RT_PH_LLM_COMPLETE, 4);
    }
    assert_int_equal(chk_violation_count(f.c), k == 0 || k == 2);
    if (k == 0) assert_true(tfx_fired(&f, "started checkpoint failed"));
    if (k == 2) assert_true(tfx_fired(&f, "after a failed checkpoint"));
    tfx_free(&f);
  }
}

static void test_chk_cancel(void **st) {
  (void)st;
  for (int k = 0; k < 3; k++) {
    tfx f;
    tfx_init(&f);
    open_turn(&f);
    call_ok(&f, 1, RT_PH_STARTED, 1);
    if (k == 2) call_ok(&f, 2, RT_PH_SETTLED, 2); /* settled before the cancel: no use */
    rec(&f, 3, RT_EV_EXEC_TURN, 1, RT_TS_CANCEL, 0, NULL);
    if (k == 0) call_ok(&f, 4, RT_PH_SETTLED, 4);
    if (k == 1) rec(&f, 4, RT_EV_EXEC_CHECKPOINT, 1, RT_PH_SETTLED, 4, "settled"); /* no ack */
    rec(&f, 5, RT_EV_EXEC_TURN, 1, RT_TS_CANCELLED, 0, NULL);
    assert_int_equal(chk_violation_count(f.c), k != 0);
    if (k) assert_true(tfx_fired(&f, "before a durable settled"));
    tfx_free(&f);
  }
}

/* The in-memory adapter forgets with its actor: an empty restore after a
** death is no violation; a durable adapter's is. */
static void test_chk_memory_forgets(void **st) {
  (void)st;
  for (int ad = RT_EXEC_SQLITE; ad <= RT_EXEC_MEMORY; ad++) {
    tfx f;
    tfx_init(&f);
    rec(&f, 0, RT_EV_ACTOR_WAKE, 1, RT_ENTRY_FETCH, 0, "A");
    rec(&f, 0, RT_EV_EXEC_TURN, 1, RT_TS_OPEN, ad, NULL);
    call_ok(&f, 1, RT_PH_STARTED, 1);
    rec(&f, 2, RT_EV_ACTOR_DEATH, RT_DEATH_CRASH, 1, 0, NULL);
    rec(&f, 3, RT_EV_ACTOR_WAKE, 2, RT_ENTRY_FETCH, 0, "A");
    restore(&f, 3, 0, NULL, NULL);
    assert_int_equal(chk_violation_count(f.c), ad == RT_EXEC_SQLITE);
    tfx_free(&f);
  }
}

/* ---- scenarios and determinism ------------------------------------------- */

/* The example file: every case meets its expectation, and a second run of
** each gives the same trace hash. */
static void test_example_and_determinism(void **st) {
  scn_scenario *sc = calloc(1, sizeof *sc);
  char err[512];
  (void)st;
  assert_non_null(sc);
  assert_int_equal(scn_load("scenarios/examples/executor-checkpoints.json", sc, err, sizeof err), 0);
  assert_int_equal(sc->n_cases, 3);
  for (int ci = 0; ci < sc->n_cases; ci++) {
    scn_result a, b;
    assert_int_equal(scn_run_case(sc, ci, sc->seed, sc->strategy, &a), 0);
    assert_int_equal(scn_run_case(sc, ci, sc->seed, sc->strategy, &b), 0);
    assert_true(a.passed);
    assert_true(a.trace_hash == b.trace_hash);
    assert_true(a.events == b.events);
    scn_result_free(&a);
    scn_result_free(&b);
  }
  scn_result r1, r2;
  assert_int_equal(scn_run_case(sc, 0, 1, SIM_RANDOM, &r1), 0);
  assert_int_equal(scn_run_case(sc, 0, 99, SIM_RANDOM, &r2), 0);
  assert_true(r1.trace_hash != r2.trace_hash); /* the seed matters */
  scn_result_free(&r1);
  scn_result_free(&r2);
  scn_free(sc);
  free(sc);
}

/* scn_write keeps the executor fields: the written file runs to the same
** trace hash. */
static void test_write_round_trip(void **st) {
  scn_scenario *sc = calloc(1, sizeof *sc), *back = calloc(1, sizeof *back);
  char err[512];
  (void)st;
  assert_non_null(sc);
  assert_non_null(back);
  assert_int_equal(scn_load("scenarios/examples/executor-checkpoints.json", sc, err, sizeof err), 0);
  sc->work[0].exec.fail_phase = RT_PH_TOOL_RECEIVED;
  sc->work[0].exec.cancel_after_us = MS(2500);
  sc->work[0].exec.adapter = RT_EXEC_MEMORY;
  char *text = scn_write_string(sc);
  assert_non_null(text);
  assert_int_equal(scn_load_text("rt.json", text, strlen(text), back, err, sizeof err), 0);
  assert_memory_equal(&back->work[0].exec, &sc->work[0].exec, sizeof sc->work[0].exec);
  assert_int_equal(back->cases[2].cfg.exec_adapter, RT_EXEC_BROKEN);
  scn_result a, b;
  assert_int_equal(scn_run_case(sc, 2, sc->seed, sc->strategy, &a), 0);
  assert_int_equal(scn_run_case(back, 2, back->seed, back->strategy, &b), 0);
  assert_true(a.trace_hash == b.trace_hash);
  scn_result_free(&a);
  scn_result_free(&b);
  free(text);
  scn_free(sc);
  scn_free(back);
  free(sc);
  free(back);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lifecycle_phases),
      cmocka_unit_test(test_restore_chronological),
      cmocka_unit_test(test_timestamps_monotonic),
      cmocka_unit_test(test_retries_idempotent),
      cmocka_unit_test(test_direct_idempotency_key),
      cmocka_unit_test(test_broken_adapter_caught),
      cmocka_unit_test(test_failed_started_does_not_run),
      cmocka_unit_test(test_failed_checkpoint_aborts),
      cmocka_unit_test(test_cancel_awaits_settled),
      cmocka_unit_test(test_late_cancel_ignored),
      cmocka_unit_test(test_cancel_while_ack_pending),
      cmocka_unit_test(test_crash_restore_resume),
      cmocka_unit_test(test_restore_resumes_each_phase),
      cmocka_unit_test(test_direct_restore_order_and_cap),
      cmocka_unit_test(test_phase_registry),
      cmocka_unit_test(test_chk_monotonic),
      cmocka_unit_test(test_chk_restore_rules),
      cmocka_unit_test(test_chk_failures),
      cmocka_unit_test(test_chk_cancel),
      cmocka_unit_test(test_chk_memory_forgets),
      cmocka_unit_test(test_example_and_determinism),
      cmocka_unit_test(test_write_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
