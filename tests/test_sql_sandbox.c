/*
** test_sql_sandbox.c: user SQL on an actor's connection
** (runtime/rt_sql_sandbox.h): random() and randomblob() from the host
** stream, every form of 'now' on the virtual clock, zone modifiers refused,
** and the authorizer's refusals (ATTACH, DETACH, load_extension, VACUUM,
** transactions, durability PRAGMAs, writes and schema changes on the SDK's
** tables) while the runtime's own SQL is never refused.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <sqlite3.h>

#include "runtime/rt_sql_sandbox.h"

#define EPOCH_2026 1767225600000LL /* 2026-01-01T00:00:00Z */

typedef struct fixture {
  sqlite3 *db;
  rt_sqlsbx *s;
  sim_rng rng;
  int64_t now_us;
} fixture;

static int64_t f_now(void *c) { return ((fixture *)c)->now_us; }

static int setup(void **st) {
  static fixture f;
  char err[128];
  memset(&f, 0, sizeof f);
  sim_rng_stream(&f.rng, 11, "sql.test");
  if (sqlite3_open(":memory:", &f.db) != SQLITE_OK) return -1;
  sqlite3_exec(f.db, "CREATE TABLE cf_agents_runs(id INTEGER PRIMARY KEY, name TEXT);"
                     "INSERT INTO cf_agents_runs VALUES(1, 'job');"
                     "CREATE TABLE orders(id INTEGER PRIMARY KEY, charged INTEGER,"
                     " at TEXT DEFAULT CURRENT_TIMESTAMP);", NULL, NULL, NULL);
  rt_sql_sandbox_config c = {&f, f_now, NULL, &f.rng, EPOCH_2026, NULL};
  f.s = rt_sql_sandbox(f.db, &c, err, sizeof err);
  if (!f.s) return -1;
  *st = &f;
  return 0;
}

static int teardown(void **st) {
  fixture *f = *st;
  return sqlite3_close(f->db) == SQLITE_OK ? 0 : -1;
}

/* The first column of the first row of a user statement, as text. */
static const char *q(fixture *f, const char *sql) {
  static char out[256];
  sqlite3_stmt *st;
  char err[256];
  int rc = rt_sql_sandbox_prepare(f->s, sql, &st, NULL, err, sizeof err);
  if (rc != SQLITE_OK) fprintf(stderr, "%s: %s\n", sql, err);
  assert_int_equal(rc, SQLITE_OK);
  rt_sql_sandbox_user(f->s, 1);
  rc = sqlite3_step(st);
  rt_sql_sandbox_user(f->s, 0);
  if (rc == SQLITE_ROW) snprintf(out, sizeof out, "%s", (const char *)sqlite3_column_text(st, 0));
  else snprintf(out, sizeof out, "rc=%d %s", rc, sqlite3_errmsg(f->db));
  sqlite3_finalize(st);
  return out;
}

/* A user statement that must be refused at prepare, with `needle` in the
** message. */
static void refused(fixture *f, const char *sql, const char *needle) {
  sqlite3_stmt *st = NULL;
  char err[256];
  int rc = rt_sql_sandbox_prepare(f->s, sql, &st, NULL, err, sizeof err);
  if (rc != SQLITE_AUTH || !strstr(err, needle)) fprintf(stderr, "%s -> %d %s\n", sql, rc, err);
  assert_int_equal(rc, SQLITE_AUTH);
  assert_null(st);
  assert_non_null(strstr(err, "refused by the SQL sandbox: "));
  assert_non_null(strstr(err, needle));
}

static void test_random_from_the_stream(void **st) {
  fixture *f = *st;
  sim_rng copy = f->rng;
  char want[64];
  snprintf(want, sizeof want, "%lld", (long long)sim_rng_next(&copy));
  assert_string_equal(q(f, "SELECT random()"), want);
  uint64_t r = sim_rng_next(&copy);
  char hex[32];
  for (int i = 0; i < 5; i++) snprintf(hex + 2 * i, 3, "%02X", (unsigned)((r >> (8 * i)) & 0xff));
  assert_string_equal(q(f, "SELECT hex(randomblob(5))"), hex);
  assert_string_equal(q(f, "SELECT length(randomblob(0))"), "1");
  /* ORDER BY random() follows the stream too: the same stream, the same
  ** order. */
  sqlite3_exec(f->db, "CREATE TABLE IF NOT EXISTS n(v); DELETE FROM n;"
                      "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i<20)"
                      " INSERT INTO n SELECT i FROM c", NULL, NULL, NULL);
  sim_rng saved = f->rng;
  char a[256];
  snprintf(a, sizeof a, "%s", q(f, "SELECT group_concat(v) FROM (SELECT v FROM n ORDER BY random())"));
  f->rng = saved;
  assert_string_equal(q(f, "SELECT group_concat(v) FROM (SELECT v FROM n ORDER BY random())"), a);
}

static void test_now_is_the_virtual_clock(void **st) {
  fixture *f = *st;
  f->now_us = 1500000; /* 1.5 s after the epoch */
  assert_string_equal(q(f, "SELECT datetime('now')"), "2026-01-01 00:00:01");
  assert_string_equal(q(f, "SELECT datetime()"), "2026-01-01 00:00:01");
  assert_string_equal(q(f, "SELECT date('NOW')"), "2026-01-01");
  assert_string_equal(q(f, "SELECT time('now')"), "00:00:01");
  assert_string_equal(q(f, "SELECT unixepoch('now')"), "1767225601");
  assert_string_equal(q(f, "SELECT strftime('%Y %H:%M:%f', 'now')"), "2026 00:00:01.500");
  assert_string_equal(q(f, "SELECT strftime('%s')"), "1767225601");
  assert_string_equal(q(f, "SELECT strftime() IS NULL"), "1");
  assert_string_equal(q(f, "SELECT printf('%.6f', julianday('now'))"), "2461041.500017");
  assert_string_equal(q(f, "SELECT datetime('now', '+1 day', 'start of day')"), "2026-01-02 00:00:00");
  assert_string_equal(q(f, "SELECT CURRENT_TIMESTAMP"), "2026-01-01 00:00:01");
  assert_string_equal(q(f, "SELECT CURRENT_DATE || ' ' || CURRENT_TIME"), "2026-01-01 00:00:01");
  /* Other time values keep SQLite's semantics. */
  assert_string_equal(q(f, "SELECT date('2020-02-29', '+1 year')"), "2021-03-01");
  assert_string_equal(q(f, "SELECT datetime(0, 'unixepoch')"), "1970-01-01 00:00:00");
  /* A column default reads the virtual clock, and the clock moves. */
  f->now_us = 86400000000LL + 61000000;
  q(f, "INSERT INTO orders(charged) VALUES(1)");
  assert_string_equal(q(f, "SELECT at FROM orders ORDER BY id DESC LIMIT 1"), "2026-01-02 00:01:01");
  /* The machine's time zone is refused. */
  const char *m = q(f, "SELECT datetime('now', 'localtime')");
  assert_non_null(strstr(m, "'localtime' modifier is refused"));
  m = q(f, "SELECT date('2020-01-01', ' UTC ')");
  assert_non_null(strstr(m, "'utc' modifier is refused"));
}

static void test_format_time(void **st) {
  char b[40];
  (void)st;
  rt_sql_format_time(0, b, sizeof b);
  assert_string_equal(b, "1970-01-01 00:00:00.000");
  rt_sql_format_time(-1, b, sizeof b);
  assert_string_equal(b, "1969-12-31 23:59:59.999");
  rt_sql_format_time(951782400123LL, b, sizeof b);
  assert_string_equal(b, "2000-02-29 00:00:00.123");
  rt_sql_format_time(EPOCH_2026 + 86399999, b, sizeof b);
  assert_string_equal(b, "2026-01-01 23:59:59.999");
}

static void test_authorizer_refusals(void **st) {
  fixture *f = *st;
  refused(f, "ATTACH '/tmp/other.db' AS o", "ATTACH of /tmp/other.db");
  refused(f, "DETACH o", "DETACH");
  refused(f, "SELECT load_extension('/tmp/evil.so')", "load_extension");
  refused(f, "VACUUM", "VACUUM");
  refused(f, "/* tidy */ VACUUM INTO '/tmp/copy.db'", "VACUUM");
  refused(f, "BEGIN", "BEGIN (transactions belong");
  refused(f, "COMMIT", "COMMIT");
  refused(f, "PRAGMA synchronous = OFF", "PRAGMA synchronous");
  refused(f, "PRAGMA main.journal_mode = DELETE", "PRAGMA journal_mode");
  refused(f, "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA wal_checkpoint");
  refused(f, "PRAGMA writable_schema = 1", "PRAGMA writable_schema");
  refused(f, "INSERT INTO cf_agents_runs VALUES(2, 'x')", "writes to cf_agents_runs");
  refused(f, "UPDATE CF_AGENTS_RUNS SET name = 'y'", "writes to cf_agents_runs");
  refused(f, "DELETE FROM cf_agents_runs", "writes to cf_agents_runs (the SDK's tables are read-only");
  refused(f, "DROP TABLE cf_agents_runs", "creating or dropping cf_agents_runs");
  refused(f, "CREATE TABLE cf_mine(x)", "creating or dropping cf_mine");
  refused(f, "ALTER TABLE cf_agents_runs ADD COLUMN z", "changing the schema of cf_agents_runs");
  refused(f, "CREATE INDEX i ON cf_agents_runs(name)", "changing the schema of cf_agents_runs");
  refused(f, "CREATE TRIGGER t AFTER INSERT ON cf_agents_runs BEGIN SELECT 1; END", "changing the schema");
  /* Allowed: reads of the SDK's tables, user tables, harmless PRAGMAs. */
  assert_string_equal(q(f, "SELECT name FROM cf_agents_runs WHERE id = 1"), "job");
  assert_string_equal(q(f, "PRAGMA synchronous"), "2");
  q(f, "CREATE TABLE IF NOT EXISTS notes(v)");
  q(f, "INSERT INTO notes VALUES('hello')");
  assert_string_equal(q(f, "SELECT v FROM notes"), "hello");
  /* A user trigger cannot write the SDK's tables for the user either. */
  q(f, "CREATE TRIGGER sneaky AFTER INSERT ON notes BEGIN DELETE FROM cf_agents_runs; END");
  refused(f, "INSERT INTO notes VALUES('again')", "writes to cf_agents_runs");
  /* The runtime's own SQL (user mode off) is never refused. */
  assert_int_equal(sqlite3_exec(f->db, "DROP TRIGGER sneaky; INSERT INTO cf_agents_runs VALUES(3, 'sdk');"
                                       "PRAGMA synchronous = NORMAL", NULL, NULL, NULL), SQLITE_OK);
  assert_string_equal(q(f, "SELECT count(*) FROM cf_agents_runs"), "2");
}

static void test_prefix_is_a_parameter(void **st) {
  sqlite3 *db;
  char err[128];
  (void)st;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE sdk_state(x); CREATE TABLE cf_free(x)", NULL, NULL, NULL);
  rt_sql_sandbox_config c = {NULL, NULL, NULL, NULL, 0, "sdk_"};
  rt_sqlsbx *s = rt_sql_sandbox(db, &c, err, sizeof err);
  assert_non_null(s);
  sqlite3_stmt *stmt;
  assert_int_equal(rt_sql_sandbox_prepare(s, "INSERT INTO sdk_state VALUES(1)", &stmt, NULL, err, sizeof err), SQLITE_AUTH);
  assert_non_null(strstr(err, "writes to sdk_state"));
  assert_int_equal(rt_sql_sandbox_prepare(s, "INSERT INTO cf_free VALUES(1)", &stmt, NULL, err, sizeof err), SQLITE_OK);
  sqlite3_finalize(stmt);
  /* No clock and no stream: 'now' and random() are refused, not real. */
  assert_int_equal(rt_sql_sandbox_prepare(s, "SELECT datetime('now'), random()", &stmt, NULL, err, sizeof err), SQLITE_OK);
  assert_int_equal(sqlite3_step(stmt), SQLITE_ERROR);
  assert_non_null(strstr(sqlite3_errmsg(db), "refused"));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

/* The same statements on two fresh connections with the same stream and
** clock give the same rows. */
static uint64_t run_once(void) {
  fixture f;
  char err[128], buf[4096] = "";
  memset(&f, 0, sizeof f);
  sim_rng_stream(&f.rng, 5, "sql.twice");
  sqlite3_open(":memory:", &f.db);
  rt_sql_sandbox_config c = {&f, f_now, NULL, &f.rng, EPOCH_2026, "cf_"};
  f.s = rt_sql_sandbox(f.db, &c, err, sizeof err);
  sqlite3_exec(f.db, "CREATE TABLE t(id INTEGER PRIMARY KEY, r, b, at DEFAULT CURRENT_TIMESTAMP)", NULL, NULL, NULL);
  for (int i = 0; i < 20; i++) {
    f.now_us += 1234567;
    sqlite3_exec(f.db, "INSERT INTO t(r, b) VALUES(random(), hex(randomblob(4)))", NULL, NULL, NULL);
  }
  sqlite3_stmt *st;
  sqlite3_prepare_v2(f.db, "SELECT group_concat(r || b || at || datetime('now'), ';') FROM t ORDER BY id", -1, &st, NULL);
  if (sqlite3_step(st) == SQLITE_ROW) snprintf(buf, sizeof buf, "%s", sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(f.db);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char *p = buf; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
  return h;
}

static void test_two_runs_same_rows(void **st) {
  (void)st;
  uint64_t a = run_once(), b = run_once();
  assert_int_equal(a, b);
  assert_int_not_equal(a, 0xcbf29ce484222325ULL); /* the query returned rows */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_random_from_the_stream, setup, teardown),
      cmocka_unit_test_setup_teardown(test_now_is_the_virtual_clock, setup, teardown),
      cmocka_unit_test(test_format_time),
      cmocka_unit_test_setup_teardown(test_authorizer_refusals, setup, teardown),
      cmocka_unit_test(test_prefix_is_a_parameter),
      cmocka_unit_test(test_two_runs_same_rows),
  };
  return cmocka_run_group_tests_name("sql_sandbox", tests, NULL, NULL) != 0;
}
