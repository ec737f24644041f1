/*
** test_issue15.c: the rest of issue #15: agent-tool-event frames with
** per-run sequences and their replay (live, to a reconnecting client, after
** a restart), abort by the parent, runAgentTool with an existing runId, and
** the chat side: chatRecovery off, the onChatRecovery context record,
** direct continueLastTurn / saveMessages, and a cancelled turn.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt_models.h"
#include "scenarios/scn.h"

#define S(x) ((int64_t)(x) * 1000000)

static sim s;
static rt_world *w;

/* Parent 0 and child 1 (tool_chunks chunks per run). */
static void world(rt_toolrun_ids ids, int chunks) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&s, &sc), 0);
  rt_config_default(&c);
  c.toolrun_ids = ids;
  w = rt_world_new(&s, &c);
  assert_non_null(w);
  for (int i = 0; i < 2; i++) {
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, i ? "child" : "parent");
    snprintf(sp.cls, sizeof sp.cls, "Agent");
    if (i) sp.tool_chunks = chunks;
    assert_int_equal(rt_actor_add(w, &sp), (uint32_t)i);
  }
}

static void done(void) {
  rt_world_free(w);
  sim_free(&s);
}

static const char *str(uint32_t id) { return sim_trace_str(&s.trace, id); }

/* The tool-run events of the parent with replay value `replay` (-1 any)
** into seq/kinds; returns how many. */
static int events(int replay, int *seq, const char **kinds, int cap) {
  int n = 0;
  for (size_t i = 0; i < s.trace.n; i++) {
    const sim_rec *r = &s.trace.recs[i];
    if (r->kind != RT_EV_TOOLRUN_EVENT || r->actor != 0 || (replay >= 0 && r->c != replay)) continue;
    if (n < cap) {
      seq[n] = (int)r->b;
      kinds[n] = str(r->s);
    }
    n++;
  }
  return n;
}

static size_t count(uint32_t kind, uint32_t actor) {
  size_t n = 0;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == kind && s.trace.recs[i].actor == actor) n++;
  return n;
}

static const sim_rec *last(uint32_t kind, uint32_t actor) {
  const sim_rec *f = NULL;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == kind && s.trace.recs[i].actor == actor) f = &s.trace.recs[i];
  return f;
}

/* Live frames: started 0, chunks 1..3, finished 4, in order, once each. */
static void test_live_sequence(void **st) {
  int seq[16];
  const char *k[16];
  (void)st;
  world(RT_TR_IDS_FRESH, 3);
  assert_int_equal(rt_toolrun_at(w, 0, 1, S(4), S(1)), 0);
  sim_run(&s, S(60), 0);
  assert_int_equal(events(0, seq, k, 16), 5);
  for (int i = 0; i < 5; i++) assert_int_equal(seq[i], i);
  assert_string_equal(k[0], "started");
  assert_string_equal(k[2], "chunk");
  assert_string_equal(k[4], "finished");
  assert_int_equal(events(-1, seq, k, 16), 5); /* no replay without a reconnect */
  done();
}

/* A reconnecting client gets exactly the frames after its sequence. */
static void test_client_replay(void **st) {
  int seq[16];
  const char *k[16];
  (void)st;
  for (int since = -1; since <= 4; since++) {
    world(RT_TR_IDS_FRESH, 3);
    rt_toolrun_at(w, 0, 1, S(4), S(1));
    assert_int_equal(rt_toolrun_replay_at(w, 0, since, S(10)), 0);
    sim_run(&s, S(60), 0);
    int n = events(2, seq, k, 16);
    assert_int_equal(n, 4 - since); /* since+1 .. 4 */
    for (int i = 0; i < n; i++) assert_int_equal(seq[i], since + 1 + i);
    done();
  }
  world(RT_TR_IDS_FRESH, 3);
  assert_int_equal(rt_toolrun_replay_at(w, 0, -2, S(1)), -1); /* bad sequence */
  done();
}

/* After a restart the reconciliation replays the stored chunks 1..n to
** every client and finishes at n + 1; started is not re-sent. */
static void test_recovery_replay(void **st) {
  int seq[16];
  const char *k[16];
  (void)st;
  world(RT_TR_IDS_FRESH, 3);
  rt_toolrun_at(w, 0, 1, S(4), S(1));
  sim_run(&s, S(2) + 500000, 0);
  rt_kill_actor(w, 0, RT_DEATH_EVICT);
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(10));
  sim_run(&s, S(60), 0);
  assert_int_equal(events(1, seq, k, 16), 3);
  for (int i = 0; i < 3; i++) assert_int_equal(seq[i], i + 1);
  const sim_rec *fin = last(RT_EV_TOOLRUN_EVENT, 0);
  assert_int_equal(fin->b, 4);
  assert_int_equal(fin->c, 0);
  assert_string_equal(str(fin->s), "finished");
  int started = 0;
  for (int i = 0, n = events(-1, seq, k, 16); i < n; i++) started += !strcmp(k[i], "started");
  assert_int_equal(started, 1);
  done();
}

/* The workload's abort: aborted row and frame, the child cancelled (no
** chunk stored after it); a second abort changes nothing. */
static void test_abort(void **st) {
  (void)st;
  world(RT_TR_IDS_FRESH, 5);
  rt_toolrun_at(w, 0, 1, S(10), S(1));
  assert_int_equal(rt_toolrun_abort_at(w, 0, 1, S(3)), 0);
  rt_toolrun_abort_at(w, 0, 1, S(20));
  sim_run(&s, S(60), 0);
  const sim_rec *ab = last(RT_EV_TOOLRUN_ABORT, 0);
  assert_non_null(ab);
  assert_int_equal(count(RT_EV_TOOLRUN_ABORT, 0), 1);
  assert_int_equal(rt_toolrun_status_of(w, 0, ab->a), RT_TR_ABORTED);
  assert_string_equal(str(last(RT_EV_TOOLRUN_EVENT, 0)->s), "aborted");
  assert_int_equal(last(RT_EV_TOOLRUN_FINISH, 0)->b, RT_TR_ABORTED);
  for (size_t i = 0; i < s.trace.n; i++) /* the child wrote nothing after the cancel */
    assert_false(s.trace.recs[i].actor == 1 && s.trace.recs[i].kind == RT_EV_WRITE &&
                 s.trace.recs[i].t_us > S(3) + 2000);
  assert_int_equal(rt_toolrun_abort_at(w, 0, 7, S(1)), -1); /* no such child */
  done();
}

/* runAgentTool with an existing runId: no second start; @1604 replays and
** interrupts an open row, #1640 re-attaches; a terminal row is returned. */
static void test_run_id_reuse(void **st) {
  (void)st;
  for (int ids = 0; ids < 2; ids++) {
    world((rt_toolrun_ids)ids, 4);
    for (int t = 0; t < 3; t++)
      assert_int_equal(rt_toolrun_id_at(w, 0, 1, S(10), 7, t == 0 ? S(1) : t == 1 ? S(3) : S(20)), 0);
    sim_run(&s, S(60), 0);
    int starts = 0;
    for (size_t i = 0; i < s.trace.n; i++)
      starts += s.trace.recs[i].kind == RT_EV_RPC_SEND &&
                !strcmp(str(s.trace.recs[i].s), "startAgentToolRun");
    assert_int_equal(starts, 1);
    assert_int_equal(count(RT_EV_TOOLRUN_INSERT, 0), 1);
    int64_t run = 2000000000000LL + 7;
    assert_int_equal(rt_toolrun_status_of(w, 0, run), ids ? RT_TR_COMPLETED : RT_TR_INTERRUPTED);
    const sim_rec *at = last(RT_EV_TOOLRUN_ATTACH, 0);
    assert_int_equal(at->b, RT_TRA_STORED);
    done();
  }
  world(RT_TR_IDS_FRESH, 0);
  assert_int_equal(rt_toolrun_id_at(w, 0, 1, S(1), 0, S(1)), -1); /* runId must be > 0 */
  done();
}

/* chatRecovery off: the turn is no fiber and nothing is recovered. */
static void test_chat_recovery_off(void **st) {
  (void)st;
  for (int off = 0; off < 2; off++) {
    sim_config sc = {1, SIM_FIFO, 3, 1000};
    rt_config c;
    rt_actor_spec sp;
    assert_int_equal(sim_init(&s, &sc), 0);
    rt_config_default(&c);
    w = rt_world_new(&s, &c);
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, "agent");
    sp.chat.set = 1;
    sp.chat.off = off;
    rt_actor_add(w, &sp);
    rt_chat_at(w, 0, 10, 200000, S(1));
    sim_run(&s, S(2), 0);
    rt_kill_actor(w, 0, RT_DEATH_EVICT);
    rt_request_at(w, 0, RT_ENTRY_FETCH, S(30));
    sim_run(&s, S(120), 0);
    assert_int_equal(count(RT_EV_FIBER_START, 0) > 0, !off);
    assert_int_equal(count(RT_EV_CHAT_RECOVERY_CTX, 0), off ? 0 : 1);
    rt_chat_message m[4];
    assert_int_equal(rt_chat_messages(w, 0, m, 4), off ? 1 : 2);
    if (!off) { /* the context record names what the hook got */
      const sim_rec *r = last(RT_EV_CHAT_RECOVERY_CTX, 0);
      assert_int_equal(r->b, 1); /* request 1 */
      assert_int_equal(r->c, 1); /* one message */
      assert_non_null(strstr(str(r->s2), "\"lastBody\":{\"chunks\":10,\"chunkEvery\":200000}"));
      assert_non_null(strstr(str(r->s2), str(r->s)));
    }
    done();
  }
}

/* Direct calls: saveMessages queues behind the running turn; continue
** appends; without an assistant message it is skipped; cancel ends the
** running turn with its partial. */
static void test_chat_direct(void **st) {
  rt_chat_message m[8];
  (void)st;
  world(RT_TR_IDS_FRESH, 0);
  assert_int_equal(rt_chat_continue_at(w, 1, S(1)), 0); /* no message: skipped */
  rt_chat_at(w, 0, 5, 200000, S(1));
  assert_int_equal(rt_chat_save_at(w, 0, "and then?", 3, 200000, S(1) + 500000), 0);
  assert_int_equal(rt_chat_save_at(w, 0, "", 3, 200000, S(2)), -1);
  rt_chat_continue_at(w, 0, S(10));
  sim_run(&s, S(60), 0);
  assert_int_equal(last(RT_EV_CHAT_TURN, 1)->c, RT_CM_SKIPPED);
  assert_int_equal(rt_chat_messages(w, 0, m, 8), 4);
  assert_string_equal(m[2].text, "and then?");
  assert_int_equal(m[3].answers, m[2].id);
  assert_int_equal(count(RT_EV_CHAT_TURN, 0), 3); /* user, save_messages, continue */
  done();

  world(RT_TR_IDS_FRESH, 0);
  rt_chat_at(w, 0, 10, 200000, S(1));
  assert_int_equal(rt_chat_cancel_at(w, 0, S(1) + 500000), 0);
  sim_run(&s, S(60), 0);
  const sim_rec *c = last(RT_EV_CHAT_CANCEL, 0);
  assert_non_null(c);
  assert_int_equal(rt_chat_messages(w, 0, m, 8), 2);
  assert_int_equal((int64_t)strlen(m[1].text) > 0, 1);
  assert_int_equal(last(RT_EV_CHAT_STREAM, 0)->b, RT_CS_COMPLETED);
  assert_int_equal(count(RT_EV_FIBER_DONE, 0), 1);
  done();
}

/* The client's cancel with no turn running answers at once (request 0 in
** the record); a cancel while the turn still waits for its sub-agent tool
** (no model stream yet) ends the turn with no text; rt_chat_messages counts
** past its cap. */
static void test_chat_cancel_edges(void **st) {
  rt_chat_message m[1];
  (void)st;
  world(RT_TR_IDS_FRESH, 0);
  assert_int_equal(rt_chat_cancel_at(w, 0, S(1)), 0);
  rt_chat_tool_at(w, 0, 5, 200000, 1, S(5), S(2));
  assert_int_equal(rt_chat_cancel_at(w, 0, S(3)), 0);
  rt_chat_at(w, 0, 2, 100000, S(30)); /* a later turn runs as usual */
  sim_run(&s, S(60), 0);
  const sim_rec *c0 = NULL, *c1 = NULL;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == RT_EV_CHAT_CANCEL) {
      if (!c0)
        c0 = &s.trace.recs[i];
      else
        c1 = &s.trace.recs[i];
    }
  assert_non_null(c0);
  assert_int_equal(c0->a, 0); /* no turn ran */
  assert_int_equal(c0->t_us, S(1));
  assert_non_null(c1);
  assert_true(c1->a > 0);
  assert_int_equal(c1->b, 0); /* no text chunk had arrived */
  assert_int_equal(count(RT_EV_REQUEST_FAIL, 0), 0);
  for (size_t i = 0; i < s.trace.n; i++) /* the cancelled turn's model never streamed */
    assert_false(s.trace.recs[i].kind == RT_EV_CHAT_UPSTREAM && s.trace.recs[i].t_us < S(30));
  assert_int_equal(rt_chat_messages(w, 0, m, 1), 3); /* two users, one answer */
  assert_int_equal(m[0].role, 1);
  done();
}

/* The chat calls of rt_sdk.h from C-coded user code: a request handler
** calls saveMessages(["hello"]) and then continueLastTurn(); both go
** through the turn queue: "hello" is answered by a save_messages turn, and
** the continue turn after it appends to that answer. */
static int64_t saved_req;
static int continued;
static rt_uc_status chat_on_request(void *st, rt_sdk_actor *self, const char *method,
                                    const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st, (void)method, (void)args, (void)fr;
  saved_req = rt_sdk_save_messages(self, "hello");
  continued = rt_sdk_continue_last_turn(self);
  return out->status = RT_UC_DONE;
}

static const rt_usercode chat_caller = {.name = "chat_caller", .on_request = chat_on_request};

static void test_sdk_chat_calls(void **st) {
  rt_chat_message m[8];
  (void)st;
  world(RT_TR_IDS_FRESH, 0);
  assert_int_equal(rt__usercode_set(w, 0, &chat_caller), 0);
  saved_req = continued = -5;
  rt_chat_at(w, 0, 2, 100000, S(1)); /* lastBody: 2 chunks */
  assert_int_equal(rt_request_at(w, 0, RT_ENTRY_FETCH, S(10)), 0);
  sim_run(&s, S(60), 0);
  assert_true(saved_req > 0);
  assert_int_equal(continued, 1);
  size_t modes[8] = {0};
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == RT_EV_CHAT_TURN && s.trace.recs[i].c < 8) modes[s.trace.recs[i].c]++;
  assert_int_equal(modes[RT_CM_USER], 1);
  assert_int_equal(modes[RT_CM_SAVE], 1);
  assert_int_equal(modes[RT_CM_CONTINUE], 1);
  assert_int_equal(rt_chat_messages(w, 0, m, 8), 4);
  assert_string_equal(m[2].text, "hello");
  assert_int_equal(m[3].answers, m[2].id);
  done();
}

/* The parent dies inside the commit window of the turn that sent a start:
** its row rolls back, but the child already started run 7. The parent
** starts run 7 again (stable ids); the child, whose run exists, answers
** ok without a second start: the child's run row is written once at its
** start and once at its end. */
static void kill_parent_cb(sim *sm, void *ctx, uint64_t arg) {
  (void)sm;
  rt_kill_actor(ctx, (uint32_t)arg, RT_DEATH_CRASH);
}

static void test_second_start_after_parent_rollback(void **st) {
  (void)st;
  world(RT_TR_IDS_STABLE, 2);
  assert_int_equal(rt_toolrun_id_at(w, 0, 1, S(2), 7, S(1)), 0);
  sim_at(&s, S(1) + 1500, 0, kill_parent_cb, w, 0);
  assert_int_equal(rt_toolrun_id_at(w, 0, 1, S(2), 7, S(10)), 0);
  sim_run(&s, S(60), 0);
  int starts = 0;
  for (size_t i = 0; i < s.trace.n; i++)
    starts += s.trace.recs[i].kind == RT_EV_RPC_SEND &&
              !strcmp(str(s.trace.recs[i].s), "startAgentToolRun");
  assert_int_equal(starts, 2);
  int child_rows = 0; /* the child's run row: written at its start and its end, once */
  for (size_t i = 0; i < s.trace.n; i++)
    child_rows += s.trace.recs[i].kind == RT_EV_WRITE && s.trace.recs[i].actor == 1 &&
                  !strcmp(str(s.trace.recs[i].s), "rv_child_runs");
  assert_int_equal(child_rows, 2);
  const sim_rec *rep = last(RT_EV_RPC_REPLY, 0); /* the second start is answered ok */
  assert_non_null(rep);
  assert_true(rep->t_us > S(10));
  assert_int_equal(rep->b, 1);
  done();
}

/* onChatRecovery that throws: the SDK goes on with its defaults (persist
** the partial, continue the turn), as if the hook had returned {}. A hook
** returning {persist: false, continue: false} is obeyed, which is how the
** test can tell the defaults were applied. */
static int rec_calls, rec_throw;
static rt_uc_status rec_hook(void *st, rt_sdk_actor *self, const rt_uc_chat_ctx *ctx,
                             rt_uc_chat_opts *opts) {
  (void)st, (void)self, (void)ctx;
  rec_calls++;
  opts->persist = opts->cont = 0;
  return rec_throw ? RT_UC_THREW : RT_UC_DONE;
}

static const rt_usercode rec_uc = {.name = "rec", .on_chat_recovery = rec_hook};

static void crash_all_cb(sim *sm, void *ctx, uint64_t arg) {
  (void)sm;
  rt_kill_all(ctx, (rt_death_cause)arg);
}

static void test_throwing_chat_recovery(void **st) {
  (void)st;
  for (rec_throw = 0; rec_throw < 2; rec_throw++) {
    rt_chat_recovery_info ri;
    world(RT_TR_IDS_FRESH, 0);
    assert_int_equal(rt__usercode_set(w, 0, &rec_uc), 0);
    rec_calls = 0;
    rt_chat_at(w, 0, 10, 200000, S(1));
    sim_at(&s, S(2), 0, crash_all_cb, w, RT_DEATH_CRASH);
    rt_request_at(w, 0, RT_ENTRY_FETCH, S(5));
    sim_run(&s, S(60), 0);
    assert_int_equal(rec_calls, 1);
    assert_int_equal(rt_chat_last_recovery(w, 0, &ri), 0);
    assert_int_equal(ri.persist, rec_throw);
    assert_int_equal(ri.cont, rec_throw);
    assert_string_equal(ri.arm, rec_throw ? "continue" : "none");
    done();
  }
}

/* Same seed, same trace hash, for a world using every feature here. */
static uint64_t everything(void) {
  world(RT_TR_IDS_FRESH, 3);
  rt_toolrun_at(w, 0, 1, S(4), S(1));
  rt_toolrun_id_at(w, 0, 1, S(10), 3, S(2));
  rt_toolrun_id_at(w, 0, 1, S(10), 3, S(3));
  rt_toolrun_replay_at(w, 0, 1, S(4));
  rt_toolrun_abort_at(w, 0, 1, S(6));
  rt_chat_at(w, 0, 10, 200000, S(20));
  rt_chat_save_at(w, 0, "x", 2, 100000, S(20) + 100000);
  rt_chat_cancel_at(w, 0, S(20) + 900000);
  rt_chat_continue_at(w, 0, S(30));
  sim_run(&s, S(25), 0);
  rt_kill_actor(w, 0, RT_DEATH_EVICT);
  sim_run(&s, S(200), 0);
  uint64_t h = s.trace.hash;
  done();
  return h;
}

static void test_deterministic(void **st) {
  (void)st;
  uint64_t a = everything(), b = everything();
  assert_true(a == b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_live_sequence),   cmocka_unit_test(test_client_replay),
      cmocka_unit_test(test_recovery_replay), cmocka_unit_test(test_abort),
      cmocka_unit_test(test_run_id_reuse),    cmocka_unit_test(test_chat_recovery_off),
      cmocka_unit_test(test_chat_direct),     cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_chat_cancel_edges),
      cmocka_unit_test(test_sdk_chat_calls),
      cmocka_unit_test(test_second_start_after_parent_rollback),
      cmocka_unit_test(test_throwing_chat_recovery),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
