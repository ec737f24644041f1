/*
** rt_events.h: the trace vocabulary of the runtime.
**
** The runtime is the system under test; every state change it makes is one
** trace record (sim_rec) of one of these kinds. Invariant checkers and
** reports read only these records. Field use per kind is listed beside each
** kind as (a, b, c, s, s2); "-" means unused (0). Times are virtual µs.
** Fiber ids and tool-run ids are integers unique within a run.
*/
#ifndef RT_EVENTS_H
#define RT_EVENTS_H

#include <stdint.h>

#define RT_NO_ACTOR UINT32_MAX

/* Why an actor's memory died (RT_EV_ACTOR_DEATH.a). */
typedef enum rt_death_cause {
  RT_DEATH_EVICT = 1,       /* idle eviction or a planned evict fault */
  RT_DEATH_RESTART = 2,     /* code-update restart of the whole process */
  RT_DEATH_CRASH = 3,       /* in-process crash of the whole process */
  RT_DEATH_SIGKILL = 4,     /* a real worker process killed with SIGKILL */
  RT_DEATH_GATE_RESET = 5,  /* blockConcurrencyWhile held past the ceiling */
  RT_DEATH_STORAGE = 6,     /* a failed commit broke the output gate */
  RT_DEATH_IDLE = 7         /* inactivity eviction (70–140 s idle) */
} rt_death_cause;

/* Entry points (A.2): which of them run startup (onStart). */
typedef enum rt_entry {
  RT_ENTRY_FETCH = 1,
  RT_ENTRY_WS = 2,
  RT_ENTRY_ALARM = 3,
  RT_ENTRY_SETNAME = 4,
  RT_ENTRY_RPC = 5,         /* a plain user RPC method: no onStart */
  RT_ENTRY_FACET_INIT = 6   /* _cf_initAsFacet: child resolution */
} rt_entry;

/* Recovery actions a scenario can choose per fiber name. */
typedef enum rt_recover_action {
  RT_RECOVER_RESUME = 1,    /* start a new fiber from the snapshot */
  RT_RECOVER_RESTART = 2,   /* start a new fiber from scratch */
  RT_RECOVER_DROP = 3,      /* acknowledge and do nothing */
  RT_RECOVER_THROW = 4      /* the hook throws */
} rt_recover_action;

/* cf_agent_tool_runs.status (A.1). The last four are terminal. */
typedef enum rt_toolrun_status {
  RT_TR_STARTING = 1,
  RT_TR_RUNNING = 2,
  RT_TR_COMPLETED = 3,
  RT_TR_ERROR = 4,
  RT_TR_ABORTED = 5,
  RT_TR_INTERRUPTED = 6
} rt_toolrun_status;

#define RT_TR_IS_TERMINAL(s) ((s) >= RT_TR_COMPLETED)

/* cf_agents_fibers.status of the legacy fiber model (seed 001; stored as
** the names rt_legacy_status_name gives). Interrupted is transitional;
** completed, failed and cancelled are terminal. A tag only, no typedef:
** rt_legacy_status() (rt.h) is getFiber. */
enum rt_legacy_status {
  RT_LF_RUNNING = 1,
  RT_LF_COMPLETED = 2,
  RT_LF_FAILED = 3,
  RT_LF_INTERRUPTED = 4,
  RT_LF_CANCELLED = 5
};

/* Durable write boundaries (RT_EV_WRITE.a). */
typedef enum rt_write_op {
  RT_W_FIBER_INSERT = 1,
  RT_W_STASH = 2,
  RT_W_FIBER_DELETE = 3,
  RT_W_ALARM_SET = 4,
  RT_W_ALARM_DELETE = 5,
  RT_W_TOOLRUN_INSERT = 6,
  RT_W_TOOLRUN_STATUS = 7,
  RT_W_SCHEDULE = 8,
  RT_W_CHILD_RUN = 9,
  RT_W_LEGACY_FIBER = 10,
  RT_W_OTHER = 11,
  RT_W_CHECKPOINT = 12,    /* executor: one TurnCheckpoint row (key: turn id) */
  RT_W_THREAD = 13         /* thread store: changeset, version or state row (key: thread id) */
} rt_write_op;

/* ---- checkpoint executor (seed 002 "Durable Execution"; rt_executor.c) ----
** Phase ids of the canonical CheckpointPhaseRegistry entries; phases a
** consumer registers get ids from RT_PH_FIRST_CUSTOM up (names in the
** RT_EV_EXEC_CHECKPOINT record's s field). */
enum rt_exec_phase {
  RT_PH_STARTED = 1,        /* "started" */
  RT_PH_LLM_COMPLETE = 2,   /* "llm-complete" */
  RT_PH_TOOL_DISPATCHED = 3,/* "tool-dispatched" (consumer-fired) */
  RT_PH_TOOL_RECEIVED = 4,  /* "tool-received" */
  RT_PH_SETTLED = 5,        /* "settled" */
  RT_PH_FIRST_CUSTOM = 6
};

/* The DurableExecutor adapter a turn checkpoints through. */
typedef enum rt_exec_adapter {
  RT_EXEC_SQLITE = 0,       /* SQL adapter in the actor's storage: ON CONFLICT
                               (turn_id, phase, timestamp) DO NOTHING */
  RT_EXEC_MEMORY = 1,       /* InMemoryDurableExecutor: lost with the actor's memory */
  RT_EXEC_BROKEN = 2        /* SQL adapter that dedupes on (turn_id, phase): the
                               seed's "Pitfalls" bug */
} rt_exec_adapter;

/* RT_EV_EXEC_TURN.b: a turn's lifecycle as the actor runner sees it. */
enum rt_exec_turn_state {
  RT_TS_OPEN = 1,           /* the session manager opened the turn slot */
  RT_TS_RUNNING = 2,        /* `started` is durable: the participant runs */
  RT_TS_COMPLETE = 3,       /* `settled` (complete) is durable */
  RT_TS_ABORTED = 4,        /* a checkpoint failed: the turn stops */
  RT_TS_NOT_RUN = 5,        /* `started` failed: the turn never ran */
  RT_TS_CANCEL = 6,         /* cancelTurn: the abort signal fired */
  RT_TS_CANCELLED = 7,      /* slot torn down, onTurnCancelled (after `settled`) */
  RT_TS_RESUMED = 8,        /* restored after a restart; runs on from its last checkpoint */
  RT_TS_REPLAYED = 9        /* restored, already settled: outbound side replayed only */
};

/* ---- thread store (seed 004 "Persistence and Versioning"; rt_thread.c) -- */

/* How the store appends a changeset. */
typedef enum rt_thread_store {
  RT_THREAD_VERSIONED = 0,  /* VersionPrecondition::Exact(version), scope cleanup */
  RT_THREAD_BROKEN = 1,     /* overwrites at expected+1 without the version check */
  RT_THREAD_LEAKY = 2       /* versioned, but no Run / ToolCall scope cleanup */
} rt_thread_store;

/* ThreadChangeSet.reason (the seed's CheckpointReason names). */
enum rt_thread_reason {
  RT_CK_USER_MESSAGE = 1,           /* "UserMessage": inbound and RunStart */
  RT_CK_ASSISTANT_TURN_COMMITTED = 2,
  RT_CK_TOOL_RESULTS_COMMITTED = 3,
  RT_CK_RUN_FINISHED = 4
};

/* StateScope of a state path. */
enum rt_thread_scope {
  RT_SCOPE_THREAD = 1,      /* persists across runs */
  RT_SCOPE_RUN = 2,         /* deleted by prepare_run before each new run */
  RT_SCOPE_TOOL_CALL = 3    /* __tool_call_scope.<call_id>, cleaned when the call resolves */
};

/* Role of a message in a changeset (RT_EV_THREAD_MSG.b). */
enum rt_thread_role { RT_ROLE_USER = 1, RT_ROLE_ASSISTANT = 2, RT_ROLE_TOOL = 3 };

/* RT_EV_THREAD_RUN.c. */
enum rt_thread_run_state {
  RT_RUN_STARTED = 1,
  RT_RUN_FINISHED = 2,      /* RunFinished durable: the terminal run-finish event */
  RT_RUN_FAILED = 3,        /* a non-final checkpoint failed: state error, run ends */
  RT_RUN_SUPPRESSED = 4     /* RunFinished failed: error, terminal event suppressed */
};

/* ---- durable chat turns (seed 000 Layer 3; reference A.12; rt_chat.c) -----
** An all-zero policy is the SDK default: inline continuation, and
** onChatRecovery returns {} (persist the partial response, continue). */
typedef enum rt_chat_provider {
  RT_CHAT_INLINE = 0,       /* Workers AI: persist the partial + continueLastTurn */
  RT_CHAT_RETRIEVE = 1,     /* OpenAI store:true: retrieve the completed response
                               by its stashed id, {persist: false, continue: false} */
  RT_CHAT_SYNTHETIC = 2     /* Anthropic: persist the partial, then a synthetic
                               "continue" user message, {continue: false} */
} rt_chat_provider;

typedef struct rt_chat_policy {
  int set;                  /* 0: not given (an actor falls back to the config's) */
  rt_chat_provider provider;
  int no_persist;           /* onChatRecovery returns persist: false */
  int no_continue;          /* onChatRecovery returns continue: false */
  int off;                  /* chatRecovery = false: turns are not fibers,
                               nothing is recovered (issue #15) */
} rt_chat_policy;

/* Deliberately broken chat recoveries (the runtime field "chat_bug"). */
typedef enum rt_chat_bug {
  RT_CHAT_BUG_NONE = 0,
  RT_CHAT_BUG_RESEND_USER = 1,  /* the continue arm re-sends the user message */
  RT_CHAT_BUG_REGENERATE = 2,   /* retrieve ignores the stashed response id */
  RT_CHAT_BUG_NEW_MESSAGE = 3,  /* continueLastTurn writes a new assistant message */
  RT_CHAT_BUG_NO_RETRY = 4,     /* no retry arm: a pre-stream turn is "continued" */
  RT_CHAT_BUG_EARLY_ACK = 5     /* the user message is acknowledged before it commits */
} rt_chat_bug;

/* RT_EV_CHAT_TURN.c: why a chat turn runs. */
enum rt_chat_mode {
  RT_CM_USER = 1,           /* a user message (a chat request) */
  RT_CM_CONTINUE = 2,       /* _chatRecoveryContinue -> continueLastTurn: appends to b */
  RT_CM_RETRY = 3,          /* _chatRecoveryRetry: the unanswered user turn again */
  RT_CM_SYNTHETIC = 4,      /* _continueWithSyntheticMessage: answers a synthetic user message */
  RT_CM_SKIPPED = 5,        /* a recovery callback found nothing to do: no turn runs */
  RT_CM_SAVE = 6            /* saveMessages(): answers the user message it saved */
};

/* RT_EV_CHAT_STREAM.b: cf_ai_chat_stream_metadata.status. */
enum rt_chat_stream_status { RT_CS_STREAMING = 1, RT_CS_COMPLETED = 2, RT_CS_ERROR = 3 };

/* RT_EV_CHAT_UPSTREAM.b: the model provider's side of one generation. */
enum rt_chat_upstream_phase {
  RT_UP_START = 1,          /* the provider starts a new generation */
  RT_UP_COMPLETED = 2,      /* every chunk generated, whether received or not */
  RT_UP_SEVERED = 3,        /* the connection is gone (stream_cut, or the actor died) */
  RT_UP_RETRIEVED = 4       /* a completed stored response fetched by its id */
};

/* How a user callback ended (RT_EV_ONSTART_END.a, RT_EV_HOOK_END.b). */
typedef enum rt_cb_outcome {
  RT_CB_RETURNED = 1,       /* returned normally */
  RT_CB_THREW = 2,          /* threw */
  RT_CB_TIMED_OUT = 3,      /* cut by a gate reset (blockConcurrencyWhile past 30 s) */
  RT_CB_CUT = 4             /* cut by another death (evict, restart, crash, SIGKILL) */
} rt_cb_outcome;

typedef enum rt_event_kind {
  RT_EV_NONE = 0,
  RT_EV_ACTOR_WAKE,        /* incarnation, entry, -, class, - */
  RT_EV_ACTOR_DEATH,       /* cause, incarnation, -, -, - */
  RT_EV_GATE_ACQUIRE,      /* incarnation, -, -, purpose, - */
  RT_EV_GATE_RELEASE,      /* held_us, -, -, -, - */
  RT_EV_GATE_TIMEOUT,      /* held_us, ceiling_us, -, message, - */
  RT_EV_STARTUP_BEGIN,     /* entry, -, -, -, - */
  RT_EV_STARTUP_OK,        /* duration_us, -, -, -, - */
  RT_EV_STARTUP_FAIL,      /* duration_us, -, -, error, - */
  RT_EV_ONSTART_BEGIN,     /* -, -, -, -, - : the user onStart starts */
  RT_EV_REQUEST_ARRIVE,    /* request id, entry, -, -, - */
  RT_EV_REQUEST_OK,        /* request id, latency_us, -, result JSON (awaited runFiber), - */
  RT_EV_REQUEST_FAIL,      /* request id, latency_us, -, error, - */
  RT_EV_RPC_SEND,          /* call id, callee actor, -, method, - */
  RT_EV_RPC_REPLY,         /* call id, ok, -, -, - (on the caller) */
  RT_EV_FIBER_START,       /* fiber id, recovered-from fiber id or 0, start pc, name, - */
  RT_EV_STASH,             /* fiber id, resume pc (-1: a value stash; chat: response id), txn id, value JSON, via ("ctx"/"this") */
  RT_EV_EFFECT,            /* fiber id, pc, attempt, effect name, - */
  RT_EV_FIBER_DONE,        /* fiber id, 1 ok / 0 error, -, name, result JSON or error message */
  RT_EV_RECOVERY_SCAN,     /* source (1 startup, 2 alarm), rows found, -, -, - */
  RT_EV_RECOVERY_REENTRY,  /* source, -, -, -, - : guard dropped the call */
  RT_EV_FIBER_RECOVERED,   /* old fiber id, snapshot pc or -1, action, name, snapshot JSON ; hook returned */
  RT_EV_FIBER_HOOK_THREW,  /* old fiber id, snapshot pc or -1, -, name, snapshot JSON */
  RT_EV_KEEPALIVE,         /* refs after, +1 acquire / -1 release, -, -, - */
  RT_EV_ALARM_SET,         /* at_us, -, -, -, - */
  RT_EV_ALARM_DELETE,      /* -, -, -, -, - */
  RT_EV_ALARM_FIRE,        /* scheduled at_us, retry count, -, -, - */
  RT_EV_ALARM_DONE,        /* 1 ok / 0 failed, -, -, -, - */
  RT_EV_ALARM_RETRY,       /* next at_us, retry count, -, -, - */
  RT_EV_SCHEDULE_RUN,      /* schedule row id, -, -, callback, - */
  RT_EV_WRITE,             /* rt_write_op, key (fiber/run id), txn id, table, row name (fiber name,
                              schedule callback, tool-run status) */
  RT_EV_TXN_COMMIT,        /* txn id, writes, -, -, - */
  RT_EV_TXN_ROLLBACK,      /* txn id, writes, -, reason, - */
  RT_EV_WAITUNTIL,         /* pending after, +1/-1, -, -, - */
  RT_EV_TOOLRUN_INSERT,    /* run id, child actor, initial status, agent type, - */
  RT_EV_TOOLRUN_STATUS,    /* run id, new status, old status, reason, - */
  RT_EV_TOOLRUN_SNAPSHOT,  /* run id, -, -, -, - : one per id snapshotted at startup */
  RT_EV_TOOLRUN_RECOVERY,  /* 1 begin / 0 end / 2 joined (a call found a pass in flight), rows, -, -, - */
  RT_EV_TOOLRUN_INSPECT,   /* run id, outcome (1 inspected, 2 timed out, 3 failed), child status, -, - */
  RT_EV_FAULT,             /* fault-specific, fault-specific, -, fault kind, detail */
  RT_EV_STORAGE_FAIL,      /* txn id, sqlite error code, -, -, - */
  RT_EV_LEGACY_FIBER,      /* fiber id, rt_legacy_status, retry count, method, - */
  /* checkpoint executor (seed 002; rt_executor.c) */
  RT_EV_EXEC_TURN,         /* turn id, rt_exec_turn_state, rt_exec_adapter, reason or error, - */
  RT_EV_EXEC_CHECKPOINT,   /* turn id, phase id, timestamp ms, phase name, "retry" when redelivered */
  RT_EV_EXEC_ACK,          /* turn id, 1 durable / 0 failed, phase id, error, - : the call returned */
  RT_EV_EXEC_RESTORE,      /* turn id, checkpoints returned, 1 recovery / 2 audit, -, - */
  RT_EV_EXEC_RESTORED,     /* turn id, phase id, timestamp ms, phase name, - : one per returned item, in order */
  /* thread store (seed 004; rt_thread.c) */
  RT_EV_THREAD_LOAD,       /* thread id, version loaded, run id, -, - */
  RT_EV_THREAD_APPEND,     /* thread id, run id, expected version (Exact), rt_thread_reason name, - */
  RT_EV_THREAD_SET,        /* thread id, rt_thread_scope, tool call id or 0, path, - : patch of the open append */
  RT_EV_THREAD_DELETE,     /* thread id, rt_thread_scope, tool call id or 0, path, - : patch of the open append */
  RT_EV_THREAD_MSG,        /* thread id, rt_thread_role, tool call id or 0, -, - : message of the open append */
  RT_EV_THREAD_COMMIT,     /* thread id, committed version or -1 conflict / -2 failed, run id, error, - */
  RT_EV_THREAD_RUN,        /* thread id, run id, rt_thread_run_state, error, - */
  /* durable chat turns (seed 000 Layer 3; reference A.12; rt_chat.c) */
  RT_EV_CHAT_TURN,         /* request id, assistant message id it writes (0: skipped), rt_chat_mode, answered user text, - */
  RT_EV_CHAT_RESUME,       /* new turn's request id (0: skipped), interrupted request id, schedule id, callback, - */
  RT_EV_CHAT_USER,         /* message id, request id, txn id, text, - : user message written */
  RT_EV_CHAT_ASSISTANT,    /* message id, writer request id, txn id, whole text after the write, answered user text */
  RT_EV_CHAT_CHUNK,        /* stream id, chunk index, txn id, -, - : stream chunk row written */
  RT_EV_CHAT_STREAM,       /* stream id, rt_chat_stream_status, request id, -, - : metadata row written */
  RT_EV_CHAT_UPSTREAM,     /* response id, rt_chat_upstream_phase, request id, answered user text, provider */
  RT_EV_CHAT_RECOVERY,     /* old fiber id, interrupted request id, partial text chunks, options, arm */
  /* user callbacks and schedule rows (issue #12; docs/trace.md) */
  RT_EV_ONSTART_END,       /* rt_cb_outcome, duration_us, -, error, - : the user onStart ended */
  RT_EV_HOOK_BEGIN,        /* fiber id, snapshot pc or -1, created_at_us, name, snapshot JSON :
                              onFiberRecovered called with the orphan row */
  RT_EV_HOOK_END,          /* fiber id, rt_cb_outcome, duration_us, name, error : the hook ended */
  RT_EV_SCHEDULE_SET,      /* schedule id, at_us or -1 (row deleted), interval_us, callback, - */
  /* sub-agent tool calls of chat turns (issue #15; agents #1630 / #1640) */
  RT_EV_TOOLRUN_EFFECT,    /* run id, parent actor, -, tool call id, - : on the child, its run's
                              work is done (an external effect) */
  RT_EV_TOOLRUN_ATTACH,    /* run id, rt_tr_attach how, status found, tool call id, - */
  RT_EV_TOOLRUN_FINISH,    /* run id, terminal status, rt_cb_outcome, error message or "", "live" /
                              "deferred" : onAgentToolFinish was called */
  RT_EV_FIBER_READ,        /* fiber id, pc, -, snapshot JSON or null, - : the body read its snapshot */
  RT_EV_FIBER_RETAINED,    /* old fiber id, age_us, hook calls so far, name, - : #1729 kept the row of a hook that threw */
  RT_EV_KEEPALIVE_DISPOSE, /* 1 released a ref / 0 no-op, refs after, -, lease, - : a disposer was called */
  RT_EV_FIBER_SKIPPED,     /* old fiber id, age_us, -, name, reason : #1729 dropped the row (max_age_exceeded) */
  /* probes (issue #16; docs/trace.md "Probes") */
  RT_EV_PROBE,             /* rt_probe, -, -, probe name, - : its first hit in this run */
  /* issue #15, the rest (tool-run events, abort, chat context and cancel) */
  RT_EV_CHAT_RECOVERY_CTX, /* stream id, request id, messages, partial text, context JSON : the
                              whole ctx onChatRecovery received */
  RT_EV_CHAT_CANCEL,       /* request id (0: no turn ran), text chunks received, -, -, - :
                              the client cancelled the running turn */
  RT_EV_TOOLRUN_EVENT,     /* run id, sequence, 0 live / 1 replay to every client / 2 replay to
                              one reconnecting client, event kind, tool call id :
                              an agent-tool-event frame broadcast to the parent's clients */
  RT_EV_TOOLRUN_ABORT,     /* run id, child actor, status found, by ("workload"/"hook"), - :
                              the parent aborted the run (signal) */
  RT_EV_TOOLRUN_REPLAY,    /* replay id, afterSequence, runs, -, - : a client reconnected and
                              asked for the runs' events after a sequence */
  /* schedule callbacks (issue #14; reference A.5, A.10) */
  RT_EV_SCHEDULE_RETRY,    /* schedule id, next attempt, delay_us, callback, error of the
                              failed attempt : schedule:retry (tryN backoff) */
  RT_EV_SCHEDULE_ERROR,    /* schedule id, attempts, -, callback, error : schedule:error,
                              the last attempt failed (swallowed) */
  RT_EV_SCHEDULE_SKIP,     /* schedule id, execution_started_at_us, -, callback, - : an
                              interval still running (< hungScheduleTimeoutSeconds) */
  RT_EV_SCHEDULE_HUNG,     /* schedule id, execution_started_at_us or -1 (NULL), -, callback, - :
                              a hung interval force-reset, then run */
  RT_EV_SCHEDULE_DEDUP,    /* schedule id, -, -, callback, type : an idempotent schedule call
                              returned the existing row (no schedule:create) */
  RT_EV_SCHEDULE_EFFECT,   /* schedule id, occurrence at_us (the row's time), attempt, effect
                              name, callback : an external effect of a schedule callback */
  RT_EV_KIND_COUNT
} rt_event_kind;

/* Probes: rare situations the runtime marks where it reaches them (the idea
** of FoundationDB's CODE_PROBE). Each hit is one RT_EV_PROBE record; a swarm
** counts the runs that reached each probe, and a scenario may require some
** (expect.reach). Append new probes at the end: the names are the contract. */
typedef enum rt_probe {
  RT_PROBE_COMMIT_WINDOW_DEATH = 0, /* an actor died with a turn's writes not yet committed */
  RT_PROBE_RECOVERY_REENTRY,        /* a recovery scan while a hook still runs (guard dropped it) */
  RT_PROBE_RECONCILE_IN_FLIGHT,     /* tool-run reconciliation requested while one is in flight */
  RT_PROBE_GATE_RESET_IN_HOOK,      /* a gate reset cut a running onFiberRecovered hook */
  RT_PROBE_GATE_RESET_IN_ONSTART,   /* a gate reset cut the running user onStart */
  RT_PROBE_INSPECT_TIMEOUT,         /* a child inspection lost its race against the 2 s timer */
  RT_PROBE_INSPECT_DEADLINE,        /* the reconciliation's total budget ran out before a row */
  RT_PROBE_ALARM_RETRIES_EXHAUSTED, /* a failed alarm past its last retry is dropped */
  RT_PROBE_LATE_REPLY,              /* a reply found no call: the caller died or gave up on it */
  RT_PROBE_STORAGE_FAIL_COMMIT,     /* a turn's commit failed: the output gate broke */
  RT_PROBE_REPLY_HELD,              /* a successful reply withheld by a broken output gate */
  RT_PROBE_WAITERS_FAILED,          /* requests held by the gate failed with the actor's death */
  RT_PROBE_ALARM_CUT,               /* the actor died inside its alarm handler */
  RT_PROBE_STARTUP_POISONED,        /* workerd #6850: startup threw before recovery */
  RT_PROBE_UPSTREAM_SEVERED,        /* chat: a generation outlived the turn reading it */
  RT_PROBE_COUNT
} rt_probe;

/* Stable name of a probe ("commit_window_death"), "?" if unknown; and the
** probe of a name, -1 if none. */
const char *rt_probe_name(int probe);
int rt_probe_find(const char *name);

/* How a runAgentTool call met its run (RT_EV_TOOLRUN_ATTACH.b). */
typedef enum rt_tr_attach {
  RT_TRA_STORED = 1,       /* the row is terminal: its stored result is returned */
  RT_TRA_TAIL = 2,         /* the row is open: re-attach to the running child (#1640) */
  RT_TRA_RECOVERY = 3,     /* parent recovery re-attaches instead of interrupting (#1640) */
  RT_TRA_GAVE_UP = 4,      /* no progress within the budget: interrupted "no-progress" */
  RT_TRA_REUSED = 5        /* a plain runAgentTool with the id of an open run (@1604): its
                              chunks replayed, then interrupted; no second start */
} rt_tr_attach;

/* Stable lower-case name of a kind ("fiber_start"), "?" if unknown. */
const char *rt_event_name(uint32_t kind);

/* Names for enum values used in records ("evict", "fetch", "resume",
** "interrupted", "stash"...), "?" if unknown. */
const char *rt_death_name(int cause);
const char *rt_entry_name(int entry);
const char *rt_action_name(int action);
const char *rt_toolrun_status_name(int status);
const char *rt_write_op_name(int op);
const char *rt_legacy_status_name(int status); /* "running", "completed"... */
/* Executor and thread store (rt_names.c): "started", "sqlite", "open",
** "versioned", "UserMessage" (the seed's spelling), "run", "finished". */
const char *rt_exec_phase_name(int phase);      /* canonical phases only */
const char *rt_exec_adapter_name(int adapter);
const char *rt_exec_turn_state_name(int state);
const char *rt_thread_store_name(int store);
const char *rt_thread_reason_name(int reason);
const char *rt_thread_scope_name(int scope);
const char *rt_thread_run_state_name(int state);
/* Chat (rt_names.c): "user", "inline", "regenerate", "streaming", "severed". */
const char *rt_chat_mode_name(int mode);
const char *rt_chat_provider_name(int provider);  /* "inline", "retrieve", "synthetic_continue" */
const char *rt_chat_bug_name(int bug);
const char *rt_chat_stream_status_name(int status);
const char *rt_chat_upstream_phase_name(int phase);
const char *rt_cb_outcome_name(int outcome);  /* "returned", "threw", "timed_out", "cut" */
const char *rt_tr_attach_name(int how);       /* "stored", "tail", "recovery", "gave_up" */

/* The platform's message for a gate held past the ceiling (seed 003). */
#define RT_MSG_GATE_RESET                                                  \
  "A call to blockConcurrencyWhile() in a Durable Object waited for too " \
  "long. The call was canceled and the Durable Object was reset."

/* Interruption reasons of the #1604 reconciliation (reference A.11). */
#define RT_MSG_TR_STILL_RUNNING                                            \
  "Agent tool run was still running, but live-tail reattachment is not "  \
  "supported in this runtime."
#define RT_MSG_TR_TIMED_OUT \
  "Agent tool run inspection timed out during parent recovery."
#define RT_MSG_TR_FAILED \
  "Agent tool run could not be inspected during parent recovery."

#endif
