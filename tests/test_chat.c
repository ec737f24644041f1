/*
** test_chat.c: durable chat turns (runtime/rt_chat.c; seed 000 Layer 3,
** seed 001 "Layer 3: LLM recovery", reference A.7 step 4 and A.12) and the
** chat invariants (checks/chk_chat.c). Each rule of the issue gets a world
** that shows it; each invariant fires on a deliberately broken variant and
** stays quiet on the correct one; two runs of one seed give one trace hash.
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
#include "faults/flt.h"
#include "runtime/rt.h"
#include "scenarios/scn.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

typedef struct fx {
  sim s;
  rt_world *w;
  chk_set *c;
  rt_chat_message msgs[16];
  int n_msgs;
} fx;

static fx F;

/* A world with one chat actor (policy p, config bug) and the checkers. */
static void fx_init(uint64_t seed, rt_chat_policy p, rt_chat_bug bug) {
  sim_config sc = {seed, SIM_FIFO, 3, 1000};
  rt_config cfg;
  rt_actor_spec sp;
  memset(&F, 0, sizeof F);
  assert_int_equal(sim_init(&F.s, &sc), 0);
  rt_config_default(&cfg);
  cfg.chat_bug = bug;
  F.w = rt_world_new(&F.s, &cfg);
  assert_non_null(F.w);
  F.c = chk_new(&F.s.trace, NULL);
  assert_non_null(F.c);
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "chat");
  snprintf(sp.cls, sizeof sp.cls, "ChatAgent");
  sp.chat = p;
  assert_int_equal(rt_actor_add(F.w, &sp), 0);
}

static rt_chat_policy pol(rt_chat_provider prov, int persist, int cont) {
  rt_chat_policy p = {1, prov, !persist, !cont, 0};
  return p;
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_all(ctx, (rt_death_cause)arg);
}

static void cut_cb(sim *s, void *ctx, uint64_t arg) {
  static flt_fault cut = {FLT_STREAM_CUT, 0, 0, 0, 0, 0, RT_STUCK_NONE, 0, 0, 0};
  (void)s;
  cut.actor = (uint32_t)arg;
  flt_apply(ctx, &cut);
}

static void evict_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_actor(ctx, (uint32_t)arg, RT_DEATH_EVICT);
}

static void crash_at(int64_t t) { sim_at(&F.s, t, 0, crash_cb, F.w, RT_DEATH_CRASH); }

/* Runs to t; the checks end at t even if the world went quiet earlier. */
static void run_to(int64_t t) {
  sim_run(&F.s, t, 0);
  chk_finish(F.c, t > F.s.now_us ? t : F.s.now_us);
  F.n_msgs = rt_chat_messages(F.w, 0, F.msgs, 16);
}

static void fx_free(void) {
  chk_free(F.c);
  rt_world_free(F.w);
  sim_free(&F.s);
  flt_reset();
  memset(&F, 0, sizeof F);
}

static size_t count_kind(uint32_t kind) {
  size_t n = 0;
  for (size_t i = 0; i < F.s.trace.n; i++) n += F.s.trace.recs[i].kind == kind;
  return n;
}

static const sim_rec *find_kind(uint32_t kind, size_t nth) {
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == kind && nth-- == 0) return &F.s.trace.recs[i];
  return NULL;
}

static const char *str(uint32_t id) { return sim_trace_str(&F.s.trace, id); }

static int violated(chk_invariant inv) {
  for (size_t i = 0; i < chk_violation_count(F.c); i++)
    if (chk_violation_at(F.c, i)->inv == inv) return 1;
  return 0;
}

static int any_chat_violation(void) {
  return violated(CHK_CHAT_NO_LOST_USER_MESSAGE) || violated(CHK_CHAT_NO_DUPLICATE_ASSISTANT) ||
         violated(CHK_CHAT_CONTINUATION_APPENDS) || violated(CHK_CHAT_NO_REGENERATION);
}

static int tokens(const char *t) {
  int n = 0;
  for (; *t; t++) n += *t == ' ';
  return n;
}

/* The one assistant message (asserts there is exactly one). */
static const rt_chat_message *only_assistant(void) {
  const rt_chat_message *m = NULL;
  for (int i = 0; i < F.n_msgs; i++) {
    if (F.msgs[i].role != 2) continue;
    assert_null(m);
    m = &F.msgs[i];
  }
  assert_non_null(m);
  return m;
}

/* ---- turns ------------------------------------------------------------------ */

/* The turn is fiber __cf_internal_chat_turn:<requestId>; chunks are
** persisted one by one as they arrive, before the message is. */
static void test_turn_is_a_fiber_and_chunks_persist(void **st) {
  (void)st;
  fx_init(1, pol(RT_CHAT_INLINE, 1, 1), RT_CHAT_BUG_NONE);
  assert_int_equal(rt_chat_at(F.w, 0, 5, MS(200), S(1)), 0);
  sim_run(&F.s, MS(1500), 0);
  size_t mid = count_kind(RT_EV_CHAT_CHUNK);
  assert_true(mid >= 2 && mid < 6); /* start chunk + some deltas */
  assert_int_equal(count_kind(RT_EV_CHAT_ASSISTANT), 0);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 1);
  run_to(S(10));
  const sim_rec *turn = find_kind(RT_EV_CHAT_TURN, 0), *fs = find_kind(RT_EV_FIBER_START, 0);
  char name[64];
  snprintf(name, sizeof name, "__cf_internal_chat_turn:%lld", (long long)turn->a);
  assert_string_equal(str(fs->s), name);
  assert_int_equal(count_kind(RT_EV_CHAT_CHUNK), 6);
  assert_int_equal(find_kind(RT_EV_CHAT_STREAM, 1)->b, RT_CS_COMPLETED);
  assert_int_equal(tokens(only_assistant()->text), 5);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 0);
  assert_int_equal(count_kind(RT_EV_REQUEST_OK), 1);
  assert_false(any_chat_violation());
  fx_free();
}

/* A 1 us chunk interval (half of it rounds to 0): every gap is drawn as
** 1 us, so the five text chunks land 1 us apart and the turn completes. */
static void test_microsecond_chunks(void **st) {
  (void)st;
  fx_init(3, pol(RT_CHAT_INLINE, 1, 1), RT_CHAT_BUG_NONE);
  assert_int_equal(rt_chat_at(F.w, 0, 5, 1, S(1)), 0);
  run_to(S(10));
  int64_t prev = -1;
  int gaps = 0;
  for (size_t i = 0; i < F.s.trace.n; i++) {
    const sim_rec *r = &F.s.trace.recs[i];
    if (r->kind != RT_EV_CHAT_CHUNK || r->b == 0) continue; /* text chunks */
    if (prev >= 0) {
      assert_int_equal(r->t_us - prev, 1);
      gaps++;
    }
    prev = r->t_us;
  }
  assert_int_equal(gaps, 4);
  assert_int_equal(tokens(only_assistant()->text), 5);
  assert_false(any_chat_violation());
  fx_free();
}

/* Turns run one at a time: a second message waits for the first. */
static void test_turn_queue(void **st) {
  (void)st;
  fx_init(2, pol(RT_CHAT_INLINE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 4, MS(100), S(1));
  rt_chat_at(F.w, 0, 4, MS(100), S(1));
  run_to(S(10));
  assert_int_equal(F.n_msgs, 4);
  assert_int_equal(F.msgs[0].role, 1);
  assert_int_equal(F.msgs[1].role, 2);
  assert_int_equal(F.msgs[1].answers, F.msgs[0].id);
  assert_int_equal(F.msgs[3].answers, F.msgs[2].id);
  assert_true(find_kind(RT_EV_CHAT_TURN, 1)->t_us >= find_kind(RT_EV_FIBER_DONE, 0)->t_us);
  assert_int_equal(count_kind(RT_EV_REQUEST_OK), 2);
  assert_false(any_chat_violation());
  fx_free();
}

/* ---- recovery: the context and the options ---------------------------------- */

/* onChatRecovery gets the stream, the partial text and parts rebuilt from
** the stored chunks, the messages, and lastBody / lastClientTools restored
** from cf_ai_chat_request_context after the crash. */
static void test_recovery_context(void **st) {
  (void)st;
  rt_chat_recovery_info in;
  fx_init(3, pol(RT_CHAT_INLINE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 10, MS(200), S(1));
  crash_at(S(2));
  run_to(S(60));
  assert_int_equal(rt_chat_last_recovery(F.w, 0, &in), 0);
  assert_int_equal(in.request_id, find_kind(RT_EV_CHAT_TURN, 0)->a);
  assert_int_equal(in.stream_id, find_kind(RT_EV_CHAT_STREAM, 0)->a);
  assert_int_equal(in.created_at_ms, 1000);
  assert_true(tokens(in.partial_text) > 0 && tokens(in.partial_text) < 10);
  assert_int_equal(in.partial_parts, 1);
  assert_int_equal(in.recovery_data, 0); /* nothing stashed by the user */
  assert_int_equal(in.n_messages, 1);
  assert_string_equal(in.last_body, "{\"chunks\":10,\"chunkEvery\":200000}");
  assert_string_equal(in.last_client_tools, "[]");
  assert_string_equal(in.arm, "continue");
  fx_free();
}

/* {}: the partial is persisted and continueLastTurn appends the rest to it. */
static void test_default_persists_and_continues(void **st) {
  (void)st;
  rt_chat_recovery_info in;
  fx_init(4, pol(RT_CHAT_INLINE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 10, MS(200), S(1));
  crash_at(S(2));
  run_to(S(60));
  rt_chat_last_recovery(F.w, 0, &in);
  const rt_chat_message *a = only_assistant();
  assert_int_equal(tokens(a->text), 10);
  assert_memory_equal(a->text, in.partial_text, strlen(in.partial_text)); /* appended */
  assert_string_equal(str(find_kind(RT_EV_CHAT_RECOVERY, 0)->s), "{}");
  assert_int_equal(find_kind(RT_EV_CHAT_TURN, 1)->c, RT_CM_CONTINUE);
  assert_int_equal(find_kind(RT_EV_FIBER_RECOVERED, 0)->c, RT_RECOVER_RESUME);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 0);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* {continue: false}: the partial is persisted, nothing continues. */
static void test_continue_false(void **st) {
  (void)st;
  fx_init(5, pol(RT_CHAT_INLINE, 1, 0), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 10, MS(200), S(1));
  crash_at(S(2));
  run_to(S(60));
  assert_true(tokens(only_assistant()->text) < 10);
  assert_int_equal(count_kind(RT_EV_CHAT_RESUME), 0);
  assert_string_equal(str(find_kind(RT_EV_CHAT_RECOVERY, 0)->s2), "none");
  assert_int_equal(find_kind(RT_EV_FIBER_RECOVERED, 0)->c, RT_RECOVER_DROP);
  assert_false(any_chat_violation());
  fx_free();
}

/* {persist: false, continue: false}: the developer handles everything; the
** stream is still completed. */
static void test_persist_false_continue_false(void **st) {
  (void)st;
  fx_init(6, pol(RT_CHAT_INLINE, 0, 0), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 10, MS(200), S(1));
  crash_at(S(2));
  run_to(S(60));
  assert_int_equal(F.n_msgs, 1);
  assert_int_equal(find_kind(RT_EV_CHAT_STREAM, 1)->b, RT_CS_COMPLETED);
  assert_string_equal(str(find_kind(RT_EV_CHAT_RECOVERY, 0)->s),
                      "{persist:false,continue:false}");
  assert_false(any_chat_violation()); /* an explicit give-up */
  fx_free();
}

/* A turn interrupted before any chunk is retried (_chatRecoveryRetry). */
static void test_pre_stream_turn_is_retried(void **st) {
  (void)st;
  fx_init(7, pol(RT_CHAT_INLINE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 6, MS(200), S(1));
  crash_at(MS(1050));
  run_to(S(60));
  assert_string_equal(str(find_kind(RT_EV_CHAT_RECOVERY, 0)->s2), "retry");
  assert_string_equal(str(find_kind(RT_EV_CHAT_RESUME, 0)->s), "_chatRecoveryRetry");
  assert_int_equal(find_kind(RT_EV_CHAT_TURN, 1)->c, RT_CM_RETRY);
  const rt_chat_message *a = only_assistant();
  assert_int_equal(a->answers, F.msgs[0].id);
  assert_int_equal(tokens(a->text), 6);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* continueLastTurn with no assistant message returns skipped ({persist:
** false} leaves nothing to append to). The user message stays unanswered,
** but the developer took it over (options other than {}), so it is not
** counted as lost. */
static void test_continue_skipped_without_assistant(void **st) {
  (void)st;
  fx_init(8, pol(RT_CHAT_INLINE, 0, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 10, MS(200), S(1));
  crash_at(S(2));
  run_to(S(20 * 60));
  const sim_rec *t = find_kind(RT_EV_CHAT_TURN, 1);
  assert_non_null(t);
  assert_int_equal(t->c, RT_CM_SKIPPED);
  assert_int_equal(F.n_msgs, 1);
  assert_false(violated(CHK_CHAT_NO_LOST_USER_MESSAGE));
  fx_free();
}

/* Evictions and code-update restarts interrupt turns like crashes do. */
static void test_evict_and_restart_interrupt(void **st) {
  (void)st;
  for (int restart = 0; restart < 2; restart++) {
    fx_init(18, pol(RT_CHAT_INLINE, 1, 1), RT_CHAT_BUG_NONE);
    rt_chat_at(F.w, 0, 10, MS(200), S(1));
    if (restart)
      sim_at(&F.s, S(2), 0, crash_cb, F.w, RT_DEATH_RESTART);
    else
      sim_at(&F.s, S(2), 0, evict_cb, F.w, 0);
    run_to(S(60));
    assert_int_equal(count_kind(RT_EV_CHAT_RECOVERY), 1);
    assert_int_equal(tokens(only_assistant()->text), 10);
    assert_int_equal(chk_violation_count(F.c), 0);
    fx_free();
  }
}

/* waitUntilStable: the retry finds a new user turn running (the request
** that woke the actor), waits for it, then answers the interrupted one. */
static void test_retry_waits_for_stable(void **st) {
  (void)st;
  fx_init(19, pol(RT_CHAT_INLINE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 6, MS(200), S(1));
  crash_at(MS(1050));
  rt_chat_at(F.w, 0, 6, MS(200), S(5)); /* wakes the actor: recovery, then this turn */
  run_to(S(60));
  const sim_rec *resume = find_kind(RT_EV_CHAT_RESUME, 0), *done = find_kind(RT_EV_FIBER_DONE, 0);
  assert_non_null(resume);
  assert_true(resume->a != 0);
  assert_true(resume->t_us >= done->t_us); /* after the running turn */
  assert_int_equal(F.n_msgs, 4);
  int answered = 0;
  for (int i = 0; i < F.n_msgs; i++) answered += F.msgs[i].answers == F.msgs[0].id;
  assert_int_equal(answered, 1);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* ---- provider strategies ----------------------------------------------------- */

/* OpenAI store:true: the generation completes on the provider after the
** cut and is retrieved by the stashed id; nothing is generated again. */
static void test_provider_retrieve(void **st) {
  (void)st;
  rt_chat_recovery_info in;
  fx_init(9, pol(RT_CHAT_RETRIEVE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 10, MS(200), S(1));
  crash_at(S(2));
  run_to(S(60));
  const sim_rec *up = find_kind(RT_EV_CHAT_UPSTREAM, 0);
  rt_chat_last_recovery(F.w, 0, &in);
  assert_int_equal(in.recovery_data, up->a); /* the stashed responseId */
  assert_string_equal(in.arm, "retrieved");
  assert_int_equal(find_kind(RT_EV_FIBER_RECOVERED, 0)->b, up->a);
  assert_int_equal(find_kind(RT_EV_CHAT_UPSTREAM, 1)->b, RT_UP_SEVERED);
  assert_int_equal(find_kind(RT_EV_CHAT_UPSTREAM, 2)->b, RT_UP_COMPLETED);
  assert_int_equal(find_kind(RT_EV_CHAT_UPSTREAM, 3)->b, RT_UP_RETRIEVED);
  assert_int_equal(tokens(only_assistant()->text), 10);
  size_t starts = 0;
  for (size_t i = 0; i < F.s.trace.n; i++)
    starts += F.s.trace.recs[i].kind == RT_EV_CHAT_UPSTREAM && F.s.trace.recs[i].b == RT_UP_START;
  assert_int_equal(starts, 1);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* Still generating when the actor wakes: fall back to the options ({}). */
static void test_provider_retrieve_in_progress_falls_back(void **st) {
  (void)st;
  rt_chat_recovery_info in;
  fx_init(10, pol(RT_CHAT_RETRIEVE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 20, MS(200), S(1));
  crash_at(S(2));
  rt_chat_at(F.w, 0, 3, MS(100), MS(2100)); /* wakes the actor mid-generation */
  run_to(S(60));
  rt_chat_last_recovery(F.w, 0, &in);
  assert_string_equal(in.arm, "continue");
  assert_int_equal(count_kind(RT_EV_CHAT_RESUME), 1);
  assert_false(any_chat_violation());
  fx_free();
}

/* Anthropic: the partial is persisted and a synthetic "continue" user
** message gets a new assistant message. */
static void test_provider_synthetic_continue(void **st) {
  (void)st;
  fx_init(11, pol(RT_CHAT_SYNTHETIC, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 10, MS(200), S(1));
  crash_at(S(2));
  run_to(S(60));
  assert_int_equal(F.n_msgs, 4);
  assert_int_equal(F.msgs[2].role, 1);
  assert_non_null(strstr(F.msgs[2].text, "Continue where you left off"));
  assert_int_equal(F.msgs[3].answers, F.msgs[2].id);
  assert_int_equal(tokens(F.msgs[1].text) + tokens(F.msgs[3].text), 10);
  assert_string_equal(str(find_kind(RT_EV_CHAT_RECOVERY, 0)->s), "{continue:false}");
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* ---- stream_cut ----------------------------------------------------------------- */

/* A cut while the actor lives: the stream errors, the partial is persisted,
** the turn ends (no recovery); a store:true generation keeps going. */
static void test_stream_cut_fault(void **st) {
  (void)st;
  fx_init(12, pol(RT_CHAT_RETRIEVE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 10, MS(200), S(1));
  sim_at(&F.s, S(2), 0, cut_cb, F.w, 0);
  run_to(S(60));
  assert_int_equal(find_kind(RT_EV_CHAT_STREAM, 1)->b, RT_CS_ERROR);
  assert_true(tokens(only_assistant()->text) < 10);
  assert_int_equal(count_kind(RT_EV_CHAT_RECOVERY), 0);
  assert_int_equal(find_kind(RT_EV_CHAT_UPSTREAM, 1)->b, RT_UP_SEVERED);
  assert_int_equal(find_kind(RT_EV_CHAT_UPSTREAM, 2)->b, RT_UP_COMPLETED);
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 0);
  assert_false(any_chat_violation());
  fx_free();
}

/* ---- invariants: broken variants fire, the correct runtime is quiet ------------- */

/* An acknowledged user message rolled back (the reply did not wait for the
** commit): a crash 1 ms into the 2 ms commit window. */
static void test_lost_user_message(void **st) {
  (void)st;
  for (int bug = 0; bug < 2; bug++) {
    fx_init(13, pol(RT_CHAT_INLINE, 1, 1), bug ? RT_CHAT_BUG_EARLY_ACK : RT_CHAT_BUG_NONE);
    rt_chat_at(F.w, 0, 5, MS(200), S(1));
    crash_at(S(1) + MS(1));
    run_to(S(60));
    assert_int_equal(violated(CHK_CHAT_NO_LOST_USER_MESSAGE), bug);
    assert_int_equal(count_kind(RT_EV_REQUEST_OK), bug); /* correct: the request fails */
    fx_free();
  }
}

/* A recovery that re-sends the user message answers it twice. */
static void test_duplicate_assistant(void **st) {
  (void)st;
  for (int bug = 0; bug < 2; bug++) {
    fx_init(14, pol(RT_CHAT_INLINE, 1, 1), bug ? RT_CHAT_BUG_RESEND_USER : RT_CHAT_BUG_NONE);
    rt_chat_at(F.w, 0, 10, MS(200), S(1));
    crash_at(S(2));
    run_to(S(60));
    assert_int_equal(violated(CHK_CHAT_NO_DUPLICATE_ASSISTANT), bug);
    assert_false(violated(CHK_CHAT_CONTINUATION_APPENDS));
    fx_free();
  }
}

/* continueLastTurn writing a new message instead of appending. */
static void test_continuation_new_message(void **st) {
  (void)st;
  for (int bug = 0; bug < 2; bug++) {
    fx_init(15, pol(RT_CHAT_INLINE, 1, 1), bug ? RT_CHAT_BUG_NEW_MESSAGE : RT_CHAT_BUG_NONE);
    rt_chat_at(F.w, 0, 10, MS(200), S(1));
    crash_at(S(2));
    run_to(S(60));
    assert_int_equal(violated(CHK_CHAT_CONTINUATION_APPENDS), bug);
    fx_free();
  }
}

/* Without the retry arm, a pre-stream interruption "continues" the previous
** turn's message, and the new user message is never answered. */
static void test_no_retry_arm(void **st) {
  (void)st;
  for (int bug = 0; bug < 2; bug++) {
    fx_init(16, pol(RT_CHAT_INLINE, 1, 1), bug ? RT_CHAT_BUG_NO_RETRY : RT_CHAT_BUG_NONE);
    rt_chat_at(F.w, 0, 4, MS(100), S(1));
    rt_chat_at(F.w, 0, 4, MS(100), S(10));
    crash_at(S(10) + MS(20));
    run_to(S(20 * 60));
    assert_int_equal(violated(CHK_CHAT_CONTINUATION_APPENDS), bug);
    assert_int_equal(violated(CHK_CHAT_NO_LOST_USER_MESSAGE), bug);
    fx_free();
  }
}

/* Regenerating although the completed stored response could be retrieved. */
static void test_regeneration(void **st) {
  (void)st;
  for (int bug = 0; bug < 2; bug++) {
    fx_init(17, pol(RT_CHAT_RETRIEVE, 1, 1), bug ? RT_CHAT_BUG_REGENERATE : RT_CHAT_BUG_NONE);
    rt_chat_at(F.w, 0, 10, MS(200), S(1));
    crash_at(S(2));
    run_to(S(60));
    assert_int_equal(violated(CHK_CHAT_NO_REGENERATION), bug);
    assert_false(violated(CHK_CHAT_NO_DUPLICATE_ASSISTANT));
    fx_free();
  }
}

/* ---- crafted traces: the checker rules no runtime variant reaches ----------- */

typedef struct tr {
  sim_trace t;
  chk_set *c;
} tr;

static void rec(tr *x, int64_t t, uint32_t kind, int64_t a, int64_t b, int64_t c, const char *s,
                const char *s2) {
  sim_rec r;
  memset(&r, 0, sizeof r);
  r.t_us = t;
  r.kind = kind;
  r.actor = 0;
  r.a = a;
  r.b = b;
  r.c = c;
  r.s = s ? sim_trace_intern(&x->t, s) : 0;
  r.s2 = s2 ? sim_trace_intern(&x->t, s2) : 0;
  sim_trace_append(&x->t, &r);
}

/* Message 6 written twice in one txn: the second write holds "r7.0" twice,
** or (replace) drops the committed text of a continuation. */
static void crafted(int variant) {
  tr x;
  const char *q = "message of request 1";
  assert_int_equal(sim_trace_init(&x.t), 0);
  x.c = chk_new(&x.t, NULL);
  rec(&x, 1, RT_EV_CHAT_USER, 3, 1, 100, q, NULL);
  rec(&x, 1, RT_EV_CHAT_TURN, 1, 6, RT_CM_USER, q, NULL);
  rec(&x, 2, RT_EV_TXN_COMMIT, 100, 1, 0, NULL, NULL);
  rec(&x, 3, RT_EV_CHAT_ASSISTANT, 6, 1, 101, "r7.0 r7.1 ", q);
  rec(&x, 4, RT_EV_TXN_COMMIT, 101, 1, 0, NULL, NULL);
  rec(&x, 5, RT_EV_CHAT_RESUME, 9, 1, 8, "_chatRecoveryContinue", NULL);
  rec(&x, 5, RT_EV_CHAT_TURN, 9, 6, RT_CM_CONTINUE, q, NULL);
  rec(&x, 6, RT_EV_CHAT_ASSISTANT, 6, 9, 102,
      variant == 0 ? "r7.0 r7.1 r10.0 " : variant == 1 ? "r7.0 r7.1 r7.0 " : "r10.0 ", q);
  rec(&x, 7, RT_EV_TXN_COMMIT, 102, 1, 0, NULL, NULL);
  chk_finish(x.c, 8);
  int dup = 0, app = 0;
  for (size_t i = 0; i < chk_violation_count(x.c); i++) {
    dup += chk_violation_at(x.c, i)->inv == CHK_CHAT_NO_DUPLICATE_ASSISTANT;
    app += chk_violation_at(x.c, i)->inv == CHK_CHAT_CONTINUATION_APPENDS;
    assert_true(chk_violation_at(x.c, i)->n_chain > 0);
  }
  assert_int_equal(dup, variant == 1);
  assert_int_equal(app, variant == 2);
  chk_free(x.c);
  sim_trace_free(&x.t);
}

static void test_crafted_doubled_and_replaced(void **st) {
  (void)st;
  crafted(0);
  crafted(1);
  crafted(2);
}

/* ---- names -------------------------------------------------------------------- */

static void test_names(void **st) {
  (void)st;
  assert_string_equal(rt_event_name(RT_EV_CHAT_TURN), "chat_turn");
  assert_string_equal(rt_event_name(RT_EV_CHAT_RECOVERY), "chat_recovery");
  assert_string_equal(rt_chat_mode_name(RT_CM_CONTINUE), "continue");
  assert_string_equal(rt_chat_provider_name(RT_CHAT_SYNTHETIC), "synthetic_continue");
  assert_string_equal(rt_chat_bug_name(RT_CHAT_BUG_NO_RETRY), "no_retry");
  assert_string_equal(rt_chat_stream_status_name(RT_CS_ERROR), "error");
  assert_string_equal(rt_chat_upstream_phase_name(RT_UP_RETRIEVED), "retrieved");
  assert_string_equal(rt_chat_mode_name(9), "?");
  assert_int_equal(chk_invariant_parse("chat_no_lost_user_message"), CHK_CHAT_NO_LOST_USER_MESSAGE);
  assert_int_equal(chk_invariant_parse("chat_no_regeneration"), CHK_CHAT_NO_REGENERATION);
  assert_string_equal(chk_invariant_name(CHK_CHAT_CONTINUATION_APPENDS),
                      "chat_continuation_appends");
  assert_string_equal(flt_kind_name(FLT_STREAM_CUT), "stream_cut");
}

/* ---- determinism and the example scenario -------------------------------------- */

static uint64_t run_hash(uint64_t seed) {
  fx_init(seed, pol(RT_CHAT_RETRIEVE, 1, 1), RT_CHAT_BUG_NONE);
  rt_chat_at(F.w, 0, 20, MS(150), S(1));
  rt_chat_at(F.w, 0, 20, MS(150), S(2));
  crash_at(S(3));
  sim_at(&F.s, S(40), 0, cut_cb, F.w, 0);
  rt_chat_at(F.w, 0, 30, MS(100), S(38));
  run_to(S(120));
  uint64_t h = F.s.trace.hash;
  fx_free();
  return h;
}

static void test_determinism(void **st) {
  (void)st;
  assert_true(run_hash(21) == run_hash(21));
  assert_true(run_hash(21) != run_hash(22)); /* spacing comes from runtime.chat */
}

/* Every case of the example meets its expectation, twice with one hash. */
static void test_example_scenario(void **st) {
  scn_scenario sc;
  char err[512];
  (void)st;
  assert_int_equal(scn_load("scenarios/examples/chat-recovery.json", &sc, err, sizeof err), 0);
  assert_true(sc.n_cases >= 6);
  for (int ci = 0; ci < sc.n_cases; ci++) {
    scn_result r1, r2;
    assert_int_equal(scn_run_case(&sc, ci, sc.seed, sc.strategy, &r1), 0);
    assert_int_equal(scn_run_case(&sc, ci, sc.seed, sc.strategy, &r2), 0);
    if (!r1.passed) fprintf(stderr, "case %s: %s\n", sc.cases[ci].label, r1.failure);
    assert_true(r1.passed);
    assert_true(r1.trace_hash == r2.trace_hash);
    scn_result_free(&r1);
    scn_result_free(&r2);
  }
  scn_free(&sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_turn_is_a_fiber_and_chunks_persist),
      cmocka_unit_test(test_turn_queue),
      cmocka_unit_test(test_microsecond_chunks),
      cmocka_unit_test(test_recovery_context),
      cmocka_unit_test(test_default_persists_and_continues),
      cmocka_unit_test(test_continue_false),
      cmocka_unit_test(test_persist_false_continue_false),
      cmocka_unit_test(test_pre_stream_turn_is_retried),
      cmocka_unit_test(test_continue_skipped_without_assistant),
      cmocka_unit_test(test_evict_and_restart_interrupt),
      cmocka_unit_test(test_retry_waits_for_stable),
      cmocka_unit_test(test_provider_retrieve),
      cmocka_unit_test(test_provider_retrieve_in_progress_falls_back),
      cmocka_unit_test(test_provider_synthetic_continue),
      cmocka_unit_test(test_stream_cut_fault),
      cmocka_unit_test(test_lost_user_message),
      cmocka_unit_test(test_duplicate_assistant),
      cmocka_unit_test(test_continuation_new_message),
      cmocka_unit_test(test_no_retry_arm),
      cmocka_unit_test(test_regeneration),
      cmocka_unit_test(test_crafted_doubled_and_replaced),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_example_scenario),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
