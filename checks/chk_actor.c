/*
** chk_actor.c: per-actor invariants: no_wedge and keepalive_holds.
**
** no_wedge counts, per actor, gate resets (RT_EV_GATE_TIMEOUT) and failed
** startups (RT_EV_STARTUP_FAIL) with no durable progress between them
** (RT_EV_STARTUP_OK, or a committed transaction with a write). One startup
** attempt (from a wake or a STARTUP_BEGIN to the next) counts once even
** when it produces both records. Its liveness half: after the last fault,
** the first request to each actor is answered within serve_bound_us.
**
** keepalive_holds: no idle eviction while a keepAlive ref is held; and an
** actor with no refs and no running fiber must not keep receiving alarm
** fires (with no user schedule running) for longer than keepalive_idle_us.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk_reg.h"
#include "runtime/rt_events.h"

#define CA_MAX_ACTORS (1u << 20) /* records naming a larger index are ignored */

/* What the two invariants keep per actor. */
typedef struct ca_actor {
  /* no_wedge: streak of failed startups / gate resets */
  int streak;
  uint64_t streak_idx[CHK_MAX_CHAIN];  /* ring of the last counted events */
  int64_t streak_t0;                   /* time of the first one */
  int streak_gate, streak_startup;     /* how many of each kind */
  int streak_reported;
  int fault_streak;                    /* failures of the streak since the last fault */
  int64_t fault_streak_t0;             /* time of the first of them */
  uint32_t attempt, counted_attempt;   /* one failure per startup attempt */
  /* no_wedge liveness: first request after the last fault */
  int arrived;
  int64_t arrive_t;
  uint64_t arrive_idx;
  int served;
  int64_t ok_t;
  uint64_t ok_idx;
  /* keepalive_holds */
  int64_t refs;
  uint64_t acquire_idx;             /* the last record that took a ref */
  int64_t acquire_t;
  uint64_t release_idx;             /* the last record that left refs at 0 */
  int fire_streak;                  /* fires with refs 0 and nothing running */
  int in_alarm;                     /* between an ALARM_FIRE and its ALARM_DONE */
  int64_t fire_t0;
  uint64_t fire_first_idx;
  uint64_t fire_last_idx[4];
  int fire_reported;
} ca_actor;

typedef struct ca_state {
  ca_actor *v;
  uint32_t n;
} ca_state;

/* Actor a's entry, grown on demand; NULL for RT_NO_ACTOR, huge indices or
** OOM. Pointers stay valid until the next call. */
static ca_actor *ca_grow(chk_set *c, ca_state *s, uint32_t actor);

static inline ca_actor *ca_get(chk_set *c, ca_state *s, uint32_t actor) {
  return actor < s->n ? &s->v[actor] : ca_grow(c, s, actor);
}

/* ca_get's growth path: actor >= s->n. */
static ca_actor *ca_grow(chk_set *c, ca_state *s, uint32_t actor) {
  if (actor == RT_NO_ACTOR || actor >= CA_MAX_ACTORS) return NULL;
  if (actor >= s->n) {
    uint32_t nc = s->n ? s->n : 4;
    while (nc <= actor) nc *= 2;
    ca_actor *nv = realloc(s->v, nc * sizeof *nv);
    if (!nv) {
      chk__oom(c);
      return NULL;
    }
    memset(nv + s->n, 0, (nc - s->n) * sizeof *nv);
    for (uint32_t i = s->n; i < nc; i++) {
      ca_actor *a = &nv[i];
      a->arrive_idx = a->ok_idx = a->acquire_idx = a->release_idx = a->fire_first_idx = CHK_NO_INDEX;
      for (int k = 0; k < 4; k++) a->fire_last_idx[k] = CHK_NO_INDEX;
    }
    s->v = nv;
    s->n = nc;
  }
  return &s->v[actor];
}

/* ---- no_wedge ----------------------------------------------------------- */

static void actor_progress(chk_set *c, void *st, uint32_t actor) {
  ca_actor *a = ca_get(c, st, actor);
  if (!a) return;
  a->streak = 0;
  a->fault_streak = 0;
  a->streak_reported = 0;
  a->streak_gate = a->streak_startup = 0;
}

static void chk_wedge_failure(chk_set *c, ca_actor *a, const sim_rec *r,
                              uint64_t idx) {
  if (a->streak > 0 && a->counted_attempt == a->attempt) return;
  a->counted_attempt = a->attempt;
  if (a->streak == 0) a->streak_t0 = r->t_us;
  a->streak_idx[a->streak % CHK_MAX_CHAIN] = idx;
  a->streak++;
  if (r->kind == RT_EV_GATE_TIMEOUT) a->streak_gate++;
  else a->streak_startup++;
  if (a->fault_streak++ == 0) a->fault_streak_t0 = r->t_us;
  if (a->fault_streak >= chk__params(c)->wedge_k)
    chk__note_wedge(c, r->actor, a->fault_streak_t0, r->t_us);
  if (a->streak < chk__params(c)->wedge_k || a->streak_reported) return;
  a->streak_reported = 1;
  uint64_t chain[CHK_MAX_CHAIN];
  int n = a->streak < CHK_MAX_CHAIN ? a->streak : CHK_MAX_CHAIN;
  for (int i = 0; i < n; i++) chain[i] = a->streak_idx[i];
  char t0[32], t1[32];
  char lb[72];
  chk__violate(c, CHK_NO_WEDGE, r->actor, r->t_us, -1, idx, chain, n,
               "actor %s is wedged: %d consecutive failed startups with no "
               "durable progress (%d gate resets, %d startup failures) from "
               "t=%ss to t=%ss",
               chk__actor_label(c, r->actor, lb, sizeof lb), a->streak, a->streak_gate, a->streak_startup,
               chk__secs(t0, sizeof t0, a->streak_t0),
               chk__secs(t1, sizeof t1, r->t_us));
}

/* A fault: the serve windows start again after it. */
static void chk_serve_reset(ca_state *s) {
  for (uint32_t i = 0; i < s->n; i++) {
    s->v[i].arrived = 0;
    s->v[i].served = 0;
    s->v[i].fault_streak = 0; /* the wedge's certainty counts from the last fault */
  }
}

static void chk_serve_finish(chk_set *c, ca_state *s, uint32_t ai, int64_t end_us) {
  ca_actor *a = &s->v[ai];
  int64_t bound = chk__params(c)->serve_bound_us, fault_t;
  uint64_t fault_idx, death_idx = chk__actor_last_death(c, ai);
  int has_fault = chk__last_fault(c, &fault_t, &fault_idx);
  if (!a->arrived || end_us - a->arrive_t < bound) return;
  if (a->served && a->ok_t - a->arrive_t <= bound) return;
  char ta[32], tf[32], to[32], bd[32], fault[64] = "", tail[96];
  uint64_t chain[4] = {has_fault ? fault_idx : CHK_NO_INDEX, a->arrive_idx, death_idx, a->ok_idx};
  if (death_idx != CHK_NO_INDEX && death_idx < a->arrive_idx)
    chain[2] = CHK_NO_INDEX;
  if (has_fault)
    snprintf(fault, sizeof fault, " after the last fault (t=%ss)",
             chk__secs(tf, sizeof tf, fault_t));
  if (a->served)
    snprintf(tail, sizeof tail, "the first success came only at t=%ss",
             chk__secs(to, sizeof to, a->ok_t));
  else
    snprintf(tail, sizeof tail, "none succeeded by the end (t=%ss)",
             chk__secs(to, sizeof to, end_us));
  char lb[72];
  chk__violate(c, CHK_NO_WEDGE, ai, a->arrive_t + bound, -1, CHK_NO_INDEX,
               chain, 4,
               "actor %s served no request within %s: the first request%s "
               "arrived at t=%ss and %s",
               chk__actor_label(c, ai, lb, sizeof lb), chk__dur(bd, sizeof bd, bound), fault,
               chk__secs(ta, sizeof ta, a->arrive_t), tail);
}

/* ---- keepalive_holds ---------------------------------------------------- */

static void chk_fire_reset(ca_actor *a) {
  a->fire_streak = 0;
  a->fire_reported = 0;
}

static void chk_idle_death(chk_set *c, ca_actor *a, const sim_rec *r,
                           uint64_t idx) {
  if (r->a != RT_DEATH_IDLE) return;
  chk_fire_reset(a);  /* it did go idle */
  if (a->refs <= 0) return;
  char t1[32], t2[32];
  uint64_t chain[2] = {a->acquire_idx, idx};
  char lb[72];
  chk__violate(c, CHK_KEEPALIVE_HOLDS, r->actor, r->t_us, -1, idx, chain, 2,
               "actor %s was evicted as idle at t=%ss while holding %" PRId64
               " keepAlive ref%s (last acquired at t=%ss)",
               chk__actor_label(c, r->actor, lb, sizeof lb), chk__secs(t1, sizeof t1, r->t_us), a->refs,
               a->refs == 1 ? "" : "s",
               a->acquire_idx == CHK_NO_INDEX
                   ? "?"
                   : chk__secs(t2, sizeof t2, a->acquire_t));
}

static void chk_alarm_fire(chk_set *c, ca_actor *a, const sim_rec *r,
                           uint64_t idx) {
  if (a->refs > 0 || chk__actor_running(c, r->actor) > 0) {
    chk_fire_reset(a);
    return;
  }
  if (a->fire_streak == 0) {
    a->fire_t0 = r->t_us;
    a->fire_first_idx = idx;
  }
  a->fire_last_idx[a->fire_streak % 4] = idx;
  a->fire_streak++;
  if (a->fire_reported || r->t_us - a->fire_t0 <= chk__params(c)->keepalive_idle_us)
    return;
  a->fire_reported = 1;
  char bd[32], t0[32], t1[32];
  uint64_t chain[6] = {a->release_idx, a->fire_first_idx};
  for (int i = 0; i < 4; i++) chain[2 + i] = a->fire_last_idx[i];
  if (a->release_idx != CHK_NO_INDEX && a->release_idx > a->fire_first_idx)
    chain[0] = CHK_NO_INDEX;
  char lb[72];
  chk__violate(c, CHK_KEEPALIVE_HOLDS, r->actor, r->t_us, -1, idx, chain, 6,
               "alarm kept firing into actor %s with no keepAlive refs for "
               "%s: %d fires from t=%ss to t=%ss with no fiber running and "
               "no user schedule",
               chk__actor_label(c, r->actor, lb, sizeof lb), chk__dur(bd, sizeof bd, r->t_us - a->fire_t0),
               a->fire_streak, chk__secs(t0, sizeof t0, a->fire_t0),
               chk__secs(t1, sizeof t1, r->t_us));
}

/* A lease taken by the alarm handler itself does not count as something
** else keeping the actor busy: re-taking it on every wake is how the
** heartbeat becomes perpetual (#1703/#1704). */
static void chk_keepalive(ca_actor *a, const sim_rec *r, uint64_t idx) {
  a->refs = r->a;
  if (r->a > 0) {
    if (r->b > 0) {
      a->acquire_idx = idx;
      a->acquire_t = r->t_us;
    }
    if (!(a->in_alarm && r->b > 0)) chk_fire_reset(a);
  } else {
    a->release_idx = idx;
  }
}

static int chk_user_callback(const chk_set *c, uint32_t s) {
  return strncmp(sim_trace_str(chk__trace(c), s), "_cf_", 4) != 0;
}

/* ---- records ------------------------------------------------------------ */

/* The kinds actor_record reads (chk_class.record_kind): its cases below. Skipping
** the others skips only its look-up of the record's actor, which grows the
** actor table by capacity (entries in their initial state, as for an actor
** never seen). */
static int actor_kind(uint32_t kind) {
  switch (kind) {
    case RT_EV_ACTOR_DEATH:
    case RT_EV_ACTOR_WAKE:
    case RT_EV_ALARM_DONE:
    case RT_EV_ALARM_FIRE:
    case RT_EV_FAULT:
    case RT_EV_FIBER_START:
    case RT_EV_GATE_TIMEOUT:
    case RT_EV_KEEPALIVE:
    case RT_EV_REQUEST_ARRIVE:
    case RT_EV_REQUEST_OK:
    case RT_EV_SCHEDULE_RUN:
    case RT_EV_STARTUP_BEGIN:
    case RT_EV_STARTUP_FAIL:
    case RT_EV_STARTUP_OK:
      return 1;
    default:
      return 0;
  }
}

static void actor_record(chk_set *c, void *st, const sim_rec *r, uint64_t idx) {
  if (r->kind == RT_EV_FAULT) {
    chk_serve_reset(st);
    return;
  }
  ca_actor *a = ca_get(c, st, r->actor);
  if (!a) return;
  switch (r->kind) {
    case RT_EV_ACTOR_WAKE:
      a->attempt++;
      a->refs = 0;
      break;
    case RT_EV_STARTUP_BEGIN:
      a->attempt++;
      break;
    case RT_EV_STARTUP_OK:
      actor_progress(c, st, r->actor);
      break;
    case RT_EV_GATE_TIMEOUT:
    case RT_EV_STARTUP_FAIL:
      chk_wedge_failure(c, a, r, idx);
      break;
    case RT_EV_REQUEST_ARRIVE:
      if (!a->arrived) {
        a->arrived = 1;
        a->arrive_t = r->t_us;
        a->arrive_idx = idx;
        a->served = 0;
      }
      break;
    case RT_EV_REQUEST_OK:
      if (a->arrived && !a->served) {
        a->served = 1;
        a->ok_t = r->t_us;
        a->ok_idx = idx;
      }
      break;
    case RT_EV_KEEPALIVE:
      chk_keepalive(a, r, idx);
      break;
    case RT_EV_ACTOR_DEATH:
      chk_idle_death(c, a, r, idx);
      a->refs = 0;
      a->in_alarm = 0;
      break;
    case RT_EV_ALARM_DONE:
      a->in_alarm = 0;
      break;
    case RT_EV_FIBER_START:
      chk_fire_reset(a);
      break;
    case RT_EV_SCHEDULE_RUN:
      if (chk_user_callback(c, r->s)) chk_fire_reset(a);
      break;
    case RT_EV_ALARM_FIRE:
      chk_alarm_fire(c, a, r, idx);
      a->in_alarm = 1;
      break;
    default:
      break;
  }
}

static void actor_finish(chk_set *c, void *st, int64_t end_us) {
  ca_state *s = st;
  for (uint32_t i = 0; i < s->n; i++) chk_serve_finish(c, s, i, end_us);
}

static void *actor_make(chk_set *c) {
  (void)c;
  return calloc(1, sizeof(ca_state));
}

static void actor_free(void *st) {
  ca_state *s = st;
  if (s) free(s->v);
  free(s);
}

const chk_class chk__actor_class = {.name = "actor",
                                    .make = actor_make,
                                    .on_progress = actor_progress,
                                    .on_record = actor_record,
                                    .record_kind = actor_kind,
                                    .on_finish = actor_finish,
                                    .free = actor_free};
