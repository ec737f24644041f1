/*
** rt_legacy.c: the legacy fiber model (DESIGN.md "legacy fibers").
**
** Follows seed 001 ("Forever"), Layer 2 "Fibers":
**   "API"            spawnFiber (fire-and-forget, maxRetries default 3),
**                    stashFiber, cancelFiber, getFiber, onFiberComplete,
**                    onFibersRecovered / onFiberRecovered;
**   "SQLite schema"  cf_agents_fibers with the seed's columns and statuses
**                    (running, completed, failed, interrupted, cancelled);
**   "Fiber lifecycle" normal execution (INSERT running → keepAlive → method
**                    → UPDATE completed → stop heartbeat → onFiberComplete),
**                    eviction and recovery (running rows → interrupted,
**                    retry_count+1 → onFibersRecovered or failed 'max retries
**                    exceeded'), error during execution (retry_count+1,
**                    immediate retry or failed);
**   "Concurrency"    default onFibersRecovered: sequential, oldest-first;
**   "Interaction with the alarm system" the `_cf_fiberHeartbeat` callback
**                    and alarm() both run _checkInterruptedFibers;
** and Layer 1 for keepAlive (cfg.heartbeat == RT_HB_SCHEDULE is the seed's
** 10 s interval schedule). reference/agents-sdk.md D.1: the SDK replaced
** this design; this file models the seed, not @1604.
**
** Modelling choices (docs/runtime.md, "Legacy fibers (seed 001)"):
** - A fiber body is an rt_program run by rt_agent.c's step loop; a legacy
**   fiber keeps its id across retries and recoveries (one row, one id).
** - The snapshot is {"pc":N}; recovery and retries resume at N.
** - _checkInterruptedFibers is synchronous, so the heartbeat callback and
**   the alarm() fallback of one alarm collapse into one scan per alarm.
** - Every status change (and every retry_count change) is one
**   RT_EV_LEGACY_FIBER record; every write is RT_W_LEGACY_FIBER in the turn
**   transaction.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_models.h"

#define HEARTBEAT_CB "_cf_fiberHeartbeat" /* as in rt_agent.c */
#define SRC_STARTUP 1

enum {
  L_INSERT, L_STASH, L_SET, L_GET, L_RUNNING, L_OLDEST, L_COUNT_RUNNING,
  L_NSTMT
};

static const char *const lsql[L_NSTMT] = {
    [L_INSERT] = "INSERT INTO cf_agents_fibers(id,callback,payload,snapshot,status,"
                 "retry_count,max_retries,started_at,updated_at,created_at)"
                 " VALUES(?1,?2,NULL,NULL,'running',0,?3,?4,?4,?4)",
    [L_STASH] = "UPDATE cf_agents_fibers SET snapshot=?1,updated_at=?2"
                " WHERE id=?3 AND status='running'",
    [L_SET] = "UPDATE cf_agents_fibers SET status=?1,retry_count=retry_count+?2,"
              "error=coalesce(?3,error),result=coalesce(?4,result),"
              "started_at=coalesce(?5,started_at),completed_at=coalesce(?6,completed_at),"
              "updated_at=?7 WHERE id=?8 AND status=?9",
    [L_GET] = "SELECT id,status,retry_count,max_retries,snapshot,callback"
              " FROM cf_agents_fibers WHERE id=?1",
    [L_RUNNING] = "SELECT id,status,retry_count,max_retries,snapshot,callback"
                  " FROM cf_agents_fibers WHERE status='running' ORDER BY created_at,id",
    [L_OLDEST] = "SELECT id FROM cf_agents_fibers WHERE callback=?1 AND status='running'"
                 " ORDER BY created_at,id LIMIT 1",
    [L_COUNT_RUNNING] = "SELECT count(*) FROM cf_agents_fibers WHERE status='running'",
};

static const rt_store_op lops[] = {{RT_W_LEGACY_FIBER, "cf_agents_fibers"}};

/* seed 001 "SQLite schema"; integer ids */
static rt_store_module rt__legacy_store = {
    .name = "legacy",
    .schema =
        "CREATE TABLE IF NOT EXISTS cf_agents_fibers(id INTEGER PRIMARY KEY, callback TEXT NOT NULL,"
        " payload TEXT, snapshot TEXT, status TEXT NOT NULL DEFAULT 'running',"
        " retry_count INTEGER NOT NULL DEFAULT 0, max_retries INTEGER NOT NULL DEFAULT 3,"
        " result TEXT, error TEXT, started_at INTEGER, updated_at INTEGER, completed_at INTEGER,"
        " created_at INTEGER NOT NULL);",
    .sql = lsql,
    .n_sql = L_NSTMT,
    .clear_bindings = 1,
    .ops = lops,
    .n_ops = 1,
};

typedef struct lf_row {
  int64_t id;
  int status, retry, max_retries;
  int snapshot;             /* pc of the snapshot, -1 = null */
  char method[64];
} lf_row;

/* ---- storage ----------------------------------------------------------- */

static sqlite3_stmt *lstmt(rt_world *w, uint32_t a, int id) {
  return rt__stmt(w, a, &rt__legacy_store, id);
}

static int status_parse(const unsigned char *s) {
  for (int k = RT_LF_RUNNING; k <= RT_LF_CANCELLED; k++)
    if (s && strcmp((const char *)s, rt_legacy_status_name(k)) == 0) return k;
  return -1;
}

static void row_read(sqlite3_stmt *st, lf_row *r) {
  const unsigned char *snap = sqlite3_column_text(st, 4);
  r->id = sqlite3_column_int64(st, 0);
  r->status = status_parse(sqlite3_column_text(st, 1));
  r->retry = sqlite3_column_int(st, 2);
  r->max_retries = sqlite3_column_int(st, 3);
  r->snapshot = rt__snapshot_pc(snap);
  snprintf(r->method, sizeof r->method, "%s", (const char *)sqlite3_column_text(st, 5));
}

/* getFiber: 0 and *r, or -1 if there is no such row. */
static int row_get(rt_world *w, uint32_t a, int64_t id, lf_row *r) {
  sqlite3_stmt *st = lstmt(w, a, L_GET);
  int found = 0;
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) == SQLITE_ROW) {
    row_read(st, r);
    found = 1;
  }
  sqlite3_reset(st);
  return found ? 0 : -1;
}

static int load_running(rt_world *w, uint32_t a, lf_row *out, int cap) {
  int n = 0;
  if (rt__scan_cached(w, a, RT_SCAN_LEGACY_RUNNING, 0, out, sizeof *out, cap, &n)) return n;
  if (rt__table_empty(w, a, "cf_agents_fibers")) return 0;
  sqlite3_stmt *st = lstmt(w, a, L_RUNNING);
  if (!st) return 0;
  while (n < cap && sqlite3_step(st) == SQLITE_ROW) row_read(st, &out[n++]);
  sqlite3_reset(st);
  rt__scan_store(w, a, RT_SCAN_LEGACY_RUNNING, 0, out, sizeof *out, cap, n);
  return n;
}

static int64_t one_int(rt_world *w, uint32_t a, int id, const char *text) {
  sqlite3_stmt *st = lstmt(w, a, id);
  int64_t v = -1;
  if (!st) return -1;
  if (text) sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return v;
}

static int w_insert(rt_world *w, uint32_t a, int64_t id, const char *method, int max_retries) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = lstmt(w, a, L_INSERT))) return -1;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_text(st, 2, method, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 3, max_retries);
  sqlite3_bind_int64(st, 4, w->s->now_us / 1000);
  return rt__txn_wrote(w, a, RT_W_LEGACY_FIBER, id, sqlite3_step(st));
}

/* stashFiber: the snapshot of a running fiber, fully replaced. */
static int rt__legacy_stash(rt_world *w, uint32_t a, int64_t id, int pc) {
  sqlite3_stmt *st;
  char snap[48];
  if (rt__txn_join(w, a) || !(st = lstmt(w, a, L_STASH))) return -1;
  rt__snapshot_text(snap, sizeof snap, pc);
  sqlite3_bind_text(st, 1, snap, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, w->s->now_us / 1000);
  sqlite3_bind_int64(st, 3, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE && sqlite3_changes(w->actors[a].store.db) == 0) return 0;
  return rt__txn_wrote(w, a, RT_W_LEGACY_FIBER, id, rc);
}

/* Moves row `id` from status `from` to `to` with retry_count += inc; `text`
** is the error (failed) or the result (completed). One write. Returns 0
** and the updated row in *r, or -1 if the row was not in `from`. */
static int set_status(rt_world *w, uint32_t a, int64_t id, int from, int to, int inc,
                      const char *text, lf_row *r) {
  sqlite3_stmt *st;
  int64_t now = w->s->now_us / 1000;
  if (rt__txn_join(w, a) || !(st = lstmt(w, a, L_SET))) return -1;
  sqlite3_bind_text(st, 1, rt_legacy_status_name(to), -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 2, inc);
  if (text) sqlite3_bind_text(st, to == RT_LF_FAILED ? 3 : 4, text, -1, SQLITE_TRANSIENT);
  if (to == RT_LF_RUNNING && from != RT_LF_RUNNING) sqlite3_bind_int64(st, 5, now);
  if (to >= RT_LF_COMPLETED && to != RT_LF_INTERRUPTED) sqlite3_bind_int64(st, 6, now);
  sqlite3_bind_int64(st, 7, now);
  sqlite3_bind_int64(st, 8, id);
  sqlite3_bind_text(st, 9, rt_legacy_status_name(from), -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE && sqlite3_changes(w->actors[a].store.db) == 0) return -1;
  if (rt__txn_wrote(w, a, RT_W_LEGACY_FIBER, id, rc)) return -1;
  return row_get(w, a, id, r);
}

static void lf_emit(rt_world *w, uint32_t a, const lf_row *r) {
  rt__emit(w, RT_EV_LEGACY_FIBER, a, r->id, r->status, r->retry, r->method);
}

static int alive(const rt_world *w, uint32_t a, const rt_mem *m);

/* set_status, then its RT_EV_LEGACY_FIBER record. Returns 0, or -1 if
** nothing changed or the write killed the actor (its turn rolled back). */
static int transition(rt_world *w, uint32_t a, int64_t id, int from, int to, int inc,
                      const char *text, lf_row *r) {
  rt_mem *m = RT_MEM(w, a);
  if (set_status(w, a, id, from, to, inc, text, r) || !alive(w, a, m)) return -1;
  lf_emit(w, a, r);
  return 0;
}

/* ---- memory of this incarnation ---------------------------------------- */

/* A write can kill the actor (a failed immediate commit): after one, code
** that touches memory checks that its incarnation is still the same. */
static int alive(const rt_world *w, uint32_t a, const rt_mem *m) {
  return m && RT_MEM(w, a) == m;
}

/* A free fiber slot (grown if needed), as rt_agent.c's runFiber uses. */
static rt_fiber *lf_slot(rt_mem *m) {
  for (int i = 0; i < m->n_fibers; i++)
    if (!m->fibers[i].live) return &m->fibers[i];
  if (m->n_fibers == m->cap_fibers) {
    int nc = m->cap_fibers ? m->cap_fibers * 2 : 4;
    rt_fiber *nf = realloc(m->fibers, (size_t)nc * sizeof *nf);
    if (!nf) return NULL;
    m->fibers = nf;
    m->cap_fibers = nc;
  }
  return &m->fibers[m->n_fibers++];
}

static rt_fiber *active_find(rt_mem *m, int64_t id) {
  for (int i = 0; i < m->n_fibers; i++)
    if (m->fibers[i].live && m->fibers[i].legacy && m->fibers[i].id == id) return &m->fibers[i];
  return NULL;
}

/* Active in this incarnation: running. Such a fiber is never interrupted.
** (A fiber recovered at startup waits in m->legacy_pending only between
** startup_gated and startup_late, while the gate holds every request and
** alarm: no scan and no cancelFiber can see it there.) */
static int claimed(rt_mem *m, int64_t id) { return active_find(m, id) != NULL; }

/* Runs the method of fiber `id` from `pc` under a keepAlive ref. */
static void lf_start(rt_world *w, uint32_t a, int64_t id, int prog, int pc) {
  rt_mem *m = RT_MEM(w, a);
  rt_fiber *f = lf_slot(m);
  if (!f) return; /* the row stays running: the next scan recovers it */
  *f = (rt_fiber){.id = id, .prog = prog, .pc = pc, .live = 1, .legacy = 1};
  rt__keepalive_acquire(w, a);
  if (alive(w, a, m)) rt__fiber_run(w, a, f);
}

/* Seed 001 gives each fiber a keepAlive whose disposer lives in memory: a
** fiber that ends in a later incarnation than the one that started it
** (failed at a scan, cancelled while orphaned) would leave that dead
** incarnation's `_cf_fiberHeartbeat` row firing every 10 s forever. When
** this incarnation holds no ref and no fiber of either model is running or
** about to run, drop that row (stop the heartbeat). */
static void heartbeat_gc(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  int64_t sid;
  if (w->cfg.heartbeat != RT_HB_SCHEDULE || m->refs > 0 || m->n_pending_resume > 0 ||
      m->n_legacy_pending > 0 || rt__count_runs(w, a) > 0 ||
      one_int(w, a, L_COUNT_RUNNING, NULL) != 0 || !rt__schedule_find(w, a, HEARTBEAT_CB, &sid))
    return;
  rt__w_schedule_delete(w, a, sid, HEARTBEAT_CB);
  rt__schedule_next_alarm(w, a);
}

/* ---- execution: completion, errors, retries (lifecycle) ---------------- */

static void retry_cb(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_mem *m = RT_MEM(w, a);
  rt_fiber *f = m ? active_find(m, (int64_t)(arg & ((1ULL << 40) - 1))) : NULL;
  (void)s;
  if (f) rt__fiber_run(w, a, f); /* a cancelled fiber is gone */
}

static const char *thrown_message(const rt_program *p, int pc) {
  if (pc < p->n_steps && p->steps[pc].kind == RT_STEP_FAIL)
    return p->steps[pc].name[0] ? p->steps[pc].name : "fiber method threw";
  return "rpc call failed";
}

/* The method threw: retry_count+1; an immediate retry from the snapshot
** while retry_count <= max_retries, else failed (in the same write) and the
** heartbeat stops. */
static void lf_threw(rt_world *w, uint32_t a, rt_fiber *f) {
  rt_mem *m = RT_MEM(w, a);
  int64_t id = f->id;
  lf_row r;
  const char *err = thrown_message(&RT_AW(w)->progs[f->prog], f->pc);
  if (row_get(w, a, id, &r) == 0 && r.retry + 1 <= r.max_retries) {
    if (transition(w, a, id, RT_LF_RUNNING, RT_LF_RUNNING, 1, NULL, &r) == 0 && alive(w, a, m)) {
      f->pc = r.snapshot > 0 ? r.snapshot : 0;
      sim_after(w->s, 0, m->inc.dom, retry_cb, w, ((uint64_t)a << 40) | (uint64_t)id);
      return;
    }
    if (!alive(w, a, m)) return;
  }
  f->live = 0;
  transition(w, a, id, RT_LF_RUNNING, RT_LF_FAILED, 1, err, &r);
  if (alive(w, a, m)) rt__keepalive_release(w, a);
}

/* Called by rt_agent.c when a legacy fiber's body returns (ok) or throws. */
static void rt__legacy_end(rt_world *w, uint32_t a, rt_fiber *f, int ok) {
  rt_mem *m = RT_MEM(w, a);
  lf_row r;
  char result[48];
  if (!ok) {
    lf_threw(w, a, f);
    return;
  }
  f->live = 0;
  rt__snapshot_text(result, sizeof result, f->pc);
  int changed = set_status(w, a, f->id, RT_LF_RUNNING, RT_LF_COMPLETED, 0, result, &r);
  if (!alive(w, a, m)) return;
  rt__keepalive_release(w, a);         /* stop the heartbeat */
  if (changed == 0) lf_emit(w, a, &r); /* onFiberComplete */
}

/* ---- _checkInterruptedFibers and onFibersRecovered ---------------------- */

/* Default onFiberRecovered: re-invoke the method from its snapshot; at
** startup it runs after the gate opens, like resumed run-fibers. */
static void on_fiber_recovered(rt_world *w, uint32_t a, const lf_row *o, int source) {
  rt_mem *m = RT_MEM(w, a);
  int prog = rt__prog_find(w, o->method);
  int pc = o->snapshot > 0 ? o->snapshot : 0;
  lf_row r;
  if (prog < 0) {
    transition(w, a, o->id, RT_LF_INTERRUPTED, RT_LF_FAILED, 0, "method not found", &r);
    return;
  }
  if (transition(w, a, o->id, RT_LF_INTERRUPTED, RT_LF_RUNNING, 0, NULL, &r) ||
      !alive(w, a, m))
    return;
  if (source != SRC_STARTUP) {
    lf_start(w, a, o->id, prog, pc);
  } else if (m->n_legacy_pending < RT_MAX_ORPHANS &&
             RT_MEM_ARRAY(m->legacy_pending, RT_MAX_ORPHANS)) {
    rt_legacy_pending *p = &m->legacy_pending[m->n_legacy_pending++];
    p->id = o->id;
    p->prog = prog;
    p->pc = pc;
  }
}

/* Marks the unclaimed running rows interrupted (retry_count+1), oldest
** first; keeps in rows[] those within max_retries and fails the others.
** Returns how many remain, or -1 if the actor died; *failed counts fails. */
static int interrupt_rows(rt_world *w, uint32_t a, lf_row *rows, int n, int *failed) {
  rt_mem *m = RT_MEM(w, a);
  lf_row r;
  int k = 0, keep = 0;
  for (int i = 0; i < n; i++)
    if (!claimed(m, rows[i].id)) rows[k++] = rows[i];
  for (int i = 0; i < k; i++) {
    if (transition(w, a, rows[i].id, RT_LF_RUNNING, RT_LF_INTERRUPTED, 1, NULL, &r))
      rows[i].id = 0; /* no longer running: skip it */
    else
      rows[i] = r;
    if (!alive(w, a, m)) return -1;
  }
  for (int i = 0; i < k; i++) {
    if (rows[i].id == 0) continue;
    if (rows[i].retry <= rows[i].max_retries) {
      rows[keep++] = rows[i];
      continue;
    }
    *failed += transition(w, a, rows[i].id, RT_LF_INTERRUPTED, RT_LF_FAILED, 0,
                          "max retries exceeded", &r) == 0;
    if (!alive(w, a, m)) return -1;
  }
  return keep;
}

/* _checkInterruptedFibers (seed: "Eviction and recovery"): source 1 at
** startup (inside the gate, after _checkRunFibers), 2 on every alarm (the
** `_cf_fiberHeartbeat` callback and the alarm() fallback). Rows active in
** this incarnation are skipped. Returns 0, or -1 if the actor died. */
static int rt__legacy_check(rt_world *w, uint32_t a, int source) {
  rt_mem *m = RT_MEM(w, a);
  lf_row rows[RT_MAX_ORPHANS];
  int failed = 0;
  int n = interrupt_rows(w, a, rows, load_running(w, a, rows, RT_MAX_ORPHANS), &failed);
  if (n < 0) return -1;
  /* default onFibersRecovered: sequentially, oldest-first by created_at */
  for (int i = 0; i < n; i++) {
    on_fiber_recovered(w, a, &rows[i], source);
    if (!alive(w, a, m)) return -1;
  }
  if (failed) heartbeat_gc(w, a);
  return alive(w, a, m) ? 0 : -1;
}

/* Startup is over (ok or failed): the fibers recovered inside the gate
** run now, oldest first. */
static void rt__legacy_resume_pending(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  rt_legacy_pending p[RT_MAX_ORPHANS];
  if (!m) return;
  int n = m->n_legacy_pending;
  if (n) memcpy(p, m->legacy_pending, (size_t)n * sizeof p[0]);
  m->n_legacy_pending = 0;
  for (int i = 0; i < n && alive(w, a, m); i++) lf_start(w, a, p[i].id, p[i].prog, p[i].pc);
}

/* ---- requests: spawnFiber, cancelFiber ---------------------------------- */

/* spawnFiber: INSERT running, keepAlive, run the method; returns the id. */
static void lf_spawn(rt_world *w, uint32_t a, const rt_msg *m) {
  rt_mem *mem = RT_MEM(w, a);
  int64_t id = rt__new_id(w);
  int prog = (int)m->arg;
  lf_row r = {id, RT_LF_RUNNING, 0, (int)m->arg2, -1, ""};
  snprintf(r.method, sizeof r.method, "%s", RT_AW(w)->progs[prog].name);
  if (w_insert(w, a, id, r.method, r.max_retries) || !alive(w, a, mem)) {
    rt__request_done(w, a, m, 0, "spawnFiber: storage write failed");
    return;
  }
  lf_emit(w, a, &r);
  lf_start(w, a, id, prog, 0);
  rt__request_done(w, a, m, 1, NULL);
}

/* cancelFiber: running → cancelled; its pending steps stop and its
** heartbeat ref is released. */
static void lf_cancel(rt_world *w, uint32_t a, int64_t id) {
  rt_mem *m = RT_MEM(w, a);
  rt_fiber *f = active_find(m, id);
  lf_row r;
  if (f) f->live = 0;
  transition(w, a, id, RT_LF_RUNNING, RT_LF_CANCELLED, 0, NULL, &r);
  if (!alive(w, a, m)) return;
  if (f)
    rt__keepalive_release(w, a);
  else
    heartbeat_gc(w, a);
}

static void rt__legacy_request(rt_world *w, uint32_t a, const rt_msg *m) {
  if (m->kind == MSG_LEGACY_SPAWN) {
    lf_spawn(w, a, m);
    return;
  }
  const char *method = sim_trace_str(&w->s->trace, (uint32_t)m->arg);
  int64_t id = one_int(w, a, L_OLDEST, method);
  if (id > 0) lf_cancel(w, a, id);
  rt__request_done(w, a, m, 1, NULL);
}

/* ---- public API (rt.h) -------------------------------------------------- */

int rt_spawn_fiber_at(rt_world *w, uint32_t actor, const rt_program *prog, int max_retries,
                      int64_t at_us) {
  if (!w || !prog || actor >= w->n_actors) return -1;
  int idx = rt__prog_add(w, prog);
  if (idx < 0) return -1;
  rt_msg m = {0};
  m.kind = MSG_LEGACY_SPAWN;
  m.entry = RT_ENTRY_FETCH;
  m.arg = idx;
  m.arg2 = max_retries < 0 ? RT_LEGACY_MAX_RETRIES : max_retries;
  return rt__deliver_at(w, actor, &m, at_us);
}

int rt_cancel_fiber_at(rt_world *w, uint32_t actor, const char *method, int64_t at_us) {
  if (!w || !method || actor >= w->n_actors) return -1;
  rt_msg m = {0};
  m.kind = MSG_LEGACY_CANCEL;
  m.entry = RT_ENTRY_FETCH;
  m.arg = rt__str(w, method);
  return rt__deliver_at(w, actor, &m, at_us);
}

int rt_legacy_status(rt_world *w, uint32_t actor, int64_t fiber_id, int *retry_count) {
  lf_row r;
  if (!w || actor >= w->n_actors || row_get(w, actor, fiber_id, &r)) return -1;
  if (retry_count) *retry_count = r.retry;
  return r.status;
}

/* ---- the extension ----------------------------------------------------------- */

/* _checkInterruptedFibers at startup, inside the gate. */
static int legacy_startup_gated(rt_world *w, uint32_t a) {
  return rt__legacy_check(w, a, SRC_STARTUP) ? -1 : 0;
}

/* Startup is over (ok or failed): the fibers recovered in the gate run. */
static void legacy_startup_late(rt_world *w, uint32_t a, int ok) {
  (void)ok;
  rt__legacy_resume_pending(w, a);
}

/* alarm(): the heartbeat callback's _checkInterruptedFibers. */
static int legacy_alarm(rt_world *w, uint32_t a) { return rt__legacy_check(w, a, 2); }

static const int legacy_kinds[] = {MSG_LEGACY_SPAWN, MSG_LEGACY_CANCEL};

rt_agent_ext rt__legacy_ext = {
    .name = "legacy",
    .store = &rt__legacy_store,
    .kinds = legacy_kinds,
    .n_kinds = 2,
    .message = rt__legacy_request,
    .startup_gated = legacy_startup_gated,
    .startup_late = legacy_startup_late,
    .alarm = legacy_alarm,
    .fiber_stash = rt__legacy_stash,
    .fiber_end = rt__legacy_end,
};
