/*
** rt_agent_store.c: the SDK core's own tables (reference/agents-sdk.md A.1,
** only the columns the models read): cf_agents_runs (fibers: runFiber,
** stash, _checkRunFibers) and cf_agents_schedules (schedule,
** scheduleEvery, alarm()). Registered with the host's storage as one
** module (rt__store_register); the host knows neither table.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_agent.h"

enum {
  ST_RUN_INSERT, ST_RUN_STASH, ST_RUN_DELETE, ST_RUN_SELECT, ST_RUN_SNAP, ST_RUN_COUNT,
  ST_SCH_INSERT, ST_SCH_DELETE, ST_SCH_DUE, ST_SCH_TIME, ST_SCH_MIN, ST_SCH_FIND, ST_COUNT
};

static const char *const sql[ST_COUNT] = {
    [ST_RUN_INSERT] = "INSERT INTO cf_agents_runs(id,name,snapshot,created_at) VALUES(?,?,NULL,?)",
    [ST_RUN_STASH] = "UPDATE cf_agents_runs SET snapshot=? WHERE id=?",
    [ST_RUN_DELETE] = "DELETE FROM cf_agents_runs WHERE id=?",
    [ST_RUN_SELECT] = "SELECT id,name,snapshot,created_at FROM cf_agents_runs ORDER BY created_at,id",
    [ST_RUN_SNAP] = "SELECT snapshot FROM cf_agents_runs WHERE id=?",
    [ST_RUN_COUNT] = "SELECT count(*) FROM cf_agents_runs",
    [ST_SCH_INSERT] = "INSERT INTO cf_agents_schedules(id,callback,type,time,intervalSeconds,"
                      "created_at) VALUES(?1,?2,CASE WHEN ?4>0 THEN 'interval' ELSE 'delayed' END,"
                      "?3,?4,?5)",
    [ST_SCH_DELETE] = "DELETE FROM cf_agents_schedules WHERE id=?",
    [ST_SCH_DUE] = "SELECT id,intervalSeconds,callback FROM cf_agents_schedules WHERE time<=? ORDER BY time,id",
    [ST_SCH_TIME] = "UPDATE cf_agents_schedules SET time=? WHERE id=?",
    [ST_SCH_MIN] = "SELECT min(time) FROM cf_agents_schedules",
    [ST_SCH_FIND] = "SELECT id FROM cf_agents_schedules WHERE callback=? ORDER BY id LIMIT 1",
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
        " type TEXT, time INTEGER, intervalSeconds INTEGER, running INTEGER DEFAULT 0,"
        " created_at INTEGER);",
    .sql = sql,
    .n_sql = ST_COUNT,
    .ops = ops,
    .n_ops = (int)(sizeof ops / sizeof ops[0]),
};

static sqlite3_stmt *stmt(rt_world *w, uint32_t a, int id) {
  return rt__stmt(w, a, &rt__agent_store, id);
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
  sqlite3_bind_text(st, 1, snap, -1, SQLITE_TRANSIENT);
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

void rt__snapshot_text(char *buf, size_t n, int pc) { snprintf(buf, n, "{\"pc\":%d}", pc); }

int rt__snapshot_pc(const unsigned char *snap) {
  int pc, len = 0;
  if (!snap || sscanf((const char *)snap, "{\"pc\":%d}%n", &pc, &len) != 1 || len == 0 ||
      snap[len] != '\0')
    return -1;
  return pc;
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
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_SCH_INSERT))) return -1;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_text(st, 2, callback, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, time_s);
  sqlite3_bind_int64(st, 4, interval_s);
  sqlite3_bind_int64(st, 5, w->s->now_us / 1000000);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) schedule_set(w, a, id, time_s * 1000000, interval_s * 1000000, callback);
  return rt__txn_wrote_row(w, a, RT_W_SCHEDULE, id, rc, callback);
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
  if (rc == SQLITE_DONE) schedule_set(w, a, id, time_s * 1000000, iv_s * 1000000, callback);
  return rt__txn_wrote_row(w, a, RT_W_SCHEDULE, id, rc, callback);
}

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
