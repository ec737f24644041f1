/*
** rt_world.c: the actor host (a Durable Object platform model).
**
** Follows seed 003 (input gate, 30 s ceiling and reset, entry points) and
** workerd-observed.md: incarnations, message delivery through the input
** gate, waiters, idle eviction (70–140 s), deaths, RPC between actors, the
** platform alarm (setAlarm, delivery, retries with backoff, the 15-minute
** handler limit). An actor's memory (rt_inc, the start of its class's
** memory) lives in its own sim cancellation domain, so when it dies every
** pending timer, commit and reply addressed to it vanishes with it.
**
** The host runs no SDK code: it calls the actor's class (rt_actor_class,
** rt_host.h) for startup, messages, notifications, replies, death and
** free, as workerd calls a Durable Object class.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_host.h"

#include "sim/sim_asan.h"
#if SIM_ASAN
#include <sanitizer/asan_interface.h>
#define RT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define RT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RT_POISON(p, n) ((void)(p), (void)(n))
#define RT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

rt_world *rt__host_new(sim *s, const rt_config *cfg, const rt_actor_class *cls, void *layer) {
  rt__sqlite_single_thread();
  rt_world *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->s = s;
  w->cfg = *cfg;
  w->cls = cls;
  w->layer = layer;
  w->next_id = 1;
  sim_rng_stream(&w->rng_idle, s->seed, "runtime.idle");
  sim_rng_stream(&w->rng_rpc, s->seed, "runtime.rpc");
  return w;
}

/* Frees m's message arrays (the host's part of an incarnation block). */
static void mem_arrays_free(rt_inc *m) {
  free(m->waiters);
  free(m->serving);
  free(m->calls);
}

static void mem_free(rt_world *w, rt_inc *m) {
  if (!m) return;
  mem_arrays_free(m);
  w->cls->mem_free(w, m); /* the class's part */
  free(m);
}

/* A dead incarnation of actor class cls: its class part is released and
** the block, with its message arrays, waits in w->spare for a later wake
** (poisoned under AddressSanitizer, so a use after death is still caught);
** freed when the spares are full. */
static void mem_retire(rt_world *w, const rt_actor_class *cls, rt_inc *m) {
  if (!m) return;
  if (cls != w->cls || w->n_spare == RT_SPARE_INCS) {
    mem_free(w, m);
    return;
  }
  w->cls->mem_free(w, m);
  RT_POISON(m, cls->mem_size);
  w->spare[w->n_spare++] = m;
}

/* A zeroed incarnation block of class cls: a spare one (its message arrays
** kept, emptied) or a new one; NULL on OOM. */
static rt_inc *mem_new(rt_world *w, const rt_actor_class *cls) {
  if (cls != w->cls || w->n_spare == 0) return calloc(1, cls->mem_size);
  rt_inc *m = w->spare[--w->n_spare];
  RT_UNPOISON(m, cls->mem_size);
  rt_msg *waiters = m->waiters, *serving = m->serving;
  rt_call *calls = m->calls;
  int cw = m->cap_waiters, cs = m->cap_serving, cc = m->cap_calls;
  memset(m, 0, cls->mem_size);
  m->waiters = waiters;
  m->cap_waiters = cw;
  m->serving = serving;
  m->cap_serving = cs;
  m->calls = calls;
  m->cap_calls = cc;
  return m;
}

void rt_world_free(rt_world *w) {
  if (!w) return;
  for (uint32_t i = 0; i < w->n_actors; i++) {
    rt_actor *ac = &w->actors[i];
    if (ac->store.txn_open) sqlite3_exec(ac->store.db, "ROLLBACK", NULL, NULL, NULL); /* run ended mid-turn */
    rt__db_close(&ac->store);
    rt__scan_free(ac);
    mem_free(w, ac->mem);
  }
  while (w->n_spare > 0) { /* their class part is released already */
    rt_inc *m = w->spare[--w->n_spare];
    RT_UNPOISON(m, w->cls->mem_size);
    mem_arrays_free(m);
    free(m);
  }
  w->cls->world_free(w);
  free(w->actors);
  free(w->msgs);
  free(w->msg_free);
  free(w);
}

uint32_t rt_actor_add(rt_world *w, const rt_actor_spec *spec) {
  if (w->n_actors == w->cap_actors) {
    uint32_t nc = w->cap_actors ? w->cap_actors * 2 : 8;
    rt_actor *na = realloc(w->actors, nc * sizeof *na);
    if (!na) return UINT32_MAX;
    w->actors = na;
    w->cap_actors = nc;
  }
  rt_actor *ac = &w->actors[w->n_actors];
  memset(ac, 0, sizeof *ac);
  ac->spec = *spec;
  ac->cls = w->cls;
  ac->alarm_at = -1;
  return w->n_actors++;
}

uint32_t rt_actor_count(const rt_world *w) { return w->n_actors; }

const rt_actor_spec *rt_actor_spec_of(const rt_world *w, uint32_t a) {
  return a < w->n_actors ? &w->actors[a].spec : NULL;
}

sim *rt_world_sim(rt_world *w) { return w->s; }

uint32_t rt__str(rt_world *w, const char *s) { return sim_trace_intern(&w->s->trace, s); }

void rt__emit(rt_world *w, uint32_t kind, uint32_t a, int64_t x, int64_t y,
              int64_t z, const char *s) {
  sim_emit(w->s, kind, a, x, y, z, s ? rt__str(w, s) : 0, 0);
}

void rt__emit_lit(rt_world *w, uint32_t kind, uint32_t a, int64_t x, int64_t y,
                  int64_t z, const char *s) {
  sim_emit(w->s, kind, a, x, y, z, sim_trace_intern_fixed(&w->s->trace, s), 0);
}

int64_t rt__new_id(rt_world *w) { return w->next_id++; }

/* Only the first hit of a run is a record: a wedged actor can reach a probe
** tens of thousands of times (issue-1595), and a swarm counts runs. */
void rt__probe(rt_world *w, uint32_t a, rt_probe p) {
  if (++w->probe_hits[p] == 1) rt__emit(w, RT_EV_PROBE, a, p, 0, 0, rt_probe_name(p));
}

uint32_t rt_probe_hits(const rt_world *w, int p) {
  return p >= 0 && p < RT_PROBE_COUNT ? w->probe_hits[p] : 0;
}

int rt__needs_init(rt_entry e) { return e != RT_ENTRY_RPC; }

/* ---- small growable arrays -------------------------------------------- */

static int push(void **arr, int *n, int *cap, size_t elem, const void *v) {
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 8;
    void *na = realloc(*arr, (size_t)nc * elem);
    if (!na) return -1;
    *arr = na;
    *cap = nc;
  }
  memcpy((char *)*arr + (size_t)*n * elem, v, elem);
  (*n)++;
  return 0;
}

int rt__push_waiter(rt_inc *m, const rt_msg *msg) {
  return push((void **)&m->waiters, &m->n_waiters, &m->cap_waiters, sizeof *msg, msg);
}

int rt__push_serving(rt_inc *m, const rt_msg *msg) {
  return push((void **)&m->serving, &m->n_serving, &m->cap_serving, sizeof *msg, msg);
}

int rt__take_waiter(rt_inc *m, int64_t id, rt_msg *out) {
  for (int i = 0; i < m->n_waiters; i++) {
    if (m->waiters[i].id != id) continue;
    *out = m->waiters[i];
    memmove(&m->waiters[i], &m->waiters[i + 1], (size_t)(m->n_waiters - i - 1) * sizeof *out);
    m->n_waiters--;
    return 1;
  }
  return 0;
}

int rt__pop_serving(rt_inc *m, int64_t id, rt_msg *out) {
  for (int i = 0; i < m->n_serving; i++) {
    if (m->serving[i].id != id) continue;
    *out = m->serving[i];
    memmove(&m->serving[i], &m->serving[i + 1], (size_t)(m->n_serving - i - 1) * sizeof *out);
    m->n_serving--;
    return 1;
  }
  return 0;
}

rt_call *rt__new_call(rt_world *w, uint32_t a, int p, int64_t key, uint32_t callee) {
  rt_inc *m = w->actors[a].mem;
  rt_call c = {rt__new_id(w), p, key, callee, w->s->now_us, 0, 1, 0};
  for (int i = 0; i < m->n_calls; i++)
    if (!m->calls[i].live) {
      m->calls[i] = c;
      return &m->calls[i];
    }
  if (push((void **)&m->calls, &m->n_calls, &m->cap_calls, sizeof c, &c)) return NULL;
  return &m->calls[m->n_calls - 1];
}

rt_call *rt__find_call(rt_inc *m, int64_t id) {
  for (int i = 0; i < m->n_calls; i++)
    if (m->calls[i].live && m->calls[i].id == id) return &m->calls[i];
  return NULL;
}

/* ---- incarnations ----------------------------------------------------- */

static void idle_check(sim *s, void *ctx, uint64_t arg);

static void idle_arm(rt_world *w, uint32_t a, int64_t at) {
  rt_inc *m = w->actors[a].mem;
  m->idle_timer = sim_at(w->s, at, m->dom, idle_check, w, a);
}

rt_inc *rt__wake(rt_world *w, uint32_t a, rt_entry entry) {
  rt_actor *ac = &w->actors[a];
  if (ac->mem) return ac->mem;
  rt_inc *m = mem_new(w, ac->cls);
  if (!m) return NULL;
  m->dom = sim_domain_new(w->s);
  m->incarnation = ++ac->next_incarnation;
  m->last_activity = w->s->now_us;
  m->idle_timeout = sim_rng_range(&w->rng_idle, w->cfg.idle_min_us, w->cfg.idle_max_us);
  ac->mem = m;
  if (entry == RT_ENTRY_ALARM &&
      (w->cfg.workerd_name_bug || ac->spec.on_start_throws == RT_THROW_UNTIL_FRESH_REQUEST))
    ac->poisoned = 1;
  if (!ac->cls_str) ac->cls_str = rt__str(w, ac->spec.cls); /* spec is fixed after rt_actor_add */
  sim_emit(w->s, RT_EV_ACTOR_WAKE, a, m->incarnation, entry, 0, ac->cls_str, 0);
  idle_arm(w, a, w->s->now_us + m->idle_timeout);
  return m;
}

void rt__touch(rt_world *w, uint32_t a) {
  rt_inc *m = w->actors[a].mem;
  if (m) m->last_activity = w->s->now_us;
}

/* An actor is busy (not idle) while an event is in flight: the startup gate,
** a waitUntil, waiters, a request being served, a startup, or an alarm
** handler still running (an alarm invocation is an event like a request). */
static int busy(const rt_inc *m) {
  return m->gate_held || m->waituntil > 0 || m->n_waiters > 0 || m->n_serving > 0 ||
         m->status == 1 || m->alarm_active;
}

static void idle_check(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_inc *m = w->actors[a].mem;
  int64_t due = m->last_activity + m->idle_timeout;
  if (busy(m)) {
    idle_arm(w, a, s->now_us + m->idle_timeout);
  } else if (s->now_us < due) {
    idle_arm(w, a, due);
  } else {
    rt_kill_actor(w, a, RT_DEATH_IDLE);
  }
}

const char *rt__death_message(rt_death_cause cause) {
  switch (cause) {
    case RT_DEATH_GATE_RESET: return RT_MSG_GATE_RESET;
    case RT_DEATH_STORAGE: return "Durable Object storage operation failed; the object was reset.";
    case RT_DEATH_EVICT:
    case RT_DEATH_IDLE: return "Durable Object was evicted.";
    default: return "Durable Object's isolate exceeded its lifetime and was restarted.";
  }
}

void rt_kill_actor(rt_world *w, uint32_t a, rt_death_cause cause) {
  rt_actor *ac = &w->actors[a];
  rt_inc *m = ac->mem;
  if (!m) return;
  ac->cls->dying(w, a, m, cause);
  if (ac->store.txn_open) RT_PROBE(w, a, RT_PROBE_COMMIT_WINDOW_DEATH);
  rt__rollback(w, a, rt_death_name(cause));
  sim_domain_kill(w->s, m->dom);
  ac->mem = NULL;
  if (!m->death_early) rt__emit(w, RT_EV_ACTOR_DEATH, a, cause, m->incarnation, 0, NULL);
  const char *err = rt__death_message(cause);
  if (m->n_waiters > 0) RT_PROBE(w, a, RT_PROBE_WAITERS_FAILED);
  for (int i = 0; i < m->n_waiters; i++) rt__fail_msg(w, a, &m->waiters[i], err);
  for (int i = 0; i < m->n_serving; i++) rt__fail_msg(w, a, &m->serving[i], err);
  if (m->alarm_active) RT_PROBE(w, a, RT_PROBE_ALARM_CUT);
  if (m->alarm_active) rt__alarm_failed(w, a, &m->current_alarm);
  if (cause == RT_DEATH_IDLE) rt__db_park(w, &ac->store);
  mem_retire(w, ac->cls, m);
}

void rt_kill_all(rt_world *w, rt_death_cause cause) {
  for (uint32_t a = 0; a < w->n_actors; a++) {
    rt_kill_actor(w, a, cause);
    w->actors[a].poisoned = 0;
  }
}

int rt_world_restore(rt_world *w, int64_t id_base) {
  w->next_id = id_base;
  w->next_txn = id_base;
  for (uint32_t a = 0; a < w->n_actors; a++) {
    if (rt__db_open(w, a)) return -1;
    rt__alarm_sync(w, a);
  }
  return 0;
}

void rt_world_note_sigkill(rt_world *w) {
  for (uint32_t a = 0; a < w->n_actors; a++) {
    rt_actor *ac = &w->actors[a];
    if (!ac->mem) continue;
    if (ac->store.txn_open) RT_PROBE(w, a, RT_PROBE_COMMIT_WINDOW_DEATH);
    if (ac->store.txn_open)
      rt__emit(w, RT_EV_TXN_ROLLBACK, a, ac->store.txn_id, ac->store.txn_writes, 0, "sigkill");
    rt__emit(w, RT_EV_ACTOR_DEATH, a, RT_DEATH_SIGKILL, ac->mem->incarnation, 0, NULL);
  }
}

int rt_actor_alive(const rt_world *w, uint32_t a) {
  return a < w->n_actors && w->actors[a].mem != NULL;
}

/* ---- the input gate --------------------------------------------------- */

static void gate_timeout(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_inc *m = w->actors[a].mem;
  rt__emit_lit(w, RT_EV_GATE_TIMEOUT, a, s->now_us - m->gate_since, w->cfg.gate_ceiling_us, 0,
               RT_MSG_GATE_RESET);
  rt_kill_actor(w, a, RT_DEATH_GATE_RESET);
}

void rt__gate_acquire(rt_world *w, uint32_t a, const char *purpose) {
  rt_inc *m = w->actors[a].mem;
  m->gate_held = 1;
  m->gate_since = w->s->now_us;
  rt__emit_lit(w, RT_EV_GATE_ACQUIRE, a, m->incarnation, 0, 0, purpose);
  m->gate_timer = sim_after(w->s, w->cfg.gate_ceiling_us, m->dom, gate_timeout, w, a);
}

void rt__gate_release(rt_world *w, uint32_t a) {
  rt_inc *m = w->actors[a].mem;
  if (!m->gate_held) return;
  sim_cancel(w->s, m->gate_timer);
  m->gate_held = 0;
  rt__emit(w, RT_EV_GATE_RELEASE, a, w->s->now_us - m->gate_since, 0, 0, NULL);
}

/* Hands every held message to the actor again, in arrival order. */
void rt__drain_waiters(rt_world *w, uint32_t a) {
  rt_inc *m = w->actors[a].mem;
  while (m && m->n_waiters > 0 && !m->gate_held) {
    rt_msg msg = m->waiters[0];
    memmove(&m->waiters[0], &m->waiters[1], (size_t)(m->n_waiters - 1) * sizeof msg);
    m->n_waiters--;
    rt__handle(w, a, &msg);
    m = w->actors[a].mem;
    if (m && m->status != 2 && m->n_waiters > 0) break;
  }
}

/* ---- the platform alarm ------------------------------------------------- */


static void alarm_fire(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_actor *ac = &w->actors[a];
  (void)s;
  ac->alarm_ev = 0;
  if (ac->alarm_at < 0) return;
  if (w->down_until_us > w->s->now_us) { /* down_for: fires when the process is back */
    ac->alarm_ev = sim_at(w->s, w->down_until_us, 0, alarm_fire, w, arg);
    return;
  }
  if (w->alarm_delay_us > 0 && !(arg >> 32)) { /* alarm_delay: delivered late */
    ac->alarm_ev = sim_after(w->s, w->alarm_delay_us, 0, alarm_fire, w, a | (1ULL << 32));
    return;
  }
  rt_msg m = {0};
  m.kind = MSG_ALARM;
  m.cls = RT_MC_ALARM;
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

/* The platform cuts an alarm handler after 15 minutes (A.0): the
** invocation fails and the alarm is retried. */
static void alarm_cut(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_inc *m = w->actors[a].mem;
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
static void alarm_arrived(rt_world *w, uint32_t a, const rt_msg *msg) {
  rt_inc *m = w->actors[a].mem;
  sim_cancel(w->s, m->alarm_cut);
  m->cut_alarm_id = msg->id;
  m->alarm_cut = sim_after(w->s, w->cfg.alarm_limit_us, m->dom, alarm_cut, w, a);
}

int rt__alarm_handler_returned(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_inc *m = ac->mem;
  if (!m->alarm_active) return 0; /* the handler was cut at its time limit */
  sim_cancel(w->s, m->alarm_cut);
  int64_t fired = m->current_alarm.alarm_at;
  if (ac->alarm_at == fired) alarm_arm(w, a, -1); /* consumed */
  return 1;
}

void rt__alarm_handler_done(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_inc *m = ac->mem;
  if (ac->alarm_at < 0 && rt__stored_alarm(w, a) >= 0) rt__w_alarm(w, a, -1);
  m->alarm_active = 0;
  ac->alarm_retries = 0;
  rt__emit(w, RT_EV_ALARM_DONE, a, 1, 0, 0, NULL);
}

/* ---- messages --------------------------------------------------------- */

static void msg_arrive(sim *s, void *ctx, uint64_t idx);

/* Slots are reused once their message has arrived, so the pool holds the
** messages in flight, not every message of the run. (A message whose
** domain died never arrives and keeps its slot.) The slot index is only an
** event argument: reuse changes no order. */
static size_t msg_store(rt_world *w, const rt_msg *m) {
  if (w->n_msg_free) {
    size_t idx = w->msg_free[--w->n_msg_free];
    w->msgs[idx] = *m;
    return idx;
  }
  if (w->n_msgs == w->cap_msgs) {
    size_t nc = w->cap_msgs ? w->cap_msgs * 2 : 64;
    rt_msg *nm = realloc(w->msgs, nc * sizeof *nm);
    if (!nm) return SIZE_MAX;
    w->msgs = nm;
    w->cap_msgs = nc;
  }
  w->msgs[w->n_msgs] = *m;
  return w->n_msgs++;
}

void rt__deliver(rt_world *w, uint32_t to, const rt_msg *m, int64_t delay_us) {
  rt_msg c = *m;
  c.to = to;
  size_t idx = msg_store(w, &c);
  if (idx == SIZE_MAX) return;
  uint32_t dom = c.cls == RT_MC_REPLY || c.cls == RT_MC_NOTIFY ? c.from_dom : 0;
  sim_after(w->s, delay_us, dom, msg_arrive, w, idx);
}

static int64_t rpc_delay(rt_world *w) { return w->cfg.rpc_latency_us + w->rpc_extra_us; }

void rt__send_reply(rt_world *w, uint32_t from, const rt_msg *call, int ok,
                    int64_t value, int64_t delay_us) {
  rt_msg r = {0};
  r.kind = MSG_REPLY;
  r.cls = RT_MC_REPLY;
  r.id = call->id;
  r.from = from;
  r.from_dom = call->from_dom;
  r.arg = ok;
  r.arg2 = value;
  rt__deliver(w, call->from, &r, delay_us + rpc_delay(w));
}

static void reply_arrive(rt_world *w, const rt_msg *r) {
  rt_inc *m = w->actors[r->to].mem;
  rt_call *c = m ? rt__find_call(m, r->id) : NULL;
  if (!c) RT_PROBE(w, r->to, RT_PROBE_LATE_REPLY);
  if (!c) return;
  rt__emit(w, RT_EV_RPC_REPLY, r->to, r->id, r->arg, r->arg2, NULL);
  w->actors[r->to].cls->reply(w, r->to, c, (int)r->arg, r->arg2);
}

/* Requests come from clients (the workload); everything else is the
** platform (alarms) or another actor (calls, replies, run results). */
static int is_request(const rt_msg *m) { return m->cls == RT_MC_REQUEST; }

static void msg_arrive(sim *s, void *ctx, uint64_t idx) {
  rt_world *w = ctx;
  rt_msg m = w->msgs[idx];
  (void)s;
  if (w->n_msg_free == w->cap_msg_free) {
    size_t nc = w->cap_msg_free ? w->cap_msg_free * 2 : 64;
    size_t *nf = realloc(w->msg_free, nc * sizeof *nf);
    if (nf) {
      w->msg_free = nf;
      w->cap_msg_free = nc;
    }
  }
  if (w->n_msg_free < w->cap_msg_free) w->msg_free[w->n_msg_free++] = (size_t)idx;
  if (m.cls == RT_MC_REPLY) {
    reply_arrive(w, &m);
    return;
  }
  if (m.cls == RT_MC_NOTIFY) {
    if (w->actors[m.to].mem) w->actors[m.to].cls->notify(w, m.to, &m);
    return;
  }
  if (w->down_until_us > w->s->now_us && !w->actors[m.to].mem) { /* down_for */
    m.arrived_us = w->s->now_us;
    if (is_request(&m)) rt__emit(w, RT_EV_REQUEST_ARRIVE, m.to, m.id, m.entry, 0, NULL);
    rt__fail_msg(w, m.to, &m, RT_MSG_DOWN);
    return;
  }
  /* A failed commit broke the output gate and the actor's reset is due at
  ** this instant: an entry (request, alarm) reaches the next incarnation,
  ** never the broken one (#16: it ran recovery scans that could not write). */
  if (w->actors[m.to].mem && w->actors[m.to].mem->storage_broken) rt_kill_actor(w, m.to, RT_DEATH_STORAGE);
  if (!rt__wake(w, m.to, m.entry)) return;
  rt__touch(w, m.to);
  m.arrived_us = w->s->now_us;
  if (is_request(&m)) rt__emit(w, RT_EV_REQUEST_ARRIVE, m.to, m.id, m.entry, 0, NULL);
  if (m.cls == RT_MC_ALARM) alarm_arrived(w, m.to, &m);
  rt__handle(w, m.to, &m);
}

void rt__request_result(rt_world *w, uint32_t a, const rt_msg *m, int ok, const char *err,
                        const char *result) {
  int64_t lat = w->s->now_us - m->arrived_us;
  rt_inc *mem = w->actors[a].mem;
  if (ok && mem && mem->storage_broken) { /* the output gate holds the reply */
    RT_PROBE(w, a, RT_PROBE_REPLY_HELD);
    ok = 0;
    err = rt__death_message(RT_DEATH_STORAGE);
  }
  if (ok)
    rt__emit(w, RT_EV_REQUEST_OK, a, m->id, lat, 0, result);
  else
    rt__emit(w, RT_EV_REQUEST_FAIL, a, m->id, lat, 0, err);
}

void rt__request_done(rt_world *w, uint32_t a, const rt_msg *m, int ok, const char *err) {
  rt__request_result(w, a, m, ok, err, NULL);
}

void rt__send_call(rt_world *w, uint32_t from, uint32_t to, int kind, const char *method,
                   rt_entry entry, const rt_call *c, int64_t arg, int64_t arg2) {
  rt_msg m = {0};
  m.kind = kind;
  m.cls = RT_MC_CALL;
  m.entry = entry;
  m.id = c->id;
  m.from = from;
  m.from_dom = w->actors[from].mem->dom;
  m.arg = arg;
  m.arg2 = arg2;
  m.str = c->str;
  rt__emit(w, RT_EV_RPC_SEND, from, c->id, to, 0, method);
  if (w->rpc_drop_ppm && sim_rng_chance_ppm(&w->rng_rpc, w->rpc_drop_ppm)) {
    rt__emit_lit(w, RT_EV_FAULT, to, c->id, 0, 0, "rpc_drop");
    return;
  }
  rt__deliver(w, to, &m, rpc_delay(w));
}

/* A message that will never be handled: its sender learns it failed. */
void rt__fail_msg(rt_world *w, uint32_t a, const rt_msg *m, const char *err) {
  switch (m->cls) {
    case RT_MC_ALARM: rt__alarm_failed(w, a, m); break;
    case RT_MC_CALL: rt__send_reply(w, a, m, 0, 0, 0); break;
    case RT_MC_REQUEST: rt__request_done(w, a, m, 0, err); break;
    default: break;
  }
}

void rt__handle(rt_world *w, uint32_t a, const rt_msg *m) {
  rt_inc *mem = w->actors[a].mem;
  if (!mem) return;
  if (mem->gate_held || (rt__needs_init(m->entry) && mem->status != 2)) {
    rt__push_waiter(mem, m);
    if (!mem->gate_held && mem->status == 0) w->actors[a].cls->start(w, a, m->entry);
    return;
  }
  w->actors[a].cls->message(w, a, m);
}

/* ---- workload entry points -------------------------------------------- */

int rt__deliver_at(rt_world *w, uint32_t a, rt_msg *m, int64_t at_us) {
  if (a >= w->n_actors) return -1;
  m->id = rt__new_id(w);
  m->to = a;
  size_t idx = msg_store(w, m);
  if (idx == SIZE_MAX) return -1;
  return sim_at(w->s, at_us, 0, msg_arrive, w, idx) ? 0 : -1;
}

int rt_request_at(rt_world *w, uint32_t a, rt_entry entry, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_REQUEST;
  m.entry = entry;
  return rt__deliver_at(w, a, &m, at_us);
}

/* ---- fault doors and inspection --------------------------------------- */

void rt_fail_commits(rt_world *w, uint32_t a, int count) {
  if (a == RT_NO_ACTOR)
    w->fail_any_commits += count;
  else if (a < w->n_actors)
    w->actors[a].fail_commits += count;
}

void rt_set_rpc_faults(rt_world *w, int64_t extra_latency_us, uint32_t drop_ppm) {
  w->rpc_extra_us = extra_latency_us;
  w->rpc_drop_ppm = drop_ppm;
}

void rt_set_alarm_delay(rt_world *w, int64_t extra_us) { w->alarm_delay_us = extra_us; }

void rt_set_down(rt_world *w, int64_t until_us) {
  if (until_us > w->down_until_us) w->down_until_us = until_us;
}

void rt_lose_alarm(rt_world *w, uint32_t a) {
  for (uint32_t i = 0; i < w->n_actors; i++) {
    if (a != RT_NO_ACTOR && a != i) continue;
    rt_actor *ac = &w->actors[i];
    if (ac->alarm_at < 0 && rt__stored_alarm(w, i) < 0) continue;
    rt__db_alarm_drop(w, i);
    sim_cancel(w->s, ac->alarm_ev);
    ac->alarm_ev = 0;
    ac->alarm_at = -1;
  }
}

uint64_t rt_write_count(const rt_world *w) { return w->writes; }

void rt_on_write(rt_world *w, uint64_t k, void (*fn)(void *), void *ctx) {
  w->hook_k = k;
  w->hook_fn = fn;
  w->hook_ctx = ctx;
}

int64_t rt_alarm_of(rt_world *w, uint32_t a) {
  return a < w->n_actors ? w->actors[a].alarm_at : -1;
}
