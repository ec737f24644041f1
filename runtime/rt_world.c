/*
** rt_world.c: the actor host (a Durable Object platform model).
**
** Follows seed 003 (input gate, 30 s ceiling and reset, entry points) and
** reference/agents-sdk.md A.2: incarnations, message delivery through the
** input gate, waiters, idle eviction (70–140 s), deaths. An actor's memory
** (rt_mem) lives in its own sim cancellation domain, so when it dies every
** pending timer, commit and reply addressed to it vanishes with it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

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
  c->commit = RT_COMMIT_TURN;
  c->fiber_max_age_us = 24LL * 3600 * 1000000;  /* fiberRecoveryMaxAgeMs: 24 h */
  c->recovery_backoff_max_us = 5LL * 60 * 1000000; /* FIBER_RECOVERY_MAX_BACKOFF_MS */
  c->retain = RT_RETAIN_NONE;
}

/* One simulation is one thread (DESIGN.md rule 1), so SQLite's mutexes
** and memory statistics are pure cost. Must run before SQLite starts; a
** later call is refused by SQLite, harmlessly. */
static void sqlite_single_thread(void) {
  static int done;
  if (done) return;
  done = 1;
  sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

rt_world *rt_world_new(sim *s, const rt_config *cfg) {
  sqlite_single_thread();
  rt_store_module *mods[] = {&rt__agent_store, &rt__toolrun_store, &rt__legacy_store,
                             &rt__exec_store, &rt__thread_store, &rt__chat_store,
                             &rt__lua_store};
  for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
    if (rt__store_register(mods[i])) return NULL;
  rt_world *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->s = s;
  w->cfg = *cfg;
  w->next_id = 1;
  sim_rng_stream(&w->rng_idle, s->seed, "runtime.idle");
  sim_rng_stream(&w->rng_work, s->seed, "runtime.work");
  sim_rng_stream(&w->rng_rpc, s->seed, "runtime.rpc");
  return w;
}

static void mem_free(rt_mem *m) {
  if (!m) return;
  free(m->waiters);
  free(m->serving);
  free(m->fibers);
  free(m->calls);
  rt__chat_mem_free(m); /* chat turns (seed 000 Layer 3) */
  rt__lg_mem_free(m);   /* the script's Lua state dies with the incarnation */
  free(m);
}

void rt_world_free(rt_world *w) {
  if (!w) return;
  for (uint32_t i = 0; i < w->n_actors; i++) {
    rt_actor *ac = &w->actors[i];
    if (ac->store.txn_open) sqlite3_exec(ac->store.db, "ROLLBACK", NULL, NULL, NULL); /* run ended mid-turn */
    rt__db_close(&ac->store);
    rt__scan_free(ac);
    mem_free(ac->mem);
  }
  rt__exec_free(w);   /* executor (seed 002) */
  rt__thread_free(w); /* thread store (seed 004) */
  rt__chat_world_free(w); /* chat (seed 000 Layer 3) */
  rt__lg_world_free(w);   /* scripts (after the connections their SQL sandboxes use) */
  for (int i = 0; i < w->n_progs; i++) free(w->progs[i].steps);
  free(w->progs);
  free(w->hook_calls);
  free(w->onstart_throws_left);
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

int rt__push_waiter(rt_mem *m, const rt_msg *msg) {
  return push((void **)&m->waiters, &m->n_waiters, &m->cap_waiters, sizeof *msg, msg);
}

int rt__push_serving(rt_mem *m, const rt_msg *msg) {
  return push((void **)&m->serving, &m->n_serving, &m->cap_serving, sizeof *msg, msg);
}

int rt__take_waiter(rt_mem *m, int64_t id, rt_msg *out) {
  for (int i = 0; i < m->n_waiters; i++) {
    if (m->waiters[i].id != id) continue;
    *out = m->waiters[i];
    memmove(&m->waiters[i], &m->waiters[i + 1], (size_t)(m->n_waiters - i - 1) * sizeof *out);
    m->n_waiters--;
    return 1;
  }
  return 0;
}

int rt__pop_serving(rt_mem *m, int64_t id, rt_msg *out) {
  for (int i = 0; i < m->n_serving; i++) {
    if (m->serving[i].id != id) continue;
    *out = m->serving[i];
    memmove(&m->serving[i], &m->serving[i + 1], (size_t)(m->n_serving - i - 1) * sizeof *out);
    m->n_serving--;
    return 1;
  }
  return 0;
}

rt_call *rt__new_call(rt_world *w, uint32_t a, rt_call_purpose p, int64_t key,
                      uint32_t callee) {
  rt_mem *m = w->actors[a].mem;
  rt_call c = {rt__new_id(w), p, key, callee, w->s->now_us, 0, 1, 0};
  for (int i = 0; i < m->n_calls; i++)
    if (!m->calls[i].live) {
      m->calls[i] = c;
      return &m->calls[i];
    }
  if (push((void **)&m->calls, &m->n_calls, &m->cap_calls, sizeof c, &c)) return NULL;
  return &m->calls[m->n_calls - 1];
}

rt_call *rt__find_call(rt_mem *m, int64_t id) {
  for (int i = 0; i < m->n_calls; i++)
    if (m->calls[i].live && m->calls[i].id == id) return &m->calls[i];
  return NULL;
}

/* ---- incarnations ----------------------------------------------------- */

static void idle_check(sim *s, void *ctx, uint64_t arg);

static void idle_arm(rt_world *w, uint32_t a, int64_t at) {
  rt_mem *m = w->actors[a].mem;
  m->idle_timer = sim_at(w->s, at, m->dom, idle_check, w, a);
}

rt_mem *rt__wake(rt_world *w, uint32_t a, rt_entry entry) {
  rt_actor *ac = &w->actors[a];
  if (ac->mem) return ac->mem;
  rt_mem *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->dom = sim_domain_new(w->s);
  m->incarnation = ++ac->next_incarnation;
  m->last_activity = w->s->now_us;
  m->idle_timeout = sim_rng_range(&w->rng_idle, w->cfg.idle_min_us, w->cfg.idle_max_us);
  ac->mem = m;
  if (entry == RT_ENTRY_ALARM &&
      (w->cfg.workerd_name_bug || ac->spec.on_start_throws == RT_THROW_UNTIL_FRESH_REQUEST))
    ac->poisoned = 1;
  rt__emit(w, RT_EV_ACTOR_WAKE, a, m->incarnation, entry, 0, ac->spec.cls);
  idle_arm(w, a, w->s->now_us + m->idle_timeout);
  return m;
}

void rt__touch(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  if (m) m->last_activity = w->s->now_us;
}

static int busy(const rt_mem *m) {
  return m->gate_held || m->waituntil > 0 || m->n_waiters > 0 || m->n_serving > 0 ||
         m->status == 1;
}

static void idle_check(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_mem *m = w->actors[a].mem;
  int64_t due = m->last_activity + m->idle_timeout;
  if (busy(m)) {
    idle_arm(w, a, s->now_us + m->idle_timeout);
  } else if (s->now_us < due) {
    idle_arm(w, a, due);
  } else {
    rt_kill_actor(w, a, RT_DEATH_IDLE);
  }
}

static const char *death_message(rt_death_cause cause) {
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
  rt_mem *m = ac->mem;
  if (!m) return;
  rt__callbacks_cut(w, a, m, cause);
  if (ac->store.txn_open) RT_PROBE(w, a, RT_PROBE_COMMIT_WINDOW_DEATH);
  rt__rollback(w, a, rt_death_name(cause));
  sim_domain_kill(w->s, m->dom);
  ac->mem = NULL;
  rt__emit(w, RT_EV_ACTOR_DEATH, a, cause, m->incarnation, 0, NULL);
  const char *err = death_message(cause);
  if (m->n_waiters > 0) RT_PROBE(w, a, RT_PROBE_WAITERS_FAILED);
  for (int i = 0; i < m->n_waiters; i++) rt__fail_msg(w, a, &m->waiters[i], err);
  for (int i = 0; i < m->n_serving; i++) rt__fail_msg(w, a, &m->serving[i], err);
  if (m->alarm_active) RT_PROBE(w, a, RT_PROBE_ALARM_CUT);
  if (m->alarm_active) rt__alarm_failed(w, a, &m->current_alarm);
  if (cause == RT_DEATH_IDLE) rt__db_park(w, &ac->store);
  mem_free(m);
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

int rt_keepalive_refs(const rt_world *w, uint32_t a) {
  return rt_actor_alive(w, a) ? w->actors[a].mem->refs : 0;
}

/* ---- the input gate --------------------------------------------------- */

static void gate_timeout(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_mem *m = w->actors[a].mem;
  rt__emit(w, RT_EV_GATE_TIMEOUT, a, s->now_us - m->gate_since, w->cfg.gate_ceiling_us, 0,
           RT_MSG_GATE_RESET);
  rt_kill_actor(w, a, RT_DEATH_GATE_RESET);
}

void rt__gate_acquire(rt_world *w, uint32_t a, const char *purpose) {
  rt_mem *m = w->actors[a].mem;
  m->gate_held = 1;
  m->gate_since = w->s->now_us;
  rt__emit(w, RT_EV_GATE_ACQUIRE, a, m->incarnation, 0, 0, purpose);
  m->gate_timer = sim_after(w->s, w->cfg.gate_ceiling_us, m->dom, gate_timeout, w, a);
}

void rt__gate_release(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  if (!m->gate_held) return;
  sim_cancel(w->s, m->gate_timer);
  m->gate_held = 0;
  rt__emit(w, RT_EV_GATE_RELEASE, a, w->s->now_us - m->gate_since, 0, 0, NULL);
}

/* Hands every held message to the actor again, in arrival order. */
void rt__drain_waiters(rt_world *w, uint32_t a) {
  rt_mem *m = w->actors[a].mem;
  while (m && m->n_waiters > 0 && !m->gate_held) {
    rt_msg msg = m->waiters[0];
    memmove(&m->waiters[0], &m->waiters[1], (size_t)(m->n_waiters - 1) * sizeof msg);
    m->n_waiters--;
    rt__handle(w, a, &msg);
    m = w->actors[a].mem;
    if (m && m->status != 2 && m->n_waiters > 0) break;
  }
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
  uint32_t dom = c.kind == MSG_REPLY || c.kind == MSG_RUN_DONE ? c.from_dom : 0;
  sim_after(w->s, delay_us, dom, msg_arrive, w, idx);
}

static int64_t rpc_delay(rt_world *w) { return w->cfg.rpc_latency_us + w->rpc_extra_us; }

void rt__send_reply(rt_world *w, uint32_t from, const rt_msg *call, int ok,
                    int64_t value, int64_t delay_us) {
  rt_msg r = {0};
  r.kind = MSG_REPLY;
  r.id = call->id;
  r.from = from;
  r.from_dom = call->from_dom;
  r.arg = ok;
  r.arg2 = value;
  rt__deliver(w, call->from, &r, delay_us + rpc_delay(w));
}

static void reply_arrive(rt_world *w, const rt_msg *r) {
  rt_mem *m = w->actors[r->to].mem;
  rt_call *c = m ? rt__find_call(m, r->id) : NULL;
  if (!c) RT_PROBE(w, r->to, RT_PROBE_LATE_REPLY);
  if (!c) return;
  rt__emit(w, RT_EV_RPC_REPLY, r->to, r->id, r->arg, r->arg2, NULL);
  if (c->purpose == CALL_FIBER_STEP)
    rt__fiber_reply(w, r->to, c, (int)r->arg);
  else if (c->purpose == CALL_LUA)
    rt__lg_reply(w, r->to, c, (int)r->arg, r->arg2);
  else
    rt__toolrun_reply(w, r->to, c, (int)r->arg, r->arg2);
}

/* Requests come from clients (the workload); everything else is the
** platform (alarms) or another actor (calls, replies, run results). */
static int is_request(const rt_msg *m) {
  switch (m->kind) {
    case MSG_ALARM:
    case MSG_CALL_INSPECT:
    case MSG_CALL_START:
    case MSG_CALL_PLAIN:
    case MSG_CALL_ATTACH:
    case MSG_LUA_CALL:
    case MSG_RUN_DONE:
    case MSG_REPLY: return 0;
    default: return 1;
  }
}

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
  if (m.kind == MSG_REPLY) {
    reply_arrive(w, &m);
    return;
  }
  if (m.kind == MSG_RUN_DONE) {
    if (w->actors[m.to].mem) rt__toolrun_run_done(w, m.to, &m);
    return;
  }
  if (!rt__wake(w, m.to, m.entry)) return;
  rt__touch(w, m.to);
  m.arrived_us = w->s->now_us;
  if (is_request(&m)) rt__emit(w, RT_EV_REQUEST_ARRIVE, m.to, m.id, m.entry, 0, NULL);
  if (m.kind == MSG_ALARM) rt__alarm_arrived(w, m.to, &m);
  rt__handle(w, m.to, &m);
}

void rt__request_result(rt_world *w, uint32_t a, const rt_msg *m, int ok, const char *err,
                        const char *result) {
  int64_t lat = w->s->now_us - m->arrived_us;
  rt_mem *mem = w->actors[a].mem;
  if (ok && mem && mem->storage_broken) { /* the output gate holds the reply */
    RT_PROBE(w, a, RT_PROBE_REPLY_HELD);
    ok = 0;
    err = death_message(RT_DEATH_STORAGE);
  }
  if (ok)
    rt__emit(w, RT_EV_REQUEST_OK, a, m->id, lat, 0, result);
  else
    rt__emit(w, RT_EV_REQUEST_FAIL, a, m->id, lat, 0, err);
}

void rt__request_done(rt_world *w, uint32_t a, const rt_msg *m, int ok, const char *err) {
  rt__request_result(w, a, m, ok, err, NULL);
}

void rt__send_call(rt_world *w, uint32_t from, uint32_t to, rt_msg_kind kind,
                   const rt_call *c, int64_t arg, int64_t arg2) {
  static const char *const method[] = {[MSG_CALL_INSPECT] = "inspectAgentToolRun",
                                       [MSG_CALL_START] = "startAgentToolRun",
                                       [MSG_CALL_ATTACH] = "tailAgentToolRun",
                                       [MSG_CALL_PLAIN] = "rpc", [MSG_LUA_CALL] = NULL};
  char mname[64];
  rt_msg m = {0};
  m.kind = kind;
  m.entry = kind == MSG_CALL_PLAIN || kind == MSG_LUA_CALL ? RT_ENTRY_RPC : RT_ENTRY_FACET_INIT;
  m.id = c->id;
  m.from = from;
  m.from_dom = w->actors[from].mem->dom;
  m.arg = arg;
  m.arg2 = arg2;
  m.str = c->str;
  /* a script's call names its method (copied: interning may move the table) */
  snprintf(mname, sizeof mname, "%s",
           kind == MSG_LUA_CALL ? sim_trace_str(&w->s->trace, c->str) : method[kind]);
  rt__emit(w, RT_EV_RPC_SEND, from, c->id, to, 0, mname);
  if (w->rpc_drop_ppm && sim_rng_chance_ppm(&w->rng_rpc, w->rpc_drop_ppm)) {
    rt__emit(w, RT_EV_FAULT, to, c->id, 0, 0, "rpc_drop");
    return;
  }
  rt__deliver(w, to, &m, rpc_delay(w));
}

/* A message that will never be handled: its sender learns it failed. */
void rt__fail_msg(rt_world *w, uint32_t a, const rt_msg *m, const char *err) {
  switch (m->kind) {
    case MSG_ALARM: rt__alarm_failed(w, a, m); break;
    case MSG_CALL_INSPECT:
    case MSG_CALL_START:
    case MSG_CALL_ATTACH:
    case MSG_LUA_CALL:
    case MSG_CALL_PLAIN: rt__send_reply(w, a, m, 0, 0, 0); break;
    default:
      if (is_request(m)) rt__request_done(w, a, m, 0, err);
      break;
  }
}

static void serve_done(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  int64_t id = (int64_t)(arg & ((1ULL << 40) - 1));
  rt_msg m;
  (void)s;
  if (rt__pop_serving(w->actors[a].mem, id, &m)) rt__request_done(w, a, &m, 1, NULL);
}

static void serve_request(rt_world *w, uint32_t a, const rt_msg *m) {
  int64_t t = w->actors[a].spec.serve_us;
  if (t <= 0) {
    rt__request_done(w, a, m, 1, NULL);
    return;
  }
  rt__push_serving(w->actors[a].mem, m);
  sim_after(w->s, t, w->actors[a].mem->dom, serve_done, w,
            ((uint64_t)a << 40) | (uint64_t)m->id);
}

void rt__handle(rt_world *w, uint32_t a, const rt_msg *m) {
  rt_mem *mem = w->actors[a].mem;
  if (!mem) return;
  if (mem->gate_held || (rt__needs_init(m->entry) && mem->status != 2)) {
    rt__push_waiter(mem, m);
    if (!mem->gate_held && mem->status == 0) rt__startup_begin(w, a, m->entry);
    return;
  }
  switch (m->kind) {
    case MSG_REQUEST: serve_request(w, a, m); break;
    case MSG_FIBER:
      if (m->arg2) { /* awaited: answered when the body ends (rt_agent.c) */
        rt__fiber_start_awaited(w, a, (int)m->arg, m);
        break;
      }
      rt__fiber_start(w, a, (int)m->arg, 0, 0);
      rt__request_done(w, a, m, 1, NULL);
      break;
    case MSG_KEEPALIVE_ACQUIRE:
    case MSG_KEEPALIVE_DISPOSE: rt__keepalive_lease_request(w, a, m); break; /* rt_agent.c */
    case MSG_STASH_OUTSIDE: /* SDK Agent.stash(): no fiber in the async context */
      rt__request_done(w, a, m, 0, RT_MSG_STASH_OUTSIDE);
      break;
    case MSG_TOOLRUN: rt__toolrun_request(w, a, m); break;
    case MSG_TOOL_RECOVERY: rt__toolrun_recovery_request(w, a, m); break; /* rt_toolrun.c */
    case MSG_LEGACY_SPAWN:
    case MSG_LEGACY_CANCEL: rt__legacy_request(w, a, m); break; /* rt_legacy.c */
    case MSG_EXEC_TURN: rt__exec_request(w, a, m); break;       /* rt_executor.c */
    case MSG_THREAD_WRITER: rt__thread_request(w, a, m); break; /* rt_thread.c */
    case MSG_CHAT: rt__chat_request(w, a, m); break;            /* rt_chat.c */
    case MSG_SCHEDULE:
    case MSG_CANCEL_SCHEDULE:
    case MSG_KEEPALIVE_WHILE: rt__schedule_request(w, a, m); break; /* rt_agent.c */
    case MSG_ALARM: rt__alarm_handle(w, a, m); break;
    case MSG_CALL_INSPECT:
    case MSG_CALL_START:
    case MSG_CALL_ATTACH:
    case MSG_CALL_PLAIN: rt__child_handle(w, a, m); break;
    case MSG_LUA_INVOKE:
    case MSG_LUA_CALL: rt__lg_request(w, a, m); break; /* rt_luaagent.c */
    default: break;
  }
}

/* ---- workload entry points -------------------------------------------- */

static int deliver_at(rt_world *w, uint32_t a, rt_msg *m, int64_t at_us) {
  if (a >= w->n_actors) return -1;
  m->id = rt__new_id(w);
  m->to = a;
  size_t idx = msg_store(w, m);
  if (idx == SIZE_MAX) return -1;
  return sim_at(w->s, at_us, 0, msg_arrive, w, idx) ? 0 : -1;
}

int rt_invoke_at(rt_world *w, uint32_t a, const char *method, const char *args_json,
                 int64_t at_us) {
  rt_msg m = {0};
  if (!method || !*method) return -1;
  m.kind = MSG_LUA_INVOKE;
  m.entry = RT_ENTRY_FETCH;
  m.str = rt__str(w, method);
  m.arg = args_json ? rt__str(w, args_json) : 0;
  return deliver_at(w, a, &m, at_us);
}

int rt_request_at(rt_world *w, uint32_t a, rt_entry entry, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_REQUEST;
  m.entry = entry;
  return deliver_at(w, a, &m, at_us);
}

static int prog_add(rt_world *w, const rt_program *p) {
  int found = rt__prog_find(w, p->name);
  if (found >= 0) return found;
  if (w->n_progs == w->cap_progs) {
    int nc = w->cap_progs ? w->cap_progs * 2 : 8;
    rt_program *np = realloc(w->progs, (size_t)nc * sizeof *np);
    if (!np) return -1;
    w->progs = np;
    w->cap_progs = nc;
  }
  rt_program *c = &w->progs[w->n_progs];
  *c = *p;
  c->steps = malloc((size_t)(p->n_steps ? p->n_steps : 1) * sizeof *p->steps);
  if (!c->steps) return -1;
  memcpy(c->steps, p->steps, (size_t)p->n_steps * sizeof *p->steps);
  return w->n_progs++;
}

int rt_fiber_at(rt_world *w, uint32_t a, const rt_program *prog, int64_t at_us) {
  int idx = prog_add(w, prog);
  if (idx < 0) return -1;
  rt_msg m = {0};
  m.kind = MSG_FIBER;
  m.entry = RT_ENTRY_FETCH;
  m.arg = idx;
  return deliver_at(w, a, &m, at_us);
}

void rt_onstart_throws(rt_world *w, uint32_t a, int count) {
  if (!w->onstart_throws_left) {
    w->onstart_throws_left = calloc(w->n_actors ? w->n_actors : 1, sizeof(int));
    if (!w->onstart_throws_left) return;
  }
  for (uint32_t i = 0; i < w->n_actors; i++)
    if (a == RT_NO_ACTOR || a == i) w->onstart_throws_left[i] = count;
}

int rt_fiber_awaited_at(rt_world *w, uint32_t a, const rt_program *prog, int64_t at_us) {
  int idx = prog_add(w, prog);
  if (idx < 0) return -1;
  rt_msg m = {0};
  m.kind = MSG_FIBER;
  m.entry = RT_ENTRY_FETCH;
  m.arg = idx;
  m.arg2 = 1;
  return deliver_at(w, a, &m, at_us);
}

int rt_stash_outside_at(rt_world *w, uint32_t a, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_STASH_OUTSIDE;
  m.entry = RT_ENTRY_FETCH;
  return deliver_at(w, a, &m, at_us);
}

int rt_toolrun_at(rt_world *w, uint32_t parent, uint32_t child, int64_t work_us,
                  int64_t at_us) {
  if (child >= w->n_actors) return -1;
  rt_msg m = {0};
  m.kind = MSG_TOOLRUN;
  m.entry = RT_ENTRY_FETCH;
  m.arg = child;
  m.arg2 = work_us;
  return deliver_at(w, parent, &m, at_us);
}

int rt_schedule_at(rt_world *w, uint32_t a, const char *callback, int64_t delay_us,
                   int64_t interval_us, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_SCHEDULE;
  m.entry = RT_ENTRY_FETCH;
  m.arg = delay_us;
  m.arg2 = interval_us;
  m.str = rt__str(w, callback);
  return m.str ? deliver_at(w, a, &m, at_us) : -1;
}

int rt_cancel_schedule_at(rt_world *w, uint32_t a, const char *callback, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_CANCEL_SCHEDULE;
  m.entry = RT_ENTRY_FETCH;
  m.str = rt__str(w, callback);
  return m.str ? deliver_at(w, a, &m, at_us) : -1;
}

int rt_keepalive_while_at(rt_world *w, uint32_t a, int64_t hold_us, int64_t at_us) {
  rt_msg m = {0};
  m.kind = MSG_KEEPALIVE_WHILE;
  m.entry = RT_ENTRY_FETCH;
  m.arg = hold_us;
  return deliver_at(w, a, &m, at_us);
}

static int lease_at(rt_world *w, uint32_t a, rt_msg_kind kind, const char *lease,
                    int64_t at_us) {
  rt_msg m = {0};
  if (!lease || !*lease) return -1;
  m.kind = kind;
  m.entry = RT_ENTRY_FETCH;
  m.str = rt__str(w, lease);
  return deliver_at(w, a, &m, at_us);
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
  return deliver_at(w, a, &m, at_us);
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

int64_t rt_seed_stale_toolrun(rt_world *w, uint32_t parent, uint32_t child,
                              rt_toolrun_status status, int child_status) {
  if (parent >= w->n_actors || child >= w->n_actors) return -1;
  int64_t run = rt__new_id(w);
  if (rt__w_toolrun_insert(w, parent, run, child, status)) return -1;
  rt__emit(w, RT_EV_TOOLRUN_INSERT, parent, run, child, status, w->actors[child].spec.cls);
  if (child_status && rt__w_child_run(w, child, run, child_status)) return -1;
  return run;
}

/* ---- fault doors and inspection --------------------------------------- */

void rt_set_stuck(rt_world *w, uint32_t a, rt_stuck mode, int64_t delay_us) {
  if (a >= w->n_actors) return;
  w->actors[a].spec.stuck = mode;
  w->actors[a].spec.stuck_delay_us = delay_us;
}

void rt_set_onstart_us(rt_world *w, uint32_t a, int64_t us) {
  if (a < w->n_actors) w->actors[a].spec.on_start_us = us;
}

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

uint64_t rt_write_count(const rt_world *w) { return w->writes; }

void rt_on_write(rt_world *w, uint64_t k, void (*fn)(void *), void *ctx) {
  w->hook_k = k;
  w->hook_fn = fn;
  w->hook_ctx = ctx;
}

int rt_count_fiber_rows(rt_world *w, uint32_t a) {
  return a < w->n_actors ? rt__count_runs(w, a) : -1;
}

int rt_toolrun_status_of(rt_world *w, uint32_t parent, int64_t run) {
  return parent < w->n_actors ? rt__toolrun_get(w, parent, run, NULL) : -1;
}

int64_t rt_alarm_of(rt_world *w, uint32_t a) {
  return a < w->n_actors ? w->actors[a].alarm_at : -1;
}

/* ---- doors for rt_legacy.c (legacy fibers, seed 001) ------------------ */

int rt__prog_add(rt_world *w, const rt_program *p) { return prog_add(w, p); }

int rt_program_register(rt_world *w, const rt_program *prog) { return prog_add(w, prog); }

int rt__deliver_at(rt_world *w, uint32_t a, rt_msg *m, int64_t at_us) {
  return deliver_at(w, a, m, at_us);
}
