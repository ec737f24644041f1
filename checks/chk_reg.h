/*
** chk_reg.h: how a checker plugs into a checker set (checks/chk.c).
**
** Every checker, built-in or a user's Lua script (chk_lua.c), is one
** chk_class: a table of hooks the core calls, the way SQLite calls a VFS.
** The core (chk.c) keeps only what several checkers read (actor lives,
** pending transaction items, the last fault, the violation list) and calls
** the registered checkers in registration order; it names none of them.
** The built-in classes are listed once, in chk_builtin.c.
**
** Order of the hooks for one trace record:
**   1. the core's own bookkeeping (a wake opens a life, a commit or
**      rollback ends its transaction's items);
**      on_wake   (RT_EV_ACTOR_WAKE, after the new life is counted),
**      on_commit / on_rollback (once per item of the transaction, checker
**                 by checker for each item, in the order the items came),
**      on_progress (a commit that wrote something: the actor made
**                 durable progress);
**   2. on_record, checker by checker;
**   3. on_death  (RT_EV_ACTOR_DEATH, before the core closes the life).
** At the end of the run on_finish runs checker by checker, and chk_free
** calls free. Every hook may be NULL.
*/
#ifndef CHK_REG_H
#define CHK_REG_H

#include <stddef.h>
#include <stdint.h>

#include "checks/chk.h"
#include "sim/sim_trace.h"

#define CHK_NO_INDEX UINT64_MAX
#define CHK_FILTER_KINDS 128 /* record kinds a class's record_kind can filter */

/* A durable write or stash waiting for its transaction (the item a commit
** or rollback hands over). */
typedef struct chk_pending {
  int64_t txn;
  int is_stash;        /* 1: RT_EV_STASH, 0: RT_EV_WRITE */
  int op;              /* rt_write_op for writes */
  int64_t key;         /* fiber/run id */
  int64_t val;         /* stash value; tool-run status (0 = not known yet) */
  uint64_t idx;
} chk_pending;

typedef struct chk_class {
  const char *name;    /* "fiber", "lua", ... (for people) */
  /* Makes the checker's state for set c (returned to every hook as st).
  ** NULL make: the checker has no state of its own (st is NULL). A make
  ** that returns NULL failed (out of memory): chk_new fails. */
  void *(*make)(chk_set *c);
  void (*on_wake)(chk_set *c, void *st, const sim_rec *r, uint64_t idx);
  void (*on_commit)(chk_set *c, void *st, uint32_t actor, const chk_pending *pd,
                    const sim_rec *commit, uint64_t commit_idx);
  void (*on_rollback)(chk_set *c, void *st, uint32_t actor, const chk_pending *pd);
  void (*on_progress)(chk_set *c, void *st, uint32_t actor);
  void (*on_record)(chk_set *c, void *st, const sim_rec *r, uint64_t idx);
  /* 1 if on_record may act on records of this kind, 0 if it ignores them
  ** (it is then not called for them). A function of the kind only, asked
  ** once per kind below CHK_FILTER_KINDS at registration. NULL: every kind. */
  int (*record_kind)(uint32_t kind);
  void (*on_death)(chk_set *c, void *st, const sim_rec *r, uint64_t idx);
  void (*on_finish)(chk_set *c, void *st, int64_t end_us);
  void (*free)(void *st);
} chk_class;

/* Adds a checker of class k with state st (st NULL: made with k->make, or
** none) behind the ones already registered. The set owns st from now on
** (k->free at chk_free, also when this call fails). Returns 0, or -1 on
** OOM. */
int chk_register(chk_set *c, const chk_class *k, void *st);

/* For tests (tests/test_chk_filter.c): with off = 1, sets made from now on
** hand every record to every on_record, as if no class had a record_kind,
** so a run can be compared with the filtered one; 0 restores the filter. */
void chk_filter_off(int off);

/* The state of the first checker of class k in c, or NULL. */
void *chk_state(const chk_set *c, const chk_class *k);

/* ---- services for checkers ---------------------------------------------- */

/* Look-up table: 4 x 64-bit key -> 32-bit value (never iterated). */
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

/* Records a violation (if its invariant is enabled; invariants beyond the
** built-in ones always are). chain: n record indices in any order; they
** are sorted, de-duplicated and, past CHK_MAX_CHAIN, the first one plus
** the latest ones are kept. */
void chk__violate(chk_set *c, chk_invariant inv, uint32_t actor, int64_t t_us,
                  int64_t subject, uint64_t at_index, const uint64_t *chain,
                  int n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 9, 10)))
#endif
    ;

/* The actor's name for a message ("parent"), or its index ("2") when no
** name is known; written into buf (72 bytes are enough). */
const char *chk__actor_label(const chk_set *c, uint32_t actor, char *buf, size_t n);

/* The actor's name or NULL when none was given (chk_set_actor_names). */
const char *chk__actor_name(const chk_set *c, uint32_t actor);

/* The index of the actor named name, or RT_NO_ACTOR (UINT32_MAX). */
uint32_t chk__actor_by_name(const chk_set *c, const char *name);

/* Formats virtual time t_us as seconds with milliseconds ("12.345"). */
const char *chk__secs(char *buf, size_t n, int64_t t_us);

/* Formats a duration for messages: whole units ("5m", "1h30m", "45s") or
** seconds with milliseconds ("0.250s"). */
const char *chk__dur(char *buf, size_t n, int64_t d_us);

/* Notes that an allocation failed: the results are partial. */
void chk__oom(chk_set *c);

/* The trace the set observes (for its strings). */
const sim_trace *chk__trace(const chk_set *c);

/* The set's parameters. */
const chk_params *chk__params(const chk_set *c);

/* 1 and the time and record of the last fault so far, or 0 when none. */
int chk__last_fault(const chk_set *c, int64_t *t_us, uint64_t *idx);

/* The actor's wakes so far (its life number; 0 before its first). */
uint32_t chk__actor_life(chk_set *c, uint32_t actor);

/* The record of the actor's last death, CHK_NO_INDEX if none. */
uint64_t chk__actor_last_death(chk_set *c, uint32_t actor);

/* The actor checker says that the actor failed wedge_k or more startups
** in a row with no durable progress since the last fault, the first of
** those at streak_t0: the wedge way of chk_on_certain (if_quiet 1 or 2;
** chk_recovery.c). */
void chk__note_wedge(chk_set *c, uint32_t actor, int64_t streak_t0, int64_t now_us);

/* Fibers running in the actor's current life (counted by the fiber
** checker from FIBER_START / FIBER_DONE; 0 after a death). */
int chk__actor_running(chk_set *c, uint32_t actor);

#endif
