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

/* ---- rt_luaagent.c: tool runs of Lua-scripted agents (issue #13) --------- */

/* Subscribes scripts awaiting runAgentTool to runs that end
** (rt__toolrun_on_terminal); once per process. 0 or -1. */
int rt__lg_tool_register(void);
/* The script's onAgentToolFinish(run), synchronous: RT_UC_DONE, RT_UC_THREW
** (an error, or a wait: RT_EV_SCRIPT_ERROR), or RT_UC_ABSENT when the
** script defines none. */
rt_uc_status rt__lg_tool_finish(rt_world *w, uint32_t a, int64_t run, int status,
                                const char *error);

/* ---- rt_chat.c: durable chat turns (seed 000 Layer 3; reference A.12) ------ */

/* Subscribes chat turns to tool runs that end (rt__toolrun_on_terminal);
** once per process, before the first world. 0 or -1. */
int rt__chat_register(void);

#endif
