/*
** rt_usercode.h: the one interface through which the agent layer calls
** user code (issue #13 item 1).
**
** Every place where the Agents SDK calls code the user wrote (onStart, a
** request or RPC handler, a fiber body, onFiberRecovered, onAlarm, a
** schedule callback, onChatRecovery, onAgentToolFinish, a sub-agent's tool
** run) goes through one table of function pointers per actor class, the
** way SQLite calls a VFS or Redis calls a module. Three implementations
** plug in here:
**   - declarative (rt_uc_declarative.c): the scenario file's fixed menu,
**     recovery policies (resume | restart | drop | throw) and step programs
**     (work / stash / effect / call / fail / return / read);
**   - the models (chat, executor, thread store): SDK code that itself calls
**     back into user code, registered as the class's tables;
**   - Lua scripts (rt_uc_lua.c over rt_luaagent.c): a script's table of
**     callbacks named as the SDK names them; a callback the script does not
**     define falls back to the world's default table. A script callback is
**     a coroutine the implementation drives itself (RT_UC_DETACHED).
**
** Two kinds of callback:
**   - synchronous: returns (or throws) now, in the turn that called it
**     (onAgentToolFinish; onChatRecovery when it does not wait). Such a callback may call the
**     synchronous SDK functions of rt_sdk.h and nothing that waits.
**   - asynchronous: a continuation. It runs until it finishes (RT_UC_DONE,
**     RT_UC_THREW) or until it must wait, then it yields a *command*
**     (rt_uc_cmd: work, sleep, call, await a fiber, runAgentTool) and the
**     turn ends. When the command completes, the agent layer calls
**     `resume` with the command's result (rt_uc_in), in a new turn. A
**     declarative step program is exactly such a command stream; a Lua
**     callback is a coroutine whose yields are these commands.
**
** A continuation lives in the actor's incarnation: `open` makes the
** per-incarnation state (a Lua state), `close` throws it away when the
** incarnation ends (eviction, restart, crash, SIGKILL), pending
** continuations included, as workerd throws away an isolate. Nothing but
** storage survives a death. `close` is called exactly once per `open`.
**
** Determinism (DESIGN.md): user code sees only virtual time, PRNG streams
** and its own storage through rt_sdk.h; implementations must not read the
** clock, allocate ids by address or iterate hash tables in an order that
** varies between processes.
*/
#ifndef RT_USERCODE_H
#define RT_USERCODE_H

#include <stdint.h>

#include "runtime/rt_sdk.h"

/* How a user callback left off. */
typedef enum rt_uc_status {
  RT_UC_DONE = 0,       /* returned; rt_uc_out.value holds the result
                           (JSON text, "" = undefined) */
  RT_UC_THREW = 1,      /* threw; rt_uc_out.value holds the message */
  RT_UC_YIELD = 2,      /* waits for rt_uc_out.cmd; the turn ends; the agent
                           layer calls `resume` when the command finished */
  RT_UC_ABSENT = 3,     /* the class does not define this callback: the SDK
                           does what it does without one */
  RT_UC_DETACHED = 4    /* the implementation drives this invocation itself
                           (a Lua coroutine with its own commands) and reports
                           its end through the agent layer (rt_agent.h:
                           rt__fiber_end, rt__hook_finish, rt__onstart_finish,
                           rt__user_request_end; rt_models.h:
                           rt__chat_recovery_end);
                           the caller does nothing more. Async entries only. */
} rt_uc_status;

/* What an asynchronous callback waits for (each yield ends a turn). */
typedef enum rt_uc_cmd_kind {
  RT_UC_CMD_WORK = 1,   /* min_us..max_us of virtual time, drawn from the
                           stream "runtime.work" (user work: an LLM call,
                           a fetch); resumes ok */
  RT_UC_CMD_SLEEP = 2,  /* exactly min_us of virtual time; resumes ok;
                           min_us < 0: never (a promise that never settles) */
  RT_UC_CMD_CALL = 3,   /* RPC `method` on actor `target` with JSON `args`;
                           resumes with the reply (ok 0: the call failed) */
  RT_UC_CMD_AWAIT_FIBER = 4, /* the fiber `fiber` (rt_sdk_run_fiber) ends;
                           resumes with its return value or its error */
  RT_UC_CMD_TOOL = 5    /* runAgentTool(target) that works min_us: resumes
                           when the child's run is terminal (value: the
                           rt_toolrun_status name) */
} rt_uc_cmd_kind;

#define RT_UC_TEXT 256  /* room for a value, message, method or args */

typedef struct rt_uc_cmd {
  rt_uc_cmd_kind kind;
  int64_t min_us, max_us;   /* WORK, SLEEP (min_us), TOOL (min_us: the child's work) */
  uint32_t target;          /* CALL, TOOL: the actor index */
  int64_t fiber;            /* AWAIT_FIBER */
  char method[64];          /* CALL: method name ("" = plain rpc) */
  char args[RT_UC_TEXT];    /* CALL: JSON arguments ("" = none) */
} rt_uc_cmd;

/* What a callback hands back each time it stops. */
typedef struct rt_uc_out {
  rt_uc_status status;
  rt_uc_cmd cmd;            /* RT_UC_YIELD */
  char value[RT_UC_TEXT];   /* RT_UC_DONE: result JSON; RT_UC_THREW: message */
  int action;               /* onFiberRecovered only: an rt_recover_action the
                               SDK core applies after the hook returned
                               (RESUME, RESTART, DROP), or RT_UC_ACTED when
                               the hook made its own rt_sdk_run_fiber calls */
  int64_t hold_us;          /* RT_UC_DONE of onAlarm: keepAliveWhile(fn) with
                               fn taking this long (0 none; #1703/#1704) */
} rt_uc_out;

#define RT_UC_ACTED (-1)    /* rt_uc_out.action: the hook acted itself */

/* Empties *o for a callback: every scalar 0 and every text "", which is
** all anybody reads of a memset to 0 (texts are written with snprintf and
** read as strings). Without writing its 600 bytes: on the request and
** onStart paths of a 7-day #1595 swarm the memset was 1.2 % of it. */
static inline void rt_uc_out_clear(rt_uc_out *o) {
  o->status = (rt_uc_status)0;
  o->cmd.kind = (rt_uc_cmd_kind)0;
  o->cmd.min_us = o->cmd.max_us = o->cmd.fiber = 0;
  o->cmd.target = 0;
  o->cmd.method[0] = o->cmd.args[0] = 0;
  o->value[0] = 0;
  o->action = 0;
  o->hold_us = 0;
}

/* The result of the command a continuation waited for. */
typedef struct rt_uc_in {
  int ok;                   /* 1 done, 0 failed (call failed, fiber threw, run error) */
  const char *value;        /* JSON result or error message (may be NULL);
                               resuming onFiberRecovered: the row's snapshot
                               as stored now */
} rt_uc_in;

/* One running invocation of an asynchronous callback: the agent layer owns
** the struct, the implementation keeps its continuation in `frame`. */
typedef struct rt_uc_frame {
  int hook;                 /* the rt_uc_hook that started it (set by the
                               agent layer; declared below) */
  int64_t key;              /* fiber id, orphan row id, request id: the
                               invocation's identity in the trace */
  void *frame;              /* implementation's continuation (a coroutine
                               reference, a program counter) */
} rt_uc_frame;

/* onFiberRecovered(ctx): the orphan row as _checkRunFibers found it. */
typedef struct rt_uc_recovery {
  int64_t id;               /* cf_agents_runs.id */
  const char *name;         /* fiber name */
  const char *snapshot;     /* stored snapshot (JSON text, "null" none) */
  int64_t created_at_ms;    /* virtual ms */
  int call;                 /* how many times the hook has been called for this
                               row, this call included (counts across deaths:
                               the scenario's oracle for "throws once"); a
                               call counts once it decides (rt__hook_call_count) */
} rt_uc_recovery;

/* onChatRecovery(ctx): the interrupted chat turn (reference A.12). */
typedef struct rt_uc_chat_ctx {
  int64_t stream_id, request_id, created_at_ms;
  const char *partial_text; /* text of the chunks stored so far */
  int64_t recovery_data;    /* the stashed responseId, 0 none */
  const char *context;      /* the whole ctx as the chat_recovery_ctx record's
                               JSON (SDK names), or NULL */
} rt_uc_chat_ctx;

/* onChatRecovery's answer: the SDK's options, plus the arm it took. */
typedef struct rt_uc_chat_opts {
  int persist;              /* 1: persist the partial (default) */
  int cont;                 /* 1: continue the turn (default) */
  const char *arm;          /* "retrieved", "synthetic", ... NULL: default */
} rt_uc_chat_opts;

/* Which callback a hook index names (trace records, docs, Lua names). */
typedef enum rt_uc_hook {
  RT_UC_ON_START = 0,         /* onStart */
  RT_UC_ON_REQUEST,           /* onRequest / an RPC method */
  RT_UC_FIBER_BODY,           /* runFiber(name, fn): fn */
  RT_UC_ON_FIBER_RECOVERED,   /* onFiberRecovered(ctx) */
  RT_UC_ON_ALARM,             /* onAlarm (user part of alarm()) */
  RT_UC_ON_SCHEDULE,          /* a schedule callback by name */
  RT_UC_ON_CHAT_RECOVERY,     /* onChatRecovery(ctx) */
  RT_UC_ON_AGENT_TOOL_FINISH, /* onAgentToolFinish(run) */
  RT_UC_TOOL_RUN,             /* as a sub-agent: the body of a tool run */
  RT_UC_HOOKS
} rt_uc_hook;

/* The SDK name of a hook ("onStart", ...), or NULL. */
const char *rt_uc_hook_name(rt_uc_hook h);

typedef struct rt_usercode rt_usercode;

/* The user-code table of one actor class. Any entry may be NULL: the SDK
** then behaves as if the class did not define that callback (RT_UC_ABSENT).
** Every asynchronous entry fills *out and returns its status; `resume`
** continues any of them. `self` names the actor for rt_sdk.h calls and is
** valid only during the call. `st` is what `open` returned. */
struct rt_usercode {
  const char *name;         /* "declarative", "lua", ... (trace, errors) */

  /* Makes the per-incarnation state; NULL with *err set on failure (the
  ** startup fails with that message). Called when an incarnation wakes. */
  void *(*open)(const rt_usercode *uc, rt_sdk_actor *self, const char **err);
  /* Throws the incarnation state away, pending continuations included. */
  void (*close)(void *st);

  /* Async. onStart(): runs inside the startup gate, after fiber recovery;
  ** a throw fails the startup (held requests fail, the actor may retry on
  ** the next request). */
  rt_uc_status (*on_start)(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out);

  /* Async. A request or RPC handler: `method` ("" = fetch), `args` JSON
  ** (may be NULL). DONE answers with out->value, THREW fails the request. */
  rt_uc_status (*on_request)(void *st, rt_sdk_actor *self, const char *method,
                             const char *args, rt_uc_frame *fr, rt_uc_out *out);

  /* Async. RPC method `method` called by another actor with JSON `args`
  ** (may be NULL): "call with JSON arguments, answer with a JSON result".
  ** DONE answers with out->value ("" = undefined: the caller gets null),
  ** THREW fails the call with out->value. NULL or ABSENT: answered null at
  ** once (a plain actor's RPC stub). */
  rt_uc_status (*on_call)(void *st, rt_sdk_actor *self, const char *method, const char *args,
                          rt_uc_frame *fr, rt_uc_out *out);

  /* Async. The body of fiber fr->key named `name`, started by runFiber or
  ** resumed by recovery: `snapshot` is the stash it resumes from ("null":
  ** from the start). The body stashes with rt_sdk_stash. */
  rt_uc_status (*fiber_body)(void *st, rt_sdk_actor *self, const char *name,
                             const char *snapshot, rt_uc_frame *fr, rt_uc_out *out);

  /* Async. onFiberRecovered(ctx), inside the startup gate (source 1) or in
  ** alarm housekeeping (source 2). DONE with out->action; THREW keeps or
  ** deletes the row per the SDK version (#1729). */
  rt_uc_status (*on_fiber_recovered)(void *st, rt_sdk_actor *self, const rt_uc_recovery *ctx,
                                     rt_uc_frame *fr, rt_uc_out *out);

  /* Async. The user's onAlarm, after the SDK ran due schedules. */
  rt_uc_status (*on_alarm)(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out);

  /* Async. Schedule callback `callback` of row fr->key with its payload
  ** (JSON or NULL), called from alarm(). */
  rt_uc_status (*on_schedule)(void *st, rt_sdk_actor *self, const char *callback,
                              const char *payload, rt_uc_frame *fr, rt_uc_out *out);

  /* onChatRecovery(ctx), awaited by the SDK: fills *opts (preset to the
  ** SDK defaults) and answers DONE, or THREW (reported; the defaults are
  ** used). It may instead answer RT_UC_DETACHED when the callback waits
  ** (a Lua coroutine that sleeps or calls): the chat model keeps the turn's
  ** recovery open (its fiber row stays) until the implementation reports
  ** the options with rt__chat_recovery_end (rt_models.h); a death meanwhile
  ** leaves the row to be recovered again. */
  rt_uc_status (*on_chat_recovery)(void *st, rt_sdk_actor *self, const rt_uc_chat_ctx *ctx,
                                   rt_uc_chat_opts *opts);

  /* Sync. onAgentToolFinish(run): status is the terminal rt_toolrun_status,
  ** error its message (NULL none). THREW is swallowed (onError). */
  rt_uc_status (*on_agent_tool_finish)(void *st, rt_sdk_actor *self, int64_t run, int status,
                                       const char *error);

  /* Async. As a sub-agent: the body of tool run fr->key, started when the
  ** parent's startAgentToolRun arrives. DONE completes the run (or ends it
  ** with out->action when that is another terminal rt_toolrun_status:
  ** aborted, interrupted), THREW errors it. Without this entry the run works
  ** as long as the parent asked and completes. */
  rt_uc_status (*tool_run)(void *st, rt_sdk_actor *self, rt_uc_frame *fr, rt_uc_out *out);

  /* Continues the continuation fr (any async entry) with the result of the
  ** command it yielded. */
  rt_uc_status (*resume)(void *st, rt_sdk_actor *self, rt_uc_frame *fr, const rt_uc_in *in,
                         rt_uc_out *out);
  /* Sync, optional. Fiber `id` of this actor ended (ok 1: returned `result`,
  ** a JSON value or NULL; ok 0: threw the message `result`): detached
  ** continuations (RT_UC_DETACHED) that await it go on. */
  void (*fiber_ended)(void *st, rt_sdk_actor *self, int64_t id, int ok, const char *result);

  /* Sync, optional. The reply to the call this actor made with
  ** rt__user_call(key) (rt_agent.h) arrived: ok 1 with the result JSON
  ** `value` (NULL: null), ok 0 with the error message (NULL: the call
  ** failed). Detached continuations waiting for it go on. */
  void (*call_reply)(void *st, rt_sdk_actor *self, int64_t key, int ok, const char *value);

  /* Forgets continuation fr without running it (its fiber was cancelled or
  ** the command can never complete). */
  void (*drop)(void *st, rt_uc_frame *fr);

  void *ctx;                /* implementation data (a script path, a spec) */
};

/* The table the agent layer uses for actor `a` (set by the class's
** registration; the declarative one by default). Never NULL. */
const rt_usercode *rt_usercode_of(rt_sdk_actor *self);

#endif
