/*
** rt_storage.c: per-actor durable storage (SQLite) and turn commits.
**
** Each actor has its own database: ":memory:" by default, a WAL file under
** cfg.storage_dir for runs that kill real processes. Tables follow
** reference/agents-sdk.md A.1 (only the columns the models read):
** cf_agents_runs, cf_agents_schedules, cf_agent_tool_runs, plus the alarm
** slot and the child side of tool runs.
**
** Commit semantics (workerd-observed.md item 1): in RT_COMMIT_TURN mode
** the writes of a turn join one transaction that commits commit_window_us
** after the turn; a death before then rolls the whole turn back. In
** RT_COMMIT_IMMEDIATE mode every write is durable when it returns (the
** seeds' model). Every write is one RT_EV_WRITE record: a durable write
** boundary for crash-point coverage.
*/
#include <fiu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

enum {
  ST_RUN_INSERT, ST_RUN_STASH, ST_RUN_DELETE, ST_RUN_SELECT, ST_RUN_SNAP, ST_ALARM_SET,
  ST_ALARM_DELETE, ST_ALARM_GET, ST_TR_INSERT, ST_TR_STATUS, ST_TR_OPEN,
  ST_TR_GET, ST_CHILD_SET, ST_CHILD_GET, ST_RUN_COUNT, ST_SCH_INSERT,
  ST_SCH_DELETE, ST_SCH_DUE, ST_SCH_TIME, ST_SCH_MIN, ST_SCH_FIND, ST_BEGIN, ST_COMMIT,
  ST_ROLLBACK, ST_COUNT
};

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS cf_agents_runs(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " snapshot TEXT, created_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS cf_agents_schedules(id INTEGER PRIMARY KEY, callback TEXT,"
    " type TEXT, time INTEGER, intervalSeconds INTEGER, running INTEGER DEFAULT 0,"
    " created_at INTEGER);"
    "CREATE TABLE IF NOT EXISTS cf_agent_tool_runs(run_id INTEGER PRIMARY KEY,"
    " agent_type TEXT NOT NULL, child INTEGER, status INTEGER NOT NULL, error_message TEXT,"
    " started_at INTEGER NOT NULL, completed_at INTEGER);"
    "CREATE TABLE IF NOT EXISTS rv_child_runs(run_id INTEGER PRIMARY KEY, status INTEGER);"
    "CREATE TABLE IF NOT EXISTS rv_alarm(k INTEGER PRIMARY KEY, at INTEGER);"
    /* legacy fibers (seed 001 "SQLite schema"; rt_legacy.c); integer ids */
    "CREATE TABLE IF NOT EXISTS cf_agents_fibers(id INTEGER PRIMARY KEY, callback TEXT NOT NULL,"
    " payload TEXT, snapshot TEXT, status TEXT NOT NULL DEFAULT 'running',"
    " retry_count INTEGER NOT NULL DEFAULT 0, max_retries INTEGER NOT NULL DEFAULT 3,"
    " result TEXT, error TEXT, started_at INTEGER, updated_at INTEGER, completed_at INTEGER,"
    " created_at INTEGER NOT NULL);"
    /* executor (seed 002 "Idempotency contract"; rt_executor.c) */
    "CREATE TABLE IF NOT EXISTS beach_turn_checkpoints(turn_id INTEGER NOT NULL,"
    " session_id TEXT NOT NULL, phase TEXT NOT NULL, state TEXT NOT NULL,"
    " timestamp INTEGER NOT NULL, UNIQUE(turn_id, phase, timestamp));"
    /* thread store (seed 004 "Checkpoint Mechanism"; rt_thread.c) */
    "CREATE TABLE IF NOT EXISTS rv_threads(thread_id INTEGER PRIMARY KEY, version INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS rv_thread_changesets(thread_id INTEGER NOT NULL,"
    " version INTEGER NOT NULL, run_id INTEGER NOT NULL, parent_run_id INTEGER, run_meta TEXT,"
    " reason TEXT NOT NULL, messages TEXT NOT NULL, n_messages INTEGER NOT NULL,"
    " patches TEXT NOT NULL, state_actions TEXT, snapshot TEXT, PRIMARY KEY(thread_id, version));"
    "CREATE TABLE IF NOT EXISTS rv_thread_state(thread_id INTEGER NOT NULL, path TEXT NOT NULL,"
    " scope INTEGER NOT NULL, value TEXT, PRIMARY KEY(thread_id, path));"
    /* chat turns (seed 000 Layer 3; seed 001 "Integration with existing
       AIChatAgent streaming"; reference A.12; rt_chat.c) */
    "CREATE TABLE IF NOT EXISTS cf_ai_chat_agent_messages(id INTEGER PRIMARY KEY,"
    " role TEXT NOT NULL, answers INTEGER, message TEXT NOT NULL, created_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS cf_ai_chat_stream_metadata(id INTEGER PRIMARY KEY,"
    " request_id INTEGER NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL,"
    " completed_at INTEGER);"
    "CREATE TABLE IF NOT EXISTS cf_ai_chat_stream_chunks(stream_id INTEGER NOT NULL,"
    " chunk_index INTEGER NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL,"
    " PRIMARY KEY(stream_id, chunk_index));"
    "CREATE TABLE IF NOT EXISTS cf_ai_chat_request_context(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS rv_chat_schedule_payload(schedule_id INTEGER PRIMARY KEY,"
    " callback TEXT NOT NULL, target INTEGER NOT NULL, origin INTEGER NOT NULL,"
    " deadline INTEGER NOT NULL);";

static const char *const sql[ST_COUNT] = {
    [ST_RUN_INSERT] = "INSERT INTO cf_agents_runs(id,name,snapshot,created_at) VALUES(?,?,NULL,?)",
    [ST_RUN_STASH] = "UPDATE cf_agents_runs SET snapshot=? WHERE id=?",
    [ST_RUN_DELETE] = "DELETE FROM cf_agents_runs WHERE id=?",
    [ST_RUN_SELECT] = "SELECT id,name,snapshot,created_at FROM cf_agents_runs ORDER BY created_at,id",
    [ST_RUN_SNAP] = "SELECT snapshot FROM cf_agents_runs WHERE id=?",
    [ST_ALARM_SET] = "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,?)",
    [ST_ALARM_DELETE] = "DELETE FROM rv_alarm WHERE k=0",
    [ST_ALARM_GET] = "SELECT at FROM rv_alarm WHERE k=0",
    [ST_TR_INSERT] = "INSERT INTO cf_agent_tool_runs(run_id,agent_type,child,status,started_at)"
                     " VALUES(?,?,?,?,?)",
    [ST_TR_STATUS] = "UPDATE cf_agent_tool_runs SET status=?,error_message=?,completed_at=?"
                     " WHERE run_id=? AND status IN (1,2)",
    [ST_TR_OPEN] = "SELECT run_id FROM cf_agent_tool_runs WHERE status IN (1,2)"
                   " ORDER BY started_at,run_id",
    [ST_TR_GET] = "SELECT status,child FROM cf_agent_tool_runs WHERE run_id=?",
    [ST_CHILD_SET] = "INSERT OR REPLACE INTO rv_child_runs(run_id,status) VALUES(?,?)",
    [ST_CHILD_GET] = "SELECT status FROM rv_child_runs WHERE run_id=?",
    [ST_RUN_COUNT] = "SELECT count(*) FROM cf_agents_runs",
    [ST_SCH_INSERT] = "INSERT INTO cf_agents_schedules(id,callback,type,time,intervalSeconds,"
                      "created_at) VALUES(?1,?2,CASE WHEN ?4>0 THEN 'interval' ELSE 'delayed' END,"
                      "?3,?4,?5)",
    [ST_SCH_DELETE] = "DELETE FROM cf_agents_schedules WHERE id=?",
    [ST_SCH_DUE] = "SELECT id,intervalSeconds,callback FROM cf_agents_schedules WHERE time<=? ORDER BY time,id",
    [ST_SCH_TIME] = "UPDATE cf_agents_schedules SET time=? WHERE id=?",
    [ST_SCH_MIN] = "SELECT min(time) FROM cf_agents_schedules",
    [ST_SCH_FIND] = "SELECT id FROM cf_agents_schedules WHERE callback=? ORDER BY id LIMIT 1",
    [ST_BEGIN] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
};

/* An empty database with the schema, serialized once per process: a new
** in-memory actor database is a copy of it (about 10x cheaper than running
** the schema, which matters when every crash cycle starts fresh). Small
** pages keep an idle actor's database small. */
static unsigned char *template_img;
static sqlite3_int64 template_sz;

static int template_build(void) {
  sqlite3 *db;
  if (template_img) return 0;
  if (sqlite3_open(":memory:", &db)) return -1;
  int rc = sqlite3_exec(db, "PRAGMA page_size=512;", NULL, NULL, NULL) ||
           sqlite3_exec(db, schema, NULL, NULL, NULL);
  if (!rc) template_img = sqlite3_serialize(db, "main", &template_sz, 0);
  sqlite3_close(db);
  return template_img ? 0 : -1;
}

static int open_from_template(sqlite3 *db) {
  if (template_build()) return -1;
  unsigned char *copy = sqlite3_malloc64((sqlite3_uint64)template_sz);
  if (!copy) return -1;
  memcpy(copy, template_img, (size_t)template_sz);
  return sqlite3_deserialize(db, "main", copy, template_sz, template_sz,
                             SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE)
             ? -1
             : 0;
}

static int open_from_image(rt_db *d);

/* ---- the connection pool ------------------------------------------------
** A fresh in-memory database costs a schema parse on its first statement
** (over half the cost of a short run). A world that ends hands its
** in-memory connections back here, wiped (DELETE FROM every table of the
** template, sqlite_sequence included), with their prepared statements;
** the next fresh database of the process takes one. An emptied table
** behaves as a new one (rowids restart at 1) and every read that decides
** anything has an ORDER BY, so a pooled connection runs exactly as a new
** one. */
#define POOL_MAX 256
static rt_db db_pool[POOL_MAX];
static int pool_n;
static char table_names[32][64];
static int n_tables = -1;

static int list_tables(sqlite3 *db) {
  sqlite3_stmt *st;
  n_tables = 0;
  if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name",
                         -1, &st, NULL))
    return -1;
  while (n_tables < 32 && sqlite3_step(st) == SQLITE_ROW)
    snprintf(table_names[n_tables++], 64, "%.63s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return 0;
}

/* Empties d's tables; returns 0, or -1 if it cannot (then close it). */
static int wipe(rt_db *d) {
  if (d->txn_open) sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
  d->txn_open = 0;
  if (n_tables < 0 && list_tables(d->db)) return -1;
  for (int i = 0; i < n_tables; i++) {
    char q[96];
    snprintf(q, sizeof q, "DELETE FROM \"%.63s\"", table_names[i]);
    if (!d->wipe[i] && sqlite3_prepare_v3(d->db, q, -1, SQLITE_PREPARE_PERSISTENT, &d->wipe[i], NULL))
      return -1;
    if (sqlite3_step(d->wipe[i]) != SQLITE_DONE) return -1;
    sqlite3_reset(d->wipe[i]);
  }
  return 0;
}

static void db_close_now(rt_db *d);

/* Closes the pooled connections at exit (so that leak checkers see every
** SQLite allocation released). */
static void pool_drain(void) {
  while (pool_n > 0) db_close_now(&db_pool[--pool_n]);
  sqlite3_free(template_img);
  template_img = NULL;
}

/* Keeps d's connection for a later fresh database. 1 if it was taken. */
static int pool_put(rt_db *d) {
  static int drain_registered;
  if (!d->poolable || d->img || pool_n == POOL_MAX || wipe(d)) return 0;
  if (!drain_registered) drain_registered = atexit(pool_drain) == 0;
  db_pool[pool_n++] = *d;
  memset(d, 0, sizeof *d);
  return 1;
}

static int pool_take(rt_db *d) {
  if (pool_n == 0) return 0;
  *d = db_pool[--pool_n];
  return 1;
}

/* Source of rt_db.gen values: strictly increasing, so a value names one
** state of one connection for the whole process. Only ever compared for
** equality; it decides whether a scan is repeated, never a result. */
static uint64_t store_gen_next;

static void new_gen(rt_db *d) { d->gen = ++store_gen_next; }

static int db_path(rt_world *w, uint32_t a, char *buf, size_t n) {
  if (!w->cfg.storage_files) return snprintf(buf, n, ":memory:") >= (int)n;
  return snprintf(buf, n, "%s/actor-%u.db", w->cfg.storage_dir, a) >= (int)n;
}

int rt__db_open(rt_world *w, uint32_t a) {
  rt_db *d = &w->actors[a].store;
  char path[400];
  if (d->db) return 0;
  new_gen(d);
  if (!w->cfg.storage_files && !d->img && pool_take(d)) {
    new_gen(d);
    return 0;
  }
  if (db_path(w, a, path, sizeof path)) return -1;
  if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL)) {
    fprintf(stderr, "revenant: cannot open storage %s: %s\n", path, sqlite3_errmsg(d->db));
    sqlite3_close(d->db);
    d->db = NULL;
    return -1;
  }
  if (!w->cfg.storage_files && d->img) return open_from_image(d); /* journal: memory */
  if (!w->cfg.storage_files) {
    d->poolable = 1;
    return open_from_template(d->db);
  }
  if (sqlite3_exec(d->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, NULL) ||
      sqlite3_exec(d->db, schema, NULL, NULL, NULL))
    return -1;
  return 0;
}

/* Runs one of the transaction-control statements. */
static void txn_ctl(rt_world *w, uint32_t a, int id);

/* An idle in-memory database of a world with many actors is parked as its
** serialized image (a few KB with 512-byte pages) instead of a live
** connection with its cache and statements; the next access opens it again
** from the image. */
/* Worlds with at most this many actors keep idle connections open: a
** parked database pays a schema parse and a fresh prepare of every
** statement when it wakes (about 40 % of a 1-hour #1595 run, callgrind),
** and a few open connections cost little memory. Only memory depends on
** it: the content and every result are the same. */
#define RT_PARK_MIN_ACTORS 64

void rt__db_park(rt_world *w, rt_db *d) {
  if (w->cfg.storage_files || !d->db || d->txn_open) return;
  if (w->n_actors <= RT_PARK_MIN_ACTORS) return;
  sqlite3_int64 sz;
  unsigned char *img = sqlite3_serialize(d->db, "main", &sz, 0);
  if (!img) return;
  db_close_now(d); /* a pooled connection would keep the pages */
  new_gen(d);
  d->img = img;
  d->img_sz = sz;
}

static int open_from_image(rt_db *d) {
  unsigned char *img = d->img;
  d->img = NULL;
  return sqlite3_deserialize(d->db, "main", img, d->img_sz, d->img_sz,
                             SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE)
             ? -1
             : 0;
}

void rt__db_close(rt_db *d) {
  new_gen(d);
  if (pool_put(d)) return;
  db_close_now(d);
}

/* Closes d's connection for real (no pool). */
static void db_close_now(rt_db *d) {
  for (int i = 0; i < 32; i++) {
    sqlite3_finalize(d->wipe[i]);
    d->wipe[i] = NULL;
  }
  d->poolable = 0;
  d->sbx = NULL; /* freed by SQLite with the connection */
  sqlite3_free(d->img);
  d->img = NULL;
  rt__legacy_db_close(d); /* legacy fibers: finalize rt_legacy.c's statements */
  rt__chat_db_close(d);   /* chat turns: finalize rt_chat.c's statements */
  for (int i = 0; i < ST_COUNT; i++) {
    sqlite3_finalize(d->st[i]);
    d->st[i] = NULL;
  }
  sqlite3_close(d->db);
  d->db = NULL;
  d->txn_open = 0;
}

static sqlite3_stmt *stmt(rt_world *w, uint32_t a, int id) {
  rt_db *d = &w->actors[a].store;
  if (!d->db && rt__db_open(w, a)) return NULL;
  if (!d->st[id] &&
      sqlite3_prepare_v3(d->db, sql[id], -1, SQLITE_PREPARE_PERSISTENT, &d->st[id], NULL)) {
    fprintf(stderr, "revenant: sql error: %s\n", sqlite3_errmsg(d->db));
    return NULL;
  }
  sqlite3_reset(d->st[id]); /* every caller binds all parameters */
  return d->st[id];
}

static void txn_ctl(rt_world *w, uint32_t a, int id) {
  sqlite3_stmt *st = stmt(w, a, id);
  if (st) {
    sqlite3_step(st);
    sqlite3_reset(st);
  }
}

static void commit_event(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt__commit_now((rt_world *)ctx, (uint32_t)arg);
}

static int commit_fails(rt_world *w, rt_actor *ac) {
  if (ac->fail_commits > 0) {
    ac->fail_commits--;
    return 1;
  }
  if (w->fail_any_commits > 0) {
    w->fail_any_commits--;
    return 1;
  }
  return fiu_fail("revenant/storage/commit") != 0;
}

static void storage_death(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_actor((rt_world *)ctx, (uint32_t)arg, RT_DEATH_STORAGE);
}

/* A failed commit breaks the output gate: the actor is reset as soon as
** the current turn returns (never under the feet of the code that wrote),
** and the rest of the turn can no longer write. */
static void storage_broken(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  if (!m || m->storage_broken) return;
  m->storage_broken = 1;
  sim_after(w->s, 0, m->dom, storage_death, w, a);
}

void rt__commit_now(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_db *d = &ac->store;
  if (!d->txn_open) return;
  if (commit_fails(w, ac)) {
    rt__emit(w, RT_EV_STORAGE_FAIL, a, d->txn_id, SQLITE_IOERR, 0, NULL);
    RT_PROBE(w, a, RT_PROBE_STORAGE_FAIL_COMMIT);
    rt__rollback(w, a, "storage_fail");
    storage_broken(w, a);
    return;
  }
  txn_ctl(w, a, ST_COMMIT);
  d->txn_open = 0;
  rt__emit(w, RT_EV_TXN_COMMIT, a, d->txn_id, d->txn_writes, 0, NULL);
}

void rt__rollback(rt_world *w, uint32_t a, const char *reason) {
  rt_db *d = &w->actors[a].store;
  if (!d->txn_open) return;
  txn_ctl(w, a, ST_ROLLBACK);
  new_gen(d); /* the rows written since BEGIN are gone again */
  d->txn_open = 0;
  rt__emit(w, RT_EV_TXN_ROLLBACK, a, d->txn_id, d->txn_writes, 0, reason);
  rt__alarm_sync(w, a);
}

static void hook_event(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  (void)arg;
  rt_world *w = ctx;
  if (w->hook_fn) w->hook_fn(w->hook_ctx);
}

/* Opens the turn's transaction if needed; returns 0 or -1. */
static int txn_join(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_db *d = &ac->store;
  if (!d->db && rt__db_open(w, a)) return -1;
  if (ac->mem && ac->mem->storage_broken) return -1;
  if (d->txn_open) return 0;
  d->txn_open = 1;
  d->txn_id = ++w->next_txn;
  d->txn_writes = 0;
  txn_ctl(w, a, ST_BEGIN);
  if (w->cfg.commit != RT_COMMIT_TURN || !ac->mem) return 0;
  sim_after(w->s, w->cfg.commit_window_us, ac->mem->dom, commit_event, w, a);
  return 0;
}

/* The SDK table a write op touches (the WRITE record's "table"). */
static const char *op_table(rt_write_op op) {
  switch (op) {
    case RT_W_FIBER_INSERT: case RT_W_STASH: case RT_W_FIBER_DELETE: return "cf_agents_runs";
    case RT_W_TOOLRUN_INSERT: case RT_W_TOOLRUN_STATUS: return "cf_agent_tool_runs";
    case RT_W_SCHEDULE: return "cf_agents_schedules";
    case RT_W_CHILD_RUN: return "rv_child_runs";
    case RT_W_LEGACY_FIBER: return "cf_agents_fibers";
    case RT_W_CHECKPOINT: return "beach_turn_checkpoints";
    case RT_W_THREAD: return "rv_thread_changesets";
    case RT_W_USER_SQL: return "user";
    default: return NULL; /* the alarm is not a table; chat writes name their own record */
  }
}

/* Records a write boundary (one RT_EV_WRITE with the table and the row's
** name: fiber name, schedule callback, tool-run status); commits at once
** when not in turn mode. */
static int txn_wrote_row(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc,
                         const char *name) {
  rt_actor *ac = &w->actors[a];
  rt_db *d = &ac->store;
  if (rc != SQLITE_DONE) {
    fprintf(stderr, "revenant: storage write failed: %s\n", sqlite3_errmsg(d->db));
    return -1;
  }
  d->txn_writes++;
  const char *table = op_table(op);
  sim_emit(w->s, RT_EV_WRITE, a, op, key, d->txn_id, table ? rt__str(w, table) : 0,
           name ? rt__str(w, name) : 0);
  w->writes++;
  if (w->hook_fn && w->writes == w->hook_k) sim_after(w->s, 0, 0, hook_event, w, 0);
  if (w->cfg.commit != RT_COMMIT_TURN || !ac->mem) rt__commit_now(w, a);
  return 0;
}

static int txn_wrote(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc) {
  return txn_wrote_row(w, a, op, key, rc, NULL);
}

/* A schedule row changed: RT_EV_SCHEDULE_SET (at -1: deleted). */
static void schedule_set(rt_world *w, uint32_t a, int64_t id, int64_t at_us, int64_t iv_us,
                         const char *callback) {
  rt__emit(w, RT_EV_SCHEDULE_SET, a, id, at_us, iv_us, callback);
}

int rt__w_fiber_insert(rt_world *w, uint32_t a, int64_t id, const char *name) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_RUN_INSERT))) return -1;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, w->s->now_us / 1000);
  return txn_wrote_row(w, a, RT_W_FIBER_INSERT, id, sqlite3_step(st), name);
}

int rt__w_stash(rt_world *w, uint32_t a, int64_t id, int pc) {
  sqlite3_stmt *st;
  char snap[48];
  if (txn_join(w, a) || !(st = stmt(w, a, ST_RUN_STASH))) return -1;
  rt__snapshot_text(snap, sizeof snap, pc);
  sqlite3_bind_text(st, 1, snap, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE)
    rt__emit(w, RT_EV_STASH, a, id, pc, w->actors[a].store.txn_id, snap);
  return txn_wrote(w, a, RT_W_STASH, id, rc);
}

int rt__w_stash_value(rt_world *w, uint32_t a, int64_t id, const char *value, int via_this) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_RUN_STASH))) return -1;
  sqlite3_bind_text(st, 1, value, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE)
    sim_emit(w->s, RT_EV_STASH, a, id, -1, w->actors[a].store.txn_id, rt__str(w, value),
             rt__str(w, via_this ? "this" : "ctx"));
  return txn_wrote(w, a, RT_W_STASH, id, rc);
}

void rt__fiber_snapshot(rt_world *w, uint32_t a, int64_t id, char *buf, size_t n) {
  sqlite3_stmt *st = stmt(w, a, ST_RUN_SNAP);
  snprintf(buf, n, "null");
  if (!st) return;
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_reset(st);
}

int rt__pending_fiber_recovery(rt_world *w, uint32_t a) {
  rt_orphan rows[8];
  rt_mem *m = w->actors[a].mem;
  int n = rt__load_orphans(w, a, rows, 8);
  for (int i = 0; i < n; i++) {
    int active = 0;
    for (int k = 0; m && k < m->n_fibers; k++)
      if (m->fibers[k].live && m->fibers[k].id == rows[i].id) active = 1;
    if (!active) return 1;
  }
  return 0;
}

int rt__w_fiber_delete(rt_world *w, uint32_t a, int64_t id) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_RUN_DELETE))) return -1;
  sqlite3_bind_int64(st, 1, id);
  return txn_wrote(w, a, RT_W_FIBER_DELETE, id, sqlite3_step(st));
}

int rt__w_alarm(rt_world *w, uint32_t a, int64_t at_us) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, at_us < 0 ? ST_ALARM_DELETE : ST_ALARM_SET)))
    return -1;
  if (at_us >= 0) sqlite3_bind_int64(st, 1, at_us);
  return txn_wrote(w, a, at_us < 0 ? RT_W_ALARM_DELETE : RT_W_ALARM_SET, at_us,
                   sqlite3_step(st));
}

int rt__w_toolrun_insert(rt_world *w, uint32_t a, int64_t run, uint32_t child,
                         int status) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_TR_INSERT))) return -1;
  sqlite3_bind_int64(st, 1, run);
  sqlite3_bind_text(st, 2, w->actors[child].spec.cls, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, child);
  sqlite3_bind_int(st, 4, status);
  sqlite3_bind_int64(st, 5, w->s->now_us / 1000);
  return txn_wrote_row(w, a, RT_W_TOOLRUN_INSERT, run, sqlite3_step(st),
                       rt_toolrun_status_name(status));
}

/* Returns 1 if the row changed, 0 if it was terminal or absent, -1 on
** error. Terminal rows are immutable (@1604). */
int rt__w_toolrun_status(rt_world *w, uint32_t a, int64_t run, int status,
                         const char *reason) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_TR_STATUS))) return -1;
  sqlite3_bind_int(st, 1, status);
  if (reason)
    sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 2);
  if (RT_TR_IS_TERMINAL(status))
    sqlite3_bind_int64(st, 3, w->s->now_us / 1000);
  else
    sqlite3_bind_null(st, 3);
  sqlite3_bind_int64(st, 4, run);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) return txn_wrote(w, a, RT_W_TOOLRUN_STATUS, run, rc);
  if (sqlite3_changes(w->actors[a].store.db) == 0) return 0;
  return txn_wrote_row(w, a, RT_W_TOOLRUN_STATUS, run, rc, rt_toolrun_status_name(status)) ? -1 : 1;
}

int rt__w_child_run(rt_world *w, uint32_t a, int64_t run, int status) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_CHILD_SET))) return -1;
  sqlite3_bind_int64(st, 1, run);
  sqlite3_bind_int(st, 2, status);
  return txn_wrote(w, a, RT_W_CHILD_RUN, run, sqlite3_step(st));
}

int rt__w_schedule_insert(rt_world *w, uint32_t a, int64_t id,
                          const char *callback, int64_t time_s,
                          int64_t interval_s) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_SCH_INSERT))) return -1;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_text(st, 2, callback, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, time_s);
  sqlite3_bind_int64(st, 4, interval_s);
  sqlite3_bind_int64(st, 5, w->s->now_us / 1000000);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) schedule_set(w, a, id, time_s * 1000000, interval_s * 1000000, callback);
  return txn_wrote_row(w, a, RT_W_SCHEDULE, id, rc, callback);
}

int rt__w_schedule_delete(rt_world *w, uint32_t a, int64_t id, const char *callback) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_SCH_DELETE))) return -1;
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) schedule_set(w, a, id, -1, 0, callback);
  return txn_wrote_row(w, a, RT_W_SCHEDULE, id, rc, callback);
}

int rt__w_schedule_time(rt_world *w, uint32_t a, int64_t id, int64_t time_s, int64_t iv_s,
                        const char *callback) {
  sqlite3_stmt *st;
  if (txn_join(w, a) || !(st = stmt(w, a, ST_SCH_TIME))) return -1;
  sqlite3_bind_int64(st, 1, time_s);
  sqlite3_bind_int64(st, 2, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) schedule_set(w, a, id, time_s * 1000000, iv_s * 1000000, callback);
  return txn_wrote_row(w, a, RT_W_SCHEDULE, id, rc, callback);
}

void rt__snapshot_text(char *buf, size_t n, int pc) { snprintf(buf, n, "{\"pc\":%d}", pc); }

int rt__snapshot_pc(const unsigned char *snap) {
  int pc, len = 0;
  if (!snap || sscanf((const char *)snap, "{\"pc\":%d}%n", &pc, &len) != 1 || len == 0 ||
      snap[len] != '\0')
    return -1;
  return pc;
}

/* ---- scans kept while the tables are unchanged --------------------------
** A scan's result depends only on the actor's tables. They change only
** through this connection: a write (counted by sqlite3_total_changes64), a
** rollback, or an open, close or park (each gives rt_db.gen a value never
** used before). So a scan whose (gen, change count) equals the last one's
** would read the same rows, in the same ORDER BY order. */

static int scan_cache_off;

void rt_scan_cache_set(int on) { scan_cache_off = !on; }

int rt__scan_cached(rt_world *w, uint32_t a, int k, int64_t param, void *out,
                    size_t row_size, int cap, int *n) {
  rt_actor *ac = &w->actors[a];
  rt_scan_cache *c = &ac->scan[k];
  if (scan_cache_off || w->cfg.storage_files || !ac->store.db || c->gen != ac->store.gen ||
      c->param != param || c->cap_rows != cap ||
      c->changes != (int64_t)sqlite3_total_changes64(ac->store.db))
    return 0;
  if (c->n) memcpy(out, c->rows, (size_t)c->n * row_size);
  *n = c->n;
  return 1;
}

void rt__scan_store(rt_world *w, uint32_t a, int k, int64_t param,
                    const void *rows, size_t row_size, int cap, int n) {
  rt_actor *ac = &w->actors[a];
  rt_scan_cache *c = &ac->scan[k];
  size_t need = (size_t)n * row_size;
  c->gen = 0;
  if (w->cfg.storage_files || !ac->store.db) return;
  if (need > c->cap) {
    void *r = realloc(c->rows, need);
    if (!r) return;
    c->rows = r;
    c->cap = need;
  }
  if (need) memcpy(c->rows, rows, need);
  c->n = n;
  c->cap_rows = cap;
  c->param = param;
  c->changes = (int64_t)sqlite3_total_changes64(ac->store.db);
  c->gen = ac->store.gen;
}

void rt__scan_free(rt_actor *ac) {
  for (int k = 0; k < RT_SCANS; k++) {
    free(ac->scan[k].rows);
    ac->scan[k].rows = NULL;
    ac->scan[k].cap = 0;
    ac->scan[k].gen = 0;
  }
}

uint32_t rt__orphan_snapshot(rt_world *w, uint32_t a, int64_t id) {
  sqlite3_stmt *st = rt__prepare(w, a, "SELECT snapshot FROM cf_agents_runs WHERE id=?");
  uint32_t s = 0;
  if (!st) return rt__str(w, "null");
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT)
    s = rt__str(w, (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return s ? s : rt__str(w, "null");
}

int rt__load_orphans(rt_world *w, uint32_t a, rt_orphan *out, int cap) {
  int n = 0;
  if (rt__scan_cached(w, a, RT_SCAN_ORPHANS, 0, out, sizeof *out, cap, &n)) return n;
  sqlite3_stmt *st = stmt(w, a, ST_RUN_SELECT);
  if (!st) return 0;
  while (n < cap && sqlite3_step(st) == SQLITE_ROW) {
    out[n].id = sqlite3_column_int64(st, 0);
    snprintf(out[n].name, sizeof out[n].name, "%s", sqlite3_column_text(st, 1));
    out[n].snapshot = rt__snapshot_pc(sqlite3_column_text(st, 2));
    out[n].created_ms = sqlite3_column_int64(st, 3);
    n++;
  }
  sqlite3_reset(st);
  rt__scan_store(w, a, RT_SCAN_ORPHANS, 0, out, sizeof *out, cap, n);
  return n;
}

int rt__load_open_toolruns(rt_world *w, uint32_t a, int64_t *out, int cap) {
  int n = 0;
  if (rt__scan_cached(w, a, RT_SCAN_OPEN_TOOLRUNS, 0, out, sizeof *out, cap, &n)) return n;
  sqlite3_stmt *st = stmt(w, a, ST_TR_OPEN);
  if (!st) return 0;
  while (n < cap && sqlite3_step(st) == SQLITE_ROW) out[n++] = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  rt__scan_store(w, a, RT_SCAN_OPEN_TOOLRUNS, 0, out, sizeof *out, cap, n);
  return n;
}

/* Status of a tool run (or -1) and its child actor. */
int rt__toolrun_get(rt_world *w, uint32_t a, int64_t run, uint32_t *child) {
  int64_t got[3] = {0, -1, 0}; /* found, status, child */
  int n = 0;
  if (!rt__scan_cached(w, a, RT_SCAN_TOOLRUN_GET, run, got, sizeof got, 1, &n)) {
    sqlite3_stmt *st = stmt(w, a, ST_TR_GET);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run);
    if (sqlite3_step(st) == SQLITE_ROW) {
      got[0] = 1;
      got[1] = sqlite3_column_int(st, 0);
      got[2] = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    rt__scan_store(w, a, RT_SCAN_TOOLRUN_GET, run, got, sizeof got, 1, 1);
  }
  if (got[0] && child) *child = (uint32_t)got[2];
  return (int)got[1];
}

int rt__child_run_get(rt_world *w, uint32_t a, int64_t run) {
  sqlite3_stmt *st = stmt(w, a, ST_CHILD_GET);
  int status = 0;
  if (!st) return 0;
  sqlite3_bind_int64(st, 1, run);
  if (sqlite3_step(st) == SQLITE_ROW) status = sqlite3_column_int(st, 0);
  sqlite3_reset(st);
  return status;
}

static int64_t one_int(rt_world *w, uint32_t a, int id, int64_t dflt) {
  sqlite3_stmt *st = stmt(w, a, id);
  int64_t v = dflt;
  if (!st) return dflt;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
    v = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return v;
}

int64_t rt__stored_alarm(rt_world *w, uint32_t a) { return one_int(w, a, ST_ALARM_GET, -1); }

int rt__count_runs(rt_world *w, uint32_t a) { return (int)one_int(w, a, ST_RUN_COUNT, 0); }

int64_t rt__next_schedule_time(rt_world *w, uint32_t a) { return one_int(w, a, ST_SCH_MIN, -1); }

int rt__due_schedules(rt_world *w, uint32_t a, int64_t now_s, int64_t *ids,
                      int64_t *interval_s, char (*names)[48], int cap) {
  sqlite3_stmt *st = stmt(w, a, ST_SCH_DUE);
  int n = 0;
  if (!st) return 0;
  sqlite3_bind_int64(st, 1, now_s);
  while (n < cap && sqlite3_step(st) == SQLITE_ROW) {
    ids[n] = sqlite3_column_int64(st, 0);
    interval_s[n] = sqlite3_column_int64(st, 1);
    snprintf(names[n], 48, "%s", sqlite3_column_text(st, 2));
    n++;
  }
  sqlite3_reset(st);
  return n;
}

int rt__schedule_find(rt_world *w, uint32_t a, const char *callback, int64_t *id) {
  sqlite3_stmt *st = stmt(w, a, ST_SCH_FIND);
  int found = 0;
  if (!st) return 0;
  sqlite3_bind_text(st, 1, callback, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
    found = 1;
  }
  sqlite3_reset(st);
  return found;
}

/* ---- doors for rt_legacy.c (legacy fibers, seed 001) ------------------ */

int rt__txn_join(rt_world *w, uint32_t a) { return txn_join(w, a); }

int rt__txn_wrote(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc) {
  return txn_wrote(w, a, op, key, rc);
}

int rt__txn_wrote_named(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc,
                        const char *name) {
  return txn_wrote_row(w, a, op, key, rc, name);
}

/* Prepares an ad-hoc statement on the actor's database (opened if needed);
** the caller finalizes it. NULL, with a message, on an SQL error. */
sqlite3_stmt *rt__prepare(rt_world *w, uint32_t a, const char *q) {
  rt_db *d = &w->actors[a].store;
  sqlite3_stmt *st = NULL;
  if (!d->db && rt__db_open(w, a)) return NULL;
  if (sqlite3_prepare_v2(d->db, q, -1, &st, NULL) != SQLITE_OK) {
    fprintf(stderr, "revenant: sql error: %s\n", sqlite3_errmsg(d->db));
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}
