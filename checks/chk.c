/*
** chk.c: the checker set: parameters, names, the observer, per-actor state,
** the fiber / tool-run / effect tables, transactions and violations.
**
** Transactions: RT_EV_WRITE and RT_EV_STASH records wait on their actor's
** pending list until RT_EV_TXN_COMMIT of their txn id on the same actor
** applies them, in record order; RT_EV_TXN_ROLLBACK drops them. Items of a
** txn that never resolves stay pending (txn ids are unique in a run, so a
** late commit is still applied correctly).
*/
#include "checks/chk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk_internal.h"

static const char *const chk_names[CHK_INVARIANT_COUNT] = {
  [CHK_RECOVERY_FINISHES] = "recovery_finishes",
  [CHK_NO_WEDGE] = "no_wedge",
  [CHK_STARTUP_SNAPSHOT] = "startup_snapshot",
  [CHK_NO_DOUBLE_RECOVERY] = "no_double_recovery",
  [CHK_STASH_DURABLE] = "stash_durable",
  [CHK_KEEPALIVE_HOLDS] = "keepalive_holds",
  [CHK_EFFECTS_ONCE] = "effects_once",
  [CHK_TOOLRUN_TERMINAL_IMMUTABLE] = "toolrun_terminal_immutable",
  [CHK_CHECKPOINT_CONTRACT] = "checkpoint_contract",
  [CHK_NO_LOST_UPDATE] = "no_lost_update",
  [CHK_VERSIONS_CONTIGUOUS] = "versions_contiguous",
  [CHK_RUN_STATE_SCOPED] = "run_state_scoped",
  [CHK_TOOLCALL_STATE_SCOPED] = "toolcall_state_scoped",
  [CHK_CHAT_NO_LOST_USER_MESSAGE] = "chat_no_lost_user_message",
  [CHK_CHAT_NO_DUPLICATE_ASSISTANT] = "chat_no_duplicate_assistant",
  [CHK_CHAT_CONTINUATION_APPENDS] = "chat_continuation_appends",
  [CHK_CHAT_NO_REGENERATION] = "chat_no_regeneration",
};

const char *chk_invariant_name(chk_invariant inv) {
  if ((int)inv < 0 || inv >= CHK_INVARIANT_COUNT) return "?";
  return chk_names[inv];
}

int chk_invariant_parse(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < CHK_INVARIANT_COUNT; i++)
    if (strcmp(chk_names[i], name) == 0) return i;
  return -1;
}

void chk_params_default(chk_params *p) {
  memset(p, 0, sizeof *p);
  p->wedge_k = 3;
  p->serve_bound_us = 5 * 60 * 1000000LL;
  p->recovery_bound_us = 5 * 60 * 1000000LL;
  p->keepalive_idle_us = 10 * 60 * 1000000LL;
  p->enabled_mask = (1u << CHK_INVARIANT_COUNT) - 1;
}

/* ---- look-up table ------------------------------------------------------ */

static uint64_t chk_map_hash(const uint64_t k[4]) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < 4; i++) {
    h ^= k[i] + 0x7f4a7c159e3779b9ULL + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  return h;
}

static size_t chk_map_slot(const chk_map *m, const uint64_t k[4]) {
  size_t j = (size_t)chk_map_hash(k) & (m->cap - 1);
  while (m->vals[j] && memcmp(&m->keys[4 * j], k, 4 * sizeof(uint64_t)) != 0)
    j = (j + 1) & (m->cap - 1);
  return j;
}

int chk__map_get(const chk_map *m, const uint64_t k[4], uint32_t *out) {
  if (!m->cap) return 0;
  size_t j = chk_map_slot(m, k);
  if (!m->vals[j]) return 0;
  *out = m->vals[j] - 1;
  return 1;
}

static int chk_map_grow(chk_map *m) {
  size_t nc = m->cap ? m->cap * 2 : 64;
  chk_map nm = {calloc(nc * 4, sizeof(uint64_t)), calloc(nc, sizeof(uint32_t)),
                nc, 0};
  if (!nm.keys || !nm.vals) {
    free(nm.keys);
    free(nm.vals);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->vals[i]) continue;
    size_t j = chk_map_slot(&nm, &m->keys[4 * i]);
    memcpy(&nm.keys[4 * j], &m->keys[4 * i], 4 * sizeof(uint64_t));
    nm.vals[j] = m->vals[i];
    nm.n++;
  }
  chk__map_free(m);
  *m = nm;
  return 0;
}

int chk__map_put(chk_map *m, const uint64_t k[4], uint32_t v) {
  if (2 * (m->n + 1) > m->cap && chk_map_grow(m) != 0) return -1;
  size_t j = chk_map_slot(m, k);
  if (!m->vals[j]) {
    memcpy(&m->keys[4 * j], k, 4 * sizeof(uint64_t));
    m->n++;
  }
  m->vals[j] = v + 1;
  return 0;
}

void chk__map_free(chk_map *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* Grows *arr (elements of size sz) to hold at least need; 0 or -1. */
static int chk_grow(void **arr, size_t *cap, size_t need, size_t sz) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 8;
  while (nc < need) nc *= 2;
  void *na = realloc(*arr, nc * sz);
  if (!na) return -1;
  memset((char *)na + *cap * sz, 0, (nc - *cap) * sz);
  *arr = na;
  *cap = nc;
  return 0;
}

/* ---- tables ------------------------------------------------------------- */

static void chk_actor_init(chk_actor *a) {
  a->last_death_idx = a->arrive_idx = a->ok_idx = CHK_NO_INDEX;
  a->snap_first_idx = a->rec_begin_idx = a->onstart_idx = CHK_NO_INDEX;
  a->acquire_idx = a->release_idx = a->fire_first_idx = CHK_NO_INDEX;
  for (int i = 0; i < 4; i++) a->fire_last_idx[i] = CHK_NO_INDEX;
}

chk_actor *chk__actor(chk_set *c, uint32_t actor) {
  if (actor == RT_NO_ACTOR || actor >= CHK_MAX_ACTORS) return NULL;
  if (actor >= c->n_actors) {
    uint32_t nc = c->n_actors ? c->n_actors : 4;
    while (nc <= actor) nc *= 2;
    chk_actor *na = realloc(c->actors, nc * sizeof *na);
    if (!na) {
      c->oom = 1;
      return NULL;
    }
    memset(na + c->n_actors, 0, (nc - c->n_actors) * sizeof *na);
    for (uint32_t i = c->n_actors; i < nc; i++) chk_actor_init(&na[i]);
    c->actors = na;
    c->n_actors = nc;
  }
  return &c->actors[actor];
}

chk_fiber *chk__fiber(chk_set *c, uint32_t actor, int64_t id, int create) {
  uint64_t k[4] = {actor, (uint64_t)id, 0, 0};
  uint32_t i;
  if (chk__map_get(&c->fiber_ix, k, &i)) return &c->fibers[i];
  if (!create) return NULL;
  if (c->n_fibers >= UINT32_MAX - 1 ||
      chk_grow((void **)&c->fibers, &c->cap_fibers, c->n_fibers + 1,
               sizeof *c->fibers) != 0 ||
      chk__map_put(&c->fiber_ix, k, (uint32_t)c->n_fibers) != 0) {
    c->oom = 1;
    return NULL;
  }
  chk_fiber *f = &c->fibers[c->n_fibers++];
  memset(f, 0, sizeof *f);
  f->actor = actor;
  f->id = id;
  f->root = id;
  f->stash_val = -1;
  f->stash_idx = f->stash_commit_idx = f->last_stash_idx = CHK_NO_INDEX;
  f->insert_idx = f->hand_idx = f->threw_idx = CHK_NO_INDEX;
  return f;
}

chk_run *chk__run(chk_set *c, uint32_t actor, int64_t id, int create) {
  uint64_t k[4] = {actor, (uint64_t)id, 1, 0};
  uint32_t i;
  if (chk__map_get(&c->run_ix, k, &i)) return &c->runs[i];
  if (!create) return NULL;
  if (c->n_runs >= UINT32_MAX - 1 ||
      chk_grow((void **)&c->runs, &c->cap_runs, c->n_runs + 1,
               sizeof *c->runs) != 0 ||
      chk__map_put(&c->run_ix, k, (uint32_t)c->n_runs) != 0) {
    c->oom = 1;
    return NULL;
  }
  chk_run *run = &c->runs[c->n_runs++];
  memset(run, 0, sizeof *run);
  run->actor = actor;
  run->id = id;
  run->committed_idx = run->uw_commit_idx = CHK_NO_INDEX;
  run->insert_idx = run->terminal_idx = CHK_NO_INDEX;
  return run;
}

void chk__watch(chk_set *c, chk_actor *a, int is_run, uint32_t i) {
  int *flag = is_run ? &c->runs[i].watched : &c->fibers[i].watched;
  if (*flag) return;
  if (chk_grow((void **)&a->watch, &a->cap_watch, a->n_watch + 1,
               sizeof *a->watch) != 0) {
    c->oom = 1;
    return;
  }
  a->watch[a->n_watch].is_run = is_run;
  a->watch[a->n_watch].i = i;
  a->n_watch++;
  *flag = 1;
}

/* ---- formatting --------------------------------------------------------- */

const char *chk__secs(char *buf, size_t n, int64_t t_us) {
  const char *sign = t_us < 0 ? "-" : "";
  uint64_t u = t_us < 0 ? (uint64_t)0 - (uint64_t)t_us : (uint64_t)t_us;
  snprintf(buf, n, "%s%llu.%03llu", sign, (unsigned long long)(u / 1000000),
           (unsigned long long)(u % 1000000 / 1000));
  return buf;
}

const char *chk__dur(char *buf, size_t n, int64_t d_us) {
  if (d_us < 0) d_us = 0;
  uint64_t u = (uint64_t)d_us;
  if (u % 1000000 != 0) {
    char t[32];
    snprintf(buf, n, "%ss", chk__secs(t, sizeof t, d_us));
    return buf;
  }
  if (u < 60000000) {
    snprintf(buf, n, "%llus", (unsigned long long)(u / 1000000));
    return buf;
  }
  uint64_t s = u / 1000000, h = s / 3600, m = s % 3600 / 60, sec = s % 60;
  char *p = buf;
  size_t left = n;
  int w;
  buf[0] = 0;
  if (h) {
    w = snprintf(p, left, "%lluh", (unsigned long long)h);
    if (w < 0 || (size_t)w >= left) return buf;
    p += w, left -= (size_t)w;
  }
  if (m) {
    w = snprintf(p, left, "%llum", (unsigned long long)m);
    if (w < 0 || (size_t)w >= left) return buf;
    p += w, left -= (size_t)w;
  }
  if (sec) snprintf(p, left, "%llus", (unsigned long long)sec);
  return buf;
}

/* ---- violations --------------------------------------------------------- */

static int chk_cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

void chk__violate(chk_set *c, chk_invariant inv, uint32_t actor, int64_t t_us,
                  int64_t subject, uint64_t at_index, const uint64_t *chain,
                  int n, const char *fmt, ...) {
  if (!(c->p.enabled_mask & (1u << inv))) return;
  if (chk_grow((void **)&c->v, &c->cap_v, c->n_v + 1, sizeof *c->v) != 0) {
    c->oom = 1;
    return;
  }
  chk_violation *v = &c->v[c->n_v];
  memset(v, 0, sizeof *v);
  v->inv = inv;
  v->actor = actor;
  v->t_us = t_us;
  v->subject = subject;
  v->at_index = at_index;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->msg, sizeof v->msg, fmt, ap);
  va_end(ap);
  /* sort, drop unknown and duplicate indices */
  uint64_t tmp[4 * CHK_MAX_CHAIN];
  int m = 0;
  for (int i = 0; i < n && m < 4 * CHK_MAX_CHAIN; i++)
    if (chain[i] != CHK_NO_INDEX) tmp[m++] = chain[i];
  qsort(tmp, (size_t)m, sizeof tmp[0], chk_cmp_u64);
  int u = 0;
  for (int i = 0; i < m; i++)
    if (u == 0 || tmp[u - 1] != tmp[i]) tmp[u++] = tmp[i];
  if (u > CHK_MAX_CHAIN) {  /* keep the first and the latest ones */
    memmove(&tmp[1], &tmp[u - (CHK_MAX_CHAIN - 1)],
            (CHK_MAX_CHAIN - 1) * sizeof tmp[0]);
    u = CHK_MAX_CHAIN;
  }
  memcpy(v->chain, tmp, (size_t)u * sizeof tmp[0]);
  v->n_chain = u;
  c->n_v++;
  if (c->on_violation) c->on_violation(c->on_violation_ctx, v);
}

/* ---- transactions ------------------------------------------------------- */

static void chk_pend_push(chk_set *c, chk_actor *a, const sim_rec *r,
                          uint64_t idx) {
  if (chk_grow((void **)&a->pend, &a->cap_pend, a->n_pend + 1,
               sizeof *a->pend) != 0) {
    c->oom = 1;
    return;
  }
  chk_pending *pd = &a->pend[a->n_pend++];
  pd->is_stash = r->kind == RT_EV_STASH;
  pd->txn = r->c;
  pd->idx = idx;
  if (pd->is_stash) {
    pd->op = RT_W_STASH;
    pd->key = r->a;
    pd->val = r->b;
  } else {
    pd->op = (int)r->a;
    pd->key = r->b;
    pd->val = 0;
  }
}

/* Commits (commit = 1) or rolls back the pending items of txn r->a. */
static void chk_txn_end(chk_set *c, uint32_t actor, const sim_rec *r,
                        uint64_t idx, int commit) {
  chk_actor *a = chk__actor(c, actor);
  if (!a) return;
  int writes = 0;
  size_t keep = 0;
  for (size_t i = 0; i < a->n_pend; i++) {
    chk_pending pd = a->pend[i];
    if (pd.txn != r->a) {
      a->pend[keep++] = pd;
      continue;
    }
    if (!pd.is_stash) writes++;
    if (commit) {
      chk__fiber_commit(c, actor, &pd, r, idx);
      chk__toolrun_commit(c, actor, &pd, r, idx);
    } else {
      chk__toolrun_rollback(c, actor, &pd);
    }
    a = &c->actors[actor];  /* handlers may grow the actor array */
  }
  a->n_pend = keep;
  if (commit && (writes > 0 || r->b > 0)) chk__actor_progress(c, actor);
}

/* ---- incarnations ------------------------------------------------------- */

static void chk_wake(chk_set *c, uint32_t actor, const sim_rec *r,
                     uint64_t idx) {
  chk_actor *a = chk__actor(c, actor);
  if (!a) return;
  if (a->alive && a->n_lives) a->lives[a->n_lives - 1].death_t = r->t_us;
  if (chk_grow((void **)&a->lives, &a->cap_lives, a->n_lives + 1,
               sizeof *a->lives) != 0) {
    c->oom = 1;
    return;
  }
  a->lives[a->n_lives].wake_t = r->t_us;
  a->lives[a->n_lives].death_t = INT64_MAX;
  a->lives[a->n_lives].wake_idx = idx;
  a->n_lives++;
  a->alive = 1;
  a->life++;
}

static void chk_death(chk_set *c, uint32_t actor, const sim_rec *r,
                      uint64_t idx) {
  chk_actor *a = chk__actor(c, actor);
  if (!a) return;
  if (a->alive && a->n_lives) a->lives[a->n_lives - 1].death_t = r->t_us;
  a->alive = 0;
  a->last_death_idx = idx;
}

/* ---- the observer ------------------------------------------------------- */

static void chk_observe(void *ctx, const sim_rec *r, uint64_t idx) {
  chk_set *c = ctx;
  if (c->finished) return;
  switch (r->kind) {
    case RT_EV_WRITE:
    case RT_EV_STASH: {
      chk_actor *a = chk__actor(c, r->actor);
      if (a) chk_pend_push(c, a, r, idx);
      break;
    }
    case RT_EV_TXN_COMMIT:
      chk_txn_end(c, r->actor, r, idx, 1);
      break;
    case RT_EV_TXN_ROLLBACK:
      chk_txn_end(c, r->actor, r, idx, 0);
      break;
    case RT_EV_ACTOR_WAKE:
      chk_wake(c, r->actor, r, idx);
      chk__stale_wake(c, r->actor, r, idx);
      break;
    case RT_EV_FAULT:
      c->has_fault = 1;
      c->last_fault_t = r->t_us;
      c->last_fault_idx = idx;
      break;
    default:
      break;
  }
  chk__fiber_record(c, r, idx);
  chk__toolrun_record(c, r, idx);
  chk__actor_record(c, r, idx);
  chk__exec_record(c, r, idx);   /* checkpoint_contract (chk_executor.c) */
  chk__thread_record(c, r, idx); /* thread store (chk_thread.c) */
  chk__chat_record(c, r, idx);   /* chat turns (chk_chat.c) */
  if (r->kind == RT_EV_ACTOR_DEATH) {
    chk__stale_death(c, r->actor, r, idx);
    chk_death(c, r->actor, r, idx);
  }
  if (r->t_us > c->stale_due && c->on_certain) chk__stale_certain(c, r->t_us);
}

/* ---- public API --------------------------------------------------------- */

chk_set *chk_new(sim_trace *t, const chk_params *p) {
  chk_set *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->trace = t;
  c->stale_due = INT64_MAX;
  if (p) c->p = *p;
  else chk_params_default(&c->p);
  if (c->p.wedge_k < 1) c->p.wedge_k = 1;
  if (t && sim_trace_observe(t, chk_observe, c) != 0) {
    free(c);
    return NULL;
  }
  return c;
}

void chk_finish(chk_set *c, int64_t end_us) {
  if (c->finished) return;
  chk__stale_finish(c, end_us);
  chk__actor_finish(c, end_us);
  chk__chat_finish(c, end_us); /* chat: unanswered user messages (chk_chat.c) */
  c->finished = 1;
}

size_t chk_violation_count(const chk_set *c) { return c->n_v; }

const chk_violation *chk_violation_at(const chk_set *c, size_t i) {
  return i < c->n_v ? &c->v[i] : NULL;
}

int chk_failed(const chk_set *c) { return c->n_v > 0; }

void chk_on_violation(chk_set *c, chk_violation_fn fn, void *ctx) {
  c->on_violation = fn;
  c->on_violation_ctx = fn ? ctx : NULL;
}

void chk_on_certain(chk_set *c, chk_certain_fn fn, void *ctx) {
  c->on_certain = fn;
  c->on_certain_ctx = fn ? ctx : NULL;
}

int chk_incomplete(const chk_set *c) { return c->oom; }

uint32_t chk_unjudged(const chk_set *c, uint32_t mask, int64_t end_us, char *buf, size_t cap) {
  static const struct { chk_invariant inv; int which; } live[] = {
      {CHK_NO_WEDGE, 0}, {CHK_RECOVERY_FINISHES, 1}, {CHK_CHAT_NO_LOST_USER_MESSAGE, 1},
      {CHK_KEEPALIVE_HOLDS, 2}};
  int64_t from = c->has_fault ? c->last_fault_t : 0, left = end_us - from, max_bound = 0;
  uint32_t out = 0;
  size_t o = 0;
  char d1[32], d2[32];
  if (cap) buf[0] = 0;
  for (size_t i = 0; i < sizeof live / sizeof live[0]; i++) {
    int64_t bound = live[i].which == 0 ? c->p.serve_bound_us
                    : live[i].which == 1 ? c->p.recovery_bound_us : c->p.keepalive_idle_us;
    if (!(mask & (1u << live[i].inv)) || left >= bound) continue;
    out |= 1u << live[i].inv;
    if (bound > max_bound) max_bound = bound;
    if (o < cap) {
      int n = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", chk_names[live[i].inv]);
      o += n > 0 ? (size_t)n : 0;
    }
  }
  if (out && o < cap)
    snprintf(buf + o, cap - o, " (the run ends %s after %s; the bound is up to %s)",
             chk__dur(d1, sizeof d1, left), c->has_fault ? "the last fault" : "its start",
             chk__dur(d2, sizeof d2, max_bound));
  return out;
}

const chk_params *chk_params_of(const chk_set *c) { return &c->p; }

void chk_free(chk_set *c) {
  if (!c) return;
  for (uint32_t i = 0; i < c->n_actors; i++) {
    free(c->actors[i].pend);
    free(c->actors[i].watch);
    free(c->actors[i].lives);
    free(c->actors[i].snap);
  }
  free(c->actors);
  free(c->fibers);
  free(c->runs);
  free(c->effects);
  chk__map_free(&c->fiber_ix);
  chk__map_free(&c->run_ix);
  chk__map_free(&c->effect_ix);
  chk__exec_free(c);   /* chk_executor.c */
  chk__thread_free(c); /* chk_thread.c */
  chk__chat_free(c);   /* chk_chat.c */
  free(c->v);
  free(c);
}

void chk_set_actor_names(chk_set *c, const char *const *names, uint32_t n) {
  c->names = names;
  c->n_names = n;
}

const char *chk__actor_label(const chk_set *c, uint32_t actor, char *buf, size_t n) {
  if (actor < c->n_names && c->names[actor])
    snprintf(buf, n, "%s", c->names[actor]);
  else
    snprintf(buf, n, "%u", actor);
  return buf;
}
