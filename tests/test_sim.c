/*
** test_sim.c: the kernel's scheduler, domains and run loop (sim/sim.h).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim.h"

/* ---- a log of dispatches ------------------------------------------------- */

#define LOG_MAX 8192

typedef struct ev_log {
  int64_t t[LOG_MAX];
  uint64_t arg[LOG_MAX];
  uint32_t dom[LOG_MAX];
  size_t n;
} ev_log;

static void log_ev(sim *s, void *ctx, uint64_t arg) {
  ev_log *l = ctx;
  assert_true(l->n < LOG_MAX);
  l->t[l->n] = s->now_us;
  l->arg[l->n] = arg;
  l->dom[l->n] = s->current_domain;
  l->n++;
}

static ev_log *log_new(void) {
  ev_log *l = calloc(1, sizeof *l);
  assert_non_null(l);
  return l;
}

static void init_sim(sim *s, uint64_t seed, sim_strategy st) {
  sim_config c = {seed, st, 1, 0};
  assert_int_equal(sim_init(s, &c), 0);
}

/* ---- fifo ----------------------------------------------------------------- */

static void test_fifo_insertion_order(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_FIFO);
  uint32_t d1 = sim_domain_new(&s), d2 = sim_domain_new(&s);
  /* equal times: insertion order, whatever the domain */
  for (uint64_t i = 0; i < 100; i++)
    assert_true(sim_at(&s, 50, i % 3 == 0 ? 0 : i % 3 == 1 ? d1 : d2, log_ev, l, i) != 0);
  /* earlier times pushed later still run first */
  sim_at(&s, 10, 0, log_ev, l, 1000);
  sim_at(&s, 5, d1, log_ev, l, 1001);
  assert_int_equal(sim_run(&s, INT64_MAX, 0), SIM_STOP_QUIESCENT);
  assert_int_equal(l->n, 102);
  assert_int_equal(l->arg[0], 1001);
  assert_int_equal(l->arg[1], 1000);
  for (uint64_t i = 0; i < 100; i++) {
    assert_int_equal(l->arg[i + 2], i);
    assert_int_equal(l->t[i + 2], 50);
  }
  assert_int_equal(s.dispatched, 102);
  sim_free(&s);
  free(l);
}

/* A handler that schedules more work at the same instant: it runs after
** everything already pending at that instant (fifo). */
static void push_same_time(sim *s, void *ctx, uint64_t arg) {
  log_ev(s, ctx, arg);
  if (arg < 3) sim_after(s, 0, 0, push_same_time, ctx, arg + 10);
}

static void test_fifo_same_time_from_handler(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_FIFO);
  for (uint64_t i = 0; i < 3; i++) sim_at(&s, 7, 0, push_same_time, l, i);
  sim_run(&s, INT64_MAX, 0);
  static const uint64_t want[] = {0, 1, 2, 10, 11, 12};
  assert_int_equal(l->n, 6);
  for (int i = 0; i < 6; i++) {
    assert_int_equal(l->arg[i], want[i]);
    assert_int_equal(l->t[i], 7);
  }
  sim_free(&s);
  free(l);
}

/* ---- random ---------------------------------------------------------------- */

/* 40 events at t=100, 40 at t=200 and 40 at t=300, pushed interleaved. */
static void run_random(uint64_t seed, ev_log *l) {
  sim s;
  init_sim(&s, seed, SIM_RANDOM);
  for (uint64_t i = 0; i < 120; i++)
    sim_at(&s, 100 * (int64_t)(1 + (i * 7) % 3), 0, log_ev, l, i);
  assert_int_equal(sim_run(&s, INT64_MAX, 0), SIM_STOP_QUIESCENT);
  sim_free(&s);
}

static int logs_equal(const ev_log *a, const ev_log *b) {
  if (a->n != b->n) return 0;
  for (size_t i = 0; i < a->n; i++)
    if (a->t[i] != b->t[i] || a->arg[i] != b->arg[i] || a->dom[i] != b->dom[i])
      return 0;
  return 1;
}

static void test_random_seeded_order(void **state) {
  (void)state;
  ev_log *a = log_new(), *b = log_new();
  run_random(11, a);
  run_random(11, b);
  assert_int_equal(a->n, 120);
  assert_true(logs_equal(a, b));  /* same seed, same order */

  /* Different times never reorder; each instant gets its own events. */
  for (size_t i = 0; i < a->n; i++) {
    if (i) assert_true(a->t[i] >= a->t[i - 1]);
    assert_int_equal(a->t[i], 100 * (int64_t)(1 + (a->arg[i] * 7) % 3));
  }
  /* Among equal times the order is not insertion order. */
  int inversions = 0;
  for (size_t i = 1; i < a->n; i++)
    if (a->t[i] == a->t[i - 1] && a->arg[i] < a->arg[i - 1]) inversions++;
  assert_true(inversions > 10);

  /* Different seeds: some pair differs (here: seed 11 against 1..8). */
  int differ = 0;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    memset(b, 0, sizeof *b);
    run_random(seed, b);
    assert_int_equal(b->n, 120);
    if (!logs_equal(a, b)) differ++;
  }
  assert_true(differ >= 1);
  free(a);
  free(b);
}

/* ---- pct ------------------------------------------------------------------- */

static void test_pct_follows_domain_priority(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  sim_config c = {77, SIM_PCT, 1, 100};
  assert_int_equal(sim_init(&s, &c), 0);
  enum { ND = 8, PER = 3 };
  uint32_t d[ND];
  for (int i = 0; i < ND; i++) d[i] = sim_domain_new(&s);
  for (uint64_t k = 0; k < PER; k++)
    for (int i = 0; i < ND; i++) sim_at(&s, 100, d[i], log_ev, l, k * ND + (uint64_t)i);
  sim_run(&s, INT64_MAX, 0);
  assert_int_equal(l->n, ND * PER);
  /* Priorities are distinct; the order runs through the domains from the
  ** highest priority (lowest value) down, each in insertion order. */
  int not_identity = 0;
  for (size_t i = 0; i < l->n; i++) {
    if (i % PER) {
      assert_int_equal(l->dom[i], l->dom[i - 1]);
      assert_true(l->arg[i] > l->arg[i - 1]);
    } else if (i) {
      assert_true(s.domain_prio[l->dom[i - 1]] < s.domain_prio[l->dom[i]]);
    }
    if (l->dom[i] != d[i / PER]) not_identity = 1;
  }
  assert_true(not_identity);  /* seed 77: priorities differ from creation order */
  sim_free(&s);
  free(l);
}

typedef struct pct_case {
  ev_log *l;
  uint32_t hi, lo;      /* the domains by initial priority */
} pct_case;

/* World event at t=5: schedules one event in each domain at t=10, lo first
** in insertion order so that only priority can put hi first. */
static void pct_world(sim *s, void *ctx, uint64_t arg) {
  pct_case *pc = ctx;
  (void)arg;
  sim_at(s, 10, pc->lo, log_ev, pc->l, 20);
  sim_at(s, 10, pc->hi, log_ev, pc->l, 21);
}

/* depth 1: no change point; depth 2 with steps 1: a change at dispatch 1. */
static void run_pct_case(int depth, uint64_t seed, ev_log *l, uint32_t *hi_out) {
  sim s;
  sim_config c = {seed, SIM_PCT, depth, 1};
  assert_int_equal(sim_init(&s, &c), 0);
  if (depth == 2) {
    assert_int_equal(s.pct_n_changes, 1);
    assert_int_equal(s.pct_change_at[0], 1);
  } else {
    assert_int_equal(s.pct_n_changes, 0);
  }
  uint32_t a = sim_domain_new(&s), b = sim_domain_new(&s);
  pct_case pc = {l, 0, 0};
  if (s.domain_prio[a] < s.domain_prio[b]) { pc.hi = a; pc.lo = b; }
  else { pc.hi = b; pc.lo = a; }
  /* before the change point: lo pushed first, hi runs first (dispatch 1) */
  sim_at(&s, 1, pc.lo, log_ev, l, 10);
  sim_at(&s, 1, pc.hi, log_ev, l, 11);
  sim_at(&s, 5, 0, pct_world, &pc, 0);
  sim_run(&s, INT64_MAX, 0);
  *hi_out = pc.hi;
  sim_free(&s);
}

static void test_pct_change_point(void **state) {
  (void)state;
  ev_log *l = log_new();
  uint32_t hi;
  /* Without change points the order at t=1 and t=10 is the same. */
  run_pct_case(1, 5, l, &hi);
  assert_int_equal(l->n, 4);
  assert_int_equal(l->arg[0], 11);
  assert_int_equal(l->arg[1], 10);
  assert_int_equal(l->arg[2], 21);
  assert_int_equal(l->arg[3], 20);

  /* The change point at dispatch 1 lowers the domain that dispatched (hi):
  ** at t=10, lo now goes first. */
  memset(l, 0, sizeof *l);
  run_pct_case(2, 5, l, &hi);
  assert_int_equal(l->n, 4);
  assert_int_equal(l->arg[0], 11);
  assert_int_equal(l->dom[0], hi);
  assert_int_equal(l->arg[1], 10);
  assert_int_equal(l->arg[2], 20);
  assert_int_equal(l->arg[3], 21);
  assert_int_equal(l->dom[3], hi);
  free(l);
}

/* A busier pct run: handlers fan out into several domains. */
typedef struct fan {
  ev_log *l;
  uint32_t dom[6];
  sim_rng rng;
} fan;

static void fan_ev(sim *s, void *ctx, uint64_t arg) {
  fan *f = ctx;
  log_ev(s, f->l, arg);
  if (f->l->n < 2000) {
    int k = (int)sim_rng_below(&f->rng, 3);
    for (int i = 0; i < k; i++)
      sim_after(s, (int64_t)sim_rng_below(&f->rng, 3),
                f->dom[sim_rng_below(&f->rng, 6)], fan_ev, f, arg * 3 + (uint64_t)i);
  }
}

static void run_fan(sim_strategy st, uint64_t seed, ev_log *l) {
  sim s;
  sim_config c = {seed, st, 3, 200};
  assert_int_equal(sim_init(&s, &c), 0);
  fan f;
  f.l = l;
  sim_rng_stream(&f.rng, seed, "workload");
  for (int i = 0; i < 6; i++) f.dom[i] = sim_domain_new(&s);
  for (uint64_t i = 0; i < 20; i++) sim_at(&s, 0, f.dom[i % 6], fan_ev, &f, i);
  sim_run(&s, INT64_MAX, 3000);
  sim_free(&s);
}

static void test_pct_deterministic(void **state) {
  (void)state;
  ev_log *a = log_new(), *b = log_new(), *c = log_new();
  run_fan(SIM_PCT, 3, a);
  run_fan(SIM_PCT, 3, b);
  assert_true(a->n > 100);
  assert_true(logs_equal(a, b));
  /* another seed gives another interleaving */
  run_fan(SIM_PCT, 4, c);
  assert_false(logs_equal(a, c));
  free(a);
  free(b);
  free(c);
}

static void test_pct_bad_config(void **state) {
  (void)state;
  sim s;
  sim_config c = {1, SIM_PCT, 0, 10};
  assert_int_equal(sim_init(&s, &c), -1);
  c.pct_depth = SIM_PCT_MAX_CHANGES + 2;
  assert_int_equal(sim_init(&s, &c), -1);
  c.pct_depth = SIM_PCT_MAX_CHANGES + 1;
  assert_int_equal(sim_init(&s, &c), 0);
  assert_int_equal(s.pct_n_changes, SIM_PCT_MAX_CHANGES);
  for (int i = 0; i < s.pct_n_changes; i++)
    assert_true(s.pct_change_at[i] >= 1 && s.pct_change_at[i] <= 10);
  sim_free(&s);
}

/* ---- clock ----------------------------------------------------------------- */

typedef struct past_ctx {
  ev_log *l;
} past_ctx;

static void schedule_in_past(sim *s, void *ctx, uint64_t arg) {
  past_ctx *p = ctx;
  log_ev(s, p->l, arg);
  if (arg == 0) {
    sim_at(s, 50, 0, log_ev, p->l, 1);         /* absolute, in the past */
    sim_after(s, -30, 0, log_ev, p->l, 2);     /* negative delay */
    sim_at(s, INT64_MIN, 0, log_ev, p->l, 3);
  }
}

static void test_past_clamped_to_now(void **state) {
  (void)state;
  sim s;
  past_ctx p = {log_new()};
  init_sim(&s, 1, SIM_FIFO);
  sim_at(&s, 100, 0, schedule_in_past, &p, 0);
  sim_at(&s, 100, 0, log_ev, p.l, 9);
  sim_run(&s, INT64_MAX, 0);
  static const uint64_t want[] = {0, 9, 1, 2, 3};
  assert_int_equal(p.l->n, 5);
  for (int i = 0; i < 5; i++) {
    assert_int_equal(p.l->arg[i], want[i]);
    assert_int_equal(p.l->t[i], 100);  /* never backwards */
  }
  assert_int_equal(s.now_us, 100);
  /* Far-future delays saturate rather than wrap into the past. */
  assert_true(sim_after(&s, INT64_MAX, 0, log_ev, p.l, 4) != 0);
  assert_int_equal(sim_run(&s, 1000, 0), SIM_STOP_END_TIME);
  assert_int_equal(p.l->n, 5);
  assert_int_equal(sim_pending(&s), 1);
  sim_free(&s);
  free(p.l);
}

/* ---- domains --------------------------------------------------------------- */

static void test_domain_kill(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_FIFO);
  uint32_t d1 = sim_domain_new(&s), d2 = sim_domain_new(&s);
  assert_true(d1 >= 1 && d2 >= 1 && d1 != d2);
  for (uint64_t i = 0; i < 30; i++) {
    uint32_t d = i % 3 == 0 ? 0 : i % 3 == 1 ? d1 : d2;
    sim_at(&s, (int64_t)i, d, log_ev, l, i);
  }
  sim_domain_kill(&s, d1);
  sim_domain_kill(&s, 0);           /* no-op */
  sim_domain_kill(&s, 12345);       /* unknown: no-op */
  assert_int_equal(sim_pending(&s), 30);
  /* a push after the kill lives */
  sim_at(&s, 100, d1, log_ev, l, 100);
  assert_int_equal(sim_run(&s, INT64_MAX, 0), SIM_STOP_QUIESCENT);
  assert_int_equal(l->n, 21);
  for (size_t i = 0; i < l->n; i++) {
    if (l->arg[i] == 100) {
      assert_int_equal(l->dom[i], d1);
      continue;
    }
    assert_true(l->arg[i] % 3 != 1);  /* no pre-kill d1 event ran */
  }
  assert_int_equal(l->arg[l->n - 1], 100);
  assert_int_equal(s.dropped, 10);
  assert_int_equal(s.dispatched, 21);
  sim_free(&s);
  free(l);
}

typedef struct killer {
  ev_log *l;
  uint32_t victim;
} killer;

static void kill_ev(sim *s, void *ctx, uint64_t arg) {
  killer *k = ctx;
  log_ev(s, k->l, arg);
  sim_domain_kill(s, k->victim);
  /* the incarnation after the kill schedules fresh work */
  sim_after(s, 1, k->victim, log_ev, k->l, 77);
}

static void test_domain_kill_from_handler(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_FIFO);
  uint32_t d = sim_domain_new(&s), other = sim_domain_new(&s);
  killer k = {l, d};
  sim_at(&s, 5, d, log_ev, l, 1);         /* before the kill: runs */
  sim_at(&s, 10, other, kill_ev, &k, 2);
  sim_at(&s, 10, d, log_ev, l, 3);        /* same instant, after: dropped */
  sim_at(&s, 20, d, log_ev, l, 4);        /* dropped */
  sim_at(&s, 20, other, log_ev, l, 5);    /* other domain: runs */
  sim_run(&s, INT64_MAX, 0);
  static const uint64_t want[] = {1, 2, 77, 5};
  assert_int_equal(l->n, 4);
  for (int i = 0; i < 4; i++) assert_int_equal(l->arg[i], want[i]);
  assert_int_equal(s.dropped, 2);
  sim_free(&s);
  free(l);
}

static void test_cancel(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_RANDOM);
  sim_handle a = sim_at(&s, 10, 0, log_ev, l, 1);
  sim_handle b = sim_at(&s, 20, 0, log_ev, l, 2);
  assert_int_equal(sim_cancel(&s, a), 1);
  assert_int_equal(sim_cancel(&s, a), 0);
  assert_int_equal(sim_cancel(&s, 0), 0);
  sim_run(&s, INT64_MAX, 0);
  assert_int_equal(l->n, 1);
  assert_int_equal(l->arg[0], 2);
  assert_int_equal(sim_cancel(&s, b), 0);  /* already ran */
  sim_free(&s);
  free(l);
}

/* ---- stop conditions --------------------------------------------------------- */

static void test_stop_end_time_and_resume(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_FIFO);
  sim_at(&s, 10, 0, log_ev, l, 1);
  sim_at(&s, 20, 0, log_ev, l, 2);
  sim_at(&s, 30, 0, log_ev, l, 3);
  sim_at(&s, 40, 0, log_ev, l, 4);
  assert_int_equal(sim_run(&s, 25, 0), SIM_STOP_END_TIME);
  assert_int_equal(s.now_us, 25);        /* clock set to the end */
  assert_int_equal(l->n, 2);
  assert_int_equal(sim_pending(&s), 2);  /* later events still pending */
  /* again with the same end: nothing happens */
  assert_int_equal(sim_run(&s, 25, 0), SIM_STOP_END_TIME);
  assert_int_equal(l->n, 2);
  /* an event exactly at the end time runs */
  assert_int_equal(sim_run(&s, 30, 0), SIM_STOP_END_TIME);
  assert_int_equal(l->n, 3);
  assert_int_equal(s.now_us, 30);
  /* resumed with a later end: runs to quiescence; the clock stays at the
  ** last event, not the end */
  assert_int_equal(sim_run(&s, 1000, 0), SIM_STOP_QUIESCENT);
  assert_int_equal(l->n, 4);
  assert_int_equal(l->t[3], 40);
  assert_int_equal(s.now_us, 40);
  assert_int_equal(sim_pending(&s), 0);
  /* quiescent again on an empty queue */
  assert_int_equal(sim_run(&s, 2000, 0), SIM_STOP_QUIESCENT);
  sim_free(&s);
  free(l);
}

static void tick(sim *s, void *ctx, uint64_t arg) {
  uint64_t *n = ctx;
  (*n)++;
  sim_after(s, 3, 0, tick, ctx, arg + 1);
}

static void test_stop_max_events(void **state) {
  (void)state;
  sim s;
  uint64_t n = 0;
  init_sim(&s, 1, SIM_FIFO);
  sim_at(&s, 0, 0, tick, &n, 0);
  assert_int_equal(sim_run(&s, INT64_MAX, 100), SIM_STOP_MAX_EVENTS);
  assert_int_equal(n, 100);
  assert_int_equal(s.dispatched, 100);
  assert_int_equal(s.now_us, 99 * 3);
  /* the budget counts per call */
  assert_int_equal(sim_run(&s, INT64_MAX, 50), SIM_STOP_MAX_EVENTS);
  assert_int_equal(n, 150);
  /* the end time wins when it comes first */
  assert_int_equal(sim_run(&s, 150 * 3 + 10, 1000), SIM_STOP_END_TIME);
  assert_int_equal(n, 154);
  assert_int_equal(s.now_us, 150 * 3 + 10);
  sim_free(&s);
}

/* A budget spent exactly: the stop reason is what the next pending event
** would have been stopped by (nothing pending, beyond the end, or only the
** budget), and nothing more is dispatched or dropped. */
static void test_stop_budget_spent_exactly(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_FIFO);
  sim_at(&s, 10, 0, log_ev, l, 1);
  sim_at(&s, 20, 0, log_ev, l, 2);
  sim_at(&s, 90, 0, log_ev, l, 3);
  /* the next event (20) is due: the budget stops the run */
  assert_int_equal(sim_run(&s, 50, 1), SIM_STOP_MAX_EVENTS);
  assert_int_equal(l->n, 1);
  assert_int_equal(s.now_us, 10);
  /* the next event (90) lies beyond the end: the end time, clock moved */
  assert_int_equal(sim_run(&s, 50, 1), SIM_STOP_END_TIME);
  assert_int_equal(l->n, 2);
  assert_int_equal(s.now_us, 50);
  assert_int_equal(sim_pending(&s), 1);
  /* nothing left after the last one: quiescent, not the budget */
  assert_int_equal(sim_run(&s, INT64_MAX, 1), SIM_STOP_QUIESCENT);
  assert_int_equal(l->n, 3);
  assert_int_equal(l->t[2], 90);
  assert_int_equal(s.dispatched, 3);
  sim_free(&s);
  free(l);
}

static void stop_at_7(sim *s, void *ctx, uint64_t arg) {
  uint64_t *n = ctx;
  (*n)++;
  if (arg == 7) sim_request_stop(s);
  sim_after(s, 1, 0, stop_at_7, ctx, arg + 1);
}

static void test_stop_requested(void **state) {
  (void)state;
  sim s;
  uint64_t n = 0;
  init_sim(&s, 1, SIM_FIFO);
  sim_at(&s, 0, 0, stop_at_7, &n, 0);
  sim_at(&s, 100, 0, stop_at_7, &n, 1000);
  assert_int_equal(sim_run(&s, INT64_MAX, 0), SIM_STOP_REQUESTED);
  assert_int_equal(n, 8);               /* stops after the current event */
  assert_int_equal(s.now_us, 7);
  assert_int_equal(sim_pending(&s), 2);
  /* resumable: the request does not stick */
  assert_int_equal(sim_run(&s, 20, 0), SIM_STOP_END_TIME);
  assert_int_equal(n, 21);
  sim_free(&s);
}

static void test_quiescent_with_only_dead_events(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_FIFO);
  uint32_t d = sim_domain_new(&s);
  for (int i = 0; i < 5; i++) sim_at(&s, i, d, log_ev, l, 0);
  sim_domain_kill(&s, d);
  assert_int_equal(sim_run(&s, INT64_MAX, 1), SIM_STOP_QUIESCENT);
  assert_int_equal(l->n, 0);
  assert_int_equal(s.dropped, 5);
  assert_int_equal(sim_pending(&s), 0);
  sim_free(&s);
  free(l);
}

/* ---- emit and names ---------------------------------------------------------- */

static void emit_ev(sim *s, void *ctx, uint64_t arg) {
  (void)ctx;
  sim_emit(s, 3, 9, (int64_t)arg, -1, 2, sim_trace_intern(&s->trace, "x"), 0);
}

static void test_emit_stamps_time(void **state) {
  (void)state;
  sim s;
  init_sim(&s, 1, SIM_FIFO);
  sim_at(&s, 42, 0, emit_ev, NULL, 5);
  sim_at(&s, 43, 0, emit_ev, NULL, 6);
  sim_run(&s, INT64_MAX, 0);
  assert_int_equal(s.trace.n, 2);
  assert_int_equal(s.trace.recs[0].t_us, 42);
  assert_int_equal(s.trace.recs[1].t_us, 43);
  assert_int_equal(s.trace.recs[1].a, 6);
  assert_int_equal(s.trace.recs[1].kind, 3);
  assert_int_equal(s.trace.recs[1].actor, 9);
  assert_string_equal(sim_trace_str(&s.trace, s.trace.recs[0].s), "x");
  assert_true(s.trace.hash != SIM_TRACE_HASH_INIT);
  sim_free(&s);
}

static void test_names(void **state) {
  (void)state;
  for (int i = 0; i < 3; i++)
    assert_int_equal(sim_strategy_parse(sim_strategy_name((sim_strategy)i)), i);
  assert_string_equal(sim_strategy_name(SIM_PCT), "pct");
  assert_int_equal(sim_strategy_parse("nope"), -1);
  assert_string_equal(sim_strategy_name((sim_strategy)9), "?");
  assert_string_equal(sim_stop_reason_name(SIM_STOP_QUIESCENT), "quiescent");
  assert_string_equal(sim_stop_reason_name(SIM_STOP_END_TIME), "end_time");
  assert_string_equal(sim_stop_reason_name(SIM_STOP_MAX_EVENTS), "max_events");
  assert_string_equal(sim_stop_reason_name(SIM_STOP_REQUESTED), "requested");
  assert_string_equal(sim_stop_reason_name((sim_stop_reason)9), "?");
}

static void test_many_domains(void **state) {
  (void)state;
  sim s;
  ev_log *l = log_new();
  init_sim(&s, 1, SIM_PCT);
  uint32_t last = 0;
  for (int i = 0; i < 1000; i++) {
    uint32_t d = sim_domain_new(&s);
    assert_int_equal(d, last + 1);
    last = d;
    sim_at(&s, 1, d, log_ev, l, (uint64_t)d);
  }
  sim_domain_kill(&s, 500);
  sim_run(&s, INT64_MAX, 0);
  assert_int_equal(l->n, 999);
  for (size_t i = 0; i < l->n; i++) assert_int_equal(l->dom[i], l->arg[i]);
  sim_free(&s);
  free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fifo_insertion_order),
      cmocka_unit_test(test_fifo_same_time_from_handler),
      cmocka_unit_test(test_random_seeded_order),
      cmocka_unit_test(test_pct_follows_domain_priority),
      cmocka_unit_test(test_pct_change_point),
      cmocka_unit_test(test_pct_deterministic),
      cmocka_unit_test(test_pct_bad_config),
      cmocka_unit_test(test_past_clamped_to_now),
      cmocka_unit_test(test_domain_kill),
      cmocka_unit_test(test_domain_kill_from_handler),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_stop_end_time_and_resume),
      cmocka_unit_test(test_stop_max_events),
      cmocka_unit_test(test_stop_budget_spent_exactly),
      cmocka_unit_test(test_stop_requested),
      cmocka_unit_test(test_quiescent_with_only_dead_events),
      cmocka_unit_test(test_emit_stamps_time),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_many_domains),
  };
  return cmocka_run_group_tests_name("sim", tests, NULL, NULL) != 0;
}
