/*
** rt_agent.h: the agent SDK core's floor inside runtime/ (rt_agent.c,
** rt_agent_store.c, rt_sdk.c, rt_usercode.c): startup, keepAlive, alarm()
** and schedules, fibers and _checkRunFibers, over the host (rt_host.h).
** Not for use outside runtime/.
**
** The core is the host's actor class (rt_actor_class). Models (tool runs,
** legacy fibers, executor, thread store, chat) stand on the core: each
** registers an extension (rt_agent_ext) with its storage module, message
** kinds and lifecycle hooks, and the core calls them through it, never by
** name. User code is called through rt_usercode.h. The composition root
** (rt_models.c) registers the models in the SDK's order.
*/
#ifndef RT_AGENT_H
#define RT_AGENT_H

#include <stdint.h>
#include <stdlib.h>

#include "runtime/rt_host.h"
#include "runtime/rt_usercode.h"

/* ---- message kinds of the agent layer (rt_msg.kind) --------------------- */
enum rt_agent_msg {
  MSG_FIBER = RT_MSG_CLASS_FIRST, /* request that runs runFiber(prog) */
  MSG_TOOLRUN,          /* request that runs runAgentTool(child) */
  MSG_CALL_INSPECT,     /* parent → child: resolve (facet init) + inspect */
  MSG_CALL_START,       /* parent → child: start a child run */
  MSG_CALL_PLAIN,       /* fiber CALL step: plain RPC, no onStart */
  MSG_RUN_DONE,         /* child → parent: the child run finished */
  MSG_LEGACY_SPAWN,     /* legacy fibers: request that calls spawnFiber */
  MSG_LEGACY_CANCEL,    /* legacy fibers: request that calls cancelFiber */
  MSG_EXEC_TURN,        /* executor (seed 002): request that runs a turn */
  MSG_THREAD_WRITER,    /* thread store (seed 004): request that runs a writer */
  MSG_CHAT,             /* chat (seed 000 Layer 3): a user message; arg chunks,
                           arg2 chunk spacing (rt_chat.c) */
  MSG_SCHEDULE,         /* request that calls schedule (arg delay) or
                           scheduleEvery (arg2 interval); str callback */
  MSG_CANCEL_SCHEDULE,  /* request that calls cancelSchedule; str callback */
  MSG_KEEPALIVE_WHILE,  /* request that runs keepAliveWhile(fn), fn taking arg */
  MSG_CALL_ATTACH,      /* parent → child: re-attach to run arg (#1640); the
                           reply comes when the child's run ends */
  MSG_TOOL_RECOVERY,    /* request that calls _scheduleAgentToolRunRecovery() */
  MSG_STASH_OUTSIDE,    /* request whose handler calls this.stash() outside a fiber */
  MSG_KEEPALIVE_ACQUIRE,/* request that calls keepAlive(); str lease */
  MSG_KEEPALIVE_DISPOSE,/* request that calls a kept disposer; str lease */
  MSG_CHAT_CONTINUE,    /* request that calls continueLastTurn() (rt_chat.c) */
  MSG_CHAT_SAVE,        /* request that calls saveMessages(str text); arg chunks, arg2 spacing */
  MSG_CHAT_CANCEL,      /* the client cancels the running chat turn */
  MSG_TOOL_ABORT,       /* request that aborts the open runs of child arg (signal) */
  MSG_TOOL_REPLAY,      /* a client reconnects: replay every run's events after arg */
  MSG_CALL_CANCEL,      /* parent → child: cancelAgentToolRun(run arg) */
  MSG_CALL_CHUNKS,      /* parent → child: getAgentToolChunks(run arg): the reply is the
                           last stored sequence */
  MSG_TOOL_CHUNK,       /* child → parent (notify): chunk arg2 of run arg was stored */
  MSG_SCHEDULE_EX,      /* request that calls schedule / scheduleEvery with
                           cron, payload or idempotent: arg indexes the
                           world's sched_reqs; str callback */
  MSG_INVOKE,           /* request that calls a user method by name (the
                           user-code table's on_request): str method, arg its
                           arguments (JSON trace string, 0: none) */
  MSG_RPC,              /* actor → actor: an RPC method call with JSON
                           arguments (user code's rt__user_call), as
                           MSG_INVOKE but through on_call; the reply carries
                           the result JSON or the error message as a trace
                           string */
  MSG_KINDS
};

/* rt_call.purpose: what a reply continues. */
typedef enum rt_call_purpose {
  CALL_GATED_INSPECT = 1,   /* startup reconcile (pre-fix), unbounded */
  CALL_DEFERRED_INSPECT,    /* background reconcile, raced against 2 s */
  CALL_FIBER_STEP,          /* a fiber's CALL step */
  CALL_TOOL_START,          /* live runAgentTool start */
  CALL_TOOL_ATTACH,         /* re-attach to a running child (#1640) */
  CALL_TOOL_CANCEL,         /* cancelAgentToolRun: the reply is ignored */
  CALL_TOOL_CHUNKS,         /* getAgentToolChunks: replay to a client or a reuse */
  CALL_USER,                /* user code's rt__user_call: the reply goes to the
                               table's call_reply (key: the caller's key) */
  CALL_PURPOSES
} rt_call_purpose;

/* rt__scan_cached slots of the agent layer. */
enum {
  RT_SCAN_ORPHANS, RT_SCAN_OPEN_TOOLRUNS, RT_SCAN_TOOLRUN_GET, RT_SCAN_LEGACY_RUNNING,
  RT_SCAN_ORPHAN_SNAP /* one run's snapshot, read at its hook's start and end */
};

typedef struct rt_fiber {
  int64_t id;
  int prog;                 /* index into the world's programs */
  int pc;
  int64_t recovered_from;
  int live;
  int legacy;               /* 1: a fiber of the registered legacy model */
  int64_t await_req;        /* awaited runFiber: the request waiting (0 none) */
  rt_uc_frame fr;           /* its body's continuation (rt_usercode.h) */
  int lua;                  /* 1: a script's body (rt_luaagent.c) */
} rt_fiber;

/* The models' synchronous SDK calls (rt_sdk.h), registered by the chat and
** tool-run models (from rt_models.c) so that the core's rt_sdk.c can reach
** them without naming them. NULL: not registered. */
typedef struct rt_model_calls {
  int (*continue_last_turn)(rt_world *w, uint32_t a);
  int64_t (*save_messages)(rt_world *w, uint32_t a, const char *text);
  int (*chat_cancel)(rt_world *w, uint32_t a);  /* 1 cancelled, 0 none ran, -1 */
  int (*abort_tool_run)(rt_world *w, uint32_t a, int64_t run, const char *by);
  int (*open_tool_runs)(rt_world *w, uint32_t a, int64_t *out, int cap);
  int64_t (*run_tool)(rt_world *w, uint32_t a, uint32_t child, int64_t work_us, int64_t run_id,
                      int *status);
  int (*tool_info)(rt_world *w, uint32_t a, int64_t run, char *err, size_t n);
} rt_model_calls;
extern rt_model_calls rt__model_calls;

/* Legacy fibers recovered inside the startup gate, run after it opens. */
typedef struct rt_legacy_pending {
  int64_t id;
  int prog, pc;
} rt_legacy_pending;

typedef enum rt_startup_phase {
  SU_NONE = 0,
  SU_CHECK_FIBERS,          /* _checkRunFibers: hooks inside the gate */
  SU_EXTS,                  /* the extensions' gated startup steps */
  SU_ONSTART,               /* user onStart */
  SU_DONE
} rt_startup_phase;

typedef struct rt_orphan {
  int64_t id;
  char name[64];
  int snapshot;             /* {"pc":N} → N; -1 = null or a value snapshot */
  int64_t created_ms;       /* created_at of the row (virtual ms) */
} rt_orphan;

/* One cf_agents_schedules row as the model reads it (A.1). */
#define RT_SCHED_PAYLOAD 256
typedef struct rt_sched_row {
  int64_t id;
  char callback[48];
  char type[12];            /* delayed | interval | cron */
  int64_t time_s;           /* next run, unix seconds */
  int64_t interval_s;       /* interval */
  int64_t delay_s;          /* delayed: delayInSeconds */
  char payload[RT_SCHED_PAYLOAD]; /* JSON text, "" = NULL (undefined) */
  char cron[64];            /* cron */
  int running;              /* interval: a run is in progress */
  int64_t started_s;        /* execution_started_at, -1 NULL */
} rt_sched_row;

#define RT_MAX_DUE 16       /* due rows one alarm() runs */

#define RT_MAX_ORPHANS 64
#define RT_MAX_ROWS 64
#define RT_EXT_MAX 8

/* Memory of one incarnation of an agent: all of it is lost when the actor
** dies. Begins with the host's part. */
typedef struct rt_mem {
  rt_inc inc;               /* the host's part: must be first */
  int refs;                 /* keepAlive refs */
  int recovery_in_progress; /* _checkRunFibers guard */
  int no_progress_scans;    /* #1729: _recoveryNoProgressScans */
  struct { uint32_t lease; int disposed; } leases[16]; /* keepAlive disposers kept by name */
  int n_leases;
  int64_t deferred_next;    /* #1707 disposer: the decided alarm, applied next event */
  int scan_progress;        /* #1729: the running scan resolved a row */
  int64_t hook_began;       /* when the running onFiberRecovered hook started */
  int64_t onstart_began;    /* when the user onStart started */
  /* startup */
  rt_startup_phase phase;
  int ext_idx;              /* SU_EXTS: the next extension's step */
  int64_t startup_began;
  rt_entry startup_entry;
  rt_orphan *orphans;       /* RT_MAX_ORPHANS rows, made by the first scan
                               that finds one (most incarnations never do:
                               a wake zeroes only what it needs, issue #18) */
  int n_orphans, orphan_idx;
  int orphan_source;        /* 1 startup, 2 alarm */
  /* The arrays below hold up to RT_MAX_ROWS (RT_MAX_ORPHANS) entries and
  ** are made on first use (RT_MEM_ARRAY): a wake zeroes only the rest of
  ** the incarnation (issue #18: the whole 18 KB was 10 % of a gated run). */
  int64_t *rows;            /* gated reconcile rows / deferred snapshot */
  int n_rows, row_idx;
  int64_t *snapshot;
  int n_snapshot;
  int toolrun_recovery;     /* background reconcile active */
  int64_t *deferred_rows;
  int n_deferred, deferred_idx;
  int64_t recovery_deadline;
  int defer_finish;         /* reconciliation is finishing a row: defer its hook */
  struct rt_finish_hook {   /* deferred onAgentToolFinish closures, in order: */
    int64_t run;
    int status;             /* ... the run's terminal status */
    uint32_t msg;           /* ... and its error message (trace string) */
  } *finish;
  int n_finish_hooks;
  rt_fiber *fibers;
  int n_fibers, cap_fibers;
  int64_t *pending_resume;  /* fibers made by recovery hooks: their bodies
                               run after startup */
  int n_pending_resume;
  /* hook_run_fiber "after_startup" (the old bug): the hooks' whole runFiber
  ** calls, made after a startup that succeeds, dropped when onStart throws */
  struct rt_parked_run { int prog, pc; int64_t from; uint32_t carry; } *parked_runs;
  int n_parked_runs;
  rt_legacy_pending *legacy_pending; /* the legacy model's */
  int n_legacy_pending;
  void *ext_mem[RT_EXT_MAX];/* each extension's incarnation state */
  /* user code (rt_usercode.h) of this incarnation */
  const rt_usercode *uc;    /* its table, chosen at the first call */
  void *uc_state;           /* what uc->open returned */
  int uc_opened;            /* 1 once open was called (close pending) */
  rt_uc_frame onstart;      /* the running onStart */
  rt_uc_frame hook_fr;      /* the running onFiberRecovered ... */
  int hook_status;          /* ... RT_UC_YIELD while it works, else its result */
  rt_uc_out hook_out;       /* ... kept when it decided at once */
  rt_uc_frame *req_fr;      /* request handlers waiting (key: request id) */
  int n_req_fr, cap_req_fr;
  /* alarm(): the due schedule rows it runs, one callback at a time (A.5) */
  rt_sched_row *due;        /* RT_MAX_DUE rows, made by the first alarm() */
  int n_due, due_idx;
  int sched_attempt;        /* tryN attempt of the running callback (1..) */
  int sched_pc;             /* declarative callback: its next step */
  rt_uc_frame sched_fr;     /* the running callback's continuation */
} rt_mem;

/* Array p of an incarnation (cap entries), made zeroed on first use; NULL
** when out of memory. Freed with the incarnation (class_mem_free). */
#define RT_MEM_ARRAY(p, cap) ((p) ? (p) : ((p) = calloc((size_t)(cap), sizeof *(p))))

/* The agent memory of actor a (NULL while dead). */
#define RT_MEM(w, a) ((rt_mem *)(w)->actors[a].mem)

/* The agent layer's world state (rt_world.layer). */
typedef struct rt_agent_world {
  rt_program *progs;
  int n_progs, cap_progs;
  sim_rng rng_work;
  int *onstart_throws_left; /* per actor: onStart calls still to throw (fault) */
  struct rt_hook_calls { uint32_t actor; int64_t id; int calls; } *hook_calls;
  int n_hook_calls, cap_hook_calls; /* recovery hook calls per orphan row */
  void *ext_world[RT_EXT_MAX]; /* each extension's world state */
  const rt_usercode *uc_default; /* user code of actors that set none */
  const rt_usercode **uc_actor;  /* per actor, NULL: uc_default */
  uint32_t n_uc_actor;           /* entries of uc_actor */
  sim_rng *user_rng;             /* per actor: "user.<id>" (rt_sdk_random) ... */
  unsigned char *user_rng_made;  /* ... made on first use */
  uint32_t n_user_rng;
  sim_rng rng_retry;             /* "runtime.schedule.retry": tryN's jitter */
  struct rt_sched_req *sched_reqs; /* schedule requests with cron/payload/idempotent */
  int n_sched_reqs, cap_sched_reqs;
} rt_agent_world;

/* The handle user code gets for rt_sdk.h calls (rt_sdk_actor). */
struct rt_sdk_actor {
  rt_world *w;
  uint32_t a;
  rt_mem *m;                /* the incarnation it was made for */
  int64_t fiber;            /* the fiber it runs in, 0 none */
};

#define RT_AW(w) ((rt_agent_world *)(w)->layer)

/* ---- extensions: how a model plugs into the core ------------------------
** Every entry may be NULL. Hooks run in registration order. */
typedef struct rt_agent_ext {
  const char *name;
  rt_store_module *store;   /* its tables, or NULL */
  const int *kinds;         /* message kinds it handles ... */
  int n_kinds;
  void (*message)(rt_world *w, uint32_t a, const rt_msg *m); /* ... here */
  const int *purposes;      /* rt_call purposes whose replies ... */
  int n_purposes;
  void (*reply)(rt_world *w, uint32_t a, rt_call *c, int ok, int64_t value); /* ... go here */
  void (*notify)(rt_world *w, uint32_t a, const rt_msg *m); /* RT_MC_NOTIFY messages */
  /* A step of startup inside the gate, after _checkRunFibers: 0 go on, 1
  ** it continues later (and calls rt__startup_continue), -1 the actor died. */
  int (*startup_gated)(rt_world *w, uint32_t a);
  /* After a successful startup released the gate, before resumed fibers run. */
  void (*startup_early)(rt_world *w, uint32_t a);
  /* After startup (ok or failed), once resumed fibers started. */
  void (*startup_late)(rt_world *w, uint32_t a, int ok);
  /* Schedule row id with `callback` ran in alarm(). */
  void (*schedule_ran)(rt_world *w, uint32_t a, int64_t id, const char *callback);
  /* alarm(), after the due schedules: nonzero stops the handler (-1 died). */
  int (*alarm)(rt_world *w, uint32_t a);
  /* _checkRunFibers found orphan o: 0 if the extension recovered it itself
  ** (an internal fiber), 1 if it took it and recovers it later (user code it
  ** awaits: it then calls rt__orphan_recovered), -1 if it is not its own. */
  int (*recover_orphan)(rt_world *w, uint32_t a, const rt_orphan *o);
  /* A fiber of this extension (rt_fiber.legacy) stashed at pc / ended. */
  int (*fiber_stash)(rt_world *w, uint32_t a, int64_t id, int pc);
  void (*fiber_end)(rt_world *w, uint32_t a, rt_fiber *f, int ok);
  void (*mem_free)(rt_world *w, rt_mem *m);
  void (*world_free)(rt_world *w);
  int slot;                 /* set by rt__agent_register */
} rt_agent_ext;

/* Registers extension e (and its storage module) once per process, before
** the first world; -1 when full or too late. */
int rt__agent_register(rt_agent_ext *e);
/* e's world state and incarnation state slots (lvalues). */
#define RT_EXT_WORLD(w, e) (RT_AW(w)->ext_world[(e)->slot])
#define RT_EXT_MEM(m, e) ((m)->ext_mem[(e)->slot])

/* A new agent world whose actors run `uc` unless told otherwise
** (rt__usercode_set); NULL on OOM. */
rt_world *rt__agent_world_new(sim *s, const rt_config *cfg, const rt_usercode *uc);
/* Actor a runs user code uc from its next incarnation on; 0 or -1. */
int rt__usercode_set(rt_world *w, uint32_t a, const rt_usercode *uc);
/* Prepares a call into the user code of actor a's live incarnation: fills
** *self (fiber 0), opens the incarnation's state on first use and returns
** the table, the state in *st. NULL when open failed (*err: why). */
const rt_usercode *rt__uc_enter(rt_world *w, uint32_t a, rt_sdk_actor *self, void **st,
                                const char **err);

/* ---- rt_agent.c ------------------------------------------------------------ */
void rt__startup_continue(rt_world *w, uint32_t a);
/* Awaited runFiber: starts prog; the request m is answered when the body
** ends (its return value, or its error message). */
void rt__fiber_start_awaited(rt_world *w, uint32_t a, int prog, const rt_msg *m);
void rt__fiber_start(rt_world *w, uint32_t a, int prog, int pc, int64_t recovered_from);
/* (Re)starts the body of fiber f from its user code (legacy: a retry). */
void rt__fiber_run(rt_world *w, uint32_t a, rt_fiber *f);
/* The live fiber id of incarnation m, or NULL. */
rt_fiber *rt__fiber_find(rt_mem *m, int64_t id);
/* A step program's stash in fiber id: a legacy fiber stores next_pc
** (stashFiber); a runFiber fiber stores `value` (JSON, via this.stash or
** ctx.stash) or, without one, {"pc":resume_pc}. 0 or -1. */
int rt__fiber_stash(rt_world *w, uint32_t a, int64_t id, int next_pc, int resume_pc,
                    const char *value, int via_this);
/* The resume point of a stash in program p whose next step is `from`: a
** stash commits with its whole turn, so the next step that ends a turn
** (work, call) or the end. */
int rt__turn_end(const rt_program *p, int from);
/* Counts a decided call of the recovery hook for orphan (a, id) and
** returns how many there were, this one included (the scenario's oracle;
** survives deaths; rt_uc_recovery.call announces the next value). */
int rt__hook_call_count(rt_world *w, uint32_t a, int64_t id);
int rt__prog_find(rt_world *w, const char *name);
int rt__prog_add(rt_world *w, const rt_program *p);
/* The SDK's error for this.stash() outside a fiber (index.ts, Agent.stash). */
#define RT_MSG_STASH_OUTSIDE "stash() called outside a fiber"
/* #1729 follow-up alarm delay after `no_progress` scans that resolved
** nothing: min(5 min, keepalive interval * 2^min(n, 20)). */
int64_t rt__recovery_backoff_us(const rt_world *w, int no_progress);
void rt__keepalive_acquire(rt_world *w, uint32_t a);
void rt__keepalive_release(rt_world *w, uint32_t a);
/* _scheduleNextAlarm (A.4). */
void rt__schedule_next_alarm(rt_world *w, uint32_t a);
/* keepAlive() whose disposer is kept under trace string `lease`
** (acquire 1), or a call of that disposer (acquire 0: a second call is a
** no-op, RT_EV_KEEPALIVE_DISPOSE released 0). A disposed lease's slot is
** reused. 0, -1 if a is dead, or -2 (nothing acquired) when every one of
** the incarnation's 16 slots holds a live lease: RT_KEEPALIVE_FULL_MSG. */
int rt__keepalive_lease(rt_world *w, uint32_t a, uint32_t lease, int acquire);
#define RT_KEEPALIVE_FULL_MSG "keepAlive: 16 named leases are live at once (the model's limit)"
/* schedule (interval_us 0: at now + delay_us) or scheduleEvery (idempotent
** on the callback), then _scheduleNextAlarm. Returns the schedule id. */
int64_t rt__schedule_add(rt_world *w, uint32_t a, const char *cb, int64_t delay_us,
                         int64_t interval_us);
/* cancelSchedule: deletes the oldest row of cb; 1 if one was, else 0. */
int rt__schedule_cancel(rt_world *w, uint32_t a, const char *cb);
/* cancelSchedule(id): 1 if row id was deleted, 0 if missing. */
int rt__schedule_cancel_id(rt_world *w, uint32_t a, int64_t id);
/* What a schedule call asks for (A.10). */
typedef struct rt_sched_req {
  int64_t delay_us;         /* schedule(delay) */
  int64_t interval_us;      /* > 0: scheduleEvery(interval) */
  const char *cron;         /* non-empty: schedule(cron) */
  const char *payload;      /* JSON text or NULL (undefined) */
  int idempotent;           /* -1 the SDK default (cron, interval: yes;
                               delayed: no), 0 no, 1 yes */
  char *cron_buf, *payload_buf; /* owned copies (workload requests) */
} rt_sched_req;
/* schedule / scheduleEvery with everything the SDK takes: the id of the
** new or deduplicated row (*created 1 / 0), or -1 with err (a bad cron
** expression, storage). Calls _scheduleNextAlarm either way. */
int64_t rt__schedule_with(rt_world *w, uint32_t a, const char *cb, const rt_sched_req *q,
                          int *created, char *err, size_t n_err);
/* runFiber(name) from user code: the row (with `snapshot`, JSON or NULL),
** keepAlive, FIBER_START; the body starts in the next event. Returns the
** fiber id or -1. */
int64_t rt__fiber_spawn(rt_world *w, uint32_t a, const char *name, const char *snapshot);

/* ---- rt_agent_store.c: cf_agents_runs, cf_agents_schedules --------------- */
extern rt_store_module rt__agent_store;
/* A fiber snapshot as stored: {"pc":N}, the program counter after the
** stash; and back (-1 for NULL or anything else). */
void rt__snapshot_text(char *buf, size_t n, int pc);
int rt__snapshot_pc(const unsigned char *snap);
int rt__w_fiber_insert(rt_world *w, uint32_t a, int64_t id, const char *name);
int rt__w_stash(rt_world *w, uint32_t a, int64_t id, int pc);
/* Snapshot text of a stash with a JSON value into the row (RT_EV_STASH with
** pc -1 and the value; ctx.stash or this.stash in s2). */
int rt__w_stash_value(rt_world *w, uint32_t a, int64_t id, const char *value, int via_this);
int rt__w_fiber_delete(rt_world *w, uint32_t a, int64_t id);
/* The snapshot of run row id as the fiber reads it now (its own pending
** writes included) into buf: "null" when none or no row. */
void rt__fiber_snapshot(rt_world *w, uint32_t a, int64_t id, char *buf, size_t n);
/* 1 if cf_agents_runs of actor a holds a row not active in this incarnation
** (_hasPendingFiberRecovery, #1729). */
int rt__pending_fiber_recovery(rt_world *w, uint32_t a);
int rt__load_orphans(rt_world *w, uint32_t a, rt_orphan *out, int cap);
/* The snapshot of fiber row id as stored (any JSON: {"pc":N}, a chat
** turn's {"__cfChat":...}), interned; "null" when NULL or absent. */
uint32_t rt__orphan_snapshot(rt_world *w, uint32_t a, int64_t id);
int rt__count_runs(rt_world *w, uint32_t a);
int rt__w_schedule_insert(rt_world *w, uint32_t a, int64_t id, const char *callback,
                          int64_t time_s, int64_t interval_s);
int rt__w_schedule_delete(rt_world *w, uint32_t a, int64_t id, const char *callback);
/* Re-times row id (and clears `running`): SCHEDULE_SET when the row exists. */
int rt__w_schedule_time(rt_world *w, uint32_t a, int64_t id, int64_t time_s, int64_t iv_s,
                        const char *callback);
/* Writes schedule row r (every column the model keeps); SCHEDULE_SET. */
int rt__w_schedule_put(rt_world *w, uint32_t a, const rt_sched_row *r);
/* running / execution_started_at (started_s, unix seconds) of row id: the
** alarm marks an interval row running as it starts it (finishing writes the
** row's time, rt__w_schedule_time). */
int rt__w_schedule_running(rt_world *w, uint32_t a, int64_t id, int running, int64_t started_s,
                           const char *callback);
/* The rows with time <= now_s, by time and id (at most cap). */
int rt__due_schedule_rows(rt_world *w, uint32_t a, int64_t now_s, rt_sched_row *out, int cap);
/* Row id into *out: 1 found, 0 not. */
int rt__schedule_get(rt_world *w, uint32_t a, int64_t id, rt_sched_row *out);
/* _scheduleNextAlarm's earliest schedule time (s), or -1: a running interval
** started after now_s - hung_s counts at started + hung_s (A.4). */
int64_t rt__next_schedule_time(rt_world *w, uint32_t a, int64_t now_s, int64_t hung_s);
int rt__schedule_find(rt_world *w, uint32_t a, const char *callback, int64_t *id);
/* The SDK's dedup lookup: a row with key's type, callback, interval (type
** interval), cron (type cron) and payload (NULL matches NULL), owner NULL;
** by_callback: any row of the callback (the model bug of issue #14). */
int rt__schedule_match(rt_world *w, uint32_t a, const rt_sched_row *key, int by_callback,
                       int64_t *id);

/* ---- user methods and calls (MSG_INVOKE, MSG_RPC, CALL_USER) ------------
** The core serves a by-name request (MSG_INVOKE) through the table's
** on_request and an RPC (MSG_RPC) through on_call; user code calls another
** actor with rt__user_call and gets the reply through call_reply. */
/* Sends RPC `method` with JSON `args` (NULL: null) from actor a to target;
** the reply reaches a's table as call_reply(key, ok, value). 0, or -1 when
** out of memory (nothing sent). */
int rt__user_call(rt_world *w, uint32_t a, uint32_t target, const char *method,
                  const char *args, int64_t key);
/* A detached on_request (MSG_INVOKE) or on_call (MSG_RPC) of message `id`
** ended: ok 1 with `value` (result JSON, NULL: undefined), ok 0 with the
** error message `value`. Answers the request or the caller; nothing when
** the message is no longer being served (the incarnation died). */
void rt__user_request_end(rt_world *w, uint32_t a, int64_t id, int ok, const char *value);

/* ---- detached user code ends (rt_usercode.h: RT_UC_DETACHED) -----------
** A user-code implementation that drives a callback itself (a Lua
** coroutine: rt_uc_lua.c) reports its end here; the core names no script
** symbol (tests/sh_seam.sh). */
/* The body of a fiber (a script's) ended, or ran its steps. */
void rt__fiber_end(rt_world *w, uint32_t a, rt_fiber *f, int ok, const char *result);
/* runFiber(name) up to the body: the row, keepAlive, FIBER_START; the body
** is the caller's (f->lua). NULL on OOM. */
rt_fiber *rt__fiber_create_named(rt_world *w, uint32_t a, const char *name,
                                 int64_t recovered_from);
/* The extension that answered 1 from recover_orphan has recovered the
** current orphan: its row is deleted and _checkRunFibers goes on. */
void rt__orphan_recovered(rt_world *w, uint32_t a);
/* A script's onFiberRecovered for the current orphan ended: returned
** (resumed: it called runFiber) or threw err. Goes on with the next row. */
void rt__hook_finish(rt_world *w, uint32_t a, int ok, const char *err, int resumed);
/* The user onStart ended (returned, or threw err): startup goes on. */
void rt__onstart_finish(rt_world *w, uint32_t a, int ok, const char *err);
/* A detached schedule callback (on_schedule answered RT_UC_DETACHED) of
** row `id` ended: returned (ok 1) or threw err. alarm() goes on as after a
** callback that returned at once: the next row, or tryN's retry. */
void rt__schedule_end(rt_world *w, uint32_t a, int64_t id, int ok, const char *err);

#endif
