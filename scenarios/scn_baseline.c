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

static int load_entry(const scn_doc *d, const cJSON *o, scn_baseline_entry *e, scn_err *err) {
  memset(e, 0, sizeof *e);
  if (scn_check_fields(d, o, entry_fields, err) < 0) return -1;
  if (get_text(d, o, "scenario", 0, e->scenario, sizeof e->scenario, err) < 0 ||
      get_text(d, o, "case", 1, e->case_name, sizeof e->case_name, err) < 0 ||
      get_text(d, o, "signature", 0, e->signature, sizeof e->signature, err) < 0 ||
      get_text(d, o, "reason", 0, e->reason, sizeof e->reason, err) < 0)
    return -1;
  int slashes = 0;
  for (const char *p = e->signature; *p; p++) slashes += *p == '/';
  if (slashes != 2)
    return scn_errf(err, d, cJSON_GetObjectItemCaseSensitive(o, "signature"),
                    "\"signature\": expected \"<violation>/<actor class>/<open waits>\" such as "
                    "\"no_wedge/ChatAgent/gate\" (a part may be \"*\")");
  return 0;
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
      if (!strcmp(b->e[k].scenario, b->e[i].scenario) && !strcmp(b->e[k].case_name, b->e[i].case_name) &&
          !strcmp(b->e[k].signature, b->e[i].signature))
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

const scn_baseline_entry *scn_baseline_match(scn_baseline *b, const char *scenario, const char *case_name,
                                             const char *sig) {
  for (size_t i = 0; b && i < b->n; i++) {
    scn_baseline_entry *e = &b->e[i];
    if (strcmp(e->scenario, scenario) || (e->case_name[0] && strcmp(e->case_name, case_name)) ||
        !scn_baseline_sig_match(e->signature, sig))
      continue;
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

int scn_baseline_write(FILE *f, const scn_baseline_entry *e, size_t n) {
  fputs("{\"revenant_baseline\": 1,\n \"entries\": [", f);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ",\n  {\"scenario\": " : "\n  {\"scenario\": ", f);
    put_str(f, e[i].scenario);
    if (e[i].case_name[0]) {
      fputs(", \"case\": ", f);
      put_str(f, e[i].case_name);
    }
    fputs(", \"signature\": ", f);
    put_str(f, e[i].signature);
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
