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
#include <stdio.h>

#include "checks/chk.h"
#include "checks/chk_facts.h"
#include "checks/chk_lua.h"
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
#define SCN_MAX_FACTS 24
/* The largest scenario file (or text) scn_load accepts: refused with a
** clear error before its text is read or parsed (docs/scenarios.md). The
** shipped files are under 8 KiB; a file at every other limit fits. */
#define SCN_MAX_FILE_BYTES (1024 * 1024)

typedef enum scn_work_kind {
  SCN_W_REQUEST = 1, SCN_W_FIBER, SCN_W_TOOLRUN,
  SCN_W_EXEC_TURN = 16,    /* executor_turn (seed 002) */
  SCN_W_THREAD = 17,       /* thread_writers (seed 004) */
  SCN_W_CHAT = 18,         /* chat (seed 000 Layer 3) */
  SCN_W_SCHEDULE = 19,     /* schedule / scheduleEvery (reference A.10) */
  SCN_W_CANCEL_SCHEDULE = 20, /* cancelSchedule */
  SCN_W_KEEPALIVE = 21,    /* keepAliveWhile (reference A.3) */
  SCN_W_TOOL_RECOVERY = 30, /* _scheduleAgentToolRunRecovery() (issue #15) */
  SCN_W_STASH = 22,        /* this.stash() outside a fiber (an error) */
  SCN_W_KA_ACQUIRE = 23,   /* keepAlive(), disposer kept under a lease name */
  SCN_W_KA_DISPOSE = 24,   /* calls the disposer of a lease */
  /* issue #15, the rest */
  SCN_W_TOOL_ABORT = 31,   /* tool_abort: the parent aborts the open runs of a child */
  SCN_W_TOOL_RECONNECT = 32, /* tool_reconnect: a client replays runs' events after since */
  SCN_W_CHAT_CONTINUE = 33, /* continue_last_turn: continueLastTurn() */
  SCN_W_CHAT_SAVE = 34,    /* save_messages: saveMessages([text]) */
  SCN_W_CHAT_CANCEL = 35,  /* chat_cancel: the client cancels the running turn */
  SCN_W_INVOKE = 40        /* calls a method of the actor's script (issue #13) */
} scn_work_kind;

typedef struct scn_work {
  scn_work_kind kind;
  uint32_t actor;
  rt_entry entry;          /* SCN_W_REQUEST */
  int program;             /* SCN_W_FIBER: index into programs */
  int await;               /* SCN_W_FIBER: awaited runFiber (the request waits) */
  int throws;              /* SCN_W_KEEPALIVE: fn throws `callback` (the message) */
  uint32_t child;          /* SCN_W_TOOLRUN */
  int64_t work_us;         /* SCN_W_TOOLRUN: child's work */
  int64_t at_us;           /* first time */
  int64_t every_us;        /* 0 = once */
  int64_t until_us;        /* repeat until (default: the duration) */
  rt_exec_turn_spec exec;  /* SCN_W_EXEC_TURN */
  rt_thread_spec thread;   /* SCN_W_THREAD */
  int chunks;              /* SCN_W_CHAT: text chunks of the reply */
  int64_t chunk_every_us;  /* SCN_W_CHAT: mean spacing of the chunks */
  int chat_tool;           /* SCN_W_CHAT: 1 = the turn calls runAgentTool(child) for work_us */
  char callback[48];       /* SCN_W_SCHEDULE, SCN_W_CANCEL_SCHEDULE */
  int64_t delay_us;        /* SCN_W_SCHEDULE: one-shot delay */
  int64_t interval_us;     /* SCN_W_SCHEDULE: scheduleEvery interval (0: one-shot) */
  int64_t run_id;          /* SCN_W_TOOLRUN: the given runId (0: a fresh one) */
  int since;               /* SCN_W_TOOL_RECONNECT: afterSequence (-1: all) */
  char text[96];           /* SCN_W_CHAT_SAVE: the user message */
  char cron[64];           /* SCN_W_SCHEDULE: schedule(cron) ("" none) */
  char payload[128];       /* SCN_W_SCHEDULE: payload as compact JSON ("" undefined) */
  int idempotent;          /* SCN_W_SCHEDULE: 0 the SDK default, 1 on, 2 off */
  char method[48];         /* SCN_W_INVOKE: the script's method */
  char args[256];          /* SCN_W_INVOKE: its arguments as JSON text ("" none) */
} scn_work;

typedef flt_fault scn_fault;

typedef struct scn_stale {
  int is_toolrun;          /* 0 an orphan fiber, 1 a tool run, 2 a schedule row
                              (SCN_STALE_SCHEDULE, issue #14) */
  uint32_t actor;          /* parent (tool run) or owner (fiber) */
  uint32_t child;
  rt_toolrun_status status;
  int child_status;
  int program;             /* orphan fiber */
  int snapshot;            /* -1 = null */
  rt_schedule_seed sched;  /* a schedule row (is_toolrun 2) */
} scn_stale;

/* How a swarm judges a case's expected violations (expect.swarm,
** docs/swarm.md "Fault allowances and swarm modes"). */
typedef enum scn_swarm_mode {
  SCN_SWARM_EVERY = 0,     /* every seed must meet the expectation (default) */
  SCN_SWARM_ONCE,          /* at least one seed across the swarm: a reproduction */
  SCN_SWARM_REPORT         /* only reported: a seed fails on its "hold" list alone */
} scn_swarm_mode;

/* The faults a swarm may add to a scenario ("swarm": {"faults": ...}):
** the kinds and rate bounds its expectations claim to survive. */
typedef struct scn_allow {
  int given;               /* 0: every kind of the mix, unbounded (old files) */
  uint32_t kinds;          /* bit (1u << flt_kind) per kind the swarm may draw */
  uint32_t no_after_write; /* bit per kind (restart, crash): no commit-window draws */
  int64_t max_per_day[FLT_KIND_COUNT];  /* evict, restart, crash; 0 = no bound */
  uint32_t max_ppm[FLT_KIND_COUNT];     /* storage_fail, rpc_drop; 0 = no bound */
  int64_t max_delay_us[FLT_KIND_COUNT]; /* rpc_delay, alarm_delay, stuck_child; 0 = none */
  char off[FLT_KIND_COUNT][192];        /* why a kind is switched off ("off": reason) */
} scn_allow;

#define SCN_STALE_SCHEDULE 2

typedef struct scn_case {
  char label[64];          /* e.g. "gated" */
  int swarm_mode;          /* scn_swarm_mode of its "violate" list */
  rt_config cfg;
  uint32_t hold_mask;      /* invariants that must hold */
  uint32_t violate_mask;   /* invariants that must be violated */
  char expect_text[192];
  uint64_t reach_mask;     /* expect.reach: probes (1 << rt_probe) a swarm of this
                              case must reach in at least one run */
} scn_case;

/* The Lua script of an actor (issue #13; docs/scripting.md). */
#define SCN_MAX_AGENT_SCRIPT_BYTES (256 * 1024)
typedef struct scn_actor_script {
  char name[128];          /* the file name as written ("" = no script): errors say name:line */
  char path[512];          /* the file it was read from ("" when inline, e.g. a repro) */
  char dir[512];           /* the folder require/dofile read (the scenario's) */
  char *text;              /* the script (owned by the loaded scenario, see borrowed) */
  size_t len;
  uint64_t hash;           /* FNV-1a 64 of the text */
  char *fns;               /* the functions of the table it returns, sorted, each
                              name with its NUL (owned as text is); any number */
  int n_fns;
} scn_actor_script;

/* A Lua invariant script of the scenario ("invariants"). */
typedef struct scn_script {
  char path[256];          /* as the scenario names it ("charged_once.lua") */
  char file[768];          /* where it was read: the scenario's folder + path
                              (the name in Lua errors, "file:line: ...") */
  char origin[1024];       /* its absolute path when read from disk ("" unknown) */
  const char *text;        /* interned for the life of the process (never freed,
                              so copies of a scenario share it freely) */
  size_t len;
  uint64_t hash;           /* FNV-1a 64 of the text */
  int embedded;            /* 1: the text came from the scenario's "scripts" */
} scn_script;

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
  scn_allow allow;         /* "swarm": what the swarm may add */
  chk_fact facts[SCN_MAX_FACTS]; /* expect.facts, each with the cases it applies to */
  int n_facts;
  char *source;            /* the file's text (owned), for repro files; with
                              "invariants", the "scripts" they name embedded;
                              with agent scripts, scn_write's text (inline) */
  scn_actor_script actor_scripts[SCN_MAX_ACTORS]; /* per actor: its agent script
                              ("script" field; name "" none) */
  int n_actor_scripts;     /* actors with a script */
  int actor_scripts_borrowed; /* 1 in a scn_copy: the texts belong to the source */
  scn_script scripts[CHK_LUA_MAX_SCRIPTS]; /* "invariants", in order */
  int n_scripts;
  char dir[512];           /* the scenario file's folder (require in scripts) */
  int lua_inv[CHK_LUA_MAX_INVARIANTS]; /* the invariants the scripts register */
  int n_lua_inv;
  char note[640];          /* said to the user on load, e.g. an embedded script
                              that differs from the file it came from ("" none) */
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
  char failure[1024];
  sim *s;                  /* owned: the kernel, with the kept trace (no
                              records after a lean run that passed) */
  chk_set *checks;         /* owned */
  chk_facts *facts;        /* owned: the case's facts and their verdicts (NULL: none judged) */
  char **actor_names;      /* owned, n_actors entries */
  uint32_t n_actors;
  uint64_t writes;         /* durable write boundaries passed */
  int64_t figures[8];
  int n_figures;
  const char *figure_names[8];
  const char *figure_units[8];
  uint32_t probes[RT_PROBE_COUNT]; /* RT_EV_PROBE records of each probe: 1 if the run
                                      reached it (a sigkill run: one per generation) */
  struct scn_figs *figs;   /* owned, internal: figures counted as the run goes */
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
  int stop_when_decided;     /* stop the run as soon as its verdict cannot
                                change: a "hold" invariant was violated, or
                                every "violate" one fired and nothing must
                                hold (the trace is then a prefix of the full
                                run's: its hash differs) */
  int lean;                  /* keep no trace records (memory does not grow
                                with the run); a run that fails its
                                expectation is run again with its trace kept
                                (the same run: same hash), so that its report
                                can print chains and who waits on whom.
                                Figures, verdict and violations are the same
                                either way. For `run` without trace-reading
                                outputs and for swarm workers */
  int waits_only_rerun;      /* with lean: re-run a failure with its trace
                                kept only when a "hold" invariant was
                                violated, whose open waits a swarm signature
                                replays from the records; nothing else a
                                swarm worker reports reads them */
  int no_figures;            /* the caller reads no figures (a swarm worker
                                without worker_extra): they are not counted
                                (n_figures 0); nothing else changes. Counting
                                them was an observer on every record, 1.3 %
                                of a 7-day swarm */
  int robust_facts_only;     /* judge only the facts marked robust */
  sim_observer_fn observer;  /* non-NULL: also called on every trace record
                                as it is written (revenant trace) */
  void *observer_ctx;
  const sim_trace **trace_out; /* non-NULL: receives the run's trace (for its
                                strings) before the first record */
} scn_run_opts;

/* scn_run_case with options (opts may be NULL). */
int scn_run_case_ex(const scn_scenario *sc, int ci, uint64_t seed,
                    sim_strategy strategy, const scn_run_opts *opts,
                    scn_result *res);

/* Frees what a result owns. */
void scn_result_free(scn_result *res);

/* 1 if the scenario has a sigkill fault (its runs then fork real worker
** processes over file-backed storage, scn_sigkill.c), else 0. */
int scn_has_sigkill(const scn_scenario *sc);

/* Invariant masks (a case's hold_mask and violate_mask, and the sets of
** invariants a run violated) are per scenario: bit inv for a built-in
** invariant, bit CHK_INVARIANT_COUNT + k for the scenario's k-th Lua
** invariant (sc->lua_inv[k]), whatever number the process gave its name
** (chk_invariant_intern: per process, unbounded). scn_inv_bit: the bit of
** invariant inv in sc's masks, 0 when sc has no such invariant.
** scn_inv_of_bit: the invariant of bit k (0..31), -1 when unused. */
uint32_t scn_inv_bit(const scn_scenario *sc, int inv);
int scn_inv_of_bit(const scn_scenario *sc, int k);

/* sc->source as a repro file should carry it now: with "modules" set to
** the texts of every module the process loaded from (or embedded for) sc's
** folder so far, so that the file replays from any folder. Malloc'd; NULL
** on out of memory. */
char *scn_source_now(const scn_scenario *sc);

/* The bits of the invariants res violated, in sc's masks. */
uint32_t scn_seen_mask(const scn_scenario *sc, const scn_result *res);


/* ---- copy, write, swarm mix, signature, shrink ------------------------
** (scn_mutate.c, scn_write.c, scn_shrink.c; docs/swarm.md) */

/* Copies src into dst: the program step arrays are re-pointed into dst and
** dst->source is NULL (dst owns nothing; scn_free on it is harmless). */
void scn_copy(scn_scenario *dst, const scn_scenario *src);

/* Cuts the run of sc at virtual time duration_us (> 0): workload items
** and fixed faults after it are dropped, repeat and rate windows end at
** it. Used by shrink and by swarm --duration. */
void scn_truncate(scn_scenario *sc, int64_t duration_us);

/* Writes sc as a readable scenario file that scn_load accepts and that
** loads back into a scenario giving the same runs (same trace hashes):
** fields equal to their default are left out, repeated step blocks are
** folded into "repeat", the seed is a hex string, runtime fields shared by
** every case go to the top level. Returns 0, or -1 on a write error. */
int scn_write(FILE *f, const scn_scenario *sc);

/* scn_write into a malloc'd NUL-terminated string (NULL on OOM). */
char *scn_write_string(const scn_scenario *sc);

/* The fault mix a swarm seed drew (scn_swarm_mix). */
typedef struct scn_mix {
  uint32_t kinds;          /* bit (1u << flt_kind) per kind switched on */
  int added;               /* faults appended to the scenario */
  char text[384];          /* "evict=24/d crash=off ..." for people */
} scn_mix;

/* Swarm testing: draws a fault mix from the PRNG stream "swarm.mix" of
** `seed` (each of evict, restart, crash, storage_fail, rpc_delay, rpc_drop,
** alarm_delay, stuck_child on or off, with its rate, time and target) and
** appends it to sc->faults (never beyond SCN_MAX_FAULTS). Also sets
** sc->seed = seed, notes the mix in sc->description and drops the facts
** not marked robust (they pin the file's own run only). A pure function
** of (scenario, seed). Returns the number of faults added. */
int scn_swarm_mix(scn_scenario *sc, uint64_t seed, scn_mix *mix);

/* The verdict of `revenant swarm --expect-reproduce` for one case after
** `runs` seeds of which `met` met the case's expectation: a case that
** expects violations (violate_mask != 0) is reproduced when at least one
** run met it (0), else 1; a case that expects none must meet it in every
** run (0), else 1. Issue #15. */
int scn_swarm_reproduce_verdict(const scn_case *c, uint64_t runs, uint64_t met);

/* The failure signature of a finished run of case ci (docs/swarm.md):
** "<invariant>/<actor class>/<open waits>", e.g.
** "no_wedge/ChatAgent/gate+request+rpc:facet_init", from the first
** violation of a "hold" invariant and what was still waiting at its time;
** "missing:<invariant>/-/-" when an expected violation did not happen; ""
** for a passed run. Writes at most cap bytes into buf; returns buf. */
char *scn_signature(const scn_scenario *sc, int ci, const scn_result *res,
                    char *buf, size_t cap);

/* Sizes of a scenario, for shrink reports. */
typedef struct scn_size {
  int actors, programs, steps, work, faults, stale;
  int64_t arrivals;        /* workload arrivals planned (repeats counted) */
  int64_t duration_us;
  size_t bytes;            /* length of scn_write's text */
} scn_size;

/* Measures sc. */
void scn_size_of(const scn_scenario *sc, scn_size *out);

/* Writes "5 actors, 1 workload item (19510 arrivals), ..." into buf. */
char *scn_size_text(const scn_size *z, char *buf, size_t cap);

typedef struct scn_shrink_opts {
  int invariant;           /* chk_invariant to keep violated; -1: choose */
  int (*stop)(void *ctx);  /* non-NULL: called before each run; 1 = stop */
  void *stop_ctx;
} scn_shrink_opts;

typedef struct scn_shrink_stats {
  int invariant;           /* the invariant kept violated */
  int runs, accepted;      /* candidate runs, and those kept */
  int stopped;             /* 1 if opts->stop ended the search early */
  scn_size before, after;
} scn_shrink_stats;

/* Delta debugging: reduces case ci of `in` run with (seed, strategy) to a
** smaller scenario in which the same invariant is still violated with the
** same seed and the expectation's verdict is unchanged. Tries, until
** nothing more helps: a shorter duration, dropping faults, workload items
** and stale rows (ddmin chunks), dropping actors nothing else references,
** fewer repeats, fault times moved earlier and rounded, lower fault rates,
** fewer program steps. *out gets one case (the shrunk one, its expectation
** restricted to the kept invariant), the seed and strategy; release it
** with scn_free. Returns 0, or -1 with a message in err. */
int scn_shrink(const scn_scenario *in, int ci, uint64_t seed, sim_strategy strategy,
               const scn_shrink_opts *opts, scn_scenario *out,
               scn_shrink_stats *stats, char *err, size_t errlen);

#endif
