/*
** sim_queue.c: slot-pool binary heap keyed on (time, key, seq). See
** sim_queue.h for the contract.
*/
#include "sim_queue.h"

#include <stdlib.h>

int sim_queue_init(sim_queue *q) {
  q->heap = NULL;
  q->n = q->cap = 0;
  q->slots = NULL;
  q->free_slots = NULL;
  q->n_slots = q->n_free = q->slot_cap = 0;
  q->next_seq = 1;
  return 0;
}

void sim_queue_free(sim_queue *q) {
  free(q->heap);
  free(q->slots);
  free(q->free_slots);
  sim_queue_init(q);
}

static inline int entry_less(const sim_qentry *a, const sim_qentry *b) {
  if (a->time_us != b->time_us) return a->time_us < b->time_us;
  if (a->key != b->key) return a->key < b->key;
  return a->seq < b->seq;
}

static inline void heap_set(sim_queue *q, size_t i, sim_qentry e) {
  q->heap[i] = e;
  q->slots[e.slot].heap_pos = (uint32_t)i;
}

static void sift_up(sim_queue *q, size_t i) {
  sim_qentry e = q->heap[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!entry_less(&e, &q->heap[parent])) break;
    heap_set(q, i, q->heap[parent]);
    i = parent;
  }
  heap_set(q, i, e);
}

static void sift_down(sim_queue *q, size_t i) {
  sim_qentry e = q->heap[i];
  for (;;) {
    size_t l = 2 * i + 1, best;
    if (l >= q->n) break;
    best = l;
    if (l + 1 < q->n && entry_less(&q->heap[l + 1], &q->heap[l])) best = l + 1;
    if (!entry_less(&q->heap[best], &e)) break;
    heap_set(q, i, q->heap[best]);
    i = best;
  }
  heap_set(q, i, e);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 64;
  while (nc < need) nc *= 2;
  void *np = realloc(*p, nc * elem);
  if (!np) return -1;
  *p = np;
  *cap = nc;
  return 0;
}

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
  *out = (uint32_t)q->n_slots++;
  return 0;
}

sim_handle sim_queue_push(sim_queue *q, int64_t time_us, uint64_t key,
                          const sim_payload *p) {
  uint32_t slot;
  if (grow((void **)&q->heap, &q->cap, q->n + 1, sizeof(sim_qentry))) return 0;
  if (alloc_slot(q, &slot)) return 0;
  q->slots[slot].p = *p;
  sim_qentry e = {time_us, key, q->next_seq++, slot, 0};
  q->heap[q->n] = e;
  q->slots[slot].heap_pos = (uint32_t)q->n;
  q->n++;
  sift_up(q, q->n - 1);
  return ((uint64_t)q->slots[slot].gen << 32) | slot;
}

static void release_slot(sim_queue *q, uint32_t slot) {
  q->slots[slot].gen++;
  if (q->slots[slot].gen == 0) q->slots[slot].gen = 1;
  q->slots[slot].heap_pos = UINT32_MAX;
  q->free_slots[q->n_free++] = slot;
}

static void remove_at(sim_queue *q, size_t i) {
  release_slot(q, q->heap[i].slot);
  q->n--;
  if (i == q->n) return;
  heap_set(q, i, q->heap[q->n]);
  if (i > 0 && entry_less(&q->heap[i], &q->heap[(i - 1) / 2]))
    sift_up(q, i);
  else
    sift_down(q, i);
}

int sim_queue_cancel(sim_queue *q, sim_handle h) {
  uint32_t slot = (uint32_t)h, gen = (uint32_t)(h >> 32);
  if (h == 0 || slot >= q->n_slots) return 0;
  sim_qslot *s = &q->slots[slot];
  if (s->gen != gen || s->heap_pos == UINT32_MAX) return 0;
  remove_at(q, s->heap_pos);
  return 1;
}

int sim_queue_pop(sim_queue *q, int64_t *out_time, sim_payload *out_p) {
  if (q->n == 0) return 0;
  *out_time = q->heap[0].time_us;
  *out_p = q->slots[q->heap[0].slot].p;
  remove_at(q, 0);
  return 1;
}

int sim_queue_check(const sim_queue *q) {
  for (size_t i = 0; i < q->n; i++) {
    if (q->heap[i].slot >= q->n_slots) return 0;
    if (q->slots[q->heap[i].slot].heap_pos != i) return 0;
    if (i > 0 && entry_less(&q->heap[i], &q->heap[(i - 1) / 2])) return 0;
  }
  /* The slot pool: every slot is either in the heap or on the free list. */
  if (q->n + q->n_free != q->n_slots) return 0;
  size_t live = 0;
  for (size_t s = 0; s < q->n_slots; s++) {
    if (q->slots[s].gen == 0) return 0;
    uint32_t pos = q->slots[s].heap_pos;
    if (pos == UINT32_MAX) continue;
    if (pos >= q->n || q->heap[pos].slot != s) return 0;
    live++;
  }
  if (live != q->n) return 0;
  for (size_t i = 0; i < q->n_free; i++) {
    uint32_t s = q->free_slots[i];
    if (s >= q->n_slots || q->slots[s].heap_pos != UINT32_MAX) return 0;
  }
  return 1;
}
