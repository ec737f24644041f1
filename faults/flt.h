/*
** flt.h: the fault plan: what goes wrong and when.
**
** Each fault kind draws from its own PRNG stream ("fault.evict", …) derived
** from the run seed, so enabling one kind never shifts another's draws or
** the workload's. Faults reach the runtime only through its fault doors
** (rt_kill_actor, rt_kill_all, rt_set_stuck, rt_fail_commits, …) and every
** injected fault is an RT_EV_FAULT trace record. Storage failures go
** through the libfiu point "revenant/storage/commit", enabled with
** fiu_enable_external and decided by our stream (never libfiu's random
** mode, which is seeded from the wall clock).
*/
#ifndef FLT_H
#define FLT_H

#include <stdint.h>

#include "runtime/rt.h"
#include "sim/sim.h"

typedef enum flt_kind {
  FLT_EVICT = 1,       /* one actor loses its memory */
  FLT_RESTART,         /* code update: every actor loses its memory */
  FLT_CRASH,           /* in-process crash: memory gone, storage kept */
  FLT_SIGKILL,         /* process kill (in-process model for now) */
  FLT_STUCK_CHILD,     /* a child never answers / answers late / never starts */
  FLT_STORAGE_FAIL,    /* commits fail with an I/O error */
  FLT_RPC_DELAY,       /* extra latency on every RPC */
  FLT_RPC_DROP,        /* RPCs dropped with a per-million chance */
  FLT_ALARM_DELAY,     /* alarms delivered late */
  FLT_GATE_TIMEOUT,    /* onStart forced to take `delay` (over 30 s: reset) */
  FLT_STREAM_CUT,      /* an upstream model stream severed (chat model) */
  FLT_ONSTART_THROW,   /* the next `count` onStart calls of an actor throw */
  FLT_ALARM_LOST,      /* the stored alarm row of an actor (or all) vanishes */
  FLT_KIND_COUNT
} flt_kind;

typedef struct flt_fault {
  flt_kind kind;
  uint32_t actor;      /* RT_NO_ACTOR: every actor (evict: a drawn one) */
  int64_t at_us;       /* fixed time, or -1 when drawn from per_day */
  int64_t per_day;     /* rate: expected occurrences per simulated day */
  int64_t delay_us;    /* stuck late delay, rpc/alarm delay, onStart time;
                          crash, restart, sigkill: down_for, how long the
                          process stays down (0: it can restart at once) */
  int64_t until_us;    /* end of a rate window (0: the run's duration) */
  rt_stuck stuck;      /* stuck_child mode */
  int count;           /* how many times the fault happens (0: default):
                          storage_fail: the next N commits fail, onstart_throw:
                          the next N onStart calls throw (per arrival); any
                          other rated kind: at most N arrivals */
  uint32_t ppm;        /* rpc_drop: chance per call, or storage_fail per commit */
  uint64_t after_write;/* crash, restart: fire right after the k-th durable write
                          of the run, inside its turn's commit window, instead of
                          at a time (at_us -1, per_day 0); 0: not used. One such
                          fault per run (the last one listed) */
} flt_fault;

/* Plans every fault of the list on world w for a run of duration_us:
** fixed ones at their time; a rated one lazily, each arrival drawn from
** the fault's own streams ("fault.<kind>.<i>" for the gaps, ".actor" for
** an evict's victim) when the previous one fires, so memory stays flat
** however many arrivals a rate makes. Returns the number of fault events
** scheduled now (fixed faults and first arrivals), or -1 on error. The
** faults array must outlive the run. The plan and the libfiu point are
** process state: one run at a time per process (runs are one thread, and
** parallel runs are processes, DESIGN.md rule 1); call flt_reset after it. */
int flt_plan(rt_world *w, const flt_fault *faults, int n, int64_t duration_us);

/* flt_plan for the window [from_us, until_us) of a run of duration_us:
** the same draws as the whole run, only the faults inside the window are
** scheduled, and faults of kind skip_kind (0: none) never are. Used by a
** worker process restarted after a real SIGKILL. */
int flt_plan_window(rt_world *w, const flt_fault *faults, int n, int64_t duration_us,
                    int64_t from_us, int64_t until_us, int skip_kind);

/* The sorted times at which faults of `kind` fire in a run with `seed`
** (fixed and drawn from rates, the same draws as flt_plan). Returns how
** many (at most cap are stored). */
int flt_times(uint64_t seed, const flt_fault *faults, int n, int64_t duration_us,
              flt_kind kind, int64_t *out, int cap);

/* Applies one fault now (also used by crash-point coverage). */
void flt_apply(rt_world *w, const flt_fault *f);

/* Virtual time of the latest fault event planned so far (0 if none): with
** lazy planning, a rated fault's arrivals are known only as they come. */
int64_t flt_last_time(void);

/* 1 if `count` of kind k counts effects of one arrival (storage_fail,
** onstart_throw), 0 if it limits the arrivals of a rate. */
int flt_count_per_arrival(flt_kind k);

/* Name of a kind ("evict") and the reverse (-1 if unknown). */
const char *flt_kind_name(flt_kind k);
int flt_kind_parse(const char *name);

/* Removes the libfiu fail point a run enabled (call after each run). */
void flt_reset(void);

#endif
