/*
** test_legacy.c: the legacy fiber model of seed 001 (runtime/rt_legacy.c):
** spawnFiber, stashFiber, retries, onFiberComplete, onFibersRecovered,
** cancelFiber and the 10 s heartbeat schedule. Each test builds a small
** world, runs it, and reads the trace and cf_agents_fibers.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/rt.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

typedef struct fx {
  sim s;
  rt_world *w;
  rt_config cfg;
  rt_step steps[64];
  rt_program prog;
} fx;

static fx F;

static void fx_init(uint64_t seed, sim_strategy strat, const rt_config *cfg) {
  sim_config sc = {seed, strat, 3, 1000};
  assert_int_equal(sim_init(&F.s, &sc), 0);
  if (cfg)
    F.cfg = *cfg;
  else
    rt_config_default(&F.cfg);
  F.w = rt_world_new(&F.s, &F.cfg);
  assert_non_null(F.w);
}

static rt_config cfg_with(rt_heartbeat hb) {
  rt_config c;
  rt_config_default(&c);
  c.heartbeat = hb;
  return c;
}

static uint32_t fx_actor(const char *id) {
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "%s", id);
  snprintf(sp.cls, sizeof sp.cls, "Agent");
  return rt_actor_add(F.w, &sp);
}

/* `name`: n steps of work_us, each logging and stashing (stashFiber). */
static rt_program *fx_job(const char *name, int n, int64_t work_us) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    F.steps[k++] = (rt_step){RT_STEP_WORK, work_us, work_us, 0, "", 0, 0};
    F.steps[k++] = (rt_step){RT_STEP_EFFECT, 0, 0, 0, "log", 0, 0};
    F.steps[k++] = (rt_step){RT_STEP_STASH, 0, 0, 0, "", 0, 0};
  }
  snprintf(F.prog.name, sizeof F.prog.name, "%s", name);
  F.prog.steps = F.steps;
  F.prog.n_steps = k;
  return &F.prog;
}

static void fx_free(void) {
  rt_world_free(F.w);
  sim_free(&F.s);
  memset(&F, 0, sizeof F);
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_all(ctx, (rt_death_cause)arg);
}

static const char *str_of(const sim_rec *r) { return sim_trace_str(&F.s.trace, r->s); }

static size_t count_kind(uint32_t kind, uint32_t actor) {
  size_t n = 0;
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == kind &&
        (actor == RT_NO_ACTOR || F.s.trace.recs[i].actor == actor))
      n++;
  return n;
}

static const sim_rec *find_kind(uint32_t kind, size_t nth) {
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == kind && nth-- == 0) return &F.s.trace.recs[i];
  return NULL;
}

/* The nth RT_EV_LEGACY_FIBER record with status `status` (0: any) of fiber
** `id` (0: any). */
static const sim_rec *legacy_rec(int status, int64_t id, size_t nth) {
  for (size_t i = 0; i < F.s.trace.n; i++) {
    const sim_rec *r = &F.s.trace.recs[i];
    if (r->kind != RT_EV_LEGACY_FIBER || (status && r->b != status) || (id && r->a != id))
      continue;
    if (nth-- == 0) return r;
  }
  return NULL;
}

static size_t legacy_count(int status, int64_t id) {
  size_t n = 0;
  while (legacy_rec(status, id, n)) n++;
  return n;
}

/* Index of a record in the trace (for ordering). */
static size_t idx_of(const sim_rec *r) { return (size_t)(r - F.s.trace.recs); }

/* The first record of `kind` at or after trace index `from`. */
static const sim_rec *next_kind(uint32_t kind, size_t from) {
  for (size_t i = from; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == kind) return &F.s.trace.recs[i];
  return NULL;
}

static size_t count_kind_after(uint32_t kind, int64_t t_us) {
  size_t n = 0;
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == kind && F.s.trace.recs[i].t_us > t_us) n++;
  return n;
}

/* ---- tests ------------------------------------------------------------ */

/* spawnFiber → steps → UPDATE completed → heartbeat stopped →
** onFiberComplete; every write is RT_W_LEGACY_FIBER in a committed turn. */
static void test_spawn_completes(void **st) {
  (void)st;
  fx_init(1, SIM_FIFO, NULL);
  fx_actor("a");
  assert_int_equal(rt_spawn_fiber_at(F.w, 0, fx_job("job", 4, MS(500)), -1, S(1)), 0);
  sim_run(&F.s, S(60), 0);
  const sim_rec *spawn = legacy_rec(0, 0, 0);
  assert_non_null(spawn);
  assert_int_equal(spawn->b, RT_LF_RUNNING);
  assert_int_equal(spawn->c, 0);
  assert_string_equal(str_of(spawn), "job");
  int64_t id = spawn->a;
  const sim_rec *done = legacy_rec(RT_LF_COMPLETED, id, 0);
  assert_non_null(done);
  assert_int_equal(done->t_us, S(3));
  assert_int_equal(legacy_count(0, id), 2); /* running, completed */
  int retries = -1;
  assert_int_equal(rt_legacy_status(F.w, 0, id, &retries), RT_LF_COMPLETED);
  assert_int_equal(retries, 0);
  assert_int_equal(rt_legacy_status(F.w, 0, id + 1000, NULL), -1);
  assert_int_equal(count_kind(RT_EV_EFFECT, 0), 4);
  assert_int_equal(count_kind(RT_EV_FIBER_START, 0), 0); /* not a runFiber */
  assert_int_equal(rt_count_fiber_rows(F.w, 0), 0);
  /* the heartbeat ref is released before onFiberComplete */
  const sim_rec *rel = NULL;
  for (size_t i = 0; i < idx_of(done); i++)
    if (F.s.trace.recs[i].kind == RT_EV_KEEPALIVE && F.s.trace.recs[i].b == -1)
      rel = &F.s.trace.recs[i];
  assert_non_null(rel);
  assert_int_equal(rel->t_us, S(3));
  assert_int_equal(rt_keepalive_refs(F.w, 0), 0);
  /* insert + 4 stashes + completion, each committed */
  size_t writes = 0;
  for (size_t i = 0; i < F.s.trace.n; i++) {
    const sim_rec *w = &F.s.trace.recs[i];
    if (w->kind != RT_EV_WRITE || w->a != RT_W_LEGACY_FIBER) continue;
    writes++;
    assert_int_equal(w->b, id);
    int committed = 0;
    for (size_t j = i + 1; j < F.s.trace.n && !committed; j++)
      committed = F.s.trace.recs[j].kind == RT_EV_TXN_COMMIT && F.s.trace.recs[j].a == w->c;
    assert_true(committed);
  }
  assert_int_equal(writes, 6);
  fx_free();
}

/* Crash 1 ms after step 4's turn (inside its commit window): the next
** wake marks the fiber interrupted with retry_count 1 inside the gate,
** after _checkRunFibers and before onStart, and resumes it after startup
** from step 3's snapshot. */
static void test_crash_recovers_committed_snapshot(void **st) {
  (void)st;
  fx_init(1, SIM_FIFO, NULL);
  fx_actor("a");
  rt_fiber_at(F.w, 0, fx_job("run", 10, MS(500)), S(1)); /* a runFiber beside it */
  rt_spawn_fiber_at(F.w, 0, fx_job("job", 10, MS(500)), -1, S(1));
  sim_at(&F.s, S(1) + 4 * MS(500) + MS(1), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(5));
  sim_run(&F.s, S(60), 0);
  int64_t id = legacy_rec(0, 0, 0)->a;
  assert_int_equal(legacy_count(RT_LF_INTERRUPTED, 0), 1);
  const sim_rec *intr = legacy_rec(RT_LF_INTERRUPTED, id, 0);
  assert_int_equal(intr->t_us, S(5));
  assert_int_equal(intr->c, 1);
  const sim_rec *back = legacy_rec(RT_LF_RUNNING, id, 1); /* onFiberRecovered */
  assert_non_null(back);
  assert_true(idx_of(back) > idx_of(intr));
  assert_int_equal(back->c, 1);
  const sim_rec *onstart = find_kind(RT_EV_ONSTART_BEGIN, 1);
  assert_non_null(onstart);
  assert_true(idx_of(back) < idx_of(onstart)); /* inside the gate */
  const sim_rec *runrec = find_kind(RT_EV_FIBER_RECOVERED, 0);
  assert_non_null(runrec);
  assert_true(idx_of(runrec) < idx_of(intr)); /* after _checkRunFibers */
  const sim_rec *rel = find_kind(RT_EV_GATE_RELEASE, 1);
  size_t from = idx_of(rel);
  const sim_rec *ka = NULL; /* the resumed fiber's keepAlive: after startup */
  for (size_t i = idx_of(back); i < F.s.trace.n && !ka; i++)
    if (F.s.trace.recs[i].kind == RT_EV_KEEPALIVE && F.s.trace.recs[i].b == 1)
      ka = &F.s.trace.recs[i];
  assert_non_null(ka);
  assert_true(idx_of(ka) > from);
  const sim_rec *eff = next_kind(RT_EV_EFFECT, from);
  while (eff && eff->a != id) eff = next_kind(RT_EV_EFFECT, idx_of(eff) + 1);
  assert_non_null(eff);
  assert_int_equal(eff->b, 10); /* resumed at pc 9: step 3's committed stash */
  int retries = -1;
  assert_int_equal(rt_legacy_status(F.w, 0, id, &retries), RT_LF_COMPLETED);
  assert_int_equal(retries, 1);
  assert_int_equal(legacy_count(RT_LF_COMPLETED, id), 1);
  fx_free();
}

/* Several interrupted fibers are recovered sequentially, oldest first by
** created_at (spawned c, b, a: neither name nor reverse order). */
static void test_recovery_oldest_first(void **st) {
  (void)st;
  fx_init(2, SIM_FIFO, NULL);
  fx_actor("a");
  const char *names[3] = {"c", "b", "a"};
  for (int i = 0; i < 3; i++)
    rt_spawn_fiber_at(F.w, 0, fx_job(names[i], 10, MS(500)), -1, S(1) + i * MS(100));
  sim_at(&F.s, S(2) + MS(300), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(5));
  sim_run(&F.s, S(60), 0);
  int64_t ids[3];
  for (int i = 0; i < 3; i++) {
    ids[i] = legacy_rec(RT_LF_RUNNING, 0, (size_t)i)->a;
    assert_string_equal(str_of(legacy_rec(RT_LF_RUNNING, 0, (size_t)i)), names[i]);
  }
  for (int i = 0; i < 3; i++) {
    assert_int_equal(legacy_rec(RT_LF_INTERRUPTED, 0, (size_t)i)->a, ids[i]);
    assert_int_equal(legacy_rec(RT_LF_RUNNING, 0, (size_t)(3 + i))->a, ids[i]);
    assert_int_equal(legacy_rec(RT_LF_COMPLETED, ids[i], 0)->c, 1);
  }
  /* and they run again in that order */
  const sim_rec *rel = find_kind(RT_EV_GATE_RELEASE, 1);
  size_t from = idx_of(rel);
  for (int i = 0; i < 3; i++) {
    const sim_rec *eff = next_kind(RT_EV_EFFECT, from);
    assert_non_null(eff);
    assert_int_equal(eff->a, ids[i]);
    from = idx_of(eff) + 1;
  }
  fx_free();
}

/* One startup scan takes at most 64 rows (RT_MAX_ORPHANS): of 70 orphans
** the oldest 64 are recovered at startup and the alarm-time fallback
** recovers the other 6 at the next heartbeat, each exactly once. */
static void test_alarm_fallback_recovers_rest(void **st) {
  (void)st;
  fx_init(9, SIM_FIFO, NULL);
  fx_actor("a");
  for (int i = 0; i < 70; i++)
    rt_spawn_fiber_at(F.w, 0, fx_job("job", 4, S(2)), -1, S(1) + i * MS(1));
  sim_at(&F.s, S(2), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(5));
  sim_run(&F.s, S(120), 0);
  assert_int_equal(legacy_count(RT_LF_INTERRUPTED, 0), 70);
  const sim_rec *r64 = legacy_rec(RT_LF_INTERRUPTED, 0, 63), *r65 = legacy_rec(RT_LF_INTERRUPTED, 0, 64);
  assert_int_equal(r64->t_us, S(5));
  assert_int_equal(r65->t_us, S(35)); /* the heartbeat alarm: resumed at 5 s + 30 s */
  assert_int_equal(r65->a, legacy_rec(RT_LF_RUNNING, 0, 64)->a); /* the 65th spawned */
  assert_int_equal(legacy_count(RT_LF_COMPLETED, 0), 70);
  for (size_t i = 0; i < 70; i++) assert_int_equal(legacy_rec(RT_LF_COMPLETED, 0, i)->c, 1);
  fx_free();
}

/* maxRetries 1, killed twice: the second wake fails it with 'max retries
** exceeded'; the heartbeat stops, no alarm remains and the actor idles. */
static void run_max_retries(rt_heartbeat hb) {
  rt_config c = cfg_with(hb);
  fx_init(3, SIM_FIFO, &c);
  fx_actor("a");
  rt_spawn_fiber_at(F.w, 0, fx_job("long", 20, S(5)), 1, S(1));
  sim_at(&F.s, S(3), 0, crash_cb, F.w, RT_DEATH_CRASH);
  sim_at(&F.s, S(15), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(8)); /* first recovery; the second is the heartbeat's */
  sim_run(&F.s, S(400), 0);
  int64_t id = legacy_rec(0, 0, 0)->a;
  assert_int_equal(legacy_count(RT_LF_INTERRUPTED, id), 2);
  const sim_rec *failed = legacy_rec(RT_LF_FAILED, id, 0);
  assert_non_null(failed);
  assert_int_equal(failed->c, 2);
  assert_true(failed->t_us > S(15) && failed->t_us <= S(40));
  int retries = -1;
  assert_int_equal(rt_legacy_status(F.w, 0, id, &retries), RT_LF_FAILED);
  assert_int_equal(retries, 2);
  assert_int_equal(rt_alarm_of(F.w, 0), -1);
  assert_int_equal(count_kind_after(RT_EV_SCHEDULE_RUN, failed->t_us), 0);
  assert_int_equal(count_kind_after(RT_EV_ALARM_FIRE, failed->t_us), 0);
  const sim_rec *idle = NULL;
  for (size_t i = idx_of(failed); i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == RT_EV_ACTOR_DEATH && F.s.trace.recs[i].a == RT_DEATH_IDLE)
      idle = &F.s.trace.recs[i];
  assert_non_null(idle);
  assert_int_equal(count_kind_after(RT_EV_ACTOR_WAKE, idle->t_us), 0);
}

static void test_max_retries_schedule_heartbeat(void **st) {
  (void)st;
  run_max_retries(RT_HB_SCHEDULE);
  fx_free();
}

static void test_max_retries_alarm_heartbeat(void **st) {
  (void)st;
  run_max_retries(RT_HB_ALARM);
  fx_free();
}

/* A step that throws: retry_count+1 and an immediate retry from the
** snapshot while retry_count <= maxRetries, then failed; the ref goes. */
static void test_failing_step_retries_then_fails(void **st) {
  (void)st;
  fx_init(4, SIM_FIFO, NULL);
  fx_actor("a");
  rt_step steps[6] = {{RT_STEP_WORK, S(1), S(1), 0, "", 0, 0},
                      {RT_STEP_EFFECT, 0, 0, 0, "try", 0, 0},
                      {RT_STEP_STASH, 0, 0, 0, "", 0, 0},
                      {RT_STEP_WORK, S(1), S(1), 0, "", 0, 0},
                      {RT_STEP_EFFECT, 0, 0, 0, "boom", 0, 0},
                      {RT_STEP_FAIL, 0, 0, 0, "kaboom", 0, 0}};
  rt_program p = {"flaky", steps, 6};
  rt_spawn_fiber_at(F.w, 0, &p, 2, S(1));
  sim_run(&F.s, S(200), 0);
  int64_t id = legacy_rec(0, 0, 0)->a;
  size_t tries = 0, booms = 0;
  for (size_t i = 0; i < F.s.trace.n; i++)
    if (F.s.trace.recs[i].kind == RT_EV_EFFECT) {
      tries += strcmp(str_of(&F.s.trace.recs[i]), "try") == 0;
      booms += strcmp(str_of(&F.s.trace.recs[i]), "boom") == 0;
    }
  assert_int_equal(tries, 1); /* retries restart from the snapshot */
  assert_int_equal(booms, 3); /* the first run and two retries */
  assert_int_equal(legacy_rec(RT_LF_RUNNING, id, 1)->c, 1);
  assert_int_equal(legacy_rec(RT_LF_RUNNING, id, 2)->c, 2);
  assert_int_equal(legacy_count(RT_LF_RUNNING, id), 3);
  const sim_rec *failed = legacy_rec(RT_LF_FAILED, id, 0);
  assert_non_null(failed);
  assert_int_equal(failed->t_us, S(5));
  assert_int_equal(failed->c, 3);
  assert_int_equal(legacy_count(RT_LF_COMPLETED, 0), 0);
  int retries = -1;
  assert_int_equal(rt_legacy_status(F.w, 0, id, &retries), RT_LF_FAILED);
  assert_int_equal(retries, 3);
  assert_int_equal(rt_keepalive_refs(F.w, 0), 0);
  assert_int_equal(rt_alarm_of(F.w, 0), -1);
  assert_int_equal(legacy_count(RT_LF_INTERRUPTED, 0), 0);
  fx_free();
}

/* A fail step with no message throws "fiber method threw"; with
** maxRetries 0 the first throw fails the fiber, and the row keeps that
** error (and no other). */
static void test_unnamed_throw_fails_at_once(void **st) {
  (void)st;
  fx_init(2, SIM_FIFO, NULL);
  fx_actor("a");
  rt_step steps[2] = {{RT_STEP_WORK, S(1), S(1), 0, "", 0, 0}, {RT_STEP_FAIL, 0, 0, 0, "", 0, 0}};
  rt_program p = {"silent", steps, 2};
  rt_spawn_fiber_at(F.w, 0, &p, 0, S(1));
  sim_run(&F.s, S(60), 0);
  int64_t id = legacy_rec(0, 0, 0)->a;
  const sim_rec *failed = legacy_rec(RT_LF_FAILED, id, 0);
  assert_non_null(failed);
  assert_int_equal(failed->t_us, S(2));
  assert_int_equal(failed->c, 1);
  assert_int_equal(legacy_count(RT_LF_RUNNING, id), 1); /* no retry */
  rt_qcol q[2] = {{"id", 0, id, NULL}, {"error", 1, 0, "fiber method threw"}};
  assert_int_equal(rt_query_rows(F.w, 0, "cf_agents_fibers", q, 2), 1);
  assert_int_equal(rt_keepalive_refs(F.w, 0), 0);
  fx_free();
}

/* A process killed while a legacy fiber runs, and a new process whose code
** no longer has the fiber's method: the startup scan marks it interrupted,
** and the default onFiberRecovered fails it with "method not found"
** instead of running anything. */
static void test_recovered_method_not_found(void **st) {
  char dir[] = "/tmp/revenant-covB-XXXXXX";
  rt_config c;
  (void)st;
  assert_non_null(mkdtemp(dir));
  rt_config_default(&c);
  c.storage_files = 1;
  snprintf(c.storage_dir, sizeof c.storage_dir, "%s", dir);
  fx_init(3, SIM_FIFO, &c);
  fx_actor("a");
  rt_spawn_fiber_at(F.w, 0, fx_job("gone", 10, S(1)), -1, S(1));
  sim_run(&F.s, S(4), 0);
  int64_t id = legacy_rec(0, 0, 0)->a;
  assert_int_equal(rt_legacy_status(F.w, 0, id, NULL), RT_LF_RUNNING);
  rt_world_note_sigkill(F.w);
  fx_free();

  fx_init(3, SIM_FIFO, &c); /* the new process: no program "gone" */
  fx_actor("a");
  assert_int_equal(rt_world_restore(F.w, 1000000), 0);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(1));
  sim_run(&F.s, S(30), 0);
  assert_non_null(legacy_rec(RT_LF_INTERRUPTED, id, 0));
  const sim_rec *failed = legacy_rec(RT_LF_FAILED, id, 0);
  assert_non_null(failed);
  assert_int_equal(legacy_count(RT_LF_RUNNING, id), 0);
  assert_int_equal(count_kind(RT_EV_EFFECT, 0), 0);
  rt_qcol q[2] = {{"id", 0, id, NULL}, {"error", 1, 0, "method not found"}};
  assert_int_equal(rt_query_rows(F.w, 0, "cf_agents_fibers", q, 2), 1);
  assert_int_equal(rt_legacy_status(F.w, 0, id, NULL), RT_LF_FAILED);
  fx_free();
  char path[64];
  snprintf(path, sizeof path, "%s/actor-0.db", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/actor-0.db-wal", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/actor-0.db-shm", dir);
  unlink(path);
  assert_int_equal(rmdir(dir), 0);
}

/* An RPC that fails: while the process is down (down_for) a call to an actor
** not in memory fails at once. A legacy fiber whose call fails throws "rpc
** call failed" (maxRetries 0: failed at once); a runFiber body whose call
** fails throws "fiber body threw". Neither runs the step after the call. */
static void set_down_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_set_down(ctx, (int64_t)arg);
}

static void test_failed_rpc_throws(void **st) {
  (void)st;
  fx_init(5, SIM_FIFO, NULL);
  fx_actor("caller");
  fx_actor("callee");
  rt_step steps[3] = {{RT_STEP_WORK, S(1), S(1), 0, "", 0, 0},
                      {RT_STEP_CALL, 0, 0, 1, "", 0, 0},
                      {RT_STEP_EFFECT, 0, 0, 0, "after", 0, 0}};
  rt_program lp = {"lcall", steps, 3}, rp = {"rcall", steps, 3};
  rt_spawn_fiber_at(F.w, 0, &lp, 0, S(1));
  rt_fiber_at(F.w, 0, &rp, S(1));
  sim_at(&F.s, S(1) + MS(500), 0, set_down_cb, F.w, (uint64_t)S(60));
  sim_run(&F.s, S(30), 0);
  int64_t id = legacy_rec(0, 0, 0)->a;
  assert_int_equal(rt_legacy_status(F.w, 0, id, NULL), RT_LF_FAILED);
  rt_qcol q[2] = {{"id", 0, id, NULL}, {"error", 1, 0, "rpc call failed"}};
  assert_int_equal(rt_query_rows(F.w, 0, "cf_agents_fibers", q, 2), 1);
  const sim_rec *done = find_kind(RT_EV_FIBER_DONE, 0);
  assert_non_null(done);
  assert_int_equal(done->b, 0);
  assert_string_equal(sim_trace_str(&F.s.trace, done->s2), "fiber body threw");
  assert_int_equal(count_kind(RT_EV_EFFECT, RT_NO_ACTOR), 0);
  assert_int_equal(rt_actor_alive(F.w, 1), 0); /* the callee never woke */
  fx_free();
}

/* A call that reaches an actor inside its startup waits behind the gate;
** when onStart throws, the held request fails with the startup's error
** but the held call (an RPC needs no init) is served: the caller's fiber
** gets its reply and goes on. */
static void test_call_held_through_failed_startup(void **st) {
  (void)st;
  fx_init(6, SIM_FIFO, NULL);
  fx_actor("caller");
  fx_actor("callee");
  rt_step steps[3] = {{RT_STEP_WORK, MS(500), MS(500), 0, "", 0, 0},
                      {RT_STEP_CALL, 0, 0, 1, "", 0, 0},
                      {RT_STEP_EFFECT, 0, 0, 0, "after", 0, 0}};
  rt_program p = {"rcall", steps, 3};
  rt_set_onstart_us(F.w, 1, S(2));
  rt_onstart_throws(F.w, 1, 1);
  rt_request_at(F.w, 1, RT_ENTRY_FETCH, S(1));
  rt_fiber_at(F.w, 0, &p, S(1));
  sim_run(&F.s, S(30), 0);
  const sim_rec *sf = find_kind(RT_EV_STARTUP_FAIL, 0);
  assert_non_null(sf);
  assert_int_equal(sf->actor, 1);
  const sim_rec *fail = find_kind(RT_EV_REQUEST_FAIL, 0);
  assert_non_null(fail);
  assert_int_equal(fail->actor, 1);
  const sim_rec *reply = find_kind(RT_EV_RPC_REPLY, 0);
  assert_non_null(reply);
  assert_int_equal(reply->actor, 0);
  assert_int_equal(reply->b, 1); /* ok */
  assert_true(reply->t_us > sf->t_us);
  assert_int_equal(count_kind(RT_EV_EFFECT, 0), 1);
  const sim_rec *done = find_kind(RT_EV_FIBER_DONE, 0);
  assert_non_null(done);
  assert_int_equal(done->b, 1);
  fx_free();
}

/* cancelFiber: the oldest running fiber of the method is cancelled, its
** pending steps stop and its ref goes; a younger one runs on. */
static void test_cancel_stops(void **st) {
  (void)st;
  rt_config c = cfg_with(RT_HB_SCHEDULE);
  fx_init(5, SIM_FIFO, &c);
  fx_actor("a");
  rt_spawn_fiber_at(F.w, 0, fx_job("job", 10, MS(500)), -1, S(1));
  rt_spawn_fiber_at(F.w, 0, fx_job("job", 10, MS(500)), -1, S(1) + MS(100));
  assert_int_equal(rt_cancel_fiber_at(F.w, 0, "other", S(2)), 0);
  assert_int_equal(rt_cancel_fiber_at(F.w, 0, "job", S(2) + MS(250)), 0);
  sim_run(&F.s, S(400), 0);
  int64_t first = legacy_rec(0, 0, 0)->a, second = legacy_rec(0, 0, 1)->a;
  assert_true(first != second);
  assert_int_equal(legacy_count(RT_LF_CANCELLED, 0), 1);
  const sim_rec *cancel = legacy_rec(RT_LF_CANCELLED, first, 0);
  assert_non_null(cancel);
  assert_int_equal(cancel->t_us, S(2) + MS(250));
  assert_int_equal(rt_legacy_status(F.w, 0, first, NULL), RT_LF_CANCELLED);
  assert_int_equal(rt_legacy_status(F.w, 0, second, NULL), RT_LF_COMPLETED);
  size_t after = 0;
  for (size_t i = idx_of(cancel); i < F.s.trace.n; i++)
    after += F.s.trace.recs[i].kind == RT_EV_EFFECT && F.s.trace.recs[i].a == first;
  assert_int_equal(after, 0);
  const sim_rec *ka = next_kind(RT_EV_KEEPALIVE, idx_of(cancel));
  assert_non_null(ka);
  assert_int_equal(ka->a, 1); /* one ref left: the second fiber's */
  assert_int_equal(ka->b, -1);
  assert_int_equal(rt_alarm_of(F.w, 0), -1);
  assert_non_null(find_kind(RT_EV_ACTOR_DEATH, 0)); /* it went idle */
  fx_free();
}

/* Alarms while a fiber runs (raw heartbeat every 2 s): the alarm-time
** _checkInterruptedFibers skips the active fiber. */
static void test_active_not_interrupted_by_alarm(void **st) {
  (void)st;
  rt_config c = cfg_with(RT_HB_ALARM);
  c.keepalive_interval_us = S(2);
  fx_init(6, SIM_FIFO, &c);
  fx_actor("a");
  rt_spawn_fiber_at(F.w, 0, fx_job("job", 10, MS(500)), -1, S(1));
  sim_run(&F.s, S(30), 0);
  int64_t id = legacy_rec(0, 0, 0)->a;
  const sim_rec *done = legacy_rec(RT_LF_COMPLETED, id, 0);
  assert_non_null(done);
  size_t during = 0;
  for (size_t i = 0; i < idx_of(done); i++)
    during += F.s.trace.recs[i].kind == RT_EV_ALARM_DONE && F.s.trace.recs[i].a == 1;
  assert_true(during >= 2);
  assert_int_equal(legacy_count(RT_LF_INTERRUPTED, 0), 0);
  assert_int_equal(legacy_count(0, id), 2);
  assert_int_equal(done->c, 0);
  fx_free();
}

/* Seed 001's heartbeat: `_cf_fiberHeartbeat` every 10 s while the fiber
** runs (each one scans and skips it), none after it completes. */
static void test_schedule_heartbeat_every_10s(void **st) {
  (void)st;
  rt_config c = cfg_with(RT_HB_SCHEDULE);
  fx_init(7, SIM_FIFO, &c);
  fx_actor("a");
  rt_step steps[1] = {{RT_STEP_WORK, S(35), S(35), 0, "", 0, 0}};
  rt_program p = {"p", steps, 1};
  rt_spawn_fiber_at(F.w, 0, &p, -1, S(0));
  sim_run(&F.s, S(100), 0);
  assert_int_equal(count_kind(RT_EV_SCHEDULE_RUN, 0), 3);
  for (size_t i = 0; i < 3; i++) {
    const sim_rec *r = find_kind(RT_EV_SCHEDULE_RUN, i);
    assert_int_equal(r->t_us, S(10) * (int64_t)(i + 1));
    assert_string_equal(str_of(r), "_cf_fiberHeartbeat");
  }
  const sim_rec *done = legacy_rec(RT_LF_COMPLETED, 0, 0);
  assert_non_null(done);
  assert_int_equal(done->t_us, S(35));
  assert_int_equal(legacy_count(RT_LF_INTERRUPTED, 0), 0);
  assert_int_equal(count_kind_after(RT_EV_ALARM_FIRE, done->t_us), 0);
  assert_int_equal(rt_alarm_of(F.w, 0), -1);
  fx_free();
}

/* Immediate commits with a failing commit: the output gate breaks, the
** actor is reset when the turn returns; the request fails and no row
** survives. */
static void test_spawn_storage_failure(void **st) {
  (void)st;
  rt_config c = cfg_with(RT_HB_ALARM);
  c.commit = RT_COMMIT_IMMEDIATE;
  fx_init(8, SIM_FIFO, &c);
  fx_actor("a");
  rt_fail_commits(F.w, 0, 1);
  rt_spawn_fiber_at(F.w, 0, fx_job("job", 3, MS(500)), -1, S(1));
  sim_run(&F.s, S(10), 0);
  const sim_rec *d = find_kind(RT_EV_ACTOR_DEATH, 0);
  assert_non_null(d);
  assert_int_equal(d->a, RT_DEATH_STORAGE);
  assert_int_equal(count_kind(RT_EV_REQUEST_FAIL, 0), 1);
  /* the turn ran on until the reset, but its writes rolled back */
  const sim_rec *lf = find_kind(RT_EV_LEGACY_FIBER, 0);
  assert_non_null(lf);
  assert_int_equal(rt_legacy_status(F.w, 0, lf->a, NULL), -1);
  assert_int_equal(count_kind(RT_EV_EFFECT, 0), 0);
  fx_free();
}

static uint64_t run_hash(uint64_t seed, sim_strategy strat) {
  rt_config c = cfg_with(RT_HB_SCHEDULE);
  fx_init(seed, strat, &c);
  fx_actor("a");
  fx_actor("b");
  rt_step flaky[3] = {{RT_STEP_WORK, MS(200), MS(900), 0, "", 0, 0},
                      {RT_STEP_STASH, 0, 0, 0, "", 0, 0},
                      {RT_STEP_FAIL, 0, 0, 0, "e", 0, 0}};
  rt_program pf = {"flaky", flaky, 3};
  for (int k = 0; k < 4; k++) {
    rt_program *p = fx_job(k % 2 ? "odd" : "even", 6, MS(400));
    p->steps[0].max_us = MS(1500);
    rt_spawn_fiber_at(F.w, (uint32_t)(k % 2), p, k, S(1) + k * MS(10));
  }
  rt_spawn_fiber_at(F.w, 1, &pf, 2, S(1));
  rt_cancel_fiber_at(F.w, 0, "even", S(3));
  sim_at(&F.s, S(2) + MS(1), 0, crash_cb, F.w, RT_DEATH_CRASH);
  rt_request_at(F.w, 0, RT_ENTRY_FETCH, S(4));
  sim_run(&F.s, S(400), 0);
  assert_true(legacy_count(RT_LF_INTERRUPTED, 0) > 0);
  uint64_t h = F.s.trace.hash;
  fx_free();
  return h;
}

/* Same seed, same hash, for every strategy; another seed, another run. */
static void test_determinism(void **st) {
  (void)st;
  for (int strat = 0; strat < 3; strat++)
    assert_true(run_hash(11, (sim_strategy)strat) == run_hash(11, (sim_strategy)strat));
  int differs = 0;
  for (uint64_t s = 1; s < 6 && !differs; s++)
    differs = run_hash(s, SIM_RANDOM) != run_hash(s + 100, SIM_RANDOM);
  assert_true(differs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unnamed_throw_fails_at_once),
      cmocka_unit_test(test_recovered_method_not_found),
      cmocka_unit_test(test_failed_rpc_throws),
      cmocka_unit_test(test_call_held_through_failed_startup),
      cmocka_unit_test(test_spawn_completes),
      cmocka_unit_test(test_crash_recovers_committed_snapshot),
      cmocka_unit_test(test_recovery_oldest_first),
      cmocka_unit_test(test_alarm_fallback_recovers_rest),
      cmocka_unit_test(test_max_retries_schedule_heartbeat),
      cmocka_unit_test(test_max_retries_alarm_heartbeat),
      cmocka_unit_test(test_failing_step_retries_then_fails),
      cmocka_unit_test(test_cancel_stops),
      cmocka_unit_test(test_active_not_interrupted_by_alarm),
      cmocka_unit_test(test_schedule_heartbeat_every_10s),
      cmocka_unit_test(test_spawn_storage_failure),
      cmocka_unit_test(test_determinism),
  };
  return cmocka_run_group_tests_name("legacy", tests, NULL, NULL) != 0;
}
