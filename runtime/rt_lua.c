/*
** rt_lua.c: the deterministic Lua state: its allocator (memory cap and
** creation serials), the instruction budget, the coroutine plumbing the
** host drives, and error messages with tracebacks. The sandboxed library
** itself is in rt_lua_lib.c.
**
** Creation serials. Lua gives tables, functions and threads no identity
** but their address, which differs between processes. Every such object is
** allocated through lua_Alloc with its type as the tag (ptr == NULL, osize
** = LUA_TTABLE...), in an order that depends only on the script; the
** allocator numbers them there and writes the serial in a word just before
** the block it gives Lua (every block has that word: 0 when untracked).
** Light C functions have no block: they are numbered on sight in a map that
** is only ever looked up by exact address and never iterated.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include "runtime/rt_lua.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "runtime/rt_lua_internal.h"

#define LUA_HEADROOM (1u << 20)  /* host-side room past the cap (messages) */
#define HOOK_PERIOD_MAX 1000

/* {=============== identity map ================================== */

static size_t ids_slot(const rt__lua_ids *m, uintptr_t k) {
  uint64_t h = (uint64_t)(k >> 3) * 0x9e3779b97f4a7c15ULL;
  return (size_t)(h >> 20) & (m->cap - 1);
}

static int ids_grow(rt_lua *x) {
  rt__lua_ids *m = &x->ids, old = *m;
  size_t cap = old.cap ? old.cap * 2 : 1024;
  m->key = calloc(cap, sizeof *m->key);
  m->val = malloc(cap * sizeof *m->val);
  if (!m->key || !m->val) {
    free(m->key);
    free(m->val);
    *m = old;
    return -1;
  }
  m->cap = cap;
  m->n = 0;
  for (size_t i = 0; i < old.cap; i++) {
    if (!old.key[i]) continue;
    size_t s = ids_slot(m, old.key[i]);
    while (m->key[s]) s = (s + 1) & (cap - 1);
    m->key[s] = old.key[i];
    m->val[s] = old.val[i];
    m->n++;
  }
  x->mem += (cap - old.cap) * (sizeof *m->key + sizeof *m->val);
  free(old.key);
  free(old.val);
  return 0;
}

static int ids_put(rt_lua *x, const void *p, uint64_t serial) {
  rt__lua_ids *m = &x->ids;
  if ((m->n + 1) * 2 > m->cap && ids_grow(x) != 0) return -1;
  uintptr_t k = (uintptr_t)p;
  size_t s = ids_slot(m, k);
  while (m->key[s] && m->key[s] != k) s = (s + 1) & (m->cap - 1);
  if (!m->key[s]) m->n++;
  m->key[s] = k;
  m->val[s] = serial;
  return 0;
}

static uint64_t ids_get(const rt__lua_ids *m, const void *p) {
  if (!m->cap) return 0;
  uintptr_t k = (uintptr_t)p;
  for (size_t s = ids_slot(m, k); m->key[s]; s = (s + 1) & (m->cap - 1))
    if (m->key[s] == k) return m->val[s];
  return 0;
}

/* }=============================================================== */

/* {=============== allocator ===================================== */

static int tracked_tag(size_t tag) {
  return tag == LUA_TTABLE || tag == LUA_TFUNCTION || tag == LUA_TTHREAD;
}

/* A refusal after a refusal (Lua's retry after its emergency collection)
** means the script really needs more than the cap: abort the callback. */
static void *refuse(rt_lua *x) {
  if (x->refused && x->in_script && !x->abort) x->abort = RT_LUA_ERR_MEMORY;
  x->refused = 1;
  return NULL;
}

/* {--- small blocks: callgrind put a quarter of a scripted fiber's Lua
** overhead in malloc/free of a few small blocks (tables, their nodes,
** closures, strings) that a state frees and makes again at once. Freed
** ones wait on a list per 16-byte class, LIFO (cache-warm), up to
** BLK_CACHE_MAX bytes per state; all go back to the heap with the state.
** Addresses never reach a script (creation serials), so reuse is not
** observable. */

#define BLK_CACHE_MAX (1u << 20)

static inline int blk_class(size_t n) {
  return n && n <= RT__LUA_BLK_STEP * RT__LUA_BLK_CLASSES ? (int)((n - 1) / RT__LUA_BLK_STEP) : -1;
}

static void *blk_get(rt_lua *x, int c) {
  void *p = x->blocks[c];
  if (!p) return malloc((size_t)(c + 1) * RT__LUA_BLK_STEP);
  x->blocks[c] = *(void **)p;
  x->cached -= (size_t)(c + 1) * RT__LUA_BLK_STEP;
  __builtin_prefetch(x->blocks[c], 1); /* the next one of its class: perf put a third of
                                       ** lua_alloc on the load of this link */
  return p;
}

/* Gives back a block of `size` bytes (as Lua knows it). */
static void blk_put(rt_lua *x, void *p, size_t size) {
  int c = blk_class(size);
  size_t bytes = (size_t)(c + 1) * RT__LUA_BLK_STEP;
  if (c < 0 || x->cached + bytes > BLK_CACHE_MAX) {
    free(p);
    return;
  }
  *(void **)p = x->blocks[c];
  x->blocks[c] = p;
  x->cached += bytes;
}

static void blk_free_all(rt_lua *x) {
  for (int c = 0; c < RT__LUA_BLK_CLASSES; c++)
    while (x->blocks[c]) {
      void *p = x->blocks[c];
      x->blocks[c] = *(void **)p;
      free(p);
    }
  x->cached = 0;
}

/* realloc over the classes: a block keeps its class's room, so a resize
** within the class stays in place. NULL when the heap is out. */
static void *blk_realloc(rt_lua *x, void *ptr, size_t old, size_t nsize) {
  int oc = ptr ? blk_class(old) : -1, nc = blk_class(nsize);
  if (oc >= 0 && oc == nc) return ptr;
  if (oc < 0 && nc < 0) return realloc(ptr, nsize);
  void *p = nc >= 0 ? blk_get(x, nc) : malloc(nsize);
  if (!p || !ptr) return p;
  memcpy(p, ptr, old < nsize ? old : nsize);
  blk_put(x, ptr, old);
  return p;
}

/* }--- */

/* The serial word before every block Lua holds (RT__LUA_HDR bytes). */
static inline uint64_t *hdr_of(const void *p) { return (uint64_t *)((char *)p - RT__LUA_HDR); }

/* A new block (ptr == NULL; `tag` is the object's type) when the short
** path in lua_alloc cannot give it: a refusal, a large block, an empty
** class list. */
__attribute__((noinline)) static void *alloc_new(rt_lua *x, size_t tag, size_t nsize) {
  size_t limit = x->in_script ? x->cap : x->cap + LUA_HEADROOM;
  if (nsize > limit || x->mem + nsize > limit) return refuse(x);
  size_t bytes = nsize + RT__LUA_HDR;
  int c = blk_class(bytes);
  void *p = c >= 0 ? blk_get(x, c) : malloc(bytes);
  if (!p) return refuse(x);
  x->mem += bytes;
  x->refused = 0;
  *(uint64_t *)p = tracked_tag(tag) ? ++x->serial : 0;
  return (char *)p + RT__LUA_HDR;
}

/* A resize of a block Lua holds (ptr != NULL, nsize > 0). */
__attribute__((noinline)) static void *alloc_resize(rt_lua *x, void *ptr, size_t old,
                                                    size_t nsize) {
  size_t limit = x->in_script ? x->cap : x->cap + LUA_HEADROOM;
  if (nsize > old && (nsize - old > limit || x->mem + (nsize - old) > limit))
    return refuse(x);
  void *p = blk_realloc(x, hdr_of(ptr), old + RT__LUA_HDR, nsize + RT__LUA_HDR);
  if (!p) return nsize <= old ? ptr : refuse(x);
  x->mem = x->mem - (old + RT__LUA_HDR) + nsize + RT__LUA_HDR; /* the serial word moves along */
  if (nsize > old) x->refused = 0;
  return (char *)p + RT__LUA_HDR;
}

/* lua_Alloc. callgrind put 40 % of it in saving and restoring registers
** around the general path, so the two commonest cases (a small new block
** off its class list, a freed block onto it) make no call at all. */
static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  rt_lua *x = ud;
  if (!ptr) {
    if (!nsize) return NULL;
    int c = blk_class(nsize + RT__LUA_HDR);
    size_t limit = x->in_script ? x->cap : x->cap + LUA_HEADROOM;
    void *p = c >= 0 ? x->blocks[c] : NULL;
    if (!p || nsize > limit || x->mem + nsize > limit) return alloc_new(x, osize, nsize);
    x->blocks[c] = *(void **)p;
    x->cached -= (size_t)(c + 1) * RT__LUA_BLK_STEP;
    __builtin_prefetch(x->blocks[c], 1);
    x->mem += nsize + RT__LUA_HDR;
    x->refused = 0;
    *(uint64_t *)p = tracked_tag(osize) ? ++x->serial : 0;
    return (char *)p + RT__LUA_HDR;
  }
  if (nsize) return alloc_resize(x, ptr, osize, nsize);
  x->mem -= osize + RT__LUA_HDR;
  blk_put(x, hdr_of(ptr), osize + RT__LUA_HDR);
  return NULL;
}

/* }=============================================================== */

rt_lua *rt__lua_of(lua_State *L) {
  void *ud = NULL;
  lua_getallocf(L, &ud);
  return ud;
}

uint64_t rt__lua_serial(lua_State *L, int idx) {
  rt_lua *x = rt__lua_of(L);
  const void *p;
  switch (lua_type(L, idx)) {
  case LUA_TTABLE: return *hdr_of(lua_topointer(L, idx));
  case LUA_TTHREAD: return *hdr_of(lua_getextraspace(lua_tothread(L, idx)));
  case LUA_TFUNCTION:
    p = lua_topointer(L, idx);
    if (!lua_iscfunction(L, idx)) return *hdr_of(p);
    if (lua_getupvalue(L, idx, 1)) { /* a C closure (a light one has no upvalue): a block */
      lua_pop(L, 1);
      return *hdr_of(p);
    }
    if (!ids_get(&x->ids, p) && ids_put(x, p, ++x->serial) != 0) /* numbered on sight */
      luaL_error(L, "out of memory");
    return ids_get(&x->ids, p);
  default: return 0;
  }
}

/* {=============== budget ======================================== */

static void raise_budget(lua_State *L, rt_lua *x, lua_Debug *ar) {
  if (ar && lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
    lua_pushfstring(L, "%s:%d: instruction budget of %I exceeded", ar->short_src,
                    ar->currentline, (lua_Integer)x->budget);
  else {
    luaL_where(L, 1); /* charged by C code: the Lua function calling it */
    lua_pushfstring(L, "instruction budget of %I exceeded", (lua_Integer)x->budget);
    lua_concat(L, 2);
  }
  lua_error(L);
}

void rt__lua_check_abort(lua_State *L) {
  rt_lua *x = rt__lua_of(L);
  if (x->abort == RT_LUA_ERR_BUDGET) raise_budget(L, x, NULL);
  if (x->abort == RT_LUA_ERR_MEMORY)
    luaL_error(L, "memory cap of %I bytes exceeded", (lua_Integer)x->cap);
}

static void count_hook(lua_State *L, lua_Debug *ar) {
  rt_lua *x = rt__lua_of(L);
  x->used += (uint64_t)x->period;
  if (x->abort == RT_LUA_ERR_MEMORY) rt__lua_check_abort(L);
  if (x->used >= x->budget) {
    x->abort = RT_LUA_ERR_BUDGET;
    raise_budget(L, x, ar);
  }
}

void rt__lua_charge(lua_State *L, uint64_t n) {
  rt_lua *x = rt__lua_of(L);
  if (!x->in_script) return;
  x->used += n;
  if (x->used >= x->budget) x->abort = RT_LUA_ERR_BUDGET;
  rt__lua_check_abort(L);
}

/* }=============================================================== */

uint64_t rt__lua_random64(lua_State *L, int own) {
  rt_lua *x = rt__lua_of(L);
  if (own && x->own_on) return sim_rng_next(&x->own);
  if (x->host.random64) return x->host.random64(x->host.ctx);
  if (x->host.rng) return sim_rng_next(x->host.rng);
  luaL_error(L, "random numbers are refused: the host gave this state no random stream");
  return 0;
}

static void set_err(rt_lua *x, const char *msg) {
  if (!msg || !*msg) x->err[0] = '\0'; /* every slice clears it: no snprintf */
  else snprintf(x->err, sizeof x->err, "%s", msg);
}

static int panic_handler(lua_State *L) {
  const char *m = lua_tostring(L, -1);
  fprintf(stderr, "revenant: unprotected Lua error: %s\n", m ? m : "?");
  abort();
}

/* The sandbox's own objects must get serials from the allocator: check
** that a table's, a Lua function's and a thread's identity pointer is the
** block the allocator numbered (true for Lua 5.4's object layout). */
static int identity_selfcheck(lua_State *L) {
  rt_lua *x = rt__lua_of(L);
  uint64_t before = x->serial;
  lua_newtable(L);
  if (rt__lua_serial(L, -1) != before + 1) luaL_error(L, "table identity check failed");
  lua_newthread(L);
  if (rt__lua_serial(L, -1) != before + 2) luaL_error(L, "thread identity check failed");
  if (luaL_loadstring(L, "return 1") != LUA_OK) lua_error(L);
  if (rt__lua_serial(L, -1) <= before + 2) luaL_error(L, "function identity check failed");
  lua_pop(L, 3);
  return 0;
}

static int setup(lua_State *L) {
  static const luaL_Reg libs[] = {
      {LUA_GNAME, luaopen_base},        {LUA_COLIBNAME, luaopen_coroutine},
      {LUA_TABLIBNAME, luaopen_table},  {LUA_STRLIBNAME, luaopen_string},
      {LUA_MATHLIBNAME, luaopen_math},  {LUA_UTF8LIBNAME, luaopen_utf8},
      {NULL, NULL}};
  identity_selfcheck(L);
  for (const luaL_Reg *l = libs; l->name; l++) {
    luaL_requiref(L, l->name, l->func, 1);
    lua_pop(L, 1);
  }
  rt__lua_lib_install(L);
  /* luaL_traceback names a C function by searching the loaded-modules
  ** table with lua_next, in hash order: with an alias (g = string.rep) the
  ** name it prints would change between processes. Without the table it
  ** names functions by their call site (global 'g', field 'rep'). */
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  return 0;
}

static char *dir_of(const char *dir) {
  if (!dir) return NULL;
  return realpath(dir, NULL);
}

rt_lua *rt_lua_new(const rt_lua_config *cfg, char *err, size_t errlen) {
  rt_lua *x = calloc(1, sizeof *x);
  if (!x) {
    if (err) snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (cfg) x->host = cfg->host;
  x->budget = cfg && cfg->instr_budget ? cfg->instr_budget : RT_LUA_DEFAULT_INSTR;
  x->period = x->budget < HOOK_PERIOD_MAX ? (int)x->budget : HOOK_PERIOD_MAX;
  x->cap = cfg && cfg->mem_cap ? cfg->mem_cap : RT_LUA_DEFAULT_MEM;
  if (cfg && cfg->script_dir && !(x->dir = dir_of(cfg->script_dir))) {
    if (err) snprintf(err, errlen, "script folder %s: cannot be opened", cfg->script_dir);
    free(x);
    return NULL;
  }
  x->L = lua_newstate(lua_alloc, x);
  if (!x->L) {
    if (err) snprintf(err, errlen, "out of memory making a Lua state");
    rt_lua_free(x);
    return NULL;
  }
  lua_atpanic(x->L, panic_handler);
  lua_pushcfunction(x->L, setup);
  if (lua_pcall(x->L, 0, 0, 0) != LUA_OK) {
    if (err) snprintf(err, errlen, "Lua sandbox setup: %s", lua_tostring(x->L, -1));
    rt_lua_free(x);
    return NULL;
  }
  lua_gc(x->L, LUA_GCCOLLECT);
  x->serial_base = x->serial;
  lua_sethook(x->L, count_hook, LUA_MASKCOUNT, x->period);
  return x;
}

void rt_lua_free(rt_lua *x) {
  if (!x) return;
  if (x->L) lua_close(x->L);
  blk_free_all(x);
  free(x->ids.key);
  free(x->ids.val);
  free(x->dir);
  free(x);
}

lua_State *rt_lua_L(rt_lua *x) { return x->L; }
const char *rt_lua_error(const rt_lua *x) { return x->err; }
size_t rt_lua_mem_used(const rt_lua *x) { return x->mem; }
const char *rt_lua_escape(const rt_lua *x) { return x->escape; }
uint64_t rt_lua_instr_used(const rt_lua *x) { return x->used; }

const char *rt_lua_release(void) {
  return lua_version(NULL) == LUA_VERSION_NUM ? LUA_RELEASE : "Lua version mismatch";
}

/* {=============== loading ======================================= */

static int load_rc(rt_lua *x, int st) {
  if (st == LUA_OK) {
    set_err(x, "");
    return RT_LUA_DONE;
  }
  set_err(x, lua_tostring(x->L, -1));
  lua_pop(x->L, 1);
  if (st == LUA_ERRMEM) return RT_LUA_ERR_MEMORY;
  return st == LUA_ERRSYNTAX ? RT_LUA_ERR_SYNTAX : RT_LUA_ERR_FILE;
}

size_t rt__lua_text_start(const char *src, size_t len) {
  size_t i = len >= 3 && !memcmp(src, "\xEF\xBB\xBF", 3) ? 3 : 0;
  if (i < len && src[i] == '#')
    while (i < len && src[i] != '\n') i++;
  return i;
}

int rt_lua_load(rt_lua *x, const char *name, const char *src, size_t len) {
  char chunk[512];
  size_t skip = rt__lua_text_start(src, len);
  src += skip;
  len -= skip;
  if (len > 0 && src[0] == LUA_SIGNATURE[0]) {
    snprintf(x->err, sizeof x->err, "%s: binary chunks are refused (text only)", name);
    return RT_LUA_ERR_SYNTAX;
  }
  snprintf(chunk, sizeof chunk, "@%s", name);
  return load_rc(x, luaL_loadbufferx(x->L, src, len, chunk, "t"));
}

static int loadfile_protected(lua_State *L) {
  const char *rel = lua_touserdata(L, 1);
  lua_pop(L, 1);
  int st = rt__lua_loadfile(L, rel);
  if (st != LUA_OK) {
    lua_pushinteger(L, st);
    lua_insert(L, -2);
    return 2;
  }
  return 1;
}

int rt_lua_load_file(rt_lua *x, const char *relpath) {
  lua_pushcfunction(x->L, loadfile_protected);
  lua_pushlightuserdata(x->L, (void *)relpath);
  int st = lua_pcall(x->L, 1, LUA_MULTRET, 0);
  if (st == LUA_OK && lua_type(x->L, -1) == LUA_TFUNCTION) return load_rc(x, LUA_OK);
  if (st == LUA_OK) {
    st = (int)lua_tointeger(x->L, -2);
    lua_remove(x->L, -2);
  }
  return load_rc(x, st);
}

/* }=============================================================== */

/* {=============== coroutines and errors ========================= */

static int co_make(lua_State *L) {
  lua_newthread(L);
  lua_pushvalue(L, -1);
  lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
  return 2;
}

/* Pushes a position "file:line:" for the innermost Lua frame of co. */
static void push_where(lua_State *L, lua_State *co) {
  lua_Debug ar;
  for (int level = 0; lua_getstack(co, level, &ar); level++) {
    if (lua_getinfo(co, "Sl", &ar) && ar.currentline > 0) {
      lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
      return;
    }
  }
  lua_pushliteral(L, "");
}

/* Protected: (thread, kind) -> "message\nstack traceback:..." */
static int build_message(lua_State *L) {
  lua_State *co = lua_tothread(L, 1);
  int kind = (int)lua_tointeger(L, 2);
  rt_lua *x = rt__lua_of(L);
  if (kind == RT_LUA_ERR_MEMORY) {
    push_where(L, co);
    lua_pushfstring(L, "memory cap of %I bytes exceeded", (lua_Integer)x->cap);
    lua_concat(L, 2);
  } else if (lua_gettop(co) > 0 && lua_type(co, -1) == LUA_TSTRING) {
    lua_pushstring(L, lua_tostring(co, -1));
  } else if (lua_gettop(co) > 0 && lua_type(co, -1) == LUA_TNUMBER) {
    lua_pushnumber(L, lua_tonumber(co, -1));
    lua_pushstring(L, lua_tostring(L, -1));
  } else {
    push_where(L, co);
    lua_pushfstring(L, "(error object is a %s value)",
                    lua_gettop(co) > 0 ? luaL_typename(co, -1) : "no");
    lua_concat(L, 2);
  }
  luaL_traceback(L, co, lua_tostring(L, -1), 0);
  return 1;
}

static int fail(rt_lua *x, rt_lua_co *co, int st) {
  int kind = RT_LUA_ERR_RUN;
  if (x->abort == RT_LUA_ERR_BUDGET) kind = RT_LUA_ERR_BUDGET;
  else if (x->abort == RT_LUA_ERR_MEMORY || st == LUA_ERRMEM) kind = RT_LUA_ERR_MEMORY;
  lua_pushcfunction(x->L, build_message);
  lua_rawgeti(x->L, LUA_REGISTRYINDEX, co->ref);
  lua_pushinteger(x->L, kind);
  if (lua_pcall(x->L, 2, 1, 0) == LUA_OK) set_err(x, lua_tostring(x->L, -1));
  else if (kind == RT_LUA_ERR_MEMORY) /* the message itself found no room (a huge identity map) */
    snprintf(x->err, sizeof x->err, "memory cap of %zu bytes exceeded (no room left for a traceback)", x->cap);
  else snprintf(x->err, sizeof x->err, "error while reporting a Lua error (kind %d)", kind);
  lua_pop(x->L, 1);
  co->nres = 0;
  return co->status = kind;
}

/* A slice begins: the state of the one around it (or the host's) is kept
** in s, and s's coroutine gets a fresh budget, hook count and flags. */
static void slice_begin(rt_lua *x, rt_lua_slice *s) {
  s->used = x->used;
  s->in_script = x->in_script;
  s->abort = x->abort;
  s->refused = x->refused;
  s->prev = x->slice;
  x->slice = s;
  x->used = 0;
  x->abort = 0;
  x->refused = 0;
  set_err(x, "");
  lua_sethook(s->L, count_hook, LUA_MASKCOUNT, x->period);
  x->in_script = 1;
}

/* A slice ends (returned, yielded, failed or paused): the one around it
** goes on, charged with this one's work. */
static void slice_end(rt_lua *x, rt_lua_slice *s) {
  x->slice = s->prev;
  x->in_script = s->in_script;
  if (s->in_script) {
    x->used += s->used;
    if (!x->abort) x->abort = s->abort;
    x->refused = s->refused;
  }
}

rt_lua_slice *rt_lua_slice_pause(rt_lua *x, lua_State *L) {
  rt_lua_slice *s = x->slice;
  if (!s || s->L != L) return NULL;
  slice_end(x, s);
  return s;
}

void rt_lua_slice_resume(rt_lua *x, rt_lua_slice *s) { slice_begin(x, s); }

static int run_slice(rt_lua *x, rt_lua_co *co, int nargs) {
  int nres = 0;
  /* A slice may start inside another one (a C function of a running
  ** coroutine resumes a second one: a finish hook run by abortAgentTool,
  ** a fiber body started by runFiber); the outer slice's budget and flags
  ** go on after it. */
  rt_lua_slice s = {.L = co->L};
  slice_begin(x, &s);
  int st = lua_resume(co->L, x->L, nargs, &nres);
  slice_end(x, &s);
  if (st == LUA_OK || st == LUA_YIELD) {
    co->nres = nres;
    return co->status = st == LUA_OK ? RT_LUA_DONE : RT_LUA_YIELDED;
  }
  return fail(x, co, st);
}

static int get_field(lua_State *L) {
  lua_gettable(L, 1);
  return 1;
}

int rt_lua_getfield(rt_lua *x, lua_State *L, int idx, const char *k) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TTABLE) { /* the common case: no script runs */
    lua_pushstring(L, k);
    int t = lua_rawget(L, idx);
    if (t != LUA_TNIL || !lua_getmetatable(L, idx)) return t;
    lua_pop(L, 2); /* the metatable and the nil */
  }
  lua_pushcfunction(L, get_field);
  lua_pushvalue(L, idx);
  lua_pushstring(L, k);
  rt_lua_slice s = {.L = L};
  slice_begin(x, &s);
  int st = lua_pcall(L, 2, 1, 0);
  int abort = x->abort;
  slice_end(x, &s);
  if (st == LUA_OK) return lua_type(L, -1);
  const char *msg = lua_tostring(L, -1);
  set_err(x, msg ? msg : "(an error object that is not a string)");
  lua_pop(L, 1);
  return abort == RT_LUA_ERR_BUDGET ? RT_LUA_ERR_BUDGET
         : abort == RT_LUA_ERR_MEMORY || st == LUA_ERRMEM ? RT_LUA_ERR_MEMORY
                                                          : RT_LUA_ERR_RUN;
}

int rt_lua_start(rt_lua *x, int nargs, rt_lua_co *co) {
  co->L = NULL;
  co->ref = LUA_NOREF;
  co->nres = 0;
  co->status = RT_LUA_ERR_USAGE;
  if (nargs < 0 || lua_gettop(x->L) < nargs + 1 ||
      lua_type(x->L, -(nargs + 1)) != LUA_TFUNCTION) {
    set_err(x, "rt_lua_start: no function below the arguments");
    return RT_LUA_ERR_USAGE;
  }
  if (x->npool > 0) { /* a coroutine that returned: its thread is reused */
    co->ref = x->pool[--x->npool];
    co->L = x->pool_L[x->npool];
  } else {
  lua_pushcfunction(x->L, co_make);
  if (lua_pcall(x->L, 0, 2, 0) != LUA_OK) {
    set_err(x, "out of memory starting a callback");
    lua_pop(x->L, 1 + nargs + 1);
    return co->status = RT_LUA_ERR_MEMORY;
  }
  co->L = lua_tothread(x->L, -2);
  co->ref = (int)lua_tointeger(x->L, -1);
  lua_pop(x->L, 2);
  }
  /* a thread with an empty stack has LUA_MINSTACK free slots (perf: the
  ** call was 0.6 % of a scripted lifecycle) */
  if (nargs + 1 > LUA_MINSTACK && !lua_checkstack(co->L, nargs + 1)) {
    lua_pop(x->L, nargs + 1);
    set_err(x, "too many arguments for a callback");
    return co->status = RT_LUA_ERR_USAGE;
  }
  lua_xmove(x->L, co->L, nargs + 1);
  return run_slice(x, co, nargs);
}

int rt_lua_resume(rt_lua *x, rt_lua_co *co, int nargs) {
  if (!co->L || co->ref == LUA_NOREF || co->status != RT_LUA_YIELDED ||
      lua_status(co->L) != LUA_YIELD || nargs < 0 || lua_gettop(x->L) < nargs) {
    set_err(x, "rt_lua_resume: the callback is not suspended");
    return RT_LUA_ERR_USAGE;
  }
  lua_settop(co->L, 0); /* the yielding C function's frame: LUA_MINSTACK free slots */
  if (nargs > LUA_MINSTACK && !lua_checkstack(co->L, nargs)) {
    lua_pop(x->L, nargs);
    set_err(x, "too many values for a resume");
    return RT_LUA_ERR_USAGE;
  }
  lua_xmove(x->L, co->L, nargs);
  return run_slice(x, co, nargs);
}

void rt_lua_co_release(rt_lua *x, rt_lua_co *co) {
  int reusable = co->L && co->status == RT_LUA_DONE && lua_status(co->L) == LUA_OK &&
                 x->npool < (int)(sizeof x->pool / sizeof x->pool[0]);
  if (reusable && co->ref != LUA_NOREF && co->ref != LUA_REFNIL) {
    lua_settop(co->L, 0); /* a finished coroutine starts again from an empty stack */
    x->pool_L[x->npool] = co->L;
    x->pool[x->npool++] = co->ref;
  } else if (co->ref != LUA_NOREF && co->ref != LUA_REFNIL)
    luaL_unref(x->L, LUA_REGISTRYINDEX, co->ref);
  co->ref = LUA_NOREF;
  co->L = NULL;
  co->nres = 0;
}

/* }=============================================================== */
