/*
** scn_facts.c: the facts of a case in a run (docs/scenarios.md, "facts").
** Record facts are judged by the engine of checks/chk_facts.c as the trace
** is written; end-state facts are read here from the world at the end of
** the run through the runtime's query doors (rt_query_rows, rt_alarm_of,
** rt_keepalive_refs), before the world is freed.
*/
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "scenarios/scn_internal.h"

int scn__facts_begin(const scn_scenario *sc, int ci, const scn_run_opts *o, scn_result *res) {
  if (o->check_mask || sc->n_facts == 0) return 0; /* judged by invariants only */
  res->facts = chk_facts_new(&res->s->trace, sc->facts, sc->n_facts, ci, o->robust_facts_only);
  return res->facts ? 0 : -1;
}

static void fmt_time(char *buf, size_t cap, int64_t us) {
  if (us < 0) snprintf(buf, cap, "none");
  else snprintf(buf, cap, "%" PRId64 ".%03" PRId64 "s", us / 1000000, us / 1000 % 1000);
}

static void end_table(rt_world *w, const chk_fact *f, chk_facts *fs, int i) {
  const chk_fact_end *e = &f->end;
  rt_qcol cols[CHK_FACT_MAX_WHERE];
  char want[64], msg[256];
  for (int k = 0; k < e->n_cols; k++)
    cols[k] = (rt_qcol){e->cols[k], e->kinds[k], e->ivals[k], e->vals[k]};
  int64_t n = rt_query_rows(w, e->actor, e->table, cols, e->n_cols);
  chk_facts_count_text(f->count_min, f->count_max, want, sizeof want);
  if (n < 0) {
    snprintf(msg, sizeof msg, "cannot read %s", e->table);
    chk_facts_set(fs, i, 0, n, msg);
    return;
  }
  snprintf(msg, sizeof msg, "expected %s matching row%s in %s at the end, found %" PRId64, want,
           f->count_min == 1 && f->count_max == 1 ? "" : "s", e->table, n);
  chk_facts_set(fs, i, chk_facts_count_ok(n, f->count_min, f->count_max), n, msg);
}

static void end_alarm(rt_world *w, const chk_fact *f, chk_facts *fs, int i) {
  int64_t at = rt_alarm_of(w, f->end.actor);
  char got[32], lo[32], hi[32], msg[256];
  int ok = f->end.lo < 0 ? at < 0 : at >= f->end.lo && at <= f->end.hi;
  fmt_time(got, sizeof got, at);
  fmt_time(lo, sizeof lo, f->end.lo);
  fmt_time(hi, sizeof hi, f->end.hi);
  if (f->end.lo < 0)
    snprintf(msg, sizeof msg, "expected no alarm at the end, found %s%s", at < 0 ? "" : "one at ", got);
  else if (f->end.lo == f->end.hi)
    snprintf(msg, sizeof msg, "expected the alarm at %s at the end, found %s", lo, got);
  else
    snprintf(msg, sizeof msg, "expected the alarm between %s and %s at the end, found %s", lo, hi,
             got);
  chk_facts_set(fs, i, ok, at, msg);
}

static void end_refs(rt_world *w, const chk_fact *f, chk_facts *fs, int i) {
  int64_t n = rt_keepalive_refs(w, f->end.actor);
  char want[64], msg[256];
  chk_facts_count_text(f->count_min, f->count_max, want, sizeof want);
  snprintf(msg, sizeof msg, "expected %s keepAlive refs at the end, found %" PRId64, want, n);
  chk_facts_set(fs, i, chk_facts_count_ok(n, f->count_min, f->count_max), n, msg);
}

void scn__facts_end(rt_world *w, scn_result *res) {
  chk_facts *fs = res->facts;
  if (!fs) return;
  for (int i = 0; i < chk_facts_count(fs); i++) {
    const chk_fact *f = chk_facts_fact(fs, i);
    if (f->form != CHK_FACT_END || !w) continue;
    if (f->end.what == CHK_END_TABLE) end_table(w, f, fs, i);
    else if (f->end.what == CHK_END_ALARM) end_alarm(w, f, fs, i);
    else end_refs(w, f, fs, i);
  }
  chk_facts_finish(fs, res->s->now_us);
}

void scn__facts_judge(scn_result *res) {
  for (int i = 0; i < chk_facts_count(res->facts); i++) {
    const chk_fact_result *r = chk_facts_result(res->facts, i);
    if (r->passed) continue;
    if (res->passed) {
      char msg[512];
      snprintf(msg, sizeof msg, "fact \"%s\" failed: %s", chk_facts_fact(res->facts, i)->name,
               r->msg);
      scn__set_failure(res, msg);
    }
    res->passed = 0;
  }
}

int scn__observe(const scn_run_opts *o, scn_result *res) {
  if (o->trace_out) *o->trace_out = &res->s->trace;
  return sim_trace_observe(&res->s->trace, o->observer, o->observer_ctx);
}
