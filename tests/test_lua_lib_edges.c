/*
** test_lua_lib_edges.c: corners of the sandboxed Lua library
** (runtime/rt_lua_lib.c) that test_lua.c and test_lua_edges.c leave: the
** order of mixed integer and float keys at the edges of the integer range,
** tostring of tables and a bad __tostring, string.format's %s and its
** argument checks, math.random's ranges, load with a reader function or an
** environment, and the file loaders' path checks (empty, long, not .lua,
** odd characters, climbing out, outside the folder, too big), dofile and
** require errors, a circular require. Each script checks itself with
** assert; a failed check fails the run. And failure injection at every
** allocation of making a state and running a script.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <lua.h>

#include "runtime/rt.h"
#include "runtime/rt_lua.h"
#include "sim/sim_rng.h"

static int64_t h_now(void *c) {
  (void)c;
  return 0;
}

static sim_rng RNG;

static rt_lua *mk(const char *dir, size_t cap) {
  char err[256];
  sim_rng_stream(&RNG, 7, "lua.lib.test");
  rt_lua_config c = {{NULL, h_now, NULL, &RNG, NULL}, dir, 1000000, cap};
  rt_lua *x = rt_lua_new(&c, err, sizeof err);
  if (!x) fail_msg("%s", err);
  return x;
}

/* Runs src as one callback; fails the test with the script's error. */
static void ok(rt_lua *x, const char *src) {
  rt_lua_co co;
  int rc = rt_lua_load(x, "t.lua", src, strlen(src));
  if (rc == RT_LUA_DONE) {
    rc = rt_lua_start(x, 0, &co);
    rt_lua_co_release(x, &co);
  }
  if (rc != RT_LUA_DONE) fail_msg("script failed: %s\n--\n%s", rt_lua_error(x), src);
}

static void test_key_order_edges(void **st) {
  (void)st;
  rt_lua *x = mk(NULL, 0);
  ok(x, "local t = {[2^63] = 'f63', [math.maxinteger] = 'imax', [-2^63] = 'fmin',\n"
        "           [math.mininteger] = 'imin', [2.5] = 'f', [2] = 'i', [-0.5] = 'n',\n"
        "           [1e300] = 'huge', [-1e300] = 'nhuge'}\n"
        "local s = {}\n"
        "for k, v in pairs(t) do s[#s + 1] = v end\n"
        "local got = table.concat(s, ' ')\n"
        "-- -2^63 is an integral float: the key is math.mininteger's, set last by 'imin'\n"
        "assert(got == 'nhuge imin n i f imax f63 huge', got)\n"
        "local big = {} for i = 1, 300 do big[i] = i end\n"
        "local n = 0 for _ in pairs(big) do n = n + 1 end assert(n == 300)\n");
  rt_lua_free(x);
}

static void test_tostring_format_random(void **st) {
  (void)st;
  rt_lua *x = mk(NULL, 0);
  ok(x, "local t = {}\n"
        "assert(tostring(t):match('^table: #%d+$'), tostring(t))\n"
        "assert(tostring(print) == 'function: builtin: print', tostring(print))\n"
        "local bad = setmetatable({}, {__tostring = function() return {} end})\n"
        "local okk, e = pcall(tostring, bad) assert(not okk and e:find('must return a string'), e)\n"
        "local good = setmetatable({}, {__tostring = function() return 'G' end})\n"
        "assert(tostring(good) == 'G')\n"
        "assert(string.format('%s|%5s|%-3s|%%|%d', 'a', 'b', 'c', 7) == 'a|    b|c  |%|7')\n"
        "assert(string.format('%s', t):match('^table: #'))\n"
        "assert(string.format('%s %s %s', nil, true, 1.5) == 'nil true 1.5')\n"
        "local okf, ef = pcall(string.format, '%s %s', 'one') assert(not okf, ef)\n"
        "local okr, er = pcall(math.random, 5, 1) assert(not okr and er:find('interval is empty'), er)\n"
        "local r = math.random() assert(r >= 0 and r < 1)\n"
        "for _ = 1, 20 do local v = math.random(3) assert(v >= 1 and v <= 3) end\n"
        "for _ = 1, 20 do local v = math.random(-2, 2) assert(v >= -2 and v <= 2) end\n"
        "local w = math.random(math.mininteger, math.maxinteger) assert(math.type(w) == 'integer')\n"
        "local v0 = math.random(0) assert(math.type(v0) == 'integer')\n"
        "math.randomseed(42) local a = math.random(1000) math.randomseed(42)\n"
        "assert(math.random(1000) == a) math.randomseed() -- back to the host's stream\n"
        "local oka, ea = pcall(math.random, 1, 2, 3) assert(not oka, ea)\n"
        "assert(select('#', table.unpack({}, 1, 0)) == 0)\n"
        "local okc, ec = pcall(table.unpack, {}, 1, 1e8) assert(not okc, ec)\n");
  rt_lua_free(x);
}

static void test_load_forms(void **st) {
  (void)st;
  rt_lua *x = mk(NULL, 0);
  ok(x, "local parts, i = {'return ', 'x', ' + 1'}, 0\n"
        "local f = assert(load(function() i = i + 1 return parts[i] end, 'reader', 't', {x = 41}))\n"
        "assert(f() == 42)\n"
        "local g = load(function() return nil end) assert(g() == nil)\n"
        "local okh, he = pcall(load, function() return {} end)\n"
        "assert(not okh and he:find('reader function must return a string'), he)\n"
        "local okb, be = pcall(load, '\\27Lua junk') assert(not okb and be:find('binary chunks are refused'), be)\n"
        "local e = assert(load('return 1', 'noenv', 't', nil))\n"
        "assert(e() == 1)\n");
  rt_lua_free(x);
}

static void write_file(const char *dir, const char *name, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_file_paths(void **st) {
  char dir[] = "/tmp/revenant-lualib-XXXXXX";
  (void)st;
  assert_non_null(mkdtemp(dir));
  write_file(dir, "syntax.lua", "return +\n");
  write_file(dir, "a.lua", "return require('b')\n");
  write_file(dir, "b.lua", "return require('a')\n");
  write_file(dir, "ok.lua", "return 7\n");
  write_file(dir, "big.lua", "-- long\n");
  char outside[600];
  snprintf(outside, sizeof outside, "%s/../revenant-lualib-outside.lua", dir);
  FILE *f = fopen(outside, "w");
  assert_non_null(f);
  fputs("return 1\n", f);
  fclose(f);
  char link[600];
  snprintf(link, sizeof link, "%s/out.lua", dir);
  assert_int_equal(symlink(outside, link), 0);
  rt_lua *x = mk(dir, 0);
  ok(x, "local function refused(fn, arg, why)\n"
        "  local okk, e = pcall(fn, arg)\n"
        "  assert(not okk and tostring(e):find(why, 1, true), tostring(arg) .. ': ' .. tostring(e))\n"
        "end\n"
        "refused(dofile, '', 'an empty or too long path')\n"
        "refused(dofile, string.rep('a', 300) .. '.lua', 'an empty or too long path')\n"
        "refused(dofile, 'x.txt', 'not a .lua file')\n"
        "refused(dofile, 'a b.lua', '')\n"
        "refused(dofile, '../x.lua', 'climbs out')\n"
        "refused(dofile, 'sub/../../x.lua', 'climbs out')\n"
        "refused(dofile, 'missing.lua', '')\n"
        "refused(dofile, 'out.lua', '')\n"
        "refused(dofile, 'syntax.lua', 'dofile:')\n"
        "assert(dofile('ok.lua') == 7)\n"
        "refused(require, 'a', 'circular require')\n"
        "refused(require, '.hidden', '')\n"
        "refused(require, 'x.', '')\n"
        "refused(require, 'a..b', '')\n"
        "refused(require, 'syntax', \"require 'syntax':\")\n"
        "assert(require('ok') == 7 and require('ok') == 7)\n");
  rt_lua_free(x);
  unlink(link);
  unlink(outside);
  const char *names[] = {"syntax.lua", "a.lua", "b.lua", "ok.lua", "big.lua"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* The host API's own checks: a state made with no configuration, a start
** with no function or a negative count, a resume of a callback that is
** not suspended, a binary chunk. */
static void test_api_usage(void **st) {
  (void)st;
  rt_lua *x = rt_lua_new(NULL, NULL, 0);
  assert_non_null(x);
  lua_State *L = rt_lua_L(x);
  rt_lua_co co;
  assert_int_equal(rt_lua_start(x, -1, &co), RT_LUA_ERR_USAGE);
  assert_int_equal(rt_lua_start(x, 0, &co), RT_LUA_ERR_USAGE); /* empty stack */
  assert_non_null(strstr(rt_lua_error(x), "no function below the arguments"));
  lua_pushinteger(L, 1);
  assert_int_equal(rt_lua_start(x, 0, &co), RT_LUA_ERR_USAGE); /* not a function */
  lua_settop(L, 0);
  assert_int_equal(rt_lua_resume(x, &co, 0), RT_LUA_ERR_USAGE);
  assert_non_null(strstr(rt_lua_error(x), "not suspended"));
  assert_int_equal(rt_lua_load(x, "bin.lua", "\033Lua", 4), RT_LUA_ERR_SYNTAX);
  assert_non_null(strstr(rt_lua_error(x), "binary chunks are refused"));
  /* a finished callback cannot be resumed either */
  assert_int_equal(rt_lua_load(x, "t.lua", "return 1", 8), RT_LUA_DONE);
  assert_int_equal(rt_lua_start(x, 0, &co), RT_LUA_DONE);
  assert_int_equal(rt_lua_resume(x, &co, 0), RT_LUA_ERR_USAGE);
  rt_lua_co_release(x, &co);
  rt_lua_free(x);
  rt_lua_free(NULL);
  /* a script folder that does not exist: refused, with or without room for the reason */
  rt_lua_config c = {{NULL, h_now, NULL, &RNG, NULL}, "/nonexistent/revenant-dir", 0, 0};
  char err[128];
  assert_null(rt_lua_new(&c, err, sizeof err));
  assert_non_null(strstr(err, "cannot be opened"));
  assert_null(rt_lua_new(&c, NULL, 0));
}

/* A state made and a small script run in it: the script's result code, or
** -100 when the state could not be made. */
static int state_once(void) {
  char err[256];
  rt_lua *x = rt_lua_new(NULL, err, sizeof err);
  if (!x) return -100;
  rt_lua_co co;
  static const char src[] = "local t = {} for i = 1, 200 do t[i] = {i, tostring(i)} end\n"
                            "return #t, table.concat({'a', 'b'})";
  int rc = rt_lua_load(x, "t.lua", src, sizeof src - 1);
  if (rc == RT_LUA_DONE) {
    rc = rt_lua_start(x, 0, &co);
    rt_lua_co_release(x, &co);
  }
  rt_lua_free(x);
  return rc;
}

/* Failure injection (runtime/rt_inject.h) at every allocation of making a
** state and running a script, Lua's own through the allocator included:
** each failure makes the state refuse (NULL), fails the script with a
** memory error or is absorbed (Lua collects and retries an allocation),
** never an unprotected Lua error (abort) or a leak (asan). */
static void test_every_allocation_fails(void **st) {
  (void)st;
  rt_inject_count();
  assert_int_equal(state_once(), RT_LUA_DONE);
  rt_inject_off();
  const rt_inject_site *v;
  int n = rt_inject_sites(&v), refused = 0, done = 0, runs = 0;
  rt_inject_site sites[16];
  assert_true(n > 0 && n <= 16);
  memcpy(sites, v, (size_t)n * sizeof *sites);
  for (int i = 0; i < n; i++)
    for (uint64_t k = 1; k <= sites[i].calls; k++) {
      rt_inject_target(sites[i].file, sites[i].line, k);
      int rc = state_once();
      assert_true(rt_inject_fired());
      rt_inject_off();
      runs++;
      refused += rc == -100;
      done += rc == RT_LUA_DONE; /* Lua collects and retries a failed allocation once */
      assert_true(rc == -100 || rc == RT_LUA_ERR_MEMORY || rc == RT_LUA_DONE);
    }
  assert_true(runs > 100);
  assert_true(refused > 0);
  assert_true(done > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key_order_edges),
      cmocka_unit_test(test_tostring_format_random),
      cmocka_unit_test(test_load_forms),
      cmocka_unit_test(test_file_paths),
      cmocka_unit_test(test_api_usage),
      cmocka_unit_test(test_every_allocation_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
