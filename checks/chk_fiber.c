/*
** chk_fiber.c: stash_durable, no_double_recovery, effects_once, and the
** fiber side of recovery_finishes (rows, hand-overs, work lost).
**
** A fiber is keyed by (actor, fiber id). Its committed state changes only
** when a transaction commits (chk.c applies the pending items here): the
** insert, the delete, and the last stash value. Hand-overs to a recovery
** hook are RT_EV_FIBER_RECOVERED (the hook returned, whatever the action,
** drop included) and RT_EV_FIBER_HOOK_THREW. A hand-over whose row delete
** rolls back with its turn (a storage failure, a death inside the commit
** window) is undone: the row is still there and the SDK hands it over again
** on the next scan, a retry rather than a second hand-over (the hook's
** effects may repeat; effects_once judges those).
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "checks/chk_internal.h"

/* ---- stash_durable and no_double_recovery ------------------------------- */

static void chk_stash_check(chk_set *c, chk_fiber *f, const sim_rec *r,
                            uint64_t idx) {
  if (!f->seen_state || r->b == f->stash_val) return;
  chk_actor *a = chk__actor(c, r->actor);
  char tr[32], tc[32], lost[96] = "";
  uint64_t chain[5] = {f->stash_idx, f->stash_commit_idx,
                       f->last_stash_idx != f->stash_idx ? f->last_stash_idx
                                                         : CHK_NO_INDEX,
                       a ? a->last_death_idx : CHK_NO_INDEX, idx};
  chk__secs(tr, sizeof tr, r->t_us);
  if (f->stash_val < 0) {
    snprintf(lost, sizeof lost, "no stash of it ever committed");
  } else {
    chk__secs(tc, sizeof tc, f->stash_commit_t);
    snprintf(lost, sizeof lost, "the last committed stash was %" PRId64
             " (committed at t=%ss)", f->stash_val, tc);
  }
  if (r->b < 0)
    chk__violate(c, CHK_STASH_DURABLE, r->actor, r->t_us, f->id, idx, chain, 5,
                 "recovery of fiber %" PRId64 " at t=%ss saw no snapshot but "
                 "%s", f->id, tr, lost);
  else
    chk__violate(c, CHK_STASH_DURABLE, r->actor, r->t_us, f->id, idx, chain, 5,
                 "recovery of fiber %" PRId64 " at t=%ss saw snapshot %" PRId64
                 " but %s", f->id, tr, r->b, lost);
}

static void chk_handover(chk_set *c, chk_fiber *f, const sim_rec *r,
                         uint64_t idx) {
  char t1[32], t2[32];
  if (!f->handed || f->retained) { /* first hand-over, or a #1729 retry */
    f->retained = 0;
    f->handed = 1;
    f->hand_idx = idx;
    f->hand_t = r->t_us;
  } else if (!f->double_reported) {
    uint64_t chain[2] = {f->hand_idx, idx};
    f->double_reported = 1;
    chk__violate(c, CHK_NO_DOUBLE_RECOVERY, r->actor, r->t_us, f->id, idx,
                 chain, 2,
                 "fiber %" PRId64 " was handed to a recovery hook twice: at "
                 "t=%ss and again at t=%ss",
                 f->id, chk__secs(t1, sizeof t1, f->hand_t),
                 chk__secs(t2, sizeof t2, r->t_us));
  }
  chk_stash_check(c, f, r, idx);
  uint32_t fi = (uint32_t)(f - c->fibers);
  if (r->kind == RT_EV_FIBER_RECOVERED) {
    f->threw = 0;
    chk__stale_resolve(c, 0, fi, r->t_us, idx);
  } else {
    f->threw = 1;
    f->threw_idx = idx;
    f->threw_t = r->t_us;
  }
}

/* ---- effects_once ------------------------------------------------------- */

chk_effect *chk__effect_seen(chk_set *c, const uint64_t k[4], const sim_rec *r, uint64_t idx) {
  uint32_t ei;
  if (chk__map_get(&c->effect_ix, k, &ei)) return &c->effects[ei];
  if (c->n_effects == c->cap_effects) {
    size_t nc = c->cap_effects ? c->cap_effects * 2 : 64;
    chk_effect *ne = realloc(c->effects, nc * sizeof *ne);
    if (!ne) {
      c->oom = 1;
      return NULL;
    }
    c->effects = ne;
    c->cap_effects = nc;
  }
  if (c->n_effects >= UINT32_MAX - 1 || chk__map_put(&c->effect_ix, k, (uint32_t)c->n_effects) != 0) {
    c->oom = 1;
    return NULL;
  }
  c->effects[c->n_effects++] = (chk_effect){.first_idx = idx, .first_t = r->t_us, .first_run = r->a};
  return NULL;
}

static void chk_effect_rec(chk_set *c, const sim_rec *r, uint64_t idx) {
  chk_fiber *f = chk__fiber(c, r->actor, r->a, 1);
  if (!f) return;
  uint64_t k[4] = {r->actor, (uint64_t)f->root, (uint64_t)r->b, r->s};
  chk_effect *e = chk__effect_seen(c, k, r, idx);
  if (!e) return;
  if (e->reported) return;
  e->reported = 1;
  char t1[32], t2[32], root[48] = "";
  uint64_t chain[2] = {e->first_idx, idx};
  if (f->root != f->id)
    snprintf(root, sizeof root, " (resumed from fiber %" PRId64 ")", f->root);
  chk__violate(c, CHK_EFFECTS_ONCE, r->actor, r->t_us, f->id, idx, chain, 2,
               "effect \"%s\" at pc %" PRId64 " of fiber %" PRId64 "%s ran "
               "twice: at t=%ss and at t=%ss",
               sim_trace_str(c->trace, r->s), r->b, f->id, root,
               chk__secs(t1, sizeof t1, e->first_t),
               chk__secs(t2, sizeof t2, r->t_us));
}

/* RT_EV_SCHEDULE_EFFECT (a = schedule row, b = its occurrence, s = effect):
** the same effect of one occurrence twice (a retried attempt, or the run
** a crash cut and the alarm ran again) is a repeat; the next occurrence of
** an interval or cron row is not. Kept apart from fiber and tool-call keys
** by bit 61 (issue #14). */
static void chk_sched_effect(chk_set *c, const sim_rec *r, uint64_t idx) {
  uint64_t k[4] = {(1ULL << 61) | r->actor, (uint64_t)r->a, (uint64_t)r->b, r->s};
  chk_effect *e = chk__effect_seen(c, k, r, idx);
  if (!e || e->reported) return;
  e->reported = 1;
  char t0[32], t1[32], t2[32];
  uint64_t chain[2] = {e->first_idx, idx};
  chk__violate(c, CHK_EFFECTS_ONCE, r->actor, r->t_us, r->a, idx, chain, 2,
               "effect \"%s\" of schedule %" PRId64 " (callback %s, due at %ss) ran twice: "
               "at t=%ss and at t=%ss",
               sim_trace_str(c->trace, r->s), r->a, sim_trace_str(c->trace, r->s2),
               chk__secs(t0, sizeof t0, r->b), chk__secs(t1, sizeof t1, e->first_t),
               chk__secs(t2, sizeof t2, r->t_us));
}

/* ---- records ------------------------------------------------------------ */

static void chk_fiber_start(chk_set *c, const sim_rec *r) {
  int64_t root = r->a;
  if (r->b != 0) {
    chk_fiber *from = chk__fiber(c, r->actor, r->b, 0);
    root = from ? from->root : r->b;
  }
  chk_fiber *f = chk__fiber(c, r->actor, r->a, 1);
  chk_actor *a = chk__actor(c, r->actor);
  if (!f || !a) return;
  f->root = root;
  f->seen_state = 1;
  if (a->alive && f->run_life != a->life) {
    f->run_life = a->life;
    a->active++;
  }
}

static void chk_fiber_done(chk_set *c, const sim_rec *r) {
  chk_fiber *f = chk__fiber(c, r->actor, r->a, 1);
  chk_actor *a = chk__actor(c, r->actor);
  if (!f || !a) return;
  f->done = 1;
  if (f->run_life && f->run_life == a->life && a->active > 0) a->active--;
  f->run_life = 0;
}

/* The kinds fiber_record reads (chk_class.record_kind): its cases below. */
static int fiber_kind(uint32_t kind) {
  switch (kind) {
    case RT_EV_FIBER_START: case RT_EV_FIBER_DONE: case RT_EV_STASH: case RT_EV_WRITE:
    case RT_EV_FIBER_RECOVERED: case RT_EV_FIBER_HOOK_THREW: case RT_EV_EFFECT:
    case RT_EV_SCHEDULE_EFFECT: case RT_EV_FIBER_RETAINED: case RT_EV_FIBER_SKIPPED:
    case RT_EV_ACTOR_DEATH:
      return 1;
    default:
      return 0;
  }
}

static void fiber_record(chk_set *c, void *st, const sim_rec *r, uint64_t idx) {
  (void)st;
  chk_fiber *f;
  chk_actor *a;
  switch (r->kind) {
    case RT_EV_FIBER_START:
      chk_fiber_start(c, r);
      break;
    case RT_EV_FIBER_DONE:
      chk_fiber_done(c, r);
      break;
    case RT_EV_STASH:
      if ((f = chk__fiber(c, r->actor, r->a, 1)) != NULL) {
        f->seen_state = 1;
        f->last_stash_idx = idx;
      }
      break;
    case RT_EV_WRITE:
      if (r->a == RT_W_FIBER_INSERT && (f = chk__fiber(c, r->actor, r->b, 1)))
        f->seen_state = 1;
      break;
    case RT_EV_FIBER_RECOVERED:
    case RT_EV_FIBER_HOOK_THREW:
      if ((f = chk__fiber(c, r->actor, r->a, 1)) != NULL)
        chk_handover(c, f, r, idx);
      break;
    case RT_EV_EFFECT:
      chk_effect_rec(c, r, idx);
      break;
    case RT_EV_SCHEDULE_EFFECT:
      chk_sched_effect(c, r, idx);
      break;
    case RT_EV_FIBER_RETAINED: /* #1729: the row stays; recovery is still in progress */
      if ((f = chk__fiber(c, r->actor, r->a, 1)) != NULL) {
        f->retained = 1;
        f->threw = 0;
      }
      break;
    case RT_EV_FIBER_SKIPPED: /* #1729: dropped after max age: an explicit give-up */
      if ((f = chk__fiber(c, r->actor, r->a, 1)) != NULL) {
        f->gave_up = 1;
        f->threw = 0;
        chk__stale_give_up(c, (uint32_t)(f - c->fibers), r->t_us, idx);
      }
      break;
    case RT_EV_ACTOR_DEATH:
      if ((a = chk__actor(c, r->actor)) != NULL) a->active = 0;
      break;
    default:
      break;
  }
}

/* ---- commits ------------------------------------------------------------ */

static void chk_fiber_deleted(chk_set *c, chk_fiber *f,
                              const chk_pending *pd, const sim_rec *commit,
                              uint64_t commit_idx) {
  f->deleted = 1;
  if (!f->threw || f->st.reported) return;
  char t1[32], t2[32];
  uint64_t chain[5] = {f->insert_idx, f->st.stale_idx, f->threw_idx, pd->idx,
                       commit_idx};
  f->st.reported = 1;
  chk__violate(c, CHK_RECOVERY_FINISHES, f->actor, commit->t_us, f->id,
               commit_idx, chain, 5,
               "work lost: the recovery hook of fiber %" PRId64 " threw at "
               "t=%ss and its row was deleted at t=%ss",
               f->id, chk__secs(t1, sizeof t1, f->threw_t),
               chk__secs(t2, sizeof t2, commit->t_us));
}

static void fiber_rollback(chk_set *c, void *st, uint32_t actor, const chk_pending *pd) {
  (void)st;
  if (pd->is_stash || pd->op != RT_W_FIBER_DELETE) return;
  chk_fiber *f = chk__fiber(c, actor, pd->key, 0);
  if (f && f->handed && !f->deleted) f->handed = 0;
}

static void fiber_commit(chk_set *c, void *st, uint32_t actor, const chk_pending *pd,
                         const sim_rec *commit, uint64_t commit_idx) {
  (void)st;
  if (!pd->is_stash && pd->op != RT_W_FIBER_INSERT &&
      pd->op != RT_W_FIBER_DELETE)
    return;
  chk_fiber *f = chk__fiber(c, actor, pd->key, 1);
  if (!f) return;
  if (pd->is_stash) {
    f->stash_val = pd->val;
    f->stash_idx = pd->idx;
    f->stash_commit_idx = commit_idx;
    f->stash_commit_t = commit->t_us;
    return;
  }
  if (pd->op == RT_W_FIBER_DELETE) {
    chk_fiber_deleted(c, f, pd, commit, commit_idx);
    return;
  }
  uint32_t fi = (uint32_t)(f - c->fibers);
  chk_actor *a = chk__actor(c, actor);
  if (!a) return;
  f->inserted = 1;
  f->insert_idx = commit_idx;
  chk__watch(c, a, 0, fi);
  if (!a->alive && !f->done) chk__stale_mark(c, 0, fi, commit->t_us, commit_idx);
}

const chk_class chk__fiber_class = {
    .name = "fiber", .on_commit = fiber_commit, .on_rollback = fiber_rollback, .on_record = fiber_record,
    .record_kind = fiber_kind};
