/*
** rt_executor.c: the checkpoint executor (DESIGN.md "executor").
**
** Follows seed 002 ("Durable Execution"):
**   "The interface"          DurableExecutor.checkpoint / restore and
**                            TurnCheckpoint {turnId, sessionId, phase,
**                            state, timestamp};
**   "The phase taxonomy"     the open CheckpointPhaseRegistry with the five
**                            canonical phases (started, llm-complete,
**                            tool-dispatched, tool-received, settled) and
**                            their state shapes; consumer phases register;
**   "Wiring EventRouter"     the actor runner fires started when the turn
**                            opens, llm-complete after each LLM iteration,
**                            tool-received as tool results land, settled at
**                            terminal; failures propagate and abort the turn;
**   "The in-memory reference implementation"  InMemoryDurableExecutor;
**   "Idempotency contract"   dedupe on (turnId, phase, timestamp), the SQL
**                            pattern INSERT … ON CONFLICT DO NOTHING;
**                            timestamps strictly monotonic per turn, at
**                            least 1 ms apart within one millisecond;
**   "Restoration contract"   restore(turnId) oldest first;
**   "Cancellation interaction" the abort signal fires at once, the slot is
**                            torn down only after the durable settled;
**   "Pitfalls"               a failed checkpoint aborts the turn, a failed
**                            started means the turn never runs; the
**                            deliberately broken adapter dedupes on
**                            (turnId, phase) alone.
** The consumer's policy (the seed leaves it to the application): restore
** after every settled turn (the seed's test pattern, an audit), and at
** actor startup restore every turn without settled and resume it from its
** last checkpoint (docs/runtime.md, "Checkpoint executor (seed 002)").
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_models.h"

#define EX_MAX_PHASES 32
#define EX_RESTORE_CAP 256
#define EX_LLM_MIN_US 200000      /* one trip through the model */
#define EX_LLM_MAX_US 2000000
#define EX_TOOL_MIN_US 50000      /* one tool call */
#define EX_TOOL_MAX_US 1000000
#define EX_EXPIRES_MS 600000      /* started.expiresAt: slot lifetime */

typedef struct ex_phase {
  char name[48];
  char desc[96];
} ex_phase;

/* One InMemoryDurableExecutor entry; it lives as long as the incarnation
** (`life`) of the actor whose memory holds it. */
typedef struct ex_mem_cp {
  uint32_t actor;
  int64_t life;
  rt_checkpoint cp;
} ex_mem_cp;

/* Steps of the actor runner; each one waits for a checkpoint ack or for
** virtual time (the LLM, a tool). */
enum { EX_STARTED = 1, EX_LLM, EX_DISPATCH, EX_RECEIVE, EX_SETTLE, EX_DONE };

typedef struct ex_turn {
  int64_t id;
  uint32_t actor;
  int64_t life;             /* incarnation running it; stale when it differs */
  int live;
  rt_exec_turn_spec spec;   /* adapter resolved */
  rt_msg msg;               /* the turn request (answered at the end) */
  int has_msg;
  int step;                 /* what to do after the pending ack / timer */
  int pend_phase;           /* phase of the checkpoint awaiting its ack */
  int iter;                 /* LLM iterations completed */
  int tools_done;           /* tool-received so far */
  int64_t last_ts;          /* last timestamp (ms) given to a checkpoint */
  int cancel;               /* the abort signal fired */
  int failed_phase_used;    /* spec.fail_phase consumed */
  sim_handle timer;         /* LLM or tool in flight (0 none) */
} ex_turn;

struct rt_exec {
  ex_phase phases[EX_MAX_PHASES]; /* index = phase id; 0 unused */
  int n_phases;
  ex_mem_cp *mem;
  size_t n_mem, cap_mem;
  ex_turn *turns;
  int n_turns, cap_turns;
  rt_exec_turn_spec *specs; /* scheduled turns, indexed by message arg */
  int n_specs, cap_specs;
  int durable;              /* a SQL adapter was used: scan at startup */
  sim_rng rng;              /* stream "runtime.executor" */
};

/* The executor's world state (its extension slot), NULL until first use. */
static struct rt_exec *exec_of(rt_world *w) { return RT_EXT_WORLD(w, &rt__exec_ext); }


/* ---- state and registry ------------------------------------------------- */

static struct rt_exec *ex_get(rt_world *w) {
  static const char *const canon[] = {
      "", "The session manager has opened the turn slot.",
      "The LLM iteration completed (one trip through the model).",
      "Consumer-fired; Beach itself does not fire this phase.",
      "A tool result has arrived and been merged into the turn's mailbox.",
      "The turn has reached a terminal state (complete / cancelled / timeout / error)."};
  if (exec_of(w)) return exec_of(w);
  struct rt_exec *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  for (int p = RT_PH_STARTED; p <= RT_PH_SETTLED; p++) {
    snprintf(x->phases[p].name, sizeof x->phases[p].name, "%s", rt_exec_phase_name(p));
    snprintf(x->phases[p].desc, sizeof x->phases[p].desc, "%s", canon[p]);
  }
  x->n_phases = RT_PH_FIRST_CUSTOM;
  sim_rng_stream(&x->rng, w->s->seed, "runtime.executor");
  RT_EXT_WORLD(w, &rt__exec_ext) = x;
  return x;
}

static void rt__exec_free(rt_world *w) {
  if (!exec_of(w)) return;
  free(exec_of(w)->mem);
  free(exec_of(w)->turns);
  free(exec_of(w)->specs);
  free(exec_of(w));
  RT_EXT_WORLD(w, &rt__exec_ext) = NULL;
}

int rt_exec_phase_register(rt_world *w, const char *name, const char *description) {
  struct rt_exec *x = ex_get(w);
  size_t n = name ? strlen(name) : 0;
  if (!x || n == 0 || n >= sizeof x->phases[0].name || rt_exec_phase_id(w, name) >= 0 ||
      x->n_phases >= EX_MAX_PHASES)
    return -1;
  ex_phase *p = &x->phases[x->n_phases];
  snprintf(p->name, sizeof p->name, "%s", name);
  snprintf(p->desc, sizeof p->desc, "%s", description ? description : "");
  return x->n_phases++;
}

int rt_exec_phase_id(rt_world *w, const char *name) {
  struct rt_exec *x = ex_get(w);
  for (int i = RT_PH_STARTED; x && name && i < x->n_phases; i++)
    if (strcmp(x->phases[i].name, name) == 0) return i;
  return -1;
}

const char *rt_exec_phase_of(rt_world *w, int id) {
  struct rt_exec *x = ex_get(w);
  return x && id >= RT_PH_STARTED && id < x->n_phases ? x->phases[id].name : NULL;
}

/* ---- the SQL adapters (actor storage, through the turn transaction) ---- */

static const rt_store_op ex_ops[] = {{RT_W_CHECKPOINT, "beach_turn_checkpoints"}};

/* seed 002 "Idempotency contract": the checkpoint table this model owns. */
static rt_store_module rt__exec_store = {
    .name = "executor",
    .schema = "CREATE TABLE IF NOT EXISTS beach_turn_checkpoints(turn_id INTEGER NOT NULL,"
              " session_id TEXT NOT NULL, phase TEXT NOT NULL, state TEXT NOT NULL,"
              " timestamp INTEGER NOT NULL, UNIQUE(turn_id, phase, timestamp));",
    .ops = ex_ops,
    .n_ops = 1,
};

static sqlite3_stmt *ex_prep(rt_world *w, uint32_t a, const char *q) {
  return rt__prepare(w, a, q);
}

/* 1 if the adapter's dedupe key of cp is stored (durable), else 0. */
static int sql_has(rt_world *w, uint32_t a, rt_exec_adapter ad, const rt_checkpoint *cp) {
  sqlite3_stmt *st = ex_prep(w, a, ad == RT_EXEC_BROKEN
      ? "SELECT count(*) FROM beach_turn_checkpoints WHERE turn_id=?1 AND phase=?2"
      : "SELECT count(*) FROM beach_turn_checkpoints WHERE turn_id=?1 AND phase=?2"
        " AND timestamp=?3");
  int n = 0;
  if (!st) return 0;
  sqlite3_bind_int64(st, 1, cp->turn_id);
  sqlite3_bind_text(st, 2, cp->phase, -1, SQLITE_STATIC);
  if (ad != RT_EXEC_BROKEN) sqlite3_bind_int64(st, 3, cp->timestamp_ms);
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return n > 0;
}

/* INSERT … ON CONFLICT (turn_id, phase, timestamp) DO NOTHING; the broken
** adapter inserts only when no row of (turn_id, phase) exists. The write
** commits at once: checkpoint() returns when the write is durable. */
static int sql_put(rt_world *w, uint32_t a, rt_exec_adapter ad, const rt_checkpoint *cp) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a)) return -1;
  st = ex_prep(w, a, ad == RT_EXEC_BROKEN
      ? "INSERT INTO beach_turn_checkpoints(turn_id,session_id,phase,state,timestamp)"
        " SELECT ?1,?2,?3,?4,?5 WHERE NOT EXISTS (SELECT 1 FROM beach_turn_checkpoints"
        " WHERE turn_id=?1 AND phase=?3)"
      : "INSERT INTO beach_turn_checkpoints(turn_id,session_id,phase,state,timestamp)"
        " VALUES(?1,?2,?3,?4,?5) ON CONFLICT(turn_id,phase,timestamp) DO NOTHING");
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, cp->turn_id);
  sqlite3_bind_text(st, 2, cp->session_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, cp->phase, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, cp->state, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, cp->timestamp_ms);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rt__txn_wrote(w, a, RT_W_CHECKPOINT, cp->turn_id, rc)) return -1;
  rt__commit_now(w, a);
  return sql_has(w, a, ad, cp) ? 0 : -1;
}

static void row_read(sqlite3_stmt *st, int64_t turn, rt_checkpoint *c) {
  memset(c, 0, sizeof *c);
  c->turn_id = turn;
  snprintf(c->session_id, sizeof c->session_id, "%s", (const char *)sqlite3_column_text(st, 0));
  snprintf(c->phase, sizeof c->phase, "%s", (const char *)sqlite3_column_text(st, 1));
  snprintf(c->state, sizeof c->state, "%s", (const char *)sqlite3_column_text(st, 2));
  c->timestamp_ms = sqlite3_column_int64(st, 3);
}

static int sql_get(rt_world *w, uint32_t a, int64_t turn, rt_checkpoint *out, int cap) {
  sqlite3_stmt *st = ex_prep(w, a,
      "SELECT session_id,phase,state,timestamp FROM beach_turn_checkpoints"
      " WHERE turn_id=?1 ORDER BY timestamp,rowid");
  int n = 0;
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, turn);
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (n < cap) row_read(st, turn, &out[n]);
    n++;
  }
  sqlite3_finalize(st);
  return n;
}

/* ---- the in-memory adapter ---------------------------------------------- */

static int64_t life_of(const rt_world *w, uint32_t a) { return w->actors[a].next_incarnation; }

static int mem_put(rt_world *w, uint32_t a, const rt_checkpoint *cp) {
  struct rt_exec *x = exec_of(w);
  int64_t life = life_of(w, a);
  for (size_t i = 0; i < x->n_mem; i++) {
    const ex_mem_cp *e = &x->mem[i];
    if (e->actor == a && e->life == life && e->cp.turn_id == cp->turn_id &&
        e->cp.timestamp_ms == cp->timestamp_ms && strcmp(e->cp.phase, cp->phase) == 0)
      return 0; /* the same (turnId, phase, timestamp): one stored checkpoint */
  }
  if (x->n_mem == x->cap_mem) {
    size_t nc = x->cap_mem ? 2 * x->cap_mem : 64;
    ex_mem_cp *nm = realloc(x->mem, nc * sizeof *nm);
    if (!nm) return -1;
    x->mem = nm;
    x->cap_mem = nc;
  }
  x->mem[x->n_mem++] = (ex_mem_cp){a, life, *cp};
  return 0;
}

/* Entries of this incarnation, sorted by timestamp (stable); with more than
** cap, the cap oldest (an older entry stored later displaces the newest). */
static int mem_get(rt_world *w, uint32_t a, int64_t turn, rt_checkpoint *out, int cap) {
  struct rt_exec *x = exec_of(w);
  int64_t life = life_of(w, a);
  int n = 0;
  for (size_t i = 0; i < x->n_mem; i++) {
    const ex_mem_cp *e = &x->mem[i];
    if (e->actor != a || e->life != life || e->cp.turn_id != turn) continue;
    if (n < cap || (cap > 0 && out[cap - 1].timestamp_ms > e->cp.timestamp_ms)) {
      int j = n < cap ? n : cap - 1;
      while (j > 0 && out[j - 1].timestamp_ms > e->cp.timestamp_ms) {
        out[j] = out[j - 1];
        j--;
      }
      out[j] = e->cp;
    }
    n++;
  }
  return n;
}

/* ---- checkpoint / restore ---------------------------------------------- */

static void emit_call(rt_world *w, uint32_t a, const rt_checkpoint *cp, int phase, int retry) {
  sim_emit(w->s, RT_EV_EXEC_CHECKPOINT, a, cp->turn_id, phase, cp->timestamp_ms,
           rt__str(w, cp->phase), retry ? rt__str(w, "retry") : 0);
}

/* One delivery of a checkpoint call to the adapter: 0 durable, -1 failed. */
static int adapter_put(rt_world *w, uint32_t a, rt_exec_adapter ad, const rt_checkpoint *cp) {
  if (ad == RT_EXEC_MEMORY) return mem_put(w, a, cp);
  exec_of(w)->durable = 1;
  return sql_put(w, a, ad, cp);
}

int rt_exec_checkpoint(rt_world *w, uint32_t a, rt_exec_adapter ad, const rt_checkpoint *cp) {
  if (a >= w->n_actors || !ex_get(w) || !cp) return -1;
  int phase = rt_exec_phase_id(w, cp->phase);
  if (phase < 0) return -1;
  emit_call(w, a, cp, phase, 0);
  int rc = adapter_put(w, a, ad, cp);
  rt__emit(w, RT_EV_EXEC_ACK, a, cp->turn_id, rc == 0, phase,
           rc == 0 ? NULL : "checkpoint could not be persisted");
  return rc;
}

static int restore_as(rt_world *w, uint32_t a, rt_exec_adapter ad, int64_t turn,
                      rt_checkpoint *out, int cap, int purpose) {
  if (a >= w->n_actors || !ex_get(w) || cap < 0) return -1;
  int n = ad == RT_EXEC_MEMORY ? mem_get(w, a, turn, out, cap) : sql_get(w, a, turn, out, cap);
  if (n < 0) return -1;
  rt__emit(w, RT_EV_EXEC_RESTORE, a, turn, n, purpose, NULL);
  for (int i = 0; i < n && i < cap; i++)
    rt__emit(w, RT_EV_EXEC_RESTORED, a, turn, rt_exec_phase_id(w, out[i].phase),
             out[i].timestamp_ms, out[i].phase);
  return n;
}

int rt_exec_restore(rt_world *w, uint32_t a, rt_exec_adapter ad, int64_t turn,
                    rt_checkpoint *out, int cap) {
  return restore_as(w, a, ad, turn, out, cap, 2);
}

/* ---- the actor runner ---------------------------------------------------- */

static ex_turn *turn_at(rt_world *w, uint64_t i) {
  struct rt_exec *x = exec_of(w);
  if (!x || i >= (uint64_t)x->n_turns) return NULL;
  ex_turn *t = &x->turns[i];
  const rt_mem *m = RT_MEM(w, t->actor);
  return t->live && m && m->inc.incarnation == t->life ? t : NULL;
}

static ex_turn *turn_new(rt_world *w) {
  struct rt_exec *x = exec_of(w);
  for (int i = 0; i < x->n_turns; i++)
    if (!turn_at(w, (uint64_t)i)) {
      memset(&x->turns[i], 0, sizeof x->turns[i]);
      return &x->turns[i];
    }
  if (x->n_turns == x->cap_turns) {
    int nc = x->cap_turns ? 2 * x->cap_turns : 8;
    ex_turn *nt = realloc(x->turns, (size_t)nc * sizeof *nt);
    if (!nt) return NULL;
    x->turns = nt;
    x->cap_turns = nc;
  }
  ex_turn *t = &x->turns[x->n_turns++];
  memset(t, 0, sizeof *t);
  return t;
}

static uint64_t turn_ix(rt_world *w, const ex_turn *t) { return (uint64_t)(t - exec_of(w)->turns); }

static void turn_emit(rt_world *w, const ex_turn *t, int state, const char *why) {
  rt__emit(w, RT_EV_EXEC_TURN, t->actor, t->id, state, t->spec.adapter, why);
}

/* The state JSON of a canonical phase (seed 002, "The phase taxonomy"). */
static void phase_state(rt_world *w, const ex_turn *t, int phase, char *s, size_t n) {
  switch (phase) {
    case RT_PH_STARTED:
      snprintf(s, n, "{\"actorId\":\"%s\",\"slotKey\":\"turn:%lld\",\"messages\":[\"user\"],"
               "\"expiresAt\":%lld,\"tools\":%d,\"adapter\":\"%s\"}",
               w->actors[t->actor].spec.id, (long long)t->id,
               (long long)(w->s->now_us / 1000 + EX_EXPIRES_MS), t->spec.tools,
               rt_exec_adapter_name(t->spec.adapter));
      break;
    case RT_PH_LLM_COMPLETE:
      snprintf(s, n, "{\"messages\":%d,\"respond\":{\"toolCalls\":%d}}", 1 + 2 * t->tools_done,
               t->iter == 1 ? t->spec.tools : 0);
      break;
    case RT_PH_TOOL_DISPATCHED:
      snprintf(s, n, "{\"toolCallId\":\"call-%lld-%d\"}", (long long)t->id, t->tools_done);
      break;
    case RT_PH_TOOL_RECEIVED:
      snprintf(s, n, "{\"message\":{\"toolCallId\":\"call-%lld-%d\"},\"slotKey\":\"turn:%lld\"}",
               (long long)t->id, t->tools_done, (long long)t->id);
      break;
    default:
      snprintf(s, n, "{\"turnState\":\"%s\",\"respond\":%s,\"reason\":\"%s\"}",
               t->cancel ? "cancelled" : "complete", t->cancel ? "false" : "true",
               t->cancel ? "cancelled" : "complete");
      break;
  }
}

/* The scenario's substrate failure for this phase (spec.fail_phase). For
** the SQL adapters it is a real commit failure of the actor's storage. */
static int injected_failure(rt_world *w, ex_turn *t, int phase) {
  if (t->spec.fail_phase != phase || t->failed_phase_used) return 0;
  t->failed_phase_used = 1;
  if (t->spec.adapter == RT_EXEC_MEMORY) return 1;
  rt_fail_commits(w, t->actor, 1);
  return 0;
}

static void ack_event(sim *s, void *ctx, uint64_t arg);
static void turn_end(rt_world *w, ex_turn *t, int state, int ok, const char *why);

/* The runner fires checkpoint(phase) and awaits it; `next` runs after the
** ack. Timestamps are strictly monotonic per turn, >= 1 ms apart. */
static void fire(rt_world *w, ex_turn *t, int phase, int next) {
  rt_checkpoint cp;
  memset(&cp, 0, sizeof cp);
  cp.turn_id = t->id;
  snprintf(cp.session_id, sizeof cp.session_id, "session-%u", t->actor);
  snprintf(cp.phase, sizeof cp.phase, "%s", rt_exec_phase_name(phase));
  phase_state(w, t, phase, cp.state, sizeof cp.state);
  int64_t now_ms = w->s->now_us / 1000;
  cp.timestamp_ms = now_ms > t->last_ts ? now_ms : t->last_ts + 1;
  t->last_ts = cp.timestamp_ms;
  emit_call(w, t->actor, &cp, phase, 0);
  int rc = injected_failure(w, t, phase) ? -1 : adapter_put(w, t->actor, t->spec.adapter, &cp);
  if (rc == 0 && sim_rng_chance_ppm(&exec_of(w)->rng, t->spec.dup_ppm)) { /* network retry */
    emit_call(w, t->actor, &cp, phase, 1);
    rc = adapter_put(w, t->actor, t->spec.adapter, &cp);
  }
  if (rc != 0) { /* checkpoint() threw: the turn stops here */
    rt__emit(w, RT_EV_EXEC_ACK, t->actor, t->id, 0, phase, "checkpoint could not be persisted");
    if (phase == RT_PH_STARTED)
      turn_end(w, t, RT_TS_NOT_RUN, 0, "started checkpoint failed: the turn does not run");
    else
      turn_end(w, t, RT_TS_ABORTED, 0, "checkpoint failed: turn aborted");
    return;
  }
  t->pend_phase = phase;
  t->step = next;
  sim_after(w->s, 0, RT_MEM(w, t->actor)->inc.dom, ack_event, w, turn_ix(w, t));
}

static void work_event(sim *s, void *ctx, uint64_t arg);

/* Waits lo..hi µs of virtual time (the LLM or a tool), then runs t->step. */
static void wait_work(rt_world *w, ex_turn *t, int64_t lo, int64_t hi, int next) {
  int64_t d = sim_rng_range(&exec_of(w)->rng, lo, hi);
  t->step = next;
  t->timer = sim_after(w->s, d, RT_MEM(w, t->actor)->inc.dom, work_event, w, turn_ix(w, t));
}

/* The audit restore after settled (the seed's test: started first, settled
** last) and the end of the turn request. */
static void turn_end(rt_world *w, ex_turn *t, int state, int ok, const char *why) {
  rt_checkpoint buf[EX_RESTORE_CAP];
  rt_mem *m = RT_MEM(w, t->actor);
  rt_msg req;
  turn_emit(w, t, state, why);
  t->step = EX_DONE;
  t->live = 0;
  if (state == RT_TS_COMPLETE || state == RT_TS_CANCELLED)
    restore_as(w, t->actor, t->spec.adapter, t->id, buf, EX_RESTORE_CAP, 2);
  if (t->has_msg && m && rt__pop_serving(&m->inc, t->msg.id, &req))
    rt__request_done(w, t->actor, &req, ok, ok ? NULL : why);
}

/* Runs the step after an ack or a wait: the runner's lifecycle. */
static void advance(rt_world *w, ex_turn *t) {
  rt__touch(w, t->actor);
  if (t->cancel && t->step != EX_DONE && t->step != EX_SETTLE && t->pend_phase != RT_PH_SETTLED)
    t->step = EX_SETTLE;
  switch (t->step) {
    case EX_LLM: /* an LLM iteration finished */
      t->iter++;
      fire(w, t, RT_PH_LLM_COMPLETE, t->iter == 1 && t->spec.tools > 0 ? EX_DISPATCH : EX_SETTLE);
      return;
    case EX_DISPATCH: /* consumer-fired from the tool handler */
      fire(w, t, RT_PH_TOOL_DISPATCHED, EX_RECEIVE);
      return;
    case EX_RECEIVE: /* the tool result landed */
      fire(w, t, RT_PH_TOOL_RECEIVED, t->tools_done + 1 < t->spec.tools ? EX_DISPATCH : EX_LLM);
      return;
    case EX_SETTLE:
      fire(w, t, RT_PH_SETTLED, EX_DONE);
      return;
    default: return;
  }
}

static void ack_event(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  ex_turn *t = turn_at(w, arg);
  (void)s;
  if (!t) return;
  rt__emit(w, RT_EV_EXEC_ACK, t->actor, t->id, 1, t->pend_phase, NULL);
  int acked = t->pend_phase;
  t->pend_phase = 0;
  if (acked == RT_PH_STARTED) turn_emit(w, t, RT_TS_RUNNING, NULL);
  if (acked == RT_PH_TOOL_RECEIVED) t->tools_done++;
  if (acked == RT_PH_SETTLED) {
    turn_end(w, t, t->cancel ? RT_TS_CANCELLED : RT_TS_COMPLETE, 1,
             t->cancel ? "cancelled" : "complete");
    return;
  }
  if (t->cancel) {
    advance(w, t);
    return;
  }
  if (t->step == EX_LLM)
    wait_work(w, t, EX_LLM_MIN_US, EX_LLM_MAX_US, EX_LLM);
  else if (t->step == EX_RECEIVE)
    wait_work(w, t, EX_TOOL_MIN_US, EX_TOOL_MAX_US, EX_RECEIVE);
  else
    advance(w, t);
}

static void work_event(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  ex_turn *t = turn_at(w, arg);
  (void)s;
  if (!t) return;
  t->timer = 0;
  advance(w, t);
}

/* cancelTurn: the abort signal fires synchronously (the LLM or tool in
** flight stops); the slot is torn down only after the settled checkpoint
** is durable (ack_event → RT_TS_CANCELLED). */
static void cancel_event(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  ex_turn *t = NULL;
  (void)s;
  /* arg is the turn id, not a slot: the slot may hold a newer turn by now */
  for (int i = 0; exec_of(w) && i < exec_of(w)->n_turns && !t; i++)
    if (turn_at(w, (uint64_t)i) && exec_of(w)->turns[i].id == (int64_t)arg) t = &exec_of(w)->turns[i];
  if (!t || t->cancel || t->step == EX_SETTLE || t->pend_phase == RT_PH_SETTLED) return;
  t->cancel = 1;
  turn_emit(w, t, RT_TS_CANCEL, "cancelTurn");
  if (t->timer) { /* else a checkpoint awaits its ack: ack_event settles */
    sim_cancel(w->s, t->timer);
    t->timer = 0;
    advance(w, t);
  }
}

/* ---- requests ------------------------------------------------------------ */

void rt_exec_turn_default(rt_exec_turn_spec *t) {
  memset(t, 0, sizeof *t);
  t->tools = 1;
  t->adapter = -1;
}

int rt_exec_turn_at(rt_world *w, uint32_t a, const rt_exec_turn_spec *spec, int64_t at_us) {
  struct rt_exec *x = ex_get(w);
  if (!x || !spec || a >= w->n_actors || spec->tools < 0 || spec->tools > RT_EXEC_MAX_TOOLS ||
      spec->adapter < -1 || spec->adapter > RT_EXEC_BROKEN || spec->fail_phase < 0 ||
      spec->fail_phase > RT_PH_SETTLED || spec->dup_ppm > 1000000 || spec->cancel_after_us < 0)
    return -1;
  if (x->n_specs == x->cap_specs) {
    int nc = x->cap_specs ? 2 * x->cap_specs : 16;
    rt_exec_turn_spec *ns = realloc(x->specs, (size_t)nc * sizeof *ns);
    if (!ns) return -1;
    x->specs = ns;
    x->cap_specs = nc;
  }
  rt_exec_turn_spec *s = &x->specs[x->n_specs];
  *s = *spec;
  if (s->adapter < 0) s->adapter = (int)w->cfg.exec_adapter;
  if (s->adapter != RT_EXEC_MEMORY) x->durable = 1;
  rt_msg m = {0};
  m.kind = MSG_EXEC_TURN;
  m.entry = RT_ENTRY_FETCH;
  m.arg = x->n_specs++;
  return rt__deliver_at(w, a, &m, at_us);
}

/* A turn request reaches the started actor: the session manager opens the
** turn slot and fires `started`. */
static void rt__exec_request(rt_world *w, uint32_t a, const rt_msg *m) {
  struct rt_exec *x = ex_get(w);
  rt_mem *mem = RT_MEM(w, a);
  ex_turn *t = x ? turn_new(w) : NULL;
  if (!t || m->arg < 0 || m->arg >= x->n_specs) {
    rt__request_done(w, a, m, 0, "executor: out of memory");
    return;
  }
  t->id = rt__new_id(w);
  t->actor = a;
  t->life = mem->inc.incarnation;
  t->live = 1;
  t->spec = x->specs[m->arg];
  t->msg = *m;
  t->has_msg = rt__push_serving(&mem->inc, m) == 0;
  turn_emit(w, t, RT_TS_OPEN, NULL);
  if (t->spec.cancel_after_us > 0)
    sim_after(w->s, t->spec.cancel_after_us, mem->inc.dom, cancel_event, w, (uint64_t)t->id);
  fire(w, t, RT_PH_STARTED, EX_LLM);
}

/* ---- recovery at startup (the consumer's policy) ------------------------- */

static int count_phase(const rt_checkpoint *cp, int n, const char *phase) {
  int k = 0;
  for (int i = 0; i < n; i++) k += strcmp(cp[i].phase, phase) == 0;
  return k;
}

/* Where a restored turn goes on (seed 002 "Restoration contract": resume
** from the last llm-complete at the tool-dispatch step, replay from
** started, ...): the step after its last canonical checkpoint. */
static int resume_step(ex_turn *t, const rt_checkpoint *cp, int n) {
  int last = 0;
  for (int i = 0; i < n; i++) {
    int p = 0;
    for (int k = RT_PH_STARTED; k <= RT_PH_SETTLED; k++)
      if (strcmp(cp[i].phase, rt_exec_phase_name(k)) == 0) p = k;
    if (p) last = p;
    if (cp[i].timestamp_ms > t->last_ts) t->last_ts = cp[i].timestamp_ms;
  }
  t->iter = count_phase(cp, n, "llm-complete");
  t->tools_done = count_phase(cp, n, "tool-received");
  switch (last) {
    case RT_PH_STARTED: return EX_LLM;
    case RT_PH_LLM_COMPLETE:
      return t->iter == 1 && t->spec.tools > t->tools_done ? EX_DISPATCH : EX_SETTLE;
    case RT_PH_TOOL_DISPATCHED: return EX_RECEIVE;
    case RT_PH_TOOL_RECEIVED: return t->tools_done < t->spec.tools ? EX_DISPATCH : EX_LLM;
    default: return 0;
  }
}

/* Reads tools and adapter from the started state; 0, or -1 if absent. */
static int started_spec(const rt_checkpoint *cp, int n, rt_exec_turn_spec *s) {
  for (int i = 0; i < n; i++) {
    const char *p = strstr(cp[i].state, "\"tools\":"), *q = strstr(cp[i].state, "\"adapter\":\"");
    if (strcmp(cp[i].phase, "started") != 0 || !p || !q) continue;
    rt_exec_turn_default(s);
    s->tools = atoi(p + 8);
    s->adapter = strncmp(q + 11, "broken", 6) == 0 ? RT_EXEC_BROKEN : RT_EXEC_SQLITE;
    return 0;
  }
  return -1;
}

/* Restores one open turn and runs it on from its last checkpoint. */
static void resume_turn(rt_world *w, uint32_t a, int64_t id) {
  rt_checkpoint cp[EX_RESTORE_CAP];
  int n = restore_as(w, a, RT_EXEC_SQLITE, id, cp, EX_RESTORE_CAP, 1);
  ex_turn *t;
  rt_exec_turn_spec spec;
  if (n <= 0 || n > EX_RESTORE_CAP || started_spec(cp, n, &spec) || !(t = turn_new(w))) return;
  t->id = id;
  t->actor = a;
  t->life = RT_MEM(w, a)->inc.incarnation;
  t->live = 1;
  t->spec = spec;
  int step = resume_step(t, cp, n);
  if (!step) {
    t->live = 0;
    return;
  }
  turn_emit(w, t, RT_TS_RESUMED, cp[n - 1].phase); /* resumed after its last checkpoint */
  t->step = step;
  if (step == EX_LLM)
    wait_work(w, t, EX_LLM_MIN_US, EX_LLM_MAX_US, EX_LLM);
  else if (step == EX_RECEIVE)
    wait_work(w, t, EX_TOOL_MIN_US, EX_TOOL_MAX_US, EX_RECEIVE);
  else
    advance(w, t);
}

static void rt__exec_on_start(rt_world *w, uint32_t a) {
  int64_t ids[64];
  int n = 0;
  /* only worlds that used a SQL adapter, or whose files outlive a process */
  if (!(exec_of(w) && exec_of(w)->durable) && !(w->cfg.storage_files && ex_get(w))) return;
  sqlite3_stmt *st = ex_prep(w, a,
      "SELECT DISTINCT turn_id FROM beach_turn_checkpoints WHERE turn_id NOT IN"
      " (SELECT turn_id FROM beach_turn_checkpoints WHERE phase='settled') ORDER BY turn_id");
  if (!st) return;
  while (n < 64 && sqlite3_step(st) == SQLITE_ROW) ids[n++] = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  for (int i = 0; i < n && RT_MEM(w, a); i++) resume_turn(w, a, ids[i]);
}

/* ---- the extension ----------------------------------------------------------- */

/* After a successful startup: restore and resume the open turns. */
static void exec_startup_late(rt_world *w, uint32_t a, int ok) {
  if (ok) rt__exec_on_start(w, a);
}

static const int exec_kinds[] = {MSG_EXEC_TURN};

rt_agent_ext rt__exec_ext = {
    .name = "executor",
    .store = &rt__exec_store,
    .kinds = exec_kinds,
    .n_kinds = 1,
    .message = rt__exec_request,
    .startup_late = exec_startup_late,
    .world_free = rt__exec_free,
};
