/*
** rpt_json.c: the results JSON document and the repro file (cJSON).
**
** Key order is fixed by construction (cJSON keeps insertion order); the
** schema is in docs/reports.md. Integers follow the 10^15 rule of
** rpt__json_int; seeds and hashes are hex strings.
*/
#include <stdlib.h>
#include <string.h>

#include "reports/rpt_internal.h"
#include "runtime/rt_events.h"

typedef struct rpt_jb {
  int err;
} rpt_jb;

/* Adds item (possibly NULL after an OOM) to object o, or to array o when
** key is NULL. Returns the item, or NULL and sets b->err. */
static cJSON *rpt_jadd(rpt_jb *b, cJSON *o, const char *key, cJSON *it) {
  if (!it || !o) {
    cJSON_Delete(it);
    b->err = 1;
    return NULL;
  }
  cJSON_bool ok = key ? cJSON_AddItemToObject(o, key, it) : cJSON_AddItemToArray(o, it);
  if (!ok) {
    cJSON_Delete(it);
    b->err = 1;
    return NULL;
  }
  return it;
}

static void rpt_jstr(rpt_jb *b, cJSON *o, const char *key, const char *s) {
  rpt_jadd(b, o, key, s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

static void rpt_jhex(rpt_jb *b, cJSON *o, const char *key, uint64_t v, int pad) {
  char buf[24];
  rpt_jstr(b, o, key, rpt__hex(buf, sizeof buf, v, pad));
}

static void rpt_jactor(rpt_jb *b, cJSON *o, const char *key, const rpt_run *r, uint32_t a) {
  char ab[24];
  rpt_jstr(b, o, key, a == RT_NO_ACTOR ? NULL : rpt__actor(r, a, ab));
}

/* Writes the printed document plus a newline; frees it. */
static int rpt_jprint(FILE *f, cJSON *root, int err) {
  char *s = err ? NULL : cJSON_Print(root);
  cJSON_Delete(root);
  if (!s) return -1;
  rpt__utf8_scrub(s);
  size_t len = strlen(s);
  int rc = (fwrite(s, 1, len, f) == len && fputc('\n', f) != EOF && !ferror(f)) ? 0 : -1;
  cJSON_free(s);
  return rc;
}

/* {"index", "t_us", "kind", "actor", fields...} of rec (NULL: index only). */
static cJSON *rpt_json_rec(rpt_jb *b, const rpt_run *r, const sim_rec *rec, uint64_t idx) {
  char kb[24];
  cJSON *o = cJSON_CreateObject();
  rpt_jadd(b, o, "index", rpt__json_u64(idx));
  if (o && rec) {
    rpt_jadd(b, o, "t_us", rpt__json_int(rec->t_us));
    rpt_jstr(b, o, "kind", rpt__kind_name(rec->kind, kb));
    rpt_jactor(b, o, "actor", r, rec->actor);
    if (rpt__json_fields(o, r, rec) != 0) b->err = 1;
  }
  return o;
}

static cJSON *rpt_json_chain_rec(rpt_jb *b, const rpt_run *r, uint64_t idx) {
  return rpt_json_rec(b, r, rpt__rec(r->trace, idx), idx);
}

int rpt_record_jsonl(FILE *f, const rpt_run *r, const sim_rec *rec, uint64_t index) {
  rpt_jb b = {0};
  cJSON *o = rpt_json_rec(&b, r, rec, index);
  char *s = o && !b.err ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (!s) return -1;
  rpt__utf8_scrub(s);
  int rc = fputs(s, f) < 0 || fputc('\n', f) == EOF ? -1 : 0;
  cJSON_free(s);
  return rc;
}

/* One fact and its verdict: name, line, passed, message, the fact as
** written, and the nearest candidates (or matches) the report shows. */
static cJSON *rpt_json_fact(rpt_jb *b, const rpt_run *r, const chk_fact *fa,
                            const chk_fact_result *res) {
  cJSON *o = cJSON_CreateObject();
  rpt_jstr(b, o, "name", fa->name);
  rpt_jadd(b, o, "line", cJSON_CreateNumber(fa->line));
  rpt_jadd(b, o, "passed", cJSON_CreateBool(res->passed != 0));
  rpt_jstr(b, o, "message", res->msg);
  cJSON *q = cJSON_Parse(fa->json);
  rpt_jadd(b, o, "fact", q ? q : cJSON_CreateString(fa->json));
  rpt_jstr(b, o, "near", res->near_matches ? "matches" : "candidates");
  cJSON *recs = rpt_jadd(b, o, "records", cJSON_CreateArray());
  for (int i = 0; recs && i < res->n_near; i++)
    rpt_jadd(b, recs, NULL, rpt_json_rec(b, r, &res->near[i], res->near_idx[i]));
  return o;
}

static void rpt_json_facts(rpt_jb *b, cJSON *o, const rpt_run *r, int failed_only) {
  cJSON *arr = rpt_jadd(b, o, failed_only ? "failed_facts" : "facts", cJSON_CreateArray());
  for (int i = 0; arr && i < chk_facts_count(r->facts); i++) {
    const chk_fact_result *res = chk_facts_result(r->facts, i);
    if (failed_only && res->passed) continue;
    rpt_jadd(b, arr, NULL, rpt_json_fact(b, r, chk_facts_fact(r->facts, i), res));
  }
}

static cJSON *rpt_json_violation(rpt_jb *b, const rpt_run *r, const chk_violation *v) {
  cJSON *o = cJSON_CreateObject();
  rpt_jstr(b, o, "invariant", rpt__inv_name(v->inv));
  rpt_jactor(b, o, "actor", r, v->actor);
  rpt_jadd(b, o, "t_us", rpt__json_int(v->t_us));
  char msg[sizeof v->msg + 1];
  size_t ml = strnlen(v->msg, sizeof v->msg);
  memcpy(msg, v->msg, ml);
  msg[ml] = 0;
  rpt_jstr(b, o, "message", msg);
  cJSON *chain = rpt_jadd(b, o, "chain", cJSON_CreateArray());
  int nc = v->n_chain < 0 ? 0 : v->n_chain > CHK_MAX_CHAIN ? CHK_MAX_CHAIN : v->n_chain;
  for (int i = 0; i < nc && chain; i++) rpt_jadd(b, chain, NULL, rpt_json_chain_rec(b, r, v->chain[i]));
  return o;
}

static cJSON *rpt_json_run(rpt_jb *b, const rpt_run *r) {
  cJSON *o = cJSON_CreateObject();
  rpt_jstr(b, o, "scenario", r->scenario_name);
  rpt_jstr(b, o, "file", r->scenario_file);
  rpt_jhex(b, o, "seed", r->seed, 0);
  rpt_jstr(b, o, "strategy", r->strategy);
  rpt_jstr(b, o, "variant", r->variant);
  rpt_jadd(b, o, "passed", cJSON_CreateBool(r->passed != 0));
  rpt_jstr(b, o, "expect", r->expect);
  rpt_jstr(b, o, "failure", r->failure);
  rpt_jhex(b, o, "trace_hash", r->trace_hash, 1);
  rpt_jadd(b, o, "events", rpt__json_u64(r->events));
  rpt_jadd(b, o, "end_us", rpt__json_int(r->end_us));
  cJSON *fig = rpt_jadd(b, o, "figures", cJSON_CreateObject());
  for (size_t i = 0; fig && r->figures && i < r->n_figures; i++) {
    const char *name = r->figures[i].name;
    if (!name || !*name || cJSON_GetObjectItemCaseSensitive(fig, name)) continue;
    rpt_jadd(b, fig, name, rpt__json_int(r->figures[i].value));
  }
  cJSON *vs = rpt_jadd(b, o, "violations", cJSON_CreateArray());
  for (size_t i = 0; vs && r->violations && i < r->n_violations; i++)
    rpt_jadd(b, vs, NULL, rpt_json_violation(b, r, &r->violations[i]));
  rpt_json_facts(b, o, r, 0);
  /* script errors (issue #13): file:line message and traceback */
  cJSON *se = NULL;
  for (size_t i = 0; r->trace && i < r->trace->n; i++) {
    const sim_rec *rec = &r->trace->recs[i];
    if (rec->kind != RT_EV_SCRIPT_ERROR) continue;
    if (!se && !(se = rpt_jadd(b, o, "script_errors", cJSON_CreateArray()))) break;
    cJSON *e = rpt_jadd(b, se, NULL, cJSON_CreateObject());
    if (!e) break;
    char ab[24];
    rpt_jstr(b, e, "actor", rpt__actor(r, rec->actor, ab));
    rpt_jadd(b, e, "t_us", rpt__json_int(rec->t_us));
    rpt_jstr(b, e, "callback", sim_trace_str(r->trace, rec->s));
    rpt_jadd(b, e, "code", rpt__json_int(rec->a));
    rpt_jadd(b, e, "fiber", rpt__json_int(rec->b));
    rpt_jstr(b, e, "error", sim_trace_str(r->trace, rec->s2));
  }
  cJSON *pr = r->probes ? rpt_jadd(b, o, "probes", cJSON_CreateArray()) : NULL;
  for (int p = 0; pr && p < RT_PROBE_COUNT; p++)
    if (r->probes[p]) rpt_jadd(b, pr, NULL, cJSON_CreateString(rt_probe_name(p)));
  rpt_jstr(b, o, "replay", r->replay);
  return o;
}

/* ---- streaming: the document written one run at a time ---------------------
** The bytes are those cJSON_Print gives for the whole tree: each run is
** printed alone and indented two levels deeper (a printed JSON text has no
** raw newline inside a string, so indenting after every newline is safe). */

void rpt_json_begin(rpt_json_stream *w, FILE *f) {
  memset(w, 0, sizeof *w);
  w->f = f;
  if (fputs("{\n\t\"schema\":\t\"revenant.results/1\",\n\t\"runs\":\t[", f) == EOF) w->err = 1;
}

void rpt_json_add(rpt_json_stream *w, const rpt_run *r) {
  rpt_jb b = {0};
  cJSON *o = rpt_json_run(&b, r);
  char *s = b.err || !o ? NULL : cJSON_Print(o);
  cJSON_Delete(o);
  if (!s) {
    w->err = 1;
    return;
  }
  rpt__utf8_scrub(s);
  if (w->n && fputs(", ", w->f) == EOF) w->err = 1;
  for (const char *p = s; *p; p++) {
    if (fputc(*p, w->f) == EOF) w->err = 1;
    if (*p == '\n' && fputs("\t\t", w->f) == EOF) w->err = 1;
  }
  cJSON_free(s);
  w->n++;
  w->passed += r->passed != 0;
}

static void rpt_json_str_raw(FILE *f, const char *key, const char *v) {
  cJSON *s = cJSON_CreateString(v ? v : "");
  char *p = s ? cJSON_PrintUnformatted(s) : NULL;
  rpt__utf8_scrub(p);
  fprintf(f, "\t\t\t\"%s\":\t%s", key, p ? p : "\"\"");
  cJSON_free(p);
  cJSON_Delete(s);
}

int rpt_json_end(rpt_json_stream *w, const rpt_load_error *errs, size_t n_err) {
  FILE *f = w->f;
  fputs("],\n", f);
  if (n_err) {
    fputs("\t\"errors\":\t[", f);
    for (size_t i = 0; i < n_err; i++) {
      fputs(i ? ", {\n" : "{\n", f);
      rpt_json_str_raw(f, "file", errs[i].file);
      fputs(",\n", f);
      rpt_json_str_raw(f, "message", errs[i].message);
      fputs("\n\t\t}", f);
    }
    fputs("],\n", f);
  }
  fprintf(f, "\t\"summary\":\t{\n\t\t\"passed\":\t%zu,\n\t\t\"failed\":\t%zu", w->passed, w->n - w->passed);
  if (n_err) fprintf(f, ",\n\t\t\"errors\":\t%zu", n_err);
  fputs("\n\t}\n}\n", f);
  return w->err || ferror(f) ? -1 : 0;
}

int rpt_json_write(FILE *f, const rpt_run *runs, size_t n) {
  rpt_json_stream w;
  rpt_json_begin(&w, f);
  for (size_t i = 0; i < n && !w.err; i++) rpt_json_add(&w, &runs[i]);
  return rpt_json_end(&w, NULL, 0);
}

/* ---- repro file --------------------------------------------------------- */

static cJSON *rpt_repro_fault(rpt_jb *b, const rpt_run *r, const sim_rec *rec) {
  cJSON *o = cJSON_CreateObject();
  rpt_jadd(b, o, "t_us", rpt__json_int(rec->t_us));
  const char *kind = sim_trace_str(r->trace, rec->s);
  const char *detail = sim_trace_str(r->trace, rec->s2);
  rpt_jstr(b, o, "kind", *kind ? kind : NULL);
  rpt_jactor(b, o, "actor", r, rec->actor);
  rpt_jstr(b, o, "detail", *detail ? detail : NULL);
  rpt_jadd(b, o, "x", rpt__json_int(rec->a));
  rpt_jadd(b, o, "y", rpt__json_int(rec->b));
  return o;
}

/* The scenario text without comments and whitespace if it is one JSON
** object, else NULL. The caller frees it. */
static char *rpt_repro_scenario(const char *scenario_json) {
  if (!scenario_json) return NULL;
  char *min = strdup(scenario_json);
  if (!min) return NULL;
  cJSON_Minify(min);
  const char *end = NULL;
  cJSON *sc = cJSON_ParseWithOpts(min, &end, 1);
  int ok = sc && cJSON_IsObject(sc);
  cJSON_Delete(sc);
  if (!ok) {
    free(min);
    return NULL;
  }
  return min;
}

int rpt_repro_write(FILE *f, const rpt_run *r, const char *scenario_json) {
  rpt_jb b = {0};
  char *scn = rpt_repro_scenario(scenario_json);
  if (!scn) return -1;
  cJSON *root = cJSON_CreateObject();
  rpt_jadd(&b, root, "revenant_repro", cJSON_CreateNumber(1));
  /* Raw keeps the scenario's integers digit for digit (cJSON would
  ** reprint numbers above 10^15 lossily); it was validated above. */
  rpt_jadd(&b, root, "scenario", cJSON_CreateRaw(scn));
  free(scn);
  rpt_jhex(&b, root, "seed", r->seed, 0);
  rpt_jstr(&b, root, "strategy", r->strategy);
  rpt_jstr(&b, root, "variant", r->variant);
  rpt_jhex(&b, root, "trace_hash", r->trace_hash, 1);
  rpt_jstr(&b, root, "expect", r->expect);
  if (r->crash_at) /* replay runs crash point K as run --crash-at K does */
    rpt_jadd(&b, root, "crash_at", cJSON_CreateNumber((double)r->crash_at));
  rpt_json_facts(&b, root, r, 1);
  cJSON *faults = rpt_jadd(&b, root, "faults", cJSON_CreateArray());
  const sim_trace *t = r->trace;
  for (size_t i = 0; faults && rpt__rec(t, 0) && i < t->n && !b.err; i++)
    if (t->recs[i].kind == RT_EV_FAULT) rpt_jadd(&b, faults, NULL, rpt_repro_fault(&b, r, &t->recs[i]));
  if (!root) return -1;
  return rpt_jprint(f, root, b.err);
}
