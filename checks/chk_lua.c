/*
** chk_lua.c: user invariants written in Lua, one checker among the others
** (chk_reg.h). See chk_lua.h for the script's side.
**
** One sandboxed state (runtime/rt_lua.h) per run holds every invariant of
** the scenario's scripts. For each trace record that some invariant wants
** (its `kinds`, or every kind), the record is built once as a read-only
** table and each invariant's on_record runs as its own callback, in
** registration order, with a fresh instruction budget. The first error
** (a Lua error, a budget or memory cap, a yield) stops every Lua callback
** for the rest of the run; the scenario runner reports it as a scenario
** error (chk_lua_error). The state's clock is the record's time; it has no
** random stream and its log goes nowhere (an observer writes nothing).
*/
#include "checks/chk_lua.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk_reg.h"
#include "runtime/rt_events.h"
#include "runtime/rt_lua.h"
#include "runtime/rt_schema.h"

#define CL_MAX_VIOLATIONS 1000   /* stored per invariant; later ones are dropped */

typedef struct cl_inv {
  char name[CHK_NAME_MAX];
  int id;                  /* chk_invariant number */
  int on_record, on_finish;/* registry refs, LUA_NOREF when absent */
  uint8_t *kinds;          /* NULL: every kind; else kinds[k] for k < n_kinds */
  size_t n_kinds;
  uint64_t n_viol;
} cl_inv;

typedef struct cl_state {
  rt_lua *x;
  chk_set *c;              /* NULL while probing */
  int loading;             /* main chunks running: revenant.invariant allowed */
  cl_inv inv[CHK_LUA_MAX_INVARIANTS];
  int n_inv;
  int cur;                 /* invariant whose callback runs, -1 none */
  const sim_rec *rec;      /* the record handed over, NULL at the end */
  uint64_t rec_idx;
  int64_t now_us;
  int failed;
  uint64_t calls;
  int ro_ref, pairs_ref, next_ref; /* pieces of every record's metatable */
  int done_ref;            /* the dispatcher's sentinel (a private table) */
  rt_lua_co disp;          /* the dispatcher coroutine, reused by every callback */
  int disp_on;
  char err[4096];
} cl_state;

static cl_state *cl_of(lua_State *L) { return lua_touserdata(L, lua_upvalueindex(1)); }

static int64_t cl_now(void *ctx) { return ((cl_state *)ctx)->now_us; }

/* ---- records ------------------------------------------------------------ */

static int cl_readonly(lua_State *L) {
  return luaL_error(L, "trace records are read-only (copy what you need into your own table)");
}

/* __pairs of a record: the sandbox's ordered next over its fields. */
static int cl_pairs(lua_State *L) {
  cl_state *st = cl_of(L);
  if (!lua_getmetatable(L, 1)) return luaL_error(L, "not a trace record");
  lua_rawgeti(L, LUA_REGISTRYINDEX, st->next_ref);
  lua_getfield(L, -2, "__index");
  lua_pushnil(L);
  return 3;
}

/* Pushes the value of an actor-typed field: its id, else its number; nil
** for none. */
static void cl_push_actor(lua_State *L, const cl_state *st, uint32_t a) {
  const char *n = a == RT_NO_ACTOR || !st->c ? NULL : chk__actor_name(st->c, a);
  if (a == RT_NO_ACTOR) lua_pushnil(L);
  else if (n) lua_pushstring(L, n);
  else lua_pushinteger(L, (lua_Integer)a);
}

/* Builds st->rec as a read-only table (protected: runs under lua_pcall). */
static int cl_build(lua_State *L) {
  cl_state *st = lua_touserdata(L, 1);
  const sim_rec *r = st->rec;
  const rt_field *f = rt_schema_fields(r->kind);
  const sim_trace *t = chk__trace(st->c);
  lua_createtable(L, 0, 9);
  lua_pushstring(L, rt_event_name(r->kind));
  lua_setfield(L, -2, "kind");
  lua_pushinteger(L, r->t_us);
  lua_setfield(L, -2, "at");
  lua_pushinteger(L, (lua_Integer)st->rec_idx);
  lua_setfield(L, -2, "index");
  cl_push_actor(L, st, r->actor);
  lua_setfield(L, -2, "actor");
  for (int k = 0; k < RT_FIELDS; k++) {
    if (!f[k].key) continue;
    int64_t v = k == 0 ? r->a : k == 1 ? r->b : r->c;
    uint32_t s = k == 3 ? r->s : r->s2;
    const char *name;
    if (k >= 3) lua_pushstring(L, t ? sim_trace_str(t, s) : "");
    else if (f[k].type == RT_F_BOOL) lua_pushboolean(L, v != 0);
    else if (f[k].type == RT_F_ACTOR) cl_push_actor(L, st, (uint32_t)v);
    else if (rt_schema_is_enum(f[k].type) && (name = rt_schema_enum_name(f[k].type, v)))
      lua_pushstring(L, name);
    else lua_pushinteger(L, v);
    lua_setfield(L, -2, f[k].key);
  }
  lua_newtable(L); /* the proxy */
  lua_createtable(L, 0, 4);
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "__index");
  lua_rawgeti(L, LUA_REGISTRYINDEX, st->ro_ref);
  lua_setfield(L, -2, "__newindex");
  lua_rawgeti(L, LUA_REGISTRYINDEX, st->pairs_ref);
  lua_setfield(L, -2, "__pairs");
  lua_pushliteral(L, "read-only trace record");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  return 1;
}

/* ---- revenant.invariant ------------------------------------------------- */

static int cl_spec_fn(lua_State *L, const char *name, const char *field) {
  int ty = lua_getfield(L, 2, field);
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return LUA_NOREF;
  }
  if (ty != LUA_TFUNCTION)
    return luaL_error(L, "revenant.invariant '%s': %s must be a function, not a %s", name, field,
                      lua_typename(L, ty));
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

static void cl_spec_kinds(lua_State *L, cl_inv *v) {
  int ty = lua_getfield(L, 2, "kinds");
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (ty != LUA_TTABLE)
    luaL_error(L, "revenant.invariant '%s': kinds must be a list of record kinds (\"effect\", ...)", v->name);
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1), items = 0;
  for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) items++; /* {effect = true} is no list */
  if (items != n)
    luaL_error(L, "revenant.invariant '%s': kinds must be a list of record kinds ({\"effect\", ...}), "
               "not a table with other keys", v->name);
  size_t cap = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    const char *k = lua_tostring(L, -1);
    int kind = lua_type(L, -1) == LUA_TSTRING ? rt_schema_kind(k) : -1;
    if (kind < 0)
      luaL_error(L, "revenant.invariant '%s': kinds[%d]: unknown record kind %s%s%s (docs/trace.md lists them)",
                 v->name, (int)i, k ? "\"" : "", k ? k : luaL_typename(L, -1), k ? "\"" : "");
    if ((size_t)kind >= cap) {
      size_t nc = (size_t)kind + 1 > 64 ? (size_t)kind + 1 : 64;
      uint8_t *nk = realloc(v->kinds, nc);
      if (!nk) luaL_error(L, "revenant.invariant: out of memory");
      memset(nk + cap, 0, nc - cap);
      v->kinds = nk;
      v->n_kinds = cap = nc;
    }
    v->kinds[kind] = 1;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* The smallest string key of the spec table that is not a known field, or
** NULL (lua_next visits in hash order: keep the least, not the first). */
static const char *cl_unknown_field(lua_State *L) {
  static const char *const known[] = {"on_record", "on_finish", "kinds"};
  const char *least = NULL;
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    lua_pop(L, 1);
    const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(not a name)";
    int ok = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) ok |= lua_type(L, -1) == LUA_TSTRING && !strcmp(k, known[i]);
    if (!ok && (!least || strcmp(k, least) < 0)) least = k; /* keys stay alive in the table */
  }
  return least;
}

static int cl_invariant(lua_State *L) {
  cl_state *st = cl_of(L);
  char err[160];
  if (!st->loading)
    return luaL_error(L, "revenant.invariant: register invariants while the script loads (at its top level), "
                         "not inside a callback");
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *bad = cl_unknown_field(L);
  if (bad)
    return luaL_error(L, "revenant.invariant '%s': unknown field '%s' (the fields are on_record, on_finish, kinds)",
                      name, bad);
  int id = chk_invariant_intern(name, err, sizeof err);
  if (id < 0) return luaL_error(L, "revenant.invariant: %s", err);
  for (int i = 0; i < st->n_inv; i++)
    if (!strcmp(st->inv[i].name, name)) return luaL_error(L, "revenant.invariant: '%s' is registered twice", name);
  if (st->n_inv >= CHK_LUA_MAX_INVARIANTS)
    return luaL_error(L, "revenant.invariant '%s': a scenario may register at most %d invariants", name,
                      CHK_LUA_MAX_INVARIANTS);
  cl_inv *v = &st->inv[st->n_inv];
  memset(v, 0, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", name);
  v->id = id;
  v->on_record = v->on_finish = LUA_NOREF;
  st->n_inv++; /* counted now so that a later error still frees kinds */
  cl_spec_kinds(L, v);
  v->on_record = cl_spec_fn(L, name, "on_record");
  v->on_finish = cl_spec_fn(L, name, "on_finish");
  if (v->on_record == LUA_NOREF && v->on_finish == LUA_NOREF)
    return luaL_error(L, "revenant.invariant '%s': give on_record, on_finish or both", name);
  return 0;
}

/* ---- revenant.violate --------------------------------------------------- */

/* The actor index of an actor field value at idx (an id or a number). */
static uint32_t cl_actor_of(lua_State *L, const cl_state *st, int idx) {
  if (lua_type(L, idx) == LUA_TNUMBER && lua_isinteger(L, idx)) return (uint32_t)lua_tointeger(L, idx);
  if (lua_type(L, idx) != LUA_TSTRING || !st->c) return RT_NO_ACTOR;
  return chk__actor_by_name(st->c, lua_tostring(L, idx));
}

static int cl_violate(lua_State *L) {
  cl_state *st = cl_of(L);
  if (st->cur < 0 || !st->c) return luaL_error(L, "revenant.violate: call it from on_record or on_finish");
  cl_inv *v = &st->inv[st->cur];
  const char *msg = luaL_checkstring(L, 1);
  int top = lua_gettop(L), n = 0;
  uint64_t chain[4 * CHK_MAX_CHAIN];
  uint32_t actor = st->rec ? st->rec->actor : RT_NO_ACTOR;
  uint64_t limit = st->rec ? st->rec_idx : chk__trace(st->c)->count;
  for (int i = 2; i <= top; i++) {
    lua_Integer ix;
    if (lua_type(L, i) == LUA_TTABLE) {
      lua_getfield(L, i, "index");
      if (!lua_isinteger(L, -1))
        return luaL_error(L, "revenant.violate: argument %d is a table without an integer index (pass trace records)", i);
      ix = lua_tointeger(L, -1);
      lua_getfield(L, i, "actor");
      uint32_t a = cl_actor_of(L, st, -1);
      if (a != RT_NO_ACTOR) actor = a;
      lua_pop(L, 2);
    } else if (lua_isinteger(L, i)) {
      ix = lua_tointeger(L, i);
    } else {
      return luaL_error(L, "revenant.violate: argument %d is a %s, not a trace record or a record index", i,
                        luaL_typename(L, i));
    }
    if (ix < 0 || (uint64_t)ix > limit)
      return luaL_error(L, "revenant.violate: record index %d is not a record seen so far", (int)ix);
    if (n < (int)(sizeof chain / sizeof chain[0])) chain[n++] = (uint64_t)ix;
  }
  if (v->n_viol++ >= CL_MAX_VIOLATIONS) return 0;
  chk__violate(st->c, (chk_invariant)v->id, actor, st->now_us, -1, st->rec ? st->rec_idx : CHK_NO_INDEX,
               chain, n, "%s", msg);
  return 0;
}

/* ---- the dispatcher ----------------------------------------------------- */

/* One coroutine runs every callback in turn: starting a coroutine per
** callback costs more than the callback. The host resumes it with
** (function, argument); it calls the function and yields its sentinel.
** Any other yield is the user's own (an error). */
static const char cl_dispatcher[] =
    "local done = ...\n"
    "local callback, record = coroutine.yield(done)\n"
    "while true do\n"
    "  callback(record)\n"
    "  callback, record = coroutine.yield(done)\n"
    "end\n";

/* Starts the dispatcher; 0, or -1 with err. */
static int cl_dispatch_start(cl_state *st, char *err, size_t errlen) {
  lua_State *L = rt_lua_L(st->x);
  if (rt_lua_load(st->x, "revenant", cl_dispatcher, sizeof cl_dispatcher - 1) != RT_LUA_DONE) {
    snprintf(err, errlen, "cannot start the invariants: %s", rt_lua_error(st->x));
    return -1;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, st->done_ref);
  int rc = rt_lua_start(st->x, 1, &st->disp);
  if (rc != RT_LUA_YIELDED) {
    if (rc == RT_LUA_DONE) rt_lua_co_release(st->x, &st->disp);
    snprintf(err, errlen, "cannot start the invariants: %s", rt_lua_error(st->x));
    return -1;
  }
  st->disp_on = 1;
  return 0;
}

/* ---- the state ---------------------------------------------------------- */

static void cl_push_closure(lua_State *L, cl_state *st, lua_CFunction fn) {
  lua_pushlightuserdata(L, st);
  lua_pushcclosure(L, fn, 1);
}

/* Adds revenant.invariant / revenant.violate and the record metatable's
** pieces (protected: runs under lua_pcall). */
static int cl_install(lua_State *L) {
  cl_state *st = lua_touserdata(L, 1);
  lua_getglobal(L, "revenant");
  cl_push_closure(L, st, cl_invariant);
  lua_setfield(L, -2, "invariant");
  cl_push_closure(L, st, cl_violate);
  lua_setfield(L, -2, "violate");
  lua_pop(L, 1);
  cl_push_closure(L, st, cl_readonly);
  st->ro_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  cl_push_closure(L, st, cl_pairs);
  st->pairs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getglobal(L, "next");
  st->next_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  st->done_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

static void cl_free(void *p) {
  cl_state *st = p;
  if (!st) return;
  for (int i = 0; i < st->n_inv; i++) free(st->inv[i].kinds);
  if (st->disp_on) rt_lua_co_release(st->x, &st->disp);
  rt_lua_free(st->x);
  free(st);
}

/* A state with the scripts' main chunks run; NULL with err on failure. */
static cl_state *cl_new(chk_set *c, const chk_lua_script *s, int n, const chk_lua_opts *o, char *err,
                        size_t errlen) {
  cl_state *st = calloc(1, sizeof *st);
  if (!st) {
    snprintf(err, errlen, "out of memory making the invariants' Lua state");
    return NULL;
  }
  st->c = c;
  st->cur = -1;
  rt_lua_config cfg = {.host = {.ctx = st, .now_us = cl_now},
                       .script_dir = o ? o->dir : NULL,
                       .instr_budget = o ? o->instr_budget : 0,
                       .mem_cap = o ? o->mem_cap : 0};
  char e[256];
  if (!(st->x = rt_lua_new(&cfg, e, sizeof e))) {
    snprintf(err, errlen, "cannot make the invariants' Lua state: %s", e);
    free(st);
    return NULL;
  }
  lua_State *L = rt_lua_L(st->x);
  lua_pushcfunction(L, cl_install);
  lua_pushlightuserdata(L, st);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    snprintf(err, errlen, "cannot make the invariants' Lua state: %s", lua_tostring(L, -1));
    lua_pop(L, 1);
    cl_free(st);
    return NULL;
  }
  st->loading = 1;
  for (int i = 0; i < n; i++) {
    rt_lua_co co;
    int rc = rt_lua_load(st->x, s[i].name, s[i].text, s[i].len);
    if (rc == RT_LUA_DONE) rc = rt_lua_start(st->x, 0, &co);
    else co.ref = LUA_NOREF;
    if (rc == RT_LUA_YIELDED) snprintf(err, errlen, "%s: the script yielded at its top level", s[i].name);
    else if (rc != RT_LUA_DONE) snprintf(err, errlen, "%s", rt_lua_error(st->x));
    if (rc == RT_LUA_DONE || rc == RT_LUA_YIELDED) rt_lua_co_release(st->x, &co);
    if (rc != RT_LUA_DONE) {
      cl_free(st);
      return NULL;
    }
  }
  st->loading = 0;
  return st;
}

int chk_lua_probe(const chk_lua_script *s, int n, const chk_lua_opts *o, char (*names)[CHK_NAME_MAX], int max,
                  char *err, size_t errlen) {
  cl_state *st = cl_new(NULL, s, n, o, err, errlen);
  if (!st) return -1;
  int k = 0;
  for (; k < st->n_inv && k < max; k++) snprintf(names[k], CHK_NAME_MAX, "%s", st->inv[k].name);
  cl_free(st);
  return k;
}

/* ---- the checker -------------------------------------------------------- */

/* Runs invariant i's callback ref on the dispatcher with the value at the
** top of the main stack as its argument (nargs 1) or nil; notes the first
** failure. */
static void cl_call(cl_state *st, int i, int ref, int nargs) {
  lua_State *L = rt_lua_L(st->x);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  if (nargs) lua_pushvalue(L, -2);
  else lua_pushnil(L);
  st->cur = i;
  st->calls++;
  int rc = rt_lua_resume(st->x, &st->disp, 2);
  st->cur = -1;
  int ours = 0;
  if (rc == RT_LUA_YIELDED && st->disp.nres == 1) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, st->done_ref);
    lua_xmove(L, st->disp.L, 1);
    ours = lua_rawequal(st->disp.L, -1, -2);
    lua_pop(st->disp.L, 1);
  }
  if (ours) return;
  st->failed = 1;
  if (rc == RT_LUA_YIELDED || rc == RT_LUA_DONE)
    snprintf(st->err, sizeof st->err, "invariant %s: %s yielded (invariant callbacks cannot wait)",
             st->inv[i].name, nargs ? "on_record" : "on_finish");
  else
    snprintf(st->err, sizeof st->err, "invariant %s: %s", st->inv[i].name, rt_lua_error(st->x));
}

static int cl_wants(const cl_inv *v, uint32_t kind) {
  return v->on_record != LUA_NOREF && (!v->kinds || (kind < v->n_kinds && v->kinds[kind]));
}

static void cl_record(chk_set *c, void *p, const sim_rec *r, uint64_t idx) {
  cl_state *st = p;
  (void)c;
  int want = 0;
  if (st->failed) return;
  for (int i = 0; i < st->n_inv && !want; i++) want = cl_wants(&st->inv[i], r->kind);
  if (!want) return;
  lua_State *L = rt_lua_L(st->x);
  st->rec = r;
  st->rec_idx = idx;
  st->now_us = r->t_us;
  lua_pushcfunction(L, cl_build);
  lua_pushlightuserdata(L, st);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    st->failed = 1;
    snprintf(st->err, sizeof st->err, "invariants: cannot build a trace record: %s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return;
  }
  for (int i = 0; i < st->n_inv && !st->failed; i++)
    if (cl_wants(&st->inv[i], r->kind)) cl_call(st, i, st->inv[i].on_record, 1);
  lua_pop(L, 1);
  st->rec = NULL;
}

static void cl_finish(chk_set *c, void *p, int64_t end_us) {
  cl_state *st = p;
  (void)c;
  st->now_us = end_us;
  st->rec = NULL;
  for (int i = 0; i < st->n_inv && !st->failed; i++)
    if (st->inv[i].on_finish != LUA_NOREF) cl_call(st, i, st->inv[i].on_finish, 0);
}

static const chk_class chk_lua_class = {
    .name = "lua", .on_record = cl_record, .on_finish = cl_finish, .free = cl_free};

int chk_lua_attach(chk_set *c, const chk_lua_script *s, int n, const chk_lua_opts *o, char *err, size_t errlen) {
  cl_state *st = cl_new(c, s, n, o, err, errlen);
  if (!st) return -1;
  if (cl_dispatch_start(st, err, errlen)) {
    cl_free(st);
    return -1;
  }
  if (chk_register(c, &chk_lua_class, st) != 0) {
    snprintf(err, errlen, "out of memory registering the Lua invariants");
    return -1;
  }
  return 0;
}

const char *chk_lua_error(const chk_set *c) {
  const cl_state *st = chk_state(c, &chk_lua_class);
  return st && st->failed ? st->err : "";
}

uint64_t chk_lua_calls(const chk_set *c) {
  const cl_state *st = chk_state(c, &chk_lua_class);
  return st ? st->calls : 0;
}
