/*
** rt_sql_sandbox.c: deterministic functions and an authorizer for user SQL
** (rt_sql_sandbox.h).
**
** Time. SQLite reads 'now' from the connection's VFS, fixed when the
** connection was opened. Instead, the date functions are registered again
** under their own names (a connection's functions take precedence over
** the built-ins, and CURRENT_TIMESTAMP/DATE/TIME are looked up as functions
** of those names, column defaults included). Each wrapper replaces a 'now'
** time value by the virtual time as text and hands the call to the real
** built-in on a private helper connection, so every other modifier keeps
** SQLite's own semantics.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include "runtime/rt_sql_sandbox.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CACHED_ARGS 8

/* A date function: its name and which argument is the time value. */
typedef struct date_fn {
  const char *name;
  int tpos;
} date_fn;

static const date_fn date_fns[] = {
    {"date", 0}, {"time", 0}, {"datetime", 0}, {"julianday", 0}, {"unixepoch", 0},
    {"strftime", 1}};
#define N_DATE_FNS (sizeof date_fns / sizeof date_fns[0])

typedef struct fn_ref {
  struct rt_sqlsbx *s;
  int i;  /* index in date_fns, or -1..-3 for CURRENT_* */
} fn_ref;

struct rt_sqlsbx {
  sqlite3 *db;
  rt_sql_sandbox_config cfg;
  char prefix[64];
  int user;
  char why[256];
  sqlite3 *helper;  /* built-in date functions, opened on first use */
  sqlite3_stmt *cached[N_DATE_FNS][MAX_CACHED_ARGS + 1];
  fn_ref refs[N_DATE_FNS + 3];
};

/* {=============== the virtual clock ============================= */

/* Days since 1970-01-01 -> civil date (H. Hinnant's algorithm). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void rt_sql_format_time(int64_t unix_ms, char *out, size_t outlen) {
  int64_t days = unix_ms / 86400000, ms = unix_ms % 86400000;
  if (ms < 0) {
    ms += 86400000;
    days--;
  }
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  snprintf(out, outlen, "%04lld-%02u-%02u %02d:%02d:%02d.%03d", (long long)y, m, d,
           (int)(ms / 3600000), (int)(ms / 60000 % 60), (int)(ms / 1000 % 60), (int)(ms % 1000));
}

/* The virtual wall time as text; 0, or -1 with an error set on c. */
static int now_text(sqlite3_context *c, rt_sqlsbx *s, char *out, size_t outlen) {
  if (!s->cfg.now_us) {
    sqlite3_result_error(c, "'now' is refused: the sandbox has no virtual clock", -1);
    return -1;
  }
  int64_t us = s->cfg.now_us(s->cfg.ctx);
  int64_t ms = (us >= 0 ? us : us - 999) / 1000;
  rt_sql_format_time(s->cfg.epoch_unix_ms + ms, out, outlen);
  return 0;
}

/* }=============================================================== */

/* {=============== date functions ================================ */

static int is_now(sqlite3_value *v) {
  return sqlite3_value_type(v) == SQLITE_TEXT &&
         sqlite3_stricmp((const char *)sqlite3_value_text(v), "now") == 0;
}

/* 'localtime' and 'utc' convert through the machine's time zone. */
static const char *zone_modifier(sqlite3_value *v) {
  char buf[16];
  const unsigned char *t = sqlite3_value_text(v);
  size_t n = 0;
  if (sqlite3_value_type(v) != SQLITE_TEXT || !t) return NULL;
  while (isspace(*t)) t++;
  while (t[n] && n < sizeof buf - 1) { buf[n] = (char)tolower(t[n]); n++; }
  while (n > 0 && isspace((unsigned char)buf[n - 1])) n--;
  buf[n] = '\0';
  if (!strcmp(buf, "localtime")) return "localtime";
  if (!strcmp(buf, "utc")) return "utc";
  return NULL;
}

static sqlite3_stmt *helper_stmt(rt_sqlsbx *s, int fi, int argc, int *cached) {
  char sql[256];
  size_t n;
  sqlite3_stmt *st = NULL;
  *cached = argc <= MAX_CACHED_ARGS;
  if (*cached && s->cached[fi][argc]) return s->cached[fi][argc];
  if (!s->helper && sqlite3_open(":memory:", &s->helper) != SQLITE_OK) return NULL;
  n = (size_t)snprintf(sql, sizeof sql, "SELECT %s(", date_fns[fi].name);
  for (int i = 0; i < argc && n + 8 < sizeof sql; i++)
    n += (size_t)snprintf(sql + n, sizeof sql - n, i ? ",?%d" : "?%d", i + 1);
  snprintf(sql + n, sizeof sql - n, ")");
  if (sqlite3_prepare_v2(s->helper, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
  if (*cached) s->cached[fi][argc] = st;
  return st;
}

static void date_call(sqlite3_context *c, int argc, sqlite3_value **v) {
  const fn_ref *r = sqlite3_user_data(c);
  rt_sqlsbx *s = r->s;
  const date_fn *f = &date_fns[r->i];
  char now[40], msg[160];
  int n = argc > f->tpos ? argc : f->tpos + 1, cached;
  for (int i = f->tpos + 1; i < argc; i++) {
    const char *z = zone_modifier(v[i]);
    if (!z) continue;
    snprintf(msg, sizeof msg, "%s(): the '%s' modifier is refused by the sandbox "
             "(it depends on the machine's time zone)", f->name, z);
    sqlite3_result_error(c, msg, -1);
    return;
  }
  if ((argc <= f->tpos || is_now(v[f->tpos])) && now_text(c, s, now, sizeof now) != 0) return;
  sqlite3_stmt *st = helper_stmt(s, r->i, n, &cached);
  if (!st) {
    sqlite3_result_error(c, "date function helper could not be prepared", -1);
    return;
  }
  for (int i = 0; i < n; i++) {
    if (i == f->tpos && (i >= argc || is_now(v[i])))
      sqlite3_bind_text(st, i + 1, now, -1, SQLITE_TRANSIENT);
    else if (i < argc)
      sqlite3_bind_value(st, i + 1, v[i]);
    else
      sqlite3_bind_null(st, i + 1); /* strftime() without a format */
  }
  if (sqlite3_step(st) == SQLITE_ROW) sqlite3_result_value(c, sqlite3_column_value(st, 0));
  else sqlite3_result_error(c, sqlite3_errmsg(s->helper), -1);
  if (cached) {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  } else {
    sqlite3_finalize(st);
  }
}

/* CURRENT_TIMESTAMP, CURRENT_DATE, CURRENT_TIME (refs -1, -2, -3). */
static void current_call(sqlite3_context *c, int argc, sqlite3_value **v) {
  const fn_ref *r = sqlite3_user_data(c);
  char now[40];
  (void)argc;
  (void)v;
  if (now_text(c, r->s, now, sizeof now) != 0) return;
  now[19] = '\0'; /* no milliseconds */
  if (r->i == -1) sqlite3_result_text(c, now, -1, SQLITE_TRANSIENT);
  else if (r->i == -2) sqlite3_result_text(c, now, 10, SQLITE_TRANSIENT);
  else sqlite3_result_text(c, now + 11, -1, SQLITE_TRANSIENT);
}

/* }=============================================================== */

/* {=============== randomness ==================================== */

static int draw(sqlite3_context *c, uint64_t *out) {
  rt_sqlsbx *s = sqlite3_user_data(c);
  if (s->cfg.random64) *out = s->cfg.random64(s->cfg.ctx);
  else if (s->cfg.rng) *out = sim_rng_next(s->cfg.rng);
  else {
    sqlite3_result_error(c, "random() is refused: the sandbox has no random stream", -1);
    return -1;
  }
  return 0;
}

static void random_call(sqlite3_context *c, int argc, sqlite3_value **v) {
  uint64_t r;
  (void)argc;
  (void)v;
  if (draw(c, &r) == 0) sqlite3_result_int64(c, (sqlite3_int64)r);
}

static void randomblob_call(sqlite3_context *c, int argc, sqlite3_value **v) {
  sqlite3_int64 n = sqlite3_value_int64(v[0]);
  uint64_t r;
  (void)argc;
  if (n < 1) n = 1;
  if (n > sqlite3_limit(sqlite3_context_db_handle(c), SQLITE_LIMIT_LENGTH, -1)) {
    sqlite3_result_error_toobig(c);
    return;
  }
  unsigned char *b = sqlite3_malloc64((sqlite3_uint64)n);
  if (!b) {
    sqlite3_result_error_nomem(c);
    return;
  }
  for (sqlite3_int64 i = 0; i < n; i++) {
    if (i % 8 == 0 && draw(c, &r) != 0) {
      sqlite3_free(b);
      return;
    }
    b[i] = (unsigned char)(r >> (8 * (i % 8)));
  }
  sqlite3_result_blob64(c, b, (sqlite3_uint64)n, sqlite3_free);
}

/* }=============================================================== */

/* {=============== authorizer ==================================== */

static int deny(rt_sqlsbx *s, const char *fmt, const char *a, const char *b) {
  snprintf(s->why, sizeof s->why, fmt, a ? a : "", b ? b : "");
  return SQLITE_DENY;
}

/* 1 if name starts with one of the comma-separated prefixes. */
static int is_sdk(const rt_sqlsbx *s, const char *name) {
  for (const char *p = s->prefix; name && *p;) {
    const char *e = strchr(p, ',');
    int n = e ? (int)(e - p) : (int)strlen(p);
    if (n > 0 && sqlite3_strnicmp(name, p, n) == 0) return 1;
    p += n + (e ? 1 : 0);
  }
  return 0;
}

/* PRAGMAs refused when they set a value (and wal_checkpoint,
** writable_schema always): they change durability or the schema's safety. */
static int pragma_refused(const char *name, const char *arg) {
  static const char *const setting[] = {"synchronous", "journal_mode", "locking_mode",
      "journal_size_limit", "wal_autocheckpoint", "fullfsync", "checkpoint_fullfsync",
      "cache_spill", "temp_store", "secure_delete", "mmap_size", "page_size",
      "auto_vacuum", "schema_version", "query_only", NULL};
  if (!name) return 0;
  if (!sqlite3_stricmp(name, "wal_checkpoint") || !sqlite3_stricmp(name, "writable_schema") ||
      !sqlite3_stricmp(name, "incremental_vacuum"))
    return 1;
  for (int i = 0; arg && setting[i]; i++)
    if (!sqlite3_stricmp(name, setting[i])) return 1;
  return 0;
}

static int schema_action(rt_sqlsbx *s, int action, const char *a1, const char *a2) {
  switch (action) {
  case SQLITE_CREATE_TABLE: case SQLITE_CREATE_TEMP_TABLE: case SQLITE_CREATE_VIEW:
  case SQLITE_CREATE_TEMP_VIEW: case SQLITE_DROP_TABLE: case SQLITE_DROP_TEMP_TABLE:
  case SQLITE_DROP_VIEW: case SQLITE_DROP_TEMP_VIEW:
    if (is_sdk(s, a1)) return deny(s, "creating or dropping %s (the SDK's tables are read-only to user SQL)", a1, NULL);
    return SQLITE_OK;
  case SQLITE_ALTER_TABLE: case SQLITE_CREATE_INDEX: case SQLITE_CREATE_TEMP_INDEX:
  case SQLITE_DROP_INDEX: case SQLITE_DROP_TEMP_INDEX: case SQLITE_CREATE_TRIGGER:
  case SQLITE_CREATE_TEMP_TRIGGER: case SQLITE_DROP_TRIGGER: case SQLITE_DROP_TEMP_TRIGGER:
    if (is_sdk(s, a2)) return deny(s, "changing the schema of %s (the SDK's tables are read-only to user SQL)", a2, NULL);
    return SQLITE_OK;
  default: return SQLITE_OK;
  }
}

static int authorize(void *ud, int action, const char *a1, const char *a2, const char *db,
                     const char *trigger) {
  rt_sqlsbx *s = ud;
  (void)db;
  (void)trigger;
  if (!s->user) return SQLITE_OK;
  switch (action) {
  case SQLITE_ATTACH:
    if (a1 && *a1) return deny(s, "ATTACH of %s (another database file is outside the actor's storage)", a1, NULL);
    return deny(s, "VACUUM (it rebuilds the actor's storage)", NULL, NULL);
  case SQLITE_DETACH: return deny(s, "DETACH (no other database is attached)", NULL, NULL);
  case SQLITE_FUNCTION:
    if (a2 && !sqlite3_stricmp(a2, "load_extension"))
      return deny(s, "load_extension (native code)", NULL, NULL);
    return SQLITE_OK;
  case SQLITE_TRANSACTION:
    return deny(s, "%s (transactions belong to the runtime's turn commits)", a1, NULL);
  case SQLITE_PRAGMA:
    if (pragma_refused(a1, a2)) return deny(s, "PRAGMA %s%s (it changes durability or the schema's safety)", a1, a2 ? " = ..." : "");
    return SQLITE_OK;
  case SQLITE_INSERT: case SQLITE_UPDATE: case SQLITE_DELETE:
    if (is_sdk(s, a1)) return deny(s, "writes to %s (the SDK's tables are read-only to user SQL)", a1, NULL);
    return SQLITE_OK;
  default: return schema_action(s, action, a1, a2);
  }
}

/* }=============================================================== */

static void sbx_destroy(void *p) {
  rt_sqlsbx *s = p;
  for (size_t i = 0; i < N_DATE_FNS; i++)
    for (int j = 0; j <= MAX_CACHED_ARGS; j++) sqlite3_finalize(s->cached[i][j]);
  if (s->helper) sqlite3_close(s->helper);
  free(s);
}

/* Drops every override; random() goes last, its destructor frees the
** sandbox (SQLite also calls it when registering random() failed). */
static void unregister_all(sqlite3 *db) {
  static const char *const names[] = {"current_timestamp", "current_date", "current_time"};
  sqlite3_set_authorizer(db, NULL, NULL);
  for (size_t i = 0; i < N_DATE_FNS; i++)
    sqlite3_create_function_v2(db, date_fns[i].name, -1, SQLITE_UTF8, NULL, NULL, NULL, NULL, NULL);
  for (int i = 0; i < 3; i++)
    sqlite3_create_function_v2(db, names[i], 0, SQLITE_UTF8, NULL, NULL, NULL, NULL, NULL);
  sqlite3_create_function_v2(db, "randomblob", 1, SQLITE_UTF8, NULL, NULL, NULL, NULL, NULL);
  sqlite3_create_function_v2(db, "random", 0, SQLITE_UTF8, NULL, NULL, NULL, NULL, NULL);
}

static int register_all(rt_sqlsbx *s) {
  static const char *const current[] = {"current_timestamp", "current_date", "current_time"};
  const int det = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  int rc = sqlite3_create_function_v2(s->db, "random", 0, SQLITE_UTF8, s, random_call, NULL, NULL, sbx_destroy);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_create_function_v2(s->db, "randomblob", 1, SQLITE_UTF8, s, randomblob_call, NULL, NULL, NULL);
  for (size_t i = 0; rc == SQLITE_OK && i < N_DATE_FNS; i++) {
    s->refs[i] = (fn_ref){s, (int)i};
    rc = sqlite3_create_function_v2(s->db, date_fns[i].name, -1, det, &s->refs[i], date_call, NULL, NULL, NULL);
  }
  for (int i = 0; rc == SQLITE_OK && i < 3; i++) {
    s->refs[N_DATE_FNS + (size_t)i] = (fn_ref){s, -1 - i};
    rc = sqlite3_create_function_v2(s->db, current[i], 0, det, &s->refs[N_DATE_FNS + (size_t)i],
                                    current_call, NULL, NULL, NULL);
  }
  if (rc == SQLITE_OK) rc = sqlite3_set_authorizer(s->db, authorize, s);
  return rc;
}

rt_sqlsbx *rt_sql_sandbox(sqlite3 *db, const rt_sql_sandbox_config *cfg, char *err, size_t errlen) {
  rt_sqlsbx *s = calloc(1, sizeof *s);
  if (!s) {
    if (err) snprintf(err, errlen, "out of memory");
    return NULL;
  }
  s->db = db;
  if (cfg) s->cfg = *cfg;
  snprintf(s->prefix, sizeof s->prefix, "%s", cfg && cfg->sdk_prefix ? cfg->sdk_prefix : "cf_");
  s->cfg.sdk_prefix = s->prefix;
  int rc = register_all(s);
  if (rc != SQLITE_OK) {
    if (err) snprintf(err, errlen, "SQL sandbox: %s", sqlite3_errstr(rc));
    unregister_all(db);
    return NULL;
  }
  return s;
}

void rt_sql_sandbox_user(rt_sqlsbx *s, int on) {
  s->user = on != 0;
  if (on) s->why[0] = '\0';
}

const char *rt_sql_sandbox_refusal(const rt_sqlsbx *s) { return s->why; }

/* The statement's first keyword, after spaces and comments. */
static const char *first_keyword(const char *p) {
  for (;;) {
    while (*p && isspace((unsigned char)*p)) p++;
    if (p[0] == '-' && p[1] == '-') {
      while (*p && *p != '\n') p++;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      p = e ? e + 2 : p + strlen(p);
    } else {
      return p;
    }
  }
}

int rt_sql_sandbox_prepare(rt_sqlsbx *s, const char *sql, sqlite3_stmt **stmt,
                           const char **tail, char *err, size_t errlen) {
  int was = s->user;
  rt_sql_sandbox_user(s, 1);
  int rc = sqlite3_prepare_v2(s->db, sql, -1, stmt, tail);
  s->user = was;
  if (rc != SQLITE_OK && s->why[0]) rc = SQLITE_AUTH; /* functions fail as SQLITE_ERROR */
  if (rc == SQLITE_OK && *stmt && !sqlite3_stmt_readonly(*stmt) && !s->why[0]) {
    /* VACUUM is authorized only when it runs: refuse it here by its first
    ** keyword, after any comments. */
    if (sqlite3_strnicmp(first_keyword(sqlite3_sql(*stmt)), "vacuum", 6) == 0) {
      sqlite3_finalize(*stmt);
      *stmt = NULL;
      snprintf(s->why, sizeof s->why, "VACUUM (it rebuilds the actor's storage)");
      rc = SQLITE_AUTH;
    }
  }
  if (rc == SQLITE_OK) return rc;
  if (err) {
    if (rc == SQLITE_AUTH && s->why[0]) snprintf(err, errlen, "refused by the SQL sandbox: %s", s->why);
    else snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
  }
  return rc;
}
