/*
** rt_luaagent.c: Lua-scripted agents (issue #13 item 2; docs/scripting.md).
**
** An actor with a script gets one sandboxed Lua state (rt_lua.h) per
** incarnation, made on the first call into user code and thrown away with
** the incarnation's memory (rt__lg_mem_free): globals, upvalues and pending
** coroutines never survive an eviction, restart, crash or SIGKILL.
**
** Every callback (a method called by a request or an RPC, onStart,
** onFiberRecovered, a schedule callback) and every fiber body runs as a
** coroutine on the simulation's one thread. Synchronous SDK calls (stash,
** sql:exec, keepAlive, schedule, effect, log) are C functions that act at
** once; a call that waits (revenant.work/sleep, fiber:await, self:call,
** self:runFiber) yields a command to the host, which resumes the coroutine
** with the result later in virtual time. A yield ends the turn.
**
** A Lua error is a thrown exception as the SDK sees it (a failed request, a
** fiber that threw, a hook that threw), plus an RT_EV_SCRIPT_ERROR record
** with the traceback. An exhausted instruction budget, the memory cap or a
** sandbox escape ends the run with a scenario error (rt_world_fatal).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "runtime/rt_agent.h"
#include "runtime/rt_models.h"
#include "runtime/rt_lua.h"
#include "runtime/rt_sql_sandbox.h"

typedef struct rt_lagent rt_lagent;

#define LG_KEY "rv.agent"
/* The incarnation's agent state: the extension's slot of its memory. */
#define LG_OF_MEM(m) (*(rt_lagent **)&RT_EXT_MEM((m), &rt__lua_ext))

enum { LC_REQUEST = 1, LC_RPC, LC_FIBER, LC_HOOK, LC_ONSTART, LC_SCHEDULE };

typedef struct lg_co {
  int used;
  int kind;                 /* LC_* */
  rt_lua_co co;
  int started;
  int fn_ref;               /* LC_FIBER body deferred past a startup hook: fn */
  int has_ctx;              /* LC_FIBER: its handle is kept at H[slot + 1] (ctx_*) */
  int64_t fiber;            /* the fiber this coroutine is the body of (LC_FIBER) */
  int64_t seq;              /* identity for timers and replies */
  int64_t msg;              /* LC_REQUEST, LC_RPC: the id of the message served */
  int64_t await;            /* waiting for this fiber's end (0: not) */
  int made_fiber;           /* LC_HOOK: it called runFiber */
  int64_t tool;             /* waiting for runAgentTool's run (0: not) */
  char what[64];            /* the callback, for records */
} lg_co;

enum { LC_ALARM = 40, LC_SYNC }; /* onAlarm; a callback run to its end now
                                  ** (onAgentToolFinish) */
enum { LC_CHATREC = 50 };        /* onChatRecovery: awaited; it may wait */

/* Where a callback that the caller waits for now (a schedule callback's
** first slice, onChatRecovery) leaves its outcome when it ends in that
** slice: on the caller's stack, so that it outlives a death of the state. */
typedef struct lg_sync {
  int ci;                   /* the coroutine it waits for */
  int ended, ok;
  int persist, cont;        /* onChatRecovery's options (ended ok) */
  char err[RT_UC_TEXT];
} lg_sync;

typedef struct lg_end {
  int64_t id;
  int ok;
  uint32_t val;             /* trace string: result JSON or error message (0 none) */
} lg_end;

struct rt_lagent {
  rt_world *w;
  uint32_t a;
  rt_lua *x;
  int mod_ref, h_ref;       /* the script's table; the prelude's host table */
  int fiber_mt, self_ref;   /* the Fiber metatable; the agent object (self) */
  lg_co *cos;
  int n_cos, cap_cos;
  int cur;                  /* running coroutine, -1 none */
  int64_t next_seq;
  int depth;                /* nested host resumes in progress */
  int dead;                 /* the incarnation died while Lua ran: free at depth 0 */
  lg_sync *sync;            /* a caller waiting for a callback's first slice */
};

static int load_prelude_chat(rt_lagent *lg);
static int push_callback(rt_lagent *lg, const char *name);
static inline int fiber_work(rt_lagent *lg, int ci, lua_State *co);

#define LG_GONE 100 /* the incarnation died while Lua ran */

/* Fixed slots at the bottom of the main thread's stack, pushed when the
** state is made (every other use of that stack is relative to its top):
** the hot tables and key strings of a callback and a fiber, reached with
** lua_pushvalue / lua_rawgeti instead of a registry look-up or lua_setfield's
** interning of a C string (luaS_new + strcmp; callgrind, issue #13). */
enum { LG_S_H = 1, LG_S_MOD, LG_S_SELF, LG_S_FIBER, LG_S_ID, LG_S_NAME, LG_S_OK, LG_S_VALUE,
       LG_S_N = LG_S_VALUE };

/* Scripts own no SDK table; their writes are RT_W_USER_SQL on the user's
** own tables (the WRITE record's table: "user"). */
static const rt_store_op lua_ops[] = {{RT_W_USER_SQL, "user"}};
rt_store_module rt__lua_store = {"lua", "", NULL, 0, 0, lua_ops, 1, 0, 0};

/* ---- the world's scripts ------------------------------------------------ */

struct rt_script {
  char *name, *src, *dir;
  size_t len;
  sim_rng rng;              /* revenant.random, math.random */
  sim_rng sql_rng;          /* SQL random() */
  rt_world *w;
  uint32_t a;
};

int rt_actor_script(rt_world *w, uint32_t a, const char *name, const char *src, size_t len,
                    const char *dir) {
  if (a >= w->n_actors || !name || !src) return -1;
  if (!w->scripts) {
    w->scripts = calloc(w->cap_actors ? w->cap_actors : 1, sizeof *w->scripts);
    w->cap_scripts = w->cap_actors ? w->cap_actors : 1;
    if (!w->scripts) return -1;
  }
  if (a >= (uint32_t)w->cap_scripts) {
    int nc = (int)a + 8;
    struct rt_script **ns = realloc(w->scripts, (size_t)nc * sizeof *ns);
    if (!ns) return -1;
    memset(ns + w->cap_scripts, 0, (size_t)(nc - w->cap_scripts) * sizeof *ns);
    w->scripts = ns;
    w->cap_scripts = nc;
  }
  struct rt_script *s = calloc(1, sizeof *s);
  if (!s) return -1;
  s->name = strdup(name);
  s->src = malloc(len + 1);
  s->dir = dir ? strdup(dir) : NULL;
  if (!s->name || !s->src || (dir && !s->dir)) {
    free(s->name);
    free(s->src);
    free(s->dir);
    free(s);
    return -1;
  }
  memcpy(s->src, src, len);
  s->src[len] = 0;
  s->len = len;
  s->w = w;
  s->a = a;
  char stream[96];
  snprintf(stream, sizeof stream, "runtime.lua.%s", w->actors[a].spec.id);
  sim_rng_stream(&s->rng, w->s->seed, stream);
  snprintf(stream, sizeof stream, "runtime.sql.%s", w->actors[a].spec.id);
  sim_rng_stream(&s->sql_rng, w->s->seed, stream);
  if (w->scripts[a]) {
    free(w->scripts[a]->name);
    free(w->scripts[a]->src);
    free(w->scripts[a]->dir);
    free(w->scripts[a]);
  }
  w->scripts[a] = s;
  rt__db_user_sql(w, a);
  /* its callbacks go through the user-code table (rt_uc_lua.c) */
  return rt__usercode_set(w, a, &rt__uc_lua);
}

static struct rt_script *script_of(rt_world *w, uint32_t a) {
  return w->scripts && a < (uint32_t)w->cap_scripts ? w->scripts[a] : NULL;
}

int rt__lg_scripted(rt_world *w, uint32_t a) { return script_of(w, a) != NULL; }

static void lg_world_free(rt_world *w) {
  for (int i = 0; w->scripts && i < w->cap_scripts; i++) {
    if (!w->scripts[i]) continue;
    free(w->scripts[i]->name);
    free(w->scripts[i]->src);
    free(w->scripts[i]->dir);
    free(w->scripts[i]);
  }
  free(w->scripts);
  w->scripts = NULL;
}

void rt__lg_fatal(rt_world *w, const char *msg) {
  if (w->fatal[0]) return;
  snprintf(w->fatal, sizeof w->fatal, "%s", msg);
  sim_request_stop(w->s);
}

const char *rt_world_fatal(const rt_world *w) { return w->fatal; }

void rt_world_set_case(rt_world *w, const char *label) {
  snprintf(w->case_label, sizeof w->case_label, "%s", label ? label : "");
}

/* ---- host services lent to the state ----------------------------------- */

static int64_t host_now(void *ctx) { return ((rt_lagent *)ctx)->w->s->now_us; }

static uint64_t host_random(void *ctx) {
  rt_lagent *lg = ctx;
  return sim_rng_next(&script_of(lg->w, lg->a)->rng);
}

static int64_t current_fiber(rt_lagent *lg) {
  return lg->cur >= 0 && lg->cos[lg->cur].kind == LC_FIBER ? lg->cos[lg->cur].fiber : 0;
}

static const char *current_what(rt_lagent *lg) { return lg->cur >= 0 ? lg->cos[lg->cur].what : ""; }

static void host_log(void *ctx, const char *msg, size_t len) {
  rt_lagent *lg = ctx;
  char buf[512];
  snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), msg);
  sim_emit(lg->w->s, RT_EV_USER_LOG, lg->a, current_fiber(lg), 0, 0, rt__str(lg->w, buf),
           rt__str(lg->w, current_what(lg)));
}

static int64_t sql_now(void *ctx) { return ((struct rt_script *)ctx)->w->s->now_us; }

static uint64_t sql_random(void *ctx) { return sim_rng_next(&((struct rt_script *)ctx)->sql_rng); }

/* The agent state of a primitive (its upvalue: the primitives are made
** with it, and the state never outlives it). */
static rt_lagent *lg_of(lua_State *L) {
  rt_lagent *lg = lua_touserdata(L, lua_upvalueindex(1));
  if (!lg || lg->dead) luaL_error(L, "this actor's incarnation has ended");
  return lg;
}

/* ---- durations ---------------------------------------------------------- */

/* The longest duration a script may name: 1e16 us, about 317 years
** (1e13 ms), so that a conversion to microseconds cannot overflow. */
#define LG_DUR_MAX_US 1e16

/* A duration in microseconds: a number of `unit_us` (ms for work/sleep, s
** for schedules), or a string "250ms", "2s", "1.5m", "1h"; negative, NaN
** or beyond LG_DUR_MAX_US is a Lua error. */
static int64_t duration_arg(lua_State *L, int idx, int64_t unit_us) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Number v = lua_tonumber(L, idx);
    if (!(v >= 0) || v * (lua_Number)unit_us > LG_DUR_MAX_US) {
      char m[120]; /* lua_pushfstring has no %g */
      char got[32] = "NaN"; /* printf's NaN sign differs between platforms */
      if (v == v) snprintf(got, sizeof got, "%g", v);
      snprintf(m, sizeof m, "a duration must be a number from 0 to %.0f %s (got %s)",
               LG_DUR_MAX_US / (double)unit_us, unit_us == 1000 ? "ms" : "s", got);
      luaL_error(L, "%s", m);
    }
    return (int64_t)(v * (lua_Number)unit_us);
  }
  if (lua_type(L, idx) != LUA_TSTRING) /* the user called work or schedule, not "dur" */
    luaL_error(L, "a duration must be a number or a string such as \"2s\", not %s",
               luaL_typename(L, idx));
  const char *s = lua_tostring(L, idx);
  char *end;
  double v = strtod(s, &end);
  int64_t mul = !strcmp(end, "ms") ? 1000 : !strcmp(end, "s") ? 1000000 : !strcmp(end, "m") ? 60000000
                : !strcmp(end, "h") ? 3600000000LL : !strcmp(end, "us") ? 1 : 0;
  if (end == s || !mul || !(v >= 0))
    luaL_error(L, "bad duration '%s' (a number, or \"250ms\", \"2s\", \"1.5m\", \"1h\")", s);
  if (v * (double)mul > LG_DUR_MAX_US)
    luaL_error(L, "bad duration '%s': at most about 317 years", s);
  return (int64_t)(v * (double)mul);
}

/* ---- primitives (the table P given to the prelude) ---------------------- */

static rt_fiber *live_fiber(rt_lagent *lg, int64_t id) {
  rt_mem *m = RT_MEM(lg->w, lg->a);
  for (int i = 0; m && i < m->n_fibers; i++)
    if (m->fibers[i].live && m->fibers[i].id == id) return &m->fibers[i];
  return NULL;
}

/* Raises the message fmt at the script's line: `level` frames up from the
** primitive (1: its caller; 2: the caller of the prelude method that called
** it, which is the script), as an SDK call's errors name the caller's line. */
static int lg_error_at(lua_State *L, int level, const char *fmt, ...) {
  va_list ap;
  luaL_where(L, level);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

/* Raises "METHOD: call it as USAGE, with a colon" at the script's line
** (`level` as lg_error_at's): an SDK method called with a dot, so that its
** object is missing (Lua's own "calling 'x' on bad self"). */
static int lg_dot_error(lua_State *L, int level, const char *method, const char *usage) {
  return lg_error_at(L, level, "%s: call it as %s, with a colon", method, usage);
}

/* How each SDK method of self and of a fiber handle is called. */
static const char *const dot_usage[][2] = {
    {"await", "handle:await()"},
    {"stash", "self:stash(value)"},
    {"keepAliveWhile", "self:keepAliveWhile(fn)"},
    {"schedule", "self:schedule(when, callback, payload)"},
    {"scheduleEvery", "self:scheduleEvery(every, callback, payload)"},
    {"cancelSchedule", "self:cancelSchedule(id or callback)"},
    {"call", "self:call(actor, method, args)"},
    {"runAgentTool", "self:runAgentTool(child, input, opts)"},
    {"abortAgentTool", "self:abortAgentTool(id)"},
    {"saveMessages", "self:saveMessages(text)"},
};

/* P.dot(method): lg_dot_error at the caller of the prelude method that
** called it (no tail call there, so level 2 is the script); the usage
** from dot_usage (the prelude's checks stay short: it is compiled per
** incarnation). */
static int p_dot(lua_State *L) {
  const char *m = luaL_checkstring(L, 1), *usage = "obj:method(...)";
  for (size_t i = 0; i < sizeof dot_usage / sizeof dot_usage[0]; i++)
    if (!strcmp(dot_usage[i][0], m)) usage = dot_usage[i][1];
  return lg_dot_error(L, 2, m, usage);
}

/* Stashes the value at index 2 for fiber `id` (0: none). */
static int stash_to(lua_State *L, rt_lagent *lg, int64_t id, int via_this) {
  if (!id) return lg_error_at(L, 2, RT_MSG_STASH_OUTSIDE); /* via Agent:stash: its caller's line */
  if (!live_fiber(lg, id)) return luaL_error(L, "stash: fiber %I has ended", (lua_Integer)id);
  size_t n;
  const char *json = rt_lua_json_text(L, 2, &n);
  if (rt__w_stash_value(lg->w, lg->a, id, json, via_this))
    return luaL_error(L, "stash: the storage write failed");
  if (lg->dead) return luaL_error(L, "this actor's incarnation has ended");
  return 0;
}

/* P.stash(fiber id or nil, value): ctx.stash / this.stash */
static int p_stash(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  int via_this = lua_isnil(L, 1);
  return stash_to(L, lg, via_this ? current_fiber(lg) : luaL_checkinteger(L, 1), via_this);
}

/* Fiber.stash(handle, value): fiber:stash in C, with no Lua frame between
** (a stash is the commonest call of a fiber body); a handle's integer id
** goes straight to stash_to, anything else through P.stash's checks. */
static int p_fiber_stash(lua_State *L) {
  if (lua_type(L, 1) != LUA_TTABLE) return lg_dot_error(L, 1, "stash", "fiber:stash(value)");
  lua_pushvalue(L, lua_upvalueindex(2)); /* "id", interned once */
  lua_gettable(L, 1);
  int isnum; /* a float or a numeric string P.stash would take as the same id */
  lua_Integer id = lua_tointegerx(L, -1, &isnum);
  if (isnum) return stash_to(L, lg_of(L), id, 0); /* the id above the value: no matter */
  if (lua_isnil(L, -1) && lua_gettop(L) == 2) /* fiber.stash(t): t has no id, and no value follows */
    return lg_dot_error(L, 1, "stash", "fiber:stash(value)");
  lua_replace(L, 1);
  return p_stash(L);
}

static int p_ka_acquire(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  rt__keepalive_acquire(lg->w, lg->a);
  return 0;
}

static int p_ka_release(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  rt__keepalive_release(lg->w, lg->a);
  return 0;
}

/* The SDK handle of the script's actor for an rt_sdk.h call. */
static rt_sdk_actor lg_sdk(rt_lagent *lg) {
  rt_sdk_actor me = {lg->w, lg->a, RT_MEM(lg->w, lg->a), current_fiber(lg)};
  return me;
}

/* The edit distance (with transpositions) of a and b, each under 48 bytes. */
static int lg_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  int t[48][48];
  if (la > 47 || lb > 47) return 99;
  for (size_t i = 0; i <= la; i++) t[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) t[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int v = t[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (t[i - 1][j] + 1 < v) v = t[i - 1][j] + 1;
      if (t[i][j - 1] + 1 < v) v = t[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && t[i - 2][j - 2] + 1 < v)
        v = t[i - 2][j - 2] + 1;
      t[i][j] = v;
    }
  return t[la][lb];
}

/* Raises `fn: this.cb is not a function` (the SDK checks the callback when
** schedule is called, not when the row runs), with the script's function
** closest to cb: edit distance at most 2 and under half of cb's length, ties
** by name, so the table's hash order never shows. */
static int lg_no_callback(lua_State *L, rt_lagent *lg, const char *fn, const char *cb) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, lg->self_ref);
  int sdk = lua_getfield(L, -1, cb) == LUA_TFUNCTION; /* self's method: the SDK's (runFiber, ...) */
  lua_pop(L, 2);
  if (sdk)
    return luaL_error(L, "%s: '%s' is an SDK method, which revenant does not run as a schedule callback; "
                      "schedule a function of the script that calls it", fn, cb);
  char best[48] = "";
  int best_d = 3;
  size_t lc = strlen(cb);
  lua_rawgeti(L, LUA_REGISTRYINDEX, lg->mod_ref);
  for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING || !lua_isfunction(L, -1)) continue;
    const char *k = lua_tostring(L, -2);
    int d = lg_edit_distance(cb, k);
    if (d < 3 && (size_t)d * 2 < lc && (d < best_d || (d == best_d && strcmp(k, best) < 0))) {
      snprintf(best, sizeof best, "%s", k);
      best_d = d;
    }
  }
  lua_pop(L, 1);
  const char *script = script_of(lg->w, lg->a)->name;
  if (best[0])
    return luaL_error(L, "%s: this.%s is not a function (%s has no function '%s'; did you mean '%s'?)",
                      fn, cb, script, cb, best);
  return luaL_error(L, "%s: this.%s is not a function (%s has no function '%s')", fn, cb, script, cb);
}

/* P.schedule(when, callback, payload, opts, every): schedule(when, cb,
** payload, {idempotent}) with `when` seconds (a number or "2s") or a cron
** string (it has spaces), or scheduleEvery(seconds, cb, payload). */
static int p_schedule(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  int every = lua_toboolean(L, 5);
  const char *fn = every ? "scheduleEvery" : "schedule";
  rt_sdk_when when = {0, 0, NULL};
  if (!every && lua_type(L, 1) == LUA_TSTRING && strchr(lua_tostring(L, 1), ' '))
    when.cron = lua_tostring(L, 1);
  else if (lua_type(L, 1) != LUA_TNUMBER && lua_type(L, 1) != LUA_TSTRING)
    return luaL_error(L, "%s: when must be seconds (a number or \"2s\")%s, not %s", fn,
                      every ? "" : " or a cron string (\"*/5 * * * *\")", luaL_typename(L, 1));
  else if (every)
    when.interval_us = duration_arg(L, 1, 1000000);
  else
    when.delay_us = duration_arg(L, 1, 1000000);
  if (every && when.interval_us < 1000000)
    return luaL_error(L, "scheduleEvery: the interval must be at least 1 second");
  if (lua_type(L, 2) != LUA_TSTRING)
    return luaL_error(L, "%s: the callback must be a function's name (a string), not %s", fn,
                      luaL_typename(L, 2));
  const char *cb = lua_tostring(L, 2);
  char payload[RT_SCHED_PAYLOAD + 1] = "";
  if (!lua_isnoneornil(L, 3)) {
    size_t n;
    const char *js = rt_lua_json_text(L, 3, &n);
    if (n >= RT_SCHED_PAYLOAD)
      return luaL_error(L, "%s: the payload is %d bytes of JSON (at most %d)", fn, (int)n,
                        RT_SCHED_PAYLOAD - 1);
    memcpy(payload, js, n + 1);
  }
  int idem = -1;
  if (!lua_isnoneornil(L, 4)) {
    if (!lua_istable(L, 4))
      return luaL_error(L, "%s: options must be a table ({idempotent = true}), not %s", fn,
                        luaL_typename(L, 4));
    lua_getfield(L, 4, "idempotent");
    if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
      return luaL_error(L, "%s: options.idempotent must be a boolean", fn);
    if (!lua_isnil(L, -1)) idem = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  size_t cb_len = strlen(cb);
  if (cb_len >= 1 && cb_len <= 47) { /* else rt_sdk names the bound */
    lua_rawgeti(L, LUA_REGISTRYINDEX, lg->mod_ref); /* read in the caller's slice: an */
    int ty = lua_getfield(L, -1, cb);               /* __index that throws, throws here */
    lua_pop(L, 2);
    if (ty != LUA_TFUNCTION) return lg_no_callback(L, lg, fn, cb);
  }
  rt_sdk_actor me = lg_sdk(lg);
  char err[200] = "";
  int64_t id = rt_sdk_schedule_with(&me, cb, &when, payload[0] ? payload : NULL, idem, NULL, err,
                                    sizeof err);
  if (lg->dead) return luaL_error(L, "this actor's incarnation has ended");
  if (id < 0)
    return luaL_error(L, "%s%s", strncmp(err, "schedule", 8) ? "schedule: " : "",
                      err[0] ? err : "the storage write failed");
  lua_pushinteger(L, id);
  return 1;
}

/* P.cancel(callback name or schedule id) -> true if a row was deleted */
static int p_cancel(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  char cb[64] = "";
  int whole = 0; /* a number with an integer value (2.0 too), as luaL_checkinteger takes it */
  if (lua_type(L, 1) == LUA_TNUMBER) lua_tointegerx(L, 1, &whole);
  if (lua_type(L, 1) != LUA_TSTRING && !whole) /* checked before a statement is prepared */
    return lg_error_at(L, 2, "cancelSchedule: give a schedule id (an integer) or a callback name (a string), "
                       "not %s", lua_type(L, 1) == LUA_TNUMBER ? "a fraction" : luaL_typename(L, 1));
  if (lua_type(L, 1) == LUA_TNUMBER) {
    sqlite3_stmt *st = rt__prepare(lg->w, lg->a, "SELECT callback FROM cf_agents_schedules WHERE id=?");
    if (st) {
      sqlite3_bind_int64(st, 1, luaL_checkinteger(L, 1));
      if (sqlite3_step(st) == SQLITE_ROW) snprintf(cb, sizeof cb, "%s", sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
    }
    lua_pushboolean(L, cb[0] && rt__schedule_cancel(lg->w, lg->a, cb) == 1);
    return 1;
  }
  lua_pushboolean(L, rt__schedule_cancel(lg->w, lg->a, luaL_checkstring(L, 1)) == 1);
  return 1;
}

/* P.effect(name [, key]): an external side effect (RT_EV_EFFECT) */
static int p_effect(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  const char *name = luaL_checkstring(L, 1);
  char buf[256];
  int t = lua_type(L, 2);
  if (t == LUA_TTABLE) { /* as JSON: tostring would put its address in the trace */
    lua_settop(L, 2);
    rt_lua_json_encode(L, 2);
    snprintf(buf, sizeof buf, "%s:%s", name, lua_tostring(L, -1));
  } else if (t == LUA_TSTRING || t == LUA_TNUMBER || t == LUA_TBOOLEAN) {
    snprintf(buf, sizeof buf, "%s:%s", name, luaL_tolstring(L, 2, NULL));
  } else if (t != LUA_TNONE && t != LUA_TNIL) {
    return luaL_error(L, "revenant.effect: the value must be a string, number, boolean or "
                      "table, not %s", luaL_typename(L, 2));
  } else
    snprintf(buf, sizeof buf, "%s", name);
  rt__emit(lg->w, RT_EV_EFFECT, lg->a, current_fiber(lg), 0, 0, buf);
  return 0;
}

static int p_json(lua_State *L) {
  lua_settop(L, 1);
  return rt_lua_json_encode(L, 1);
}

static int raise_upvalue(lua_State *L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  return lua_error(L);
}

/* P.kaw(fn): what keepAliveWhile's pcall calls: fn when it can be called,
** else a function raising `keepAliveWhile: fn must be a function, not nil`
** at the script's line, so that the ref is released before the error goes
** on (as the SDK's finally). */
static int p_kaw(lua_State *L) {
  lua_settop(L, 1);
  if (lua_isfunction(L, 1) || luaL_getmetafield(L, 1, "__call") != LUA_TNIL) {
    lua_settop(L, 1);
    return 1;
  }
  luaL_where(L, 2);
  lua_pushfstring(L, "keepAliveWhile: fn must be a function, not %s", luaL_typename(L, 1));
  lua_concat(L, 2);
  lua_pushcclosure(L, raise_upvalue, 1);
  return 1;
}

/* P.cargs(args): self:call's arguments as JSON; what JSON cannot carry is
** an error at the script's line (the caller of Agent:call). */
static int p_call_args(lua_State *L) {
  lua_settop(L, 1);
  lua_pushcfunction(L, p_json);
  lua_insert(L, 1);
  int rc = lua_pcall(L, 1, 1, 0);
  if (rc == LUA_OK) return 1;
  if (rc != LUA_ERRRUN) return lua_error(L); /* the memory cap: handed on, never caught here */
  return lg_error_at(L, 2, "call: args: %s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
}

static int p_unjson(lua_State *L) {
  size_t n;
  if (lua_isnil(L, 1)) return 0;
  const char *s = luaL_checklstring(L, 1, &n);
  if (rt_lua_json_decode(L, s, n)) return luaL_error(L, "not JSON: %s", s);
  return 1;
}

static int p_dur(lua_State *L) {
  lua_pushinteger(L, duration_arg(L, 1, 1000));
  return 1;
}

static void push_column(lua_State *L, sqlite3_stmt *st, int i) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: lua_pushinteger(L, sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT: lua_pushnumber(L, sqlite3_column_double(st, i)); break;
    case SQLITE_NULL: lua_pushnil(L); break;
    default:
      lua_pushlstring(L, (const char *)sqlite3_column_text(st, i), (size_t)sqlite3_column_bytes(st, i));
  }
}

/* Binds Lua arguments from..top to the statement's parameters. */
static void bind_args(lua_State *L, sqlite3_stmt *st, int from) {
  int top = lua_gettop(L);
  for (int i = from; i <= top; i++) {
    int k = i - from + 1;
    switch (lua_type(L, i)) {
      case LUA_TNIL: sqlite3_bind_null(st, k); break;
      case LUA_TBOOLEAN: sqlite3_bind_int(st, k, lua_toboolean(L, i)); break;
      case LUA_TNUMBER:
        if (lua_isinteger(L, i)) sqlite3_bind_int64(st, k, lua_tointeger(L, i));
        else sqlite3_bind_double(st, k, lua_tonumber(L, i));
        break;
      case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, i, &n);
        sqlite3_bind_text(st, k, s, (int)n, SQLITE_TRANSIENT);
        break;
      }
      case LUA_TTABLE:
        rt_lua_json_encode(L, i);
        sqlite3_bind_text(st, k, lua_tostring(L, -1), -1, SQLITE_TRANSIENT);
        lua_pop(L, 1);
        break;
      default: luaL_error(L, "sql: cannot bind a %s value (parameter %d)", luaL_typename(L, i), k);
    }
  }
}

/* A prepared user statement being bound and stepped (sql_rows). */
typedef struct sql_run {
  sqlite3_stmt *st;
  rt_sqlsbx *sbx;
  int rc;                   /* the last step's result */
} sql_run;

/* Under lua_pcall from p_sql (its sql_run, then the arguments): binds,
** steps and pushes the array of rows. A Lua error here (a value that
** cannot be bound, the memory cap while building rows) must not skip the
** statement's finalize nor leave the sandbox in user mode: p_sql catches
** it, cleans up and raises it again. */
static int sql_rows(lua_State *L) {
  sql_run *r = lua_touserdata(L, 1);
  bind_args(L, r->st, 2);
  lua_settop(L, 1);
  lua_newtable(L);
  int n = 0;
  rt_sql_sandbox_user(r->sbx, 1);
  while ((r->rc = sqlite3_step(r->st)) == SQLITE_ROW) {
    int nc = sqlite3_column_count(r->st);
    lua_createtable(L, 0, nc);
    for (int i = 0; i < nc; i++) {
      push_column(L, r->st, i);
      lua_setfield(L, -2, sqlite3_column_name(r->st, i));
    }
    lua_rawseti(L, 2, ++n);
  }
  rt_sql_sandbox_user(r->sbx, 0);
  return 1;
}

/* P.sql(query, ...) -> array of rows (column name -> value) */
static int p_sql(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  rt_world *w = lg->w;
  uint32_t a = lg->a;
  rt_db *d = &w->actors[a].store;
  if (lua_type(L, 1) != LUA_TSTRING) /* errors name the script's line: sql:exec's caller */
    return lg_error_at(L, 2, "sql:exec: the SQL must be a string, not %s%s", luaL_typename(L, 1),
                       lua_isnil(L, 1) ? " (call it as self.sql:exec(sql, ...))" : "");
  const char *q = lua_tostring(L, 1);
  int top = lua_gettop(L);
  char err[512];
  luaL_checkstack(L, top + 2, "sql: arguments");
  if (!d->db && rt__db_open(w, a)) return lg_error_at(L, 2, "sql: the actor's storage cannot be opened");
  if (!d->sbx) {
    struct rt_script *s = script_of(w, a);
    /* the SDK's tables and the runtime's own (alarm slot, child runs,
    ** executor checkpoints, thread store) are read-only to the script */
    rt_sql_sandbox_config cfg = {s, sql_now, sql_random, NULL, 0, "cf_,rv_,beach_"};
    d->poolable = 0; /* user tables and the overrides must not reach another world */
    rt__db_user_sql(w, a);
    d->sbx = rt_sql_sandbox(d->db, &cfg, err, sizeof err);
    if (!d->sbx) return lg_error_at(L, 2, "sql: %s", err);
  }
  sqlite3_stmt *st = NULL;
  const char *tail = NULL;
  if (rt_sql_sandbox_prepare(d->sbx, q, &st, &tail, err, sizeof err) != SQLITE_OK)
    return lg_error_at(L, 2, "sql: %s", err);
  while (tail && isspace((unsigned char)*tail)) tail++;
  if (tail && *tail == ';') tail++;
  while (tail && isspace((unsigned char)*tail)) tail++;
  if (!st || (tail && *tail)) {
    sqlite3_finalize(st);
    return lg_error_at(L, 2, st ? "sql: one statement per exec" : "sql: an empty statement");
  }
  int writes = !sqlite3_stmt_readonly(st);
  if (writes && rt__txn_join(w, a)) {
    sqlite3_finalize(st);
    return lg_error_at(L, 2, "sql: the actor's storage is broken (a commit failed)");
  }
  sql_run run = {st, d->sbx, SQLITE_OK};
  lua_pushcfunction(L, sql_rows);
  lua_pushlightuserdata(L, &run);
  for (int i = 2; i <= top; i++) lua_pushvalue(L, i);
  if (lua_pcall(L, top, 1, 0) != LUA_OK) {
    rt_sql_sandbox_user(d->sbx, 0);
    sqlite3_finalize(st);
    if (lua_type(L, -1) == LUA_TSTRING) { /* the same error at the script's line, the statement finalized */
      luaL_where(L, 2);
      lua_insert(L, -2);
      lua_concat(L, 2);
    }
    return lua_error(L);
  }
  int rc = run.rc;
  if (rc != SQLITE_DONE) {
    const char *refusal = rt_sql_sandbox_refusal(d->sbx);
    snprintf(err, sizeof err, "%s", refusal && *refusal ? refusal : sqlite3_errmsg(d->db));
    sqlite3_finalize(st);
    return lg_error_at(L, 2, "sql: %s", err);
  }
  int changes = sqlite3_changes(d->db);
  sqlite3_finalize(st);
  if (writes) {
    char text[96];
    snprintf(text, sizeof text, "%.95s", q);
    rt__txn_wrote_row(w, a, RT_W_USER_SQL, changes, SQLITE_DONE, text);
    if (lg->dead) return lg_error_at(L, 2, "this actor's incarnation has ended");
  }
  return 1;
}

/* ---- tool runs: abortAgentTool, open runs (reference A.11) ------------- */

/* P.tool_abort(run) -> true if the run was open (its AbortSignal fired) */
static int p_tool_abort(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  int64_t run = luaL_checkinteger(L, 1);
  rt_sdk_actor self = lg_sdk(lg);
  int r = rt_sdk_abort_agent_tool(&self, run);
  if (lg->dead) return luaL_error(L, "this actor's incarnation has ended");
  if (r < 0) return luaL_error(L, "abortAgentTool: the tool-run model is not available");
  lua_pushboolean(L, r == 1);
  return 1;
}

/* P.tool_open() -> the open runs' ids, oldest first */
static int p_tool_open(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  int64_t ids[RT_MAX_ROWS];
  rt_sdk_actor self = lg_sdk(lg);
  int n = rt_sdk_open_agent_tools(&self, ids, RT_MAX_ROWS);
  if (n < 0) return luaL_error(L, "openAgentTools: the tool-run model is not available");
  if (n > RT_MAX_ROWS) n = RT_MAX_ROWS;
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, ids[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* ---- the prelude: the SDK's names over the primitives ------------------- */

/* The prelude yields this light userdata before each command, so the host
** can tell its commands from a script's bare coroutine.yield (Lua code
** cannot make a light userdata, nor reach P where the prelude keeps it). */
static const char yield_token = 0;
/* p_run_fiber yields this one instead, with only the name and fn after it
** (no command string to make and compare). */
static const char run_fiber_token = 1;

static const char prelude[] =
    "local P, H = ... local S\n" /* S: the agent object (H.self), that SDK methods check their self against */
    "local yield0, TK = coroutine.yield, P.token; local function yield(...) return yield0(TK, ...) end\n"
    "local Fiber = {}\n"
    "Fiber.__index = Fiber\n"
    "Fiber.stash = P.fiber_stash\n"
    "function Fiber:await() if self==nil then P.dot'await'end\n"
    "  local ok, v\n"
    "  if self._ok ~= nil then\n"
    "    ok, v = self._ok, self._value\n"
    "    if ok then v = P.unjson(v) end\n"
    "  else\n"
    "    ok, v = yield('await', self.id)\n"
    "  end\n"
    "  if not ok then error(v, 0) end\n"
    "  return v\n"
    "end\n"
    "local Agent = {}\n"
    "Agent.__index = Agent\n"
    "Agent.runFiber = P.run_fiber\n" /* was five lines of Lua: the blank ones */
    "\n\n\n\n"                          /* keep later lines' numbers (tracebacks) */
    "function Agent:stash(v) if self~=S then P.dot'stash'end P.stash(nil, v) end\n"
    "function Agent:keepAlive()\n"
    "  P.ka_acquire()\n"
    "  local disposed = false\n"
    "  return function() if disposed then return end disposed = true P.ka_release() end\n"
    "end\n"
    "function Agent:keepAliveWhile(fn) if self~=S then P.dot'keepAliveWhile'end\n"
    "  local dispose = self:keepAlive()\n"
    "  local ok, r = pcall(P.kaw(fn))\n"
    "  dispose()\n"
    "  if not ok then error(r, 0) end\n"
    "  return r\n"
    "end\n"
    "function Agent:schedule(when, cb, payload, opts) if self~=S then P.dot'schedule'end\n"
    "  H.check_options('schedule', opts, 'sched') local id = H.at_caller(P.schedule, when, cb, payload, opts, false)\n"
    "  return id\n"
    "end\n"
    "function Agent:scheduleEvery(every, cb, payload, opts) if self~=S then P.dot'scheduleEvery'end\n"
    "  H.check_options('scheduleEvery', opts, 'sched') local id = H.at_caller(P.schedule, every, cb, payload, opts, true)\n"
    "  return id\n"
    "end\n"
    "function Agent:cancelSchedule(x) if self~=S then P.dot'cancelSchedule'end return P.cancel(x) end\n"
    "function Agent:call(actor, method, args) if self~=S then P.dot'call'end\n"
    "  if type(actor) ~= 'string' then error('call: the actor must be its id (a string)', 2) end\n"
    "  if type(method) ~= 'string' then error('call: the method must be a string', 2) end\n"
    "  local ok, v = yield('call', actor, method, P.cargs(args))\n"
    "  if not ok then error(v, 0) end\n"
    "  return P.unjson(v)\n"
    "end\n"
    /* runAgentTool / abortAgentTool / openAgentTools (tool runs, A.11) */
    "function Agent:runAgentTool(child, input, opts) if self~=S then P.dot'runAgentTool'end\n"
    "  if type(child) ~= 'string' then error('runAgentTool: the child must be an actor id or a class name (a string)', 2) end\n"
    "  if opts ~= nil and type(opts) ~= 'table' then error('runAgentTool: opts must be a table', 2) end\n"
    "  opts = opts or {} H.check_options('runAgentTool', opts, 'tool')\n"
    "  local id = opts.runId\n"
    "  if id ~= nil and (math.type(id) ~= 'integer' or id <= 0 or id > 1000000000) then error('runAgentTool: opts.runId must be a positive integer up to 1000000000 (as a workload run_id)', 2) end\n"
    "  local okw, work = pcall(P.dur, opts.work or 1000)\n"
    "  if not okw then error('runAgentTool: opts.work: ' .. tostring(work), 2) end\n"
    "  local okj, js = pcall(P.json, input)\n"
    "  if not okj then error('runAgentTool: input: ' .. tostring(js), 2) end\n"
    "  local ok, r = yield('runAgentTool', child, js, id or 0, work)\n"
    "  if not ok then error(r, 2) end\n"
    "  return r\n"
    "end\n"
    "function Agent:abortAgentTool(id) if self~=S then P.dot'abortAgentTool'end\n"
    "  if math.type(id) ~= 'integer' then error('abortAgentTool: the run id must be an integer', 2) end\n"
    "  return P.tool_abort(id)\n"
    "end\n"
    "function Agent:openAgentTools() return P.tool_open() end\n"
    "local sql = {}\n"
    "function sql:exec(q, ...) return P.sql(q, ...) end\n"
    "H.self = setmetatable({name = H.name, sql = sql}, Agent) S = H.self\n"
    "H.Fiber = Fiber\n"
    "function H.recovery(id, name, snap, created)\n"
    "  return {id = id, name = name, snapshot = P.unjson(snap), createdAt = created}\n"
    "end\n"
    "H.json, H.unjson = P.json, P.unjson\n"
    "revenant.work = function(d)\n"
    "  local ok, us = pcall(P.dur, d)\n"
    "  if not ok then error(us, 2) end\n" /* at the script's line */
    "  yield('work', us)\n"
    "end\n"
    "revenant.sleep = revenant.work\n"
    "revenant.case = H.case\n"
    "revenant.effect = P.effect\n";

/* self:runFiber(name, fn): checks its arguments, then yields the command
** to the host (drive, cmd_run_fiber), which resumes the caller with the
** handle: a C function, so no Lua frame (nor the count hook's trap on its
** instructions) lies between the script and the host. */
/* runFiber's error for bad arguments: a call with a dot (no self before
** the name), a bad name or a bad fn. */
static int run_fiber_bad_args(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, lg->self_ref);
  int is_self = lua_rawequal(L, 1, -1);
  lua_pop(L, 1);
  if (!is_self && lua_type(L, 1) == LUA_TSTRING && lua_type(L, 2) == LUA_TFUNCTION)
    return lg_dot_error(L, 1, "runFiber", "self:runFiber(name, fn)");
  size_t n = 0;
  if (lua_type(L, 2) != LUA_TSTRING || (lua_tolstring(L, 2, &n), n == 0))
    return luaL_error(L, "runFiber: the name must be a non-empty string");
  return luaL_error(L, "runFiber: fn must be a function");
}

/* runFiber does its work at once only under this many nested host resumes
** (run_fiber_now): deeper, it yields as before. */
#define LG_NOW_DEPTH 8

/* A fiber body that starts a fiber whose body starts a fiber... at once
** nests the host's C frames once per level, whichever path runFiber takes:
** past this many levels runFiber throws in the body that called it, as
** JavaScript throws RangeError when its stack runs out (before, the
** process died of a C stack overflow at about 10,000 levels). Lua's own
** limit of nested C calls is 200 (LUAI_MAXCCALLS). */
#define LG_MAX_NEST 200

/* A yield that ends the caller's run here (its incarnation is gone): the
** host drops it as it drops a coroutine whose incarnation died. */
static const char gone_token = 2;

/* runFiber's work done at once, from inside the caller's slice (the
** commonest case: no yield, no resume): the caller's slice is paused as
** its yield would end it and started again as the resume would, so the
** instruction budget, the memory cap and every record are those of the
** yield through the host. Returns p_run_fiber's results. */
static int run_fiber_now(lua_State *L, rt_lagent *lg, rt_lua_slice *s) {
  int rc = fiber_work(lg, lg->cur, L);
  rt_lua_slice_resume(lg->x, s);
  if (rc == LG_GONE) { /* lg is freed by the caller's run, above (depth > 0) */
    lua_pushlightuserdata(L, (void *)&gone_token);
    return lua_yield(L, 1);
  }
  lua_xmove(rt_lua_L(lg->x), L, 1);
  return 1;
}

static int p_run_fiber(lua_State *L) {
  size_t n = 0;
  if (lua_type(L, 2) != LUA_TSTRING || (lua_tolstring(L, 2, &n), n == 0) || lua_type(L, 3) != LUA_TFUNCTION)
    return run_fiber_bad_args(L);
  lua_settop(L, 3);
  rt_lagent *lg = lua_touserdata(L, lua_upvalueindex(1));
  if (lg && lg->depth >= LG_MAX_NEST)
    return luaL_error(L, "runFiber: %d fibers started one inside another without a wait (a body "
                         "that starts a fiber at once, again and again: JavaScript would throw "
                         "RangeError: Maximum call stack size exceeded)", lg->depth);
  /* at once when the host would run the command at once: not in a startup
  ** hook (it may defer the body), nor a synchronous callback (it refuses
  ** the yield), nor a coroutine the script made (the yield goes to it); and
  ** only a few levels deep (LG_NOW_DEPTH): a body that starts a fiber that
  ** starts a fiber... nests C frames either way, and those of the yield are
  ** the smaller */
  int kind = lg && !lg->dead && lg->cur >= 0 && lg->depth < LG_NOW_DEPTH ? lg->cos[lg->cur].kind : 0;
  rt_lua_slice *s;
  if (kind && kind != LC_HOOK && kind != LC_SYNC && (s = rt_lua_slice_pause(lg->x, L)))
    return run_fiber_now(L, lg, s);
  lua_pushlightuserdata(L, (void *)&run_fiber_token);
  lua_replace(L, 1); /* self -> the token */
  return lua_yield(L, 3); /* token, name, fn */
}

static const luaL_Reg prims[] = {
    {"run_fiber", p_run_fiber},
    {"stash", p_stash},     {"dot", p_dot}, {"ka_acquire", p_ka_acquire}, {"ka_release", p_ka_release},
    {"schedule", p_schedule}, {"cancel", p_cancel},       {"effect", p_effect},
    {"json", p_json},       {"unjson", p_unjson},         {"dur", p_dur}, {"cargs", p_call_args}, {"kaw", p_kaw},
    {"sql", p_sql},
    {"tool_abort", p_tool_abort}, {"tool_open", p_tool_open},
    {NULL, NULL}};

/* ---- the state of one incarnation --------------------------------------- */

static void lg_free(rt_lagent *lg) {
  if (!lg) return;
  rt_lua_free(lg->x);
  free(lg->cos);
  free(lg);
}

static void lg_mem_free(rt_world *w, rt_mem *m) {
  (void)w;
  rt_lagent *lg = LG_OF_MEM(m);
  LG_OF_MEM(m) = NULL;
  if (!lg) return;
  if (lg->depth > 0) lg->dead = 1; /* Lua is running: freed when it returns */
  else lg_free(lg);
}

/* Reports a failure to make the state: the run ends (a scenario error). */
static void make_failed(rt_world *w, struct rt_script *s, const char *why) {
  char msg[1200];
  snprintf(msg, sizeof msg, "script %s: %s", s->name, why);
  rt__lg_fatal(w, msg);
}

static void push_h(rt_lagent *lg, const char *field) {
  lua_State *L = rt_lua_L(lg->x);
  lua_rawgeti(L, LUA_REGISTRYINDEX, lg->h_ref);
  lua_getfield(L, -1, field);
  lua_remove(L, -2);
}

static rt_lagent *lg_make(rt_world *w, uint32_t a) {
  struct rt_script *s = script_of(w, a);
  rt_mem *m = RT_MEM(w, a);
  char err[256];
  if (!s || !m || w->fatal[0]) return NULL;
  rt_lagent *lg = calloc(1, sizeof *lg);
  if (!lg) return NULL;
  lg->w = w;
  lg->a = a;
  lg->cur = -1;
  lg->mod_ref = lg->h_ref = LUA_NOREF;
  rt_lua_config cfg = {{lg, host_now, host_random, NULL, host_log}, s->dir, 0, 0};
  lg->x = rt_lua_new(&cfg, err, sizeof err);
  if (!lg->x) {
    make_failed(w, s, err);
    free(lg);
    return NULL;
  }
  lua_State *L = rt_lua_L(lg->x);
  if (lua_gettop(L) != 0 || !lua_checkstack(L, LG_S_N + 2 * LUA_MINSTACK)) {
    make_failed(w, s, "out of memory making the Lua state");
    lg_free(lg);
    return NULL;
  }
  for (int i = LG_S_H; i < LG_S_ID; i++) lua_pushnil(L); /* set below */
  lua_pushliteral(L, "id");
  lua_pushliteral(L, "name");
  lua_pushliteral(L, "_ok");
  lua_pushliteral(L, "_value");
  /* generational collection: an agent's callbacks make many short-lived
  ** tables (stash values, handles); the collector's timing is not
  ** observable in the sandbox (no finalizers, no weak tables) */
  lua_gc(L, LUA_GCGEN, 0, 0);
  lua_pushlightuserdata(L, lg);
  lua_setfield(L, LUA_REGISTRYINDEX, LG_KEY);
  /* the prelude, with P and H */
  if (luaL_loadbufferx(L, prelude, sizeof prelude - 1, "=revenant", "t") != LUA_OK) {
    make_failed(w, s, lua_tostring(L, -1));
    lg_free(lg);
    return NULL;
  }
  luaL_newlibtable(L, prims);
  lua_pushlightuserdata(L, lg);
  luaL_setfuncs(L, prims, 1);
  lua_pushlightuserdata(L, lg);
  lua_pushvalue(L, LG_S_ID);
  lua_pushcclosure(L, p_fiber_stash, 2);
  lua_setfield(L, -2, "fiber_stash");
  lua_pushlightuserdata(L, (void *)&yield_token); /* marks the prelude's yields */
  lua_setfield(L, -2, "token");
  lua_newtable(L);
  lua_pushstring(L, w->actors[a].spec.id);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, w->case_label);
  lua_setfield(L, -2, "case");
  lua_pushvalue(L, -1);
  lua_copy(L, -1, LG_S_H);
  lg->h_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    make_failed(w, s, lua_tostring(L, -1));
    lg_free(lg);
    return NULL;
  }
  if (load_prelude_chat(lg)) {
    make_failed(w, s, lua_tostring(L, -1));
    lg_free(lg);
    return NULL;
  }
  push_h(lg, "Fiber");
  lua_copy(L, -1, LG_S_FIBER);
  lg->fiber_mt = luaL_ref(L, LUA_REGISTRYINDEX);
  push_h(lg, "self");
  lua_copy(L, -1, LG_S_SELF);
  lg->self_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  /* the script's chunk, run once: it returns the table of callbacks */
  rt_lua_co co;
  int rc = rt_lua_load(lg->x, s->name, s->src, s->len);
  if (rc == RT_LUA_DONE) rc = rt_lua_start(lg->x, 0, &co);
  else co.ref = LUA_NOREF;
  if (rc == RT_LUA_YIELDED) {
    rt_lua_co_release(lg->x, &co);
    make_failed(w, s, "the main chunk yielded (revenant.work and friends belong in callbacks)");
    lg_free(lg);
    return NULL;
  }
  if (rc != RT_LUA_DONE) {
    make_failed(w, s, rt_lua_error(lg->x));
    lg_free(lg);
    return NULL;
  }
  if (co.nres < 1 || lua_type(co.L, -co.nres) != LUA_TTABLE) {
    rt_lua_co_release(lg->x, &co);
    make_failed(w, s, "the script must return a table of callbacks (return { onStart = ..., ... })");
    lg_free(lg);
    return NULL;
  }
  lua_pushvalue(co.L, -co.nres);
  lua_xmove(co.L, L, 1);
  lua_copy(L, -1, LG_S_MOD);
  lg->mod_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  rt_lua_co_release(lg->x, &co);
  if (rt_lua_escape(lg->x)[0]) {
    make_failed(w, s, rt_lua_escape(lg->x));
    lg_free(lg);
    return NULL;
  }
  LG_OF_MEM(m) = lg;
  return lg;
}

static rt_lagent *lg_get(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  if (!m || !script_of(w, a)) return NULL;
  return LG_OF_MEM(m) ? LG_OF_MEM(m) : lg_make(w, a);
}

/* A look-up of callback `name` failed in the script table's __index: the
** run ends with the script's message (a scenario error, exit 2). */
static void callback_lookup_failed(rt_lagent *lg, const char *name) {
  struct rt_script *s = script_of(lg->w, lg->a);
  char msg[1200];
  snprintf(msg, sizeof msg, "script %s: looking up the callback %s: %s", s ? s->name : "?", name,
           rt_lua_error(lg->x));
  rt__lg_fatal(lg->w, msg);
}

/* Pushes mod[name] if it is a function (returns 1), else nothing (0). The
** script's table is read as a script reads it (an inherited method comes
** through __index), but protected: an __index that throws, loops or
** allocates without end ends the run with its message. */
static int push_callback(rt_lagent *lg, const char *name) {
  int t = rt_lua_getfield(lg->x, rt_lua_L(lg->x), LG_S_MOD, name);
  if (t == LUA_TFUNCTION) return 1;
  if (t < 0) {
    callback_lookup_failed(lg, name);
    return 0;
  }
  lua_pop(rt_lua_L(lg->x), 1);
  return 0;
}

int rt__lg_has(rt_world *w, uint32_t a, const char *callback) {
  rt_lagent *lg = lg_get(w, a);
  if (!lg || !push_callback(lg, callback)) return 0;
  lua_pop(rt_lua_L(lg->x), 1);
  return 1;
}


/* A fiber body's handle, kept while coroutine slot ci holds the body (its
** fiber's end writes the outcome into it), lives in the prelude's host
** table H at [ci + 1]: a table only the host reaches, indexed by the slot,
** so no registry reference is made and released per fiber (luaL_ref and
** luaL_unref were 0.5 k instructions of a scripted lifecycle). */
static void ctx_keep(rt_lagent *lg, int ci) { /* the handle: on top of the main stack */
  lua_State *L = rt_lua_L(lg->x);
  lua_pushvalue(L, -1);
  lua_rawseti(L, LG_S_H, ci + 1);
  lg->cos[ci].has_ctx = 1;
}

static void ctx_push(rt_lagent *lg, int ci) {
  lua_rawgeti(rt_lua_L(lg->x), LG_S_H, ci + 1);
}

static void ctx_clear(rt_lagent *lg, int ci) {
  lua_State *L = rt_lua_L(lg->x);
  lua_pushnil(L);
  lua_rawseti(L, LG_S_H, ci + 1);
  lg->cos[ci].has_ctx = 0;
}

static int co_new(rt_lagent *lg, int kind, const char *what) {
  int i;
  for (i = 0; i < lg->n_cos && lg->cos[i].used; i++)
    ;
  if (i == lg->n_cos) {
    if (lg->n_cos == lg->cap_cos) {
      int nc = lg->cap_cos ? lg->cap_cos * 2 : 8;
      lg_co *n = realloc(lg->cos, (size_t)nc * sizeof *n);
      if (!n) return -1;
      lg->cos = n;
      lg->cap_cos = nc;
    }
    lg->n_cos++;
  }
  lg_co *c = &lg->cos[i];
  /* field by field, not memset: perf put the memset's `rep stos` at 0.4 %
  ** of a scripted lifecycle (issue #13); what: set below */
  c->used = 1;
  c->kind = kind;
  c->co.L = NULL;
  c->co.ref = LUA_NOREF;
  c->co.nres = 0;
  c->co.status = 0;
  c->started = 0;
  c->fn_ref = LUA_NOREF;
  c->has_ctx = 0;
  c->fiber = c->msg = c->await = c->tool = 0;
  c->made_fiber = 0;
  c->seq = ++lg->next_seq;
  size_t n = strnlen(what, sizeof c->what - 1);
  memcpy(c->what, what, n);
  c->what[n] = 0;
  return i;
}

static int co_by_seq(rt_lagent *lg, int64_t seq) {
  for (int i = 0; i < lg->n_cos; i++)
    if (lg->cos[i].used && lg->cos[i].seq == seq) return i;
  return -1;
}

static void co_drop(rt_lagent *lg, int ci) {
  lg_co *c = &lg->cos[ci];
  lua_State *L = rt_lua_L(lg->x);
  rt_lua_co_release(lg->x, &c->co);
  if (c->fn_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, c->fn_ref);
  if (c->has_ctx) ctx_clear(lg, ci);
  c->used = 0;
}

/* Starts (nargs values and the function below them on the main thread) or
** resumes (nargs values) coroutine ci. */
static int run(rt_lagent *lg, int ci, int start, int nargs) {
  int prev = lg->cur;
  lg->cur = ci;
  lg->depth++;
  rt_lua_co co = lg->cos[ci].co;
  int rc = start ? rt_lua_start(lg->x, nargs, &co) : rt_lua_resume(lg->x, &co, nargs);
  lg->depth--;
  if (lg->dead) {
    if (lg->depth == 0) lg_free(lg);
    return LG_GONE;
  }
  lg->cos[ci].co = co;
  lg->cos[ci].started = 1;
  lg->cur = prev;
  return rc;
}

static void drive(rt_lagent *lg, int ci, int rc);
static uint32_t actor_by_id(rt_world *w, const char *id);

/* ---- endings -------------------------------------------------------------- */

/* The first line of the last error (file:line: reason). */
static void first_line(rt_lagent *lg, char *out, size_t n) {
  const char *e = rt_lua_error(lg->x);
  const char *nl = strstr(e, "\nstack traceback:");
  size_t len = nl ? (size_t)(nl - e) : strlen(e);
  snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), e);
}

/* The record of a Lua error; a budget, memory or sandbox abort also ends
** the run (rt_world_fatal). */
static void report_error(rt_lagent *lg, int ci, int rc) {
  rt_world *w = lg->w;
  lg_co *c = &lg->cos[ci];
  const char *esc = rt_lua_escape(lg->x);
  sim_emit(w->s, RT_EV_SCRIPT_ERROR, lg->a, esc[0] ? 7 : -rc, c->kind == LC_FIBER ? c->fiber : 0, 0,
           rt__str(w, c->what), rt__str(w, rt_lua_error(lg->x)));
  char msg[RT_FATAL_MAX];
  if (esc[0]) {
    snprintf(msg, sizeof msg, "%s: sandbox escape in %s: %s", script_of(w, lg->a)->name, c->what, esc);
    rt__lg_fatal(w, msg);
  } else if (rc == RT_LUA_ERR_BUDGET || rc == RT_LUA_ERR_MEMORY) {
    snprintf(msg, sizeof msg, "%s: %s in %s:\n%s", script_of(w, lg->a)->name,
             rc == RT_LUA_ERR_BUDGET ? "instruction budget exhausted" : "memory cap exceeded",
             c->what, rt_lua_error(lg->x));
    rt__lg_fatal(w, msg);
  }
}

/* Ends synchronous callback ci (onChatRecovery, onAgentToolFinish) that did
** not return in its slice (rc): a wait is refused with wait_msg as a
** script_error record (code 1, in the callback's fiber, none: 0), any other
** failure is reported as usual; the coroutine is dropped. */
static void sync_failed(rt_lagent *lg, int ci, int rc, const char *wait_msg) {
  rt_world *w = lg->w;
  if (rc == RT_LUA_YIELDED)
    sim_emit(w->s, RT_EV_SCRIPT_ERROR, lg->a, 1, 0, 0, rt__str(w, lg->cos[ci].what),
             rt__str(w, wait_msg));
  else
    report_error(lg, ci, rc);
  co_drop(lg, ci);
}

/* The JSON of the first result of a finished coroutine (NULL: nil), as a
** trace string; 0 with *bad set when it cannot be converted. */
static uint32_t result_json(rt_lagent *lg, int ci, char *err, size_t errn) {
  lg_co *c = &lg->cos[ci];
  lua_State *L = rt_lua_L(lg->x);
  if (c->co.nres < 1 || lua_isnil(c->co.L, -c->co.nres)) return 0;
  lua_pushcfunction(L, p_json);
  lua_pushvalue(c->co.L, -c->co.nres);
  lua_xmove(c->co.L, L, 1);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    snprintf(err, errn, "%s: the return value: %s", c->what, lua_tostring(L, -1));
    lua_pop(L, 1);
    return UINT32_MAX;
  }
  uint32_t id = rt__str(lg->w, lua_tostring(L, -1));
  lua_pop(L, 1);
  return id;
}

static void finish(rt_lagent *lg, int ci, int ok, const char *err, uint32_t result) {
  rt_world *w = lg->w;
  uint32_t a = lg->a;
  lg_co c = lg->cos[ci];
  if (c.kind == LC_FIBER && c.has_ctx) { /* the handle keeps the outcome */
    lua_State *L = rt_lua_L(lg->x);
    const char *v = ok ? (result ? sim_trace_str(&w->s->trace, result) : NULL) : err;
    ctx_push(lg, ci);
    /* raw: the script may give the Fiber metatable a __newindex, which must
    ** not run here (outside any slice: an error in it aborted the process) */
    if (v) { /* set before _ok: a handle with _ok has ended */
      lua_pushvalue(L, LG_S_VALUE);
      lua_pushstring(L, v);
      lua_rawset(L, -3);
    }
    lua_pushvalue(L, LG_S_OK);
    lua_pushboolean(L, ok);
    lua_rawset(L, -3);
    lua_pop(L, 1);
  }
  co_drop(lg, ci);
  if (lg->sync && lg->sync->ci == ci) { /* the caller waits for this slice: it takes the end */
    lg->sync->ended = 1;
    lg->sync->ok = ok;
    snprintf(lg->sync->err, sizeof lg->sync->err, "%s", ok || !err ? "" : err);
    return;
  }
  const char *res = result ? sim_trace_str(&w->s->trace, result) : NULL;
  char rbuf[4096];
  if (res) { /* a copy: the trace's string table may move */
    snprintf(rbuf, sizeof rbuf, "%s", res);
    res = rbuf;
  }
  switch (c.kind) {
    case LC_REQUEST:
    case LC_RPC: rt__user_request_end(w, a, c.msg, ok, ok ? res : err); break;
    case LC_FIBER: {
      rt_fiber *f = live_fiber(lg, c.fiber);
      if (f) rt__fiber_end(w, a, f, ok, ok ? res : err);
      break;
    }
    case LC_HOOK: rt__hook_finish(w, a, ok, err, c.made_fiber); break;
    case LC_ONSTART: rt__onstart_finish(w, a, ok, err); break;
    case LC_SCHEDULE: rt__schedule_end(w, a, c.fiber, ok, err); break; /* c.fiber: the row */
    case LC_CHATREC: rt__chat_recovery_end(w, a, 0, NULL); break; /* it threw (ok: chat_done) */
    default: break; /* onAlarm: its error is only reported */
  }
}

/* ---- commands a coroutine yields ---------------------------------------- */

/* The coroutine a timer's arg names (actor << 40 | coroutine seq): its
** agent state and *ci, or NULL / -1 when the actor or coroutine is gone. */
static rt_lagent *lg_of_timer(rt_world *w, uint64_t arg, int *ci) {
  uint32_t a = (uint32_t)(arg >> 40);
  rt_lagent *lg = RT_MEM(w, a) ? LG_OF_MEM(RT_MEM(w, a)) : NULL;
  *ci = lg ? co_by_seq(lg, (int64_t)(arg & ((1ULL << 40) - 1))) : -1;
  return lg;
}

static void wake(sim *s, void *ctx, uint64_t arg) {
  int ci;
  rt_lagent *lg = lg_of_timer(ctx, arg, &ci);
  (void)s;
  if (ci >= 0) drive(lg, ci, run(lg, ci, 0, 0));
}

static uint32_t actor_by_id(rt_world *w, const char *id) {
  for (uint32_t i = 0; i < w->n_actors; i++)
    if (!strcmp(w->actors[i].spec.id, id)) return i;
  return RT_NO_ACTOR;
}

/* Pushes (ok, value-or-error) of an ended fiber on the main thread. */
static void push_outcome(rt_lagent *lg, const lg_end *e) {
  lua_State *L = rt_lua_L(lg->x);
  lua_pushboolean(L, e->ok);
  const char *v = e->val ? sim_trace_str(&lg->w->s->trace, e->val) : NULL;
  if (!v) lua_pushnil(L);
  else if (!e->ok) lua_pushstring(L, v);
  else if (rt_lua_json_decode(L, v, strlen(v))) {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
}

/* runFiber's work for coroutine ci, whose thread co holds the name at -2
** and fn on top: the row, keepAlive, the handle, and the body's first slice
** (or, inside a startup hook, after the gate opens). Leaves the handle (nil
** when no fiber was made) on top of the main stack and returns 0, or returns
** LG_GONE (the incarnation died: nothing left there; free lg at depth 0).
** Inlined into both callers: drive's frame nests once per fiber that starts
** a fiber in its first slice, and a frame of its own here made that chain
** 20 % deeper in C stack (-fstack-usage). */
__attribute__((always_inline)) static inline int fiber_work(rt_lagent *lg, int ci, lua_State *co) {
  rt_world *w = lg->w;
  uint32_t a = lg->a;
  rt_mem *m = RT_MEM(w, a);
  lua_State *L = rt_lua_L(lg->x);
  char name[64];
  size_t nl;
  const char *nm = lua_tolstring(co, -2, &nl);
  if (nl >= sizeof name) nl = sizeof name - 1;
  memcpy(name, nm, nl);
  name[nl] = 0;
  int64_t from = 0;
  int defer = 0;
  if (lg->cos[ci].kind == LC_HOOK && m->recovery_in_progress && m->orphan_idx < m->n_orphans) {
    from = m->orphans[m->orphan_idx].id;
    defer = m->orphan_source == 1 && m->n_pending_resume < RT_MAX_ORPHANS;
    lg->cos[ci].made_fiber = 1;
  }
  rt_fiber *f = rt__fiber_create_named(w, a, name, from);
  if (!f) {
    lua_pushnil(L);
    return 0;
  }
  f->lua = 1;
  int64_t id = f->id;
  char what[64] = "fiber ";
  memcpy(what + 6, name, nl < 57 ? nl + 1 : 57);
  what[63] = 0;
  int bi = co_new(lg, LC_FIBER, what);
  if (bi < 0) {
    lua_pushnil(L);
    return 0;
  }
  lg->cos[bi].fiber = id;
  lua_xmove(co, L, 1); /* fn: it stays below the handle (the caller's stack
                       ** is cleared when it resumes) */
  lua_createtable(L, 0, 4); /* the handle: {id, name} with the Fiber methods; room for
                               ** the outcome its fiber leaves there (_ok, _value) */
  lua_pushvalue(L, LG_S_ID); /* a new table without a metatable: rawset */
  lua_pushinteger(L, id);
  lua_rawset(L, -3);
  lua_pushvalue(L, LG_S_NAME);
  lua_pushstring(L, name);
  lua_rawset(L, -3);
  lua_pushvalue(L, LG_S_FIBER);
  lua_setmetatable(L, -2);
  ctx_keep(lg, bi); /* the handle stays on the stack */
  if (defer && m->n_pending_resume < RT_MAX_ORPHANS &&
      RT_MEM_ARRAY(m->pending_resume, RT_MAX_ORPHANS)) {
    m->pending_resume[m->n_pending_resume++] = id;
    lua_pushvalue(L, -2); /* fn waits in the registry for rt__lg_fiber_begin */
    lg->cos[bi].fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_remove(L, -2); /* fn */
  } else { /* the body starts now with fn and the handle from the stack (no
            ** registry round trip: callgrind, a scripted fiber's commonest path) */
    lua_rotate(L, -2, 1); /* handle, fn */
    lua_pushvalue(L, -2); /* handle, fn, handle: the last two go to the body */
    lg->depth++; /* a death in the body's slice frees the state below, not in run */
    drive(lg, bi, run(lg, bi, 1, 1));
    lg->depth--;
  }
  if (lg->dead) return LG_GONE; /* the incarnation died: its state goes, untouched */
  if (!RT_MEM(w, a) || LG_OF_MEM(RT_MEM(w, a)) != lg) {
    lua_pop(L, 1);
    return LG_GONE;
  }
  return 0;
}

/* self:runFiber(name, fn) yielded to the host (drive): fiber_work, then the
** caller resumes with the handle. Returns the rc of that resume. */
static int cmd_run_fiber(rt_lagent *lg, int ci) {
  int rc = fiber_work(lg, ci, lg->cos[ci].co.L);
  if (rc && lg->dead && lg->depth == 0) lg_free(lg);
  return rc ? rc : run(lg, ci, 0, 1);
}

static int cmd_call(rt_lagent *lg, int ci) {
  rt_world *w = lg->w;
  lua_State *L = rt_lua_L(lg->x), *co = lg->cos[ci].co.L;
  const char *actor = lua_tostring(co, -3), *method = lua_tostring(co, -2);
  const char *args = lua_tostring(co, -1);
  uint32_t callee = actor ? actor_by_id(w, actor) : RT_NO_ACTOR;
  if (callee == RT_NO_ACTOR || !method) {
    lua_pushboolean(L, 0);
    lua_pushfstring(L, "call: no actor '%s' in the scenario", actor ? actor : "?");
    return run(lg, ci, 0, 2);
  }
  if (rt__user_call(w, lg->a, callee, method, args, lg->cos[ci].seq) < 0) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "call: out of memory");
    return run(lg, ci, 0, 2);
  }
  return RT_LUA_YIELDED + 1000; /* waits for the reply: rt__lg_call_reply */
}

/* ---- runAgentTool: the command, the wake, onAgentToolFinish ------------ */

/* The child of runAgentTool: an actor id, else the first actor (in the
** scenario's order) of that class; never the caller. */
static uint32_t tool_child(rt_lagent *lg, const char *name) {
  rt_world *w = lg->w;
  uint32_t c = actor_by_id(w, name);
  for (uint32_t i = 0; c == RT_NO_ACTOR && i < w->n_actors; i++)
    if (i != lg->a && !strcmp(w->actors[i].spec.cls, name)) c = i;
  return c == lg->a ? RT_NO_ACTOR : c;
}

/* Pushes runAgentTool's result for terminal run `run` on the main thread:
** {runId, status, error} (the SDK's names). */
static void push_tool_result(rt_lagent *lg, int64_t run) {
  lua_State *L = rt_lua_L(lg->x);
  char err[256];
  rt_sdk_actor self = lg_sdk(lg);
  int st = rt_sdk_agent_tool_status(&self, run, err, sizeof err);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, run);
  lua_setfield(L, -2, "runId");
  lua_pushstring(L, st >= 0 ? rt_toolrun_status_name(st) : "unknown");
  lua_setfield(L, -2, "status");
  if (err[0]) {
    lua_pushstring(L, err);
    lua_setfield(L, -2, "error");
  }
}

/* self:runAgentTool(child, input, opts): starts (or meets) the run through
** rt_sdk_run_agent_tool; a run already terminal resumes the caller at once
** with its stored result, an open one when it ends (lg_tool_terminal). */
static int cmd_run_agent_tool(rt_lagent *lg, int ci) {
  rt_world *w = lg->w;
  uint32_t a = lg->a;
  lua_State *L = rt_lua_L(lg->x), *co = lg->cos[ci].co.L;
  const char *name = lua_tostring(co, -4);
  rt_sdk_tool_opts o = {lua_tointeger(co, -2), lua_tointeger(co, -1)};
  uint32_t child = name ? tool_child(lg, name) : RT_NO_ACTOR;
  if (child == RT_NO_ACTOR) {
    lua_pushboolean(L, 0);
    lua_pushfstring(L, "runAgentTool: no other actor or class '%s' in the scenario",
                    name ? name : "?");
    return run(lg, ci, 0, 2);
  }
  rt_sdk_actor self = lg_sdk(lg);
  int status = -1;
  int64_t id = rt_sdk_run_agent_tool(&self, child, &o, &status);
  if (!RT_MEM(w, a) || LG_OF_MEM(RT_MEM(w, a)) != lg) return LG_GONE; /* died in a write */
  if (id < 0) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "runAgentTool: the tool-run model refused the run");
    return run(lg, ci, 0, 2);
  }
  if (status >= 0 && RT_TR_IS_TERMINAL(status)) { /* stored, or an error row at once */
    lua_pushboolean(L, 1);
    push_tool_result(lg, id);
    return run(lg, ci, 0, 2);
  }
  lg->cos[ci].tool = id;
  return RT_LUA_YIELDED + 1000; /* waits for the run's end */
}

/* A run the coroutine awaited ended: it resumes with the result. */
static void wake_tool(sim *s, void *ctx, uint64_t arg) {
  int ci;
  rt_lagent *lg = lg_of_timer(ctx, arg, &ci);
  (void)s;
  if (ci < 0 || !lg->cos[ci].tool) return;
  int64_t run_id = lg->cos[ci].tool;
  lg->cos[ci].tool = 0;
  lua_pushboolean(rt_lua_L(lg->x), 1);
  push_tool_result(lg, run_id);
  drive(lg, ci, run(lg, ci, 0, 2));
}

/* rt__toolrun_on_terminal listener: the coroutines awaiting `run` resume
** after the current event (a settled promise runs its continuation later,
** never inside _finishAgentToolRun), oldest slot first. */
static void lg_tool_terminal(rt_world *w, uint32_t a, int64_t run_id, int status) {
  rt_mem *m = RT_MEM(w, a);
  rt_lagent *lg = m ? LG_OF_MEM(m) : NULL;
  (void)status;
  for (int ci = 0; lg && ci < lg->n_cos; ci++)
    if (lg->cos[ci].used && lg->cos[ci].tool == run_id)
      sim_after(w->s, 0, m->inc.dom, wake_tool, w, ((uint64_t)a << 40) | (uint64_t)lg->cos[ci].seq);
}

int rt__lg_tool_register(void) { return rt__toolrun_on_terminal(lg_tool_terminal); }

rt_uc_status rt__lg_tool_finish(rt_world *w, uint32_t a, int64_t run_id, int status,
                                const char *error) {
  char ebuf[256]; /* a copy: making the state interns strings, which may move the trace's */
  snprintf(ebuf, sizeof ebuf, "%s", error ? error : "");
  rt_lagent *lg = lg_get(w, a);
  if (!lg || !push_callback(lg, "onAgentToolFinish")) return RT_UC_ABSENT;
  error = ebuf;
  lua_State *L = rt_lua_L(lg->x);
  int ci = co_new(lg, LC_SYNC, "onAgentToolFinish");
  if (ci < 0) {
    lua_pop(L, 1);
    return RT_UC_THREW;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, lg->self_ref);
  lua_createtable(L, 0, 3); /* run: {runId, status, error} */
  lua_pushinteger(L, run_id);
  lua_setfield(L, -2, "runId");
  lua_pushstring(L, rt_toolrun_status_name(status));
  lua_setfield(L, -2, "status");
  if (error && *error) {
    lua_pushstring(L, error);
    lua_setfield(L, -2, "error");
  }
  int rc = run(lg, ci, 1, 2);
  if (rc == LG_GONE) return RT_UC_THREW;
  if (rc == RT_LUA_DONE) {
    co_drop(lg, ci);
    return RT_UC_DONE;
  }
  char msg[256];
  snprintf(msg, sizeof msg, "%s: onAgentToolFinish is synchronous: it cannot wait "
           "(revenant.work, runAgentTool, runFiber, call); start a fiber for that",
           script_of(w, a)->name);
  sync_failed(lg, ci, rc, msg);
  return RT_UC_THREW;
}

/* Handles what coroutine ci did in its last slice, and whatever follows at
** once, until it waits or ends. */
/* onChatRecovery (ci) returned: its options are the coroutine's two
** results (the prelude's chat_recovery made them). To the caller waiting
** for its first slice, else to the chat model (rt__chat_recovery_end). */
static void chat_done(rt_lagent *lg, int ci) {
  lg_co *c = &lg->cos[ci];
  rt_uc_chat_opts o = {c->co.nres >= 2 && lua_toboolean(c->co.L, -c->co.nres),
                       c->co.nres >= 2 && lua_toboolean(c->co.L, -c->co.nres + 1), NULL};
  co_drop(lg, ci);
  if (lg->sync && lg->sync->ci == ci) {
    lg->sync->ended = lg->sync->ok = 1;
    lg->sync->persist = o.persist;
    lg->sync->cont = o.cont;
    return;
  }
  rt__chat_recovery_end(lg->w, lg->a, 1, &o);
}

static void drive(rt_lagent *lg, int ci, int rc) {
  rt_world *w = lg->w;
  char err[600];
  for (;;) {
    if (rc == LG_GONE || rc == RT_LUA_YIELDED + 1000) return;
    lg_co *c = &lg->cos[ci];
    if (rc == RT_LUA_DONE && c->kind == LC_CHATREC) {
      chat_done(lg, ci);
      return;
    }
    if (rc == RT_LUA_DONE) {
      uint32_t res = result_json(lg, ci, err, sizeof err);
      if (res == UINT32_MAX) finish(lg, ci, 0, err, 0);
      else finish(lg, ci, 1, NULL, res);
      return;
    }
    if (rc != RT_LUA_YIELDED) {
      report_error(lg, ci, rc);
      first_line(lg, err, sizeof err);
      finish(lg, ci, 0, err, 0);
      return;
    }
    lua_State *co = c->co.L, *L = rt_lua_L(lg->x);
    if (c->co.nres == 1 && lua_touserdata(co, -1) == (const void *)&gone_token) return;
    int n = c->co.nres - 1; /* the command and its arguments, after the token */
    const void *tok = n >= 1 && lua_islightuserdata(co, -c->co.nres)
                          ? lua_touserdata(co, -c->co.nres) : NULL;
    if (tok == (const void *)&run_fiber_token && n == 2) { /* name, fn */
      rc = cmd_run_fiber(lg, ci);
      continue;
    }
    const char *cmd = tok == (const void *)&yield_token ? lua_tostring(co, -n) : NULL;
    if (cmd && !strcmp(cmd, "work") && n == 2) {
      int64_t d = lua_tointeger(co, -1);
      sim_after(w->s, d, RT_MEM(w, lg->a)->inc.dom, wake, w, ((uint64_t)lg->a << 40) | (uint64_t)c->seq);
      return;
    }
    if (cmd && !strcmp(cmd, "await") && n == 2) {
      int64_t id = lua_tointeger(co, -1);
      if (live_fiber(lg, id)) {
        c->await = id;
        return;
      }
      /* an ended fiber's handle carries its outcome (the prelude reads it);
      ** one that ended otherwise cannot be waited for */
      lua_pushboolean(L, 0);
      lua_pushfstring(L, "await: fiber %I is not running in this incarnation", (lua_Integer)id);
      rc = run(lg, ci, 0, 2);
      continue;
    }
    if (cmd && !strcmp(cmd, "call") && n == 4) {
      rc = cmd_call(lg, ci);
      continue;
    }
    if (cmd && !strcmp(cmd, "runAgentTool") && n == 5) {
      rc = cmd_run_agent_tool(lg, ci);
      continue;
    }
    /* a bare coroutine.yield reached the host */
    (void)L;
    snprintf(err, sizeof err, "%s: coroutine.yield() outside a coroutine the script made (wait "
             "with revenant.work or revenant.sleep)", c->what);
    finish(lg, ci, 0, err, 0);
    return;
  }
}

/* ---- entry points for the agent layer ----------------------------------- */

/* Starts mod[callback](self, args...) as a coroutine of kind `kind` with
** nargs values already pushed above nothing (the caller pushed them after
** the function and self: see start_callback). */
static int start_callback(rt_lagent *lg, int kind, const char *callback, int64_t msg,
                          const char *args_json, int spread) {
  lua_State *L = rt_lua_L(lg->x);
  if (!push_callback(lg, callback)) return -1;
  int ci = co_new(lg, kind, callback);
  if (ci < 0) {
    lua_pop(L, 1);
    return -1;
  }
  lg->cos[ci].msg = msg;
  lua_pushvalue(L, LG_S_SELF);
  int nargs = 1;
  if (args_json) {
    if (rt_lua_json_decode(L, args_json, strlen(args_json))) {
      lua_pop(L, 1);
      lua_pushnil(L);
    }
    if (spread && lua_istable(L, -1) && lua_rawlen(L, -1) > 0) {
      int t = lua_gettop(L);
      lua_Integer n = (lua_Integer)lua_rawlen(L, t);
      luaL_checkstack(L, (int)n + 2, "arguments");
      for (lua_Integer i = 1; i <= n; i++) lua_rawgeti(L, t, i);
      lua_remove(L, t);
      nargs += (int)n;
    } else {
      nargs++;
    }
  }
  drive(lg, ci, run(lg, ci, 1, nargs));
  return 0;
}

int rt__lg_method(rt_world *w, uint32_t a, int rpc, const char *method, const char *args,
                  int64_t msg) {
  rt_lagent *lg = lg_get(w, a);
  return lg && start_callback(lg, rpc ? LC_RPC : LC_REQUEST, method, msg, args, 1) == 0;
}

void rt__lg_fiber_begin(rt_world *w, uint32_t a, int64_t id) {
  rt_lagent *lg = lg_get(w, a);
  if (!lg) return;
  for (int ci = 0; ci < lg->n_cos; ci++) {
    lg_co *c = &lg->cos[ci];
    if (!c->used || c->kind != LC_FIBER || c->fiber != id || c->started) continue;
    lua_State *L = rt_lua_L(lg->x);
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->fn_ref);
    ctx_push(lg, ci);
    drive(lg, ci, run(lg, ci, 1, 1));
    return;
  }
}

void rt__lg_fiber_ended(rt_world *w, uint32_t a, int64_t id, int ok, const char *result) {
  rt_lagent *lg = RT_MEM(w, a) ? LG_OF_MEM(RT_MEM(w, a)) : NULL;
  if (!lg) return;
  lg_end e = {id, ok, result ? rt__str(w, result) : 0};
  /* awaiters, oldest coroutine slot first */
  for (int ci = 0; ci < lg->n_cos; ci++) {
    if (!lg->cos[ci].used || lg->cos[ci].await != id) continue;
    lg->cos[ci].await = 0;
    push_outcome(lg, &e);
    drive(lg, ci, run(lg, ci, 0, 2));
    if (!RT_MEM(w, a) || LG_OF_MEM(RT_MEM(w, a)) != lg) return;
  }
}

int rt__lg_hook(rt_world *w, uint32_t a, const rt_uc_recovery *o, const char *snap) {
  rt_lagent *lg = lg_get(w, a);
  if (!lg || !push_callback(lg, "onFiberRecovered")) return 0;
  lua_State *L = rt_lua_L(lg->x);
  lua_pop(L, 1);
  /* onFiberRecovered(self, ctx) */
  int ci = co_new(lg, LC_HOOK, "onFiberRecovered");
  if (ci < 0) return 0;
  push_callback(lg, "onFiberRecovered");
  push_h(lg, "self");
  push_h(lg, "recovery");
  lua_pushinteger(L, o->id);
  lua_pushstring(L, o->name);
  lua_pushstring(L, snap ? snap : "null");
  lua_pushinteger(L, o->created_at_ms);
  if (lua_pcall(L, 4, 1, 0) != LUA_OK) { /* a snapshot that is not JSON: null */
    lua_pop(L, 1);
    lua_newtable(L);
  }
  drive(lg, ci, run(lg, ci, 1, 2));
  return 1;
}

int rt__lg_onstart(rt_world *w, uint32_t a) {
  rt_lagent *lg = lg_get(w, a);
  if (!lg || !push_callback(lg, "onStart")) return 0;
  lua_pop(rt_lua_L(lg->x), 1);
  if (start_callback(lg, LC_ONSTART, "onStart", 0, NULL, 0) < 0) return 0;
  return 1;
}

void rt__lg_call_reply(rt_world *w, uint32_t a, int64_t key, int ok, const char *value) {
  rt_lagent *lg = RT_MEM(w, a) ? LG_OF_MEM(RT_MEM(w, a)) : NULL;
  int ci = lg ? co_by_seq(lg, key) : -1;
  if (ci < 0) return;
  lua_State *L = rt_lua_L(lg->x);
  lua_pushboolean(L, ok);
  if (value) lua_pushstring(L, value);
  else if (ok) lua_pushliteral(L, "null");
  else lua_pushliteral(L, "the call failed (the callee died or the call was dropped)");
  drive(lg, ci, run(lg, ci, 0, 2));
}

/* ---- onAlarm, schedule callbacks, onChatRecovery, chat calls -----------
** (issue #13: the chat, alarm and schedule surface; docs/scripting.md) */

/* The prelude's second part: the chat calls on self, and the wrappers that
** shape a schedule callback's and onChatRecovery's arguments and results. */
static const char prelude_chat[] =
    "local P, H = ... local S = H.self\n"
    "local Agent = getmetatable(H.self)\n"
    "-- f(...) whose error names the line of the script that called the method\n"
    "-- (the method must call it without a tail call: level 3 is the script)\n"
    "function H.at_caller(f, ...)\n"
    "  local ok, r = pcall(f, ...)\n"
    "  if not ok then error(r, 3) end\n"
    "  return r\n"
    "end\n"
    "function Agent:continueLastTurn() local r = H.at_caller(P.continue_last_turn) return r end\n"
    "function Agent:cancelChat() local r = H.at_caller(P.chat_cancel) return r end\n"
    "function Agent:saveMessages(text) if self~=S then P.dot'saveMessages'end\n"
    "  if type(text) ~= 'string' or text == '' then\n"
    "    error('saveMessages: the user message must be a non-empty string, not ' .. type(text), 2)\n"
    "  end\n"
    "  local id = H.at_caller(P.save_messages, text)\n"
    "  return id\n"
    "end\n"
    "function H.schedule_call(fn, self, payload, schedule)\n"
    "  return fn(self, P.unjson(payload), schedule)\n"
    "end\n"
    "local known = {persist = true, continue = true}\n"
    "function H.chat_recovery(fn, self, ctx, msgs)\n"
    "  ctx = P.unjson(ctx) or {}\n"
    "  local parts = {}\n"
    "  if (ctx.partialParts or 0) > 0 then parts[1] = {type = 'text', text = ctx.partialText} end\n"
    "  ctx.partialParts, ctx.messages = parts, msgs\n"
    "  local o = fn(self, ctx)\n"
    "  if o == nil then return true, true end\n"
    "  if type(o) ~= 'table' then\n"
    "    error('onChatRecovery must return nil or a table of options ({persist = .., continue = ..}), not ' .. type(o), 0)\n"
    "  end\n"
    "  for k, v in pairs(o) do\n"
    "    if not known[k] then error(\"onChatRecovery returned an unknown option '\" .. tostring(k) .. \"' (persist, continue)\", 0) end\n"
    "    if type(v) ~= 'boolean' then error('onChatRecovery: option ' .. k .. ' must be a boolean, not ' .. type(v), 0) end\n"
    "  end\n"
    "  return o.persist ~= false, o.continue ~= false\n"
    "end\n"
    /* Below the rest: the prelude's line numbers show in tracebacks that
    ** traces record, so what is added goes last. */
    "-- the first key of options table o that `known` lacks (the sandbox's\n"
    "-- pairs: in its defined order), as text, or nil\n"
    "function H.unknown_option(o, known)\n"
    "  for k in pairs(o) do\n"
    "    if not known[k] then return type(k) == 'string' and k or '[' .. type(k) .. ']' end\n"
    "  end\n"
    "end\n"
    "local opts_known = {sched = {idempotent = true}, tool = {runId = true, work = true}}\n"
    "local opts_hint = {sched = '(idempotent is the one modelled)', tool = 'in opts (runId, work)'}\n"
    "-- fn's options table o (a table or not: fn checks its type) has only known keys;\n"
    "-- else an error at the script's line (fn must be called by the script)\n"
    "function H.check_options(fn, o, set)\n"
    "  local bad = type(o) == 'table' and H.unknown_option(o, opts_known[set])\n"
    "  if bad then error(fn .. \": unknown option '\" .. bad .. \"' \" .. opts_hint[set], 3) end\n"
    "end\n";

/* P.continue_last_turn() -> "started" | "skipped" (continueLastTurn()) */
static int p_continue_last_turn(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  rt_sdk_actor me = lg_sdk(lg);
  int rc = rt_sdk_continue_last_turn(&me);
  if (lg->dead) return luaL_error(L, "this actor's incarnation has ended");
  if (rc < 0) return luaL_error(L, "continueLastTurn: this actor has no chat (AIChatAgent) state");
  lua_pushstring(L, rc ? "started" : "skipped");
  return 1;
}

/* P.save_messages(text) -> the request id of its turn (saveMessages) */
static int p_save_messages(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  rt_sdk_actor me = lg_sdk(lg);
  int64_t req = rt_sdk_save_messages(&me, luaL_checkstring(L, 1));
  if (lg->dead) return luaL_error(L, "this actor's incarnation has ended");
  if (req < 0) return luaL_error(L, "saveMessages: this actor has no chat (AIChatAgent) state");
  lua_pushinteger(L, req);
  return 1;
}

/* P.chat_cancel() -> true if a running turn was cancelled */
static int p_chat_cancel(lua_State *L) {
  rt_lagent *lg = lg_of(L);
  rt_sdk_actor me = lg_sdk(lg);
  int rc = rt_sdk_chat_cancel(&me);
  if (lg->dead) return luaL_error(L, "this actor's incarnation has ended");
  if (rc < 0) return luaL_error(L, "cancelChat: this actor has no chat (AIChatAgent) state");
  lua_pushboolean(L, rc == 1);
  return 1;
}

static const luaL_Reg prims_chat[] = {{"continue_last_turn", p_continue_last_turn},
                                      {"save_messages", p_save_messages},
                                      {"chat_cancel", p_chat_cancel},
                                      {"unjson", p_unjson},
                                      {"dot", p_dot},
                                      {NULL, NULL}};

/* Runs the second prelude on a new state (0, or -1 with the error on the
** stack). */
static int load_prelude_chat(rt_lagent *lg) {
  lua_State *L = rt_lua_L(lg->x);
  if (luaL_loadbufferx(L, prelude_chat, sizeof prelude_chat - 1, "=revenant", "t") != LUA_OK)
    return -1;
  luaL_newlibtable(L, prims_chat);
  lua_pushlightuserdata(L, lg);
  luaL_setfuncs(L, prims_chat, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, lg->h_ref);
  return lua_pcall(L, 2, 0, 0) == LUA_OK ? 0 : -1;
}

int rt__lg_alarm(rt_world *w, uint32_t a) {
  rt_lagent *lg = lg_get(w, a);
  if (!lg || !push_callback(lg, "onAlarm")) return RT_UC_ABSENT;
  lua_pop(rt_lua_L(lg->x), 1);
  start_callback(lg, LC_ALARM, "onAlarm", 0, NULL, 0);
  return RT_UC_DETACHED;
}

/* Runs coroutine ci (its function and nargs arguments pushed) until it
** ends or waits; *sy tells whether it ended in this slice, and how.
** Returns -1 when the incarnation died meanwhile (lg is gone). */
static int run_waited(rt_lagent *lg, int ci, int nargs, lg_sync *sy) {
  memset(sy, 0, sizeof *sy);
  sy->ci = ci;
  lg_sync *prev = lg->sync;
  lg->sync = sy;
  rt_world *w = lg->w;
  rt_mem *m = RT_MEM(w, lg->a);
  drive(lg, ci, run(lg, ci, 1, nargs));
  if (RT_MEM(w, lg->a) != m || !m || LG_OF_MEM(m) != lg) return -1; /* died: lg is gone */
  lg->sync = prev;
  return 0;
}

/* Pushes the schedule row being run as the SDK's Schedule object (id,
** callback, type, time; cron or intervalSeconds), plus attempt (tryN's,
** from 1). */
static void push_schedule(rt_lagent *lg, const rt_sched_row *r, int attempt) {
  lua_State *L = rt_lua_L(lg->x);
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, r->id);
  lua_setfield(L, -2, "id");
  lua_pushstring(L, r->callback);
  lua_setfield(L, -2, "callback");
  lua_pushstring(L, r->type);
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, r->time_s);
  lua_setfield(L, -2, "time");
  if (!strcmp(r->type, "cron")) {
    lua_pushstring(L, r->cron);
    lua_setfield(L, -2, "cron");
  } else if (!strcmp(r->type, "interval")) {
    lua_pushinteger(L, r->interval_s);
    lua_setfield(L, -2, "intervalSeconds");
  }
  lua_pushinteger(L, attempt);
  lua_setfield(L, -2, "attempt");
}

int rt__lg_schedule_call(rt_world *w, uint32_t a, const char *callback, const char *payload,
                         rt_uc_out *out) {
  rt_lagent *lg = lg_get(w, a);
  rt_mem *m = RT_MEM(w, a);
  lg_sync sy;
  if (!lg || !m || m->due_idx >= m->n_due || !push_callback(lg, callback)) return RT_UC_ABSENT;
  lua_State *L = rt_lua_L(lg->x);
  int ci = co_new(lg, LC_SCHEDULE, callback);
  if (ci < 0) {
    lua_pop(L, 1);
    snprintf(out->value, sizeof out->value, "%s: out of memory", callback);
    return RT_UC_THREW;
  }
  lg->cos[ci].fiber = m->due[m->due_idx].id; /* the row, for rt__schedule_end */
  push_h(lg, "schedule_call");
  lua_insert(L, -2); /* schedule_call, fn */
  lua_rawgeti(L, LUA_REGISTRYINDEX, lg->self_ref);
  if (payload) lua_pushstring(L, payload);
  else lua_pushnil(L);
  push_schedule(lg, &m->due[m->due_idx], m->sched_attempt);
  if (run_waited(lg, ci, 4, &sy)) return RT_UC_DETACHED; /* died: the alarm is gone too */
  if (!sy.ended) return RT_UC_DETACHED;                   /* waits: rt__schedule_end */
  snprintf(out->value, sizeof out->value, "%s", sy.err);
  return sy.ok ? RT_UC_DONE : RT_UC_THREW;
}

/* Pushes ctx.messages: the chat's messages so far as {id, role, text}. */
static void push_messages(rt_lagent *lg) {
  lua_State *L = rt_lua_L(lg->x);
  enum { CAP = 64 };
  rt_chat_message *ms = malloc(CAP * sizeof *ms);
  int n = ms ? rt_chat_messages(lg->w, lg->a, ms, CAP) : 0;
  if (n > CAP) n = CAP;
  lua_createtable(L, n > 0 ? n : 0, 0);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, ms[i].id);
    lua_setfield(L, -2, "id");
    lua_pushstring(L, ms[i].role == 1 ? "user" : "assistant");
    lua_setfield(L, -2, "role");
    lua_pushstring(L, ms[i].text);
    lua_setfield(L, -2, "text");
    lua_rawseti(L, -2, i + 1);
  }
  free(ms);
}

int rt__lg_chat_recovery(rt_world *w, uint32_t a, const rt_uc_chat_ctx *ctx,
                         rt_uc_chat_opts *opts) {
  rt_lagent *lg = lg_get(w, a);
  lg_sync sy;
  if (!lg || !push_callback(lg, "onChatRecovery")) return RT_UC_ABSENT;
  lua_State *L = rt_lua_L(lg->x);
  int ci = co_new(lg, LC_CHATREC, "onChatRecovery");
  if (ci < 0) {
    lua_pop(L, 1);
    return RT_UC_THREW;
  }
  push_h(lg, "chat_recovery");
  lua_insert(L, -2); /* chat_recovery, fn */
  lua_rawgeti(L, LUA_REGISTRYINDEX, lg->self_ref);
  lua_pushstring(L, ctx->context ? ctx->context : "null");
  push_messages(lg);
  if (run_waited(lg, ci, 4, &sy)) return RT_UC_THREW; /* died: the caller sees it */
  if (!sy.ended) return RT_UC_DETACHED; /* waits: it ends in rt__chat_recovery_end */
  if (!sy.ok) return RT_UC_THREW;       /* reported by drive */
  opts->persist = sy.persist;
  opts->cont = sy.cont;
  return RT_UC_DONE;
}

int rt_invoke_at(rt_world *w, uint32_t a, const char *method, const char *args_json,
                 int64_t at_us) {
  rt_msg m = {0};
  if (!method || !*method || a >= w->n_actors) return -1;
  m.kind = MSG_INVOKE;
  m.entry = RT_ENTRY_FETCH;
  m.str = rt__str(w, method);
  m.arg = args_json ? rt__str(w, args_json) : 0;
  return rt__deliver_at(w, a, &m, at_us);
}

/* The script's extension of the agent core: only its state's life (the Lua
** state of an incarnation, the world's scripts) and the user-SQL store op.
** Its callbacks, methods, calls and replies go through the user-code table
** (rt_uc_lua.c). */
rt_agent_ext rt__lua_ext = {
    .name = "lua",
    .store = &rt__lua_store,
    .mem_free = lg_mem_free,
    .world_free = lg_world_free,
};
