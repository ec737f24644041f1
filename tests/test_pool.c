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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pooled_connection_is_empty),
      cmocka_unit_test(test_pooled_run_traces_as_fresh),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
