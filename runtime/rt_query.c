/*
** rt_query.c: end-of-run reads of an actor's SDK tables for facts
** (rt_query_rows, rt.h). Table and column names are checked against the
** runtime's table list (rt_schema.h) before they reach SQL; values are
** bound, never spliced.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <string.h>

#include "runtime/rt_host.h"
#include "runtime/rt_schema.h"

static int known_column(int ti, const char *name) {
  const rt_column *c = rt_schema_columns(ti);
  for (; c && c->name; c++)
    if (strcmp(c->name, name) == 0) return 1;
  return 0;
}

/* "SELECT count(*) FROM t WHERE c1 = ? AND c2 IS NULL" into q. */
static int build(char *q, size_t cap, int ti, const rt_qcol *cols, int n) {
  int o = snprintf(q, cap, "SELECT count(*) FROM %s", rt_schema_table_name(ti));
  for (int i = 0; i < n && o > 0 && (size_t)o < cap; i++) {
    if (!known_column(ti, cols[i].name)) return -1;
    o += snprintf(q + o, cap - (size_t)o, "%s%s %s", i ? " AND " : " WHERE ", cols[i].name,
                  cols[i].kind == 2 ? "IS NULL" : "= ?");
  }
  return o > 0 && (size_t)o < cap ? 0 : -1;
}

/* An identifier a script's own table or column may have (quoted in SQL). */
static int ident(const char *s) {
  if (!s || !*s || strlen(s) > 63) return 0;
  for (const char *p = s; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (p > s && *p >= '0' && *p <= '9')))
      return 0;
  return 1;
}

/* The same over a table a script made (any identifier; columns unchecked
** but identifiers). */
static int build_user(char *q, size_t cap, const char *table, const rt_qcol *cols, int n) {
  if (!ident(table)) return -1;
  int o = snprintf(q, cap, "SELECT count(*) FROM \"%s\"", table);
  for (int i = 0; i < n && o > 0 && (size_t)o < cap; i++) {
    if (!ident(cols[i].name)) return -1;
    o += snprintf(q + o, cap - (size_t)o, "%s\"%s\" %s", i ? " AND " : " WHERE ", cols[i].name,
                  cols[i].kind == 2 ? "IS NULL" : "= ?");
  }
  return o > 0 && (size_t)o < cap ? 0 : -1;
}

int64_t rt_query_rows(rt_world *w, uint32_t a, const char *table, const rt_qcol *cols, int n) {
  char q[1024];
  int ti = rt_schema_table(table), k = 1;
  if (a >= w->n_actors) return -1;
  if (ti < 0 && build_user(q, sizeof q, table, cols, n) < 0) return -1;
  if (ti >= 0 && build(q, sizeof q, ti, cols, n) < 0) return -1;
  sqlite3_stmt *st = rt__prepare(w, a, q);
  if (!st) return -1;
  for (int i = 0; i < n; i++) {
    if (cols[i].kind == 0) sqlite3_bind_int64(st, k++, cols[i].i);
    else if (cols[i].kind == 1) sqlite3_bind_text(st, k++, cols[i].s, -1, SQLITE_TRANSIENT);
  }
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}
