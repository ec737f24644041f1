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
    res->actor_names[i] = strdup(sc->actors[i].id);
    if (!res->actor_names[i]) return -1;
  }
  return 0;
}

int scn__seed_stale(const scn_scenario *sc, rt_world *w) {
  for (int i = 0; i < sc->n_stale; i++) {
    const scn_stale *st = &sc->stale[i];
    int64_t id = st->is_toolrun
                     ? rt_seed_stale_toolrun(w, st->actor, st->child, st->status, st->child_status)
                     : rt_seed_orphan_fiber(w, st->actor, &sc->programs[st->program], st->snapshot);
    if (id < 0) return -1;
  }
  return 0;
}

static int plan_one(const scn_scenario *sc, rt_world *w, const scn_work *wk, int64_t t) {
  switch (wk->kind) {
    case SCN_W_REQUEST: return rt_request_at(w, wk->actor, wk->entry, t);
    case SCN_W_FIBER: return rt_fiber_at(w, wk->actor, &sc->programs[wk->program], t);
    case SCN_W_TOOLRUN: return rt_toolrun_at(w, wk->actor, wk->child, wk->work_us, t);
    case SCN_W_EXEC_TURN: return rt_exec_turn_at(w, wk->actor, &wk->exec, t); /* seed 002 */
    case SCN_W_THREAD: return rt_thread_writers_at(w, wk->actor, &wk->thread, t) < 0 ? -1 : 0;
    case SCN_W_CHAT: /* seed 000; with a sub-agent tool call: issue #15 */
      return wk->chat_tool ? rt_chat_tool_at(w, wk->actor, wk->chunks, wk->chunk_every_us,
                                             wk->child, wk->work_us, t)
                           : rt_chat_at(w, wk->actor, wk->chunks, wk->chunk_every_us, t);
    case SCN_W_SCHEDULE:
      return rt_schedule_at(w, wk->actor, wk->callback, wk->delay_us, wk->interval_us, t);
    case SCN_W_CANCEL_SCHEDULE: return rt_cancel_schedule_at(w, wk->actor, wk->callback, t);
    case SCN_W_TOOL_RECOVERY: return rt_toolrun_recovery_at(w, wk->actor, t); /* issue #15 */
    case SCN_W_KEEPALIVE: return rt_keepalive_while_at(w, wk->actor, wk->work_us, t);
  }
  return -1;
}

int scn__plan_workload(const scn_scenario *sc, rt_world *w, int64_t from_us) {
  for (int i = 0; i < sc->n_work; i++) {
    const scn_work *wk = &sc->work[i];
    int64_t until = wk->until_us > 0 ? wk->until_us : sc->duration_us;
    for (int64_t t = wk->at_us; t <= until; t += wk->every_us) {
      if (t >= from_us && plan_one(sc, w, wk, t)) return -1;
      if (wk->every_us <= 0) break;
    }
  }
  return 0;
}

/* Figures the incident reports give: gate timeouts, resets per actor and
** their spacing, requests served and failed. */
static void add_figure(scn_result *res, const char *name, int64_t v, const char *unit) {
  if (res->n_figures >= 8) return;
  res->figure_names[res->n_figures] = name;
  res->figure_units[res->n_figures] = unit;
  res->figures[res->n_figures++] = v;
}

void scn__compute_figures(scn_result *res) {
  const sim_trace *t = &res->s->trace;
  int64_t timeouts = 0, ok = 0, failed = 0, first_ok = -1;
  uint32_t n = res->n_actors;
  int64_t *resets = calloc(n ? n : 1, sizeof *resets);
  int64_t *first = calloc(n ? n : 1, sizeof *first), *last = calloc(n ? n : 1, sizeof *last);
  for (size_t i = 0; resets && first && last && i < t->n; i++) {
    const sim_rec *r = &t->recs[i];
    if (r->kind == RT_EV_GATE_TIMEOUT && r->actor < n) {
      timeouts++;
      if (resets[r->actor]++ == 0) first[r->actor] = r->t_us;
      last[r->actor] = r->t_us;
    } else if (r->kind == RT_EV_REQUEST_OK) {
      ok++;
      if (first_ok < 0) first_ok = r->t_us;
    } else if (r->kind == RT_EV_REQUEST_FAIL) {
      failed++;
    }
  }
  uint32_t worst = 0;
  for (uint32_t a = 1; resets && a < n; a++)
    if (resets[a] > resets[worst]) worst = a;
  int64_t most = resets && n ? resets[worst] : 0;
  add_figure(res, "gate_timeouts", timeouts, "");
  add_figure(res, "resets_max_per_actor", most, "");
  add_figure(res, "reset_spacing_ms", most > 1 ? (last[worst] - first[worst]) / (most - 1) / 1000 : 0, "ms");
  add_figure(res, "requests_ok", ok, "");
  add_figure(res, "requests_failed", failed, "");
  add_figure(res, "first_request_ok_ms", first_ok < 0 ? -1 : first_ok / 1000, "ms");
  free(resets);
  free(first);
  free(last);
}

void scn__judge(const scn_case *cs, const scn_run_opts *o, scn_result *res) {
  uint32_t seen = 0;
  uint32_t hold = o->check_mask ? o->check_mask : cs->hold_mask;
  uint32_t violate = o->check_mask ? 0 : cs->violate_mask;
  for (size_t i = 0; i < chk_violation_count(res->checks); i++)
    seen |= 1u << chk_violation_at(res->checks, i)->inv;
  res->passed = 1;
  for (int inv = 0; inv < CHK_INVARIANT_COUNT; inv++) {
    uint32_t bit = 1u << inv;
    char msg[200];
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

/* stop_when_decided: the verdict is known once a "hold" invariant fails,
** or once every "violate" invariant has fired and none must hold. */
typedef struct decide_ctx {
  sim *s;
  uint32_t hold, violate, seen;
} decide_ctx;

static void decide_on_violation(void *ctx, const chk_violation *v) {
  decide_ctx *d = ctx;
  d->seen |= 1u << v->inv;
  if ((d->hold & d->seen) || (!d->hold && d->violate && (d->violate & ~d->seen) == 0))
    sim_request_stop(d->s);
}

static const flt_fault crash_fault = {FLT_CRASH, RT_NO_ACTOR, 0, 0, 0, 0, RT_STUCK_NONE, 0, 0};

static void crash_now(void *ctx) { flt_apply((rt_world *)ctx, &crash_fault); }

static int assemble(const scn_scenario *sc, int ci, const scn_run_opts *o, rt_world *w,
                    scn_result *res) {
  chk_params p = sc->params;
  p.enabled_mask = 0xffffffffu;
  res->checks = chk_new(&res->s->trace, &p);
  if (!res->checks || scn__facts_begin(sc, ci, o, res) ||
      (o->observer && scn__observe(o, res)) ||
      scn__add_actors(sc, w, res) || scn__seed_stale(sc, w) || scn__plan_workload(sc, w, 0) ||
      flt_plan(w, sc->faults, o->without_faults ? 0 : sc->n_faults, sc->duration_us) < 0) {
    scn__set_failure(res, "cannot assemble the world (out of memory or storage error)");
    return -1;
  }
  chk_set_actor_names(res->checks, (const char *const *)res->actor_names, res->n_actors);
  if (o->crash_after_write) rt_on_write(w, o->crash_after_write, crash_now, w);
  return 0;
}

int scn_run_case(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                 scn_result *res) {
  return scn_run_case_ex(sc, ci, seed, strategy, NULL, res);
}

int scn_run_case_ex(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                    const scn_run_opts *opts, scn_result *res) {
  static const scn_run_opts none = {0};
  const scn_run_opts *o = opts ? opts : &none;
  const scn_case *cs = &sc->cases[ci];
  if (!o->without_faults && scn__has_sigkill(sc))
    return scn__run_sigkill(sc, ci, seed, strategy, o, res);
  sim_config scfg = {seed, strategy, sc->pct_depth ? sc->pct_depth : 3, 10000};
  memset(res, 0, sizeof *res);
  res->seed = seed;
  res->strategy = strategy;
  res->s = calloc(1, sizeof *res->s);
  if (!res->s || sim_init(res->s, &scfg)) {
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
  decide_ctx dc = {res->s, o->check_mask ? o->check_mask : cs->hold_mask,
                   o->check_mask || chk_facts_count(res->facts) ? 0 : cs->violate_mask, 0};
  if (o->stop_when_decided) chk_on_violation(res->checks, decide_on_violation, &dc);
  sim_stop_reason why = sim_run(res->s, sc->duration_us, 0);
  if (o->stop_when_decided) chk_on_violation(res->checks, NULL, NULL);
  /* A world that went quiet still lives to the end of the scenario: the
  ** liveness checks judge the whole duration, not the last event. */
  if (why != SIM_STOP_REQUESTED && res->s->now_us < sc->duration_us)
    res->s->now_us = sc->duration_us;
  chk_finish(res->checks, res->s->now_us);
  scn__facts_end(w, res);
  res->writes = rt_write_count(w);
  rt_world_free(w);
  flt_reset();
  res->trace_hash = res->s->trace.hash;
  res->events = res->s->trace.count;
  res->end_us = res->s->now_us;
  scn__compute_figures(res);
  scn__judge(cs, o, res);
  scn__facts_judge(res);
  return 0;
}

void scn_result_free(scn_result *res) {
  if (res->checks) chk_free(res->checks);
  chk_facts_free(res->facts);
  if (res->s) sim_free(res->s);
  free(res->s);
  for (uint32_t i = 0; res->actor_names && i < res->n_actors; i++) free(res->actor_names[i]);
  free(res->actor_names);
  memset(res, 0, sizeof *res);
}
