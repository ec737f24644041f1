/*
** chk_recovery.c: recovery_finishes, the liveness half shared by orphan
** fibers and stale tool runs.
**
** Work becomes stale when its actor dies while it is unfinished: a fiber
** whose insert committed, whose delete has not, and which has no
** FIBER_DONE; a tool run whose latest committed status is starting or
** running. Work committed while its actor has no incarnation (a row left by
** an earlier process) is stale at once. Stale work is resolved by a
** recovery hook that returned (fibers) or a committed terminal status
** (tool runs). A window opens at each wake of the actor and closes at its
** next death by a fault (an idle eviction does not close it: an actor that
** woke and went idle without recovering has not recovered); work still unresolved when a window has been open for
** recovery_bound_us is late (one violation per item). At the end of the run
** the same holds for the window still open, and in addition for the first
** moment after both the work went stale and the last fault at which its
** actor was awake: an actor that woke, did nothing and went idle for good
** does not escape.
*/
#include <inttypes.h>
#include <stdio.h>

#include "checks/chk_internal.h"

static chk_stale *chk_stale_of(chk_set *c, const chk_watch *w) {
  return w->is_run ? &c->runs[w->i].st : &c->fibers[w->i].st;
}

/* Reports an item that did not finish within the bound of a window that
** opened at (win_t, win_idx). end_idx: the record that closed the window
** or resolved the item (CHK_NO_INDEX at the end of the run); end_t its
** time; how: "recovered"/"terminal" at resolution, else NULL. */
static void chk_stale_late(chk_set *c, int is_run, uint32_t i, int64_t win_t,
                           uint64_t win_idx, int64_t end_t, uint64_t end_idx,
                           const char *how) {
  char ts[32], tw[32], te[32], bd[32], lb[72];
  int64_t bound = c->p.recovery_bound_us;
  uint64_t at = end_idx;
  chk_stale *st;
  uint32_t actor;
  int64_t subject;
  uint64_t chain[8];
  int n = 0;
  char what[96];
  if (is_run) {
    chk_run *run = &c->runs[i];
    st = &run->st;
    actor = run->actor;
    subject = run->id;
    chain[n++] = run->insert_idx;
    chain[n++] = run->committed_idx;
    if (how)
      snprintf(what, sizeof what, "tool run %" PRId64, run->id);
    else
      snprintf(what, sizeof what, "tool run %" PRId64 " (status %s)", run->id,
               rt_toolrun_status_name(run->committed));
  } else {
    chk_fiber *f = &c->fibers[i];
    st = &f->st;
    actor = f->actor;
    subject = f->id;
    chain[n++] = f->insert_idx;
    chain[n++] = f->threw_idx;
    snprintf(what, sizeof what, "orphan fiber %" PRId64, f->id);
  }
  chain[n++] = st->stale_idx;
  chain[n++] = win_idx;
  chain[n++] = end_idx;
  st->reported = 1;
  chk__secs(ts, sizeof ts, st->stale_t);
  chk__secs(tw, sizeof tw, win_t);
  chk__secs(te, sizeof te, end_t);
  chk__dur(bd, sizeof bd, bound);
  if (how)
    chk__violate(c, CHK_RECOVERY_FINISHES, actor, win_t + bound, subject, at,
                 chain, n,
                 "%s, stale since t=%ss, %s only at t=%ss: more "
                 "than %s after actor %s woke at t=%ss",
                 what, ts, how, te, bd, chk__actor_label(c, actor, lb, sizeof lb), tw);
  else
    chk__violate(c, CHK_RECOVERY_FINISHES, actor, win_t + bound, subject, at,
                 chain, n,
                 "%s, stale since t=%ss, was not %s within %s of actor %s "
                 "waking at t=%ss (still not at t=%ss)",
                 what, ts, is_run ? "terminal" : "recovered", bd,
                 chk__actor_label(c, actor, lb, sizeof lb), tw, te);
}

void chk__stale_mark(chk_set *c, int is_run, uint32_t i, int64_t t_us,
                     uint64_t idx) {
  chk_stale *st = is_run ? &c->runs[i].st : &c->fibers[i].st;
  if (st->stale || st->resolved) return;
  st->stale = 1;
  st->stale_t = t_us;
  st->stale_idx = idx;
  st->win = 0;
}

void chk__stale_give_up(chk_set *c, uint32_t i, int64_t t_us, uint64_t idx) {
  chk_stale *st = &c->fibers[i].st;
  if (st->resolved) return;
  if (st->stale && st->win && !st->reported && t_us - st->win_t > c->p.recovery_bound_us)
    chk_stale_late(c, 0, i, st->win_t, st->win_idx, t_us, idx,
                   "was given up (max_age_exceeded, work dropped)");
  st->resolved = 1;
}

void chk__stale_resolve(chk_set *c, int is_run, uint32_t i, int64_t t_us,
                        uint64_t idx) {
  chk_stale *st = is_run ? &c->runs[i].st : &c->fibers[i].st;
  if (st->resolved) return;
  if (st->stale && st->win && !st->reported &&
      t_us - st->win_t > c->p.recovery_bound_us) {
    char how[48];
    if (is_run)
      snprintf(how, sizeof how, "became terminal (%s)",
               rt_toolrun_status_name(c->runs[i].committed));
    else
      snprintf(how, sizeof how, "was recovered");
    chk_stale_late(c, is_run, i, st->win_t, st->win_idx, t_us, idx, how);
  }
  st->resolved = 1;
}

/* 1 if the watched item can no longer matter and leaves the list. */
static int chk_watch_done(chk_set *c, const chk_watch *w) {
  const chk_stale *st = chk_stale_of(c, w);
  if (st->resolved || st->reported) return 1;
  if (st->stale) return 0;
  if (w->is_run) return RT_TR_IS_TERMINAL(c->runs[w->i].committed);
  const chk_fiber *f = &c->fibers[w->i];
  return f->deleted || f->done;
}

/* 1 if the watched, not yet stale item is interrupted by a death now. */
static int chk_watch_interrupted(chk_set *c, const chk_watch *w) {
  if (w->is_run) {
    int s = c->runs[w->i].committed;
    return s == RT_TR_STARTING || s == RT_TR_RUNNING;
  }
  const chk_fiber *f = &c->fibers[w->i];
  return f->inserted && !f->deleted && !f->done;
}

static void recovery_death(chk_set *c, void *st_, const sim_rec *r, uint64_t idx) {
  (void)st_;
  uint32_t actor = r->actor;
  chk_actor *a = chk__actor(c, actor);
  if (!a) return;
  size_t keep = 0;
  for (size_t k = 0; k < a->n_watch; k++) {
    chk_watch w = a->watch[k];
    chk_stale *st = chk_stale_of(c, &w);
    if (!st->stale && !chk_watch_done(c, &w) && chk_watch_interrupted(c, &w))
      chk__stale_mark(c, w.is_run, w.i, r->t_us, idx);
    if (st->stale && st->win && !st->resolved && !st->reported &&
        r->t_us - st->win_t > c->p.recovery_bound_us)
      chk_stale_late(c, w.is_run, w.i, st->win_t, st->win_idx, r->t_us, idx,
                     NULL);
    if (r->a != RT_DEATH_IDLE) st->win = 0; /* going idle is no excuse */
    if (chk_watch_done(c, &w)) {
      if (w.is_run) c->runs[w.i].watched = 0;
      else c->fibers[w.i].watched = 0;
      continue;
    }
    a->watch[keep++] = w;
  }
  a->n_watch = keep;
}

static void recovery_wake(chk_set *c, void *st_, const sim_rec *r, uint64_t idx) {
  (void)st_;
  uint32_t actor = r->actor;
  chk_actor *a = chk__actor(c, actor);
  if (!a) return;
  for (size_t k = 0; k < a->n_watch; k++) {
    chk_stale *st = chk_stale_of(c, &a->watch[k]);
    if (!st->stale || st->resolved || st->reported || st->win) continue;
    st->win = 1;
    st->win_t = r->t_us;
    st->win_idx = idx;
    if (c->p.recovery_bound_us < c->stale_due - r->t_us) /* no overflow */
      c->stale_due = r->t_us + c->p.recovery_bound_us;
  }
}

/* Certain: past the bound, every later path reports the item (resolution
** and give-up and death compare t - win_t > bound, recovery_finish
** end - win_t >= bound, and nothing else closes a window unreported). */
void chk__stale_certain(chk_set *c, int64_t now_us) {
  int64_t bound = c->p.recovery_bound_us, due = INT64_MAX;
  uint32_t bit = 1u << CHK_RECOVERY_FINISHES;
  if (!(c->p.enabled_mask & bit) || (c->certain_sent & bit)) {
    c->stale_due = INT64_MAX;
    return;
  }
  for (uint32_t ai = 0; ai < c->n_actors; ai++) {
    const chk_actor *a = &c->actors[ai];
    for (size_t k = 0; k < a->n_watch; k++) {
      const chk_stale *st = chk_stale_of(c, &a->watch[k]);
      if (!st->stale || !st->win || st->resolved || st->reported) continue;
      if (now_us - st->win_t > bound) {
        c->stale_due = INT64_MAX; /* once is enough */
        c->certain_sent |= bit;
        c->on_certain(c->on_certain_ctx, CHK_RECOVERY_FINISHES, 0, NULL);
        return;
      }
      if (bound < due - st->win_t) due = st->win_t + bound;
    }
  }
  c->stale_due = due;
}

/* The first moment at or after x at which the actor was awake, with the
** wake that began that life; 0 if none. */
static int chk_awake_after(const chk_actor *a, int64_t x, int64_t *w_t,
                           uint64_t *w_idx) {
  /* lives are appended in time order and never overlap, so their death
  ** times ascend: a binary search (a wedge asks on every failed startup) */
  size_t lo = 0, hi = a->n_lives;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (a->lives[mid].death_t <= x) lo = mid + 1;
    else hi = mid;
  }
  if (lo == a->n_lives) return 0;
  const chk_life *lf = &a->lives[lo];
  *w_t = lf->wake_t > x ? lf->wake_t : x;
  *w_idx = lf->wake_idx;
  return 1;
}

void chk__note_wedge(chk_set *c, uint32_t actor, int64_t streak_t0, int64_t now_us) {
  uint32_t bit = 1u << CHK_RECOVERY_FINISHES;
  chk_actor *a = chk__actor(c, actor);
  if (!a || !c->on_certain || !(c->p.enabled_mask & bit) || (c->certain_sent & bit) ||
      now_us < c->wedge_not_before)
    return;
  for (size_t k = 0; k < a->n_watch; k++) {
    const chk_stale *st = chk_stale_of(c, &a->watch[k]);
    if (!st->stale || st->resolved || st->reported) continue;
    /* the same moment recovery_finish starts from, with no later fault */
    int64_t x = st->stale_t, w_t;
    uint64_t w_idx;
    if (c->has_fault && c->last_fault_t > x) x = c->last_fault_t;
    if (streak_t0 <= x || !chk_awake_after(a, x, &w_t, &w_idx) ||
        now_us - w_t < c->p.recovery_bound_us)
      continue;
    /* steady: nothing durable changed since the last fault, and no alarm
    ** (a stored time) can wake anything: docs/swarm.md, "The steady wedge" */
    int steady = c->write_gen == c->write_gen_at_fault && !c->alarm_seen;
    chk_wedge_info wi = {actor, c->has_fault ? c->last_fault_t : -1, 0};
    if (c->on_certain(c->on_certain_ctx, CHK_RECOVERY_FINISHES, steady ? 2 : 1, &wi)) {
      c->certain_sent |= bit;
      c->stale_due = INT64_MAX;
    } else if (wi.not_before > c->wedge_not_before) {
      c->wedge_not_before = wi.not_before;
    }
    return;
  }
}

static void recovery_finish(chk_set *c, void *st_, int64_t end_us) {
  (void)st_;
  int64_t bound = c->p.recovery_bound_us;
  for (uint32_t ai = 0; ai < c->n_actors; ai++) {
    chk_actor *a = &c->actors[ai];
    for (size_t k = 0; k < a->n_watch; k++) {
      chk_watch w = a->watch[k];
      chk_stale *st = chk_stale_of(c, &w);
      if (!st->stale || st->resolved || st->reported) continue;
      if (st->win && end_us - st->win_t >= bound) {
        chk_stale_late(c, w.is_run, w.i, st->win_t, st->win_idx, end_us,
                       CHK_NO_INDEX, NULL);
        continue;
      }
      int64_t x = st->stale_t, w_t;
      uint64_t w_idx;
      if (c->has_fault && c->last_fault_t > x) x = c->last_fault_t;
      if (chk_awake_after(a, x, &w_t, &w_idx) && end_us - w_t >= bound)
        chk_stale_late(c, w.is_run, w.i, w_t, w_idx, end_us, CHK_NO_INDEX,
                       NULL);
    }
  }
}

const chk_class chk__recovery_class = {.name = "recovery",
                                       .on_wake = recovery_wake,
                                       .on_death = recovery_death,
                                       .on_finish = recovery_finish};
