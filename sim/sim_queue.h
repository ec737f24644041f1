/*
** sim_queue.h: the pending-event queue of the simulation kernel.
**
** A binary min-heap ordered by (time, tie-break key, insertion sequence).
** The key is chosen by the scheduler strategy when the event is pushed; the
** sequence makes every order total, so two runs that push the same events
** pop them in the same order. Events live in a slot pool; a handle names a
** slot and its generation, so cancelling a popped or already cancelled event
** is a harmless no-op. Nothing here orders by pointer value.
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

typedef struct sim_qentry {       /* heap entry: keys inline for cache */
  int64_t time_us;
  uint64_t key;
  uint64_t seq;
  uint32_t slot;
  uint32_t pad;
} sim_qentry;

typedef struct sim_qslot {
  sim_payload p;
  uint32_t gen;
  uint32_t heap_pos;              /* UINT32_MAX when free */
} sim_qslot;

typedef struct sim_queue {
  sim_qentry *heap;
  size_t n, cap;
  sim_qslot *slots;
  uint32_t *free_slots;
  size_t n_slots, n_free, slot_cap;
  uint64_t next_seq;
} sim_queue;

/* Initialises an empty queue. Returns 0. */
int sim_queue_init(sim_queue *q);

/* Frees all memory held by q. q may be re-initialised afterwards. */
void sim_queue_free(sim_queue *q);

/* Pushes an event. Returns its handle, or 0 on allocation failure. */
sim_handle sim_queue_push(sim_queue *q, int64_t time_us, uint64_t key,
                          const sim_payload *p);

/* Removes a pending event. Returns 1 if it was pending, 0 otherwise. */
int sim_queue_cancel(sim_queue *q, sim_handle h);

/* Number of pending events. */
static inline size_t sim_queue_len(const sim_queue *q) { return q->n; }

/* The smallest pending entry, or NULL when empty. Valid until the next
** push, pop or cancel. */
static inline const sim_qentry *sim_queue_peek(const sim_queue *q) {
  return q->n ? &q->heap[0] : NULL;
}

/* Pops the smallest event into *out_time, *out_p. Returns 1, or 0 when
** empty. */
int sim_queue_pop(sim_queue *q, int64_t *out_time, sim_payload *out_p);

/* Checks the heap property and slot back-pointers; returns 1 if sound.
** For tests and asserts. */
int sim_queue_check(const sim_queue *q);

#endif
