/*
** chk_internal.h: state shared by the checker files (checks/chk*.c).
**
** Not part of the public API. The core (chk.c) owns the set, the per-actor
** array, the fiber and tool-run tables, the transaction buffer and the
** violation list, and calls the registered checkers (chk_reg.h; the
** built-in ones are listed in chk_builtin.c). Three of them share the
** fiber, tool-run and actor tables declared here:
**   chk_fiber.c    stash_durable, no_double_recovery, effects_once, and
**                  the fiber rows of recovery_finishes (work lost)
**   chk_toolrun.c  committed tool-run status, startup_snapshot,
**                  toolrun_terminal_immutable
**   chk_recovery.c recovery_finishes: stale work and its time windows
** The others keep their own state and include only chk_reg.h:
**   chk_actor.c    no_wedge, keepalive_holds (its own per-actor table)
**   chk_executor.c checkpoint_contract (seed 002; its own turn table)
**   chk_thread.c   no_lost_update, versions_contiguous, run_state_scoped,
**                  toolcall_state_scoped (seed 004; its own thread table)
**   chk_chat.c     the chat turn invariants (seed 000 Layer 3)
**   chk_lua.c      user invariants written in Lua (issue #13)
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
#include "checks/chk_reg.h"
#include "runtime/rt_events.h"
#include "sim/sim_trace.h"

#define CHK_MAX_ACTORS (1u << 20)  /* records naming a larger index are ignored */

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
  int active;                       /* fibers running in this life (chk_fiber.c) */
} chk_actor;

/* ---- effects_once ------------------------------------------------------- */

typedef struct chk_effect {
  uint64_t first_idx;
  int64_t first_t;
  int reported;
  int64_t first_run;        /* tool-call effects: the run that did it first */
} chk_effect;

/* ---- the set ------------------------------------------------------------ */

/* One registered checker (chk_register). */
struct chk_reg {
  const chk_class *k;
  void *st;
};

/* The on_record hooks of the registered checkers, in order, without the
** NULL ones: the loop every trace record runs (issue #18: reading each
** class's hook through its table was 11 % of a swarm worker). */
struct chk_rec_hook {
  void (*fn)(chk_set *c, void *st, const sim_rec *r, uint64_t idx);
  void *st;
  uint64_t kinds[CHK_FILTER_KINDS / 64]; /* bit k: called for kind k (record_kind) */
};

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
  uint64_t write_gen;               /* RT_EV_WRITE and RT_EV_STASH records so far */
  uint64_t write_gen_at_fault;      /* write_gen at the last fault record */
  int alarm_seen;                   /* an RT_EV_ALARM_SET record was seen */
  int64_t wedge_not_before;         /* chk_wedge_info.not_before: no wedge is
                                       offered to on_certain before this */
  int finished;
  int oom;                          /* an allocation failed: results partial */
  chk_violation_fn on_violation;
  void *on_violation_ctx;
  chk_certain_fn on_certain;        /* chk_on_certain; NULL: not asked */
  void *on_certain_ctx;
  uint32_t certain_sent;            /* invariants on_certain was called for */
  int64_t stale_due;                /* no recovery_finishes can be certain
                                       before a record later than this */
  struct chk_reg *reg;              /* the registered checkers, in order */
  size_t n_reg, cap_reg;
  struct chk_rec_hook *rec;         /* on_record hooks (chk_rec_hook) */
  size_t n_rec, cap_rec;
  uint32_t kind_hooks[CHK_FILTER_KINDS]; /* while n_rec <= 32: bit k set when
                                       rec[k] is called for that kind */
  const char *const *names;         /* actor index -> name, for messages */
  uint32_t n_names;
};

/* The actor's state, grown on demand; NULL for RT_NO_ACTOR, huge indices or
** OOM. */
chk_actor *chk__actor_grow(chk_set *c, uint32_t actor);
static inline chk_actor *chk__actor(chk_set *c, uint32_t actor) {
  /* inline: called on most records, and the growth path's register saves
  ** were most of its cost (issue #18) */
  return actor < c->n_actors ? &c->actors[actor] : chk__actor_grow(c, actor);
}

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

/* The built-in checker classes in registration order, NULL-terminated
** (chk_builtin.c: the one place that names them). */
extern const chk_class *const chk__builtin[];

/* Window bookkeeping of the watch lists (chk_recovery.c), for the fiber
** and tool-run checkers: when work is given up, resolved or becomes
** stale.
** chk__stale_give_up: as chk__stale_resolve for a fiber given up explicitly (#1729
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
#endif
