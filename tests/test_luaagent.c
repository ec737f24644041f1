/*
** test_luaagent.c: Lua-scripted agents (runtime/rt_luaagent.c, issue #13):
** a Lua global set before an eviction is gone after it while the script's
** table survives; one Lua state per incarnation; the JSON a stash stores
** (sorted keys, arrays, integers beyond 2^53 and NaN refused); a script's
** fatal error stops the run; runFiber's work done inside its caller's
** slice keeps the slices a yield would make. The cross-process hash test of scripted
** scenarios is tests/sh_lua_agents.sh.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <lauxlib.h>

#include "tests/lua_world.h"
#include "runtime/rt_lua.h"

static const char counter_script[] =
    "seen = seen or 0\n"
    "local A = {}\n"
    "function A:onStart() self.sql:exec('CREATE TABLE IF NOT EXISTS c(n INTEGER)') end\n"
    "function A:bump()\n"
    "  seen = seen + 1\n"
    "  self.sql:exec('INSERT INTO c(n) VALUES (?)', seen)\n"
    "  return {global = seen, rows = self.sql:exec('SELECT count(*) AS k FROM c')[1].k}\n"
    "end\n"
    "return A\n";

/* A world whose actor 0, "agent", runs `src`. */
static void make(world *x, const char *src) {
  world_start(x);
  world_actor(x, "agent", NULL, 0);
  world_script(x, src);
}

/* The result JSON of the k-th request_ok record (0-based), or NULL. */
static const char *result_of(world *x, int k) { return str_of(x, RT_EV_REQUEST_OK, k); }

static void kill_at(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_actor((rt_world *)ctx, (uint32_t)arg, RT_DEATH_EVICT);
}

/* A global set before an eviction is gone after it; the table is not. */
static void test_global_gone_after_eviction(void **st) {
  world x;
  (void)st;
  make(&x, counter_script);
  for (int i = 0; i < 3; i++) assert_int_equal(rt_invoke_at(x.w, 0, "bump", NULL, MS(100 * (i + 1))), 0);
  sim_at(&x.s, MS(500), 0, kill_at, x.w, 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "bump", NULL, MS(1000)), 0);
  sim_run(&x.s, MS(2000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_string_equal(result_of(&x, 2), "{\"global\":3,\"rows\":3}");
  /* a new incarnation, a new state: the global starts again, the rows go on */
  assert_string_equal(result_of(&x, 3), "{\"global\":1,\"rows\":4}");
  assert_int_equal(count_kind(&x, RT_EV_ACTOR_WAKE), 2);
  done(&x);
}

/* Without the eviction the same global keeps counting (the test above can fail). */
static void test_global_kept_within_incarnation(void **st) {
  world x;
  (void)st;
  make(&x, counter_script);
  for (int i = 0; i < 4; i++) assert_int_equal(rt_invoke_at(x.w, 0, "bump", NULL, MS(100 * (i + 1))), 0);
  sim_run(&x.s, MS(2000), 0);
  assert_string_equal(result_of(&x, 3), "{\"global\":4,\"rows\":4}");
  done(&x);
}

static int encode(lua_State *L) {
  rt_lua_json_encode(L, 1);
  return 1;
}

/* Encodes the value of Lua expression expr; NULL and the error in err. */
static const char *json_of(rt_lua *x, const char *expr, char *err, size_t n) {
  static char out[256];
  char src[256];
  lua_State *L = rt_lua_L(x);
  snprintf(src, sizeof src, "return %s", expr);
  assert_int_equal(luaL_loadstring(L, src), LUA_OK);
  assert_int_equal(lua_pcall(L, 0, 1, 0), LUA_OK);
  lua_pushcfunction(L, encode);
  lua_insert(L, -2);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    snprintf(err, n, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return NULL;
  }
  snprintf(out, sizeof out, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  return out;
}

static void test_json(void **st) {
  char err[256];
  rt_lua_config cfg = {{0}, NULL, 0, 0};
  rt_lua *x = rt_lua_new(&cfg, err, sizeof err);
  (void)st;
  assert_non_null(x);
  assert_string_equal(json_of(x, "{b = 1, a = {2, 3, 'x'}, c = {}}", err, sizeof err),
                      "{\"a\":[2,3,\"x\"],\"b\":1,\"c\":{}}");
  assert_string_equal(json_of(x, "{['k\"\\n'] = true, z = false, n = 1.5}", err, sizeof err),
                      "{\"k\\\"\\n\":true,\"n\":1.5,\"z\":false}");
  assert_string_equal(json_of(x, "9007199254740992", err, sizeof err), "9007199254740992");
  assert_null(json_of(x, "9007199254740993", err, sizeof err));
  assert_non_null(strstr(err, "beyond 2^53"));
  assert_null(json_of(x, "0/0", err, sizeof err));
  assert_non_null(strstr(err, "NaN"));
  assert_null(json_of(x, "{1, 2, x = 3}", err, sizeof err));
  assert_non_null(strstr(err, "mixes array items and fields"));
  assert_null(json_of(x, "{print}", err, sizeof err));
  assert_non_null(strstr(err, "a function value"));
  /* up to 16 keys in one pass, more through the long path: the same text */
  char want[256];
  for (int n = 16; n <= 17; n++) {
    char expr[200];
    size_t o = 0;
    snprintf(expr, sizeof expr, "(function() local t = {} for i = %d, 1, -1 do "
             "t[string.format('k%%02d', i)] = {i} end return t end)()", n);
    for (int i = 1; i <= n; i++) o += (size_t)snprintf(want + o, sizeof want - o, "%s\"k%02d\":[%d]", i > 1 ? "," : "{", i, i);
    snprintf(want + o, sizeof want - o, "}");
    assert_string_equal(json_of(x, expr, err, sizeof err), want);
    snprintf(expr, sizeof expr, "(function() local t = {1} for i = 1, %d do "
             "t[string.format('k%%02d', i)] = i end return t end)()", n);
    assert_null(json_of(x, expr, err, sizeof err));
    assert_non_null(strstr(err, "mixes array items and fields"));
  }
  assert_string_equal(json_of(x, "{ab = 1, b = 3, ['a\\0'] = 4, a = 2}", err, sizeof err),
                      "{\"a\":2,\"a\\u0000\":4,\"ab\":1,\"b\":3}"); /* by bytes, shorter first */
  /* decode: back to a table, encoded again the same */
  lua_State *L = rt_lua_L(x);
  const char *j = "{\"a\":[1,2.5,\"s\"],\"b\":{\"c\":true,\"d\":null}}";
  assert_int_equal(rt_lua_json_decode(L, j, strlen(j)), 0);
  lua_pushcfunction(L, encode);
  lua_insert(L, -2);
  assert_int_equal(lua_pcall(L, 1, 1, 0), LUA_OK);
  assert_string_equal(lua_tostring(L, -1), "{\"a\":[1,2.5,\"s\"],\"b\":{\"c\":true}}"); /* a null field is nil */
  lua_pop(L, 1);
  assert_int_equal(rt_lua_json_decode(L, "{bad", 4), -1);
  lua_pop(L, 1);
  rt_lua_free(x);
}

/* An endless loop in a method stops the run with a clear error (no hang). */
static void test_budget_stops_the_run(void **st) {
  world x;
  (void)st;
  make(&x, "return { spin = function(self) while true do end end }");
  assert_int_equal(rt_invoke_at(x.w, 0, "spin", NULL, MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "spin", NULL, MS(200)), 0);
  sim_run(&x.s, MS(2000), 0);
  assert_non_null(strstr(rt_world_fatal(x.w), "instruction budget exhausted in spin"));
  assert_non_null(strstr(rt_world_fatal(x.w), "agent.lua:1:"));
  assert_true(x.s.now_us < MS(200)); /* stopped at the first */
  assert_int_equal(count_kind(&x, RT_EV_SCRIPT_ERROR), 1);
  done(&x);
}

/* runFiber ends its caller's instruction-budget slice and starts a fresh
** one, as a wait does: the caller's code before and after it and the body
** may each run most of a budget (runFiber may do its work inside the
** caller's slice, rt_luaagent.c run_fiber_now); past it, the error names
** the caller's line. */
static const char slices_script[] =
    "local A = {}\n"
    "local function spin(n) for i = 1, n do end end\n"
    "function A:split()\n"
    "  spin(6000000)\n"
    "  local h = self:runFiber('f', function(f) spin(6000000) f:stash({x = 1}) end)\n"
    "  spin(6000000)\n"
    "  return {ended = h._ok, id = h.id}\n"
    "end\n"
    "function A:after()\n"
    "  self:runFiber('g', function() end)\n"
    "  while true do end\n"
    "end\n"
    "return A\n";

static void test_run_fiber_slices(void **st) {
  world x;
  (void)st;
  make(&x, slices_script);
  assert_int_equal(rt_invoke_at(x.w, 0, "split", NULL, MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "after", NULL, MS(200)), 0);
  sim_run(&x.s, MS(2000), 0);
  assert_non_null(result_of(&x, 0)); /* split did not run out of budget */
  assert_string_equal(result_of(&x, 0), "{\"ended\":true,\"id\":3}");
  assert_non_null(strstr(rt_world_fatal(x.w), "instruction budget exhausted in after"));
  assert_non_null(strstr(rt_world_fatal(x.w), "agent.lua:11:"));
  assert_int_equal(count_kind(&x, RT_EV_SCRIPT_ERROR), 1);
  done(&x);
}

/* runFiber in a coroutine the script made yields to that coroutine's
** resume, not to the host: no fiber is made (as before runFiber could do
** its work at once). */
static void test_run_fiber_in_script_coroutine(void **st) {
  world x;
  (void)st;
  make(&x, "return { co = function(self)\n"
           "  local co = coroutine.create(function() return self:runFiber('x', function() end) end)\n"
           "  local ok, tok, name, fn = coroutine.resume(co)\n"
           "  return {ok = ok, tok = type(tok), name = name, fn = type(fn), st = coroutine.status(co)}\n"
           "end }");
  assert_int_equal(rt_invoke_at(x.w, 0, "co", NULL, MS(100)), 0);
  sim_run(&x.s, MS(1000), 0);
  assert_string_equal(result_of(&x, 0),
                      "{\"fn\":\"function\",\"name\":\"x\",\"ok\":true,\"st\":\"suspended\",\"tok\":\"userdata\"}");
  assert_int_equal(count_kind(&x, RT_EV_FIBER_START), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  done(&x);
}

/* A fiber's outcome goes into its handle raw: a __newindex the script gives
** the Fiber metatable does not run in the host (an error there aborted the
** process), while the script's own writes to a handle still meet it. */
static void test_handle_outcome_raw(void **st) {
  world x;
  (void)st;
  make(&x, "local h\n"
           "return { start = function(self)\n"
           "  h = self:runFiber('r', function() revenant.work(10) return {v = 1} end)\n"
           "  getmetatable(h).__newindex = function(t, k) error('no writes: ' .. k, 2) end\n"
           "  local ok, e = pcall(function() h.x = 1 end)\n"
           "  return e:gsub('^[^:]*:%d+: ', '')\n"
           "end, check = function(self) return {ok = h._ok, v = h:await()} end }");
  assert_int_equal(rt_invoke_at(x.w, 0, "start", NULL, MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "check", NULL, MS(200)), 0);
  sim_run(&x.s, MS(1000), 0);
  assert_string_equal(rt_world_fatal(x.w), "");
  assert_non_null(result_of(&x, 1));
  assert_string_equal(result_of(&x, 0), "\"no writes: x\"");
  assert_string_equal(result_of(&x, 1), "{\"ok\":true,\"v\":{\"v\":1}}");
  done(&x);
}

/* The SDK's and the runtime's tables are read-only to a script's SQL. */
static void test_sdk_tables_read_only(void **st) {
  world x;
  (void)st;
  make(&x, "return { onStart = function(self) self.sql:exec('CREATE TABLE mine(x)') end,\n"
           "  w = function(self, t) return pcall(function()\n"
           "  self.sql:exec('DELETE FROM ' .. t) end) end,\n"
           "  r = function(self) return #self.sql:exec('SELECT * FROM rv_alarm') end }");
  assert_int_equal(rt_invoke_at(x.w, 0, "w", "[\"cf_agents_runs\"]", MS(100)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "w", "[\"rv_alarm\"]", MS(200)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "r", NULL, MS(300)), 0);
  assert_int_equal(rt_invoke_at(x.w, 0, "w", "[\"mine\"]", MS(400)), 0);
  sim_run(&x.s, MS(1000), 0);
  assert_string_equal(result_of(&x, 0), "false"); /* refused: pcall returned false */
  assert_string_equal(result_of(&x, 1), "false");
  assert_string_equal(result_of(&x, 2), "0");     /* reading is allowed */
  assert_string_equal(result_of(&x, 3), "true");  /* the script's own table: allowed */
  done(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_global_gone_after_eviction),
      cmocka_unit_test(test_global_kept_within_incarnation),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_budget_stops_the_run),
      cmocka_unit_test(test_run_fiber_slices),
      cmocka_unit_test(test_run_fiber_in_script_coroutine),
      cmocka_unit_test(test_handle_outcome_raw),
      cmocka_unit_test(test_sdk_tables_read_only),
  };
  return cmocka_run_group_tests_name("luaagent", tests, NULL, NULL);
}
