/*
** test_chk.c: the invariant checkers (checks/chk.h) over crafted traces.
**
** Each invariant gets a trace where it fires (invariant, actor, time and a
** non-empty, sorted chain are asserted) and a clean trace of the same shape
** where it stays quiet. Plus the name tables of runtime/rt_names.c.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checks/chk.h"
#include "runtime/rt_events.h"
#include "sim/sim_trace.h"

#define S(x) ((int64_t)(x) * 1000000)  /* seconds -> µs */
#define MS(x) ((int64_t)(x) * 1000)   /* milliseconds -> µs */
#define MIN(x) (S(x) * 60)

/* ---- fixture ------------------------------------------------------------ */

typedef struct fx {
  sim_trace t;
  chk_set *c;
  chk_params p;
  int64_t txn;          /* next txn id */
  int64_t inc;          /* next incarnation */
} fx;

static int fx_setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  if (!f || sim_trace_init(&f->t) != 0) return -1;
  chk_params_default(&f->p);
  f->c = chk_new(&f->t, &f->p);
  if (!f->c) return -1;
  f->txn = 100;
  f->inc = 1;
  *state = f;
  return 0;
}

static int fx_teardown(void **state) {
  fx *f = *state;
  sim_trace_free(&f->t);
  chk_free(f->c);
  free(f);
  return 0;
}

/* Rebuilds the checker with other parameters (before any record). */
static void fx_params(fx *f, const chk_params *p) {
  f->p = *p;
  sim_trace_free(&f->t);
  chk_free(f->c);
  assert_int_equal(sim_trace_init(&f->t), 0);
  f->c = chk_new(&f->t, &f->p);
  assert_non_null(f->c);
}

/* Appends one record; returns its trace index. */
static uint64_t rec(fx *f, int64_t t_us, uint32_t kind, uint32_t actor,
                    int64_t a, int64_t b, int64_t c, const char *s) {
  sim_rec r;
  memset(&r, 0, sizeof r);
  r.t_us = t_us;
  r.kind = kind;
  r.actor = actor;
  r.a = a;
  r.b = b;
  r.c = c;
  r.s = sim_trace_intern(&f->t, s);
  sim_trace_append(&f->t, &r);
  return f->t.count - 1;
}

static uint64_t wake(fx *f, int64_t t, uint32_t actor) {
  return rec(f, t, RT_EV_ACTOR_WAKE, actor, f->inc++, RT_ENTRY_FETCH, 0, "Agent");
}

static uint64_t death(fx *f, int64_t t, uint32_t actor, int cause) {
  return rec(f, t, RT_EV_ACTOR_DEATH, actor, cause, 0, 0, NULL);
}

/* One committed transaction with a single write. */
static uint64_t write_commit(fx *f, int64_t t, uint32_t actor, int op,
                             int64_t key) {
  int64_t txn = f->txn++;
  rec(f, t, RT_EV_WRITE, actor, op, key, txn, NULL);
  return rec(f, t, RT_EV_TXN_COMMIT, actor, txn, 1, 0, NULL);
}

/* FIBER_START plus its committed insert. */
static void fiber_start(fx *f, int64_t t, uint32_t actor, int64_t id,
                        int64_t from) {
  rec(f, t, RT_EV_FIBER_START, actor, id, from, 0, "job");
  write_commit(f, t, actor, RT_W_FIBER_INSERT, id);
}

/* stash(value) in its own txn; commit = 1 commits, 0 rolls back, -1 leaves
** it pending. */
static void stash(fx *f, int64_t t, uint32_t actor, int64_t id, int64_t val,
                  int commit) {
  int64_t txn = f->txn++;
  rec(f, t, RT_EV_STASH, actor, id, val, txn, NULL);
  rec(f, t, RT_EV_WRITE, actor, RT_W_STASH, id, txn, NULL);
  if (commit > 0) rec(f, t, RT_EV_TXN_COMMIT, actor, txn, 1, 0, NULL);
  else if (commit == 0) rec(f, t, RT_EV_TXN_ROLLBACK, actor, txn, 1, 0, "crash");
}

static uint64_t recovered(fx *f, int64_t t, uint32_t actor, int64_t id,
                          int64_t snap, int action) {
  return rec(f, t, RT_EV_FIBER_RECOVERED, actor, id, snap, action, "job");
}

/* Asserts exactly n violations; returns the first (or NULL). */
static const chk_violation *expect(fx *f, size_t n) {
  if (getenv("CHK_PRINT"))  /* CHK_PRINT=1 shows the messages */
    for (size_t i = 0; i < chk_violation_count(f->c); i++) {
      const chk_violation *v = chk_violation_at(f->c, i);
      print_message("  %s actor %u t=%lld: %s [%d]\n", chk_invariant_name(v->inv),
                    v->actor, (long long)v->t_us, v->msg, v->n_chain);
    }
  assert_int_equal(chk_violation_count(f->c), n);
  return n ? chk_violation_at(f->c, 0) : NULL;
}

static void assert_violation(const chk_violation *v, chk_invariant inv,
                             uint32_t actor, int64_t t_us) {
  assert_non_null(v);
  assert_string_equal(chk_invariant_name(v->inv), chk_invariant_name(inv));
  assert_int_equal(v->actor, actor);
  assert_int_equal(v->t_us, t_us);
  assert_true(v->n_chain > 0);
  assert_true(v->n_chain <= CHK_MAX_CHAIN);
  for (int i = 1; i < v->n_chain; i++) assert_true(v->chain[i - 1] < v->chain[i]);
  assert_true(strlen(v->msg) > 0);
}

static int chain_has(const chk_violation *v, uint64_t idx) {
  for (int i = 0; i < v->n_chain; i++)
    if (v->chain[i] == idx) return 1;
  return 0;
}

/* ---- names -------------------------------------------------------------- */

static void test_rt_names(void **state) {
  (void)state;
  assert_string_equal(rt_event_name(RT_EV_FIBER_START), "fiber_start");
  assert_string_equal(rt_event_name(RT_EV_GATE_TIMEOUT), "gate_timeout");
  assert_string_equal(rt_event_name(RT_EV_ACTOR_WAKE), "actor_wake");
  assert_string_equal(rt_event_name(RT_EV_LEGACY_FIBER), "legacy_fiber");
  assert_string_equal(rt_event_name(RT_EV_KIND_COUNT), "?");
  assert_string_equal(rt_event_name(UINT32_MAX), "?");
  for (uint32_t k = 0; k < RT_EV_KIND_COUNT; k++)
    assert_string_not_equal(rt_event_name(k), "?");
  assert_string_equal(rt_death_name(RT_DEATH_EVICT), "evict");
  assert_string_equal(rt_death_name(RT_DEATH_GATE_RESET), "gate_reset");
  assert_string_equal(rt_death_name(RT_DEATH_IDLE), "idle");
  assert_string_equal(rt_death_name(0), "?");
  assert_string_equal(rt_death_name(8), "?");
  assert_string_equal(rt_death_name(-1), "?");
  assert_string_equal(rt_entry_name(RT_ENTRY_SETNAME), "setName");
  assert_string_equal(rt_entry_name(RT_ENTRY_FACET_INIT), "facet_init");
  assert_string_equal(rt_entry_name(7), "?");
  assert_string_equal(rt_action_name(RT_RECOVER_DROP), "drop");
  assert_string_equal(rt_action_name(5), "?");
  assert_string_equal(rt_toolrun_status_name(RT_TR_INTERRUPTED), "interrupted");
  assert_string_equal(rt_toolrun_status_name(RT_TR_STARTING), "starting");
  assert_string_equal(rt_toolrun_status_name(0), "?");
  assert_string_equal(rt_write_op_name(RT_W_TOOLRUN_STATUS), "toolrun_status");
  assert_string_equal(rt_write_op_name(RT_W_OTHER), "other");
  assert_string_equal(rt_write_op_name(RT_W_CHECKPOINT), "checkpoint"); /* executor */
  assert_string_equal(rt_write_op_name(RT_W_THREAD), "thread");         /* thread store */
  assert_string_equal(rt_write_op_name(RT_W_THREAD + 1), "?");
}

static void test_chk_names(void **state) {
  (void)state;
  for (int i = 0; i < CHK_INVARIANT_COUNT; i++)
    assert_int_equal(chk_invariant_parse(chk_invariant_name((chk_invariant)i)), i);
  assert_string_equal(chk_invariant_name(CHK_NO_WEDGE), "no_wedge");
  assert_string_equal(chk_invariant_name(CHK_TOOLRUN_TERMINAL_IMMUTABLE),
                      "toolrun_terminal_immutable");
  assert_int_equal(chk_invariant_parse("nope"), -1);
  assert_int_equal(chk_invariant_parse(NULL), -1);
  chk_params p;
  chk_params_default(&p);
  assert_int_equal(p.wedge_k, 3);
  assert_int_equal(p.enabled_mask, (1u << CHK_INVARIANT_COUNT) - 1);
  assert_int_equal(p.serve_bound_us, MIN(5));
  assert_int_equal(p.keepalive_idle_us, MIN(10));
}

/* ---- stash_durable ------------------------------------------------------ */

static void test_stash_durable_fires(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  fiber_start(f, S(1), 0, 7, 0);
  stash(f, S(2), 0, 7, 3, 1);
  stash(f, S(3), 0, 7, 4, 1);
  uint64_t d = death(f, S(4), 0, RT_DEATH_CRASH);
  wake(f, S(95), 0);
  uint64_t r = recovered(f, S(95), 0, 7, 3, RT_RECOVER_RESUME);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_STASH_DURABLE, 0, S(95));
  assert_non_null(strstr(v->msg, "recovery of fiber 7"));
  assert_non_null(strstr(v->msg, "saw snapshot 3 but the last committed stash was 4"));
  assert_non_null(strstr(v->msg, "t=95.000s"));
  assert_true(chain_has(v, d));
  assert_true(chain_has(v, r));
  assert_int_equal(v->subject, 7);
}

static void test_stash_durable_rolled_back_not_counted(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  fiber_start(f, S(1), 0, 7, 0);
  stash(f, S(2), 0, 7, 3, 1);
  stash(f, S(3), 0, 7, 4, 0);   /* rolled back */
  stash(f, S(3), 0, 7, 5, -1);  /* lost in the commit window */
  death(f, S(4), 0, RT_DEATH_CRASH);
  wake(f, S(95), 0);
  recovered(f, S(95), 0, 7, 3, RT_RECOVER_RESUME);
  expect(f, 0);
}

static void test_stash_durable_uncommitted_seen(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  fiber_start(f, S(1), 0, 7, 0);
  stash(f, S(2), 0, 7, 3, 1);
  stash(f, S(3), 0, 7, 4, 0);   /* rolled back, yet recovery sees it */
  death(f, S(4), 0, RT_DEATH_CRASH);
  wake(f, S(10), 0);
  recovered(f, S(10), 0, 7, 4, RT_RECOVER_RESUME);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_STASH_DURABLE, 0, S(10));
  assert_non_null(strstr(v->msg, "saw snapshot 4 but the last committed stash was 3"));
}

static void test_stash_durable_none_committed(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  fiber_start(f, S(1), 0, 7, 0);
  death(f, S(4), 0, RT_DEATH_CRASH);
  wake(f, S(10), 0);
  recovered(f, S(10), 0, 7, -1, RT_RECOVER_RESTART);
  expect(f, 0);
  /* a hook that threw is a hand-over too: same check */
  fiber_start(f, S(11), 0, 8, 0);
  death(f, S(12), 0, RT_DEATH_EVICT);
  wake(f, S(13), 0);
  rec(f, S(13), RT_EV_FIBER_HOOK_THREW, 0, 8, 2, 0, "job");
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_STASH_DURABLE, 0, S(13));
  assert_non_null(strstr(v->msg, "no stash of it ever committed"));
}

/* ---- no_double_recovery ------------------------------------------------- */

static void test_double_recovery_fires(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  fiber_start(f, S(1), 2, 7, 0);
  death(f, S(2), 2, RT_DEATH_EVICT);
  wake(f, S(30), 2);
  uint64_t h1 = recovered(f, S(30), 2, 7, -1, RT_RECOVER_RESTART);
  uint64_t h2 = recovered(f, S(31), 2, 7, -1, RT_RECOVER_RESTART);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_NO_DOUBLE_RECOVERY, 2, S(31));
  assert_int_equal(v->n_chain, 2);
  assert_int_equal(v->chain[0], h1);
  assert_int_equal(v->chain[1], h2);
  assert_non_null(strstr(v->msg, "t=30.000s"));
  assert_non_null(strstr(v->msg, "t=31.000s"));
  /* a third hand-over is not reported again */
  recovered(f, S(32), 2, 7, -1, RT_RECOVER_RESTART);
  expect(f, 1);
}

/* A hand-over whose row delete rolls back with its turn (storage failure,
** death in the commit window) is undone: the retry is not a second one;
** once the delete commits, a further hand-over is. */
static void test_double_recovery_rolled_back_retry(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  fiber_start(f, S(1), 2, 7, 0);
  death(f, S(2), 2, RT_DEATH_EVICT);
  wake(f, S(30), 2);
  recovered(f, S(30), 2, 7, -1, RT_RECOVER_RESTART);
  int64_t txn = f->txn++;
  rec(f, S(30), RT_EV_WRITE, 2, RT_W_FIBER_DELETE, 7, txn, NULL);
  rec(f, S(30), RT_EV_TXN_ROLLBACK, 2, txn, 1, 0, "storage_fail");
  death(f, S(30), 2, RT_DEATH_CRASH);
  wake(f, S(31), 2);
  recovered(f, S(31), 2, 7, -1, RT_RECOVER_RESTART);
  expect(f, 0);
  /* a rollback of another fiber's write undoes nothing: a third hand-over
  ** is a double one */
  rec(f, S(31), RT_EV_WRITE, 2, RT_W_FIBER_DELETE, 9, f->txn, NULL);
  rec(f, S(31), RT_EV_TXN_ROLLBACK, 2, f->txn++, 1, 0, "storage_fail");
  recovered(f, S(32), 2, 7, -1, RT_RECOVER_RESTART);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_NO_DOUBLE_RECOVERY, 2, S(32));
}

static void test_double_recovery_clean(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  fiber_start(f, S(1), 2, 7, 0);
  fiber_start(f, S(1), 2, 8, 0);
  death(f, S(2), 2, RT_DEATH_EVICT);
  wake(f, S(30), 2);
  recovered(f, S(30), 2, 7, -1, RT_RECOVER_RESTART);
  recovered(f, S(31), 2, 8, -1, RT_RECOVER_RESTART);
  rec(f, S(31), RT_EV_RECOVERY_REENTRY, 2, 2, 0, 0, NULL);
  expect(f, 0);
}

/* ---- recovery_finishes: fibers ------------------------------------------ */

static void test_recovery_orphan_never_recovered(void **state) {
  fx *f = *state;
  wake(f, S(1), 1);
  fiber_start(f, S(1), 1, 7, 0);
  uint64_t d = death(f, S(10), 1, RT_DEATH_SIGKILL);
  uint64_t w = wake(f, S(100), 1);
  chk_finish(f->c, S(100) + MIN(5));
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_RECOVERY_FINISHES, 1, S(100) + MIN(5));
  assert_true(chain_has(v, d));
  assert_true(chain_has(v, w));
  assert_non_null(strstr(v->msg, "orphan fiber 7"));
  assert_non_null(strstr(v->msg, "t=100.000s"));
  assert_int_equal(v->at_index, UINT64_MAX);
}

static void test_recovery_orphan_drop_counts(void **state) {
  fx *f = *state;
  wake(f, S(1), 1);
  fiber_start(f, S(1), 1, 7, 0);
  death(f, S(10), 1, RT_DEATH_SIGKILL);
  wake(f, S(100), 1);
  recovered(f, S(101), 1, 7, -1, RT_RECOVER_DROP);
  write_commit(f, S(101), 1, RT_W_FIBER_DELETE, 7);
  chk_finish(f->c, S(100) + MIN(50));
  expect(f, 0);
}

static void test_recovery_orphan_too_close_to_end(void **state) {
  fx *f = *state;
  wake(f, S(1), 1);
  fiber_start(f, S(1), 1, 7, 0);
  death(f, S(10), 1, RT_DEATH_SIGKILL);
  wake(f, S(100), 1);
  chk_finish(f->c, S(100) + MIN(5) - 1);
  expect(f, 0);
}

static void test_recovery_finished_fiber_not_orphan(void **state) {
  fx *f = *state;
  wake(f, S(1), 1);
  fiber_start(f, S(1), 1, 7, 0);
  rec(f, S(5), RT_EV_FIBER_DONE, 1, 7, 1, 0, "job");
  fiber_start(f, S(6), 1, 8, 0);
  write_commit(f, S(7), 1, RT_W_FIBER_DELETE, 8);
  /* uncommitted insert: no row, no orphan */
  rec(f, S(8), RT_EV_FIBER_START, 1, 9, 0, 0, "job");
  rec(f, S(8), RT_EV_WRITE, 1, RT_W_FIBER_INSERT, 9, 999, NULL);
  death(f, S(10), 1, RT_DEATH_CRASH);
  wake(f, S(100), 1);
  chk_finish(f->c, S(10000));
  expect(f, 0);
}

static void test_recovery_hook_threw_then_deleted(void **state) {
  fx *f = *state;
  wake(f, S(1), 3);
  fiber_start(f, S(1), 3, 7, 0);
  death(f, S(10), 3, RT_DEATH_CRASH);
  wake(f, S(20), 3);
  uint64_t th = rec(f, S(20), RT_EV_FIBER_HOOK_THREW, 3, 7, -1, 0, "job");
  uint64_t cm = write_commit(f, S(21), 3, RT_W_FIBER_DELETE, 7);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_RECOVERY_FINISHES, 3, S(21));
  assert_true(chain_has(v, th));
  assert_true(chain_has(v, cm));
  assert_non_null(strstr(v->msg, "work lost"));
  assert_non_null(strstr(v->msg, "t=20.000s"));
  chk_finish(f->c, S(10000));
  expect(f, 1);  /* not reported twice */
}

static void test_recovery_hook_returned_then_deleted(void **state) {
  fx *f = *state;
  wake(f, S(1), 3);
  fiber_start(f, S(1), 3, 7, 0);
  death(f, S(10), 3, RT_DEATH_CRASH);
  wake(f, S(20), 3);
  recovered(f, S(20), 3, 7, -1, RT_RECOVER_RESTART);
  write_commit(f, S(21), 3, RT_W_FIBER_DELETE, 7);
  fiber_start(f, S(21), 3, 8, 7);
  rec(f, S(30), RT_EV_FIBER_DONE, 3, 8, 1, 0, "job");
  write_commit(f, S(30), 3, RT_W_FIBER_DELETE, 8);
  chk_finish(f->c, S(10000));
  expect(f, 0);
}

static void test_recovery_window_resets_on_death(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  fiber_start(f, S(1), 0, 7, 0);
  death(f, S(10), 0, RT_DEATH_CRASH);
  wake(f, S(20), 0);
  rec(f, S(60), RT_EV_FAULT, RT_NO_ACTOR, 0, 0, 0, "crash");
  death(f, S(60), 0, RT_DEATH_CRASH);   /* a fault storm keeps killing it */
  wake(f, S(900), 0);
  recovered(f, S(910), 0, 7, -1, RT_RECOVER_RESUME);
  chk_finish(f->c, S(5000));
  expect(f, 0);
}

static void test_recovery_late_within_one_life(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  fiber_start(f, S(1), 0, 7, 0);
  death(f, S(10), 0, RT_DEATH_CRASH);
  wake(f, S(20), 0);
  uint64_t r = recovered(f, S(20) + MIN(6), 0, 7, -1, RT_RECOVER_RESUME);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_RECOVERY_FINISHES, 0, S(20) + MIN(5));
  assert_true(chain_has(v, r));
  assert_non_null(strstr(v->msg, "recovered only at t=380.000s"));
}

static void test_recovery_woke_then_idle_forever(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  fiber_start(f, S(1), 0, 7, 0);
  death(f, S(10), 0, RT_DEATH_CRASH);
  uint64_t w = wake(f, S(20), 0);      /* an RPC wake: nothing recovers */
  death(f, S(120), 0, RT_DEATH_IDLE);  /* and nothing wakes it again */
  chk_finish(f->c, S(20) + MIN(5));
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_RECOVERY_FINISHES, 0, S(20) + MIN(5));
  assert_true(chain_has(v, w));
}

/* ---- recovery_finishes: tool runs --------------------------------------- */

/* Inserts run `id` on parent 0 (committed), then status running. */
static void toolrun_running(fx *f, int64_t t, int64_t id) {
  int64_t txn = f->txn++;
  rec(f, t, RT_EV_TOOLRUN_INSERT, 0, id, 1, 0, "researcher");
  rec(f, t, RT_EV_WRITE, 0, RT_W_TOOLRUN_INSERT, id, txn, NULL);
  rec(f, t, RT_EV_TXN_COMMIT, 0, txn, 1, 0, NULL);
  txn = f->txn++;
  rec(f, t, RT_EV_TOOLRUN_STATUS, 0, id, RT_TR_RUNNING, RT_TR_STARTING, NULL);
  rec(f, t, RT_EV_WRITE, 0, RT_W_TOOLRUN_STATUS, id, txn, NULL);
  rec(f, t, RT_EV_TXN_COMMIT, 0, txn, 1, 0, NULL);
}

static uint64_t toolrun_set(fx *f, int64_t t, int64_t id, int to, int from,
                            int commit) {
  int64_t txn = f->txn++;
  rec(f, t, RT_EV_TOOLRUN_STATUS, 0, id, to, from, NULL);
  rec(f, t, RT_EV_WRITE, 0, RT_W_TOOLRUN_STATUS, id, txn, NULL);
  if (commit) return rec(f, t, RT_EV_TXN_COMMIT, 0, txn, 1, 0, NULL);
  return rec(f, t, RT_EV_TXN_ROLLBACK, 0, txn, 1, 0, "crash");
}

static void test_toolrun_stale_never_terminal(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  toolrun_running(f, S(2), 42);
  toolrun_set(f, S(3), 42, RT_TR_COMPLETED, RT_TR_RUNNING, 0); /* lost */
  uint64_t d = death(f, S(10), 0, RT_DEATH_RESTART);
  wake(f, S(40), 0);
  chk_finish(f->c, S(1000));
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_RECOVERY_FINISHES, 0, S(40) + MIN(5));
  assert_true(chain_has(v, d));
  assert_non_null(strstr(v->msg, "tool run 42 (status running)"));
  assert_int_equal(v->subject, 42);
}

static void test_toolrun_stale_made_terminal(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  toolrun_running(f, S(2), 42);
  toolrun_running(f, S(2), 43);
  toolrun_set(f, S(5), 43, RT_TR_COMPLETED, RT_TR_RUNNING, 1); /* done before */
  death(f, S(10), 0, RT_DEATH_RESTART);
  wake(f, S(40), 0);
  toolrun_set(f, S(43), 42, RT_TR_INTERRUPTED, RT_TR_RUNNING, 1);
  chk_finish(f->c, S(10000));
  expect(f, 0);
}

static void test_toolrun_terminal_too_late(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  toolrun_running(f, S(2), 42);
  death(f, S(10), 0, RT_DEATH_RESTART);
  wake(f, S(40), 0);
  uint64_t c = toolrun_set(f, S(40) + MIN(7), 42, RT_TR_INTERRUPTED,
                           RT_TR_RUNNING, 1);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_RECOVERY_FINISHES, 0, S(40) + MIN(5));
  assert_true(chain_has(v, c));
  assert_non_null(strstr(v->msg, "terminal (interrupted)"));
  chk_finish(f->c, S(10000));
  expect(f, 1);
}

/* The runtime writes first and announces after; in immediate commit mode
** the commit falls between the write and the status record. */
static void test_toolrun_write_then_status(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  int64_t txn = f->txn++;
  rec(f, S(2), RT_EV_WRITE, 0, RT_W_TOOLRUN_INSERT, 42, txn, NULL);
  rec(f, S(2), RT_EV_TOOLRUN_INSERT, 0, 42, 1, 0, "researcher");
  rec(f, S(2), RT_EV_TXN_COMMIT, 0, txn, 1, 0, NULL);
  txn = f->txn++;
  rec(f, S(3), RT_EV_WRITE, 0, RT_W_TOOLRUN_STATUS, 42, txn, NULL);
  rec(f, S(3), RT_EV_TXN_COMMIT, 0, txn, 1, 0, NULL);
  rec(f, S(3), RT_EV_TOOLRUN_STATUS, 0, 42, RT_TR_RUNNING, RT_TR_STARTING, NULL);
  /* a completion whose turn is lost */
  txn = f->txn++;
  rec(f, S(4), RT_EV_WRITE, 0, RT_W_TOOLRUN_STATUS, 42, txn, NULL);
  rec(f, S(4), RT_EV_TOOLRUN_STATUS, 0, 42, RT_TR_COMPLETED, RT_TR_RUNNING, NULL);
  rec(f, S(5), RT_EV_TXN_ROLLBACK, 0, txn, 1, 0, "crash");
  death(f, S(5), 0, RT_DEATH_CRASH);
  wake(f, S(10), 0);
  /* recovery finalizes it in immediate mode: write, commit, record */
  txn = f->txn++;
  rec(f, S(11), RT_EV_WRITE, 0, RT_W_TOOLRUN_STATUS, 42, txn, NULL);
  rec(f, S(11), RT_EV_TXN_COMMIT, 0, txn, 1, 0, NULL);
  rec(f, S(11), RT_EV_TOOLRUN_STATUS, 0, 42, RT_TR_INTERRUPTED, RT_TR_RUNNING, NULL);
  chk_finish(f->c, S(10000));
  expect(f, 0);
}

static void test_toolrun_rolled_back_terminal_not_counted(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  toolrun_running(f, S(2), 42);
  death(f, S(5), 0, RT_DEATH_CRASH);
  wake(f, S(10), 0);
  int64_t txn = f->txn++;
  rec(f, S(11), RT_EV_WRITE, 0, RT_W_TOOLRUN_STATUS, 42, txn, NULL);
  rec(f, S(11), RT_EV_TOOLRUN_STATUS, 0, 42, RT_TR_INTERRUPTED, RT_TR_RUNNING, NULL);
  rec(f, S(12), RT_EV_TXN_ROLLBACK, 0, txn, 1, 0, "storage_fail");
  chk_finish(f->c, S(10000));
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_RECOVERY_FINISHES, 0, S(10) + MIN(5));
  assert_non_null(strstr(v->msg, "status running"));
}

/* ---- no_wedge ----------------------------------------------------------- */

/* One wake whose startup dies at the gate ceiling. */
static uint64_t gate_reset(fx *f, int64_t t, uint32_t actor) {
  wake(f, t, actor);
  rec(f, t, RT_EV_STARTUP_BEGIN, actor, RT_ENTRY_FETCH, 0, 0, NULL);
  uint64_t g = rec(f, t + S(30), RT_EV_GATE_TIMEOUT, actor, S(30), S(30), 0,
                   RT_MSG_GATE_RESET);
  rec(f, t + S(30), RT_EV_STARTUP_FAIL, actor, S(30), 0, 0, "reset");
  death(f, t + S(30), actor, RT_DEATH_GATE_RESET);
  return g;
}

static void test_wedge_k_minus_1(void **state) {
  fx *f = *state;
  gate_reset(f, S(0), 4);
  gate_reset(f, S(60), 4);
  expect(f, 0);
}

static void test_wedge_k_fires(void **state) {
  fx *f = *state;
  uint64_t g1 = gate_reset(f, S(0), 4);
  uint64_t g2 = gate_reset(f, S(60), 4);
  uint64_t g3 = gate_reset(f, S(120), 4);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_NO_WEDGE, 4, S(150));
  assert_int_equal(v->n_chain, 3);
  assert_int_equal(v->chain[0], g1);
  assert_int_equal(v->chain[1], g2);
  assert_int_equal(v->chain[2], g3);
  assert_non_null(strstr(v->msg, "3 consecutive"));
  assert_non_null(strstr(v->msg, "t=30.000s"));
  gate_reset(f, S(180), 4);  /* once per streak */
  expect(f, 1);
}

static void test_wedge_progress_resets(void **state) {
  fx *f = *state;
  gate_reset(f, S(0), 4);
  gate_reset(f, S(60), 4);
  wake(f, S(100), 4);
  write_commit(f, S(101), 4, RT_W_OTHER, 42);  /* durable progress */
  death(f, S(102), 4, RT_DEATH_EVICT);
  gate_reset(f, S(120), 4);
  gate_reset(f, S(180), 4);
  expect(f, 0);
  /* a startup that succeeds resets too */
  wake(f, S(300), 4);
  rec(f, S(300), RT_EV_STARTUP_BEGIN, 4, RT_ENTRY_FETCH, 0, 0, NULL);
  rec(f, S(301), RT_EV_STARTUP_OK, 4, S(1), 0, 0, NULL);
  death(f, S(302), 4, RT_DEATH_EVICT);
  gate_reset(f, S(400), 4);
  gate_reset(f, S(460), 4);
  expect(f, 0);
  /* an empty commit is not progress */
  wake(f, S(500), 4);
  rec(f, S(500), RT_EV_TXN_COMMIT, 4, f->txn++, 0, 0, NULL);
  death(f, S(501), 4, RT_DEATH_EVICT);
  gate_reset(f, S(520), 4);
  assert_violation(expect(f, 1), CHK_NO_WEDGE, 4, S(550));
}

static void test_wedge_other_actor_independent(void **state) {
  fx *f = *state;
  gate_reset(f, S(0), 4);
  gate_reset(f, S(60), 5);
  gate_reset(f, S(120), 4);
  expect(f, 0);
}

static void test_wedge_serve_liveness(void **state) {
  fx *f = *state;
  rec(f, S(10), RT_EV_FAULT, RT_NO_ACTOR, 0, 0, 0, "evict");
  uint64_t ar = rec(f, S(20), RT_EV_REQUEST_ARRIVE, 6, 1, RT_ENTRY_FETCH, 0, NULL);
  rec(f, S(20), RT_EV_REQUEST_ARRIVE, 7, 2, RT_ENTRY_FETCH, 0, NULL);
  rec(f, S(21), RT_EV_REQUEST_OK, 7, 2, S(1), 0, NULL);
  rec(f, S(25), RT_EV_REQUEST_FAIL, 6, 1, S(5), 0, "wedged");
  chk_finish(f->c, S(20) + MIN(5));
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_NO_WEDGE, 6, S(20) + MIN(5));
  assert_true(chain_has(v, ar));
  assert_non_null(strstr(v->msg, "t=10.000s"));
}

static void test_wedge_serve_before_last_fault_ignored(void **state) {
  fx *f = *state;
  rec(f, S(20), RT_EV_REQUEST_ARRIVE, 6, 1, RT_ENTRY_FETCH, 0, NULL);
  rec(f, S(30), RT_EV_FAULT, RT_NO_ACTOR, 0, 0, 0, "evict");
  rec(f, S(40), RT_EV_REQUEST_ARRIVE, 6, 2, RT_ENTRY_FETCH, 0, NULL);
  rec(f, S(41), RT_EV_REQUEST_OK, 6, 2, S(1), 0, NULL);
  rec(f, S(50), RT_EV_REQUEST_ARRIVE, 8, 3, RT_ENTRY_FETCH, 0, NULL);
  chk_finish(f->c, S(50) + MIN(5) - 1);  /* actor 8: too close to the end */
  expect(f, 0);
}

/* ---- startup_snapshot --------------------------------------------------- */

/* A deferred startup on actor 0 that snapshots runs 1 and 2. */
static void deferred_startup(fx *f, int64_t t) {
  wake(f, t, 0);
  rec(f, t, RT_EV_STARTUP_BEGIN, 0, RT_ENTRY_FETCH, 0, 0, NULL);
  rec(f, t, RT_EV_TOOLRUN_SNAPSHOT, 0, 1, 0, 0, NULL);
  rec(f, t, RT_EV_TOOLRUN_SNAPSHOT, 0, 2, 0, 0, NULL);
  rec(f, t, RT_EV_ONSTART_BEGIN, 0, 0, 0, 0, NULL);
  rec(f, t + 1, RT_EV_STARTUP_OK, 0, 1, 0, 0, NULL);
  rec(f, t + 2, RT_EV_TOOLRUN_RECOVERY, 0, 1, 2, 0, NULL);
}

static void test_snapshot_outside_fires(void **state) {
  fx *f = *state;
  deferred_startup(f, S(50));
  toolrun_set(f, S(51), 1, RT_TR_INTERRUPTED, RT_TR_RUNNING, 1);
  uint64_t bad = toolrun_set(f, S(52), 3, RT_TR_INTERRUPTED, RT_TR_RUNNING, 1);
  rec(f, S(53), RT_EV_TOOLRUN_RECOVERY, 0, 0, 2, 0, NULL);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_STARTUP_SNAPSHOT, 0, S(52));
  assert_true(chain_has(v, bad - 2));  /* the status record */
  assert_non_null(strstr(v->msg, "tool run 3"));
  assert_non_null(strstr(v->msg, "not in the startup snapshot"));
}

static void test_snapshot_inside_clean(void **state) {
  fx *f = *state;
  deferred_startup(f, S(50));
  toolrun_set(f, S(51), 1, RT_TR_INTERRUPTED, RT_TR_RUNNING, 1);
  toolrun_set(f, S(52), 2, RT_TR_INTERRUPTED, RT_TR_STARTING, 1);
  rec(f, S(53), RT_EV_TOOLRUN_RECOVERY, 0, 0, 2, 0, NULL);
  /* after the recovery ended, interrupting run 3 is not its doing */
  toolrun_set(f, S(54), 3, RT_TR_INTERRUPTED, RT_TR_RUNNING, 1);
  expect(f, 0);
}

static void test_snapshot_inserted_after_onstart(void **state) {
  fx *f = *state;
  wake(f, S(50), 0);
  rec(f, S(50), RT_EV_STARTUP_BEGIN, 0, RT_ENTRY_FETCH, 0, 0, NULL);
  rec(f, S(50), RT_EV_TOOLRUN_SNAPSHOT, 0, 5, 0, 0, NULL);
  rec(f, S(50), RT_EV_ONSTART_BEGIN, 0, 0, 0, 0, NULL);
  rec(f, S(50) + 1, RT_EV_TOOLRUN_INSERT, 0, 5, 1, 0, "researcher");
  rec(f, S(51), RT_EV_STARTUP_OK, 0, 1, 0, 0, NULL);
  rec(f, S(51), RT_EV_TOOLRUN_RECOVERY, 0, 1, 1, 0, NULL);
  toolrun_set(f, S(52), 5, RT_TR_INTERRUPTED, RT_TR_STARTING, 1);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_STARTUP_SNAPSHOT, 0, S(52));
  assert_non_null(strstr(v->msg, "after onStart began"));
}

static void test_snapshot_gated_unchecked(void **state) {
  fx *f = *state;
  wake(f, S(50), 0);
  rec(f, S(50), RT_EV_STARTUP_BEGIN, 0, RT_ENTRY_FETCH, 0, 0, NULL);
  rec(f, S(50), RT_EV_TOOLRUN_RECOVERY, 0, 1, 2, 0, NULL);  /* no snapshot */
  toolrun_set(f, S(51), 8, RT_TR_INTERRUPTED, RT_TR_RUNNING, 1);
  rec(f, S(52), RT_EV_TOOLRUN_RECOVERY, 0, 0, 2, 0, NULL);
  expect(f, 0);
  /* an empty snapshot is a snapshot: nothing may be interrupted */
  death(f, S(60), 0, RT_DEATH_EVICT);
  wake(f, S(70), 0);
  rec(f, S(70), RT_EV_STARTUP_BEGIN, 0, RT_ENTRY_FETCH, 0, 0, NULL);
  rec(f, S(71), RT_EV_TOOLRUN_RECOVERY, 0, 1, 0, 0, NULL);
  toolrun_set(f, S(72), 9, RT_TR_INTERRUPTED, RT_TR_RUNNING, 1);
  assert_violation(expect(f, 1), CHK_STARTUP_SNAPSHOT, 0, S(72));
}

/* ---- keepalive_holds ---------------------------------------------------- */

static void test_keepalive_idle_with_ref(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  uint64_t k = rec(f, S(2), RT_EV_KEEPALIVE, 2, 1, 1, 0, NULL);
  uint64_t d = death(f, S(120), 2, RT_DEATH_IDLE);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_KEEPALIVE_HOLDS, 2, S(120));
  assert_true(chain_has(v, k));
  assert_true(chain_has(v, d));
  assert_non_null(strstr(v->msg, "t=2.000s"));
}

static void test_keepalive_idle_without_ref(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  rec(f, S(2), RT_EV_KEEPALIVE, 2, 1, 1, 0, NULL);
  rec(f, S(3), RT_EV_KEEPALIVE, 2, 0, -1, 0, NULL);
  death(f, S(120), 2, RT_DEATH_IDLE);
  /* refs die with the incarnation */
  wake(f, S(130), 2);
  rec(f, S(131), RT_EV_KEEPALIVE, 2, 1, 1, 0, NULL);
  death(f, S(140), 2, RT_DEATH_EVICT);
  wake(f, S(150), 2);
  death(f, S(300), 2, RT_DEATH_IDLE);
  expect(f, 0);
}

/* Alarm fires every 30 s from t0 for n fires on actor 2. */
static uint64_t fires(fx *f, int64_t t0, int n) {
  uint64_t last = 0;
  for (int i = 0; i < n; i++) {
    last = rec(f, t0 + S(30) * i, RT_EV_ALARM_FIRE, 2, t0 + S(30) * i, 0, 0, NULL);
    rec(f, t0 + S(30) * i, RT_EV_ALARM_DONE, 2, 1, 0, 0, NULL);
  }
  return last;
}

static void test_keepalive_alarm_forever(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  rec(f, S(2), RT_EV_KEEPALIVE, 2, 1, 1, 0, NULL);
  uint64_t rel = rec(f, S(5), RT_EV_KEEPALIVE, 2, 0, -1, 0, NULL);
  fires(f, S(30), 20);  /* 9.5 minutes of fires: not yet */
  expect(f, 0);
  uint64_t last = fires(f, S(630), 2);  /* more than 10 min after the first */
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_KEEPALIVE_HOLDS, 2, S(660));
  assert_true(chain_has(v, rel));
  assert_true(chain_has(v, last));
  assert_non_null(strstr(v->msg, "alarm kept firing into actor 2 with no keepAlive refs for 10m"));
}

static void test_keepalive_alarm_reasons_to_fire(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  rec(f, S(2), RT_EV_KEEPALIVE, 2, 1, 1, 0, NULL);
  rec(f, S(5), RT_EV_KEEPALIVE, 2, 0, -1, 0, NULL);
  fires(f, S(30), 1);  /* one stale heartbeat fire: fine */
  /* a user schedule fires every 5 minutes for an hour */
  for (int i = 0; i < 12; i++) {
    fires(f, S(300) * (i + 1), 1);
    rec(f, S(300) * (i + 1), RT_EV_SCHEDULE_RUN, 2, 1, 0, 0, "sendReport");
  }
  /* a heartbeat while refs are held is what keepAlive is for */
  rec(f, S(4000), RT_EV_KEEPALIVE, 2, 1, 1, 0, NULL);
  fires(f, S(4000), 100);
  rec(f, S(7000), RT_EV_KEEPALIVE, 2, 0, -1, 0, NULL);
  /* a running fiber keeps it busy too */
  fiber_start(f, S(7001), 2, 70, 0);
  fires(f, S(7010), 30);
  expect(f, 0);
  /* internal schedules do not count as user work */
  rec(f, S(8000), RT_EV_FIBER_DONE, 2, 70, 1, 0, "job");
  for (int i = 0; i < 25; i++) {
    fires(f, S(8010) + S(30) * i, 1);
    rec(f, S(8010) + S(30) * i, RT_EV_SCHEDULE_RUN, 2, 2, 0, 0, "_cf_fiberHeartbeat");
  }
  assert_violation(expect(f, 1), CHK_KEEPALIVE_HOLDS, 2, S(8010) + S(30) * 21);
}

/* #1703/#1704: the alarm handler itself re-takes a short lease on every
** wake. Leases taken inside an alarm invocation do not reset the streak;
** the same lease taken by a request does. */
static void lease_fires(fx *f, int64_t t0, int n) {
  for (int i = 0; i < n; i++) {
    int64_t t = t0 + S(30) * i;
    rec(f, t, RT_EV_ALARM_FIRE, 2, t, 0, 0, NULL);
    rec(f, t, RT_EV_KEEPALIVE, 2, 1, 1, 0, NULL);
    rec(f, t, RT_EV_ALARM_DONE, 2, 1, 0, 0, NULL);
    rec(f, t + MS(200), RT_EV_KEEPALIVE, 2, 0, -1, 0, NULL);
  }
}

static void test_keepalive_lease_retaken_in_alarm(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  lease_fires(f, S(30), 25);
  assert_violation(expect(f, 1), CHK_KEEPALIVE_HOLDS, 2, S(30) + S(30) * 21);
}

static void test_keepalive_lease_from_requests(void **state) {
  fx *f = *state;
  wake(f, S(1), 2);
  for (int i = 0; i < 25; i++) { /* a client keeps using it: not idle */
    int64_t t = S(30) + S(30) * i;
    rec(f, t, RT_EV_ALARM_FIRE, 2, t, 0, 0, NULL);
    rec(f, t, RT_EV_ALARM_DONE, 2, 1, 0, 0, NULL);
    rec(f, t + S(1), RT_EV_KEEPALIVE, 2, 1, 1, 0, NULL);
    rec(f, t + S(2), RT_EV_KEEPALIVE, 2, 0, -1, 0, NULL);
  }
  expect(f, 0);
}

/* ---- effects_once ------------------------------------------------------- */

static void test_effects_twice_across_resume(void **state) {
  fx *f = *state;
  wake(f, S(1), 1);
  fiber_start(f, S(1), 1, 7, 0);
  uint64_t e1 = rec(f, S(2), RT_EV_EFFECT, 1, 7, 2, 1, "charge_card");
  death(f, S(3), 1, RT_DEATH_CRASH);
  wake(f, S(4), 1);
  recovered(f, S(4), 1, 7, -1, RT_RECOVER_RESUME);
  fiber_start(f, S(4), 1, 8, 7);
  death(f, S(5), 1, RT_DEATH_CRASH);
  wake(f, S(6), 1);
  recovered(f, S(6), 1, 8, -1, RT_RECOVER_RESUME);
  fiber_start(f, S(6), 1, 9, 8);
  uint64_t e2 = rec(f, S(7), RT_EV_EFFECT, 1, 9, 2, 1, "charge_card");
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_EFFECTS_ONCE, 1, S(7));
  assert_int_equal(v->n_chain, 2);
  assert_int_equal(v->chain[0], e1);
  assert_int_equal(v->chain[1], e2);
  assert_non_null(strstr(v->msg, "charge_card"));
  assert_non_null(strstr(v->msg, "resumed from fiber 7"));
}

static void test_effects_once_clean(void **state) {
  fx *f = *state;
  wake(f, S(1), 1);
  fiber_start(f, S(1), 1, 7, 0);
  rec(f, S(2), RT_EV_EFFECT, 1, 7, 2, 1, "charge_card");
  stash(f, S(2), 1, 7, 3, 1);
  death(f, S(3), 1, RT_DEATH_CRASH);
  wake(f, S(4), 1);
  recovered(f, S(4), 1, 7, 3, RT_RECOVER_RESUME);
  fiber_start(f, S(4), 1, 8, 7);
  rec(f, S(5), RT_EV_EFFECT, 1, 8, 3, 1, "send_email");
  /* another fiber may do the same effect at the same pc */
  fiber_start(f, S(6), 1, 20, 0);
  rec(f, S(7), RT_EV_EFFECT, 1, 20, 2, 1, "charge_card");
  expect(f, 0);
}

/* ---- toolrun_terminal_immutable ----------------------------------------- */

static void test_terminal_rewrite_caught(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  toolrun_running(f, S(2), 42);
  toolrun_set(f, S(3), 42, RT_TR_COMPLETED, RT_TR_RUNNING, 1);
  uint64_t c = toolrun_set(f, S(95), 42, RT_TR_INTERRUPTED, RT_TR_COMPLETED, 1);
  const chk_violation *v = expect(f, 1);
  assert_violation(v, CHK_TOOLRUN_TERMINAL_IMMUTABLE, 0, S(95));
  assert_true(chain_has(v, c - 2));
  assert_non_null(strstr(v->msg, "completed"));
  assert_non_null(strstr(v->msg, "interrupted"));
  assert_non_null(strstr(v->msg, "t=3.000s"));
}

static void test_terminal_clean(void **state) {
  fx *f = *state;
  wake(f, S(1), 0);
  toolrun_running(f, S(2), 42);
  toolrun_set(f, S(3), 42, RT_TR_COMPLETED, RT_TR_RUNNING, 1);
  toolrun_set(f, S(4), 42, RT_TR_COMPLETED, RT_TR_COMPLETED, 1);  /* no-op */
  expect(f, 0);
}

/* ---- the set ------------------------------------------------------------ */

static void test_enabled_mask_filters(void **state) {
  fx *f = *state;
  chk_params p;
  chk_params_default(&p);
  p.enabled_mask &= ~(1u << CHK_TOOLRUN_TERMINAL_IMMUTABLE);
  fx_params(f, &p);
  wake(f, S(1), 0);
  toolrun_running(f, S(2), 42);
  toolrun_set(f, S(3), 42, RT_TR_COMPLETED, RT_TR_RUNNING, 1);
  toolrun_set(f, S(95), 42, RT_TR_INTERRUPTED, RT_TR_COMPLETED, 1);
  expect(f, 0);
  assert_int_equal(chk_failed(f->c), 0);
}

static int g_calls;
static chk_invariant g_last;
static void on_violation(void *ctx, const chk_violation *v) {
  assert_ptr_equal(ctx, &g_calls);
  g_calls++;
  g_last = v->inv;
}

static void test_callback_and_wedge_k(void **state) {
  fx *f = *state;
  chk_params p;
  chk_params_default(&p);
  p.wedge_k = 2;
  fx_params(f, &p);
  g_calls = 0;
  chk_on_violation(f->c, on_violation, &g_calls);
  assert_int_equal(chk_params_of(f->c)->wedge_k, 2);
  gate_reset(f, S(0), 0);
  assert_int_equal(g_calls, 0);
  gate_reset(f, S(60), 0);
  assert_int_equal(g_calls, 1);
  assert_int_equal(g_last, CHK_NO_WEDGE);
  assert_int_equal(chk_failed(f->c), 1);
  assert_int_equal(chk_incomplete(f->c), 0);
  assert_null(chk_violation_at(f->c, 1));
}

/* A long mixed trace: same records, same violations, twice. */
static void mixed(fx *f) {
  for (int k = 0; k < 50; k++) {
    uint32_t a = (uint32_t)(k % 5);
    wake(f, S(1000 * k), a);
    fiber_start(f, S(1000 * k + 1), a, 1000 + k, 0);
    stash(f, S(1000 * k + 2), a, 1000 + k, k, k % 3);
    if (k % 4 == 0) gate_reset(f, S(1000 * k + 3), a);
    else death(f, S(1000 * k + 3), a, RT_DEATH_CRASH);
  }
  for (int k = 0; k < 50; k += 7) {
    recovered(f, S(60000 + k), (uint32_t)(k % 5), 1000 + k, -1, RT_RECOVER_DROP);
    recovered(f, S(60001 + k), (uint32_t)(k % 5), 1000 + k, -1, RT_RECOVER_DROP);
  }
  chk_finish(f->c, S(100000));
}

static void test_deterministic(void **state) {
  fx *f = *state;
  mixed(f);
  size_t n = chk_violation_count(f->c);
  assert_true(n > 0);
  chk_violation *copy = calloc(n, sizeof *copy);
  assert_non_null(copy);
  for (size_t i = 0; i < n; i++) copy[i] = *chk_violation_at(f->c, i);
  chk_params p = f->p;
  fx_params(f, &p);
  f->inc = 1;
  f->txn = 100;
  mixed(f);
  assert_int_equal(chk_violation_count(f->c), n);
  for (size_t i = 0; i < n; i++) {
    const chk_violation *v = chk_violation_at(f->c, i);
    assert_int_equal(v->inv, copy[i].inv);
    assert_int_equal(v->actor, copy[i].actor);
    assert_int_equal(v->t_us, copy[i].t_us);
    assert_string_equal(v->msg, copy[i].msg);
    assert_memory_equal(v->chain, copy[i].chain, sizeof v->chain);
  }
  free(copy);
}

/* Garbage in: random kinds, actors (some huge or none) and fields must not
** crash the checkers or make them depend on anything but the records. */
static void random_trace(fx *f, uint64_t seed) {
  static const char *names[] = {NULL, "job", "_cf_fiberHeartbeat", "cb", "x"};
  uint64_t x = seed;
  for (int i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t y = x >> 17;
    uint32_t kind = (uint32_t)(y % (RT_EV_KIND_COUNT + 2));
    uint32_t actor = (uint32_t)((y >> 8) % 10);
    if (actor == 8) actor = RT_NO_ACTOR;
    if (actor == 9) actor = UINT32_MAX - 1;
    int64_t a = (int64_t)((y >> 12) % 9) - 1, b = (int64_t)((y >> 16) % 9) - 1;
    int64_t c = (int64_t)((y >> 20) % 40);
    rec(f, S(i), kind, actor, a, b, c, names[(y >> 24) % 5]);
  }
  chk_finish(f->c, S(30000));
}

static void test_random_traces(void **state) {
  fx *f = *state;
  random_trace(f, 7);
  size_t n = chk_violation_count(f->c);
  uint64_t h = 0;
  for (size_t i = 0; i < n; i++) {
    const chk_violation *v = chk_violation_at(f->c, i);
    assert_true(v->n_chain >= 0 && v->n_chain <= CHK_MAX_CHAIN);
    for (int k = 0; k < v->n_chain; k++) {
      assert_true(v->chain[k] < f->t.count);
      h = h * 31 + v->chain[k];
    }
  }
  chk_params p = f->p;
  fx_params(f, &p);
  random_trace(f, 7);
  assert_int_equal(chk_violation_count(f->c), n);
  uint64_t h2 = 0;
  for (size_t i = 0; i < n; i++) {
    const chk_violation *v = chk_violation_at(f->c, i);
    for (int k = 0; k < v->n_chain; k++) h2 = h2 * 31 + v->chain[k];
  }
  assert_int_equal(h, h2);
  assert_int_equal(chk_incomplete(f->c), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rt_names),
    cmocka_unit_test(test_chk_names),
    T(test_stash_durable_fires),
    T(test_stash_durable_rolled_back_not_counted),
    T(test_stash_durable_uncommitted_seen),
    T(test_stash_durable_none_committed),
    T(test_double_recovery_fires),
    T(test_double_recovery_rolled_back_retry),
    T(test_double_recovery_clean),
    T(test_recovery_orphan_never_recovered),
    T(test_recovery_orphan_drop_counts),
    T(test_recovery_orphan_too_close_to_end),
    T(test_recovery_finished_fiber_not_orphan),
    T(test_recovery_hook_threw_then_deleted),
    T(test_recovery_hook_returned_then_deleted),
    T(test_recovery_window_resets_on_death),
    T(test_recovery_late_within_one_life),
    T(test_recovery_woke_then_idle_forever),
    T(test_toolrun_stale_never_terminal),
    T(test_toolrun_stale_made_terminal),
    T(test_toolrun_terminal_too_late),
    T(test_toolrun_write_then_status),
    T(test_toolrun_rolled_back_terminal_not_counted),
    T(test_wedge_k_minus_1),
    T(test_wedge_k_fires),
    T(test_wedge_progress_resets),
    T(test_wedge_other_actor_independent),
    T(test_wedge_serve_liveness),
    T(test_wedge_serve_before_last_fault_ignored),
    T(test_snapshot_outside_fires),
    T(test_snapshot_inside_clean),
    T(test_snapshot_inserted_after_onstart),
    T(test_snapshot_gated_unchecked),
    T(test_keepalive_idle_with_ref),
    T(test_keepalive_idle_without_ref),
    T(test_keepalive_alarm_forever),
    T(test_keepalive_alarm_reasons_to_fire),
    T(test_keepalive_lease_retaken_in_alarm),
    T(test_keepalive_lease_from_requests),
    T(test_effects_twice_across_resume),
    T(test_effects_once_clean),
    T(test_terminal_rewrite_caught),
    T(test_terminal_clean),
    T(test_enabled_mask_filters),
    T(test_callback_and_wedge_k),
    T(test_deterministic),
    T(test_random_traces),
  };
  return cmocka_run_group_tests_name("chk", tests, NULL, NULL) != 0;
}
