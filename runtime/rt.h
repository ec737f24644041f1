/*
** rt.h: the runtime under test: actor host plus agent layer.
**
** A world holds actors (Durable Objects running the Agents SDK model) over
** one kernel (sim). Each actor has durable storage (SQLite: cf_agents_runs,
** cf_agents_schedules, cf_agent_tool_runs, its alarm) that survives its
** death, and memory (startup status, keepAlive refs, active fibers, gate,
** waiters) that does not. Everything it does is a trace record
** (rt_events.h). Seeds followed: 000 (keepAlive, runFiber, stash,
** _checkRunFibers), 001 (heartbeat-as-schedule, legacy fibers), 003 (gate,
** tool runs), 002 (checkpoint executor), 004 (thread store), 000 Layer 3
** (durable chat turns); reference/agents-sdk.md A.0–A.12; workerd-observed.md.
**
** Lifecycle: rt_world_new → rt_actor_add… → workload and faults through the
** functions below (they schedule sim events) → sim_run → rt_world_free.
*/
#ifndef RT_H
#define RT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/rt_events.h"
#include "sim/sim.h"

typedef enum rt_heartbeat { RT_HB_ALARM = 0, RT_HB_SCHEDULE = 1 } rt_heartbeat;
/* What the last keepAlive dispose does to the alarm: nothing (@1604),
** reschedule at once (fixed: #1707 as an ideal), or as the SDK's #1707
** disposer has it: a waitUntil-deferred _scheduleNextAlarm whose decision and
** setAlarm are separate events, so a lease re-taken at the same instant
** races it. */
typedef enum rt_dispose {
  RT_DISPOSE_SDK1604 = 0,
  RT_DISPOSE_FIXED = 1,
  RT_DISPOSE_SDK1707 = 2
} rt_dispose;
/* Tool-run reconciliation at startup: deferred (PR #1604), gated (before
** it: the #1595 wedge), and deferred without the startup snapshot (a
** broken variant: runIds undefined reconciles every open row, including
** runs the user onStart itself started). */
typedef enum rt_toolrun_mode {
  RT_TOOLRUN_DEFERRED = 0,
  RT_TOOLRUN_GATED = 1,
  RT_TOOLRUN_UNSNAPSHOTTED = 2
} rt_toolrun_mode;
typedef enum rt_commit { RT_COMMIT_TURN = 0, RT_COMMIT_IMMEDIATE = 1 } rt_commit;
/* Run ids of tool calls made by chat turns: a fresh id per runAgentTool
** call (@1604, the #1630 incident), or the stable child runId
** `agent-tool:<toolCallId>` of PR #1640, with re-attachment to a running
** child instead of abandoning it. */
typedef enum rt_toolrun_ids { RT_TR_IDS_FRESH = 0, RT_TR_IDS_STABLE = 1 } rt_toolrun_ids;
/* What _checkRunFibers does with the row of a hook that threw: delete it
** (@1604: the work is lost) or keep it and retry on a backed-off follow-up
** alarm until it is older than fiber_max_age_us (SDK #1729). */
typedef enum rt_retain { RT_RETAIN_NONE = 0, RT_RETAIN_1729 = 1 } rt_retain;
/* The dedup key of scheduleEvery: the SDK's (type, callback, interval,
** payload, owner: insertIntervalForOwner), or the callback name alone (the
** model's old behaviour, a bug kept as a variant: a second scheduleEvery of
** the same callback with another interval or payload is lost). */
typedef enum rt_every_key { RT_EVERY_KEY_SDK = 0, RT_EVERY_KEY_CALLBACK = 1 } rt_every_key;
/* Where a declarative recovery hook's runFiber runs during startup: in the
** hook's own turn, its body after the user onStart even if onStart throws
** (the fix), or handed whole to "after startup", dropped when onStart
** throws while the old row is deleted (the bug hook-resume-before-failed-
** onstart.json guards). */
typedef enum rt_hook_run { RT_HOOK_RUN_IN_HOOK = 0, RT_HOOK_RUN_AFTER_STARTUP = 1 } rt_hook_run;
/* When a failed commit resets the actor: when the turn returns, the rest
** of the turn unable to write (the fix), or at once inside the failing
** commit (the old use after free, emulated safely: the actor_death record
** comes at once, the rest of the turn runs on and its writes commit, the
** memory goes when the turn returns; storage-fail-immediate-commit.json). */
typedef enum rt_fail_reset { RT_FAIL_RESET_AFTER_TURN = 0, RT_FAIL_RESET_SYNC = 1 } rt_fail_reset;

/* Platform and SDK constants plus variant choices. rt_config_default()
** fills the values the seeds and the reference give. */
typedef struct rt_config {
  int64_t gate_ceiling_us;          /* 30 s: blockConcurrencyWhile ceiling */
  int64_t keepalive_interval_us;    /* 30 s (DEFAULT_KEEP_ALIVE_INTERVAL_MS) */
  int64_t heartbeat_schedule_us;    /* 10 s: seed 001's interval schedule */
  int64_t idle_min_us, idle_max_us; /* 70 s .. 140 s inactivity eviction */
  int64_t alarm_retry_base_us;      /* 2 s, doubling */
  int alarm_retry_max;              /* 6 retries */
  int64_t alarm_limit_us;           /* 15 min: alarm handler is cut */
  int64_t commit_window_us;         /* delay from turn end to commit (turn mode) */
  int64_t rpc_latency_us;           /* one-way latency between actors */
  int64_t inspect_timeout_us;       /* 2 s: DEFAULT_AGENT_TOOL_RECOVERY_TIMEOUT_MS */
  int64_t inspect_total_us;         /* 0 = none; 5 s option (#1611) */
  int64_t hook_timeout_us;          /* 0 = user hooks never time out (@1604) */
  int64_t fiber_max_age_us;         /* 24 h: fiberRecoveryMaxAgeMs (#1729); 0 = keep forever */
  int64_t recovery_backoff_max_us;  /* 5 min: FIBER_RECOVERY_MAX_BACKOFF_MS (#1729) */
  rt_retain retain;                 /* hook-threw rows: deleted (@1604) or kept (#1729) */
  rt_heartbeat heartbeat;
  rt_dispose dispose;
  rt_toolrun_mode toolrun;
  rt_commit commit;
  int workerd_name_bug;             /* workerd #6850: an alarm wake loses the
                                       actor's name and every startup in that
                                       process throws until a restart */
  int storage_files;                /* 1: file-backed WAL databases */
  char storage_dir[256];            /* where file databases live */
  rt_exec_adapter exec_adapter;     /* seed 002: default adapter of executor turns */
  rt_thread_store thread_store;     /* seed 004: default thread store variant */
  rt_chat_policy chat;              /* seed 000 Layer 3: chat recovery of actors
                                       that set none (all-zero: inline, {}) */
  rt_chat_bug chat_bug;             /* a deliberately broken chat recovery */
  rt_toolrun_ids toolrun_ids;       /* chat tool calls: fresh ids (@1604) or
                                       stable ids + re-attach (#1640) */
  int64_t reattach_budget_us;       /* 120 s: #1640's no-progress budget */
  int64_t hung_schedule_us;         /* 30 s: hungScheduleTimeoutSeconds */
  int schedule_attempts;            /* 3: retry maxAttempts (tryN) */
  int64_t schedule_retry_base_us;   /* 100 ms: retry baseDelayMs */
  int64_t schedule_retry_max_us;    /* 3000 ms: retry maxDelayMs */
  rt_every_key every_key;           /* scheduleEvery's dedup key */
  rt_hook_run hook_run;             /* a hook's runFiber at startup (regression variant) */
  rt_fail_reset fail_reset;         /* reset after a failed commit (regression variant) */
} rt_config;

/* Fills *c with the default constants and variants (deferred tool runs,
** raw-alarm heartbeat, #1604 disposer, turn commits, in-memory storage). */
void rt_config_default(rt_config *c);

/* ---- fiber programs ----------------------------------------------------
** A fiber body is a list of steps. A `work` step takes virtual time and
** ends the current turn; every other step runs in the turn that follows,
** up to the next `work`. A stash commits with its whole turn, so a stash
** without a value stores {"pc":N} where N is the resume point: the first
** step after that turn (the next `work` or `call`, or the end). A stash
** with a value stores the value itself (any JSON); the body resumes after
** the turn of the last stash step whose value equals the snapshot. */
typedef enum rt_step_kind {
  RT_STEP_WORK = 1,     /* min_us..max_us of virtual time (drawn) */
  RT_STEP_STASH = 2,    /* stash({pc}) */
  RT_STEP_EFFECT = 3,   /* an external side effect named `name` */
  RT_STEP_CALL = 4,     /* RPC to actor `target`, wait for the reply */
  RT_STEP_FAIL = 5,     /* the body throws (name: its message) */
  RT_STEP_RETURN = 6,   /* the body returns (name: the value as JSON) */
  RT_STEP_READ = 7      /* the body reads its current snapshot (RT_EV_FIBER_READ) */
} rt_step_kind;

#define RT_STEP_TEXT 96

typedef struct rt_step {
  rt_step_kind kind;
  int64_t min_us, max_us;  /* RT_STEP_WORK: the range. RT_STEP_FAIL: min_us is
                           `attempts`: 0 always throws; N only on the first N
                           attempts of a schedule callback (tryN retries it;
                           a fiber body is always attempt 1) */
  uint32_t target;      /* RT_STEP_CALL */
  char name[RT_STEP_TEXT]; /* effect name, stash value, fail message, return value */
  int has_value;        /* RT_STEP_STASH: 1 if name holds a JSON value */
  int via_this;         /* RT_STEP_STASH: this.stash (1) or ctx.stash (0) */
} rt_step;

typedef struct rt_program {
  char name[64];        /* fiber name (recovery policies key on it) */
  rt_step *steps;       /* owned by the world once added */
  int n_steps;
} rt_program;

/* What the actor's recovery hook does for fibers of one name. The hook
** throws on its first `throws` calls for one fiber row (counted across
** incarnations: the scenario's oracle, not actor memory), then takes
** `action`; with `require_field`, it resumes only a snapshot that is a JSON
** object with that top-level member and returns without resuming (drop)
** otherwise. */
typedef struct rt_recovery_policy {
  char fiber_name[64];  /* "" matches every name */
  rt_recover_action action;
  int64_t hook_us;      /* time the hook takes (inside the gate) */
  int throws;           /* throw on the first N calls per row */
  char require_field[48];
} rt_recovery_policy;

/* How a child actor misbehaves (stuck_child fault, or its own nature). */
typedef enum rt_stuck {
  RT_STUCK_NONE = 0,
  RT_STUCK_NEVER_ANSWERS = 1,   /* RPCs to it never reply */
  RT_STUCK_LATE = 2,            /* replies after stuck_delay_us */
  RT_STUCK_STARTUP = 3          /* its onStart never finishes */
} rt_stuck;

/* When the user's onStart throws. */
typedef enum rt_onstart_throw {
  RT_THROW_NEVER = 0,
  RT_THROW_ALWAYS = 1,
  RT_THROW_UNTIL_FRESH_REQUEST = 2  /* workerd #6850: alarm wakes throw; a
                                       process whose first wake is a request
                                       starts fine */
} rt_onstart_throw;

#define RT_MAX_POLICIES 8
#define RT_MAX_CHILDREN 16

typedef struct rt_actor_spec {
  char id[64];
  char cls[48];
  int64_t on_start_us;              /* time the user onStart takes */
  rt_onstart_throw on_start_throws;
  rt_stuck stuck;
  int64_t stuck_delay_us;
  int64_t serve_us;                 /* time to serve one request */
  int64_t child_inspect_us;         /* time the child's inspect takes */
  rt_recovery_policy policies[RT_MAX_POLICIES];
  int n_policies;
  uint32_t children[RT_MAX_CHILDREN];
  int n_children;
  int64_t on_alarm_keepalive_us;    /* > 0: the user's onAlarm runs
                                       keepAliveWhile(fn) with fn taking this
                                       long: a lease re-taken on every wake
                                       (#1703/#1704) */
  int on_start_tool_run;            /* 1: the user onStart calls runAgentTool */
  uint32_t on_start_child;          /* ... on this child */
  int64_t on_start_work_us;         /* ... which works this long */
  rt_chat_policy chat;              /* chat recovery (set = 0: the config's) */
  int finish_hook_throws;           /* 1: the user onAgentToolFinish throws
                                       (onError, swallowed; issue #15) */
  int tool_result;                  /* as a child: how its runs end (0 =
                                       completed, else an rt_toolrun_status) */
  char tool_error[96];              /* ... the error message of an error run */
  int max_tools;                    /* maxConcurrentAgentTools (0 = Infinity) */
  int tool_chunks;                  /* as a child: chunks its runs store, evenly
                                       over the work (issue #15; 0 none) */
  int finish_hook_aborts;           /* 1: its onAgentToolFinish aborts every
                                       other open run (first result wins) */
} rt_actor_spec;

typedef struct rt_world rt_world;

/* Makes a world over the kernel s (which it does not own). Returns NULL on
** OOM or when file storage cannot be prepared. */
rt_world *rt_world_new(sim *s, const rt_config *cfg);

/* Registers every model and builds the schema template of new databases,
** once per process (rt_world_new does it on first use). A process that
** forks workers calls it first, so that each worker inherits both instead
** of running the schema itself (issue #18). 0, or -1 on OOM or SQL error. */
int rt_storage_prepare(void);

/* Touches, in this process, much of what opening a file database will
** touch (SQLite's code, its globals, a heap as large as a connection's):
** an in-memory copy of the schema template is parsed, written and closed
** (a caller that wants the heap kept raises malloc's trim threshold
** first). No result changes, only where the page faults happen: a
** pre-forked sigkill generation calls it while it waits for the files
** (issue #18). */
void rt_storage_warm(void);

/* Frees the world, closing every database (file databases stay on disk). */
void rt_world_free(rt_world *w);

/* Adds an actor; returns its index (0, 1, …) or UINT32_MAX on error. The
** spec is copied. Storage is opened lazily on first use. */
uint32_t rt_actor_add(rt_world *w, const rt_actor_spec *spec);

/* Number of actors, and the spec of one (NULL if out of range). */
uint32_t rt_actor_count(const rt_world *w);
const rt_actor_spec *rt_actor_spec_of(const rt_world *w, uint32_t actor);

/* Registers a fiber program by name (copied; a second program of the same
** name is ignored), so that recovery can resume fibers of that name even
** when no workload item of this process started one. Returns its index or
** -1. */
int rt_program_register(rt_world *w, const rt_program *prog);

/* ---- pre-existing durable state (for incident scenarios) -------------- */

/* Inserts a stale cf_agent_tool_runs row (status starting or running) on
** `parent` for a run whose child is `child`; the child gets a matching
** child-run row with `child_status` (0 = none, else an rt_toolrun_status).
** Returns the run id, or -1 on error. Call before the run starts. */
int64_t rt_seed_stale_toolrun(rt_world *w, uint32_t parent, uint32_t child,
                              rt_toolrun_status status, int child_status);

/* Inserts an orphan cf_agents_runs row for a fiber running `prog` whose
** last committed stash was `snapshot_pc` (-1 = null). Returns its id. */
int64_t rt_seed_orphan_fiber(rt_world *w, uint32_t actor, const rt_program *prog,
                             int snapshot_pc);

/* ---- workload (each call schedules sim events at `at_us`) -------------- */

/* ---- scripted actors (Lua; issue #13; rt_luaagent.c) ------------------- */
/* Gives `actor` a script: `name` (shown in errors as name:line), its text
** src[0..len), and the folder its require/dofile read (NULL: none). All
** copied. The script returns a table of callbacks named as the SDK's
** (docs/scripting.md). Returns 0 or -1. */
int rt_actor_script(rt_world *w, uint32_t actor, const char *name, const char *src, size_t len,
                    const char *dir);
/* A request (fetch) to `actor` that calls its script's method `method` with
** the arguments of JSON text args_json (an array is spread into arguments;
** NULL: none). Answers with the method's return value as JSON, or fails with
** its error. Returns 0 or -1. */
int rt_invoke_at(rt_world *w, uint32_t actor, const char *method, const char *args_json,
                 int64_t at_us);
/* Names the case the world runs (a scenario's variant): scripts read it as
** `revenant.case`, to run a fixed and a broken variant of their own code
** from one scenario. Copied (63 bytes at most). */
void rt_world_set_case(rt_world *w, const char *label);
/* The error that ended the run early ("" if none): a script that could not
** be loaded, an exhausted instruction budget, the memory cap, a sandbox
** escape. The run stops at once (sim_request_stop); callers report it as a
** scenario error. */
const char *rt_world_fatal(const rt_world *w);

/* A request to `actor` through entry point `entry`. Returns 0 or -1. */
int rt_request_at(rt_world *w, uint32_t actor, rt_entry entry, int64_t at_us);

/* A request that calls runFiber(prog) on `actor`; the program is copied.
** Returns 0 or -1. */
int rt_fiber_at(rt_world *w, uint32_t actor, const rt_program *prog,
                int64_t at_us);

/* Awaited runFiber: a request that calls runFiber(prog) and answers when
** the body ends: with its return value (RT_EV_REQUEST_OK.result) or its
** error message (RT_EV_REQUEST_FAIL.error). Returns 0 or -1. */
int rt_fiber_awaited_at(rt_world *w, uint32_t actor, const rt_program *prog,
                        int64_t at_us);

/* A request whose handler calls this.stash(value) outside any fiber: it
** fails with the SDK's "stash() called outside a fiber". Returns 0 or -1. */
int rt_stash_outside_at(rt_world *w, uint32_t actor, int64_t at_us);

/* A request that calls runAgentTool on `parent` with child `child`; the
** child works for work_us. Returns 0 or -1. */
int rt_toolrun_at(rt_world *w, uint32_t parent, uint32_t child,
                  int64_t work_us, int64_t at_us);

/* A request that calls _scheduleAgentToolRunRecovery() on `actor` with no
** options (runIds undefined: every open row), not awaited; while a pass is
** in flight it returns that pass (single flight; RT_EV_TOOLRUN_RECOVERY
** phase 2 "joined"). Issue #15. Returns 0 or -1. */
int rt_toolrun_recovery_at(rt_world *w, uint32_t actor, int64_t at_us);

/* A request to `parent` that aborts every open run of `child`, oldest first
** (their AbortSignal; RT_EV_TOOLRUN_ABORT by "workload", status aborted, the
** finish hook, the `aborted` event, cancelAgentToolRun on the child). A
** terminal run is not rewritten. Issue #15. Returns 0 or -1. */
int rt_toolrun_abort_at(rt_world *w, uint32_t parent, uint32_t child, int64_t at_us);

/* A client of `parent` reconnects (a WebSocket message) asking for the
** events after sequence `since` (-1: all, started included) of every run,
** in started_at order: RT_EV_TOOLRUN_REPLAY, then per run the stored chunks
** (getAgentToolChunks on its child) and, for a terminal run, its terminal
** event, as RT_EV_TOOLRUN_EVENT with replay 1. Returns 0 or -1. */
int rt_toolrun_replay_at(rt_world *w, uint32_t parent, int since, int64_t at_us);

/* runAgentTool(child) with runId `run_id` (> 0; the run RT_TR_USER_BASE +
** run_id, 2000000000000 + run_id): a new id starts a run; an existing
** terminal row returns its stored result (RT_EV_TOOLRUN_ATTACH "stored");
** an open row is re-attached with stable ids (#1640), else (@1604) its
** chunks are replayed and it ends interrupted ("reused"). Returns 0 or -1. */
int rt_toolrun_id_at(rt_world *w, uint32_t parent, uint32_t child, int64_t work_us,
                     int64_t run_id, int64_t at_us);

/* A request that calls schedule(delay, callback) (interval_us == 0: a
** one-shot row at floor((now + delay) / 1 s)) or scheduleEvery(interval,
** callback) (idempotent on callback and interval, first run at now +
** interval) on `actor` (reference A.10). Seconds in the table, as the SDK
** stores them. Returns 0 or -1. */
int rt_schedule_at(rt_world *w, uint32_t actor, const char *callback, int64_t delay_us,
                   int64_t interval_us, int64_t at_us);

/* A schedule call with everything the SDK takes (reference A.10). */
typedef struct rt_schedule_spec {
  int64_t delay_us;         /* schedule(delay) */
  int64_t interval_us;      /* > 0: scheduleEvery(interval) */
  const char *cron;         /* non-NULL: schedule(cron), 5 or 6 fields (rt_cron.h) */
  const char *payload;      /* JSON text, NULL: undefined */
  int idempotent;           /* -1 the SDK default (cron, scheduleEvery: on;
                               delayed: off), 0 off, 1 on */
} rt_schedule_spec;

/* A request that calls schedule / scheduleEvery per sp on `actor`; a bad
** cron expression fails the request with cron-schedule's message. A dedup
** hit (idempotent) returns the row, reschedules, and writes nothing
** (RT_EV_SCHEDULE_DEDUP). Returns 0 or -1. */
int rt_schedule_ex_at(rt_world *w, uint32_t actor, const char *callback,
                      const rt_schedule_spec *sp, int64_t at_us);

/* A cf_agents_schedules row as a previous process left it (seeded before
** the run; issue #14). */
typedef struct rt_schedule_seed {
  char callback[48];
  int64_t time_us;          /* the row's `time` (stored in whole seconds) */
  int64_t interval_us;      /* > 0: an interval row */
  char cron[64];            /* non-empty: a cron row */
  char payload[128];        /* JSON, "" NULL */
  int running;              /* interval: running = 1 */
  int64_t started_us;       /* execution_started_at, -1 NULL */
  int no_alarm;             /* 1: the stored alarm was lost (none is armed);
                               0: the alarm is armed at the row's time, or
                               kept at an earlier one */
} rt_schedule_seed;

/* Writes seed row s into actor a's storage before the run (no trace record
** but its write); arms the stored alarm unless s->no_alarm. Returns the
** row id or -1. */
int64_t rt_seed_schedule(rt_world *w, uint32_t a, const rt_schedule_seed *s);

/* A request that calls cancelSchedule on the oldest row of `callback`. */
int rt_cancel_schedule_at(rt_world *w, uint32_t actor, const char *callback, int64_t at_us);

/* A request that runs keepAliveWhile(fn) where fn takes hold_us: a ref is
** held for that long, and the request answers when fn returns (A.3). */
int rt_keepalive_while_at(rt_world *w, uint32_t actor, int64_t hold_us, int64_t at_us);

/* A request that calls keepAlive() and keeps its disposer under the name
** `lease` (in the actor's memory: a death loses it). Returns 0 or -1. */
int rt_keepalive_acquire_at(rt_world *w, uint32_t actor, const char *lease, int64_t at_us);

/* A request that calls the disposer kept under `lease`; a second dispose of
** the same disposer, or of one this incarnation never took, is a no-op
** (RT_EV_KEEPALIVE_DISPOSE released = 0). Returns 0 or -1. */
int rt_keepalive_dispose_at(rt_world *w, uint32_t actor, const char *lease, int64_t at_us);

/* keepAliveWhile(fn) where fn throws `message` after hold_us: the ref is
** released (finally) and the request fails with the message. */
int rt_keepalive_while_throws_at(rt_world *w, uint32_t actor, int64_t hold_us,
                                 const char *message, int64_t at_us);

/* Arms the alarm of `actor` at at_us (as if set before the run). */
int rt_alarm_preset(rt_world *w, uint32_t actor, int64_t at_us);

/* ---- legacy fibers (seed 001; rt_legacy.c) -----------------------------
** A row per fiber in cf_agents_fibers (status rt_legacy_status, retry_count,
** max_retries); the body is a program whose stash steps are stashFiber.
** Every status change is an RT_EV_LEGACY_FIBER record. */

#define RT_LEGACY_MAX_RETRIES 3     /* spawnFiber's maxRetries default */

/* A request to `actor` that calls spawnFiber(prog->name) with maxRetries
** max_retries (negative: the default 3); the program is copied. Returns 0
** or -1. The fiber id is the RT_EV_LEGACY_FIBER record's a field. */
int rt_spawn_fiber_at(rt_world *w, uint32_t actor, const rt_program *prog,
                      int max_retries, int64_t at_us);

/* A request to `actor` that cancels the oldest running legacy fiber whose
** method is `method` (cancelFiber; nothing if none runs). Returns 0 or -1. */
int rt_cancel_fiber_at(rt_world *w, uint32_t actor, const char *method,
                       int64_t at_us);

/* getFiber: the rt_legacy_status of a legacy fiber (its retry count in
** *retry_count if not NULL), or -1 if there is no such fiber. */
int rt_legacy_status(rt_world *w, uint32_t actor, int64_t fiber_id,
                     int *retry_count);

/* ---- fault points (the only doors faults/ uses) ------------------------ */

/* Kills the memory of one actor now (cause RT_DEATH_EVICT or any other
** rt_death_cause). Uncommitted writes roll back. */
void rt_kill_actor(rt_world *w, uint32_t actor, rt_death_cause cause);

/* Prepares a world built by a fresh process over databases left on disk
** by a killed one: ids continue from id_base (so they never collide with
** rows already stored) and every stored alarm is armed again. Call after
** adding the actors and before running. Returns 0 or -1. */
int rt_world_restore(rt_world *w, int64_t id_base);

/* Records, without touching storage, that the process is about to be
** killed for real: for every live actor an RT_EV_TXN_ROLLBACK of its open
** turn (the database will discard it on reopen) and an RT_EV_ACTOR_DEATH
** with cause RT_DEATH_SIGKILL. The world must not run afterwards. */
void rt_world_note_sigkill(rt_world *w);

/* Kills the memory of every actor now (restart, crash, sigkill). */
void rt_kill_all(rt_world *w, rt_death_cause cause);

/* Sets a child's misbehaviour from now on. */
void rt_set_stuck(rt_world *w, uint32_t actor, rt_stuck mode, int64_t delay_us);

/* Sets how long the user onStart of `actor` takes from now on (a forced
** gate timeout when it exceeds the ceiling). */
void rt_set_onstart_us(rt_world *w, uint32_t actor, int64_t us);

/* Makes the next `count` commits of `actor` (RT_NO_ACTOR: any actor) fail
** with an I/O error (through the libfiu point "revenant/storage/commit"). */
void rt_fail_commits(rt_world *w, uint32_t actor, int count);

/* Makes the next `count` onStart calls of `actor` (RT_NO_ACTOR: of every
** actor) throw "onStart threw" (the onstart_throw fault). */
void rt_onstart_throws(rt_world *w, uint32_t actor, int count);

/* Extra RPC latency added to every call from now on (rpc_delay), and the
** per-million chance that a call is dropped (rpc_drop). */
void rt_set_rpc_faults(rt_world *w, int64_t extra_latency_us, uint32_t drop_ppm);

/* Delays every alarm delivery by extra_us from now on (alarm_delay). */
void rt_set_alarm_delay(rt_world *w, int64_t extra_us);

/* The message a client (or a calling actor) gets while the process hosting
** a Durable Object is down: the platform's retryable routing error, as
** Durable Object clients quote it (it is not in workerd's open source: the
** routing layer that says it is Cloudflare's own). */
#define RT_MSG_DOWN "Cannot resolve Durable Object due to transient issue on remote node."

/* down_for (issue #14): the process stays down until until_us. Requests
** and calls that arrive meanwhile fail at once with RT_MSG_DOWN (no actor
** wakes); an alarm that falls due is delivered at until_us (an alarm is
** at-least-once: it fires when the object can run again). */
void rt_set_down(rt_world *w, int64_t until_us);

/* Deletes the stored alarm of actor a (RT_NO_ACTOR: every actor) behind the
** actor's back: the alarm row vanishes (the lost-alarm fault). Schedule
** rows stay; only a later _scheduleNextAlarm (schedule, cancelSchedule,
** keepAlive, an idempotent hit) arms it again. */
void rt_lose_alarm(rt_world *w, uint32_t a);

/* How often the run reached probe p (an rt_probe, rt_events.h) so far; 0
** for an unknown p. */
uint32_t rt_probe_hits(const rt_world *w, int p);

/* Number of durable write boundaries passed so far (every RT_EV_WRITE). */
uint64_t rt_write_count(const rt_world *w);

/* Calls fn(ctx) right after the k-th durable write of the run commits its
** turn (k >= 1); used by crash-point coverage. One hook at a time. */
void rt_on_write(rt_world *w, uint64_t k, void (*fn)(void *ctx), void *ctx);

/* ---- inspection for tests and reports ---------------------------------- */

/* The kernel the world runs on. */
sim *rt_world_sim(rt_world *w);

/* Number of rows in cf_agents_runs of an actor (opens storage if needed). */
int rt_count_fiber_rows(rt_world *w, uint32_t actor);

/* Status of a tool run on its parent, or -1 if absent. */
int rt_toolrun_status_of(rt_world *w, uint32_t parent, int64_t run_id);

/* The persisted alarm time of an actor, or -1 if none. */
int64_t rt_alarm_of(rt_world *w, uint32_t actor);

/* 1 if the actor's memory is alive (it has an incarnation). */
int rt_actor_alive(const rt_world *w, uint32_t actor);

/* Current keepAlive ref count (0 if not alive). */
int rt_keepalive_refs(const rt_world *w, uint32_t actor);

/* One column condition of rt_query_rows: column == value. */
typedef struct rt_qcol {
  const char *name;         /* a column of the table (rt_schema_columns) */
  int kind;                 /* 0: integer i, 1: text s, 2: IS NULL */
  int64_t i;
  const char *s;
} rt_qcol;

/* The number of rows of SDK table `table` (one of rt_schema.h's tables) in
** the storage of `actor` whose columns equal cols[0..n), committed or
** pending, read at the end of a run (facts, scenarios/scn_facts.c).
** Returns -1 for an unknown table or column, or an SQL error. */
int64_t rt_query_rows(rt_world *w, uint32_t actor, const char *table, const rt_qcol *cols,
                      int n);

/* ---- checkpoint executor (seed 002 "Durable Execution"; rt_executor.c) --
** The actor runner of a Beach turn calls DurableExecutor.checkpoint() at
** every lifecycle moment; the adapter persists it; restore(turnId) returns
** a turn's checkpoints oldest first. Records: RT_EV_EXEC_* (rt_events.h). */

#define RT_EXEC_MAX_TOOLS 16

/* One executor turn (a request to the actor that runs the turn). */
typedef struct rt_exec_turn_spec {
  int tools;                /* tool calls of the first LLM iteration, 0..RT_EXEC_MAX_TOOLS */
  int adapter;              /* rt_exec_adapter, or -1: cfg.exec_adapter */
  int fail_phase;           /* 0, or an rt_exec_phase: the first checkpoint of
                               that phase in this turn fails (substrate error) */
  int64_t cancel_after_us;  /* > 0: cancelTurn this long after the slot opens */
  uint32_t dup_ppm;         /* chance per million that a checkpoint call is
                               delivered twice (a network-layer retry) */
} rt_exec_turn_spec;

/* Fills *t with one tool call, the configured adapter, no failure, no
** cancellation and no retries. */
void rt_exec_turn_default(rt_exec_turn_spec *t);

/* Schedules an executor turn on `actor` at at_us (a fetch request; the turn
** runs once the actor has started). Returns 0, or -1 on a bad actor, a bad
** spec or OOM. The turn id is the RT_EV_EXEC_TURN record's a field. */
int rt_exec_turn_at(rt_world *w, uint32_t actor, const rt_exec_turn_spec *spec,
                    int64_t at_us);

/* CheckpointPhaseRegistry.register: adds a consumer phase to the world's
** open registry. Returns its id (>= RT_PH_FIRST_CUSTOM), or -1 if the name
** is empty, too long (47 bytes), already registered, or the registry is
** full (32 phases). The five canonical phases are always registered. */
int rt_exec_phase_register(rt_world *w, const char *name, const char *description);

/* The id of a registered phase name, or -1; and the name of a registered
** id (NULL if none). */
int rt_exec_phase_id(rt_world *w, const char *name);
const char *rt_exec_phase_of(rt_world *w, int id);

/* TurnCheckpoint. timestamp is virtual milliseconds since the start of the
** run (the seed's ISO-8601 string, as a number); state is JSON text. */
typedef struct rt_checkpoint {
  int64_t turn_id;
  char session_id[32];
  char phase[48];
  char state[192];
  int64_t timestamp_ms;
} rt_checkpoint;

/* DurableExecutor.checkpoint through adapter `ad` of `actor`, called
** directly (consumer code firing its own phase, or a test). Returns 0 when
** durable (idempotent on (turn_id, phase, timestamp)), -1 on an unknown
** phase or a storage failure. Emits RT_EV_EXEC_CHECKPOINT and RT_EV_EXEC_ACK. */
int rt_exec_checkpoint(rt_world *w, uint32_t actor, rt_exec_adapter ad,
                       const rt_checkpoint *cp);

/* DurableExecutor.restore: the checkpoints of turn_id, oldest first, into
** out (at most cap). Returns how many there are (may exceed cap), or -1.
** Emits RT_EV_EXEC_RESTORE and one RT_EV_EXEC_RESTORED per item. */
int rt_exec_restore(rt_world *w, uint32_t actor, rt_exec_adapter ad, int64_t turn_id,
                    rt_checkpoint *out, int cap);

/* ---- thread store (seed 004 "Persistence and Versioning"; rt_thread.c) --
** A thread lives in one actor's storage; writers are runs (requests to
** that actor) that append ThreadChangeSets with
** VersionPrecondition::Exact(version). Records: RT_EV_THREAD_*. */

#define RT_THREAD_MAX_WRITERS 16

typedef struct rt_thread_spec {
  int writers;              /* concurrent writers, 1..RT_THREAD_MAX_WRITERS */
  int runs;                 /* runs each writer completes (a failed run is
                               retried as a new run, at most 4 x runs tries) */
  int tools;                /* tool calls per run, 0..RT_EXEC_MAX_TOOLS */
  int store;                /* rt_thread_store, or -1: cfg.thread_store */
  int fail_reason;          /* 0, or an rt_thread_reason: the first append
                               with that reason fails (storage error) */
  int64_t step_max_us;      /* writers start, infer and run tools after delays
                               drawn from [1 ms, step_max_us] ("runtime.thread") */
} rt_thread_spec;

/* Two writers, one run each, one tool call, the configured store, no
** failure, steps up to 50 ms. */
void rt_thread_spec_default(rt_thread_spec *t);

/* Makes a new thread on `actor` and schedules its writers from at_us.
** Returns the thread id (> 0), or -1 on a bad actor, a bad spec or OOM. */
int64_t rt_thread_writers_at(rt_world *w, uint32_t actor, const rt_thread_spec *spec,
                             int64_t at_us);

/* The committed version of a thread (0: no changeset yet), or -1. */
int64_t rt_thread_version(rt_world *w, uint32_t actor, int64_t thread);

/* Number of messages in the thread's committed changesets, or -1. */
int rt_thread_message_count(rt_world *w, uint32_t actor, int64_t thread);

/* 1 if the committed thread state holds `path`, 0 if not, -1 on error. */
int rt_thread_state_has(rt_world *w, uint32_t actor, int64_t thread, const char *path);

/* ---- durable chat turns (seed 000 Layer 3; reference A.12; rt_chat.c) --
** A chat turn runs as fiber "__cf_internal_chat_turn:<requestId>"; the
** upstream model stream sends `chunks` text chunks, one every drawn
** [chunk_every/2, 3*chunk_every/2] (stream "runtime.chat"); each chunk is
** persisted as it arrives. Records: RT_EV_CHAT_* (rt_events.h). */

/* A chat request (a user message) to `actor` at at_us; its body is
** {"chunks": chunks, "chunkEvery": chunk_every_us}. chunks 1..RT_CHAT_MAX_CHUNKS,
** chunk_every_us > 0. Returns 0, or -1 on bad arguments or OOM. */
#define RT_CHAT_MAX_CHUNKS 200
int rt_chat_at(rt_world *w, uint32_t actor, int chunks, int64_t chunk_every_us,
               int64_t at_us);

/* The same chat request, whose model first calls a sub-agent tool: the
** turn calls runAgentTool(child) with toolCallId "call-<user message id>"
** before it streams text, and the child works work_us (issue #15, agents
** #1630). lastBody gains "tool" (the child's actor index) and "work". */
int rt_chat_tool_at(rt_world *w, uint32_t actor, int chunks, int64_t chunk_every_us,
                    uint32_t child, int64_t work_us, int64_t at_us);

/* Direct chat calls as requests (issue #15; rt_sdk.h has them for user
** code): continueLastTurn(); saveMessages() with a user message `text`
** whose turn streams `chunks` (0: lastBody's count) one every
** chunk_every_us; and the client's cancel of the running turn (a WebSocket
** message; RT_EV_CHAT_CANCEL). Each returns 0 or -1. */
int rt_chat_continue_at(rt_world *w, uint32_t actor, int64_t at_us);
int rt_chat_save_at(rt_world *w, uint32_t actor, const char *text, int chunks,
                    int64_t chunk_every_us, int64_t at_us);
int rt_chat_cancel_at(rt_world *w, uint32_t actor, int64_t at_us);

/* Fault door (stream_cut): severs every active upstream stream of `actor`
** (RT_NO_ACTOR: of every actor) now. A store:true generation (retrieve
** provider) keeps generating on the provider's side. */
void rt_cut_stream(rt_world *w, uint32_t actor);

/* A persisted chat message (cf_ai_chat_agent_messages), for tests. */
typedef struct rt_chat_message {
  int64_t id;
  int role;                 /* 1 user, 2 assistant */
  int64_t answers;          /* assistant: the user message it answers */
  char text[1024];          /* cut to fit */
} rt_chat_message;

/* The committed-or-pending messages of `actor` in order (at most cap into
** out). Returns how many there are, or -1. */
int rt_chat_messages(rt_world *w, uint32_t actor, rt_chat_message *out, int cap);

/* What the last onChatRecovery call of `actor` was given and returned. */
typedef struct rt_chat_recovery_info {
  int64_t stream_id, request_id, created_at_ms;
  char partial_text[1024];
  int partial_parts;        /* parts rebuilt from the stored chunks */
  int64_t recovery_data;    /* stashed responseId, 0 if the user stashed nothing */
  int n_messages;
  char last_body[128], last_client_tools[128];
  int persist, cont;        /* the options it returned */
  char arm[16];             /* "continue", "retry", "synthetic", "retrieved", "none" */
} rt_chat_recovery_info;

/* Fills *out; returns 0, or -1 if `actor` never ran onChatRecovery. */
int rt_chat_last_recovery(rt_world *w, uint32_t actor, rt_chat_recovery_info *out);

/* Startup scans kept while an actor's tables are unchanged (issue #18) are
** on by default; off makes every scan read SQLite again. Process-wide; the
** results are the same either way (tests compare the trace hashes). */
void rt_scan_cache_set(int on);

/* Held transactions (issue #18: a pooled in-memory database keeps one SQLite
** transaction open and each turn is a savepoint in it) are on by default;
** off makes every turn a BEGIN ... COMMIT again. Process-wide, read when a
** connection is opened or taken from the pool; the results are the same
** either way (tests compare trace hashes and database images). */
void rt_held_txn_set(int on);

/* ---- failure injection (rt_inject.c; tests: issue #16 item 7) ----------
** The runtime's allocation and SQLite call sites (runtime/rt_inject.h) can
** be made to fail one at a time, deterministically. Process-wide; off by
** default (then each site costs one well-predicted branch). */

/* A call site: its file ("runtime/rt_storage.c"), line, and the calls made
** there since the injection was armed. */
typedef struct rt_inject_site {
  const char *file;
  int line;
  uint64_t calls;
} rt_inject_site;

/* Arms counting: every site's calls are counted (from 0), none fails. */
void rt_inject_count(void);
/* Arms a target: the nth call (1-based) at file:line fails (NULL from an
** allocation, an error code from SQLite), once; counts reset. */
void rt_inject_target(const char *file, int line, uint64_t nth);
/* Disarms; the counts stay readable. */
void rt_inject_off(void);
/* The sites called since arming, ordered by file name then line (never by
** address); returns how many (*out valid until the next arm). */
int rt_inject_sites(const rt_inject_site **out);
/* 1 if the armed target's call has failed since rt_inject_target. */
int rt_inject_fired(void);

#endif
