/*
** test_sigkill.c: the sigkill fault kills a real worker process with
** SIGKILL; a fresh process continues from the SQLite files on disk.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <unistd.h>

#include "scenarios/scn.h"

static scn_scenario sc;

static void load(const char *text) {
  char err[512];
  int rc = scn_load_text("sigkill-test.json", text, strlen(text), &sc, err, sizeof err);
  if (rc) fprintf(stderr, "%s\n", err);
  assert_int_equal(rc, 0);
}

static const char *const scenario =
    "{\"name\":\"sk\",\"seed\":9,\"duration\":\"3m\","
    "\"programs\":{\"job\":[{\"repeat\":10,\"steps\":[{\"work\":\"500ms\"},{\"stash\":true}]}]},"
    "\"actors\":[{\"id\":\"agent\"}],"
    "\"workload\":[{\"fiber\":\"job\",\"actor\":\"agent\",\"at\":\"1s\"},"
    "{\"request\":\"agent\",\"at\":\"5s\"}],"
    "\"faults\":[{\"kind\":\"sigkill\",\"at\":\"%s\"}],"
    "\"expect\":{\"hold\":[\"stash_durable\",\"recovery_finishes\",\"no_double_recovery\"]}}";

static const sim_rec *nth(const scn_result *r, uint32_t kind, int n) {
  for (size_t i = 0; i < r->s->trace.n; i++)
    if (r->s->trace.recs[i].kind == kind && n-- == 0) return &r->s->trace.recs[i];
  return NULL;
}

static void run_at(const char *kill_at, scn_result *res) {
  char text[1024];
  snprintf(text, sizeof text, scenario, kill_at);
  load(text);
  assert_int_equal(scn_run_case(&sc, 0, 9, SIM_FIFO, res), 0);
  scn_free(&sc);
}

/* Killed inside step 4's commit window: the disk never saw step 4. */
static void test_kill_in_commit_window(void **st) {
  scn_result r;
  (void)st;
  run_at("3.001s", &r);
  assert_true(r.passed);
  const sim_rec *death = nth(&r, RT_EV_ACTOR_DEATH, 0);
  assert_non_null(death);
  assert_int_equal(death->a, RT_DEATH_SIGKILL);
  assert_int_equal(death->t_us, 3001000);
  const sim_rec *rec = nth(&r, RT_EV_FIBER_RECOVERED, 0);
  assert_non_null(rec);
  assert_int_equal(rec->b, 6); /* after step 3's stash */
  assert_non_null(nth(&r, RT_EV_FIBER_DONE, 0));
  scn_result_free(&r);
}

/* Killed after the commit: step 4 survived on disk. */
static void test_kill_after_commit(void **st) {
  scn_result r;
  (void)st;
  run_at("3.1s", &r);
  assert_true(r.passed);
  const sim_rec *rec = nth(&r, RT_EV_FIBER_RECOVERED, 0);
  assert_non_null(rec);
  assert_int_equal(rec->b, 8);
  scn_result_free(&r);
}

/* Same seed, same trace hash, across real kills, run after run. */
static void test_same_hash(void **st) {
  scn_result a, b;
  (void)st;
  run_at("3.001s", &a);
  run_at("3.001s", &b);
  assert_true(a.trace_hash == b.trace_hash);
  assert_true(a.events == b.events && a.events > 20);
  scn_result_free(&a);
  scn_result_free(&b);
  run_at("3.1s", &b);
  run_at("3.001s", &a);
  assert_true(a.trace_hash != b.trace_hash);
  scn_result_free(&a);
  scn_result_free(&b);
}

/* Counts the rows of q's first column on the database file at path. */
static int count_rows(const char *path, const char *q) {
  sqlite3 *db;
  sqlite3_stmt *st;
  int n = 0;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW) n++;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

/* A new database file is written from the schema template (issue #18): it
** is a WAL database (header bytes 18 and 19), holds every table of an
** in-memory database's schema, and takes writes through the WAL. */
static void test_new_file_from_template(void **st) {
  (void)st;
  char dir[] = "/tmp/revenant-sktest-XXXXXX", path[256], wal[300];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/actor-0.db", dir);
  snprintf(wal, sizeof wal, "%s-wal", path);
  assert_int_equal(rt_storage_prepare(), 0);
  sim s;
  sim_config scfg = {1, SIM_FIFO, 3, 1000};
  assert_int_equal(sim_init(&s, &scfg), 0);
  s.trace.keep = 0;
  rt_config cfg;
  rt_config_default(&cfg);
  cfg.storage_files = 1;
  snprintf(cfg.storage_dir, sizeof cfg.storage_dir, "%s", dir);
  rt_world *w = rt_world_new(&s, &cfg);
  assert_non_null(w);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "agent");
  assert_int_equal(rt_actor_add(w, &sp), 0);
  assert_int_equal(rt_count_fiber_rows(w, 0), 0); /* opens the file */
  assert_int_equal(access(wal, F_OK), 0);         /* in WAL mode from the start */
  unsigned char head[20];
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
  fclose(f);
  assert_int_equal(head[18], 2);
  assert_int_equal(head[19], 2);
  rt_world_free(w);
  sim_free(&s);
  /* the schema's tables, and still a WAL database when opened again */
  assert_true(count_rows(path, "SELECT name FROM sqlite_master WHERE type='table'") >= 10);
  assert_int_equal(count_rows(path, "SELECT 1 FROM sqlite_master WHERE name='cf_agents_runs'"),
                   1);
  assert_int_equal(count_rows(path, "SELECT 1 FROM pragma_journal_mode WHERE journal_mode='wal'"),
                   1);
  unlink(wal);
  char shm[300];
  snprintf(shm, sizeof shm, "%s-shm", path);
  unlink(shm);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kill_in_commit_window),
      cmocka_unit_test(test_kill_after_commit),
      cmocka_unit_test(test_same_hash),
      cmocka_unit_test(test_new_file_from_template),
  };
  return cmocka_run_group_tests_name("sigkill", tests, NULL, NULL) != 0;
}
