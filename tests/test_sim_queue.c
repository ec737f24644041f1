/*
** test_sim_queue.c: the kernel's event queue (sim/sim_queue.h).
**
** The heap is checked against a plain reference (a sorted array) under a
** long random mix of push, pop and cancel, with the same (time, key,
** insertion sequence) ordering, and its handles against slot reuse.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim_queue.h"
#include "sim/sim_rng.h"

static sim_payload payload(uint64_t arg) {
  sim_payload p;
  memset(&p, 0, sizeof p);
  p.arg = arg;
  p.domain = (uint32_t)(arg % 7);
  p.domain_gen = (uint32_t)(arg % 3);
  return p;
}

/* ---- reference model ---------------------------------------------------- */

typedef struct ref_ev {
  int64_t time;
  uint64_t key, seq;
  sim_handle h;
  int state;           /* 1 pending, 0 popped or cancelled */
} ref_ev;

typedef struct ref_q {
  ref_ev *ev;          /* by id (= payload arg) */
  size_t n_ev;
  uint32_t *sorted;    /* pending ids, sorted DEScending: the minimum is last */
  size_t n;
} ref_q;

static int ref_less(const ref_q *r, uint32_t a, uint32_t b) {
  const ref_ev *x = &r->ev[a], *y = &r->ev[b];
  if (x->time != y->time) return x->time < y->time;
  if (x->key != y->key) return x->key < y->key;
  return x->seq < y->seq;
}

/* Position of id in the descending array (binary search), or where it goes. */
static size_t ref_pos(const ref_q *r, uint32_t id) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    /* descending: elements greater than id come first */
    if (ref_less(r, id, r->sorted[mid])) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void ref_insert(ref_q *r, uint32_t id) {
  size_t p = ref_pos(r, id);
  memmove(&r->sorted[p + 1], &r->sorted[p], (r->n - p) * sizeof(uint32_t));
  r->sorted[p] = id;
  r->n++;
}

static void ref_remove(ref_q *r, uint32_t id) {
  size_t p = ref_pos(r, id);
  assert_true(p < r->n);
  assert_int_equal(r->sorted[p], id);
  memmove(&r->sorted[p], &r->sorted[p + 1], (r->n - p - 1) * sizeof(uint32_t));
  r->n--;
}

/* ---- the random workout -------------------------------------------------- */

#define N_OPS 200000

static void do_push(sim_queue *q, ref_q *r, sim_rng *g, uint64_t *seq,
                    int64_t base) {
  uint32_t id = (uint32_t)r->n_ev++;
  ref_ev *e = &r->ev[id];
  /* Narrow time and key ranges so that ties on time and on (time, key)
  ** are frequent; now and then a full-range key or a negative time. */
  e->time = base + (int64_t)sim_rng_below(g, 40);
  if (sim_rng_chance_ppm(g, 20000)) e->time = -(int64_t)sim_rng_below(g, 1000);
  e->key = sim_rng_below(g, 4);
  if (sim_rng_chance_ppm(g, 50000)) e->key = sim_rng_next(g);
  e->seq = (*seq)++;
  sim_payload p = payload(id);
  e->h = sim_queue_push(q, e->time, e->key, &p);
  assert_true(e->h != 0);
  e->state = 1;
  ref_insert(r, id);
}

static void do_pop(sim_queue *q, ref_q *r) {
  int64_t t = 12345;
  sim_payload p;
  if (r->n == 0) {
    assert_null(sim_queue_peek(q));
    assert_int_equal(sim_queue_pop(q, &t, &p), 0);
    return;
  }
  uint32_t want = r->sorted[r->n - 1];
  const sim_qentry *top = sim_queue_peek(q);
  assert_non_null(top);
  assert_int_equal(top->time_us, r->ev[want].time);
  assert_int_equal(top->key, r->ev[want].key);
  assert_int_equal(sim_queue_pop(q, &t, &p), 1);
  assert_int_equal(p.arg, want);
  assert_int_equal(t, r->ev[want].time);
  sim_payload exp = payload(want);
  assert_int_equal(p.domain, exp.domain);
  assert_int_equal(p.domain_gen, exp.domain_gen);
  r->ev[want].state = 0;
  r->n--;
}

/* A pop through sim_queue_pop_until with an end at, after or before the
** time of the smallest pending event: beyond the end nothing pops. */
static void do_pop_until(sim_queue *q, ref_q *r, sim_rng *g) {
  int64_t t = 12345;
  sim_payload p;
  if (r->n == 0) {
    assert_int_equal(sim_queue_pop_until(q, INT64_MAX, &t, &p), 0);
    return;
  }
  uint32_t want = r->sorted[r->n - 1];
  const int64_t wt = r->ev[want].time;
  const uint64_t x = sim_rng_below(g, 3);
  const int64_t end = x == 0 ? wt : x == 1 ? wt + 1 : wt - 1;
  if (end < wt) {
    assert_int_equal(sim_queue_pop_until(q, end, &t, &p), -1);
    assert_int_equal(t, 12345);                   /* nothing written */
    assert_int_equal(sim_queue_len(q), r->n);
    return;
  }
  assert_int_equal(sim_queue_pop_until(q, end, &t, &p), 1);
  assert_int_equal(p.arg, want);
  assert_int_equal(t, wt);
  r->ev[want].state = 0;
  r->n--;
}

static void do_cancel(sim_queue *q, ref_q *r, sim_rng *g) {
  if (r->n_ev == 0) {
    assert_int_equal(sim_queue_cancel(q, 0), 0);
    return;
  }
  uint32_t id;
  if (r->n && sim_rng_chance_ppm(g, 700000))
    id = r->sorted[sim_rng_below(g, r->n)];            /* a pending one */
  else
    id = (uint32_t)sim_rng_below(g, r->n_ev);          /* any, maybe dead */
  int want = r->ev[id].state;
  assert_int_equal(sim_queue_cancel(q, r->ev[id].h), want);
  if (want) {
    ref_remove(r, id);
    r->ev[id].state = 0;
  }
  /* A second cancel of the same handle is always a no-op. */
  assert_int_equal(sim_queue_cancel(q, r->ev[id].h), 0);
}

static void test_random_ops_against_reference(void **state) {
  (void)state;
  sim_queue q;
  ref_q r;
  sim_rng g;
  uint64_t seq = 0;
  assert_int_equal(sim_queue_init(&q), 0);
  r.ev = calloc(N_OPS + 1, sizeof(ref_ev));
  r.sorted = calloc(N_OPS + 1, sizeof(uint32_t));
  r.n_ev = r.n = 0;
  assert_non_null(r.ev);
  assert_non_null(r.sorted);
  sim_rng_stream(&g, 1, "test_sim_queue");

  int64_t base = 0;
  uint64_t pushes = 0, pops = 0, cancels = 0, max_len = 0;
  for (int op = 0; op < N_OPS; op++) {
    /* Phases: grow (push-heavy), balanced, drain (pop-heavy). */
    int phase = (op / 5000) % 3;
    uint32_t push_ppm = phase == 0 ? 650000 : phase == 1 ? 450000 : 250000;
    uint64_t x = sim_rng_below(&g, 1000000);
    if (x < push_ppm) {
      do_push(&q, &r, &g, &seq, base);
      pushes++;
    } else if (x < push_ppm + (1000000 - push_ppm) * 6 / 10) {
      if (x & 1) do_pop(&q, &r);
      else do_pop_until(&q, &r, &g);
      pops++;
      if (r.n) base = r.ev[r.sorted[r.n - 1]].time;  /* time moves forward */
    } else {
      do_cancel(&q, &r, &g);
      cancels++;
    }
    assert_int_equal(sim_queue_len(&q), r.n);
    if (r.n > max_len) max_len = r.n;
    if (op % 97 == 0) assert_true(sim_queue_check(&q));
  }
  assert_true(sim_queue_check(&q));
  /* The workout exercised every operation and a deep heap. */
  assert_true(pushes > 50000 && pops > 30000 && cancels > 20000);
  assert_true(max_len > 1000);
  while (r.n) do_pop(&q, &r);
  do_pop(&q, &r); /* empty */
  assert_int_equal(sim_queue_len(&q), 0);
  assert_true(sim_queue_check(&q));
  sim_queue_free(&q);
  free(r.ev);
  free(r.sorted);
}

/* ---- targeted cases ----------------------------------------------------- */

static void test_order_time_key_seq(void **state) {
  (void)state;
  sim_queue q;
  sim_queue_init(&q);
  /* (time, key) pairs pushed out of order, with duplicates. */
  static const struct { int64_t t; uint64_t k; } in[] = {
      {5, 1}, {5, 0}, {3, 9}, {5, 0}, {3, 9}, {-1, UINT64_MAX}, {5, 1}, {3, 0}};
  static const uint64_t want[] = {5, 7, 2, 4, 1, 3, 0, 6};
  for (uint64_t i = 0; i < 8; i++) {
    sim_payload p = payload(i);
    assert_true(sim_queue_push(&q, in[i].t, in[i].k, &p) != 0);
  }
  assert_true(sim_queue_check(&q));
  for (int i = 0; i < 8; i++) {
    int64_t t;
    sim_payload p;
    assert_int_equal(sim_queue_pop(&q, &t, &p), 1);
    assert_int_equal(p.arg, want[i]);
    assert_int_equal(t, in[want[i]].t);
  }
  sim_queue_free(&q);
}

static void test_fifo_among_equals(void **state) {
  (void)state;
  sim_queue q;
  sim_queue_init(&q);
  for (uint64_t i = 0; i < 5000; i++) {
    sim_payload p = payload(i);
    sim_queue_push(&q, 100, 7, &p);
  }
  for (uint64_t i = 0; i < 5000; i++) {
    int64_t t;
    sim_payload p;
    assert_int_equal(sim_queue_pop(&q, &t, &p), 1);
    assert_int_equal(p.arg, i);
  }
  sim_queue_free(&q);
}

static void test_cancel_dead_handles(void **state) {
  (void)state;
  sim_queue q;
  sim_queue_init(&q);
  int64_t t;
  sim_payload p = payload(1), out;
  assert_int_equal(sim_queue_cancel(&q, 0), 0);               /* 0 */
  assert_int_equal(sim_queue_cancel(&q, 0x100000000ULL), 0);  /* never issued */
  assert_int_equal(sim_queue_pop(&q, &t, &out), 0);           /* empty */

  sim_handle a = sim_queue_push(&q, 10, 0, &p);
  sim_handle b = sim_queue_push(&q, 20, 0, &p);
  assert_true(a != 0 && b != 0 && a != b);
  assert_int_equal(sim_queue_cancel(&q, 0), 0);
  assert_int_equal(sim_queue_cancel(&q, a ^ 0xffffULL), 0);   /* slot beyond pool */
  assert_int_equal(sim_queue_len(&q), 2);

  assert_int_equal(sim_queue_pop(&q, &t, &out), 1);           /* pops a */
  assert_int_equal(t, 10);
  assert_int_equal(sim_queue_cancel(&q, a), 0);               /* popped */
  assert_int_equal(sim_queue_len(&q), 1);

  assert_int_equal(sim_queue_cancel(&q, b), 1);               /* pending */
  assert_int_equal(sim_queue_cancel(&q, b), 0);               /* cancelled */
  assert_int_equal(sim_queue_len(&q), 0);
  assert_true(sim_queue_check(&q));
  sim_queue_free(&q);
}

static void test_generation_guards_reused_slot(void **state) {
  (void)state;
  sim_queue q;
  sim_queue_init(&q);
  int64_t t;
  sim_payload out, pa = payload(1), pb = payload(2), pc = payload(3);

  /* popped, then the slot is reused */
  sim_handle a = sim_queue_push(&q, 10, 0, &pa);
  assert_int_equal(sim_queue_pop(&q, &t, &out), 1);
  sim_handle b = sim_queue_push(&q, 10, 0, &pb);
  assert_int_equal((uint32_t)a, (uint32_t)b);  /* same slot: the case at hand */
  assert_true(a != b);
  assert_int_equal(sim_queue_cancel(&q, a), 0);
  assert_int_equal(sim_queue_len(&q), 1);

  /* cancelled, then the slot is reused */
  assert_int_equal(sim_queue_cancel(&q, b), 1);
  sim_handle c = sim_queue_push(&q, 10, 0, &pc);
  assert_int_equal((uint32_t)b, (uint32_t)c);
  assert_int_equal(sim_queue_cancel(&q, a), 0);
  assert_int_equal(sim_queue_cancel(&q, b), 0);
  assert_int_equal(sim_queue_len(&q), 1);
  assert_int_equal(sim_queue_pop(&q, &t, &out), 1);
  assert_int_equal(out.arg, 3);

  /* many generations of one slot: every stale handle stays dead */
  sim_handle old[1000];
  for (int i = 0; i < 1000; i++) {
    old[i] = sim_queue_push(&q, i, 0, &pa);
    assert_int_equal((uint32_t)old[i], (uint32_t)a);
    for (int j = 0; j < i; j++) assert_true(old[j] != old[i]);
    assert_int_equal(sim_queue_pop(&q, &t, &out), 1);
  }
  sim_handle live = sim_queue_push(&q, 1, 0, &pb);
  for (int i = 0; i < 1000; i++) assert_int_equal(sim_queue_cancel(&q, old[i]), 0);
  assert_int_equal(sim_queue_len(&q), 1);
  assert_int_equal(sim_queue_cancel(&q, live), 1);
  sim_queue_free(&q);
}

static void test_cancel_anywhere_keeps_heap(void **state) {
  (void)state;
  sim_queue q;
  sim_queue_init(&q);
  sim_rng g;
  sim_rng_seed(&g, 3);
  enum { N = 4000 };
  static sim_handle h[N];
  static int64_t tm[N];
  static int alive[N];
  for (int i = 0; i < N; i++) {
    sim_payload p = payload((uint64_t)i);
    tm[i] = (int64_t)sim_rng_below(&g, 1000);
    h[i] = sim_queue_push(&q, tm[i], 0, &p);
    alive[i] = 1;
  }
  /* cancel every third, from the middle of the heap mostly */
  for (int i = 0; i < N; i += 3) {
    assert_int_equal(sim_queue_cancel(&q, h[i]), 1);
    alive[i] = 0;
    if (i % 300 == 0) assert_true(sim_queue_check(&q));
  }
  assert_true(sim_queue_check(&q));
  int64_t last = INT64_MIN, t;
  sim_payload out;
  size_t popped = 0;
  while (sim_queue_pop(&q, &t, &out)) {
    assert_true(t >= last);
    assert_true(alive[out.arg]);
    assert_int_equal(t, tm[out.arg]);
    alive[out.arg] = 0;
    last = t;
    popped++;
  }
  assert_int_equal(popped, N - (N + 2) / 3);
  sim_queue_free(&q);
}

static void test_check_detects_corruption(void **state) {
  (void)state;
  sim_queue q;
  sim_queue_init(&q);
  for (uint64_t i = 0; i < 32; i++) { /* more than a bucket kept whole (NEAR_MAX) */
    sim_payload p = payload(i);
    sim_queue_push(&q, (int64_t)i, 0, &p);
  }
  int64_t t;
  sim_payload out;
  assert_int_equal(sim_queue_pop(&q, &t, &out), 1);   /* files into buckets */
  for (uint64_t i = 0; i < 4; i++) {                  /* four at the instant */
    sim_payload p = payload(100 + i);
    sim_queue_push(&q, 0, 9 - i, &p);
  }
  assert_true(sim_queue_check(&q));
  /* break the heap of the current instant */
  assert_true(q.cur.n >= 2);
  uint64_t saved = q.cur.v[0].key;
  q.cur.v[0].key = 1000;
  assert_false(sim_queue_check(&q));
  q.cur.v[0].key = saved;
  assert_true(sim_queue_check(&q));
  /* an entry in the wrong bucket */
  int b = 0;
  while (b < SIM_QUEUE_BUCKETS && q.bucket[b].n == 0) b++;
  assert_true(b < SIM_QUEUE_BUCKETS - 1);
  int64_t tsaved = q.bucket[b].v[0].time_us;
  q.bucket[b].v[0].time_us = INT64_MAX;
  assert_false(sim_queue_check(&q));
  q.bucket[b].v[0].time_us = tsaved;
  assert_true(sim_queue_check(&q));
  /* a cancelled entry stays filed, dead, and is counted as such */
  uint32_t victim = q.bucket[b].v[0].slot;
  sim_handle hv = ((sim_handle)q.slots[victim].gen << 32) | victim;
  assert_int_equal(sim_queue_cancel(&q, hv), 1);
  assert_int_equal(q.n_dead, 1);
  assert_true(sim_queue_check(&q));
  q.n_dead = 0;
  assert_false(sim_queue_check(&q));
  q.n_dead = 1;
  /* a live slot marked free */
  uint32_t s = q.cur.v[0].slot;
  q.slots[s].state = SIM_QSLOT_FREE;
  assert_false(sim_queue_check(&q));
  q.slots[s].state = SIM_QSLOT_LIVE;
  assert_true(sim_queue_check(&q));
  /* a lost free-list entry */
  q.n_free--;
  assert_false(sim_queue_check(&q));
  q.n_free++;
  assert_true(sim_queue_check(&q));
  sim_queue_free(&q);
  /* free re-initialises: usable again */
  sim_payload p = payload(9);
  assert_true(sim_queue_push(&q, 1, 0, &p) != 0);
  assert_int_equal(sim_queue_len(&q), 1);
  /* the kernel's teardown: no pointer left, a second release frees nothing,
  ** and init makes it a queue again */
  sim__queue_release(&q);
  assert_null(q.slots);
  assert_null(q.cur.v);
  sim__queue_release(&q);
  sim_queue_init(&q);
  assert_true(sim_queue_push(&q, 2, 0, &p) != 0);
  assert_int_equal(sim_queue_len(&q), 1);
  sim_queue_free(&q);
}

/* Dead entries are swept once they outnumber the live ones, and the order
** of what remains is kept; a far-future time and a time before the current
** instant (the late heap) pop in their place. */
static void test_sweep_and_late(void **state) {
  (void)state;
  sim_queue q;
  sim_queue_init(&q);
  enum { N = 5000 };
  static sim_handle h[N];
  for (int i = 0; i < N; i++) {
    sim_payload p = payload((uint64_t)i);
    h[i] = sim_queue_push(&q, 1000 + (i % 50), 0, &p);
  }
  for (int i = 0; i < N; i++)
    if (i % 10) assert_int_equal(sim_queue_cancel(&q, h[i]), 1);
  assert_true(q.n_dead < (size_t)N * 9 / 10);  /* a sweep ran */
  assert_true(sim_queue_check(&q));
  sim_payload p = payload(N), out;
  sim_queue_push(&q, INT64_MAX, 0, &p);
  int64_t t, prev = INT64_MIN;
  uint64_t prev_arg = 0;
  assert_int_equal(sim_queue_pop(&q, &t, &out), 1);
  assert_int_equal(t, 1000);
  /* now an event before the current instant: it must come next */
  p = payload(N + 1);
  sim_queue_push(&q, 5, 0, &p);
  assert_true(sim_queue_check(&q));
  assert_int_equal(sim_queue_pop(&q, &t, &out), 1);
  assert_int_equal(out.arg, N + 1);
  assert_int_equal(t, 5);
  size_t n = 0;
  while (sim_queue_pop(&q, &t, &out)) {
    assert_true(t > prev || (t == prev && out.arg > prev_arg));
    assert_true(out.arg == N || out.arg % 10 == 0);
    prev = t;
    prev_arg = out.arg;
    n++;
  }
  assert_int_equal(n, N / 10 - 1 + 1);
  assert_int_equal(prev, INT64_MAX);
  assert_true(sim_queue_check(&q));
  sim_queue_free(&q);
}

/* Issue #18: a freed queue keeps its 8-entry blocks for the next one,
** with the old entries still in them: a queue that files into kept blocks
** (and one after sim_queue_trim, into new ones) pops the same sequence. */
static void pop_sequence(uint64_t *out, int n) {
  sim_queue q;
  sim_queue_init(&q);
  for (int i = 0; i < n; i++) { /* times spread over many buckets, some equal */
    sim_payload p = payload((uint64_t)i);
    int64_t t = (int64_t)((i * 7919) % 61) * 1000 + (i % 3) * 100000;
    assert_true(sim_queue_push(&q, t, 0, &p) != 0);
  }
  assert_true(sim_queue_check(&q));
  for (int i = 0; i < n; i++) {
    int64_t t;
    sim_payload p;
    assert_int_equal(sim_queue_pop(&q, &t, &p), 1);
    out[i] = p.arg;
  }
  int64_t t;
  sim_payload p;
  assert_int_equal(sim_queue_pop(&q, &t, &p), 0);
  sim_queue_free(&q);
}

static void test_kept_blocks_same_order(void **state) {
  (void)state;
  enum { N = 120 };
  uint64_t first[N], kept[N], trimmed[N];
  sim_queue_trim();
  pop_sequence(first, N);   /* new blocks, kept when freed */
  pop_sequence(kept, N);    /* kept blocks, stale entries in them */
  sim_queue_trim();
  pop_sequence(trimmed, N); /* new blocks again */
  assert_memory_equal(first, kept, sizeof first);
  assert_memory_equal(first, trimmed, sizeof first);
}

/* An event pushed before `last` (which refill_near moved to the largest
** time of a small bucket) goes into the sorted run when at most 16 of the
** run's entries pop before it, and into the late heap otherwise; the pops
** keep the full order either way. */
static void test_push_before_last_joins_the_run(void **state) {
  (void)state;
  sim_queue q;
  sim_queue_init(&q);
  sim_payload p, out;
  int64_t t;
  for (int i = 0; i < 8; i++) { /* one bucket: 0x100 + 32 i */
    p = payload((uint64_t)i);
    assert_true(sim_queue_push(&q, 256 + 32 * i, 0, &p) != 0);
  }
  assert_int_equal(sim_queue_pop(&q, &t, &out), 1);
  assert_int_equal(t, 256);
  assert_int_equal(q.run.n, 7);   /* last is now 480 */
  for (int k = 0; k < 18; k++) {  /* each later than the ones before: moves k entries */
    p = payload(100 + (uint64_t)k);
    assert_true(sim_queue_push(&q, 257 + k, 0, &p) != 0);
    assert_int_equal(q.late.n, k < 17 ? 0 : 1);
    assert_true(sim_queue_check(&q));
  }
  assert_int_equal(q.run.n, 7 + 17);
  int64_t prev = INT64_MIN;
  size_t n = 0;
  while (sim_queue_pop(&q, &t, &out)) {
    assert_true(t > prev);
    assert_int_equal(out.arg, t < 288 ? 100 + (uint64_t)(t - 257) : (uint64_t)(t - 256) / 32);
    prev = t;
    n++;
  }
  assert_int_equal(n, 7 + 18);
  assert_true(sim_queue_check(&q));
  sim_queue_free(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_ops_against_reference),
      cmocka_unit_test(test_push_before_last_joins_the_run),
      cmocka_unit_test(test_order_time_key_seq),
      cmocka_unit_test(test_fifo_among_equals),
      cmocka_unit_test(test_cancel_dead_handles),
      cmocka_unit_test(test_generation_guards_reused_slot),
      cmocka_unit_test(test_cancel_anywhere_keeps_heap),
      cmocka_unit_test(test_check_detects_corruption),
      cmocka_unit_test(test_sweep_and_late),
      cmocka_unit_test(test_kept_blocks_same_order),
  };
  return cmocka_run_group_tests_name("sim_queue", tests, NULL, NULL) != 0;
}
