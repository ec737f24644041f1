/*
** scn_run.c: assembles a world from a loaded scenario, runs one case with
** one seed, checks the invariants, and judges the expectation.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/scn_internal.h"

void scn__set_failure(scn_result *res, const char *msg) {
  snprintf(res->failure, sizeof res->failure, "%s", msg);
}

int scn__add_actors(const scn_scenario *sc, rt_world *w, scn_result *res) {
  res->actor_names = calloc(sc->n_actors ? sc->n_actors : 1, sizeof(char *));
  if (!res->actor_names) return -1;
  res->n_actors = sc->n_actors;
  for (int i = 0; i < sc->n_programs; i++)
    if (rt_program_register(w, &sc->programs[i]) < 0) return -1;
  for (uint32_t i = 0; i < sc->n_actors; i++) {
    if (rt_actor_add(w, &sc->actors[i]) != i) return -1;
    const scn_actor_script *s = &sc->actor_scripts[i];
    if (s->name[0] && rt_actor_script(w, i, s->name, s->text, s->len, s->dir) < 0) return -1;
    res->actor_names[i] = strdup(sc->actors[i].id);
    if (!res->actor_names[i]) return -1;
  }
  return 0;
}

int scn__seed_stale(const scn_scenario *sc, rt_world *w) {
  for (int i = 0; i < sc->n_stale; i++) {
    const scn_stale *st = &sc->stale[i];
    int64_t id = st->is_toolrun == SCN_STALE_SCHEDULE ? rt_seed_schedule(w, st->actor, &st->sched)
                 : st->is_toolrun
                     ? rt_seed_stale_toolrun(w, st->actor, st->child, st->status, st->child_status)
                     : rt_seed_orphan_fiber(w, st->actor, &sc->programs[st->program], st->snapshot);
    if (id < 0) return -1;
  }
  return 0;
}

static int plan_one(const scn_scenario *sc, rt_world *w, const scn_work *wk, int64_t t) {
  switch (wk->kind) {
    case SCN_W_REQUEST: return rt_request_at(w, wk->actor, wk->entry, t);
    case SCN_W_FIBER:
      return wk->await ? rt_fiber_awaited_at(w, wk->actor, &sc->programs[wk->program], t)
                       : rt_fiber_at(w, wk->actor, &sc->programs[wk->program], t);
    case SCN_W_STASH: return rt_stash_outside_at(w, wk->actor, t);
    case SCN_W_KA_ACQUIRE: return rt_keepalive_acquire_at(w, wk->actor, wk->callback, t);
    case SCN_W_KA_DISPOSE: return rt_keepalive_dispose_at(w, wk->actor, wk->callback, t);
    case SCN_W_TOOLRUN:
      return wk->run_id ? rt_toolrun_id_at(w, wk->actor, wk->child, wk->work_us, wk->run_id, t)
                        : rt_toolrun_at(w, wk->actor, wk->child, wk->work_us, t);
    case SCN_W_EXEC_TURN: return rt_exec_turn_at(w, wk->actor, &wk->exec, t); /* seed 002 */
    case SCN_W_THREAD: return rt_thread_writers_at(w, wk->actor, &wk->thread, t) < 0 ? -1 : 0;
    case SCN_W_CHAT: /* seed 000; with a sub-agent tool call: issue #15 */
      return wk->chat_tool ? rt_chat_tool_at(w, wk->actor, wk->chunks, wk->chunk_every_us,
                                             wk->child, wk->work_us, t)
                           : rt_chat_at(w, wk->actor, wk->chunks, wk->chunk_every_us, t);
    case SCN_W_SCHEDULE:
      if (wk->cron[0] || wk->payload[0] || wk->idempotent) { /* issue #14 */
        rt_schedule_spec sp = {wk->delay_us, wk->interval_us, wk->cron[0] ? wk->cron : NULL,
                               wk->payload[0] ? wk->payload : NULL,
                               wk->idempotent ? wk->idempotent == 1 : -1};
        return rt_schedule_ex_at(w, wk->actor, wk->callback, &sp, t);
      }
      return rt_schedule_at(w, wk->actor, wk->callback, wk->delay_us, wk->interval_us, t);
    case SCN_W_CANCEL_SCHEDULE: return rt_cancel_schedule_at(w, wk->actor, wk->callback, t);
    case SCN_W_TOOL_RECOVERY: return rt_toolrun_recovery_at(w, wk->actor, t); /* issue #15 */
    case SCN_W_INVOKE: /* a method of the actor's script (issue #13) */
      return rt_invoke_at(w, wk->actor, wk->method, wk->args[0] ? wk->args : NULL, t);
    case SCN_W_TOOL_ABORT: return rt_toolrun_abort_at(w, wk->actor, wk->child, t);
    case SCN_W_TOOL_RECONNECT: return rt_toolrun_replay_at(w, wk->actor, wk->since, t);
    case SCN_W_CHAT_CONTINUE: return rt_chat_continue_at(w, wk->actor, t);
    case SCN_W_CHAT_SAVE:
      return rt_chat_save_at(w, wk->actor, wk->text, wk->chunks, wk->chunk_every_us, t);
    case SCN_W_CHAT_CANCEL: return rt_chat_cancel_at(w, wk->actor, t);
    case SCN_W_KEEPALIVE:
      return wk->throws ? rt_keepalive_while_throws_at(w, wk->actor, wk->work_us, wk->callback, t)
                        : rt_keepalive_while_at(w, wk->actor, wk->work_us, t);
  }
  return -1;
}

/* Repeating workload is planned lazily (issue #17 item 4): each item has one
** chain; the runtime event of arrival k+1 is planned when the chain's event
** at arrival k fires (one period ahead, so that an arrival is still pushed
** before the events its own instant makes), and memory does not grow with
** the number of arrivals. Process state like the fault plan (flt.h): one
** run at a time per process. */
typedef struct scn_chain {
  const scn_scenario *sc;
  rt_world *w;
  const scn_work *wk;
  int64_t at_us, until_us;  /* the arrival just planned, the last allowed */
} scn_chain;

static scn_chain *chains;
static int n_chains, cap_chains, chain_failed;

static void chain_fire(sim *s, void *ctx, uint64_t arg) {
  (void)ctx;
  scn_chain *c = &chains[arg];
  if (c->at_us > c->until_us - c->wk->every_us) return; /* no arrival left */
  c->at_us += c->wk->every_us;
  if (plan_one(c->sc, c->w, c->wk, c->at_us) || !sim_at(s, c->at_us, 0, chain_fire, NULL, arg))
    chain_failed = 1;
}

int scn__plan_workload(const scn_scenario *sc, rt_world *w, int64_t from_us) {
  n_chains = 0;
  chain_failed = 0;
  for (int i = 0; i < sc->n_work; i++) {
    const scn_work *wk = &sc->work[i];
    int64_t until = wk->until_us > 0 ? wk->until_us : sc->duration_us;
    int64_t t = wk->at_us;
    if (t < from_us) {
      if (wk->every_us <= 0) continue;
      t += (from_us - t + wk->every_us - 1) / wk->every_us * wk->every_us;
    }
    if (t > until) continue;
    if (plan_one(sc, w, wk, t)) return -1;
    if (wk->every_us <= 0 || t > until - wk->every_us) continue; /* the only arrival */
    if (n_chains == cap_chains) {
      int nc = cap_chains ? cap_chains * 2 : 16;
      scn_chain *np = realloc(chains, (size_t)nc * sizeof *np);
      if (!np) return -1;
      chains = np;
      cap_chains = nc;
    }
    chains[n_chains] = (scn_chain){sc, w, wk, t, until};
    if (!sim_at(rt_world_sim(w), t, 0, chain_fire, NULL, (uint64_t)n_chains)) return -1;
    n_chains++;
  }
  return 0;
}

int scn__plan_failed(void) { return chain_failed; }

/* Figures the incident reports give: gate timeouts, resets per actor and
** their spacing, requests served and failed. */
static void add_figure(scn_result *res, const char *name, int64_t v, const char *unit) {
  if (res->n_figures >= 8) return;
  res->figure_names[res->n_figures] = name;
  res->figure_units[res->n_figures] = unit;
  res->figures[res->n_figures++] = v;
}

/* The figures' counts, kept by a trace observer as the records go by, so
** that they need no kept trace. */
typedef struct scn_figs {
  int64_t timeouts, ok, failed, first_ok;
  uint32_t n;
  int64_t *resets, *first, *last; /* per actor */
} scn_figs;

static void figs_observe(void *ctx, const sim_rec *r, uint64_t index) {
  (void)index;
  scn_figs *f = ctx;
  if (r->kind == RT_EV_GATE_TIMEOUT && r->actor < f->n) {
    f->timeouts++;
    if (f->resets[r->actor]++ == 0) f->first[r->actor] = r->t_us;
    f->last[r->actor] = r->t_us;
  } else if (r->kind == RT_EV_REQUEST_OK) {
    f->ok++;
    if (f->first_ok < 0) f->first_ok = r->t_us;
  } else if (r->kind == RT_EV_REQUEST_FAIL) {
    f->failed++;
  }
}

static void figs_free(scn_figs *f) {
  if (!f) return;
  free(f->resets);
  free(f->first);
  free(f->last);
  free(f);
}

/* Makes zero counts for n actors. NULL on OOM. */
static scn_figs *figs_alloc(uint32_t n) {
  scn_figs *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->first_ok = -1;
  f->n = n;
  f->resets = calloc(n ? n : 1, sizeof *f->resets);
  f->first = calloc(n ? n : 1, sizeof *f->first);
  f->last = calloc(n ? n : 1, sizeof *f->last);
  if (!f->resets || !f->first || !f->last) {
    figs_free(f);
    return NULL;
  }
  return f;
}

/* Counts for n actors, registered on t as an observer. NULL on OOM. */
static scn_figs *figs_new(sim_trace *t, uint32_t n) {
  scn_figs *f = figs_alloc(n);
  if (f && sim_trace_observe(t, figs_observe, f)) {
    figs_free(f);
    return NULL;
  }
  return f;
}

void scn__compute_figures(scn_result *res) {
  scn_figs *f = res->figs;
  if (!f) { /* no observer ran (the SIGKILL runner): count the kept trace */
    const sim_trace *t = &res->s->trace;
    f = figs_alloc(res->n_actors);
    if (!f) return;
    for (size_t i = 0; i < t->n; i++) figs_observe(f, &t->recs[i], i);
    res->figs = f;
  }
  uint32_t n = f->n, worst = 0;
  for (uint32_t a = 1; a < n; a++)
    if (f->resets[a] > f->resets[worst]) worst = a;
  int64_t most = n ? f->resets[worst] : 0;
  add_figure(res, "gate_timeouts", f->timeouts, "");
  add_figure(res, "resets_max_per_actor", most, "");
  add_figure(res, "reset_spacing_ms",
             most > 1 ? (f->last[worst] - f->first[worst]) / (most - 1) / 1000 : 0, "ms");
  add_figure(res, "requests_ok", f->ok, "");
  add_figure(res, "requests_failed", f->failed, "");
  add_figure(res, "first_request_ok_ms", f->first_ok < 0 ? -1 : f->first_ok / 1000, "ms");
}

void scn__judge(const scn_scenario *sc, int ci, const scn_run_opts *o, scn_result *res) {
  const scn_case *cs = &sc->cases[ci];
  uint32_t seen = scn_seen_mask(sc, res);
  uint32_t hold = o->check_mask ? o->check_mask : cs->hold_mask;
  uint32_t violate = o->check_mask ? 0 : cs->violate_mask;
  res->passed = 1;
  for (int k = 0; k < 32; k++) {
    int inv = scn_inv_of_bit(sc, k);
    uint32_t bit = 1u << k;
    char msg[200];
    if (inv < 0) continue;
    if ((hold & bit) && (seen & bit)) {
      snprintf(msg, sizeof msg, "expected %s to hold, but it was violated", chk_invariant_name(inv));
    } else if ((violate & bit) && !(seen & bit)) {
      snprintf(msg, sizeof msg, "expected %s to be violated, but it held", chk_invariant_name(inv));
    } else {
      continue;
    }
    if (res->passed) scn__set_failure(res, msg);
    res->passed = 0;
  }
}

/* The fault plan as the steady-wedge rule reads it (docs/swarm.md, "The
** steady wedge"): the last planned arrival of each class of fault. Times
** are -1 when there is none. */
typedef struct steady_plan {
  int ok;               /* 0: the rule does not apply to this run */
  int64_t other_t;      /* a fault that may change what a wake does */
  int64_t kill_t;       /* a whole-process restart or crash, no down time */
  int64_t evict_t;      /* an eviction of evict_actor */
  int64_t inert_t;      /* a fault that acts only on commits or alarms */
  uint32_t evict_actor; /* the one actor every eviction names */
  const int64_t *kills; /* the kills' arrivals, sorted */
  int n_kills;
} steady_plan;

/* stop_when_decided: the verdict is known once a "hold" invariant fails,
** or once every "violate" invariant has fired or is certain to be reported
** (chk_on_certain: a liveness violation the end of the run cannot undo,
** such as a wedged actor's stale work past its recovery bound) and none
** must hold. A certain one only completes the expected set: for a "hold"
** invariant the first violation found, which names the signature, could
** still be a later safety one. */
typedef struct decide_ctx {
  sim *s;
  uint32_t hold, violate, seen, certain;
  int64_t quiet_after;  /* no fault record after this time (INT64_MAX: unknown) */
  const rt_world *w;
  uint64_t after_write; /* a crash/restart right after this write (0: none) */
  const scn_scenario *sc; /* whose masks (scn_inv_bit) */
  steady_plan sp;
  const chk_set *checks;  /* who was awake since the last fault */
} decide_ctx;

static void decide_check(decide_ctx *d) {
  if ((d->hold & d->seen) ||
      (!d->hold && d->violate && (d->violate & ~(d->seen | d->certain)) == 0))
    sim_request_stop(d->s);
}

static void decide_on_violation(void *ctx, const chk_violation *v) {
  decide_ctx *d = ctx;
  d->seen |= scn_inv_bit(d->sc, (int)v->inv);
  decide_check(d);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* 1 if some arrival of the repeating request item wk falls in (after, by]. */
static int request_in(const scn_work *wk, int64_t until, int64_t after, int64_t by) {
  int64_t r = wk->at_us;
  if (r <= after) r += ((after - r) / wk->every_us + 1) * wk->every_us;
  return r <= by && r <= until;
}

/* The steady wedge of actor wi->actor (if_quiet 2) is certain: every fault
** still to come only restarts the whole process, evicts that actor (a
** wake after it replays the startup the wedge already failed) or one that
** has not been awake since the last fault (the cycle never wakes it: the
** eviction finds it dead), or acts on commits and alarms only (a steady
** wedge has neither); when a restart can
** still come, the last fault so far was one, so the wedge was seen to
** follow one; and a request wakes the actor after the last of them with
** recovery_bound left, so the end-of-run judgement, which counts from the
** last fault, still reports the work. docs/swarm.md, "The steady wedge". */
static int steady_certain(const decide_ctx *d, const chk_wedge_info *wi) {
  const steady_plan *p = &d->sp;
  int64_t now = d->s->now_us, other = p->other_t, last = max64(p->kill_t, p->inert_t);
  if (!p->ok) return 0;
  if (p->evict_t >= 0 && (p->evict_actor == wi->actor ||
                          chk_actor_asleep_since(d->checks, p->evict_actor, wi->last_fault_t)))
    last = max64(last, p->evict_t); /* A's own, or of an actor the cycle never wakes */
  else
    other = max64(other, p->evict_t);
  if (other >= now) return 0; /* a fault that may change the wake is still to come */
  if (p->kill_t >= now) {     /* the wedge must have been seen after a restart */
    if (wi->last_fault_t < 0 || other == wi->last_fault_t) return 0;
    int lo = 0, hi = p->n_kills;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (p->kills[mid] < wi->last_fault_t) lo = mid + 1;
      else hi = mid;
    }
    if (lo == p->n_kills || p->kills[lo] != wi->last_fault_t) return 0;
  }
  if (last < now) return 1; /* none to come: the quiet rule's case */
  int64_t by = d->sc->duration_us - d->sc->params.recovery_bound_us;
  for (int i = 0; i < d->sc->n_work; i++) {
    const scn_work *wk = &d->sc->work[i];
    if (wk->kind != SCN_W_REQUEST || wk->actor != wi->actor || wk->every_us <= 0) continue;
    if (request_in(wk, wk->until_us > 0 ? wk->until_us : d->sc->duration_us, last, by)) return 1;
  }
  return 0;
}

static int decide_on_certain(void *ctx, chk_invariant inv, int if_quiet, chk_wedge_info *wi) {
  decide_ctx *d = ctx;
  if (if_quiet && (d->s->now_us <= d->quiet_after ||
                   (d->after_write && rt_write_count(d->w) < d->after_write)) &&
      !(if_quiet == 2 && wi && steady_certain(d, wi))) {
    /* neither rule accepts while a fault that is not a kill, an eviction
    ** or inert is still to come (the quiet rule waits even longer) */
    if (wi) wi->not_before = d->sp.ok ? d->sp.other_t + 1
                             : d->quiet_after < INT64_MAX ? d->quiet_after + 1 : INT64_MAX;
    return 0; /* a fault may still come */
  }
  d->certain |= scn_inv_bit(d->sc, (int)inv);
  decide_check(d);
  return 1;
}

/* The time of the last fault record the run can make at a planned time:
** the latest arrival of every fault (flt_times: the plan's own draws), or
** INT64_MAX when that is not known in advance (rpc drops decided per
** call, more arrivals than counted here). A fault right after the k-th
** durable write is waited for apart (decide_ctx.after_write). */
static int64_t quiet_after(const scn_scenario *sc, uint64_t seed, const scn_run_opts *o) {
  enum { CAP = 4096 };
  static int64_t times[CAP]; /* one run at a time per process (flt.h) */
  int64_t last = 0;
  if (o->without_faults) return 0;
  for (int i = 0; i < sc->n_faults; i++)
    if (sc->faults[i].kind == FLT_RPC_DROP && sc->faults[i].ppm) return INT64_MAX;
  for (int k = 1; k < FLT_KIND_COUNT; k++) {
    int n = flt_times(seed, sc->faults, sc->n_faults, sc->duration_us, (flt_kind)k, times, CAP);
    if (n >= CAP) return INT64_MAX;
    if (n && times[n - 1] > last) last = times[n - 1];
  }
  return last;
}

static int cmp_time(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Fills the steady plan of a run with `seed` (steady_plan). The arrays
** are process state, like quiet_after's: one run at a time. */
static void steady_plan_of(const scn_scenario *sc, uint64_t seed, const scn_run_opts *o,
                           steady_plan *p) {
  enum { CAP = 4096 };
  static int64_t times[CAP], kills[2 * CAP];
  int64_t rpc_last = -1;
  int rpc_drops = 0, rpc_tie = 0;
  memset(p, 0, sizeof *p);
  p->other_t = p->kill_t = p->evict_t = p->inert_t = -1;
  p->evict_actor = RT_NO_ACTOR;
  p->kills = kills;
  p->ok = !o->without_faults && !o->crash_after_write;
  for (int k = 1; p->ok && k < FLT_KIND_COUNT; k++) {
    int any = 0, benign = 1;
    uint32_t target = RT_NO_ACTOR;
    for (int i = 0; i < sc->n_faults; i++) {
      const scn_fault *f = &sc->faults[i];
      if ((int)f->kind != k || f->after_write) continue; /* after_write: fires on a write only */
      if (any && f->actor != target) benign = 0;
      any = 1;
      target = f->actor;
      if ((k == FLT_RESTART || k == FLT_CRASH) && f->delay_us) benign = 0; /* down time */
      if (k == FLT_RPC_DROP || k == FLT_RPC_DELAY) {
        if (f->at_us < 0) p->ok = 0; /* rated: when drops are on is not known */
        if (f->at_us == rpc_last) rpc_tie = 1;
        if (f->at_us > rpc_last) {
          rpc_last = f->at_us;
          rpc_drops = k == FLT_RPC_DROP && f->ppm > 0;
          rpc_tie = 0;
        }
      }
    }
    if (!any) continue;
    int n = flt_times(seed, sc->faults, sc->n_faults, sc->duration_us, (flt_kind)k, times, CAP);
    if (n >= CAP || k == FLT_SIGKILL) p->ok = 0;
    int64_t t = n ? times[n - 1] : -1;
    if ((k == FLT_RESTART || k == FLT_CRASH) && benign) {
      p->kill_t = max64(p->kill_t, t);
      memcpy(kills + p->n_kills, times, (size_t)n * sizeof *times);
      p->n_kills += n;
    } else if (k == FLT_EVICT && benign && target != RT_NO_ACTOR) {
      p->evict_t = t;
      p->evict_actor = target;
    } else if (k == FLT_STORAGE_FAIL || k == FLT_ALARM_DELAY) {
      p->inert_t = max64(p->inert_t, t); /* no commit and no alarm in a steady wedge */
    } else {
      p->other_t = max64(p->other_t, t);
    }
  }
  if (rpc_drops || rpc_tie) p->ok = 0; /* drops decided per call, at unknown times */
  qsort(kills, (size_t)p->n_kills, sizeof *kills, cmp_time); /* restarts and crashes merged */
}

static const flt_fault crash_fault = {FLT_CRASH, RT_NO_ACTOR, 0, 0, 0, 0, RT_STUCK_NONE, 0, 0, 0};

static void crash_now(void *ctx) { flt_apply((rt_world *)ctx, &crash_fault); }

static int assemble(const scn_scenario *sc, int ci, const scn_run_opts *o, rt_world *w,
                    scn_result *res) {
  chk_params p = sc->params;
  p.enabled_mask = 0xffffffffu;
  res->checks = chk_new(&res->s->trace, &p);
  char lerr[1024];
  if (res->checks && scn__attach_lua(sc, res->checks, lerr, sizeof lerr)) {
    scn__set_failure(res, lerr);
    return -1;
  }
  if (!res->checks || scn__facts_begin(sc, ci, o, res) || scn__probes_begin(res) ||
      (o->observer && scn__observe(o, res)) ||
      scn__add_actors(sc, w, res) || scn__seed_stale(sc, w) || scn__plan_workload(sc, w, 0) ||
      flt_plan(w, sc->faults, o->without_faults ? 0 : sc->n_faults, sc->duration_us) < 0) {
    scn__set_failure(res, "cannot assemble the world (out of memory or storage error)");
    return -1;
  }
  chk_set_actor_names(res->checks, (const char *const *)res->actor_names, res->n_actors);
  rt_world_set_case(w, sc->cases[ci].label); /* revenant.case of scripts */
  if (o->crash_after_write) rt_on_write(w, o->crash_after_write, crash_now, w);
  return 0;
}

int scn_run_case(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                 scn_result *res) {
  return scn_run_case_ex(sc, ci, seed, strategy, NULL, res);
}

static int run_once(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                    const scn_run_opts *o, scn_result *res);

int scn_run_case_ex(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                    const scn_run_opts *opts, scn_result *res) {
  static const scn_run_opts none = {0};
  const scn_run_opts *o = opts ? opts : &none;
  if (!o->without_faults && scn__has_sigkill(sc))
    return scn__run_sigkill(sc, ci, seed, strategy, o, res);
  int rc = run_once(sc, ci, seed, strategy, o, res);
  if (rc || !o->lean || res->passed) return rc;
  if (o->waits_only_rerun) {
    uint32_t hold = o->check_mask ? o->check_mask : sc->cases[ci].hold_mask;
    uint32_t seen = scn_seen_mask(sc, res);
    if (!(hold & seen)) return rc; /* "missing:", a fact: no records needed */
  }
  /* A failure is explained from its trace: the same run once more, kept. */
  scn_run_opts kept = *o;
  kept.lean = 0;
  kept.observer = NULL; /* it saw these records already */
  scn_result_free(res);
  return run_once(sc, ci, seed, strategy, &kept, res);
}

static int run_once(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                    const scn_run_opts *o, scn_result *res) {
  const scn_case *cs = &sc->cases[ci];
  sim_config scfg = {seed, strategy, sc->pct_depth ? sc->pct_depth : 3, 10000};
  memset(res, 0, sizeof *res);
  res->seed = seed;
  res->strategy = strategy;
  res->s = calloc(1, sizeof *res->s);
  if (!res->s || sim_init(res->s, &scfg)) {
    scn__set_failure(res, "cannot initialise the kernel");
    return -1;
  }
  res->s->trace.keep = !o->lean;
  res->figs = o->no_figures ? NULL : figs_new(&res->s->trace, sc->n_actors);
  if (!res->figs && !o->no_figures) {
    scn__set_failure(res, "cannot initialise the kernel");
    return -1;
  }
  rt_world *w = rt_world_new(res->s, &cs->cfg);
  if (!w || assemble(sc, ci, o, w, res)) {
    if (!w) scn__set_failure(res, "cannot make the world");
    rt_world_free(w);
    flt_reset();
    return -1;
  }
  /* with facts to judge, only a failed "hold" decides early: facts need the whole run */
  decide_ctx dc = {.s = res->s, .hold = o->check_mask ? o->check_mask : cs->hold_mask,
                   .violate = o->check_mask || chk_facts_count(res->facts) ? 0 : cs->violate_mask,
                   .w = w, .sc = sc, .checks = res->checks};
  if (o->stop_when_decided) {
    dc.quiet_after = quiet_after(sc, seed, o);
    steady_plan_of(sc, seed, o, &dc.sp);
    dc.after_write = o->crash_after_write;
    for (int i = 0; !o->without_faults && i < sc->n_faults; i++)
      if (sc->faults[i].after_write > dc.after_write) dc.after_write = sc->faults[i].after_write;
    chk_on_violation(res->checks, decide_on_violation, &dc);
    chk_on_certain(res->checks, decide_on_certain, &dc);
  }
  sim_stop_reason why = sim_run(res->s, sc->duration_us, 0);
  if (o->stop_when_decided) {
    chk_on_violation(res->checks, NULL, NULL);
    chk_on_certain(res->checks, NULL, NULL);
  }
  /* A world that went quiet still lives to the end of the scenario: the
  ** liveness checks judge the whole duration, not the last event. */
  if (why != SIM_STOP_REQUESTED && res->s->now_us < sc->duration_us)
    res->s->now_us = sc->duration_us;
  if (rt_world_fatal(w)[0]) { /* a script ended the run: a scenario error */
    scn__set_failure(res, rt_world_fatal(w));
    rt_world_free(w);
    flt_reset();
    return -1;
  }
  chk_finish(res->checks, res->s->now_us);
  scn__facts_end(w, res);
  res->writes = rt_write_count(w);
  rt_world_free(w);
  flt_reset();
  if (scn__lua_failed(res)) return -1;
  res->trace_hash = res->s->trace.hash;
  res->events = res->s->trace.count;
  res->end_us = res->s->now_us;
  if (!o->no_figures) scn__compute_figures(res);
  scn__judge(sc, ci, o, res);
  scn__facts_judge(res);
  if (scn__plan_failed()) {
    res->passed = 0;
    scn__set_failure(res, "out of memory while planning the workload");
  }
  return 0;
}

void scn_result_free(scn_result *res) {
  figs_free(res->figs);
  if (res->checks) chk_free(res->checks);
  chk_facts_free(res->facts);
  if (res->s) sim_free(res->s);
  free(res->s);
  for (uint32_t i = 0; res->actor_names && i < res->n_actors; i++) free(res->actor_names[i]);
  free(res->actor_names);
  memset(res, 0, sizeof *res);
}

/* ---- Lua invariants ------------------------------------------------------ */

int scn__attach_lua(const scn_scenario *sc, chk_set *c, char *err, size_t errlen) {
  if (!sc->n_scripts) return 0;
  chk_lua_script ls[CHK_LUA_MAX_SCRIPTS];
  for (int i = 0; i < sc->n_scripts; i++)
    ls[i] = (chk_lua_script){sc->scripts[i].file, sc->scripts[i].text, sc->scripts[i].len};
  chk_lua_opts o = {.dir = sc->dir[0] ? sc->dir : NULL};
  return chk_lua_attach(c, ls, sc->n_scripts, &o, err, errlen);
}

int scn__lua_failed(scn_result *res) {
  const char *e = res->checks ? chk_lua_error(res->checks) : "";
  if (!e[0]) return 0;
  res->passed = 0;
  scn__set_failure(res, e);
  return 1;
}
