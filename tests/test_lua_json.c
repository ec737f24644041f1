/*
** test_lua_json.c: JSON <-> Lua values (runtime/rt_lua_json.c), every arm
** of the encoder and the decoder: what each Lua value becomes, what JSON
** cannot carry (each refused with its reason), escapes both ways, numbers
** at the 2^53 edge, tables with many keys, nesting limits, and every kind
** of malformed text the decoder must refuse. The cases are a Lua script run
** against the two C functions; any failed check is a Lua error.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "runtime/rt_lua.h"

/* enc(v): the JSON text of v (raises what the encoder raises). */
static int l_enc(lua_State *L) {
  lua_settop(L, 1);
  return rt_lua_json_encode(L, 1);
}

/* dec(s): the value, true; or nil, false on a syntax error. */
static int l_dec(lua_State *L) {
  size_t n;
  const char *s = lua_isnil(L, 1) ? NULL : luaL_checklstring(L, 1, &n);
  int rc = rt_lua_json_decode(L, s, s ? n : 0);
  lua_pushboolean(L, rc == 0);
  return 2;
}

#define CASES_N 105 /* the checks below: one more or fewer fails */
static const char *const CASES =
    "local n = 0\n"
    "local function eq(v, want)\n"
    "  local got = enc(v); n = n + 1\n"
    "  if got ~= want then error(('case %d: got %s want %s'):format(n, got, want)) end\n"
    "end\n"
    "local function refused(v, why)\n"
    "  local ok, err = pcall(enc, v); n = n + 1\n"
    "  if ok or not tostring(err):find(why, 1, true) then\n"
    "    error(('case %d: %s not refused with %q: %s'):format(n, tostring(v), why, tostring(err))) end\n"
    "end\n"
    "eq(nil, 'null'); eq(true, 'true'); eq(false, 'false')\n"
    "eq(0, '0'); eq(42, '42'); eq(-7, '-7')\n"
    "eq(9007199254740992, '9007199254740992'); eq(-9007199254740992, '-9007199254740992')\n"
    "refused(9007199254740993, 'beyond 2^53'); refused(-9007199254740993, 'beyond 2^53')\n"
    "eq(1.5, '1.5'); eq(3.0, '3'); eq(-2.0, '-2'); eq(1e20, '1e+20'); eq(0.1, '0.10000000000000001')\n"
    "refused(0/0, 'NaN'); refused(1/0, 'inf'); refused(-1/0, '-inf')\n"
    "eq('a\"b\\\\c\\n\\t\\r\\1z', '\"a\\\\\"b\\\\\\\\c\\\\n\\\\t\\\\r\\\\u0001z\"')\n"
    "eq('', '\"\"'); eq(string.rep('x', 600), '\"' .. string.rep('x', 600) .. '\"')\n"
    "eq('caf\\195\\169 \\226\\130\\172 \\240\\159\\152\\128', '\"caf\\195\\169 \\226\\130\\172 \\240\\159\\152\\128\"')\n"
    "refused('caf\\233', 'not UTF-8 text (byte 0xe9 at byte 4 of 4)'); refused({k = '\\255'}, 'not UTF-8')\n"
    "refused('\\192\\128', 'not UTF-8'); refused('\\237\\160\\128', 'not UTF-8'); refused('\\226\\130', 'not UTF-8')\n"
    "refused({['\\255'] = 1}, 'not UTF-8') -- keys too\n"
    "eq({}, '{}'); eq({1, 2, 3}, '[1,2,3]'); eq({1, nil, 3}, '[1,null,3]')\n"
    "eq({b = 1, a = 2, ab = 3, [''] = 0}, '{\"\":0,\"a\":2,\"ab\":3,\"b\":1}')\n"
    "eq({x = {1, {y = false}}}, '{\"x\":[1,{\"y\":false}]}')\n"
    "local many, want = {}, {}\n"
    "for i = 1, 100 do many[('k%03d'):format(i)] = i; want[i] = ('\"k%03d\":%d'):format(i, i) end\n"
    "eq(many, '{' .. table.concat(want, ',') .. '}')\n"
    "-- flat objects (string keys; string, boolean or safe integer values) take\n"
    "-- the one-pass path: the same text, the same refusals, in key order\n"
    "eq({pc = 1}, '{\"pc\":1}')\n"
    "eq({z = 'q', a = true, m = -3, b = false, ['a\"'] = 'x\\n'},\n"
    "   '{\"a\":true,\"a\\\\\"\":\"x\\\\n\",\"b\":false,\"m\":-3,\"z\":\"q\"}')\n"
    "eq({b = 1.5, a = 1}, '{\"a\":1,\"b\":1.5}'); eq({b = {}, a = 1}, '{\"a\":1,\"b\":{}}')\n"
    "eq({a = 9007199254740992}, '{\"a\":9007199254740992}')\n"
    "refused({a = 9007199254740993, b = 'x'}, 'beyond 2^53'); refused({a = 1, [3] = 2}, 'mixes')\n"
    "for _, nk in ipairs({16, 17}) do\n"
    "  local f, w = {}, {}\n"
    "  for i = nk, 1, -1 do f[('%02d'):format(i)] = i; w[i] = ('\"%02d\":%d'):format(i, i) end\n"
    "  eq(f, '{' .. table.concat(w, ',') .. '}')\n"
    "end\n"
    "do -- long values out of order: the text is put in order past the buffer's end\n"
    "  local f, w = {}, {}\n"
    "  for i = 8, 1, -1 do f['k' .. i] = string.rep(tostring(i), 3000); w[i] = ('\"k%d\":\"%s\"'):format(i, f['k' .. i]) end\n"
    "  eq(f, '{' .. table.concat(w, ',') .. '}')\n"
    "end\n"
    "refused({1, a = 2}, 'mixes array items'); refused({[1.5] = 1}, 'not a string')\n"
    "refused({[0] = 1}, 'not a string'); refused({[true] = 1}, 'not a string')\n"
    "refused({a = 1, [2] = 2}, 'mixes'); refused(print, 'a function value')\n"
    "refused(coroutine.create(print), 'a thread value')\n"
    "local deep = {}; local t = deep; for _ = 1, 70 do t[1] = {}; t = t[1] end\n"
    "refused(deep, 'nested deeper than 64')\n"
    "local cyc = {}; cyc.self = cyc; refused(cyc, 'a cycle?')\n"
    "local function dq(s, want)\n"
    "  local v, ok = dec(s); n = n + 1\n"
    "  if not ok then error(('case %d: %q refused'):format(n, s)) end\n"
    "  local got = enc(v)\n"
    "  if got ~= want then error(('case %d: %q decoded as %s want %s'):format(n, s, got, want)) end\n"
    "  return v\n"
    "end\n"
    "local function bad(s)\n"
    "  local v, ok = dec(s); n = n + 1\n"
    "  if ok or v ~= nil then error(('case %d: %q accepted'):format(n, tostring(s))) end\n"
    "end\n"
    "dq(' {\\t\"a\" : [ 1 , 2.5 , \"x\" ] ,\\r\\n \"b\":{} , \"c\":[] } ', '{\"a\":[1,2.5,\"x\"],\"b\":{},\"c\":{}}')\n"
    "dq('true', 'true'); dq('false', 'false'); dq('[1,null]', '[1]')\n"
    "assert(math.type(dq('12', '12')) == 'integer'); assert(math.type(dq('1e3', '1000')) == 'float')\n"
    "assert(math.type(dq('9007199254740993', '9007199254740992')) == 'float')\n"
    "assert(math.type(dq('-0.5E-1', '-0.050000000000000003')) == 'float')\n"
    "dq('\"\\\\n\\\\t\\\\r\\\\b\\\\f\\\\/\\\\\\\\\\\\\"\"', '\"\\\\n\\\\t\\\\r\\\\u0008\\\\u000c/\\\\\\\\\\\\\"\"')\n"
    "dq('\"\\\\u0041\\\\u00e9\\\\u20AC\\\\u0000z\"', '\"A\\195\\169\\226\\130\\172\\\\u0000z\"')\n"
    "bad(nil); bad(''); bad('   '); bad('\"abc'); bad('\"ab\\\\'); bad('\"\\\\u12'); bad('\"\\\\u00Zz\"'); bad('\"\\\\u0G00\"'); bad('tru'); bad('nul')\n"
    "bad('fals'); bad('-'); bad('1.2.3'); bad('{\"a\" 1}'); bad('{\"a\":1 \"b\":2}'); bad('{1:2}')\n"
    "bad('{\"a\":}'); bad('[1 2]'); bad('[1,'); bad('{'); bad('{\"a\":1,'); bad('[1] x'); bad('@')\n"
    "bad(string.rep('[', 70) .. string.rep(']', 70))\n"
    "bad(string.rep('1', 70)); bad('1-2'); bad('{\"a\":1,2:3}'); bad('{\"a\"'); bad('{\"a\":1'); bad('[1')\n"
    "bad('{\"a\":1]'); bad('[1}'); bad('{\"a\":1,}')\n"
    "assert(math.type(dq('-9007199254740993', '-9007199254740992')) == 'float')\n"
    "dq('\"\\\\u00aF\\\\u00Af\"', '\"\\194\\175\\194\\175\"')\n"
    "-- long strings: the decoder's buffer fills on every kind of character\n"
    "for _, e in ipairs({{'n', '\\n'}, {'t', '\\t'}, {'r', '\\r'}, {'b', '\\b'}, {'f', '\\f'}, {'/', '/'}, {'x', 'x'}}) do\n"
    "  local text = '\"' .. string.rep((e[1] == 'x' and '' or '\\\\') .. e[1], 3000) .. '\"'\n"
    "  local v, okd = dec(text); n = n + 1\n"
    "  assert(okd and v == string.rep(e[2], 3000), e[1])\n"
    "end\n"
    "return n\n";

static void test_json_cases(void **st) {
  (void)st;
  lua_State *L = luaL_newstate();
  assert_non_null(L);
  luaL_openlibs(L);
  lua_register(L, "enc", l_enc);
  lua_register(L, "dec", l_dec);
  if (luaL_loadstring(L, CASES) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK)
    fail_msg("%s", lua_tostring(L, -1));
  assert_int_equal(lua_tointeger(L, -1), CASES_N); /* every case ran */
  lua_close(L);
}

/* The encoder's text without a Lua string: the kept buffer and its length. */
static void test_json_text(void **st) {
  (void)st;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  assert_int_equal(luaL_dostring(L, "return {z = 'a\\0b', a = {1.25}}"), LUA_OK);
  size_t n;
  const char *s = rt_lua_json_text(L, -1, &n);
  assert_int_equal(n, strlen("{\"a\":[1.25],\"z\":\"a\\u0000b\"}"));
  assert_memory_equal(s, "{\"a\":[1.25],\"z\":\"a\\u0000b\"}", n);
  assert_int_equal(s[n], '\0');
  lua_close(L);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_cases),
      cmocka_unit_test(test_json_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
