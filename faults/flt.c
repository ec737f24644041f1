/*
** flt.c: planning and applying faults. See flt.h.
*/
#include "faults/flt.h"

#include <fiu-control.h>
#include <fiu.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_US (86400LL * 1000000LL)

static const char *const kind_names[FLT_KIND_COUNT] = {
    [FLT_EVICT] = "evict", [FLT_RESTART] = "restart", [FLT_CRASH] = "crash",
    [FLT_SIGKILL] = "sigkill", [FLT_STUCK_CHILD] = "stuck_child",
    [FLT_STORAGE_FAIL] = "storage_fail", [FLT_RPC_DELAY] = "rpc_delay",
    [FLT_RPC_DROP] = "rpc_drop", [FLT_ALARM_DELAY] = "alarm_delay",
    [FLT_GATE_TIMEOUT] = "gate_timeout", [FLT_STREAM_CUT] = "stream_cut",
    [FLT_ONSTART_THROW] = "onstart_throw", [FLT_ALARM_LOST] = "alarm_lost"};

int flt_count_per_arrival(flt_kind k) {
  return k == FLT_STORAGE_FAIL || k == FLT_ONSTART_THROW;
}

/* The arrival limit of a rated fault (INT_MAX: none). */
static int arrival_limit(const flt_fault *f) {
  return f->count > 0 && !flt_count_per_arrival(f->kind) ? f->count : 0x7fffffff;
}

const char *flt_kind_name(flt_kind k) {
  return (unsigned)k < FLT_KIND_COUNT && kind_names[k] ? kind_names[k] : "?";
}

int flt_kind_parse(const char *name) {
  for (int k = 1; k < FLT_KIND_COUNT; k++)
    if (!strcmp(kind_names[k], name)) return k;
  return -1;
}

/* The storage stream and the per-commit chance, for the fiu callback. */
static sim_rng storage_rng;
static uint32_t storage_ppm;
static int fiu_ready;
static int64_t last_fault_us;

static int storage_decide(const char *name, int *failnum, void **failinfo, unsigned *flags) {
  (void)name;
  (void)failnum;
  (void)failinfo;
  (void)flags;
  return sim_rng_chance_ppm(&storage_rng, storage_ppm);
}

void flt_reset(void) {
  if (fiu_ready) fiu_disable("revenant/storage/commit");
  storage_ppm = 0;
  last_fault_us = 0;
}

static int64_t draw_gap(sim_rng *r, int64_t mean_us);

int64_t flt_last_time(void) { return last_fault_us; }

static void rated_streams(uint64_t seed, const flt_fault *f, int i, sim_rng *gaps,
                          sim_rng *actors) {
  char name[64];
  snprintf(name, sizeof name, "fault.%s.%d", kind_names[f->kind], i);
  sim_rng_stream(gaps, seed, name);
  snprintf(name, sizeof name, "fault.%s.%d.actor", kind_names[f->kind], i);
  sim_rng_stream(actors, seed, name);
}

int flt_times(uint64_t seed, const flt_fault *faults, int n, int64_t duration_us,
              flt_kind kind, int64_t *out, int cap) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    const flt_fault *f = &faults[i];
    if (f->kind != kind) continue;
    if (f->at_us >= 0) {
      if (k < cap) out[k++] = f->at_us;
      continue;
    }
    sim_rng r, unused;
    rated_streams(seed, f, i, &r, &unused);
    int64_t until = f->until_us > 0 ? f->until_us : duration_us;
    int64_t mean = f->per_day > 0 ? DAY_US / f->per_day : 0;
    int left = arrival_limit(f);
    for (int64_t t = draw_gap(&r, mean); mean && t < until && k < cap && left > 0;
         t += draw_gap(&r, mean), left--)
      out[k++] = t;
  }
  for (int i = 1; i < k; i++) /* insertion sort: a handful of times */
    for (int j = i; j > 0 && out[j] < out[j - 1]; j--) {
      int64_t t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return k;
}

typedef struct flt_ctx {
  rt_world *w;
  flt_fault f;        /* a copy; a fixed evict's drawn actor already chosen */
  sim_rng gaps;       /* rated: "fault.<kind>.<i>", inter-arrival times */
  sim_rng actors;     /* rated: "fault.<kind>.<i>.actor", evict's victim */
  int64_t mean_us;    /* rated: mean gap; 0 for a fixed fault */
  int64_t at_us;      /* rated: the pending arrival */
  int64_t until_us;   /* rated: arrivals stop before this */
  int left;           /* rated: arrivals still allowed (count) */
} flt_ctx;

static uint32_t pick_actor(rt_world *w, const flt_fault *f, sim_rng *r) {
  if (f->actor != RT_NO_ACTOR || rt_actor_count(w) == 0) return f->actor;
  return (uint32_t)sim_rng_below(r, rt_actor_count(w));
}

void flt_apply(rt_world *w, const flt_fault *f) {
  sim *s = rt_world_sim(w);
  uint32_t t = sim_trace_intern(&s->trace, flt_kind_name(f->kind));
  sim_emit(s, RT_EV_FAULT, f->actor, f->delay_us, f->count, 0, t, 0);
  switch (f->kind) {
    case FLT_EVICT: rt_kill_actor(w, f->actor, RT_DEATH_EVICT); break;
    case FLT_RESTART: rt_kill_all(w, RT_DEATH_RESTART); break;
    case FLT_CRASH: rt_kill_all(w, RT_DEATH_CRASH); break;
    case FLT_SIGKILL: rt_kill_all(w, RT_DEATH_SIGKILL); break;
    case FLT_ALARM_LOST: rt_lose_alarm(w, f->actor); break;
    case FLT_STUCK_CHILD: rt_set_stuck(w, f->actor, f->stuck, f->delay_us); break;
    case FLT_STORAGE_FAIL:
      if (f->ppm) {
        storage_ppm = f->ppm;
      } else {
        rt_fail_commits(w, f->actor, f->count > 0 ? f->count : 1);
      }
      break;
    case FLT_RPC_DELAY: rt_set_rpc_faults(w, f->delay_us, 0); break;
    case FLT_RPC_DROP: rt_set_rpc_faults(w, 0, f->ppm); break;
    case FLT_ALARM_DELAY: rt_set_alarm_delay(w, f->delay_us); break;
    case FLT_GATE_TIMEOUT: rt_set_onstart_us(w, f->actor, f->delay_us); break;
    case FLT_STREAM_CUT: rt_cut_stream(w, f->actor); break; /* chat: RT_NO_ACTOR = all */
    case FLT_ONSTART_THROW: rt_onstart_throws(w, f->actor, f->count > 0 ? f->count : 1); break;
    default: break;
  }
  if ((f->kind == FLT_RESTART || f->kind == FLT_CRASH || f->kind == FLT_SIGKILL) && f->delay_us > 0)
    rt_set_down(w, s->now_us + f->delay_us); /* down_for */
}

/* The planned faults of the current run, indexed by the event's arg (the
** array grows while planning, so events carry indices, never pointers). */
static flt_ctx *ctx_pool;
static size_t ctx_used, ctx_cap;

static sim_rng kind_rng[FLT_KIND_COUNT];

/* The after_write fault of the current run (rt_on_write keeps one hook). */
static flt_ctx write_fault;

static void fire_write(void *ctx) {
  (void)ctx;
  flt_apply(write_fault.w, &write_fault.f);
}

/* Exponential inter-arrival time with the given mean, from r. */
static int64_t draw_gap(sim_rng *r, int64_t mean_us) {
  double u = (double)(sim_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
  return (int64_t)(-log(1.0 - u) * (double)mean_us) + 1;
}

/* A rated fault's arrival at c->at_us fires: the victim is drawn now, then
** the next arrival, which is scheduled if it falls before the end. */
static void fire(sim *s, void *ctx, uint64_t arg) {
  (void)ctx;
  flt_ctx *c = &ctx_pool[arg];
  if (c->mean_us == 0) {
    flt_apply(c->w, &c->f);
    return;
  }
  flt_fault now = c->f;
  if (now.kind == FLT_EVICT && now.actor == RT_NO_ACTOR) now.actor = pick_actor(c->w, &now, &c->actors);
  flt_apply(c->w, &now);
  c->at_us += draw_gap(&c->gaps, c->mean_us);
  if (--c->left > 0 && c->at_us < c->until_us) {
    if (c->at_us > last_fault_us) last_fault_us = c->at_us;
    sim_at(s, c->at_us, 0, fire, NULL, arg); /* on OOM the chain ends */
  }
}

static flt_ctx *ctx_new(void) {
  if (ctx_used == ctx_cap) {
    size_t nc = ctx_cap ? ctx_cap * 2 : 64;
    flt_ctx *np = realloc(ctx_pool, nc * sizeof *np);
    if (!np) return NULL;
    ctx_pool = np;
    ctx_cap = nc;
  }
  memset(&ctx_pool[ctx_used], 0, sizeof ctx_pool[0]);
  return &ctx_pool[ctx_used++];
}

int flt_plan(rt_world *w, const flt_fault *faults, int n, int64_t duration_us) {
  return flt_plan_window(w, faults, n, duration_us, 0, duration_us + 1, 0);
}

int flt_plan_window(rt_world *w, const flt_fault *faults, int n, int64_t duration_us,
                    int64_t from_us, int64_t until_us, int skip_kind) {
  sim *s = rt_world_sim(w);
  int planned = 0;
  ctx_used = 0;
  flt_reset();
  if (!fiu_ready) {
    fiu_init(0);
    fiu_ready = 1;
  }
  for (int k = 1; k < FLT_KIND_COUNT; k++) {
    char name[48];
    snprintf(name, sizeof name, "fault.%s", kind_names[k]);
    sim_rng_stream(&kind_rng[k], s->seed, name);
  }
  sim_rng_stream(&storage_rng, s->seed, "fault.storage_fail.commits");
  fiu_enable_external("revenant/storage/commit", 1, NULL, 0, storage_decide);
  for (int i = 0; i < n; i++) {
    const flt_fault *f = &faults[i];
    if (f->after_write) { /* a worker after a real SIGKILL counts writes anew: whole runs only */
      memset(&write_fault, 0, sizeof write_fault);
      write_fault.w = w;
      write_fault.f = *f;
      if (from_us == 0) rt_on_write(w, f->after_write, fire_write, NULL);
      planned++;
      continue;
    }
    if (f->at_us >= 0) {
      /* fixed: a drawn victim comes from the kind's stream, in file order */
      flt_fault copy = *f;
      if (copy.kind == FLT_EVICT && copy.actor == RT_NO_ACTOR)
        copy.actor = pick_actor(w, f, &kind_rng[f->kind]);
      if (f->at_us > last_fault_us) last_fault_us = f->at_us;
      if (f->at_us < from_us || f->at_us >= until_us || (int)f->kind == skip_kind) continue;
      flt_ctx *c = ctx_new();
      if (!c) return -1;
      c->w = w;
      c->f = copy;
      if (!sim_at(s, f->at_us, 0, fire, NULL, ctx_used - 1)) return -1;
      planned++;
      continue;
    }
    int64_t mean = f->per_day > 0 ? DAY_US / f->per_day : 0;
    int64_t until = f->until_us > 0 ? f->until_us : duration_us;
    if (until > until_us) until = until_us;
    if (mean == 0 || (int)f->kind == skip_kind) continue;
    flt_ctx *c = ctx_new();
    if (!c) return -1;
    c->w = w;
    c->f = *f;
    c->mean_us = mean;
    c->until_us = until;
    c->left = arrival_limit(f);
    rated_streams(s->seed, f, i, &c->gaps, &c->actors);
    c->at_us = draw_gap(&c->gaps, mean);
    /* a window that starts later skips the earlier arrivals, drawing what
    ** they drew, so it is the same slice of the whole run's plan */
    while (c->at_us < from_us && c->at_us < until) {
      if (f->kind == FLT_EVICT && f->actor == RT_NO_ACTOR) pick_actor(w, f, &c->actors);
      c->at_us += draw_gap(&c->gaps, mean);
      c->left--;
    }
    if (c->at_us >= until || c->left <= 0) {
      ctx_used--;
      continue;
    }
    if (c->at_us > last_fault_us) last_fault_us = c->at_us;
    if (!sim_at(s, c->at_us, 0, fire, NULL, ctx_used - 1)) return -1;
    planned++;
  }
  return planned;
}
