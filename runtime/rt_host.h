/*
** rt_host.h: the actor host's floor inside runtime/ (rt_world.c,
** rt_storage.c, rt_query.c): a Durable Object platform model that knows
** nothing of the Agents SDK. Not for use outside runtime/.
**
** The host delivers messages through the input gate, keeps incarnations
** (memory that dies) and storage (that does not), the platform alarm, and
** turn commits. It calls an actor's entry points through its class table
** (rt_actor_class), the way workerd calls a Durable Object class: startup,
** a message past the gate, a notification, an RPC reply, death, free. The
** layer above (rt_agent.h) registers that table and its storage modules;
** this header names none of it (tests/sh_seam.sh checks).
*/
#ifndef RT_HOST_H
#define RT_HOST_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/rt.h"

/* ---- messages: everything delivered to an actor from outside ---------- */

/* How the host treats a message. */
typedef enum rt_msg_class {
  RT_MC_REQUEST = 0,        /* from a client (the workload): wakes the actor,
                               REQUEST_ARRIVE, answered REQUEST_OK/FAIL */
  RT_MC_CALL,               /* from another actor: wakes it; a failure replies
                               ok 0 to the caller */
  RT_MC_NOTIFY,             /* to the caller's incarnation (from_dom), never
                               wakes: dropped if it died */
  RT_MC_ALARM,              /* the platform delivers the alarm */
  RT_MC_REPLY               /* callee -> caller: the reply to an rt_call */
} rt_msg_class;

/* Kinds of the host's own messages; the class above numbers its kinds from
** RT_MSG_CLASS_FIRST. The host reads only `cls`. */
enum { MSG_REQUEST = 1, MSG_ALARM = 2, MSG_REPLY = 3, RT_MSG_CLASS_FIRST = 8 };

typedef struct rt_msg {
  int kind;             /* MSG_* or the class's kind */
  rt_msg_class cls;
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
typedef struct rt_call {
  int64_t id;
  int purpose;              /* the class's: what the reply continues */
  int64_t key;              /* the class's: run id or fiber id */
  uint32_t callee;
  int64_t sent_us;
  sim_handle timer;         /* the class's timeout, if any */
  int live;
  uint32_t str;             /* trace string sent with the call (tool call id) */
} rt_call;

/* The host's part of one incarnation's memory: all of it is lost when the
** actor dies. The class's memory begins with it (rt_actor_class.mem_size). */
typedef struct rt_inc {
  uint32_t dom;             /* sim cancellation domain of this incarnation */
  int64_t incarnation;
  int status;               /* 0 zero, 1 starting, 2 started */
  int waituntil;            /* ctx.waitUntil promises pending */
  int gate_held;
  int64_t gate_since;
  sim_handle gate_timer;
  int64_t last_activity;
  int64_t idle_timeout;
  sim_handle idle_timer;
  rt_msg *waiters;          /* held by the gate or by startup */
  int n_waiters, cap_waiters;
  rt_msg *serving;          /* accepted, not yet answered */
  int n_serving, cap_serving;
  rt_call *calls;
  int n_calls, cap_calls;
  rt_msg current_alarm;     /* alarm being handled */
  sim_handle alarm_cut;     /* the 15-minute handler limit */
  int64_t cut_alarm_id;     /* the alarm message it limits */
  int alarm_active;
  int storage_broken;       /* a commit failed: reset pending, no writes */
  int death_early;          /* commit_fail_reset "sync": actor_death already recorded */
} rt_inc;

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

/* Tables of a pooled connection that may hold rows (rt_storage.c). */
typedef struct rt_db_written {
  uint32_t tables;          /* bit i: the template's i-th table, by name */
  const char *last;         /* the update hook's last table name ... */
  int last_i;               /* ... and its index */
} rt_db_written;

#define RT_WIPE_STMTS 36    /* DELETE FROM each of 32 tables, BEGIN, COMMIT, a no-op,
                               ROLLBACK */

typedef struct rt_db {
  sqlite3 *db;
  unsigned char *img;       /* serialized image of a closed idle database */
  sqlite3_int64 img_sz;
  sqlite3_stmt *st[RT_STMT_MAX]; /* prepared statements of the modules */
  int txn_open;
  int held;                 /* poolable: an SQLite transaction stays open and
                               each turn is a savepoint in it (rt_storage.c) */
  int sp_open;              /* held: the open turn's savepoint is in SQLite */
  int sp_depth;             /* held: turns' savepoints on SQLite's stack */
  int64_t txn_id;
  int txn_writes;
  int poolable;             /* an in-memory copy of the template */
  sqlite3_stmt *wipe[RT_WIPE_STMTS]; /* DELETE FROM each table, for the pool */
  rt_db_written *written;   /* poolable: the tables written since the wipe */
  uint64_t gen;             /* identity of the connection's content beyond
                            ** its change count: new on every open, close,
                            ** park and rollback (never reused) */
  struct rt_sqlsbx *sbx;    /* the user-SQL sandbox of this connection (a
                               script's sql:exec), NULL until first used */
} rt_db;

/* Scans whose result is kept while the actor's tables are unchanged (issue
** #18): rt__scan_cached / rt__scan_store; the class numbers its slots. */
#define RT_SCAN_SLOTS 8

typedef struct rt_scan_cache {
  uint64_t gen;             /* rt_db.gen at the scan; 0 = nothing kept */
  int64_t changes;          /* sqlite3_total_changes64 at the scan */
  int64_t param;            /* the scan's parameter (a run id), else 0 */
  int n;                    /* rows kept */
  int cap_rows;             /* the row limit of the scan kept */
  size_t cap;               /* bytes allocated at rows */
  void *rows;
} rt_scan_cache;

typedef struct rt_actor_class rt_actor_class;

typedef struct rt_actor {
  rt_actor_spec spec;
  const rt_actor_class *cls; /* its entry points */
  rt_db store;              /* durable: survives death */
  rt_scan_cache scan[RT_SCAN_SLOTS]; /* results of unchanged tables' scans */
  int64_t alarm_at;         /* durable mirror of the stored alarm, -1 none */
  sim_handle alarm_ev;
  int alarm_retries;
  int64_t next_incarnation;
  rt_inc *mem;              /* NULL while dead */
  int fail_commits;
  int poisoned;             /* workerd #6850: startup throws in this process */
  int user_sql;             /* runs user SQL (a script): its turns are real
                               SQLite transactions, never held ones */
  uint32_t cls_str;         /* spec.cls interned in the world's trace (0: not
                               yet): each wake emits it, and a strcmp of it
                               on each of a 7-day run's 58,000 wakes was 0.8 %
                               of a swarm */
} rt_actor;

/* The entry points of an actor class: how the host calls the code that
** runs in an actor (the Agents SDK, rt_agent.c). Every entry is required. */
struct rt_actor_class {
  const char *name;
  size_t mem_size;          /* bytes of an incarnation's memory; it begins
                               with an rt_inc, the rest starts zeroed */
  /* A message needs the actor started (rt__needs_init) and it is not:
  ** begin startup (the constructor's blockConcurrencyWhile). The class sets
  ** status 1, and 2 (or back to 0 on failure) when it is done, then hands
  ** the held messages back (rt__drain_waiters). */
  void (*start)(rt_world *w, uint32_t a, rt_entry entry);
  /* A message passed the gate and startup: handle it (any class). */
  void (*message)(rt_world *w, uint32_t a, const rt_msg *m);
  /* An RT_MC_NOTIFY message for a live incarnation. */
  void (*notify)(rt_world *w, uint32_t a, const rt_msg *m);
  /* The reply to call c arrived (after RPC_REPLY); c stays live until the
  ** class clears it. */
  void (*reply)(rt_world *w, uint32_t a, rt_call *c, int ok, int64_t value);
  /* The incarnation m is dying by `cause`: before the rollback and the
  ** ACTOR_DEATH record (report the callbacks it cuts). */
  void (*dying)(rt_world *w, uint32_t a, rt_inc *m, rt_death_cause cause);
  /* Frees what the class keeps in m beyond rt_inc (not m itself). */
  void (*mem_free)(rt_world *w, rt_inc *m);
  /* Frees the class's world state (rt_world.layer). */
  void (*world_free)(rt_world *w);
};

#define RT_FATAL_MAX 2048
#define RT_SPARE_INCS 4

struct rt_world {
  sim *s;
  rt_config cfg;
  const rt_actor_class *cls; /* the class of every actor added */
  void *layer;              /* the class's world state, opaque to the host */
  rt_actor *actors;
  uint32_t n_actors, cap_actors;
  rt_msg *msgs;             /* message pool, indexed by event arg */
  size_t n_msgs, cap_msgs;
  size_t *msg_free;         /* pool slots whose message has arrived */
  size_t n_msg_free, cap_msg_free;
  sim_rng rng_idle, rng_rpc;
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
  int64_t down_until_us;    /* down_for: the process is down until then (0 up) */
  uint32_t probe_hits[RT_PROBE_COUNT]; /* RT_PROBE hits this run */
  struct rt_script **scripts; /* per actor: its Lua script (rt_luaagent.c), or NULL */
  int cap_scripts;
  char fatal[RT_FATAL_MAX];  /* the first error that ends the run ("" none) */
  char case_label[64];       /* revenant.case of scripts */
  rt_inc *spare[RT_SPARE_INCS]; /* dead incarnations' blocks (of cls), kept
                               for the next wakes with their message arrays
                               (rt__wake; issue #18: a wedge wakes ~60,000 times) */
  int n_spare;
};

/* Marks that the runtime reached probe p (an rt_probe) on actor a: counts
** the hit, and the first hit of the run is one RT_EV_PROBE record. Put it inside the branch of the rare situation, so it
** costs nothing when the situation does not occur. */
#define RT_PROBE(w, a, p) rt__probe((w), (a), (p))
void rt__probe(rt_world *w, uint32_t a, rt_probe p);

/* ---- rt_world.c: the host ---------------------------------------------- */

/* A world whose actors run class cls, with layer state `layer` (freed by
** cls->world_free). NULL on OOM. */
rt_world *rt__host_new(sim *s, const rt_config *cfg, const rt_actor_class *cls, void *layer);
/* The incarnation of a (woken by `entry` if dead); NULL on OOM. */
rt_inc *rt__wake(rt_world *w, uint32_t a, rt_entry entry);
void rt__touch(rt_world *w, uint32_t a);
/* Sends m to actor `to` after delay_us (RT_MC_NOTIFY and RT_MC_REPLY go to
** the caller's incarnation m->from_dom). */
void rt__deliver(rt_world *w, uint32_t to, const rt_msg *m, int64_t delay_us);
/* Schedules m (id and `to` set here) for actor a at at_us; 0 or -1. */
int rt__deliver_at(rt_world *w, uint32_t a, rt_msg *m, int64_t at_us);
void rt__send_reply(rt_world *w, uint32_t from, const rt_msg *call, int ok,
                    int64_t value, int64_t delay_us);
/* Sends call c from `from` to `to` as an RT_MC_CALL message of `kind`
** (RPC_SEND with `method`; rpc_drop may lose it). */
void rt__send_call(rt_world *w, uint32_t from, uint32_t to, int kind, const char *method,
                   rt_entry entry, const rt_call *c, int64_t arg, int64_t arg2);
uint32_t rt__str(rt_world *w, const char *s);
void rt__emit(rt_world *w, uint32_t kind, uint32_t a, int64_t x, int64_t y,
              int64_t z, const char *s);
/* rt__emit with s a string literal (its content never changes): a repeat
** is interned without comparing it again (sim_trace_intern_fixed). */
void rt__emit_lit(rt_world *w, uint32_t kind, uint32_t a, int64_t x, int64_t y,
                  int64_t z, const char *s);
void rt__request_done(rt_world *w, uint32_t a, const rt_msg *m, int ok,
                      const char *err);
/* As rt__request_done; on success the reply carries `result` (JSON text). */
void rt__request_result(rt_world *w, uint32_t a, const rt_msg *m, int ok,
                        const char *err, const char *result);
/* Hands m to actor a: held while the gate is held or a needs startup. */
void rt__handle(rt_world *w, uint32_t a, const rt_msg *m);
int rt__push_waiter(rt_inc *m, const rt_msg *msg);
int rt__push_serving(rt_inc *m, const rt_msg *msg);
int rt__pop_serving(rt_inc *m, int64_t id, rt_msg *out);
int rt__take_waiter(rt_inc *m, int64_t id, rt_msg *out);
void rt__fail_msg(rt_world *w, uint32_t a, const rt_msg *m, const char *err);
int rt__needs_init(rt_entry e);
rt_call *rt__new_call(rt_world *w, uint32_t a, int purpose, int64_t key, uint32_t callee);
rt_call *rt__find_call(rt_inc *m, int64_t id);
/* Takes actor a's input gate (blockConcurrencyWhile) for `purpose`, a
** string literal, with the platform's ceiling timer; rt__gate_release
** gives it back. */
void rt__gate_acquire(rt_world *w, uint32_t a, const char *purpose);
void rt__gate_release(rt_world *w, uint32_t a);
void rt__drain_waiters(rt_world *w, uint32_t a);
int64_t rt__new_id(rt_world *w);
/* The message the platform uses when it resets an actor for `cause`. */
const char *rt__death_message(rt_death_cause cause);

/* ---- the platform alarm (rt_world.c) ------------------------------------ */

/* setAlarm(at_us) / deleteAlarm(): stored row, armed event, ALARM_SET /
** ALARM_DELETE; nothing when unchanged. */
void rt__alarm_set(rt_world *w, uint32_t a, int64_t at_us);
void rt__alarm_clear(rt_world *w, uint32_t a);
/* Re-arms from the stored row (after a rollback or a restore). */
void rt__alarm_sync(rt_world *w, uint32_t a);
/* The alarm invocation m failed: retried with backoff, at most
** alarm_retry_max times. */
void rt__alarm_failed(rt_world *w, uint32_t a, const rt_msg *m);
/* The alarm handler returned: step 1 (cancel its time limit; the fired
** alarm is consumed unless re-set), then the class reschedules, then step 2
** (clear a stale stored row, ALARM_DONE ok). 0 from step 1 if the handler
** was already cut (then skip the rest). */
int rt__alarm_handler_returned(rt_world *w, uint32_t a);
void rt__alarm_handler_done(rt_world *w, uint32_t a);

/* ---- rt_storage.c --------------------------------------------------------- */

/* Puts SQLite in single-thread mode without memory statistics, once per
** process; must come before any other SQLite call (later, a no-op). */
void rt__sqlite_single_thread(void);

/* Adds module m's tables to every database made from now on and gives its
** statements slots; idempotent. -1 if storage already built its template
** (register before the first world opens a database) or is full. */
int rt__store_register(rt_store_module *m);
/* Builds the template (an empty database with every registered schema, in
** 512-byte pages) once per process; later registrations are refused. 0/-1. */
int rt__store_template(void);
/* Statement k of module m on actor a's database (opened if needed), reset;
** NULL with a message on an SQL error. */
sqlite3_stmt *rt__stmt(rt_world *w, uint32_t a, const rt_store_module *m, int k);
/* Steps st (bound, or NULL) once and resets it: column 0 of its first row as
** an integer, or dflt when st is NULL, has no row or the value is NULL. */
int64_t rt__step_int(sqlite3_stmt *st, int64_t dflt);
/* Opens the turn's transaction if needed; returns 0 or -1 (no database,
** storage broken). */
int rt__txn_join(rt_world *w, uint32_t a);
/* Records a write boundary: one RT_EV_WRITE with the op's table and the
** row's name; commits at once outside turn mode. rc: the step's result. */
int rt__txn_wrote_row(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc,
                      const char *name);
int rt__txn_wrote(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc);
/* Installs SQLite's allocator (rt_sqlmem.c: size classes with free lists
** in front of malloc; not under AddressSanitizer). Only before SQLite
** starts (rt__sqlite_single_thread); SQLite ignores a later call. */
void rt__sqlmem_install(void);
/* Gives the allocator's cached free blocks back to malloc (at exit, so
** that leak checkers see every block released). */
void rt__sqlmem_trim(void);
/* Bytes of free blocks the allocator keeps (at most 512 KB); for tests. */
size_t rt__sqlmem_cached(void);
/* 1 if this build installs the allocator (0 under AddressSanitizer). */
int rt__sqlmem_on(void);
int rt__db_open(rt_world *w, uint32_t a);
void rt__db_close(rt_db *d);
/* Actor a runs user SQL (it has a script): from its next turn on, every
** turn of its database is a real SQLite transaction, never a savepoint of a
** held one (rt_storage.c "held transactions"); a held transaction is ended
** at once when no turn is open. */
void rt__db_user_sql(rt_world *w, uint32_t a);
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
/* 1 if `table` (a table of the schema template, by name; a string literal:
** its index is kept by the pointer) of actor a's
** in-memory database is known to hold no row: the connection started as
** the template or a wiped pooled one and no row of the table was written
** since (its update hook). 0 when not known (a file, a parked image, a
** WITHOUT ROWID table, scan caching off). A scan of a known-empty table
** may return no row without running (issue #18). Opens the database as
** the scan would. */
int rt__table_empty(rt_world *w, uint32_t a, const char *table);
int rt__w_alarm(rt_world *w, uint32_t a, int64_t at_us);
int64_t rt__stored_alarm(rt_world *w, uint32_t a);
/* Deletes the stored alarm row of actor a directly, outside the actor's
** turn (the lost-alarm fault; inside an open transaction it joins it). */
void rt__db_alarm_drop(rt_world *w, uint32_t a);
void rt__commit_now(rt_world *w, uint32_t a);
void rt__rollback(rt_world *w, uint32_t a, const char *reason);

#endif
