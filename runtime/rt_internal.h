/*
** rt_internal.h: structures shared by the runtime's files. Not for use
** outside runtime/.
*/
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include <sqlite3.h>
#include <stdint.h>

#include "runtime/rt.h"

#define RT_FATAL_MAX 2048

/* ---- messages: everything delivered to an actor from outside ---------- */
typedef enum rt_msg_kind {
  MSG_REQUEST = 1,      /* serve a request */
  MSG_FIBER,            /* request that runs runFiber(prog) */
  MSG_TOOLRUN,          /* request that runs runAgentTool(child) */
  MSG_ALARM,            /* the platform delivers the alarm */
  MSG_CALL_INSPECT,     /* parent → child: resolve (facet init) + inspect */
  MSG_CALL_START,       /* parent → child: start a child run */
  MSG_CALL_PLAIN,       /* fiber CALL step: plain RPC, no onStart */
  MSG_RUN_DONE,         /* child → parent: the child run finished */
  MSG_REPLY,            /* callee → caller: reply to a call */
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
  MSG_LUA_INVOKE,       /* request that calls a script's method: str method,
                           arg its arguments (JSON trace string, 0: none) */
  MSG_LUA_CALL          /* actor → actor: self:call(actor, method, args), as
                           MSG_LUA_INVOKE; the reply carries the result JSON
                           or the error message as a trace string */
} rt_msg_kind;

typedef struct rt_msg {
  rt_msg_kind kind;
  uint32_t to;          /* addressee actor */
  rt_entry entry;
  int64_t id;           /* request id or call id */
  int64_t arrived_us;
  uint32_t from;        /* caller actor for calls */
  uint32_t from_dom;    /* caller's incarnation domain (reply target) */
  int64_t arg, arg2;    /* kind-specific */
  int64_t alarm_at;     /* MSG_ALARM: the time it was set for */
  uint32_t str;         /* kind-specific trace string id (callback name) */
} rt_msg;

/* Pending RPC of this incarnation, waiting for a reply. */
typedef enum rt_call_purpose {
  CALL_GATED_INSPECT = 1,   /* startup reconcile (pre-fix), unbounded */
  CALL_DEFERRED_INSPECT,    /* background reconcile, raced against 2 s */
  CALL_FIBER_STEP,          /* a fiber's CALL step */
  CALL_TOOL_START,          /* live runAgentTool start */
  CALL_TOOL_ATTACH,         /* re-attach to a running child (#1640) */
  CALL_LUA                  /* a script's self:call (key: its coroutine) */
} rt_call_purpose;

typedef struct rt_call {
  int64_t id;
  rt_call_purpose purpose;
  int64_t key;              /* run id or fiber id */
  uint32_t callee;
  int64_t sent_us;
  sim_handle timer;         /* deferred inspection timeout */
  int live;
  uint32_t str;             /* trace string sent with the call (tool call id) */
} rt_call;

typedef struct rt_fiber {
  int64_t id;
  int prog;                 /* index into w->progs */
  int pc;
  int64_t recovered_from;
  int live;
  int legacy;               /* 1: a seed-001 legacy fiber (rt_legacy.c) */
  int64_t await_req;        /* awaited runFiber: the request waiting (0 none) */
  int lua;                  /* 1: a script's body (rt_luaagent.c) */
} rt_fiber;

/* Legacy fibers recovered inside the startup gate, run after it opens. */
typedef struct rt_legacy_pending {
  int64_t id;
  int prog, pc;
} rt_legacy_pending;

#define RT_STMT_MAX 96      /* prepared statements of every storage module */

/* The WRITE record's table for a write op of a module. */
typedef struct rt_store_op {
  int op;                   /* an rt_write_op */
  const char *table;
} rt_store_op;

/* Tables and statements one layer owns, registered with the host's storage
** before the first database opens (rt__store_register). */
typedef struct rt_store_module {
  const char *name;
  const char *schema;       /* CREATE TABLE IF NOT EXISTS ...; */
  const char *const *sql;   /* statements, prepared on first use and kept */
  int n_sql;
  int clear_bindings;       /* clear bindings before each use */
  const rt_store_op *ops;   /* write ops and their tables */
  int n_ops;
  int registered, base;     /* set by rt__store_register */
} rt_store_module;

typedef enum rt_startup_phase {
  SU_NONE = 0,
  SU_CHECK_FIBERS,          /* _checkRunFibers: hooks inside the gate */
  SU_GATED_RECONCILE,       /* pre-fix: reconcile tool runs inside the gate */
  SU_ONSTART,               /* user onStart */
  SU_DONE
} rt_startup_phase;

typedef struct rt_orphan {
  int64_t id;
  char name[64];
  int snapshot;             /* {"pc":N} → N; -1 = null or a value snapshot */
  int64_t created_ms;       /* created_at of the row (virtual ms) */
} rt_orphan;

#define RT_MAX_ORPHANS 64
#define RT_MAX_ROWS 64

/* Memory of one incarnation: all of it is lost when the actor dies. */
typedef struct rt_mem {
  uint32_t dom;             /* sim cancellation domain of this incarnation */
  int64_t incarnation;
  int status;               /* 0 zero, 1 starting, 2 started */
  int refs;                 /* keepAlive refs */
  int waituntil;
  int inflight;             /* requests being served */
  int gate_held;
  int64_t gate_since;
  sim_handle gate_timer;
  int64_t last_activity;
  int64_t idle_timeout;
  sim_handle idle_timer;
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
  int64_t startup_began;
  rt_entry startup_entry;
  rt_orphan orphans[RT_MAX_ORPHANS];
  int n_orphans, orphan_idx;
  int orphan_source;        /* 1 startup, 2 alarm */
  int64_t rows[RT_MAX_ROWS];/* gated reconcile rows / deferred snapshot */
  int n_rows, row_idx;
  int64_t snapshot[RT_MAX_ROWS];
  int n_snapshot;
  int toolrun_recovery;     /* background reconcile active */
  int64_t deferred_rows[RT_MAX_ROWS];
  int n_deferred, deferred_idx;
  int64_t recovery_deadline;
  int defer_finish;         /* reconciliation is finishing a row: defer its hook */
  int64_t finish_hooks[RT_MAX_ROWS]; /* deferred onAgentToolFinish closures, in order: */
  int finish_status[RT_MAX_ROWS];    /* ... the run's terminal status */
  uint32_t finish_msg[RT_MAX_ROWS];  /* ... and its error message (trace string) */
  int n_finish_hooks;
  /* queues */
  rt_msg *waiters;          /* held by the gate or by startup */
  int n_waiters, cap_waiters;
  rt_msg *serving;          /* accepted, not yet answered */
  int n_serving, cap_serving;
  rt_fiber *fibers;
  int n_fibers, cap_fibers;
  int64_t pending_resume[RT_MAX_ORPHANS]; /* fibers made by recovery hooks:
                                             their bodies run after startup */
  int n_pending_resume;
  rt_legacy_pending legacy_pending[RT_MAX_ORPHANS]; /* rt_legacy.c */
  int n_legacy_pending;
  rt_call *calls;
  int n_calls, cap_calls;
  rt_msg current_alarm;     /* alarm being handled */
  sim_handle alarm_cut;     /* the 15-minute handler limit */
  int64_t cut_alarm_id;     /* the alarm message it limits */
  int alarm_active;
  int storage_broken;       /* a commit failed: reset pending, no writes */
  struct rt_chat_mem *chat; /* chat turns of this incarnation (rt_chat.c) */
  struct rt_lagent *lua;    /* the script's Lua state of this incarnation */
} rt_mem;

typedef struct rt_db {
  sqlite3 *db;
  unsigned char *img;       /* serialized image of a closed idle database */
  sqlite3_int64 img_sz;
  sqlite3_stmt *st[RT_STMT_MAX]; /* prepared statements of the modules */
  int txn_open;
  int64_t txn_id;
  int txn_writes;
  int poolable;             /* an in-memory copy of the template */
  sqlite3_stmt *wipe[32];   /* DELETE FROM each table, for the pool */
  struct rt_sqlsbx *sbx;    /* the user-SQL sandbox of this connection (a
                               script's sql:exec), NULL until first used */
  uint64_t gen;             /* identity of the connection's content beyond
                            ** its change count: new on every open, close,
                            ** park and rollback (never reused) */
} rt_db;

/* Startup scans whose result is kept while the actor's tables are
** unchanged (issue #18): rt__scan_cached / rt__scan_store. */
enum { RT_SCAN_ORPHANS, RT_SCAN_OPEN_TOOLRUNS, RT_SCAN_TOOLRUN_GET,
       RT_SCAN_LEGACY_RUNNING, RT_SCANS };

typedef struct rt_scan_cache {
  uint64_t gen;             /* rt_db.gen at the scan; 0 = nothing kept */
  int64_t changes;          /* sqlite3_total_changes64 at the scan */
  int64_t param;            /* the scan's parameter (a run id), else 0 */
  int n;                    /* rows kept */
  int cap_rows;             /* the row limit of the scan kept */
  size_t cap;               /* bytes allocated at rows */
  void *rows;
} rt_scan_cache;

typedef struct rt_actor {
  rt_actor_spec spec;
  rt_db store;              /* durable: survives death */
  rt_scan_cache scan[RT_SCANS]; /* results of unchanged tables' scans */
  int64_t alarm_at;         /* durable mirror of the stored alarm, -1 none */
  sim_handle alarm_ev;
  int alarm_retries;
  int64_t next_incarnation;
  rt_mem *mem;              /* NULL while dead */
  int fail_commits;
  int poisoned;             /* workerd #6850: startup throws in this process */
} rt_actor;

struct rt_world {
  sim *s;
  rt_config cfg;
  rt_actor *actors;
  uint32_t n_actors, cap_actors;
  rt_program *progs;
  int n_progs, cap_progs;
  rt_msg *msgs;             /* message pool, indexed by event arg */
  size_t n_msgs, cap_msgs;
  size_t *msg_free;         /* pool slots whose message has arrived */
  size_t n_msg_free, cap_msg_free;
  sim_rng rng_idle, rng_work, rng_rpc;
  int64_t next_id;          /* fiber, run, request and call ids */
  int64_t next_txn;
  uint64_t writes;
  uint64_t hook_k;
  void (*hook_fn)(void *);
  void *hook_ctx;
  int fail_any_commits;
  int64_t rpc_extra_us;
  uint32_t rpc_drop_ppm;
  int64_t alarm_delay_us;
  struct rt_exec *exec;     /* checkpoint executor state (rt_executor.c) */
  struct rt_thr *thr;       /* thread store state (rt_thread.c) */
  struct rt_chat_world *chat; /* chat: upstream generations (rt_chat.c) */
  int *onstart_throws_left; /* per actor: onStart calls still to throw (fault) */
  struct rt_hook_calls { uint32_t actor; int64_t id; int calls; } *hook_calls;
  int n_hook_calls, cap_hook_calls; /* recovery hook calls per orphan row */
  uint32_t probe_hits[RT_PROBE_COUNT]; /* RT_PROBE hits this run */
  struct rt_script **scripts; /* per actor: its script (rt_luaagent.c), or NULL */
  int cap_scripts;
  char fatal[RT_FATAL_MAX];  /* the first error that ends the run ("" none) */
  char case_label[64];       /* revenant.case of scripts */
};

typedef struct rt_lagent rt_lagent;

/* Marks that the runtime reached probe p (an rt_probe) on actor a: counts
** the hit, and the first hit of the run is one RT_EV_PROBE record. Put it inside the branch of the rare situation, so it
** costs nothing when the situation does not occur. */
#define RT_PROBE(w, a, p) rt__probe((w), (a), (p))
void rt__probe(rt_world *w, uint32_t a, rt_probe p);

/* rt_world.c */
rt_mem *rt__wake(rt_world *w, uint32_t a, rt_entry entry);
void rt__touch(rt_world *w, uint32_t a);
void rt__deliver(rt_world *w, uint32_t to, const rt_msg *m, int64_t delay_us);
void rt__send_reply(rt_world *w, uint32_t from, const rt_msg *call, int ok,
                    int64_t value, int64_t delay_us);
uint32_t rt__str(rt_world *w, const char *s);
void rt__emit(rt_world *w, uint32_t kind, uint32_t a, int64_t x, int64_t y,
              int64_t z, const char *s);
void rt__request_done(rt_world *w, uint32_t a, const rt_msg *m, int ok,
                      const char *err);
/* As rt__request_done; on success the reply carries `result` (JSON text). */
void rt__request_result(rt_world *w, uint32_t a, const rt_msg *m, int ok,
                        const char *err, const char *result);
void rt__handle(rt_world *w, uint32_t a, const rt_msg *m);
int rt__push_waiter(rt_mem *m, const rt_msg *msg);
int rt__push_serving(rt_mem *m, const rt_msg *msg);
int rt__pop_serving(rt_mem *m, int64_t id, rt_msg *out);
void rt__fail_msg(rt_world *w, uint32_t a, const rt_msg *m, const char *err);
int rt__needs_init(rt_entry e);
void rt__send_call(rt_world *w, uint32_t from, uint32_t to, rt_msg_kind kind,
                   const rt_call *c, int64_t arg, int64_t arg2);
rt_call *rt__new_call(rt_world *w, uint32_t a, rt_call_purpose p, int64_t key,
                      uint32_t callee);
rt_call *rt__find_call(rt_mem *m, int64_t id);
void rt__gate_acquire(rt_world *w, uint32_t a, const char *purpose);
void rt__gate_release(rt_world *w, uint32_t a);
void rt__drain_waiters(rt_world *w, uint32_t a);
int64_t rt__new_id(rt_world *w);
int rt__prog_add(rt_world *w, const rt_program *p);            /* for rt_legacy.c */
int rt__deliver_at(rt_world *w, uint32_t a, rt_msg *m, int64_t at_us);

/* rt_storage.c */
/* Adds module m's tables to every database made from now on and gives its
** statements slots; idempotent. -1 if storage already built its template
** (register before the first world opens a database) or is full. */
int rt__store_register(rt_store_module *m);
/* Statement k of module m on actor a's database (opened if needed), reset;
** NULL with a message on an SQL error. */
sqlite3_stmt *rt__stmt(rt_world *w, uint32_t a, const rt_store_module *m, int k);
/* Records a write boundary: one RT_EV_WRITE with the op's table and the
** row's name; commits at once outside turn mode. rc: the step's result. */
int rt__txn_wrote_row(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc,
                      const char *name);
extern rt_store_module rt__agent_store, rt__toolrun_store, rt__legacy_store, rt__exec_store,
    rt__thread_store, rt__chat_store, rt__lua_store;
int rt__db_open(rt_world *w, uint32_t a);
void rt__db_close(rt_db *d);
/* A fiber snapshot as stored: {"pc":N}, the program counter after the
** stash; and back (-1 for NULL or anything else). */
void rt__snapshot_text(char *buf, size_t n, int pc);
int rt__snapshot_pc(const unsigned char *snap);
sqlite3_stmt *rt__prepare(rt_world *w, uint32_t a, const char *q); /* ad hoc; caller finalizes */
void rt__db_park(rt_world *w, rt_db *d); /* idle actor: keep only an image */
/* Scan k of actor a with parameter param: when a's tables have not changed
** since the last rt__scan_store of k with that param (no write, rollback,
** open or close since), copies its n rows of row_size bytes to out (room
** for cap rows), sets *n and returns 1; otherwise returns 0 and the caller
** scans. In-memory storage only (a file could be written by another
** process). The result is the same as the scan's, only cheaper. */
int rt__scan_cached(rt_world *w, uint32_t a, int k, int64_t param, void *out,
                    size_t row_size, int cap, int *n);
/* Keeps the n rows a scan (limited to cap rows) just read, right after
** the scan and before any write, for rt__scan_cached with the same cap.
** Allocation failure keeps nothing. */
void rt__scan_store(rt_world *w, uint32_t a, int k, int64_t param,
                    const void *rows, size_t row_size, int cap, int n);
void rt__scan_free(rt_actor *ac);  /* frees the kept rows */
int rt__w_fiber_insert(rt_world *w, uint32_t a, int64_t id, const char *name);
int rt__w_stash(rt_world *w, uint32_t a, int64_t id, int pc);
int rt__w_fiber_delete(rt_world *w, uint32_t a, int64_t id);
int rt__w_alarm(rt_world *w, uint32_t a, int64_t at_us);
int rt__w_toolrun_insert(rt_world *w, uint32_t a, int64_t run, uint32_t child,
                         int status);
int rt__w_toolrun_status(rt_world *w, uint32_t a, int64_t run, int status,
                         const char *reason);
int rt__w_child_run(rt_world *w, uint32_t a, int64_t run, int status);
int rt__w_schedule_insert(rt_world *w, uint32_t a, int64_t id,
                          const char *callback, int64_t time_s,
                          int64_t interval_s);
int rt__w_schedule_delete(rt_world *w, uint32_t a, int64_t id, const char *callback);
int rt__w_schedule_time(rt_world *w, uint32_t a, int64_t id, int64_t time_s, int64_t iv_s,
                        const char *callback);
void rt__commit_now(rt_world *w, uint32_t a);
void rt__rollback(rt_world *w, uint32_t a, const char *reason);
int rt__load_orphans(rt_world *w, uint32_t a, rt_orphan *out, int cap);
/* The snapshot of fiber row id as stored (any JSON: {"pc":N}, a chat
** turn's {"__cfChat":...}), interned; "null" when NULL or absent. */
uint32_t rt__orphan_snapshot(rt_world *w, uint32_t a, int64_t id);
int rt__load_open_toolruns(rt_world *w, uint32_t a, int64_t *out, int cap);
int rt__toolrun_get(rt_world *w, uint32_t a, int64_t run, uint32_t *child);
int rt__child_run_get(rt_world *w, uint32_t a, int64_t run);
int64_t rt__stored_alarm(rt_world *w, uint32_t a);
int rt__count_runs(rt_world *w, uint32_t a);
int rt__due_schedules(rt_world *w, uint32_t a, int64_t now_s, int64_t *ids,
                      int64_t *interval_s, char (*names)[48], int cap);
int64_t rt__next_schedule_time(rt_world *w, uint32_t a);
int rt__schedule_find(rt_world *w, uint32_t a, const char *callback,
                      int64_t *id);
int rt__txn_join(rt_world *w, uint32_t a);  /* for rt_legacy.c */
int rt__txn_wrote(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc);


/* rt_agent.c */
void rt__startup_begin(rt_world *w, uint32_t a, rt_entry entry);
void rt__startup_continue(rt_world *w, uint32_t a);
/* Awaited runFiber: starts prog; the request m is answered when the body
** ends (its return value, or its error message). */
void rt__fiber_start_awaited(rt_world *w, uint32_t a, int prog, const rt_msg *m);

/* The SDK's error for this.stash() outside a fiber (index.ts, Agent.stash). */
#define RT_MSG_STASH_OUTSIDE "stash() called outside a fiber"

/* The snapshot of run row id as the fiber reads it now (its own pending
** writes included) into buf: "null" when none or no row. */
void rt__fiber_snapshot(rt_world *w, uint32_t a, int64_t id, char *buf, size_t n);

/* keepAlive requests: acquire or dispose a named lease (rt_agent.c). */
void rt__keepalive_lease_request(rt_world *w, uint32_t a, const rt_msg *m);

/* #1729 follow-up alarm delay after `no_progress` scans that resolved
** nothing: min(5 min, keepalive interval * 2^min(n, 20)). */
int64_t rt__recovery_backoff_us(const rt_world *w, int no_progress);

/* 1 if cf_agents_runs of actor a holds a row not active in this incarnation
** (_hasPendingFiberRecovery, #1729). */
int rt__pending_fiber_recovery(rt_world *w, uint32_t a);

/* Snapshot text of a stash with a JSON value into the row (RT_EV_STASH with
** pc -1 and the value; ctx.stash or this.stash in s2). */
int rt__w_stash_value(rt_world *w, uint32_t a, int64_t id, const char *value, int via_this);

void rt__fiber_start(rt_world *w, uint32_t a, int prog, int pc,
                     int64_t recovered_from);
void rt__fiber_reply(rt_world *w, uint32_t a, rt_call *c, int ok);
void rt__alarm_handle(rt_world *w, uint32_t a, const rt_msg *m);
void rt__alarm_failed(rt_world *w, uint32_t a, const rt_msg *m);
void rt__alarm_arrived(rt_world *w, uint32_t a, const rt_msg *m);
int rt__take_waiter(rt_mem *m, int64_t id, rt_msg *out);
void rt__alarm_set(rt_world *w, uint32_t a, int64_t at_us);
void rt__alarm_clear(rt_world *w, uint32_t a);
void rt__alarm_sync(rt_world *w, uint32_t a);
int rt__check_run_fibers(rt_world *w, uint32_t a, int source);
void rt__keepalive_acquire(rt_world *w, uint32_t a);
void rt__keepalive_release(rt_world *w, uint32_t a);
void rt__schedule_next_alarm(rt_world *w, uint32_t a);
void rt__schedule_request(rt_world *w, uint32_t a, const rt_msg *m);
int rt__prog_find(rt_world *w, const char *name);
void rt__fiber_run(rt_world *w, uint32_t a, rt_fiber *f); /* for rt_legacy.c */
/* The actor is dying with memory m: ONSTART_END / HOOK_END records for a
** user onStart or recovery hook that was running (timed_out on a gate
** reset, cut otherwise). Call before the ACTOR_DEATH record. */
void rt__callbacks_cut(rt_world *w, uint32_t a, rt_mem *m, rt_death_cause cause);
void rt__hook_cut(rt_world *w, uint32_t a, rt_mem *m, rt_cb_outcome how);

/* The body of a script's fiber ended, or ran its steps (rt_agent.c). */
void rt__fiber_end(rt_world *w, uint32_t a, rt_fiber *f, int ok, const char *result);
/* runFiber(name) up to the body: the row, keepAlive, FIBER_START; the body
** is the caller's (f->lua). NULL on OOM. */
rt_fiber *rt__fiber_create_named(rt_world *w, uint32_t a, const char *name,
                                 int64_t recovered_from);
/* A script's onFiberRecovered for the current orphan ended: returned
** (resumed: it called runFiber) or threw err. Goes on with the next row. */
void rt__hook_finish(rt_world *w, uint32_t a, int ok, const char *err, int resumed);
/* The user onStart ended (returned, or threw err): startup goes on. */
void rt__onstart_finish(rt_world *w, uint32_t a, int ok, const char *err);
/* schedule / scheduleEvery (delay_us or interval_us > 0) of `cb`: the row
** and _scheduleNextAlarm; returns the row id. cancelSchedule of row id (or,
** id < 0, of the oldest row of cb): 1 if a row was deleted. */
int64_t rt__schedule_add(rt_world *w, uint32_t a, const char *cb, int64_t delay_us,
                         int64_t interval_us);
int rt__schedule_cancel(rt_world *w, uint32_t a, const char *cb, int64_t id);

/* rt_luaagent.c: Lua-scripted actors (issue #13) */
int rt__lg_scripted(rt_world *w, uint32_t a);          /* the actor has a script */
/* 1 if the script defines function `callback` (makes the incarnation's
** state on first use; a failure to make it ends the run: rt_world_fatal). */
int rt__lg_has(rt_world *w, uint32_t a, const char *callback);
void rt__lg_request(rt_world *w, uint32_t a, const rt_msg *m); /* MSG_LUA_INVOKE / _CALL */
void rt__lg_fiber_begin(rt_world *w, uint32_t a, int64_t id);  /* a body's first slice */
void rt__lg_fiber_ended(rt_world *w, uint32_t a, int64_t id, int ok, const char *result);
/* Starts the script's onFiberRecovered for orphan o (1), or returns 0 when
** the script has none. It ends in rt__hook_finish. */
int rt__lg_hook(rt_world *w, uint32_t a, const rt_orphan *o, const char *snap);
/* Starts the script's onStart (1; it ends in rt__onstart_finish) or 0. */
int rt__lg_onstart(rt_world *w, uint32_t a);
void rt__lg_schedule(rt_world *w, uint32_t a, int64_t id, const char *callback);
void rt__lg_reply(rt_world *w, uint32_t a, rt_call *c, int ok, int64_t value);
void rt__lg_mem_free(rt_mem *m);   /* the incarnation ends: its Lua state goes */
void rt__lg_world_free(rt_world *w);
void rt__lg_fatal(rt_world *w, const char *msg); /* ends the run with msg */

/* rt_toolrun.c */
void rt__toolrun_request(rt_world *w, uint32_t a, const rt_msg *m);
void rt__toolrun_start(rt_world *w, uint32_t a, uint32_t child, int64_t work_us);
void rt__toolrun_gated_next(rt_world *w, uint32_t a);
void rt__toolrun_snapshot(rt_world *w, uint32_t a);
void rt__toolrun_schedule_recovery(rt_world *w, uint32_t a);
/* The user onStart succeeded (startup_ok): gated mode runs the finish hooks
** its in-gate reconciliation deferred; the others schedule the background
** recovery. */
void rt__toolrun_started(rt_world *w, uint32_t a);
void rt__toolrun_recovery_request(rt_world *w, uint32_t a, const rt_msg *m);
void rt__toolrun_reply(rt_world *w, uint32_t a, rt_call *c, int ok,
                       int64_t value);
void rt__toolrun_run_done(rt_world *w, uint32_t a, const rt_msg *m);
void rt__child_handle(rt_world *w, uint32_t a, const rt_msg *m);
int rt__finish_toolrun(rt_world *w, uint32_t a, int64_t run, int status,
                       const char *reason);
/* runAgentTool from a chat turn whose tool call is `call` (the toolCallId
** "call-<call>"): a fresh run, or with stable ids (#1640) the run
** RT_TR_STABLE_BASE + call, re-attached if it exists and is open. Returns
** the run id, or -1; *stored_status is the terminal status of a stored
** run (its result is returned at once), else -1 and the run's end reaches
** rt__chat_tool_done. */
#define RT_TR_STABLE_BASE 1000000000000LL
int64_t rt__toolrun_call(rt_world *w, uint32_t a, uint32_t child, int64_t work_us,
                         int64_t call, int *stored_status);
/* rt_chat.c: run `run` of actor a reached terminal `status`. */
void rt__chat_tool_done(rt_world *w, uint32_t a, int64_t run, int status);

/* rt_legacy.c: the legacy fiber model (seed 001) */
void rt__legacy_request(rt_world *w, uint32_t a, const rt_msg *m);
int rt__legacy_check(rt_world *w, uint32_t a, int source); /* -1: the actor died */
void rt__legacy_resume_pending(rt_world *w, uint32_t a);
void rt__legacy_end(rt_world *w, uint32_t a, rt_fiber *f, int ok);
int rt__legacy_stash(rt_world *w, uint32_t a, int64_t id, int pc);

/* rt_executor.c: the checkpoint executor (seed 002) */
void rt__exec_request(rt_world *w, uint32_t a, const rt_msg *m);
void rt__exec_on_start(rt_world *w, uint32_t a); /* restore + resume open turns */
void rt__exec_free(rt_world *w);

/* rt_thread.c: the thread store (seed 004) */
void rt__thread_request(rt_world *w, uint32_t a, const rt_msg *m);
void rt__thread_free(rt_world *w);

/* rt_chat.c: durable chat turns (seed 000 Layer 3; reference A.12) */
void rt__chat_request(rt_world *w, uint32_t a, const rt_msg *m);
int rt__chat_recover(rt_world *w, uint32_t a, const rt_orphan *o); /* 0 handled, -1 not chat */
void rt__chat_callback(rt_world *w, uint32_t a, int64_t schedule_id, const char *callback);
void rt__chat_mem_free(rt_mem *m);
void rt__chat_world_free(rt_world *w);

#endif
