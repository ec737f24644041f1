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
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenarios/scn.h"
#include "scenarios/scn_internal.h" /* scn__sigkill_reap */

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
  char shm[300];
  snprintf(shm, sizeof shm, "%s-shm", path);
  assert_int_equal(access(shm, F_OK), -1); /* its index in the heap: no -shm file */
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
  unlink(shm);
  unlink(path);
  rmdir(dir);
}

/* Several kills, two at one instant, one with down_for, and rated ones:
** generations 2, 3, ... are pre-forked while the one before runs. */
static const char *const multi =
    "{\"name\":\"multi\",\"duration\":\"2m\","
    "\"programs\":{\"job\":[{\"repeat\":20,\"steps\":[{\"work\":\"700ms\"},{\"stash\":true}]}]},"
    "\"actors\":[{\"id\":\"agent\"},{\"id\":\"other\"}],"
    "\"workload\":[{\"fiber\":\"job\",\"actor\":\"agent\",\"at\":\"1s\"},"
    "{\"fiber\":\"job\",\"actor\":\"other\",\"at\":\"2s\"},"
    "{\"request\":\"agent\",\"at\":\"5s\"},{\"request\":\"other\",\"at\":\"9s\"}],"
    "\"faults\":[{\"kind\":\"sigkill\",\"at\":\"3.001s\"},{\"kind\":\"sigkill\",\"at\":\"3.001s\"},"
    "{\"kind\":\"sigkill\",\"at\":\"7.2s\",\"down_for\":\"2s\"},"
    "{\"kind\":\"sigkill\",\"rate\":\"200/h\"}],"
    "\"expect\":{\"hold\":[\"stash_durable\",\"recovery_finishes\"]}}";

static int children_of(pid_t ppid, pid_t *out, int cap, int zombies);

/* The multi-kill run's hash in a fresh process (its addresses differ). */
static uint64_t hash_in_child(uint64_t seed) {
  int fd[2];
  uint64_t h = 0;
  assert_int_equal(pipe(fd), 0);
  pid_t p = fork();
  assert_true(p >= 0);
  if (p == 0) {
    scn_result r;
    load(multi);
    if (scn_run_case(&sc, 0, seed, SIM_FIFO, &r) || !r.passed) _exit(1);
    if (write(fd[1], &r.trace_hash, sizeof r.trace_hash) != (ssize_t)sizeof r.trace_hash) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  assert_int_equal(read(fd[0], &h, sizeof h), (ssize_t)sizeof h);
  close(fd[0]);
  int status;
  assert_int_equal(waitpid(p, &status, 0), p);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return h;
}

/* Many generations, each forked while the one before it runs: every kill
** is in the trace, the hash is the same here and in two other processes,
** and no worker process outlives the result. */
static void test_many_generations(void **st) {
  (void)st;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    scn_result r;
    load(multi);
    assert_int_equal(scn_run_case(&sc, 0, seed, SIM_FIFO, &r), 0);
    scn_free(&sc);
    assert_true(r.passed);
    int kills = 0;
    for (size_t i = 0; i < r.s->trace.n; i++) {
      const sim_rec *e = &r.s->trace.recs[i];
      if (e->kind == RT_EV_ACTOR_DEATH && e->a == RT_DEATH_SIGKILL && e->actor == 0) kills++;
    }
    assert_true(kills >= 3); /* 3.001 s (once), 7.2 s, and rated ones */
    assert_true(hash_in_child(seed) == r.trace_hash);
    assert_true(hash_in_child(seed) == r.trace_hash);
    scn_result_free(&r);
    /* the last generation, not waited for when it said done, is the only
    ** child left (the next run reaps it) */
    pid_t kids[4];
    assert_true(children_of(getpid(), kids, 4, 1) <= 1);
  }
  scn__sigkill_reap();
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no child, not even a zombie */
  assert_int_equal(errno, ECHILD);
}

/* Processes whose parent is ppid, from /proc: living ones, and zombies
** too when zombies is set. */
static int children_of(pid_t ppid, pid_t *out, int cap, int zombies) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int n = 0;
  if (!d) return 0;
  while ((e = readdir(d)) && n < cap) {
    char path[300], buf[512], state;
    int pid = atoi(e->d_name), pp;
    if (pid <= 0) continue;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    const char *rp = strrchr(buf, ')'); /* after the command name */
    if (rp && sscanf(rp + 1, " %c %d", &state, &pp) == 2 && pp == ppid && (zombies || state != 'Z'))
      out[n++] = pid;
  }
  closedir(d);
  return n;
}

/* 1 if pid is a living process (not a zombie, not gone). */
static int alive(pid_t pid) {
  char path[64], buf[512], state;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t k = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[k] = 0;
  const char *rp = strrchr(buf, ')');
  return rp && sscanf(rp + 1, " %c", &state) == 1 && state != 'Z';
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(path);
}

/* A long first window: generation 0 runs for seconds while generation 1
** waits at its gate. */
static const char *const long_first =
    "{\"name\":\"long\",\"duration\":\"3d\","
    "\"programs\":{\"job\":[{\"repeat\":5,\"steps\":[{\"work\":\"300ms\"},{\"stash\":true}]}]},"
    "\"actors\":[{\"id\":\"a1\"},{\"id\":\"a2\"}],"
    "\"workload\":[{\"fiber\":\"job\",\"actor\":\"a1\",\"at\":\"0s\",\"every\":\"10s\"},"
    "{\"fiber\":\"job\",\"actor\":\"a2\",\"at\":\"1s\",\"every\":\"10s\"}],"
    "\"faults\":[{\"kind\":\"sigkill\",\"at\":\"71h\"}],"
    "\"expect\":{\"hold\":[\"stash_durable\"]}}";

/* The parent of a run dies (SIGKILL) while generation 0 runs and the
** pre-forked generation 1 waits at its gate: both end with it (the gate's
** end of file and PR_SET_PDEATHSIG), none survives as an orphan. */
static void test_pre_forked_dies_with_parent(void **st) {
  (void)st;
#ifdef __linux__
  char tmp[] = "/tmp/revenant-sktest-XXXXXX";
  assert_non_null(mkdtemp(tmp));
  pid_t p = fork();
  assert_true(p >= 0);
  if (p == 0) {
    scn_result r;
    setenv("TMPDIR", tmp, 1);
    load(long_first);
    scn_run_case(&sc, 0, 1, SIM_FIFO, &r);
    _exit(0); /* not reached in time: killed below */
  }
  pid_t kids[4];
  int n = 0;
  for (int i = 0; i < 5000 && n < 2; i++) {
    n = children_of(p, kids, 4, 0);
    if (n < 2) usleep(1000);
  }
  kill(p, SIGKILL);
  waitpid(p, NULL, 0);
  assert_int_equal(n, 2); /* generation 0 running, generation 1 at its gate */
  int left = 2;
  for (int i = 0; i < 2000 && left; i++) {
    left = alive(kids[0]) + alive(kids[1]);
    if (left) usleep(1000);
  }
  if (left) {
    kill(kids[0], SIGKILL);
    kill(kids[1], SIGKILL);
  }
  nftw(tmp, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  assert_int_equal(left, 0);
#endif
}

/* 1 if pid exists at all, a zombie included. */
static int exists(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d", (int)pid);
  return access(path, F_OK) == 0;
}

/* A process that ends right after a sigkill run (exit: its atexit
** handler) reaps the last generation it did not wait for: none is left
** behind as a zombie (this container's init reaps none). */
static void test_exit_reaps_last_generation(void **st) {
  (void)st;
  int fd[2];
  pid_t kids[4] = {0};
  assert_int_equal(pipe(fd), 0);
  pid_t p = fork();
  assert_true(p >= 0);
  if (p == 0) {
    char text[1024];
    scn_result r;
    snprintf(text, sizeof text, scenario, "3.001s");
    load(text);
    if (scn_run_case(&sc, 0, 9, SIM_FIFO, &r) || !r.passed) _exit(1);
    scn_result_free(&r);
    int n = children_of(getpid(), kids, 4, 1); /* the last generation */
    if (write(fd[1], kids, sizeof kids) != (ssize_t)sizeof kids || n != 1) _exit(1);
    exit(0);
  }
  close(fd[1]);
  assert_int_equal(read(fd[0], kids, sizeof kids), (ssize_t)sizeof kids);
  close(fd[0]);
  int status;
  assert_int_equal(waitpid(p, &status, 0), p);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_true(kids[0] > 0);
  assert_false(exists(kids[0]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kill_in_commit_window),
      cmocka_unit_test(test_kill_after_commit),
      cmocka_unit_test(test_same_hash),
      cmocka_unit_test(test_new_file_from_template),
      cmocka_unit_test(test_many_generations),
      cmocka_unit_test(test_pre_forked_dies_with_parent),
      cmocka_unit_test(test_exit_reaps_last_generation),
  };
  return cmocka_run_group_tests_name("sigkill", tests, NULL, NULL) != 0;
}
