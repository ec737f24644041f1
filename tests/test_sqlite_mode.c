/*
** test_sqlite_mode.c: whatever a process does first with SQLite, its
** connections run in single-thread mode (no mutexes, no memory statistics:
** DESIGN.md rule 1, one thread per run). A sigkill run builds the storage
** template before any world exists; before the fix that template was the
** process's first SQLite call, so SQLite started serialized and every later
** statement of the process (every generation, every later run of a
** `revenant run` or bench) took its mutexes: 25 % of a kill/recover cycle.
** Each test forks, so that the child's first SQLite call is the one named.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "runtime/rt_host.h"

/* Child's exit status: 0 when a new connection has no mutex (single-thread
** mode), 3 when it has one, 2 when SQLite could not be set up. */
static int connection_mode(void) {
  sqlite3 *db = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 2;
  int rc = sqlite3_db_mutex(db) == NULL ? 0 : 3;
  sqlite3_close(db);
  return rc;
}

static int in_child(int (*first)(void)) {
  pid_t pid = fork();
  if (pid == 0) _exit(first() ? 2 : connection_mode());
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

static int prepare_first(void) { return rt_storage_prepare(); }

static int world_first(void) {
  sim s;
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  sim_init(&s, &sc);
  rt_config_default(&c);
  rt_world *w = rt_world_new(&s, &c);
  if (!w) return -1;
  rt_world_free(w);
  sim_free(&s);
  return 0;
}

static int nothing_first(void) { return 0; }

/* The sigkill path: the template before any world. */
static void test_template_first_is_single_thread(void **state) {
  (void)state;
  assert_int_equal(in_child(prepare_first), 0);
}

static void test_world_first_is_single_thread(void **state) {
  (void)state;
  assert_int_equal(in_child(world_first), 0);
}

/* The probe itself can tell: a process that never asked is serialized. */
static void test_probe_sees_serialized_default(void **state) {
  (void)state;
  assert_int_equal(in_child(nothing_first), 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_template_first_is_single_thread),
      cmocka_unit_test(test_world_first_is_single_thread),
      cmocka_unit_test(test_probe_sees_serialized_default),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
