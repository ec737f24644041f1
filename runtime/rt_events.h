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
  RT_W_OTHER = 11
} rt_write_op;

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
  RT_EV_REQUEST_OK,        /* request id, latency_us, -, -, - */
  RT_EV_REQUEST_FAIL,      /* request id, latency_us, -, error, - */
  RT_EV_RPC_SEND,          /* call id, callee actor, -, method, - */
  RT_EV_RPC_REPLY,         /* call id, ok, -, -, - (on the caller) */
  RT_EV_FIBER_START,       /* fiber id, recovered-from fiber id or 0, start pc, name, - */
  RT_EV_STASH,             /* fiber id, value (program counter), txn id, -, - */
  RT_EV_EFFECT,            /* fiber id, pc, attempt, effect name, - */
  RT_EV_FIBER_DONE,        /* fiber id, 1 ok / 0 error, -, name, - */
  RT_EV_RECOVERY_SCAN,     /* source (1 startup, 2 alarm), rows found, -, -, - */
  RT_EV_RECOVERY_REENTRY,  /* source, -, -, -, - : guard dropped the call */
  RT_EV_FIBER_RECOVERED,   /* old fiber id, snapshot value or -1, action, name, - ; hook returned */
  RT_EV_FIBER_HOOK_THREW,  /* old fiber id, snapshot value or -1, -, name, - */
  RT_EV_KEEPALIVE,         /* refs after, +1 acquire / -1 release, -, -, - */
  RT_EV_ALARM_SET,         /* at_us, -, -, -, - */
  RT_EV_ALARM_DELETE,      /* -, -, -, -, - */
  RT_EV_ALARM_FIRE,        /* scheduled at_us, retry count, -, -, - */
  RT_EV_ALARM_DONE,        /* 1 ok / 0 failed, -, -, -, - */
  RT_EV_ALARM_RETRY,       /* next at_us, retry count, -, -, - */
  RT_EV_SCHEDULE_RUN,      /* schedule row id, -, -, callback, - */
  RT_EV_WRITE,             /* rt_write_op, key (fiber/run id), txn id, -, - */
  RT_EV_TXN_COMMIT,        /* txn id, writes, -, -, - */
  RT_EV_TXN_ROLLBACK,      /* txn id, writes, -, reason, - */
  RT_EV_WAITUNTIL,         /* pending after, +1/-1, -, -, - */
  RT_EV_TOOLRUN_INSERT,    /* run id, child actor, initial status, agent type, - */
  RT_EV_TOOLRUN_STATUS,    /* run id, new status, old status, reason, - */
  RT_EV_TOOLRUN_SNAPSHOT,  /* run id, -, -, -, - : one per id snapshotted at startup */
  RT_EV_TOOLRUN_RECOVERY,  /* 1 begin / 0 end, rows, -, -, - */
  RT_EV_TOOLRUN_INSPECT,   /* run id, outcome (1 inspected, 2 timed out, 3 failed), child status, -, - */
  RT_EV_FAULT,             /* fault-specific, fault-specific, -, fault kind, detail */
  RT_EV_STORAGE_FAIL,      /* txn id, sqlite error code, -, -, - */
  RT_EV_LEGACY_FIBER,      /* fiber id, rt_legacy_status, retry count, method, - */
  RT_EV_KIND_COUNT
} rt_event_kind;

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
