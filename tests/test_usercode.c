/*
** test_usercode.c: the user-code seam (issue #13 item 1). A table written
** here in C, not the declarative one, drives an actor through
** rt_usercode.h and rt_sdk.h only: a fiber body that stashes JSON, yields
** work and charges an external effect; an onFiberRecovered that throws on
** its first call and runs the fiber again itself on the second; per-
** incarnation state that a death throws away. The Lua slot refuses clearly.
** Methods and RPC: a script's self:call served by a coded table's on_call,
** and a coded table calling a script (rt__user_call, call_reply).
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

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

static sim SIM;
static rt_world *W;
static int opens, closes;

/* ---- the user code ------------------------------------------------------- */

typedef struct inc_state {
  int serial;               /* which open made it */
  int steps;                /* fiber steps run by this incarnation */
} inc_state;

static void *c_open(const rt_usercode *uc, rt_sdk_actor *self, const char **err) {
  inc_state *s = calloc(1, sizeof *s);
  (void)uc;
  (void)self;
  if (!s) *err = "out of memory";
  if (s) s->serial = ++opens;
  return s;
}

static void c_close(void *st) {
  closes++;
  free(st);
}

static rt_uc_status c_on_start(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)fr;
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_SLEEP;
  out->cmd.min_us = 10000;
  return out->status;
}

/* "order": stash step 1, work 1 s, charge o1, stash step 2, return "ok". */
static rt_uc_status c_fiber_body(void *st, rt_sdk_actor *self, const char *name,
                                 const char *snapshot, rt_uc_frame *fr, rt_uc_out *out) {
  inc_state *s = st;
  (void)name;
  (void)snapshot;
  (void)fr;
  s->steps++;
  if (rt_sdk_stash(self, 0, "{\"step\":1}", 0)) return out->status = RT_UC_THREW;
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_WORK;
  out->cmd.min_us = out->cmd.max_us = S(1);
  return out->status;
}

static rt_uc_status c_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr, const rt_uc_in *in,
                             rt_uc_out *out) {
  inc_state *s = st;
  if (fr->hook == RT_UC_ON_START) return out->status = RT_UC_DONE;
  if (fr->hook != RT_UC_FIBER_BODY || !in->ok) return out->status = RT_UC_THREW;
  s->steps++;
  rt_sdk_effect(self, "charge", "o1");
  rt_sdk_stash(self, 0, "{\"step\":2}", 1);
  snprintf(out->value, sizeof out->value, "\"ok\"");
  return out->status = RT_UC_DONE;
}

/* Throws on its first call for a row; runs the fiber itself on the next. */
static rt_uc_status c_on_fiber_recovered(void *st, rt_sdk_actor *self, const rt_uc_recovery *ctx,
                                         rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)fr;
  assert_int_equal(rt__hook_call_count(self->w, self->a, ctx->id), ctx->call);
  if (ctx->call == 1) {
    snprintf(out->value, sizeof out->value, "first call throws");
    return out->status = RT_UC_THREW;
  }
  if (rt_sdk_run_fiber(self, ctx->name, ctx->snapshot) < 0) return out->status = RT_UC_THREW;
  out->action = RT_UC_ACTED;
  return out->status = RT_UC_DONE;
}

/* As a sub-agent: works 2 s, then throws. */
static rt_uc_status c_tool_run(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)fr;
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_SLEEP;
  out->cmd.min_us = S(2);
  return out->status;
}

static rt_uc_status c_child_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                   const rt_uc_in *in, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)in;
  if (fr->hook != RT_UC_TOOL_RUN) return out->status = RT_UC_DONE;
  snprintf(out->value, sizeof out->value, "tool broke");
  return out->status = RT_UC_THREW;
}

static const rt_usercode coded_child = {
    .name = "coded-child",
    .tool_run = c_tool_run,
    .resume = c_child_resume,
};

static const rt_usercode coded = {
    .name = "coded",
    .open = c_open,
    .close = c_close,
    .on_start = c_on_start,
    .fiber_body = c_fiber_body,
    .on_fiber_recovered = c_on_fiber_recovered,
    .resume = c_resume,
};

/* ---- harness ------------------------------------------------------------- */

static uint32_t world(int retain, const rt_usercode *uc) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  rt_actor_spec sp;
  assert_int_equal(sim_init(&SIM, &sc), 0);
  rt_config_default(&c);
  c.retain = retain ? RT_RETAIN_1729 : RT_RETAIN_NONE;
  W = rt_world_new(&SIM, &c);
  assert_non_null(W);
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "shop");
  snprintf(sp.cls, sizeof sp.cls, "Shop");
  uint32_t a = rt_actor_add(W, &sp);
  assert_int_equal(rt__usercode_set(W, a, uc), 0);
  opens = closes = 0;
  return a;
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

static rt_program order(void) {
  static rt_step none;
  rt_program p = {.steps = &none, .n_steps = 0};
  snprintf(p.name, sizeof p.name, "order");
  return p;
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  (void)arg;
  rt_kill_all(ctx, RT_DEATH_CRASH);
}

/* ---- tests ----------------------------------------------------------------- */

/* The coded body runs to its end through the table: stashes, work, effect,
** return value; the state was opened once and is closed with the world. */
static void test_fiber_body_through_table(void **st) {
  (void)st;
  uint32_t a = world(0, &coded);
  rt_program p = order();
  assert_int_equal(rt_fiber_awaited_at(W, a, &p, S(1)), 0);
  sim_run(&SIM, S(30), 0);
  assert_int_equal(count(RT_EV_STASH, "{\"step\":1}"), 1);
  assert_int_equal(count(RT_EV_STASH, "{\"step\":2}"), 1);
  assert_int_equal(count(RT_EV_EFFECT, "charge:o1"), 1);
  assert_int_equal(count(RT_EV_FIBER_DONE, "order"), 1);
  assert_int_equal(count(RT_EV_REQUEST_OK, "\"ok\""), 1);
  assert_int_equal(rt_count_fiber_rows(W, a), 0);
  assert_int_equal(opens, 1);
  done();
  assert_int_equal(closes, 1);
}

/* A crash after the first stash committed: the next incarnation opens a
** fresh state; its onFiberRecovered throws once (#1729 keeps the row),
** then on the follow-up alarm runs the fiber again itself. */
static void test_recovery_through_table(void **st) {
  (void)st;
  uint32_t a = world(1, &coded);
  rt_program p = order();
  assert_int_equal(rt_fiber_at(W, a, &p, S(1)), 0);
  sim_at(&SIM, S(1) + 500000, 0, crash_cb, W, 0);
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(5)), 0);
  sim_run(&SIM, S(600), 0);
  assert_int_equal(count(RT_EV_HOOK_END, "order"), 2);
  assert_int_equal(count(RT_EV_FIBER_RETAINED, "order"), 1);
  assert_int_equal(count(RT_EV_FIBER_RECOVERED, "order"), 1);
  assert_int_equal(count(RT_EV_EFFECT, "charge:o1"), 1); /* the first run died before it */
  assert_int_equal(count(RT_EV_FIBER_DONE, "order"), 1);
  assert_int_equal(rt_count_fiber_rows(W, a), 0);
  /* one state per incarnation: opened when it woke, closed when it died */
  assert_true(opens >= 2);
  assert_int_equal((size_t)opens, count(RT_EV_ACTOR_WAKE, NULL));
  assert_int_equal((size_t)closes, count(RT_EV_ACTOR_DEATH, NULL));
  done();
  assert_int_equal(closes, opens);
}

/* Same world twice: same trace hash. */
static void test_table_deterministic(void **st) {
  uint64_t h[2];
  (void)st;
  for (int k = 0; k < 2; k++) {
    uint32_t a = world(1, &coded);
    rt_program p = order();
    assert_int_equal(rt_fiber_at(W, a, &p, S(1)), 0);
    sim_at(&SIM, S(1) + 500000, 0, crash_cb, W, 0);
    assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(5)), 0);
    sim_run(&SIM, S(600), 0);
    h[k] = SIM.trace.hash;
    done();
  }
  assert_true(h[0] == h[1]);
}

/* A sub-agent whose own tool-run body works 2 s and throws: the parent's
** run ends in error when the body says, not when the parent asked. */
static void test_child_tool_run_through_table(void **st) {
  (void)st;
  uint32_t parent = world(0, &rt__uc_declarative);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "worker");
  snprintf(sp.cls, sizeof sp.cls, "Worker");
  uint32_t child = rt_actor_add(W, &sp);
  assert_int_equal(rt__usercode_set(W, child, &coded_child), 0);
  assert_int_equal(rt_toolrun_at(W, parent, child, S(60), S(1)), 0);
  sim_run(&SIM, S(30), 0);
  int errors = 0;
  int64_t at = -1;
  for (size_t i = 0; i < SIM.trace.n; i++) {
    const sim_rec *r = &SIM.trace.recs[i];
    if (r->kind == RT_EV_TOOLRUN_STATUS && r->b == RT_TR_ERROR) {
      errors++;
      at = r->t_us;
    }
  }
  assert_int_equal(errors, 1);
  assert_true(at > S(3) && at < S(4)); /* 1 s + 2 s of the body + latency, not 60 s */
  done();
}

/* The Lua table without a script (issue #13 item 1): every callback the
** script does not define falls back to the world's default table, so a
** declarative fiber that crashes and is recovered leaves the very trace it
** leaves under the declarative table (same hash), and both run to the end. */
static void test_lua_table_falls_back(void **st) {
  uint64_t h[2];
  const rt_usercode *ucs[2] = {&rt__uc_declarative, &rt__uc_lua};
  (void)st;
  for (int k = 0; k < 2; k++) {
    uint32_t a = world(1, ucs[k]);
    rt_program p = order();
    assert_int_equal(rt_fiber_at(W, a, &p, S(1)), 0);
    sim_at(&SIM, S(1) + 500000, 0, crash_cb, W, 0);
    assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(5)), 0);
    sim_run(&SIM, S(600), 0);
    assert_int_equal(count(RT_EV_STARTUP_FAIL, NULL), 0);
    assert_int_equal(count(RT_EV_FIBER_DONE, "order"), 1);
    assert_true(count(RT_EV_REQUEST_OK, NULL) >= 1);
    h[k] = SIM.trace.hash;
    done();
  }
  assert_true(h[0] == h[1]);
}

/* ---- methods and RPC through the table (MSG_INVOKE, MSG_RPC, CALL_USER) -- */

static int64_t reply_key;
static int reply_ok = -1;
static char reply_value[64];

/* A coded callee: "echo" answers {"echo": args}, anything else throws. */
static rt_uc_status c_on_call(void *st, rt_sdk_actor *self, const char *method,
                              const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)fr;
  if (strcmp(method, "echo") != 0) {
    snprintf(out->value, sizeof out->value, "no method %s", method);
    return out->status = RT_UC_THREW;
  }
  snprintf(out->value, sizeof out->value, "{\"echo\":%s}", args ? args : "null");
  return out->status = RT_UC_DONE;
}

/* A coded caller: its onStart calls "double"(7) on actor 1 (key 42); the
** reply lands in call_reply. */
static rt_uc_status c_call_on_start(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                    rt_uc_out *out) {
  (void)st;
  (void)fr;
  assert_int_equal(rt__user_call(self->w, self->a, 1, "double", "[7]", 42), 0);
  return out->status = RT_UC_DONE;
}

static void c_call_reply(void *st, rt_sdk_actor *self, int64_t key, int ok, const char *value) {
  (void)st;
  (void)self;
  reply_key = key;
  reply_ok = ok;
  snprintf(reply_value, sizeof reply_value, "%s", value ? value : "(null)");
}

static const rt_usercode coded_callee = {.name = "coded-callee", .on_call = c_on_call};
static const rt_usercode coded_caller = {
    .name = "coded-caller", .on_start = c_call_on_start, .call_reply = c_call_reply};

static uint32_t add_actor(const char *id) {
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "%s", id);
  return rt_actor_add(W, &sp);
}

static const char *log_at(int k) {
  for (size_t i = 0; i < SIM.trace.n; i++)
    if (SIM.trace.recs[i].kind == RT_EV_USER_LOG && k-- == 0)
      return sim_trace_str(&SIM.trace, SIM.trace.recs[i].s);
  return NULL;
}

/* A script's self:call reaches a coded table's on_call (its answer and its
** throw) and a plain actor's (null at once), all through rt_usercode.h. */
static void test_script_calls_coded_table(void **st) {
  static const char src[] =
      "local A = {}\n"
      "function A:go()\n"
      "  local r = self:call('coded', 'echo', {1, 'x'})\n"
      "  revenant.log('echo', r.echo[1], r.echo[2], #r.echo)\n"
      "  local ok, e = pcall(function() return self:call('coded', 'nope') end)\n"
      "  revenant.log('nope', ok, e)\n"
      "  revenant.log('plain', self:call('plain', 'anything') == nil)\n"
      "end\n"
      "return A\n";
  (void)st;
  uint32_t a = world(0, &rt__uc_declarative); /* "shop": the script */
  uint32_t coded_a = add_actor("coded");
  add_actor("plain");
  assert_int_equal(rt__usercode_set(W, coded_a, &coded_callee), 0);
  assert_int_equal(rt_actor_script(W, a, "caller.lua", src, strlen(src), NULL), 0);
  assert_int_equal(rt_invoke_at(W, a, "go", NULL, S(1)), 0);
  sim_run(&SIM, S(30), 0);
  assert_string_equal(rt_world_fatal(W), "");
  assert_non_null(log_at(2));
  assert_string_equal(log_at(0), "echo 1 x 2");
  assert_non_null(strstr(log_at(1), "nope false"));
  assert_non_null(strstr(log_at(1), "no method nope"));
  assert_string_equal(log_at(2), "plain true");
  assert_int_equal(count(RT_EV_REQUEST_OK, NULL), 1); /* go() answered */
  done();
}

/* A coded table calls a script's method with rt__user_call; the reply
** comes back through its call_reply with the caller's key. */
static void test_coded_table_calls_script(void **st) {
  static const char src[] =
      "local A = {}\nfunction A:double(x) return x * 2 end\nreturn A\n";
  (void)st;
  uint32_t a = world(0, &coded_caller);
  uint32_t callee = add_actor("doubler");
  assert_int_equal(callee, 1);
  assert_int_equal(rt_actor_script(W, callee, "doubler.lua", src, strlen(src), NULL), 0);
  reply_ok = -1;
  assert_int_equal(rt_request_at(W, a, RT_ENTRY_FETCH, S(1)), 0);
  sim_run(&SIM, S(30), 0);
  assert_string_equal(rt_world_fatal(W), "");
  assert_int_equal(reply_ok, 1);
  assert_int_equal(reply_key, 42);
  assert_string_equal(reply_value, "14");
  done();
}

/* require_field's scan: only a member of the top-level object counts, after
** any number of members before it (with escaped quotes, arrays and nested
** objects in their values); a key inside a nested object, a value that
** spells the name, an array, an unterminated string or no snapshot do not. */
static void test_snap_has_field(void **st) {
  (void)st;
  assert_int_equal(rt__snap_has_field("{\"pc\":3}", "pc"), 1);
  assert_int_equal(rt__snap_has_field("{\"a\":\"x\\\"y\",\"b\":[1,{\"c\":2}],\"cursor\":4}", "cursor"), 1);
  assert_int_equal(rt__snap_has_field("{\"a\":{\"cursor\":1}}", "cursor"), 0);
  assert_int_equal(rt__snap_has_field("{\"a\":\"cursor\"}", "cursor"), 0);
  assert_int_equal(rt__snap_has_field("{\"a\":[\"cursor\",2]}", "cursor"), 0);
  assert_int_equal(rt__snap_has_field("[\"cursor\"]", "cursor"), 0);
  assert_int_equal(rt__snap_has_field("{\"cursorx\":1,\"cur\":2}", "cursor"), 0);
  assert_int_equal(rt__snap_has_field("{\"a\":1,\"curs", "cursor"), 0);
  assert_int_equal(rt__snap_has_field("null", "cursor"), 0);
  assert_int_equal(rt__snap_has_field(NULL, "cursor"), 0);
}

/* A run fiber's snapshot is a step position only when it is exactly
** {"pc":N}: a value with more members, trailing text or no number is a
** user value (-1), resumed by value instead. */
static void test_snapshot_pc(void **st) {
  char buf[32];
  (void)st;
  rt__snapshot_text(buf, sizeof buf, 7);
  assert_int_equal(rt__snapshot_pc((const unsigned char *)buf), 7);
  assert_int_equal(rt__snapshot_pc((const unsigned char *)"{\"pc\":3,\"x\":1}"), -1);
  assert_int_equal(rt__snapshot_pc((const unsigned char *)"{\"pc\":3}x"), -1);
  assert_int_equal(rt__snapshot_pc((const unsigned char *)"{\"pc\":x}"), -1);
  assert_int_equal(rt__snapshot_pc((const unsigned char *)"null"), -1);
  assert_int_equal(rt__snapshot_pc(NULL), -1);
}

/* A script's onStart ends through rt__onstart_finish: one that throws
** fails the startup with its error (the request fails, nothing else runs);
** under the onstart_throw fault a script's onStart that returns is made to
** throw "onStart threw" once, and the next request starts cleanly. */
static void script_world(const char *src) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  rt_actor_spec sp;
  rt_config_default(&c);
  assert_int_equal(sim_init(&SIM, &sc), 0);
  W = rt_world_new(&SIM, &c);
  assert_non_null(W);
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "agent");
  assert_int_equal(rt_actor_add(W, &sp), 0);
  assert_int_equal(rt_actor_script(W, 0, "agent.lua", src, strlen(src), NULL), 0);
}

static const sim_rec *kind_at(uint32_t kind, size_t k) {
  for (size_t i = 0; i < SIM.trace.n; i++)
    if (SIM.trace.recs[i].kind == kind && k-- == 0) return &SIM.trace.recs[i];
  return NULL;
}

static void test_script_onstart_throws(void **st) {
  (void)st;
  script_world("return { onStart = function(self) error('boom') end,\n"
               "  m = function(self) return 1 end }");
  assert_int_equal(rt_invoke_at(W, 0, "m", NULL, MS(100)), 0);
  sim_run(&SIM, S(5), 0);
  const sim_rec *sf = kind_at(RT_EV_STARTUP_FAIL, 0);
  assert_non_null(sf);
  assert_non_null(strstr(sim_trace_str(&SIM.trace, sf->s), "boom"));
  assert_non_null(kind_at(RT_EV_REQUEST_FAIL, 0));
  assert_null(kind_at(RT_EV_REQUEST_OK, 0));
  done();

  script_world("return { onStart = function(self) end, m = function(self) return 1 end }");
  rt_onstart_throws(W, 0, 1);
  assert_int_equal(rt_invoke_at(W, 0, "m", NULL, MS(100)), 0);
  assert_int_equal(rt_invoke_at(W, 0, "m", NULL, S(2)), 0);
  sim_run(&SIM, S(5), 0);
  sf = kind_at(RT_EV_STARTUP_FAIL, 0);
  assert_non_null(sf);
  assert_string_equal(sim_trace_str(&SIM.trace, sf->s), "onStart threw");
  assert_null(kind_at(RT_EV_STARTUP_FAIL, 1));
  const sim_rec *ok = kind_at(RT_EV_REQUEST_OK, 0);
  assert_non_null(ok);
  assert_true(ok->t_us >= S(2));
  done();
}

/* rt_uc_out_clear leaves what a memset to 0 leaves, as far as anybody reads
** it: every scalar 0 and every text "" (a field it forgot keeps the 0xa5
** filling and fails here). */
static void test_out_clear_is_a_memset(void **st) {
  (void)st;
  rt_uc_out o, z;
  memset(&o, 0xa5, sizeof o);
  memset(&z, 0, sizeof z);
  rt_uc_out_clear(&o);
  assert_int_equal(o.status, z.status);
  assert_int_equal(o.cmd.kind, z.cmd.kind);
  assert_true(o.cmd.min_us == 0 && o.cmd.max_us == 0 && o.cmd.fiber == 0);
  assert_int_equal(o.cmd.target, 0);
  assert_string_equal(o.cmd.method, "");
  assert_string_equal(o.cmd.args, "");
  assert_string_equal(o.value, "");
  assert_int_equal(o.action, 0);
  assert_true(o.hold_us == 0);
  /* the struct has no field this test does not know: its size is theirs */
  assert_int_equal(sizeof o, sizeof(struct {
                     rt_uc_status status;
                     rt_uc_cmd cmd;
                     char value[RT_UC_TEXT];
                     int action;
                     int64_t hold_us;
                   }));
  assert_int_equal(sizeof o.cmd, sizeof(struct {
                     rt_uc_cmd_kind kind;
                     int64_t min_us, max_us;
                     uint32_t target;
                     int64_t fiber;
                     char method[64];
                     char args[RT_UC_TEXT];
                   }));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fiber_body_through_table),
      cmocka_unit_test(test_recovery_through_table),
      cmocka_unit_test(test_table_deterministic),
      cmocka_unit_test(test_child_tool_run_through_table),
      cmocka_unit_test(test_lua_table_falls_back),
      cmocka_unit_test(test_script_calls_coded_table),
      cmocka_unit_test(test_coded_table_calls_script),
      cmocka_unit_test(test_snap_has_field),
      cmocka_unit_test(test_snapshot_pc),
      cmocka_unit_test(test_script_onstart_throws),
      cmocka_unit_test(test_out_clear_is_a_memset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
