/*
** scn_swarm.h: the swarm engine (docs/swarm.md): runs every selected case
** of a set of loaded scenarios with many seeds, each seed with its own fault
** mix (scn_swarm_mix), in forked worker processes, and streams the results
** to the caller in job order while keeping failures grouped by signature.
**
** Jobs are (case, seed) pairs numbered j = 0, 1, ...: unit j % M (M =
** selected cases of all files), seed base + (shard_i - 1) + (j / M) *
** shard_n. The pool is a work queue (a free worker takes the next job in
** job order); a run's result does not depend on which worker ran it or on
** -j; results are handed out in job order through a bounded reorder
** buffer, so memory does not
** grow with the number of seeds. A worker that crashes or outlives the
** seed timeout is killed with its whole process group, and its job is a
** failure with that seed. Workers and their children run with TMPDIR set
** to a directory of the swarm, removed when the swarm ends on any path.
**
** The engine reads the wall clock for budgets, timeouts and progress only,
** never inside a run. It prints nothing: the command line (cli/cmd_swarm.c)
** parses options and renders.
*/
#ifndef SCN_SWARM_H
#define SCN_SWARM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "scenarios/scn.h"

/* How a job ended. */
typedef enum scn_swarm_state {
  SCN_SWARM_DONE = 1,      /* ran to its verdict (passed or not) */
  SCN_SWARM_CRASH,         /* the worker died inside it */
  SCN_SWARM_TIMEOUT,       /* it ran longer than the timeout */
  SCN_SWARM_ERROR          /* the runner returned an internal error */
} scn_swarm_state;

#define SCN_SWARM_MAX_VIOL 8

/* One finished job, as the parent knows it (no trace). Valid during the
** on_result callback only; copy what you keep. */
typedef struct scn_swarm_result {
  uint64_t job, seed;
  size_t unit;             /* index of the (file, case) unit */
  size_t file;             /* index into the scenarios given */
  int ci;                  /* case index in that scenario */
  scn_swarm_state state;
  int passed;
  uint64_t hash, events;
  int64_t end_us;
  const char *failure;     /* "" when passed */
  const char *sig;         /* failure signature, "" when passed */
  const chk_violation *viol;
  int n_viol;              /* at most SCN_SWARM_MAX_VIOL */
  const char *extra;       /* what opts.worker_extra wrote for this run, or "" */
  uint64_t probes;         /* the probes the run reached: bit p for rt_probe p */
  int met;                 /* every invariant the case expects violated was (1 when
                              it expects none): with expect.swarm once or report a
                              run that misses them still passes */
} scn_swarm_result;

/* Counters of a swarm, for progress lines and the summary. */
typedef struct scn_swarm_stats {
  uint64_t runs, failed;   /* jobs finished, and of them failed */
  uint64_t total;          /* jobs to run; 0 = until the time budget */
  size_t units;            /* cases per seed */
  int workers;
  double elapsed_s;
  double left_s;           /* estimate; 0 if unknown */
} scn_swarm_stats;

typedef void (*scn_swarm_result_fn)(void *ctx, const scn_swarm_result *r);

/* Called in the worker after each run that finished (r has its trace as
** the run kept it): writes one line of text about the run into buf (cap
** bytes, at most 4096; tabs and newlines are replaced by spaces), which
** reaches the parent as scn_swarm_result.extra. For reports that need more
** of a run than its verdict (fault counts, recovery times). */
typedef void (*scn_swarm_extra_fn)(void *ctx, const scn_scenario *m, int ci, const scn_result *r,
                                   char *buf, size_t cap);
typedef void (*scn_swarm_progress_fn)(void *ctx, const scn_swarm_stats *st);

typedef struct scn_swarm_opts {
  uint64_t seeds;          /* seeds to run; 0: until time_us has passed */
  int64_t time_us;         /* wall-time budget for starting jobs (0: none) */
  int64_t timeout_us;      /* wall-time limit of one job (> 0) */
  int64_t duration_us;     /* cut every run at this virtual time (0: no) */
  int jobs;                /* worker processes, >= 1 */
  int strategy;            /* sim_strategy, or -1: the file's (fifo → random) */
  int have_base;
  uint64_t base;           /* first seed if have_base, else each file's seed */
  int shard_i, shard_n;    /* shard i (1-based) of n; 0/0 = 1/1 */
  const char *only_case;   /* NULL: every case */
  volatile sig_atomic_t *stop; /* non-NULL: the swarm stops when *stop != 0 */
  scn_swarm_result_fn on_result;     /* every finished job, in job order */
  scn_swarm_progress_fn on_progress; /* about 5 times a second while running */
  scn_swarm_extra_fn worker_extra;   /* NULL: none */
  void *ctx;
  int all_faults;          /* 1: ignore each file's fault allowance (swarm.faults):
                              every kind of the mix, unbounded (--all-faults) */
  int reproduce;           /* 1: every case with expected violations is judged as
                              expect.swarm "once" (--expect-reproduce) */
  int have_crash_seed, have_hang_seed; /* test hooks (tests/test_swarm.c) */
  uint64_t crash_seed, hang_seed;      /* the run of this seed raises SIGSEGV / hangs */
} scn_swarm_opts;

/* A failure signature of one unit and its runs. */
typedef struct scn_swarm_group {
  char *sig;               /* owned */
  char *failure;           /* owned: the failure text of the first job */
  size_t unit;
  uint64_t first_job;      /* the smallest job (and seed) with it */
  scn_swarm_state first_state;
  uint64_t count;
  uint64_t seeds[8];       /* the first 8 seeds, in job order */
  int whole_case;          /* 1: a verdict on the case over the swarm, not on a run
                              ("unreproduced:<inv>/-/-": count = its runs, seeds[0]
                              = its first seed); it has no repro file */
} scn_swarm_group;

/* How the runs of one (file, case) unit went, for its expect.swarm mode. */
typedef struct scn_swarm_tally {
  int mode;                /* scn_swarm_mode the unit was judged by */
  uint64_t runs, met;      /* runs delivered, and of them those that met the
                              case's expected violations */
  uint64_t first_met;      /* the first seed (job order) that met them; valid if met */
} scn_swarm_tally;

/* How many runs reached one probe (rt_probe, docs/trace.md "Probes"), and
** the first of them in job order (so it does not depend on -j). */
typedef struct scn_swarm_probe {
  uint64_t runs;
  uint64_t first_seed;     /* valid when runs > 0 */
  size_t first_unit;
} scn_swarm_probe;

/* One job's identity. */
typedef struct scn_swarm_job {
  uint64_t job, seed;
  size_t unit, file;
  int ci;
  sim_strategy strategy;
} scn_swarm_job;

typedef struct scn_swarm scn_swarm;

/* Makes a swarm over the n_sc loaded scenarios sc (borrowed: they must
** outlive the swarm) with options o (copied). Returns NULL with a message
** in err (a case named o->only_case missing from a file, bad options, out
** of memory). Release with scn_swarm_free. */
scn_swarm *scn_swarm_new(scn_scenario *const *sc, size_t n_sc, const scn_swarm_opts *o,
                         char *err, size_t errlen);

/* Runs the pool until every job finished, the time budget ran out or *stop
** became non-zero; every finished job goes to on_result in job order
** (at the end, after an interrupt or the time budget, the ones still
** buffered are delivered in order with gaps skipped). Returns 0, 1 if
** stopped by *stop, or -1 on a system error (fork, pipe, poll) with a
** message in err. Workers are all reaped and the temp directory removed
** before it returns. Call once. */
int scn_swarm_run(scn_swarm *s, char *err, size_t errlen);

/* Current counters. */
void scn_swarm_stats_get(const scn_swarm *s, scn_swarm_stats *st);

/* The failure groups; after scn_swarm_run, sorted by (first seed, unit)
** (an order that does not depend on -j). *n gets the count. Owned by the
** swarm. */
const scn_swarm_group *scn_swarm_groups(const scn_swarm *s, size_t *n);

/* The probes the delivered runs reached: RT_PROBE_COUNT entries indexed by
** rt_probe, owned by the swarm. For the probe table of `swarm` and its
** reports (--html). */
const scn_swarm_probe *scn_swarm_probes(const scn_swarm *s);

/* The probes any delivered run of unit `unit` (a file's case) reached, bit
** p for rt_probe p; a case's expect.reach is judged against it. */
uint64_t scn_swarm_unit_probes(const scn_swarm *s, size_t unit);

/* The tally of unit `unit` (runs, runs that met its expected violations,
** the mode it was judged by). After scn_swarm_run, a unit judged "once"
** whose runs never met them has a whole_case group "unreproduced:...". */
void scn_swarm_unit_tally(const scn_swarm *s, size_t unit, scn_swarm_tally *out);

/* Identity of job j (file, case, seed, strategy). */
void scn_swarm_job_info(const scn_swarm *s, uint64_t j, scn_swarm_job *out);

/* The scenario job j runs into m (a copy of its file's scenario, cut at
** the duration option, with the seed's fault mix). m owns nothing. */
void scn_swarm_job_scenario(const scn_swarm *s, uint64_t j, scn_scenario *m);

/* Called in a child process by scn_swarm_rerun with the scenario of the
** job, its case and its full result (with the trace). Returns 0 on
** success; anything else is the child's failure. */
typedef int (*scn_swarm_rerun_fn)(void *ctx, const scn_scenario *m, int ci,
                                  const scn_result *r);

/* Re-runs job j in a child process (its own process group) with the full
** trace and calls fn there. Waits at most the seed timeout, then kills the
** child's group. Returns 0 if the job ran and fn returned 0, else -1 (the
** job crashes, hangs or cannot be run: the caller falls back to what the
** parent knows). */
int scn_swarm_rerun(const scn_swarm *s, uint64_t j, scn_swarm_rerun_fn fn, void *ctx);

/* Frees the swarm (kills and reaps any worker still alive, removes its
** temp directory). NULL is allowed. */
void scn_swarm_free(scn_swarm *s);

#endif
