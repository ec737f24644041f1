/*
** test_sql_sandbox_edges.c: the SQL sandbox's refusals that test_sql_sandbox.c
** does not reach (issue #16 item 7): a connection without a random stream
** refuses random() and randomblob(); a randomblob over the connection's
** length limit fails as too big; VACUUM behind a line comment is still
** refused at prepare, and rt_sql_sandbox_refusal names it.
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_stream_refuses_random),
      cmocka_unit_test(test_randomblob_too_big),
      cmocka_unit_test(test_vacuum_behind_comment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
