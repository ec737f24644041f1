/*
** rpt_html.c: one self-contained HTML page for runs and swarms.
**
** The page is <style> + a JSON document in <script type="application/json"
** id="rv-data"> + <script>; the CSS and JavaScript (reports/html/, embedded
** by reports/html/embed.sh into rpt_html_assets.h) draw the timeline from
** the JSON in the browser. Nothing is fetched: the page works from file://.
**
** Records are written generically, through rpt__decode (the per-kind field
** table), as [index, t_us, kind, actor, key, value, key, value, ...] with
** keys numbered in a per-run table: a new kind shows with its fields and
** needs no change here. Spans are paired here (rpt_html_fold.c) over the
** whole trace, so a span whose end was folded is still drawn right.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reports/rpt_html_assets.h"
#include "reports/rpt_internal.h"
#include "runtime/rt_events.h"

#define RPT_HTML_JS_EXACT 9007199254740992LL /* 2^53 */
#define RPT_HTML_MAX_KEYS 256
#define RPT_HTML_MAX_FAULTS 20000

static const char *const rpt_sp_names[RPT__SP_COUNT] = {
    "gate", "startup", "request", "alarm", "fiber", "rpc", "toolrun", "recovery", "hook", "onstart"};

/* A JSON string that is safe inside <script>: '<', '>', '&', U+2028 and
** U+2029 are \u-escaped, invalid UTF-8 becomes '?'. NULL is null. */
static void hj_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int n = rpt__utf8_len(p);
    if (n == 0) {
      fputc('?', f);
      p++;
    } else if (*p == '"' || *p == '\\') {
      fputc('\\', f);
      fputc(*p++, f);
    } else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') {
      fprintf(f, "\\u%04x", *p++);
    } else if (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
      fprintf(f, "\\u%04x", p[2] == 0xa8 ? 0x2028 : 0x2029);
      p += 3;
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
  fputc('"', f);
}

/* An integer JavaScript keeps exactly, else its decimal string. */
static void hj_int(FILE *f, int64_t v) {
  if (v > -RPT_HTML_JS_EXACT && v < RPT_HTML_JS_EXACT) fprintf(f, "%" PRId64, v);
  else fprintf(f, "\"%" PRId64 "\"", v);
}

static void hj_hex(FILE *f, uint64_t v, int pad) {
  char b[24];
  fprintf(f, "\"%s\"", rpt__hex(b, sizeof b, v, pad));
}

static void hj_key(FILE *f, int *first, const char *k) {
  fputs(*first ? "\"" : ",\"", f);
  fputs(k, f);
  fputs("\":", f);
  *first = 0;
}

/* Text inside an HTML element: & < > " escaped. */
static void h_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

/* ---- one run -------------------------------------------------------------- */

typedef struct hkeys {
  const char *k[RPT_HTML_MAX_KEYS];
  int n;
} hkeys;

/* The number of key k in the run's key table (added when new). */
static int hk_id(hkeys *ks, const char *k) {
  for (int i = 0; i < ks->n; i++)
    if (ks->k[i] == k || !strcmp(ks->k[i], k)) return i;
  if (ks->n == RPT_HTML_MAX_KEYS) return -1;
  ks->k[ks->n] = k;
  return ks->n++;
}

static void h_value(FILE *f, const rpt_run *r, const rpt__fval *fv) {
  char ab[24];
  const char *name;
  switch (fv->type) {
  case RT_F_STR: case RT_F_JSON: hj_str(f, fv->str); break;
  case RT_F_BOOL: fputs(fv->v ? "true" : "false", f); break;
  case RT_F_ACTOR:
    if (fv->v < 0 || fv->v >= (int64_t)RT_NO_ACTOR) fputs("null", f);
    else hj_str(f, rpt__actor(r, (uint32_t)fv->v, ab));
    break;
  case RT_F_INT: case RT_F_US: case RT_F_AT: hj_int(f, fv->v); break;
  default:
    name = rt_schema_enum_name(fv->type, fv->v);
    if (name) hj_str(f, name);
    else hj_int(f, fv->v);
  }
}

static int64_t h_actor(uint32_t a) {
  return a == RT_NO_ACTOR ? -1 : (int64_t)a;
}

static void h_rec(FILE *f, const rpt_run *r, hkeys *ks, const sim_rec *rec, uint64_t idx) {
  rpt__fval fv[RT_FIELDS];
  int n = rpt__decode(r->trace, rec, fv);
  fprintf(f, "[%" PRIu64 ",", idx);
  hj_int(f, rec->t_us);
  fprintf(f, ",%" PRIu32 ",%" PRId64, rec->kind, h_actor(rec->actor));
  for (int i = 0; i < n; i++) {
    int k = hk_id(ks, fv[i].key);
    if (k < 0) continue;
    fprintf(f, ",%d,", k);
    h_value(f, r, &fv[i]);
  }
  fputc(']', f);
}

static void h_records(FILE *f, const rpt_run *r, const rpt__folding *fo, hkeys *ks) {
  const sim_trace *t = r->trace;
  int first = 1;
  fputs(",\"recs\":[", f);
  for (size_t i = 0; fo->keep && i < t->n; i++) {
    if (!fo->keep[i]) continue;
    fputs(first ? "\n" : ",\n", f);
    first = 0;
    h_rec(f, r, ks, &t->recs[i], i);
  }
  fputs("]", f);
}

/* Kind names of every kind present: {"3":"gate_acquire",...}. */
static void h_kinds(FILE *f, const sim_trace *t) {
  uint32_t max = RT_EV_KIND_COUNT;
  for (size_t i = 0; i < t->n; i++)
    if (t->recs[i].kind >= max && t->recs[i].kind < 65536) max = t->recs[i].kind + 1;
  fputs(",\"kinds\":{", f);
  for (uint32_t k = 0; k < max; k++) {
    char b[24];
    fprintf(f, "%s\"%" PRIu32 "\":", k ? "," : "", k);
    hj_str(f, rpt__kind_name(k, b));
  }
  fputc('}', f);
}

static void h_actors(FILE *f, const rpt_run *r) {
  uint32_t n = r->n_actors;
  const sim_trace *t = r->trace;
  for (size_t i = 0; t && t->keep && i < t->n; i++)
    if (t->recs[i].actor != RT_NO_ACTOR && t->recs[i].actor >= n && t->recs[i].actor < 4096)
      n = t->recs[i].actor + 1;
  fputs(",\"actors\":[", f);
  for (uint32_t a = 0; a < n; a++) {
    char b[24];
    if (a) fputc(',', f);
    hj_str(f, rpt__actor(r, a, b));
  }
  fputs("],\"active\":[", f);
  uint8_t *seen = calloc((size_t)n + 1, 1);
  for (size_t i = 0; seen && t && t->keep && i < t->n; i++) {
    uint32_t a = t->recs[i].actor;
    seen[a == RT_NO_ACTOR || a >= n ? n : a] = 1;
  }
  int first = 1;
  for (uint32_t a = 0; seen && a <= n; a++) {
    if (!seen[a]) continue;
    fprintf(f, "%s%" PRId64, first ? "" : ",", a == n ? (int64_t)-1 : (int64_t)a);
    first = 0;
  }
  free(seen);
  fputc(']', f);
}

static void h_spans(FILE *f, const rpt__folding *fo) {
  fputs(",\"spans\":[", f);
  int first = 1;
  for (size_t i = 0; i < fo->n_spans; i++) {
    const rpt__hspan *s = &fo->spans[i];
    int open_kept = fo->keep[s->open];
    int close_kept = s->close != RPT__NO_REC && fo->keep[s->close];
    if (!open_kept && !close_kept) continue;
    fprintf(f, "%s[%" PRId64 ",%d,", first ? "\n" : ",\n", h_actor(s->actor), s->cls);
    first = 0;
    hj_int(f, s->t0);
    fputc(',', f);
    hj_int(f, s->close == RPT__NO_REC ? -1 : s->t1);
    fprintf(f, ",%" PRIu64 ",", s->open);
    if (s->close == RPT__NO_REC) fputs("-1", f);
    else fprintf(f, "%" PRIu64, s->close);
    fputc(']', f);
  }
  fputc(']', f);
}

static void h_faults(FILE *f, const rpt_run *r) {
  const sim_trace *t = r->trace;
  size_t n = 0;
  fputs(",\"faults\":[", f);
  for (size_t i = 0; i < t->n && n < RPT_HTML_MAX_FAULTS; i++) {
    const sim_rec *rec = &t->recs[i];
    if (rec->kind != RT_EV_FAULT) continue;
    fprintf(f, "%s[%zu,", n++ ? ",\n" : "\n", i);
    hj_int(f, rec->t_us);
    fprintf(f, ",%" PRId64 ",", h_actor(rec->actor));
    hj_str(f, sim_trace_str(t, rec->s));
    fputc(',', f);
    hj_str(f, sim_trace_str(t, rec->s2));
    fputc(']', f);
  }
  fputc(']', f);
}

/* Per-kind and per-actor record counts of one fold. */
static void h_fold_counts(FILE *f, const rpt_run *r, const rpt__fold *fd) {
  const sim_trace *t = r->trace;
  uint32_t counts[RT_EV_KIND_COUNT + 1] = {0};
  for (uint64_t i = fd->first; i <= fd->last; i++) {
    uint32_t k = t->recs[i].kind;
    counts[k < RT_EV_KIND_COUNT ? k : RT_EV_KIND_COUNT]++;
  }
  fputs(",\"kinds\":{", f);
  int first = 1;
  for (uint32_t k = 0; k <= RT_EV_KIND_COUNT; k++) {
    if (!counts[k]) continue;
    fprintf(f, "%s\"%" PRIu32 "\":%" PRIu32, first ? "" : ",", k, counts[k]);
    first = 0;
  }
  fputc('}', f);
}

static void h_folds(FILE *f, const rpt_run *r, const rpt__folding *fo) {
  fputs(",\"folds\":[", f);
  for (size_t i = 0; i < fo->n_folds; i++) {
    const rpt__fold *fd = &fo->folds[i];
    fprintf(f, "%s{\"first\":%" PRIu64 ",\"last\":%" PRIu64 ",\"t0\":", i ? ",\n" : "\n",
            fd->first, fd->last);
    hj_int(f, fd->t0);
    fputs(",\"t1\":", f);
    hj_int(f, fd->t1);
    fprintf(f, ",\"records\":%" PRIu64 ",\"repeats\":%" PRIu64 ",\"period\":%" PRIu32, fd->records,
            fd->repeats, fd->period);
    h_fold_counts(f, r, fd);
    fputc('}', f);
  }
  fputc(']', f);
}

static const char *const rpt_wait_cats[RPT__W_COUNT] = {"gate", "rpc", "request", "alarm"};

/* [[cat, actor, to, since_us, x, label, record], ...] pending at the
** violation; record: the index of the record that started the wait. */
static int h_waits(FILE *f, const rpt_run *r, int64_t now) {
  rpt__waits ws = {0};
  rpt__waits_at(r->trace, now, &ws);
  fputs(",\"waits\":[", f);
  for (size_t i = 0; i < ws.n; i++) {
    const rpt__wait *w = &ws.w[i];
    int64_t to = w->cat == RPT__W_RPC && w->x >= 0 && w->x < (int64_t)RT_NO_ACTOR ? w->x : -1;
    fprintf(f, "%s[\"%s\",%" PRId64 ",%" PRId64 ",", i ? "," : "", rpt_wait_cats[w->cat],
            h_actor(w->actor), to);
    hj_int(f, w->t);
    fputc(',', f);
    hj_int(f, w->cat == RPT__W_REQ ? w->id : w->x);
    fputc(',', f);
    if (w->cat == RPT__W_REQ) hj_str(f, rt_schema_enum_name(RT_F_ENTRY, w->x));
    else hj_str(f, r->trace ? sim_trace_str(r->trace, w->s) : "");
    fprintf(f, ",%" PRIu64 "]", w->idx);
  }
  fputc(']', f);
  int oom = ws.oom;
  free(ws.w);
  return oom ? -1 : 0;
}

static int h_violations(FILE *f, const rpt_run *r) {
  size_t nv = r->violations ? r->n_violations : 0;
  int rc = 0;
  fputs(",\"viols\":[", f);
  for (size_t i = 0; i < nv; i++) {
    const chk_violation *v = &r->violations[i];
    int nc = v->n_chain < 0 ? 0 : v->n_chain > CHK_MAX_CHAIN ? CHK_MAX_CHAIN : v->n_chain;
    fprintf(f, "%s{\"inv\":", i ? ",\n" : "\n");
    hj_str(f, rpt__inv_name(v->inv));
    fprintf(f, ",\"actor\":%" PRId64 ",\"t\":", h_actor(v->actor));
    hj_int(f, v->t_us);
    fputs(",\"msg\":", f);
    char msg[sizeof v->msg + 1];
    memcpy(msg, v->msg, sizeof v->msg);
    msg[sizeof v->msg] = 0;
    hj_str(f, msg);
    fputs(",\"at\":", f);
    if (v->at_index == UINT64_MAX) fputs("-1", f);
    else fprintf(f, "%" PRIu64, v->at_index);
    fputs(",\"chain\":[", f);
    for (int c = 0; c < nc; c++) fprintf(f, "%s%" PRIu64, c ? "," : "", v->chain[c]);
    fputc(']', f);
    if (h_waits(f, r, v->t_us)) rc = -1;
    fputc('}', f);
  }
  fputc(']', f);
  return rc;
}

/* The case's facts: [{name, line, passed, msg, json, near, matches}]. */
static void h_facts(FILE *f, const rpt_run *r) {
  int n = r->facts ? chk_facts_count(r->facts) : 0;
  fputs(",\"facts\":[", f);
  for (int i = 0; i < n; i++) {
    const chk_fact *fa = chk_facts_fact(r->facts, i);
    const chk_fact_result *res = chk_facts_result(r->facts, i);
    int first = 1;
    fputs(i ? ",\n{" : "\n{", f);
    hj_key(f, &first, "name"), hj_str(f, fa->name);
    hj_key(f, &first, "line"), hj_int(f, fa->line);
    hj_key(f, &first, "passed"), fputs(res->passed ? "true" : "false", f);
    hj_key(f, &first, "msg"), hj_str(f, res->msg);
    hj_key(f, &first, "json"), hj_str(f, fa->json);
    hj_key(f, &first, "matches"), fputs(res->near_matches ? "true" : "false", f);
    fputs(",\"near\":[", f);
    for (int k = 0; k < res->n_near && k < CHK_FACT_NEAR; k++)
      fprintf(f, "%s%" PRIu64, k ? "," : "", res->near_idx[k]);
    fputs("]}", f);
  }
  fputc(']', f);
}

static void h_header(FILE *f, const rpt_run *r) {
  int first = 1;
  fputc('{', f);
  hj_key(f, &first, "scenario"), hj_str(f, r->scenario_name);
  hj_key(f, &first, "file"), hj_str(f, r->scenario_file);
  hj_key(f, &first, "case"), hj_str(f, r->variant);
  hj_key(f, &first, "seed"), hj_hex(f, r->seed, 0);
  hj_key(f, &first, "strategy"), hj_str(f, r->strategy);
  hj_key(f, &first, "hash"), hj_hex(f, r->trace_hash, 1);
  hj_key(f, &first, "events"), hj_int(f, (int64_t)(r->events > INT64_MAX ? INT64_MAX : r->events));
  hj_key(f, &first, "end_us"), hj_int(f, r->end_us);
  hj_key(f, &first, "passed"), fputs(r->passed ? "true" : "false", f);
  hj_key(f, &first, "expect"), hj_str(f, r->expect);
  hj_key(f, &first, "failure"), hj_str(f, r->passed ? NULL : r->failure);
  hj_key(f, &first, "replay"), hj_str(f, r->replay);
  fputs(",\"figures\":[", f);
  for (size_t i = 0; i < r->n_figures; i++) {
    fputs(i ? ",[" : "[", f);
    hj_str(f, r->figures[i].name);
    fputc(',', f);
    hj_int(f, r->figures[i].value);
    fputc(',', f);
    hj_str(f, r->figures[i].unit ? r->figures[i].unit : "");
    fputc(']', f);
  }
  fputc(']', f);
}

static int h_run(FILE *f, const rpt_run *r, uint64_t max_records, uint64_t max_bytes) {
  rpt__folding fo;
  const sim_trace *t = rpt__rec(r->trace, 0) ? r->trace : NULL;
  size_t nv = r->violations ? r->n_violations : 0;
  int rc = rpt__html_fold(t, r->violations, nv, r->facts, max_records, max_bytes, &fo);
  h_header(f, r);
  h_actors(f, r);
  fprintf(f, ",\"total\":%zu,\"kept\":%" PRIu64 ",\"span_kinds\":[", t ? t->n : (size_t)0, fo.kept);
  for (int i = 0; i < RPT__SP_COUNT; i++) fprintf(f, "%s\"%s\"", i ? "," : "", rpt_sp_names[i]);
  fputc(']', f);
  if (h_violations(f, r)) rc = -1;
  h_facts(f, r);
  if (t && !rc) {
    hkeys ks = {.n = 0};
    h_kinds(f, t);
    h_records(f, r, &fo, &ks);
    h_spans(f, &fo);
    h_faults(f, r);
    h_folds(f, r, &fo);
    fputs(",\"keys\":[", f);
    for (int i = 0; i < ks.n; i++) {
      if (i) fputc(',', f);
      hj_str(f, ks.k[i]);
    }
    fputc(']', f);
  }
  fputc('}', f);
  rpt__html_fold_free(&fo);
  return rc;
}

/* ---- a swarm ----------------------------------------------------------------- */

static void h_swarm(FILE *f, const rpt_swarm *s) {
  int first = 1;
  fputc('{', f);
  hj_key(f, &first, "title"), hj_str(f, s->title);
  hj_key(f, &first, "runs"), hj_int(f, (int64_t)s->runs);
  hj_key(f, &first, "failed"), hj_int(f, (int64_t)s->failed);
  hj_key(f, &first, "seeds"), hj_int(f, (int64_t)s->seeds);
  fputs(",\"sigs\":[", f);
  for (size_t i = 0; i < s->n_sigs; i++) {
    const rpt_swarm_sig *g = &s->sigs[i];
    int fk = 1;
    fputs(i ? ",\n{" : "\n{", f);
    hj_key(f, &fk, "sig"), hj_str(f, g->signature);
    hj_key(f, &fk, "scenario"), hj_str(f, g->scenario);
    hj_key(f, &fk, "case"), hj_str(f, g->case_label);
    hj_key(f, &fk, "count"), hj_int(f, (int64_t)g->count);
    hj_key(f, &fk, "first_seed"), hj_hex(f, g->first_seed, 0);
    hj_key(f, &fk, "replay"), hj_str(f, g->replay);
    fputc('}', f);
  }
  fputs("],\"recovery_us\":[", f);
  for (size_t i = 0; i < s->n_recovery; i++) {
    if (i) fputc(',', f);
    hj_int(f, s->recovery_us[i]);
  }
  fputs("],\"kinds\":[", f);
  for (size_t i = 0; i < s->n_kinds; i++) {
    fputs(i ? ",[" : "[", f);
    hj_str(f, s->kinds[i].kind);
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", s->kinds[i].runs, s->kinds[i].failed,
            s->kinds[i].faults);
  }
  fputs("],\"probes\":[", f); /* [name, runs, first seed, scenario, case] */
  for (size_t i = 0; s->probes && i < s->n_probes; i++) {
    const rpt_swarm_probe *p = &s->probes[i];
    fputs(i ? ",[" : "[", f);
    hj_str(f, p->name);
    fprintf(f, ",%" PRIu64 ",", p->runs);
    hj_hex(f, p->first_seed, 0);
    fputc(',', f);
    hj_str(f, p->runs ? p->scenario : NULL);
    fputc(',', f);
    hj_str(f, p->runs ? p->case_label : NULL);
    fputc(']', f);
  }
  fputs("]}", f);
}

/* ---- the page ------------------------------------------------------------------ */

void rpt_html_begin(rpt_html_stream *w, FILE *f, const char *title, const rpt_html_opts *opts) {
  memset(w, 0, sizeof *w);
  w->f = f;
  w->max_records = opts && opts->max_records ? opts->max_records : RPT_HTML_MAX_RECORDS;
  w->max_bytes = opts && opts->max_bytes ? opts->max_bytes : RPT_HTML_MAX_BYTES;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"generator\" content=\"revenant\">\n<title>revenant: ", f);
  h_text(f, title ? title : "report");
  fputs("</title>\n<style>\n", f);
  fputs(rpt_html_css, f);
  fputs("</style>\n</head>\n<body>\n<div id=\"rv-app\">"
        "<noscript>This report needs JavaScript.</noscript></div>\n"
        "<script type=\"application/json\" id=\"rv-data\">\n{\"schema\":\"revenant.html/1\",\"runs\":[", f);
}

void rpt_html_add(rpt_html_stream *w, const rpt_run *r) {
  fputs(w->n++ ? ",\n" : "\n", w->f);
  if (h_run(w->f, r, w->max_records, w->max_bytes)) w->err = 1;
}

int rpt_html_end(rpt_html_stream *w, const rpt_swarm *swarm) {
  FILE *f = w->f;
  fputc(']', f);
  if (swarm) {
    fputs(",\"swarm\":", f);
    h_swarm(f, swarm);
  }
  fputs("}\n</script>\n<script>\n", f);
  fputs(rpt_html_js, f);
  fputs("</script>\n</body>\n</html>\n", f);
  if (ferror(f)) w->err = 1;
  return w->err ? -1 : 0;
}

int rpt_html_write(FILE *f, const rpt_run *runs, size_t n, const rpt_swarm *swarm,
                   const rpt_html_opts *opts) {
  char title[32];
  const char *t = swarm ? "swarm" : n == 1 ? runs[0].scenario_name : NULL;
  if (!swarm && n != 1) {
    snprintf(title, sizeof title, "%zu runs", n);
    t = title;
  }
  rpt_html_stream w;
  rpt_html_begin(&w, f, t, opts);
  for (size_t i = 0; i < n; i++) rpt_html_add(&w, &runs[i]);
  return rpt_html_end(&w, swarm);
}
