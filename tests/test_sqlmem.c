/*
** test_sqlmem.c: SQLite's allocator (runtime/rt_sqlmem.c, issue #18): size
** classes of 16 bytes with free lists in front of malloc. These tests fail
** if SQLite runs on another allocator than the one installed, if a block's
** size or content is wrong after a reallocation, if a freed block is not
** reused, if the lists keep more than their limit, or if a database on it
** does not give the same results.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_host.h"

/* A block's size is its request rounded up to the class (16 k - 8 usable
** bytes); reallocation keeps the bytes and reuses the block within its class. */
static void test_sizes_and_realloc(void **st) {
  (void)st;
  int on = rt__sqlmem_on(); /* off under ASan: SQLite's own sizes */
  unsigned char *p = sqlite3_malloc(100);
  assert_non_null(p);
  if (on) assert_int_equal(sqlite3_msize(p), 104);
  assert_true(sqlite3_msize(p) >= 100);
  for (int i = 0; i < 100; i++) p[i] = (unsigned char)i;
  if (on) assert_ptr_equal(sqlite3_realloc(p, 104), p); /* same class */
  unsigned char *q = sqlite3_realloc(p, 3000);  /* beyond the classes */
  assert_non_null(q);
  assert_true(sqlite3_msize(q) >= 3000);
  for (int i = 0; i < 100; i++) assert_int_equal(q[i], i);
  unsigned char *r = sqlite3_realloc(q, 40);
  assert_non_null(r);
  if (on) assert_int_equal(sqlite3_msize(r), 40);
  assert_true(sqlite3_msize(r) >= 40);
  for (int i = 0; i < 40; i++) assert_int_equal(r[i], i);
  sqlite3_free(r);
  assert_int_equal(sqlite3_msize(NULL), 0);
}

/* A freed block of a class is the next one of that class; the lists hold
** at most 512 KB, the rest goes back to malloc. */
static void test_reuse_and_limit(void **st) {
  (void)st;
  enum { N = 2000 };
  static void *blocks[N];
  if (!rt__sqlmem_on()) { /* ASan: nothing is ever kept */
    sqlite3_free(sqlite3_malloc(200));
    assert_int_equal(rt__sqlmem_cached(), 0);
    return;
  }
  rt__sqlmem_trim();
  void *a = sqlite3_malloc(200);
  sqlite3_free(a);
  assert_int_equal(rt__sqlmem_cached(), 208);
  assert_ptr_equal(sqlite3_malloc(196), a);
  assert_int_equal(rt__sqlmem_cached(), 0);
  sqlite3_free(a);
  for (int i = 0; i < N; i++) assert_non_null(blocks[i] = sqlite3_malloc(1000));
  for (int i = 0; i < N; i++) sqlite3_free(blocks[i]);
  assert_true(rt__sqlmem_cached() <= 512 * 1024);
  assert_true(rt__sqlmem_cached() > 500 * 1024);
  rt__sqlmem_trim();
  assert_int_equal(rt__sqlmem_cached(), 0);
}

/* A database on the allocator: rows written, grown, read back, and deleted. */
static void test_database_on_it(void **st) {
  (void)st;
  sqlite3 *db;
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);"
                                    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c"
                                    " WHERE i<2000) INSERT INTO t SELECT i, printf('%0*d', i % 700, i)"
                                    " FROM c; DELETE FROM t WHERE k % 3 = 0;",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*), sum(length(v)) FROM t", -1, &q, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(q, 0), 1334);
  int64_t want = 0;
  for (int i = 1; i <= 2000; i++) {
    if (i % 3 == 0) continue;
    int w = i % 700, digits = i < 10 ? 1 : i < 100 ? 2 : i < 1000 ? 3 : 4;
    want += w > digits ? w : digits;
  }
  assert_int_equal(sqlite3_column_int64(q, 1), want);
  sqlite3_finalize(q);
  sqlite3_close(db);
}

int main(void) {
  rt__sqlite_single_thread(); /* before SQLite starts: installs the allocator */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes_and_realloc),
      cmocka_unit_test(test_reuse_and_limit),
      cmocka_unit_test(test_database_on_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
