/*
** chk_facts.c: the facts engine (chk_facts.h): a trace observer that counts
** matches of each fact's pattern, follows sequences step by step, and keeps
** the few nearest candidate records a failure report shows.
**
** Memory is bounded per fact: a counter, a step, CHK_FACT_NEAR matches and
** CHK_FACT_NEAR candidates. Candidates are ranked by how many conditions
** they miss, then by how far they lie outside the time window; ties keep
** the earlier record. Nothing depends on pointer values or hash order.
*/
#include "checks/chk_facts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_events.h"

typedef struct fstate {
  const chk_fact *fact;
  chk_fact_result res;
  int64_t count;              /* MATCH: matches; SEQUENCE: steps matched */
  int64_t last_t;             /* SEQUENCE: time of the last step's record */
  sim_rec hits[CHK_FACT_NEAR];/* first matches */
  uint64_t hit_idx[CHK_FACT_NEAR];
  int n_hits;
  sim_rec cand[CHK_FACT_NEAR];/* nearest candidates, best first */
  uint64_t cand_idx[CHK_FACT_NEAR];
  uint64_t cand_key[CHK_FACT_NEAR];
  int n_cand;
  int end_set;
} fstate;

struct chk_facts {
  sim_trace *t;
  fstate *st;
  int n;
  /* the facts watching each kind: watch[first[k] .. first[k + 1]) */
  int first[RT_EV_KIND_COUNT + 1];
  int *watch;
};

int chk_facts_count_ok(int64_t n, int64_t min, int64_t max) {
  return n >= min && (max == CHK_FACT_NO_MAX || n <= max);
}

const char *chk_facts_count_text(int64_t min, int64_t max, char *buf, int cap) {
  if (max == min)
    snprintf(buf, (size_t)cap, "exactly %" PRId64, min);
  else if (max == CHK_FACT_NO_MAX)
    snprintf(buf, (size_t)cap, "at least %" PRId64, min);
  else if (min <= 0)
    snprintf(buf, (size_t)cap, "at most %" PRId64, max);
  else
    snprintf(buf, (size_t)cap, "between %" PRId64 " and %" PRId64, min, max);
  return buf;
}

/* ---- matching ----------------------------------------------------------- */

static int cond_ok(const sim_trace *t, const sim_rec *r, const chk_fact_cond *c) {
  const int64_t ints[3] = {r->a, r->b, r->c};
  if (c->slot < 3) {
    int64_t v = ints[c->slot];
    if (c->op == CHK_COND_EQ) return v == c->lo;
    if (c->op == CHK_COND_RANGE) return v >= c->lo && v <= c->hi;
    return 0;
  }
  const char *s = sim_trace_str(t, c->slot == 3 ? r->s : r->s2);
  switch (c->op) {
    case CHK_COND_EQ: return strcmp(s, c->str) == 0;
    case CHK_COND_PRESENT: return s[0] != '\0';
    case CHK_COND_ABSENT: return s[0] == '\0';
    default: return 0;
  }
}

static int same_subject(const chk_fact_pat *p, const sim_rec *r) {
  return r->kind == p->kind && (p->actor == UINT32_MAX || r->actor == p->actor);
}

/* How far an integer field is from a failed condition on it. */
static uint64_t value_gap(const sim_rec *r, const chk_fact_cond *c) {
  const int64_t ints[3] = {r->a, r->b, r->c};
  if (c->slot >= 3) return 0;
  int64_t v = ints[c->slot], lo = c->lo, hi = c->op == CHK_COND_RANGE ? c->hi : c->lo;
  if (v < lo) return (uint64_t)lo - (uint64_t)v;
  if (v > hi) return (uint64_t)v - (uint64_t)hi;
  return 0;
}

/* How far r is from matching p (same kind and actor): 0 when it matches;
** else (conditions missed << 40) + µs outside the window + how far the
** integer fields that missed are from their values. */
static uint64_t distance(const sim_trace *t, const chk_fact_pat *p, const sim_rec *r) {
  uint64_t missed = 0, out = 0;
  for (int i = 0; i < p->n_where; i++)
    if (!cond_ok(t, r, &p->where[i])) {
      missed++;
      uint64_t g = value_gap(r, &p->where[i]);
      out = g > (1ULL << 40) - out ? (1ULL << 40) - 1 : out + g;
    }
  if (r->t_us < p->from_us) out += (uint64_t)(p->from_us - r->t_us);
  else if (r->t_us > p->to_us) out += (uint64_t)(r->t_us - p->to_us);
  if (out >= (1ULL << 40)) out = (1ULL << 40) - 1;
  return (missed << 40) + out;
}

static void keep_hit(fstate *f, const sim_rec *r, uint64_t idx) {
  if (f->n_hits >= CHK_FACT_NEAR) return;
  f->hits[f->n_hits] = *r;
  f->hit_idx[f->n_hits++] = idx;
}

/* Keeps r among the CHK_FACT_NEAR nearest candidates (strictly nearer
** than the worst kept one when full). */
static void keep_cand(fstate *f, const sim_rec *r, uint64_t idx, uint64_t key) {
  int at = f->n_cand;
  while (at > 0 && f->cand_key[at - 1] > key) at--;
  if (at >= CHK_FACT_NEAR) return;
  int last = f->n_cand < CHK_FACT_NEAR ? f->n_cand : CHK_FACT_NEAR - 1;
  for (int i = last; i > at; i--) {
    f->cand[i] = f->cand[i - 1];
    f->cand_idx[i] = f->cand_idx[i - 1];
    f->cand_key[i] = f->cand_key[i - 1];
  }
  f->cand[at] = *r;
  f->cand_idx[at] = idx;
  f->cand_key[at] = key;
  if (f->n_cand < CHK_FACT_NEAR) f->n_cand++;
}

static void observe_match(const sim_trace *t, fstate *f, const sim_rec *r, uint64_t idx) {
  const chk_fact_pat *p = &f->fact->pat[0];
  if (!same_subject(p, r)) return;
  uint64_t d = distance(t, p, r);
  if (d == 0) {
    f->count++;
    keep_hit(f, r, idx);
  } else {
    keep_cand(f, r, idx, d);
  }
}

/* How far r lies outside the gap a sequence step allows after the
** previous step's record (0 inside). */
static uint64_t gap_miss(const fstate *f, const chk_fact_pat *p, const sim_rec *r) {
  if (f->count == 0) return 0;
  int64_t gap = r->t_us - f->last_t;
  if (gap < p->gap_min_us) return (uint64_t)(p->gap_min_us - gap);
  if (gap > p->gap_max_us) return (uint64_t)(gap - p->gap_max_us);
  return 0;
}

static void observe_sequence(const sim_trace *t, fstate *f, const sim_rec *r, uint64_t idx) {
  const chk_fact *fa = f->fact;
  if (f->count >= fa->n_pat) return;
  const chk_fact_pat *p = &fa->pat[f->count];
  if (!same_subject(p, r)) return;
  uint64_t d = distance(t, p, r), g = gap_miss(f, p, r);
  if (g) d += (1ULL << 40) + (g < (1ULL << 40) ? g : (1ULL << 40) - 1);
  if (d == 0) {
    f->count++;
    f->last_t = r->t_us;
    keep_hit(f, r, idx);
    f->n_cand = 0; /* candidates are for the next step */
  } else {
    keep_cand(f, r, idx, d);
  }
}

static void on_record(void *ctx, const sim_rec *r, uint64_t idx) {
  chk_facts *fs = ctx;
  if (r->kind >= RT_EV_KIND_COUNT) return;
  for (int w = fs->first[r->kind]; w < fs->first[r->kind + 1]; w++) {
    fstate *f = &fs->st[fs->watch[w]];
    if (f->fact->form == CHK_FACT_MATCH) observe_match(fs->t, f, r, idx);
    else if (f->fact->form == CHK_FACT_SEQUENCE) observe_sequence(fs->t, f, r, idx);
  }
}

/* ---- life cycle --------------------------------------------------------- */

static int watches(const chk_fact *fa, uint32_t kind) {
  if (fa->form == CHK_FACT_END) return 0;
  for (int p = 0; p < fa->n_pat; p++)
    if (fa->pat[p].kind == kind) return 1;
  return 0;
}

/* Builds the per-kind lists of facts, in fact order. 0, or -1 on OOM. */
static int index_kinds(chk_facts *fs) {
  int total = 0;
  for (uint32_t k = 0; k < RT_EV_KIND_COUNT; k++)
    for (int i = 0; i < fs->n; i++) total += watches(fs->st[i].fact, k);
  fs->watch = malloc((size_t)(total > 0 ? total : 1) * sizeof *fs->watch);
  if (!fs->watch) return -1;
  int w = 0;
  for (uint32_t k = 0; k < RT_EV_KIND_COUNT; k++) {
    fs->first[k] = w;
    for (int i = 0; i < fs->n; i++)
      if (watches(fs->st[i].fact, k)) fs->watch[w++] = i;
  }
  fs->first[RT_EV_KIND_COUNT] = w;
  return 0;
}

chk_facts *chk_facts_new(sim_trace *t, const chk_fact *facts, int n, int ci, int robust_only) {
  chk_facts *fs = calloc(1, sizeof *fs);
  if (!fs) return NULL;
  fs->t = t;
  fs->st = calloc((size_t)(n > 0 ? n : 1), sizeof *fs->st);
  if (!fs->st) {
    free(fs);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    const chk_fact *fa = &facts[i];
    if (ci < 32 && !(fa->case_mask & (1u << ci))) continue;
    if (robust_only && !fa->robust) continue;
    fs->st[fs->n++].fact = fa;
  }
  if (index_kinds(fs) < 0 || (fs->n > 0 && sim_trace_observe(t, on_record, fs) < 0)) {
    chk_facts_free(fs);
    return NULL;
  }
  return fs;
}

static void pat_text(const chk_fact_pat *p, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", rt_event_name(p->kind));
}

static void finish_match(fstate *f) {
  const chk_fact *fa = f->fact;
  char want[64], what[48];
  f->res.found = f->count;
  f->res.passed = chk_facts_count_ok(f->count, fa->count_min, fa->count_max);
  chk_facts_count_text(fa->count_min, fa->count_max, want, sizeof want);
  pat_text(&fa->pat[0], what, sizeof what);
  snprintf(f->res.msg, sizeof f->res.msg, "expected %s matching %s record%s, found %" PRId64,
           want, what, fa->count_min == 1 && fa->count_max == 1 ? "" : "s", f->count);
}

static void finish_sequence(fstate *f) {
  const chk_fact *fa = f->fact;
  char what[48];
  f->res.found = f->count;
  f->res.passed = f->count >= fa->n_pat;
  if (f->res.passed) {
    snprintf(f->res.msg, sizeof f->res.msg, "all %d steps matched in order", fa->n_pat);
    return;
  }
  pat_text(&fa->pat[f->count], what, sizeof what);
  if (f->count == 0)
    snprintf(f->res.msg, sizeof f->res.msg, "step 1 of %d (%s) never matched", fa->n_pat, what);
  else
    snprintf(f->res.msg, sizeof f->res.msg,
             "step %" PRId64 " of %d (%s) never matched after step %" PRId64 " (t=%" PRId64 ".%03" PRId64 "s)",
             f->count + 1, fa->n_pat, what, f->count, f->last_t / 1000000, f->last_t / 1000 % 1000);
}

/* The report shows the matches when there were too many, else the
** nearest candidates. */
static void pick_near(fstate *f) {
  int too_many = f->fact->form == CHK_FACT_MATCH && f->fact->count_max != CHK_FACT_NO_MAX &&
                 f->count > f->fact->count_max;
  const sim_rec *src = too_many ? f->hits : f->cand;
  const uint64_t *idx = too_many ? f->hit_idx : f->cand_idx;
  int n = too_many ? f->n_hits : f->n_cand;
  f->res.near_matches = too_many;
  f->res.n_near = n;
  for (int i = 0; i < n; i++) {
    f->res.near[i] = src[i];
    f->res.near_idx[i] = idx[i];
  }
}

void chk_facts_finish(chk_facts *fs, int64_t end_us) {
  (void)end_us;
  for (int i = 0; fs && i < fs->n; i++) {
    fstate *f = &fs->st[i];
    if (f->fact->form == CHK_FACT_MATCH) finish_match(f);
    else if (f->fact->form == CHK_FACT_SEQUENCE) finish_sequence(f);
    else if (!f->end_set) snprintf(f->res.msg, sizeof f->res.msg, "the end state was not read");
    if (f->fact->form != CHK_FACT_END) pick_near(f);
  }
}

int chk_facts_count(const chk_facts *fs) { return fs ? fs->n : 0; }

const chk_fact *chk_facts_fact(const chk_facts *fs, int i) {
  return fs && i >= 0 && i < fs->n ? fs->st[i].fact : NULL;
}

const chk_fact_result *chk_facts_result(const chk_facts *fs, int i) {
  return fs && i >= 0 && i < fs->n ? &fs->st[i].res : NULL;
}

void chk_facts_set(chk_facts *fs, int i, int passed, int64_t found, const char *msg) {
  if (!fs || i < 0 || i >= fs->n) return;
  fstate *f = &fs->st[i];
  f->end_set = 1;
  f->res.passed = passed;
  f->res.found = found;
  snprintf(f->res.msg, sizeof f->res.msg, "%s", msg ? msg : "");
}

int chk_facts_failed(const chk_facts *fs) {
  int n = 0;
  for (int i = 0; fs && i < fs->n; i++) n += !fs->st[i].res.passed;
  return n;
}

void chk_facts_free(chk_facts *fs) {
  if (!fs) return;
  free(fs->watch);
  free(fs->st);
  free(fs);
}
