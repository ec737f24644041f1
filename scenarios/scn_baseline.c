/*
** scn_baseline.c: loading, matching and writing swarm baselines
** (scn_baseline.h, docs/swarm.md "Baselines").
*/
#include "scenarios/scn_baseline.h"

#include <stdlib.h>
#include <string.h>

#include "scenarios/scn_json.h"

static const char *const top_fields[] = {"revenant_baseline", "entries", NULL};
static const char *const entry_fields[] = {"scenario", "case", "signature", "reason", NULL};

/* A required (or, with opt, optional) non-empty string into dst. */
static int get_text(const scn_doc *d, const cJSON *o, const char *key, int opt, char *dst, size_t cap,
                    scn_err *err) {
  const char *s;
  int rc = scn_get_string(d, o, key, &s, err);
  if (rc < 0) return -1;
  if (rc == 1) {
    if (opt) return 0;
    return scn_errf(err, d, o, "baseline entry: missing required field \"%s\"", key);
  }
  if (!*s) return scn_errf(err, d, cJSON_GetObjectItemCaseSensitive(o, key), "\"%s\": must not be empty", key);
  if (strlen(s) >= cap)
    return scn_errf(err, d, cJSON_GetObjectItemCaseSensitive(o, key), "\"%s\": too long (at most %zu bytes)", key,
                    cap - 1);
  memcpy(dst, s, strlen(s) + 1);
  return 0;
}

/* A signature pattern has its three parts. */
static int check_sig(const scn_doc *d, const cJSON *at, const char *sig, scn_err *err) {
  int slashes = 0;
  for (const char *p = sig; *p; p++) slashes += *p == '/';
  if (slashes == 2) return 0;
  return scn_errf(err, d, at,
                  "\"signature\": expected \"<violation>/<actor class>/<open waits>\" such as "
                  "\"no_wedge/ChatAgent/gate\" (a part may be \"*\")");
}

/* "scenario" or "signature": a non-empty string, or an array of 1..SCN_BASELINE_LIST
** distinct ones, into dst[*n]. */
static int get_list(const scn_doc *d, const cJSON *o, const char *key, char *dst, size_t cap, int *n,
                    int *listed, scn_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key), *it;
  if (!v || !cJSON_IsArray(v)) {
    *n = 1;
    return get_text(d, o, key, 0, dst, cap, err);
  }
  *listed = 1;
  int k = cJSON_GetArraySize(v);
  if (k < 1 || k > SCN_BASELINE_LIST)
    return scn_errf(err, d, v, "\"%s\": a list needs 1 to %d entries, found %d", key, SCN_BASELINE_LIST, k);
  *n = 0;
  cJSON_ArrayForEach(it, v) {
    char *slot = dst + (size_t)*n * cap;
    if (!cJSON_IsString(it) || !it->valuestring[0])
      return scn_errf(err, d, it, "\"%s\"[%d]: expected a non-empty string", key, *n);
    if (strlen(it->valuestring) >= cap)
      return scn_errf(err, d, it, "\"%s\"[%d]: too long (at most %zu bytes)", key, *n, cap - 1);
    for (int j = 0; j < *n; j++)
      if (!strcmp(dst + (size_t)j * cap, it->valuestring))
        return scn_errf(err, d, it, "\"%s\"[%d]: \"%s\" is listed twice", key, *n, it->valuestring);
    memcpy(slot, it->valuestring, strlen(it->valuestring) + 1);
    (*n)++;
  }
  return 0;
}

static int load_entry(const scn_doc *d, const cJSON *o, scn_baseline_entry *e, scn_err *err) {
  memset(e, 0, sizeof *e);
  if (scn_check_fields(d, o, entry_fields, err) < 0) return -1;
  if (get_list(d, o, "scenario", e->scenario[0], sizeof e->scenario[0], &e->n_scenarios, &e->listed, err) < 0 ||
      get_text(d, o, "case", 1, e->case_name, sizeof e->case_name, err) < 0 ||
      get_list(d, o, "signature", e->signature[0], sizeof e->signature[0], &e->n_signatures, &e->listed,
               err) < 0 ||
      get_text(d, o, "reason", 0, e->reason, sizeof e->reason, err) < 0)
    return -1;
  const cJSON *at = cJSON_GetObjectItemCaseSensitive(o, "signature");
  for (int k = 0; k < e->n_signatures; k++)
    if (check_sig(d, cJSON_IsArray(at) ? cJSON_GetArrayItem(at, k) : at, e->signature[k], err) < 0) return -1;
  return 0;
}

/* 1 if entries a and b overlap: a shared scenario, the same case and a
** shared signature pattern (the second would never match). */
static int overlap(const scn_baseline_entry *a, const scn_baseline_entry *b) {
  int sc = 0, sg = 0;
  if (strcmp(a->case_name, b->case_name)) return 0;
  for (int i = 0; i < a->n_scenarios; i++)
    for (int j = 0; j < b->n_scenarios; j++) sc |= !strcmp(a->scenario[i], b->scenario[j]);
  for (int i = 0; i < a->n_signatures; i++)
    for (int j = 0; j < b->n_signatures; j++) sg |= !strcmp(a->signature[i], b->signature[j]);
  return sc && sg;
}

static int load_root(const scn_doc *d, scn_baseline *b, scn_err *err) {
  const cJSON *root = scn_doc_root(d), *arr, *o;
  int64_t version = 0;
  if (scn_check_fields(d, root, top_fields, err) < 0) return -1;
  if (scn_get_int(d, root, "revenant_baseline", 1, 1, &version, err) < 0) return -1;
  if (version != 1) return scn_errf(err, d, root, "missing required field \"revenant_baseline\" (1)");
  arr = cJSON_GetObjectItemCaseSensitive(root, "entries");
  if (!arr) return scn_errf(err, d, root, "missing required field \"entries\"");
  if (scn_expect_type(d, arr, cJSON_Array, "entries", err) < 0) return -1;
  int n = cJSON_GetArraySize(arr), i = 0;
  b->e = calloc(n > 0 ? (size_t)n : 1, sizeof *b->e);
  if (!b->e) return scn_errf(err, d, arr, "out of memory");
  cJSON_ArrayForEach(o, arr) {
    char what[32];
    snprintf(what, sizeof what, "entries[%d]", i);
    if (scn_expect_type(d, o, cJSON_Object, what, err) < 0 || load_entry(d, o, &b->e[i], err) < 0) return -1;
    for (int k = 0; k < i; k++)
      if (overlap(&b->e[k], &b->e[i]))
        return scn_errf(err, d, o, "duplicate entry: entries[%d] has the same scenario, case and signature", k);
    b->n = (size_t)++i;
  }
  return 0;
}

int scn_baseline_load_text(const char *path, const char *text, size_t len, scn_baseline *b, char *err,
                           size_t errlen) {
  scn_doc *d = NULL;
  scn_err e;
  memset(b, 0, sizeof *b);
  e.text[0] = 0;
  int rc = scn_doc_parse(path, text, len, &d, &e) < 0 ? -1 : load_root(d, b, &e);
  scn_doc_free(d);
  if (rc < 0) {
    scn_baseline_free(b);
    if (err && errlen) snprintf(err, errlen, "%s", e.text);
  }
  return rc;
}

int scn_baseline_load(const char *path, scn_baseline *b, char *err, size_t errlen) {
  scn_doc *d = NULL;
  scn_err e;
  memset(b, 0, sizeof *b);
  e.text[0] = 0;
  int rc = scn_doc_load(path, &d, &e) < 0 ? -1 : load_root(d, b, &e);
  scn_doc_free(d);
  if (rc < 0) {
    scn_baseline_free(b);
    if (err && errlen) snprintf(err, errlen, "%s", e.text);
  }
  return rc;
}

int scn_baseline_sig_match(const char *pat, const char *sig) {
  for (;;) {
    const char *pe = strchr(pat, '/'), *se = strchr(sig, '/');
    size_t pl = pe ? (size_t)(pe - pat) : strlen(pat), sl = se ? (size_t)(se - sig) : strlen(sig);
    if (!(pl == 1 && pat[0] == '*') && (pl != sl || memcmp(pat, sig, pl))) return 0;
    if (!pe || !se) return !pe && !se;
    pat = pe + 1;
    sig = se + 1;
  }
}

int scn_baseline_entry_matches(const scn_baseline_entry *e, const char *scenario, const char *case_name,
                               const char *sig) {
  int named = 0, sig_ok = 0;
  if (e->case_name[0] && strcmp(e->case_name, case_name)) return 0;
  for (int i = 0; i < e->n_scenarios && !named; i++) named = !strcmp(e->scenario[i], scenario);
  for (int i = 0; i < e->n_signatures && named && !sig_ok; i++) sig_ok = scn_baseline_sig_match(e->signature[i], sig);
  return named && sig_ok;
}

const scn_baseline_entry *scn_baseline_match(scn_baseline *b, const char *scenario, const char *case_name,
                                             const char *sig) {
  for (size_t i = 0; b && i < b->n; i++) {
    scn_baseline_entry *e = &b->e[i];
    if (!scn_baseline_entry_matches(e, scenario, case_name, sig)) continue;
    e->matched++;
    return e;
  }
  return NULL;
}

/* s as a JSON string. */
static void put_str(FILE *f, const char *s) {
  cJSON *it = cJSON_CreateStringReference(s);
  char *q = it ? cJSON_PrintUnformatted(it) : NULL;
  fputs(q ? q : "\"\"", f);
  cJSON_free(q);
  cJSON_Delete(it); /* a reference: s itself is not freed */
}

/* One name, or a list when the entry was loaded with lists. */
static void put_list(FILE *f, const char *names, size_t cap, int n, int listed) {
  if (!listed) {
    put_str(f, names);
    return;
  }
  fputc('[', f);
  for (int i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    put_str(f, names + (size_t)i * cap);
  }
  fputc(']', f);
}

int scn_baseline_write(FILE *f, const scn_baseline_entry *e, size_t n) {
  fputs("{\"revenant_baseline\": 1,\n \"entries\": [", f);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ",\n  {\"scenario\": " : "\n  {\"scenario\": ", f);
    put_list(f, e[i].scenario[0], sizeof e[i].scenario[0], e[i].n_scenarios, e[i].listed);
    if (e[i].case_name[0]) {
      fputs(", \"case\": ", f);
      put_str(f, e[i].case_name);
    }
    fputs(", \"signature\": ", f);
    put_list(f, e[i].signature[0], sizeof e[i].signature[0], e[i].n_signatures, e[i].listed);
    fputs(",\n   \"reason\": ", f);
    put_str(f, e[i].reason);
    fputc('}', f);
  }
  fputs("]}\n", f);
  return ferror(f) ? -1 : 0;
}

void scn_baseline_free(scn_baseline *b) {
  if (!b) return;
  free(b->e);
  b->e = NULL;
  b->n = 0;
}
