/*
** test_luatool.c: tool runs from Lua-scripted agents (issue #13; runtime/
** rt_luaagent.c, rt_sdk_run_agent_tool): self:runAgentTool awaited to the
** run's result, runId reuse returning the stored result without a second
** start, the child named by its class, onAgentToolFinish with the run's SDK
** fields (and a throw or a wait in it reported), abortAgentTool and
** openAgentTools, and bad arguments failing with the script's file:line.
** The scenarios and their two-process hash test are in scenarios/scripted/
** and tests/sh_lua_tools.sh.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lua_world.h"

/* A parent "agent" with script src and a declarative child "researcher"
** of class Researcher. */
static void make(world *x, const char *src) {
  world_start(x);
  world_actor(x, "agent", "Parent", 0);
  world_actor(x, "researcher", "Researcher", 1);
  world_script(x, src);
}

/* How many rpc_send records name `method`. */
static int sends(world *x, const char *method) {
  int n = 0;
  for (size_t i = 0; i < x->s.trace.n; i++) {
    const sim_rec *r = &x->s.trace.recs[i];
    n += r->kind == RT_EV_RPC_SEND && !strcmp(sim_trace_str(&x->s.trace, r->s), method);
  }
  return n;
}

static const char ask_script[] =
    "local A = {}\n"
    "function A:ask(child, id, work)\n"
    "  local r = self:runAgentTool(child, {q = 1}, {runId = id, work = work})\n"
    "  return r\n"
    "end\n"
    "function A:onAgentToolFinish(run)\n"
    "  revenant.log('finish', run.runId, run.status, run.error)\n"
    "end\n"
    "return A\n";

/* Awaited: the method resumes when the child's run completes, with the
** SDK's result; the finish hook saw the same run first. */
static void test_await_result(void **st) {
  world x;
  (void)st;
  make(&x, ask_script);
  assert_int_equal(rt_invoke_at(x.w, 0, "ask", "[\"researcher\", 5, 2000]", MS(100)), 0);
  sim_run(&x.s, MS(10000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_string_equal(str_of(&x, RT_EV_REQUEST_OK, 0),
                      "{\"runId\":2000000000005,\"status\":\"completed\"}");
  const sim_rec *ok = nth(&x, RT_EV_REQUEST_OK, 0);
  assert_true(ok->t_us >= MS(2100)); /* it waited for the child's work */
  assert_string_equal(str_of(&x, RT_EV_USER_LOG, 0), "finish 2000000000005 completed nil");
  assert_true(nth(&x, RT_EV_USER_LOG, 0)->t_us <= ok->t_us);
  assert_int_equal(count_kind(&x, RT_EV_TOOLRUN_FINISH), 1);
  done(&x);
}

/* The same runId again: the stored result at once, the child not started
** again; a class name finds the child. */
static void test_run_id_reuse_and_class(void **st) {
  world x;
  (void)st;
  make(&x, ask_script);
  assert_int_equal(rt_invoke_at(x.w, 0, "ask", "[\"Researcher\", 7, 1000]", MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "ask", "[\"researcher\", 7, 1000]", MS(5000)), 0);
  sim_run(&x.s, MS(10000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_int_equal(sends(&x, "startAgentToolRun"), 1);
  assert_string_equal(str_of(&x, RT_EV_REQUEST_OK, 1),
                      "{\"runId\":2000000000007,\"status\":\"completed\"}");
  assert_int_equal(nth(&x, RT_EV_REQUEST_OK, 1)->t_us, MS(5000)); /* stored: no wait */
  assert_int_equal(count_kind(&x, RT_EV_TOOLRUN_FINISH), 1);      /* no second hook */
  done(&x);
}

/* Bad arguments fail the call with the script's file:line. */
static void test_bad_arguments(void **st) {
  static const char *const cases[][2] = {
      {"[\"nobody\", 1, 10]", "agent.lua:3: runAgentTool: no other actor or class 'nobody' in the scenario"},
      {"[\"agent\", 1, 10]", "agent.lua:3: runAgentTool: no other actor or class 'agent' in the scenario"},
      {"[\"researcher\", -1, 10]", "agent.lua:3: runAgentTool: opts.runId must be a positive integer"},
      {"[\"researcher\", 1.5, 10]", "agent.lua:3: runAgentTool: opts.runId must be a positive integer"},
      {"[\"researcher\", 1, \"soon\"]", "agent.lua:3: runAgentTool: opts.work: bad duration 'soon'"},
      {"[3, 1, 10]", "agent.lua:3: runAgentTool: the child must be an actor id or a class name"},
      {"[\"researcher\", 1000000001, 10]", "agent.lua:3: runAgentTool: opts.runId must be a positive integer up to"},
      {"[\"researcher\", 9223372036854775807, 10]", "agent.lua:3: runAgentTool: opts.runId must be a positive integer up to"},
      {"[\"researcher\", 1e300, 10]", "agent.lua:3: runAgentTool: opts.runId must be a positive integer"},
      {"[\"researcher\", 1, -5]", "agent.lua:3: runAgentTool: opts.work: a duration must be a number from 0"},
      {"[\"researcher\", 1, \"1e300s\"]", "agent.lua:3: runAgentTool: opts.work: bad duration '1e300s': at most"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    world x;
    (void)st;
    make(&x, ask_script);
    assert_int_equal(rt_invoke_at(x.w, 0, "ask", cases[i][0], MS(100)), 0);
    sim_run(&x.s, MS(1000), 0);
    const char *err = str_of(&x, RT_EV_REQUEST_FAIL, 0);
    assert_non_null(err);
    if (strncmp(err, cases[i][1], strlen(cases[i][1])))
      fail_msg("case %zu: got \"%s\", want \"%s...\"", i, err, cases[i][1]);
    assert_int_equal(count_kind(&x, RT_EV_TOOLRUN_INSERT), 0);
    done(&x);
  }
}

/* abortAgentTool: the open run ends aborted, the child is cancelled, the
** fiber awaiting it resumes with "aborted"; a second abort finds nothing
** open; openAgentTools lists the run while it is open. */
/* A misspelt option (runid) is an error, not a run without its id; the
** first unknown key in sorted order is named, whatever pairs' order. */
static void test_unknown_option(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:go()\n"
           "  local r = self:runAgentTool('researcher', {}, {zz = 1, runid = 1, work = 10})\n"
           "  return r\n"
           "end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "go", NULL, MS(100)), 0);
  sim_run(&x.s, MS(1000), 0);
  assert_string_equal(str_of(&x, RT_EV_REQUEST_FAIL, 0),
                      "agent.lua:3: runAgentTool: unknown option 'runid' in opts (runId, work)");
  assert_int_equal(count_kind(&x, RT_EV_TOOLRUN_INSERT), 0);
  done(&x);
}

static void test_abort_and_open(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:go()\n"
           "  self:runFiber('f', function() return self:runAgentTool('researcher', nil, {work = '5s'}).status end)\n"
           "end\n"
           "function A:stop()\n"
           "  local open = self:openAgentTools()\n"
           "  local first = self:abortAgentTool(open[1])\n"
           "  return {n = #open, first = first, again = self:abortAgentTool(open[1]),\n"
           "          after = #self:openAgentTools()}\n"
           "end\n"
           "function A:bad() local r = self:abortAgentTool('x') return r end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "go", NULL, MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "stop", NULL, MS(1000)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "bad", NULL, MS(2000)), 0);
  sim_run(&x.s, MS(10000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_string_equal(str_of(&x, RT_EV_REQUEST_OK, 1),
                      "{\"after\":0,\"again\":false,\"first\":true,\"n\":1}");
  assert_int_equal(sends(&x, "cancelAgentToolRun"), 1);
  assert_non_null(nth(&x, RT_EV_FIBER_DONE, 0));
  assert_string_equal(sim_trace_str(&x.s.trace, nth(&x, RT_EV_FIBER_DONE, 0)->s2), "\"aborted\"");
  assert_true(nth(&x, RT_EV_FIBER_DONE, 0)->t_us < MS(1100)); /* not after the child's 5 s */
  const char *err = str_of(&x, RT_EV_REQUEST_FAIL, 0);
  assert_non_null(err);
  if (!strstr(err, "agent.lua:11: abortAgentTool: the run id must be an integer")) fail_msg("got %s", err);
  done(&x);
}

/* A throw in onAgentToolFinish is swallowed (outcome threw, script_error
** with file:line); a wait in it is refused the same way. */
static void test_finish_hook_throws_or_waits(void **st) {
  static const char *const hooks[][2] = {
      {"error('hook failed')", "agent.lua:5: hook failed"},
      {"revenant.work(10)", "onAgentToolFinish is synchronous: it cannot wait"},
  };
  for (int i = 0; i < 2; i++) {
    world x;
    char src[512];
    (void)st;
    snprintf(src, sizeof src,
             "local A = {}\n"
             "function A:ask() return self:runAgentTool('researcher', nil, {work = 100}).status end\n"
             "function A:onAgentToolFinish(run)\n"
             "  revenant.log('hook', run.status)\n"
             "  %s\n"
             "end\n"
             "return A\n", hooks[i][0]);
    make(&x, src);
    assert_int_equal(rt_invoke_at(x.w, 0, "ask", NULL, MS(100)), 0);
    sim_run(&x.s, MS(2000), 0);
    assert_string_equal(rt_world_fatal(x.w), "");
    const sim_rec *fin = nth(&x, RT_EV_TOOLRUN_FINISH, 0);
    assert_non_null(fin);
    assert_int_equal(fin->c, RT_CB_THREW);
    const sim_rec *se = nth(&x, RT_EV_SCRIPT_ERROR, 0);
    assert_non_null(se);
    assert_non_null(strstr(sim_trace_str(&x.s.trace, se->s2), hooks[i][1]));
    assert_string_equal(str_of(&x, RT_EV_REQUEST_OK, 0), "\"completed\""); /* the run is not hurt */
    done(&x);
  }
}

/* A finish hook that aborts another run runs that run's hook inside its own
** slice: the outer slice's instruction count goes on after it (two loops
** of ~6M instructions around the abort exceed the 10M budget together). */
static void test_nested_hook_keeps_budget(void **st) {
  world x;
  (void)st;
  make(&x, "local A = {}\n"
           "function A:go()\n"
           "  self:runFiber('a', function() return self:runAgentTool('researcher', nil, {work = 100}).status end)\n"
           "  self:runFiber('b', function() return self:runAgentTool('researcher', nil, {work = 5000}).status end)\n"
           "end\n"
           "local function spin(n) local x = 0 for i = 1, n do x = x + i end return x end\n"
           "function A:onAgentToolFinish(run)\n"
           "  if run.status ~= 'completed' then return end\n"
           "  spin(3000000)\n"
           "  for _, id in ipairs(self:openAgentTools()) do self:abortAgentTool(id) end\n"
           "  spin(3000000)\n"
           "end\n"
           "return A\n");
  assert_int_equal(rt_invoke_at(x.w, 0, "go", NULL, MS(100)), 0);
  sim_run(&x.s, MS(10000), 0);
  assert_int_equal(count_kind(&x, RT_EV_TOOLRUN_ABORT), 1); /* the abort ran, nested */
  assert_non_null(strstr(rt_world_fatal(x.w), "instruction budget exhausted in onAgentToolFinish"));
  done(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_await_result),
      cmocka_unit_test(test_run_id_reuse_and_class),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_unknown_option),
      cmocka_unit_test(test_abort_and_open),
      cmocka_unit_test(test_finish_hook_throws_or_waits),
      cmocka_unit_test(test_nested_hook_keeps_budget),
  };
  return cmocka_run_group_tests_name("luatool", tests, NULL, NULL);
}
