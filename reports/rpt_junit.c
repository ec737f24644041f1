/*
** rpt_junit.c: JUnit XML for CI (GitLab artifacts:reports:junit, Jenkins).
**
** One <testsuite name="revenant">, one <testcase> per run. The failure text
** is the terminal report of the run (rpt_text_run without colour), so CI
** shows the same explanation as the terminal. Output is well-formed XML
** whatever the input bytes: invalid UTF-8 and control characters are
** replaced by '?', and "]]>" inside CDATA is split.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reports/rpt_internal.h"

/* Characters XML 1.0 does not allow (besides \t \n \r) become '?'. */
static void rpt_xml_attr(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  while (*p) {
    int n = rpt__utf8_len(p);
    if (n == 0 || (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')) {
      fputc('?', f);
      p++;
      continue;
    }
    switch (*p) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&apos;", f); break;
    case '\t': fputs("&#9;", f); break;
    case '\n': fputs("&#10;", f); break;
    case '\r': fputs("&#13;", f); break;
    default: fwrite(p, 1, (size_t)n, f);
    }
    p += n;
  }
}

/* Writes s[0..len) as one or more CDATA sections. */
static void rpt_xml_cdata(FILE *f, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s, *end = p + len;
  fputs("<![CDATA[", f);
  while (p < end) {
    int n = *p ? rpt__utf8_len(p) : 0;
    if (n == 0 || p + n > end || (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')) {
      fputc('?', f);
      p++;
    } else if (end - p >= 3 && memcmp(p, "]]>", 3) == 0) {
      fputs("]]]]><![CDATA[>", f);
      p += 3;
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
  fputs("]]>", f);
}

/* "revenant.<stem>": the scenario file's base name without extension, or
** the scenario name. */
static void rpt_junit_classname(FILE *f, const rpt_run *r) {
  const char *file = r->scenario_file;
  fputs("revenant.", f);
  if (!file || !*file) {
    rpt_xml_attr(f, r->scenario_name ? r->scenario_name : "unnamed");
    return;
  }
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  const char *dot = strrchr(base, '.');
  size_t len = (dot && dot != base) ? (size_t)(dot - base) : strlen(base);
  char *stem = strndup(base, len);
  rpt_xml_attr(f, stem ? stem : "unnamed");
  free(stem);
}

static int rpt_same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* 1 when another run would get the same classname and name (GitLab keeps
** only the first of such duplicates). */
static int rpt_junit_dup(const rpt_run *runs, size_t n, size_t i) {
  for (size_t j = 0; j < n; j++)
    if (j != i && runs[j].seed == runs[i].seed &&
        rpt_same_str(runs[j].scenario_name, runs[i].scenario_name) &&
        rpt_same_str(runs[j].scenario_file, runs[i].scenario_file))
      return 1;
  return 0;
}

static int rpt_junit_failure(FILE *f, const rpt_run *r) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return -1;
  rpt_text_run(m, r, 0, 0);
  if (fclose(m) != 0) {
    free(buf);
    return -1;
  }
  fputs("      <failure message=\"", f);
  rpt_xml_attr(f, r->failure ? r->failure : "expectation failed");
  fputs("\" type=\"ExpectationFailed\">", f);
  rpt_xml_cdata(f, buf, len);
  fputs("</failure>\n", f);
  free(buf);
  return 0;
}

static int rpt_junit_case(FILE *f, const rpt_run *r, int dup) {
  fputs("    <testcase classname=\"", f);
  rpt_junit_classname(f, r);
  fputs("\" name=\"", f);
  rpt_xml_attr(f, r->scenario_name ? r->scenario_name : "unnamed");
  fprintf(f, " seed=0x%" PRIx64, r->seed);
  if (dup) {
    fputc(' ', f);
    rpt_xml_attr(f, r->strategy ? r->strategy : "-");
    if (r->variant && *r->variant) {
      fputs(" (", f);
      rpt_xml_attr(f, r->variant);
      fputc(')', f);
    }
  }
  fprintf(f, "\" time=\"%.3f\"", r->wall_s > 0 ? r->wall_s : 0.0);
  if (r->passed) {
    fputs("/>\n", f);
    return 0;
  }
  fputs(">\n", f);
  if (rpt_junit_failure(f, r) != 0) return -1;
  fputs("    </testcase>\n", f);
  return 0;
}

int rpt_junit_write(FILE *f, const rpt_run *runs, size_t n) {
  size_t failed = 0;
  double total = 0;
  for (size_t i = 0; i < n; i++) {
    failed += runs[i].passed == 0;
    total += runs[i].wall_s > 0 ? runs[i].wall_s : 0.0;
  }
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
  fprintf(f,
          "<testsuites name=\"revenant\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
          "skipped=\"0\" time=\"%.3f\">\n",
          n, failed, total);
  fprintf(f,
          "  <testsuite name=\"revenant\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
          "skipped=\"0\" time=\"%.3f\">\n",
          n, failed, total);
  for (size_t i = 0; i < n; i++)
    if (rpt_junit_case(f, &runs[i], rpt_junit_dup(runs, n, i)) != 0) return -1;
  fputs("  </testsuite>\n</testsuites>\n", f);
  return ferror(f) ? -1 : 0;
}

/* ---- streaming ------------------------------------------------------------ */

int rpt_junit_begin(rpt_junit_stream *w, FILE *f) {
  memset(w, 0, sizeof *w);
  w->f = f;
  w->body = tmpfile();
  return w->body ? 0 : -1;
}

void rpt_junit_add(rpt_junit_stream *w, const rpt_run *r, int disambiguate) {
  if (!w->body || rpt_junit_case(w->body, r, disambiguate) != 0) w->err = 1;
  w->n++;
  w->failed += r->passed == 0;
  w->total_s += r->wall_s > 0 ? r->wall_s : 0.0;
}

static void rpt_junit_error_case(FILE *f, const rpt_load_error *e) {
  fputs("    <testcase classname=\"revenant.load\" name=\"", f);
  rpt_xml_attr(f, e->file ? e->file : "unnamed");
  fputs("\" time=\"0.000\">\n      <error message=\"", f);
  rpt_xml_attr(f, e->message ? e->message : "cannot load");
  fputs("\" type=\"LoadError\"/>\n    </testcase>\n", f);
}

int rpt_junit_end(rpt_junit_stream *w, const rpt_load_error *errs, size_t n_err) {
  FILE *f = w->f;
  char buf[8192];
  size_t tests = w->n + n_err, k;
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
  for (int level = 0; level < 2; level++)
    fprintf(f,
            "%s<%s name=\"revenant\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
            "skipped=\"0\" time=\"%.3f\">\n",
            level ? "  " : "", level ? "testsuite" : "testsuites", tests, w->failed, n_err, w->total_s);
  if (w->body) {
    if (fflush(w->body) || fseek(w->body, 0, SEEK_SET)) w->err = 1;
    while (!w->err && (k = fread(buf, 1, sizeof buf, w->body)) > 0)
      if (fwrite(buf, 1, k, f) != k) w->err = 1;
    if (ferror(w->body)) w->err = 1;
    fclose(w->body);
    w->body = NULL;
  }
  for (size_t i = 0; i < n_err; i++) rpt_junit_error_case(f, &errs[i]);
  fputs("  </testsuite>\n</testsuites>\n", f);
  return w->err || ferror(f) ? -1 : 0;
}
