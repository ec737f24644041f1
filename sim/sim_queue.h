/*
** sim_queue.h: the pending-event queue of the simulation kernel.
**
** Events pop by (time, tie-break key, insertion sequence). The key is
** chosen by the scheduler strategy when the event is pushed; the sequence
** makes every order total, so two runs that push the same events pop them
** in the same order, whatever the internal layout. Events live in a slot
** pool; a handle names a slot and its generation, so cancelling a popped or
** already cancelled event is a harmless no-op. Nothing here orders by
** pointer value.
**
** Layout: a radix heap on time (Ahuja, Mehlhorn, Orlin, Tarjan 1990) in
** front of two small binary heaps. Simulated time only moves forward, so
** an event is filed in the bucket of the highest bit in which its time
** differs from `last`, the time of the current instant; buckets are
** unsorted arrays that are appended to and scanned sequentially, and only
** the events of the current instant sit in a heap (ordered by key, then
** sequence). An event pushed before the current instant (possible for a
** direct user of the queue, and when the kernel looked past its end time)
** goes to a `late` heap with the full order. A bucket of at most 16
** entries is not spread further: `last` jumps to its largest time and the
** entries are sorted into `run` (by rank, without branches on the
** comparisons), popped from its end. An event pushed below `last` joins
** the run by insertion when at most 16 of its entries pop first (an event
** due soon, while the run holds a bucket up to a later time: nearly every
** push below `last` in a long run), else the late heap. Late, run and cur may each hold the
** smallest entry (late times below last, run times up to last, cur times
** at last): the least of their three tops pops first, and the common case
** (only the run holding entries) pops without comparing. Buckets are per
** 4-bit digit (SIM_QUEUE_DIGIT), not per bit. A pending set of a million
** events thus costs a few sequential passes per event instead of a walk
** down a cold heap. Cancellation marks the slot; the entry is dropped when
** it is reached, or when the dead entries outnumber the live ones.
*/
#ifndef SIM_QUEUE_H
#define SIM_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct sim;
typedef uint64_t sim_handle;      /* 0 is never a valid handle */

typedef struct sim_payload {
  void (*fn)(struct sim *s, void *ctx, uint64_t arg);
  void *ctx;
  uint64_t arg;
  uint32_t domain;                /* cancellation domain, see sim.h */
  uint32_t domain_gen;
} sim_payload;

typedef struct sim_qentry {       /* queue entry: keys inline for cache */
  int64_t time_us;
  uint64_t key;
  uint64_t seq;
  uint32_t slot;
  uint32_t pad;
} sim_qentry;

typedef struct sim_qslot {
  sim_payload p;
  uint32_t gen;
  uint32_t state;                 /* SIM_QSLOT_FREE / _LIVE / _CANCELLED */
} sim_qslot;

enum { SIM_QSLOT_FREE = 0, SIM_QSLOT_LIVE = 1, SIM_QSLOT_CANCELLED = 2 };

typedef struct sim_qvec {         /* a growable array of entries */
  sim_qentry *v;
  size_t n, cap;
} sim_qvec;

#define SIM_QUEUE_DIGIT 4         /* bits per radix digit */
#define SIM_QUEUE_VALUES (1 << SIM_QUEUE_DIGIT)      /* values of a digit */
#define SIM_QUEUE_LEVELS ((64 + SIM_QUEUE_DIGIT - 1) / SIM_QUEUE_DIGIT)
#define SIM_QUEUE_BUCKETS (SIM_QUEUE_LEVELS * SIM_QUEUE_VALUES)
#define SIM_QUEUE_WORDS ((SIM_QUEUE_BUCKETS + 63) / 64) /* of the filled mask */

typedef struct sim_queue {
  sim_qvec late;                  /* heap (time, key, seq): time < last */
  sim_qvec run;                   /* sorted, largest first (time, key, seq):
                                     a small bucket's entries, time <= last */
  sim_qvec cur;                   /* heap (key, seq): time == last */
  sim_qvec bucket[SIM_QUEUE_BUCKETS]; /* [VALUES * L + d]: the top digit in
                                      which time and last differ is digit L,
                                      and time's digit L is d */
  int64_t bmin[SIM_QUEUE_BUCKETS]; /* smallest time filed in bucket[i], dead
                                      entries included (INT64_MAX: empty) */
  uint64_t filled[SIM_QUEUE_WORDS]; /* bit i: bucket[i] holds entries */
  uint64_t last;                  /* the current instant, biased unsigned */
  size_t n;                       /* live (pending) events */
  size_t n_dead;                  /* cancelled entries still filed */
  sim_qslot *slots;
  uint32_t *free_slots;
  size_t n_slots, n_free, slot_cap;
  uint64_t next_seq;
} sim_queue;

/* Initialises an empty queue. Returns 0. */
int sim_queue_init(sim_queue *q);

/* Frees all memory held by q. q may be re-initialised afterwards. Up to
** 64 of its smallest entry blocks (8 entries) are kept for the next queue
** of the process instead (not under AddressSanitizer): sim_queue_trim
** frees them. */
void sim_queue_free(sim_queue *q);

/* Frees the entry blocks sim_queue_free kept (none is in use). */
void sim_queue_trim(void);

/* sim_queue_free without making q an empty queue again: q holds no
** pointer afterwards, the rest is stale until sim_queue_init. For the
** kernel's teardown, which zeroes q itself (issue #18: the second pass over
** the 256 buckets was 1 % of a kill/recover cycle). */
void sim__queue_release(sim_queue *q);

/* Pushes an event. Returns its handle, or 0 on allocation failure. */
sim_handle sim_queue_push(sim_queue *q, int64_t time_us, uint64_t key,
                          const sim_payload *p);

/* Removes a pending event. Returns 1 if it was pending, 0 otherwise. */
int sim_queue_cancel(sim_queue *q, sim_handle h);

/* Number of pending events. */
static inline size_t sim_queue_len(const sim_queue *q) { return q->n; }

/* The smallest pending entry, or NULL when empty. May reorganise the queue
** (never its order). Valid until the next push, pop or cancel. */
const sim_qentry *sim_queue_peek(sim_queue *q);

/* Pops the smallest event into *out_time, *out_p. Returns 1, or 0 when
** empty. */
int sim_queue_pop(sim_queue *q, int64_t *out_time, sim_payload *out_p);

/* Pops the smallest event into *out_time, *out_p if its time is at most
** end_us: returns 1. Returns 0 when the queue is empty, and -1 (nothing
** popped) when the smallest lies beyond end_us. One look at the top where
** peek then pop take two: the kernel's run loop. */
int sim_queue_pop_until(sim_queue *q, int64_t end_us, int64_t *out_time,
                        sim_payload *out_p);

/* Checks the layout (heap properties, bucket membership) and the slot
** pool; returns 1 if sound. For tests and asserts. */
int sim_queue_check(const sim_queue *q);

#endif
