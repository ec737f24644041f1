/*
** rt_lua_lib.c: the sandboxed library of an rt_lua state: what replaces
** the parts of Lua's standard library that leak order, addresses, time,
** randomness or the machine, and the `revenant` table. Rules and reasons:
** docs/scripting.md.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lualib.h>

#include "runtime/rt_lua_internal.h"

/* What a caught error costs (message, unwinding), in instructions. */
#define CAUGHT_ERROR_COST 100
#define NAMES_KEY "rt_lua.names"
#define LOADED_KEY "rt_lua.loaded"

/* {=============== key order ===================================== */

/* Classes in iteration order: numbers, strings, booleans, objects. */
enum { K_NUM, K_STR, K_BOOL, K_OBJ };

typedef struct okey {
  int cls;
  int isint;
  lua_Integer i;
  lua_Number d;
  const char *s;  /* anchored by the caller's stack or key table */
  size_t len;
  uint64_t serial;
  lua_Integer pos;  /* where the key sits in the collected key table */
} okey;

static void okey_of(lua_State *L, int idx, okey *k) {
  memset(k, 0, sizeof *k);
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER:
    k->cls = K_NUM;
    k->isint = lua_isinteger(L, idx);
    if (k->isint) k->i = lua_tointeger(L, idx);
    else k->d = lua_tonumber(L, idx);
    break;
  case LUA_TSTRING: k->cls = K_STR; k->s = lua_tolstring(L, idx, &k->len); break;
  case LUA_TBOOLEAN: k->cls = K_BOOL; k->i = lua_toboolean(L, idx); break;
  case LUA_TTABLE: case LUA_TFUNCTION: case LUA_TTHREAD:
    k->cls = K_OBJ;
    k->serial = rt__lua_serial(L, idx);
    break;
  default:
    luaL_error(L, "pairs/next: a key of type %s has no deterministic order", luaL_typename(L, idx));
  }
}

/* Exact comparison of an integer with a float that is not equal to it
** (Lua keeps float keys with an integral value as integers). */
static int cmp_int_float(lua_Integer i, lua_Number d) {
  if (d >= 0x1p63) return -1;
  if (d < -0x1p63) return 1;
  lua_Number fl = floor(d); /* in [-2^63, 2^63): exact as an integer */
  lua_Integer fi = (lua_Integer)fl;
  if (i != fi) return i < fi ? -1 : 1;
  return d > fl ? -1 : 1;
}

static int cmp_num(const okey *a, const okey *b) {
  if (a->isint && b->isint) return (a->i > b->i) - (a->i < b->i);
  if (!a->isint && !b->isint) return (a->d > b->d) - (a->d < b->d);
  if (a->isint) return cmp_int_float(a->i, b->d);
  return -cmp_int_float(b->i, a->d);
}

static int okey_cmp(const void *pa, const void *pb) {
  const okey *a = pa, *b = pb;
  if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
  switch (a->cls) {
  case K_NUM: return cmp_num(a, b);
  case K_STR: {
    int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);
    if (c) return c < 0 ? -1 : 1;
    return (a->len > b->len) - (a->len < b->len);
  }
  case K_BOOL: return (int)(a->i - b->i);
  default: return (a->serial > b->serial) - (a->serial < b->serial);
  }
}

static uint64_t nlogn(lua_Integer n) {
  uint64_t lg = 1;
  while (((lua_Integer)1 << lg) < n && lg < 62) lg++;
  return (uint64_t)n * lg;
}

/* Pushes a new array of the keys of the table at t in the defined order;
** returns how many. Keys are distinct, so any correct sort gives the same
** array. */
static lua_Integer sorted_keys(lua_State *L, int t) {
  lua_Integer n = 0;
  t = lua_absindex(L, t);
  lua_newtable(L);
  int k = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, k, ++n);
  }
  rt__lua_charge(L, (uint64_t)n);
  okey *a = lua_newuserdatauv(L, (size_t)n * sizeof *a + 1, 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, k, i + 1);
    okey_of(L, -1, &a[i]);
    a[i].pos = i + 1;
    lua_pop(L, 1);
  }
  qsort(a, (size_t)n, sizeof *a, okey_cmp);
  rt__lua_charge(L, nlogn(n));
  lua_createtable(L, n > INT_MAX ? INT_MAX : (int)n, 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, k, a[i].pos);
    lua_rawseti(L, -2, i + 1);
  }
  lua_replace(L, k);
  lua_pop(L, 1);
  return n;
}

/* Upvalues: sorted keys, their count, the next position. */
static int pairs_iter(lua_State *L) {
  lua_Integer n = lua_tointeger(L, lua_upvalueindex(2));
  lua_Integer i = lua_tointeger(L, lua_upvalueindex(3));
  while (i < n) {
    lua_rawgeti(L, lua_upvalueindex(1), ++i);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, 1) != LUA_TNIL) {
      lua_pushinteger(L, i);
      lua_replace(L, lua_upvalueindex(3));
      return 2;
    }
    lua_pop(L, 2); /* removed during the traversal: skip it */
  }
  lua_pushinteger(L, n);
  lua_replace(L, lua_upvalueindex(3));
  lua_pushnil(L);
  return 1;
}

static int sb_pairs(lua_State *L) {
  if (luaL_getmetafield(L, 1, "__pairs") != LUA_TNIL) {
    lua_pushvalue(L, 1);
    lua_call(L, 1, 3);
    return 3;
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = sorted_keys(L, 1);
  lua_pushinteger(L, n);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, pairs_iter, 3);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

/* next(t, k): the smallest key after k in the defined order; one pass over
** the table (O(n) a call, so `pairs` is the fast way). */
static int sb_next(lua_State *L) {
  okey want, best, c;
  int found = 0;
  uint64_t n = 0;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  int after = !lua_isnil(L, 2);
  if (after) okey_of(L, 2, &want);
  lua_pushnil(L); /* 3: best so far */
  lua_pushnil(L); /* 4: traversal key */
  while (lua_next(L, 1)) {
    lua_pop(L, 1);
    n++;
    okey_of(L, 4, &c);
    if ((!after || okey_cmp(&c, &want) > 0) && (!found || okey_cmp(&c, &best) < 0)) {
      lua_pushvalue(L, 4);
      lua_replace(L, 3);
      okey_of(L, 3, &best);
      found = 1;
    }
  }
  rt__lua_charge(L, n);
  if (!found) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 3);
  lua_rawget(L, 1);
  return 2;
}

/* }=============================================================== */

/* {=============== identities: tostring, print, format =========== */

/* Pushes the identity of a table/function/thread/userdata: "builtin: name"
** for the sandbox's own named objects, else "#serial". */
static void push_identity(lua_State *L, int idx) {
  rt_lua *x = rt__lua_of(L);
  idx = lua_absindex(L, idx);
  lua_getfield(L, LUA_REGISTRYINDEX, NAMES_KEY);
  if (lua_istable(L, -1)) {
    lua_pushvalue(L, idx);
    if (lua_rawget(L, -2) == LUA_TSTRING) {
      lua_pushfstring(L, "builtin: %s", lua_tostring(L, -1));
      lua_replace(L, -3);
      lua_pop(L, 1);
      return;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  uint64_t s = rt__lua_serial(L, idx);
  if (s == 0) lua_pushstring(L, lua_islightuserdata(L, idx) ? "light" : "?");
  else if (s > x->serial_base) lua_pushfstring(L, "#%I", (lua_Integer)(s - x->serial_base));
  else lua_pushfstring(L, "builtin#%I", (lua_Integer)s);
}

const char *rt__lua_tostring(lua_State *L, int idx, size_t *len) {
  idx = lua_absindex(L, idx);
  if (luaL_callmeta(L, idx, "__tostring")) {
    if (!lua_isstring(L, -1)) luaL_error(L, "'__tostring' must return a string");
    return lua_tolstring(L, -1, len);
  }
  switch (lua_type(L, idx)) {
  case LUA_TNIL: case LUA_TBOOLEAN: case LUA_TNUMBER: case LUA_TSTRING:
    return luaL_tolstring(L, idx, len);
  default: {
    int tt = luaL_getmetafield(L, idx, "__name");
    const char *kind = tt == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, idx);
    push_identity(L, idx);
    lua_pushfstring(L, "%s: %s", kind, lua_tostring(L, -1));
    lua_replace(L, tt != LUA_TNIL ? -3 : -2);
    if (tt != LUA_TNIL) lua_pop(L, 1);
    return lua_tolstring(L, -1, len);
  }
  }
}

static int sb_tostring(lua_State *L) {
  luaL_checkany(L, 1);
  rt__lua_tostring(L, 1, NULL);
  return 1;
}

static void push_joined(lua_State *L, const char *sep) {
  int n = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; i++) {
    if (i > 1) luaL_addstring(&b, sep);
    rt__lua_tostring(L, i, NULL);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
}

static void to_host_log(lua_State *L, const char *sep) {
  rt_lua *x = rt__lua_of(L);
  size_t len;
  push_joined(L, sep);
  const char *s = lua_tolstring(L, -1, &len);
  if (x->host.log) x->host.log(x->host.ctx, s, len);
}

static int sb_print(lua_State *L) { to_host_log(L, "\t"); return 0; }
static int rv_log(lua_State *L) { to_host_log(L, " "); return 0; }

/* string.format with %s of objects through the sandbox's tostring and %p
** showing the identity: the original format (upvalue 1) never sees an
** object it would print by address. */
static int sb_format(lua_State *L) {
  size_t fl;
  const char *f = luaL_checklstring(L, 1, &fl);
  int top = lua_gettop(L), arg = 1;
  char *nf = lua_newuserdatauv(L, fl + 1, 0);
  memcpy(nf, f, fl + 1);
  for (size_t i = 0; i < fl; i++) {
    if (nf[i] != '%') continue;
    if (++i < fl && nf[i] == '%') continue;
    while (i < fl && strchr("-+ #0123456789.", nf[i])) i++;
    if (i >= fl || ++arg > top) break; /* the original reports it */
    if (nf[i] == 'p') {
      nf[i] = 's';
      int t = lua_type(L, arg);
      if (t == LUA_TSTRING) luaL_error(L, "string.format: '%%p' of a string is refused (its address is not deterministic)");
      if (t == LUA_TNIL || t == LUA_TBOOLEAN || t == LUA_TNUMBER) lua_pushliteral(L, "(null)");
      else push_identity(L, arg);
      lua_replace(L, arg);
    } else if (nf[i] == 's' && !lua_isstring(L, arg)) {
      rt__lua_tostring(L, arg, NULL);
      lua_replace(L, arg);
    }
  }
  lua_pushlstring(L, nf, fl);
  lua_replace(L, 1);
  lua_settop(L, top);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, top, 1);
  return 1;
}

/* }=============================================================== */

/* {=============== table.sort: stable merge sort ================= */

/* comp(a, b) for the values at stack indices a and b. */
static int sort_less(lua_State *L, int a, int b) {
  int r;
  a = lua_absindex(L, a);
  b = lua_absindex(L, b);
  rt__lua_charge(L, 1);
  if (lua_isnoneornil(L, 2)) return lua_compare(L, a, b, LUA_OPLT);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, a);
  lua_pushvalue(L, b);
  lua_call(L, 2, 1);
  r = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return r;
}

/* One pass: merges runs of `width` from table src into table dst. */
static void merge_pass(lua_State *L, int src, int dst, lua_Integer n, lua_Integer width) {
  for (lua_Integer lo = 1; lo <= n; lo += 2 * width) {
    lua_Integer mid = lo + width > n + 1 ? n + 1 : lo + width;
    lua_Integer hi = lo + 2 * width > n + 1 ? n + 1 : lo + 2 * width;
    lua_Integer i = lo, j = mid, k = lo;
    while (i < mid && j < hi) {
      lua_rawgeti(L, src, i);
      lua_rawgeti(L, src, j);
      int take_right = sort_less(L, -1, -2); /* right first only if strictly less */
      lua_remove(L, take_right ? -2 : -1);
      lua_rawseti(L, dst, k++);
      if (take_right) j++;
      else i++;
    }
    for (; i < mid; i++) { lua_rawgeti(L, src, i); lua_rawseti(L, dst, k++); }
    for (; j < hi; j++) { lua_rawgeti(L, src, j); lua_rawseti(L, dst, k++); }
  }
}

static void sort_check(lua_State *L, int a, lua_Integer n) {
  if (n < 1) return;
  lua_rawgeti(L, a, 1);
  if (sort_less(L, -1, -1))
    luaL_error(L, "table.sort: invalid order function: comp(x, x) is true "
                  "(it must be a strict order, like <, not <=)");
  lua_pop(L, 1);
  for (lua_Integer i = 1; i < n; i++) {
    lua_rawgeti(L, a, i);
    lua_rawgeti(L, a, i + 1);
    if (sort_less(L, -1, -2))
      luaL_error(L, "table.sort: invalid order function: inconsistent answers "
                    "(after sorting, comp(a[%I], a[%I]) is true)", i + 1, i);
    lua_pop(L, 2);
  }
}

static int sb_sort(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 1);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  luaL_argcheck(L, n < INT_MAX, 1, "array too big");
  lua_createtable(L, (int)n, 0);
  lua_createtable(L, (int)n, 0);
  int src = 3, dst = 4;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    lua_rawseti(L, src, i);
  }
  for (lua_Integer w = 1; w < n; w *= 2) {
    merge_pass(L, src, dst, n, w);
    int t = src; src = dst; dst = t;
  }
  sort_check(L, src, n);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, src, i);
    lua_seti(L, 1, i);
  }
  return 0;
}

/* }=============================================================== */

/* {=============== randomness and time =========================== */

/* Uniform in [0, lim] from 64-bit draws, without bias. */
static uint64_t project(lua_State *L, uint64_t r, uint64_t lim, int own) {
  if (lim == UINT64_MAX) return r;
  uint64_t mask = lim;
  for (int s = 1; s < 64; s *= 2) mask |= mask >> s;
  while ((r & mask) > lim) r = rt__lua_random64(L, own);
  return r & mask;
}

/* math.random's contract: () float in [0,1); (m) integer in [1,m];
** (m, n) integer in [m,n]; (0) all 64 bits. */
static int push_random(lua_State *L, int own) {
  lua_Integer low, up;
  uint64_t r = rt__lua_random64(L, own);
  switch (lua_gettop(L)) {
  case 0: lua_pushnumber(L, (lua_Number)(r >> 11) * 0x1.0p-53); return 1;
  case 1:
    low = 1;
    up = luaL_checkinteger(L, 1);
    if (up == 0) { lua_pushinteger(L, (lua_Integer)r); return 1; }
    break;
  case 2: low = luaL_checkinteger(L, 1); up = luaL_checkinteger(L, 2); break;
  default: return luaL_error(L, "wrong number of arguments");
  }
  luaL_argcheck(L, low <= up, 1, "interval is empty");
  uint64_t v = project(L, r, (uint64_t)up - (uint64_t)low, own);
  lua_pushinteger(L, (lua_Integer)((uint64_t)low + v));
  return 1;
}

static int sb_random(lua_State *L) { return push_random(L, 1); }
static int rv_random(lua_State *L) { return push_random(L, 0); }

/* math.randomseed(n [, m]): a private stream seeded from the script's own
** numbers (the same numbers give the same draws in any run);
** math.randomseed(): back to the host's stream. */
static int sb_randomseed(lua_State *L) {
  rt_lua *x = rt__lua_of(L);
  if (lua_isnone(L, 1)) {
    x->own_on = 0;
    return 0;
  }
  lua_Integer a = luaL_checkinteger(L, 1), b = luaL_optinteger(L, 2, 0);
  uint64_t st = (uint64_t)a ^ ((uint64_t)b * 0x9e3779b97f4a7c15ULL);
  sim_rng_seed(&x->own, sim_splitmix64(&st));
  x->own_on = 1;
  return 0;
}

static int rv_now(lua_State *L) {
  rt_lua *x = rt__lua_of(L);
  if (!x->host.now_us) return luaL_error(L, "revenant.now: the host gave this state no clock");
  lua_pushinteger(L, (lua_Integer)(x->host.now_us(x->host.ctx) / 1000));
  return 1;
}

/* }=============================================================== */

/* {=============== catch points keep aborts fatal ================ */

/* A budget or memory abort must end the callback: pcall, xpcall,
** coroutine.resume and coroutine.close hand it on instead of catching. */
static int finish_pcall(lua_State *L, int status, lua_KContext extra) {
  rt_lua *x = rt__lua_of(L);
  if (status == LUA_ERRMEM && x->in_script && !x->abort) x->abort = RT_LUA_ERR_MEMORY;
  if (status != LUA_OK && status != LUA_YIELD) {
    if (x->abort) return lua_error(L);
    rt__lua_charge(L, CAUGHT_ERROR_COST);
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
  }
  return lua_gettop(L) - (int)extra;
}

/* A pcall recovers without keeping C frames, so Lua's C-call limit does
** not bound recursion through pcall; a stack that deep makes every
** collection step slow (it walks the whole stack). Refuse pcall beyond
** PCALL_DEPTH_MAX call levels (stock Lua stops non-yieldable pcall nesting
** near 200 C levels too); lua_getstack costs min(depth, limit) steps. */
#define PCALL_DEPTH_MAX 256

static void check_depth(lua_State *L) {
  lua_Debug ar;
  if (lua_getstack(L, PCALL_DEPTH_MAX, &ar)) {
    rt__lua_charge(L, PCALL_DEPTH_MAX); /* the walk above */
    luaL_error(L, "pcall: more than %d nested calls (runaway recursion?)", PCALL_DEPTH_MAX);
  }
}

static int sb_pcall(lua_State *L) {
  luaL_checkany(L, 1);
  check_depth(L);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, finish_pcall);
  return finish_pcall(L, status, 0);
}

static int sb_xpcall(lua_State *L) {
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  check_depth(L);
  lua_pushboolean(L, 1);
  lua_pushvalue(L, 1);
  lua_rotate(L, 3, 2);
  int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, finish_pcall);
  return finish_pcall(L, status, 2);
}

/* coroutine.resume / close: the original (upvalue 1), then re-raise an
** abort that it turned into (false, message). */
static int sb_co_catch(lua_State *L) {
  rt_lua *x = rt__lua_of(L);
  int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  if (x->abort) {
    if (lua_gettop(L) >= 2 && lua_isboolean(L, 1) && !lua_toboolean(L, 1)) {
      lua_settop(L, 2);
      return lua_error(L);
    }
    rt__lua_check_abort(L);
  }
  return lua_gettop(L);
}

/* coroutine.create / wrap: a new thread starts with a fresh hook count, so
** charge a full hook period for it up front (work it may hide). */
static int sb_co_make(lua_State *L) {
  int n = lua_gettop(L);
  rt__lua_charge(L, (uint64_t)rt__lua_of(L)->period);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, 1);
  return 1;
}

/* }=============================================================== */

/* {=============== loading code ================================== */

static int escape_error(lua_State *L);

static int sb_load(lua_State *L) {
  size_t len;
  const char *s, *name;
  int env = lua_isnone(L, 4) ? 0 : 4;
  const char *mode = luaL_optstring(L, 3, "bt");
  if (!strchr(mode, 't'))
  {
    lua_pushfstring(L, "load: mode '%s' is refused by the sandbox (binary chunks); use text", mode);
    return escape_error(L);
  }
  if (lua_type(L, 1) == LUA_TSTRING) {
    s = lua_tolstring(L, 1, &len);
    name = luaL_optstring(L, 2, s);
  } else {
    luaL_Buffer b;
    luaL_checktype(L, 1, LUA_TFUNCTION);
    name = luaL_optstring(L, 2, "=(load)");
    lua_settop(L, 4);
    luaL_buffinit(L, &b);
    for (;;) {
      lua_pushvalue(L, 1);
      lua_call(L, 0, 1);
      if (lua_isnil(L, -1) || (lua_isstring(L, -1) && lua_rawlen(L, -1) == 0)) {
        lua_pop(L, 1);
        break;
      }
      if (lua_type(L, -1) != LUA_TSTRING) return luaL_error(L, "reader function must return a string");
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    s = lua_tolstring(L, -1, &len);
  }
  if (len > 0 && s[0] == LUA_SIGNATURE[0])
  {
    lua_pushliteral(L, "load: binary chunks are refused by the sandbox (text only)");
    return escape_error(L);
  }
  if (luaL_loadbufferx(L, s, len, name, "t") != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  if (env) {
    lua_pushvalue(L, env);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  }
  return 1;
}

/* NULL when relpath may be read: relative, plain characters, no "..",
** ends in ".lua". Otherwise the reason. */
static const char *path_refusal(const char *p) {
  size_t n = strlen(p);
  if (n == 0 || n > 255) return "an empty or too long path";
  if (p[0] == '/') return "an absolute path";
  if (n < 5 || strcmp(p + n - 4, ".lua") != 0) return "not a .lua file";
  for (const char *c = p; *c; c++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./", *c))
      return "a path with unusual characters";
  for (const char *c = p; (c = strstr(c, "..")) != NULL; c++)
    if ((c == p || c[-1] == '/') && (c[2] == '/' || c[2] == '\0')) return "a path that climbs out with ..";
  return NULL;
}

int rt_lua_text_check(const char *text, size_t n, int *line, unsigned *byte) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0, k, len;
  unsigned cp, min;
  *line = 1;
  while (i < n) {
    if (s[i] != 0 && s[i] < 0x80) {
      *line += s[i++] == '\n';
      continue;
    }
    if (s[i] >= 0xC2 && s[i] <= 0xDF)
      len = 2, cp = s[i] & 0x1Fu, min = 0x80;
    else if ((s[i] & 0xF0) == 0xE0)
      len = 3, cp = s[i] & 0x0Fu, min = 0x800;
    else if (s[i] >= 0xF0 && s[i] <= 0xF4)
      len = 4, cp = s[i] & 0x07u, min = 0x10000;
    else
      len = 0, cp = 0, min = 1; /* NUL, a continuation byte, 0xC0, 0xC1, 0xF5.. */
    for (k = 1; len && k < len; k++) {
      if (i + k >= n || (s[i + k] & 0xC0) != 0x80)
        len = 0;
      else
        cp = (cp << 6) | (s[i + k] & 0x3Fu);
    }
    if (len == 0 || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *byte = s[i];
      return -1;
    }
    i += len;
  }
  return 0;
}

/* Reads dir/rel into a new userdata buffer (pushed); NULL with a message
** pushed when it cannot. */
static char *read_inside(lua_State *L, rt_lua *x, const char *rel, size_t *len) {
  char full[4096];
  snprintf(full, sizeof full, "%s/%s", x->dir, rel);
  char *real = realpath(full, NULL);
  size_t dl = strlen(x->dir);
  if (!real) {
    lua_pushfstring(L, "%s: no such file in the scenario's folder", rel);
    return NULL;
  }
  int inside = strncmp(real, x->dir, dl) == 0 && real[dl] == '/';
  struct stat st; /* a directory or a named pipe is no module (and a pipe would block the open) */
  int regular = inside && stat(real, &st) == 0 && S_ISREG(st.st_mode);
  FILE *f = regular ? fopen(real, "rb") : NULL;
  free(real);
  if (inside && !regular) {
    lua_pushfstring(L, "%s: not a regular file", rel);
    return NULL;
  }
  if (!inside) {
    lua_pushfstring(L, "%s is refused: it leads outside the scenario's folder", rel);
    return NULL;
  }
  if (!f) {
    lua_pushfstring(L, "%s: cannot be read", rel);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (sz < 0 || (size_t)sz > x->cap) {
    fclose(f);
    lua_pushfstring(L, "%s: too large", rel);
    return NULL;
  }
  char *buf = lua_newuserdatauv(L, (size_t)sz + 1, 0);
  *len = fread(buf, 1, (size_t)sz, f);
  fclose(f);
  int line;
  unsigned byte;
  if (rt_lua_text_check(buf, *len, &line, &byte)) {
    char why[64];
    snprintf(why, sizeof why, "line %d is not UTF-8 text (byte 0x%02x)", line, byte);
    lua_pop(L, 1);
    lua_pushfstring(L, "%s: %s: a repro file embeds modules as JSON, which cannot carry it; write "
                    "bytes as escapes in strings (\"\\xff\")", rel, why);
    return NULL;
  }
  return buf;
}

int rt__lua_loadfile(lua_State *L, const char *rel) {
  rt_lua *x = rt__lua_of(L);
  const char *why = path_refusal(rel);
  size_t len = 0;
  if (!x->dir) {
    lua_pushfstring(L, "%s is refused: this script has no folder to read from", rel);
    return LUA_ERRFILE;
  }
  if (why) {
    lua_pushfstring(L, "%s is refused (%s): only .lua files inside the scenario's folder", rel, why);
    return LUA_ERRFILE;
  }
  /* the process's copy first (a repro's embedded one, or the text an
  ** earlier run read); else the file, kept for the next runs and repros */
  const rt_lua_module *m = rt_lua_module_find(x->dir, rel);
  if (!m) {
    char *buf = read_inside(L, x, rel, &len), full[4200], reason[300];
    if (!buf) return LUA_ERRFILE;
    if (len > 0 && buf[0] == LUA_SIGNATURE[0]) {
      lua_pop(L, 1);
      lua_pushfstring(L, "%s is refused: binary chunks are not loaded (text only)", rel);
      return LUA_ERRFILE;
    }
    snprintf(full, sizeof full, "%s/%s", x->dir, rel);
    m = rt_lua_module_keep(x->dir, rel, buf, len, full, 0, reason, sizeof reason);
    lua_pop(L, 1);
    if (!m) {
      lua_pushstring(L, reason);
      return LUA_ERRFILE;
    }
  }
  size_t skip = rt__lua_text_start(m->text, m->len); /* a byte order mark, a #! line */
  if (m->len > skip && m->text[skip] == LUA_SIGNATURE[0]) {
    lua_pushfstring(L, "%s is refused: binary chunks are not loaded (text only)", rel);
    return LUA_ERRFILE;
  }
  lua_pushfstring(L, "@%s", rel);
  int st = luaL_loadbufferx(L, m->text + skip, m->len - skip, lua_tostring(L, -1), "t");
  lua_remove(L, -2); /* the function (or message) stays */
  return st;
}

static int sb_loadfile(lua_State *L) {
  const char *rel = luaL_checkstring(L, 1);
  int env = lua_isnone(L, 3) ? 0 : 3;
  int st = rt__lua_loadfile(L, rel);
  if (st == LUA_ERRFILE) {
    lua_pushfstring(L, "loadfile: %s", lua_tostring(L, -1));
    return escape_error(L);
  }
  if (st != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  if (env) {
    lua_pushvalue(L, env);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  }
  return 1;
}

static int dofile_cont(lua_State *L, int status, lua_KContext base) {
  (void)status;
  return lua_gettop(L) - (int)base;
}

static int sb_dofile(lua_State *L) {
  const char *rel = luaL_checkstring(L, 1);
  lua_settop(L, 1);
  int st = rt__lua_loadfile(L, rel);
  if (st == LUA_ERRFILE) {
    lua_pushfstring(L, "dofile: %s", lua_tostring(L, -1));
    return escape_error(L);
  }
  if (st != LUA_OK) return luaL_error(L, "dofile: %s", lua_tostring(L, -1));
  lua_callk(L, 0, LUA_MULTRET, 1, dofile_cont);
  return dofile_cont(L, LUA_OK, 1);
}

/* require(name): name.lua (dots are folders) inside the script folder,
** once per state; never C modules, never package.path. */
static int sb_require(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  char rel[300];
  size_t n = strlen(name);
  lua_settop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, LOADED_KEY);
  if (lua_getfield(L, 2, name) != LUA_TNIL) {
    if (lua_islightuserdata(L, -1)) return luaL_error(L, "require '%s': circular require", name);
    return 1;
  }
  lua_pop(L, 1);
  int ok = n > 0 && n < 250 && name[0] != '.' && name[n - 1] != '.' && !strstr(name, "..");
  for (size_t i = 0; ok && i < n; i++)
    ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.", name[i]) != NULL;
  if (!ok) {
    lua_pushfstring(L, "require '%s' is refused: module names are letters, digits, _ and "
                       "dots, found as .lua files inside the scenario's folder", name);
    return escape_error(L);
  }
  for (size_t i = 0; i <= n; i++) rel[i] = name[i] == '.' ? '/' : name[i];
  strcat(rel, ".lua");
  int st = rt__lua_loadfile(L, rel);
  if (st == LUA_ERRFILE) {
    lua_pushfstring(L, "require '%s': %s (only .lua files in the scenario's folder; "
                       "C modules are refused)", name, lua_tostring(L, -1));
    return escape_error(L);
  }
  if (st != LUA_OK) return luaL_error(L, "require '%s': %s", name, lua_tostring(L, -1));
  lua_pushlightuserdata(L, (void *)sb_require);
  lua_setfield(L, 2, name);
  lua_pushvalue(L, 1);
  lua_pushstring(L, rel);
  lua_call(L, 2, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, 2, name);
  return 1;
}

/* }=============================================================== */

/* {=============== refusals ====================================== */

/* Raises the message on top as an error at the calling line, and keeps the
** first such message of the state as its sandbox escape (rt_lua_escape):
** the host ends the run even when the script caught the error. */
static int escape_error(lua_State *L) {
  rt_lua *x = rt__lua_of(L);
  luaL_where(L, 1);
  lua_insert(L, -2);
  lua_concat(L, 2);
  if (!x->escape[0]) snprintf(x->escape, sizeof x->escape, "%s", lua_tostring(L, -1));
  return lua_error(L);
}

static int refused(lua_State *L) {
  lua_pushfstring(L, "%s is refused by the revenant sandbox (%s)",
                  lua_tostring(L, lua_upvalueindex(1)), lua_tostring(L, lua_upvalueindex(2)));
  return escape_error(L);
}

static void set_refused(lua_State *L, int t, const char *field, const char *full, const char *why) {
  t = lua_absindex(L, t);
  lua_pushstring(L, full);
  lua_pushstring(L, why);
  lua_pushcclosure(L, refused, 2);
  lua_setfield(L, t, field);
}

/* Any field of a removed library: "<lib>.<field> is refused (why)". */
static int stub_index(lua_State *L) {
  lua_pushfstring(L, "%s.%s is refused by the revenant sandbox (%s)",
                  lua_tostring(L, lua_upvalueindex(1)), luaL_tolstring(L, 2, NULL),
                  lua_tostring(L, lua_upvalueindex(2)));
  return escape_error(L);
}

static void set_stub_lib(lua_State *L, const char *lib, const char *why) {
  lua_newtable(L);
  lua_createtable(L, 0, 3);
  lua_pushstring(L, lib);
  lua_pushstring(L, why);
  lua_pushcclosure(L, stub_index, 2);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "__index");
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_setglobal(L, lib);
}

static int sb_setmetatable(lua_State *L) {
  if (lua_istable(L, 2)) {
    if (lua_getfield(L, 2, "__gc") != LUA_TNIL)
      return luaL_error(L, "setmetatable: __gc is refused by the sandbox (finalizers run when the "
                           "collector decides)");
    if (lua_getfield(L, 2, "__mode") != LUA_TNIL)
      return luaL_error(L, "setmetatable: __mode is refused by the sandbox (weak entries vanish "
                           "when the collector decides)");
    lua_pop(L, 2);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* }=============================================================== */

/* Replaces t[field] by fn with the old value as its upvalue. */
static void wrap_field(lua_State *L, int t, const char *field, lua_CFunction fn) {
  t = lua_absindex(L, t);
  lua_getfield(L, t, field);
  lua_pushcclosure(L, fn, 1);
  lua_setfield(L, t, field);
}

static void set_fn(lua_State *L, int t, const char *field, lua_CFunction fn) {
  t = lua_absindex(L, t);
  lua_pushcfunction(L, fn);
  lua_setfield(L, t, field);
}

static void install_base(lua_State *L, int g) {
  static const luaL_Reg fns[] = {
      {"pairs", sb_pairs}, {"next", sb_next}, {"tostring", sb_tostring},
      {"print", sb_print}, {"pcall", sb_pcall}, {"xpcall", sb_xpcall},
      {"load", sb_load}, {"loadfile", sb_loadfile}, {"dofile", sb_dofile},
      {"require", sb_require}, {NULL, NULL}};
  for (const luaL_Reg *f = fns; f->name; f++) set_fn(L, g, f->name, f->func);
  wrap_field(L, g, "setmetatable", sb_setmetatable);
  set_refused(L, g, "collectgarbage", "collectgarbage", "the collector's timing must not be observable");
  set_stub_lib(L, "os", "no process, file or clock access; use revenant.now()");
  set_stub_lib(L, "io", "no file access");
  set_stub_lib(L, "debug", "it can reach past the sandbox");
  set_stub_lib(L, "package", "modules load with require from the scenario's folder only");
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, LOADED_KEY);
}

static void install_libs(lua_State *L, int g) {
  lua_getfield(L, g, "string");
  wrap_field(L, -1, "format", sb_format);
  set_refused(L, lua_gettop(L), "dump", "string.dump", "binary chunks");
  lua_getfield(L, g, "table");
  set_fn(L, lua_gettop(L), "sort", sb_sort);
  lua_getfield(L, g, "math");
  set_fn(L, lua_gettop(L), "random", sb_random);
  set_fn(L, lua_gettop(L), "randomseed", sb_randomseed);
  lua_getfield(L, g, "coroutine");
  int co = lua_gettop(L);
  wrap_field(L, co, "resume", sb_co_catch);
  wrap_field(L, co, "close", sb_co_catch);
  wrap_field(L, co, "create", sb_co_make);
  wrap_field(L, co, "wrap", sb_co_make);
  lua_pop(L, 4);
  lua_createtable(L, 0, 3);
  set_fn(L, lua_gettop(L), "now", rv_now);
  set_fn(L, lua_gettop(L), "random", rv_random);
  set_fn(L, lua_gettop(L), "log", rv_log);
  lua_setfield(L, g, "revenant");
}

/* The light C functions a script can reach only as a library's return
** value (ipairs' and utf8.codes' iterators): named and numbered now, so
** that no unnumbered function is ever met in a pairs key set. */
static void name_iterators(lua_State *L, int names) {
  static const char *const calls[][2] = {
      {"return ipairs({})", "ipairs.iterator"},
      {"return utf8.codes('')", "utf8.codes.iterator"},
      {"return utf8.codes('', true)", "utf8.codes.iterator_lax"}};
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
    if (luaL_loadstring(L, calls[i][0]) != LUA_OK) lua_error(L);
    lua_call(L, 0, 1);
    if (lua_tocfunction(L, -1)) {
      rt__lua_serial(L, -1);
      lua_pushstring(L, calls[i][1]);
      lua_rawset(L, names);
    } else {
      lua_pop(L, 1);
    }
  }
}

/* Names every function and library reachable from _G ("print",
** "string.format", "string") for tostring, walking in the defined key
** order so that light C functions also get their serials in that order. */
static void name_builtins(lua_State *L, int g) {
  lua_newtable(L);
  int names = lua_gettop(L);
  lua_Integer n = sorted_keys(L, g);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    const char *k = lua_tostring(L, -1);
    lua_rawget(L, g);
    if (lua_isfunction(L, -1) || lua_istable(L, -1)) {
      rt__lua_serial(L, -1);
      if (lua_istable(L, -1) && !lua_rawequal(L, -1, g)) {
        lua_Integer m = sorted_keys(L, -1);
        for (lua_Integer j = 1; j <= m; j++) {
          lua_rawgeti(L, -1, j);
          lua_pushvalue(L, -1);
          lua_rawget(L, -4);
          if (lua_isfunction(L, -1)) {
            rt__lua_serial(L, -1);
            lua_pushfstring(L, "%s.%s", k, lua_tostring(L, -2));
            lua_rawset(L, names);
          } else {
            lua_pop(L, 1);
          }
          lua_pop(L, 1);
        }
        lua_pop(L, 1);
      }
      lua_pushstring(L, k);
      lua_rawset(L, names);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  name_iterators(L, names);
  lua_setfield(L, LUA_REGISTRYINDEX, NAMES_KEY);
}

void rt__lua_lib_install(lua_State *L) {
  lua_pushglobaltable(L);
  int g = lua_gettop(L);
  install_base(L, g);
  install_libs(L, g);
  name_builtins(L, g);
  lua_pop(L, 1);
}
