/*
** test_held.c: held transactions (runtime/rt_storage.c, issue #18). A pooled
** in-memory database keeps one SQLite transaction open and each turn is a
** savepoint in it; the pool's wipe rolls the held transaction back. These
** tests fail if a rolled-back turn (a crash, a failed commit) loses more or
** less than that turn, if a run traces differently held or not, if parking
** serializes other bytes, if the wipe leaves anything but the template, or
** if an actor that runs user SQL gets a held transaction.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_agent.h"
#include "runtime/rt_host.h"

#define S(x) ((int64_t)(x) * 1000000)
#define MS(x) ((int64_t)(x) * 1000)

static rt_step steps[10];
static rt_program job = {"job", steps, 10};

static void job_init(void) {
  for (int i = 0; i < 5; i++) {
    steps[2 * i] = (rt_step){RT_STEP_WORK, MS(500), MS(500), 0, "", 0, 0};
    steps[2 * i + 1] = (rt_step){RT_STEP_STASH, 0, 0, 0, "", 0, 0};
  }
}

static rt_world *world_of(sim *s, uint64_t seed, uint32_t n) {
  sim_config sc = {seed, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(s, &sc), 0);
  rt_config_default(&c);
  rt_world *w = rt_world_new(s, &c);
  assert_non_null(w);
  for (uint32_t i = 0; i < n; i++) {
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, "a%u", i);
    assert_int_equal(rt_actor_add(w, &sp), i);
  }
  return w;
}

static void exec_ok(rt_world *w, const char *q) {
  sqlite3_stmt *st = rt__prepare(w, 0, q);
  assert_non_null(st);
  assert_int_equal(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
}

/* A turn rolled back in a held transaction loses its own writes and keeps
** every earlier turn's; the held transaction stays open. */
static void test_rollback_loses_the_turn_only(void **st) {
  (void)st;
  sim s;
  rt_world *w = world_of(&s, 1, 1);
  rt_db *d = &w->actors[0].store;
  assert_int_equal(rt__db_open(w, 0), 0);
  assert_int_equal(d->held, 1);
  assert_int_equal(rt__txn_join(w, 0), 0);
  exec_ok(w, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,100)");
  rt__commit_now(w, 0);
  assert_int_equal(rt__txn_join(w, 0), 0);
  assert_int_equal(d->sp_open, 1);
  exec_ok(w, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,200)");
  assert_int_equal(rt__stored_alarm(w, 0), 200);
  rt__rollback(w, 0, "test");
  assert_int_equal(d->sp_open, 0);
  assert_int_equal(rt__stored_alarm(w, 0), 100);
  assert_int_equal(sqlite3_get_autocommit(d->db), 0); /* still held */
  assert_int_equal(rt__txn_join(w, 0), 0);
  exec_ok(w, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,300)");
  rt__commit_now(w, 0);
  assert_int_equal(rt__stored_alarm(w, 0), 300);
  rt_world_free(w);
  sim_free(&s);
}

/* Committed turns' savepoints stay on SQLite's stack (a commit runs no
** statement) and a full stack is released: over many turns, a rollback
** loses only the open turn, and a write between turns (after a commit or
** after a rollback) is never undone by a later turn's rollback. */
static void test_stacked_turns(void **st) {
  (void)st;
  char q[96];
  sim s;
  rt_world *w = world_of(&s, 2, 1);
  rt_db *d = &w->actors[0].store;
  assert_int_equal(rt__db_open(w, 0), 0);
  for (int i = 1; i <= 20; i++) {
    assert_int_equal(rt__txn_join(w, 0), 0);
    snprintf(q, sizeof q, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,%d)", i);
    exec_ok(w, q);
    if (i % 3 == 0) {
      rt__rollback(w, 0, "test");
      assert_int_equal(rt__stored_alarm(w, 0), i - 1);
      snprintf(q, sizeof q, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,%d)", i);
      exec_ok(w, q); /* between turns, after a rollback */
    } else {
      rt__commit_now(w, 0);
    }
    assert_int_equal(rt__stored_alarm(w, 0), i);
    assert_true(d->sp_depth <= 8);
  }
  for (int i = 0; i < 30; i++) { /* turns that all roll back: the stack stays bounded */
    assert_int_equal(rt__txn_join(w, 0), 0);
    exec_ok(w, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,999)");
    rt__rollback(w, 0, "test");
    assert_true(d->sp_depth <= 8);
    assert_int_equal(rt__stored_alarm(w, 0), 20);
  }
  exec_ok(w, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,500)"); /* after a commit */
  assert_int_equal(rt__txn_join(w, 0), 0);
  exec_ok(w, "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,600)");
  rt__rollback(w, 0, "test");
  assert_int_equal(rt__stored_alarm(w, 0), 500);
  assert_int_equal(d->held, 1);
  assert_int_equal(sqlite3_get_autocommit(d->db), 0);
  rt_world_free(w);
  sim_free(&s);
}

static void crash_cb(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  (void)arg;
  rt_kill_all(ctx, RT_DEATH_CRASH);
}

/* The kill/recover cycle with a crash at crash_us (and fail_commits failed
** commits of actor 0): its trace hash; *rollbacks counts turns rolled back,
** *held whether the connection was held. */
static uint64_t cycle(int64_t crash_us, int fail_commits, int *rollbacks, int *held) {
  sim s;
  rt_world *w = world_of(&s, 7, 1);
  s.trace.keep = 1;
  assert_int_equal(rt_fiber_at(w, 0, &job, 0), 0);
  if (fail_commits) rt_fail_commits(w, 0, fail_commits);
  sim_at(&s, crash_us, 0, crash_cb, w, 0);
  assert_int_equal(rt_request_at(w, 0, RT_ENTRY_FETCH, S(4)), 0);
  sim_run(&s, S(10), 0);
  *held = w->actors[0].store.held;
  *rollbacks = 0;
  for (size_t i = 0; i < s.trace.n; i++)
    if (s.trace.recs[i].kind == RT_EV_TXN_ROLLBACK) (*rollbacks)++;
  uint64_t h = s.trace.hash;
  rt_world_free(w);
  sim_free(&s);
  return h;
}

/* Crashes at every point of the fiber, inside commit windows and between
** them, and failed commits: the same trace held or not, and some of them
** did roll a turn back. */
static void test_crash_and_failed_commit_same_held_or_not(void **st) {
  (void)st;
  job_init();
  int rolled = 0;
  for (int fail = 0; fail <= 1; fail++) {
    for (int k = 0; k < 12; k++) {
      int64_t crash = (k / 2) * MS(500) + (k % 2 ? MS(250) : MS(1)); /* in a window, or not */
      int rb_on, rb_off, held_on, held_off;
      uint64_t on = cycle(crash, fail, &rb_on, &held_on);
      rt_held_txn_set(0);
      uint64_t off = cycle(crash, fail, &rb_off, &held_off);
      rt_held_txn_set(1);
      assert_int_equal(held_on, 1);
      assert_int_equal(held_off, 0);
      assert_true(on == off);
      assert_int_equal(rb_on, rb_off);
      rolled += rb_on;
    }
  }
  assert_true(rolled > 0);
}

/* The image a 65-actor world parks actor 0's database as, after a fiber
** wrote and committed some turns (*sz: its size; caller frees). */
static unsigned char *parked_image(sqlite3_int64 *sz, int *held) {
  sim s;
  rt_world *w = world_of(&s, 3, 65);
  assert_int_equal(rt_fiber_at(w, 0, &job, 0), 0);
  sim_run(&s, MS(1600), 0); /* three stashes, committed; no turn open */
  rt_db *d = &w->actors[0].store;
  assert_int_equal(d->txn_open, 0);
  *held = d->held;
  rt__db_park(w, d);
  assert_non_null(d->img);
  unsigned char *img = malloc((size_t)d->img_sz);
  assert_non_null(img);
  memcpy(img, d->img, (size_t)d->img_sz);
  *sz = d->img_sz;
  rt_world_free(w);
  sim_free(&s);
  return img;
}

static void test_park_same_image_held_or_not(void **st) {
  (void)st;
  job_init();
  sqlite3_int64 sz_on, sz_off;
  int held_on, held_off;
  unsigned char *on = parked_image(&sz_on, &held_on);
  rt_held_txn_set(0);
  unsigned char *off = parked_image(&sz_off, &held_off);
  rt_held_txn_set(1);
  assert_int_equal(held_on, 1);
  assert_int_equal(held_off, 0);
  assert_true(sz_on == sz_off);
  assert_memory_equal(on, off, (size_t)sz_on);
  free(on);
  free(off);
}

/* Serialized image of actor 0's database in w (caller sqlite3_frees). */
static unsigned char *image_of(rt_world *w, sqlite3_int64 *sz) {
  assert_int_equal(rt__db_open(w, 0), 0);
  unsigned char *img = sqlite3_serialize(w->actors[0].store.db, "main", sz, 0);
  assert_non_null(img);
  return img;
}

/* A held connection handed back to the pool is rolled back to the
** template's very pages: a world that takes it sees the same bytes as a
** world that opens a new connection. */
static void test_wipe_restores_the_template(void **st) {
  (void)st;
  job_init();
  sim s1, s2, s3;
  rt_world *w = world_of(&s1, 4, 1);
  assert_int_equal(rt_fiber_at(w, 0, &job, 0), 0);
  sim_run(&s1, MS(1200), 0);
  sqlite3 *dirty = w->actors[0].store.db;
  assert_int_equal(w->actors[0].store.held, 1);
  rt_world_free(w); /* the connection goes back to the pool, wiped */
  sim_free(&s1);
  rt_world *pooled = world_of(&s2, 5, 1), *fresh = world_of(&s3, 6, 1);
  sqlite3_int64 sz_p, sz_f;
  unsigned char *p = image_of(pooled, &sz_p), *f = image_of(fresh, &sz_f);
  assert_ptr_equal(pooled->actors[0].store.db, dirty);
  assert_ptr_not_equal(fresh->actors[0].store.db, dirty);
  assert_int_equal(sqlite3_changes(pooled->actors[0].store.db), 0);
  assert_true(sz_p == sz_f);
  assert_memory_equal(p, f, (size_t)sz_p);
  sqlite3_free(p);
  sqlite3_free(f);
  rt_world_free(pooled);
  rt_world_free(fresh);
  sim_free(&s2);
  sim_free(&s3);
}

/* An actor with a script (user SQL) gets no held transaction, and one its
** database already had ends when the script is set (no turn open). */
static void test_user_sql_never_held(void **st) {
  (void)st;
  static const char src[] = "return {}";
  sim s;
  rt_world *w = world_of(&s, 8, 2);
  assert_int_equal(rt__db_open(w, 0), 0);
  assert_int_equal(w->actors[0].store.held, 1);
  assert_int_equal(rt_actor_script(w, 0, "s.lua", src, sizeof src - 1, NULL), 0);
  assert_int_equal(w->actors[0].store.held, 0);
  assert_int_equal(sqlite3_get_autocommit(w->actors[0].store.db), 1);
  assert_int_equal(rt_actor_script(w, 1, "s.lua", src, sizeof src - 1, NULL), 0);
  assert_int_equal(rt__db_open(w, 1), 0);
  assert_int_equal(w->actors[1].store.held, 0);
  assert_int_equal(rt__txn_join(w, 1), 0);
  assert_int_equal(sqlite3_get_autocommit(w->actors[1].store.db), 0); /* a real BEGIN */
  rt__commit_now(w, 1);
  assert_int_equal(sqlite3_get_autocommit(w->actors[1].store.db), 1);
  rt_world_free(w);
  sim_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rollback_loses_the_turn_only),
      cmocka_unit_test(test_stacked_turns),
      cmocka_unit_test(test_crash_and_failed_commit_same_held_or_not),
      cmocka_unit_test(test_park_same_image_held_or_not),
      cmocka_unit_test(test_wipe_restores_the_template),
      cmocka_unit_test(test_user_sql_never_held),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
