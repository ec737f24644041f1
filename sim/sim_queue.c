/*
** sim_queue.c: radix heap on time in front of two binary heaps, keyed on
** (time, key, seq). See sim_queue.h for the contract and the layout.
*/
#include "sim_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_asan.h"

/* Compaction threshold: dead (cancelled) entries are swept out once there
** are more of them than live ones and at least this many. */
#define DEAD_SWEEP_MIN 1024

/* Times as unsigned with the order kept: INT64_MIN -> 0. */
static inline uint64_t ubias(int64_t t) {
  return (uint64_t)t ^ 0x8000000000000000ULL;
}

/* The bucket of u relative to last (u > last): VALUES * L + d, where L is
** the top digit (SIM_QUEUE_DIGIT bits) in which they differ and d is u's value
** of that digit. Buckets in index order hold ever larger times, and an
** entry refiled from bucket VALUES * L + d lands below level L: a move
** drops at least one digit, where a binary radix heap drops one bit. */
static inline unsigned bucket_of(uint64_t u, uint64_t last) {
  unsigned L = (63u - (unsigned)__builtin_clzll(u ^ last)) / SIM_QUEUE_DIGIT;
  return L * SIM_QUEUE_VALUES +
         (unsigned)((u >> (L * SIM_QUEUE_DIGIT)) & (SIM_QUEUE_VALUES - 1));
}

static inline void mark_filled(sim_queue *q, unsigned i) {
  q->filled[i >> 6] |= 1ull << (i & 63);
}

static inline void mark_empty(sim_queue *q, unsigned i) {
  q->filled[i >> 6] &= ~(1ull << (i & 63));
}

static inline int is_filled(const sim_queue *q, unsigned i) {
  return (int)((q->filled[i >> 6] >> (i & 63)) & 1);
}

/* The lowest bucket holding entries, or -1. */
static inline int lowest_filled(const sim_queue *q) {
  for (int w = 0; w < SIM_QUEUE_WORDS; w++)
    if (q->filled[w]) return w * 64 + __builtin_ctzll(q->filled[w]);
  return -1;
}

int sim_queue_init(sim_queue *q) {
  q->late.v = q->run.v = q->cur.v = NULL;
  q->late.n = q->late.cap = q->cur.n = q->cur.cap = 0;
  q->run.n = q->run.cap = 0;
  for (int i = 0; i < SIM_QUEUE_BUCKETS; i++) {
    q->bucket[i].v = NULL;
    q->bucket[i].n = q->bucket[i].cap = 0;
    q->bmin[i] = INT64_MAX;
  }
  q->last = 0;
  for (int w = 0; w < SIM_QUEUE_WORDS; w++) q->filled[w] = 0;
  q->n = q->n_dead = 0;
  q->slots = NULL;
  q->free_slots = NULL;
  q->n_slots = q->n_free = q->slot_cap = 0;
  q->next_seq = 1;
  return 0;
}

/* ---- first blocks kept between queues -----------------------------------
** A short run (a kill/recover cycle makes a new kernel each time, issue
** #18) files its ~20 events in as many buckets, each taking an 8-entry
** block, and frees them all at its end: more blocks of one size than
** glibc's per-thread cache holds, so most went through its bins (malloc
** and free were 10 % of the cycle). Up to SPARE_MAX such blocks are kept
** for the next queue of the process (no simulation runs in a thread of its
** own: DESIGN.md rule 1; addresses never decide anything). Under
** AddressSanitizer nothing is kept: a kept block would hide a use after
** free from it. */
#define FIRST_CAP 8
#define SPARE_MAX 64

#define SPARE_OFF SIM_ASAN

static sim_qentry *spare[SPARE_MAX];
static int n_spare;

/* Frees v's block, or keeps it if it is a first block and there is room;
** v is left empty. */
static void vec_drop(sim_qvec *v) {
  if (!v->v) return;
  if (!SPARE_OFF && v->cap == FIRST_CAP && n_spare < SPARE_MAX)
    spare[n_spare++] = v->v;
  else
    free(v->v);
  v->v = NULL;
  v->n = v->cap = 0;
}

void sim__queue_release(sim_queue *q) {
  vec_drop(&q->late);
  vec_drop(&q->run);
  vec_drop(&q->cur);
  for (int i = 0; i < SIM_QUEUE_BUCKETS; i++) vec_drop(&q->bucket[i]);
  free(q->slots);
  free(q->free_slots);
  q->slots = NULL;
  q->free_slots = NULL;
}

void sim_queue_free(sim_queue *q) {
  sim__queue_release(q);
  sim_queue_init(q);
}

void sim_queue_trim(void) {
  while (n_spare > 0) free(spare[--n_spare]);
}

static inline int entry_less(const sim_qentry *a, const sim_qentry *b) {
  if (a->time_us != b->time_us) return a->time_us < b->time_us;
  if (a->key != b->key) return a->key < b->key;
  return a->seq < b->seq;
}

/* An entry is live while its slot still carries the generation it was
** filed with; cancel and pop move the generation on. */
static inline int entry_live(const sim_queue *q, const sim_qentry *e) {
  return q->slots[e->slot].gen == e->pad;
}

static int vec_reserve(sim_qvec *v, size_t need) {
  if (need <= v->cap) return 0;
  /* 8 entries (256 bytes) first: a short run files a few events in each
  ** of many buckets, and glibc serves blocks this small from its per-thread
  ** cache (issue #18: 64-entry blocks were 2.4 % of a kill/recover cycle) */
  if (v->cap == 0 && need <= FIRST_CAP && n_spare > 0) {
    v->v = spare[--n_spare];
    v->cap = FIRST_CAP;
    return 0;
  }
  size_t nc = v->cap ? v->cap * 2 : FIRST_CAP;
  while (nc < need) nc *= 2;
  sim_qentry *nv = realloc(v->v, nc * sizeof *nv);
  if (!nv) return -1;
  v->v = nv;
  v->cap = nc;
  return 0;
}

/* ---- binary heaps (late, cur) ------------------------------------------ */

/* The sift loops keep the array and its length in locals: an entry store
** may alias a size_t or uint64_t field of the vector (same type), so the
** compiler would otherwise reload them on every level. */
static void heap_sift_up(sim_qvec *h, size_t i) {
  sim_qentry *v = h->v;
  sim_qentry e = v[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!entry_less(&e, &v[parent])) break;
    v[i] = v[parent];
    i = parent;
  }
  v[i] = e;
}

static void heap_sift_down(sim_qvec *h, size_t i) {
  sim_qentry *v = h->v;
  const size_t n = h->n;
  sim_qentry e = v[i];
  for (;;) {
    size_t l = 2 * i + 1, best;
    if (l >= n) break;
    best = l;
    if (l + 1 < n && entry_less(&v[l + 1], &v[l])) best = l + 1;
    if (!entry_less(&v[best], &e)) break;
    v[i] = v[best];
    i = best;
  }
  v[i] = e;
}

static void heap_pop_top(sim_qvec *h) {
  h->n--;
  if (h->n == 0) return;
  h->v[0] = h->v[h->n];
  heap_sift_down(h, 0);
}

static void heapify(sim_qvec *h) {
  for (size_t i = h->n / 2; i-- > 0;) heap_sift_down(h, i);
}

/* ---- slots -------------------------------------------------------------- */

static int alloc_slot(sim_queue *q, uint32_t *out) {
  if (q->n_free) {
    *out = q->free_slots[--q->n_free];
    return 0;
  }
  if (q->n_slots == q->slot_cap) {
    /* The free list must hold every slot, so it grows first: if growing the
    ** slots then fails, slot_cap still bounds both arrays. */
    size_t nc = q->slot_cap ? q->slot_cap * 2 : 64;
    if (nc > UINT32_MAX) return -1;       /* slot ids are 32-bit */
    uint32_t *nf = realloc(q->free_slots, nc * sizeof(uint32_t));
    if (!nf) return -1;
    q->free_slots = nf;
    sim_qslot *ns = realloc(q->slots, nc * sizeof(sim_qslot));
    if (!ns) return -1;
    q->slots = ns;
    q->slot_cap = nc;
  }
  q->slots[q->n_slots].gen = 1;
  q->slots[q->n_slots].state = SIM_QSLOT_FREE;
  *out = (uint32_t)q->n_slots++;
  return 0;
}

/* Ends a slot's life (popped or cancelled): its handle and any entry filed
** with it go dead, and the slot is free for reuse. */
static void release_slot(sim_queue *q, uint32_t slot) {
  sim_qslot *s = &q->slots[slot];
  s->gen++;
  if (s->gen == 0) s->gen = 1;
  s->state = SIM_QSLOT_FREE;
  q->free_slots[q->n_free++] = slot;
}

/* ---- push, cancel, pop ------------------------------------------------- */

#define RUN_SCAN 16 /* at most this many run entries move for one insertion */

/* Where entry e (time below last) goes in the run, which stays sorted
** largest first: the index before the run's entries that pop before e, or
** SIZE_MAX when more than RUN_SCAN of them would have to move (the late
** heap takes it then). The common case: an event due soon, pushed while the
** run holds a small bucket up to a later time (refill_near moves last to
** its largest time); in a 7-day #1595 run 95,000 of 97,000 pushes before
** last. In the run they leave the pops on the fast path. */
static size_t run_place(const sim_qvec *run, const sim_qentry *e) {
  size_t i = run->n;
  while (i > 0 && entry_less(&run->v[i - 1], e)) {
    if (run->n - i >= RUN_SCAN) return SIZE_MAX;
    i--;
  }
  return i;
}

/* Files entry e at index `at` of the run (room reserved). */
static void run_insert(sim_qvec *run, size_t at, const sim_qentry *e) {
  memmove(&run->v[at + 1], &run->v[at], (run->n - at) * sizeof *e);
  run->v[at] = *e;
  run->n++;
}

/* sim_queue_push in full: any time, and growing the bucket or the slot
** pool when they are full. Kept out of line so that the common case below
** stays small (fewer registers saved per push). */
static __attribute__((noinline)) sim_handle
push_slow(sim_queue *q, int64_t time_us, uint64_t key, const sim_payload *p) {
  const uint64_t u = ubias(time_us), last = q->last;
  unsigned bi = 0;
  size_t at = SIZE_MAX;
  sim_qentry e = {time_us, key, q->next_seq, 0, 0};
  sim_qvec *v;
  if (u > last) {
    bi = bucket_of(u, last);
    v = &q->bucket[bi];
  } else if (u == last) {
    v = &q->cur;
  } else {
    at = run_place(&q->run, &e);
    v = at != SIZE_MAX ? &q->run : &q->late;
  }
  const size_t vn = v->n;         /* locals: stores below may alias v->n */
  if (vn == v->cap && vec_reserve(v, vn + 1)) return 0;
  uint32_t slot;
  if (alloc_slot(q, &slot)) return 0;
  sim_qslot *s = &q->slots[slot];
  const uint32_t gen = s->gen;
  s->p = *p;
  s->state = SIM_QSLOT_LIVE;
  q->next_seq++;
  e.slot = slot;
  e.pad = gen;
  if (at != SIZE_MAX) {
    run_insert(v, at, &e);
  } else {
    v->v[vn] = e;
    v->n = vn + 1;
    if (u > last) {
      mark_filled(q, bi);
      if (time_us < q->bmin[bi]) q->bmin[bi] = time_us;
    } else {
      heap_sift_up(v, vn);
    }
  }
  q->n++;
  return ((uint64_t)gen << 32) | slot;
}

sim_handle sim_queue_push(sim_queue *q, int64_t time_us, uint64_t key,
                          const sim_payload *p) {
  /* The common case: a future time, a bucket with room, a free slot. */
  const uint64_t u = ubias(time_us), last = q->last;
  if (u <= last || q->n_free == 0) return push_slow(q, time_us, key, p);
  const unsigned bi = bucket_of(u, last);
  sim_qvec *v = &q->bucket[bi];
  const size_t vn = v->n;
  if (vn == v->cap) return push_slow(q, time_us, key, p);
  const uint32_t slot = q->free_slots[--q->n_free];
  sim_qslot *s = &q->slots[slot];
  const uint32_t gen = s->gen;
  s->p = *p;
  s->state = SIM_QSLOT_LIVE;
  sim_qentry *e = &v->v[vn];
  e->time_us = time_us;
  e->key = key;
  e->seq = q->next_seq++;
  e->slot = slot;
  e->pad = gen;
  v->n = vn + 1;
  mark_filled(q, bi);
  if (time_us < q->bmin[bi]) q->bmin[bi] = time_us;
  q->n++;
  return ((uint64_t)gen << 32) | slot;
}

/* Drops dead entries from v, keeping the others in their order. */
static void vec_sweep(sim_queue *q, sim_qvec *v) {
  size_t k = 0;
  for (size_t i = 0; i < v->n; i++)
    if (entry_live(q, &v->v[i])) v->v[k++] = v->v[i];
  q->n_dead -= v->n - k;
  v->n = k;
}

static void sweep_dead(sim_queue *q) {
  vec_sweep(q, &q->late);
  heapify(&q->late);
  vec_sweep(q, &q->run);          /* keeps the order: still sorted */
  vec_sweep(q, &q->cur);
  heapify(&q->cur);
  for (int i = 0; i < SIM_QUEUE_BUCKETS; i++) {
    sim_qvec *b = &q->bucket[i];
    vec_sweep(q, b);
    if (b->n == 0) mark_empty(q, (unsigned)i);
    q->bmin[i] = INT64_MAX;
    for (size_t j = 0; j < b->n; j++)
      if (b->v[j].time_us < q->bmin[i]) q->bmin[i] = b->v[j].time_us;
  }
}

int sim_queue_cancel(sim_queue *q, sim_handle h) {
  uint32_t slot = (uint32_t)h, gen = (uint32_t)(h >> 32);
  if (h == 0 || slot >= q->n_slots) return 0;
  sim_qslot *s = &q->slots[slot];
  if (s->gen != gen || s->state != SIM_QSLOT_LIVE) return 0;
  release_slot(q, slot);
  q->n--;
  q->n_dead++;
  if (q->n_dead >= DEAD_SWEEP_MIN && q->n_dead > q->n) sweep_dead(q);
  return 1;
}

/* A bucket this small is not spread over lower buckets (each entry would
** move a few times more): `last` jumps to its largest time and the entries,
** sorted, go to the run, which keeps the full order (an event pushed later
** at that time goes to cur, and the smaller top pops first). Every other
** bucket is above all of them, and keeps its index relative to the new
** `last` (it shares the bits above this bucket's). */
#define NEAR_MAX 16

/* Sorts the k (<= NEAR_MAX) entries of src into dst, largest first. Each
** entry goes straight to its rank by time (how many entries are later, an
** equal time counting as later when it sits earlier in src), counted
** without branches: the comparisons of a small sort are coin flips, and a
** mispredicted branch costs more than the few extra instructions. Equal
** times are then put in (key, seq) order by an insertion pass, which costs
** one comparison per entry when there are none. */
static void sort_near(sim_qentry *dst, const sim_qentry *src, size_t k) {
  int64_t t[NEAR_MAX];
  for (size_t a = 0; a < k; a++) t[a] = src[a].time_us;
  for (size_t a = 0; a < k; a++) {
    const int64_t ta = t[a];
    size_t r = 0;
    for (size_t c = 0; c < a; c++) r += t[c] >= ta;
    for (size_t c = a + 1; c < k; c++) r += t[c] > ta;
    dst[r] = src[a];
  }
  for (size_t j = 1; j < k; j++) {
    if (dst[j].time_us != dst[j - 1].time_us) continue;
    const sim_qentry e = dst[j];
    size_t i = j;
    while (i > 0 && entry_less(&dst[i - 1], &e)) {
      dst[i] = dst[i - 1];
      i--;
    }
    dst[i] = e;
  }
}

static void refill_near(sim_queue *q, int i) {
  sim_qvec *b = &q->bucket[i];
  if (vec_reserve(&q->run, b->n)) {
    fprintf(stderr, "revenant: out of memory in the event queue\n");
    abort();
  }
  /* Here late, run and cur are empty: the run is the sorted bucket. */
  sort_near(q->run.v, b->v, b->n);
  q->run.n = b->n;
  for (size_t j = 0; j < b->n; j++)
    __builtin_prefetch(&q->slots[b->v[j].slot]);
  q->last = ubias(q->run.v[0].time_us);   /* the largest */
  b->n = 0;
  q->bmin[i] = INT64_MAX;
  mark_empty(q, (unsigned)i);
}

/* The current instant is exhausted (late, run and cur empty): moves `last` to
** the smallest live time of the lowest non-empty bucket and files that
** bucket's entries again, each into a lower bucket or into cur (a small
** bucket goes whole into the run). Returns 0 when no live entry is left. */
static int refill(sim_queue *q) {
  for (int i; (i = lowest_filled(q)) >= 0;) {
    sim_qvec *b = &q->bucket[i];
    /* One pass: the smallest live time, dead entries dropped on the way. */
    int64_t m = INT64_MAX;
    size_t k = 0;
    if (q->n_dead) {
      for (size_t j = 0; j < b->n; j++) {
        if (!entry_live(q, &b->v[j])) continue;
        if (b->v[j].time_us < m) m = b->v[j].time_us;
        b->v[k++] = b->v[j];
      }
      q->n_dead -= b->n - k;
      b->n = k;
      if (k == 0) {
        q->bmin[i] = INT64_MAX;
        mark_empty(q, (unsigned)i);
        continue;
      }
    } else {
      m = q->bmin[i]; /* kept on every filing: no pass needed */
    }
    if (b->n <= NEAR_MAX) {
      refill_near(q, i);
      return 1;
    }
    const uint64_t um = ubias(m);
    q->last = um;
    /* Locals for everything the loop reads: an entry store may alias a
    ** size_t or uint64_t field of q (same type), which would otherwise be
    ** reloaded per entry. */
    const sim_qentry *src = b->v;
    const size_t bn = b->n;
    uint64_t filled[SIM_QUEUE_WORDS];
    for (int w = 0; w < SIM_QUEUE_WORDS; w++) filled[w] = q->filled[w];
    for (size_t j = 0; j < bn; j++) {
      const sim_qentry e = src[j];
      sim_qvec *t;
      unsigned to = 0;
      if (e.time_us == m) {
        t = &q->cur;
      } else {
        /* Every target is below bucket i, so b itself is never appended to. */
        to = bucket_of(ubias(e.time_us), um);
        t = &q->bucket[to];
        filled[to >> 6] |= 1ull << (to & 63);
        int64_t bm = q->bmin[to];
        q->bmin[to] = e.time_us < bm ? e.time_us : bm;
      }
      size_t tn = t->n;
      if (tn == t->cap && vec_reserve(t, tn + 1)) {
        /* Out of memory half-way: no order can be kept; stop loudly
        ** rather than lose events silently. */
        fprintf(stderr, "revenant: out of memory in the event queue\n");
        abort();
      }
      t->v[tn] = e;
      t->n = tn + 1;
      /* Entries filed this low pop within the next few refills: start
      ** loading their slots now (a large pending set is cache-cold). */
      if (to < SIM_QUEUE_VALUES) __builtin_prefetch(&q->slots[e.slot]);
    }
    for (int w = 0; w < SIM_QUEUE_WORDS; w++) q->filled[w] = filled[w];
    b->n = 0;
    q->bmin[i] = INT64_MAX;
    mark_empty(q, (unsigned)i);
    if (q->cur.n > 1) heapify(&q->cur);
    return 1;
  }
  return 0;
}

/* The vector whose top pops next among late, run and cur, or NULL when
** all three are empty. Late holds times below last, run times up to last
** and cur times at last: each may hold the smallest. */
static inline sim_qvec *top_vec(sim_queue *q) {
  sim_qvec *h = NULL;
  const sim_qentry *best = NULL;
  if (q->run.n) {
    h = &q->run;
    best = &q->run.v[q->run.n - 1];
  }
  if (q->late.n && (!best || entry_less(&q->late.v[0], best))) {
    h = &q->late;
    best = &q->late.v[0];
  }
  if (q->cur.n && (!best || entry_less(&q->cur.v[0], best))) h = &q->cur;
  return h;
}

static inline sim_qentry *vec_top(sim_qvec *h, const sim_queue *q) {
  return h == &q->run ? &h->v[h->n - 1] : &h->v[0];
}

static inline void vec_pop_top(sim_qvec *h, const sim_queue *q) {
  if (h == &q->run) h->n--;
  else heap_pop_top(h);
}

const sim_qentry *sim_queue_peek(sim_queue *q) {
  for (;;) {
    sim_qvec *h = top_vec(q);
    if (h) {
      sim_qentry *top = vec_top(h, q);
      if (entry_live(q, top)) return top;
      vec_pop_top(h, q);
      q->n_dead--;
      continue;
    }
    if (q->n == 0) {
      /* only dead entries may remain: drop them */
      if (q->n_dead) sweep_dead(q);
      return NULL;
    }
    refill(q);
  }
}

/* sim_queue_pop_until in full: every vector, dead entries, refills. */
static __attribute__((noinline)) int
pop_until_slow(sim_queue *q, int64_t end_us, int64_t *out_time,
               sim_payload *out_p) {
  for (;;) {
    sim_qvec *h = top_vec(q);
    if (!h) {
      if (q->n == 0) {
        if (q->n_dead) sweep_dead(q);   /* only dead entries remain */
        return 0;
      }
      refill(q);
      continue;
    }
    const sim_qentry *top = vec_top(h, q);
    sim_qslot *s = &q->slots[top->slot];
    if (s->gen != top->pad) {           /* cancelled: drop it */
      vec_pop_top(h, q);
      q->n_dead--;
      continue;
    }
    if (top->time_us > end_us) return -1;
    *out_time = top->time_us;
    *out_p = s->p;
    release_slot(q, top->slot);
    q->n--;
    vec_pop_top(h, q);
    return 1;
  }
}

int sim_queue_pop_until(sim_queue *q, int64_t end_us, int64_t *out_time,
                        sim_payload *out_p) {
  /* The common case: the run's last entry, live, nothing late or at the
  ** current instant to compare it with. */
  const size_t rn = q->run.n;
  if (rn == 0 || q->late.n || q->cur.n)
    return pop_until_slow(q, end_us, out_time, out_p);
  const sim_qentry *top = &q->run.v[rn - 1];
  const uint32_t slot = top->slot;
  sim_qslot *s = &q->slots[slot];
  if (s->gen != top->pad || top->time_us > end_us)
    return pop_until_slow(q, end_us, out_time, out_p);
  *out_time = top->time_us;
  *out_p = s->p;
  release_slot(q, slot);
  q->n--;
  q->run.n = rn - 1;
  return 1;
}

int sim_queue_pop(sim_queue *q, int64_t *out_time, sim_payload *out_p) {
  return sim_queue_pop_until(q, INT64_MAX, out_time, out_p) > 0;
}

/* ---- checking ----------------------------------------------------------- */

static int heap_ok(const sim_qvec *h) {
  for (size_t i = 1; i < h->n; i++)
    if (entry_less(&h->v[i], &h->v[(i - 1) / 2])) return 0;
  return 1;
}

int sim_queue_check(const sim_queue *q) {
  size_t live = 0, dead = 0;
  const sim_qvec *all[SIM_QUEUE_BUCKETS + 3];
  all[0] = &q->late;
  all[1] = &q->cur;
  for (int i = 0; i < SIM_QUEUE_BUCKETS; i++) all[i + 2] = &q->bucket[i];
  all[SIM_QUEUE_BUCKETS + 2] = &q->run;
  if (!heap_ok(&q->late) || !heap_ok(&q->cur)) return 0;
  for (size_t i = 1; i < q->run.n; i++)
    if (entry_less(&q->run.v[i - 1], &q->run.v[i])) return 0;
  for (int i = 0; i < SIM_QUEUE_BUCKETS; i++) {
    if (is_filled(q, (unsigned)i) != (q->bucket[i].n > 0)) return 0;
    int64_t m = INT64_MAX;
    for (size_t k = 0; k < q->bucket[i].n; k++)
      if (q->bucket[i].v[k].time_us < m) m = q->bucket[i].v[k].time_us;
    if (m != q->bmin[i]) return 0;
  }
  for (int a = 0; a < SIM_QUEUE_BUCKETS + 3; a++) {
    const sim_qvec *v = all[a];
    for (size_t k = 0; k < v->n; k++) {
      const sim_qentry *e = &v->v[k];
      uint64_t u = ubias(e->time_us);
      if (e->slot >= q->n_slots || e->pad == 0) return 0;
      if (a == 0 && !(u < q->last)) return 0;
      if (a == 1 && u != q->last) return 0;
      if (a == SIM_QUEUE_BUCKETS + 2 && !(u <= q->last)) return 0;
      if (a >= 2 && a < SIM_QUEUE_BUCKETS + 2 && (u <= q->last || bucket_of(u, q->last) != (unsigned)(a - 2)))
        return 0;
      if (entry_live(q, e)) {
        if (q->slots[e->slot].state != SIM_QSLOT_LIVE) return 0;
        live++;
      } else {
        dead++;
      }
    }
  }
  if (live != q->n || dead != q->n_dead) return 0;
  /* The slot pool: every slot is either live (filed once, counted above)
  ** or on the free list. */
  if (q->n + q->n_free != q->n_slots) return 0;
  size_t n_live_slots = 0;
  for (size_t s = 0; s < q->n_slots; s++) {
    if (q->slots[s].gen == 0) return 0;
    if (q->slots[s].state == SIM_QSLOT_LIVE) n_live_slots++;
    else if (q->slots[s].state != SIM_QSLOT_FREE) return 0;
  }
  if (n_live_slots != q->n) return 0;
  for (size_t i = 0; i < q->n_free; i++) {
    uint32_t s = q->free_slots[i];
    if (s >= q->n_slots || q->slots[s].state != SIM_QSLOT_FREE) return 0;
  }
  return 1;
}
