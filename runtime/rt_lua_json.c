/*
** rt_lua_json.c: JSON <-> Lua values for scripted agents (stash values,
** snapshots, request arguments and results, RPC arguments).
**
** Encoding is deterministic: object keys are sorted by bytes, a table whose
** keys are exactly 1..n (n > 0) is an array, an empty table is {}. What JSON
** (or a JavaScript number) cannot carry is an error that names it: integers
** beyond 2^53, NaN and infinities, functions, coroutines, userdata, keys
** that are neither strings nor array indices, nesting deeper than 64.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "runtime/rt_lua.h"

#define JSON_DEPTH 64
#define SAFE_INT 9007199254740992LL /* 2^53 */

/* The text is built as pieces in a table (jb.t), joined at the end: a
** luaL_Buffer cannot stay open while values are pushed and popped. */
typedef struct jb {
  lua_State *L;
  int t;
  lua_Integer n;
} jb;

static void add(jb *b, const char *s, size_t n) {
  lua_pushlstring(b->L, s, n);
  lua_rawseti(b->L, b->t, ++b->n);
}

static void adds(jb *b, const char *s) { add(b, s, strlen(s)); }

static void enc(jb *b, int idx, int depth);

static void enc_string(jb *out, const char *s, size_t n) {
  luaL_Buffer b;
  luaL_buffinit(out->L, &b);
  luaL_addchar(&b, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      luaL_addchar(&b, '\\');
      luaL_addchar(&b, (char)c);
    } else if (c == '\n') {
      luaL_addstring(&b, "\\n");
    } else if (c == '\t') {
      luaL_addstring(&b, "\\t");
    } else if (c == '\r') {
      luaL_addstring(&b, "\\r");
    } else if (c < 0x20) {
      char u[8];
      snprintf(u, sizeof u, "\\u%04x", c);
      luaL_addstring(&b, u);
    } else {
      luaL_addchar(&b, (char)c);
    }
  }
  luaL_addchar(&b, '"');
  luaL_pushresult(&b);
  lua_rawseti(out->L, out->t, ++out->n);
}

typedef struct skey {
  const char *s;
  size_t n;
} skey;

static int skey_cmp(const void *pa, const void *pb) {
  const skey *a = pa, *b = pb;
  size_t m = a->n < b->n ? a->n : b->n;
  int c = memcmp(a->s, b->s, m);
  return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* The table at idx: array length n if its keys are exactly 1..n, else -1;
** counts every key (order does not matter here). */
static lua_Integer array_len(lua_State *L, int idx, lua_Integer *nkeys) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx), k = 0;
  int all_int = 1;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    k++;
    if (!lua_isinteger(L, -2)) all_int = 0;
    else {
      lua_Integer i = lua_tointeger(L, -2);
      if (i < 1 || i > n) all_int = 0;
    }
    lua_pop(L, 1);
  }
  *nkeys = k;
  return all_int && k == n && n > 0 ? n : -1;
}

static void enc_table(jb *b, int idx, int depth) {
  lua_State *L = b->L;
  lua_Integer nkeys, n = array_len(L, idx, &nkeys);
  if (n > 0) {
    adds(b, "[");
    for (lua_Integer i = 1; i <= n; i++) {
      if (i > 1) adds(b, ",");
      lua_rawgeti(L, idx, i);
      enc(b, lua_gettop(L), depth + 1);
      lua_pop(L, 1);
    }
    adds(b, "]");
    return;
  }
  skey *keys = lua_newuserdatauv(L, (size_t)(nkeys ? nkeys : 1) * sizeof *keys, 0);
  int anchor = lua_gettop(L);
  lua_Integer k = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "cannot convert to JSON: a table mixes array items and fields, or has a "
                    "%s key (JSON object keys are strings)", luaL_typename(L, -1));
    keys[k].s = lua_tolstring(L, -1, &keys[k].n); /* anchored by the table itself */
    k++;
  }
  qsort(keys, (size_t)k, sizeof *keys, skey_cmp);
  adds(b, "{");
  for (lua_Integer i = 0; i < k; i++) {
    if (i) adds(b, ",");
    enc_string(b, keys[i].s, keys[i].n);
    adds(b, ":");
    lua_pushlstring(L, keys[i].s, keys[i].n);
    lua_rawget(L, idx);
    enc(b, lua_gettop(L), depth + 1);
    lua_pop(L, 1);
  }
  adds(b, "}");
  lua_remove(L, anchor);
}

static void enc(jb *b, int idx, int depth) {
  lua_State *L = b->L;
  char num[64];
  if (depth > JSON_DEPTH) luaL_error(L, "cannot convert to JSON: nested deeper than %d (a cycle?)", JSON_DEPTH);
  switch (lua_type(L, idx)) {
    case LUA_TNIL: adds(b, "null"); return;
    case LUA_TBOOLEAN: adds(b, lua_toboolean(L, idx) ? "true" : "false"); return;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        lua_Integer i = lua_tointeger(L, idx);
        if (i > SAFE_INT || i < -SAFE_INT)
          luaL_error(L, "cannot convert to JSON: the integer %I is beyond 2^53 (a JavaScript "
                        "number loses it); store it as a string", i);
        snprintf(num, sizeof num, "%lld", (long long)i);
      } else {
        lua_Number d = lua_tonumber(L, idx);
        if (isnan(d) || isinf(d))
          luaL_error(L, "cannot convert to JSON: %s is not a JSON number",
                     isnan(d) ? "NaN" : d > 0 ? "inf" : "-inf");
        if (d == floor(d) && fabs(d) < 1e15)
          snprintf(num, sizeof num, "%.0f", d);
        else
          snprintf(num, sizeof num, "%.17g", d);
      }
      adds(b, num);
      return;
    case LUA_TSTRING: {
      size_t n;
      const char *s = lua_tolstring(L, idx, &n);
      enc_string(b, s, n);
      return;
    }
    case LUA_TTABLE: enc_table(b, idx, depth); return;
    default:
      luaL_error(L, "cannot convert to JSON: a %s value", luaL_typename(L, idx));
  }
}

int rt_lua_json_encode(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_newtable(L);
  jb b = {L, lua_gettop(L), 0};
  enc(&b, idx, 0);
  luaL_Buffer out;
  luaL_buffinit(L, &out);
  for (lua_Integer i = 1; i <= b.n; i++) {
    lua_rawgeti(L, b.t, i);
    luaL_addvalue(&out);
  }
  luaL_pushresult(&out);
  lua_remove(L, b.t);
  return 1;
}

/* ---- decoding ---------------------------------------------------------- */

typedef struct jd {
  const char *p, *end;
} jd;

static void ws(jd *d) {
  while (d->p < d->end && (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r'))
    d->p++;
}

static int dec(lua_State *L, jd *d, int depth);

static int dec_string(lua_State *L, jd *d) {
  luaL_Buffer b;
  d->p++; /* the quote */
  luaL_buffinit(L, &b);
  while (d->p < d->end && *d->p != '"') {
    char c = *d->p++;
    if (c != '\\') {
      luaL_addchar(&b, c);
      continue;
    }
    if (d->p >= d->end) return -1;
    c = *d->p++;
    switch (c) {
      case 'n': luaL_addchar(&b, '\n'); break;
      case 't': luaL_addchar(&b, '\t'); break;
      case 'r': luaL_addchar(&b, '\r'); break;
      case 'b': luaL_addchar(&b, '\b'); break;
      case 'f': luaL_addchar(&b, '\f'); break;
      case 'u': {
        unsigned cp = 0;
        if (d->end - d->p < 4) return -1;
        for (int i = 0; i < 4; i++) {
          char h = *d->p++;
          cp = cp * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                    : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 0);
        }
        char u[8];
        int n = 0;
        if (cp < 0x80) u[n++] = (char)cp;
        else if (cp < 0x800) { u[n++] = (char)(0xc0 | (cp >> 6)); u[n++] = (char)(0x80 | (cp & 63)); }
        else { u[n++] = (char)(0xe0 | (cp >> 12)); u[n++] = (char)(0x80 | ((cp >> 6) & 63)); u[n++] = (char)(0x80 | (cp & 63)); }
        luaL_addlstring(&b, u, (size_t)n);
        break;
      }
      default: luaL_addchar(&b, c); break;
    }
  }
  if (d->p >= d->end) return -1;
  d->p++;
  luaL_pushresult(&b);
  return 0;
}

static int dec_number(lua_State *L, jd *d) {
  char buf[64];
  size_t n = 0;
  int isf = 0;
  while (d->p < d->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", *d->p)) {
    if (*d->p == '.' || *d->p == 'e' || *d->p == 'E') isf = 1;
    buf[n++] = *d->p++;
  }
  buf[n] = 0;
  if (!n) return -1;
  char *e;
  if (!isf) {
    long long v = strtoll(buf, &e, 10);
    if (*e == 0 && v <= SAFE_INT && v >= -SAFE_INT) {
      lua_pushinteger(L, (lua_Integer)v);
      return 0;
    }
  }
  double v = strtod(buf, &e);
  if (*e) return -1;
  lua_pushnumber(L, v);
  return 0;
}

static int lit(jd *d, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(d->end - d->p) < n || memcmp(d->p, w, n)) return -1;
  d->p += n;
  return 0;
}

static int dec(lua_State *L, jd *d, int depth) {
  if (depth > JSON_DEPTH) return -1;
  luaL_checkstack(L, 4, "JSON nesting");
  ws(d);
  if (d->p >= d->end) return -1;
  switch (*d->p) {
    case '{': {
      d->p++;
      lua_newtable(L);
      ws(d);
      if (d->p < d->end && *d->p == '}') { d->p++; return 0; }
      for (;;) {
        ws(d);
        if (d->p >= d->end || *d->p != '"' || dec_string(L, d)) return -1;
        ws(d);
        if (d->p >= d->end || *d->p++ != ':') return -1;
        if (dec(L, d, depth + 1)) return -1;
        lua_rawset(L, -3);
        ws(d);
        if (d->p < d->end && *d->p == ',') { d->p++; continue; }
        if (d->p < d->end && *d->p == '}') { d->p++; return 0; }
        return -1;
      }
    }
    case '[': {
      lua_Integer i = 0;
      d->p++;
      lua_newtable(L);
      ws(d);
      if (d->p < d->end && *d->p == ']') { d->p++; return 0; }
      for (;;) {
        if (dec(L, d, depth + 1)) return -1;
        lua_rawseti(L, -2, ++i);
        ws(d);
        if (d->p < d->end && *d->p == ',') { d->p++; continue; }
        if (d->p < d->end && *d->p == ']') { d->p++; return 0; }
        return -1;
      }
    }
    case '"': return dec_string(L, d);
    case 't': if (lit(d, "true")) return -1; lua_pushboolean(L, 1); return 0;
    case 'f': if (lit(d, "false")) return -1; lua_pushboolean(L, 0); return 0;
    case 'n': if (lit(d, "null")) return -1; lua_pushnil(L); return 0;
    default: return dec_number(L, d);
  }
}

int rt_lua_json_decode(lua_State *L, const char *s, size_t n) {
  int top = lua_gettop(L);
  jd d = {s, s + n};
  if (!s || dec(L, &d, 0)) {
    lua_settop(L, top);
    lua_pushnil(L);
    return -1;
  }
  ws(&d);
  if (d.p != d.end) {
    lua_settop(L, top);
    lua_pushnil(L);
    return -1;
  }
  return 0;
}
