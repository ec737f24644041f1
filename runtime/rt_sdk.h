/*
** rt_sdk.h: the synchronous Agents SDK calls user code may make (issue #13).
**
** These are the functions a user callback (rt_usercode.h) calls without
** waiting: they act in the current turn and return. Anything that waits
** (work, sleep, an RPC, awaiting a fiber, runAgentTool) is instead a
** command the callback yields (rt_uc_cmd). The Lua binding calls these;
** so do the declarative programs and the models. They are plain functions
** over an opaque handle, so a binding needs no runtime internals.
**
** Writes follow the turn-commit rules of the actor's storage: durable
** when the turn commits (commit: turn) or at once (commit: immediate);
** every write is one RT_EV_WRITE boundary for crash points. Every call
** leaves trace records named below (rt_events.h).
**
** Return values: 0 or a non-negative result on success, -1 on error (the
** actor died in the call, storage failed, bad arguments); a caller that gets
** -1 must stop touching the actor in this turn (rt_sdk_alive says whether it
** still lives).
*/
#ifndef RT_SDK_H
#define RT_SDK_H

#include <stddef.h>
#include <stdint.h>

/* The actor a callback runs for, with the fiber or invocation it runs in.
** Made by the agent layer for the duration of one call; opaque. */
typedef struct rt_sdk_actor rt_sdk_actor;

/* ---- identity and environment ------------------------------------------ */

/* The actor's index, id ("name") and class. */
uint32_t rt_sdk_index(const rt_sdk_actor *self);
const char *rt_sdk_id(const rt_sdk_actor *self);
const char *rt_sdk_class(const rt_sdk_actor *self);

/* 1 while the incarnation that made `self` is alive. */
int rt_sdk_alive(const rt_sdk_actor *self);

/* Virtual time in µs (the only clock; revenant.now()). */
int64_t rt_sdk_now_us(const rt_sdk_actor *self);

/* 64 random bits from the actor's user stream "user.<actor id>"
** (revenant.random, math.random): depends only on the seed and the name. */
uint64_t rt_sdk_random(rt_sdk_actor *self);

/* A line into the trace (revenant.log). Not in the runtime yet: it needs a
** trace kind of its own, which the Lua binding (issue #13 item 2) adds. */
void rt_sdk_log(rt_sdk_actor *self, const char *text);

/* ---- fibers (A.6) --------------------------------------------------------- */

/* The fiber the caller runs in (0 outside a fiber). */
int64_t rt_sdk_current_fiber(const rt_sdk_actor *self);

/* runFiber(name): a cf_agents_runs row, keepAlive held until the body ends,
** RT_EV_FIBER_START. The body starts after the current callback returns or
** yields (fiber_body of the class's table). `snapshot` (JSON or NULL) is the
** row's initial snapshot (a resumed fiber's). Returns the fiber id or -1. */
int64_t rt_sdk_run_fiber(rt_sdk_actor *self, const char *name, const char *snapshot);

/* stash(value) / ctx.stash(value) of fiber `fiber` (0: the current one):
** the row's snapshot becomes the JSON text `value` (RT_EV_STASH with pc -1).
** via_this: this.stash (1) or ctx.stash (0). Outside a fiber: -1 with the
** SDK's "stash() called outside a fiber". */
int rt_sdk_stash(rt_sdk_actor *self, int64_t fiber, const char *value, int via_this);

/* ctx.snapshot: the stored snapshot of `fiber` as this turn sees it (its own
** pending writes included) into buf; "null" when none (RT_EV_FIBER_READ). */
int rt_sdk_snapshot(rt_sdk_actor *self, int64_t fiber, char *buf, size_t n);

/* ---- keepAlive (A.3) ------------------------------------------------------ */

/* keepAlive(): takes a ref (RT_EV_KEEPALIVE); the result names the disposer. */
int64_t rt_sdk_keepalive(rt_sdk_actor *self);

/* The disposer `lease`: releases its ref once; a second call does nothing
** (RT_EV_KEEPALIVE_DISPOSE released 0). */
int rt_sdk_keepalive_dispose(rt_sdk_actor *self, int64_t lease);

/* ---- schedules (A.10; issue #14) ------------------------------------------ */

/* When a schedule fires: exactly one of a delay (schedule(seconds)), an
** interval (scheduleEvery) or a cron expression (schedule(cron)). */
typedef struct rt_sdk_when {
  int64_t delay_us;         /* schedule(delay): a `delayed` row at floor((now + delay) / 1 s) */
  int64_t interval_us;      /* > 0: scheduleEvery; first run at now + interval; <= 30 days */
  const char *cron;         /* non-NULL: a `cron` row at the next time of the expression
                               (5 or 6 fields, cron-schedule 6 rules, UTC: rt_cron.h) */
} rt_sdk_when;

/* schedule / scheduleEvery with everything the SDK takes: `payload` is JSON
** text (NULL or "": undefined; < 256 bytes); `idempotent` -1 for the SDK's
** default (on for cron and interval, off for delayed), 0 off, 1 on. A dedup
** hit (same type, callback, interval or cron, payload) returns the existing
** row's id with *created 0, writes nothing (RT_EV_SCHEDULE_DEDUP) and still
** calls _scheduleNextAlarm; otherwise a new row (RT_EV_SCHEDULE_SET) and
** *created 1. Returns the schedule id, or -1 with a message in err (room
** n_err; err may be NULL): a bad cron expression gives cron-schedule's
** message ("Failed to parse 61: ..."). created may be NULL. */
int64_t rt_sdk_schedule_with(rt_sdk_actor *self, const char *callback, const rt_sdk_when *when,
                             const char *payload, int idempotent, int *created, char *err,
                             size_t n_err);

/* schedule(delay, callback, payload): rt_sdk_schedule_with with a delay and
** the default (not idempotent). Returns the schedule id or -1. */
int64_t rt_sdk_schedule(rt_sdk_actor *self, int64_t delay_us, const char *callback,
                        const char *payload);

/* scheduleEvery(interval, callback, payload): idempotent on (callback,
** interval, payload); first run at now + interval. Returns the id or -1. */
int64_t rt_sdk_schedule_every(rt_sdk_actor *self, int64_t interval_us, const char *callback,
                              const char *payload);

/* schedule(cron, callback, payload): idempotent on (callback, cron,
** payload). Returns the id or -1 with the parser's message in err. */
int64_t rt_sdk_schedule_cron(rt_sdk_actor *self, const char *cron, const char *callback,
                             const char *payload, char *err, size_t n_err);

/* cancelSchedule by callback: deletes the oldest row of `callback`; 1 if
** one was deleted, 0 if none, -1 on error. */
int rt_sdk_cancel_schedule(rt_sdk_actor *self, const char *callback);

/* cancelSchedule(id): 1 if row `id` was deleted (then _scheduleNextAlarm),
** 0 if it is missing (the SDK's false), -1 on error. */
int rt_sdk_cancel_schedule_id(rt_sdk_actor *self, int64_t id);

/* Inside a schedule callback (on_schedule): the row's payload as JSON text
** ("null" when undefined) into buf; -1 outside one. The callback also gets
** it as its `payload` argument. */
int rt_sdk_schedule_payload(rt_sdk_actor *self, char *buf, size_t n);

/* Inside a schedule callback: the tryN attempt running (1..maxAttempts);
** 0 outside one. A callback that throws (RT_UC_THREW) is retried after
** floor(random * min(2^n * 100 ms, 3000 ms)); after the last attempt the
** error is swallowed (RT_EV_SCHEDULE_ERROR) and a one-shot row is deleted. */
int rt_sdk_schedule_attempt(const rt_sdk_actor *self);

/* ---- the actor's own SQL (this.sql) --------------------------------------- */

/* One result row handed to a rt_sdk_sql_exec callback: column names and
** values as text (NULL for SQL NULL). Return non-zero to stop. */
typedef int (*rt_sdk_row_fn)(void *ctx, int ncol, const char *const *names,
                             const char *const *values);

/* this.sql`...`: runs `sql` with n text parameters on the actor's database
** inside the current turn's transaction. User tables are the script's own;
** the SDK's tables (cf_*, rv_*) are read-only to it. The SQL sandbox
** (rt_sql_sandbox.h) applies: no ATTACH, load_extension, wall-clock or
** random functions. Writes are RT_EV_WRITE boundaries. Returns the rows
** changed (>= 0) or -1 with a message in err (room n_err). Not in the
** runtime yet: the Lua binding (issue #13 item 2) brings it with the
** per-connection sandbox. */
int rt_sdk_sql_exec(rt_sdk_actor *self, const char *sql, const char *const *params, int n,
                    rt_sdk_row_fn row, void *ctx, char *err, size_t n_err);

/* ---- the outside world ---------------------------------------------------- */

/* revenant.effect(name, key): one entry of the external-effect ledger
** (RT_EV_EFFECT with pc -1 and "name:key"), in the current fiber (0
** outside one). */
void rt_sdk_effect(rt_sdk_actor *self, const char *name, const char *key);

/* ---- chat (AIChatAgent; reference A.12; issue #15) ------------------------ */

/* continueLastTurn(): a turn that appends to the last assistant message,
** through the turn queue (it runs now if no turn runs or waits, else after
** them). With no assistant message it is skipped (RT_EV_CHAT_TURN mode
** "skipped"). The turn streams lastBody's chunk count minus the words the
** message already has. Records: RT_EV_CHAT_RESUME (callback
** "continueLastTurn"), RT_EV_CHAT_TURN. Returns 1 if a turn was started or
** queued, 0 if skipped, -1 on error (no chat model, dead actor). */
int rt_sdk_continue_last_turn(rt_sdk_actor *self);

/* saveMessages([user message `text`]): persists a new user message when its
** turn starts and answers it with a new turn (RT_EV_CHAT_TURN mode
** "save_messages"), through the same turn queue; lastBody gives the chunk
** count. Returns the request id of the turn, or -1. */
int64_t rt_sdk_save_messages(rt_sdk_actor *self, const char *text);

/* The client's cancel of the running chat turn (the chat request's
** AbortController), from user code: the provider stops, the turn ends as a
** finished stream would, its partial persisted (RT_EV_CHAT_CANCEL with the
** request and its chunks; request 0 when no turn ran). Returns 1 if a turn
** was cancelled, 0 if none ran, -1 on error (no chat model, dead actor). */
int rt_sdk_chat_cancel(rt_sdk_actor *self);

/* ---- tool runs (reference A.11; issue #15) ------------------------------- */

/* Aborts tool run `run` (its AbortSignal fires): an open row becomes
** `aborted` (RT_EV_TOOLRUN_ABORT by "hook", then the usual status, finish
** hook and `aborted` event) and the child is sent cancelAgentToolRun, which
** stops its work. A terminal row is not rewritten. Returns 1 if the row was
** open, 0 if not, -1 on error. */
int rt_sdk_abort_agent_tool(rt_sdk_actor *self, int64_t run);

/* The open (starting/running) tool runs of the actor, oldest first (at most
** cap into out). Returns how many there are, or -1. */
int rt_sdk_open_agent_tools(rt_sdk_actor *self, int64_t *out, int cap);

/* The largest runId user code may name (as a workload's run_id): run ids
** RT_TR_USER_BASE + runId stay far from overflow. */
#define RT_SDK_MAX_RUN_ID 1000000000

/* What runAgentTool takes besides the child (reference A.11). */
typedef struct rt_sdk_tool_opts {
  int64_t run_id;           /* runId: 1..RT_SDK_MAX_RUN_ID names run RT_TR_USER_BASE + run_id
                               (2000000000000 + run_id); 0: a fresh id */
  int64_t work_us;          /* how long the child works (the model's stand-in
                               for the child's own code) */
} rt_sdk_tool_opts;

/* runAgentTool(child, {runId}): with a new id, INSERT starting and
** startAgentToolRun on actor `child` (RT_EV_TOOLRUN_INSERT, the `started`
** event; maxConcurrentAgentTools exceeded: an `error` row at once); with
** the id of a terminal row, its stored result (RT_EV_TOOLRUN_ATTACH
** "stored"); with an open row, a re-attach (#1640 ids) or, @1604, its
** chunks replayed, then `interrupted` ("reused"). The same machinery as the
** workload's tool_run item. Returns the run id, or -1; *status is the run's
** status after the call (terminal: its result is known now; else the run
** ends later, through onAgentToolFinish), -1 if the actor died in it. */
int64_t rt_sdk_run_agent_tool(rt_sdk_actor *self, uint32_t child, const rt_sdk_tool_opts *opts,
                              int *status);

/* The status of tool run `run` (rt_toolrun_status; -1 no such row) and its
** error message into err (room n; "" none): what runAgentTool resolves
** with once the run is terminal. */
int rt_sdk_agent_tool_status(rt_sdk_actor *self, int64_t run, char *err, size_t n);

#endif
