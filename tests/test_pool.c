/*
** test_pool.c: a pooled in-memory connection (runtime/rt_storage.c) runs
** exactly as a new one. A world that ends hands its connections back,
** wiped; since issue #18 the wipe empties only the tables an update hook
** saw written (plus sqlite_sequence with any, and WITHOUT ROWID tables), in
** one transaction, and ends with a no-op DELETE so that sqlite3_changes()
** reads 0 as on a new connection. These tests fail if a written table is
** left with rows, if the change count leaks into the next world, or if a
** world run on a pooled connection traces differently from the same world
** run on a fresh one.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_agent.h"
#include "runtime/rt_host.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

static rt_step steps[6];
static rt_program job = {"job", steps, 6};

static void job_init(void) {
  for (int i = 0; i < 3; i++) {
    steps[2 * i] = (rt_step){RT_STEP_WORK, MS(500), MS(500), 0, "", 0, 0};
    steps[2 * i + 1] = (rt_step){RT_STEP_STASH, 0, 0, 0, "", 0, 0};
  }
}

static rt_world *one_actor_world(sim *s, uint64_t seed) {
  sim_config sc = {seed, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(s, &sc), 0);
  rt_config_default(&c);
  rt_world *w = rt_world_new(s, &c);
  assert_non_null(w);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "agent");
  assert_int_equal(rt_actor_add(w, &sp), 0);
  return w;
}

/* A world that leaves rows behind: a fiber cut mid-way (its run row and
** snapshot), a schedule row and the alarm row. Returns its connection. */
static sqlite3 *dirty_world(void) {
  sim s;
  rt_world *w = one_actor_world(&s, 3);
  assert_int_equal(rt_fiber_at(w, 0, &job, 0), 0);
  assert_int_equal(rt_schedule_at(w, 0, "tick", S(100), 0, S(1)), 0);
  sim_run(&s, MS(1200), 0);
  assert_true(rt_count_fiber_rows(w, 0) > 0);
  sqlite3 *db = w->actors[0].store.db;
  assert_non_null(db);
  rt_world_free(w);
  sim_free(&s);
  return db;
}

/* Rows in every table of actor 0's database (sqlite_master's tables). */
static int64_t all_rows(rt_world *w) {
  sqlite3_stmt *names = rt__prepare(w, 0, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name");
  int64_t total = 0;
  int tables = 0;
  assert_non_null(names);
  while (sqlite3_step(names) == SQLITE_ROW) {
    char q[128];
    snprintf(q, sizeof q, "SELECT count(*) FROM \"%s\"", (const char *)sqlite3_column_text(names, 0));
    sqlite3_stmt *st = rt__prepare(w, 0, q);
    assert_non_null(st);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    total += sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    tables++;
  }
  sqlite3_finalize(names);
  assert_true(tables > 3);
  return total;
}

static void test_pooled_connection_is_empty(void **st) {
  (void)st;
  job_init();
  sqlite3 *old = dirty_world();
  sim s;
  rt_world *w = one_actor_world(&s, 4);
  assert_int_equal(rt__db_open(w, 0), 0);
  assert_ptr_equal(w->actors[0].store.db, old); /* the pooled connection came back */
  assert_int_equal(sqlite3_changes(w->actors[0].store.db), 0);
  assert_int_equal(all_rows(w), 0);
  rt_world_free(w);
  sim_free(&s);
}

/* The loop of bench_runtime.c's kill_recover_cycles_per_s: a crash
** mid-fiber, recovery on a request. */
static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  (void)arg;
  rt_kill_all(ctx, RT_DEATH_CRASH);
}

static uint64_t cycle(uint64_t seed, int64_t crash_us, sqlite3 **db) {
  sim s;
  rt_world *w = one_actor_world(&s, seed);
  assert_int_equal(rt_fiber_at(w, 0, &job, 0), 0);
  sim_at(&s, crash_us, 0, crash_cb, w, 0);
  assert_int_equal(rt_request_at(w, 0, RT_ENTRY_FETCH, S(2)), 0);
  sim_run(&s, S(10), 0);
  assert_int_equal(rt_count_fiber_rows(w, 0), 0);
  *db = w->actors[0].store.db;
  uint64_t h = s.trace.hash;
  rt_world_free(w);
  sim_free(&s);
  return h;
}

static void test_pooled_run_traces_as_fresh(void **st) {
  (void)st;
  job_init();
  sqlite3 *a, *b, *c;
  uint64_t first = cycle(11, MS(510), &a); /* the pooled connection */
  (void)dirty_world();                     /* leaves rows in several tables ... */
  uint64_t again = cycle(11, MS(510), &b); /* ... wiped before this run takes it */
  uint64_t other = cycle(11, MS(1010), &c);
  assert_ptr_equal(a, b);
  assert_true(first == again);
  assert_true(first != other); /* a later crash leaves another trace: the hash can differ */
}

/* Rows of one table of actor 0's database. */
static int64_t rows_of(rt_world *w, const char *table) {
  char q[128];
  snprintf(q, sizeof q, "SELECT count(*) FROM \"%s\"", table);
  sqlite3_stmt *st = rt__prepare(w, 0, q);
  assert_non_null(st);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* Issue #18: a table is known empty (its scans skip SQLite) only while no
** row of it was written since the connection was the template or wiped;
** a written table is not, even after its rows are gone, until the next
** wipe; scan caching off turns it off; a table the template does not have
** is never known empty. Every table known empty holds no row. */
static void test_known_empty_tables(void **st) {
  (void)st;
  static const char *const tables[] = {"cf_agents_runs", "cf_agents_schedules", "cf_agents_fibers",
                                       "cf_agent_tool_runs", "rv_alarm"};
  job_init();
  (void)dirty_world(); /* the next world takes its connection, wiped */
  sim s;
  rt_world *w = one_actor_world(&s, 5);
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
    assert_int_equal(rt__table_empty(w, 0, tables[i]), 1);
  assert_int_equal(rt__table_empty(w, 0, "no_such_table"), 0);
  rt_scan_cache_set(0);
  assert_int_equal(rt__table_empty(w, 0, "cf_agents_schedules"), 0);
  rt_scan_cache_set(1);
  assert_int_equal(rt_fiber_at(w, 0, &job, 0), 0);
  sim_run(&s, MS(600), 0); /* the run row and one stash, committed */
  assert_int_equal(rt__table_empty(w, 0, "cf_agents_runs"), 0);
  assert_int_equal(rt__table_empty(w, 0, "rv_alarm"), 0);
  assert_int_equal(rt__table_empty(w, 0, "cf_agents_schedules"), 1);
  sim_run(&s, S(5), 0); /* the fiber ends: its row is deleted, the mark stays */
  assert_int_equal(rows_of(w, "cf_agents_runs"), 0);
  assert_int_equal(rt__table_empty(w, 0, "cf_agents_runs"), 0);
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
    if (rt__table_empty(w, 0, tables[i])) assert_int_equal(rows_of(w, tables[i]), 0);
  rt_world_free(w);
  sim_free(&s);
  w = one_actor_world(&s, 6); /* the same connection again, wiped */
  assert_int_equal(rt__table_empty(w, 0, "cf_agents_runs"), 1);
  rt_world_free(w);
  sim_free(&s);
}

/* The kill/recover cycle runs the same with the shortcuts (known-empty
** tables, the kept snapshot read) as with every scan read from SQLite. */
static void test_cycle_same_without_shortcuts(void **st) {
  (void)st;
  job_init();
  sqlite3 *db;
  for (int64_t crash = MS(510); crash <= MS(2510); crash += MS(1000)) {
    rt_scan_cache_set(0);
    uint64_t slow = cycle(21, crash, &db);
    rt_scan_cache_set(1);
    uint64_t fast = cycle(21, crash, &db);
    assert_true(slow == fast);
  }
}

/* rt__snapshot_text writes what snprintf did; rt__snapshot_pc reads what
** sscanf did, for its fast canonical form and for every other text. */
static int pc_by_sscanf(const char *snap) {
  int pc, len = 0;
  if (sscanf(snap, "{\"pc\":%d}%n", &pc, &len) != 1 || len == 0 || snap[len] != '\0') return -1;
  return pc;
}

static void test_snapshot_text(void **st) {
  (void)st;
  static const int pcs[] = {0, 1, 9, 10, 4, 123456789, 999999999, 1000000000, -1, -42, 2147483647,
                            -2147483647 - 1};
  static const char *const texts[] = {
      "{\"pc\":5}", "{\"pc\":007}", "{\"pc\":-3}", "{\"pc\": 5}", "{\"pc\":+5}", "{\"pc\":5} ",
      "{\"pc\":}", "{\"pc\":-}", "{\"pc\":1234567890}", "{\"pc\":12345678901}", "{\"pc\":5",
      "{\"pc\"", "", "null", "{\"step\":5}", "{\"pc\":5}x", "{\"pc\":999999999}"};
  for (size_t i = 0; i < sizeof pcs / sizeof pcs[0]; i++) {
    char got[48], want[48];
    rt__snapshot_text(got, sizeof got, pcs[i]);
    snprintf(want, sizeof want, "{\"pc\":%d}", pcs[i]);
    assert_string_equal(got, want);
    assert_int_equal(rt__snapshot_pc((const unsigned char *)got), pcs[i]);
  }
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    assert_int_equal(rt__snapshot_pc((const unsigned char *)texts[i]), pc_by_sscanf(texts[i]));
  assert_int_equal(rt__snapshot_pc(NULL), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pooled_connection_is_empty),
      cmocka_unit_test(test_pooled_run_traces_as_fresh),
      cmocka_unit_test(test_known_empty_tables),
      cmocka_unit_test(test_cycle_same_without_shortcuts),
      cmocka_unit_test(test_snapshot_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
