/*
** chk_internal.h: state shared by the checker files (checks/chk*.c).
**
** Not part of the public API. The core (chk.c) owns the set, the per-actor
** array, the fiber and tool-run tables, the transaction buffer and the
** violation list; it hands each record to the invariant files:
**   chk_fiber.c    stash_durable, no_double_recovery, effects_once, and
**                  the fiber rows of recovery_finishes (work lost)
**   chk_toolrun.c  committed tool-run status, startup_snapshot,
**                  toolrun_terminal_immutable
**   chk_recovery.c recovery_finishes: stale work and its time windows
**   chk_actor.c    no_wedge, keepalive_holds
**   chk_executor.c checkpoint_contract (seed 002; its own turn table)
**   chk_thread.c   no_lost_update, versions_contiguous, run_state_scoped,
**                  toolcall_state_scoped (seed 004; its own thread table)
** Ordering rule: every decision is taken in record order, and every scan
** over many objects walks an array in a fixed order (actor index, then the
** order in which the object first appeared); hash tables only answer
** look-ups.
*/
#ifndef CHK_INTERNAL_H
#define CHK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "checks/chk.h"
#include "runtime/rt_events.h"
#include "sim/sim_trace.h"

#define CHK_NO_INDEX UINT64_MAX
#define CHK_MAX_ACTORS (1u << 20)  /* records naming a larger index are ignored */

/* ---- look-up table: 4 x 64-bit key -> 32-bit value ---------------------- */

typedef struct chk_map {
  uint64_t *keys;  /* 4 per slot */
  uint32_t *vals;  /* 0 = empty slot, else value + 1 */
  size_t cap, n;
} chk_map;

/* 1 and *out set when key k is present, else 0. */
int chk__map_get(const chk_map *m, const uint64_t k[4], uint32_t *out);
/* Inserts or replaces. Returns 0, or -1 on OOM. */
int chk__map_put(chk_map *m, const uint64_t k[4], uint32_t v);
void chk__map_free(chk_map *m);

/* ---- liveness window of one piece of interrupted work ------------------- */

/* A fiber row or tool run becomes "stale" when its actor dies while it is
** unfinished (or when it is committed while the actor has no incarnation).
** The window opens at the next wake and closes at the next death. */
typedef struct chk_stale {
  int stale;           /* 1 once interrupted */
  int64_t stale_t;
  uint64_t stale_idx;  /* the death (or commit) that made it stale */
  int win;             /* 1 while a window is open */
  int64_t win_t;
  uint64_t win_idx;    /* the wake that opened it */
  int resolved;        /* recovered / terminal */
  int reported;        /* a recovery_finishes violation was recorded */
} chk_stale;

/* ---- per fiber (key: actor, fiber id) ----------------------------------- */

typedef struct chk_fiber {
  uint32_t actor;
  int64_t id;
  int64_t root;               /* first fiber of its resume chain */
  int seen_state;             /* 1: an insert or stash of it was seen */
  /* stash_durable: the last committed stash */
  int64_t stash_val;          /* -1 = none */
  uint64_t stash_idx;         /* its STASH record */
  uint64_t stash_commit_idx;  /* its commit */
  int64_t stash_commit_t;
  uint64_t last_stash_idx;    /* the last STASH record, committed or not */
  /* recovery_finishes */
  int inserted, deleted, done;
  uint64_t insert_idx;        /* commit of the insert */
  uint32_t run_life;          /* actor life in which FIBER_START ran (0 none) */
  int watched;                /* on its actor's watch list */
  chk_stale st;
  /* hand-overs to a recovery hook */
  int handed;
  uint64_t hand_idx;          /* the first hand-over */
  int64_t hand_t;
  int double_reported;
  int threw;                  /* the latest hand-over threw */
  int retained;               /* #1729 kept its row after a throw: the next hand-over is a retry */
  int gave_up;                /* #1729 dropped it (max_age_exceeded): an explicit give-up */
  uint64_t threw_idx;
  int64_t threw_t;
} chk_fiber;

/* ---- per tool run (key: parent actor, run id) --------------------------- */

typedef struct chk_run {
  uint32_t actor;             /* the parent */
  int64_t id;
  int committed;              /* latest committed status, 0 = none */
  uint64_t committed_idx;     /* the commit */
  /* pairing of status records with their writes (either order) */
  int ua_status;              /* a status record not yet paired, 0 = none */
  int64_t uw_txn;             /* a write not yet paired ... */
  int uw_state;               /* ... 0 none, 1 pending, 2 committed, 3 rolled back */
  uint64_t uw_commit_idx;
  uint64_t insert_idx;        /* the TOOLRUN_INSERT record */
  int64_t insert_t;
  uint64_t terminal_idx;      /* the status record that made it terminal */
  int64_t terminal_t;
  int terminal_status;
  uint32_t live_life;         /* inserted after ONSTART_BEGIN of this life */
  int watched;
  chk_stale st;
} chk_run;

/* ---- per actor ---------------------------------------------------------- */

/* A durable write or stash waiting for its transaction. */
typedef struct chk_pending {
  int64_t txn;
  int is_stash;        /* 1: RT_EV_STASH, 0: RT_EV_WRITE */
  int op;              /* rt_write_op for writes */
  int64_t key;         /* fiber/run id */
  int64_t val;         /* stash value; tool-run status (0 = not known yet) */
  uint64_t idx;
} chk_pending;

/* Work to watch for recovery (fibers and tool runs, first-seen order). */
typedef struct chk_watch {
  int is_run;
  uint32_t i;          /* index into fibers or runs */
} chk_watch;

/* One incarnation: [wake_t, death_t). */
typedef struct chk_life {
  int64_t wake_t, death_t;  /* death_t = INT64_MAX while alive */
  uint64_t wake_idx;
} chk_life;

typedef struct chk_actor {
  int alive;
  uint32_t life;                    /* wakes so far */
  uint64_t last_death_idx;          /* CHK_NO_INDEX if none */
  chk_pending *pend;
  size_t n_pend, cap_pend;
  chk_watch *watch;
  size_t n_watch, cap_watch;
  chk_life *lives;
  size_t n_lives, cap_lives;
  /* no_wedge: streak of failed startups / gate resets */
  int streak;
  uint64_t streak_idx[CHK_MAX_CHAIN];  /* ring of the last counted events */
  int64_t streak_t0;                   /* time of the first one */
  int streak_gate, streak_startup;     /* how many of each kind */
  int streak_reported;
  uint32_t attempt, counted_attempt;   /* one failure per startup attempt */
  /* no_wedge liveness: first request after the last fault */
  int arrived;
  int64_t arrive_t;
  uint64_t arrive_idx;
  int served;
  int64_t ok_t;
  uint64_t ok_idx;
  /* startup_snapshot */
  int64_t *snap;                    /* sorted run ids */
  size_t n_snap, cap_snap;
  int snap_records;                 /* SNAPSHOT records since STARTUP_BEGIN */
  uint64_t snap_first_idx;
  int in_recovery, rec_checked;     /* between RECOVERY begin and end */
  uint64_t rec_begin_idx;
  int64_t rec_begin_t;
  uint32_t onstart_life;            /* life of the last ONSTART_BEGIN */
  uint64_t onstart_idx;
  int64_t onstart_t;
  /* keepalive_holds */
  int64_t refs;
  uint64_t acquire_idx;             /* the last record that took a ref */
  int64_t acquire_t;
  uint64_t release_idx;             /* the last record that left refs at 0 */
  int active;                       /* fibers running in this life */
  int fire_streak;                  /* fires with refs 0 and nothing running */
  int in_alarm;                     /* between an ALARM_FIRE and its ALARM_DONE */
  int64_t fire_t0;
  uint64_t fire_first_idx;
  uint64_t fire_last_idx[4];
  int fire_reported;
} chk_actor;

/* ---- effects_once ------------------------------------------------------- */

typedef struct chk_effect {
  uint64_t first_idx;
  int64_t first_t;
  int reported;
  int64_t first_run;        /* tool-call effects: the run that did it first */
} chk_effect;

/* ---- the set ------------------------------------------------------------ */

struct chk_set {
  sim_trace *trace;
  chk_params p;
  chk_actor *actors;
  uint32_t n_actors;
  chk_fiber *fibers;
  size_t n_fibers, cap_fibers;
  chk_map fiber_ix;
  chk_run *runs;
  size_t n_runs, cap_runs;
  chk_map run_ix;
  chk_effect *effects;
  size_t n_effects, cap_effects;
  chk_map effect_ix;
  chk_violation *v;
  size_t n_v, cap_v;
  int has_fault;
  int64_t last_fault_t;
  uint64_t last_fault_idx;
  int finished;
  int oom;                          /* an allocation failed: results partial */
  chk_violation_fn on_violation;
  void *on_violation_ctx;
  chk_certain_fn on_certain;        /* chk_on_certain; NULL: not asked */
  void *on_certain_ctx;
  uint32_t certain_sent;            /* invariants on_certain was called for */
  int64_t stale_due;                /* no recovery_finishes can be certain
                                       before a record later than this */
  struct chk_exec *exec;            /* chk_executor.c: turns (seed 002) */
  struct chk_thr *thr;              /* chk_thread.c: threads (seed 004) */
  struct chk_chat *chat;            /* chk_chat.c: chat turns (seed 000 Layer 3) */
  const char *const *names;         /* actor index -> name, for messages */
  uint32_t n_names;
};

/* The actor's name for a message ("parent"), or its index ("2") when no
** name is known; written into buf (72 bytes are enough). */
const char *chk__actor_label(const chk_set *c, uint32_t actor, char *buf, size_t n);

/* Records a violation (if its invariant is enabled). chain: n record
** indices in any order; they are sorted, de-duplicated and, past
** CHK_MAX_CHAIN, the first one plus the latest ones are kept. */
void chk__violate(chk_set *c, chk_invariant inv, uint32_t actor, int64_t t_us,
                  int64_t subject, uint64_t at_index, const uint64_t *chain,
                  int n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 9, 10)))
#endif
    ;

/* The actor's state, grown on demand; NULL for RT_NO_ACTOR, huge indices or
** OOM. */
chk_actor *chk__actor(chk_set *c, uint32_t actor);

/* The fiber / run of (actor, id), created when create is 1 (NULL on OOM or
** when absent and create is 0). Pointers stay valid until the next create. */
chk_fiber *chk__fiber(chk_set *c, uint32_t actor, int64_t id, int create);

/* effects_once bookkeeping (chk_fiber.c): the effect recorded under key k
** before, or NULL when this record (r at trace index idx) is its first
** occurrence and has just been recorded (also NULL on OOM, with c->oom set). */
chk_effect *chk__effect_seen(chk_set *c, const uint64_t k[4], const sim_rec *r, uint64_t idx);
chk_run *chk__run(chk_set *c, uint32_t actor, int64_t id, int create);

/* Puts a fiber or run on its actor's watch list (once). */
void chk__watch(chk_set *c, chk_actor *a, int is_run, uint32_t i);

/* Formats a time as "95.000" (seconds, three decimals) into buf. */
const char *chk__secs(char *buf, size_t n, int64_t t_us);
/* Formats a duration as "10m", "30s", "1h30m", "1.500s". */
const char *chk__dur(char *buf, size_t n, int64_t d_us);

/* Per-file record handlers, called in this order for every record. */
void chk__fiber_record(chk_set *c, const sim_rec *r, uint64_t idx);
void chk__toolrun_record(chk_set *c, const sim_rec *r, uint64_t idx);
void chk__actor_record(chk_set *c, const sim_rec *r, uint64_t idx);

/* Applies one committed pending item (called by the core at commit). */
void chk__fiber_commit(chk_set *c, uint32_t actor, const chk_pending *pd,
                       const sim_rec *commit, uint64_t commit_idx);
void chk__toolrun_commit(chk_set *c, uint32_t actor, const chk_pending *pd,
                         const sim_rec *commit, uint64_t commit_idx);
/* A write was rolled back. */
void chk__toolrun_rollback(chk_set *c, uint32_t actor, const chk_pending *pd);
/* A committed transaction on actor with at least one write. */
void chk__actor_progress(chk_set *c, uint32_t actor);

/* Window bookkeeping of the watch lists (chk_recovery.c): on a death, on a
** wake, when work is resolved or becomes stale, and at the end. */
void chk__stale_death(chk_set *c, uint32_t actor, const sim_rec *r,
                      uint64_t idx);
void chk__stale_wake(chk_set *c, uint32_t actor, const sim_rec *r,
                     uint64_t idx);
/* As chk__stale_resolve for a fiber given up explicitly (#1729
** max_age_exceeded): a late give-up is reported as a give-up, never as a
** recovery. */
void chk__stale_give_up(chk_set *c, uint32_t i, int64_t t_us, uint64_t idx);

void chk__stale_resolve(chk_set *c, int is_run, uint32_t i, int64_t t_us,
                        uint64_t idx);
void chk__stale_mark(chk_set *c, int is_run, uint32_t i, int64_t t_us,
                     uint64_t idx);
/* Calls on_certain(recovery_finishes) when some stale item's open window
** has passed the bound at time now_us, else moves stale_due to the
** earliest time one could. */
void chk__stale_certain(chk_set *c, int64_t now_us);
/* The wedge way of chk_on_certain (if_quiet 1), asked at a failed startup
** of actor a that keeps its no_wedge streak at wedge_k or more. */
void chk__stale_wedged(chk_set *c, chk_actor *a, int64_t now_us);
void chk__stale_finish(chk_set *c, int64_t end_us);

/* Liveness at the end (chk_actor.c). */
void chk__actor_finish(chk_set *c, int64_t end_us);

/* Checkpoint executor (chk_executor.c) and thread store (chk_thread.c):
** their own record handlers (called after the ones above) and cleanup. */
void chk__exec_record(chk_set *c, const sim_rec *r, uint64_t idx);
void chk__exec_free(chk_set *c);
void chk__thread_record(chk_set *c, const sim_rec *r, uint64_t idx);
void chk__thread_free(chk_set *c);

/* Chat turns (chk_chat.c): record handler (after the ones above), the
** end-of-run check (unanswered user messages), cleanup. */
void chk__chat_record(chk_set *c, const sim_rec *r, uint64_t idx);
void chk__chat_finish(chk_set *c, int64_t end_us);
void chk__chat_free(chk_set *c);

#endif
