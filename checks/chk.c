/*
** chk.c: the checker set: parameters, names (built-in and user invariants),
** the observer, per-actor state, the fiber / tool-run / effect tables,
** transactions, violations, and the registered checkers (chk_reg.h), which
** the observer calls hook by hook in registration order without naming any.
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

/* User invariants (Lua scripts, chk_lua.c) by number: CHK_INVARIANT_COUNT
** + i. Append-only for the life of the process, so that a number means the
** same name in every run and every forked swarm worker; one run is one
** thread, and names are interned while scenarios load. No bound: masks of
** invariants are per scenario (scenarios/scn.h scn_inv_bit), not numbers. */
static char (*chk_user_names)[CHK_NAME_MAX];
static int chk_n_user, chk_cap_user;

static void chk_user_names_free(void) {
  free(chk_user_names);
  chk_user_names = NULL;
  chk_n_user = chk_cap_user = 0;
}

const char *chk_invariant_name(chk_invariant inv) {
  if ((int)inv < 0 || (int)inv >= CHK_INVARIANT_COUNT + chk_n_user) return "?";
  return (int)inv < CHK_INVARIANT_COUNT ? chk_names[inv] : chk_user_names[inv - CHK_INVARIANT_COUNT];
}

int chk_invariant_parse(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < CHK_INVARIANT_COUNT; i++)
    if (strcmp(chk_names[i], name) == 0) return i;
  for (int i = 0; i < chk_n_user; i++)
    if (strcmp(chk_user_names[i], name) == 0) return CHK_INVARIANT_COUNT + i;
  return -1;
}

int chk_invariant_count(void) { return CHK_INVARIANT_COUNT + chk_n_user; }

int chk_invariant_intern(const char *name, char *err, size_t errlen) {
  size_t n = name ? strlen(name) : 0;
  int ok = n > 0 && n < CHK_NAME_MAX;
  for (size_t i = 0; ok && i < n; i++)
    ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
         (name[i] >= '0' && name[i] <= '9') || name[i] == '_' || name[i] == '-' || name[i] == '.';
  if (!ok) {
    snprintf(err, errlen, "invariant name \"%s\" must be 1 to %d letters, digits, '_', '-' or '.'",
             name ? name : "", CHK_NAME_MAX - 1);
    return -1;
  }
  int id = chk_invariant_parse(name);
  if (id >= 0 && id < CHK_INVARIANT_COUNT) {
    snprintf(err, errlen, "invariant name \"%s\" is taken by a built-in invariant", name);
    return -1;
  }
  if (id >= 0) return id;
  if (chk_n_user == chk_cap_user) {
    int nc = chk_cap_user ? chk_cap_user * 2 : 32;
    char (*nn)[CHK_NAME_MAX] =
        nc < INT32_MAX / 2 - CHK_INVARIANT_COUNT ? realloc(chk_user_names, (size_t)nc * sizeof *nn) : NULL;
    if (!nn) {
      snprintf(err, errlen, "out of memory interning the invariant name \"%s\"", name);
      return -1;
    }
    if (!chk_user_names) atexit(chk_user_names_free);
    chk_user_names = nn;
    chk_cap_user = nc;
  }
  memcpy(chk_user_names[chk_n_user], name, n + 1);
  return CHK_INVARIANT_COUNT + chk_n_user++;
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

/* Room for `need` elements of sz bytes in *arr (capacity *cap, doubled),
** the new ones left as realloc leaves them: for arrays whose every element
** is written when it is appended (an actor's lives: 58,000 per 7-day #1595
** run, whose zeroing was 0.45 % of a swarm). 0, or -1 out of memory. */
static int chk_grow_raw(void **arr, size_t *cap, size_t need, size_t sz) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 8;
  while (nc < need) nc *= 2;
  void *na = realloc(*arr, nc * sz);
  if (!na) return -1;
  *arr = na;
  *cap = nc;
  return 0;
}

/* chk_grow_raw with the new elements zeroed. */
static int chk_grow(void **arr, size_t *cap, size_t need, size_t sz) {
  size_t old = *cap;
  if (chk_grow_raw(arr, cap, need, sz)) return -1;
  if (*cap > old) memset((char *)*arr + old * sz, 0, (*cap - old) * sz);
  return 0;
}

/* ---- tables ------------------------------------------------------------- */

static void chk_actor_init(chk_actor *a) {
  a->last_death_idx = CHK_NO_INDEX;
  a->snap_first_idx = a->rec_begin_idx = a->onstart_idx = CHK_NO_INDEX;
}

/* chk__actor's growth path (chk_internal.h): actor >= c->n_actors. */
chk_actor *chk__actor_grow(chk_set *c, uint32_t actor) {
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
  if ((int)inv < CHK_INVARIANT_COUNT && !(c->p.enabled_mask & (1u << inv))) return;
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

/* Commits (commit = 1) or rolls back the pending items of txn r->a: each
** item goes to every checker's on_commit / on_rollback in turn. */
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
    for (size_t k = 0; k < c->n_reg; k++) {
      const struct chk_reg *g = &c->reg[k];
      if (commit && g->k->on_commit) g->k->on_commit(c, g->st, actor, &pd, r, idx);
      else if (!commit && g->k->on_rollback) g->k->on_rollback(c, g->st, actor, &pd);
    }
    a = &c->actors[actor];  /* handlers may grow the actor array */
  }
  a->n_pend = keep;
  if (commit && (writes > 0 || r->b > 0))
    for (size_t k = 0; k < c->n_reg; k++)
      if (c->reg[k].k->on_progress) c->reg[k].k->on_progress(c, c->reg[k].st, actor);
}

/* ---- incarnations ------------------------------------------------------- */

static void chk_wake(chk_set *c, uint32_t actor, const sim_rec *r,
                     uint64_t idx) {
  chk_actor *a = chk__actor(c, actor);
  if (!a) return;
  if (a->alive && a->n_lives) a->lives[a->n_lives - 1].death_t = r->t_us;
  if (chk_grow_raw((void **)&a->lives, &a->cap_lives, a->n_lives + 1,
                   sizeof *a->lives) != 0) { /* each life is written whole below */
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
      c->write_gen++;
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
      for (size_t k = 0; k < c->n_reg; k++)
        if (c->reg[k].k->on_wake) c->reg[k].k->on_wake(c, c->reg[k].st, r, idx);
      break;
    case RT_EV_FAULT:
      c->has_fault = 1;
      c->last_fault_t = r->t_us;
      c->last_fault_idx = idx;
      c->write_gen_at_fault = c->write_gen;
      break;
    case RT_EV_ALARM_SET:
      c->alarm_seen = 1;
      break;
    default:
      break;
  }
  if (r->kind < CHK_FILTER_KINDS && c->n_rec <= 32) { /* in registration order */
    for (uint32_t m = c->kind_hooks[r->kind]; m; m &= m - 1) {
      const struct chk_rec_hook *h = &c->rec[__builtin_ctz(m)];
      h->fn(c, h->st, r, idx);
    }
  } else if (r->kind < CHK_FILTER_KINDS) {
    for (size_t k = 0; k < c->n_rec; k++)
      if (c->rec[k].kinds[r->kind / 64] >> (r->kind % 64) & 1)
        c->rec[k].fn(c, c->rec[k].st, r, idx);
  } else {
    for (size_t k = 0; k < c->n_rec; k++) c->rec[k].fn(c, c->rec[k].st, r, idx);
  }
  if (r->kind == RT_EV_ACTOR_DEATH) {
    for (size_t k = 0; k < c->n_reg; k++)
      if (c->reg[k].k->on_death) c->reg[k].k->on_death(c, c->reg[k].st, r, idx);
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
  for (int i = 0; chk__builtin[i]; i++)
    if (chk_register(c, chk__builtin[i], NULL) != 0) {
      chk_free(c);
      return NULL;
    }
  if (t && sim_trace_observe(t, chk_observe, c) != 0) {
    chk_free(c);
    return NULL;
  }
  return c;
}

void chk_finish(chk_set *c, int64_t end_us) {
  if (c->finished) return;
  for (size_t k = 0; k < c->n_reg; k++)
    if (c->reg[k].k->on_finish) c->reg[k].k->on_finish(c, c->reg[k].st, end_us);
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
  for (size_t k = 0; k < c->n_reg; k++)
    if (c->reg[k].k->free) c->reg[k].k->free(c->reg[k].st);
  free(c->reg);
  free(c->rec);
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

const char *chk__actor_name(const chk_set *c, uint32_t actor) {
  return actor < c->n_names ? c->names[actor] : NULL;
}

uint32_t chk__actor_by_name(const chk_set *c, const char *name) {
  for (uint32_t a = 0; name && a < c->n_names; a++)
    if (c->names[a] && !strcmp(c->names[a], name)) return a;
  return UINT32_MAX;
}

/* ---- registration ------------------------------------------------------- */

/* chk_filter_off: a test switch, never set by a run (one process, one thread). */
static int filter_off;

int chk_register(chk_set *c, const chk_class *k, void *st) {
  if (!st && k->make && !(st = k->make(c))) {
    c->oom = 1;
    return -1;
  }
  if (chk_grow((void **)&c->reg, &c->cap_reg, c->n_reg + 1, sizeof *c->reg) != 0) {
    c->oom = 1;
    if (st && k->free) k->free(st);
    return -1;
  }
  if (k->on_record &&
      chk_grow((void **)&c->rec, &c->cap_rec, c->n_rec + 1, sizeof *c->rec) != 0) {
    c->oom = 1;
    if (st && k->free) k->free(st);
    return -1;
  }
  c->reg[c->n_reg].k = k;
  c->reg[c->n_reg].st = st;
  c->n_reg++;
  if (k->on_record) {
    struct chk_rec_hook *h = &c->rec[c->n_rec++];
    *h = (struct chk_rec_hook){k->on_record, st, {0}};
    for (uint32_t kind = 0; kind < CHK_FILTER_KINDS; kind++)
      if (!k->record_kind || filter_off || k->record_kind(kind)) {
        h->kinds[kind / 64] |= 1ull << (kind % 64);
        if (c->n_rec <= 32) c->kind_hooks[kind] |= 1u << (c->n_rec - 1);
      }
  }
  return 0;
}

void chk_filter_off(int off) { filter_off = off; }

void *chk_state(const chk_set *c, const chk_class *k) {
  for (size_t i = 0; i < c->n_reg; i++)
    if (c->reg[i].k == k) return c->reg[i].st;
  return NULL;
}

void chk__oom(chk_set *c) { c->oom = 1; }

const sim_trace *chk__trace(const chk_set *c) { return c->trace; }

const chk_params *chk__params(const chk_set *c) { return &c->p; }

int chk__last_fault(const chk_set *c, int64_t *t_us, uint64_t *idx) {
  if (t_us) *t_us = c->last_fault_t;
  if (idx) *idx = c->last_fault_idx;
  return c->has_fault;
}

int chk_actor_asleep_since(const chk_set *c, uint32_t actor, int64_t t_us) {
  if (actor >= c->n_actors) return 1; /* no record named it */
  const chk_actor *a = &c->actors[actor];
  return !a->alive && (a->n_lives == 0 || a->lives[a->n_lives - 1].death_t <= t_us);
}

uint32_t chk__actor_life(chk_set *c, uint32_t actor) {
  chk_actor *a = chk__actor(c, actor);
  return a ? a->life : 0;
}

uint64_t chk__actor_last_death(chk_set *c, uint32_t actor) {
  chk_actor *a = chk__actor(c, actor);
  return a ? a->last_death_idx : CHK_NO_INDEX;
}

int chk__actor_running(chk_set *c, uint32_t actor) {
  chk_actor *a = chk__actor(c, actor);
  return a ? a->active : 0;
}
