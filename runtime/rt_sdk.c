/*
** rt_sdk.c: the synchronous SDK calls of user code (rt_sdk.h), over the
** agent SDK core. Each call acts in the current turn of the incarnation
** that made the handle; on a dead incarnation it does nothing and fails.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_agent.h"
#include "runtime/rt_sdk.h"

/* The incarnation of self if it still lives, else NULL. */
static rt_mem *live(const rt_sdk_actor *self) {
  return self && self->m && RT_MEM(self->w, self->a) == self->m ? self->m : NULL;
}

uint32_t rt_sdk_index(const rt_sdk_actor *self) { return self->a; }

const char *rt_sdk_id(const rt_sdk_actor *self) { return self->w->actors[self->a].spec.id; }

const char *rt_sdk_class(const rt_sdk_actor *self) { return self->w->actors[self->a].spec.cls; }

int rt_sdk_alive(const rt_sdk_actor *self) { return live(self) != NULL; }

int64_t rt_sdk_now_us(const rt_sdk_actor *self) { return self->w->s->now_us; }

uint64_t rt_sdk_random(rt_sdk_actor *self) {
  rt_agent_world *aw = RT_AW(self->w);
  if (self->a >= aw->n_user_rng) { /* streams of actors added since: made on first use */
    uint32_t n = self->w->n_actors;
    sim_rng *r = realloc(aw->user_rng, n * sizeof *r);
    unsigned char *made = realloc(aw->user_rng_made, n);
    if (r) aw->user_rng = r;
    if (made) aw->user_rng_made = made;
    if (!r || !made) return 0;
    memset(made + aw->n_user_rng, 0, n - aw->n_user_rng);
    aw->n_user_rng = n;
  }
  if (!aw->user_rng_made[self->a]) {
    char name[80];
    snprintf(name, sizeof name, "user.%s", rt_sdk_id(self));
    sim_rng_stream(&aw->user_rng[self->a], self->w->s->seed, name);
    aw->user_rng_made[self->a] = 1;
  }
  return sim_rng_next(&aw->user_rng[self->a]);
}

int64_t rt_sdk_current_fiber(const rt_sdk_actor *self) { return self->fiber; }

int64_t rt_sdk_run_fiber(rt_sdk_actor *self, const char *name, const char *snapshot) {
  if (!live(self) || !name || !*name) return -1;
  return rt__fiber_spawn(self->w, self->a, name, snapshot);
}

int rt_sdk_stash(rt_sdk_actor *self, int64_t fiber, const char *value, int via_this) {
  if (!live(self) || !value) return -1;
  if (!fiber) fiber = self->fiber;
  if (!fiber || !rt__fiber_find(self->m, fiber)) return -1; /* RT_MSG_STASH_OUTSIDE */
  return rt__w_stash_value(self->w, self->a, fiber, value, via_this);
}

int rt_sdk_snapshot(rt_sdk_actor *self, int64_t fiber, char *buf, size_t n) {
  if (!live(self) || !buf || n == 0) return -1;
  if (!fiber) fiber = self->fiber;
  rt__fiber_snapshot(self->w, self->a, fiber, buf, n);
  sim_emit(self->w->s, RT_EV_FIBER_READ, self->a, fiber, -1, 0, rt__str(self->w, buf), 0);
  return 0;
}

int64_t rt_sdk_keepalive(rt_sdk_actor *self) {
  char name[32];
  if (!live(self)) return -1;
  int64_t lease = rt__new_id(self->w);
  snprintf(name, sizeof name, "lease-%lld", (long long)lease);
  return rt__keepalive_lease(self->w, self->a, rt__str(self->w, name), 1) ? -1 : lease;
}

int rt_sdk_keepalive_dispose(rt_sdk_actor *self, int64_t lease) {
  char name[32];
  if (!live(self)) return -1;
  snprintf(name, sizeof name, "lease-%lld", (long long)lease);
  return rt__keepalive_lease(self->w, self->a, rt__str(self->w, name), 0);
}

int64_t rt_sdk_schedule_with(rt_sdk_actor *self, const char *callback, const rt_sdk_when *when,
                             const char *payload, int idempotent, int *created, char *err,
                             size_t n_err) {
  char scratch[160];
  if (!err || !n_err) {
    err = scratch;
    n_err = sizeof scratch;
  }
  err[0] = '\0';
  if (created) *created = 0;
  if (!live(self)) {
    snprintf(err, n_err, "the actor is gone");
    return -1;
  }
  if (!callback || !*callback || strlen(callback) >= 48 || !when) {
    snprintf(err, n_err, "schedule: a callback name of 1 to 47 bytes is required");
    return -1;
  }
  if (payload && strlen(payload) >= RT_SCHED_PAYLOAD) {
    snprintf(err, n_err, "schedule: the payload is longer than %d bytes", RT_SCHED_PAYLOAD - 1);
    return -1;
  }
  if (when->cron && strlen(when->cron) >= 64) {
    snprintf(err, n_err, "schedule: the cron expression is longer than 63 bytes");
    return -1;
  }
  if (when->interval_us < 0 || when->delay_us < 0 ||
      (when->interval_us > 0 && when->interval_us > 30LL * 86400 * 1000000)) {
    /* scheduleEvery: 0 < sec <= 30 days (A.10) */
    snprintf(err, n_err, "schedule: the delay or interval is out of range");
    return -1;
  }
  rt_sched_req q = {.delay_us = when->delay_us, .interval_us = when->interval_us,
                    .cron = when->cron, .payload = payload && *payload ? payload : NULL,
                    .idempotent = idempotent < 0 ? -1 : idempotent != 0};
  return rt__schedule_with(self->w, self->a, callback, &q, created, err, n_err);
}

int64_t rt_sdk_schedule(rt_sdk_actor *self, int64_t delay_us, const char *callback,
                        const char *payload) {
  rt_sdk_when when = {delay_us, 0, NULL};
  return rt_sdk_schedule_with(self, callback, &when, payload, -1, NULL, NULL, 0);
}

int64_t rt_sdk_schedule_every(rt_sdk_actor *self, int64_t interval_us, const char *callback,
                              const char *payload) {
  rt_sdk_when when = {0, interval_us, NULL};
  if (interval_us <= 0) return -1;
  return rt_sdk_schedule_with(self, callback, &when, payload, -1, NULL, NULL, 0);
}

int64_t rt_sdk_schedule_cron(rt_sdk_actor *self, const char *cron, const char *callback,
                             const char *payload, char *err, size_t n_err) {
  rt_sdk_when when = {0, 0, cron};
  if (!cron || !*cron) {
    if (err && n_err) snprintf(err, n_err, "schedule: a cron expression is required");
    return -1;
  }
  return rt_sdk_schedule_with(self, callback, &when, payload, -1, NULL, err, n_err);
}

int rt_sdk_cancel_schedule(rt_sdk_actor *self, const char *callback) {
  if (!live(self) || !callback) return -1;
  return rt__schedule_cancel(self->w, self->a, callback);
}

int rt_sdk_cancel_schedule_id(rt_sdk_actor *self, int64_t id) {
  if (!live(self)) return -1;
  return rt__schedule_cancel_id(self->w, self->a, id);
}

int rt_sdk_schedule_payload(rt_sdk_actor *self, char *buf, size_t n) {
  rt_mem *m = live(self);
  if (!m || m->due_idx >= m->n_due || !buf || !n) return -1;
  snprintf(buf, n, "%s", m->due[m->due_idx].payload[0] ? m->due[m->due_idx].payload : "null");
  return 0;
}

int rt_sdk_schedule_attempt(const rt_sdk_actor *self) {
  const rt_mem *m = live(self);
  return m && m->due_idx < m->n_due ? m->sched_attempt : 0;
}

void rt_sdk_effect(rt_sdk_actor *self, const char *name, const char *key) {
  char text[RT_STEP_TEXT + 64];
  if (!live(self) || !name) return;
  snprintf(text, sizeof text, "%s%s%s", name, key && *key ? ":" : "", key ? key : "");
  rt__emit(self->w, RT_EV_EFFECT, self->a, self->fiber, -1, 0, text);
}

/* ---- chat (issue #15): reached through the chat model's registration ---- */

rt_model_calls rt__model_calls;

int rt_sdk_continue_last_turn(rt_sdk_actor *self) {
  if (!live(self) || !rt__model_calls.continue_last_turn) return -1;
  return rt__model_calls.continue_last_turn(self->w, self->a);
}

int64_t rt_sdk_save_messages(rt_sdk_actor *self, const char *text) {
  if (!live(self) || !text || !*text || !rt__model_calls.save_messages) return -1;
  return rt__model_calls.save_messages(self->w, self->a, text);
}

int rt_sdk_chat_cancel(rt_sdk_actor *self) {
  if (!live(self) || !rt__model_calls.chat_cancel) return -1;
  return rt__model_calls.chat_cancel(self->w, self->a);
}

/* ---- tool runs (issue #15) ------------------------------------------------ */

int rt_sdk_abort_agent_tool(rt_sdk_actor *self, int64_t run) {
  if (!live(self) || !rt__model_calls.abort_tool_run) return -1;
  return rt__model_calls.abort_tool_run(self->w, self->a, run, "hook");
}

int rt_sdk_open_agent_tools(rt_sdk_actor *self, int64_t *out, int cap) {
  if (!live(self) || !out || cap < 0 || !rt__model_calls.open_tool_runs) return -1;
  return rt__model_calls.open_tool_runs(self->w, self->a, out, cap);
}

int64_t rt_sdk_run_agent_tool(rt_sdk_actor *self, uint32_t child, const rt_sdk_tool_opts *opts,
                              int *status) {
  int dummy;
  if (!status) status = &dummy;
  *status = -1;
  if (!live(self) || !opts || child >= self->w->n_actors || child == self->a ||
      opts->run_id < 0 || opts->run_id > RT_SDK_MAX_RUN_ID || opts->work_us < 0 ||
      !rt__model_calls.run_tool)
    return -1;
  return rt__model_calls.run_tool(self->w, self->a, child, opts->work_us, opts->run_id, status);
}

int rt_sdk_agent_tool_status(rt_sdk_actor *self, int64_t run, char *err, size_t n) {
  if (err && n) err[0] = '\0';
  if (!live(self) || !err || !n || !rt__model_calls.tool_info) return -1;
  return rt__model_calls.tool_info(self->w, self->a, run, err, n);
}
