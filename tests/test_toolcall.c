/*
** test_toolcall.c: sub-agent tool calls made by chat turns (issue #15;
** agents #1630 and PR #1640): fresh run ids run the child's work twice
** after a recovered turn re-issues its call; stable run ids re-attach.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "checks/chk.h"
#include "scenarios/scn.h"

#define S(x) ((int64_t)(x) * 1000000)

static sim s;
static rt_world *w;

/* Parent 0 (chat) and child 1; budget_us 0 keeps the 120 s default. */
static void world(rt_toolrun_ids ids, int64_t budget_us) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&s, &sc), 0);
  rt_config_default(&c);
  c.toolrun_ids = ids;
  if (budget_us) c.reattach_budget_us = budget_us;
  w = rt_world_new(&s, &c);
  assert_non_null(w);
  for (int i = 0; i < 2; i++) {
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, i ? "child" : "parent");
    snprintf(sp.cls, sizeof sp.cls, "Agent");
    assert_int_equal(rt_actor_add(w, &sp), (uint32_t)i);
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

static const sim_rec *nth(uint32_t kind, uint32_t actor, int k) {
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == kind && s.trace.recs[i].actor == actor && k-- == 0)
      return &s.trace.recs[i];
  return NULL;
}

static void evict_parent(void *ctx) {
  (void)ctx;
  rt_kill_actor(w, 0, RT_DEATH_EVICT);
}

/* Runs a chat turn at 1 s whose tool call works 60 s; the parent dies at
** 20 s when `evict` (the keepAlive alarm wakes it at 31 s). */
static void run_turn(int evict) {
  assert_int_equal(rt_chat_tool_at(w, 0, 3, 100000, 1, S(60), S(1)), 0);
  if (evict) {
    sim_run(&s, S(20), 0);
    evict_parent(NULL);
  }
  sim_run(&s, S(600), 0);
}

/* Without a death the turn waits for its tool run, then streams. */
static void test_turn_waits_for_tool(void **st) {
  (void)st;
  world(RT_TR_IDS_FRESH, 0);
  run_turn(0);
  assert_int_equal(count(RT_EV_TOOLRUN_INSERT, 0), 1);
  assert_int_equal(count(RT_EV_TOOLRUN_EFFECT, 1), 1);
  const sim_rec *eff = nth(RT_EV_TOOLRUN_EFFECT, 1, 0);
  const sim_rec *up = nth(RT_EV_CHAT_UPSTREAM, 0, 0);
  assert_non_null(eff);
  assert_non_null(up);
  assert_int_equal(eff->t_us, S(61) + 1000); /* 1 ms to the child, 60 s of work */
  assert_true(up->t_us > eff->t_us);          /* the text starts after the result */
  assert_string_equal(sim_trace_str(&s.trace, nth(RT_EV_TOOLRUN_INSERT, 0, 0)->s2), "call-2");
  rt_chat_message msgs[4];
  assert_int_equal(rt_chat_messages(w, 0, msgs, 4), 2); /* user + answer */
  done();
}

/* #1630: the recovered turn re-issues the call under a fresh run id; the
** first run is interrupted "still running" and the work runs twice. */
static void test_fresh_ids_run_twice(void **st) {
  (void)st;
  world(RT_TR_IDS_FRESH, 0);
  run_turn(1);
  assert_int_equal(count(RT_EV_TOOLRUN_INSERT, 0), 2);
  assert_int_equal(count(RT_EV_TOOLRUN_EFFECT, 1), 2);
  const sim_rec *a = nth(RT_EV_TOOLRUN_INSERT, 0, 0), *b = nth(RT_EV_TOOLRUN_INSERT, 0, 1);
  assert_true(a->a != b->a);
  assert_int_equal(a->s2, b->s2); /* the same tool call id */
  assert_int_equal(rt_toolrun_status_of(w, 0, a->a), RT_TR_INTERRUPTED);
  assert_int_equal(rt_toolrun_status_of(w, 0, b->a), RT_TR_COMPLETED);
  done();
}

/* #1640: the stable run id re-attaches (tail) and recovery re-attaches
** instead of interrupting; the work runs once and the run completes. */
static void test_stable_ids_reattach(void **st) {
  (void)st;
  world(RT_TR_IDS_STABLE, 0);
  run_turn(1);
  assert_int_equal(count(RT_EV_TOOLRUN_INSERT, 0), 1);
  assert_int_equal(count(RT_EV_TOOLRUN_EFFECT, 1), 1);
  const sim_rec *ins = nth(RT_EV_TOOLRUN_INSERT, 0, 0);
  assert_int_equal(ins->a, 1000000000000LL + 2); /* agent-tool:call-2 */
  assert_int_equal(count(RT_EV_TOOLRUN_ATTACH, 0), 2);
  assert_int_equal(nth(RT_EV_TOOLRUN_ATTACH, 0, 0)->b, RT_TRA_TAIL);
  assert_int_equal(nth(RT_EV_TOOLRUN_ATTACH, 0, 1)->b, RT_TRA_RECOVERY);
  assert_int_equal(rt_toolrun_status_of(w, 0, ins->a), RT_TR_COMPLETED);
  assert_int_equal(count(RT_EV_CHAT_UPSTREAM, 0), 2); /* start + completed, once */
  done();
}

/* The child dies too: its work is gone, the re-attached tail finds a run
** nobody works on and ends the row interrupted "no-progress"; nothing runs
** twice. */
static void test_stable_child_gone(void **st) {
  (void)st;
  world(RT_TR_IDS_STABLE, 0);
  assert_int_equal(rt_chat_tool_at(w, 0, 3, 100000, 1, S(60), S(1)), 0);
  sim_run(&s, S(20), 0);
  rt_kill_actor(w, 0, RT_DEATH_EVICT);
  rt_kill_actor(w, 1, RT_DEATH_EVICT);
  sim_run(&s, S(600), 0);
  assert_int_equal(count(RT_EV_TOOLRUN_EFFECT, 1), 0);
  const sim_rec *ins = nth(RT_EV_TOOLRUN_INSERT, 0, 0);
  assert_int_equal(rt_toolrun_status_of(w, 0, ins->a), RT_TR_INTERRUPTED);
  int found = 0;
  for (size_t i = 0; i < s.trace.n; i++) {
    const sim_rec *r = &s.trace.recs[i];
    if (r->kind == RT_EV_TOOLRUN_STATUS && r->b == RT_TR_INTERRUPTED)
      found = strcmp(sim_trace_str(&s.trace, r->s), "no-progress") == 0;
  }
  assert_true(found);
  done();
}

/* A child that never answers: the tail is given up after the budget. */
static void test_stable_budget_gives_up(void **st) {
  (void)st;
  world(RT_TR_IDS_STABLE, S(50));
  assert_int_equal(rt_chat_tool_at(w, 0, 3, 100000, 1, S(60), S(1)), 0);
  sim_run(&s, S(20), 0);
  rt_kill_actor(w, 0, RT_DEATH_EVICT);
  rt_set_stuck(w, 1, RT_STUCK_NEVER_ANSWERS, 0);
  sim_run(&s, S(600), 0);
  const sim_rec *g = NULL;
  for (int k = 0; (g = nth(RT_EV_TOOLRUN_ATTACH, 0, k)) && g->b != RT_TRA_GAVE_UP; k++)
    ;
  assert_non_null(g);
  assert_int_equal(g->t_us, S(31) + S(50)); /* woken at 31 s, 50 s budget */
  assert_int_equal(rt_toolrun_status_of(w, 0, g->a), RT_TR_INTERRUPTED);
  done();
}

/* The checker: effects_once fires for the fresh run, not for the stable. */
static void test_effects_once_checker(void **st) {
  (void)st;
  for (int ids = 0; ids < 2; ids++) {
    world((rt_toolrun_ids)ids, 0);
    chk_params p;
    chk_params_default(&p);
    chk_set *c = chk_new(&s.trace, &p);
    assert_non_null(c);
    run_turn(1);
    chk_finish(c, s.now_us);
    size_t v = 0;
    for (size_t i = 0; i < chk_violation_count(c); i++)
      v += chk_violation_at(c, i)->inv == CHK_EFFECTS_ONCE;
    assert_int_equal(v, ids == 0 ? 1 : 0);
    chk_free(c);
    done();
  }
}

/* maxConcurrentAgentTools: the run over the cap is an error row with the
** SDK's message and never reaches the child; a child's error message
** reaches the parent's row. */
static void test_cap_and_error_message(void **st) {
  (void)st;
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&s, &sc), 0);
  rt_config_default(&c);
  w = rt_world_new(&s, &c);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "parent");
  sp.max_tools = 1;
  rt_actor_add(w, &sp);
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "child");
  sp.tool_result = RT_TR_ERROR;
  snprintf(sp.tool_error, sizeof sp.tool_error, "quota");
  rt_actor_add(w, &sp);
  rt_toolrun_at(w, 0, 1, S(5), S(1));
  rt_toolrun_at(w, 0, 1, S(5), S(2));
  sim_run(&s, S(60), 0);
  const sim_rec *a = nth(RT_EV_TOOLRUN_STATUS, 0, 0), *b = NULL;
  for (int k = 0; (b = nth(RT_EV_TOOLRUN_STATUS, 0, k)); k++)
    if (b->b == RT_TR_ERROR && b->t_us == S(2)) break;
  assert_non_null(a);
  assert_non_null(b);
  assert_string_equal(sim_trace_str(&s.trace, b->s), "maxConcurrentAgentTools (1) exceeded");
  assert_int_equal(count(RT_EV_RPC_SEND, 0), 1); /* only the first run's start */
  int found = 0;
  for (int k = 0; (a = nth(RT_EV_TOOLRUN_STATUS, 0, k)); k++)
    found |= a->b == RT_TR_ERROR && a->t_us > S(6) && strcmp(sim_trace_str(&s.trace, a->s), "quota") == 0;
  assert_true(found);
  assert_int_equal(count(RT_EV_TOOLRUN_FINISH, 0), 1); /* the refused run gets none */
  done();
}

/* Same seed, same trace hash, both variants. */
static void test_deterministic(void **st) {
  (void)st;
  for (int ids = 0; ids < 2; ids++) {
    uint64_t h[2];
    for (int k = 0; k < 2; k++) {
      world((rt_toolrun_ids)ids, 0);
      run_turn(1);
      h[k] = s.trace.hash;
      done();
    }
    assert_true(h[0] == h[1]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_turn_waits_for_tool),  cmocka_unit_test(test_fresh_ids_run_twice),
      cmocka_unit_test(test_stable_ids_reattach),  cmocka_unit_test(test_stable_child_gone),
      cmocka_unit_test(test_stable_budget_gives_up), cmocka_unit_test(test_effects_once_checker),
      cmocka_unit_test(test_cap_and_error_message), cmocka_unit_test(test_deterministic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
