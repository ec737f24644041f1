/*
** rpt_text.c: the terminal report of a run and the closing summary line.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reports/rpt_internal.h"
#include "runtime/rt_events.h"

#define RPT_TEXT_MAX_VIOLATIONS 10 /* shown in full; the rest are counted */
#define RPT_TEXT_MAX_WAITS 12      /* lines per "who waits" category */

typedef struct rpt_colors {
  const char *ok, *bad, *hi, *dim, *off;
} rpt_colors;

static rpt_colors rpt_palette(int color) {
  if (color == 1) return (rpt_colors){"\033[32m", "\033[1;31m", "\033[1;33m", "\033[2m", "\033[0m"};
  return (rpt_colors){"", "", "", "", ""};
}

static const char *rpt_or(const char *s, const char *dflt) {
  return (s && *s) ? s : dflt;
}

/* Writes " key=value" for one decoded field, in the text form. */
static void rpt_text_field(FILE *f, const rpt_run *r, const rpt__fval *fv) {
  char buf[32], key[32];
  size_t kl = strlen(fv->key);
  snprintf(key, sizeof key, "%s", fv->key);
  if ((fv->type == RT_F_US || fv->type == RT_F_AT) && kl > 3 && kl < sizeof key &&
      strcmp(key + kl - 3, "_us") == 0)
    key[kl - 3] = 0;
  const char *name;
  switch (fv->type) {
  case RT_F_INT: fprintf(f, " %s=%" PRId64, key, fv->v); break;
  case RT_F_US: case RT_F_AT:
    fprintf(f, " %s=%s", key, fv->type == RT_F_AT && fv->v < 0 ? "none" : rpt__fmt_s(buf, sizeof buf, fv->v));
    break;
  case RT_F_BOOL: fprintf(f, " %s=%s", key, fv->v ? "yes" : "no"); break;
  case RT_F_STR: fprintf(f, " %s=\"%s\"", key, fv->str); break;
  case RT_F_JSON: fprintf(f, " %s=%s", key, fv->str); break;
  case RT_F_ACTOR:
    fprintf(f, " %s=%s", key,
            fv->v >= 0 && fv->v <= (int64_t)RT_NO_ACTOR ? rpt__actor(r, (uint32_t)fv->v, buf) : "?");
    break;
  default:
    name = rt_schema_enum_name(fv->type, fv->v);
    if (name) fprintf(f, " %s=%s", key, name);
    else fprintf(f, " %s=%" PRId64, key, fv->v);
  }
}

/* "t=95.000s actor kind field=value..." (no newline). */
static void rpt_text_rec(FILE *f, const rpt_run *r, const sim_rec *rec) {
  char tb[32], ab[24], kb[24];
  rpt__fval fv[RT_FIELDS];
  fprintf(f, "t=%s %s %s", rpt__fmt_s(tb, sizeof tb, rec->t_us),
          rpt__actor(r, rec->actor, ab), rpt__kind_name(rec->kind, kb));
  int n = rpt__decode(r->trace, rec, fv);
  for (int i = 0; i < n; i++) rpt_text_field(f, r, &fv[i]);
}

void rpt_record_text(FILE *f, const rpt_run *r, const sim_rec *rec) {
  rpt_text_rec(f, r, rec);
  fputc('\n', f);
}

/* ---- facts ------------------------------------------------------------ */

#define RPT_FACT_QUOTE 300

/* One failed fact: its name and line, the quote, what was found, and the
** nearest candidate records. */
static void rpt_text_fact(FILE *f, const rpt_run *r, const chk_fact *fa,
                          const chk_fact_result *res, const rpt_colors *c) {
  char ab[24], kb[24];
  size_t n = strlen(fa->json);
  fprintf(f, "  %sfact \"%s\"%s failed (%s:%d): %s\n", c->bad, fa->name, c->off,
          rpt_or(r->scenario_file, "-"), fa->line, res->msg);
  fprintf(f, "    %.*s%s\n", (int)(n > RPT_FACT_QUOTE ? RPT_FACT_QUOTE : n), fa->json,
          n > RPT_FACT_QUOTE ? "..." : "");
  if (fa->form == CHK_FACT_END) return;
  int step = fa->form == CHK_FACT_SEQUENCE && res->found < fa->n_pat ? (int)res->found : 0;
  const chk_fact_pat *p = &fa->pat[step];
  const char *who = p->actor == UINT32_MAX ? "any actor" : rpt__actor(r, p->actor, ab);
  if (res->n_near == 0) {
    fprintf(f, "    no %s records on %s\n", rpt__kind_name(p->kind, kb), who);
    return;
  }
  fprintf(f, "    %s %s records on %s:\n", res->near_matches ? "matching" : "nearest",
          rpt__kind_name(p->kind, kb), who);
  for (int i = 0; i < res->n_near; i++) {
    fputs("      ", f);
    rpt_text_rec(f, r, &res->near[i]);
    fputc('\n', f);
  }
}

static void rpt_text_facts(FILE *f, const rpt_run *r, int verbose, const rpt_colors *c) {
  for (int i = 0; i < chk_facts_count(r->facts); i++) {
    const chk_fact_result *res = chk_facts_result(r->facts, i);
    const chk_fact *fa = chk_facts_fact(r->facts, i);
    if (!res->passed) rpt_text_fact(f, r, fa, res, c);
    else if (verbose) fprintf(f, "  fact \"%s\" holds: %s\n", fa->name, res->msg);
  }
}

/* ---- who waits on whom ---------------------------------------------- */

static void rpt_wait_line(FILE *f, const rpt_run *r, const rpt__wait *w, int64_t now) {
  char a1[24], a2[24], t1[32], d1[32];
  const char *who = rpt__actor(r, w->actor, a1);
  const char *str = r->trace ? sim_trace_str(r->trace, w->s) : "";
  rpt__fmt_s(t1, sizeof t1, w->cat == RPT__W_ALARM ? w->x : w->t);
  rpt__fmt_s(d1, sizeof d1, w->cat == RPT__W_ALARM ? now - w->x : now - w->t);
  switch (w->cat) {
  case RPT__W_GATE:
    fprintf(f, "      gate     %s holds its input gate since t=%s (%s", who, t1, d1);
    if (*str) fprintf(f, ", purpose \"%s\"", str);
    fputs(")\n", f);
    break;
  case RPT__W_RPC:
    fprintf(f, "      rpc      %s -> %s call %" PRId64 " \"%s\" unanswered since t=%s (%s)\n", who,
            w->x >= 0 && w->x <= (int64_t)RT_NO_ACTOR ? rpt__actor(r, (uint32_t)w->x, a2) : "?",
            w->id, str, t1, d1);
    break;
  case RPT__W_REQ:
    fprintf(f, "      request  %s request %" PRId64 " (%s) unanswered since t=%s (%s)\n", who,
            w->id, rpt_or(rt_schema_enum_name(RT_F_ENTRY, w->x), "?"), t1, d1);
    break;
  default:
    fprintf(f, "      alarm    %s alarm armed for t=%s", who, t1);
    if (w->x <= now) fprintf(f, " (%s overdue)\n", d1);
    else fprintf(f, " (in %s)\n", rpt__fmt_s(d1, sizeof d1, w->x - now));
  }
}

/* Replays the trace up to time `now` and prints what is still waiting. */
static void rpt_text_waits(FILE *f, const rpt_run *r, int64_t now) {
  char tb[32];
  const sim_trace *t = r->trace;
  fprintf(f, "    who waits on whom at t=%s:\n", rpt__fmt_s(tb, sizeof tb, now));
  if (!rpt__rec(t, 0)) {
    fputs("      (no kept trace records)\n", f);
    return;
  }
  rpt__waits ws = {0};
  rpt__waits_at(t, now, &ws);
  if (ws.oom) fputs("      (out of memory: list incomplete)\n", f);
  if (ws.n == 0) fputs("      nothing is waiting\n", f);
  for (int cat = 0; cat < RPT__W_COUNT; cat++) {
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < ws.n; i++) {
      if (ws.w[i].cat != cat) continue;
      total++;
      if (shown < RPT_TEXT_MAX_WAITS) {
        rpt_wait_line(f, r, &ws.w[i], now);
        shown++;
      }
    }
    if (total > shown) fprintf(f, "      ... and %zu more\n", total - shown);
  }
  free(ws.w);
}

/* ---- violations ------------------------------------------------------- */

#define RPT_TEXT_MAX_BETWEEN 6     /* cause lines between two chain records */

/* 1 if rec may explain what happened between two chain records of a
** violation on `actor`: a fault (of that actor or of every actor), a
** failed commit, a rolled-back transaction, a gate reset or a death of
** that actor. */
static int rpt_text_cause(const sim_rec *rec, uint32_t actor) {
  if (rec->kind == RT_EV_FAULT) return rec->actor == actor || rec->actor == RT_NO_ACTOR;
  if (rec->actor != actor) return 0;
  return rec->kind == RT_EV_STORAGE_FAIL || rec->kind == RT_EV_TXN_ROLLBACK ||
         rec->kind == RT_EV_GATE_TIMEOUT || rec->kind == RT_EV_ACTOR_DEATH;
}

/* The causes between chain records a and b (a < b), marked "+": the
** storage failure between two runs of an effect, the gate reset that cut a
** hook (issue #16 item 5). At most RPT_TEXT_MAX_BETWEEN lines, the last
** ones kept. */
static void rpt_text_between(FILE *f, const rpt_run *r, const chk_violation *v, uint64_t a, uint64_t b) {
  uint64_t idx[RPT_TEXT_MAX_BETWEEN];
  size_t n = 0, total = 0;
  if (a >= b || !rpt__rec(r->trace, a) || !rpt__rec(r->trace, b)) return;
  for (uint64_t i = a + 1; i < b; i++) {
    const sim_rec *rec = rpt__rec(r->trace, i);
    if (!rec || !rpt_text_cause(rec, v->actor)) continue;
    idx[n++ % RPT_TEXT_MAX_BETWEEN] = i;
    total++;
  }
  if (total > RPT_TEXT_MAX_BETWEEN) fprintf(f, "    + ... %zu earlier\n", total - RPT_TEXT_MAX_BETWEEN);
  size_t shown = total < RPT_TEXT_MAX_BETWEEN ? total : RPT_TEXT_MAX_BETWEEN;
  for (size_t k = 0; k < shown; k++) {
    fputs("    + ", f);
    rpt_text_rec(f, r, rpt__rec(r->trace, idx[(total - shown + k) % RPT_TEXT_MAX_BETWEEN]));
    fputc('\n', f);
  }
}

static void rpt_text_violation(FILE *f, const rpt_run *r, const chk_violation *v,
                               size_t k, const rpt_colors *c) {
  char ab[24], tb[32];
  fprintf(f, "  violation %zu/%zu: %s%s%s  actor %s  t=%s\n", k + 1, r->n_violations, c->hi,
          rpt__inv_name(v->inv), c->off, rpt__actor(r, v->actor, ab),
          rpt__fmt_s(tb, sizeof tb, v->t_us));
  size_t ml = strnlen(v->msg, sizeof v->msg);
  fprintf(f, "    %.*s\n", (int)ml, v->msg);
  int nc = v->n_chain < 0 ? 0 : v->n_chain > CHK_MAX_CHAIN ? CHK_MAX_CHAIN : v->n_chain;
  if (nc > 0) fputs("    chain:\n", f);
  for (int i = 0; i < nc; i++) {
    if (i > 0) rpt_text_between(f, r, v, v->chain[i - 1], v->chain[i]);
    const sim_rec *rec = rpt__rec(r->trace, v->chain[i]);
    fputs("      ", f);
    if (rec) rpt_text_rec(f, r, rec);
    else fprintf(f, "record #%" PRIu64 " (not kept)", v->chain[i]);
    fputc('\n', f);
  }
  if (v->inv == CHK_NO_WEDGE || v->inv == CHK_RECOVERY_FINISHES) rpt_text_waits(f, r, v->t_us);
}

static void rpt_text_figures(FILE *f, const rpt_run *r) {
  if (r->n_figures == 0) return;
  fputs("  figures:", f);
  for (size_t i = 0; i < r->n_figures; i++) {
    const rpt_figure *g = &r->figures[i];
    if (g->value < 0 && g->unit && !strcmp(g->unit, "ms")) /* a time that never came */
      fprintf(f, " %s=none", rpt_or(g->name, "?"));
    else
      fprintf(f, " %s=%" PRId64 "%s", rpt_or(g->name, "?"), g->value, rpt_or(g->unit, ""));
  }
  fputc('\n', f);
}

/* Whether the expectation text ("hold: a, b; violate: c, d") lists name
** under violate. */
static int rpt_expected_violation(const char *expect, const char *name) {
  const char *p = expect ? strstr(expect, "violate:") : NULL;
  size_t n = strlen(name);
  if (!p) return 0;
  for (p += 8; *p && *p != ';';) {
    while (*p == ' ' || *p == ',') p++;
    size_t k = strcspn(p, ",;");
    while (k > 0 && p[k - 1] == ' ') k--;
    if (k == n && !strncmp(p, name, n)) return 1;
    p += strcspn(p, ",;");
  }
  return 0;
}

/* Prints the passed run's violated invariants that expect.violate lists
** (want 1) or does not (want 0), each once, in invariant order, after sep;
** returns how many. */
static int rpt_text_violated(FILE *f, const rpt_run *r, int want, const char *sep) {
  int last = -1, n = 0; /* by number: user invariant numbers have no bound */
  for (;;) {
    int next = -1;
    for (size_t i = 0; r->passed && r->violations && i < r->n_violations; i++) {
      int inv = (int)r->violations[i].inv;
      if (inv > last && (next < 0 || inv < next) &&
          rpt_expected_violation(r->expect, rpt__inv_name((chk_invariant)inv)) == want)
        next = inv;
    }
    if (next < 0) break;
    fprintf(f, "%s%s", n++ ? ", " : sep, rpt__inv_name((chk_invariant)next));
    last = next;
  }
  return n;
}

/* The one line of a run: PASS/FAIL, scenario, [case] unless the run's
** variant is "default" or absent, seed, strategy, events, end, hash; a
** passed run with violations ends "X, Y violated as expected" (those
** expect.violate lists) and "Z violated (not judged: not in expect)" (the
** others: a case judges only what it names). */
static void rpt_text_header(FILE *f, const rpt_run *r, const rpt_colors *c) {
  char dur[32];
  int show_case = r->variant && *r->variant && strcmp(r->variant, "default") != 0;
  fprintf(f, "%s%s%s %s%s%s%s seed=0x%" PRIx64 " %s %" PRIu64 " events %s hash=0x%016" PRIx64,
          r->passed ? c->ok : c->bad, r->passed ? "PASS" : "FAIL", c->off,
          rpt_or(r->scenario_name, "(unnamed)"), show_case ? " [" : "",
          show_case ? r->variant : "", show_case ? "]" : "", r->seed, rpt_or(r->strategy, "-"),
          r->events, rpt__fmt_dur(dur, sizeof dur, r->end_us), r->trace_hash);
  int n = rpt_text_violated(f, r, 1, " ");
  if (n) fputs(" violated as expected", f);
  if (rpt_text_violated(f, r, 0, n ? "; " : " ")) fputs(" violated (not judged: not in expect)", f);
  fputc('\n', f);
}

/* How many violations from i on repeat violation i's (invariant, actor),
** and the time of the last of them. */
static size_t rpt_text_repeats(const rpt_run *r, size_t i, int64_t *last_us) {
  size_t n = 0;
  *last_us = r->violations[i].t_us;
  for (size_t k = i + 1; k < r->n_violations; k++) {
    const chk_violation *v = &r->violations[k];
    if (v->inv != r->violations[i].inv || v->actor != r->violations[i].actor) continue;
    n++;
    *last_us = v->t_us;
  }
  return n;
}

/* 1 if an earlier violation has violation i's (invariant, actor). */
static int rpt_text_seen_before(const rpt_run *r, size_t i) {
  for (size_t k = 0; k < i; k++)
    if (r->violations[k].inv == r->violations[i].inv && r->violations[k].actor == r->violations[i].actor)
      return 1;
  return 0;
}

/* The errors of script callbacks (script_error records, issue #13): the
** first few, each with its file:line message and traceback. */
static void rpt_text_script_errors(FILE *f, const rpt_run *r, const rpt_colors *c) {
  size_t shown = 0;
  for (size_t i = 0; r->trace && i < r->trace->n; i++) {
    const sim_rec *rec = &r->trace->recs[i];
    char ab[24], tb[32];
    if (rec->kind != RT_EV_SCRIPT_ERROR) continue;
    if (shown++ == 3) {
      fprintf(f, "  ... and more script errors (see --json)\n");
      break;
    }
    fprintf(f, "  %sscript error%s in %s on %s at t=%s:\n", c->bad, c->off,
            rpt_or(sim_trace_str(r->trace, rec->s), "?"), rpt__actor(r, rec->actor, ab),
            rpt__fmt_s(tb, sizeof tb, rec->t_us));
    const char *msg = rpt_or(sim_trace_str(r->trace, rec->s2), "?");
    while (*msg) { /* indented, line by line */
      const char *nl = strchr(msg, '\n');
      int len = nl ? (int)(nl - msg) : (int)strlen(msg);
      fprintf(f, "    %.*s\n", len, msg);
      msg += len + (nl ? 1 : 0);
    }
  }
}

void rpt_text_run(FILE *f, const rpt_run *r, int verbose, int color) {
  rpt_colors c = rpt_palette(color);
  rpt_text_header(f, r, &c);
  if (!r->passed) {
    fprintf(f, "  %sfailure:%s %s\n", c.bad, c.off, rpt_or(r->failure, "expectation failed"));
  }
  if (!r->passed || verbose) {
    if (r->expect && *r->expect) fprintf(f, "  expected: %s\n", r->expect);
    if (r->variant && *r->variant) fprintf(f, "  variant: %s\n", r->variant);
  }
  rpt_text_facts(f, r, verbose, &c);
  if (!r->passed || verbose) rpt_text_script_errors(f, r, &c);
  if (verbose) {
    rpt_text_figures(f, r);
    fprintf(f, "  %swall %.3fs%s\n", c.dim, r->wall_s, c.off);
  }
  /* Violations of the same invariant on the same actor are shown once,
  ** with how often they repeat and when the last one was. */
  size_t nv = r->violations ? r->n_violations : 0, shown = 0;
  for (size_t i = 0; i < nv; i++) {
    const chk_violation *v = &r->violations[i];
    char ab[24], tb[32];
    int64_t last;
    if (rpt_text_seen_before(r, i)) continue;
    size_t again = rpt_text_repeats(r, i, &last);
    if (r->passed) {
      if (!verbose) break;
      fprintf(f, "  violation (%s): %s actor %s t=%s",
              rpt_expected_violation(r->expect, rpt__inv_name(v->inv)) ? "expected" : "not judged",
              rpt__inv_name(v->inv), rpt__actor(r, v->actor, ab), rpt__fmt_s(tb, sizeof tb, v->t_us));
      if (again) fprintf(f, " (and %zu more, the last at t=%s)", again, rpt__fmt_s(tb, sizeof tb, last));
      fputc('\n', f);
      continue;
    }
    if (shown++ == RPT_TEXT_MAX_VIOLATIONS) {
      fprintf(f, "  ... and more violations (see --json)\n");
      break;
    }
    rpt_text_violation(f, r, v, i, &c);
    if (again)
      fprintf(f, "    the same violation %zu more times on this actor, the last at t=%s\n", again,
              rpt__fmt_s(tb, sizeof tb, last));
  }
  if (!r->passed && r->replay && *r->replay) fprintf(f, "  %sreplay:%s %s\n", c.hi, c.off, r->replay);
}

void rpt_text_summary(FILE *f, size_t passed, size_t failed) {
  fprintf(f, "%zu passed, %zu failed\n", passed, failed);
}

void rpt_text_summary_errors(FILE *f, size_t passed, size_t failed, size_t errors) {
  if (!errors) {
    rpt_text_summary(f, passed, failed);
    return;
  }
  fprintf(f, "%zu passed, %zu failed, %zu error%s\n", passed, failed, errors, errors == 1 ? "" : "s");
}
