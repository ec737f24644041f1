/*
** rt_thread.c: the versioned thread store (DESIGN.md "thread").
**
** Follows seed 004 ("Persistence and Versioning"):
**   "Model"                Thread, ThreadChangeSet, VersionPrecondition::Exact;
**   "Write Path"           load thread + version, build the run delta, append
**                          with the exact expected version, the store returns
**                          the committed next version;
**   "Checkpoint Mechanism" ThreadChangeSet { run_id, parent_run_id, run_meta,
**                          reason, messages, patches, state_actions,
**                          snapshot }, append-only, the committed version
**                          written back to the run;
**   "Checkpoint Timing"    A) inbound (UserMessage); B) 1. after RunStart
**                          side effects (UserMessage), 2. RunStart outbox
**                          replay (ToolResultsCommitted), 3. assistant turn
**                          finalized (AssistantTurnCommitted), 4. tool
**                          results applied, suspension included
**                          (ToolResultsCommitted), 5. termination
**                          (RunFinished, forced even with no delta);
**   "Failure Semantics"    a non-final checkpoint failure fails the run with
**                          a state error; a failed RunFinished emits an error
**                          and suppresses the terminal run-finish event;
**   "State Scope Lifecycle" Thread (never cleaned), Run (deleted by
**                          prepare_run before each new run, before the
**                          lifecycle Running patch), ToolCall
**                          (__tool_call_scope.<call_id>, cleaned when the
**                          call completes).
** Concurrent writers are runs (requests to the thread's actor) whose starts
** and steps are drawn from the "runtime.thread" stream, so the seeded
** scheduler interleaves them. Variants (rt_thread_store): versioned (the
** seed), broken (appends at expected+1 without the version check: lost
** update), leaky (versioned, no Run / ToolCall cleanup).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_models.h"

#define TH_MAX_PATHS 64
#define TH_MAX_OPS 40
#define TH_MAX_MSGS 20
#define TH_PATH 64
#define TH_RUN_PATH "__run"
#define TH_POLICY_PATH "__kernel.stop_policy_runtime"
#define TH_CALL_PREFIX "__tool_call_scope."
#define TH_SUSPEND_PPM 250000   /* a tool call suspends (pending approval) */

typedef struct th_path {
  char path[TH_PATH];
  int scope;                /* rt_thread_scope */
  int64_t call;             /* tool call id of a ToolCall path */
} th_path;

/* One patch of a changeset (Op::set / Op::delete). */
typedef struct th_op {
  int del;
  th_path p;
} th_op;

/* The delta of one checkpoint (RunDelta → ThreadChangeSet). */
typedef struct th_cs {
  int reason;               /* rt_thread_reason */
  th_op ops[TH_MAX_OPS];
  int n_ops;
  int roles[TH_MAX_MSGS];   /* rt_thread_role */
  int64_t calls[TH_MAX_MSGS];
  int n_msgs;
} th_cs;

typedef struct th_thread {
  int64_t id;
  uint32_t actor;
  rt_thread_spec spec;      /* store resolved */
  int fail_used;            /* spec.fail_reason consumed */
} th_thread;

/* Steps of a writer's run; each waits for drawn virtual time. */
enum { TW_PREPARE = 1, TW_ASSIST, TW_RESULTS, TW_FINAL, TW_DONE };

typedef struct th_writer {
  int thread;               /* index into threads */
  uint32_t actor;
  int64_t life;             /* incarnation running it */
  int live;
  int n;                    /* writer number */
  rt_msg msg;
  int has_msg;
  int runs_done, tries;
  int64_t run, parent_run;
  int64_t version;          /* version the run holds */
  th_path state[TH_MAX_PATHS]; /* the run's view of the thread state */
  int n_state;
  int tool_i;               /* tool calls made in this run */
  int64_t call;             /* the call in flight */
  int step;
} th_writer;

struct rt_thr {
  th_thread *threads;
  int n_threads, cap_threads;
  th_writer *writers;
  int n_writers, cap_writers;
  sim_rng rng;              /* stream "runtime.thread" */
};

/* The thread store's world state (its extension slot), NULL until first use. */
static struct rt_thr *thr_of(rt_world *w) { return RT_EXT_WORLD(w, &rt__thread_ext); }

static struct rt_thr *th_get(rt_world *w) {
  struct rt_thr *t = RT_EXT_WORLD(w, &rt__thread_ext);
  if (t) return t;
  t = calloc(1, sizeof *t);
  if (t) sim_rng_stream(&t->rng, w->s->seed, "runtime.thread");
  RT_EXT_WORLD(w, &rt__thread_ext) = t;
  return t;
}

static void rt__thread_free(rt_world *w) {
  if (!thr_of(w)) return;
  free(thr_of(w)->threads);
  free(thr_of(w)->writers);
  free(thr_of(w));
  RT_EXT_WORLD(w, &rt__thread_ext) = NULL;
}

/* ---- storage --------------------------------------------------------- */

static const rt_store_op th_ops[] = {{RT_W_THREAD, "rv_thread_changesets"}};

/* seed 004 "Checkpoint Mechanism": the tables this model owns. */
static rt_store_module rt__thread_store = {
    .name = "thread",
    .schema =
        "CREATE TABLE IF NOT EXISTS rv_threads(thread_id INTEGER PRIMARY KEY, version INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS rv_thread_changesets(thread_id INTEGER NOT NULL,"
        " version INTEGER NOT NULL, run_id INTEGER NOT NULL, parent_run_id INTEGER, run_meta TEXT,"
        " reason TEXT NOT NULL, messages TEXT NOT NULL, n_messages INTEGER NOT NULL,"
        " patches TEXT NOT NULL, state_actions TEXT, snapshot TEXT, PRIMARY KEY(thread_id, version));"
        "CREATE TABLE IF NOT EXISTS rv_thread_state(thread_id INTEGER NOT NULL, path TEXT NOT NULL,"
        " scope INTEGER NOT NULL, value TEXT, PRIMARY KEY(thread_id, path));",
    .ops = th_ops,
    .n_ops = 1,
};

static sqlite3_stmt *th_prep(rt_world *w, uint32_t a, const char *q) {
  return rt__prepare(w, a, q);
}

/* Runs a prepared write; counts it as a write boundary when it changed a
** row. Returns the number of rows changed, or -1. */
static int th_write(rt_world *w, uint32_t a, int64_t thread, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  int changed = rc == SQLITE_DONE ? sqlite3_changes(w->actors[a].store.db) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return rt__txn_wrote(w, a, RT_W_THREAD, thread, rc);
  if (changed > 0 && rt__txn_wrote(w, a, RT_W_THREAD, thread, rc)) return -1;
  return changed;
}

static int64_t one_int(rt_world *w, uint32_t a, const char *q, int64_t x, int64_t y,
                       int64_t z) {
  sqlite3_stmt *st = th_prep(w, a, q);
  int64_t v = -1;
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, x);
  if (sqlite3_bind_parameter_count(st) >= 2) sqlite3_bind_int64(st, 2, y);
  if (sqlite3_bind_parameter_count(st) >= 3) sqlite3_bind_int64(st, 3, z);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static int64_t stored_version(rt_world *w, uint32_t a, int64_t thread) {
  int64_t v = one_int(w, a, "SELECT version FROM rv_threads WHERE thread_id=?1", thread, 0, 0);
  return v < 0 ? 0 : v;
}

/* Load thread + current version (Write Path 1): the state rows, by path. */
static int load_state(rt_world *w, th_writer *wr, int64_t thread) {
  sqlite3_stmt *st = th_prep(w, wr->actor,
      "SELECT path,scope FROM rv_thread_state WHERE thread_id=?1 ORDER BY path");
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, thread);
  wr->n_state = 0;
  while (wr->n_state < TH_MAX_PATHS && sqlite3_step(st) == SQLITE_ROW) {
    th_path *p = &wr->state[wr->n_state++];
    snprintf(p->path, sizeof p->path, "%s", (const char *)sqlite3_column_text(st, 0));
    p->scope = sqlite3_column_int(st, 1);
    p->call = p->scope == RT_SCOPE_TOOL_CALL ? atoll(p->path + strlen(TH_CALL_PREFIX)) : 0;
  }
  sqlite3_finalize(st);
  wr->version = stored_version(w, wr->actor, thread);
  return 0;
}

/* The precondition: Exact(expected) moves the version to expected+1 or
** changes nothing (conflict); the broken store just sets expected+1. */
static int set_version(rt_world *w, uint32_t a, const th_thread *th, int64_t expected) {
  const char *q = th->spec.store == RT_THREAD_BROKEN
      ? "INSERT OR REPLACE INTO rv_threads(thread_id,version) VALUES(?1,?2+1)"
      : expected == 0 ? "INSERT INTO rv_threads(thread_id,version) VALUES(?1,?2+1)"
                        " ON CONFLICT(thread_id) DO NOTHING"
                      : "UPDATE rv_threads SET version=?2+1 WHERE thread_id=?1 AND version=?2";
  sqlite3_stmt *st = th_prep(w, a, q);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, th->id);
  sqlite3_bind_int64(st, 2, expected);
  return th_write(w, a, th->id, st);
}

static void json_delta(const th_cs *cs, char *msgs, size_t nm, char *patches, size_t np) {
  size_t o = (size_t)snprintf(msgs, nm, "[");
  static const char *const role[] = {"?", "user", "assistant", "tool"};
  for (int i = 0; i < cs->n_msgs && o < nm; i++)
    o += (size_t)snprintf(msgs + o, nm - o, "%s{\"role\":\"%s\",\"call\":%lld}", i ? "," : "",
                          role[cs->roles[i]], (long long)cs->calls[i]);
  if (o < nm) snprintf(msgs + o, nm - o, "]");
  o = (size_t)snprintf(patches, np, "[");
  for (int i = 0; i < cs->n_ops && o < np; i++)
    o += (size_t)snprintf(patches + o, np - o, "%s{\"op\":\"%s\",\"path\":\"%s\"}", i ? "," : "",
                          cs->ops[i].del ? "delete" : "set", cs->ops[i].p.path);
  if (o < np) snprintf(patches + o, np - o, "]");
}

static int put_changeset(rt_world *w, const th_writer *wr, const th_thread *th, const th_cs *cs) {
  char msgs[1024], patches[2048];
  sqlite3_stmt *st = th_prep(w, wr->actor, th->spec.store == RT_THREAD_BROKEN
      ? "INSERT OR REPLACE INTO rv_thread_changesets(thread_id,version,run_id,parent_run_id,"
        "reason,messages,n_messages,patches) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)"
      : "INSERT INTO rv_thread_changesets(thread_id,version,run_id,parent_run_id,"
        "reason,messages,n_messages,patches) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
  if (!st) return -1;
  json_delta(cs, msgs, sizeof msgs, patches, sizeof patches);
  sqlite3_bind_int64(st, 1, th->id);
  sqlite3_bind_int64(st, 2, wr->version + 1);
  sqlite3_bind_int64(st, 3, wr->run);
  sqlite3_bind_int64(st, 4, wr->parent_run);
  sqlite3_bind_text(st, 5, rt_thread_reason_name(cs->reason), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, msgs, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 7, cs->n_msgs);
  sqlite3_bind_text(st, 8, patches, -1, SQLITE_TRANSIENT);
  return th_write(w, wr->actor, th->id, st) < 0 ? -1 : 0;
}

static int put_patch(rt_world *w, uint32_t a, int64_t thread, const th_op *op) {
  sqlite3_stmt *st = th_prep(w, a, op->del
      ? "DELETE FROM rv_thread_state WHERE thread_id=?1 AND path=?2"
      : "INSERT INTO rv_thread_state(thread_id,path,scope,value) VALUES(?1,?2,?3,'{}')"
        " ON CONFLICT(thread_id,path) DO UPDATE SET scope=excluded.scope");
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, thread);
  sqlite3_bind_text(st, 2, op->p.path, -1, SQLITE_TRANSIENT);
  if (!op->del) sqlite3_bind_int(st, 3, op->p.scope);
  return th_write(w, a, thread, st) < 0 ? -1 : 0;
}

/* The store's append: the committed next version, -1 on a version
** conflict, -2 when the write could not be made durable. */
static int64_t store_append(rt_world *w, th_writer *wr, th_thread *th, const th_cs *cs) {
  uint32_t a = wr->actor;
  if (rt__txn_join(w, a)) return -2;
  if (th->spec.fail_reason == cs->reason && !th->fail_used) { /* injected storage error */
    th->fail_used = 1;
    rt_fail_commits(w, a, 1);
  }
  int moved = set_version(w, a, th, wr->version);
  if (moved < 0) return -2;
  if (moved == 0) { /* VersionPrecondition::Exact failed: nothing written */
    rt__commit_now(w, a);
    return -1;
  }
  if (put_changeset(w, wr, th, cs)) return -2;
  for (int i = 0; i < cs->n_ops; i++)
    if (put_patch(w, a, th->id, &cs->ops[i])) return -2;
  rt__commit_now(w, a);
  if (one_int(w, a, "SELECT count(*) FROM rv_thread_changesets WHERE thread_id=?1 AND"
              " version=?2 AND run_id=?3", th->id, wr->version + 1, wr->run) != 1)
    return -2;
  return wr->version + 1;
}

/* ---- the writer's view of the state ------------------------------------ */

static int view_find(const th_writer *wr, const char *path) {
  for (int i = 0; i < wr->n_state; i++)
    if (strcmp(wr->state[i].path, path) == 0) return i;
  return -1;
}

static void view_apply(th_writer *wr, const th_op *op) {
  int i = view_find(wr, op->p.path);
  if (op->del && i >= 0) {
    memmove(&wr->state[i], &wr->state[i + 1], (size_t)(wr->n_state - i - 1) * sizeof wr->state[0]);
    wr->n_state--;
  } else if (!op->del && i < 0 && wr->n_state < TH_MAX_PATHS) {
    wr->state[wr->n_state++] = op->p;
  } else if (!op->del && i >= 0) {
    wr->state[i] = op->p;
  }
}

static void cs_op(th_cs *cs, int del, const char *path, int scope, int64_t call) {
  if (cs->n_ops >= TH_MAX_OPS) return;
  th_op *op = &cs->ops[cs->n_ops++];
  op->del = del;
  snprintf(op->p.path, sizeof op->p.path, "%s", path);
  op->p.scope = scope;
  op->p.call = call;
}

static void cs_msg(th_cs *cs, int role, int64_t call) {
  if (cs->n_msgs >= TH_MAX_MSGS) return;
  cs->roles[cs->n_msgs] = role;
  cs->calls[cs->n_msgs++] = call;
}

static void call_path(char *buf, size_t n, int64_t call) {
  snprintf(buf, n, TH_CALL_PREFIX "%lld", (long long)call);
}

/* ---- runs ----------------------------------------------------------------- */

static th_writer *writer_at(rt_world *w, uint64_t i) {
  struct rt_thr *x = thr_of(w);
  if (!x || i >= (uint64_t)x->n_writers) return NULL;
  th_writer *wr = &x->writers[i];
  const rt_mem *m = RT_MEM(w, wr->actor);
  return wr->live && m && m->inc.incarnation == wr->life ? wr : NULL;
}

static void step_event(sim *s, void *ctx, uint64_t arg);

/* Waits a drawn delay (inference, a tool, a retry back-off), then `next`. */
static void wait_step(rt_world *w, th_writer *wr, int64_t max_us, int next) {
  int64_t d = sim_rng_range(&thr_of(w)->rng, 1000, max_us > 1000 ? max_us : 1000);
  wr->step = next;
  sim_after(w->s, d, RT_MEM(w, wr->actor)->inc.dom, step_event, w,
            (uint64_t)(wr - thr_of(w)->writers));
}

static void run_emit(rt_world *w, const th_writer *wr, int state, const char *err) {
  rt__emit(w, RT_EV_THREAD_RUN, wr->actor, thr_of(w)->threads[wr->thread].id, wr->run, state, err);
}

static void writer_end(rt_world *w, th_writer *wr, int ok, const char *err) {
  rt_mem *m = RT_MEM(w, wr->actor);
  rt_msg req;
  wr->live = 0;
  wr->step = TW_DONE;
  if (wr->has_msg && m && rt__pop_serving(&m->inc, wr->msg.id, &req))
    rt__request_done(w, wr->actor, &req, ok, err);
}

/* The run ended (ok: RunFinished durable): the next run, a retry, or done. */
static void run_over(rt_world *w, th_writer *wr, int ok) {
  const th_thread *th = &thr_of(w)->threads[wr->thread];
  int64_t back = th->spec.step_max_us;
  if (ok) wr->runs_done++;
  wr->tries++;
  wr->parent_run = wr->run;
  if (wr->runs_done >= th->spec.runs) {
    writer_end(w, wr, 1, NULL);
  } else if (wr->tries >= 4 * th->spec.runs) {
    writer_end(w, wr, 0, "thread writer gave up: too many failed runs");
  } else {
    for (int k = 0; !ok && k < wr->tries && k < 6; k++) back *= 2; /* back-off */
    wait_step(w, wr, back, TW_PREPARE);
  }
}

/* One checkpoint: append the delta with Exact(version). Returns 0 when
** committed (the version is written back to the run), -1 otherwise, after
** the failure semantics: a non-final failure fails the run, a failed
** RunFinished suppresses the terminal event. */
static int checkpoint(rt_world *w, th_writer *wr, const th_cs *cs) {
  th_thread *th = &thr_of(w)->threads[wr->thread];
  uint32_t a = wr->actor;
  rt__emit(w, RT_EV_THREAD_APPEND, a, th->id, wr->run, wr->version, rt_thread_reason_name(cs->reason));
  for (int i = 0; i < cs->n_ops; i++)
    rt__emit(w, cs->ops[i].del ? RT_EV_THREAD_DELETE : RT_EV_THREAD_SET, a, th->id,
             cs->ops[i].p.scope, cs->ops[i].p.call, cs->ops[i].p.path);
  for (int i = 0; i < cs->n_msgs; i++)
    rt__emit(w, RT_EV_THREAD_MSG, a, th->id, cs->roles[i], cs->calls[i], NULL);
  int64_t v = store_append(w, wr, th, cs);
  const char *err = v == -1 ? "state error: version conflict" : "state error: checkpoint not durable";
  rt__emit(w, RT_EV_THREAD_COMMIT, a, th->id, v, wr->run, v > 0 ? NULL : err);
  if (v > 0) {
    wr->version = v;
    for (int i = 0; i < cs->n_ops; i++) view_apply(wr, &cs->ops[i]);
    return 0;
  }
  if (cs->reason == RT_CK_RUN_FINISHED) {
    run_emit(w, wr, RT_RUN_SUPPRESSED, "RunFinished checkpoint failed: run-finish suppressed");
  } else {
    run_emit(w, wr, RT_RUN_FAILED, err);
  }
  if (RT_MEM(w, a)) run_over(w, wr, 0);
  return -1;
}

/* prepare_run + A) the inbound checkpoint + B1) RunStart + B2) outbox
** replay. Returns 0, or -1 when a checkpoint failed (the run is over). */
static int run_prepare(rt_world *w, th_writer *wr) {
  const th_thread *th = &thr_of(w)->threads[wr->thread];
  int leaky = th->spec.store == RT_THREAD_LEAKY;
  th_cs cs = {.reason = RT_CK_USER_MESSAGE};
  wr->run = rt__new_id(w);
  wr->tool_i = 0;
  if (load_state(w, wr, th->id)) return -1;
  rt__emit(w, RT_EV_THREAD_LOAD, wr->actor, th->id, wr->version, wr->run, NULL);
  run_emit(w, wr, RT_RUN_STARTED, NULL);
  for (int i = 0; i < wr->n_state && !leaky; i++) /* run-scoped cleanup (prepare_run) */
    if (wr->state[i].scope == RT_SCOPE_RUN) cs_op(&cs, 1, wr->state[i].path, RT_SCOPE_RUN, 0);
  cs_op(&cs, 0, TH_RUN_PATH, RT_SCOPE_RUN, 0); /* the lifecycle Running patch */
  cs_msg(&cs, RT_ROLE_USER, 0);
  if (checkpoint(w, wr, &cs)) return -1;
  th_cs start = {.reason = RT_CK_USER_MESSAGE}; /* RunStart side effects */
  cs_op(&start, 0, TH_POLICY_PATH, RT_SCOPE_RUN, 0);
  if (checkpoint(w, wr, &start)) return -1;
  th_cs replay = {.reason = RT_CK_TOOL_RESULTS_COMMITTED}; /* suspended calls */
  for (int i = 0; i < wr->n_state; i++) {
    if (wr->state[i].scope != RT_SCOPE_TOOL_CALL) continue;
    cs_msg(&replay, RT_ROLE_TOOL, wr->state[i].call);
    if (!leaky) cs_op(&replay, 1, wr->state[i].path, RT_SCOPE_TOOL_CALL, wr->state[i].call);
  }
  return replay.n_msgs > 0 ? checkpoint(w, wr, &replay) : 0;
}

/* B3) an assistant turn that calls a tool: its ToolCall-scoped state. */
static int run_assist(rt_world *w, th_writer *wr) {
  th_cs cs = {.reason = RT_CK_ASSISTANT_TURN_COMMITTED};
  char path[TH_PATH];
  wr->call = rt__new_id(w);
  call_path(path, sizeof path, wr->call);
  cs_msg(&cs, RT_ROLE_ASSISTANT, wr->call);
  cs_op(&cs, 0, path, RT_SCOPE_TOOL_CALL, wr->call);
  cs_op(&cs, 0, TH_POLICY_PATH, RT_SCOPE_RUN, 0);
  return checkpoint(w, wr, &cs);
}

/* B4) tool results applied, or the call suspends (its scope stays until a
** later run's RunStart outbox replay resolves it). */
static int run_results(rt_world *w, th_writer *wr) {
  const th_thread *th = &thr_of(w)->threads[wr->thread];
  th_cs cs = {.reason = RT_CK_TOOL_RESULTS_COMMITTED};
  char path[TH_PATH];
  call_path(path, sizeof path, wr->call);
  if (sim_rng_chance_ppm(&thr_of(w)->rng, TH_SUSPEND_PPM)) {
    cs_op(&cs, 0, path, RT_SCOPE_TOOL_CALL, wr->call); /* suspension state update */
  } else {
    cs_msg(&cs, RT_ROLE_TOOL, wr->call);
    if (th->spec.store != RT_THREAD_LEAKY) cs_op(&cs, 1, path, RT_SCOPE_TOOL_CALL, wr->call);
  }
  wr->tool_i++;
  return checkpoint(w, wr, &cs);
}

/* B3) the final assistant turn, then B5) RunFinished (forced). */
static int run_finish(rt_world *w, th_writer *wr) {
  th_cs fin = {.reason = RT_CK_ASSISTANT_TURN_COMMITTED};
  char notes[TH_PATH];
  snprintf(notes, sizeof notes, "notes.writer%d", wr->n);
  cs_msg(&fin, RT_ROLE_ASSISTANT, 0);
  cs_op(&fin, 0, notes, RT_SCOPE_THREAD, 0);
  if (checkpoint(w, wr, &fin)) return -1;
  th_cs end = {.reason = RT_CK_RUN_FINISHED};
  cs_op(&end, 0, TH_RUN_PATH, RT_SCOPE_RUN, 0); /* lifecycle: finished */
  if (checkpoint(w, wr, &end)) return -1;
  run_emit(w, wr, RT_RUN_FINISHED, NULL); /* the terminal run-finish event */
  run_over(w, wr, 1);
  return 0;
}

static void writer_step(rt_world *w, th_writer *wr) {
  const rt_thread_spec *sp = &thr_of(w)->threads[wr->thread].spec;
  rt__touch(w, wr->actor);
  switch (wr->step) {
    case TW_PREPARE:
      if (!run_prepare(w, wr)) wait_step(w, wr, sp->step_max_us, sp->tools > 0 ? TW_ASSIST : TW_FINAL);
      return;
    case TW_ASSIST:
      if (!run_assist(w, wr)) wait_step(w, wr, sp->step_max_us, TW_RESULTS);
      return;
    case TW_RESULTS:
      if (!run_results(w, wr))
        wait_step(w, wr, sp->step_max_us, wr->tool_i < sp->tools ? TW_ASSIST : TW_FINAL);
      return;
    case TW_FINAL: run_finish(w, wr); return;
    default: return;
  }
}

static void step_event(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  th_writer *wr = writer_at(w, arg);
  (void)s;
  if (wr) writer_step(w, wr);
}

/* ---- requests and inspection ------------------------------------------- */

void rt_thread_spec_default(rt_thread_spec *t) {
  memset(t, 0, sizeof *t);
  t->writers = 2;
  t->runs = 1;
  t->tools = 1;
  t->store = -1;
  t->step_max_us = 50000;
}

static th_writer *writer_new(rt_world *w) {
  struct rt_thr *x = thr_of(w);
  for (int i = 0; i < x->n_writers; i++)
    if (!writer_at(w, (uint64_t)i)) return &x->writers[i];
  if (x->n_writers == x->cap_writers) {
    int nc = x->cap_writers ? 2 * x->cap_writers : 8;
    th_writer *nw = realloc(x->writers, (size_t)nc * sizeof *nw);
    if (!nw) return NULL;
    x->writers = nw;
    x->cap_writers = nc;
  }
  return &x->writers[x->n_writers++];
}

/* A writer request reaches the started actor: its first run begins. */
static void rt__thread_request(rt_world *w, uint32_t a, const rt_msg *m) {
  struct rt_thr *x = th_get(w);
  th_writer *wr = x && m->arg >= 0 && m->arg < x->n_threads ? writer_new(w) : NULL;
  rt_mem *mem = RT_MEM(w, a);
  if (!wr) {
    rt__request_done(w, a, m, 0, "thread store: out of memory");
    return;
  }
  memset(wr, 0, sizeof *wr);
  wr->thread = (int)m->arg;
  wr->n = (int)m->arg2;
  wr->actor = a;
  wr->life = mem->inc.incarnation;
  wr->live = 1;
  wr->msg = *m;
  wr->has_msg = rt__push_serving(&mem->inc, m) == 0;
  wr->step = TW_PREPARE;
  writer_step(w, wr);
}

static int spec_ok(const rt_thread_spec *s) {
  return s->writers >= 1 && s->writers <= RT_THREAD_MAX_WRITERS && s->runs >= 1 &&
         s->runs <= 1000 && s->tools >= 0 && s->tools <= RT_EXEC_MAX_TOOLS &&
         s->store >= -1 && s->store <= RT_THREAD_LEAKY && s->fail_reason >= 0 &&
         s->fail_reason <= RT_CK_RUN_FINISHED && s->step_max_us >= 1000;
}

int64_t rt_thread_writers_at(rt_world *w, uint32_t a, const rt_thread_spec *spec, int64_t at_us) {
  struct rt_thr *x = th_get(w);
  if (!x || !spec || a >= w->n_actors || !spec_ok(spec)) return -1;
  if (x->n_threads == x->cap_threads) {
    int nc = x->cap_threads ? 2 * x->cap_threads : 8;
    th_thread *nt = realloc(x->threads, (size_t)nc * sizeof *nt);
    if (!nt) return -1;
    x->threads = nt;
    x->cap_threads = nc;
  }
  th_thread *th = &x->threads[x->n_threads];
  memset(th, 0, sizeof *th);
  th->id = rt__new_id(w);
  th->actor = a;
  th->spec = *spec;
  if (th->spec.store < 0) th->spec.store = (int)w->cfg.thread_store;
  for (int k = 0; k < spec->writers; k++) {
    rt_msg m = {0};
    m.kind = MSG_THREAD_WRITER;
    m.entry = RT_ENTRY_FETCH;
    m.arg = x->n_threads;
    m.arg2 = k;
    if (rt__deliver_at(w, a, &m, at_us + sim_rng_range(&x->rng, 0, spec->step_max_us))) return -1;
  }
  x->n_threads++;
  return th->id;
}

int64_t rt_thread_version(rt_world *w, uint32_t a, int64_t thread) {
  return a < w->n_actors ? stored_version(w, a, thread) : -1;
}

int rt_thread_message_count(rt_world *w, uint32_t a, int64_t thread) {
  if (a >= w->n_actors) return -1;
  return (int)one_int(w, a, "SELECT coalesce(sum(n_messages),0) FROM rv_thread_changesets"
                      " WHERE thread_id=?1", thread, 0, 0);
}

int rt_thread_state_has(rt_world *w, uint32_t a, int64_t thread, const char *path) {
  if (a >= w->n_actors || !path) return -1;
  sqlite3_stmt *st = th_prep(w, a, "SELECT count(*) FROM rv_thread_state WHERE thread_id=?1 AND path=?2");
  int n = -1;
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, thread);
  sqlite3_bind_text(st, 2, path, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0) > 0;
  sqlite3_finalize(st);
  return n;
}

/* ---- the extension ----------------------------------------------------------- */

static const int thread_kinds[] = {MSG_THREAD_WRITER};

rt_agent_ext rt__thread_ext = {
    .name = "thread",
    .store = &rt__thread_store,
    .kinds = thread_kinds,
    .n_kinds = 1,
    .message = rt__thread_request,
    .world_free = rt__thread_free,
};
