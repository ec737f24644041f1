/*
** test_api_guards.c: the workload and inspection entry points of rt.h
** refuse bad arguments (a missing world, an actor out of range, a bad spec)
** with -1 and leave the world untouched: nothing is scheduled, nothing is
** traced, no actor wakes. Each refusal is asserted on its own line, and the
** same call with good arguments is accepted, so a guard that stopped
** refusing (or started refusing good input) fails here.
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

#define MS(x) ((int64_t)(x) * 1000)

typedef struct fx {
  sim s;
  rt_world *w;
  rt_config cfg;
} fx;

static fx F;

static void fx_init(void) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  assert_int_equal(sim_init(&F.s, &sc), 0);
  rt_config_default(&F.cfg);
  F.w = rt_world_new(&F.s, &F.cfg);
  assert_non_null(F.w);
  for (int i = 0; i < 2; i++) {
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, "a%d", i);
    snprintf(sp.cls, sizeof sp.cls, "Agent");
    assert_int_equal(rt_actor_add(F.w, &sp), (uint32_t)i);
  }
}

static void fx_free(void) {
  rt_world_free(F.w);
  sim_free(&F.s);
  memset(&F, 0, sizeof F);
}

/* Nothing was scheduled or traced by the refused calls. */
static void assert_untouched(void) {
  assert_int_equal(sim_pending(&F.s), 0);
  assert_int_equal(F.s.trace.n, 0);
}

static rt_program one_step_prog(rt_step *st) {
  rt_program p;
  memset(&p, 0, sizeof p);
  st[0] = (rt_step){RT_STEP_WORK, 1000, 1000, 0, "", 0, 0};
  snprintf(p.name, sizeof p.name, "job");
  p.steps = st;
  p.n_steps = 1;
  return p;
}

static void chat_requests_refuse_bad_arguments(void **state) {
  (void)state;
  fx_init();
  assert_int_equal(rt_chat_at(NULL, 0, 1, MS(10), 0), -1);
  assert_int_equal(rt_chat_at(F.w, 2, 1, MS(10), 0), -1);
  assert_int_equal(rt_chat_at(F.w, 0, 0, MS(10), 0), -1);
  assert_int_equal(rt_chat_at(F.w, 0, RT_CHAT_MAX_CHUNKS + 1, MS(10), 0), -1);
  assert_int_equal(rt_chat_at(F.w, 0, 1, 0, 0), -1);
  assert_int_equal(rt_chat_tool_at(NULL, 0, 1, MS(10), 1, 0, 0), -1);
  assert_int_equal(rt_chat_tool_at(F.w, 2, 1, MS(10), 1, 0, 0), -1);
  assert_int_equal(rt_chat_tool_at(F.w, 0, 1, MS(10), 2, 0, 0), -1);
  assert_int_equal(rt_chat_tool_at(F.w, 0, 1, MS(10), 0, 0, 0), -1); /* itself */
  assert_int_equal(rt_chat_tool_at(F.w, 0, 0, MS(10), 1, 0, 0), -1);
  assert_int_equal(rt_chat_tool_at(F.w, 0, RT_CHAT_MAX_CHUNKS + 1, MS(10), 1, 0, 0), -1);
  assert_int_equal(rt_chat_tool_at(F.w, 0, 1, 0, 1, 0, 0), -1);
  assert_int_equal(rt_chat_tool_at(F.w, 0, 1, MS(10), 1, -1, 0), -1);
  assert_int_equal(rt_chat_continue_at(NULL, 0, 0), -1);
  assert_int_equal(rt_chat_continue_at(F.w, 2, 0), -1);
  assert_int_equal(rt_chat_cancel_at(F.w, 2, 0), -1);
  assert_int_equal(rt_chat_save_at(NULL, 0, "hi", 1, MS(10), 0), -1);
  assert_int_equal(rt_chat_save_at(F.w, 0, NULL, 1, MS(10), 0), -1);
  assert_int_equal(rt_chat_save_at(F.w, 0, "", 1, MS(10), 0), -1);
  assert_int_equal(rt_chat_save_at(F.w, 0, "hi", -1, MS(10), 0), -1);
  assert_int_equal(rt_chat_save_at(F.w, 0, "hi", RT_CHAT_MAX_CHUNKS + 1, MS(10), 0), -1);
  assert_int_equal(rt_chat_save_at(F.w, 0, "hi", 1, 0, 0), -1);
  assert_int_equal(rt_chat_save_at(F.w, 2, "hi", 1, MS(10), 0), -1);
  assert_untouched();
  rt_chat_message msg[1];
  rt_chat_recovery_info ri;
  assert_int_equal(rt_chat_messages(NULL, 0, msg, 1), -1);
  assert_int_equal(rt_chat_messages(F.w, 2, msg, 1), -1);
  assert_int_equal(rt_chat_last_recovery(NULL, 0, &ri), -1);
  assert_int_equal(rt_chat_last_recovery(F.w, 0, &ri), -1); /* never recovered */
  /* the good forms are accepted: a save with no chunks needs no interval */
  assert_int_equal(rt_chat_save_at(F.w, 0, "hi", 0, 0, 0), 0);
  assert_int_equal(rt_chat_at(F.w, 0, RT_CHAT_MAX_CHUNKS, MS(10), 0), 0);
  assert_int_equal(sim_pending(&F.s), 2);
  fx_free();
}

static void toolrun_and_legacy_requests_refuse_bad_arguments(void **state) {
  rt_step st[1];
  rt_program p = one_step_prog(st);
  (void)state;
  fx_init();
  assert_int_equal(rt_toolrun_at(F.w, 0, 2, MS(1), 0), -1);
  assert_int_equal(rt_toolrun_id_at(NULL, 0, 1, MS(1), 5, 0), -1);
  assert_int_equal(rt_toolrun_id_at(F.w, 0, 2, MS(1), 5, 0), -1);
  assert_int_equal(rt_toolrun_id_at(F.w, 0, 1, MS(1), 0, 0), -1);
  assert_int_equal(rt_toolrun_abort_at(NULL, 0, 1, 0), -1);
  assert_int_equal(rt_toolrun_abort_at(F.w, 2, 1, 0), -1);
  assert_int_equal(rt_toolrun_abort_at(F.w, 0, 2, 0), -1);
  assert_int_equal(rt_toolrun_replay_at(NULL, 0, 0, 0), -1);
  assert_int_equal(rt_toolrun_replay_at(F.w, 2, 0, 0), -1);
  assert_int_equal(rt_toolrun_replay_at(F.w, 0, -2, 0), -1);
  assert_int_equal(rt_toolrun_recovery_at(NULL, 0, 0), -1);
  assert_int_equal(rt_toolrun_recovery_at(F.w, 2, 0), -1);
  assert_int_equal(rt_seed_stale_toolrun(F.w, 2, 1, RT_TR_RUNNING, 0), -1);
  assert_int_equal(rt_seed_stale_toolrun(F.w, 0, 2, RT_TR_RUNNING, 0), -1);
  assert_int_equal(rt_spawn_fiber_at(NULL, 0, &p, 1, 0), -1);
  assert_int_equal(rt_spawn_fiber_at(F.w, 0, NULL, 1, 0), -1);
  assert_int_equal(rt_spawn_fiber_at(F.w, 2, &p, 1, 0), -1);
  assert_int_equal(rt_cancel_fiber_at(NULL, 0, "job", 0), -1);
  assert_int_equal(rt_cancel_fiber_at(F.w, 0, NULL, 0), -1);
  assert_int_equal(rt_cancel_fiber_at(F.w, 2, "job", 0), -1);
  assert_int_equal(rt_legacy_status(NULL, 0, 1, NULL), -1);
  assert_int_equal(rt_legacy_status(F.w, 2, 1, NULL), -1);
  assert_int_equal(rt_legacy_status(F.w, 0, 1, NULL), -1); /* no such fiber */
  assert_int_equal(rt_seed_orphan_fiber(F.w, 2, &p, -1), -1);
  rt_schedule_seed sd;
  memset(&sd, 0, sizeof sd);
  snprintf(sd.callback, sizeof sd.callback, "tick");
  assert_int_equal(rt_seed_schedule(F.w, 2, &sd), -1);
  assert_int_equal(rt_alarm_preset(F.w, 2, MS(5)), -1);
  assert_int_equal(rt_count_fiber_rows(F.w, 2), -1);
  assert_untouched();
  assert_int_equal(rt_toolrun_replay_at(F.w, 0, -1, 0), 0); /* -1: from the start */
  assert_int_equal(rt_spawn_fiber_at(F.w, 0, &p, -1, 0), 0);
  assert_int_equal(sim_pending(&F.s), 2);
  fx_free();
}

static void executor_and_thread_refuse_bad_specs(void **state) {
  (void)state;
  fx_init();
  rt_exec_turn_spec t, bad;
  rt_exec_turn_default(&t);
  assert_int_equal(rt_exec_turn_at(F.w, 0, NULL, 0), -1);
  assert_int_equal(rt_exec_turn_at(F.w, 2, &t, 0), -1);
  bad = t, bad.tools = -1;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &bad, 0), -1);
  bad = t, bad.tools = RT_EXEC_MAX_TOOLS + 1;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &bad, 0), -1);
  bad = t, bad.adapter = -2;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &bad, 0), -1);
  bad = t, bad.adapter = RT_EXEC_BROKEN + 1;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &bad, 0), -1);
  bad = t, bad.fail_phase = -1;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &bad, 0), -1);
  bad = t, bad.fail_phase = RT_PH_SETTLED + 1;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &bad, 0), -1);
  bad = t, bad.dup_ppm = 1000001;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &bad, 0), -1);
  bad = t, bad.cancel_after_us = -1;
  assert_int_equal(rt_exec_turn_at(F.w, 0, &bad, 0), -1);
  rt_checkpoint cp, out[1];
  memset(&cp, 0, sizeof cp);
  cp.turn_id = 1;
  snprintf(cp.phase, sizeof cp.phase, "no-such-phase");
  assert_int_equal(rt_exec_checkpoint(F.w, 2, RT_EXEC_MEMORY, &cp), -1);
  assert_int_equal(rt_exec_checkpoint(F.w, 0, RT_EXEC_MEMORY, NULL), -1);
  assert_int_equal(rt_exec_checkpoint(F.w, 0, RT_EXEC_MEMORY, &cp), -1); /* unknown phase */
  assert_int_equal(rt_exec_restore(F.w, 2, RT_EXEC_MEMORY, 1, out, 1), -1);
  assert_int_equal(rt_exec_restore(F.w, 0, RT_EXEC_MEMORY, 1, out, -1), -1);

  rt_thread_spec s, b;
  rt_thread_spec_default(&s);
  assert_int_equal(rt_thread_writers_at(F.w, 0, NULL, 0), -1);
  assert_int_equal(rt_thread_writers_at(F.w, 2, &s, 0), -1);
  b = s, b.writers = 0;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.writers = RT_THREAD_MAX_WRITERS + 1;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.runs = 0;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.runs = 1001;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.tools = -1;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.tools = RT_EXEC_MAX_TOOLS + 1;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.store = -2;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.store = RT_THREAD_LEAKY + 1;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.fail_reason = -1;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.fail_reason = RT_CK_RUN_FINISHED + 1;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  b = s, b.step_max_us = 999;
  assert_int_equal(rt_thread_writers_at(F.w, 0, &b, 0), -1);
  assert_int_equal(rt_thread_version(F.w, 2, 1), -1);
  assert_int_equal(rt_thread_message_count(F.w, 2, 1), -1);
  assert_int_equal(rt_thread_state_has(F.w, 2, 1, "a"), -1);
  assert_int_equal(rt_thread_state_has(F.w, 0, 1, NULL), -1);
  assert_untouched();
  assert_int_equal(rt_exec_turn_at(F.w, 0, &t, 0), 0);
  assert_true(rt_thread_writers_at(F.w, 0, &s, 0) > 0);
  assert_true(sim_pending(&F.s) > 1);
  fx_free();
}

/* The open phase registry: an empty, too long or repeated name is refused,
** an unknown id has no name, a registered phase is found both ways. */
static void phase_registry_refuses_bad_names(void **state) {
  char longname[64];
  (void)state;
  fx_init();
  memset(longname, 'p', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  assert_int_equal(rt_exec_phase_register(F.w, NULL, "x"), -1);
  assert_int_equal(rt_exec_phase_register(F.w, "", "x"), -1);
  assert_int_equal(rt_exec_phase_register(F.w, longname, "x"), -1);
  assert_int_equal(rt_exec_phase_register(F.w, "started", "x"), -1);
  assert_int_equal(rt_exec_phase_id(F.w, NULL), -1);
  assert_null(rt_exec_phase_of(F.w, -1));
  assert_null(rt_exec_phase_of(F.w, 1000));
  int id = rt_exec_phase_register(F.w, "audit", NULL);
  assert_true(id >= RT_PH_FIRST_CUSTOM);
  assert_int_equal(rt_exec_phase_id(F.w, "audit"), id);
  assert_string_equal(rt_exec_phase_of(F.w, id), "audit");
  int n = id;
  char name[16];
  for (;;) { /* fill the registry: 32 phases, then no more */
    snprintf(name, sizeof name, "ph%d", n);
    int r = rt_exec_phase_register(F.w, name, "");
    if (r < 0) break;
    assert_int_equal(r, ++n);
  }
  assert_int_equal(n, 31);
  assert_int_equal(rt_exec_phase_register(F.w, "one-more", ""), -1);
  fx_free();
}

/* Inspection and fault doors with an actor out of range: no spec, not
** alive, no alarm; the doors change nothing. */
static void world_inspection_out_of_range(void **state) {
  (void)state;
  fx_init();
  assert_null(rt_actor_spec_of(F.w, 2));
  assert_non_null(rt_actor_spec_of(F.w, 1));
  assert_int_equal(rt_actor_alive(F.w, 2), 0);
  assert_int_equal(rt_alarm_of(F.w, 2), -1);
  rt_fail_commits(F.w, 2, 3);
  rt_set_stuck(F.w, 2, RT_STUCK_NEVER_ANSWERS, 0);
  rt_set_onstart_us(F.w, 2, MS(1));
  rt_set_down(F.w, MS(10));
  rt_set_down(F.w, MS(5)); /* an earlier end does not shorten the outage */
  rt_lose_alarm(F.w, 1);   /* no alarm anywhere: nothing to drop */
  assert_untouched();
  /* the outage still lasts until 10 ms: a chat request at 7 ms fails at once */
  assert_int_equal(rt_chat_at(F.w, 0, 1, MS(1), MS(7)), 0);
  sim_run(&F.s, MS(8), 1000);
  assert_int_equal(rt_actor_alive(F.w, 0), 0);
  fx_free();
}

/* keepAlive leases need a name; keepAliveWhile's fn that throws with no
** message fails its request with the default one, after the hold. */
static void keepalive_leases_and_default_throw(void **state) {
  (void)state;
  fx_init();
  assert_int_equal(rt_keepalive_acquire_at(F.w, 0, NULL, 0), -1);
  assert_int_equal(rt_keepalive_acquire_at(F.w, 0, "", 0), -1);
  assert_int_equal(rt_keepalive_dispose_at(F.w, 0, "", 0), -1);
  assert_untouched();
  assert_int_equal(rt_keepalive_while_throws_at(F.w, 0, MS(50), NULL, MS(1)), 0);
  sim_run(&F.s, MS(500), 1000);
  const sim_rec *fail = NULL;
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == RT_EV_REQUEST_FAIL) fail = &F.s.trace.recs[i];
  assert_non_null(fail);
  assert_string_equal(sim_trace_str(&F.s.trace, fail->s), "keepAliveWhile fn threw");
  assert_int_equal(fail->t_us, MS(51));
  assert_int_equal(rt_keepalive_refs(F.w, 0), 0);
  fx_free();
}

static int noop_calls;
static void noop_a(rt_world *w, uint32_t a, int64_t run, int status) {
  (void)w, (void)a, (void)run, (void)status;
  noop_calls++;
}
static void noop_b(rt_world *w, uint32_t a, int64_t run, int status) {
  (void)w, (void)a, (void)run, (void)status;
}
static void noop_c(rt_world *w, uint32_t a, int64_t run, int status) {
  (void)w, (void)a, (void)run, (void)status;
}
static void noop_d(rt_world *w, uint32_t a, int64_t run, int status) {
  (void)w, (void)a, (void)run, (void)status;
}

/* The tool-run terminal listeners (four slots; chat holds one): a listener
** registered again keeps its one slot, even once the table is full; a new
** one is then refused. A registered listener hears a run end. */
static void terminal_listeners_fill_up(void **state) {
  (void)state;
  fx_init(); /* the models are registered */
  assert_int_equal(rt__toolrun_on_terminal(noop_a), 0);
  assert_int_equal(rt__toolrun_on_terminal(noop_a), 0);
  rt__toolrun_on_terminal(noop_b);
  rt__toolrun_on_terminal(noop_c);
  assert_int_equal(rt__toolrun_on_terminal(noop_d), -1); /* chat, a, b, c: full */
  assert_int_equal(rt__toolrun_on_terminal(noop_a), 0);  /* already there */
  assert_int_equal(rt_toolrun_at(F.w, 0, 1, MS(5), MS(1)), 0);
  sim_run(&F.s, 0x7fffffffffffffffLL, 100000);
  assert_true(noop_calls >= 1);
  fx_free();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(chat_requests_refuse_bad_arguments),
      cmocka_unit_test(toolrun_and_legacy_requests_refuse_bad_arguments),
      cmocka_unit_test(executor_and_thread_refuse_bad_specs),
      cmocka_unit_test(phase_registry_refuses_bad_names),
      cmocka_unit_test(world_inspection_out_of_range),
      cmocka_unit_test(keepalive_leases_and_default_throw),
      cmocka_unit_test(terminal_listeners_fill_up), /* last: it fills a process-wide table */
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
