/*
** rt_agent.c: the Agents SDK core over the actor host.
**
** Follows seed 000 ("Forever": keepAlive, runFiber, stash, onFiberRecovered,
** _checkRunFibers) and reference/agents-sdk.md A.2–A.8 at PR #1604:
**   startup (inside the gate): _checkRunFibers → the extensions' gated
**   steps (legacy fibers' check; tool-run snapshot or the pre-fix gated
**   reconcile) → user onStart → release → the extensions' early steps
**   (background tool-run recovery) → resumed fibers start
**   (workerd-observed.md item 4) → the extensions' late steps;
**   keepAlive: ref-counted, 0→1 arms the alarm at now+interval (A.3), the
**   disposer leaves the alarm alone (@1604) or reschedules (#1707);
**   heartbeat as an interval schedule every 10 s (seed 001) as a variant;
**   alarm(): onAlarm's lease, due schedules → housekeeping _checkRunFibers →
**   reschedule.
**
** This file is the host's actor class (rt_actor_class, at the end). Models
** plug in as extensions (rt_agent_ext, registered by rt_models.c) and are
** never named here; user code is called through rt_usercode.h: onStart,
** onRequest, fiber bodies, onFiberRecovered and onAlarm are continuations
** whose yielded commands (work, sleep, call) this file carries out.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_agent.h"
#include "runtime/rt_cron.h"

#define HEARTBEAT_CB "_cf_fiberHeartbeat"

/* ---- extensions (models registered on the core) ------------------------- */

static rt_agent_ext *exts[RT_EXT_MAX];
static int n_exts;
static rt_agent_ext *by_kind[MSG_KINDS];
static rt_agent_ext *by_purpose[CALL_PURPOSES];
static rt_agent_ext *fiber_model; /* the extension whose fibers set rt_fiber.legacy */

int rt__agent_register(rt_agent_ext *e) {
  for (int i = 0; i < n_exts; i++)
    if (exts[i] == e) return 0;
  if (n_exts == RT_EXT_MAX || rt__store_register(&rt__agent_store) ||
      (e->store && rt__store_register(e->store)))
    return -1;
  for (int i = 0; i < e->n_kinds; i++)
    if (e->kinds[i] < RT_MSG_CLASS_FIRST || e->kinds[i] >= MSG_KINDS || by_kind[e->kinds[i]])
      return -1;
  for (int i = 0; i < e->n_purposes; i++)
    if (e->purposes[i] <= 0 || e->purposes[i] >= CALL_PURPOSES || by_purpose[e->purposes[i]])
      return -1;
  for (int i = 0; i < e->n_kinds; i++) by_kind[e->kinds[i]] = e;
  for (int i = 0; i < e->n_purposes; i++) by_purpose[e->purposes[i]] = e;
  if (e->fiber_end) fiber_model = e;
  e->slot = n_exts;
  exts[n_exts++] = e;
  return 0;
}

static rt_agent_ext *fiber_ext(const rt_fiber *f) {
  (void)f;
  return fiber_model;
}

/* A callback whose user code could not be entered (rt__uc_enter NULL)
** threw: out->value is why (err, or the generic message). */
static rt_uc_status uc_load_failed(rt_uc_out *out, const char *err) {
  snprintf(out->value, sizeof out->value, "%s", err ? err : "user code failed to load");
  return RT_UC_THREW;
}

static int ext_recover_orphan(rt_world *w, uint32_t a, const rt_orphan *o) {
  for (int i = 0; i < n_exts; i++) {
    int rc = exts[i]->recover_orphan ? exts[i]->recover_orphan(w, a, o) : -1;
    if (rc >= 0) return rc;
  }
  return -1;
}

/* The extensions' steps after startup, while incarnation m lives. */
static void ext_startup_late(rt_world *w, uint32_t a, rt_mem *m, int ok) {
  for (int i = 0; i < n_exts && RT_MEM(w, a) == m; i++)
    if (exts[i]->startup_late) exts[i]->startup_late(w, a, ok);
}

int rt__prog_find(rt_world *w, const char *name) {
  for (int i = 0; i < RT_AW(w)->n_progs; i++)
    if (strcmp(RT_AW(w)->progs[i].name, name) == 0) return i;
  return -1;
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
  rt_mem *m = RT_MEM(w, a);
  int64_t now = w->s->now_us, next = INT64_MAX;
  int64_t t = rt__next_schedule_time(w, a, now / 1000000, w->cfg.hung_schedule_us / 1000000);
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
  rt_mem *m = RT_MEM(w, a);
  (void)s;
  if (!m) return;
  alarm_apply(w, a, m->deferred_next);
  m->inc.waituntil--;
  rt__emit(w, RT_EV_WAITUNTIL, a, m->inc.waituntil, -1, 0, NULL);
}

static void deferred_decide(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_mem *m = RT_MEM(w, a);
  (void)s;
  if (!m) return;
  m->deferred_next = next_alarm_time(w, a);
  sim_after(w->s, 0, m->inc.dom, deferred_apply, w, a);
}

static void deferred_reschedule(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  m->inc.waituntil++;
  rt__emit(w, RT_EV_WAITUNTIL, a, m->inc.waituntil, 1, 0, NULL);
  sim_after(w->s, 0, m->inc.dom, deferred_decide, w, a);
}

/* ---- keepAlive (A.3; seed 001 for the schedule design) ---------------- */

void rt__keepalive_acquire(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
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
  rt_mem *m = RT_MEM(w, a);
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
int rt__keepalive_lease(rt_world *w, uint32_t a, uint32_t lease, int acquire) {
  rt_mem *m = RT_MEM(w, a);
  int i;
  if (!m) return -1;
  for (i = 0; i < m->n_leases && m->leases[i].lease != lease; i++)
    ;
  if (acquire) {
    int cap = (int)(sizeof m->leases / sizeof m->leases[0]);
    if (i == m->n_leases && m->n_leases < cap) m->n_leases++;
    for (int k = 0; i == cap && k < cap; k++) /* full: reuse a disposed slot */
      if (m->leases[k].disposed) i = k;
    if (i == cap) return -2; /* every slot holds a live lease */
    m->leases[i].lease = lease;
    m->leases[i].disposed = 0;
    rt__keepalive_acquire(w, a);
  } else {
    int live = i < m->n_leases && !m->leases[i].disposed;
    if (live) {
      m->leases[i].disposed = 1;
      rt__keepalive_release(w, a);
    }
    if (RT_MEM(w, a) == m) sim_emit(w->s, RT_EV_KEEPALIVE_DISPOSE, a, live, m->refs, 0, lease, 0);
  }
  return 0;
}

static void keepalive_lease_request(rt_world *w, uint32_t a, const rt_msg *msg) {
  rt_mem *m = RT_MEM(w, a);
  int rc = rt__keepalive_lease(w, a, msg->str, msg->kind == MSG_KEEPALIVE_ACQUIRE);
  if (RT_MEM(w, a) == m)
    rt__request_done(w, a, msg, rc != -2, rc == -2 ? RT_KEEPALIVE_FULL_MSG : NULL);
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
/* Tells the actor's user code that fiber id ended (rt_usercode.h
** fiber_ended: detached continuations awaiting it go on). */
static void fiber_ended_uc(rt_world *w, uint32_t a, int64_t id, int ok, const char *result) {
  rt_mem *m = RT_MEM(w, a);
  if (!m) return;
  rt_sdk_actor self = {w, a, m, 0};
  const rt_usercode *uc = rt_usercode_of(&self);
  void *st;
  const char *err = NULL;
  if (!uc->fiber_ended || !(uc = rt__uc_enter(w, a, &self, &st, &err))) return;
  uc->fiber_ended(st, &self, id, ok, result);
}

static void fiber_end_with(rt_world *w, uint32_t a, rt_fiber *f, int ok, const char *result) {
  if (f->legacy) { /* a model's fiber (legacy: completion, retry or failure) */
    fiber_ext(f)->fiber_end(w, a, f, ok);
    return;
  }
  int64_t id = f->id, req = f->await_req;
  const char *name = RT_AW(w)->progs[f->prog].name;
  rt_msg m;
  f->live = 0;
  rt__w_fiber_delete(w, a, id);
  sim_emit(w->s, RT_EV_FIBER_DONE, a, id, ok, 0, rt__str(w, name),
           result ? rt__str(w, result) : 0);
  rt__keepalive_release(w, a);
  /* awaited runFiber: the caller gets the return value or sees the error */
  if (req && RT_MEM(w, a) && rt__pop_serving(&RT_MEM(w, a)->inc, req, &m))
    rt__request_result(w, a, &m, ok, ok ? NULL : result, ok ? result : NULL);
  fiber_ended_uc(w, a, id, ok, result);
}

void rt__fiber_end(rt_world *w, uint32_t a, rt_fiber *f, int ok, const char *result) {
  fiber_end_with(w, a, f, ok, result);
}

/* The resume point of a stash at step index i (the step after it is i+1):
** a stash commits with its whole turn, so resume after that turn, at the
** next step that ends a turn (work, call) or at the end. */
int rt__turn_end(const rt_program *p, int from) {
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
      return rt__turn_end(p, k + 1);
  return 0;
}

static void fiber_wake(sim *s, void *ctx, uint64_t arg);

/* The user code of fiber f (rt_usercode.h): its body starts (resume 0) or
** continues after the command it waited for (ok: how that ended); runs
** until it waits again, returns or throws. */
static void fiber_step(rt_world *w, uint32_t a, rt_fiber *f, int resume, int ok) {
  rt_mem *m = RT_MEM(w, a);
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_out out;
  rt_uc_status how;
  int64_t id = f->id;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  memset(&out, 0, sizeof out);
  self.fiber = id;
  if (!uc) {
    fiber_end_with(w, a, f, 0, err ? err : "user code failed to load");
    return;
  }
  if (!resume) {
    f->fr = (rt_uc_frame){.hook = RT_UC_FIBER_BODY, .key = id};
    how = uc->fiber_body ? uc->fiber_body(st, &self, RT_AW(w)->progs[f->prog].name, "null",
                                          &f->fr, &out)
                         : RT_UC_ABSENT;
  } else {
    rt_uc_in in = {ok, NULL};
    how = uc->resume(st, &self, &f->fr, &in, &out);
  }
  if (RT_MEM(w, a) != m || !(f = fiber_find(m, id))) return; /* died, or the fiber ended */
  switch (how) {
    case RT_UC_DETACHED: return; /* the implementation ends it (rt__fiber_end) */
    case RT_UC_YIELD:
      switch (out.cmd.kind) {
        case RT_UC_CMD_WORK:
        case RT_UC_CMD_SLEEP: {
          int64_t d = out.cmd.kind == RT_UC_CMD_WORK && out.cmd.max_us > out.cmd.min_us
                          ? sim_rng_range(&RT_AW(w)->rng_work, out.cmd.min_us, out.cmd.max_us)
                          : out.cmd.min_us;
          if (d >= 0)
            sim_after(w->s, d, m->inc.dom, fiber_wake, w, ((uint64_t)a << 40) | (uint64_t)id);
          return;
        }
        case RT_UC_CMD_CALL: {
          rt_call *c = rt__new_call(w, a, CALL_FIBER_STEP, id, out.cmd.target);
          if (c)
            rt__send_call(w, a, out.cmd.target, MSG_CALL_PLAIN,
                          out.cmd.method[0] ? out.cmd.method : "rpc", RT_ENTRY_RPC, c, 0, 0);
          return;
        }
        default: /* commands a fiber cannot wait for yet */
          snprintf(out.value, sizeof out.value, "runFiber: unsupported command %d",
                   (int)out.cmd.kind);
          fiber_end_with(w, a, f, 0, out.value);
          return;
      }
    case RT_UC_THREW: fiber_end_with(w, a, f, 0, out.value); return;
    default: fiber_end_with(w, a, f, 1, out.value[0] ? out.value : NULL); return;
  }
}

static void fiber_run(rt_world *w, uint32_t a, rt_fiber *f) {
  fiber_step(w, a, f, 0, 1);
}

void rt__fiber_run(rt_world *w, uint32_t a, rt_fiber *f) { fiber_run(w, a, f); }

rt_fiber *rt__fiber_find(rt_mem *m, int64_t id) { return m ? fiber_find(m, id) : NULL; }

static void fiber_begin(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_fiber *f = fiber_find(RT_MEM(w, a), (int64_t)(arg & ((1ULL << 40) - 1)));
  (void)s;
  if (f) fiber_run(w, a, f);
}

static int prog_add(rt_world *w, const rt_program *p);
static rt_fiber *fiber_create(rt_world *w, uint32_t a, int prog, int pc, int64_t recovered_from,
                              const char *carry);

int64_t rt__fiber_spawn(rt_world *w, uint32_t a, const char *name, const char *snapshot) {
  rt_mem *m = RT_MEM(w, a);
  int prog = m ? rt__prog_find(w, name) : -1;
  if (m && prog < 0) { /* a body the user code brings: a program without steps names it */
    rt_program p = {.n_steps = 0};
    snprintf(p.name, sizeof p.name, "%s", name);
    prog = prog_add(w, &p);
  }
  if (prog < 0) return -1;
  rt_fiber *f =
      fiber_create(w, a, prog, 0, 0, snapshot && strcmp(snapshot, "null") ? snapshot : NULL);
  if (!f || RT_MEM(w, a) != m) return -1;
  int64_t id = f->id;
  sim_after(w->s, 0, m->inc.dom, fiber_begin, w, ((uint64_t)a << 40) | (uint64_t)id);
  return id;
}

int rt__fiber_stash(rt_world *w, uint32_t a, int64_t id, int next_pc, int resume_pc,
                    const char *value, int via_this) {
  rt_fiber *f = rt__fiber_find(RT_MEM(w, a), id);
  if (f && f->legacy) return fiber_ext(f)->fiber_stash(w, a, id, next_pc);
  if (value) return rt__w_stash_value(w, a, id, value, via_this);
  return rt__w_stash(w, a, id, resume_pc);
}

static void fiber_wake(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_fiber *f = fiber_find(RT_MEM(w, a), (int64_t)(arg & ((1ULL << 40) - 1)));
  (void)s;
  if (f) fiber_step(w, a, f, 1, 1);
}

static void fiber_reply(rt_world *w, uint32_t a, rt_call *c, int ok) {
  rt_fiber *f = fiber_find(RT_MEM(w, a), c->key);
  c->live = 0;
  if (f) fiber_step(w, a, f, 1, ok);
}

/* runFiber up to the body: row, initial snapshot, keepAlive. Returns the
** fiber, or NULL on OOM. */
static rt_fiber *fiber_create(rt_world *w, uint32_t a, int prog, int pc, int64_t recovered_from,
                              const char *carry) {
  rt_mem *m = RT_MEM(w, a);
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
  const char *name = RT_AW(w)->progs[prog].name;
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
    prog = prog_add(w, &p);
    if (prog < 0) return NULL;
  }
  return fiber_create(w, a, prog, 0, recovered_from, NULL);
}

/* runFiber with an optional carried value snapshot, body started at once. */
static void fiber_start_from(rt_world *w, uint32_t a, int prog, int pc, int64_t from,
                                 const char *carry) {
  rt_fiber *f = fiber_create(w, a, prog, pc, from, carry);
  if (f) fiber_run(w, a, f);
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
  rt__push_serving(&RT_MEM(w, a)->inc, m);
  fiber_run(w, a, f);
}

/* hook_run_fiber "after_startup": keeps a hook's runFiber call whole
** (no row yet) for after the startup. */
static void park_run(rt_world *w, rt_mem *m, int prog, int pc, int64_t from, const char *carry) {
  if (m->n_parked_runs >= RT_MAX_ORPHANS || !RT_MEM_ARRAY(m->parked_runs, RT_MAX_ORPHANS)) return;
  m->parked_runs[m->n_parked_runs].prog = prog;
  m->parked_runs[m->n_parked_runs].pc = pc;
  m->parked_runs[m->n_parked_runs].from = from;
  m->parked_runs[m->n_parked_runs].carry = carry ? rt__str(w, carry) : 0;
  m->n_parked_runs++;
}

/* Runs the bodies of fibers that recovery hooks started during startup
** (workerd-observed.md item 4: they start after the user onStart); with
** hook_run_fiber "after_startup" the parked calls are made only when the
** startup succeeded (ok), else dropped (the old bug: work lost). */
static void run_parked(rt_world *w, uint32_t a, int ok) {
  rt_mem *m = RT_MEM(w, a);
  int n = m->n_pending_resume, np = m->n_parked_runs;
  m->n_pending_resume = 0;
  m->n_parked_runs = 0;
  for (int i = 0; i < np && ok && RT_MEM(w, a) == m; i++) {
    uint32_t c = m->parked_runs[i].carry;
    fiber_start_from(w, a, m->parked_runs[i].prog, m->parked_runs[i].pc, m->parked_runs[i].from,
                         c ? sim_trace_str(&w->s->trace, c) : NULL);
  }
  for (int i = 0; i < n && RT_MEM(w, a) == m; i++) {
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
  rt_mem *m = RT_MEM(w, a);
  int64_t began = m ? m->hook_began : w->s->now_us;
  sim_emit(w->s, RT_EV_HOOK_END, a, o->id, how, w->s->now_us - began, rt__str(w, o->name),
           err ? rt__str(w, err) : 0);
}

static void hook_cut(rt_world *w, uint32_t a, rt_mem *m, rt_cb_outcome how) {
  if (!m->recovery_in_progress || m->orphan_idx >= m->n_orphans) return;
  if (how == RT_CB_TIMED_OUT) RT_PROBE(w, a, RT_PROBE_GATE_RESET_IN_HOOK);
  const rt_orphan *o = &m->orphans[m->orphan_idx];
  sim_emit(w->s, RT_EV_HOOK_END, a, o->id, how, w->s->now_us - m->hook_began,
           rt__str(w, o->name), 0);
}

/* How many times the hook has been called for orphan (a, id), this call
** included (the scenario's oracle for hooks that vary per call; it lives in
** the world, so it survives the actor's deaths). */
int rt__hook_call_count(rt_world *w, uint32_t a, int64_t id) {
  for (int i = 0; i < RT_AW(w)->n_hook_calls; i++)
    if (RT_AW(w)->hook_calls[i].actor == a && RT_AW(w)->hook_calls[i].id == id) return ++RT_AW(w)->hook_calls[i].calls;
  if (RT_AW(w)->n_hook_calls == RT_AW(w)->cap_hook_calls) {
    int nc = RT_AW(w)->cap_hook_calls ? RT_AW(w)->cap_hook_calls * 2 : 16;
    struct rt_hook_calls *n = realloc(RT_AW(w)->hook_calls, (size_t)nc * sizeof *n);
    if (!n) return 1;
    RT_AW(w)->hook_calls = n;
    RT_AW(w)->cap_hook_calls = nc;
  }
  RT_AW(w)->hook_calls[RT_AW(w)->n_hook_calls++] = (struct rt_hook_calls){a, id, 1};
  return 1;
}

/* How many calls of the hook for orphan (a, id) have decided so far. */
static int hook_calls_so_far(rt_world *w, uint32_t a, int64_t id) {
  for (int i = 0; i < RT_AW(w)->n_hook_calls; i++)
    if (RT_AW(w)->hook_calls[i].actor == a && RT_AW(w)->hook_calls[i].id == id)
      return RT_AW(w)->hook_calls[i].calls;
  return 0;
}

/* The row of a hook that threw: deleted (@1604), or kept for a retry on a
** follow-up alarm until older than fiberRecoveryMaxAgeMs, then dropped with
** max_age_exceeded (#1729, index.ts _checkRunFibers). */
static void hook_threw_row(rt_world *w, uint32_t a, const rt_orphan *o) {
  rt_mem *m = RT_MEM(w, a);
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
  int calls = hook_calls_so_far(w, a, o->id);
  sim_emit(w->s, RT_EV_FIBER_RETAINED, a, o->id, age, calls, rt__str(w, o->name), 0);
}

static void hook_done(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_mem *m = RT_MEM(w, a);
  rt_orphan *o = &m->orphans[m->orphan_idx];
  uint32_t snap = rt__orphan_snapshot(w, a, o->id); /* read before the hook's writes */
  /* a copy: interning more strings may move the trace's string table */
  char *snap_text = strdup(sim_trace_str(&w->s->trace, snap));
  (void)s;
  if (!snap_text) snap_text = strdup("null");
  int took = ext_recover_orphan(w, a, o);
  if (RT_MEM(w, a) != m || took == 1) { /* died in the user's onChatRecovery, or it waits */
    free(snap_text);
    return;
  }
  if (took == 0) {
    free(snap_text);
    rt__orphan_recovered(w, a);
    return;
  }
  /* the user's onFiberRecovered continues after its work (rt_usercode.h) */
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_out out;
  rt_uc_in in = {1, snap_text};
  rt_uc_status how;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  memset(&out, 0, sizeof out);
  if (!uc) {
    how = uc_load_failed(&out, err);
  } else if (m->hook_status == RT_UC_YIELD) {
    how = uc->resume(st, &self, &m->hook_fr, &in, &out);
  } else if (m->hook_status == RT_UC_ABSENT) {
    how = RT_UC_DONE; /* no onFiberRecovered: the SDK resumes the fiber */
    out.action = RT_RECOVER_RESUME;
  } else {
    how = (rt_uc_status)m->hook_status;
    out = m->hook_out;
  }
  if (RT_MEM(w, a) != m) {
    free(snap_text);
    return;
  }
  int act = how == RT_UC_THREW ? RT_RECOVER_THROW
            : out.action == RT_UC_ACTED ? RT_RECOVER_DROP /* it ran its own runFiber */
                                         : out.action;
  if (act == RT_RECOVER_THROW) {
    hook_end(w, a, o, RT_CB_THREW, out.value[0] ? out.value : "onFiberRecovered threw");

    sim_emit(w->s, RT_EV_FIBER_HOOK_THREW, a, o->id, o->snapshot, 0, rt__str(w, o->name), snap);
    hook_threw_row(w, a, o);
  } else {
    hook_end(w, a, o, RT_CB_RETURNED, NULL);
    sim_emit(w->s, RT_EV_FIBER_RECOVERED, a, o->id, o->snapshot, act, rt__str(w, o->name), snap);
    int prog = rt__prog_find(w, o->name);
    if (prog >= 0 && act != RT_RECOVER_DROP && m->n_pending_resume < RT_MAX_ORPHANS) {
      /* the hook calls runFiber: the new row is written in the hook's turn */
      int resume = act == RT_RECOVER_RESUME;
      int pc = resume ? resume_pc(&RT_AW(w)->progs[prog], o->snapshot, snap_text) : 0;
      const char *carry =
          resume && o->snapshot < 0 && strcmp(snap_text, "null") ? snap_text : NULL;
      rt_fiber *f = NULL;
      if (m->orphan_source == 1 && w->cfg.hook_run == RT_HOOK_RUN_AFTER_STARTUP)
        park_run(w, m, prog, pc, o->id, carry); /* the old bug: the whole call waits */
      else
        f = fiber_create(w, a, prog, pc, o->id, carry);
      if (f && m->orphan_source == 1 && RT_MEM_ARRAY(m->pending_resume, RT_MAX_ORPHANS))
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

void rt__orphan_recovered(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  if (!m || !m->recovery_in_progress || m->orphan_idx >= m->n_orphans) return;
  const rt_orphan *o = &m->orphans[m->orphan_idx];
  /* an internal fiber (a chat turn): _handleInternalFiberRecovery took it (A.7 step 4) */
  hook_end(w, a, o, RT_CB_RETURNED, NULL);
  rt__w_fiber_delete(w, a, o->id);
  m->scan_progress = 1;
  m->orphan_idx++;
  hook_next(w, a);
}

/* Calls the user's onFiberRecovered for orphan o; hook_done follows when
** the work it yields is over (the hook runs inside the gate at startup). */
static void hook_call(rt_world *w, uint32_t a, const rt_orphan *o, uint32_t snap) {
  rt_mem *m = RT_MEM(w, a);
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_out out;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  rt_uc_recovery ctx = {o->id, o->name, sim_trace_str(&w->s->trace, snap), o->created_ms,
                        hook_calls_so_far(w, a, o->id) + 1};
  memset(&out, 0, sizeof out);
  m->hook_fr = (rt_uc_frame){.key = o->id};
  m->hook_status = RT_UC_ABSENT; /* no hook, or no user code: the SDK's default */
  if (uc && uc->on_fiber_recovered) {
    m->hook_fr.hook = RT_UC_ON_FIBER_RECOVERED;
    rt_uc_status hs = uc->on_fiber_recovered(st, &self, &ctx, &m->hook_fr, &out);
    /* detached: the implementation ends it in rt__hook_finish (maybe already,
    ** the next rows' hooks included) */
    if (hs == RT_UC_DETACHED || RT_MEM(w, a) != m) return;
    m->hook_status = hs;
  }
  if (RT_MEM(w, a) != m) return;
  if (m->hook_status != RT_UC_YIELD) { /* decided at once: applied by hook_done */
    m->hook_out = out;
    out.cmd.kind = RT_UC_CMD_SLEEP;
    out.cmd.min_us = 0;
  }
  int64_t d = out.cmd.kind == RT_UC_CMD_WORK && out.cmd.max_us > out.cmd.min_us
                  ? sim_rng_range(&RT_AW(w)->rng_work, out.cmd.min_us, out.cmd.max_us)
                  : out.cmd.min_us;
  if (d >= 0) sim_after(w->s, d, m->inc.dom, hook_done, w, a);
}

void rt__hook_finish(rt_world *w, uint32_t a, int ok, const char *err, int resumed) {
  rt_mem *m = RT_MEM(w, a);
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
  if (RT_MEM(w, a) != m) return;
  m->orphan_idx++;
  hook_next(w, a);
}

static void hook_next(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  if (m->orphan_idx < m->n_orphans) {
    const rt_orphan *o = &m->orphans[m->orphan_idx];
    uint32_t snap = rt__orphan_snapshot(w, a, o->id);
    m->hook_began = w->s->now_us;
    sim_emit(w->s, RT_EV_HOOK_BEGIN, a, o->id, o->snapshot, o->created_ms * 1000,
             rt__str(w, o->name), snap);
    hook_call(w, a, o, snap);
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
  rt_mem *m = RT_MEM(w, a);
  rt_orphan rows[RT_MAX_ORPHANS];
  if (m->recovery_in_progress) {
    RT_PROBE(w, a, RT_PROBE_RECOVERY_REENTRY);
    rt__emit(w, RT_EV_RECOVERY_REENTRY, a, source, 0, 0, NULL);
    return -1;
  }
  int n = rt__load_orphans(w, a, rows, RT_MAX_ORPHANS), k = 0;
  /* not zeroed: only the rows below n_orphans are ever read */
  if (n > 0 && !m->orphans && !(m->orphans = malloc(RT_MAX_ORPHANS * sizeof *m->orphans)))
    n = 0; /* out of memory: nothing recovered by this scan */
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

static void startup_fail(rt_world *w, uint32_t a, const char *err);
static void startup_ok(rt_world *w, uint32_t a);

/* The user's onStart (rt_usercode.h): started (resume 0) or resumed after
** the command it waited for (resume 1); ends the startup when it returns
** or throws. */
static void onstart_call(rt_world *w, uint32_t a, int resume) {
  rt_mem *m = RT_MEM(w, a);
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_out out;
  rt_uc_status how;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  rt_uc_out_clear(&out);
  if (!uc) {
    how = uc_load_failed(&out, err);
  } else if (resume) {
    rt_uc_in in = {1, NULL};
    how = uc->resume(st, &self, &m->onstart, &in, &out);
  } else {
    if (RT_MEM(w, a) != m) return;
    m->onstart = (rt_uc_frame){.hook = RT_UC_ON_START};
    how = uc->on_start ? uc->on_start(st, &self, &m->onstart, &out) : RT_UC_ABSENT;
  }
  if (RT_MEM(w, a) != m) return;
  if (how == RT_UC_DETACHED) return; /* the implementation ends it in rt__onstart_finish */
  if (how == RT_UC_YIELD && (out.cmd.kind == RT_UC_CMD_SLEEP || out.cmd.kind == RT_UC_CMD_WORK)) {
    int64_t d = out.cmd.kind == RT_UC_CMD_WORK && out.cmd.max_us > out.cmd.min_us
                    ? sim_rng_range(&RT_AW(w)->rng_work, out.cmd.min_us, out.cmd.max_us)
                    : out.cmd.min_us;
    if (d >= 0) sim_after(w->s, d, m->inc.dom, onstart_done, w, a);
    return; /* d < 0: an onStart that never settles (the gate resets) */
  }
  if (how == RT_UC_YIELD) { /* commands onStart cannot wait for yet */
    how = RT_UC_THREW;
    snprintf(out.value, sizeof out.value, "onStart: unsupported command %d", (int)out.cmd.kind);
  }
  if (how == RT_UC_THREW) {
    rt__emit(w, RT_EV_ONSTART_END, a, RT_CB_THREW, w->s->now_us - m->onstart_began, 0, out.value);
    startup_fail(w, a, out.value);
  } else {
    rt__emit(w, RT_EV_ONSTART_END, a, RT_CB_RETURNED, w->s->now_us - m->onstart_began, 0, NULL);
    startup_ok(w, a);
  }
}

void rt__onstart_finish(rt_world *w, uint32_t a, int ok, const char *err) {
  rt_mem *m = RT_MEM(w, a);
  if (!m || m->phase != SU_ONSTART) return;
  int *left = RT_AW(w)->onstart_throws_left;
  if (ok && left && left[a] > 0) { /* the onstart_throw fault */
    left[a]--;
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

static void startup_fail(rt_world *w, uint32_t a, const char *err) {
  rt_mem *m = RT_MEM(w, a);
  rt__emit(w, RT_EV_STARTUP_FAIL, a, w->s->now_us - m->startup_began, 0, 0, err);
  m->inc.status = 0;
  m->phase = SU_NONE;
  rt__gate_release(w, a);
  run_parked(w, a, 0); /* the hooks' runFiber promises run on regardless */
  ext_startup_late(w, a, m, 0); /* legacy fibers recovered in the gate, likewise */
  int n = m->inc.n_waiters;
  rt_msg *held = m->inc.waiters;
  m->inc.waiters = NULL;
  m->inc.n_waiters = m->inc.cap_waiters = 0;
  for (int i = 0; i < n; i++) {
    if (rt__needs_init(held[i].entry))
      rt__fail_msg(w, a, &held[i], err);
    else
      rt__handle(w, a, &held[i]);
  }
  free(held);
}

static void startup_ok(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  rt__emit(w, RT_EV_STARTUP_OK, a, w->s->now_us - m->startup_began, 0, 0, NULL);
  m->inc.status = 2;
  m->phase = SU_DONE;
  rt__gate_release(w, a);
  for (int i = 0; i < n_exts; i++) /* tool runs: recovery, or gated finish hooks */
    if (exts[i]->startup_early) exts[i]->startup_early(w, a);
  run_parked(w, a, 1);
  ext_startup_late(w, a, m, 1); /* legacy fibers recovered in the gate; executor restore */
  if (RT_MEM(w, a) == m) rt__drain_waiters(w, a);
}

#define RT_MSG_NO_NAME "Agent could not determine its Durable Object name"

static void class_start(rt_world *w, uint32_t a, rt_entry entry) {
  rt_mem *m = RT_MEM(w, a);
  m->inc.status = 1;
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

/* The actor is dying with memory m: ONSTART_END / HOOK_END records for a
** user onStart or recovery hook that was running (timed_out on a gate
** reset, cut otherwise), before the ACTOR_DEATH record. */
static void class_dying(rt_world *w, uint32_t a, rt_inc *inc, rt_death_cause cause) {
  rt_mem *m = (rt_mem *)inc;
  rt_cb_outcome how = cause == RT_DEATH_GATE_RESET ? RT_CB_TIMED_OUT : RT_CB_CUT;
  if (m->phase == SU_ONSTART && how == RT_CB_TIMED_OUT) RT_PROBE(w, a, RT_PROBE_GATE_RESET_IN_ONSTART);
  if (m->phase == SU_ONSTART)
    rt__emit(w, RT_EV_ONSTART_END, a, how, w->s->now_us - m->onstart_began, 0, NULL);
  hook_cut(w, a, m, how);
}

void rt__startup_continue(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_mem *m = ((rt_mem *)ac->mem);
  switch (m->phase) {
    case SU_CHECK_FIBERS:
      m->phase = SU_EXTS;
      m->ext_idx = 0;
      /* fall through */
    case SU_EXTS: /* legacy: _checkInterruptedFibers; tool runs: reconcile or snapshot */
      while (m->ext_idx < n_exts) {
        rt_agent_ext *e = exts[m->ext_idx++];
        if (e->startup_gated && e->startup_gated(w, a)) return; /* continues later, or died */
      }
      m->phase = SU_ONSTART;
      m->onstart_began = w->s->now_us;
      rt__emit(w, RT_EV_ONSTART_BEGIN, a, 0, 0, 0, NULL);
      onstart_call(w, a, 0);
      return;
    case SU_ONSTART: onstart_call(w, a, 1); return;
    default: return;
  }
}

/* ---- alarm() (A.5) ---------------------------------------------------- */

static void alarm_after_housekeeping(rt_world *w, uint32_t a) {
  if (!rt__alarm_handler_returned(w, a)) return; /* the handler was cut at its time limit */
  rt__schedule_next_alarm(w, a);
  rt__alarm_handler_done(w, a);
}

static void onalarm_release(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt__keepalive_release((rt_world *)ctx, (uint32_t)arg); /* keepAliveWhile's finally */
}

static void sched_run(rt_world *w, uint32_t a);

/* alarm() after the due schedules: the extensions' alarm steps (legacy
** heartbeat), housekeeping _checkRunFibers, _scheduleNextAlarm. */
static void alarm_after_schedules(rt_world *w, uint32_t a) {
  for (int k = 0; k < n_exts; k++) /* legacy fibers: heartbeat callback + alarm() */
    if (exts[k]->alarm && exts[k]->alarm(w, a)) return;
  if (rt__check_run_fibers(w, a, 2) != 1) alarm_after_housekeeping(w, a);
}

static void alarm_handle(rt_world *w, uint32_t a, const rt_msg *msg) {
  rt_mem *m = RT_MEM(w, a);
  m->inc.alarm_active = 1;
  m->inc.current_alarm = *msg;
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_frame fr = {.hook = RT_UC_ON_ALARM, .key = msg->id};
  rt_uc_out out;
  memset(&out, 0, sizeof out);
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  if (uc && uc->on_alarm && uc->on_alarm(st, &self, &fr, &out) != RT_UC_DONE)
    out.hold_us = 0; /* waiting or throwing onAlarm handlers: not modelled yet */
  if (RT_MEM(w, a) != m) return;
  int64_t hold = out.hold_us;
  if (hold > 0) { /* the user's onAlarm takes a lease (#1703/#1704) */
    rt__keepalive_acquire(w, a);
    sim_after(w->s, hold, m->inc.dom, onalarm_release, w, a);
  }
  if (!m->due && !(m->due = calloc(RT_MAX_DUE, sizeof *m->due))) return; /* out of memory */
  m->n_due = rt__due_schedule_rows(w, a, w->s->now_us / 1000000, m->due, RT_MAX_DUE);
  m->due_idx = 0;
  sched_run(w, a);
}

/* ---- due schedules: alarm() step 3 (A.5; schedules.ts executeCallback) ----
** One row at a time: an interval running less than hungScheduleTimeoutSeconds
** is skipped, a hung one force-reset; an interval is marked running; the
** callback (rt_usercode on_schedule) is tried up to maxAttempts times with
** tryN's jittered backoff (retries.ts jitterBackoff: floor(random *
** min(2^attempt * baseDelayMs, maxDelayMs))); a final failure is
** schedule:error, swallowed; then cron -> next time, interval -> running=0
** and time = now + interval, one-shot -> DELETE even when the callback
** failed (@1604). */

static void sched_wake(sim *s, void *ctx, uint64_t arg);

/* The row's callback finished (ok 1) or failed for good (ok 0). */
static void sched_finish(rt_world *w, uint32_t a, int ok, const char *error) {
  rt_mem *m = RT_MEM(w, a);
  const rt_sched_row *r = &m->due[m->due_idx];
  int64_t now_s = w->s->now_us / 1000000;
  if (!ok)
    sim_emit(w->s, RT_EV_SCHEDULE_ERROR, a, r->id, m->sched_attempt, 0, rt__str(w, r->callback),
             rt__str(w, error ? error : ""));
  if (RT_MEM(w, a) != m) return;
  if (!strcmp(r->type, "cron")) {
    char err[128];
    int64_t next = rt_cron_next_expr(r->cron, now_s, err, sizeof err);
    if (next < 0) /* a stored expression that never fires again: the SDK would throw */
      rt__w_schedule_delete(w, a, r->id, r->callback);
    else
      rt__w_schedule_time(w, a, r->id, next, 0, r->callback);
  } else if (!strcmp(r->type, "interval")) { /* running = 0 with the new time */
    rt__w_schedule_time(w, a, r->id, now_s + r->interval_s, r->interval_s, r->callback);
  } else {
    rt__w_schedule_delete(w, a, r->id, r->callback);
  }
  for (int k = 0; k < n_exts && RT_MEM(w, a) == m; k++) /* chat recovery callbacks */
    if (exts[k]->schedule_ran) exts[k]->schedule_ran(w, a, r->id, r->callback);
  if (RT_MEM(w, a) != m) return;
  m->due_idx++;
  sched_run(w, a);
}

/* What the callback's call (or resume) returned: wait, retry, or finish. */
static void sched_after_call(rt_world *w, uint32_t a, rt_mem *m, rt_uc_status how,
                             rt_uc_out *out) {
  const rt_sched_row *r = &m->due[m->due_idx];
  if (RT_MEM(w, a) != m || how == RT_UC_DETACHED) return; /* detached: rt__schedule_end */
  if (how == RT_UC_YIELD &&
      (out->cmd.kind == RT_UC_CMD_WORK || out->cmd.kind == RT_UC_CMD_SLEEP)) {
    int64_t d = out->cmd.kind == RT_UC_CMD_WORK && out->cmd.max_us > out->cmd.min_us
                    ? sim_rng_range(&RT_AW(w)->rng_work, out->cmd.min_us, out->cmd.max_us)
                    : out->cmd.min_us;
    if (d >= 0) sim_after(w->s, d, m->inc.dom, sched_wake, w, ((uint64_t)a << 32) | 1);
    return; /* d < 0: a promise that never settles; the alarm's time limit cuts it */
  }
  if (how == RT_UC_YIELD) {
    how = RT_UC_THREW;
    snprintf(out->value, sizeof out->value, "schedule callback: unsupported command %d",
             (int)out->cmd.kind);
  }
  if (how != RT_UC_THREW) {
    sched_finish(w, a, 1, NULL);
    return;
  }
  if (m->sched_attempt >= w->cfg.schedule_attempts) {
    sched_finish(w, a, 0, out->value);
    return;
  }
  int64_t cap = w->cfg.schedule_retry_base_us;
  for (int i = 0; i < m->sched_attempt && cap < w->cfg.schedule_retry_max_us; i++) cap *= 2;
  if (cap > w->cfg.schedule_retry_max_us) cap = w->cfg.schedule_retry_max_us;
  int64_t delay = cap > 0 ? (int64_t)(sim_rng_next(&RT_AW(w)->rng_retry) % (uint64_t)cap) : 0;
  delay -= delay % 1000; /* Math.floor over milliseconds */
  sim_emit(w->s, RT_EV_SCHEDULE_RETRY, a, r->id, m->sched_attempt + 1, delay,
           rt__str(w, r->callback), rt__str(w, out->value));
  sim_after(w->s, delay, m->inc.dom, sched_wake, w, ((uint64_t)a << 32) | 2);
}

/* Calls (attempt) the callback of the current row from its start. */
static void sched_call(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  const rt_sched_row *r = &m->due[m->due_idx];
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_out out;
  rt_uc_status how;
  memset(&out, 0, sizeof out);
  m->sched_fr = (rt_uc_frame){.hook = RT_UC_ON_SCHEDULE, .key = r->id};
  m->sched_pc = 0;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  if (!uc) {
    how = uc_load_failed(&out, err);
  } else {
    how = uc->on_schedule ? uc->on_schedule(st, &self, r->callback, r->payload[0] ? r->payload : NULL,
                                            &m->sched_fr, &out)
                          : RT_UC_ABSENT;
  }
  sched_after_call(w, a, m, how, &out);
}

void rt__schedule_end(rt_world *w, uint32_t a, int64_t id, int ok, const char *err) {
  rt_mem *m = RT_MEM(w, a);
  rt_uc_out out;
  if (!m || m->due_idx >= m->n_due || m->due[m->due_idx].id != id || m->sched_fr.key != id)
    return; /* not the row being run: the alarm moved on (its time limit) */
  memset(&out, 0, sizeof out);
  if (!ok) snprintf(out.value, sizeof out.value, "%s", err ? err : "schedule callback threw");
  sched_after_call(w, a, m, ok ? RT_UC_DONE : RT_UC_THREW, &out);
}

static void sched_wake(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 32);
  rt_mem *m = RT_MEM(w, a);
  (void)s;
  if (!m || m->due_idx >= m->n_due) return;
  if ((arg & 0xffffffffu) == 2) { /* a retry: tryN's next attempt */
    m->sched_attempt++;
    sched_call(w, a);
    return;
  }
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_out out;
  rt_uc_in in = {1, NULL};
  memset(&out, 0, sizeof out);
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  rt_uc_status how = uc ? uc->resume(st, &self, &m->sched_fr, &in, &out) : RT_UC_THREW;
  sched_after_call(w, a, m, how, &out);
}

/* Runs the due rows from m->due_idx on; then the rest of alarm(). */
static void sched_run(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  int64_t now_s = w->s->now_us / 1000000, hung_s = w->cfg.hung_schedule_us / 1000000;
  while (m->due_idx < m->n_due) {
    rt_sched_row *r = &m->due[m->due_idx];
    if (!strcmp(r->type, "interval") && r->running) {
      if (r->started_s >= 0 && now_s - r->started_s < hung_s) { /* still running */
        rt__emit(w, RT_EV_SCHEDULE_SKIP, a, r->id, r->started_s * 1000000, 0, r->callback);
        m->due_idx++;
        continue;
      }
      rt__emit(w, RT_EV_SCHEDULE_HUNG, a, r->id, r->started_s >= 0 ? r->started_s * 1000000 : -1,
               0, r->callback); /* force-reset, then runs */
    }
    if (!strcmp(r->type, "interval")) {
      r->started_s = now_s;
      if (rt__w_schedule_running(w, a, r->id, 1, now_s, r->callback) || RT_MEM(w, a) != m) return;
    }
    rt__emit(w, RT_EV_SCHEDULE_RUN, a, r->id, 0, 0, r->callback); /* schedule:execute */
    m->sched_attempt = 1;
    sched_call(w, a);
    return; /* sched_finish continues with the next row */
  }
  alarm_after_schedules(w, a);
}

/* ---- schedules and keepAliveWhile (A.3, A.10) --------------------------- */

static void keepalive_while_done(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_msg m;
  (void)s;
  if (!rt__pop_serving(&RT_MEM(w, a)->inc, (int64_t)(arg & ((1ULL << 40) - 1)), &m)) return;
  rt__keepalive_release(w, a); /* the finally of keepAliveWhile */
  if (m.arg2) /* fn threw: the error propagates to the caller */
    rt__request_done(w, a, &m, 0, sim_trace_str(&w->s->trace, m.str));
  else
    rt__request_done(w, a, &m, 1, NULL);
}

/* schedule / scheduleEvery (A.10; schedules.ts insertForOwner and
** insertIntervalForOwner): the dedup lookup when idempotent (cron and
** interval by default, delayed opt-in), else a new row (times in unix
** seconds); then _scheduleNextAlarm, also on a dedup hit (it re-arms a lost
** alarm). A hit emits RT_EV_SCHEDULE_DEDUP and no schedule_set (the SDK's
** "no schedule:create"). */
int64_t rt__schedule_with(rt_world *w, uint32_t a, const char *cb, const rt_sched_req *q,
                          int *created, char *err, size_t n_err) {
  int64_t now_s = w->s->now_us / 1000000, id = 0;
  rt_sched_row r;
  int idem;
  memset(&r, 0, sizeof r);
  r.started_s = -1;
  snprintf(r.callback, sizeof r.callback, "%s", cb);
  if (q->payload) snprintf(r.payload, sizeof r.payload, "%s", q->payload);
  if (created) *created = 0;
  if (q->cron && q->cron[0]) {
    snprintf(r.type, sizeof r.type, "cron");
    snprintf(r.cron, sizeof r.cron, "%s", q->cron);
    r.time_s = rt_cron_next_expr(q->cron, now_s, err, n_err); /* getNextCronTime */
    if (r.time_s < 0) return -1;
    idem = q->idempotent != 0;
  } else if (q->interval_us > 0) {
    snprintf(r.type, sizeof r.type, "interval");
    r.interval_s = q->interval_us / 1000000 > 0 ? q->interval_us / 1000000 : 1;
    r.time_s = now_s + r.interval_s;
    idem = q->idempotent != 0;
  } else {
    snprintf(r.type, sizeof r.type, "delayed");
    r.delay_s = q->delay_us / 1000000;
    r.time_s = (w->s->now_us + q->delay_us) / 1000000;
    idem = q->idempotent > 0;
  }
  int by_cb = !strcmp(r.type, "interval") && w->cfg.every_key == RT_EVERY_KEY_CALLBACK;
  if (idem && rt__schedule_match(w, a, &r, by_cb, &id)) {
    sim_emit(w->s, RT_EV_SCHEDULE_DEDUP, a, id, 0, 0, rt__str(w, cb), rt__str(w, r.type));
  } else {
    r.id = id = rt__new_id(w);
    if (rt__w_schedule_put(w, a, &r)) {
      snprintf(err, n_err, "storage failed");
      return -1;
    }
    if (created) *created = 1;
  }
  if (RT_MEM(w, a)) rt__schedule_next_alarm(w, a);
  return id;
}

int64_t rt__schedule_add(rt_world *w, uint32_t a, const char *cb, int64_t delay_us,
                         int64_t interval_us) {
  rt_sched_req q = {.delay_us = delay_us, .interval_us = interval_us, .idempotent = -1};
  char err[128];
  return rt__schedule_with(w, a, cb, &q, NULL, err, sizeof err);
}

int rt__schedule_cancel(rt_world *w, uint32_t a, const char *cb) {
  int64_t id;
  if (!rt__schedule_find(w, a, cb, &id)) return 0;
  rt__w_schedule_delete(w, a, id, cb);
  rt__schedule_next_alarm(w, a);
  return 1;
}

/* cancelSchedule(id): false when the row is missing. */
int rt__schedule_cancel_id(rt_world *w, uint32_t a, int64_t id) {
  rt_sched_row r;
  if (!rt__schedule_get(w, a, id, &r)) return 0;
  rt__w_schedule_delete(w, a, id, r.callback);
  rt__schedule_next_alarm(w, a);
  return 1;
}

static void schedule_request(rt_world *w, uint32_t a, const rt_msg *m) {
  switch (m->kind) {
    case MSG_SCHEDULE:
      rt__schedule_add(w, a, sim_trace_str(&w->s->trace, m->str), m->arg, m->arg2);
      break;
    case MSG_SCHEDULE_EX: { /* cron, payload or idempotent: request arg of the world's list */
      const rt_sched_req *q = &RT_AW(w)->sched_reqs[m->arg];
      char err[160];
      int created;
      if (rt__schedule_with(w, a, sim_trace_str(&w->s->trace, m->str), q, &created, err,
                            sizeof err) < 0) {
        if (RT_MEM(w, a)) rt__request_done(w, a, m, 0, err);
        return;
      }
      break;
    }
    case MSG_CANCEL_SCHEDULE: rt__schedule_cancel(w, a, sim_trace_str(&w->s->trace, m->str)); break;
    default: /* MSG_KEEPALIVE_WHILE: answered when fn returns */
      rt__keepalive_acquire(w, a);
      rt__push_serving(&RT_MEM(w, a)->inc, m);
      sim_after(w->s, m->arg, RT_MEM(w, a)->inc.dom, keepalive_while_done, w,
                ((uint64_t)a << 40) | (uint64_t)m->id);
      return;
  }
  rt__request_done(w, a, m, 1, NULL);
}

/* ---- configuration ----------------------------------------------------------- */

void rt_config_default(rt_config *c) {
  memset(c, 0, sizeof *c);
  c->gate_ceiling_us = 30 * 1000000LL;
  c->keepalive_interval_us = 30 * 1000000LL;
  c->heartbeat_schedule_us = 10 * 1000000LL;
  c->idle_min_us = 70 * 1000000LL;
  c->idle_max_us = 140 * 1000000LL;
  c->alarm_retry_base_us = 2 * 1000000LL;
  c->alarm_retry_max = 6;
  c->alarm_limit_us = 15 * 60 * 1000000LL;
  c->commit_window_us = 2000;
  c->rpc_latency_us = 1000;
  c->inspect_timeout_us = 2 * 1000000LL;
  c->inspect_total_us = 0;
  c->heartbeat = RT_HB_ALARM;
  c->dispose = RT_DISPOSE_SDK1604;
  c->toolrun = RT_TOOLRUN_DEFERRED;
  c->reattach_budget_us = 120 * 1000000LL; /* #1640: no-progress budget 120_000 ms */
  c->hung_schedule_us = 30 * 1000000LL;     /* hungScheduleTimeoutSeconds: 30 */
  c->schedule_attempts = 3;                  /* retry defaults: maxAttempts 3, */
  c->schedule_retry_base_us = 100 * 1000LL;  /* baseDelayMs 100, */
  c->schedule_retry_max_us = 3000 * 1000LL;  /* maxDelayMs 3000 */
  c->commit = RT_COMMIT_TURN;
  c->fiber_max_age_us = 24LL * 3600 * 1000000;  /* fiberRecoveryMaxAgeMs: 24 h */
  c->recovery_backoff_max_us = 5LL * 60 * 1000000; /* FIBER_RECOVERY_MAX_BACKOFF_MS */
  c->retain = RT_RETAIN_NONE;
}

/* ---- request handlers (onRequest) ------------------------------------------ */

static void request_wake(sim *s, void *ctx, uint64_t arg);

/* The user's handler of request m (rt_usercode.h): called (fr NULL) or
** resumed after the work it yielded; answers the request when it returns
** or throws. */
static void request_call(rt_world *w, uint32_t a, const rt_msg *m, rt_uc_frame *fr) {
  rt_mem *mem = RT_MEM(w, a);
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_out out;
  rt_uc_status how;
  rt_uc_frame f = {.hook = RT_UC_ON_REQUEST, .key = m->id};
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  rt_uc_out_clear(&out);
  if (!uc) {
    how = uc_load_failed(&out, err);
  } else if (fr) {
    rt_uc_in in = {1, NULL};
    f = *fr;
    how = uc->resume(st, &self, &f, &in, &out);
  } else {
    how = uc->on_request ? uc->on_request(st, &self, "", NULL, &f, &out) : RT_UC_ABSENT;
  }
  if (RT_MEM(w, a) != mem) return;
  if (how == RT_UC_YIELD && (out.cmd.kind == RT_UC_CMD_SLEEP || out.cmd.kind == RT_UC_CMD_WORK)) {
    int64_t d = out.cmd.kind == RT_UC_CMD_WORK && out.cmd.max_us > out.cmd.min_us
                    ? sim_rng_range(&RT_AW(w)->rng_work, out.cmd.min_us, out.cmd.max_us)
                    : out.cmd.min_us;
    if (mem->n_req_fr == mem->cap_req_fr) {
      int nc = mem->cap_req_fr ? mem->cap_req_fr * 2 : 4;
      rt_uc_frame *n = realloc(mem->req_fr, (size_t)nc * sizeof *n);
      if (!n) {
        rt__request_done(w, a, m, 0, "out of memory");
        return;
      }
      mem->req_fr = n;
      mem->cap_req_fr = nc;
    }
    mem->req_fr[mem->n_req_fr++] = f;
    rt__push_serving(&mem->inc, m);
    if (d >= 0)
      sim_after(w->s, d, mem->inc.dom, request_wake, w, ((uint64_t)a << 40) | (uint64_t)m->id);
    return;
  }
  if (how == RT_UC_YIELD) {
    how = RT_UC_THREW;
    snprintf(out.value, sizeof out.value, "onRequest: unsupported command %d", (int)out.cmd.kind);
  }
  if (how == RT_UC_THREW)
    rt__request_done(w, a, m, 0, out.value);
  else
    rt__request_result(w, a, m, 1, NULL, out.value[0] ? out.value : NULL);
}

static void request_wake(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  int64_t id = (int64_t)(arg & ((1ULL << 40) - 1));
  rt_mem *mem = RT_MEM(w, a);
  rt_msg m;
  (void)s;
  if (!rt__pop_serving(&mem->inc, id, &m)) return;
  for (int i = 0; i < mem->n_req_fr; i++) {
    if (mem->req_fr[i].key != id) continue;
    rt_uc_frame f = mem->req_fr[i];
    mem->req_fr[i] = mem->req_fr[--mem->n_req_fr];
    request_call(w, a, &m, &f);
    return;
  }
}

/* ---- user methods by name and RPC (MSG_INVOKE, MSG_RPC, CALL_USER) ------- */

/* Answers message m (being served no more) as its kind wants: a request
** (MSG_INVOKE) with its result, an RPC (MSG_RPC) with a reply. value: the
** result JSON (ok; NULL undefined) or the error message. */
static void user_answer(rt_world *w, uint32_t a, const rt_msg *m, int ok, const char *value) {
  if (m->kind == MSG_RPC)
    rt__send_reply(w, a, m, ok, value ? (int64_t)rt__str(w, value) : 0, 0);
  else if (ok)
    rt__request_result(w, a, m, 1, NULL, value);
  else
    rt__request_done(w, a, m, 0, value);
}

/* A user method by name (MSG_INVOKE: the table's on_request) or an RPC
** from another actor (MSG_RPC: on_call). The message is served while the
** user's code runs; a detached method ends in rt__user_request_end. An
** RPC to code without on_call is answered null at once. */
static void user_method(rt_world *w, uint32_t a, const rt_msg *m) {
  rt_mem *mem = RT_MEM(w, a);
  int rpc = m->kind == MSG_RPC;
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_out out;
  rt_uc_status how;
  rt_uc_frame f = {.hook = RT_UC_ON_REQUEST, .key = m->id};
  rt_msg held;
  char method[64];
  /* copies: user code may intern strings (the trace's table may move) */
  /* a copy without snprintf: its formatter was the one piece of libc's
  ** vfprintf on a scripted method's path (issue #13's benchmark) */
  const char *mname = m->str ? sim_trace_str(&w->s->trace, m->str) : "";
  size_t mlen = strnlen(mname, sizeof method - 1);
  memcpy(method, mname, mlen);
  method[mlen] = '\0';
  char *args = m->arg ? strdup(sim_trace_str(&w->s->trace, (uint32_t)m->arg)) : NULL;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  /* the fields read below, not a memset of the ~600-byte struct (perf: its
  ** `rep stos` was half of this function on a scripted method, issue #13) */
  out.status = RT_UC_DONE;
  out.cmd.kind = (rt_uc_cmd_kind)0;
  out.value[0] = '\0';
  out.action = 0;
  out.hold_us = 0;
  if (!mem || (m->arg && !args) || rt__push_serving(&mem->inc, m)) {
    free(args);
    user_answer(w, a, m, 0, "out of memory");
    return;
  }
  if (!uc) {
    how = uc_load_failed(&out, err);
  } else if (rpc) {
    how = uc->on_call ? uc->on_call(st, &self, method, args, &f, &out) : RT_UC_ABSENT;
  } else {
    how = uc->on_request ? uc->on_request(st, &self, method, args, &f, &out) : RT_UC_ABSENT;
  }
  free(args);
  if (RT_MEM(w, a) != mem || how == RT_UC_DETACHED) return;
  if (!rt__pop_serving(&mem->inc, m->id, &held)) return;
  if (how == RT_UC_YIELD) { /* a by-name method that waits is a detached one */
    how = RT_UC_THREW;
    snprintf(out.value, sizeof out.value, "%s: unsupported command %d", method,
             (int)out.cmd.kind);
  }
  if (how == RT_UC_ABSENT && !rpc) {
    how = RT_UC_THREW;
    snprintf(out.value, sizeof out.value, "%s is not a method of %s", method,
             w->actors[a].spec.id);
  }
  if (how == RT_UC_THREW) user_answer(w, a, &held, 0, out.value);
  else user_answer(w, a, &held, 1, out.value[0] ? out.value : NULL);
}

void rt__user_request_end(rt_world *w, uint32_t a, int64_t id, int ok, const char *value) {
  rt_mem *m = RT_MEM(w, a);
  rt_msg held;
  if (!m || !rt__pop_serving(&m->inc, id, &held)) return;
  user_answer(w, a, &held, ok, value);
}

int rt__user_call(rt_world *w, uint32_t a, uint32_t target, const char *method,
                  const char *args, int64_t key) {
  rt_call *c = rt__new_call(w, a, CALL_USER, key, target);
  if (!c) return -1;
  c->str = rt__str(w, method);
  char mcopy[64]; /* interning the args may move the trace's strings */
  snprintf(mcopy, sizeof mcopy, "%s", method);
  int64_t aid = rt__str(w, args ? args : "null");
  rt__send_call(w, a, target, MSG_RPC, mcopy, RT_ENTRY_RPC, c, aid, 0);
  return 0;
}

/* The reply to a user call (CALL_USER) goes to the caller's table. */
static void user_reply(rt_world *w, uint32_t a, rt_call *c, int ok, int64_t value) {
  rt_mem *m = RT_MEM(w, a);
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  int64_t key = c->key;
  c->live = 0;
  if (!m || !m->uc_opened) return; /* nothing of this incarnation waits for it */
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  if (!uc || !uc->call_reply) return;
  char *v = value ? strdup(sim_trace_str(&w->s->trace, (uint32_t)value)) : NULL;
  uc->call_reply(st, &self, key, ok, v);
  free(v);
}

/* ---- the host's entry points (rt_actor_class) ----------------------------- */

static void class_message(rt_world *w, uint32_t a, const rt_msg *m) {
  switch (m->kind) {
    case MSG_REQUEST: request_call(w, a, m, NULL); break;
    case MSG_FIBER:
      if (m->arg2) { /* awaited: answered when the body ends (rt_agent.c) */
        rt__fiber_start_awaited(w, a, (int)m->arg, m);
        break;
      }
      rt__fiber_start(w, a, (int)m->arg, 0, 0);
      rt__request_done(w, a, m, 1, NULL);
      break;
    case MSG_KEEPALIVE_ACQUIRE:
    case MSG_KEEPALIVE_DISPOSE: keepalive_lease_request(w, a, m); break;
    case MSG_STASH_OUTSIDE: /* SDK Agent.stash(): no fiber in the async context */
      rt__request_done(w, a, m, 0, RT_MSG_STASH_OUTSIDE);
      break;
    case MSG_SCHEDULE:
    case MSG_SCHEDULE_EX:
    case MSG_CANCEL_SCHEDULE:
    case MSG_KEEPALIVE_WHILE: schedule_request(w, a, m); break;
    case MSG_ALARM: alarm_handle(w, a, m); break;
    case MSG_INVOKE:
    case MSG_RPC: user_method(w, a, m); break;
    default: /* a model's kind (tool runs, legacy, executor, thread store, chat) */
      if (m->kind >= 0 && m->kind < MSG_KINDS && by_kind[m->kind]) by_kind[m->kind]->message(w, a, m);
      break;
  }
}


static void class_notify(rt_world *w, uint32_t a, const rt_msg *m) {
  for (int i = 0; i < n_exts; i++)
    if (exts[i]->notify) exts[i]->notify(w, a, m);
}

static void class_reply(rt_world *w, uint32_t a, rt_call *c, int ok, int64_t value) {
  if (c->purpose == CALL_FIBER_STEP)
    fiber_reply(w, a, c, ok);
  else if (c->purpose == CALL_USER)
    user_reply(w, a, c, ok, value);
  else if (c->purpose > 0 && c->purpose < CALL_PURPOSES && by_purpose[c->purpose])
    by_purpose[c->purpose]->reply(w, a, c, ok, value);
}

static void class_mem_free(rt_world *w, rt_inc *inc) {
  rt_mem *m = (rt_mem *)inc;
  for (int i = 0; i < n_exts; i++)
    if (exts[i]->mem_free) exts[i]->mem_free(w, m);
  if (m->uc_opened && m->uc && m->uc->close) m->uc->close(m->uc_state);
  free(m->fibers);
  free(m->req_fr);
  free(m->orphans);
  free(m->due);
  free(m->rows);
  free(m->snapshot);
  free(m->deferred_rows);
  free(m->finish);
  free(m->pending_resume);
  free(m->legacy_pending);
  free(m->parked_runs);
}

static void class_world_free(rt_world *w) {
  rt_agent_world *aw = RT_AW(w);
  for (int i = 0; i < n_exts; i++) /* executor, thread store, chat */
    if (exts[i]->world_free) exts[i]->world_free(w);
  for (int i = 0; i < aw->n_progs; i++) free(aw->progs[i].steps);
  free(aw->progs);
  free(aw->hook_calls);
  free(aw->onstart_throws_left);
  free(aw->uc_actor);
  free(aw->user_rng);
  free(aw->user_rng_made);
  for (int i = 0; i < aw->n_sched_reqs; i++) {
    free(aw->sched_reqs[i].cron_buf);
    free(aw->sched_reqs[i].payload_buf);
  }
  free(aw->sched_reqs);
  free(aw);
}

static const rt_actor_class agent_class = {
    .name = "Agent",
    .mem_size = sizeof(rt_mem),
    .start = class_start,
    .message = class_message,
    .notify = class_notify,
    .reply = class_reply,
    .dying = class_dying,
    .mem_free = class_mem_free,
    .world_free = class_world_free,
};

rt_world *rt__agent_world_new(sim *s, const rt_config *cfg, const rt_usercode *uc) {
  rt_agent_world *aw = calloc(1, sizeof *aw);
  if (!aw || rt__store_register(&rt__agent_store)) {
    free(aw);
    return NULL;
  }
  aw->uc_default = uc;
  sim_rng_stream(&aw->rng_work, s->seed, "runtime.work");
  sim_rng_stream(&aw->rng_retry, s->seed, "runtime.schedule.retry");
  rt_world *w = rt__host_new(s, cfg, &agent_class, aw);
  if (!w) free(aw);
  return w;
}

int rt__usercode_set(rt_world *w, uint32_t a, const rt_usercode *uc) {
  rt_agent_world *aw = RT_AW(w);
  if (a >= w->n_actors || !uc) return -1;
  if (a >= aw->n_uc_actor) {
    const rt_usercode **n = realloc(aw->uc_actor, w->n_actors * sizeof *n);
    if (!n) return -1;
    for (uint32_t i = aw->n_uc_actor; i < w->n_actors; i++) n[i] = NULL;
    aw->uc_actor = n;
    aw->n_uc_actor = w->n_actors;
  }
  aw->uc_actor[a] = uc;
  return 0;
}

const rt_usercode *rt__uc_enter(rt_world *w, uint32_t a, rt_sdk_actor *self, void **st,
                                const char **err) {
  rt_mem *m = RT_MEM(w, a);
  rt_agent_world *aw = RT_AW(w);
  *self = (rt_sdk_actor){w, a, m, 0};
  *st = NULL;
  if (!m) return NULL;
  if (!m->uc) m->uc = a < aw->n_uc_actor && aw->uc_actor[a] ? aw->uc_actor[a] : aw->uc_default;
  if (!m->uc_opened) {
    m->uc_opened = 1;
    m->uc_state = m->uc->open ? m->uc->open(m->uc, self, err) : NULL;
    if (m->uc->open && !m->uc_state) {
      m->uc_opened = 0;
      return NULL;
    }
  }
  *st = m->uc_state;
  return m->uc;
}

const rt_usercode *rt_usercode_of(rt_sdk_actor *self) {
  rt_agent_world *aw = RT_AW(self->w);
  if (self->m && self->m->uc) return self->m->uc;
  return self->a < aw->n_uc_actor && aw->uc_actor[self->a] ? aw->uc_actor[self->a]
                                                          : aw->uc_default;
}

/* ---- workload entry points of the SDK (rt.h) ------------------------------ */

int rt_keepalive_refs(const rt_world *w, uint32_t a) {
  return rt_actor_alive(w, a) ? RT_MEM(w, a)->refs : 0;
}


static int prog_add(rt_world *w, const rt_program *p) {
  int found = rt__prog_find(w, p->name);
  if (found >= 0) return found;
  if (RT_AW(w)->n_progs == RT_AW(w)->cap_progs) {
    int nc = RT_AW(w)->cap_progs ? RT_AW(w)->cap_progs * 2 : 8;
    rt_program *np = realloc(RT_AW(w)->progs, (size_t)nc * sizeof *np);
    if (!np) return -1;
    RT_AW(w)->progs = np;
    RT_AW(w)->cap_progs = nc;
  }
  rt_program *c = &RT_AW(w)->progs[RT_AW(w)->n_progs];
  *c = *p;
  c->steps = malloc((size_t)(p->n_steps ? p->n_steps : 1) * sizeof *p->steps);
  if (!c->steps) return -1;
  if (p->n_steps) /* a body user code brings has no steps (and no array) */
    memcpy(c->steps, p->steps, (size_t)p->n_steps * sizeof *p->steps);
  return RT_AW(w)->n_progs++;
}

int rt_fiber_at(rt_world *w, uint32_t a, const rt_program *prog, int64_t at_us) {
  int idx = prog_add(w, prog);
  if (idx < 0) return -1;
  rt_msg m = {0};
  m.kind = MSG_FIBER;
  m.entry = RT_ENTRY_FETCH;
  m.arg = idx;
  return rt__deliver_at(w, a, &m, at_us);
}

void rt_onstart_throws(rt_world *w, uint32_t a, int count) {
  if (!RT_AW(w)->onstart_throws_left) {
    RT_AW(w)->onstart_throws_left = calloc(w->n_actors ? w->n_actors : 1, sizeof(int));
    if (!RT_AW(w)->onstart_throws_left) return;
  }
  for (uint32_t i = 0; i < w->n_actors; i++)
    if (a == RT_NO_ACTOR || a == i) RT_AW(w)->onstart_throws_left[i] = count;
}

int rt_fiber_awaited_at(rt_world *w, uint32_t a, const rt_program *prog, int64_t at_us) {
  int idx = prog_add(w, prog);
  if (idx < 0) return -1;
  rt_msg m = {0};
  m.kind = MSG_FIBER;
  m.entry = RT_ENTRY_FETCH;
  m.arg = idx;
  m.arg2 = 1;
  return rt__deliver_at(w, a, &m, at_us);
}

int rt_stash_outside_at(rt_world *w, uint32_t a, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_STASH_OUTSIDE;
  m.entry = RT_ENTRY_FETCH;
  return rt__deliver_at(w, a, &m, at_us);
}

int rt_schedule_at(rt_world *w, uint32_t a, const char *callback, int64_t delay_us,
                   int64_t interval_us, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_SCHEDULE;
  m.entry = RT_ENTRY_FETCH;
  m.arg = delay_us;
  m.arg2 = interval_us;
  m.str = rt__str(w, callback);
  return m.str ? rt__deliver_at(w, a, &m, at_us) : -1;
}

int rt_schedule_ex_at(rt_world *w, uint32_t a, const char *callback, const rt_schedule_spec *sp,
                      int64_t at_us) {
  rt_agent_world *aw = RT_AW(w);
  rt_msg m = {0};
  if (aw->n_sched_reqs == aw->cap_sched_reqs) {
    int nc = aw->cap_sched_reqs ? aw->cap_sched_reqs * 2 : 8;
    rt_sched_req *n = realloc(aw->sched_reqs, (size_t)nc * sizeof *n);
    if (!n) return -1;
    aw->sched_reqs = n;
    aw->cap_sched_reqs = nc;
  }
  rt_sched_req *q = &aw->sched_reqs[aw->n_sched_reqs];
  memset(q, 0, sizeof *q);
  q->delay_us = sp->delay_us;
  q->interval_us = sp->interval_us;
  q->idempotent = sp->idempotent;
  if (sp->cron && !(q->cron = q->cron_buf = strdup(sp->cron))) return -1;
  if (sp->payload && !(q->payload = q->payload_buf = strdup(sp->payload))) {
    free(q->cron_buf);
    return -1;
  }
  m.kind = MSG_SCHEDULE_EX;
  m.entry = RT_ENTRY_FETCH;
  m.arg = aw->n_sched_reqs++;
  m.str = rt__str(w, callback);
  return m.str ? rt__deliver_at(w, a, &m, at_us) : -1;
}

int rt_cancel_schedule_at(rt_world *w, uint32_t a, const char *callback, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_CANCEL_SCHEDULE;
  m.entry = RT_ENTRY_FETCH;
  m.str = rt__str(w, callback);
  return m.str ? rt__deliver_at(w, a, &m, at_us) : -1;
}

int rt_keepalive_while_at(rt_world *w, uint32_t a, int64_t hold_us, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_KEEPALIVE_WHILE;
  m.entry = RT_ENTRY_FETCH;
  m.arg = hold_us;
  return rt__deliver_at(w, a, &m, at_us);
}

static int lease_at(rt_world *w, uint32_t a, int kind, const char *lease,
                    int64_t at_us) {
  rt_msg m = {0};
  if (!lease || !*lease) return -1;
  m.kind = kind;
  m.entry = RT_ENTRY_FETCH;
  m.str = rt__str(w, lease);
  return rt__deliver_at(w, a, &m, at_us);
}

int rt_keepalive_acquire_at(rt_world *w, uint32_t a, const char *lease, int64_t at_us) {
  return lease_at(w, a, MSG_KEEPALIVE_ACQUIRE, lease, at_us);
}

int rt_keepalive_dispose_at(rt_world *w, uint32_t a, const char *lease, int64_t at_us) {
  return lease_at(w, a, MSG_KEEPALIVE_DISPOSE, lease, at_us);
}

int rt_keepalive_while_throws_at(rt_world *w, uint32_t a, int64_t hold_us, const char *message,
                                 int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_KEEPALIVE_WHILE;
  m.entry = RT_ENTRY_FETCH;
  m.arg = hold_us;
  m.arg2 = 1; /* fn throws */
  m.str = rt__str(w, message && *message ? message : "keepAliveWhile fn threw");
  return rt__deliver_at(w, a, &m, at_us);
}

int64_t rt_seed_orphan_fiber(rt_world *w, uint32_t a, const rt_program *prog,
                             int snapshot_pc) {
  int idx = prog_add(w, prog);
  int64_t id = rt__new_id(w);
  if (idx < 0 || a >= w->n_actors || rt__w_fiber_insert(w, a, id, prog->name)) return -1;
  rt__emit(w, RT_EV_FIBER_START, a, id, 0, 0, prog->name);
  if (snapshot_pc >= 0 && rt__w_stash(w, a, id, snapshot_pc)) return -1;
  return id;
}

int64_t rt_seed_schedule(rt_world *w, uint32_t a, const rt_schedule_seed *sd) {
  rt_sched_row r;
  if (a >= w->n_actors) return -1;
  memset(&r, 0, sizeof r);
  r.id = rt__new_id(w);
  snprintf(r.callback, sizeof r.callback, "%s", sd->callback);
  snprintf(r.type, sizeof r.type, "%s",
           sd->cron[0] ? "cron" : sd->interval_us > 0 ? "interval" : "delayed");
  r.time_s = sd->time_us / 1000000;
  r.interval_s = sd->interval_us / 1000000;
  snprintf(r.cron, sizeof r.cron, "%s", sd->cron);
  snprintf(r.payload, sizeof r.payload, "%s", sd->payload);
  r.running = sd->running;
  r.started_s = sd->started_us < 0 ? -1 : sd->started_us / 1000000;
  if (rt__w_schedule_put(w, a, &r)) return -1;
  if (!sd->no_alarm) {
    int64_t at = r.time_s * 1000000, cur = w->actors[a].alarm_at;
    if ((cur < 0 || at < cur) && rt_alarm_preset(w, a, at)) return -1;
  }
  return r.id;
}

int rt_count_fiber_rows(rt_world *w, uint32_t a) {
  return a < w->n_actors ? rt__count_runs(w, a) : -1;
}


int rt__prog_add(rt_world *w, const rt_program *p) { return prog_add(w, p); } /* for models */

int rt_program_register(rt_world *w, const rt_program *prog) { return prog_add(w, prog); }

/* ---- fault doors on user code (rt.h) -------------------------------------- */

void rt_set_stuck(rt_world *w, uint32_t a, rt_stuck mode, int64_t delay_us) {
  if (a >= w->n_actors) return;
  w->actors[a].spec.stuck = mode;
  w->actors[a].spec.stuck_delay_us = delay_us;
}

void rt_set_onstart_us(rt_world *w, uint32_t a, int64_t us) {
  if (a < w->n_actors) w->actors[a].spec.on_start_us = us;
}
