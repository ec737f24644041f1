/*
** chk.h: invariant checkers over the trace.
**
** Checkers read trace records only (rt_events.h vocabulary); they never
** look into runtime internals. Safety checks run on every record as it is
** appended (a sim_trace observer); liveness checks run once at the end of
** the run (chk_finish), over windows after the last fault. A violation
** names the invariant, the actor, the virtual time, a message, and the
** chain of trace record indices that led to it.
*/
#ifndef CHK_H
#define CHK_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim_trace.h"

typedef enum chk_invariant {
  CHK_RECOVERY_FINISHES = 0,
  CHK_NO_WEDGE,
  CHK_STARTUP_SNAPSHOT,
  CHK_NO_DOUBLE_RECOVERY,
  CHK_STASH_DURABLE,
  CHK_KEEPALIVE_HOLDS,
  CHK_EFFECTS_ONCE,
  CHK_TOOLRUN_TERMINAL_IMMUTABLE,
  CHK_CHECKPOINT_CONTRACT,      /* executor (seed 002; chk_executor.c) */
  CHK_NO_LOST_UPDATE,           /* thread store (seed 004; chk_thread.c) */
  CHK_VERSIONS_CONTIGUOUS,
  CHK_RUN_STATE_SCOPED,
  CHK_TOOLCALL_STATE_SCOPED,
  CHK_CHAT_NO_LOST_USER_MESSAGE, /* chat turns (seed 000 Layer 3; chk_chat.c) */
  CHK_CHAT_NO_DUPLICATE_ASSISTANT,
  CHK_CHAT_CONTINUATION_APPENDS,
  CHK_CHAT_NO_REGENERATION,
  CHK_INVARIANT_COUNT
} chk_invariant;

#define CHK_MAX_CHAIN 16

/* Invariant numbers 0..CHK_INVARIANT_COUNT-1 are the built-in ones; user
** invariants (Lua scripts, chk_lua.h) get the numbers above, as many as a
** process interns (a scenario's masks give its own at most
** CHK_LUA_MAX_INVARIANTS their bits: scenarios/scn.h scn_inv_bit). */
#define CHK_NAME_MAX 48   /* bytes of an invariant name with its NUL */

typedef struct chk_violation {
  chk_invariant inv;
  uint32_t actor;               /* RT_NO_ACTOR if none */
  int64_t t_us;
  char msg[256];
  uint64_t chain[CHK_MAX_CHAIN];/* trace record indices, oldest first */
  int n_chain;
  /* additions (compatible): */
  int64_t subject;              /* the fiber id or tool-run id at stake, -1 if none */
  uint64_t at_index;            /* record that revealed it; UINT64_MAX when found
                                   by chk_finish */
} chk_violation;

/* Called once per recorded violation, right after it is stored (e.g. to
** sim_request_stop() at the first one). The pointer is valid only during
** the call. */
typedef void (*chk_violation_fn)(void *ctx, const chk_violation *v);
/* What a wedge tells the certainty callback (if_quiet >= 1), and what the
** callback may answer besides its return. */
typedef struct chk_wedge_info {
  uint32_t actor;          /* the wedged actor */
  int64_t last_fault_t;    /* the last fault record so far; -1: none */
  int64_t not_before;      /* out: the callback would refuse any wedge before
                              this time (0: no such time); the checker does
                              not ask again before it */
} chk_wedge_info;

/* if_quiet = 1: certain only if no fault record comes after the current
** one (the caller knows the fault plan); return 1 to accept, 0 to be asked
** again later. if_quiet = 2: as 1, and the wedge is steady: no durable
** write (RT_EV_WRITE, RT_EV_STASH) anywhere in the world since the last
** fault (or the start) and no alarm ever set in the run; the caller may
** then also accept when every fault still to come only restarts the
** process or evicts wi->actor (docs/swarm.md, "The steady wedge").
** if_quiet = 0: certain in any case (the return is ignored; wi NULL). */
typedef int (*chk_certain_fn)(void *ctx, chk_invariant inv, int if_quiet,
                              chk_wedge_info *wi);

typedef struct chk_params {
  int wedge_k;                  /* K consecutive gate resets/startup failures (default 3) */
  int64_t serve_bound_us;       /* after the last fault every actor serves within this (default 5 min) */
  int64_t recovery_bound_us;    /* stale rows terminal / orphans recovered within this after a wake (default 5 min) */
  int64_t keepalive_idle_us;    /* an actor with no refs must be able to go idle within this (default 10 min) */
  uint32_t enabled_mask;        /* bit per chk_invariant; default all */
} chk_params;

typedef struct chk_set chk_set;

/* Fills defaults. */
void chk_params_default(chk_params *p);

/* Makes a checker set and registers it as an observer on trace t. The
** trace must keep its records (t->keep) for chains to be printable.
** Returns NULL on OOM. */
chk_set *chk_new(sim_trace *t, const chk_params *p);

/* Runs the end-of-run (liveness) checks at virtual time end_us; call once
** after the run. */
void chk_finish(chk_set *c, int64_t end_us);

/* Violations found so far (safety ones as they happen, liveness after
** chk_finish), in the order they were found. They are stored contiguously:
** chk_violation_at(c, 0) points to an array of chk_violation_count(c)
** entries, valid until the next record is observed or chk_free. */
size_t chk_violation_count(const chk_set *c);
const chk_violation *chk_violation_at(const chk_set *c, size_t i);

/* 1 once any violation was recorded (for stop-at-first-violation). */
int chk_failed(const chk_set *c);

/* Gives the checkers the actors' names (index -> name) so that messages
** say "actor parent" rather than "actor 0". The array must outlive c. */
void chk_set_actor_names(chk_set *c, const char *const *names, uint32_t n);

/* Installs (fn != NULL) or removes the violation callback. */
void chk_on_violation(chk_set *c, chk_violation_fn fn, void *ctx);

/* Installs (fn != NULL) or removes the certainty callback, for runs that
** stop once their verdict is decided. fn(ctx, inv, if_quiet) is called
** during a record, until it accepts (at most once per invariant), when a
** liveness violation that chk_finish would report at any later end is
** already certain. Today recovery_finishes, in two ways:
**   if_quiet 0: stale work has stayed unresolved for more than
**     recovery_bound_us of an open window (from then on its resolution,
**     its actor's next death and the end of the run all report it);
**   if_quiet 1: a wedge: its actor failed wedge_k startups in a row with
**     no durable progress, all after the last fault and after the work
**     went stale, and has been awake since then for recovery_bound_us: if
**     no fault comes later, the end of the run reports the work unless it
**     is resolved, which the wedge shows it is not.
**   if_quiet 2: the same wedge, steady (see chk_certain_fn).
** The violation itself is still recorded by the event that reports it, or
** by chk_finish. */
void chk_on_certain(chk_set *c, chk_certain_fn fn, void *ctx);

/* 1 if an allocation failed while observing: the results are partial. */
int chk_incomplete(const chk_set *c);

/* 1 if `actor` has not been awake at any moment from t_us on, as far as the
** records so far show: it never woke, or its last life ended at or before
** t_us. For the steady wedge (docs/swarm.md): an actor the wedge's cycle
** does not wake. */
int chk_actor_asleep_since(const chk_set *c, uint32_t actor, int64_t t_us);

/* The liveness checks among `mask` (bits per chk_invariant: no_wedge,
** recovery_finishes, keepalive_holds, chat_no_lost_user_message) that a
** run ending at end_us could not judge, because the run ends less than
** their bound after the last fault (or after 0 with none): something
** still pending at the end was not yet late. Writes e.g. "no_wedge,
** recovery_finishes (the run ends 1m0s after the last fault; their bound
** is 5m0s)" into buf (cap bytes, "" when every one could be judged) and
** returns the bits of those invariants. */
uint32_t chk_unjudged(const chk_set *c, uint32_t mask, int64_t end_us, char *buf, size_t cap);

/* The parameters the set runs with. */
const chk_params *chk_params_of(const chk_set *c);

/* Frees the set (the observer must not fire afterwards: free the trace
** first or stop appending). */
void chk_free(chk_set *c);

/* Stable name of an invariant ("no_wedge", or a user invariant's name),
** "?" for an unknown number; and the reverse (-1 if unknown). */
const char *chk_invariant_name(chk_invariant inv);
int chk_invariant_parse(const char *name);

/* The number of user invariant name (a Lua invariant): the same number for
** the same name for the rest of the process (numbers are handed out in the
** order names are first interned, from CHK_INVARIANT_COUNT). -1 with a
** message in err when the name is not 1..47 of [A-Za-z0-9_.-] or is a
** built-in invariant's (or out of memory). No bound on the count. */
int chk_invariant_intern(const char *name, char *err, size_t errlen);

/* Built-in invariants plus the user ones interned so far: every valid
** invariant number is below it. */
int chk_invariant_count(void);

#endif
