/*
** test_sdk_refusals.c: every synchronous SDK call of rt_sdk.h refuses what
** it must (runtime/rt_sdk.c): bad arguments from a live handler (no name,
** no value, no buffer, schedules out of range), and every call made through
** a handle whose incarnation has died (the actor was evicted after the
** handler kept a copy of its handle): -1, 0 or nothing, never a write.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_agent.h"

#define S(x) ((int64_t)(x) * 1000000)

static sim SIM;
static rt_world *W;
static rt_sdk_actor stale; /* a copy of the request handler's handle */
static int refusals, checks;
static int64_t cron_id; /* the one schedule the handler may make */

#define REFUSED(expr) (checks++, ((expr) == -1 ? refusals++ : printf("# not refused: %s\n", #expr)))

static rt_uc_status on_request(void *st, rt_sdk_actor *self, const char *method,
                               const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  char buf[64], err[160];
  int created = 7;
  (void)st, (void)method, (void)args, (void)fr;
  stale = *self;
  rt_sdk_when soon = {S(1), 0, NULL}, neg = {-1, 0, NULL}, month = {0, S(31LL * 86400), NULL};
  rt_sdk_when long_cron = {0, 0, "* * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * *"};
  char long_cb[64], long_payload[300];
  memset(long_cb, 'c', 48);
  long_cb[48] = '\0';
  memset(long_payload, '1', 299);
  long_payload[299] = '\0';
  REFUSED(rt_sdk_run_fiber(self, NULL, NULL));
  REFUSED(rt_sdk_run_fiber(self, "", NULL));
  REFUSED(rt_sdk_stash(self, 0, "1", 1));        /* outside a fiber */
  REFUSED(rt_sdk_stash(self, 0, NULL, 1));
  REFUSED(rt_sdk_stash(self, 424242, "1", 0));   /* no such fiber */
  REFUSED(rt_sdk_snapshot(self, 0, NULL, 8));
  REFUSED(rt_sdk_snapshot(self, 0, buf, 0));
  REFUSED(rt_sdk_schedule_with(self, NULL, &soon, NULL, -1, &created, err, sizeof err));
  assert_int_equal(created, 0);
  assert_non_null(strstr(err, "a callback name of 1 to 47 bytes"));
  REFUSED(rt_sdk_schedule_with(self, long_cb, &soon, NULL, -1, NULL, NULL, 0));
  REFUSED(rt_sdk_schedule_with(self, "cb", NULL, NULL, -1, NULL, NULL, 0));
  REFUSED(rt_sdk_schedule_with(self, "cb", &soon, long_payload, -1, NULL, err, sizeof err));
  assert_non_null(strstr(err, "payload is longer than"));
  REFUSED(rt_sdk_schedule_with(self, "cb", &long_cron, NULL, -1, NULL, err, sizeof err));
  assert_non_null(strstr(err, "cron expression is longer"));
  REFUSED(rt_sdk_schedule_with(self, "cb", &neg, NULL, -1, NULL, err, sizeof err));
  assert_non_null(strstr(err, "out of range"));
  REFUSED(rt_sdk_schedule_with(self, "cb", &month, NULL, -1, NULL, err, sizeof err));
  REFUSED(rt_sdk_schedule_every(self, 0, "cb", NULL));
  REFUSED(rt_sdk_schedule_cron(self, NULL, "cb", NULL, err, sizeof err));
  assert_non_null(strstr(err, "a cron expression is required"));
  REFUSED(rt_sdk_schedule_cron(self, "", "cb", NULL, NULL, 0));
  REFUSED(rt_sdk_cancel_schedule(self, NULL));
  REFUSED(rt_sdk_schedule_payload(self, buf, sizeof buf)); /* not in a schedule callback */
  checks++, refusals += rt_sdk_schedule_attempt(self) == 0 ? 1 : 0;
  REFUSED(rt_sdk_save_messages(self, ""));
  REFUSED(rt_sdk_save_messages(self, NULL));
  REFUSED(rt_sdk_open_agent_tools(self, NULL, 4));
  rt_sdk_effect(self, NULL, "k"); /* no name: nothing */
  cron_id = rt_sdk_schedule_cron(self, "*/5 * * * *", "tick", NULL, err, sizeof err);
  return out->status = RT_UC_DONE;
}

static const rt_usercode refusing_uc = {.name = "sdk-refusals", .on_request = on_request};

static void evict(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_actor((rt_world *)ctx, (uint32_t)arg, RT_DEATH_EVICT);
}

/* Adds an actor `id` of class Agent to W; its index. */
static uint32_t add_agent(const char *id) {
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "%s", id);
  snprintf(sp.cls, sizeof sp.cls, "Agent");
  return rt_actor_add(W, &sp);
}

/* A kept-trace simulation and a default world in SIM and W, with actor "a";
** its index. */
static uint32_t start_world(void) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&SIM, &sc), 0);
  SIM.trace.keep = 1;
  rt_config_default(&c);
  W = rt_world_new(&SIM, &c);
  assert_non_null(W);
  return add_agent("a");
}

/* Runs `uc` as actor a's code: one fetch at 1 s, evicted at 5 s, run to 10 s. */
static void run_evicted(uint32_t a, const rt_usercode *uc) {
  assert_int_equal(rt__usercode_set(W, a, uc), 0);
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_after(&SIM, S(5), 0, evict, W, a);
  sim_run(&SIM, S(10), 0);
}

static void test_refusals(void **st) {
  (void)st;
  uint32_t a = start_world();
  run_evicted(a, &refusing_uc);
  assert_int_equal(refusals, checks);
  assert_int_equal(checks, 23); /* the REFUSED lines above */
  assert_true(cron_id > 0);
  size_t effects = 0, writes_before = 0;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    effects += SIM.trace.recs[i].kind == RT_EV_EFFECT;
    writes_before += SIM.trace.recs[i].kind == RT_EV_WRITE;
  }
  assert_int_equal(effects, 0);

  /* The handle of the dead incarnation: every call refuses, writes nothing. */
  char buf[32];
  int64_t ids[4];
  rt_sdk_when soon = {S(1), 0, NULL};
  assert_false(rt_sdk_alive(&stale));
  assert_int_equal(rt_sdk_index(&stale), a);
  assert_string_equal(rt_sdk_id(&stale), "a");
  assert_string_equal(rt_sdk_class(&stale), "Agent");
  assert_int_equal(rt_sdk_run_fiber(&stale, "job", NULL), -1);
  assert_int_equal(rt_sdk_stash(&stale, 1, "1", 0), -1);
  assert_int_equal(rt_sdk_snapshot(&stale, 1, buf, sizeof buf), -1);
  assert_int_equal(rt_sdk_keepalive(&stale), -1);
  assert_int_equal(rt_sdk_keepalive_dispose(&stale, 1), -1);
  assert_int_equal(rt_sdk_schedule_with(&stale, "cb", &soon, NULL, -1, NULL, buf, sizeof buf), -1);
  assert_string_equal(buf, "the actor is gone");
  assert_int_equal(rt_sdk_schedule(&stale, S(1), "cb", NULL), -1);
  assert_int_equal(rt_sdk_cancel_schedule(&stale, "cb"), -1);
  assert_int_equal(rt_sdk_cancel_schedule_id(&stale, 1), -1);
  assert_int_equal(rt_sdk_schedule_payload(&stale, buf, sizeof buf), -1);
  assert_int_equal(rt_sdk_schedule_attempt(&stale), 0);
  assert_int_equal(rt_sdk_continue_last_turn(&stale), -1);
  assert_int_equal(rt_sdk_save_messages(&stale, "hi"), -1);
  assert_int_equal(rt_sdk_abort_agent_tool(&stale, 1), -1);
  assert_int_equal(rt_sdk_open_agent_tools(&stale, ids, 4), -1);
  size_t n_before = SIM.trace.n;
  rt_sdk_effect(&stale, "late", "k");
  assert_int_equal(SIM.trace.n, n_before);
  size_t writes_after = 0;
  for (size_t i = 0; i < SIM.trace.n; i++) writes_after += SIM.trace.recs[i].kind == RT_EV_WRITE;
  assert_int_equal(writes_after, writes_before);
  rt_world_free(W);
  sim_free(&SIM);
}


/* ---- tool runs, effects and handle edges (issue #16) ------------------- */

static int checks2, refusals2;
static uint32_t child_b;
#define REFUSED2(expr) (checks2++, ((expr) == -1 ? refusals2++ : printf("# not refused: %s\n", #expr)))

/* A live handler: runAgentTool with each bad argument (status set to -1),
** tool status and open runs without room, a schedule refused without an
** error buffer, and three effects (key empty, missing, given). */
static rt_uc_status on_request_edges(void *st, rt_sdk_actor *self, const char *method,
                                     const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st, (void)method, (void)args, (void)fr;
  int status = 5;
  char buf[64];
  int64_t ids[2];
  rt_sdk_tool_opts ok = {1, S(1)}, neg_run = {-1, S(1)}, big_run = {RT_SDK_MAX_RUN_ID + 1, S(1)},
                   neg_work = {1, -1};
  rt_sdk_when neg = {-1, 0, NULL};
  stale = *self;
  REFUSED2(rt_sdk_run_agent_tool(self, child_b, NULL, NULL));
  REFUSED2(rt_sdk_run_agent_tool(self, self->w->n_actors, &ok, &status));
  assert_int_equal(status, -1);
  status = 5;
  REFUSED2(rt_sdk_run_agent_tool(self, self->a, &ok, &status));
  assert_int_equal(status, -1);
  REFUSED2(rt_sdk_run_agent_tool(self, child_b, &neg_run, &status));
  REFUSED2(rt_sdk_run_agent_tool(self, child_b, &big_run, &status));
  REFUSED2(rt_sdk_run_agent_tool(self, child_b, &neg_work, &status));
  REFUSED2(rt_sdk_agent_tool_status(self, 1, NULL, 8));
  buf[0] = 'x';
  REFUSED2(rt_sdk_agent_tool_status(self, 1, buf, 0));
  assert_int_equal(buf[0], 'x'); /* no room: untouched */
  REFUSED2(rt_sdk_open_agent_tools(self, ids, -1));
  REFUSED2(rt_sdk_schedule_with(self, "cb", &neg, NULL, -1, NULL, buf, 0));
  assert_int_equal(buf[0], 'x');
  REFUSED2(rt_sdk_schedule_cron(self, "", "cb", NULL, buf, 0));
  assert_int_equal(buf[0], 'x');
  /* no model registered its calls: each call refuses */
  rt_model_calls saved = rt__model_calls;
  memset(&rt__model_calls, 0, sizeof rt__model_calls);
  REFUSED2(rt_sdk_continue_last_turn(self));
  REFUSED2(rt_sdk_save_messages(self, "[]"));
  REFUSED2(rt_sdk_chat_cancel(self));
  REFUSED2(rt_sdk_abort_agent_tool(self, 1));
  REFUSED2(rt_sdk_open_agent_tools(self, ids, 2));
  REFUSED2(rt_sdk_run_agent_tool(self, child_b, &ok, &status));
  REFUSED2(rt_sdk_agent_tool_status(self, 1, buf, sizeof buf));
  rt__model_calls = saved;
  /* storage broken (a commit failed): every write of the agent store refuses */
  rt_sched_row row;
  memset(&row, 0, sizeof row);
  row.id = 99;
  self->w->actors[self->a].mem->storage_broken = 1;
  REFUSED2(rt__w_stash(self->w, self->a, 1, 2));
  REFUSED2(rt__w_stash_value(self->w, self->a, 1, "{}", 1));
  REFUSED2(rt__w_schedule_put(self->w, self->a, &row));
  REFUSED2(rt__w_schedule_delete(self->w, self->a, 99, "cb"));
  REFUSED2(rt__w_schedule_time(self->w, self->a, 99, 5, 0, "cb"));
  REFUSED2(rt__w_schedule_running(self->w, self->a, 99, 1, 5, "cb"));
  self->w->actors[self->a].mem->storage_broken = 0;
  rt_sdk_effect(self, "e", "");
  rt_sdk_effect(self, "e", NULL);
  rt_sdk_effect(self, "e", "k");
  return out->status = RT_UC_DONE;
}

static const rt_usercode edges_uc = {.name = "sdk-edges", .on_request = on_request_edges};

static void test_edges(void **st) {
  (void)st;
  uint32_t a = start_world();
  child_b = add_agent("b");
  run_evicted(a, &edges_uc);
  assert_int_equal(checks2, 24);
  assert_int_equal(refusals2, checks2);
  size_t effects = 0, toolruns = 0;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    effects += SIM.trace.recs[i].kind == RT_EV_EFFECT;
    toolruns += SIM.trace.recs[i].kind == RT_EV_TOOLRUN_INSERT;
  }
  assert_int_equal(effects, 3);
  assert_int_equal(toolruns, 0);
  /* the dead incarnation's handle, a handle with no incarnation, none */
  rt_sdk_tool_opts ok = {1, S(1)};
  int status = 5;
  char err[32] = "x";
  assert_int_equal(rt_sdk_chat_cancel(&stale), -1);
  assert_int_equal(rt_sdk_run_agent_tool(&stale, child_b, &ok, &status), -1);
  assert_int_equal(status, -1);
  assert_int_equal(rt_sdk_agent_tool_status(&stale, 1, err, sizeof err), -1);
  assert_string_equal(err, "");
  assert_int_equal(rt_sdk_schedule_every(&stale, S(1), "cb", NULL), -1);
  rt_sdk_actor none = stale;
  none.m = NULL;
  assert_false(rt_sdk_alive(&none));
  assert_int_equal(rt_sdk_keepalive(&none), -1);
  assert_false(rt_sdk_alive(NULL));
  /* actors out of range */
  assert_int_equal(rt_alarm_preset(W, W->n_actors, S(20)), -1);
  assert_int_equal(rt_request_at(W, W->n_actors, RT_ENTRY_FETCH, S(20)), -1);
  rt_world_free(W);
  sim_free(&SIM);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
