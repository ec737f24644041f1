/*
** sim.c: clock, scheduler strategies, cancellation domains and the run
** loop. See sim.h for the ordering rule.
*/
#include "sim.h"

#include <stdlib.h>
#include <string.h>

static int domains_grow(sim *s) {
  uint32_t nc = s->domain_cap ? s->domain_cap * 2 : 64;
  uint32_t *g = realloc(s->domain_gen, nc * sizeof *g);
  if (!g) return -1;
  s->domain_gen = g;
  uint64_t *p = realloc(s->domain_prio, nc * sizeof *p);
  if (!p) return -1;
  s->domain_prio = p;
  s->domain_cap = nc;
  return 0;
}

static void pct_plan(sim *s, int depth, uint64_t steps) {
  s->pct_n_changes = depth - 1;
  for (int i = 0; i < s->pct_n_changes; i++)
    s->pct_change_at[i] = 1 + sim_rng_below(&s->sched_rng, steps);
  s->pct_low_next = UINT64_MAX - (uint64_t)SIM_PCT_MAX_CHANGES;
}

int sim_init(sim *s, const sim_config *cfg) {
  memset(s, 0, sizeof *s);
  if (cfg->strategy == SIM_PCT &&
      (cfg->pct_depth < 1 || cfg->pct_depth > SIM_PCT_MAX_CHANGES + 1))
    return -1;
  s->seed = cfg->seed;
  s->strategy = cfg->strategy;
  sim_rng_stream(&s->sched_rng, cfg->seed, "scheduler");
  if (sim_queue_init(&s->queue) || sim_trace_init(&s->trace) ||
      domains_grow(s)) {
    sim_free(s);                /* nothing half-made is left behind */
    return -1;
  }
  if (cfg->strategy == SIM_PCT)
    pct_plan(s, cfg->pct_depth, cfg->pct_steps ? cfg->pct_steps : 10000);
  s->domain_gen[0] = 0;
  s->domain_prio[0] = sim_rng_next(&s->sched_rng) >> 1;
  s->n_domains = 1;
  return 0;
}

void sim_free(sim *s) {
  sim__queue_release(&s->queue); /* zeroed below */
  sim_trace_free(&s->trace);
  free(s->domain_gen);
  free(s->domain_prio);
  memset(s, 0, sizeof *s);
}

uint32_t sim_domain_new(sim *s) {
  if (s->n_domains == s->domain_cap && domains_grow(s)) return 0;
  uint32_t d = s->n_domains++;
  s->domain_gen[d] = 0;
  /* Drawn for every strategy so that choosing pct does not shift other
  ** draws of the scheduler stream relative to random. */
  s->domain_prio[d] = sim_rng_next(&s->sched_rng) >> 1;
  return d;
}

void sim_domain_kill(sim *s, uint32_t d) {
  if (d == 0 || d >= s->n_domains) return;
  s->domain_gen[d]++;
}

static uint64_t tie_key(sim *s, uint32_t d) {
  switch (s->strategy) {
    case SIM_RANDOM: return sim_rng_next(&s->sched_rng);
    case SIM_PCT: return s->domain_prio[d];
    default: return 0;
  }
}

/* Pushes fn(ctx, arg) at time_us (>= now) in domain d. */
static inline sim_handle schedule(sim *s, int64_t time_us, uint32_t d,
                                  sim_fn fn, void *ctx, uint64_t arg) {
  if (d >= s->n_domains) d = 0;
  const sim_payload p = {fn, ctx, arg, d, s->domain_gen[d]};
  const uint64_t key = s->strategy == SIM_FIFO ? 0 : tie_key(s, d);
  return sim_queue_push(&s->queue, time_us, key, &p);
}

sim_handle sim_at(sim *s, int64_t time_us, uint32_t d, sim_fn fn, void *ctx,
                  uint64_t arg) {
  if (time_us < s->now_us) time_us = s->now_us;
  return schedule(s, time_us, d, fn, ctx, arg);
}

sim_handle sim_after(sim *s, int64_t delay_us, uint32_t d, sim_fn fn,
                     void *ctx, uint64_t arg) {
  if (delay_us < 0) delay_us = 0;
  /* Saturate: now + a huge delay must not wrap around into the past. */
  int64_t t = delay_us > INT64_MAX - s->now_us ? INT64_MAX : s->now_us + delay_us;
  return schedule(s, t, d, fn, ctx, arg);
}

int sim_cancel(sim *s, sim_handle h) { return sim_queue_cancel(&s->queue, h); }

uint64_t sim_pending(const sim *s) { return sim_queue_len(&s->queue); }

void sim_request_stop(sim *s) { s->stop_requested = 1; }

static void pct_after_dispatch(sim *s) {
  for (int i = 0; i < s->pct_n_changes; i++) {
    if (s->pct_change_at[i] == s->dispatched) {
      s->domain_prio[s->current_domain] = s->pct_low_next++;
    }
  }
}

sim_stop_reason sim_run(sim *s, int64_t end_us, uint64_t max_events) {
  uint64_t ran = 0;
  s->stop_requested = 0;
  /* The budget is checked before the pop, and only a pending event at or
  ** before end_us makes it the stop reason; the last iteration looks at
  ** the top without popping. */
  const uint64_t budget = max_events ? max_events : UINT64_MAX;
  for (;;) {
    if (s->stop_requested) return SIM_STOP_REQUESTED;
    int64_t t;
    sim_payload p;
    int got;                    /* 1 popped, 0 empty, -1 beyond end_us,
                                   2 due but the budget is spent */
    if (ran < budget) {
      got = sim_queue_pop_until(&s->queue, end_us, &t, &p);
    } else {
      const sim_qentry *top = sim_queue_peek(&s->queue);
      got = !top ? 0 : top->time_us > end_us ? -1 : 2;
    }
    if (got == 0) return SIM_STOP_QUIESCENT;
    if (got < 0) {
      if (s->now_us < end_us) s->now_us = end_us;
      return SIM_STOP_END_TIME;
    }
    if (got == 2) return SIM_STOP_MAX_EVENTS;
    if (p.domain_gen != s->domain_gen[p.domain]) {
      s->dropped++;
      continue;
    }
    s->now_us = t;
    s->current_domain = p.domain;
    s->dispatched++;
    ran++;
    p.fn(s, p.ctx, p.arg);
    if (s->strategy == SIM_PCT) pct_after_dispatch(s);
  }
}

void sim_emit(sim *s, uint32_t kind, uint32_t actor, int64_t a, int64_t b,
              int64_t c, uint32_t str, uint32_t str2) {
  sim_rec r = {s->now_us, kind, actor, a, b, c, str, str2};
  sim_trace_append(&s->trace, &r);
}

static const char *const strategy_names[] = {"fifo", "random", "pct"};

const char *sim_strategy_name(sim_strategy st) {
  return (unsigned)st < 3 ? strategy_names[st] : "?";
}

int sim_strategy_parse(const char *name) {
  for (int i = 0; i < 3; i++)
    if (strcmp(name, strategy_names[i]) == 0) return i;
  return -1;
}

const char *sim_stop_reason_name(sim_stop_reason r) {
  static const char *const n[] = {"quiescent", "end_time", "max_events",
                                  "requested"};
  return (unsigned)r < 4 ? n[r] : "?";
}
