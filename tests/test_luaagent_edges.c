/*
** test_luaagent_edges.c: the primitives a Lua-scripted agent gets
** (runtime/rt_luaagent.c, docs/scripting.md), each with what it must accept
** and what it must refuse with a clear message: durations, sql:exec
** bindings, column types and statement checks, schedules and their
** cancellation, effects, stash outside a fiber, call and runFiber argument
** checks, keepAlive disposers. One script, one request per group; each
** answers a JSON summary the test compares.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lua_world.h"

static const char script[] =
    "local A = {}\n"
    "local function try(f, ...)\n"
    "  local ok, e = pcall(f, ...)\n"
    "  if ok then return 'ok' end\n"
    "  return (tostring(e):gsub('^[^:]*:%d+: ', ''))\n"
    "end\n"
    "function A:durations()\n"
    "  local t0 = revenant.now()\n"
    "  local r = {}\n"
    "  for _, d in ipairs({1, '250ms', '2s', '1.5m', '1h', '10us', 0}) do r[#r + 1] = try(revenant.work, d) end\n"
    "  r[#r + 1] = revenant.now() - t0 -- ms: 1 + 250 + 2000 + 90000 + 3600000 (+ 10 us)\n"
    "  for _, d in ipairs({'5x', '', 'ms', -1, 1e14, '-2s'}) do r[#r + 1] = try(revenant.work, d) end\n"
    "  r[#r + 1] = try(revenant.work, {})\n"
    "  return r\n"
    "end\n"
    "function A:sql()\n"
    "  local s, r = self.sql, {}\n"
    "  s:exec('CREATE TABLE IF NOT EXISTS t(a, b, c, d, e, f)')\n"
    "  s:exec('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)', nil, true, 7, 2.5, 'x', {k = 1})\n"
    "  local row = s:exec('SELECT a, b, c, d, e, f FROM t;  ')[1]\n"
    "  r.row = {a = row.a == nil, b = row.b, c = row.c, d = row.d, e = row.e, f = row.f}\n"
    "  r.fn = try(s.exec, s, 'SELECT ?', print)\n"
    "  r.empty = try(s.exec, s, '')\n"
    "  r.spaces = try(s.exec, s, '   ')\n"
    "  r.two = try(s.exec, s, 'SELECT 1; SELECT 2')\n"
    "  r.syntax = try(s.exec, s, 'SELEC 1')\n"
    "  r.sdk = try(s.exec, s, 'DELETE FROM cf_agents_schedules')\n"
    "  r.notab = try(s.exec, s, 'SELECT * FROM nope')\n"
    "  r.changes = #s:exec('UPDATE t SET c = c + 1')\n"
    "  return r\n"
    "end\n"
    "function A:schedules()\n"
    "  local r = {}\n"
    "  r.long = try(self.schedule, self, 5, string.rep('c', 48))\n"
    "  r.bad = try(self.schedule, self, 'soon', 'tick')\n"
    "  local id = self:schedule(5, 'tick')\n"
    "  r.id = math.type(id)\n"
    "  r.every = math.type(self:scheduleEvery(1, 'pulse'))\n"
    "  r.every0 = try(self.scheduleEvery, self, 0, 'pulse')\n"
    "  r.by_id = self:cancelSchedule(id)\n"
    "  r.by_id_again = self:cancelSchedule(id)\n"
    "  r.missing_id = self:cancelSchedule(987654)\n"
    "  r.by_name = self:cancelSchedule('pulse')\n"
    "  r.missing_name = self:cancelSchedule('nothing')\n"
    "  return r\n"
    "end\n"
    "function A:misc()\n"
    "  local r = {}\n"
    "  revenant.effect('plain'); revenant.effect('keyed', 42); revenant.effect('nil', nil)\n"
    "  r.stash = try(self.stash, self, 1)\n"
    "  r.call_actor = try(self.call, self, 5, 'm')\n"
    "  r.call_method = try(self.call, self, 'other', 5)\n"
    "  r.fiber_name = try(self.runFiber, self, '', function() end)\n"
    "  r.fiber_fn = try(self.runFiber, self, 'job', 'notfn')\n"
    "  local dispose = self:keepAlive(); dispose(); dispose()\n"
    "  r.ka = self:keepAliveWhile(function() return 'held' end)\n"
    "  r.ka_err = try(self.keepAliveWhile, self, function() error('inner', 0) end)\n"
    "  return r\n"
    "end\n"
    "function A:misuse()\n"
    "  local r = {}\n"
    "  r.when = try(self.schedule, self, {}, 'tick')\n"
    "  r.idem = try(self.schedule, self, 5, 'tick', nil, {idempotent = 'yes'})\n"
    "  r.cancel_empty = self:cancelSchedule('')\n"
    "  r.sql_tail = try(self.sql.exec, self.sql, 'SELECT 1 ;  ')\n"
    "  r.sql_tail2 = try(self.sql.exec, self.sql, 'SELECT 1 ; x')\n"
    "  r.tool_child = try(self.runAgentTool, self, 'nobody', {})\n"
    "  return r\n"
    "end\n"
    "function A:commands()\n"
    "  local r = {}\n"
    "  r.ghost = try(self.call, self, 'ghost', 'm')\n"
    "  return r\n"
    "end\n"
    "function A:yield_bare() coroutine.yield() end\n"
    "function A:fibers()\n"
    "  local f = self:runFiber('job', function(ctx) ctx:stash({n = 1}); revenant.work(10); return {done = true} end)\n"
    "  local first = f:await()\n"
    "  local again = f:await()\n"
    "  local g = self:runFiber('boom', function() error('fiber broke', 0) end)\n"
    "  return {first = first, again = again, boom = try(g.await, g)}\n"
    "end\n"
    "function A:plain_rpc() return {v = self:call('plain', 'anything', {1})} end\n"
    "function A:late_stash()\n"
    "  local f = self:runFiber('short', function() return 1 end)\n"
    "  f:await()\n"
    "  return try(f.stash, f, 2)\n"
    "end\n"
    "function A:stash_ids()\n"
    "  local r = {}\n"
    "  local f = self:runFiber('ids', function(h)\n"
    "    r.float = try(h.stash, {id = h.id + 0.0}, {k = 1})\n"
    "    r.str = try(h.stash, {id = tostring(h.id)}, {k = 2})\n"
    "    r.none = try(h.stash, {}, {k = 3})\n"
    "    r.word = try(h.stash, {id = 'x'}, {k = 4})\n"
    "    r.half = try(h.stash, {id = h.id + 0.5}, {k = 5})\n"
    "    r.other = try(h.stash, {id = h.id + 1}, {k = 6})\n"
    "  end)\n"
    "  f:await()\n"
    "  return r\n"
    "end\n"
    "function A:forge_work() return coroutine.yield('work') end\n"
    "function A:forge_fiber() return coroutine.yield('runFiber', 'x') end\n"
    "function A:forge_await() return coroutine.yield('await') end\n"
    "function A:forge_call() return coroutine.yield('call', 'plain') end\n"
    "function A:forge_work2() return coroutine.yield('work', 5) end\n"
    "function A:forge_fiber2() return coroutine.yield('runFiber', {}, function() end) end\n"
    "function A:forge_await2() return coroutine.yield('await', 1) end\n"
    "function A:forge_call2() return coroutine.yield('call', {}, {}, {}) end\n"
    "function A:forge_tool2() return coroutine.yield('runAgentTool', {}, {}, {}, {}) end\n"
    "function A:args(a, b, c)\n"
    "  return {a = a, b = b, c = c}\n"
    "end\n"
    "function A:tick() end -- schedule needs its callback to exist (as the SDK)\n"
    "function A:pulse() end\n"
    "return A\n";

/* A world whose actor 0, "agent", runs `src` under the name edges.lua. */
static void make_src(world *x, const char *src) {
  world_start(x);
  world_actor(x, "agent", NULL, 0);
  assert_int_equal(rt_actor_script(x->w, 0, "edges.lua", src, strlen(src), NULL), 0);
}

static void make(world *x) { make_src(x, script); }

/* Runs `method` alone; its result JSON (request_ok) or "FAIL: <error>". */
static const char *answer(const char *method) {
  static char out[2048];
  world x;
  make(&x);
  assert_int_equal(rt_invoke_at(x.w, 0, method, NULL, MS(100)), 0);
  sim_run(&x.s, MS(20000000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  snprintf(out, sizeof out, "(none)");
  for (size_t i = 0; i < x.s.trace.n; i++) {
    const sim_rec *r = &x.s.trace.recs[i];
    if (r->kind == RT_EV_REQUEST_OK) snprintf(out, sizeof out, "%s", sim_trace_str(&x.s.trace, r->s));
    if (r->kind == RT_EV_REQUEST_FAIL)
      snprintf(out, sizeof out, "FAIL: %s", sim_trace_str(&x.s.trace, r->s));
  }
  done(&x);
  return out;
}

static void test_durations(void **st) {
  (void)st;
  assert_string_equal(answer("durations"),
                      "[\"ok\",\"ok\",\"ok\",\"ok\",\"ok\",\"ok\",\"ok\",3692251,\"bad duration '5x' (a number,"
                      " or \\\"250ms\\\", \\\"2s\\\", \\\"1.5m\\\", \\\"1h\\\")\",\"bad duration '' (a "
                      "number, or \\\"250ms\\\", \\\"2s\\\", \\\"1.5m\\\", \\\"1h\\\")\",\"bad duration"
                      " 'ms' (a number, or \\\"250ms\\\", \\\"2s\\\", \\\"1.5m\\\", \\\"1h\\\")\",\"a d"
                      "uration must be a number from 0 to 10000000000000 ms (got -1)\",\"a duration must"
                      " be a number from 0 to 10000000000000 ms (got 1e+14)\",\"bad duration '-2s' (a "
                      "number, or \\\"250ms\\\", \\\"2s\\\", \\\"1.5m\\\", \\\"1h\\\")\",\"a duration"
                      " must be a number or a string such as \\\"2s\\\", not table\"]");
}

/* sql:exec: bindings of every type, column types back, statement checks.
** The refused binding (a function) once leaked its prepared statement and
** with it the actor's connection (`make asan` reported it). */
static void test_sql(void **st) {
  (void)st;
  assert_string_equal(answer("sql"),
                      "{\"changes\":0,\"empty\":\"sql: an empty statement\",\"fn\":\"sql: cannot bind a"
                      " function value (parameter 1)\",\"notab\":\"sql: no such table: nope\",\"row\":{"
                      "\"a\":true,\"b\":1,\"c\":7,\"d\":2.5,\"e\":\"x\",\"f\":\"{\\\"k\\\":1}\"},\"sdk\""
                      ":\"sql: refused by the SQL sandbox: writes to cf_agents_schedules (the SDK's tab"
                      "les are read-only to user SQL)\",\"spaces\":\"sql: an empty statement\",\"syntax"
                      "\":\"sql: near \\\"SELEC\\\": syntax error\",\"two\":\"sql: one statement per ex"
                      "ec\"}");
}

static void test_schedules(void **st) {
  (void)st;
  assert_string_equal(answer("schedules"),
                      "{\"bad\":\"bad duration 'soon' (a number, or \\\"250ms\\\", \\\"2s\\\", \\\"1.5m"
                      "\\\", \\\"1h\\\")\",\"by_id\":true,\"by_id_again\":false,\"by_name\":true,\"ever"
                      "y\":\"integer\",\"every0\":\"scheduleEvery: the interval must be at least 1 second\","
                      "\"id\":\"integer\",\"long\":\"schedule: a callback name of 1 to 47 bytes is requir"
                      "ed\",\"missing_id\":false,\"missing_name\":false}");
}

static void test_misc(void **st) {
  (void)st;
  assert_string_equal(answer("misc"),
                      "{\"call_actor\":\"call: the actor must be its id (a string)\",\"call_method\":\""
                      "call: the method must be a string\",\"fiber_fn\":\"runFiber: fn must be a functi"
                      "on\",\"fiber_name\":\"runFiber: the name must be a non-empty string\",\"ka\":\"h"
                      "eld\",\"ka_err\":\"inner\",\"stash\":\"stash() called outside a fiber\"}");
}

/* Misuse the checks refuse at the call: a `when` of the wrong type, a
** non-boolean idempotent, an empty cancel, trailing text after a statement,
** a tool run to no actor. A statement with only blanks after its ';' runs. */
static void test_misuse(void **st) {
  (void)st;
  assert_string_equal(answer("misuse"),
                      "{\"cancel_empty\":false,\"idem\":\"schedule: options.idempotent must be a boolean\",\"sql_tail\":\"ok\",\"sql_tail2\":\"sql: one statement per exec\",\"tool_child\":\"runAgentTool: no other actor or class 'nobody' in the scenario\",\"when\":\"schedule: when must be seconds (a number or \\\"2s\\\") or a cron string (\\\"*/5 * * * *\\\"), not table\"}");
}

/* A call to an actor the scenario lacks fails in the caller; a bare
** coroutine.yield that reaches the host (no command) fails the request. */
static void test_commands(void **st) {
  (void)st;
  assert_string_equal(answer("commands"), "{\"ghost\":\"call: no actor 'ghost' in the scenario\"}");
  assert_string_equal(answer("yield_bare"),
                      "FAIL: yield_bare: coroutine.yield() outside a coroutine the script made "
                      "(wait with revenant.work or revenant.sleep)");
}

/* A fiber's handle: await gives its return value, again after it ended;
** a fiber that throws makes await throw its message. */
static void test_fibers(void **st) {
  (void)st;
  assert_string_equal(answer("fibers"),
                      "{\"again\":{\"done\":true},\"boom\":\"fiber broke\",\"first\":{\"done\":true}}");
}

/* Arguments: an array is spread, anything else is the one argument; text
** that is not JSON fails the request. The world's entry checks. */
static void test_invoke_args(void **st) {
  world x;
  (void)st;
  make(&x);
  assert_int_equal(rt_invoke_at(x.w, 0, "args", "[1,\"two\",{\"k\":3}]", MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "args", "{\"k\":1}", MS(200)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "args", "[]", MS(300)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "args", "not json", MS(400)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "absent", NULL, MS(500)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "", NULL, MS(600)), -1);
  assert_int_equal(rt_invoke_at(x.w, 0, NULL, NULL, MS(600)), -1);
  assert_int_equal(rt_invoke_at(x.w, 9, "args", NULL, MS(600)), -1);
  assert_int_equal(rt_actor_script(x.w, 9, "x.lua", "return {}", 9, NULL), -1);
  assert_int_equal(rt_actor_script(x.w, 0, NULL, "return {}", 9, NULL), -1);
  assert_int_equal(rt_actor_script(x.w, 0, "x.lua", NULL, 0, NULL), -1);
  rt_world_set_case(x.w, NULL);
  sim_run(&x.s, MS(2000), 0);
  static const char *const want[] = {
      "ok {\"a\":1,\"b\":\"two\",\"c\":{\"k\":3}}", /* spread */
      "ok {\"a\":{\"k\":1}}",                          /* one argument */
      "ok {\"a\":{}}",                                  /* [] is not spread */
      "ok {}",                                          /* not JSON: nil */
      "fail absent is not a method of agent's script"};
  size_t k = 0;
  char got[256];
  for (size_t i = 0; i < x.s.trace.n; i++) {
    const sim_rec *r = &x.s.trace.recs[i];
    if (r->kind != RT_EV_REQUEST_OK && r->kind != RT_EV_REQUEST_FAIL) continue;
    snprintf(got, sizeof got, "%s %s", r->kind == RT_EV_REQUEST_OK ? "ok" : "fail",
             sim_trace_str(&x.s.trace, r->s));
    assert_true(k < sizeof want / sizeof want[0]);
    assert_string_equal(got, want[k++]);
  }
  assert_int_equal(k, sizeof want / sizeof want[0]);
  done(&x);
}

/* Runs `method` on actor 0 of a world whose actor 1 ("plain") has no
** script; the answer as answer() gives it. */
static const char *answer2(const char *method) {
  static char out[512];
  world x;
  make(&x);
  world_actor(&x, "plain", NULL, 1);
  /* a second script for actor 0 replaces the first */
  assert_int_equal(rt_actor_script(x.w, 0, "edges.lua", script, strlen(script), NULL), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, method, NULL, MS(100)), 0);
  sim_run(&x.s, MS(60000), 0);
  snprintf(out, sizeof out, "(none) %s", rt_world_fatal(x.w));
  for (size_t i = 0; i < x.s.trace.n; i++) {
    const sim_rec *r = &x.s.trace.recs[i];
    if (r->kind == RT_EV_REQUEST_OK || r->kind == RT_EV_REQUEST_FAIL)
      snprintf(out, sizeof out, "%s%s", r->kind == RT_EV_REQUEST_OK ? "" : "FAIL: ",
               sim_trace_str(&x.s.trace, r->s));
  }
  done(&x);
  return out;
}

/* An RPC to an actor without a script answers nil; a fiber's handle cannot
** stash after the fiber ended; a script's own yield that names a host
** command is no command (the request fails), whatever its arguments. A second script for an
** actor replaces the first. */
static void test_more_commands(void **st) {
  (void)st;
  static const char forged[] = ": coroutine.yield() outside a coroutine the script made "
                               "(wait with revenant.work or revenant.sleep)";
  char want[256];
  assert_string_equal(answer2("plain_rpc"), "{}");
  assert_string_equal(answer2("late_stash"), "\"stash: fiber 2 has ended\"");
  /* fiber:stash on a table whose id is not an integer: what P.stash takes
  ** (a float or numeric string of the id, nil for the running fiber) is
  ** the same write; anything else is refused as before (the fast path of
  ** issue #13 must not change which ids are accepted) */
  assert_string_equal(answer2("stash_ids"), "{\"float\":\"ok\",\"half\":\"bad argument #1 to '?' (number has no integer "
                      "representation)\",\"none\":\"ok\",\"other\":\"stash: fiber 3 has ended\","
                      "\"str\":\"ok\",\"word\":\"bad argument #1 to '?' (number expected, got string)\"}");
  /* ... and so is one with the right count: only the prelude's yields
  ** carry its token (a table for runFiber's name crashed the host) */
  static const char *const names[] = {"forge_work",   "forge_fiber",  "forge_await",
                                      "forge_call",   "forge_work2",  "forge_fiber2",
                                      "forge_await2", "forge_call2",  "forge_tool2"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(want, sizeof want, "FAIL: %s%s", names[i], forged);
    assert_string_equal(answer2(names[i]), want);
  }
}

/* A scripted actor as the child of a tool run: its script has no tool-run
** callback, so the declarative default runs the child's work and the run
** completes (one RT_EV_TOOLRUN_FINISH). */
static void test_scripted_tool_child(void **st) {
  world x;
  (void)st;
  make(&x);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "parent");
  snprintf(sp.cls, sizeof sp.cls, "P");
  sp.children[0] = 0;
  sp.n_children = 1;
  assert_int_equal(rt_actor_add(x.w, &sp), 1);
  assert_int_equal(rt_toolrun_at(x.w, 1, 0, MS(500), MS(100)), 0);
  sim_run(&x.s, MS(60000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  int finished = 0;
  for (size_t i = 0; i < x.s.trace.n; i++)
    finished += x.s.trace.recs[i].kind == RT_EV_TOOLRUN_FINISH;
  assert_int_equal(finished, 1);
  done(&x);
}

/* A script that cannot become an agent ends the run with a scenario error
** that names the script and the reason. */
static void test_bad_scripts(void **st) {
  static const struct {
    const char *src, *why;
  } bad[] = {
      {"return {", "edges.lua:1:"},
      {"return 42", "the script must return a table of callbacks"},
      {"return", "the script must return a table of callbacks"},
      {"revenant.work(5) return {}", "the main chunk yielded"},
      {"error('no agent today')", "no agent today"},
  };
  (void)st;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    world x;
    make_src(&x, bad[i].src);
    assert_int_equal(rt_invoke_at(x.w, 0, "m", NULL, MS(100)), 0);
    sim_run(&x.s, MS(10000), 0);
    const char *fatal = rt_world_fatal(x.w);
    if (!strstr(fatal, "script edges.lua: ") || !strstr(fatal, bad[i].why))
      fail_msg("%s: fatal \"%s\" does not say \"%s\"", bad[i].src, fatal, bad[i].why);
    done(&x);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_durations),
      cmocka_unit_test(test_sql),
      cmocka_unit_test(test_schedules),
      cmocka_unit_test(test_misc),
      cmocka_unit_test(test_bad_scripts),
      cmocka_unit_test(test_commands),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_fibers),
      cmocka_unit_test(test_invoke_args),
      cmocka_unit_test(test_more_commands),
      cmocka_unit_test(test_scripted_tool_child),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
