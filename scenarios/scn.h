/*
** scn.h: a loaded scenario, and the runner that assembles a world from it.
**
** Data flow: scenario file (JSON) → scn_load → scn_scenario → scn_run_case
** → world (sim + runtime + faults + checks) → scn_result (trace, hash,
** violations, verdict) → reports (rendered by the command line).
** A scenario has one or more cases: the same world under different
** runtime variants, each with its own expectation (an incident expects the
** broken variant to fail and the fixed one to hold).
*/
#ifndef SCN_H
#define SCN_H

#include <stdint.h>

#include "checks/chk.h"
#include "faults/flt.h"
#include "runtime/rt.h"
#include "sim/sim.h"

#define SCN_MAX_ACTORS 64
#define SCN_MAX_PROGRAMS 16
#define SCN_MAX_STEPS 256
#define SCN_MAX_WORK 64
#define SCN_MAX_FAULTS 64
#define SCN_MAX_STALE 64
#define SCN_MAX_CASES 8

typedef enum scn_work_kind { SCN_W_REQUEST = 1, SCN_W_FIBER, SCN_W_TOOLRUN } scn_work_kind;

typedef struct scn_work {
  scn_work_kind kind;
  uint32_t actor;
  rt_entry entry;          /* SCN_W_REQUEST */
  int program;             /* SCN_W_FIBER: index into programs */
  uint32_t child;          /* SCN_W_TOOLRUN */
  int64_t work_us;         /* SCN_W_TOOLRUN: child's work */
  int64_t at_us;           /* first time */
  int64_t every_us;        /* 0 = once */
  int64_t until_us;        /* repeat until (default: the duration) */
} scn_work;

typedef flt_fault scn_fault;

typedef struct scn_stale {
  int is_toolrun;
  uint32_t actor;          /* parent (tool run) or owner (fiber) */
  uint32_t child;
  rt_toolrun_status status;
  int child_status;
  int program;             /* orphan fiber */
  int snapshot;            /* -1 = null */
} scn_stale;

typedef struct scn_case {
  char label[64];          /* e.g. "gated" */
  rt_config cfg;
  uint32_t hold_mask;      /* invariants that must hold */
  uint32_t violate_mask;   /* invariants that must be violated */
  char expect_text[192];
} scn_case;

typedef struct scn_scenario {
  char file[512];
  char name[128];
  char description[512];
  uint64_t seed;
  int64_t duration_us;
  sim_strategy strategy;
  int pct_depth;
  rt_actor_spec actors[SCN_MAX_ACTORS];
  uint32_t n_actors;
  rt_program programs[SCN_MAX_PROGRAMS];
  rt_step steps[SCN_MAX_PROGRAMS][SCN_MAX_STEPS];
  int n_programs;
  scn_stale stale[SCN_MAX_STALE];
  int n_stale;
  scn_work work[SCN_MAX_WORK];
  int n_work;
  scn_fault faults[SCN_MAX_FAULTS];
  int n_faults;
  chk_params params;
  scn_case cases[SCN_MAX_CASES];
  int n_cases;
  char *source;            /* the file's text (owned), for repro files */
} scn_scenario;

/* Loads and validates a scenario file. On error returns -1 and writes
** "file:line:col: message" into err (errlen bytes). The scenario must be
** released with scn_free. */
int scn_load(const char *path, scn_scenario *out, char *err, size_t errlen);

/* Same, from text already in memory (path is used in messages). */
int scn_load_text(const char *path, const char *text, size_t len,
                  scn_scenario *out, char *err, size_t errlen);

/* Frees what a loaded scenario owns. */
void scn_free(scn_scenario *sc);

/* Result of running one case of a scenario with one seed. */
typedef struct scn_result {
  uint64_t seed;
  sim_strategy strategy;
  uint64_t trace_hash;
  uint64_t events;
  int64_t end_us;
  int passed;
  char failure[512];
  sim *s;                  /* owned: the kernel, with the kept trace */
  chk_set *checks;         /* owned */
  char **actor_names;      /* owned, n_actors entries */
  uint32_t n_actors;
  uint64_t writes;         /* durable write boundaries passed */
  int64_t figures[8];
  int n_figures;
  const char *figure_names[8];
  const char *figure_units[8];
} scn_result;

/* Runs case `ci` of the scenario with the given seed and strategy; fills
** *res (release with scn_result_free). Returns 0, or -1 on an internal
** error (message in res->failure). */
int scn_run_case(const scn_scenario *sc, int ci, uint64_t seed,
                 sim_strategy strategy, scn_result *res);

/* Options of a run beyond seed and strategy. */
typedef struct scn_run_opts {
  int without_faults;        /* ignore the scenario's faults */
  uint64_t crash_after_write;/* k >= 1: crash the process right after the
                                k-th durable write (crash-point coverage) */
  uint32_t check_mask;       /* if non-zero, judge only these invariants as
                                "must hold" instead of the case's expect */
} scn_run_opts;

/* scn_run_case with options (opts may be NULL). */
int scn_run_case_ex(const scn_scenario *sc, int ci, uint64_t seed,
                    sim_strategy strategy, const scn_run_opts *opts,
                    scn_result *res);

/* Frees what a result owns. */
void scn_result_free(scn_result *res);


#endif
