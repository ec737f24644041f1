/*
** rpt_decode.c: decoding trace records per kind, names and formats.
**
** The field table is the runtime's (runtime/rt_schema.c): reports, facts
** and `revenant trace` share one vocabulary.
*/
#include "reports/rpt_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_events.h"

int rpt__decode(const sim_trace *t, const sim_rec *r, rpt__fval *out) {
  const rt_field *d = rt_schema_fields(r->kind);
  const int64_t ints[3] = {r->a, r->b, r->c};
  const uint32_t strs[2] = {r->s, r->s2};
  int n = 0;
  for (int i = 0; i < RT_FIELDS; i++) {
    if (!d[i].key) continue;
    rpt__fval fv = {d[i].key, d[i].type, 0, ""};
    if (i < 3) {
      fv.v = ints[i];
      if (d[i].type == RT_F_STR || d[i].type == RT_F_JSON) fv.type = RT_F_INT;
    } else {
      const char *s = t ? sim_trace_str(t, strs[i - 3]) : "";
      if (!*s) continue;
      if (fv.type != RT_F_JSON) fv.type = RT_F_STR;
      fv.str = s;
    }
    out[n++] = fv;
  }
  return n;
}

static const char *rpt_known(const char *s) {
  return (s && strcmp(s, "?") != 0) ? s : NULL;
}

const char *rpt__kind_name(uint32_t kind, char *buf) {
  const char *s = rpt_known(rt_event_name(kind));
  if (s) return s;
  snprintf(buf, 24, "kind_%" PRIu32, kind);
  return buf;
}

const char *rpt__actor(const rpt_run *r, uint32_t a, char *buf) {
  if (a == RT_NO_ACTOR) return "-";
  if (r && r->actor_names && a < r->n_actors && r->actor_names[a] &&
      r->actor_names[a][0])
    return r->actor_names[a];
  snprintf(buf, 24, "#%" PRIu32, a);
  return buf;
}

const char *rpt__inv_name(chk_invariant inv) {
  const char *s = chk_invariant_name(inv);
  return s ? s : "?";
}

const sim_rec *rpt__rec(const sim_trace *t, uint64_t idx) {
  if (!t || !t->keep || !t->recs || idx >= t->n) return NULL;
  return &t->recs[idx];
}

char *rpt__fmt_s(char *buf, size_t len, int64_t us) {
  uint64_t m = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
  snprintf(buf, len, "%s%" PRIu64 ".%03" PRIu64 "s", us < 0 ? "-" : "",
           m / 1000000, m / 1000 % 1000);
  return buf;
}

char *rpt__fmt_dur(char *buf, size_t len, int64_t us) {
  const char *sg = us < 0 ? "-" : "";
  uint64_t m = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
  uint64_t s = m / 1000000;
  if (s >= 86400)
    snprintf(buf, len, "%s%" PRIu64 "d%" PRIu64 "h", sg, s / 86400, s % 86400 / 3600);
  else if (s >= 3600)
    snprintf(buf, len, "%s%" PRIu64 "h%" PRIu64 "m", sg, s / 3600, s % 3600 / 60);
  else if (s >= 60)
    snprintf(buf, len, "%s%" PRIu64 "m%" PRIu64 "s", sg, s / 60, s % 60);
  else if (s >= 1) {
    char frac[8];
    snprintf(frac, sizeof frac, ".%03" PRIu64, m / 1000 % 1000);
    for (int i = 3; i > 0 && frac[i] == '0'; i--) frac[i] = 0;
    if (frac[1] == 0) frac[0] = 0;
    snprintf(buf, len, "%s%" PRIu64 "%ss", sg, s, frac);
  } else if (m >= 1000)
    snprintf(buf, len, "%s%" PRIu64 "ms", sg, m / 1000);
  else
    snprintf(buf, len, "%s%" PRIu64 "us", sg, m);
  return buf;
}

int rpt__utf8_len(const unsigned char *p) {
  unsigned c = p[0];
  int n;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000;
  else return 0;
  unsigned cp = c & (0x7f >> n);
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void rpt__utf8_scrub(char *s) {
  unsigned char *p = (unsigned char *)s;
  while (p && *p) {
    int n = rpt__utf8_len(p);
    if (n == 0) *p++ = '?';
    else p += n;
  }
}

void rpt__json_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    int n = rpt__utf8_len(p);
    if (n == 0) {
      fputc('?', f);
      p++;
    } else if (*p == '"' || *p == '\\') {
      fputc('\\', f);
      fputc(*p++, f);
    } else if (*p < 0x20) {
      fprintf(f, "\\u%04x", *p++);
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
  fputc('"', f);
}

#define RPT_JSON_EXACT 1000000000000000LL /* 10^15 */

cJSON *rpt__json_int(int64_t v) {
  if (v > -RPT_JSON_EXACT && v < RPT_JSON_EXACT) return cJSON_CreateNumber((double)v);
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  return cJSON_CreateString(buf);
}

cJSON *rpt__json_u64(uint64_t v) {
  if (v < (uint64_t)RPT_JSON_EXACT) return cJSON_CreateNumber((double)v);
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return cJSON_CreateString(buf);
}

char *rpt__hex(char *buf, size_t len, uint64_t v, int pad) {
  snprintf(buf, len, pad ? "0x%016" PRIx64 : "0x%" PRIx64, v);
  return buf;
}

static cJSON *rpt_field_item(const rpt_run *run, const rpt__fval *fv) {
  char abuf[24];
  const char *name;
  cJSON *j;
  switch (fv->type) {
  case RT_F_STR: return cJSON_CreateString(fv->str);
  case RT_F_JSON:
    j = cJSON_Parse(fv->str);
    return j ? j : cJSON_CreateString(fv->str);
  case RT_F_BOOL: return cJSON_CreateBool(fv->v != 0);
  case RT_F_ACTOR:
    if (fv->v < 0 || fv->v >= (int64_t)RT_NO_ACTOR) return cJSON_CreateNull();
    return cJSON_CreateString(rpt__actor(run, (uint32_t)fv->v, abuf));
  case RT_F_INT: case RT_F_US: case RT_F_AT: return rpt__json_int(fv->v);
  default:
    name = rt_schema_enum_name(fv->type, fv->v);
    return name ? cJSON_CreateString(name) : rpt__json_int(fv->v);
  }
}

int rpt__json_fields(cJSON *o, const rpt_run *run, const sim_rec *r) {
  rpt__fval fv[RT_FIELDS];
  int n = rpt__decode(run ? run->trace : NULL, r, fv);
  for (int i = 0; i < n; i++) {
    cJSON *it = rpt_field_item(run, &fv[i]);
    if (!it) return -1;
    if (!cJSON_AddItemToObject(o, fv[i].key, it)) {
      cJSON_Delete(it);
      return -1;
    }
  }
  return 0;
}
