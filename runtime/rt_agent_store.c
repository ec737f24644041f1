/*
** rt_agent_store.c: the SDK core's own tables (reference/agents-sdk.md A.1,
** only the columns the models read): cf_agents_runs (fibers: runFiber,
** stash, _checkRunFibers) and cf_agents_schedules (schedule,
** scheduleEvery, alarm()). Registered with the host's storage as one
** module (rt__store_register); the host knows neither table.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_agent.h"

enum {
  ST_RUN_INSERT, ST_RUN_STASH, ST_RUN_DELETE, ST_RUN_SELECT, ST_RUN_SNAP, ST_RUN_COUNT,
  ST_SCH_INSERT, ST_SCH_DELETE, ST_SCH_DUE, ST_SCH_TIME, ST_SCH_MIN, ST_SCH_FIND,
  ST_SCH_MATCH, ST_SCH_MATCH_CB, ST_SCH_RUNNING, ST_SCH_GET, ST_COUNT
};

static const char *const sql[ST_COUNT] = {
    [ST_RUN_INSERT] = "INSERT INTO cf_agents_runs(id,name,snapshot,created_at) VALUES(?,?,NULL,?)",
    [ST_RUN_STASH] = "UPDATE cf_agents_runs SET snapshot=? WHERE id=?",
    [ST_RUN_DELETE] = "DELETE FROM cf_agents_runs WHERE id=?",
    [ST_RUN_SELECT] = "SELECT id,name,snapshot,created_at FROM cf_agents_runs ORDER BY created_at,id",
    [ST_RUN_SNAP] = "SELECT snapshot FROM cf_agents_runs WHERE id=?",
    [ST_RUN_COUNT] = "SELECT count(*) FROM cf_agents_runs",
    [ST_SCH_INSERT] = "INSERT INTO cf_agents_schedules(id,callback,type,time,intervalSeconds,"
                      "created_at,payload,cron,delayInSeconds,running,execution_started_at)"
                      " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
    [ST_SCH_DELETE] = "DELETE FROM cf_agents_schedules WHERE id=?",
    [ST_SCH_DUE] = "SELECT id,callback,type,time,intervalSeconds,payload,cron,running,"
                   "execution_started_at FROM cf_agents_schedules WHERE time<=? ORDER BY time,id",
    /* after a run: interval -> running=0, time=now+interval in one UPDATE */
    [ST_SCH_TIME] = "UPDATE cf_agents_schedules SET time=?, running=0 WHERE id=?",
    /* _scheduleNextAlarm (A.4): a running interval started less than the
    ** hung timeout ago is not ready; it contributes started + timeout. */
    [ST_SCH_MIN] = "SELECT min(CASE WHEN type='interval' AND running=1 AND execution_started_at"
                   " IS NOT NULL AND execution_started_at>?1 THEN execution_started_at+?2"
                   " ELSE time END) FROM cf_agents_schedules",
    [ST_SCH_FIND] = "SELECT id FROM cf_agents_schedules WHERE callback=? ORDER BY id LIMIT 1",
    /* the SDK's dedup keys (insertForOwner, insertIntervalForOwner):
    ** type, callback, interval or cron, payload, owner (always NULL here) */
    [ST_SCH_MATCH] = "SELECT id FROM cf_agents_schedules WHERE type=?1 AND callback=?2"
                     " AND (?1<>'interval' OR intervalSeconds=?3) AND (?1<>'cron' OR cron=?4)"
                     " AND payload IS ?5 AND owner_path_key IS NULL ORDER BY id LIMIT 1",
    /* the model bug of issue #14 (schedule_every_key "callback"): any row
    ** of the callback */
    [ST_SCH_MATCH_CB] = "SELECT id FROM cf_agents_schedules WHERE callback=? ORDER BY id LIMIT 1",
    [ST_SCH_RUNNING] = "UPDATE cf_agents_schedules SET running=?2, execution_started_at=?3 WHERE id=?1",
    [ST_SCH_GET] = "SELECT id,callback,type,time,intervalSeconds,payload,cron,running,"
                   "execution_started_at FROM cf_agents_schedules WHERE id=?",
};

static const rt_store_op ops[] = {
    {RT_W_FIBER_INSERT, "cf_agents_runs"},
    {RT_W_STASH, "cf_agents_runs"},
    {RT_W_FIBER_DELETE, "cf_agents_runs"},
    {RT_W_SCHEDULE, "cf_agents_schedules"},
};

rt_store_module rt__agent_store = {
    .name = "agent",
    .schema =
        "CREATE TABLE IF NOT EXISTS cf_agents_runs(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " snapshot TEXT, created_at INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS cf_agents_schedules(id INTEGER PRIMARY KEY, callback TEXT,"
        " payload TEXT, type TEXT, time INTEGER, delayInSeconds INTEGER, cron TEXT,"
        " intervalSeconds INTEGER, running INTEGER DEFAULT 0, created_at INTEGER,"
        " execution_started_at INTEGER, owner_path_key TEXT);",
    .sql = sql,
    .n_sql = ST_COUNT,
    .ops = ops,
    .n_ops = (int)(sizeof ops / sizeof ops[0]),
};

static sqlite3_stmt *stmt(rt_world *w, uint32_t a, int id) {
  return rt__stmt(w, a, &rt__agent_store, id);
}

static int64_t one_int(rt_world *w, uint32_t a, int id, int64_t dflt) {
  return rt__step_int(stmt(w, a, id), dflt);
}

/* ---- cf_agents_runs ------------------------------------------------------ */

int rt__w_fiber_insert(rt_world *w, uint32_t a, int64_t id, const char *name) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_RUN_INSERT))) return -1;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, w->s->now_us / 1000);
  return rt__txn_wrote_row(w, a, RT_W_FIBER_INSERT, id, sqlite3_step(st), name);
}

int rt__w_stash(rt_world *w, uint32_t a, int64_t id, int pc) {
  sqlite3_stmt *st;
  char snap[48];
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_RUN_STASH))) return -1;
  rt__snapshot_text(snap, sizeof snap, pc);
  /* not copied (issue #18: a malloc and a copy in each of 11 stashes per
  ** kill/recover cycle): SQLite reads it only in the step below, and every
  ** use of the statement binds both parameters again */
  sqlite3_bind_text(st, 1, snap, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE)
    rt__emit(w, RT_EV_STASH, a, id, pc, w->actors[a].store.txn_id, snap);
  return rt__txn_wrote(w, a, RT_W_STASH, id, rc);
}

int rt__w_stash_value(rt_world *w, uint32_t a, int64_t id, const char *value, int via_this) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_RUN_STASH))) return -1;
  sqlite3_bind_text(st, 1, value, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE)
    sim_emit(w->s, RT_EV_STASH, a, id, -1, w->actors[a].store.txn_id, rt__str(w, value),
             rt__str(w, via_this ? "this" : "ctx"));
  return rt__txn_wrote(w, a, RT_W_STASH, id, rc);
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
  rt_mem *m = RT_MEM(w, a);
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
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_RUN_DELETE))) return -1;
  sqlite3_bind_int64(st, 1, id);
  return rt__txn_wrote(w, a, RT_W_FIBER_DELETE, id, sqlite3_step(st));
}

/* snprintf's text, written by hand: it was 730 instructions of each stash
** (issue #18: 11 stashes per kill/recover cycle). */
void rt__snapshot_text(char *buf, size_t n, int pc) {
  char digits[12];
  int k = 0;
  unsigned u = pc < 0 ? 0u - (unsigned)pc : (unsigned)pc;
  if (n < 24) { /* room for any int: callers pass more */
    snprintf(buf, n, "{\"pc\":%d}", pc);
    return;
  }
  do digits[k++] = (char)('0' + u % 10); while ((u /= 10) != 0);
  memcpy(buf, "{\"pc\":", 6);
  char *p = buf + 6;
  if (pc < 0) *p++ = '-';
  while (k > 0) *p++ = digits[--k];
  *p++ = '}';
  *p = '\0';
}

/* The canonical text (what rt__snapshot_text writes, up to 9 digits) is
** read directly; any other text goes through sscanf as before. */
static int snapshot_pc_fast(const unsigned char *snap, int *pc) {
  if (strncmp((const char *)snap, "{\"pc\":", 6)) return 0;
  const unsigned char *p = snap + 6;
  int neg = *p == '-', v = 0, k = 0;
  p += neg;
  while (k < 9 && p[k] >= '0' && p[k] <= '9') v = v * 10 + (p[k++] - '0');
  if (k == 0 || p[k] != '}' || p[k + 1] != '\0') return 0; /* a 10th digit: not '}' */
  *pc = neg ? -v : v;
  return 1;
}

int rt__snapshot_pc(const unsigned char *snap) {
  int pc, len = 0;
  if (snap && snapshot_pc_fast(snap, &pc)) return pc;
  if (!snap || sscanf((const char *)snap, "{\"pc\":%d}%n", &pc, &len) != 1 || len == 0 ||
      snap[len] != '\0')
    return -1;
  return pc;
}

/* The snapshot is read when a recovery hook starts and again when it ends;
** with no write between, the second read is the kept first one (an
** interned string: the same id the read would intern again). */
uint32_t rt__orphan_snapshot(rt_world *w, uint32_t a, int64_t id) {
  uint32_t s = 0;
  int n = 0;
  if (rt__scan_cached(w, a, RT_SCAN_ORPHAN_SNAP, id, &s, sizeof s, 1, &n))
    return s ? s : rt__str(w, "null");
  sqlite3_stmt *st = stmt(w, a, ST_RUN_SNAP); /* kept prepared (issue #18: 9 % of a
                                                kill/recover cycle was preparing it) */
  if (!st) return rt__str(w, "null");
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT)
    s = rt__str(w, (const char *)sqlite3_column_text(st, 0));
  sqlite3_reset(st);
  rt__scan_store(w, a, RT_SCAN_ORPHAN_SNAP, id, &s, sizeof s, 1, 1);
  return s ? s : rt__str(w, "null");
}

int rt__load_orphans(rt_world *w, uint32_t a, rt_orphan *out, int cap) {
  int n = 0;
  if (rt__scan_cached(w, a, RT_SCAN_ORPHANS, 0, out, sizeof *out, cap, &n)) return n;
  if (rt__table_empty(w, a, "cf_agents_runs")) return 0;
  sqlite3_stmt *st = stmt(w, a, ST_RUN_SELECT);
  if (!st) return 0;
  while (n < cap && sqlite3_step(st) == SQLITE_ROW) {
    out[n].id = sqlite3_column_int64(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    size_t len = name ? strlen(name) : 6;
    if (len >= sizeof out[n].name) len = sizeof out[n].name - 1;
    memcpy(out[n].name, name ? name : "(null)", len); /* snprintf "%s" without its cost */
    out[n].name[len] = '\0';
    out[n].snapshot = rt__snapshot_pc(sqlite3_column_text(st, 2));
    out[n].created_ms = sqlite3_column_int64(st, 3);
    n++;
  }
  sqlite3_reset(st);
  rt__scan_store(w, a, RT_SCAN_ORPHANS, 0, out, sizeof *out, cap, n);
  return n;
}

int rt__count_runs(rt_world *w, uint32_t a) { return (int)one_int(w, a, ST_RUN_COUNT, 0); }

/* ---- cf_agents_schedules ------------------------------------------------- */

/* A schedule row changed: RT_EV_SCHEDULE_SET (at -1: deleted). */
static void schedule_set(rt_world *w, uint32_t a, int64_t id, int64_t at_us, int64_t iv_us,
                         const char *callback) {
  rt__emit(w, RT_EV_SCHEDULE_SET, a, id, at_us, iv_us, callback);
}

int rt__w_schedule_insert(rt_world *w, uint32_t a, int64_t id,
                          const char *callback, int64_t time_s,
                          int64_t interval_s) {
  rt_sched_row r;
  memset(&r, 0, sizeof r);
  r.id = id;
  r.time_s = time_s;
  r.interval_s = interval_s;
  r.started_s = -1;
  snprintf(r.type, sizeof r.type, "%s", interval_s > 0 ? "interval" : "delayed");
  snprintf(r.callback, sizeof r.callback, "%s", callback);
  return rt__w_schedule_put(w, a, &r);
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v) {
  if (v && *v)
    sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, i);
}

int rt__w_schedule_put(rt_world *w, uint32_t a, const rt_sched_row *r) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_SCH_INSERT))) return -1;
  sqlite3_bind_int64(st, 1, r->id);
  sqlite3_bind_text(st, 2, r->callback, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, r->type, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 4, r->time_s);
  if (r->interval_s > 0)
    sqlite3_bind_int64(st, 5, r->interval_s);
  else
    sqlite3_bind_null(st, 5);
  sqlite3_bind_int64(st, 6, w->s->now_us / 1000000);
  bind_text_or_null(st, 7, r->payload);
  bind_text_or_null(st, 8, r->cron);
  if (!strcmp(r->type, "delayed"))
    sqlite3_bind_int64(st, 9, r->delay_s);
  else
    sqlite3_bind_null(st, 9);
  sqlite3_bind_int(st, 10, r->running);
  if (r->started_s >= 0)
    sqlite3_bind_int64(st, 11, r->started_s);
  else
    sqlite3_bind_null(st, 11);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE)
    schedule_set(w, a, r->id, r->time_s * 1000000, r->interval_s * 1000000, r->callback);
  return rt__txn_wrote_row(w, a, RT_W_SCHEDULE, r->id, rc, r->callback);
}

int rt__w_schedule_delete(rt_world *w, uint32_t a, int64_t id, const char *callback) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_SCH_DELETE))) return -1;
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) schedule_set(w, a, id, -1, 0, callback);
  return rt__txn_wrote_row(w, a, RT_W_SCHEDULE, id, rc, callback);
}

int rt__w_schedule_time(rt_world *w, uint32_t a, int64_t id, int64_t time_s, int64_t iv_s,
                        const char *callback) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_SCH_TIME))) return -1;
  sqlite3_bind_int64(st, 1, time_s);
  sqlite3_bind_int64(st, 2, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE && sqlite3_changes(sqlite3_db_handle(st)) > 0) /* the row may be gone */
    schedule_set(w, a, id, time_s * 1000000, iv_s * 1000000, callback);
  return rt__txn_wrote_row(w, a, RT_W_SCHEDULE, id, rc, callback);
}

int64_t rt__next_schedule_time(rt_world *w, uint32_t a, int64_t now_s, int64_t hung_s) {
  if (rt__table_empty(w, a, "cf_agents_schedules")) return -1; /* min() of no row */
  sqlite3_stmt *st = stmt(w, a, ST_SCH_MIN);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, now_s - hung_s);
  sqlite3_bind_int64(st, 2, hung_s);
  return rt__step_int(st, -1);
}

static void row_read(sqlite3_stmt *st, rt_sched_row *r) {
  memset(r, 0, sizeof *r);
  r->id = sqlite3_column_int64(st, 0);
  snprintf(r->callback, sizeof r->callback, "%s", (const char *)sqlite3_column_text(st, 1));
  snprintf(r->type, sizeof r->type, "%s",
           sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "");
  r->time_s = sqlite3_column_int64(st, 3);
  r->interval_s = sqlite3_column_int64(st, 4);
  if (sqlite3_column_type(st, 5) == SQLITE_TEXT)
    snprintf(r->payload, sizeof r->payload, "%s", (const char *)sqlite3_column_text(st, 5));
  if (sqlite3_column_type(st, 6) == SQLITE_TEXT)
    snprintf(r->cron, sizeof r->cron, "%s", (const char *)sqlite3_column_text(st, 6));
  r->running = sqlite3_column_int(st, 7);
  r->started_s = sqlite3_column_type(st, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 8);
}

int rt__due_schedule_rows(rt_world *w, uint32_t a, int64_t now_s, rt_sched_row *out, int cap) {
  sqlite3_stmt *st = stmt(w, a, ST_SCH_DUE);
  int n = 0;
  if (!st) return 0;
  sqlite3_bind_int64(st, 1, now_s);
  while (n < cap && sqlite3_step(st) == SQLITE_ROW) row_read(st, &out[n++]);
  sqlite3_reset(st);
  return n;
}

int rt__schedule_get(rt_world *w, uint32_t a, int64_t id, rt_sched_row *out) {
  sqlite3_stmt *st = stmt(w, a, ST_SCH_GET);
  int found = 0;
  if (!st) return 0;
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) == SQLITE_ROW) {
    row_read(st, out);
    found = 1;
  }
  sqlite3_reset(st);
  return found;
}

int rt__w_schedule_running(rt_world *w, uint32_t a, int64_t id, int running, int64_t started_s,
                           const char *callback) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_SCH_RUNNING))) return -1;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int(st, 2, running);
  sqlite3_bind_int64(st, 3, started_s);
  return rt__txn_wrote_row(w, a, RT_W_SCHEDULE, id, sqlite3_step(st), callback);
}

int rt__schedule_match(rt_world *w, uint32_t a, const rt_sched_row *key, int by_callback,
                       int64_t *id) {
  sqlite3_stmt *st = stmt(w, a, by_callback ? ST_SCH_MATCH_CB : ST_SCH_MATCH);
  int found = 0;
  if (!st) return 0;
  if (by_callback) {
    sqlite3_bind_text(st, 1, key->callback, -1, SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_text(st, 1, key->type, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, key->callback, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, key->interval_s);
    bind_text_or_null(st, 4, key->cron);
    bind_text_or_null(st, 5, key->payload);
  }
  if (sqlite3_step(st) == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
    found = 1;
  }
  sqlite3_reset(st);
  return found;
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
