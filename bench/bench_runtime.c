/*
** bench_runtime.c: figures of the runtime model, printed as
** `name: value unit`. Wall-clock time is read here only, never in a run.
**   fiber_lifecycles_per_s     start, three stashes, complete (one turn)
**   fiber_sql_overhead_ratio   time per lifecycle / the same SQL done directly
**   actor_bytes_idle           memory per idle actor with storage (100,000 actors)
**   kill_recover_cycles_per_s  10 x 500 ms fiber, crash after step 4, wake,
**                              recover, finish; fresh storage every cycle
**   sigkill_cycles_per_s       the same loop with a real SIGKILL of a worker
**                              process over file-backed WAL databases
*/
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <time.h>

#include "runtime/rt.h"
#include "scenarios/scn.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Bytes in use by malloc (glibc): what the actors hold, unlike RSS,
** which keeps pages freed during the run. */
static long heap_in_use(void) { return (long)mallinfo2().uordblks; }

static rt_world *world(sim *s, uint64_t seed, const rt_config *c) {
  sim_config sc = {seed, SIM_FIFO, 3, 1000};
  sim_init(s, &sc);
  s->trace.keep = 0;
  return rt_world_new(s, c);
}

static uint32_t actor(rt_world *w, const char *id) {
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "%s", id);
  return rt_actor_add(w, &sp);
}

/* N fibers one after another on one actor: each is start + 3 stashes +
** completion in one turn (no work steps). */
static double lifecycles(int n) {
  rt_step steps[3] = {{RT_STEP_STASH, 0, 0, 0, "", 0, 0}, {RT_STEP_STASH, 0, 0, 0, "", 0, 0},
                      {RT_STEP_STASH, 0, 0, 0, "", 0, 0}};
  rt_program p = {"bench", steps, 3};
  rt_config c;
  sim s;
  rt_config_default(&c);
  c.dispose = RT_DISPOSE_FIXED;
  rt_world *w = world(&s, 1, &c);
  actor(w, "a");
  for (int i = 0; i < n; i++) rt_fiber_at(w, 0, &p, MS(10) * (i + 1));
  double t0 = now_s();
  sim_run(&s, MS(10) * (n + 2), 0);
  double dt = now_s() - t0;
  rt_world_free(w);
  sim_free(&s);
  return dt / n;
}

/* The same statements straight on SQLite: one transaction per lifecycle. */
static double direct_sql(int n) {
  sqlite3 *db;
  sqlite3_stmt *ins, *upd, *del, *alarm_set, *alarm_del;
  sqlite3_open(":memory:", &db);
  sqlite3_exec(db, "PRAGMA journal_mode=MEMORY;"
                   "CREATE TABLE cf_agents_runs(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                   " snapshot TEXT, created_at INTEGER NOT NULL);"
                   "CREATE TABLE rv_alarm(k INTEGER PRIMARY KEY, at INTEGER);", NULL, NULL, NULL);
  sqlite3_prepare_v3(db, "INSERT INTO cf_agents_runs VALUES(?,?,NULL,?)", -1, SQLITE_PREPARE_PERSISTENT, &ins, NULL);
  sqlite3_prepare_v3(db, "UPDATE cf_agents_runs SET snapshot=? WHERE id=?", -1, SQLITE_PREPARE_PERSISTENT, &upd, NULL);
  sqlite3_prepare_v3(db, "DELETE FROM cf_agents_runs WHERE id=?", -1, SQLITE_PREPARE_PERSISTENT, &del, NULL);
  sqlite3_prepare_v3(db, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,?)", -1, SQLITE_PREPARE_PERSISTENT, &alarm_set, NULL);
  sqlite3_prepare_v3(db, "DELETE FROM rv_alarm WHERE k=0", -1, SQLITE_PREPARE_PERSISTENT, &alarm_del, NULL);
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    char snap[32];
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    sqlite3_bind_int64(ins, 1, i);
    sqlite3_bind_text(ins, 2, "bench", -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 3, i);
    sqlite3_step(ins);
    sqlite3_reset(ins);
    sqlite3_bind_int64(alarm_set, 1, i);
    sqlite3_step(alarm_set);
    sqlite3_reset(alarm_set);
    for (int k = 1; k <= 3; k++) {
      snprintf(snap, sizeof snap, "{\"pc\":%d}", k);
      sqlite3_bind_text(upd, 1, snap, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(upd, 2, i);
      sqlite3_step(upd);
      sqlite3_reset(upd);
    }
    sqlite3_bind_int64(del, 1, i);
    sqlite3_step(del);
    sqlite3_reset(del);
    sqlite3_step(alarm_del);
    sqlite3_reset(alarm_del);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  }
  double dt = now_s() - t0;
  sqlite3_finalize(ins);
  sqlite3_finalize(upd);
  sqlite3_finalize(del);
  sqlite3_finalize(alarm_set);
  sqlite3_finalize(alarm_del);
  sqlite3_close(db);
  return dt / n;
}

/* 100,000 actors, each woken once with a write (storage open), then idle. */
static double idle_bytes(int n) {
  rt_config c;
  sim s;
  rt_config_default(&c);
  long before = heap_in_use();
  rt_world *w = world(&s, 1, &c);
  char id[32];
  for (int i = 0; i < n; i++) {
    snprintf(id, sizeof id, "a%d", i);
    actor(w, id);
    rt_alarm_preset(w, (uint32_t)i, S(100000));
    rt_request_at(w, (uint32_t)i, RT_ENTRY_FETCH, S(1));
  }
  sim_run(&s, S(400), 0); /* every actor wakes, then is evicted as idle */
  sim_queue_free(&s.queue); /* the kernel's spent event pool is not the actors' */
  sim_queue_init(&s.queue);
  long after = heap_in_use();
  rt_world_free(w);
  sim_free(&s);
  return (double)(after - before) / n;
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  (void)arg;
  rt_kill_all(ctx, RT_DEATH_CRASH);
}

/* One cycle of workerd-observed.md's loop, fresh storage each time. */
static int kill_recover_cycle(uint64_t seed, const rt_program *p) {
  rt_config c;
  sim s;
  rt_config_default(&c);
  rt_world *w = world(&s, seed, &c);
  actor(w, "agent");
  rt_fiber_at(w, 0, p, 0);
  sim_at(&s, 4 * MS(500) + MS(10), 0, crash_cb, w, 0);
  rt_request_at(w, 0, RT_ENTRY_FETCH, S(3));
  sim_run(&s, S(10), 0);
  int ok = rt_count_fiber_rows(w, 0) == 0;
  rt_world_free(w);
  sim_free(&s);
  return ok;
}

/* The same loop as a scenario with a real SIGKILL (scn_sigkill.c). */
static double sigkill_cycles(double seconds) {
  static const char text[] =
      "{\"name\":\"b\",\"duration\":\"10s\","
      "\"programs\":{\"job\":[{\"repeat\":10,\"steps\":[{\"work\":\"500ms\"},{\"stash\":true}]}]},"
      "\"actors\":[{\"id\":\"agent\"}],"
      "\"workload\":[{\"fiber\":\"job\",\"actor\":\"agent\",\"at\":\"0s\"},"
      "{\"request\":\"agent\",\"at\":\"3s\"}],"
      "\"faults\":[{\"kind\":\"sigkill\",\"at\":\"2.01s\"}],"
      "\"expect\":{\"hold\":[\"recovery_finishes\",\"stash_durable\"]}}";
  static scn_scenario sc;
  char err[256];
  int n = 0, ok = 0;
  if (scn_load_text("bench", text, sizeof text - 1, &sc, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 0;
  }
  double t0 = now_s();
  while (now_s() - t0 < seconds) {
    scn_result r;
    if (scn_run_case(&sc, 0, (uint64_t)++n, SIM_FIFO, &r) == 0 && r.passed) ok++;
    scn_result_free(&r);
  }
  double dt = now_s() - t0;
  scn_free(&sc);
  printf("sigkill_cycles_per_s: %.0f 1/s\n", n / dt);
  printf("sigkill_cycles_target_ratio: %.3f x\n", n / dt / 500.0); /* issue #18 */
  if (ok != n) fprintf(stderr, "bench_runtime: %d of %d sigkill cycles did not recover\n", n - ok, n);
  return ok == n ? n / dt : 0;
}

int main(void) {
  int n = 20000;
  /* first: fork() of a process whose heap once held 100,000 actors is slow */
  double sk = sigkill_cycles(1.0);
  printf("sigkill_vs_real_ratio: %.0f x\n", sk * 13.0); /* real loop: 13-15 s per cycle */
  double per = lifecycles(n), direct = direct_sql(n);
  printf("fiber_lifecycles_per_s: %.0f 1/s\n", 1.0 / per);
  printf("fiber_sql_overhead_ratio: %.2f x\n", per / direct);
  printf("fiber_sql_overhead_target_ratio: %.2f x\n", per / direct / 1.5);
  double idle = idle_bytes(100000);
  printf("actor_bytes_idle: %.0f bytes\n", idle);
  printf("actor_bytes_idle_target_ratio: %.2f x\n", idle / 49152.0);
  rt_step steps[30];
  int k = 0;
  for (int i = 0; i < 10; i++) {
    steps[k++] = (rt_step){RT_STEP_WORK, MS(500), MS(500), 0, "", 0, 0};
    steps[k++] = (rt_step){RT_STEP_STASH, 0, 0, 0, "", 0, 0};
  }
  rt_program p = {"job", steps, k};
  int cycles = 0, ok = 0;
  double t0 = now_s();
  while (now_s() - t0 < 1.0) ok += kill_recover_cycle((uint64_t)++cycles, &p);
  double dt = now_s() - t0;
  printf("kill_recover_cycles_per_s: %.0f 1/s\n", cycles / dt);
  printf("kill_recover_target_ratio: %.2f x\n", cycles / dt / 50000.0); /* issue #18 */
  printf("kill_recover_vs_real_ratio: %.0f x\n", cycles / dt * 13.0); /* real: 13-15 s/cycle */
  if (ok != cycles) fprintf(stderr, "bench_runtime: %d of %d cycles did not recover\n", cycles - ok, cycles);

  return ok == cycles && sk > 0 ? 0 : 1;
}
