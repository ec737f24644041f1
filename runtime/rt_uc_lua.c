/*
** rt_uc_lua.c: the user-code table of Lua-scripted agents (issue #13 item 1).
**
** rt_actor_script selects this table for a scripted actor. Its entries call
** the script's callbacks in rt_luaagent.c (onStart, onFiberRecovered, the
** body of a fiber the script started with runFiber) and answer
** RT_UC_DETACHED: a script callback is a coroutine that rt_luaagent.c drives
** itself (its commands, wakes and replies) and whose end it reports through
** rt__onstart_finish, rt__hook_finish and rt__fiber_end. A callback the
** script does not define falls back to the world's default table (the
** declarative menu), so the agent core has no script-specific branch.
** onAlarm (detached: alarm() does not wait for it), a schedule callback
** (DONE or THREW when it ends in its first slice, so that tryN retries a
** throw; else detached, ending in rt__schedule_end), onChatRecovery and
** onAgentToolFinish (synchronous: rt__lg_tool_finish runs the script's
** function to its end inside the call and answers DONE or THREW) are script
** callbacks here too, as are a method by name (on_request with a method:
** an invoke) or by RPC (on_call: another actor's self:call), which end in
** rt__user_request_end, and the replies to the script's own calls
** (call_reply).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_agent.h"
#include "runtime/rt_models.h"

/* The per-incarnation state: the fallback table and its state (the
** script's own state lives in the incarnation's extension slot). */
typedef struct lua_uc {
  const rt_usercode *fb;
  void *fb_st;
} lua_uc;

static void *lua_open(const rt_usercode *uc, rt_sdk_actor *self, const char **err) {
  lua_uc *u = calloc(1, sizeof *u);
  (void)uc;
  if (!u) {
    *err = "out of memory opening a script's user code";
    return NULL;
  }
  u->fb = RT_AW(self->w)->uc_default;
  if (u->fb->open && !(u->fb_st = u->fb->open(u->fb, self, err))) {
    free(u);
    return NULL;
  }
  return u;
}

static void lua_close(void *st) {
  lua_uc *u = st;
  if (!u) return;
  if (u->fb->close) u->fb->close(u->fb_st);
  free(u);
}

static rt_uc_status lua_on_start(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out) {
  lua_uc *u = st;
  if (rt__lg_scripted(self->w, self->a) && rt__lg_onstart(self->w, self->a))
    return RT_UC_DETACHED; /* it ends in rt__onstart_finish */
  if (RT_MEM(self->w, self->a) != self->m) return RT_UC_DETACHED; /* died making the state */
  return u->fb->on_start ? u->fb->on_start(u->fb_st, self, fr, out) : RT_UC_ABSENT;
}

/* A method of the script by name (rpc 0: a request, 1: an RPC); a name it
** does not define is an error. */
static rt_uc_status script_method(rt_sdk_actor *self, int rpc, const char *method,
                                  const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  if (rt__lg_method(self->w, self->a, rpc, method, args, fr->key))
    return RT_UC_DETACHED; /* it ends in rt__user_request_end */
  if (RT_MEM(self->w, self->a) != self->m) return RT_UC_DETACHED; /* died making the state */
  snprintf(out->value, sizeof out->value, "%s is not a method of %s's script", method,
           self->w->actors[self->a].spec.id);
  return RT_UC_THREW;
}

/* A plain request ("") is the fallback's; a named one the script's. */
static rt_uc_status lua_on_request(void *st, rt_sdk_actor *self, const char *method,
                                   const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  lua_uc *u = st;
  if (method && *method && rt__lg_scripted(self->w, self->a))
    return script_method(self, 0, method, args, fr, out);
  return u->fb->on_request ? u->fb->on_request(u->fb_st, self, method, args, fr, out)
                           : RT_UC_ABSENT;
}

static rt_uc_status lua_on_call(void *st, rt_sdk_actor *self, const char *method,
                                const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  lua_uc *u = st;
  if (rt__lg_scripted(self->w, self->a)) return script_method(self, 1, method, args, fr, out);
  return u->fb->on_call ? u->fb->on_call(u->fb_st, self, method, args, fr, out) : RT_UC_ABSENT;
}

static rt_uc_status lua_fiber_body(void *st, rt_sdk_actor *self, const char *name,
                                   const char *snapshot, rt_uc_frame *fr, rt_uc_out *out) {
  lua_uc *u = st;
  rt_fiber *f = rt__fiber_find(self->m, fr->key);
  if (f && f->lua) { /* a body the script gave runFiber: its coroutine */
    rt__lg_fiber_begin(self->w, self->a, fr->key);
    return RT_UC_DETACHED; /* it ends in rt__fiber_end */
  }
  return u->fb->fiber_body ? u->fb->fiber_body(u->fb_st, self, name, snapshot, fr, out)
                           : RT_UC_ABSENT;
}

static rt_uc_status lua_on_fiber_recovered(void *st, rt_sdk_actor *self,
                                           const rt_uc_recovery *ctx, rt_uc_frame *fr,
                                           rt_uc_out *out) {
  lua_uc *u = st;
  if (rt__lg_scripted(self->w, self->a) && rt__lg_has(self->w, self->a, "onFiberRecovered")) {
    /* a copy: interning strings may move the trace's string table */
    char *snap = strdup(ctx->snapshot ? ctx->snapshot : "null");
    rt__hook_call_count(self->w, self->a, ctx->id);
    rt__lg_hook(self->w, self->a, ctx, snap ? snap : "null");
    free(snap);
    return RT_UC_DETACHED; /* it ends in rt__hook_finish */
  }
  if (RT_MEM(self->w, self->a) != self->m) return RT_UC_DETACHED; /* died making the state */
  return u->fb->on_fiber_recovered
             ? u->fb->on_fiber_recovered(u->fb_st, self, ctx, fr, out)
             : RT_UC_ABSENT;
}

static rt_uc_status lua_on_alarm(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out) {
  lua_uc *u = st;
  if (rt__lg_scripted(self->w, self->a)) {
    rt_uc_status how = (rt_uc_status)rt__lg_alarm(self->w, self->a);
    if (how != RT_UC_ABSENT || RT_MEM(self->w, self->a) != self->m) return RT_UC_DETACHED;
  }
  return u->fb->on_alarm ? u->fb->on_alarm(u->fb_st, self, fr, out) : RT_UC_ABSENT;
}

static rt_uc_status lua_on_schedule(void *st, rt_sdk_actor *self, const char *callback,
                                    const char *payload, rt_uc_frame *fr, rt_uc_out *out) {
  lua_uc *u = st;
  if (rt__lg_scripted(self->w, self->a)) { /* callback(self, payload, schedule) */
    rt_uc_status how = (rt_uc_status)rt__lg_schedule_call(self->w, self->a, callback, payload, out);
    if (how != RT_UC_ABSENT) return how;
    if (RT_MEM(self->w, self->a) != self->m) return RT_UC_DETACHED; /* died making the state */
  }
  return u->fb->on_schedule ? u->fb->on_schedule(u->fb_st, self, callback, payload, fr, out)
                            : RT_UC_ABSENT;
}

static rt_uc_status lua_on_chat_recovery(void *st, rt_sdk_actor *self, const rt_uc_chat_ctx *ctx,
                                         rt_uc_chat_opts *opts) {
  lua_uc *u = st;
  if (rt__lg_scripted(self->w, self->a)) {
    rt_uc_status how = (rt_uc_status)rt__lg_chat_recovery(self->w, self->a, ctx, opts);
    if (how != RT_UC_ABSENT || RT_MEM(self->w, self->a) != self->m) return how;
  }
  return u->fb->on_chat_recovery ? u->fb->on_chat_recovery(u->fb_st, self, ctx, opts)
                                 : RT_UC_ABSENT;
}

static rt_uc_status lua_on_agent_tool_finish(void *st, rt_sdk_actor *self, int64_t run,
                                             int status, const char *error) {
  lua_uc *u = st;
  if (rt__lg_scripted(self->w, self->a)) { /* the script's own, if it has one */
    rt_uc_status how = rt__lg_tool_finish(self->w, self->a, run, status, error);
    if (how != RT_UC_ABSENT || RT_MEM(self->w, self->a) != self->m) return how;
  }
  return u->fb->on_agent_tool_finish
             ? u->fb->on_agent_tool_finish(u->fb_st, self, run, status, error)
             : RT_UC_ABSENT;
}

static rt_uc_status lua_tool_run(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out) {
  lua_uc *u = st;
  return u->fb->tool_run ? u->fb->tool_run(u->fb_st, self, fr, out) : RT_UC_ABSENT;
}

/* Only the fallback's continuations are resumed: a script's are detached. */
static rt_uc_status lua_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr, const rt_uc_in *in,
                               rt_uc_out *out) {
  lua_uc *u = st;
  if (u->fb->resume) return u->fb->resume(u->fb_st, self, fr, in, out);
  snprintf(out->value, sizeof out->value, "%s", "no continuation to resume");
  return RT_UC_THREW;
}

static void lua_fiber_ended(void *st, rt_sdk_actor *self, int64_t id, int ok, const char *result) {
  lua_uc *u = st;
  rt__lg_fiber_ended(self->w, self->a, id, ok, result); /* script coroutines awaiting it */
  if (RT_MEM(self->w, self->a) == self->m && u->fb->fiber_ended)
    u->fb->fiber_ended(u->fb_st, self, id, ok, result);
}

static void lua_call_reply(void *st, rt_sdk_actor *self, int64_t key, int ok, const char *value) {
  (void)st; /* only a script calls (self:call): the fallback makes no calls */
  rt__lg_call_reply(self->w, self->a, key, ok, value);
}

static void lua_drop(void *st, rt_uc_frame *fr) {
  lua_uc *u = st;
  if (u->fb->drop) u->fb->drop(u->fb_st, fr);
}

const rt_usercode rt__uc_lua = {
    .name = "lua",
    .open = lua_open,
    .close = lua_close,
    .on_start = lua_on_start,
    .on_request = lua_on_request,
    .on_call = lua_on_call,
    .fiber_body = lua_fiber_body,
    .on_fiber_recovered = lua_on_fiber_recovered,
    .on_alarm = lua_on_alarm,
    .on_schedule = lua_on_schedule,
    .on_chat_recovery = lua_on_chat_recovery,
    .on_agent_tool_finish = lua_on_agent_tool_finish,
    .tool_run = lua_tool_run,
    .resume = lua_resume,
    .fiber_ended = lua_fiber_ended,
    .call_reply = lua_call_reply,
    .drop = lua_drop,
};
