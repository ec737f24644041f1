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
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "runtime/rt_lua.h"

#define JSON_DEPTH 64
#define SAFE_INT 9007199254740992LL /* 2^53 */

/* The text is built in one growable buffer owned by the process (one run
** at a time, single-threaded): a Lua error while encoding longjmps past
** us, and a buffer that belongs to no call cannot leak. The encoder reads
** tables raw (no metamethods), so it never re-enters itself. */
typedef struct jb {
  lua_State *L;
} jb;

static char *jbuf;
static size_t jlen, jcap;

static void jfree(void) {
  free(jbuf);
  jbuf = NULL;
  jcap = 0;
}

/* Room for n more bytes (grows the buffer; raises on memory). */
static void grow(jb *b, size_t n) {
  static int registered;
  size_t nc = jcap ? jcap : 256;
  while (nc < jlen + n) nc *= 2;
  char *nb = realloc(jbuf, nc);
  if (!nb) luaL_error(b->L, "cannot convert to JSON: out of memory");
  if (!registered) {
    registered = atexit(jfree) == 0;
    rt__inject_cold_hook(jfree);
  }
  jbuf = nb;
  jcap = nc;
}

/* Inline: most pieces are a few bytes of a constant (callgrind put a third
** of a small stash's encoding in calls to add and memcpy). */
static inline void add(jb *b, const char *s, size_t n) {
  if (jlen + n > jcap) grow(b, n);
  memcpy(jbuf + jlen, s, n);
  jlen += n;
}

static inline void add1(jb *b, char c) {
  if (jlen + 1 > jcap) grow(b, 1);
  jbuf[jlen++] = c;
}

static inline void adds(jb *b, const char *s) { add(b, s, strlen(s)); }

static void enc(jb *b, int idx, int depth);

/* The length (2..4) of the well-formed UTF-8 sequence at p (p[0] >= 0x80,
** left bytes there), or 0: shortest forms, no surrogates, <= U+10FFFF. */
static size_t u8len(const unsigned char *p, size_t left) {
  size_t len;
  unsigned cp, min;
  if (p[0] >= 0xC2 && p[0] <= 0xDF) len = 2, cp = p[0] & 0x1Fu, min = 0x80;
  else if ((p[0] & 0xF0) == 0xE0) len = 3, cp = p[0] & 0x0Fu, min = 0x800;
  else if (p[0] >= 0xF0 && p[0] <= 0xF4) len = 4, cp = p[0] & 0x07u, min = 0x10000;
  else return 0;
  if (len > left) return 0;
  for (size_t k = 1; k < len; k++) {
    if ((p[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[k] & 0x3Fu);
  }
  return cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : len;
}

static void enc_string(jb *out, const char *s, size_t n) {
  size_t run = 0; /* bytes that need no escape, copied in one go */
  add(out, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') {
      if (c >= 0x80) { /* JSON, like a JavaScript string, carries text only */
        size_t k = u8len((const unsigned char *)s + i, n - i);
        if (!k) {
          char at[64];
          snprintf(at, sizeof at, "byte 0x%02x at byte %zu of %zu", c, i + 1, n);
          luaL_error(out->L, "cannot convert to JSON: a string that is not UTF-8 text (%s); encode "
                     "bytes first (hex, base64)", at);
        }
        run += k;
        i += k - 1;
        continue;
      }
      run++;
      continue;
    }
    add(out, s + i - run, run);
    run = 0;
    char u[8];
    if (c == '"' || c == '\\') {
      u[0] = '\\';
      u[1] = (char)c;
      add(out, u, 2);
    } else if (c == '\n') {
      add(out, "\\n", 2);
    } else if (c == '\t') {
      add(out, "\\t", 2);
    } else if (c == '\r') {
      add(out, "\\r", 2);
    } else {
      snprintf(u, sizeof u, "\\u%04x", c);
      add(out, u, 6);
    }
  }
  add(out, s + n - run, run);
  add(out, "\"", 1);
}

typedef struct skey {
  const char *s;
  size_t n;
  int slot;                 /* the value's stack index (small tables), else 0 */
} skey;

static int skey_cmp(const void *pa, const void *pb) {
  const skey *a = pa, *b = pb;
  size_t m = a->n < b->n ? a->n : b->n;
  int c = memcmp(a->s, b->s, m);
  return c ? c : (a->n > b->n) - (a->n < b->n);
}

static void sort_keys(skey *keys, lua_Integer k) {
  if (k > 8) {
    qsort(keys, (size_t)k, sizeof *keys, skey_cmp);
    return;
  }
  for (lua_Integer i = 1; i < k; i++) { /* a few keys: insertion sort */
    skey t = keys[i];
    lua_Integer j = i;
    for (; j > 0 && skey_cmp(&keys[j - 1], &t) > 0; j--) keys[j] = keys[j - 1];
    keys[j] = t;
  }
}

static void mixed_error(lua_State *L) {
  luaL_error(L, "cannot convert to JSON: a table mixes array items and fields, or has a "
                "key that is not a string (JSON object keys are strings)");
}

/* An object of sorted keys; a key's value is at its slot, or read back raw. */
static void enc_object(jb *b, int idx, int depth, skey *keys, lua_Integer k) {
  lua_State *L = b->L;
  sort_keys(keys, k);
  add1(b, '{');
  for (lua_Integer i = 0; i < k; i++) {
    if (i) add1(b, ',');
    enc_string(b, keys[i].s, keys[i].n);
    add1(b, ':');
    if (keys[i].slot) {
      enc(b, keys[i].slot, depth + 1);
      continue;
    }
    lua_pushlstring(L, keys[i].s, keys[i].n);
    lua_rawget(L, idx);
    enc(b, lua_gettop(L), depth + 1);
    lua_pop(L, 1);
  }
  add1(b, '}');
}

static void enc_array(jb *b, int idx, int depth, lua_Integer n) {
  lua_State *L = b->L;
  add1(b, '[');
  for (lua_Integer i = 1; i <= n; i++) {
    if (i > 1) add1(b, ',');
    lua_rawgeti(L, idx, i);
    enc(b, lua_gettop(L), depth + 1);
    lua_pop(L, 1);
  }
  add1(b, ']');
}

#define SMALL_KEYS 16

/* A table of at most SMALL_KEYS string keys in one pass: each key and its
** value stay on the stack (no lookup per key afterwards). Returns 0 when
** done, -1 (stack as on entry) when the table has more keys. */
static int enc_table_small(jb *b, int idx, int depth, lua_Integer n) {
  lua_State *L = b->L;
  int base = lua_gettop(L), other = 0;
  lua_Integer nint = 0, k = 0;
  skey keys[SMALL_KEYS];
  luaL_checkstack(L, 2 * SMALL_KEYS + 4, "JSON nesting");
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      if (k == SMALL_KEYS) {
        lua_settop(L, base);
        return -1;
      }
      keys[k].s = lua_tolstring(L, -2, &keys[k].n);
      keys[k].slot = lua_gettop(L);
      k++;
      lua_pushvalue(L, -2); /* the pair stays; a copy of the key goes on */
      continue;
    }
    if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 && lua_tointeger(L, -2) <= n) nint++;
    else other = 1;
    lua_pop(L, 1);
  }
  if (!other && k == 0 && n > 0) enc_array(b, idx, depth, n); /* 1..n, holes as null */
  else if (other || nint) mixed_error(L);
  else enc_object(b, idx, depth, keys, k);
  lua_settop(L, base);
  return 0;
}

/* The digits of an integer JSON can carry (|i| <= 2^53). */
static void enc_int(jb *b, lua_Integer i) {
  char num[24], *e = num + sizeof num, *q = e; /* digits by hand: snprintf is slow here */
  uint64_t u = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
  do *--q = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (i < 0) *--q = '-';
  add(b, q, (size_t)(e - q));
}

typedef struct fpair {
  const char *s;            /* the key (anchored by the table) */
  size_t n, at, end;        /* its "key":value piece in the buffer */
} fpair;

static int fkey_cmp(const fpair *a, const fpair *b) {
  size_t m = a->n < b->n ? a->n : b->n;
  int c = memcmp(a->s, b->s, m);
  return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* A flat object, the commonest stash ({pc = 1}): at most SMALL_KEYS keys,
** all strings, and every value a string, a boolean or an integer JSON can
** carry, so that nothing here can fail but memory. Each "key":value is
** written as lua_next meets it (no value kept on the stack, no second
** look-up), then the pieces are put in key order: the text is the one
** enc_table_small writes. Returns 0 when done, else -1 with nothing
** written and the stack as on entry (any other table goes the long way,
** which also finds its errors in the same order as before). */
static int enc_flat(jb *b, int idx) {
  lua_State *L = b->L;
  size_t start = jlen;
  fpair kv[SMALL_KEYS];
  int k = 0;
  int sorted = 1;
  luaL_checkstack(L, 3, "JSON nesting");
  add1(b, '{');
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int vt = lua_type(L, -1);
    int isint = vt == LUA_TNUMBER && lua_isinteger(L, -1);
    lua_Integer iv = isint ? lua_tointeger(L, -1) : 0;
    if (k == SMALL_KEYS || lua_type(L, -2) != LUA_TSTRING ||
        !(vt == LUA_TSTRING || vt == LUA_TBOOLEAN || (isint && iv <= SAFE_INT && iv >= -SAFE_INT))) {
      lua_pop(L, 2);
      jlen = start;
      return -1;
    }
    kv[k].s = lua_tolstring(L, -2, &kv[k].n);
    if (k) {
      add1(b, ',');
      sorted = sorted && fkey_cmp(&kv[k - 1], &kv[k]) < 0;
    }
    kv[k].at = jlen;
    enc_string(b, kv[k].s, kv[k].n);
    add1(b, ':');
    if (vt == LUA_TSTRING) {
      size_t n;
      const char *v = lua_tolstring(L, -1, &n);
      enc_string(b, v, n);
    } else if (vt == LUA_TBOOLEAN) {
      adds(b, lua_toboolean(L, -1) ? "true" : "false");
    } else {
      enc_int(b, iv);
    }
    kv[k++].end = jlen;
    lua_pop(L, 1);
  }
  if (sorted) { /* met in key order (one key, say): the text is written */
    add1(b, '}');
    return 0;
  }
  for (int i = 1; i < k; i++) { /* insertion sort by key bytes, as sort_keys */
    fpair t = kv[i];
    int j = i;
    for (; j > 0 && fkey_cmp(&kv[j - 1], &t) > 0; j--) kv[j] = kv[j - 1];
    kv[j] = t;
  }
  /* {piece,piece,...} after the pieces, then moved down over them */
  size_t out = jlen;
  if (jlen + (out - start) + 1 > jcap) grow(b, (out - start) + 1); /* the copy's room at */
  add1(b, '{');                                                    /* once: jbuf stays */
  for (int i = 0; i < k; i++) {
    if (i) add1(b, ',');
    add(b, jbuf + kv[i].at, kv[i].end - kv[i].at);
  }
  add1(b, '}');
  memmove(jbuf + start, jbuf + out, jlen - out);
  jlen = start + (jlen - out);
  return 0;
}

/* A table: an array when its keys are exactly 1..n (n > 0), else an object
** whose keys (strings) are written sorted by bytes. Past SMALL_KEYS keys,
** one pass collects the keys and their values are read back raw. */
static void enc_table(jb *b, int idx, int depth) {
  lua_State *L = b->L;
  if (enc_flat(b, idx) == 0) return;
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx), nint = 0, k = 0;
  if (enc_table_small(b, idx, depth, n) == 0) return;
  skey small[16];
  skey *keys = small;
  int cap = 16, anchor = 0, other = 0;
  /* Each level keeps its value on the stack while the next is encoded: past
  ** LUA_MINSTACK slots a deep table (a cycle) would write beyond the stack. */
  luaL_checkstack(L, 4, "cannot convert to JSON: nested too deep");
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      if (k == cap) { /* many keys: room in a userdata below the iteration */
        int nc = cap * 4;
        skey *nk = lua_newuserdatauv(L, (size_t)nc * sizeof *nk, 0);
        memcpy(nk, keys, (size_t)k * sizeof *nk);
        lua_insert(L, -2); /* keep the key on top for lua_next */
        if (anchor) lua_remove(L, anchor);
        anchor = lua_gettop(L) - 1;
        keys = nk;
        cap = nc;
      }
      keys[k].s = lua_tolstring(L, -1, &keys[k].n); /* anchored by the table itself */
      keys[k].slot = 0;
      k++;
    } else if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= n) {
      nint++;
    } else {
      other = 1;
    }
  }
  if (other || nint) mixed_error(L); /* more than SMALL_KEYS string keys: an object */
  enc_object(b, idx, depth, keys, k);
  if (anchor) lua_remove(L, anchor);
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
        enc_int(b, i);
        return;
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

const char *rt_lua_json_text(lua_State *L, int idx, size_t *len) {
  jb b = {L};
  idx = lua_absindex(L, idx);
  jlen = 0;
  enc(&b, idx, 0);
  add(&b, "", 1); /* NUL, not counted */
  *len = jlen - 1;
  return jbuf;
}

int rt_lua_json_encode(lua_State *L, int idx) {
  size_t n;
  const char *s = rt_lua_json_text(L, idx, &n);
  lua_pushlstring(L, s, n);
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
        for (int i = 0; i < 4; i++) { /* four hex digits, else not JSON */
          char h = *d->p++;
          int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
          if (v < 0) return -1;
          cp = cp * 16 + (unsigned)v;
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
