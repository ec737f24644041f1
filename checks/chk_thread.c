/*
** chk_thread.c: the versioned thread store of seed 004 ("Persistence and
** Versioning"), checked over the trace alone:
**   no_lost_update        "Prevents silent lost updates under concurrent
**                         writers": an append commits only when its
**                         VersionPrecondition::Exact(version) names the
**                         committed head; a stale writer gets a conflict;
**   versions_contiguous   the store returns the committed next version:
**                         head + 1, never a repeat or a gap;
**   run_state_scoped      "State Scope Lifecycle": Run-scoped state is
**                         deleted by prepare_run, so when a run's first
**                         changeset commits, no Run-scoped path written by
**                         another run is left in the thread state;
**   toolcall_state_scoped __tool_call_scope.<call_id> is cleaned when the
**                         call resolves: once a changeset holding the call's
**                         tool result commits, its ToolCall path is gone.
** A thread is keyed by (actor, thread id). RT_EV_THREAD_APPEND opens an
** append, the SET / DELETE / MSG records after it are its delta, and
** RT_EV_THREAD_COMMIT closes it (committed version, or a conflict / failure
** that leaves the state alone). The committed state is replayed from the
** deltas. Each invariant reports at most once per thread.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk_reg.h"
#include "runtime/rt_events.h"

typedef struct ct_path {
  uint32_t path;            /* interned: equal content, equal id */
  int64_t scope, call, run; /* rt_thread_scope, tool call id, writer run */
  uint64_t idx;             /* the record that set it */
} ct_path;

typedef struct ct_op {
  int del;
  ct_path p;
} ct_op;

typedef struct ct_thread {
  uint32_t actor;
  int64_t id;
  int64_t head;             /* committed version (0: none) */
  uint64_t head_idx;
  ct_path *state;
  size_t n_state, cap_state;
  int open;                 /* an append is open */
  int64_t run, expected;
  uint64_t open_idx;
  ct_op *ops;
  size_t n_ops, cap_ops;
  int64_t *resolved;        /* tool calls whose result is in the open append */
  size_t n_res, cap_res;
  int64_t *runs;            /* runs that committed a changeset */
  size_t n_runs, cap_runs;
  unsigned reported;        /* bit per chk_invariant */
} ct_thread;

struct chk_thr {
  ct_thread *v;
  size_t n, cap;
  chk_map ix;
};

/* Grows *arr to hold one more element of size sz; 0 or -1. */
static int ct_grow(chk_set *c, void **arr, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return 0;
  size_t nc = *cap ? 2 * *cap : 8;
  void *na = realloc(*arr, nc * sz);
  if (!na) {
    chk__oom(c);
    return -1;
  }
  *arr = na;
  *cap = nc;
  return 0;
}

static ct_thread *ct_get(chk_set *c, struct chk_thr *x, uint32_t actor, int64_t id) {
  uint64_t k[4] = {actor, (uint64_t)id, 3, 0};
  uint32_t i;
  if (chk__map_get(&x->ix, k, &i)) return &x->v[i];
  if (ct_grow(c, (void **)&x->v, &x->cap, x->n, sizeof *x->v) ||
      chk__map_put(&x->ix, k, (uint32_t)x->n) != 0) {
    chk__oom(c);
    return NULL;
  }
  ct_thread *t = &x->v[x->n++];
  memset(t, 0, sizeof *t);
  t->actor = actor;
  t->id = id;
  t->head_idx = t->open_idx = CHK_NO_INDEX;
  return t;
}

static void *thread_make(chk_set *c) {
  (void)c;
  return calloc(1, sizeof(struct chk_thr));
}

static void thread_free(void *st) {
  struct chk_thr *x = st;
  if (!x) return;
  for (size_t i = 0; i < x->n; i++) {
    free(x->v[i].state);
    free(x->v[i].ops);
    free(x->v[i].resolved);
    free(x->v[i].runs);
  }
  free(x->v);
  chk__map_free(&x->ix);
  free(x);
}

static int ct_once(ct_thread *t, chk_invariant inv) {
  if (t->reported & (1u << inv)) return 0;
  t->reported |= 1u << inv;
  return 1;
}

static ct_path *ct_find(ct_thread *t, uint32_t path) {
  for (size_t i = 0; i < t->n_state; i++)
    if (t->state[i].path == path) return &t->state[i];
  return NULL;
}

/* Applies one patch of a committed changeset written by run. */
static void ct_apply(chk_set *c, ct_thread *t, const ct_op *op, int64_t run) {
  ct_path *p = ct_find(t, op->p.path);
  if (op->del) {
    if (p) *p = t->state[--t->n_state];
    return;
  }
  if (!p) {
    if (ct_grow(c, (void **)&t->state, &t->cap_state, t->n_state, sizeof *t->state)) return;
    p = &t->state[t->n_state++];
  }
  *p = op->p;
  p->run = run;
}

static int ct_first_commit(chk_set *c, ct_thread *t, int64_t run) {
  for (size_t i = 0; i < t->n_runs; i++)
    if (t->runs[i] == run) return 0;
  if (!ct_grow(c, (void **)&t->runs, &t->cap_runs, t->n_runs, sizeof *t->runs))
    t->runs[t->n_runs++] = run;
  return 1;
}

/* ---- the checks at a committed append ------------------------------------ */

static void ct_versions(chk_set *c, ct_thread *t, const sim_rec *r, uint64_t idx) {
  char ts[32];
  uint64_t ch[3] = {t->head_idx, t->open_idx, idx};
  if (t->expected != t->head && ct_once(t, CHK_NO_LOST_UPDATE))
    chk__violate(c, CHK_NO_LOST_UPDATE, r->actor, r->t_us, t->id, idx, ch, 3,
                 "thread %" PRId64 ": run %" PRId64 " appended with Exact(%" PRId64 ") and "
                 "committed version %" PRId64 " at t=%ss, but version %" PRId64 " was already "
                 "committed: a stale writer silently overwrote instead of getting a conflict",
                 t->id, t->run, t->expected, r->b, chk__secs(ts, sizeof ts, r->t_us), t->head);
  if (r->b != t->head + 1 && ct_once(t, CHK_VERSIONS_CONTIGUOUS))
    chk__violate(c, CHK_VERSIONS_CONTIGUOUS, r->actor, r->t_us, t->id, idx, ch, 3,
                 "thread %" PRId64 ": version %" PRId64 " committed after version %" PRId64
                 " (expected %" PRId64 ")%s", t->id, r->b, t->head, t->head + 1,
                 r->b == t->head ? ": the same version committed twice" : "");
}

static void ct_run_scope(chk_set *c, ct_thread *t, const sim_rec *r, uint64_t idx) {
  for (size_t i = 0; i < t->n_state; i++) {
    const ct_path *p = &t->state[i];
    if (p->scope != RT_SCOPE_RUN || p->run == r->c || !ct_once(t, CHK_RUN_STATE_SCOPED)) continue;
    uint64_t ch[3] = {p->idx, t->open_idx, idx};
    chk__violate(c, CHK_RUN_STATE_SCOPED, r->actor, r->t_us, t->id, idx, ch, 3,
                 "thread %" PRId64 ": run %" PRId64 " started (version %" PRId64 ") with "
                 "Run-scoped \"%s\" of run %" PRId64 " still in the thread state: prepare_run "
                 "must delete Run-scoped paths", t->id, r->c, r->b,
                 sim_trace_str(chk__trace(c), p->path), p->run);
    return;
  }
}

static void ct_call_scope(chk_set *c, ct_thread *t, const sim_rec *r, uint64_t idx) {
  for (size_t k = 0; k < t->n_res; k++)
    for (size_t i = 0; i < t->n_state; i++) {
      const ct_path *p = &t->state[i];
      if (p->scope != RT_SCOPE_TOOL_CALL || p->call != t->resolved[k] ||
          !ct_once(t, CHK_TOOLCALL_STATE_SCOPED))
        continue;
      uint64_t ch[3] = {p->idx, t->open_idx, idx};
      chk__violate(c, CHK_TOOLCALL_STATE_SCOPED, r->actor, r->t_us, t->id, idx, ch, 3,
                   "thread %" PRId64 ": tool call %" PRId64 " resolved at version %" PRId64
                   " but \"%s\" is still in the thread state: ToolCall-scoped state is "
                   "cleaned when the call resolves", t->id, p->call, r->b,
                   sim_trace_str(chk__trace(c), p->path));
      return;
    }
}

static void ct_commit(chk_set *c, ct_thread *t, const sim_rec *r, uint64_t idx) {
  if (!t->open) return;
  t->open = 0;
  if (r->b <= 0) return; /* conflict or failure: nothing committed */
  ct_versions(c, t, r, idx);
  for (size_t i = 0; i < t->n_ops; i++) ct_apply(c, t, &t->ops[i], r->c);
  if (ct_first_commit(c, t, r->c)) ct_run_scope(c, t, r, idx);
  ct_call_scope(c, t, r, idx);
  t->head = r->b;
  t->head_idx = idx;
}

static void ct_patch(chk_set *c, ct_thread *t, const sim_rec *r, uint64_t idx) {
  if (!t->open || ct_grow(c, (void **)&t->ops, &t->cap_ops, t->n_ops, sizeof *t->ops)) return;
  ct_op *op = &t->ops[t->n_ops++];
  op->del = r->kind == RT_EV_THREAD_DELETE;
  op->p.path = r->s;
  op->p.scope = r->b;
  op->p.call = r->c;
  op->p.run = 0;
  op->p.idx = idx;
}

/* The kinds thread_record reads (chk_class.record_kind). */
static int thread_kind(uint32_t kind) {
  return kind >= RT_EV_THREAD_LOAD && kind <= RT_EV_THREAD_RUN;
}

static void thread_record(chk_set *c, void *st, const sim_rec *r, uint64_t idx) {
  ct_thread *t;
  if (r->kind < RT_EV_THREAD_LOAD || r->kind > RT_EV_THREAD_RUN) return;
  if (!(t = ct_get(c, st, r->actor, r->a))) return;
  switch (r->kind) {
    case RT_EV_THREAD_APPEND:
      t->open = 1;
      t->run = r->b;
      t->expected = r->c;
      t->open_idx = idx;
      t->n_ops = t->n_res = 0;
      break;
    case RT_EV_THREAD_SET:
    case RT_EV_THREAD_DELETE: ct_patch(c, t, r, idx); break;
    case RT_EV_THREAD_MSG:
      if (t->open && r->b == RT_ROLE_TOOL &&
          !ct_grow(c, (void **)&t->resolved, &t->cap_res, t->n_res, sizeof *t->resolved))
        t->resolved[t->n_res++] = r->c;
      break;
    case RT_EV_THREAD_COMMIT: ct_commit(c, t, r, idx); break;
    default: break;
  }
}

const chk_class chk__thread_class = {
    .name = "thread", .make = thread_make, .on_record = thread_record,
    .record_kind = thread_kind, .free = thread_free};
