/*
** chk_executor.c: checkpoint_contract, the DurableExecutor contract of
** seed 002 ("Durable Execution"), checked over the trace alone.
**
** A turn is keyed by (actor, turn id). Rules (docs/invariants.md):
**   idempotency   a restore returns every acknowledged (phase, timestamp)
**                 of the turn exactly once ("Idempotency contract": never
**                 deduplicated on (turnId, phase) alone, never stored twice);
**                 the in-memory adapter's acknowledgements die with its
**                 actor's memory (it promises no persistence across restart);
**   monotonic     a new call's timestamp is above every earlier one of the
**                 turn; a call repeating an earlier (phase, timestamp) is a
**                 retry, which is what idempotency absorbs;
**   chronological restore returns timestamps in increasing order;
**   failed started  the turn never runs: no later checkpoint, no running,
**                 resumed, complete or cancelled record ("Pitfalls");
**   failed checkpoint aborts the turn: nothing more of it in that actor
**                 life ("Wiring EventRouter": failures abort the turn);
**   cancellation  the slot is torn down (RT_TS_CANCELLED) only after a
**                 durable settled acknowledged since cancelTurn
**                 ("Cancellation interaction").
** Each rule reports at most once per turn.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk_reg.h"
#include "runtime/rt_events.h"

enum { R_MISSING = 1, R_MONO = 2, R_ORDER = 4, R_DUP = 8, R_STARTED = 16, R_ABORT = 32,
       R_CANCEL = 64 };

typedef struct ce_tuple {
  int64_t phase, ts;
  uint32_t name;            /* phase name (interned) */
  uint64_t idx;             /* record that made it known */
  int64_t t_us;
} ce_tuple;

typedef struct ce_list {
  ce_tuple *v;
  size_t n, cap;
} ce_list;

typedef struct ce_turn {
  uint32_t actor;
  int64_t id;
  int64_t adapter;          /* rt_exec_adapter, -1 unknown */
  ce_list acked, called, restored;
  int64_t max_ts;
  uint64_t max_idx;
  int has_pend;
  ce_tuple pend;            /* the last call, awaiting its ack */
  uint32_t fail_life;       /* life in which a checkpoint failed (0 none) */
  uint64_t fail_idx;
  int started_failed;
  uint64_t started_idx;
  uint32_t cancel_life;
  uint64_t cancel_idx;
  uint32_t settled_life;    /* settled acknowledged (life, record) */
  uint64_t settled_idx;
  int64_t r_left;           /* RESTORED records still expected */
  uint64_t r_idx;
  unsigned reported;
} ce_turn;

struct chk_exec {
  ce_turn *turns;
  size_t n, cap;
  chk_map ix;
};

extern const chk_class chk__exec_class;

static ce_turn *ce_get(chk_set *c, uint32_t actor, int64_t id) {
  struct chk_exec *x = chk_state(c, &chk__exec_class);
  uint64_t k[4] = {actor, (uint64_t)id, 2, 0};
  uint32_t i;
  if (chk__map_get(&x->ix, k, &i)) return &x->turns[i];
  if (x->n == x->cap) {
    size_t nc = x->cap ? 2 * x->cap : 16;
    ce_turn *nt = realloc(x->turns, nc * sizeof *nt);
    if (!nt) {
      chk__oom(c);
      return NULL;
    }
    x->turns = nt;
    x->cap = nc;
  }
  if (chk__map_put(&x->ix, k, (uint32_t)x->n) != 0) {
    chk__oom(c);
    return NULL;
  }
  ce_turn *t = &x->turns[x->n++];
  memset(t, 0, sizeof *t);
  t->actor = actor;
  t->id = id;
  t->adapter = -1;
  t->max_ts = INT64_MIN;
  return t;
}

static void *exec_make(chk_set *c) {
  (void)c;
  return calloc(1, sizeof(struct chk_exec));
}

static void exec_free(void *st) {
  struct chk_exec *x = st;
  if (!x) return;
  for (size_t i = 0; i < x->n; i++) {
    free(x->turns[i].acked.v);
    free(x->turns[i].called.v);
    free(x->turns[i].restored.v);
  }
  free(x->turns);
  chk__map_free(&x->ix);
  free(x);
}

static const ce_tuple *ce_find(const ce_list *l, int64_t phase, int64_t ts) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].phase == phase && l->v[i].ts == ts) return &l->v[i];
  return NULL;
}

static void ce_add(chk_set *c, ce_list *l, const ce_tuple *tu) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 8;
    ce_tuple *nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) {
      chk__oom(c);
      return;
    }
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = *tu;
}

static uint32_t ce_life(chk_set *c, uint32_t actor) { return chk__actor_life(c, actor); }

static const char *ce_name(const chk_set *c, const ce_tuple *tu) {
  return sim_trace_str(chk__trace(c), tu->name);
}

/* Reports rule `bit` of turn t once. */
static int ce_once(ce_turn *t, unsigned bit) {
  if (t->reported & bit) return 0;
  t->reported |= bit;
  return 1;
}

/* ---- calls and acknowledgements ------------------------------------------ */

/* A record of the turn's progress after a failure (started or any). */
static void ce_after_failure(chk_set *c, ce_turn *t, const sim_rec *r, uint64_t idx,
                             const char *what) {
  char ts[32];
  if (t->started_failed && ce_once(t, R_STARTED)) {
    uint64_t ch[2] = {t->started_idx, idx};
    chk__violate(c, CHK_CHECKPOINT_CONTRACT, r->actor, r->t_us, t->id, idx, ch, 2,
                 "turn %" PRId64 " ran on (%s at t=%ss) although its started checkpoint "
                 "failed: a turn whose started checkpoint cannot be persisted does not run",
                 t->id, what, chk__secs(ts, sizeof ts, r->t_us));
  } else if (!t->started_failed && t->fail_life && t->fail_life == ce_life(c, r->actor) &&
             ce_once(t, R_ABORT)) {
    uint64_t ch[2] = {t->fail_idx, idx};
    chk__violate(c, CHK_CHECKPOINT_CONTRACT, r->actor, r->t_us, t->id, idx, ch, 2,
                 "turn %" PRId64 " went on (%s at t=%ss) after a failed checkpoint: a "
                 "failed checkpoint() aborts the turn",
                 t->id, what, chk__secs(ts, sizeof ts, r->t_us));
  }
}

static void ce_call(chk_set *c, ce_turn *t, const sim_rec *r, uint64_t idx) {
  ce_tuple tu = {r->b, r->c, r->s, idx, r->t_us};
  char ph[96];
  snprintf(ph, sizeof ph, "a %s checkpoint", sim_trace_str(chk__trace(c), r->s));
  ce_after_failure(c, t, r, idx, ph);
  t->pend = tu;
  t->has_pend = 1;
  if (ce_find(&t->called, tu.phase, tu.ts)) return; /* a retry of the same call */
  if (tu.ts <= t->max_ts && ce_once(t, R_MONO)) {
    uint64_t ch[2] = {t->max_idx, idx};
    chk__violate(c, CHK_CHECKPOINT_CONTRACT, r->actor, r->t_us, t->id, idx, ch, 2,
                 "turn %" PRId64 ": checkpoint %s has timestamp %" PRId64 " ms, not after "
                 "the turn's earlier %" PRId64 " ms: timestamps must be strictly monotonic "
                 "per turn", t->id, sim_trace_str(chk__trace(c), r->s), tu.ts, t->max_ts);
  }
  if (tu.ts > t->max_ts) {
    t->max_ts = tu.ts;
    t->max_idx = idx;
  }
  ce_add(c, &t->called, &tu);
}

static void ce_ack(chk_set *c, ce_turn *t, const sim_rec *r, uint64_t idx) {
  uint32_t life = ce_life(c, r->actor);
  if (!r->b) {
    if (!t->fail_life || t->fail_life != life) t->fail_idx = idx;
    t->fail_life = life;
    if (r->c == RT_PH_STARTED && !t->started_failed) {
      t->started_failed = 1;
      t->started_idx = idx;
    }
    t->has_pend = 0;
    return;
  }
  if (!t->has_pend) return;
  t->has_pend = 0;
  t->pend.idx = idx;
  t->pend.t_us = r->t_us;
  if (!ce_find(&t->acked, t->pend.phase, t->pend.ts)) ce_add(c, &t->acked, &t->pend);
  if (t->pend.phase == RT_PH_SETTLED) {
    t->settled_life = life;
    t->settled_idx = idx;
  }
}

/* ---- turn lifecycle -------------------------------------------------------- */

static void ce_state(chk_set *c, ce_turn *t, const sim_rec *r, uint64_t idx) {
  uint32_t life = ce_life(c, r->actor);
  char ts[32];
  t->adapter = r->c;
  switch (r->b) {
    case RT_TS_RUNNING: ce_after_failure(c, t, r, idx, "running"); break;
    case RT_TS_RESUMED: ce_after_failure(c, t, r, idx, "resumed"); break;
    case RT_TS_COMPLETE: ce_after_failure(c, t, r, idx, "complete"); break;
    case RT_TS_CANCEL:
      t->cancel_life = life;
      t->cancel_idx = idx;
      break;
    case RT_TS_CANCELLED:
      ce_after_failure(c, t, r, idx, "cancelled");
      if (t->cancel_life == life && t->settled_life == life && t->settled_idx > t->cancel_idx)
        break;
      if (ce_once(t, R_CANCEL)) {
        uint64_t ch[2] = {t->cancel_idx, idx};
        chk__violate(c, CHK_CHECKPOINT_CONTRACT, r->actor, r->t_us, t->id, idx, ch, 2,
                     "turn %" PRId64 " was torn down as cancelled at t=%ss before a durable "
                     "settled checkpoint: cancelTurn awaits the settled checkpoint",
                     t->id, chk__secs(ts, sizeof ts, r->t_us));
      }
      break;
    default: break;
  }
}

/* ---- restore ---------------------------------------------------------------- */

/* After the last RESTORED record: every acknowledged checkpoint is there. */
static void ce_restore_end(chk_set *c, ce_turn *t, const sim_rec *r, uint64_t idx) {
  const ce_tuple *miss = NULL, *same = NULL;
  size_t n_miss = 0;
  char ts[32];
  for (size_t i = 0; i < t->acked.n; i++) {
    const ce_tuple *a = &t->acked.v[i];
    if (ce_find(&t->restored, a->phase, a->ts)) continue;
    n_miss++;
    if (!miss) miss = a;
  }
  if (!miss || !ce_once(t, R_MISSING)) return;
  for (size_t i = 0; i < t->restored.n && !same; i++)
    if (t->restored.v[i].phase == miss->phase) same = &t->restored.v[i];
  uint64_t ch[3] = {miss->idx, same ? same->idx : CHK_NO_INDEX, idx};
  chk__violate(c, CHK_CHECKPOINT_CONTRACT, r->actor, r->t_us, t->id, idx, ch, 3,
               "restore of turn %" PRId64 " returned %zu checkpoints but %zu acknowledged ones "
               "are missing, first %s@%" PRId64 "ms (durable at t=%ss)%s", t->id,
               t->restored.n, n_miss, ce_name(c, miss), miss->ts,
               chk__secs(ts, sizeof ts, miss->t_us),
               same ? ": another checkpoint of that phase is there, the adapter deduplicated "
                      "on (turnId, phase) instead of (turnId, phase, timestamp)" : "");
}

static void ce_restored(chk_set *c, ce_turn *t, const sim_rec *r, uint64_t idx) {
  ce_tuple tu = {r->b, r->c, r->s, idx, r->t_us};
  const ce_tuple *prev = t->restored.n ? &t->restored.v[t->restored.n - 1] : NULL;
  const ce_tuple *dup = ce_find(&t->restored, tu.phase, tu.ts);
  if (t->r_left <= 0) return;
  if (dup && ce_once(t, R_DUP)) {
    uint64_t ch[2] = {dup->idx, idx};
    chk__violate(c, CHK_CHECKPOINT_CONTRACT, r->actor, r->t_us, t->id, idx, ch, 2,
                 "restore of turn %" PRId64 " returned %s@%" PRId64 "ms twice: two calls "
                 "with identical (turnId, phase, timestamp) must store one checkpoint",
                 t->id, ce_name(c, &tu), tu.ts);
  } else if (prev && tu.ts < prev->ts && ce_once(t, R_ORDER)) {
    uint64_t ch[2] = {prev->idx, idx};
    chk__violate(c, CHK_CHECKPOINT_CONTRACT, r->actor, r->t_us, t->id, idx, ch, 2,
                 "restore of turn %" PRId64 " is not chronological: %s@%" PRId64 "ms came "
                 "after %s@%" PRId64 "ms (restore returns oldest first)",
                 t->id, ce_name(c, &tu), tu.ts, ce_name(c, prev), prev->ts);
  }
  ce_add(c, &t->restored, &tu);
  if (--t->r_left == 0) ce_restore_end(c, t, r, idx);
}

static void ce_restore(chk_set *c, ce_turn *t, const sim_rec *r, uint64_t idx) {
  t->restored.n = 0;
  t->r_left = r->b;
  t->r_idx = idx;
  if (r->b == 0) ce_restore_end(c, t, r, idx);
}

/* The in-memory adapter's checkpoints die with its actor's memory. */
static void ce_death(struct chk_exec *x, uint32_t actor) {
  for (size_t i = 0; x && i < x->n; i++)
    if (x->turns[i].actor == actor && x->turns[i].adapter == RT_EXEC_MEMORY) {
      x->turns[i].acked.n = 0;
      x->turns[i].has_pend = 0;
    }
}

/* The kinds exec_record reads (chk_class.record_kind). */
static int exec_kind(uint32_t kind) {
  return kind == RT_EV_ACTOR_DEATH || (kind >= RT_EV_EXEC_TURN && kind <= RT_EV_EXEC_RESTORED);
}

static void exec_record(chk_set *c, void *st, const sim_rec *r, uint64_t idx) {
  ce_turn *t;
  if (r->kind == RT_EV_ACTOR_DEATH) {
    ce_death(st, r->actor);
    return;
  }
  if (r->kind < RT_EV_EXEC_TURN || r->kind > RT_EV_EXEC_RESTORED) return;
  if (!(t = ce_get(c, r->actor, r->a))) return;
  switch (r->kind) {
    case RT_EV_EXEC_TURN: ce_state(c, t, r, idx); break;
    case RT_EV_EXEC_CHECKPOINT: ce_call(c, t, r, idx); break;
    case RT_EV_EXEC_ACK: ce_ack(c, t, r, idx); break;
    case RT_EV_EXEC_RESTORE: ce_restore(c, t, r, idx); break;
    case RT_EV_EXEC_RESTORED: ce_restored(c, t, r, idx); break;
    default: break;
  }
}

const chk_class chk__exec_class = {
    .name = "executor", .make = exec_make, .on_record = exec_record,
    .record_kind = exec_kind, .free = exec_free};
