/*
** scn_load_facts.c: the "facts" of an expectation (docs/scenarios.md,
** "facts"), read into chk_fact patterns resolved against the runtime's
** field table (rt_schema.h): kinds, field slots, enum values and actor
** indices are looked up here, so that the engine (checks/chk_facts.c)
** compares integers and strings only. Every mistake is one
** "file:line:col: message", with a "did you mean" for kind, field, actor,
** table and column names.
*/
#include "scenarios/scn_load_internal.h"

#include "runtime/rt_schema.h"
#include "scenarios/scn_internal.h"

static const char *const fact_fields[] = {"fact", "robust", "match", "count", "sequence",
                                          "eventually", "end", NULL};
static const char *const pat_fields[] = {"kind", "actor", "where", "from", "to", NULL};
static const char *const step_fields[] = {"kind", "actor", "where", "from", "to", "within", NULL};
static const char *const ev_fields[] = {"actor", "fiber", "by", NULL};
static const char *const end_fields[] = {"actor", "table", "where", "rows", "alarm",
                                         "keepalive_refs", "effect", "count", NULL};
static const char *const count_fields[] = {"min", "max", NULL};

/* "unknown WHAT "x"; did you mean "y"?" or "...; expected one of: LIST". */
static int unknown_name(ld *L, const cJSON *node, const char *what, const char *name,
                        const char *const *names) {
  const char *best = scn_suggest(name, names);
  char q[96];
  list l = {{0}, 0, 0};
  if (best)
    return scn_errf(L->err, L->d, node, "unknown %s \"%s\"; did you mean \"%s\"?", what,
                    ld_quote(q, sizeof q, name), best);
  for (int i = 0; names[i]; i++) ld_list_add(&l, names[i]);
  return scn_errf(L->err, L->d, node, "unknown %s \"%s\"; expected one of: %s", what,
                  ld_quote(q, sizeof q, name), l.s);
}

/* "a" or "an" before rt_schema_type_word(t). */
static const char *article(rt_ftype t) {
  const char *w = rt_schema_type_word(t);
  return strchr("aeiou", w[0]) ? "an" : "a";
}

static int need_string(ld *L, const cJSON *node, const char *what) {
  return scn_expect_type(L->d, node, cJSON_String, what, L->err);
}

/* ---- names ---------------------------------------------------------------- */

static int find_kind(ld *L, const cJSON *node, uint32_t *out) {
  static const char *names[RT_EV_KIND_COUNT];
  if (need_string(L, node, "\"kind\"") < 0) return -1;
  int k = rt_schema_kind(node->valuestring);
  if (k > 0) {
    *out = (uint32_t)k;
    return 0;
  }
  for (uint32_t i = 1; i < RT_EV_KIND_COUNT; i++) names[i - 1] = rt_event_name(i);
  names[RT_EV_KIND_COUNT - 1] = NULL;
  return unknown_name(L, node, "kind", node->valuestring, names);
}

static int find_actor_node(ld *L, const cJSON *node, uint32_t *out) {
  const char *names[SCN_MAX_ACTORS + 1];
  if (need_string(L, node, "\"actor\"") < 0) return -1;
  for (uint32_t i = 0; i < L->sc->n_actors; i++) {
    names[i] = L->sc->actors[i].id;
    if (strcmp(names[i], node->valuestring) == 0) {
      *out = i;
      return 0;
    }
  }
  names[L->sc->n_actors] = NULL;
  return unknown_name(L, node, "actor", node->valuestring, names);
}

/* An optional "actor" member; *out stays UINT32_MAX when absent. */
static int opt_actor(ld *L, const cJSON *o, uint32_t *out) {
  const cJSON *n = ld_get(o, "actor");
  *out = UINT32_MAX;
  return n ? find_actor_node(L, n, out) : 0;
}

/* ---- values ----------------------------------------------------------------- */

static int int_node(ld *L, const cJSON *node, const char *key, int64_t *out) {
  if (!cJSON_IsNumber(node) || node->valuedouble != (double)(int64_t)node->valuedouble ||
      node->valuedouble >= 1e15 || node->valuedouble <= -1e15)
    return scn_errf(L->err, L->d, node, "\"%s\" is an integer: expected a whole number, found %s",
                    key, scn_type_name(node));
  *out = (int64_t)node->valuedouble;
  return 0;
}

static int time_node(ld *L, const cJSON *node, const char *key, rt_ftype t, int64_t *out) {
  if (t == RT_F_AT && cJSON_IsString(node) && strcmp(node->valuestring, "none") == 0) {
    *out = -1;
    return 0;
  }
  if (!cJSON_IsString(node) || scn_parse_duration(node->valuestring, out) < 0)
    return scn_errf(L->err, L->d, node, "\"%s\" is %s %s: expected a duration string such as \"32s\"%s",
                    key, article(t), rt_schema_type_word(t), t == RT_F_AT ? " (or \"none\")" : "");
  return 0;
}

/* A compact JSON text of any value into dst. */
static int json_text(ld *L, const cJSON *node, const char *key, char *dst, size_t cap) {
  char *s = cJSON_PrintUnformatted(node);
  if (!s) return scn_errf(L->err, L->d, node, "out of memory");
  size_t n = strlen(s);
  if (n >= cap) {
    cJSON_free(s);
    return scn_errf(L->err, L->d, node, "\"%s\": value too long (%zu bytes; at most %zu)", key, n,
                    cap - 1);
  }
  memcpy(dst, s, n + 1);
  cJSON_free(s);
  return 0;
}

static int text_node(ld *L, const cJSON *node, const char *key, char *dst, size_t cap) {
  if (!cJSON_IsString(node))
    return scn_errf(L->err, L->d, node, "\"%s\" is a string: expected a string, found %s", key,
                    scn_type_name(node));
  if (strlen(node->valuestring) >= cap)
    return scn_errf(L->err, L->d, node, "\"%s\": value too long (at most %zu bytes)", key, cap - 1);
  snprintf(dst, cap, "%s", node->valuestring);
  return 0;
}

static int enum_node(ld *L, const cJSON *node, const char *key, rt_ftype t, int64_t *out) {
  char names[400], q[96];
  if (cJSON_IsString(node) && rt_schema_enum_value(t, node->valuestring, out) == 0) return 0;
  rt_schema_enum_list(t, names, sizeof names);
  if (!cJSON_IsString(node))
    return scn_errf(L->err, L->d, node, "\"%s\": expected one of: %s; found %s", key, names,
                    scn_type_name(node));
  return scn_errf(L->err, L->d, node, "\"%s\": unknown value \"%s\"; expected one of: %s", key,
                  ld_quote(q, sizeof q, node->valuestring), names);
}

/* An exact value of a field of type t into *c. */
static int exact_value(ld *L, const cJSON *v, const char *key, rt_ftype t, chk_fact_cond *c) {
  uint32_t a;
  c->op = CHK_COND_EQ;
  switch (t) {
    case RT_F_INT: return int_node(L, v, key, &c->lo);
    case RT_F_US: case RT_F_AT: return time_node(L, v, key, t, &c->lo);
    case RT_F_BOOL:
      if (!cJSON_IsBool(v))
        return scn_errf(L->err, L->d, v, "\"%s\" is a boolean: expected true or false, found %s",
                        key, scn_type_name(v));
      c->lo = cJSON_IsTrue(v) ? 1 : 0;
      return 0;
    case RT_F_ACTOR:
      if (find_actor_node(L, v, &a) < 0) return -1;
      c->lo = a;
      return 0;
    case RT_F_STR: return text_node(L, v, key, c->str, sizeof c->str);
    case RT_F_JSON: return json_text(L, v, key, c->str, sizeof c->str);
    default: return enum_node(L, v, key, t, &c->lo);
  }
}

static int is_presence(const cJSON *v) {
  return cJSON_IsObject(v) && v->child && !v->child->next &&
         strcmp(v->child->string, "present") == 0 && cJSON_IsBool(v->child);
}

static int is_range(const cJSON *v) {
  if (!cJSON_IsObject(v) || !v->child) return 0;
  for (const cJSON *m = v->child; m; m = m->next)
    if (strcmp(m->string, "min") && strcmp(m->string, "max")) return 0;
  return 1;
}

static int range_value(ld *L, const cJSON *v, const char *key, rt_ftype t, chk_fact_cond *c) {
  const cJSON *mn = ld_get(v, "min"), *mx = ld_get(v, "max");
  if (t != RT_F_INT && t != RT_F_US && t != RT_F_AT)
    return scn_errf(L->err, L->d, v, "\"%s\" is %s %s: a range {\"min\", \"max\"} needs an "
                    "integer, time or duration field", key, article(t), rt_schema_type_word(t));
  c->op = CHK_COND_RANGE;
  c->lo = INT64_MIN;
  c->hi = INT64_MAX;
  chk_fact_cond tmp;
  if (mn && exact_value(L, mn, key, t, &tmp) < 0) return -1;
  if (mn) c->lo = tmp.lo;
  if (mx && exact_value(L, mx, key, t, &tmp) < 0) return -1;
  if (mx) c->hi = tmp.lo;
  c->op = CHK_COND_RANGE;
  if (c->lo > c->hi) return scn_errf(L->err, L->d, v, "\"%s\": \"min\" is above \"max\"", key);
  return 0;
}

/* "unknown field "x" of alarm_set; did you mean ...?" (or the list) at the
** key of member m. what: "field" or "column"; owner: the kind or table. */
static int unknown_member(ld *L, const cJSON *m, const char *what, const char *owner,
                          const char *const *names) {
  const char *best = scn_suggest(m->string, names);
  list l = {{0}, 0, 0};
  char q[96];
  if (!names[0])
    return ld_key_errf(L, m, "unknown %s \"%s\": %s records have no fields", what,
                       ld_quote(q, sizeof q, m->string), owner);
  if (best)
    return ld_key_errf(L, m, "unknown %s \"%s\" of %s; did you mean \"%s\"?", what,
                       ld_quote(q, sizeof q, m->string), owner, best);
  for (int i = 0; names[i]; i++) ld_list_add(&l, names[i]);
  return ld_key_errf(L, m, "unknown %s \"%s\" of %s; expected one of: %s", what,
                     ld_quote(q, sizeof q, m->string), owner, l.s);
}

/* One member of "where" of a record pattern of kind. */
static int where_cond(ld *L, uint32_t kind, const cJSON *m, chk_fact_cond *c) {
  const rt_field *f = rt_schema_fields(kind);
  const char *names[RT_FIELDS + 1];
  int n = 0, slot = rt_schema_slot_loose(kind, m->string);
  if (slot < 0) {
    for (int i = 0; i < RT_FIELDS; i++)
      if (f[i].key) names[n++] = f[i].key;
    names[n] = NULL;
    return unknown_member(L, m, "field", rt_event_name(kind), names);
  }
  rt_ftype t = f[slot].type;
  c->slot = (uint8_t)slot;
  snprintf(c->key, sizeof c->key, "%s", m->string);
  if (is_presence(m)) {
    if (slot < 3)
      return scn_errf(L->err, L->d, m, "\"%s\" is %s %s: {\"present\": ...} needs a string or "
                      "JSON field", m->string, article(t), rt_schema_type_word(t));
    c->op = cJSON_IsTrue(m->child) ? CHK_COND_PRESENT : CHK_COND_ABSENT;
    return 0;
  }
  if (t != RT_F_JSON && is_range(m)) return range_value(L, m, m->string, t, c);
  return exact_value(L, m, m->string, t, c);
}

/* ---- patterns and counts ------------------------------------------------------ */

/* A sequence step's "within": a duration (the most time since the previous
** step's record) or {"min": D, "max": D}. */
static int load_within(ld *L, const cJSON *o, int step, chk_fact_pat *p) {
  const cJSON *w = ld_get(o, "within");
  chk_fact_cond c;
  p->gap_min_us = 0;
  p->gap_max_us = INT64_MAX;
  if (!w) return 0;
  if (step == 0)
    return ld_key_errf(L, w, "\"within\" goes on a later step: it bounds the time since the "
                       "previous step's record");
  if (is_range(w)) {
    if (range_value(L, w, "within", RT_F_US, &c) < 0) return -1;
    p->gap_min_us = c.lo == INT64_MIN ? 0 : c.lo;
    p->gap_max_us = c.hi;
    return 0;
  }
  return time_node(L, w, "within", RT_F_US, &p->gap_max_us);
}

/* A record pattern (fields: the names it may have). */
static int load_pat(ld *L, const cJSON *o, const char *what, const char *const *fields,
                    chk_fact_pat *p) {
  const cJSON *w = ld_get(o, "where"), *m;
  if (ld_obj_fields(L, o, what, fields) < 0 || ld_need(L, o, "kind") < 0) return -1;
  if (find_kind(L, ld_get(o, "kind"), &p->kind) < 0 || opt_actor(L, o, &p->actor) < 0) return -1;
  p->from_us = 0;
  p->to_us = INT64_MAX;
  p->gap_max_us = INT64_MAX;
  if (ld_get_time(L, o, "from", 0, &p->from_us) < 0 || ld_get_time(L, o, "to", 0, &p->to_us) < 0)
    return -1;
  if (p->from_us > p->to_us)
    return scn_errf(L->err, L->d, ld_get(o, "to"), "\"to\" is before \"from\"");
  if (!w) return 0;
  if (scn_expect_type(L->d, w, cJSON_Object, "\"where\"", L->err) < 0) return -1;
  cJSON_ArrayForEach(m, w) {
    if (p->n_where >= CHK_FACT_MAX_WHERE)
      return ld_key_errf(L, m, "\"where\": at most %d conditions", CHK_FACT_MAX_WHERE);
    if (where_cond(L, p->kind, m, &p->where[p->n_where]) < 0) return -1;
    p->n_where++;
  }
  return 0;
}

/* A count: N, or {"min": N, "max": M}. Absent: at least 1. */
static int load_count(ld *L, const cJSON *n, const char *key, int64_t *mn, int64_t *mx) {
  *mn = 1;
  *mx = CHK_FACT_NO_MAX;
  if (!n) return 0;
  if (cJSON_IsNumber(n)) {
    if (int_node(L, n, key, mn) < 0) return -1;
    if (*mn < 0) return scn_errf(L->err, L->d, n, "\"%s\": a count cannot be negative", key);
    *mx = *mn;
    return 0;
  }
  if (!cJSON_IsObject(n))
    return scn_errf(L->err, L->d, n, "\"%s\": expected a count such as 1, 0 or {\"min\": 1, \"max\": 3}, "
                    "found %s", key, scn_type_name(n));
  if (ld_obj_fields(L, n, key, count_fields) < 0) return -1;
  const cJSON *a = ld_get(n, "min"), *b = ld_get(n, "max");
  *mn = 0;
  if (a && int_node(L, a, "min", mn) < 0) return -1;
  if (b && int_node(L, b, "max", mx) < 0) return -1;
  if (!a && !b) return scn_errf(L->err, L->d, n, "\"%s\": give \"min\", \"max\" or both", key);
  if (*mn < 0 || *mx < *mn)
    return scn_errf(L->err, L->d, n, "\"%s\": expected 0 <= min <= max", key);
  return 0;
}

/* ---- forms ---------------------------------------------------------------- */

static int form_sequence(ld *L, const cJSON *seq, chk_fact *f) {
  const cJSON *o;
  char what[32];
  if (ld_arr_len(L, seq, "sequence", 2, CHK_FACT_MAX_STEPS, "steps") < 0) return -1;
  f->form = CHK_FACT_SEQUENCE;
  cJSON_ArrayForEach(o, seq) {
    snprintf(what, sizeof what, "sequence[%d]", f->n_pat);
    if (load_pat(L, o, what, step_fields, &f->pat[f->n_pat]) < 0 ||
        load_within(L, o, f->n_pat, &f->pat[f->n_pat]) < 0)
      return -1;
    f->n_pat++;
  }
  return 0;
}

/* eventually: a fiber_done ok=true name=FIBER on ACTOR by BY. */
static int form_eventually(ld *L, const cJSON *ev, chk_fact *f) {
  chk_fact_pat *p = &f->pat[0];
  if (ld_obj_fields(L, ev, "eventually", ev_fields) < 0 || ld_need(L, ev, "actor") < 0 ||
      ld_need(L, ev, "fiber") < 0)
    return -1;
  f->form = CHK_FACT_MATCH;
  f->n_pat = 1;
  f->count_min = 1;
  f->count_max = CHK_FACT_NO_MAX;
  p->kind = RT_EV_FIBER_DONE;
  p->to_us = INT64_MAX;
  p->gap_max_us = INT64_MAX;
  if (find_actor_node(L, ld_get(ev, "actor"), &p->actor) < 0) return -1;
  if (ld_get_time(L, ev, "by", 0, &p->to_us) < 0) return -1;
  chk_fact_cond *ok = &p->where[0], *name = &p->where[1];
  *ok = (chk_fact_cond){.slot = 1, .op = CHK_COND_EQ, .lo = 1, .key = "ok"};
  *name = (chk_fact_cond){.slot = 3, .op = CHK_COND_EQ, .key = "name"};
  if (text_node(L, ld_get(ev, "fiber"), "fiber", name->str, sizeof name->str) < 0) return -1;
  p->n_where = 2;
  return 0;
}

static int end_effect(ld *L, const cJSON *e, chk_fact *f) {
  chk_fact_pat *p = &f->pat[0];
  f->form = CHK_FACT_MATCH;
  f->n_pat = 1;
  p->kind = RT_EV_EFFECT;
  p->to_us = INT64_MAX;
  p->gap_max_us = INT64_MAX;
  if (opt_actor(L, e, &p->actor) < 0) return -1;
  p->where[0] = (chk_fact_cond){.slot = 3, .op = CHK_COND_EQ, .key = "effect"};
  if (text_node(L, ld_get(e, "effect"), "effect", p->where[0].str, sizeof p->where[0].str) < 0)
    return -1;
  p->n_where = 1;
  return load_count(L, ld_get(e, "count"), "count", &f->count_min, &f->count_max);
}

static int end_column(ld *L, int ti, const cJSON *m, chk_fact_end *e) {
  const rt_column *cols = rt_schema_columns(ti);
  const char *names[24];
  int n = 0, k = e->n_cols;
  for (; cols[n].name && n < 23; n++) names[n] = cols[n].name;
  names[n] = NULL;
  int c = 0;
  while (c < n && strcmp(cols[c].name, m->string) != 0) c++;
  if (c == n) return unknown_member(L, m, "column", rt_schema_table_name(ti), names);
  if (k >= CHK_FACT_MAX_WHERE)
    return ld_key_errf(L, m, "\"where\": at most %d columns", CHK_FACT_MAX_WHERE);
  snprintf(e->cols[k], sizeof e->cols[k], "%s", m->string);
  e->n_cols++;
  if (cJSON_IsNull(m)) {
    e->kinds[k] = 2;
    return 0;
  }
  rt_ftype t = cols[c].type;
  if (t == RT_F_INT) return e->kinds[k] = 0, int_node(L, m, m->string, &e->ivals[k]);
  if (rt_schema_is_enum(t)) return e->kinds[k] = 0, enum_node(L, m, m->string, t, &e->ivals[k]);
  e->kinds[k] = 1;
  if (t == RT_F_JSON && !cJSON_IsString(m))
    return json_text(L, m, m->string, e->vals[k], sizeof e->vals[k]);
  return text_node(L, m, m->string, e->vals[k], sizeof e->vals[k]);
}

/* 1 if s can name a script's own table or column: an identifier that is
** not one of the SDK's (cf_, rv_, sqlite_). */
static int user_table_name(const char *s) {
  if (!*s || strlen(s) >= 32 || !strncmp(s, "cf_", 3) || !strncmp(s, "rv_", 3) ||
      !strncmp(s, "sqlite_", 7))
    return 0;
  for (const char *p = s; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (p > s && *p >= '0' && *p <= '9')))
      return 0;
  return 1;
}

/* "table" naming a script's own table: its columns are not known before
** the run; values are integers, strings, booleans (0/1) or null. A table or
** column that does not exist at the end fails the fact ("cannot read"). */
static int end_user_table(ld *L, const cJSON *o, chk_fact *f) {
  const cJSON *tn = ld_get(o, "table"), *w = ld_get(o, "where"), *m;
  chk_fact_end *e = &f->end;
  e->what = CHK_END_TABLE;
  snprintf(e->table, sizeof e->table, "%s", tn->valuestring);
  if (w) {
    if (scn_expect_type(L->d, w, cJSON_Object, "\"where\"", L->err) < 0) return -1;
    cJSON_ArrayForEach(m, w) {
      int k = e->n_cols;
      if (!user_table_name(m->string))
        return ld_key_errf(L, m, "\"%s\": not a column name", m->string);
      if (k >= CHK_FACT_MAX_WHERE)
        return ld_key_errf(L, m, "\"where\": at most %d columns", CHK_FACT_MAX_WHERE);
      snprintf(e->cols[k], sizeof e->cols[k], "%s", m->string);
      e->n_cols++;
      if (cJSON_IsNull(m)) e->kinds[k] = 2;
      else if (cJSON_IsBool(m)) e->kinds[k] = 0, e->ivals[k] = cJSON_IsTrue(m);
      else if (cJSON_IsNumber(m)) {
        if (int_node(L, m, m->string, &e->ivals[k]) < 0) return -1;
        e->kinds[k] = 0;
      } else if (cJSON_IsString(m)) {
        e->kinds[k] = 1;
        if (text_node(L, m, m->string, e->vals[k], sizeof e->vals[k]) < 0) return -1;
      } else {
        return scn_errf(L->err, L->d, m, "\"%s\": expected an integer, a string, a boolean or null",
                        m->string);
      }
    }
  }
  return load_count(L, ld_get(o, "rows"), "rows", &f->count_min, &f->count_max);
}

static int end_table(ld *L, const cJSON *o, chk_fact *f) {
  static const char *names[32];
  const cJSON *tn = ld_get(o, "table"), *w = ld_get(o, "where"), *m;
  chk_fact_end *e = &f->end;
  if (need_string(L, tn, "\"table\"") < 0) return -1;
  int ti = rt_schema_table(tn->valuestring);
  if (ti < 0 && L->sc->n_actor_scripts && user_table_name(tn->valuestring))
    return end_user_table(L, o, f); /* a script's own table (issue #13) */
  if (ti < 0) {
    int i = 0;
    for (; i < rt_schema_table_count() && i < 31; i++) names[i] = rt_schema_table_name(i);
    names[i] = NULL;
    return unknown_name(L, tn, "table", tn->valuestring, names);
  }
  e->what = CHK_END_TABLE;
  snprintf(e->table, sizeof e->table, "%s", tn->valuestring);
  if (w) {
    if (scn_expect_type(L->d, w, cJSON_Object, "\"where\"", L->err) < 0) return -1;
    cJSON_ArrayForEach(m, w) if (end_column(L, ti, m, e) < 0) return -1;
  }
  return load_count(L, ld_get(o, "rows"), "rows", &f->count_min, &f->count_max);
}

static int end_alarm(ld *L, const cJSON *v, chk_fact *f) {
  chk_fact_cond c;
  f->end.what = CHK_END_ALARM;
  if (cJSON_IsString(v) && strcmp(v->valuestring, "none") == 0) {
    f->end.lo = f->end.hi = -1;
    return 0;
  }
  if (is_range(v)) {
    if (range_value(L, v, "alarm", RT_F_AT, &c) < 0) return -1;
  } else if (exact_value(L, v, "alarm", RT_F_AT, &c) < 0) {
    return -1;
  } else {
    c.hi = c.lo;
  }
  f->end.lo = c.lo;
  f->end.hi = c.hi;
  return 0;
}

static int form_end(ld *L, const cJSON *o, chk_fact *f) {
  static const char *const which[] = {"table", "alarm", "keepalive_refs", "effect"};
  const cJSON *got = NULL;
  if (ld_obj_fields(L, o, "end", end_fields) < 0) return -1;
  for (int i = 0; i < 4; i++) {
    const cJSON *n = ld_get(o, which[i]);
    if (n && got)
      return ld_key_errf(L, n, "\"end\": give one of \"table\", \"alarm\", \"keepalive_refs\", "
                         "\"effect\", not both \"%s\" and \"%s\"", got->string, n->string);
    if (n) got = n;
  }
  if (!got)
    return scn_errf(L->err, L->d, o, "\"end\": expected one of \"table\", \"alarm\", "
                    "\"keepalive_refs\", \"effect\"");
  if (!strcmp(got->string, "effect")) return end_effect(L, o, f);
  const cJSON *bad = ld_get(o, "count") ? ld_get(o, "count") : NULL;
  if (bad) return ld_key_errf(L, bad, "\"count\" goes with \"effect\"; a table takes \"rows\"");
  if (strcmp(got->string, "table") && (ld_get(o, "where") || ld_get(o, "rows")))
    return ld_key_errf(L, ld_get(o, "where") ? ld_get(o, "where") : ld_get(o, "rows"),
                       "\"where\" and \"rows\" go with \"table\"");
  if (scn__has_sigkill(L->sc))
    return scn_errf(L->err, L->d, o, "\"end\": storage and memory facts cannot read a run with "
                    "sigkill faults (its storage lives in a worker process)");
  f->form = CHK_FACT_END;
  if (ld_need(L, o, "actor") < 0 || find_actor_node(L, ld_get(o, "actor"), &f->end.actor) < 0)
    return -1;
  if (!strcmp(got->string, "table")) return end_table(L, o, f);
  if (!strcmp(got->string, "alarm")) return end_alarm(L, got, f);
  f->end.what = CHK_END_REFS;
  return load_count(L, got, "keepalive_refs", &f->count_min, &f->count_max);
}

/* ---- one fact ------------------------------------------------------------- */

static int fact_header(ld *L, const cJSON *o, chk_fact *f) {
  const cJSON *nm = ld_get(o, "fact");
  char q[96];
  if (ld_need(L, o, "fact") < 0 || need_string(L, nm, "\"fact\"") < 0) return -1;
  size_t n = strlen(nm->valuestring);
  if (n == 0 || n >= sizeof f->name)
    return scn_errf(L->err, L->d, nm, "\"fact\": expected a name of 1 to %zu bytes",
                    sizeof f->name - 1);
  for (int i = 0; i < L->sc->n_facts; i++)
    if (!strcmp(L->sc->facts[i].name, nm->valuestring))
      return scn_errf(L->err, L->d, nm, "duplicate fact name \"%s\"",
                      ld_quote(q, sizeof q, nm->valuestring));
  memcpy(f->name, nm->valuestring, n + 1);
  f->line = scn_doc_pos(L->d, o).line;
  if (scn_get_bool(L->d, o, "robust", &f->robust, L->err) < 0) return -1;
  return json_text(L, o, "fact", f->json, sizeof f->json);
}

static int fact_form(ld *L, const cJSON *o, chk_fact *f) {
  static const char *const forms[] = {"match", "sequence", "eventually", "end"};
  const cJSON *got = NULL, *cnt = ld_get(o, "count");
  for (int i = 0; i < 4; i++) {
    const cJSON *n = ld_get(o, forms[i]);
    if (n && got)
      return ld_key_errf(L, n, "a fact has one form: \"%s\" and \"%s\" cannot go together",
                         got->string, n->string);
    if (n) got = n;
  }
  if (!got)
    return scn_errf(L->err, L->d, o, "a fact needs one of \"match\", \"sequence\", \"eventually\", "
                    "\"end\"");
  if (cnt && strcmp(got->string, "match"))
    return ld_key_errf(L, cnt, "\"count\" goes with \"match\" (an end fact counts with \"rows\")");
  if (!strcmp(got->string, "sequence")) return form_sequence(L, got, f);
  if (!strcmp(got->string, "eventually")) return form_eventually(L, got, f);
  if (!strcmp(got->string, "end")) return form_end(L, got, f);
  f->form = CHK_FACT_MATCH;
  f->n_pat = 1;
  if (load_pat(L, got, "match", pat_fields, &f->pat[0]) < 0) return -1;
  return load_count(L, cnt, "count", &f->count_min, &f->count_max);
}

int ld_load_facts(ld *L, const cJSON *arr, uint32_t case_mask) {
  scn_scenario *sc = L->sc;
  const cJSON *o;
  char what[32];
  if (!cJSON_IsArray(arr))
    return scn_errf(L->err, L->d, arr, "\"facts\": expected an array of facts, found %s",
                    scn_type_name(arr));
  cJSON_ArrayForEach(o, arr) {
    if (sc->n_facts >= SCN_MAX_FACTS)
      return scn_errf(L->err, L->d, o, "too many facts (at most %d in a file)", SCN_MAX_FACTS);
    snprintf(what, sizeof what, "facts[%d]", sc->n_facts);
    chk_fact *f = &sc->facts[sc->n_facts];
    memset(f, 0, sizeof *f);
    f->case_mask = case_mask;
    if (ld_obj_fields(L, o, what, fact_fields) < 0 || fact_header(L, o, f) < 0 ||
        fact_form(L, o, f) < 0)
      return -1;
    sc->n_facts++;
  }
  return 0;
}
