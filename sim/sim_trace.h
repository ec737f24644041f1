/*
** sim_trace.h: the run's trace and its rolling hash.
**
** Every observable step of a run is one compact record. The kernel does not
** know what the kinds mean (the runtime defines the vocabulary); it keeps the
** records in order, folds each into a rolling 64-bit hash, interns strings,
** and calls observers (the invariant checkers) on every record as it is
** appended. Two runs of the same scenario and seed in the same build must
** produce the same hash.
*/
#ifndef SIM_TRACE_H
#define SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_rec {
  int64_t t_us;       /* virtual time */
  uint32_t kind;      /* runtime-defined event kind */
  uint32_t actor;     /* actor index, or UINT32_MAX for none */
  int64_t a, b, c;    /* kind-specific integer fields */
  uint32_t s;         /* kind-specific interned string id (0 = none) */
  uint32_t s2;        /* second string id (0 = none) */
} sim_rec;

typedef void (*sim_observer_fn)(void *ctx, const sim_rec *r, uint64_t index);

#define SIM_TRACE_MAX_OBSERVERS 8

typedef struct sim_strtab {
  char **str;         /* id -> string; id 0 is "" */
  uint64_t *hash;     /* id -> content hash */
  size_t n, cap;
  uint32_t *index;    /* open-addressing lookup table of ids */
  size_t index_cap;
  /* A few recent (pointer, id) pairs: the runtime interns the same literal
  ** messages over and over, and a pointer plus a strcmp of the content is
  ** cheaper than hashing it. Only a look-up aid: a hit has the same content
  ** as the id the hash table gives, so ids never depend on it. Two ways per
  ** set: with one, two hot pointers that share a set (where depends on the
  ** process's address layout) evicted each other on every call. */
  const char *memo_ptr[32][2];
  uint32_t memo_id[32][2];
  uint8_t memo_fixed[32][2]; /* 1: put there by sim_trace_intern_fixed, whose
                                callers promise the content never changes */
} sim_strtab;

typedef struct sim_trace {
  sim_rec *recs;
  size_t n, cap;
  uint64_t count;     /* records appended (also when not kept) */
  uint64_t hash;
  int keep;           /* 1: keep records in memory (default) */
  sim_strtab strings;
  sim_observer_fn obs[SIM_TRACE_MAX_OBSERVERS];
  void *obs_ctx[SIM_TRACE_MAX_OBSERVERS];
  int n_obs;
} sim_trace;

/* Initialises an empty trace that keeps its records. Returns 0 or -1. */
int sim_trace_init(sim_trace *t);

/* Frees the records and strings. */
void sim_trace_free(sim_trace *t);

/* Interns a string; returns its id (>= 1; 0 for NULL or ""). The id is the
** order of first appearance, so it is deterministic. Returns 0 on OOM too. */
uint32_t sim_trace_intern(sim_trace *t, const char *s);

/* sim_trace_intern for a string whose content does not change from this
** call on while the trace lives (a string literal, a static name table): a
** repeat of the same pointer is answered without comparing the content
** (a strcmp of the 120-byte gate-reset message on every reset was 2 % of a
** 7-day swarm). The same id as sim_trace_intern. */
uint32_t sim_trace_intern_fixed(sim_trace *t, const char *s);

/* The string of an interned id ("" for 0 or an unknown id). */
const char *sim_trace_str(const sim_trace *t, uint32_t id);

/* Appends a record, folds it into the hash, notifies observers. */
void sim_trace_append(sim_trace *t, const sim_rec *r);

/* Registers an observer called on every appended record. Returns 0, or -1
** when SIM_TRACE_MAX_OBSERVERS are already registered. */
int sim_trace_observe(sim_trace *t, sim_observer_fn fn, void *ctx);

/* Folds one record into a hash value; exposed so that a process that
** receives records from a worker can recompute the same hash. Strings are
** folded by content hash, never by id. */
uint64_t sim_trace_fold(uint64_t h, const sim_rec *r, uint64_t s_hash,
                        uint64_t s2_hash);

/* Content hash of an interned string id. */
uint64_t sim_trace_str_hash(const sim_trace *t, uint32_t id);

#define SIM_TRACE_HASH_INIT 0x6a09e667f3bcc909ULL

#endif
