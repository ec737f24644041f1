/*
** chk_toolrun.c: tool runs: committed status (for recovery_finishes),
** startup_snapshot and toolrun_terminal_immutable.
**
** A run is keyed by (parent actor, run id). A status takes effect when it
** is committed: an RT_EV_TOOLRUN_INSERT (status starting) or
** RT_EV_TOOLRUN_STATUS record pairs with the RT_W_TOOLRUN_INSERT /
** RT_W_TOOLRUN_STATUS write of the same run that is next to it, whichever
** comes first (the runtime writes first and announces after; in immediate
** commit mode the commit falls between the two), and the pair counts once
** the write's transaction commits. A rolled-back write takes its status
** with it.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk_internal.h"

/* ---- the snapshot set (sorted run ids per actor) ------------------------ */

static size_t chk_snap_pos(const chk_actor *a, int64_t id) {
  size_t lo = 0, hi = a->n_snap;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (a->snap[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int chk_snap_has(const chk_actor *a, int64_t id) {
  size_t i = chk_snap_pos(a, id);
  return i < a->n_snap && a->snap[i] == id;
}

static void chk_snap_add(chk_set *c, chk_actor *a, int64_t id) {
  size_t i = chk_snap_pos(a, id);
  if (i < a->n_snap && a->snap[i] == id) return;
  if (a->n_snap == a->cap_snap) {
    size_t nc = a->cap_snap ? a->cap_snap * 2 : 16;
    int64_t *ns = realloc(a->snap, nc * sizeof *ns);
    if (!ns) {
      c->oom = 1;
      return;
    }
    a->snap = ns;
    a->cap_snap = nc;
  }
  memmove(&a->snap[i + 1], &a->snap[i], (a->n_snap - i) * sizeof *a->snap);
  a->snap[i] = id;
  a->n_snap++;
}

/* ---- committed status ---------------------------------------------------- */

/* Status s of run is committed now (t_us, record idx). */
static void chk_apply(chk_set *c, chk_run *run, int s, int64_t t_us,
                      uint64_t idx) {
  chk_actor *a = chk__actor(c, run->actor);
  uint32_t ri = (uint32_t)(run - c->runs);
  if (!a) return;
  run->committed = s;
  run->committed_idx = idx;
  if (RT_TR_IS_TERMINAL(s)) {
    chk__stale_resolve(c, 1, ri, t_us, idx);
    return;
  }
  chk__watch(c, a, 1, ri);
  if (!a->alive) chk__stale_mark(c, 1, ri, t_us, idx);
}

/* The pending write item of run in txn (NULL if gone). */
static chk_pending *chk_run_write(chk_actor *a, const chk_run *run,
                                  int64_t txn) {
  for (size_t i = a->n_pend; i-- > 0;) {
    chk_pending *pd = &a->pend[i];
    if (pd->txn == txn && !pd->is_stash && pd->key == run->id &&
        (pd->op == RT_W_TOOLRUN_INSERT || pd->op == RT_W_TOOLRUN_STATUS))
      return pd;
  }
  return NULL;
}

/* A status record: pairs with the unpaired write, or waits for one. */
static void chk_announce(chk_set *c, chk_actor *a, chk_run *run, int s,
                         int64_t t_us, uint64_t idx) {
  chk_pending *pd;
  switch (run->uw_state) {
    case 1:
      if ((pd = chk_run_write(a, run, run->uw_txn)) != NULL) pd->val = s;
      break;
    case 2:
      chk_apply(c, run, s, t_us, idx);
      break;
    case 3:
      break;  /* its write was rolled back */
    default:
      run->ua_status = s;
      return;
  }
  run->uw_state = 0;
}

/* A tool-run write: pairs with the unpaired status record, or waits. */
static void chk_run_write_rec(chk_set *c, chk_actor *a, const sim_rec *r) {
  chk_run *run = chk__run(c, r->actor, r->b, 1);
  if (!run) return;
  if (run->ua_status) {
    a->pend[a->n_pend - 1].val = run->ua_status;  /* the core just queued it */
    run->ua_status = 0;
    return;
  }
  run->uw_txn = r->c;
  run->uw_state = 1;
}

/* ---- startup_snapshot --------------------------------------------------- */

/* A recovery marks run `run` interrupted (record r at idx). */
static void chk_snapshot_check(chk_set *c, chk_actor *a, chk_run *run,
                               const sim_rec *r, uint64_t idx) {
  int outside = a->rec_checked && !chk_snap_has(a, run->id);
  int live = run->live_life != 0 && run->live_life == a->life;
  if (!outside && !live) return;
  char tr[32], tb[32], ti[32], to[32], why[160];
  uint64_t chain[6] = {a->snap_first_idx, a->onstart_idx, run->insert_idx,
                       a->rec_begin_idx, idx, CHK_NO_INDEX};
  if (!live) chain[1] = CHK_NO_INDEX;
  chk__secs(tr, sizeof tr, r->t_us);
  chk__secs(tb, sizeof tb, a->rec_begin_t);
  if (live)
    snprintf(why, sizeof why, "it was inserted at t=%ss, after onStart began "
             "at t=%ss%s", chk__secs(ti, sizeof ti, run->insert_t),
             chk__secs(to, sizeof to, a->onstart_t),
             outside ? ", and was not in the startup snapshot" : "");
  else
    snprintf(why, sizeof why, "it was not in the startup snapshot (%zu run "
             "id%s)", a->n_snap, a->n_snap == 1 ? "" : "s");
  chk__violate(c, CHK_STARTUP_SNAPSHOT, r->actor, r->t_us, run->id, idx, chain,
               5, "startup recovery (begun at t=%ss) marked tool run %" PRId64
               " interrupted at t=%ss but %s", tb, run->id, tr, why);
}

static void chk_recovery_rec(chk_actor *a, const sim_rec *r, uint64_t idx) {
  if (r->a == 1) {
    a->in_recovery = 1;
    a->rec_checked = a->snap_records > 0 || r->b == 0;
    a->rec_begin_idx = idx;
    a->rec_begin_t = r->t_us;
  } else {
    a->in_recovery = 0;
  }
}

/* ---- toolrun_terminal_immutable ----------------------------------------- */

static void chk_status_rec(chk_set *c, chk_actor *a, const sim_rec *r,
                           uint64_t idx) {
  chk_run *run = chk__run(c, r->actor, r->a, 1);
  if (!run) return;
  if (RT_TR_IS_TERMINAL(r->c) && r->b != r->c) {
    char t1[32], t2[32] = "?";
    uint64_t chain[2] = {run->terminal_idx, idx};
    if (run->terminal_idx != CHK_NO_INDEX)
      chk__secs(t2, sizeof t2, run->terminal_t);
    chk__violate(c, CHK_TOOLRUN_TERMINAL_IMMUTABLE, r->actor, r->t_us, run->id,
                 idx, chain, 2,
                 "tool run %" PRId64 " left terminal status %s for %s at "
                 "t=%ss (terminal since t=%ss)",
                 run->id, rt_toolrun_status_name((int)r->c),
                 rt_toolrun_status_name((int)r->b),
                 chk__secs(t1, sizeof t1, r->t_us), t2);
  }
  if (RT_TR_IS_TERMINAL(r->b) && run->terminal_idx == CHK_NO_INDEX) {
    run->terminal_idx = idx;
    run->terminal_t = r->t_us;
    run->terminal_status = (int)r->b;
  }
  chk_announce(c, a, run, (int)r->b, r->t_us, idx);
  if (r->b == RT_TR_INTERRUPTED && a->in_recovery)
    chk_snapshot_check(c, a, run, r, idx);
}

static void chk_insert_rec(chk_set *c, chk_actor *a, const sim_rec *r,
                           uint64_t idx) {
  chk_run *run = chk__run(c, r->actor, r->a, 1);
  if (!run) return;
  run->insert_idx = idx;
  run->insert_t = r->t_us;
  /* c: the initial status when the runtime gives one (a seeded stale row),
  ** else starting */
  int s0 = r->c >= RT_TR_STARTING && r->c <= RT_TR_INTERRUPTED ? (int)r->c
                                                               : RT_TR_STARTING;
  chk_announce(c, a, run, s0, r->t_us, idx);
  if (a->alive && a->onstart_life == a->life) run->live_life = a->life;
}

/* ---- effects_once for a chat tool call's work (issue #15) -------------- */

/* RT_EV_TOOLRUN_EFFECT on the child (a = run, b = parent, s = tool call
** id): the same (child, parent, tool call) done twice, whatever the run
** ids, is the #1630 double execution. The key is kept apart from fiber
** effects by its top bit. */
static void chk_tool_effect(chk_set *c, const sim_rec *r, uint64_t idx) {
  uint64_t k[4] = {(1ULL << 62) | r->actor, (uint64_t)r->b, r->s, 0x7001};
  chk_effect *e = chk__effect_seen(c, k, r, idx);
  if (!e) return;
  if (e->reported) return;
  e->reported = 1;
  char t1[32], t2[32];
  uint64_t chain[2] = {e->first_idx, idx};
  chk__violate(c, CHK_EFFECTS_ONCE, r->actor, r->t_us, r->a, idx, chain, 2,
               "the work of tool call %s ran twice on this child: run %" PRId64
               " at t=%ss and run %" PRId64 " at t=%ss",
               sim_trace_str(c->trace, r->s), e->first_run, chk__secs(t1, sizeof t1, e->first_t),
               r->a, chk__secs(t2, sizeof t2, r->t_us));
}

/* The kinds toolrun_record reads (chk_class.record_kind): its cases below. Skipping
** the others skips only its look-up of the record's actor, which grows the
** actor table by capacity (entries in their initial state, as for an actor
** never seen). */
static int toolrun_kind(uint32_t kind) {
  switch (kind) {
    case RT_EV_ACTOR_DEATH:
    case RT_EV_ONSTART_BEGIN:
    case RT_EV_STARTUP_BEGIN:
    case RT_EV_TOOLRUN_EFFECT:
    case RT_EV_TOOLRUN_INSERT:
    case RT_EV_TOOLRUN_RECOVERY:
    case RT_EV_TOOLRUN_SNAPSHOT:
    case RT_EV_TOOLRUN_STATUS:
    case RT_EV_WRITE:
      return 1;
    default:
      return 0;
  }
}

static void toolrun_record(chk_set *c, void *st, const sim_rec *r, uint64_t idx) {
  (void)st;
  chk_actor *a = chk__actor(c, r->actor);
  if (!a) return;
  switch (r->kind) {
    case RT_EV_WRITE:
      if ((r->a == RT_W_TOOLRUN_INSERT || r->a == RT_W_TOOLRUN_STATUS) &&
          a->n_pend && a->pend[a->n_pend - 1].idx == idx)
        chk_run_write_rec(c, a, r);
      break;
    case RT_EV_TOOLRUN_INSERT:
      chk_insert_rec(c, a, r, idx);
      break;
    case RT_EV_TOOLRUN_EFFECT:
      chk_tool_effect(c, r, idx);
      break;
    case RT_EV_TOOLRUN_STATUS:
      chk_status_rec(c, a, r, idx);
      break;
    case RT_EV_TOOLRUN_SNAPSHOT:
      if (!a->snap_records) a->snap_first_idx = idx;
      a->snap_records++;
      chk_snap_add(c, a, r->a);
      break;
    case RT_EV_TOOLRUN_RECOVERY:
      chk_recovery_rec(a, r, idx);
      break;
    case RT_EV_STARTUP_BEGIN:
      a->n_snap = 0;
      a->snap_records = 0;
      a->snap_first_idx = CHK_NO_INDEX;
      break;
    case RT_EV_ONSTART_BEGIN:
      a->onstart_life = a->life;
      a->onstart_idx = idx;
      a->onstart_t = r->t_us;
      break;
    case RT_EV_ACTOR_DEATH:
      a->in_recovery = 0;
      break;
    default:
      break;
  }
}

/* ---- commits ------------------------------------------------------------ */

static int chk_is_run_write(const chk_pending *pd) {
  return !pd->is_stash &&
         (pd->op == RT_W_TOOLRUN_INSERT || pd->op == RT_W_TOOLRUN_STATUS);
}

static void toolrun_commit(chk_set *c, void *st, uint32_t actor, const chk_pending *pd,
                           const sim_rec *commit, uint64_t commit_idx) {
  (void)st;
  if (!chk_is_run_write(pd)) return;
  chk_run *run = chk__run(c, actor, pd->key, 1);
  if (!run) return;
  if (pd->val) {
    chk_apply(c, run, (int)pd->val, commit->t_us, commit_idx);
    return;
  }
  if (run->uw_state == 1 && run->uw_txn == pd->txn) {
    run->uw_state = 2;  /* its status record is still to come */
    run->uw_commit_idx = commit_idx;
  }
  if (pd->op == RT_W_TOOLRUN_INSERT && !run->committed)
    chk_apply(c, run, RT_TR_STARTING, commit->t_us, commit_idx);
}

static void toolrun_rollback(chk_set *c, void *st, uint32_t actor, const chk_pending *pd) {
  (void)st;
  if (!chk_is_run_write(pd)) return;
  chk_run *run = chk__run(c, actor, pd->key, 0);
  if (run && run->uw_state == 1 && run->uw_txn == pd->txn) run->uw_state = 3;
}

const chk_class chk__toolrun_class = {.name = "toolrun",
                                      .on_commit = toolrun_commit,
                                      .on_rollback = toolrun_rollback,
                                      .on_record = toolrun_record,
                                      .record_kind = toolrun_kind};
