/*
** rpt_stats.c: recovery times measured over a trace, and distributions.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reports/rpt_internal.h"
#include "runtime/rt_events.h"

#define RPT_MAX_STAT_ACTORS (1u << 20)

enum { RPT_IT_FIBER, RPT_IT_RUN };

/* A live fiber or non-terminal tool run; orphan=1 once its actor died. */
typedef struct rpt_item {
  uint32_t actor;
  int type;
  int orphan;
  int64_t id;
} rpt_item;

typedef struct rpt_rs {
  rpt_item *it;
  size_t n, cap;
  int64_t *start;       /* per actor: episode start, -1 when none */
  uint32_t nact;
  int oom;
  int64_t *out;
  size_t n_out, cap_out;
} rpt_rs;

static void rpt_rs_add(rpt_rs *s, uint32_t actor, int type, int64_t id) {
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 64;
    rpt_item *ni = realloc(s->it, nc * sizeof *ni);
    if (!ni) {
      s->oom = 1;
      return;
    }
    s->it = ni;
    s->cap = nc;
  }
  s->it[s->n++] = (rpt_item){actor, type, 0, id};
}

/* Makes sure start[] covers actor a. */
static int rpt_rs_actor(rpt_rs *s, uint32_t a) {
  if (a >= RPT_MAX_STAT_ACTORS) return -1;
  if (a < s->nact) return 0;
  uint32_t nn = a + 1 > 2 * s->nact ? a + 1 : 2 * s->nact;
  int64_t *ns = realloc(s->start, nn * sizeof *ns);
  if (!ns) {
    s->oom = 1;
    return -1;
  }
  for (uint32_t i = s->nact; i < nn; i++) ns[i] = -1;
  s->start = ns;
  s->nact = nn;
  return 0;
}

static void rpt_rs_death(rpt_rs *s, const sim_rec *r) {
  int any = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->it[i].actor != r->actor) continue;
    s->it[i].orphan = 1;
    any = 1;
  }
  if (any && rpt_rs_actor(s, r->actor) == 0 && s->start[r->actor] < 0) s->start[r->actor] = r->t_us;
}

/* Removes the item (type, id); when it was an orphan and its actor has
** no orphans left, the episode ends at time t. */
static void rpt_rs_done(rpt_rs *s, int type, int64_t id, int64_t t) {
  size_t i = 0;
  while (i < s->n && !(s->it[i].type == type && s->it[i].id == id)) i++;
  if (i == s->n) return;
  rpt_item gone = s->it[i];
  memmove(&s->it[i], &s->it[i + 1], (s->n - i - 1) * sizeof gone);
  s->n--;
  if (!gone.orphan || gone.actor >= s->nact || s->start[gone.actor] < 0) return;
  for (size_t j = 0; j < s->n; j++)
    if (s->it[j].actor == gone.actor && s->it[j].orphan) return;
  if (s->n_out < s->cap_out) s->out[s->n_out++] = t - s->start[gone.actor];
  s->start[gone.actor] = -1;
}

static void rpt_rs_step(rpt_rs *s, const sim_rec *r) {
  switch (r->kind) {
  case RT_EV_FIBER_START: rpt_rs_add(s, r->actor, RPT_IT_FIBER, r->a); break;
  case RT_EV_TOOLRUN_INSERT: rpt_rs_add(s, r->actor, RPT_IT_RUN, r->a); break;
  case RT_EV_ACTOR_DEATH: rpt_rs_death(s, r); break;
  case RT_EV_FIBER_DONE: {
    /* Only a live fiber finishes; an orphan needs a recovery hook. */
    for (size_t i = 0; i < s->n; i++)
      if (s->it[i].type == RPT_IT_FIBER && s->it[i].id == r->a && !s->it[i].orphan) {
        rpt_rs_done(s, RPT_IT_FIBER, r->a, r->t_us);
        break;
      }
    break;
  }
  case RT_EV_FIBER_RECOVERED: rpt_rs_done(s, RPT_IT_FIBER, r->a, r->t_us); break;
  case RT_EV_TOOLRUN_STATUS:
    if (RT_TR_IS_TERMINAL(r->b)) rpt_rs_done(s, RPT_IT_RUN, r->a, r->t_us);
    break;
  default: break;
  }
}

struct rpt_recovery_stream {
  rpt_rs s;
};

rpt_recovery_stream *rpt_recovery_stream_new(int64_t *out_us, size_t cap) {
  rpt_recovery_stream *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->s.out = out_us;
  st->s.cap_out = out_us ? cap : 0;
  return st;
}

void rpt_recovery_observe(void *ctx, const sim_rec *r, uint64_t index) {
  rpt_recovery_stream *st = ctx;
  (void)index;
  if (!st->s.oom) rpt_rs_step(&st->s, r);
}

size_t rpt_recovery_stream_end(rpt_recovery_stream *st) {
  if (!st) return 0;
  size_t n = st->s.n_out;
  free(st->s.it);
  free(st->s.start);
  free(st);
  return n;
}

void rpt_recovery_times(const sim_trace *t, int64_t *out_us, size_t *n, size_t cap) {
  rpt_rs s = {.out = out_us, .cap_out = out_us ? cap : 0};
  size_t nrec = rpt__rec(t, 0) ? t->n : 0;
  for (size_t i = 0; i < nrec && !s.oom; i++) rpt_rs_step(&s, &t->recs[i]);
  free(s.it);
  free(s.start);
  if (n) *n = s.n_out;
}

static int rpt_i64_cmp(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return (a > b) - (a < b);
}

static void rpt_ms(FILE *f, const char *label, int64_t us) {
  uint64_t m = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
  fprintf(f, " %s=%s%" PRIu64 ".%03" PRIu64 "ms", label, us < 0 ? "-" : "", m / 1000, m % 1000);
}

void rpt_distribution(FILE *f, const int64_t *v, size_t n) {
  static const int pct[3] = {50, 90, 99};
  static const char *const lab[3] = {"p50", "p90", "p99"};
  int64_t *s = n ? malloc(n * sizeof *s) : NULL;
  if (!s) {
    fputs(n ? "n=? (out of memory)\n" : "n=0\n", f);
    return;
  }
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, rpt_i64_cmp);
  fprintf(f, "n=%zu", n);
  rpt_ms(f, "min", s[0]);
  for (int i = 0; i < 3; i++) {
    size_t rank = ((size_t)pct[i] * n + 99) / 100; /* nearest rank, 1-based */
    rpt_ms(f, lab[i], s[rank ? rank - 1 : 0]);
  }
  rpt_ms(f, "max", s[n - 1]);
  fputc('\n', f);
  free(s);
}
