/*
** test_query.c: rt_query_rows (runtime/rt_query.c), the end-of-run row
** counts facts read: an SDK table with integer, text and IS NULL
** conditions; what it refuses before any SQL runs (an actor out of range,
** a column the table does not have, a script table or column name that is
** not an identifier, a query too long for its buffer); a script table that
** does not exist.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"

#define S(x) ((int64_t)(x) * 1000000)

static sim SIM;
static rt_world *W;
static uint32_t A;

/* A world with one actor "a" that holds one schedule row ("tick" in 5 s). */
static void setup_world(void) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config cfg;
  assert_int_equal(sim_init(&SIM, &sc), 0);
  rt_config_default(&cfg);
  W = rt_world_new(&SIM, &cfg);
  assert_non_null(W);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "a");
  snprintf(sp.cls, sizeof sp.cls, "Agent");
  A = rt_actor_add(W, &sp);
}

static void free_world(void) {
  rt_world_free(W);
  sim_free(&SIM);
}

static void test_sdk_table_conditions(void **st) {
  (void)st;
  setup_world();
  rt_schedule_seed sd;
  memset(&sd, 0, sizeof sd);
  snprintf(sd.callback, sizeof sd.callback, "tick");
  sd.time_us = S(5);
  sd.started_us = -1;
  assert_true(rt_seed_schedule(W, A, &sd) > 0);
  rt_qcol by_cb = {"callback", 1, 0, "tick"};
  rt_qcol by_other = {"callback", 1, 0, "tock"};
  rt_qcol cron_null = {"cron", 2, 0, NULL};
  rt_qcol running0 = {"running", 0, 0, NULL};
  rt_qcol three[] = {by_cb, cron_null, running0};
  assert_int_equal(rt_query_rows(W, A, "cf_agents_schedules", NULL, 0), 1);
  assert_int_equal(rt_query_rows(W, A, "cf_agents_schedules", &by_cb, 1), 1);
  assert_int_equal(rt_query_rows(W, A, "cf_agents_schedules", &by_other, 1), 0);
  assert_int_equal(rt_query_rows(W, A, "cf_agents_schedules", three, 3), 1);
  free_world();
}

static void test_refusals(void **st) {
  (void)st;
  setup_world();
  rt_qcol bad_col = {"no_such_column", 0, 1, NULL};
  rt_qcol not_ident = {"a b", 0, 1, NULL};
  rt_qcol digit_first = {"1a", 0, 1, NULL};
  char long_name[80];
  memset(long_name, 'x', 64);
  long_name[64] = '\0';
  rt_qcol too_long = {long_name, 0, 1, NULL};
  /* out of range actor */
  assert_int_equal(rt_query_rows(W, 7, "cf_agents_schedules", NULL, 0), -1);
  /* an SDK table column it does not have */
  assert_int_equal(rt_query_rows(W, A, "cf_agents_schedules", &bad_col, 1), -1);
  /* script tables: the name and each column must be identifiers */
  assert_int_equal(rt_query_rows(W, A, "", NULL, 0), -1);
  assert_int_equal(rt_query_rows(W, A, "bad-name", NULL, 0), -1);
  assert_int_equal(rt_query_rows(W, A, "9lives", NULL, 0), -1);
  assert_int_equal(rt_query_rows(W, A, long_name, NULL, 0), -1);
  assert_int_equal(rt_query_rows(W, A, "mine", &not_ident, 1), -1);
  assert_int_equal(rt_query_rows(W, A, "mine", &digit_first, 1), -1);
  assert_int_equal(rt_query_rows(W, A, "mine", &too_long, 1), -1);
  /* an identifier that names no table: SQLite refuses it */
  assert_int_equal(rt_query_rows(W, A, "mine_2", NULL, 0), -1);
  /* a query longer than its buffer: refused, not cut */
  char name63[64];
  memset(name63, 'c', 63);
  name63[63] = '\0';
  rt_qcol many[20];
  for (int i = 0; i < 20; i++) many[i] = (rt_qcol){name63, 0, i, NULL};
  assert_int_equal(rt_query_rows(W, A, "mine", many, 20), -1);
  rt_qcol sdk_many[40];
  for (int i = 0; i < 40; i++) sdk_many[i] = (rt_qcol){"execution_started_at", 2, 0, NULL};
  assert_int_equal(rt_query_rows(W, A, "cf_agents_schedules", sdk_many, 40), -1);
  free_world();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sdk_table_conditions),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
