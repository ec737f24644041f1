/*
** rpt_html_fold.c: spans and folding for the HTML report.
**
** Spans pair an opening record with its closing one per actor (gate,
** startup, request, alarm handler, fiber, RPC call, tool run, recovery
** scan, recovery hook, user onStart), over the whole trace, so that a span stays right even when one of
** its ends is folded away.
**
** Folding keeps a long run light. The trace is cut into segments at quiet
** points: a record later in time than the one before, with no span open
** (tool runs, and spans that last over an hour or never close, excepted:
** a request left unanswered must not stop all folding). Each segment gets a signature
** (the sequence of its kinds, actors and strings; integers are left out,
** since ids and times change every cycle). A stretch of segments that
** repeats with a period of 1..RPT__FOLD_MAX_PERIOD segments keeps its first
** two periods and its last one; the periods in between become one fold
** (record counts per kind and actor). Segments that hold a record of a
** violation's chain, the record that revealed it, or the record that
** started a wait still pending at its time (a gate, a call, a request, an
** alarm) are never folded: a stretch stops there. When the kept records still exceed the budget,
** plain stretches of unfolded segments are folded too (largest first),
** again never a chain's segment.
*/
#include <stdlib.h>
#include <string.h>

#include "reports/rpt_internal.h"
#include "runtime/rt_events.h"

#define RPT__FOLD_MAX_PERIOD 16
#define RPT__SEG_MAX_RECORDS 4096 /* a segment never quiet is cut anyway */
#define RPT__BUSY_MAX_US (3600LL * 1000000) /* longer spans do not delay a cut */

typedef struct hspans {
  rpt__hspan *v;
  size_t n, cap;
  size_t *open;           /* indices into v of spans still open */
  size_t n_open, cap_open;
  int oom;
} hspans;

static int hs_grow(void **v, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 64;
  void *nv = realloc(*v, nc * size);
  if (!nv) return -1;
  *v = nv;
  *cap = nc;
  return 0;
}

static void hs_open(hspans *h, uint32_t actor, int cls, int64_t id, const sim_rec *r,
                    uint64_t idx) {
  if (hs_grow((void **)&h->v, &h->cap, h->n, sizeof *h->v) ||
      hs_grow((void **)&h->open, &h->cap_open, h->n_open, sizeof *h->open)) {
    h->oom = 1;
    return;
  }
  h->v[h->n] = (rpt__hspan){actor, cls, id, r->t_us, r->t_us, idx, RPT__NO_REC, 0};
  h->open[h->n_open++] = h->n++;
}

/* Closes the newest open span of (actor, cls) [with id when match_id]. */
static void hs_close(hspans *h, uint32_t actor, int cls, int match_id, int64_t id,
                     const sim_rec *r, uint64_t idx) {
  for (size_t k = h->n_open; k-- > 0;) {
    rpt__hspan *s = &h->v[h->open[k]];
    if (s->actor != actor || s->cls != cls || (match_id && s->id != id)) continue;
    s->t1 = r->t_us;
    s->close = idx;
    s->ended_by = r->kind;
    memmove(&h->open[k], &h->open[k + 1], (h->n_open - k - 1) * sizeof h->open[0]);
    h->n_open--;
    return;
  }
}

/* A death ends every open span of the actor but its tool runs. */
static void hs_death(hspans *h, const sim_rec *r, uint64_t idx) {
  for (size_t k = h->n_open; k-- > 0;) {
    rpt__hspan *s = &h->v[h->open[k]];
    if (s->actor != r->actor || s->cls == RPT__SP_TOOLRUN) continue;
    s->t1 = r->t_us;
    s->close = idx;
    s->ended_by = r->kind;
    memmove(&h->open[k], &h->open[k + 1], (h->n_open - k - 1) * sizeof h->open[0]);
    h->n_open--;
  }
}

/* A recovery scan stays open until as many hooks returned or threw as it
** found rows. */
static void hs_hook(hspans *h, const sim_rec *r, uint64_t idx) {
  for (size_t k = h->n_open; k-- > 0;) {
    rpt__hspan *s = &h->v[h->open[k]];
    if (s->actor != r->actor || s->cls != RPT__SP_RECOVERY) continue;
    if (--s->id <= 0) hs_close(h, r->actor, RPT__SP_RECOVERY, 0, 0, r, idx);
    return;
  }
}

static void hs_step(hspans *h, const sim_rec *r, uint64_t i) {
  uint32_t a = r->actor;
  switch (r->kind) {
  case RT_EV_GATE_ACQUIRE: hs_open(h, a, RPT__SP_GATE, 0, r, i); break;
  case RT_EV_GATE_RELEASE:
  case RT_EV_GATE_TIMEOUT: hs_close(h, a, RPT__SP_GATE, 0, 0, r, i); break;
  case RT_EV_STARTUP_BEGIN: hs_open(h, a, RPT__SP_STARTUP, 0, r, i); break;
  case RT_EV_STARTUP_OK:
  case RT_EV_STARTUP_FAIL: hs_close(h, a, RPT__SP_STARTUP, 0, 0, r, i); break;
  case RT_EV_REQUEST_ARRIVE: hs_open(h, a, RPT__SP_REQUEST, r->a, r, i); break;
  case RT_EV_REQUEST_OK:
  case RT_EV_REQUEST_FAIL: hs_close(h, a, RPT__SP_REQUEST, 1, r->a, r, i); break;
  case RT_EV_ALARM_FIRE: hs_open(h, a, RPT__SP_ALARM, 0, r, i); break;
  case RT_EV_ALARM_DONE: hs_close(h, a, RPT__SP_ALARM, 0, 0, r, i); break;
  case RT_EV_FIBER_START: hs_open(h, a, RPT__SP_FIBER, r->a, r, i); break;
  case RT_EV_FIBER_DONE: hs_close(h, a, RPT__SP_FIBER, 1, r->a, r, i); break;
  case RT_EV_RPC_SEND: hs_open(h, a, RPT__SP_RPC, r->a, r, i); break;
  case RT_EV_RPC_REPLY: hs_close(h, a, RPT__SP_RPC, 1, r->a, r, i); break;
  case RT_EV_TOOLRUN_INSERT: hs_open(h, a, RPT__SP_TOOLRUN, r->a, r, i); break;
  case RT_EV_TOOLRUN_STATUS:
    if (RT_TR_IS_TERMINAL(r->b)) hs_close(h, a, RPT__SP_TOOLRUN, 1, r->a, r, i);
    break;
  case RT_EV_RECOVERY_SCAN:
    if (r->b > 0) hs_open(h, a, RPT__SP_RECOVERY, r->b, r, i);
    break;
  case RT_EV_FIBER_RECOVERED:
  case RT_EV_FIBER_HOOK_THREW: hs_hook(h, r, i); break;
  case RT_EV_HOOK_BEGIN: hs_open(h, a, RPT__SP_HOOK, r->a, r, i); break;
  case RT_EV_HOOK_END: hs_close(h, a, RPT__SP_HOOK, 1, r->a, r, i); break;
  case RT_EV_ONSTART_BEGIN: hs_open(h, a, RPT__SP_ONSTART, 0, r, i); break;
  case RT_EV_ONSTART_END: hs_close(h, a, RPT__SP_ONSTART, 0, 0, r, i); break;
  case RT_EV_ACTOR_DEATH: hs_death(h, r, i); break;
  default: break;
  }
}

/* ---- segments ----------------------------------------------------------- */

typedef struct hseg {
  uint64_t first, n;      /* record range [first, first + n) */
  uint64_t sig;
  int essential;          /* holds a chain record: never folded */
  int folded;
} hseg;

static uint64_t seg_mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

/* Cuts t into segments; open_after[i] is the number of spans (tool runs
** excepted) still open after record i. */
static hseg *segments(const sim_trace *t, const int32_t *open_after, size_t *n_out) {
  size_t cap = 256, n = 0;
  hseg *v = malloc(cap * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < t->n; i++) {
    const sim_rec *r = &t->recs[i];
    int cut = i == 0 || (r->t_us > t->recs[i - 1].t_us && open_after[i - 1] == 0) ||
              v[n - 1].n >= RPT__SEG_MAX_RECORDS;
    if (cut) {
      if (n == cap) {
        hseg *nv = realloc(v, (cap *= 2) * sizeof *nv);
        if (!nv) {
          free(v);
          return NULL;
        }
        v = nv;
      }
      v[n++] = (hseg){i, 0, 0x84222325cbf29ce4ULL, 0, 0};
    }
    hseg *s = &v[n - 1];
    s->n++;
    s->sig = seg_mix(s->sig, ((uint64_t)r->kind << 32) | r->actor);
    s->sig = seg_mix(s->sig, sim_trace_str_hash(t, r->s));
    s->sig = seg_mix(s->sig, sim_trace_str_hash(t, r->s2));
  }
  *n_out = n;
  return v;
}

/* Marks the segment holding record idx, if any. */
static void mark_record(hseg *sg, size_t ns, uint64_t idx) {
  size_t lo = 0, hi = ns; /* last segment with first <= idx */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (sg[mid].first <= idx) lo = mid;
    else hi = mid;
  }
  if (ns && idx >= sg[lo].first && idx < sg[lo].first + sg[lo].n) sg[lo].essential = 1;
}

/* Marks the segments that hold a chain record, a revealing record, the
** record that started a wait pending at a violation, or a fact's nearest
** or matching record. Returns 0, or -1 on OOM. */
static int mark_essential(const sim_trace *t, hseg *sg, size_t ns, const chk_violation *v, size_t nv,
                          const chk_facts *facts) {
  for (int i = 0; facts && i < chk_facts_count(facts); i++) {
    const chk_fact_result *res = chk_facts_result(facts, i);
    for (int k = 0; k < res->n_near && k < CHK_FACT_NEAR; k++) mark_record(sg, ns, res->near_idx[k]);
  }
  for (size_t k = 0; k < nv; k++) {
    int nc = v[k].n_chain < 0 ? 0 : v[k].n_chain > CHK_MAX_CHAIN ? CHK_MAX_CHAIN : v[k].n_chain;
    for (int c = 0; c <= nc; c++) mark_record(sg, ns, c < nc ? v[k].chain[c] : v[k].at_index);
    rpt__waits ws = {0};
    rpt__waits_at(t, v[k].t_us, &ws);
    for (size_t i = 0; i < ws.n; i++) mark_record(sg, ns, ws.w[i].idx);
    free(ws.w);
    if (ws.oom) return -1;
  }
  return 0;
}

/* Rough size of a record on the page: the array, its decoded fields, its
** strings, and its share of a span. */
static uint64_t rec_bytes(const sim_trace *t, const sim_rec *r) {
  return 70 + strlen(sim_trace_str(t, r->s)) + strlen(sim_trace_str(t, r->s2));
}

static int add_fold(rpt__folding *out, const sim_trace *t, const hseg *sg, size_t a, size_t b,
                    uint32_t period) {
  if (out->n_folds == out->cap_folds) {
    size_t nc = out->cap_folds ? out->cap_folds * 2 : 16;
    rpt__fold *nf = realloc(out->folds, nc * sizeof *nf);
    if (!nf) return -1;
    out->folds = nf;
    out->cap_folds = nc;
  }
  uint64_t first = sg[a].first, last = sg[b - 1].first + sg[b - 1].n - 1;
  out->folds[out->n_folds++] = (rpt__fold){first, last, t->recs[first].t_us, t->recs[last].t_us,
                                           last - first + 1, period ? (b - a) / period : 0, period};
  for (uint64_t i = first; i <= last; i++) {
    out->keep[i] = 0;
    out->bytes -= rec_bytes(t, &t->recs[i]);
  }
  out->kept -= last - first + 1;
  return 0;
}

/* Length of the repeating stretch starting at segment i with period p:
** the end e such that sig[j] == sig[j - p] and no segment is essential
** for every j in [i + p, e). */
static size_t repeat_end(const hseg *sg, size_t ns, size_t i, size_t p) {
  size_t e = i + p;
  if (e > ns) return i;
  for (size_t j = i; j < e; j++)
    if (sg[j].essential) return i;
  while (e < ns && !sg[e].essential && sg[e].sig == sg[e - p].sig) e++;
  return e;
}

/* Folds the periodic stretches; returns 0 or -1 on OOM. */
static int fold_periodic(rpt__folding *out, const sim_trace *t, hseg *sg, size_t ns) {
  size_t i = 0;
  while (i < ns) {
    size_t best_p = 0, best_e = i;
    for (size_t p = 1; p <= RPT__FOLD_MAX_PERIOD && i + p <= ns; p++) {
      size_t e = repeat_end(sg, ns, i, p);
      if (e - i >= 5 * p && e - i > best_e - i) best_p = p, best_e = e;
    }
    if (!best_p) {
      i++;
      continue;
    }
    size_t a = i + 2 * best_p, periods = (best_e - best_p - a) / best_p, b = a + periods * best_p;
    if (periods >= 2) {
      if (add_fold(out, t, sg, a, b, (uint32_t)best_p)) return -1;
      for (size_t j = a; j < b; j++) sg[j].folded = 1;
    }
    i = best_e;
  }
  return 0;
}

typedef struct hstretch {
  size_t a, b;            /* segments [a, b) */
  uint64_t records;
} hstretch;

static int cmp_stretch(const void *x, const void *y) {
  const hstretch *p = x, *q = y;
  if (p->records != q->records) return p->records > q->records ? -1 : 1;
  return p->a < q->a ? -1 : p->a > q->a;
}

/* Folds plain stretches (largest first) until at most max records and
** about max_bytes are kept. Returns 0 or -1 on OOM. */
static int fold_budget(rpt__folding *out, const sim_trace *t, hseg *sg, size_t ns, uint64_t max,
                       uint64_t max_bytes) {
  hstretch *v = malloc((ns ? ns : 1) * sizeof *v);
  size_t n = 0;
  if (!v) return -1;
  for (size_t i = 0; i < ns;) {
    if (sg[i].essential || sg[i].folded) {
      i++;
      continue;
    }
    size_t j = i;
    uint64_t recs = 0;
    while (j < ns && !sg[j].essential && !sg[j].folded) recs += sg[j++].n;
    if (j - i >= 3) v[n++] = (hstretch){i + 1, j - 1, recs - sg[i].n - sg[j - 1].n};
    i = j;
  }
  qsort(v, n, sizeof *v, cmp_stretch);
  int rc = 0;
  for (size_t k = 0; k < n && (out->kept > max || out->bytes > max_bytes) && !rc; k++) {
    rc = add_fold(out, t, sg, v[k].a, v[k].b, 0);
    for (size_t j = v[k].a; j < v[k].b; j++) sg[j].folded = 1;
  }
  free(v);
  return rc;
}

static int cmp_fold(const void *x, const void *y) {
  const rpt__fold *p = x, *q = y;
  return p->first < q->first ? -1 : p->first > q->first;
}

/* Pairs the spans of t into out; open_after[i] gets the number of busy
** spans open after record i: spans that close within RPT__BUSY_MAX_US
** (tool runs, calls or requests never answered and other long waits do not
** keep a stretch from being cut, or one pending request would stop all
** folding). */
static int spans_of(const sim_trace *t, rpt__folding *out, int32_t *open_after) {
  hspans h = {0};
  for (size_t i = 0; i < t->n && !h.oom; i++) hs_step(&h, &t->recs[i], i);
  free(h.open);
  out->spans = h.v;
  out->n_spans = h.n;
  if (h.oom) return -1;
  memset(open_after, 0, t->n * sizeof *open_after);
  for (size_t k = 0; k < h.n; k++) {
    const rpt__hspan *s = &h.v[k];
    if (s->cls == RPT__SP_TOOLRUN || s->close == RPT__NO_REC || s->t1 - s->t0 > RPT__BUSY_MAX_US) continue;
    open_after[s->open]++;
    open_after[s->close]--;
  }
  int32_t open = 0;
  for (size_t i = 0; i < t->n; i++) open_after[i] = open += open_after[i];
  return 0;
}

int rpt__html_fold(const sim_trace *t, const chk_violation *v, size_t nv, const chk_facts *facts,
                   uint64_t max_records, uint64_t max_bytes, rpt__folding *out) {
  memset(out, 0, sizeof *out);
  if (!rpt__rec(t, 0)) return 0;
  out->keep = malloc(t->n);
  int32_t *open_after = malloc(t->n * sizeof *open_after);
  if (!out->keep || !open_after) {
    free(open_after);
    return -1;
  }
  memset(out->keep, 1, t->n);
  out->kept = t->n;
  for (size_t i = 0; i < t->n; i++) out->bytes += rec_bytes(t, &t->recs[i]);
  int rc = spans_of(t, out, open_after);
  size_t ns = 0;
  hseg *sg = rc ? NULL : segments(t, open_after, &ns);
  free(open_after);
  if (!sg) return -1;
  rc = mark_essential(t, sg, ns, v, nv, facts);
  if (!rc) rc = fold_periodic(out, t, sg, ns);
  if (!max_records) max_records = UINT64_MAX;
  if (!max_bytes) max_bytes = UINT64_MAX;
  if (!rc && (out->kept > max_records || out->bytes > max_bytes))
    rc = fold_budget(out, t, sg, ns, max_records, max_bytes);
  if (out->n_folds) qsort(out->folds, out->n_folds, sizeof *out->folds, cmp_fold);
  free(sg);
  return rc;
}

void rpt__html_fold_free(rpt__folding *f) {
  free(f->keep);
  free(f->folds);
  free(f->spans);
  memset(f, 0, sizeof *f);
}
