/*
** rt_models.h: the models' floor inside runtime/ (rt_toolrun.c,
** rt_legacy.c, rt_executor.c, rt_thread.c, rt_chat.c) and the user-code
** implementations (rt_uc_declarative.c, rt_uc_lua.c). They stand on the
** agent SDK core (rt_agent.h) and plug into it through their extensions
** (rt_agent_ext); the composition root (rt_models.c) registers them. What
** one model offers another (chat calls runAgentTool) is declared here. Not
** for use outside runtime/.
*/
#ifndef RT_MODELS_H
#define RT_MODELS_H

#include <stdint.h>

#include "runtime/rt_agent.h"

/* Each model's extension (registered by rt_models.c, in this order). */
extern rt_agent_ext rt__legacy_ext, rt__toolrun_ext, rt__exec_ext, rt__thread_ext, rt__chat_ext;

/* The user-code implementations (rt_usercode.h). */
extern const rt_usercode rt__uc_declarative; /* policies + step programs */
extern const rt_usercode rt__uc_lua;         /* Lua scripts (issue #13 item 2) */

/* 1 if JSON text `snap` (NULL: no snapshot) is an object with a top-level
** member named `field`; members of nested objects and strings that look
** like keys do not count. The declarative policies' require_field. */
int rt__snap_has_field(const char *snap, const char *field);

/* ---- rt_toolrun.c: runAgentTool (reference A.11; issue #15) --------------- */

/* runAgentTool(child) from the user's code, not awaited: a fresh run whose
** child works work_us. */
void rt__toolrun_start(rt_world *w, uint32_t a, uint32_t child, int64_t work_us);
/* runAgentTool from a chat turn whose tool call is `call` (the toolCallId
** "call-<call>"): a fresh run, or with stable ids (#1640) the run
** RT_TR_STABLE_BASE + call, re-attached if it exists and is open. Returns
** the run id, or -1; *stored_status is the terminal status of a stored
** run (its result is returned at once), else -1 and the run's end reaches
** the listeners of rt__toolrun_on_terminal. */
#define RT_TR_STABLE_BASE 1000000000000LL
int64_t rt__toolrun_call(rt_world *w, uint32_t a, uint32_t child, int64_t work_us,
                         int64_t call, int *stored_status);
/* Calls fn(w, a, run, status) whenever a tool run of actor a becomes
** terminal (after onAgentToolFinish); at most 4 listeners, registered once
** per process. 0 or -1. */
int rt__toolrun_on_terminal(void (*fn)(rt_world *w, uint32_t a, int64_t run, int status));
/* Status of tool run `run` on actor a (-1 none) and its child actor. */
int rt__toolrun_get(rt_world *w, uint32_t a, int64_t run, uint32_t *child);
/* Run ids a plain runAgentTool names itself ("run_id": N is run
** RT_TR_USER_BASE + N; issue #15). */
#define RT_TR_USER_BASE 2000000000000LL
/* Registers the tool-run SDK calls in rt__model_calls (abort, open runs);
** once per process, before the first world. 0 or -1. */
int rt__toolrun_register(void);

/* ---- rt_luaagent.c: Lua-scripted agents (issue #13) ----------------------
** A scripted actor's callbacks reach the core through its user-code table
** (rt_uc_lua.c: onStart, a method by request or RPC and the replies to its
** calls, onFiberRecovered, a fiber body, a fiber's end, onAlarm, schedule
** callbacks, onChatRecovery, onAgentToolFinish); detached ones end through
** the core's *_finish / *_end calls (rt_agent.h). Its extension rt__lua_ext
** keeps only the script state's life (the Lua state per incarnation, the
** world's scripts) and the user-SQL store op. */
extern rt_agent_ext rt__lua_ext;
/* The script's onAlarm: RT_UC_ABSENT if it has none, else RT_UC_DETACHED
** (it runs as a coroutine; its errors are reported, alarm() goes on). */
int rt__lg_alarm(rt_world *w, uint32_t a);
/* The script's schedule callback `callback(self, payload, schedule)` for
** the row being run: RT_UC_ABSENT if the script has no such function; DONE
** or THREW (message in out->value) when it ended at once; RT_UC_DETACHED
** when it waits (it ends in rt__schedule_end). */
int rt__lg_schedule_call(rt_world *w, uint32_t a, const char *callback, const char *payload,
                         rt_uc_out *out);
/* The script's onChatRecovery(ctx): RT_UC_ABSENT if it has none; DONE with
** *opts filled from the options it returned; THREW when it threw or
** returned something that is not options (reported as script_error; the
** caller uses the SDK's defaults); RT_UC_DETACHED when it waits (it ends in
** rt__chat_recovery_end). */
int rt__lg_chat_recovery(rt_world *w, uint32_t a, const rt_uc_chat_ctx *ctx,
                         rt_uc_chat_opts *opts);
/* Starts the script's function `method` (args: a JSON array spread into
** its arguments, or NULL) for message msg, a request (rpc 0) or an RPC (1):
** 1 started (it ends in rt__user_request_end), 0 the script has no such
** function. */
int rt__lg_method(rt_world *w, uint32_t a, int rpc, const char *method, const char *args,
                  int64_t msg);
/* The reply to the script's self:call `key` (rt__user_call): its coroutine
** goes on with (ok, value). */
void rt__lg_call_reply(rt_world *w, uint32_t a, int64_t key, int ok, const char *value);
int rt__lg_scripted(rt_world *w, uint32_t a);          /* the actor has a script */
/* 1 if the script defines function `callback` (makes the incarnation's
** state on first use; a failure to make it ends the run: rt_world_fatal). */
int rt__lg_has(rt_world *w, uint32_t a, const char *callback);
void rt__lg_fiber_begin(rt_world *w, uint32_t a, int64_t id);  /* a body's first slice */
void rt__lg_fiber_ended(rt_world *w, uint32_t a, int64_t id, int ok, const char *result);
/* Starts the script's onFiberRecovered for orphan o (1; snap: its stored
** snapshot), or 0 when the script has none. It ends in rt__hook_finish. */
int rt__lg_hook(rt_world *w, uint32_t a, const rt_uc_recovery *o, const char *snap);
/* Starts the script's onStart (1; it ends in rt__onstart_finish) or 0. */
int rt__lg_onstart(rt_world *w, uint32_t a);
void rt__lg_fatal(rt_world *w, const char *msg); /* ends the run with msg */

/* Tool runs of Lua-scripted agents. */

/* Subscribes scripts awaiting runAgentTool to runs that end
** (rt__toolrun_on_terminal); once per process. 0 or -1. */
int rt__lg_tool_register(void);
/* The script's onAgentToolFinish(run), synchronous: RT_UC_DONE, RT_UC_THREW
** (an error, or a wait: RT_EV_SCRIPT_ERROR), or RT_UC_ABSENT when the
** script defines none. */
rt_uc_status rt__lg_tool_finish(rt_world *w, uint32_t a, int64_t run, int status,
                                const char *error);

/* ---- rt_chat.c: durable chat turns (seed 000 Layer 3; reference A.12) ------ */

/* The script's onChatRecovery that waited (it answered RT_UC_DETACHED)
** ended: ok 1 with the options it returned, ok 0 when it threw (reported;
** the SDK's defaults apply). The turn's recovery goes on (A.12 steps 4-6)
** and _checkRunFibers with the next row. */
void rt__chat_recovery_end(rt_world *w, uint32_t a, int ok, const rt_uc_chat_opts *opts);
/* Subscribes chat turns to tool runs that end (rt__toolrun_on_terminal);
** once per process, before the first world. 0 or -1. */
int rt__chat_register(void);

#endif
