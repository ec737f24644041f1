/*
** cmd_merge.c: `revenant merge FILE.json...`: combines results JSON files
** (schema revenant.results/1, docs/reports.md), for example those of the
** shards of a swarm, into one document with the runs sorted by seed (runs
** of one seed keep their input order) and a recomputed summary.
** Prints the failed runs and the line "N passed, N failed".
*/
#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "reports/rpt.h"

static const char merge_usage[] =
    "usage: revenant merge FILE.json... [-o OUT.json] [-q]\n"
    "\n"
    "Combines results JSON files (revenant run --json, revenant swarm --json;\n"
    "schema revenant.results/1) into one: runs sorted by seed (runs of one\n"
    "seed keep their order), summary recomputed. Prints the failed runs and\n"
    "the line \"N passed, N failed\".\n"
    "\n"
    "options:\n"
    "  -o, --json FILE   write the merged document to FILE\n"
    "  -q, --quiet       print only the summary line\n"
    "  -h, --help        show this help\n"
    "\n"
    "exit status: 0 no failed run, 1 a failed run, 2 usage error or unreadable file\n";

typedef struct mrun {
  cJSON *run;
  size_t order;                 /* input order, for a stable sort */
} mrun;

typedef struct merge {
  mrun *v;
  size_t n, cap;
  const char *out;
  int quiet;
  cJSON *errors;                /* the inputs' load errors, in input order */
} merge;

static const char *sfield(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static unsigned long long seed_of(const cJSON *run) { return strtoull(sfield(run, "seed"), NULL, 16); }

/* By seed; runs of one seed keep their input order (so merging the shards
** of a swarm gives the unsharded swarm's order). */
static int cmp_run(const void *a, const void *b) {
  const mrun *x = a, *y = b;
  unsigned long long sx = seed_of(x->run), sy = seed_of(y->run);
  if (sx != sy) return sx < sy ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* 1 if two runs are the same run (file, scenario, variant, strategy, seed). */
static int same_run(const cJSON *x, const cJSON *y) {
  static const char *const keys[] = {"file", "scenario", "variant", "strategy", "seed"};
  for (size_t k = 0; k < 5; k++)
    if (strcmp(sfield(x, keys[k]), sfield(y, keys[k]))) return 0;
  return 1;
}

/* 1 if r has what merging and printing need. */
static int good_run(const cJSON *r) {
  static const char *const keys[] = {"scenario", "file", "variant", "strategy", "seed"};
  if (!cJSON_IsObject(r) || !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(r, "passed"))) return 0;
  for (size_t k = 0; k < 5; k++)
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, keys[k]))) return 0;
  const char *seed = sfield(r, "seed");
  char *end;
  if (strncmp(seed, "0x", 2) || !seed[2]) return 0;
  strtoull(seed + 2, &end, 16);
  return *end == 0;
}

/* Moves the runs of one results document into m; 0, or -1 with a message. */
static int take_runs(merge *m, const char *path) {
  errno = 0;
  char *text = cli_read_file(path);
  if (!text) {
    fprintf(stderr, "revenant merge: %s: cannot read: %s\n", path, errno ? strerror(errno) : "read error");
    return -1;
  }
  cJSON *doc = cJSON_Parse(text), *runs, *r;
  free(text);
  runs = cJSON_GetObjectItemCaseSensitive(doc, "runs");
  if (!doc || strcmp(sfield(doc, "schema"), "revenant.results/1") || !cJSON_IsArray(runs)) {
    fprintf(stderr, "revenant merge: %s: not a results file (%s)\n", path,
            doc ? "needs schema revenant.results/1 and a runs array" : "not valid JSON");
    cJSON_Delete(doc);
    return -1;
  }
  int i = 0;
  cJSON_ArrayForEach(r, runs) {
    if (!good_run(r)) {
      fprintf(stderr, "revenant merge: %s: run %d is malformed (needs the strings scenario, file, variant, "
              "strategy, a hex seed and the boolean passed)\n", path, i);
      cJSON_Delete(doc);
      return -1;
    }
    i++;
  }
  while ((r = cJSON_DetachItemFromArray(runs, 0))) {
    if (m->n == m->cap) {
      size_t nc = m->cap ? m->cap * 2 : 256;
      mrun *nv = realloc(m->v, nc * sizeof *nv);
      if (!nv) {
        cJSON_Delete(r);
        cJSON_Delete(doc);
        return -1;
      }
      m->v = nv;
      m->cap = nc;
    }
    m->v[m->n] = (mrun){r, m->n};
    m->n++;
  }
  cJSON *errs = cJSON_GetObjectItemCaseSensitive(doc, "errors");
  while (cJSON_IsArray(errs) && (r = cJSON_DetachItemFromArray(errs, 0))) {
    if (!m->errors) m->errors = cJSON_CreateArray();
    if (!m->errors || !cJSON_AddItemToArray(m->errors, r)) cJSON_Delete(r);
  }
  cJSON_Delete(doc);
  return 0;
}

/* Prints failed runs (at most 50) and counts duplicates; *passed out. */
static size_t scan_runs(const merge *m, size_t *passed) {
  size_t failed = 0, dups = 0;
  *passed = 0;
  for (size_t i = 0; i < m->n; i++) {
    const cJSON *r = m->v[i].run;
    for (size_t k = i; k-- > 0 && seed_of(m->v[k].run) == seed_of(r);)
      if (same_run(m->v[k].run, r)) {
        dups++;
        break;
      }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "passed"))) {
      (*passed)++;
      continue;
    }
    if (!m->quiet && failed < 50)
      printf("FAIL %s [%s] seed=%s %s: %s\n", sfield(r, "scenario"), sfield(r, "variant"), sfield(r, "seed"),
             sfield(r, "strategy"), sfield(r, "failure"));
    failed++;
  }
  if (!m->quiet && failed > 50) printf("... and %zu more failed runs\n", failed - 50);
  if (dups) fprintf(stderr, "revenant merge: warning: %zu runs appear more than once (overlapping inputs?)\n", dups);
  return failed;
}

/* Builds and writes the merged document (consumes the runs). */
static int write_merged(merge *m, size_t passed, size_t failed) {
  cJSON *root = cJSON_CreateObject(), *runs = cJSON_CreateArray(), *sum = cJSON_CreateObject();
  int ok = root && runs && sum;
  if (ok) {
    cJSON_AddItemToObject(root, "schema", cJSON_CreateString("revenant.results/1"));
    cJSON_AddItemToObject(root, "runs", runs);
    int n_err = m->errors ? cJSON_GetArraySize(m->errors) : 0;
    if (n_err) {
      cJSON_AddItemToObject(root, "errors", m->errors);
      m->errors = NULL;
    }
    cJSON_AddItemToObject(sum, "passed", cJSON_CreateNumber((double)passed));
    cJSON_AddItemToObject(sum, "failed", cJSON_CreateNumber((double)failed));
    if (n_err) cJSON_AddItemToObject(sum, "errors", cJSON_CreateNumber((double)n_err));
    cJSON_AddItemToObject(root, "summary", sum);
    runs = sum = NULL;
  }
  for (size_t i = 0; i < m->n; i++) {
    if (ok) ok = cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "runs"), m->v[i].run);
    else cJSON_Delete(m->v[i].run);
  }
  char *text = ok ? cJSON_Print(root) : NULL;
  cli_out f;
  int rc = -1;
  if (!text) fprintf(stderr, "revenant merge: cannot write %s: out of memory\n", m->out);
  else if (cli_out_open(&f, m->out) == 0) {
    if (fputs(text, f.f) >= 0 && fputc('\n', f.f) != EOF) rc = cli_out_commit(&f);
    else cli_out_abort(&f);
    if (rc) fprintf(stderr, "revenant merge: cannot write %s\n", m->out);
  }
  cJSON_free(text);
  cJSON_Delete(root);
  cJSON_Delete(runs);
  cJSON_Delete(sum);
  return rc;
}

int cli_cmd_merge(int argc, char **argv) {
  merge m = {0};
  int bad = 0, files = 0;
  for (int i = 1; i < argc && !bad; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(merge_usage, stdout);
      for (size_t k = 0; k < m.n; k++) cJSON_Delete(m.v[k].run);
      free(m.v);
      return 0;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--json")) {
      if (i + 1 >= argc || cli_is_flag(argv[i + 1])) {
        fprintf(stderr, "revenant merge: option needs a value: %s\n", a);
        bad = 1;
      } else {
        m.out = argv[++i];
      }
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      m.quiet = 1;
    } else if (a[0] == '-') {
      fprintf(stderr, "revenant merge: unknown option %s; try 'revenant merge --help'\n", a);
      bad = 1;
    } else {
      bad = take_runs(&m, a) != 0;
      files++;
    }
  }
  if (!bad && files == 0) {
    fprintf(stderr, "revenant merge: no results files given; try 'revenant merge --help'\n");
    bad = 1;
  }
  size_t passed = 0, failed = 0;
  int n_err = m.errors ? cJSON_GetArraySize(m.errors) : 0; /* files the inputs could not load */
  if (!bad) {
    qsort(m.v, m.n, sizeof *m.v, cmp_run);
    failed = scan_runs(&m, &passed);
  }
  if (!bad && m.out) {
    bad = write_merged(&m, passed, failed) != 0;
  } else {
    for (size_t k = 0; k < m.n; k++) cJSON_Delete(m.v[k].run);
  }
  free(m.v);
  cJSON_Delete(m.errors); /* NULL when write_merged took it */
  if (bad) return 2;
  rpt_text_summary_errors(stdout, passed, failed, (size_t)n_err);
  return n_err ? 2 : failed ? 1 : 0;
}
