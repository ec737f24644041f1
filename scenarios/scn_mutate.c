/*
** scn_mutate.c: scenario copies, the swarm's per-seed fault mix, the
** failure signature of a run, and scenario sizes.
**
** The fault mix (docs/swarm.md) is drawn from the PRNG stream "swarm.mix"
** of the run seed, with a fixed number of draws per fault kind, so the mix
** of one seed never depends on anything but (scenario, seed). The
** signature groups failures: invariant, class of the actor it names, and
** the kinds of waits still open at the violation (replayed from the trace
** the way the "who waits on whom" block of reports/ does).
*/
#include <inttypes.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "scenarios/scn.h"

#define US_PER_S 1000000LL
#define DAY_US (86400LL * US_PER_S)

/* Bytes [from, to) of the struct, as they are. */
static void copy_span(scn_scenario *dst, const scn_scenario *src, size_t from, size_t to) {
  memcpy((char *)dst + from, (const char *)src + from, to - from);
}

/* n (clamped to [0, max]) entries of size sz at offset off. */
static void copy_prefix(scn_scenario *dst, const scn_scenario *src, size_t off, size_t sz,
                        long n, long max) {
  if (n > max) n = max;
  if (n > 0) memcpy((char *)dst + off, (const char *)src + off, (size_t)n * sz);
}

#define END_OF(f) (offsetof(scn_scenario, f) + sizeof ((scn_scenario *)0)->f)
#define PREFIX(f, n, max) copy_prefix(dst, src, offsetof(scn_scenario, f), sizeof src->f[0], (long)(n), (max))
_Static_assert(END_OF(actors) <= offsetof(scn_scenario, steps) &&
                   END_OF(steps) <= offsetof(scn_scenario, stale) &&
                   END_OF(stale) <= offsetof(scn_scenario, work) &&
                   END_OF(work) <= offsetof(scn_scenario, facts) &&
                   END_OF(facts) <= offsetof(scn_scenario, actor_scripts) &&
                   END_OF(actor_scripts) <= offsetof(scn_scenario, scripts),
               "scn_copy copies the spans between these arrays in this order");

/* A scenario is 1.25 MB of fixed arrays, mostly unused: the large arrays
** are copied up to their counts (entries past a count are never read), the
** rest as it is, so a field added later is copied without being named here
** (issue #18: copying the whole struct was 39 % of a 1-hour swarm run). */
void scn_copy(scn_scenario *dst, const scn_scenario *src) {
  if (dst == src) return;
  copy_span(dst, src, 0, offsetof(scn_scenario, actors));
  PREFIX(actors, src->n_actors, SCN_MAX_ACTORS);
  copy_span(dst, src, END_OF(actors), offsetof(scn_scenario, steps));
  for (int i = 0; i < src->n_programs && i < SCN_MAX_PROGRAMS; i++)
    copy_prefix(dst, src, offsetof(scn_scenario, steps) + (size_t)i * sizeof src->steps[0],
                sizeof src->steps[0][0], src->programs[i].n_steps, SCN_MAX_STEPS);
  copy_span(dst, src, END_OF(steps), offsetof(scn_scenario, stale));
  PREFIX(stale, src->n_stale, SCN_MAX_STALE);
  copy_span(dst, src, END_OF(stale), offsetof(scn_scenario, work));
  PREFIX(work, src->n_work, SCN_MAX_WORK);
  copy_span(dst, src, END_OF(work), offsetof(scn_scenario, facts));
  PREFIX(facts, src->n_facts, SCN_MAX_FACTS);
  copy_span(dst, src, END_OF(facts), offsetof(scn_scenario, actor_scripts));
  PREFIX(actor_scripts, src->n_actors, SCN_MAX_ACTORS);
  copy_span(dst, src, END_OF(actor_scripts), offsetof(scn_scenario, scripts));
  PREFIX(scripts, src->n_scripts, CHK_LUA_MAX_SCRIPTS);
  copy_span(dst, src, END_OF(scripts), sizeof *dst);
  for (int i = 0; i < SCN_MAX_PROGRAMS; i++) dst->programs[i].steps = dst->steps[i];
  dst->source = NULL;
  dst->actor_scripts_borrowed = 1; /* the agent script texts stay the source's */
}

void scn_truncate(scn_scenario *s, int64_t d) {
  s->duration_us = d;
  for (int i = s->n_work - 1; i >= 0; i--) {
    scn_work *w = &s->work[i];
    if (w->at_us > d) {
      memmove(w, w + 1, (size_t)(s->n_work - i - 1) * sizeof *w);
      s->n_work--;
    } else if (w->until_us > d || w->every_us <= 0) {
      w->until_us = d;
    }
  }
  for (int i = s->n_faults - 1; i >= 0; i--) {
    scn_fault *f = &s->faults[i];
    if (f->at_us > d) {
      memmove(f, f + 1, (size_t)(s->n_faults - i - 1) * sizeof *f);
      s->n_faults--;
    } else if (f->at_us < 0 && f->until_us >= d) {
      f->until_us = 0;
    }
  }
}

/* ---- the swarm's fault mix ---------------------------------------------- */

/* Appends text to the mix description (cut when full). */
static void mix_note(scn_mix *m, const char *fmt, const char *name, const char *detail) {
  size_t n = strlen(m->text);
  if (n + 1 >= sizeof m->text) return;
  snprintf(m->text + n, sizeof m->text - n, fmt, n ? " " : "", name, detail);
}

/* A time for a fixed fault: half the draws land in the first 5 minutes
** (startup and recovery), the rest anywhere in the run; whole ms. */
static int64_t mix_time(sim_rng *r, int64_t duration_us) {
  int early = (int)sim_rng_below(r, 2);
  int64_t hi = early && duration_us > 300 * US_PER_S ? 300 * US_PER_S : duration_us;
  return sim_rng_range(r, 0, hi) / 1000 * 1000;
}

/* The actors that are somebody's child, in index order; returns count. */
static int mix_children(const scn_scenario *sc, uint32_t *out) {
  int n = 0;
  for (uint32_t a = 0; a < sc->n_actors; a++) {
    int child = 0;
    for (uint32_t p = 0; p < sc->n_actors && !child; p++)
      for (int k = 0; k < sc->actors[p].n_children; k++) child |= sc->actors[p].children[k] == a;
    if (child) out[n++] = a;
  }
  return n;
}

/* The draws of one kind: always the same number, whatever is switched on. */
typedef struct mix_draw {
  int on;
  int pick;                /* index into the kind's table of values */
  int64_t at;
  uint64_t who;            /* raw draw for an actor choice */
} mix_draw;

static void mix_draw_one(sim_rng *r, int64_t duration_us, mix_draw *d) {
  d->on = (int)sim_rng_below(r, 2);
  d->pick = (int)sim_rng_below(r, 4);
  d->at = mix_time(r, duration_us);
  d->who = sim_rng_next(r);
}

static const int64_t evict_rates[4] = {1, 4, 24, 96};
static const int64_t kill_rates[4] = {1, 2, 6, 24};
static const uint32_t storage_ppm[4] = {1000, 10000, 50000, 200000};
static const int64_t rpc_delays[4] = {100000, 1000000, 3000000, 10000000};
static const uint32_t drop_ppm[4] = {1000, 10000, 100000, 300000};
static const int64_t alarm_delays[4] = {100000, 1000000, 10000000, 60000000};
static const int64_t late_delays[4] = {1000000, 3000000, 5000000, 30000000};

/* Fills the fault of kind k from its draw, within the file's allowance
** (sc->allow: a kind it does not allow is off, a value above its bound is
** cut to the bound; the draws are the same either way, so the other kinds'
** faults do not change); returns 0, or -1 if the kind cannot or may not
** apply to this scenario (no child for stuck_child). */
static int mix_fault(const scn_scenario *sc, flt_kind k, const mix_draw *d, scn_fault *f) {
  int64_t cap = 256 * DAY_US / sc->duration_us; /* at most ~256 events a kind */
  memset(f, 0, sizeof *f);
  f->kind = k;
  f->actor = RT_NO_ACTOR;
  f->at_us = d->at;
  if (cap < 1) cap = 1;
  const scn_allow *al = &sc->allow;
  if (al->given && !(al->kinds & (1u << k))) return -1; /* not allowed by the file */
  if ((k == FLT_RESTART || k == FLT_CRASH) && (d->who >> 40) & 1 &&
      !(al->given && (al->no_after_write & (1u << k)))) {
    /* Crashes where they hurt: half the process deaths land right after a
    ** durable write, inside its turn's commit window (the boundaries run
    ** --crash-points walks), at write k in 1..2^(1+b) for b in 0..5, so
    ** the first writes of a run are drawn most often. */
    uint64_t span = 2ull << ((d->who >> 48) % 6);
    f->at_us = -1;
    f->after_write = 1 + (d->who >> 8) % span;
    return 0;
  }
  if (k == FLT_EVICT || k == FLT_RESTART || k == FLT_CRASH) {
    int64_t rate = k == FLT_EVICT ? evict_rates[d->pick] : kill_rates[d->pick];
    f->at_us = -1;
    if (al->given && al->max_per_day[k] && rate > al->max_per_day[k]) rate = al->max_per_day[k];
    f->per_day = rate < cap ? rate : cap;
    if (k == FLT_EVICT && d->who % (sc->n_actors + 1) < sc->n_actors)
      f->actor = (uint32_t)(d->who % (sc->n_actors + 1));
    return 0;
  }
  switch (k) {
    case FLT_STORAGE_FAIL: f->ppm = storage_ppm[d->pick]; break;
    case FLT_RPC_DELAY: f->delay_us = rpc_delays[d->pick]; break;
    case FLT_RPC_DROP: f->ppm = drop_ppm[d->pick]; break;
    case FLT_ALARM_DELAY: f->delay_us = alarm_delays[d->pick]; break;
    default: { /* FLT_STUCK_CHILD */
      uint32_t kids[SCN_MAX_ACTORS];
      int n = mix_children(sc, kids);
      if (n == 0) return -1;
      f->actor = kids[d->who % (uint64_t)n];
      f->stuck = d->pick == 0 ? RT_STUCK_STARTUP : d->pick == 1 ? RT_STUCK_NEVER_ANSWERS : RT_STUCK_LATE;
      f->delay_us = f->stuck == RT_STUCK_LATE ? late_delays[d->pick] : 0;
      if (al->given && al->max_delay_us[k]) { /* a child at most that late */
        if (f->stuck != RT_STUCK_LATE || f->delay_us > al->max_delay_us[k]) f->delay_us = al->max_delay_us[k];
        f->stuck = RT_STUCK_LATE;
      }
    }
  }
  if (al->given && al->max_ppm[k] && f->ppm > al->max_ppm[k]) f->ppm = al->max_ppm[k];
  if (al->given && al->max_delay_us[k] && f->delay_us > al->max_delay_us[k]) f->delay_us = al->max_delay_us[k];
  return 0;
}

/* "24/d", "10000ppm@3.5s" … for the mix description. */
static void mix_detail(const scn_scenario *sc, const scn_fault *f, char *b, size_t cap) {
  const char *who = f->actor < sc->n_actors ? sc->actors[f->actor].id : "";
  double at = (double)f->at_us / 1e6;
  if (f->after_write)
    snprintf(b, cap, "write%" PRIu64, f->after_write);
  else if (f->at_us < 0)
    snprintf(b, cap, "%" PRId64 "/d%s%s", f->per_day, *who ? ":" : "", who);
  else if (f->ppm)
    snprintf(b, cap, "%uppm@%.3fs", f->ppm, at);
  else if (f->kind == FLT_STUCK_CHILD)
    snprintf(b, cap, "%s:%s@%.3fs", who, f->stuck == RT_STUCK_STARTUP ? "startup"
             : f->stuck == RT_STUCK_LATE ? "late" : "never_answers", at);
  else
    snprintf(b, cap, "%" PRId64 "ms@%.3fs", f->delay_us / 1000, at);
}

/* A swarm run adds faults the file's own run did not have: only the facts
** marked robust claim to survive them; the others are dropped. */
static void keep_robust_facts(scn_scenario *sc) {
  int k = 0;
  for (int i = 0; i < sc->n_facts; i++)
    if (sc->facts[i].robust) {
      if (k != i) sc->facts[k] = sc->facts[i];
      k++;
    }
  sc->n_facts = k;
}

int scn_swarm_mix(scn_scenario *sc, uint64_t seed, scn_mix *mix) {
  static const flt_kind kinds[] = {FLT_EVICT, FLT_RESTART, FLT_CRASH, FLT_STORAGE_FAIL,
                                   FLT_RPC_DELAY, FLT_RPC_DROP, FLT_ALARM_DELAY, FLT_STUCK_CHILD};
  sim_rng r;
  memset(mix, 0, sizeof *mix);
  sim_rng_stream(&r, seed, "swarm.mix");
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    mix_draw d;
    scn_fault f;
    char detail[96] = "off";
    mix_draw_one(&r, sc->duration_us, &d);
    if (d.on && sc->n_faults < SCN_MAX_FAULTS && mix_fault(sc, kinds[i], &d, &f) == 0) {
      sc->faults[sc->n_faults++] = f;
      mix->kinds |= 1u << kinds[i];
      mix->added++;
      mix_detail(sc, &f, detail, sizeof detail);
    }
    mix_note(mix, "%s%s=%s", flt_kind_name(kinds[i]), detail);
  }
  keep_robust_facts(sc);
  sc->seed = seed;
  size_t n = strnlen(sc->description, sizeof sc->description);
  snprintf(sc->description + n, sizeof sc->description - n, "%sswarm seed 0x%" PRIx64 ": %s",
           n ? " | " : "", seed, mix->text);
  return mix->added;
}

int scn_swarm_reproduce_verdict(const scn_case *c, uint64_t runs, uint64_t met) {
  if (c->violate_mask) return met > 0 ? 0 : 1;
  return runs > 0 && met == runs ? 0 : 1;
}

/* ---- failure signature --------------------------------------------------- */

typedef struct sig_call {
  int64_t id;
  uint32_t caller, method;
} sig_call;

/* Open waits at the end of trace prefix [0, end): fills the flags and the
** list of open calls (caller dies: its calls are gone). */
typedef struct sig_waits {
  int gate_open, requests_open;
  int *gates, *requests;   /* per actor */
  sig_call *calls;
  size_t n_calls, cap_calls;
  uint32_t n_actors;
} sig_waits;

static void sig_call_drop(sig_waits *w, uint32_t caller, int all, int64_t id) {
  for (size_t i = w->n_calls; i-- > 0;) {
    if (w->calls[i].caller != caller || (!all && w->calls[i].id != id)) continue;
    w->calls[i] = w->calls[--w->n_calls];
    if (!all) return;
  }
}

static void sig_step(sig_waits *w, const sim_rec *r) {
  if (r->actor >= w->n_actors) return;
  uint32_t a = r->actor;
  switch (r->kind) {
    case RT_EV_GATE_ACQUIRE: w->gates[a] = 1; break;
    case RT_EV_GATE_RELEASE: case RT_EV_GATE_TIMEOUT: w->gates[a] = 0; break;
    case RT_EV_ACTOR_DEATH: w->gates[a] = 0; sig_call_drop(w, a, 1, 0); break;
    case RT_EV_REQUEST_ARRIVE: w->requests[a]++; break;
    case RT_EV_REQUEST_OK: case RT_EV_REQUEST_FAIL: if (w->requests[a] > 0) w->requests[a]--; break;
    case RT_EV_RPC_REPLY: sig_call_drop(w, a, 0, r->a); break;
    case RT_EV_RPC_SEND:
      if (w->n_calls == w->cap_calls) {
        size_t nc = w->cap_calls ? w->cap_calls * 2 : 64;
        sig_call *n = realloc(w->calls, nc * sizeof *n);
        if (!n) return;
        w->calls = n;
        w->cap_calls = nc;
      }
      w->calls[w->n_calls++] = (sig_call){r->a, a, r->s};
      break;
    default: break;
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "gate+request+rpc:inspect" for the waits open before record `end` (or
** at time t when end is UINT64_MAX); "none" if nothing waits. */
static void sig_waits_text(const scn_result *res, uint64_t end, int64_t t, char *b, size_t cap) {
  const sim_trace *tr = &res->s->trace;
  sig_waits w = {0, 0, calloc(res->n_actors + 1, sizeof(int)), calloc(res->n_actors + 1, sizeof(int)),
                 NULL, 0, 0, res->n_actors};
  const char *names[64];
  size_t n = 0, o = 0;
  for (size_t i = 0; w.gates && w.requests && i < tr->n && i < end; i++) {
    if (end == UINT64_MAX && tr->recs[i].t_us > t) break;
    sig_step(&w, &tr->recs[i]);
  }
  for (uint32_t a = 0; w.gates && w.requests && a < res->n_actors; a++) {
    w.gate_open |= w.gates[a];
    w.requests_open |= w.requests[a] > 0;
  }
  if (w.gate_open) names[n++] = "gate";
  if (w.requests_open) names[n++] = "request";
  for (size_t i = 0; i < w.n_calls && n < 64; i++) {
    const char *m = sim_trace_str(tr, w.calls[i].method);
    int seen = 0;
    for (size_t k = 0; k < n && !seen; k++) seen = names[k] == m || strcmp(names[k], m) == 0;
    if (!seen) names[n++] = m;
  }
  qsort(names, n, sizeof *names, cmp_str);
  b[0] = 0;
  for (size_t k = 0; k < n && o + 1 < cap; k++) {
    int rpc = strcmp(names[k], "gate") && strcmp(names[k], "request");
    o += (size_t)snprintf(b + o, cap - o, "%s%s%s", k ? "+" : "", rpc ? "rpc:" : "", names[k]);
  }
  if (n == 0 || !tr->n) snprintf(b, cap, "%s", tr->n ? "none" : "?");
  free(w.gates);
  free(w.requests);
  free(w.calls);
}

char *scn_signature(const scn_scenario *sc, int ci, const scn_result *res, char *buf, size_t cap) {
  const scn_case *cs = &sc->cases[ci];
  size_t nv = res->checks ? chk_violation_count(res->checks) : 0;
  uint32_t seen = 0;
  char waits[160];
  buf[0] = 0;
  if (res->passed || cap == 0) return buf;
  for (size_t i = 0; i < nv; i++) {
    const chk_violation *v = chk_violation_at(res->checks, i);
    seen |= scn_inv_bit(sc, (int)v->inv);
    if (!(cs->hold_mask & scn_inv_bit(sc, (int)v->inv))) continue;
    const char *cls = v->actor < sc->n_actors ? sc->actors[v->actor].cls : "-";
    sig_waits_text(res, v->at_index, v->t_us, waits, sizeof waits);
    snprintf(buf, cap, "%s/%s/%s", chk_invariant_name(v->inv), cls, waits);
    return buf;
  }
  for (int k = 0, inv; k < 32; k++)
    if ((inv = scn_inv_of_bit(sc, k)) >= 0 && ((cs->violate_mask & ~seen) & (1u << k))) {
      snprintf(buf, cap, "missing:%s/-/-", chk_invariant_name((chk_invariant)inv));
      return buf;
    }
  for (int i = 0; i < chk_facts_count(res->facts); i++)
    if (!chk_facts_result(res->facts, i)->passed) {
      snprintf(buf, cap, "fact:%s/-/-", chk_facts_fact(res->facts, i)->name);
      for (char *p = buf + 5; *p && strcmp(p, "/-/-"); p++) /* a "/" in the name would split it */
        if (*p == '/') *p = '_';
      return buf;
    }
  snprintf(buf, cap, "other/-/-");
  return buf;
}

/* ---- sizes -------------------------------------------------------------------- */

void scn_size_of(const scn_scenario *sc, scn_size *z) {
  memset(z, 0, sizeof *z);
  z->actors = (int)sc->n_actors;
  z->programs = sc->n_programs;
  for (int i = 0; i < sc->n_programs; i++) z->steps += sc->programs[i].n_steps;
  z->work = sc->n_work;
  for (int i = 0; i < sc->n_work; i++) {
    const scn_work *w = &sc->work[i];
    int64_t until = w->until_us > 0 ? w->until_us : sc->duration_us;
    z->arrivals += w->every_us > 0 && until >= w->at_us ? (until - w->at_us) / w->every_us + 1 : 1;
  }
  z->faults = sc->n_faults;
  z->stale = sc->n_stale;
  z->duration_us = sc->duration_us;
  char *text = scn_write_string(sc);
  z->bytes = text ? strlen(text) : 0;
  free(text);
}

char *scn_size_text(const scn_size *z, char *b, size_t cap) {
  snprintf(b, cap,
           "%d actors, %d workload items (%" PRId64 " arrivals), %d faults, %d stale rows, "
           "%d program steps, duration %.3fs, %zu bytes",
           z->actors, z->work, z->arrivals, z->faults, z->stale, z->steps,
           (double)z->duration_us / 1e6, z->bytes);
  return b;
}
