/*
** rt_agent.c: the Agents SDK layer over the actor host.
**
** Follows seed 000 ("Forever": keepAlive, runFiber, stash, onFiberRecovered,
** _checkRunFibers) and reference/agents-sdk.md A.2–A.8 at PR #1604:
**   startup (inside the gate): _checkRunFibers → tool-run snapshot (or the
**   pre-fix gated reconcile) → user onStart → release → background tool-run
**   recovery → resumed fibers start (workerd-observed.md item 4);
**   keepAlive: ref-counted, 0→1 arms the alarm at now+interval (A.3), the
**   disposer leaves the alarm alone (@1604) or reschedules (#1707);
**   heartbeat as an interval schedule every 10 s (seed 001) as a variant;
**   alarm(): due schedules → housekeeping _checkRunFibers → reschedule.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

#define HEARTBEAT_CB "_cf_fiberHeartbeat"

int rt__prog_find(rt_world *w, const char *name) {
  for (int i = 0; i < w->n_progs; i++)
    if (strcmp(w->progs[i].name, name) == 0) return i;
  return -1;
}

static const rt_recovery_policy *policy_for(const rt_actor_spec *sp, const char *name) {
  static const rt_recovery_policy dflt = {.action = RT_RECOVER_RESUME};
  for (int i = 0; i < sp->n_policies; i++)
    if (!sp->policies[i].fiber_name[0] || !strcmp(sp->policies[i].fiber_name, name))
      return &sp->policies[i];
  return &dflt;
}

/* ---- alarms (platform) ------------------------------------------------ */

static void alarm_fire(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_actor *ac = &w->actors[a];
  (void)s;
  ac->alarm_ev = 0;
  if (ac->alarm_at < 0) return;
  if (w->alarm_delay_us > 0 && !(arg >> 32)) { /* alarm_delay: delivered late */
    ac->alarm_ev = sim_after(w->s, w->alarm_delay_us, 0, alarm_fire, w, a | (1ULL << 32));
    return;
  }
  rt_msg m = {0};
  m.kind = MSG_ALARM;
  m.entry = RT_ENTRY_ALARM;
  m.alarm_at = ac->alarm_at;
  m.id = rt__new_id(w);
  rt__emit(w, RT_EV_ALARM_FIRE, a, ac->alarm_at, ac->alarm_retries, 0, NULL);
  rt__deliver(w, a, &m, 0);
}

static void alarm_arm(rt_world *w, uint32_t a, int64_t at_us) {
  rt_actor *ac = &w->actors[a];
  sim_cancel(w->s, ac->alarm_ev);
  ac->alarm_ev = 0;
  ac->alarm_at = at_us;
  if (at_us >= 0) ac->alarm_ev = sim_at(w->s, at_us, 0, alarm_fire, w, a);
}

void rt__alarm_set(rt_world *w, uint32_t a, int64_t at_us) {
  if (w->actors[a].alarm_at == at_us) return;
  rt__w_alarm(w, a, at_us);
  alarm_arm(w, a, at_us);
  rt__emit(w, RT_EV_ALARM_SET, a, at_us, 0, 0, NULL);
}

void rt__alarm_clear(rt_world *w, uint32_t a) {
  if (w->actors[a].alarm_at < 0) return;
  rt__w_alarm(w, a, -1);
  alarm_arm(w, a, -1);
  rt__emit(w, RT_EV_ALARM_DELETE, a, 0, 0, 0, NULL);
}

void rt__alarm_sync(rt_world *w, uint32_t a) {
  int64_t stored = rt__stored_alarm(w, a);
  if (stored != w->actors[a].alarm_at) alarm_arm(w, a, stored);
}

int rt_alarm_preset(rt_world *w, uint32_t a, int64_t at_us) {
  if (a >= w->n_actors || rt__w_alarm(w, a, at_us)) return -1;
  alarm_arm(w, a, at_us);
  rt__emit(w, RT_EV_ALARM_SET, a, at_us, 0, 0, NULL);
  return 0;
}

void rt__alarm_failed(rt_world *w, uint32_t a, const rt_msg *m) {
  rt_actor *ac = &w->actors[a];
  (void)m;
  if (ac->mem) ac->mem->alarm_active = 0;
  rt__emit(w, RT_EV_ALARM_DONE, a, 0, 0, 0, NULL);
  if (ac->alarm_retries >= w->cfg.alarm_retry_max) {
    RT_PROBE(w, a, RT_PROBE_ALARM_RETRIES_EXHAUSTED);
    ac->alarm_retries = 0;
    alarm_arm(w, a, -1);
    return;
  }
  int64_t next = w->s->now_us + (w->cfg.alarm_retry_base_us << ac->alarm_retries);
  ac->alarm_retries++;
  rt__emit(w, RT_EV_ALARM_RETRY, a, next, ac->alarm_retries, 0, NULL);
  alarm_arm(w, a, next);
}

/* #1729 follow-up alarm delay: min(FIBER_RECOVERY_MAX_BACKOFF_MS,
** keepAliveIntervalMs * 2^min(noProgressScans, 20)) (index.ts,
** _scheduleNextAlarmBody). */
int64_t rt__recovery_backoff_us(const rt_world *w, int no_progress) {
  int exp = no_progress < 20 ? no_progress : 20;
  int64_t d = w->cfg.keepalive_interval_us;
  for (int i = 0; i < exp && d < w->cfg.recovery_backoff_max_us; i++) d *= 2;
  return d < w->cfg.recovery_backoff_max_us ? d : w->cfg.recovery_backoff_max_us;
}

/* _scheduleNextAlarm's decision: the alarm time, or INT64_MAX for none. */
static int64_t next_alarm_time(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  int64_t now = w->s->now_us, next = INT64_MAX;
  int64_t t = rt__next_schedule_time(w, a);
  if (t >= 0) next = t * 1000000 > now + 1000 ? t * 1000000 : now + 1000;
  if (w->cfg.heartbeat == RT_HB_ALARM && m && m->refs > 0 &&
      now + w->cfg.keepalive_interval_us < next)
    next = now + w->cfg.keepalive_interval_us;
  if (w->cfg.retain == RT_RETAIN_1729 && rt__pending_fiber_recovery(w, a)) {
    int64_t d = rt__recovery_backoff_us(w, m ? m->no_progress_scans : 0);
    if (now + d < next) next = now + d;
  }
  return next;
}

static void alarm_apply(rt_world *w, uint32_t a, int64_t next) {
  if (next == INT64_MAX)
    rt__alarm_clear(w, a);
  else
    rt__alarm_set(w, a, next);
}

/* _scheduleNextAlarm (A.4): earliest schedule, and the heartbeat while
** refs are held (raw-alarm design). */
void rt__schedule_next_alarm(rt_world *w, uint32_t a) {
  alarm_apply(w, a, next_alarm_time(w, a));
}

/* The SDK's #1707 disposer: ctx.waitUntil(this._scheduleNextAlarm()). The
** reschedule runs after the dispose returns (one event), reads the state
** (its decision), and its setAlarm / deleteAlarm lands after an await (a
** second event at the same instant): a keepAlive() in between arms the
** heartbeat and is then overwritten. */
static void deferred_apply(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg & 0xffffffffu);
  rt_mem *m = w->actors[a].mem;
  (void)s;
  if (!m) return;
  alarm_apply(w, a, m->deferred_next);
  m->waituntil--;
  rt__emit(w, RT_EV_WAITUNTIL, a, m->waituntil, -1, 0, NULL);
}

static void deferred_decide(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_mem *m = w->actors[a].mem;
  (void)s;
  if (!m) return;
  m->deferred_next = next_alarm_time(w, a);
  sim_after(w->s, 0, m->dom, deferred_apply, w, a);
}

static void deferred_reschedule(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  m->waituntil++;
  rt__emit(w, RT_EV_WAITUNTIL, a, m->waituntil, 1, 0, NULL);
  sim_after(w->s, 0, m->dom, deferred_decide, w, a);
}

/* ---- keepAlive (A.3; seed 001 for the schedule design) ---------------- */

void rt__keepalive_acquire(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  m->refs++;
  rt__emit(w, RT_EV_KEEPALIVE, a, m->refs, 1, 0, NULL);
  if (m->refs != 1) return;
  if (w->cfg.heartbeat == RT_HB_SCHEDULE) {
    int64_t id;
    if (!rt__schedule_find(w, a, HEARTBEAT_CB, &id)) {
      int64_t iv = w->cfg.heartbeat_schedule_us / 1000000;
      rt__w_schedule_insert(w, a, rt__new_id(w), HEARTBEAT_CB, w->s->now_us / 1000000 + iv, iv);
    }
  }
  rt__schedule_next_alarm(w, a);
}

void rt__keepalive_release(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  if (m->refs == 0) return;
  m->refs--;
  rt__emit(w, RT_EV_KEEPALIVE, a, m->refs, -1, 0, NULL);
  if (m->refs != 0) return;
  if (w->cfg.heartbeat == RT_HB_SCHEDULE) {
    int64_t id;
    if (rt__schedule_find(w, a, HEARTBEAT_CB, &id)) rt__w_schedule_delete(w, a, id, HEARTBEAT_CB);
    rt__schedule_next_alarm(w, a);
  } else if (w->cfg.dispose == RT_DISPOSE_FIXED) {
    rt__schedule_next_alarm(w, a);
  } else if (w->cfg.dispose == RT_DISPOSE_SDK1707) {
    deferred_reschedule(w, a);
  }
}

/* keepAlive() with its disposer kept by name, and a call of that disposer:
** `if (disposed) return; disposed = true;` (index.ts, Agent.keepAlive). */
void rt__keepalive_lease_request(rt_world *w, uint32_t a, const rt_msg *msg) {
  rt_mem *m = w->actors[a].mem;
  int i;
  for (i = 0; i < m->n_leases && m->leases[i].lease != msg->str; i++)
    ;
  if (msg->kind == MSG_KEEPALIVE_ACQUIRE) {
    if (i == m->n_leases && m->n_leases < 16) m->n_leases++;
    if (i < 16) {
      m->leases[i].lease = msg->str;
      m->leases[i].disposed = 0;
    }
    rt__keepalive_acquire(w, a);
  } else {
    int live = i < m->n_leases && !m->leases[i].disposed;
    if (live) {
      m->leases[i].disposed = 1;
      rt__keepalive_release(w, a);
    }
    if (w->actors[a].mem == m)
      sim_emit(w->s, RT_EV_KEEPALIVE_DISPOSE, a, live, m->refs, 0, msg->str, 0);
  }
  if (w->actors[a].mem == m) rt__request_done(w, a, msg, 1, NULL);
}

/* ---- fibers (A.6) ----------------------------------------------------- */

static rt_fiber *fiber_find(rt_mem *m, int64_t id) {
  for (int i = 0; i < m->n_fibers; i++)
    if (m->fibers[i].live && m->fibers[i].id == id) return &m->fibers[i];
  return NULL;
}

static int fiber_active(rt_mem *m, int64_t id) { return fiber_find(m, id) != NULL; }

/* The body ended: ok with `result` (JSON text, NULL: undefined) or thrown
** with the error message `result`. */
static void fiber_end_with(rt_world *w, uint32_t a, rt_fiber *f, int ok, const char *result) {
  if (f->legacy) { /* legacy fibers: completion, retry or failure (rt_legacy.c) */
    rt__legacy_end(w, a, f, ok);
    return;
  }
  int64_t id = f->id, req = f->await_req;
  const char *name = w->progs[f->prog].name;
  rt_msg m;
  f->live = 0;
  rt__w_fiber_delete(w, a, id);
  sim_emit(w->s, RT_EV_FIBER_DONE, a, id, ok, 0, rt__str(w, name),
           result ? rt__str(w, result) : 0);
  rt__keepalive_release(w, a);
  /* awaited runFiber: the caller gets the return value or sees the error */
  if (req && w->actors[a].mem && rt__pop_serving(w->actors[a].mem, req, &m))
    rt__request_result(w, a, &m, ok, ok ? NULL : result, ok ? result : NULL);
  if (w->actors[a].mem && w->actors[a].mem->lua) /* scripts awaiting it (rt_luaagent.c) */
    rt__lg_fiber_ended(w, a, id, ok, result);
}

void rt__fiber_end(rt_world *w, uint32_t a, rt_fiber *f, int ok, const char *result) {
  fiber_end_with(w, a, f, ok, result);
}

static void fiber_end(rt_world *w, uint32_t a, rt_fiber *f, int ok) {
  fiber_end_with(w, a, f, ok, ok ? NULL : "fiber body threw");
}

/* The resume point of a stash at step index i (the step after it is i+1):
** a stash commits with its whole turn, so resume after that turn, at the
** next step that ends a turn (work, call) or at the end. */
static int turn_end(const rt_program *p, int from) {
  int j = from;
  while (j < p->n_steps && p->steps[j].kind != RT_STEP_WORK && p->steps[j].kind != RT_STEP_CALL)
    j++;
  return j;
}

/* Where a declarative body resumes from a snapshot: {"pc":N} → N; a value
** → after the turn of the last stash step storing that value; else 0. */
static int resume_pc(const rt_program *p, int snap_pc, const char *snap) {
  if (snap_pc >= 0) return snap_pc <= p->n_steps ? snap_pc : p->n_steps;
  for (int k = p->n_steps - 1; snap && k >= 0; k--)
    if (p->steps[k].kind == RT_STEP_STASH && p->steps[k].has_value &&
        strcmp(p->steps[k].name, snap) == 0)
      return turn_end(p, k + 1);
  return 0;
}

static void fiber_wake(sim *s, void *ctx, uint64_t arg);

/* Runs steps from f->pc until a step waits (work, call) or the body ends. */
static void fiber_run(rt_world *w, uint32_t a, rt_fiber *f) {
  const rt_program *p = &w->progs[f->prog];
  if (f->lua) { /* a script's body (rt_luaagent.c) */
    rt__lg_fiber_begin(w, a, f->id);
    return;
  }
  while (f->pc < p->n_steps) {
    const rt_step *st = &p->steps[f->pc];
    switch (st->kind) {
      case RT_STEP_WORK: {
        int64_t d = st->max_us > st->min_us ? sim_rng_range(&w->rng_work, st->min_us, st->max_us)
                                            : st->min_us;
        f->pc++;
        sim_after(w->s, d, w->actors[a].mem->dom, fiber_wake, w,
                  ((uint64_t)a << 40) | (uint64_t)f->id);
        return;
      }
      case RT_STEP_STASH:
        f->pc++;
        if (f->legacy) /* legacy fibers: stashFiber (rt_legacy.c) */
          rt__legacy_stash(w, a, f->id, f->pc);
        else if (st->has_value)
          rt__w_stash_value(w, a, f->id, st->name, st->via_this);
        else
          rt__w_stash(w, a, f->id, turn_end(p, f->pc));
        if (!w->actors[a].mem) return; /* a failed immediate commit killed the actor */
        break;
      case RT_STEP_READ: { /* ctx.snapshot / this.stash read back: the row's value */
        char snap[128];
        rt__fiber_snapshot(w, a, f->id, snap, sizeof snap);
        sim_emit(w->s, RT_EV_FIBER_READ, a, f->id, f->pc, 0, rt__str(w, snap), 0);
        f->pc++;
        break;
      }
      case RT_STEP_RETURN:
        fiber_end_with(w, a, f, 1, st->name);
        return;
      case RT_STEP_EFFECT:
        rt__emit(w, RT_EV_EFFECT, a, f->id, f->pc, 0, st->name);
        f->pc++;
        break;
      case RT_STEP_CALL: {
        rt_call *c = rt__new_call(w, a, CALL_FIBER_STEP, f->id, st->target);
        f->pc++;
        if (c) rt__send_call(w, a, st->target, MSG_CALL_PLAIN, c, 0, 0);
        return;
      }
      case RT_STEP_FAIL:
        fiber_end_with(w, a, f, 0, st->name[0] ? st->name : "fiber body threw");
        return;
    }
  }
  fiber_end(w, a, f, 1);
}

void rt__fiber_run(rt_world *w, uint32_t a, rt_fiber *f) { fiber_run(w, a, f); } /* legacy */

static void fiber_wake(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_fiber *f = fiber_find(w->actors[a].mem, (int64_t)(arg & ((1ULL << 40) - 1)));
  (void)s;
  if (f) fiber_run(w, a, f);
}

void rt__fiber_reply(rt_world *w, uint32_t a, rt_call *c, int ok) {
  rt_fiber *f = fiber_find(w->actors[a].mem, c->key);
  c->live = 0;
  if (!f) return;
  if (ok)
    fiber_run(w, a, f);
  else
    fiber_end(w, a, f, 0);
}

/* runFiber up to the body: row, initial snapshot, keepAlive. Returns the
** fiber, or NULL on OOM. */
static rt_fiber *fiber_create(rt_world *w, uint32_t a, int prog, int pc, int64_t recovered_from,
                              const char *carry) {
  rt_mem *m = w->actors[a].mem;
  rt_fiber f = {.id = rt__new_id(w), .prog = prog, .pc = pc, .recovered_from = recovered_from, .live = 1};
  rt_fiber *slot = NULL;
  for (int i = 0; i < m->n_fibers && !slot; i++)
    if (!m->fibers[i].live) slot = &m->fibers[i];
  if (!slot) {
    if (m->n_fibers == m->cap_fibers) {
      int nc = m->cap_fibers ? m->cap_fibers * 2 : 4;
      rt_fiber *nf = realloc(m->fibers, (size_t)nc * sizeof *nf);
      if (!nf) return NULL;
      m->fibers = nf;
      m->cap_fibers = nc;
    }
    slot = &m->fibers[m->n_fibers++];
  }
  *slot = f;
  const char *name = w->progs[prog].name;
  rt__emit(w, RT_EV_FIBER_START, a, f.id, recovered_from, pc, name);
  rt__w_fiber_insert(w, a, f.id, name);
  if (carry) /* resumed from a value snapshot: the new fiber starts with it */
    rt__w_stash_value(w, a, f.id, carry, 0);
  else if (pc > 0)
    rt__w_stash(w, a, f.id, pc);
  rt__keepalive_acquire(w, a);
  return slot;
}

rt_fiber *rt__fiber_create_named(rt_world *w, uint32_t a, const char *name,
                                 int64_t recovered_from) {
  int prog = rt__prog_find(w, name);
  if (prog < 0) { /* a script's fiber: a program with no steps carries the name */
    rt_step none = {0};
    rt_program p = {.steps = &none, .n_steps = 0};
    snprintf(p.name, sizeof p.name, "%s", name);
    prog = rt__prog_add(w, &p);
    if (prog < 0) return NULL;
  }
  return fiber_create(w, a, prog, 0, recovered_from, NULL);
}

void rt__fiber_start(rt_world *w, uint32_t a, int prog, int pc, int64_t recovered_from) {
  rt_fiber *f = fiber_create(w, a, prog, pc, recovered_from, NULL);
  if (f) fiber_run(w, a, f);
}

void rt__fiber_start_awaited(rt_world *w, uint32_t a, int prog, const rt_msg *m) {
  rt_fiber *f = fiber_create(w, a, prog, 0, 0, NULL);
  if (!f) {
    rt__request_done(w, a, m, 0, "out of memory");
    return;
  }
  f->await_req = m->id;
  rt__push_serving(w->actors[a].mem, m);
  fiber_run(w, a, f);
}

/* Runs the bodies of fibers that recovery hooks started during startup
** (workerd-observed.md item 4: they start after the user onStart). */
static void run_parked(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  int n = m->n_pending_resume;
  m->n_pending_resume = 0;
  for (int i = 0; i < n && w->actors[a].mem == m; i++) {
    rt_fiber *f = fiber_find(m, m->pending_resume[i]);
    if (f) fiber_run(w, a, f);
  }
}

/* ---- _checkRunFibers (A.7) -------------------------------------------- */

static void hook_next(rt_world *w, uint32_t a);
static void alarm_after_housekeeping(rt_world *w, uint32_t a);

/* RT_EV_HOOK_END for the running hook of orphan o. */
static void hook_end(rt_world *w, uint32_t a, const rt_orphan *o, rt_cb_outcome how,
                     const char *err) {
  rt_mem *m = w->actors[a].mem;
  int64_t began = m ? m->hook_began : w->s->now_us;
  sim_emit(w->s, RT_EV_HOOK_END, a, o->id, how, w->s->now_us - began, rt__str(w, o->name),
           err ? rt__str(w, err) : 0);
}

void rt__hook_cut(rt_world *w, uint32_t a, rt_mem *m, rt_cb_outcome how) {
  if (!m->recovery_in_progress || m->orphan_idx >= m->n_orphans) return;
  if (how == RT_CB_TIMED_OUT) RT_PROBE(w, a, RT_PROBE_GATE_RESET_IN_HOOK);
  const rt_orphan *o = &m->orphans[m->orphan_idx];
  sim_emit(w->s, RT_EV_HOOK_END, a, o->id, how, w->s->now_us - m->hook_began,
           rt__str(w, o->name), 0);
}

/* How many times the hook has been called for orphan (a, id), this call
** included (the scenario's oracle for hooks that vary per call; it lives in
** the world, so it survives the actor's deaths). */
static int hook_call_count(rt_world *w, uint32_t a, int64_t id) {
  for (int i = 0; i < w->n_hook_calls; i++)
    if (w->hook_calls[i].actor == a && w->hook_calls[i].id == id) return ++w->hook_calls[i].calls;
  if (w->n_hook_calls == w->cap_hook_calls) {
    int nc = w->cap_hook_calls ? w->cap_hook_calls * 2 : 16;
    struct rt_hook_calls *n = realloc(w->hook_calls, (size_t)nc * sizeof *n);
    if (!n) return 1;
    w->hook_calls = n;
    w->cap_hook_calls = nc;
  }
  w->hook_calls[w->n_hook_calls++] = (struct rt_hook_calls){a, id, 1};
  return 1;
}

/* 1 if JSON text `snap` is an object with a top-level member `field`. */
static int snap_has_field(const char *snap, const char *field) {
  if (!snap) return 0;
  size_t fl = strlen(field);
  int depth = 0, expect_key = 0;
  for (const char *p = snap; *p; p++) {
    if (*p == '"') {
      const char *q = p + 1;
      while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
      if (depth == 1 && expect_key && (size_t)(q - p - 1) == fl && !strncmp(p + 1, field, fl))
        return 1;
      expect_key = 0;
      if (!*q) return 0;
      p = q;
    } else if (*p == '{' || *p == '[') {
      depth++;
      expect_key = *p == '{' && depth == 1;
    } else if (*p == '}' || *p == ']') {
      depth--;
    } else if (*p == ',' && depth == 1) {
      expect_key = 1;
    }
  }
  return 0;
}

/* The action of the hook for orphan o on this call (throws, require_field). */
static rt_recover_action hook_action(rt_world *w, uint32_t a, const rt_orphan *o,
                                     const rt_recovery_policy *p, const char *snap) {
  int calls = hook_call_count(w, a, o->id);
  if (calls <= p->throws) return RT_RECOVER_THROW;
  if (p->action == RT_RECOVER_RESUME && p->require_field[0] &&
      !snap_has_field(snap, p->require_field))
    return RT_RECOVER_DROP;
  return p->action;
}

/* The row of a hook that threw: deleted (@1604), or kept for a retry on a
** follow-up alarm until older than fiberRecoveryMaxAgeMs, then dropped with
** max_age_exceeded (#1729, index.ts _checkRunFibers). */
static void hook_threw_row(rt_world *w, uint32_t a, const rt_orphan *o) {
  rt_mem *m = w->actors[a].mem;
  int64_t age = w->s->now_us - o->created_ms * 1000;
  if (w->cfg.retain != RT_RETAIN_1729) {
    rt__w_fiber_delete(w, a, o->id); /* @1604: deleted even when the hook threw */
    return;
  }
  if (w->cfg.fiber_max_age_us > 0 && age > w->cfg.fiber_max_age_us) {
    sim_emit(w->s, RT_EV_FIBER_SKIPPED, a, o->id, age, 0, rt__str(w, o->name),
             rt__str(w, "max_age_exceeded"));
    rt__w_fiber_delete(w, a, o->id);
    m->scan_progress = 1;
    return;
  }
  int calls = 0;
  for (int i = 0; i < w->n_hook_calls; i++)
    if (w->hook_calls[i].actor == a && w->hook_calls[i].id == o->id) calls = w->hook_calls[i].calls;
  sim_emit(w->s, RT_EV_FIBER_RETAINED, a, o->id, age, calls, rt__str(w, o->name), 0);
}

static void hook_done(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_mem *m = w->actors[a].mem;
  rt_orphan *o = &m->orphans[m->orphan_idx];
  const rt_recovery_policy *p = policy_for(&w->actors[a].spec, o->name);
  uint32_t snap = rt__orphan_snapshot(w, a, o->id); /* read before the hook's writes */
  /* a copy: interning more strings may move the trace's string table */
  char *snap_text = strdup(sim_trace_str(&w->s->trace, snap));
  (void)s;
  if (!snap_text) snap_text = strdup("null");
  if (rt__chat_recover(w, a, o) == 0) {
    /* a chat turn: _handleInternalFiberRecovery took it (rt_chat.c, A.7 step 4) */
    hook_end(w, a, o, RT_CB_RETURNED, NULL);
    rt__w_fiber_delete(w, a, o->id);
    m->scan_progress = 1;
    m->orphan_idx++;
    free(snap_text);
    hook_next(w, a);
    return;
  }
  if (rt__lg_scripted(w, a) && rt__lg_has(w, a, "onFiberRecovered")) {
    /* the script's hook; it ends in rt__hook_finish (rt_luaagent.c) */
    hook_call_count(w, a, o->id);
    rt__lg_hook(w, a, o, snap_text);
    free(snap_text);
    return;
  }
  rt_recover_action act = hook_action(w, a, o, p, snap_text);
  if (act == RT_RECOVER_THROW) {
    hook_end(w, a, o, RT_CB_THREW, "onFiberRecovered threw");
    sim_emit(w->s, RT_EV_FIBER_HOOK_THREW, a, o->id, o->snapshot, 0, rt__str(w, o->name), snap);
    hook_threw_row(w, a, o);
  } else {
    hook_end(w, a, o, RT_CB_RETURNED, NULL);
    sim_emit(w->s, RT_EV_FIBER_RECOVERED, a, o->id, o->snapshot, act, rt__str(w, o->name), snap);
    int prog = rt__prog_find(w, o->name);
    if (prog >= 0 && act != RT_RECOVER_DROP && m->n_pending_resume < RT_MAX_ORPHANS) {
      /* the hook calls runFiber: the new row is written in the hook's turn */
      int resume = act == RT_RECOVER_RESUME;
      int pc = resume ? resume_pc(&w->progs[prog], o->snapshot, snap_text) : 0;
      const char *carry =
          resume && o->snapshot < 0 && strcmp(snap_text, "null") ? snap_text : NULL;
      rt_fiber *f = fiber_create(w, a, prog, pc, o->id, carry);
      if (f && m->orphan_source == 1)
        m->pending_resume[m->n_pending_resume++] = f->id;
      else if (f)
        fiber_run(w, a, f);
    }
    rt__w_fiber_delete(w, a, o->id);
    m->scan_progress = 1;
  }
  m->orphan_idx++;
  free(snap_text);
  hook_next(w, a);
}

void rt__hook_finish(rt_world *w, uint32_t a, int ok, const char *err, int resumed) {
  rt_mem *m = w->actors[a].mem;
  if (!m || !m->recovery_in_progress || m->orphan_idx >= m->n_orphans) return;
  rt_orphan *o = &m->orphans[m->orphan_idx];
  uint32_t snap = rt__orphan_snapshot(w, a, o->id);
  if (!ok) {
    hook_end(w, a, o, RT_CB_THREW, err ? err : "onFiberRecovered threw");
    sim_emit(w->s, RT_EV_FIBER_HOOK_THREW, a, o->id, o->snapshot, 0, rt__str(w, o->name), snap);
    hook_threw_row(w, a, o);
  } else {
    hook_end(w, a, o, RT_CB_RETURNED, NULL);
    sim_emit(w->s, RT_EV_FIBER_RECOVERED, a, o->id, o->snapshot,
             resumed ? RT_RECOVER_RESUME : RT_RECOVER_DROP, rt__str(w, o->name), snap);
    rt__w_fiber_delete(w, a, o->id);
    m->scan_progress = 1;
  }
  if (w->actors[a].mem != m) return;
  m->orphan_idx++;
  hook_next(w, a);
}

static void hook_next(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  if (m->orphan_idx < m->n_orphans) {
    const rt_orphan *o = &m->orphans[m->orphan_idx];
    int64_t t = policy_for(&w->actors[a].spec, o->name)->hook_us;
    m->hook_began = w->s->now_us;
    sim_emit(w->s, RT_EV_HOOK_BEGIN, a, o->id, o->snapshot, o->created_ms * 1000,
             rt__str(w, o->name), rt__orphan_snapshot(w, a, o->id));
    sim_after(w->s, t, m->dom, hook_done, w, a);
    return;
  }
  m->recovery_in_progress = 0;
  if (w->cfg.retain == RT_RETAIN_1729) { /* the backoff streak (#1729) */
    m->no_progress_scans = m->scan_progress ? 0
                           : rt__pending_fiber_recovery(w, a) ? m->no_progress_scans + 1 : 0;
    if (m->orphan_source == 1) rt__schedule_next_alarm(w, a); /* the follow-up alarm */
  }
  if (m->orphan_source == 1)
    rt__startup_continue(w, a);
  else
    alarm_after_housekeeping(w, a);
}

/* Returns 1 if hooks were started (a continuation follows), 0 if nothing
** to recover, -1 if the re-entrancy guard dropped the call. */
int rt__check_run_fibers(rt_world *w, uint32_t a, int source) {
  rt_mem *m = w->actors[a].mem;
  rt_orphan rows[RT_MAX_ORPHANS];
  if (m->recovery_in_progress) {
    RT_PROBE(w, a, RT_PROBE_RECOVERY_REENTRY);
    rt__emit(w, RT_EV_RECOVERY_REENTRY, a, source, 0, 0, NULL);
    return -1;
  }
  int n = rt__load_orphans(w, a, rows, RT_MAX_ORPHANS), k = 0;
  for (int i = 0; i < n; i++)
    if (!fiber_active(m, rows[i].id)) m->orphans[k++] = rows[i];
  rt__emit(w, RT_EV_RECOVERY_SCAN, a, source, k, 0, NULL);
  if (k == 0) return 0;
  m->n_orphans = k;
  m->orphan_idx = 0;
  m->orphan_source = source;
  m->recovery_in_progress = 1;
  m->scan_progress = 0;
  hook_next(w, a);
  return 1;
}

/* ---- startup (A.2) ---------------------------------------------------- */

static void onstart_done(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt__startup_continue((rt_world *)ctx, (uint32_t)arg);
}

static void startup_fail(rt_world *w, uint32_t a, const char *err) {
  rt_mem *m = w->actors[a].mem;
  rt__emit(w, RT_EV_STARTUP_FAIL, a, w->s->now_us - m->startup_began, 0, 0, err);
  m->status = 0;
  m->phase = SU_NONE;
  rt__gate_release(w, a);
  run_parked(w, a); /* the hooks' runFiber promises run on regardless */
  rt__legacy_resume_pending(w, a); /* legacy fibers recovered in the gate, likewise */
  int n = m->n_waiters;
  rt_msg *held = m->waiters;
  m->waiters = NULL;
  m->n_waiters = m->cap_waiters = 0;
  for (int i = 0; i < n; i++) {
    if (rt__needs_init(held[i].entry))
      rt__fail_msg(w, a, &held[i], err);
    else
      rt__handle(w, a, &held[i]);
  }
  free(held);
}

static void startup_ok(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  rt__emit(w, RT_EV_STARTUP_OK, a, w->s->now_us - m->startup_began, 0, 0, NULL);
  m->status = 2;
  m->phase = SU_DONE;
  rt__gate_release(w, a);
  rt__toolrun_started(w, a); /* rt_toolrun.c: recovery, or gated finish hooks */
  run_parked(w, a);
  rt__legacy_resume_pending(w, a); /* legacy fibers recovered in the gate */
  if (w->actors[a].mem == m) rt__exec_on_start(w, a); /* executor: restore, resume (seed 002) */
  if (w->actors[a].mem == m) rt__drain_waiters(w, a);
}

/* The user onStart throws: always (the actor's nature), or the next N
** calls after an onstart_throw fault. */
static int onstart_throws(rt_world *w, uint32_t a) {
  if (w->onstart_throws_left && a < w->n_actors && w->onstart_throws_left[a] > 0) {
    w->onstart_throws_left[a]--;
    return 1;
  }
  return w->actors[a].spec.on_start_throws == RT_THROW_ALWAYS;
}

#define RT_MSG_NO_NAME "Agent could not determine its Durable Object name"

void rt__startup_begin(rt_world *w, uint32_t a, rt_entry entry) {
  rt_mem *m = w->actors[a].mem;
  m->status = 1;
  m->startup_began = w->s->now_us;
  m->startup_entry = entry;
  m->phase = SU_CHECK_FIBERS;
  rt__emit(w, RT_EV_STARTUP_BEGIN, a, entry, 0, 0, NULL);
  rt__gate_acquire(w, a, "startup");
  if (w->actors[a].poisoned) { /* workerd #6850: the SDK throws before recovery */
    RT_PROBE(w, a, RT_PROBE_STARTUP_POISONED);
    startup_fail(w, a, RT_MSG_NO_NAME);
    return;
  }
  if (rt__check_run_fibers(w, a, 1) != 1) rt__startup_continue(w, a);
}

void rt__callbacks_cut(rt_world *w, uint32_t a, rt_mem *m, rt_death_cause cause) {
  rt_cb_outcome how = cause == RT_DEATH_GATE_RESET ? RT_CB_TIMED_OUT : RT_CB_CUT;
  if (m->phase == SU_ONSTART && how == RT_CB_TIMED_OUT) RT_PROBE(w, a, RT_PROBE_GATE_RESET_IN_ONSTART);
  if (m->phase == SU_ONSTART)
    rt__emit(w, RT_EV_ONSTART_END, a, how, w->s->now_us - m->onstart_began, 0, NULL);
  rt__hook_cut(w, a, m, how);
}

void rt__startup_continue(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_mem *m = ac->mem;
  switch (m->phase) {
    case SU_CHECK_FIBERS:
      if (rt__legacy_check(w, a, 1)) return; /* legacy fibers: _checkInterruptedFibers */
      if (w->cfg.toolrun == RT_TOOLRUN_GATED) {
        m->phase = SU_GATED_RECONCILE;
        m->n_rows = rt__load_open_toolruns(w, a, m->rows, RT_MAX_ROWS);
        m->row_idx = 0;
        rt__toolrun_gated_next(w, a);
        return;
      }
      if (w->cfg.toolrun == RT_TOOLRUN_DEFERRED) rt__toolrun_snapshot(w, a);
      /* fall through */
    case SU_GATED_RECONCILE:
      m->phase = SU_ONSTART;
      m->onstart_began = w->s->now_us;
      rt__emit(w, RT_EV_ONSTART_BEGIN, a, 0, 0, 0, NULL);
      if (ac->spec.on_start_tool_run) /* the user onStart calls runAgentTool */
        rt__toolrun_start(w, a, ac->spec.on_start_child, ac->spec.on_start_work_us);
      if (ac->spec.stuck != RT_STUCK_STARTUP && rt__lg_scripted(w, a) && rt__lg_onstart(w, a))
        return; /* the script's onStart ends in rt__onstart_finish */
      if (w->actors[a].mem != m) return;
      if (ac->spec.stuck != RT_STUCK_STARTUP)
        sim_after(w->s, ac->spec.on_start_us, m->dom, onstart_done, w, a);
      return;
    case SU_ONSTART: rt__onstart_finish(w, a, 1, NULL); return;
    default: return;
  }
}

void rt__onstart_finish(rt_world *w, uint32_t a, int ok, const char *err) {
  rt_mem *m = w->actors[a].mem;
  if (!m || m->phase != SU_ONSTART) return;
  if (ok && onstart_throws(w, a)) {
    ok = 0;
    err = "onStart threw";
  }
  if (!ok) {
    rt__emit(w, RT_EV_ONSTART_END, a, RT_CB_THREW, w->s->now_us - m->onstart_began, 0,
             err ? err : "onStart threw");
    startup_fail(w, a, err ? err : "onStart threw");
  } else {
    rt__emit(w, RT_EV_ONSTART_END, a, RT_CB_RETURNED, w->s->now_us - m->onstart_began, 0, NULL);
    startup_ok(w, a);
  }
}

/* ---- alarm() (A.5) ---------------------------------------------------- */

static void alarm_after_housekeeping(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_mem *m = ac->mem;
  if (!m->alarm_active) return; /* the handler was cut at its time limit */
  sim_cancel(w->s, m->alarm_cut);
  int64_t fired = m->current_alarm.alarm_at;
  if (ac->alarm_at == fired) alarm_arm(w, a, -1); /* consumed */
  rt__schedule_next_alarm(w, a);
  if (ac->alarm_at < 0 && rt__stored_alarm(w, a) >= 0) rt__w_alarm(w, a, -1);
  m->alarm_active = 0;
  ac->alarm_retries = 0;
  rt__emit(w, RT_EV_ALARM_DONE, a, 1, 0, 0, NULL);
}

/* The platform cuts an alarm handler after 15 minutes (A.0): the
** invocation fails and the alarm is retried. */
static void alarm_cut(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_mem *m = w->actors[a].mem;
  rt_msg held;
  (void)s;
  if (m->alarm_active && m->current_alarm.id == m->cut_alarm_id) {
    rt__emit(w, RT_EV_FAULT, a, w->cfg.alarm_limit_us, 0, 0, "alarm_limit");
    rt__alarm_failed(w, a, &m->current_alarm);
  } else if (rt__take_waiter(m, m->cut_alarm_id, &held)) { /* still in startup */
    rt__emit(w, RT_EV_FAULT, a, w->cfg.alarm_limit_us, 0, 0, "alarm_limit");
    rt__alarm_failed(w, a, &held);
  }
}

/* The limit covers the whole invocation, startup included. */
void rt__alarm_arrived(rt_world *w, uint32_t a, const rt_msg *msg) {
  rt_mem *m = w->actors[a].mem;
  sim_cancel(w->s, m->alarm_cut);
  m->cut_alarm_id = msg->id;
  m->alarm_cut = sim_after(w->s, w->cfg.alarm_limit_us, m->dom, alarm_cut, w, a);
}

static void onalarm_release(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt__keepalive_release((rt_world *)ctx, (uint32_t)arg); /* keepAliveWhile's finally */
}

void rt__alarm_handle(rt_world *w, uint32_t a, const rt_msg *msg) {
  rt_mem *m = w->actors[a].mem;
  int64_t ids[16], iv[16];
  char names[16][48];
  m->alarm_active = 1;
  m->current_alarm = *msg;
  int64_t hold = w->actors[a].spec.on_alarm_keepalive_us;
  if (hold > 0) { /* the user's onAlarm takes a lease (#1703/#1704) */
    rt__keepalive_acquire(w, a);
    sim_after(w->s, hold, m->dom, onalarm_release, w, a);
  }
  int n = rt__due_schedules(w, a, w->s->now_us / 1000000, ids, iv, names, 16);
  for (int i = 0; i < n; i++) {
    rt__emit(w, RT_EV_SCHEDULE_RUN, a, ids[i], 0, 0, names[i]);
    if (iv[i] > 0)
      rt__w_schedule_time(w, a, ids[i], w->s->now_us / 1000000 + iv[i], iv[i], names[i]);
    else
      rt__w_schedule_delete(w, a, ids[i], names[i]);
    rt__chat_callback(w, a, ids[i], names[i]); /* chat recovery callbacks (rt_chat.c) */
    if (w->actors[a].mem != m) return;
    if (rt__lg_scripted(w, a)) rt__lg_schedule(w, a, ids[i], names[i]); /* a script's callback */
    if (w->actors[a].mem != m) return;
  }
  if (rt__legacy_check(w, a, 2)) return; /* legacy fibers: heartbeat callback + alarm() */
  if (rt__check_run_fibers(w, a, 2) != 1) alarm_after_housekeeping(w, a);
}

/* ---- schedules and keepAliveWhile (A.3, A.10) --------------------------- */

static void keepalive_while_done(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_msg m;
  (void)s;
  if (!rt__pop_serving(w->actors[a].mem, (int64_t)(arg & ((1ULL << 40) - 1)), &m)) return;
  rt__keepalive_release(w, a); /* the finally of keepAliveWhile */
  if (m.arg2) /* fn threw: the error propagates to the caller */
    rt__request_done(w, a, &m, 0, sim_trace_str(&w->s->trace, m.str));
  else
    rt__request_done(w, a, &m, 1, NULL);
}

/* schedule / scheduleEvery: a row in cf_agents_schedules (times in unix
** seconds), then _scheduleNextAlarm. */
int64_t rt__schedule_add(rt_world *w, uint32_t a, const char *cb, int64_t delay_us,
                         int64_t interval_us) {
  int64_t now_s = w->s->now_us / 1000000, id;
  if (interval_us > 0) {
    int64_t iv = interval_us / 1000000 > 0 ? interval_us / 1000000 : 1;
    if (!rt__schedule_find(w, a, cb, &id)) /* idempotent by default */
      rt__w_schedule_insert(w, a, id = rt__new_id(w), cb, now_s + iv, iv);
  } else {
    rt__w_schedule_insert(w, a, id = rt__new_id(w), cb, (w->s->now_us + delay_us) / 1000000, 0);
  }
  if (w->actors[a].mem) rt__schedule_next_alarm(w, a);
  return id;
}

int rt__schedule_cancel(rt_world *w, uint32_t a, const char *cb, int64_t id) {
  if (id < 0 && !rt__schedule_find(w, a, cb, &id)) return 0;
  rt__w_schedule_delete(w, a, id, cb);
  if (w->actors[a].mem) rt__schedule_next_alarm(w, a);
  return 1;
}

static void schedule_add(rt_world *w, uint32_t a, const rt_msg *m) {
  char cb[64];
  snprintf(cb, sizeof cb, "%s", sim_trace_str(&w->s->trace, m->str));
  rt__schedule_add(w, a, cb, m->arg, m->arg2);
}

void rt__schedule_request(rt_world *w, uint32_t a, const rt_msg *m) {
  int64_t id;
  switch (m->kind) {
    case MSG_SCHEDULE: schedule_add(w, a, m); break;
    case MSG_CANCEL_SCHEDULE:
      if (rt__schedule_find(w, a, sim_trace_str(&w->s->trace, m->str), &id)) {
        rt__w_schedule_delete(w, a, id, sim_trace_str(&w->s->trace, m->str));
        rt__schedule_next_alarm(w, a);
      }
      break;
    default: /* MSG_KEEPALIVE_WHILE: answered when fn returns */
      rt__keepalive_acquire(w, a);
      rt__push_serving(w->actors[a].mem, m);
      sim_after(w->s, m->arg, w->actors[a].mem->dom, keepalive_while_done, w,
                ((uint64_t)a << 40) | (uint64_t)m->id);
      return;
  }
  rt__request_done(w, a, m, 1, NULL);
}
