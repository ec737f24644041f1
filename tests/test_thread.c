/*
** test_thread.c: the versioned thread store of seed 004 (runtime/rt_thread.c)
** and its checkers (checks/chk_thread.c): the checkpoint schedule and its
** reasons, Exact(version) under concurrent writers, failure semantics,
** state scopes, the broken (lost update) and leaky (no scope cleanup)
** variants, crafted traces for each invariant, and determinism.
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
  int64_t thread;
} fx;

static fx F;

static void fx_init(uint64_t seed, sim_strategy strat) {
  sim_config sc = {seed, strat, 3, 1000};
  rt_config cfg;
  rt_actor_spec sp;
  assert_int_equal(sim_init(&F.s, &sc), 0);
  rt_config_default(&cfg);
  F.w = rt_world_new(&F.s, &cfg);
  assert_non_null(F.w);
  F.c = chk_new(&F.s.trace, NULL);
  assert_non_null(F.c);
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "os");
  snprintf(sp.cls, sizeof sp.cls, "AgentOs");
  assert_int_equal(rt_actor_add(F.w, &sp), 0);
}

static void fx_free(void) {
  rt_world_free(F.w);
  chk_free(F.c);
  sim_free(&F.s);
  memset(&F, 0, sizeof F);
}

static void writers(int n, int runs, int tools, int store, int fail) {
  rt_thread_spec t;
  rt_thread_spec_default(&t);
  t.writers = n;
  t.runs = runs;
  t.tools = tools;
  t.store = store;
  t.fail_reason = fail;
  F.thread = rt_thread_writers_at(F.w, 0, &t, S(1));
  assert_true(F.thread > 0);
}

static void run_to(int64_t t) {
  sim_run(&F.s, t, 0);
  chk_finish(F.c, F.s.now_us);
}

static const sim_rec *R(size_t i) { return &F.s.trace.recs[i]; }

static size_t count(uint32_t kind, int64_t c) {
  size_t n = 0;
  for (size_t i = 0; i < F.s.trace.n; i++) n += R(i)->kind == kind && (c < 0 || R(i)->c == c);
  return n;
}

static int violated(chk_invariant inv) {
  for (size_t i = 0; i < chk_violation_count(F.c); i++)
    if (chk_violation_at(F.c, i)->inv == inv) return 1;
  return 0;
}

static const char *str(uint32_t id) { return sim_trace_str(&F.s.trace, id); }

/* The reasons of run `run`'s appends, in order (into out, at most cap). */
static int reasons_of(int64_t run, const char **out, int cap) {
  int n = 0;
  for (size_t i = 0; i < F.s.trace.n && n < cap; i++)
    if (R(i)->kind == RT_EV_THREAD_APPEND && R(i)->b == run) out[n++] = str(R(i)->s);
  return n;
}

/* ---- the checkpoint schedule --------------------------------------------- */

/* One writer, no contention: "A) Inbound (UserMessage)", "B1 after RunStart
** (UserMessage)", "B3 AssistantTurnCommitted", "B4 ToolResultsCommitted",
** "B5 RunFinished", each committing the next version. */
static void test_checkpoint_schedule(void **st) {
  static const char *const want[] = {"UserMessage", "UserMessage", "AssistantTurnCommitted",
                                     "ToolResultsCommitted", "AssistantTurnCommitted",
                                     "ToolResultsCommitted", "AssistantTurnCommitted",
                                     "RunFinished"};
  const char *got[16];
  (void)st;
  fx_init(1, SIM_FIFO);
  writers(1, 1, 2, RT_THREAD_VERSIONED, 0);
  run_to(S(30));
  size_t start = 0;
  while (R(start)->kind != RT_EV_THREAD_RUN) start++;
  int64_t run = R(start)->b;
  int n = reasons_of(run, got, 16);
  assert_int_equal(n, 8); /* (seed 1: neither call suspends) */
  for (int i = 0; i < n; i++) assert_string_equal(got[i], want[i]);
  assert_int_equal(rt_thread_version(F.w, 0, F.thread), n);
  assert_int_equal(count(RT_EV_THREAD_RUN, RT_RUN_FINISHED), 1);
  assert_int_equal(count(RT_EV_REQUEST_OK, -1), 1);
  assert_true(rt_thread_message_count(F.w, 0, F.thread) >= 4);
  assert_int_equal(rt_thread_state_has(F.w, 0, F.thread, "notes.writer0"), 1);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* Concurrent writers: the stale ones get conflicts (the run fails with a
** state error and is retried as a new run); versions stay contiguous and
** no invariant fires, whatever the interleaving (fifo, random, pct). */
static void test_concurrent_versioned(void **st) {
  (void)st;
  for (int strat = SIM_FIFO; strat <= SIM_PCT; strat++)
    for (uint64_t seed = 1; seed <= 5; seed++) {
      fx_init(seed, (sim_strategy)strat);
      writers(3, 2, 2, RT_THREAD_VERSIONED, 0);
      run_to(S(120));
      size_t conflicts = 0;
      int64_t head = 0;
      for (size_t i = 0; i < F.s.trace.n; i++) {
        if (R(i)->kind != RT_EV_THREAD_COMMIT) continue;
        if (R(i)->b == -1) {
          conflicts++;
          assert_int_equal(R(i + 1)->kind, RT_EV_THREAD_RUN); /* the run fails */
          assert_int_equal(R(i + 1)->c, RT_RUN_FAILED);
          assert_non_null(strstr(str(R(i + 1)->s), "state error"));
        } else {
          assert_int_equal(R(i)->b, head + 1);
          head = R(i)->b;
        }
      }
      assert_true(conflicts > 0);
      assert_int_equal(rt_thread_version(F.w, 0, F.thread), head);
      assert_int_equal(chk_violation_count(F.c), 0);
      fx_free();
    }
}

/* The broken store appends without the precondition: a stale writer
** overwrites a committed changeset; its messages are lost. */
static void test_broken_lost_update(void **st) {
  (void)st;
  fx_init(1, SIM_FIFO);
  writers(3, 2, 2, RT_THREAD_BROKEN, 0);
  run_to(S(120));
  assert_true(violated(CHK_NO_LOST_UPDATE));
  assert_true(violated(CHK_VERSIONS_CONTIGUOUS));
  assert_int_equal(count(RT_EV_THREAD_COMMIT, -1) > 0, 1);
  size_t committed_msgs = 0, open = 0, in_open = 0;
  for (size_t i = 0; i < F.s.trace.n; i++) { /* messages of committed appends */
    if (R(i)->kind == RT_EV_THREAD_APPEND) open = 1, in_open = 0;
    if (R(i)->kind == RT_EV_THREAD_MSG && open) in_open++;
    if (R(i)->kind == RT_EV_THREAD_COMMIT && R(i)->b > 0) committed_msgs += in_open;
  }
  assert_true((size_t)rt_thread_message_count(F.w, 0, F.thread) < committed_msgs);
  const chk_violation *v = chk_violation_at(F.c, 0);
  assert_non_null(strstr(v->msg, "stale writer"));
  fx_free();
}

/* ---- failure semantics ---------------------------------------------------- */

/* "Non-final checkpoint failure is treated as run failure: emits state
** error, run terminates with error". */
static void test_nonfinal_failure_fails_run(void **st) {
  (void)st;
  fx_init(2, SIM_FIFO);
  writers(1, 1, 1, RT_THREAD_VERSIONED, RT_CK_ASSISTANT_TURN_COMMITTED);
  run_to(S(30));
  size_t i = 0;
  while (i < F.s.trace.n && !(R(i)->kind == RT_EV_THREAD_COMMIT && R(i)->b == -2)) i++;
  assert_true(i < F.s.trace.n);
  assert_int_equal(R(i + 1)->kind, RT_EV_THREAD_RUN);
  assert_int_equal(R(i + 1)->c, RT_RUN_FAILED);
  assert_int_equal(count(RT_EV_THREAD_RUN, RT_RUN_FINISHED), 0);
  assert_int_equal(count(RT_EV_STORAGE_FAIL, -1), 1);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* Sixteen writers racing on one thread with Exact(version): each failed run
** is retried, and a writer that fails 4 x runs tries gives up; its request
** fails with "thread writer gave up: too many failed runs". The versions
** stay exact (no violation) and the survivors' runs all finish. */
static void test_writer_gives_up(void **st) {
  size_t gave_up = 0;
  (void)st;
  fx_init(1, SIM_RANDOM);
  writers(RT_THREAD_MAX_WRITERS, 1, 2, RT_THREAD_VERSIONED, 0);
  run_to(S(600));
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (R(i)->kind == RT_EV_REQUEST_FAIL &&
        !strcmp(sim_trace_str(&F.s.trace, R(i)->s), "thread writer gave up: too many failed runs"))
      gave_up++;
  assert_true(gave_up > 0);
  assert_int_equal(count(RT_EV_THREAD_RUN, RT_RUN_FINISHED) + gave_up, RT_THREAD_MAX_WRITERS);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* "Final RunFinished checkpoint failure: emits error; terminal run-finish
** event may be suppressed, because final durability was not confirmed". */
static void test_final_failure_suppresses_finish(void **st) {
  (void)st;
  fx_init(3, SIM_FIFO);
  writers(1, 1, 1, RT_THREAD_VERSIONED, RT_CK_RUN_FINISHED);
  run_to(S(30));
  assert_int_equal(count(RT_EV_THREAD_RUN, RT_RUN_SUPPRESSED), 1);
  assert_int_equal(count(RT_EV_THREAD_RUN, RT_RUN_FINISHED), 0);
  assert_int_equal(count(RT_EV_THREAD_RUN, RT_RUN_FAILED), 0);
  assert_int_equal(chk_violation_count(F.c), 0);
  fx_free();
}

/* ---- state scopes ---------------------------------------------------------- */

/* prepare_run deletes every Run-scoped path before the lifecycle Running
** patch: a second run's inbound changeset deletes __run and
** __kernel.stop_policy_runtime, then sets __run. */
static void test_run_scope_cleanup(void **st) {
  (void)st;
  fx_init(4, SIM_FIFO);
  writers(1, 2, 0, RT_THREAD_VERSIONED, 0);
  run_to(S(30));
  size_t app = 0;
  int seen = 0;
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (R(i)->kind == RT_EV_THREAD_APPEND && ++seen == 5) app = i; /* run 2, inbound */
  assert_true(app > 0);
  assert_string_equal(str(R(app)->s), "UserMessage");
  assert_int_equal(R(app + 1)->kind, RT_EV_THREAD_DELETE);
  assert_int_equal(R(app + 2)->kind, RT_EV_THREAD_DELETE);
  assert_int_equal(R(app + 3)->kind, RT_EV_THREAD_SET);
  assert_string_equal(str(R(app + 3)->s), "__run");
  assert_int_equal(R(app + 1)->b, RT_SCOPE_RUN);
  assert_int_equal(rt_thread_state_has(F.w, 0, F.thread, "notes.writer0"), 1); /* Thread scope */
  assert_false(violated(CHK_RUN_STATE_SCOPED));
  fx_free();
}

/* ToolCall scope: set by the assistant turn that calls, deleted with the
** tool result; a suspended call keeps it until a later run's RunStart
** outbox replay (B2, ToolResultsCommitted) resolves it. */
static void test_toolcall_scope_and_replay(void **st) {
  int replays = 0;
  (void)st;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    fx_init(seed, SIM_FIFO);
    writers(1, 3, 3, RT_THREAD_VERSIONED, 0);
    run_to(S(60));
    for (size_t i = 1; i < F.s.trace.n; i++) {
      if (R(i)->kind != RT_EV_THREAD_APPEND || strcmp(str(R(i)->s), "ToolResultsCommitted")) continue;
      size_t p = i - 1; /* the append before it in the same run */
      while (p > 0 && R(p)->kind != RT_EV_THREAD_APPEND) p--;
      if (R(p)->b == R(i)->b && !strcmp(str(R(p)->s), "UserMessage")) {
        replays++;
        size_t m = i + 1; /* patches first, then the replayed result */
        while (R(m)->kind == RT_EV_THREAD_DELETE) m++;
        assert_int_equal(R(m)->kind, RT_EV_THREAD_MSG);
        assert_int_equal(R(m)->b, RT_ROLE_TOOL);
        assert_int_equal(R(m - 1)->kind, RT_EV_THREAD_DELETE); /* its scope goes */
      }
    }
    char path[64];
    for (size_t i = 0; i < F.s.trace.n; i++)
      if (R(i)->kind == RT_EV_THREAD_MSG && R(i)->b == RT_ROLE_TOOL) {
        snprintf(path, sizeof path, "__tool_call_scope.%lld", (long long)R(i)->c);
        assert_int_equal(rt_thread_state_has(F.w, 0, F.thread, path), 0);
      }
    assert_int_equal(chk_violation_count(F.c), 0);
    fx_free();
  }
  assert_true(replays > 0);
}

/* The leaky variant keeps Run-scoped state across runs and resolved calls'
** scope: both scope invariants fire; versioned stays quiet (other tests). */
static void test_leaky_scopes(void **st) {
  (void)st;
  fx_init(5, SIM_FIFO);
  writers(1, 2, 2, RT_THREAD_LEAKY, 0);
  run_to(S(60));
  assert_true(violated(CHK_RUN_STATE_SCOPED));
  assert_true(violated(CHK_TOOLCALL_STATE_SCOPED));
  assert_false(violated(CHK_NO_LOST_UPDATE));
  assert_false(violated(CHK_VERSIONS_CONTIGUOUS));
  fx_free();
}

/* ---- the checkers over crafted traces ---------------------------------- */

typedef struct tfx {
  sim_trace t;
  chk_set *c;
} tfx;

static void rec(tfx *f, uint32_t kind, int64_t a, int64_t b, int64_t c, const char *s) {
  sim_rec r;
  memset(&r, 0, sizeof r);
  r.t_us = (int64_t)f->t.count;
  r.kind = kind;
  r.a = a;
  r.b = b;
  r.c = c;
  r.s = sim_trace_intern(&f->t, s);
  sim_trace_append(&f->t, &r);
}

/* One append of `run` with Exact(expected), committed as `version`. */
static void append(tfx *f, int64_t run, int64_t expected, int64_t version, const char *set,
                   int scope, int64_t call, const char *del) {
  rec(f, RT_EV_THREAD_APPEND, 9, run, expected, "UserMessage");
  if (del) rec(f, RT_EV_THREAD_DELETE, 9, scope, call, del);
  if (set) rec(f, RT_EV_THREAD_SET, 9, scope, call, set);
  if (call && del) rec(f, RT_EV_THREAD_MSG, 9, RT_ROLE_TOOL, call, NULL);
  rec(f, RT_EV_THREAD_COMMIT, 9, version, run, NULL);
}

static size_t fired(tfx *f, chk_invariant inv) {
  size_t n = 0;
  for (size_t i = 0; i < chk_violation_count(f->c); i++) n += chk_violation_at(f->c, i)->inv == inv;
  return n;
}

static void test_chk_versions(void **st) {
  (void)st;
  for (int k = 0; k < 3; k++) {
    tfx f;
    assert_int_equal(sim_trace_init(&f.t), 0);
    f.c = chk_new(&f.t, NULL);
    append(&f, 1, 0, 1, NULL, 0, 0, NULL);
    append(&f, 2, 1, 2, NULL, 0, 0, NULL);
    if (k == 0) append(&f, 3, 1, -1, NULL, 0, 0, NULL); /* stale: conflict, correct */
    if (k == 1) append(&f, 3, 1, 2, NULL, 0, 0, NULL);  /* stale: overwrote version 2 */
    if (k == 2) append(&f, 3, 2, 4, NULL, 0, 0, NULL);  /* a gap */
    assert_int_equal(fired(&f, CHK_NO_LOST_UPDATE), k == 1);
    assert_int_equal(fired(&f, CHK_VERSIONS_CONTIGUOUS), k >= 1);
    chk_free(f.c);
    sim_trace_free(&f.t);
  }
}

static void test_chk_scopes(void **st) {
  (void)st;
  for (int k = 0; k < 4; k++) {
    tfx f;
    assert_int_equal(sim_trace_init(&f.t), 0);
    f.c = chk_new(&f.t, NULL);
    append(&f, 1, 0, 1, "__run", RT_SCOPE_RUN, 0, NULL);
    append(&f, 1, 1, 2, "__tool_call_scope.7", RT_SCOPE_TOOL_CALL, 7, NULL);
    if (k == 0) append(&f, 1, 2, 3, NULL, RT_SCOPE_TOOL_CALL, 7, "__tool_call_scope.7");
    if (k == 1) { /* the result lands, the scope stays */
      rec(&f, RT_EV_THREAD_APPEND, 9, 1, 2, "ToolResultsCommitted");
      rec(&f, RT_EV_THREAD_MSG, 9, RT_ROLE_TOOL, 7, NULL);
      rec(&f, RT_EV_THREAD_COMMIT, 9, 3, 1, NULL);
    }
    if (k == 2) append(&f, 2, 2, 3, "__run", RT_SCOPE_RUN, 0, "__run"); /* cleaned */
    if (k == 3) append(&f, 2, 2, 3, "notes", RT_SCOPE_THREAD, 0, NULL); /* run 1 leaks */
    assert_int_equal(fired(&f, CHK_TOOLCALL_STATE_SCOPED), k == 1);
    assert_int_equal(fired(&f, CHK_RUN_STATE_SCOPED), k == 3);
    chk_free(f.c);
    sim_trace_free(&f.t);
  }
}

/* ---- scenarios and determinism ------------------------------------------- */

static void test_example_and_determinism(void **st) {
  scn_scenario *sc = calloc(1, sizeof *sc);
  char err[512];
  (void)st;
  assert_non_null(sc);
  assert_int_equal(scn_load("scenarios/examples/thread-store.json", sc, err, sizeof err), 0);
  assert_int_equal(sc->n_cases, 3);
  assert_int_equal(sc->work[0].kind, SCN_W_THREAD);
  assert_int_equal(sc->work[0].thread.writers, 3);
  for (int ci = 0; ci < sc->n_cases; ci++) {
    scn_result a, b;
    assert_int_equal(scn_run_case(sc, ci, sc->seed, SIM_RANDOM, &a), 0);
    assert_int_equal(scn_run_case(sc, ci, sc->seed, SIM_RANDOM, &b), 0);
    assert_true(a.trace_hash == b.trace_hash);
    scn_result_free(&a);
    scn_result_free(&b);
    assert_int_equal(scn_run_case(sc, ci, sc->seed, sc->strategy, &a), 0);
    assert_true(a.passed);
    scn_result_free(&a);
  }
  char *text = scn_write_string(sc); /* the writer keeps the thread fields */
  scn_scenario *back = calloc(1, sizeof *back);
  assert_non_null(text);
  assert_non_null(back);
  assert_int_equal(scn_load_text("t.json", text, strlen(text), back, err, sizeof err), 0);
  assert_memory_equal(&back->work[1].thread, &sc->work[1].thread, sizeof sc->work[1].thread);
  assert_int_equal(back->cases[2].cfg.thread_store, RT_THREAD_LEAKY);
  free(text);
  scn_free(back);
  free(back);
  scn_free(sc);
  free(sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_checkpoint_schedule),
      cmocka_unit_test(test_concurrent_versioned),
      cmocka_unit_test(test_broken_lost_update),
      cmocka_unit_test(test_nonfinal_failure_fails_run),
      cmocka_unit_test(test_writer_gives_up),
      cmocka_unit_test(test_final_failure_suppresses_finish),
      cmocka_unit_test(test_run_scope_cleanup),
      cmocka_unit_test(test_toolcall_scope_and_replay),
      cmocka_unit_test(test_leaky_scopes),
      cmocka_unit_test(test_chk_versions),
      cmocka_unit_test(test_chk_scopes),
      cmocka_unit_test(test_example_and_determinism),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
