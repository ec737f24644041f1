/*
** test_luachat.c: the chat, alarm and schedule surface of Lua-scripted
** agents (runtime/rt_luaagent.c, rt_uc_lua.c; issue #13, docs/scripting.md):
** schedule payloads, cron and idempotent options, a schedule callback's
** (payload, schedule) arguments, tryN retries of a throwing callback and
** a waiting one that alarm() waits for; onAlarm; onChatRecovery's ctx and
** options, a throwing, badly answering or waiting onChatRecovery; the chat
** calls continueLastTurn, saveMessages and cancelChat; bad arguments give
** a clear error at the script's file:line. Cross-process hashes of the
** chat-recovery and digest scenarios are in tests/sh_lua_chat.sh.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lua_world.h"

/* A world with one actor "agent" running script src. */
static void make(world *x, const char *src) {
  world_start(x);
  world_actor(x, "agent", NULL, 0);
  world_script(x, src);
}

/* The index of the first record of `kind` whose s is `text` (NULL: any), or -1. */
static long index_of(world *x, uint32_t kind, const char *text) {
  for (size_t i = 0; i < x->s.trace.n; i++) {
    const sim_rec *r = &x->s.trace.recs[i];
    if (r->kind == kind && (!text || !strcmp(sim_trace_str(&x->s.trace, r->s), text)))
      return (long)i;
  }
  return -1;
}

/* The result of the k-th request_ok record (0-based), or NULL. */
static const char *result_of(world *x, int k) { return str_of(x, RT_EV_REQUEST_OK, k); }

/* A schedule callback gets (payload decoded, the SDK's Schedule object). */
static void test_schedule_payload_and_row(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:arm() return self:schedule(2, 'cb', {n = 7, tags = {'a', 'b'}}) end\n"
           "function A:cb(payload, s)\n"
           "  revenant.log(payload.n, payload.tags[2], s.callback, s.type, s.attempt, s.time)\n"
           "end\n"
           "function A:bare() return self:schedule('1s', 'nopayload') end\n"
           "function A:nopayload(payload, s) revenant.log(tostring(payload), s.id > 0) end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "arm", NULL, MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "bare", NULL, MS(200)), 0);
  sim_run(&x.s, MS(5000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 0), "nil true");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 1), "7 b cb delayed 1 2");
  done(&x);
}

/* cron and interval rows are idempotent by default; {idempotent = false}
** makes a new row each time, {idempotent = true} dedups a delayed one. */
static void test_schedule_idempotent_options(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:go()\n"
           "  local c1 = self:schedule('*/5 * * * *', 'tick', {k = 1})\n"
           "  local c2 = self:schedule('*/5 * * * *', 'tick', {k = 1})\n"
           "  local c3 = self:schedule('*/5 * * * *', 'tick', {k = 1}, {idempotent = false})\n"
           "  local d1 = self:schedule(60, 'later', 'p', {idempotent = true})\n"
           "  local d2 = self:schedule(60, 'later', 'p', {idempotent = true})\n"
           "  local d3 = self:schedule(60, 'later', 'p')\n"
           "  local e1 = self:scheduleEvery(30, 'every', {x = 1})\n"
           "  local e2 = self:scheduleEvery(30, 'every', {x = 1})\n"
           "  return {c1 == c2, c1 ~= c3, d1 == d2, d1 ~= d3, e1 == e2}\n"
           "end\n"
           "function A:tick() end function A:later() end function A:every() end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "go", NULL, MS(100)), 0);
  sim_run(&x.s, MS(1000), 0);
  assert_string_equal(result_of(&x, 0), "[true,true,true,true,true]");
  assert_int_equal(count_kind(&x, RT_EV_SCHEDULE_DEDUP), 3);
  done(&x);
}

/* Bad arguments raise a clear error at the script's file:line. */
static void test_schedule_bad_arguments(void **st) {
  static const struct {
    const char *call, *want;
  } cases[] = {
      {"self:schedule('61 * * * *', 'cb')", "agent.lua:2: schedule: Failed to parse 61"},
      {"self:schedule(5, 42)", "agent.lua:2: schedule: the callback must be a function's name"},
      {"self:schedule({}, 'cb')", "agent.lua:2: schedule: when must be seconds"},
      {"self:schedule(5, 'cb', nil, {idempotent = 'yes'})",
       "agent.lua:2: schedule: options.idempotent must be a boolean"},
      {"self:schedule(5, 'cb', nil, 7)", "agent.lua:2: schedule: options must be a table"},
      {"self:scheduleEvery(0, 'cb')", "agent.lua:2: scheduleEvery: the interval must be at least 1 second"},
      {"self:schedule(5, 'cb', {f = print})", "agent.lua:2:"},
      {"self:schedule(5, 'cb', string.rep('x', 300))", "agent.lua:2: schedule: the payload is 302 bytes"},
      {"self:saveMessages('')", "agent.lua:2: saveMessages: the user message must be a non-empty string"},
      {"self:saveMessages()", "agent.lua:2: saveMessages: the user message must be a non-empty string, not nil"},
      {"self:schedule('5 * * *', 'cb')", "agent.lua:2: schedule: Invalid cron expression: expected 5 or 6"},
      {"self:schedule('*/0 * * * *', 'cb')", "agent.lua:2: schedule: Failed to parse step"},
      {"self:schedule(nil, 'cb')", "agent.lua:2: schedule: when must be seconds"},
      {"self:schedule(-5, 'cb')", "agent.lua:2: a duration must be a number from 0 to 10000000000 s (got -5)"},
      {"self:schedule(1e300, 'cb')", "agent.lua:2: a duration must be a number from 0 to 10000000000 s (got 1e+300)"},
      {"self:schedule(0/0, 'cb')", "agent.lua:2: a duration must be a number from 0 to 10000000000 s (got NaN)"},
      {"self:schedule('1e300s', 'cb')", "agent.lua:2: bad duration '1e300s': at most about 317 years"},
      {"self:scheduleEvery('-1s', 'cb')", "agent.lua:2: bad duration '-1s'"},
      {"self:scheduleEvery(5)", "agent.lua:2: scheduleEvery: the callback must be a function's name"},
      {"self:schedule(5, 'cb', nil, {idempotent = true, retry = {}})",
       "agent.lua:2: schedule: unknown option 'retry' (idempotent is the one modelled)"},
      {"self:scheduleEvery(5, 'cb', nil, {zz = 1, aa = 2})", "agent.lua:2: scheduleEvery: unknown option 'aa'"},
      {"revenant.work(-1)", "agent.lua:2: a duration must be a number from 0 to 10000000000000 ms (got -1)"},
      /* the SDK throws `this.x is not a function` at the call, not when the row runs */
      {"self:schedule(5, 'nosuch')",
       "agent.lua:2: schedule: this.nosuch is not a function (agent.lua has no function 'nosuch')"},
      {"self:scheduleEvery(5, 'tikc')",
       "agent.lua:2: scheduleEvery: this.tikc is not a function (agent.lua has no function 'tikc'; "
       "did you mean 'tick'?)"},
      {"self:schedule('*/5 * * * *', 'ticks', {n = 1})", "did you mean 'tick'?)"},
      {"self:schedule(5, 'continueLastTurn')", "agent.lua:2: schedule: 'continueLastTurn' is an SDK method, "
                                               "which revenant does not run as a schedule callback"},
      {"self:keepAliveWhile(nil)", "agent.lua:2: keepAliveWhile: fn must be a function, not nil"},
      {"self:keepAliveWhile('go')", "agent.lua:2: keepAliveWhile: fn must be a function, not string"},
      {"self:cancelSchedule({})", "agent.lua:2: cancelSchedule: give a schedule id (an integer) or a "
                                  "callback name (a string), not table"},
      {"self:cancelSchedule(1.5)", "agent.lua:2: cancelSchedule: give a schedule id (an integer) or a callback "
                                   "name (a string), not a fraction"},
      {"self:stash(1)", "agent.lua:2: stash() called outside a fiber"},
      {"self.sql:exec('SELEC 1')", "agent.lua:2: sql: near "},
      {"self.sql:exec('SELECT ?', print)", "agent.lua:2: sql: cannot bind a function value"},
      {"self.sql:exec(nil)", "agent.lua:2: sql:exec: the SQL must be a string, not nil"},
      {"self:call('agent', 'go', {f = print})", "agent.lua:2: call: args: cannot convert to JSON: a function value"},
      {"self:schedule(5, 'cb', {s = 'caf\\233'})", "agent.lua:2: cannot convert to JSON: a string that is not UTF-8 "
                                                  "text (byte 0xe9 at byte 4 of 4)"},
      {"self.sql.exec('SELECT 1')", "agent.lua:2: sql:exec: the SQL must be a string, not nil (call it as "
                                    "self.sql:exec(sql, ...))"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    world x;
    char src[512];
    (void)st;
    snprintf(src, sizeof src, "local A = {}\nfunction A:go() return select(2, pcall(function() %s end))\n"
             "end\nfunction A:cb() end\nfunction A:tick() end\nreturn A\n", cases[i].call);
    make(&x, src);
    assert_int_equal(rt_invoke_at(x.w, 0, "go", NULL, MS(100)), 0);
    sim_run(&x.s, MS(1000), 0);
    const char *r = result_of(&x, 0);
    assert_non_null(r);
    if (!strstr(r, cases[i].want)) fail_msg("%s: got %s, want %s", cases[i].call, r, cases[i].want);
    assert_int_equal(count_kind(&x, RT_EV_SCHEDULE_SET), 0); /* nothing was written */
    done(&x);
  }
}

/* revenant.effect's value: a table as JSON (tostring put its address in
** the trace, so two runs differed), a function refused at file:line. */
static void test_effect_values(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:go()\n"
           "  revenant.effect('mail', {to = 'ops', n = 2})\n"
           "  revenant.effect('flag', true)\n"
           "  return select(2, pcall(revenant.effect, 'bad', print))\n"
           "end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "go", NULL, MS(100)), 0);
  sim_run(&x.s, MS(1000), 0);
  assert_string_equal(str_of(&x, RT_EV_EFFECT, 0), "mail:{\"n\":2,\"to\":\"ops\"}");
  assert_string_equal(str_of(&x, RT_EV_EFFECT, 1), "flag:true");
  assert_int_equal(count_kind(&x, RT_EV_EFFECT), 2);
  assert_non_null(strstr(result_of(&x, 0), "revenant.effect: the value must be a string, number, "
                                           "boolean or table, not function"));
  done(&x);
}

/* A throwing callback is retried by tryN (schedule_retry), and its second
** attempt sees schedule.attempt 2; a callback that waits holds alarm():
** the row's deletion and alarm_done come after its work. */
static void test_schedule_retry_and_wait(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:arm() self:schedule(1, 'flaky', {to = 'ops'}) end\n"
           "function A:flaky(p, s)\n"
           "  revenant.log('attempt', s.attempt, p.to)\n"
           "  if s.attempt == 1 then error('busy') end\n"
           "  revenant.work(300)\n"
           "  revenant.log('sent')\n"
           "end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "arm", NULL, MS(100)), 0);
  sim_run(&x.s, MS(10000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 0), "attempt 1 ops");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 1), "attempt 2 ops");
  assert_int_equal(count_kind(&x, RT_EV_SCHEDULE_RETRY), 1);
  assert_string_equal(str_of(&x, RT_EV_SCRIPT_ERROR, 0), "flaky");
  assert_non_null(strstr(str2_of(&x, RT_EV_SCRIPT_ERROR, 0), "agent.lua:5: busy"));
  long sent = index_of(&x, RT_EV_USER_LOG, "sent");
  assert_true(sent >= 0);
  assert_true(index_of(&x, RT_EV_ALARM_DONE, NULL) > sent);
  /* the one-shot row is deleted after the callback's work, not before */
  long del = -1;
  for (size_t i = 0; i < x.s.trace.n; i++)
    if (x.s.trace.recs[i].kind == RT_EV_SCHEDULE_SET && x.s.trace.recs[i].b == -1) del = (long)i;
  assert_true(del > sent);
  done(&x);
}

/* onAlarm runs at every alarm, before the due schedules. */
static void test_on_alarm(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:arm() self:scheduleEvery(10, 'tick') end\n"
           "function A:tick() revenant.log('tick') end\n"
           "function A:onAlarm() revenant.log('alarm') end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "arm", NULL, MS(100)), 0);
  sim_run(&x.s, MS(35000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  int fires = count_kind(&x, RT_EV_ALARM_FIRE);
  assert_int_equal(fires, 3);
  assert_int_equal(count_kind(&x, RT_EV_USER_LOG), 2 * fires);
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 0), "alarm");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 1), "tick");
  done(&x);
}

static void crash_at(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_actor((rt_world *)ctx, (uint32_t)arg, RT_DEATH_CRASH);
}

/* An onAlarm that waits runs on while alarm() goes on; one that throws is
** reported and alarm() still runs the due schedules. */
static void test_on_alarm_waits_or_throws(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:arm() self:schedule(1, 'tick') end\n"
           "function A:tick() revenant.log('tick') end\n"
           "function A:onAlarm()\n"
           "  if revenant.now() < 1500 then error('alarm broke') end\n"
           "end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "arm", NULL, MS(100)), 0);
  sim_run(&x.s, MS(1500), 0);
  assert_int_equal(count_kind(&x, RT_EV_SCRIPT_ERROR), 1);
  assert_string_equal(str_of(&x, RT_EV_SCRIPT_ERROR, 0), "onAlarm");
  assert_non_null(strstr(str2_of(&x, RT_EV_SCRIPT_ERROR, 0), "agent.lua:5: alarm broke"));
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 0), "tick"); /* the schedule still ran */
  done(&x);
  make(&x, "local A = {}\n"
           "function A:arm() self:schedule(1, 'tick') end\n"
           "function A:tick() revenant.log('tick') end\n"
           "function A:onAlarm() revenant.work(2000) revenant.log('alarm done') end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "arm", NULL, MS(100)), 0);
  sim_run(&x.s, MS(5000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 0), "tick");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 1), "alarm done");
  assert_true(index_of(&x, RT_EV_ALARM_DONE, NULL) < index_of(&x, RT_EV_USER_LOG, "alarm done"));
  done(&x);
}

/* A chat turn cut after its first chunks, recovered by a request: what the
** script's onChatRecovery saw (its log) and what the SDK did. */
static void run_chat_recovery(world *x, const char *hook) {
  char src[1024];
  snprintf(src, sizeof src, "local A = {}\nfunction A:onChatRecovery(ctx)\n%s\nend\nreturn A\n", hook);
  make(x, src);
  assert_int_equal(rt_chat_at(x->w, 0, 10, MS(200), MS(1000)), 0);
  sim_at(&x->s, MS(1450), 0, crash_at, x->w, 0);
  assert_int_equal(rt_request_at(x->w, 0, RT_ENTRY_FETCH, MS(10000)), 0);
  sim_run(&x->s, MS(30000), 0);
}

static void test_chat_recovery_ctx_and_options(void **st) {
  world x;
  rt_chat_recovery_info in;
  (void)st;
  run_chat_recovery(&x, "revenant.log(ctx.requestId, ctx.partialText, #ctx.partialParts,\n"
                        "  ctx.partialParts[1].type, #ctx.messages, ctx.messages[1].role,\n"
                        "  ctx.lastBody.chunks, ctx.recoveryData == nil)\n"
                        "return {continue = false}");
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_int_equal(rt_chat_last_recovery(x.w, 0, &in), 0);
  assert_int_equal(in.persist, 1);
  assert_int_equal(in.cont, 0);
  const char *log = str_of(&x, RT_EV_USER_LOG, 0);
  assert_non_null(log);
  char want[1200];
  snprintf(want, sizeof want, "%lld %s 1 text 1 user 10 true", (long long)in.request_id,
           in.partial_text);
  assert_string_equal(log, want);
  assert_string_equal(str_of(&x, RT_EV_CHAT_RECOVERY, 0), "{continue:false}");
  done(&x);
}

/* nil is the SDK's {}; persist = false is honoured. */
static void test_chat_recovery_nil_and_persist(void **st) {
  world x;
  rt_chat_recovery_info in;
  (void)st;
  run_chat_recovery(&x, "return nil");
  assert_int_equal(rt_chat_last_recovery(x.w, 0, &in), 0);
  assert_true(in.persist && in.cont);
  assert_int_equal(count_kind(&x, RT_EV_SCRIPT_ERROR), 0);
  done(&x);
  run_chat_recovery(&x, "return {persist = false, continue = false}");
  assert_int_equal(rt_chat_last_recovery(x.w, 0, &in), 0);
  assert_true(!in.persist && !in.cont);
  done(&x);
}

/* A throw (at once or after a wait), or options that are not options:
** script_error, the SDK's defaults apply. */
static void test_chat_recovery_failures(void **st) {
  static const struct {
    const char *hook, *want;
  } cases[] = {
      {"error('no provider')", "agent.lua:3: no provider"},
      {"return {contine = false}", "unknown option 'contine'"},
      {"return {persist = 'no'}", "option persist must be a boolean"},
      {"return {persist = 'no', continue = 1}", "option continue must be a boolean"}, /* sorted */
      {"return {zz = 1, contine = false, persist = true}", "unknown option 'contine'"}, /* sorted */
      {"return 'continue'", "must return nil or a table of options"},
      {"revenant.work(100) error('late')", "agent.lua:3: late"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    world x;
    rt_chat_recovery_info in;
    (void)st;
    run_chat_recovery(&x, cases[i].hook);
    assert_string_equal(rt_world_fatal(x.w), "");
    assert_int_equal(rt_chat_last_recovery(x.w, 0, &in), 0);
    assert_true(in.persist && in.cont); /* the defaults */
    assert_string_equal(str_of(&x, RT_EV_SCRIPT_ERROR, 0), "onChatRecovery");
    const char *e = str2_of(&x, RT_EV_SCRIPT_ERROR, 0);
    assert_non_null(e);
    if (!strstr(e, cases[i].want)) fail_msg("%s: got %s, want %s", cases[i].hook, e, cases[i].want);
    done(&x);
  }
}

/* The SDK awaits onChatRecovery: one that waits (work, a sleep) answers
** later, and the SDK applies its options only then; the turn's fiber row
** stays open meanwhile (the hook ends after the wait). */
static void test_chat_recovery_waits(void **st) {
  world x;
  rt_chat_recovery_info in;
  (void)st;
  run_chat_recovery(&x, "revenant.log('before') revenant.work(300)\n"
                        "revenant.sleep('200ms') revenant.log('after')\n"
                        "return {persist = false, continue = false}");
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_int_equal(count_kind(&x, RT_EV_SCRIPT_ERROR), 0);
  assert_int_equal(rt_chat_last_recovery(x.w, 0, &in), 0);
  assert_true(!in.persist && !in.cont); /* the options it answered after the wait */
  long after = index_of(&x, RT_EV_USER_LOG, "after");
  long rec = index_of(&x, RT_EV_CHAT_RECOVERY, NULL);
  assert_true(index_of(&x, RT_EV_USER_LOG, "before") < after);
  assert_true(after >= 0 && after < rec);
  assert_true(x.s.trace.recs[rec].t_us >= MS(10500)); /* 10 s wake + 300 ms work + 200 ms sleep */
  assert_int_equal(count_kind(&x, RT_EV_CHAT_RECOVERY), 1);
  done(&x);
}

/* A crash while onChatRecovery waits: the row stays, so the next wake
** recovers the turn again (a second ctx, one decision). */
static void test_chat_recovery_crash_while_waiting(void **st) {
  world x;
  rt_chat_recovery_info in;
  (void)st;
  make(&x, "local A = {}\nfunction A:onChatRecovery(ctx)\n"
           "  revenant.log('asking') revenant.sleep('500ms') revenant.log('answered')\n"
           "  return {continue = false}\nend\nreturn A\n");
  assert_int_equal(rt_chat_at(x.w, 0, 10, MS(200), MS(1000)), 0);
  sim_at(&x.s, MS(1450), 0, crash_at, x.w, 0);
  assert_int_equal(rt_request_at(x.w, 0, RT_ENTRY_FETCH, MS(10000)), 0);
  sim_at(&x.s, MS(10200), 0, crash_at, x.w, 0); /* during the first wait */
  assert_int_equal(rt_request_at(x.w, 0, RT_ENTRY_FETCH, MS(12000)), 0);
  sim_run(&x.s, MS(30000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_int_equal(count_kind(&x, RT_EV_CHAT_RECOVERY_CTX), 2);
  assert_int_equal(count_kind(&x, RT_EV_CHAT_RECOVERY), 1);
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 0), "asking");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 1), "asking");
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 2), "answered");
  assert_int_equal(rt_chat_last_recovery(x.w, 0, &in), 0);
  assert_true(in.persist && !in.cont);
  assert_true(x.s.trace.recs[index_of(&x, RT_EV_CHAT_RECOVERY, NULL)].t_us >= MS(12500));
  done(&x);
}

/* continueLastTurn without an assistant message is skipped; cancelChat
** without a running turn cancels nothing; with one it cancels it, and
** saveMessages answers a new user message. */
static void test_chat_calls(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:more() return self:continueLastTurn() end\n"
           "function A:stop() return self:cancelChat() end\n"
           "function A:ask(text) return self:saveMessages(text) > 0 end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "more", NULL, MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "stop", NULL, MS(200)), 0);
  assert_int_equal(rt_chat_at(x.w, 0, 10, MS(200), MS(1000)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "stop", NULL, MS(1500)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "more", NULL, MS(5000)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "ask", "[\"and then?\"]", MS(10000)), 0);
  sim_run(&x.s, MS(20000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_string_equal(result_of(&x, 0), "\"skipped\"");
  assert_string_equal(result_of(&x, 1), "false");
  /* result 2 is the chat request's own */
  assert_string_equal(result_of(&x, 3), "true");
  assert_string_equal(result_of(&x, 4), "\"started\"");
  assert_string_equal(result_of(&x, 5), "true");
  assert_int_equal(count_kind(&x, RT_EV_CHAT_CANCEL), 2);
  rt_chat_message ms[8];
  int n = rt_chat_messages(x.w, 0, ms, 8);
  assert_int_equal(n, 4); /* user, its (cancelled, continued) answer, "and then?", its answer */
  assert_string_equal(ms[2].text, "and then?");
  assert_int_equal(ms[3].role, 2);
  done(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schedule_payload_and_row),
      cmocka_unit_test(test_schedule_idempotent_options),
      cmocka_unit_test(test_schedule_bad_arguments),
      cmocka_unit_test(test_effect_values),
      cmocka_unit_test(test_schedule_retry_and_wait),
      cmocka_unit_test(test_on_alarm),
      cmocka_unit_test(test_on_alarm_waits_or_throws),
      cmocka_unit_test(test_chat_recovery_ctx_and_options),
      cmocka_unit_test(test_chat_recovery_nil_and_persist),
      cmocka_unit_test(test_chat_recovery_failures),
      cmocka_unit_test(test_chat_recovery_waits),
      cmocka_unit_test(test_chat_recovery_crash_while_waiting),
      cmocka_unit_test(test_chat_calls),
  };
  return cmocka_run_group_tests_name("luachat", tests, NULL, NULL);
}
