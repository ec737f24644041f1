/*
** cmd_trace.c: `revenant trace FILE [--case C] [--seed S] [--filter EXPR]
** [--format text|jsonl]`: runs one case and prints every trace record as
** it is written, one a line (docs/trace.md). Records stream out through a
** trace observer, so the run keeps nothing for this command.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "reports/rpt.h"
#include "runtime/rt_schema.h"
#include "scenarios/scn.h"
#include "scenarios/scn_json.h"

static const char trace_usage[] =
    "usage: revenant trace FILE [options]\n"
    "\n"
    "Runs one case of a scenario (its first unless --case) with the file's seed\n"
    "and faults, and prints every trace record, one a line (docs/trace.md).\n"
    "\n"
    "options:\n"
    "  --case C            the case to run: its name or its 0-based index\n"
    "  --seed S            run with seed S (decimal or 0x-hex) instead of the file's\n"
    "  --filter EXPR       keep records for which every space-separated term holds:\n"
    "                      kind=K1,K2 (or just K1,K2; a trailing * matches a prefix),\n"
    "                      actor=A1,A2, from=25s, to=35s, FIELD=V1,V2\n"
    "  --format text|jsonl one readable line or one JSON object per record (default text)\n"
    "  -h, --help          show this help\n"
    "\n"
    "exit status: 0 printed, 2 usage or scenario error\n";

#define TR_MAX_TERMS 16
#define TR_MAX_ALTS 16

typedef struct tr_term {
  char key[32];                  /* "kind", "actor", "from", "to" or a field */
  char alts[TR_MAX_ALTS][96];
  int n_alts;
  int64_t t_us;                  /* from / to */
} tr_term;

typedef struct tr_ctx {
  const scn_scenario *sc;
  rpt_run run;                   /* actor names and the trace's strings */
  tr_term terms[TR_MAX_TERMS];
  int n_terms;
  int jsonl;
  int err;
} tr_ctx;

static int tr_usage(const char *msg, const char *arg) {
  fprintf(stderr, "revenant trace: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
  fputs("usage: revenant trace FILE [options]; try 'revenant trace --help'\n", stderr);
  return 2;
}

/* ---- filter ------------------------------------------------------------- */

static int tr_glob(const char *pat, const char *s) {
  size_t n = strlen(pat);
  if (n > 0 && pat[n - 1] == '*') return strncmp(pat, s, n - 1) == 0;
  return strcmp(pat, s) == 0;
}

/* The text of a field as `revenant trace` prints it, without quotes. */
static void tr_field_text(const tr_ctx *c, const sim_rec *r, int slot, char *buf, size_t cap) {
  const rt_field *f = rt_schema_fields(r->kind);
  const int64_t ints[3] = {r->a, r->b, r->c};
  const sim_trace *t = c->run.trace;
  if (slot >= 3) {
    snprintf(buf, cap, "%s", sim_trace_str(t, slot == 3 ? r->s : r->s2));
    return;
  }
  int64_t v = ints[slot];
  const char *name = rt_schema_enum_name(f[slot].type, v);
  if (f[slot].type == RT_F_ACTOR && v >= 0 && (uint64_t)v < c->sc->n_actors) name = c->sc->actors[v].id;
  if (f[slot].type == RT_F_BOOL) name = v ? "yes" : "no";
  if (name) snprintf(buf, cap, "%s", name);
  else snprintf(buf, cap, "%" PRId64, v);
}

static int tr_term_ok(const tr_ctx *c, const tr_term *tm, const sim_rec *r) {
  char buf[256];
  if (!strcmp(tm->key, "from")) return r->t_us >= tm->t_us;
  if (!strcmp(tm->key, "to")) return r->t_us <= tm->t_us;
  if (!strcmp(tm->key, "kind")) snprintf(buf, sizeof buf, "%s", rt_event_name(r->kind));
  else if (!strcmp(tm->key, "actor"))
    snprintf(buf, sizeof buf, "%s", r->actor < c->sc->n_actors ? c->sc->actors[r->actor].id : "-");
  else {
    int slot = rt_schema_slot_loose(r->kind, tm->key);
    if (slot < 0) return 0;
    const rt_field *f = rt_schema_fields(r->kind);
    if (f[slot].type == RT_F_US || f[slot].type == RT_F_AT) {
      const int64_t ints[3] = {r->a, r->b, r->c};
      for (int i = 0; i < tm->n_alts; i++) {
        int64_t v;
        if (f[slot].type == RT_F_AT && !strcmp(tm->alts[i], "none")) v = -1;
        else if (scn_parse_duration(tm->alts[i], &v)) continue;
        if (v == ints[slot]) return 1;
      }
      return 0;
    }
    tr_field_text(c, r, slot, buf, sizeof buf);
  }
  for (int i = 0; i < tm->n_alts; i++)
    if (tr_glob(tm->alts[i], buf)) return 1;
  return 0;
}

/* The names --filter can suggest for key: kinds, the scenario's actors, or
** every field name of every kind, into names (NULL-terminated, cap slots). */
static void tr_names(const tr_ctx *c, const char *key, const char **names, int cap) {
  int n = 0;
  if (!strcmp(key, "kind")) {
    for (uint32_t k = 1; k < RT_EV_KIND_COUNT && n < cap - 1; k++) names[n++] = rt_event_name(k);
  } else if (!strcmp(key, "actor")) {
    for (uint32_t a = 0; a < c->sc->n_actors && n < cap - 1; a++) names[n++] = c->sc->actors[a].id;
  } else {
    for (uint32_t k = 1; k < RT_EV_KIND_COUNT; k++) {
      const rt_field *f = rt_schema_fields(k);
      for (int i = 0; i < RT_FIELDS; i++) {
        int seen = !f[i].key;
        for (int j = 0; j < n && !seen; j++) seen = !strcmp(names[j], f[i].key);
        if (!seen && n < cap - 1) names[n++] = f[i].key;
      }
    }
  }
  names[n] = NULL;
}

/* "; did you mean "x"?" for a misspelt name of key, or "". */
static const char *tr_hint(const tr_ctx *c, const char *key, const char *name, char *buf,
                           size_t cap) {
  const char *names[1024];
  tr_names(c, key, names, (int)(sizeof names / sizeof names[0]));
  const char *best = scn_suggest(name, names);
  if (!best) return "";
  snprintf(buf, cap, "; did you mean \"%s\"?", best);
  return buf;
}

/* Checks a name against the known kinds, actors or field names. */
static int tr_known(const tr_ctx *c, const tr_term *tm) {
  char hint[160];
  for (int i = 0; i < tm->n_alts; i++) {
    const char *v = tm->alts[i];
    size_t n = strlen(v);
    int star = n > 0 && v[n - 1] == '*', ok = 0;
    if (!strcmp(tm->key, "kind")) {
      for (uint32_t k = 1; k < RT_EV_KIND_COUNT && !ok; k++) ok = tr_glob(v, rt_event_name(k));
    } else if (!strcmp(tm->key, "actor")) {
      for (uint32_t a = 0; a < c->sc->n_actors && !ok; a++) ok = tr_glob(v, c->sc->actors[a].id);
    } else {
      ok = 1;
    }
    if (!ok && !star) {
      fprintf(stderr, "revenant trace: --filter: unknown %s \"%s\"%s (%s)\n", tm->key, v,
              tr_hint(c, tm->key, v, hint, sizeof hint),
              strcmp(tm->key, "actor") ? "docs/trace.md lists them" : "the scenario's actors");
      return -1;
    }
  }
  if (strcmp(tm->key, "kind") && strcmp(tm->key, "actor")) {
    for (uint32_t k = 1; k < RT_EV_KIND_COUNT; k++)
      if (rt_schema_slot_loose(k, tm->key) >= 0) return 0;
    fprintf(stderr, "revenant trace: --filter: no record kind has a field \"%s\"%s (docs/trace.md)\n",
            tm->key, tr_hint(c, tm->key, tm->key, hint, sizeof hint));
    return -1;
  }
  return 0;
}

static int tr_parse_term(tr_ctx *c, char *word) {
  if (c->n_terms >= TR_MAX_TERMS) return tr_usage("--filter: too many terms", NULL);
  tr_term *tm = &c->terms[c->n_terms++];
  char *eq = strchr(word, '='), *vals = word;
  snprintf(tm->key, sizeof tm->key, "kind");
  if (eq) {
    *eq = 0;
    if (!*word || strlen(word) >= sizeof tm->key) return tr_usage("--filter: bad term", word);
    snprintf(tm->key, sizeof tm->key, "%s", word);
    vals = eq + 1;
  }
  if (!strcmp(tm->key, "from") || !strcmp(tm->key, "to")) {
    if (scn_parse_duration(vals, &tm->t_us))
      return tr_usage("--filter: expected a time such as 25s after", tm->key);
    return 0;
  }
  for (char *p = strtok(vals, ","); p; p = strtok(NULL, ",")) {
    if (tm->n_alts >= TR_MAX_ALTS || strlen(p) >= sizeof tm->alts[0])
      return tr_usage("--filter: too many or too long values in", tm->key);
    snprintf(tm->alts[tm->n_alts++], sizeof tm->alts[0], "%s", p);
  }
  if (tm->n_alts == 0) return tr_usage("--filter: no value for", tm->key);
  return tr_known(c, tm) < 0 ? 2 : 0;
}

static int tr_parse_filter(tr_ctx *c, const char *expr) {
  char buf[1024], *save = NULL;
  if (strlen(expr) >= sizeof buf) return tr_usage("--filter: expression too long", NULL);
  snprintf(buf, sizeof buf, "%s", expr);
  char *words[TR_MAX_TERMS + 1];
  int n = 0;
  for (char *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (n > TR_MAX_TERMS) return tr_usage("--filter: too many terms", NULL);
    words[n++] = w;
  }
  for (int i = 0; i < n; i++) {
    int rc = tr_parse_term(c, words[i]);
    if (rc) return rc;
  }
  return 0;
}

/* ---- printing ------------------------------------------------------------ */

static void tr_observe(void *ctx, const sim_rec *r, uint64_t index) {
  tr_ctx *c = ctx;
  for (int i = 0; i < c->n_terms; i++)
    if (!tr_term_ok(c, &c->terms[i], r)) return;
  if (c->jsonl) {
    if (rpt_record_jsonl(stdout, &c->run, r, index) < 0) c->err = 1;
  } else {
    rpt_record_text(stdout, &c->run, r);
  }
}

static int tr_find_case(const scn_scenario *sc, const char *name) {
  if (!name) return 0;
  for (int i = 0; i < sc->n_cases; i++)
    if (!strcmp(sc->cases[i].label, name)) return i;
  char *end;
  long v = strtol(name, &end, 10);
  if (*name && !*end && v >= 0 && v < sc->n_cases) return (int)v;
  return -1;
}

static int tr_run(tr_ctx *c, scn_scenario *sc, const char *case_name, const uint64_t *seed) {
  int ci = tr_find_case(sc, case_name);
  if (ci < 0) {
    fprintf(stderr, "revenant trace: %s: no case \"%s\" (cases:", sc->file, case_name);
    for (int i = 0; i < sc->n_cases; i++) fprintf(stderr, " %s", sc->cases[i].label);
    fprintf(stderr, ")\n");
    return 2;
  }
  const char *names[SCN_MAX_ACTORS];
  for (uint32_t a = 0; a < sc->n_actors; a++) names[a] = sc->actors[a].id;
  scn_result res;
  scn_run_opts ro = {.observer = tr_observe, .observer_ctx = c};
  c->sc = sc;
  c->run.actor_names = names;
  c->run.n_actors = sc->n_actors;
  ro.trace_out = &c->run.trace; /* the trace's strings, before the first record */
  int rc = scn_run_case_ex(sc, ci, seed ? *seed : sc->seed, sc->strategy, &ro, &res);
  if (rc) fprintf(stderr, "revenant trace: %s: %s\n", sc->file, res.failure);
  scn_result_free(&res);
  fflush(stdout);
  return rc || c->err ? 2 : 0;
}

int cli_cmd_trace(int argc, char **argv) {
  const char *file = NULL, *case_name = NULL, *filter = NULL, *format = "text";
  uint64_t seed;
  int have_seed = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = !strcmp(a, "--case") || !strcmp(a, "--seed") || !strcmp(a, "--filter") ||
                !strcmp(a, "--format");
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(trace_usage, stdout);
      return 0;
    }
    if (takes && (!val || cli_is_flag(val))) return tr_usage("option needs a value:", a);
    if (!strcmp(a, "--case")) case_name = val;
    else if (!strcmp(a, "--filter")) filter = val;
    else if (!strcmp(a, "--format")) format = val;
    else if (!strcmp(a, "--seed")) {
      if (cli_parse_seed(val, &seed)) return tr_usage("bad seed:", val);
      have_seed = 1;
    } else if (a[0] == '-') return tr_usage("unknown option", a);
    else if (file) return tr_usage("expected exactly one scenario FILE, got another:", a);
    else file = a;
    if (takes) i++;
  }
  if (!file) return tr_usage("no scenario FILE given", NULL);
  if (strcmp(format, "text") && strcmp(format, "jsonl"))
    return tr_usage("--format: expected text or jsonl, got", format);
  tr_ctx *c = calloc(1, sizeof *c);
  scn_scenario *sc = calloc(1, sizeof *sc);
  char err[1024];
  int rc = 2;
  if (c && sc && scn_load(file, sc, err, sizeof err) == 0) {
    c->jsonl = !strcmp(format, "jsonl");
    c->sc = sc;
    rc = filter ? tr_parse_filter(c, filter) : 0;
    if (rc == 0) rc = tr_run(c, sc, case_name, have_seed ? &seed : NULL);
    scn_free(sc);
  } else if (c && sc) {
    fprintf(stderr, "%s\n", err);
  }
  free(sc);
  free(c);
  return rc;
}
