/*
** test_sql_sandbox_edges.c: the SQL sandbox's refusals that test_sql_sandbox.c
** does not reach (issue #16 item 7): a connection without a random stream
** refuses random() and randomblob(); a randomblob over the connection's
** length limit fails as too big; VACUUM behind a line comment is still
** refused at prepare, and rt_sql_sandbox_refusal names it; the virtual
** clock before 1970 and the date functions' rarer forms; the authorizer's
** other refusals under several read-only prefixes; failure injection at
** every call the sandbox makes for a date function.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <sqlite3.h>

#include "runtime/rt.h"
#include "runtime/rt_sql_sandbox.h"

/* Steps a user statement; returns the step code, the message in msg. */
static int step(sqlite3 *db, rt_sqlsbx *s, const char *sql, char *msg, size_t n) {
  sqlite3_stmt *st = NULL;
  char err[256];
  int rc = rt_sql_sandbox_prepare(s, sql, &st, NULL, err, sizeof err);
  assert_int_equal(rc, SQLITE_OK);
  rt_sql_sandbox_user(s, 1);
  rc = sqlite3_step(st);
  rt_sql_sandbox_user(s, 0);
  snprintf(msg, n, "%s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

static void test_no_stream_refuses_random(void **state) {
  sqlite3 *db;
  char err[256], msg[256];
  (void)state;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  rt_sql_sandbox_config c = {NULL, NULL, NULL, NULL, 0, NULL};
  rt_sqlsbx *s = rt_sql_sandbox(db, &c, err, sizeof err);
  assert_non_null(s);
  assert_int_equal(step(db, s, "SELECT random()", msg, sizeof msg), SQLITE_ERROR);
  assert_non_null(strstr(msg, "random() is refused"));
  assert_int_equal(step(db, s, "SELECT randomblob(16)", msg, sizeof msg), SQLITE_ERROR);
  assert_non_null(strstr(msg, "random() is refused"));
  assert_int_equal(step(db, s, "SELECT 1", msg, sizeof msg), SQLITE_ROW); /* the rest works */
  sqlite3_close(db);
}

static uint64_t ones(void *ctx) {
  (void)ctx;
  return ~0ULL;
}

static void test_randomblob_too_big(void **state) {
  sqlite3 *db;
  char err[256], msg[256];
  (void)state;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  rt_sql_sandbox_config c = {NULL, NULL, ones, NULL, 0, NULL};
  rt_sqlsbx *s = rt_sql_sandbox(db, &c, err, sizeof err);
  assert_non_null(s);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1000);
  assert_int_equal(step(db, s, "SELECT randomblob(5000)", msg, sizeof msg), SQLITE_TOOBIG);
  assert_int_equal(step(db, s, "SELECT hex(randomblob(2))", msg, sizeof msg), SQLITE_ROW);
  sqlite3_close(db);
}

static void test_vacuum_behind_comment(void **state) {
  sqlite3 *db;
  sqlite3_stmt *st = NULL;
  char err[256];
  (void)state;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  rt_sql_sandbox_config c = {NULL, NULL, ones, NULL, 0, NULL};
  rt_sqlsbx *s = rt_sql_sandbox(db, &c, err, sizeof err);
  assert_non_null(s);
  assert_string_equal(rt_sql_sandbox_refusal(s), "");
  int rc = rt_sql_sandbox_prepare(s, "-- tidy up\n  /* now */ VACUUM", &st, NULL, err, sizeof err);
  assert_int_equal(rc, SQLITE_AUTH);
  assert_null(st);
  assert_non_null(strstr(err, "VACUUM"));
  assert_non_null(strstr(rt_sql_sandbox_refusal(s), "VACUUM"));
  sqlite3_close(db);
}

/* The virtual clock before 1970 and the date functions' less common
** forms: more modifiers than the statement cache holds, 'utc' and
** 'localtime' refused in any case and spacing, non-text modifiers, and the
** CURRENT_* keywords with and without a clock. */
static int64_t before_1970(void *ctx) {
  (void)ctx;
  return -1500; /* 1.5 ms before the epoch */
}

static void test_dates_edges(void **state) {
  sqlite3 *db;
  char err[256], msg[256];
  (void)state;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  rt_sql_sandbox_config c = {NULL, before_1970, NULL, NULL, -86400000LL * 365, NULL};
  rt_sqlsbx *s = rt_sql_sandbox(db, &c, err, sizeof err);
  assert_non_null(s);
  static const struct {
    const char *sql, *want;
  } rows[] = {
      {"SELECT datetime('now')", "1968-12-31 23:59:59"},
      {"SELECT CURRENT_TIMESTAMP", "1968-12-31 23:59:59"},
      {"SELECT CURRENT_DATE", "1968-12-31"},
      {"SELECT CURRENT_TIME", "23:59:59"},
      {"SELECT date('now', '+1 day', '+1 day', '+1 day', '+1 day', '+1 day', '+1 day', "
       "'+1 day', '+1 day', '+1 day', '+1 day')", "1969-01-10"},
      {"SELECT date('2000-01-01', 5)", NULL},
      {"SELECT strftime('%Y', 'now')", "1968"},
      {"SELECT time('12:00', ' UTC ')", NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sqlite3_stmt *st = NULL;
    assert_int_equal(rt_sql_sandbox_prepare(s, rows[i].sql, &st, NULL, err, sizeof err), SQLITE_OK);
    rt_sql_sandbox_user(s, 1);
    int rc = sqlite3_step(st);
    rt_sql_sandbox_user(s, 0);
    if (rows[i].want) {
      assert_int_equal(rc, SQLITE_ROW);
      assert_string_equal((const char *)sqlite3_column_text(st, 0), rows[i].want);
    } else if (strstr(rows[i].sql, "UTC")) {
      assert_int_equal(rc, SQLITE_ERROR);
      assert_non_null(strstr(sqlite3_errmsg(db), "'utc' modifier is refused"));
    } else {
      assert_int_equal(rc, SQLITE_ROW); /* a number is no modifier: SQLite's own NULL */
      assert_int_equal(sqlite3_column_type(st, 0), SQLITE_NULL);
    }
    sqlite3_finalize(st);
  }
  assert_int_equal(step(db, s, "SELECT datetime('now', 'LocalTime')", msg, sizeof msg), SQLITE_ERROR);
  assert_non_null(strstr(msg, "'localtime' modifier is refused"));
  sqlite3_close(db);
  /* no clock: 'now' and CURRENT_* are refused, a fixed date still works */
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  rt_sql_sandbox_config none = {NULL, NULL, NULL, NULL, 0, NULL};
  s = rt_sql_sandbox(db, &none, err, sizeof err);
  assert_non_null(s);
  assert_int_equal(step(db, s, "SELECT CURRENT_DATE", msg, sizeof msg), SQLITE_ERROR);
  assert_non_null(strstr(msg, "no virtual clock"));
  assert_int_equal(step(db, s, "SELECT date()", msg, sizeof msg), SQLITE_ERROR);
  assert_int_equal(step(db, s, "SELECT date('2001-02-03')", msg, sizeof msg), SQLITE_ROW);
  sqlite3_close(db);
}

/* The authorizer's other refusals: ATTACH of a file, DETACH, a transaction,
** load_extension, the PRAGMAs that change durability (and reading them is
** fine), writes to an SDK table under each of several prefixes. */
static void test_authorizer_more(void **state) {
  sqlite3 *db;
  char err[256];
  (void)state;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE rv_x(a); CREATE TABLE cf_y(a); CREATE TABLE mine(a)",
                                NULL, NULL, NULL), SQLITE_OK);
  rt_sql_sandbox_config c = {NULL, NULL, NULL, NULL, 0, "cf_,rv_"};
  rt_sqlsbx *s = rt_sql_sandbox(db, &c, err, sizeof err);
  assert_non_null(s);
  static const struct {
    const char *sql, *why;
  } refused[] = {
      {"ATTACH 'other.db' AS o", "ATTACH of other.db"},
      {"DETACH main", "DETACH"},
      {"BEGIN", "transactions belong to the runtime"},
      {"SELECT load_extension('x')", "load_extension"},
      {"PRAGMA synchronous = OFF", "PRAGMA synchronous = ..."},
      {"PRAGMA wal_checkpoint", "PRAGMA wal_checkpoint"},
      {"INSERT INTO rv_x VALUES (1)", "rv_x"},
      {"DELETE FROM cf_y", "cf_y"},
      {"CREATE INDEX i ON cf_y(a)", "changing the schema of cf_y"},
      {"DROP TABLE rv_x", "creating or dropping rv_x"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    sqlite3_stmt *st = NULL;
    int rc = rt_sql_sandbox_prepare(s, refused[i].sql, &st, NULL, err, sizeof err);
    if (rc == SQLITE_OK) {
      rt_sql_sandbox_user(s, 1);
      rc = sqlite3_step(st);
      rt_sql_sandbox_user(s, 0);
      snprintf(err, sizeof err, "%s", rt_sql_sandbox_refusal(s));
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE || !strstr(err, refused[i].why))
      fail_msg("%s: rc %d, \"%s\" does not name \"%s\"", refused[i].sql, rc, err, refused[i].why);
  }
  char msg[256];
  assert_int_equal(step(db, s, "PRAGMA synchronous", msg, sizeof msg), SQLITE_ROW);
  assert_int_equal(step(db, s, "INSERT INTO mine VALUES (1)", msg, sizeof msg), SQLITE_DONE);
  sqlite3_close(db);
}

static int64_t at_zero(void *ctx) {
  (void)ctx;
  return 0;
}

/* One fresh connection and sandbox running `sql` once: 1 if it gave a row,
** 0 if it failed with a message (in msg), -1 if the sandbox was refused. */
static int date_once(const char *sql, char *msg, size_t n) {
  sqlite3 *db;
  char err[256];
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  rt_sql_sandbox_config c = {NULL, at_zero, NULL, NULL, 0, NULL};
  rt_sqlsbx *s = rt_sql_sandbox(db, &c, err, sizeof err);
  int r = -1;
  if (s) {
    sqlite3_stmt *st = NULL;
    int rc = rt_sql_sandbox_prepare(s, sql, &st, NULL, msg, n);
    if (rc == SQLITE_OK) {
      rt_sql_sandbox_user(s, 1);
      rc = sqlite3_step(st);
      rt_sql_sandbox_user(s, 0);
      snprintf(msg, n, "%s", sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    r = rc == SQLITE_ROW;
    if (!r) assert_true(msg[0] != '\0');
  } else {
    snprintf(msg, n, "%s", err);
  }
  sqlite3_close(db);
  return r;
}

/* Failure injection (runtime/rt_inject.h) at every allocation and SQLite
** call the sandbox makes for a date function: the helper connection, its
** statement, the sandbox itself. Each failure gives an error with a message
** (or a refused sandbox), never a crash or a leak (asan). */
static void test_date_helper_failures(void **state) {
  char msg[256];
  (void)state;
  rt_inject_count();
  assert_int_equal(date_once("SELECT date('now', '+1 day')", msg, sizeof msg), 1);
  rt_inject_off();
  const rt_inject_site *v;
  int n = rt_inject_sites(&v), helper = 0, refused = 0;
  rt_inject_site sites[64];
  assert_true(n > 0 && n <= 64);
  memcpy(sites, v, (size_t)n * sizeof *sites);
  for (int i = 0; i < n; i++) {
    rt_inject_target(sites[i].file, sites[i].line, 1);
    int r = date_once("SELECT date('now', '+1 day')", msg, sizeof msg);
    assert_true(rt_inject_fired());
    rt_inject_off();
    helper += r == 0 && strstr(msg, "date function helper could not be prepared") != NULL;
    refused += r == -1;
  }
  assert_true(helper >= 2); /* the helper's open and its prepare */
  assert_true(refused >= 1); /* the sandbox's own allocation */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dates_edges),
      cmocka_unit_test(test_date_helper_failures),
      cmocka_unit_test(test_authorizer_more),
      cmocka_unit_test(test_no_stream_refuses_random),
      cmocka_unit_test(test_randomblob_too_big),
      cmocka_unit_test(test_vacuum_behind_comment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
