/*
** test_lua_edges.c: sandbox paths of runtime/rt_lua.c and rt_lua_lib.c that
** test_lua.c does not reach (issue #16 item 7): xpcall with a handler,
** load of a chunk that does not compile and of one with an environment,
** loadfile with an environment, a missing or too large module file, a
** module that returns nothing, the order of an integer key beside a float
** key with the same floor, a script folder that does not exist, and the
** host's misuse of rt_lua_start. Each check is a Lua assert or a C assert.
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

#include <lauxlib.h>

#include "runtime/rt_lua.h"
#include "sim/sim_rng.h"

static int64_t h_now(void *c) {
  (void)c;
  return 0;
}

static void h_log(void *c, const char *m, size_t n) {
  (void)c;
  (void)m;
  (void)n;
}

static sim_rng RNG;

static rt_lua *mk(const char *dir, size_t cap, char *err, size_t errlen) {
  sim_rng_stream(&RNG, 7, "lua.test");
  rt_lua_config c = {{NULL, h_now, NULL, &RNG, h_log}, dir, 1000000, cap};
  return rt_lua_new(&c, err, errlen);
}

/* Runs src as one callback; returns its rt_lua_rc. */
static int run(rt_lua *x, const char *src) {
  rt_lua_co co;
  int rc = rt_lua_load(x, "t.lua", src, strlen(src));
  if (rc != RT_LUA_DONE) return rc;
  rc = rt_lua_start(x, 0, &co);
  rt_lua_co_release(x, &co);
  if (rc != RT_LUA_DONE) fprintf(stderr, "script: %s\n", rt_lua_error(x));
  return rc;
}

static void test_xpcall_and_load(void **st) {
  char err[256];
  (void)st;
  rt_lua *x = mk(NULL, 0, err, sizeof err);
  assert_non_null(x);
  assert_int_equal(run(x, "local ok, m = xpcall(function() error('boom', 0) end,"
                          "  function(e) return 'handled ' .. e end)\n"
                          "assert(ok == false and m == 'handled boom', tostring(m))\n"
                          "local ok2, a, b = xpcall(function(p, q) return p + q, 'x' end, print, 2, 3)\n"
                          "assert(ok2 and a == 5 and b == 'x')\n"),
                   RT_LUA_DONE);
  assert_int_equal(run(x, "local f, m = load('return 1 +', 'broken')\n"
                          "assert(f == nil and m:find('broken'), m)\n"
                          "local g = assert(load('return y * 2', 'env', 't', {y = 21}))\n"
                          "assert(g() == 42)\n"),
                   RT_LUA_DONE);
  /* the check can fail: a wrong expectation is an error */
  assert_int_equal(run(x, "local g = load('return y', 'env', 't', {y = 1}) assert(g() == 2)"),
                   RT_LUA_ERR_RUN);
  rt_lua_free(x);
}

/* pairs visits 1 before 1.5 before 2: integers and floats in numeric order. */
static void test_int_float_key_order(void **st) {
  char err[256];
  (void)st;
  rt_lua *x = mk(NULL, 0, err, sizeof err);
  assert_non_null(x);
  assert_int_equal(run(x, "local t = {[2] = 'c', [1.5] = 'b', [1] = 'a', [0.5] = 'z'}\n"
                          "local s = ''\n"
                          "for k, v in pairs(t) do s = s .. v end\n"
                          "assert(s == 'zabc', s)\n"),
                   RT_LUA_DONE);
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

static void test_files(void **st) {
  char dir[] = "/tmp/rv-lua-edges-XXXXXX", err[256];
  (void)st;
  assert_non_null(mkdtemp(dir));
  write_file(dir, "m.lua", "return z + 1\n");
  write_file(dir, "quiet.lua", "seen = (seen or 0) + 1\n");
  char big[4096];
  memset(big, '-', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  write_file(dir, "big.lua", big);
  rt_lua *x = mk(dir, 2048 * 1024, err, sizeof err);
  assert_non_null(x);
  assert_int_equal(run(x, "local f = assert(loadfile('m.lua', 't', {z = 41}))\n"
                          "assert(f() == 42)\n"
                          "assert(require('quiet') == true and seen == 1)\n"
                          "assert(require('quiet') == true and seen == 1)\n"
                          "local ok, m = pcall(require, 'absent')\n"
                          "assert(not ok and m:find('no such file'), m)\n"),
                   RT_LUA_DONE);
  rt_lua_free(x);
  /* a module larger than the memory cap is refused before it is read */
  x = mk(dir, 64 * 1024, err, sizeof err);
  assert_non_null(x);
  char huge[80 * 1024];
  memset(huge, '-', sizeof huge - 1);
  huge[sizeof huge - 1] = '\0';
  write_file(dir, "huge.lua", huge);
  assert_int_equal(run(x, "local ok, m = pcall(loadfile, 'huge.lua')\n"
                          "assert(not ok and m:find('too large'), m)\n"),
                   RT_LUA_DONE);
  rt_lua_free(x);
  const char *names[] = {"m.lua", "quiet.lua", "big.lua", "huge.lua"};
  for (size_t i = 0; i < 4; i++) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

static void test_bad_folder_and_usage(void **st) {
  char err[256];
  (void)st;
  rt_lua *x = mk("/nonexistent/revenant-scripts", 0, err, sizeof err);
  assert_null(x);
  assert_non_null(strstr(err, "cannot be opened"));
  x = mk(NULL, 0, err, sizeof err);
  assert_non_null(x);
  rt_lua_co co;
  lua_pushinteger(rt_lua_L(x), 5); /* no function below the arguments */
  assert_int_equal(rt_lua_start(x, 0, &co), RT_LUA_ERR_USAGE);
  assert_non_null(strstr(rt_lua_error(x), "no function"));
  lua_pop(rt_lua_L(x), 1);
  assert_int_equal(rt_lua_resume(x, &co, 0), RT_LUA_ERR_USAGE); /* never started */
  rt_lua_free(x);
}

/* A C callback that throws a table: no Lua line to name. */
static int throw_table(lua_State *L) {
  lua_newtable(L);
  return lua_error(L);
}

/* Error objects that are not strings still give a message: a number is
** printed as the number, another value by its type. */
static void test_error_objects(void **st) {
  char err[256];
  (void)st;
  rt_lua *x = mk(NULL, 0, err, sizeof err);
  assert_non_null(x);
  assert_int_equal(run(x, "error(42)"), RT_LUA_ERR_RUN);
  assert_true(strncmp(rt_lua_error(x), "42", 2) == 0);
  rt_lua_co co;
  lua_pushcfunction(rt_lua_L(x), throw_table);
  assert_int_equal(rt_lua_start(x, 0, &co), RT_LUA_ERR_RUN);
  assert_non_null(strstr(rt_lua_error(x), "(error object is a table value)"));
  rt_lua_co_release(x, &co);
  rt_lua_free(x);
}

/* Corners of the sandbox's replacements that test_lua_lib_edges does not
** reach: '%%' and flags before %p, %p of nil/boolean/number; table.sort of
** an empty table; load from a reader that ends with an empty string. */
static void test_sandbox_corners(void **st) {
  char err[256];
  (void)st;
  rt_lua *x = mk(NULL, 0, err, sizeof err);
  assert_non_null(x);
  assert_int_equal(run(x, "assert(string.format('100%% %5.1f', 2.5) == '100%   2.5')\n"
                          "assert(string.format('%p %p %p', nil, true, 3) == '(null) (null) (null)')\n"
                          "assert(string.format('%-8p|', nil) == '(null)  |')\n"
                          "local e = {} table.sort(e) assert(#e == 0)\n"
                          "local parts, i = {'return ', '7', ''}, 0\n"
                          "local f = assert(load(function() i = i + 1 return parts[i] end))\n"
                          "assert(f() == 7)\n"),
                   RT_LUA_DONE);
  rt_lua_free(x);
}

static int throw_nothing(lua_State *L) {
  lua_pushnil(L);
  return lua_error(L); /* error(nil) from C: the error object is nil */
}

/* The C API refuses what it cannot do: a resume of a callback that ended or
** was never started, a binary chunk; an error whose object is nil says so. */
static void test_api_refusals(void **st) {
  char err[256];
  rt_lua_co co;
  (void)st;
  rt_lua *x = mk(NULL, 0, err, sizeof err);
  assert_non_null(x);
  assert_int_equal(rt_lua_load(x, "b.lua", "\x1bLuaT", 6), RT_LUA_ERR_SYNTAX);
  assert_non_null(strstr(rt_lua_error(x), "b.lua: binary chunks are refused"));
  assert_int_equal(rt_lua_load(x, "t.lua", "return 1", 8), RT_LUA_DONE);
  assert_int_equal(rt_lua_start(x, 0, &co), RT_LUA_DONE);
  assert_int_equal(rt_lua_resume(x, &co, 0), RT_LUA_ERR_USAGE); /* it ended */
  assert_non_null(strstr(rt_lua_error(x), "not suspended"));
  rt_lua_co_release(x, &co);
  assert_int_equal(rt_lua_resume(x, &co, 0), RT_LUA_ERR_USAGE); /* released */
  assert_int_equal(rt_lua_load(x, "y.lua", "coroutine.yield(1)", 18), RT_LUA_DONE);
  assert_int_equal(rt_lua_start(x, 0, &co), RT_LUA_YIELDED);
  assert_int_equal(rt_lua_resume(x, &co, 3), RT_LUA_ERR_USAGE); /* 3 values not pushed */
  assert_int_equal(rt_lua_resume(x, &co, -1), RT_LUA_ERR_USAGE);
  assert_int_equal(rt_lua_resume(x, &co, 0), RT_LUA_DONE);
  rt_lua_co_release(x, &co);
  lua_pushcfunction(rt_lua_L(x), throw_nothing);
  assert_int_equal(rt_lua_start(x, 0, &co), RT_LUA_ERR_RUN);
  assert_non_null(strstr(rt_lua_error(x), "(error object is a nil value)"));
  rt_lua_co_release(x, &co);
  rt_lua_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_xpcall_and_load),
      cmocka_unit_test(test_int_float_key_order),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_bad_folder_and_usage),
      cmocka_unit_test(test_error_objects),
      cmocka_unit_test(test_sandbox_corners),
      cmocka_unit_test(test_api_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
