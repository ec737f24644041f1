/*
** sim.h: the deterministic simulation kernel.
**
** Virtual time in integer microseconds, a seeded scheduler choosing the
** order of events due at the same instant, cancellation domains, the run
** loop with its stop conditions, and the trace. The kernel knows nothing of
** actors: the runtime above gives it events (a function, a context and an
** integer) and trace records.
**
** Ordering rule: events pop by (time, tie-break key, insertion sequence).
** The key comes from the strategy when the event is pushed:
**   fifo    key 0: insertion order among equal times;
**   random  key drawn from the "scheduler" stream;
**   pct     key = current priority of the event's domain (PCT, Burckhardt
**           et al. 2010): each domain gets a random priority when made, and
**           at d-1 change points (dispatch counts drawn uniformly from
**           [1, pct_steps]) the domain being dispatched drops below all
**           others.
** Cancellation domains: every event belongs to a domain (0 = the world).
** sim_domain_kill() makes every pending event of that domain vanish, which
** is how an actor's pending work dies with its incarnation.
*/
#ifndef SIM_H
#define SIM_H

#include <stdint.h>

#include "sim_queue.h"
#include "sim_rng.h"
#include "sim_trace.h"

typedef enum sim_strategy {
  SIM_FIFO = 0,
  SIM_RANDOM = 1,
  SIM_PCT = 2
} sim_strategy;

typedef enum sim_stop_reason {
  SIM_STOP_QUIESCENT = 0,   /* nothing left pending */
  SIM_STOP_END_TIME = 1,    /* next event lies beyond the end time */
  SIM_STOP_MAX_EVENTS = 2,  /* the event budget ran out */
  SIM_STOP_REQUESTED = 3    /* sim_request_stop() (e.g. first violation) */
} sim_stop_reason;

typedef void (*sim_fn)(struct sim *s, void *ctx, uint64_t arg);

#define SIM_PCT_MAX_CHANGES 16

typedef struct sim {
  int64_t now_us;
  uint64_t seed;
  sim_strategy strategy;
  sim_rng sched_rng;          /* stream "scheduler" */
  sim_queue queue;
  sim_trace trace;
  uint64_t dispatched;        /* events run so far */
  uint64_t dropped;           /* events of killed domains skipped */
  int stop_requested;
  /* cancellation domains */
  uint32_t *domain_gen;
  uint64_t *domain_prio;      /* pct priority (lower runs first) */
  uint32_t n_domains, domain_cap;
  /* pct */
  uint64_t pct_change_at[SIM_PCT_MAX_CHANGES];
  int pct_n_changes;
  uint64_t pct_low_next;      /* next "lowest" priority to hand out */
  uint32_t current_domain;    /* domain of the event being dispatched */
} sim;

typedef struct sim_config {
  uint64_t seed;
  sim_strategy strategy;
  int pct_depth;              /* d: bug depth; d-1 change points (>= 1) */
  uint64_t pct_steps;         /* k: change points drawn from [1, k] */
} sim_config;

/* Initialises a kernel at time 0. Returns 0, or -1 on allocation failure
** or a bad config (pct_depth outside 1..SIM_PCT_MAX_CHANGES+1). */
int sim_init(sim *s, const sim_config *cfg);

/* Frees everything the kernel owns (queue, trace, domains). */
void sim_free(sim *s);

/* Makes a new cancellation domain and returns its id (>= 1), 0 on OOM. */
uint32_t sim_domain_new(sim *s);

/* Cancels every pending event of domain d; later pushes to d live again.
** Domain 0 cannot be killed. */
void sim_domain_kill(sim *s, uint32_t d);

/* Schedules fn(s, ctx, arg) at now + delay_us (delay >= 0) in domain d.
** Returns a handle for sim_cancel, or 0 on OOM. */
sim_handle sim_after(sim *s, int64_t delay_us, uint32_t d, sim_fn fn,
                     void *ctx, uint64_t arg);

/* Schedules at an absolute time (clamped to now if in the past). */
sim_handle sim_at(sim *s, int64_t time_us, uint32_t d, sim_fn fn, void *ctx,
                  uint64_t arg);

/* Cancels one pending event. Returns 1 if it was pending. */
int sim_cancel(sim *s, sim_handle h);

/* Number of pending events (including those of killed domains not yet
** skipped). */
uint64_t sim_pending(const sim *s);

/* Runs events until a stop condition holds: the next event is after
** end_us (the clock is then set to end_us), max_events have been
** dispatched by this call (0 = no limit), nothing is pending, or a stop was
** requested. Returns the reason. */
sim_stop_reason sim_run(sim *s, int64_t end_us, uint64_t max_events);

/* Asks the running loop to stop after the current event. */
void sim_request_stop(sim *s);

/* Appends a record stamped with the current time to the trace. */
void sim_emit(sim *s, uint32_t kind, uint32_t actor, int64_t a, int64_t b,
              int64_t c, uint32_t str, uint32_t str2);

/* Name of a strategy ("fifo", "random", "pct"), and the reverse (-1 if
** unknown). */
const char *sim_strategy_name(sim_strategy st);
int sim_strategy_parse(const char *name);

/* Name of a stop reason. */
const char *sim_stop_reason_name(sim_stop_reason r);

#endif
