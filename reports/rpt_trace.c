/*
** rpt_trace.c: the run as Chrome Trace Event JSON, for ui.perfetto.dev.
**
** Layout (pid 1 = the world): tid 0 "world"; per actor a, tid 2a+1 is its
** gate track and tid 2a+2 its work track (startup, requests, alarm
** handlers). Perfetto drops "X" slices that overlap without nesting on one
** (pid, tid), so every span is kept on a per-track stack and written as
** "X" only when it closes at the top of its track's stack; a span that
** closes below the top (it crosses a later one, e.g. two concurrent
** requests) is written as an async b/e pair instead. The X slices of a
** track are therefore disjoint or nested by construction: if A opened
** before B and B was still open when A closed, A was not at the top, so
** A is not an X. Fibers are always async (id = fiber id). The document is
** streamed (a trace can hold millions of records); only the X slices are
** buffered, to be written sorted by (tid, ts, longest first).
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reports/rpt_internal.h"
#include "runtime/rt_events.h"

#define RPT_MAX_TRACE_ACTORS (1u << 20) /* larger indices go to "world" */

enum { RPT_SP_GATE, RPT_SP_STARTUP, RPT_SP_REQ, RPT_SP_ALARM, RPT_SP_FIBER };
static const char *const rpt_sp_cat[] = {"gate", "startup", "request", "alarm", "fiber"};

typedef struct rpt_span {
  int64_t tid, ts, end;
  uint64_t seq;        /* open order */
  size_t open_idx;     /* trace index of the opening record */
  uint32_t end_kind;   /* kind of the closing record; RT_EV_NONE: open at end */
  uint32_t actor;
  int cls;
  int64_t key;         /* request id or fiber id */
} rpt_span;

typedef struct rpt_tw {
  FILE *f;
  const rpt_run *r;
  const sim_trace *t;
  uint32_t nact;
  int first;
  int oom;
  rpt_span *open, *xs;
  size_t n_open, cap_open, n_xs, cap_xs;
  uint64_t seq, async_id;
  int64_t *keepalive, *waituntil;
  int64_t now;
} rpt_tw;

static int64_t rpt_tid_gate(uint32_t a) { return 2 * (int64_t)a + 1; }
static int64_t rpt_tid_work(uint32_t a) { return 2 * (int64_t)a + 2; }

static int rpt_push(rpt_span **arr, size_t *n, size_t *cap, const rpt_span *s) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    rpt_span *na = realloc(*arr, nc * sizeof *na);
    if (!na) return -1;
    *arr = na;
    *cap = nc;
  }
  (*arr)[(*n)++] = *s;
  return 0;
}

/* Starts a new event object: separator, then {"name":<name>,"ph":"<ph>". */
static void rpt_ev(rpt_tw *w, const char *name, const char *ph) {
  fputs(w->first ? "\n" : ",\n", w->f);
  w->first = 0;
  fputs("{\"name\":", w->f);
  rpt__json_str(w->f, name);
  fprintf(w->f, ",\"ph\":\"%s\",\"pid\":1", ph);
}

/* Writes ,"args":{decoded fields of rec[, extra_key: extra_val]}. */
static void rpt_args(rpt_tw *w, const sim_rec *rec, const char *xkey, const char *xval) {
  rpt__fval fv[RT_FIELDS];
  char ab[24];
  int n = rpt__decode(w->t, rec, fv);
  fputs(",\"args\":{", w->f);
  for (int i = 0; i < n; i++) {
    const char *name = rt_schema_enum_name(fv[i].type, fv[i].v);
    if (i) fputc(',', w->f);
    rpt__json_str(w->f, fv[i].key);
    fputc(':', w->f);
    if (fv[i].type == RT_F_STR || fv[i].type == RT_F_JSON) rpt__json_str(w->f, fv[i].str);
    else if (fv[i].type == RT_F_BOOL) fputs(fv[i].v ? "true" : "false", w->f);
    else if (fv[i].type == RT_F_ACTOR && fv[i].v >= 0 && fv[i].v < (int64_t)RT_NO_ACTOR)
      rpt__json_str(w->f, rpt__actor(w->r, (uint32_t)fv[i].v, ab));
    else if (name) rpt__json_str(w->f, name);
    else fprintf(w->f, "%" PRId64, fv[i].v);
  }
  if (xkey) {
    if (n) fputc(',', w->f);
    rpt__json_str(w->f, xkey);
    fputc(':', w->f);
    rpt__json_str(w->f, xval);
  }
  fputc('}', w->f);
}

static void rpt_span_name(rpt_tw *w, const rpt_span *s, char *buf, size_t len) {
  const sim_rec *rec = &w->t->recs[s->open_idx];
  const char *str = sim_trace_str(w->t, rec->s);
  const char *entry = rt_schema_enum_name(RT_F_ENTRY, s->cls == RPT_SP_REQ ? rec->b : rec->a);
  switch (s->cls) {
  case RPT_SP_GATE: snprintf(buf, len, *str ? "gate: %s" : "gate%s", str); break;
  case RPT_SP_STARTUP: snprintf(buf, len, "startup (%s)", entry ? entry : "?"); break;
  case RPT_SP_REQ: snprintf(buf, len, "request (%s)", entry ? entry : "?"); break;
  case RPT_SP_ALARM: snprintf(buf, len, "alarm handler"); break;
  default: snprintf(buf, len, "fiber %s", *str ? str : "?"); break;
  }
}

static void rpt_span_args(rpt_tw *w, const rpt_span *s) {
  char kb[24];
  const char *how = s->end_kind == RT_EV_NONE ? "open at end" : rpt__kind_name(s->end_kind, kb);
  rpt_args(w, &w->t->recs[s->open_idx], "ended_by", how);
}

static void rpt_emit_async(rpt_tw *w, const rpt_span *s) {
  char name[160];
  uint64_t id = s->cls == RPT_SP_FIBER ? (uint64_t)s->key : ++w->async_id;
  rpt_span_name(w, s, name, sizeof name);
  for (int e = 0; e < 2; e++) {
    rpt_ev(w, name, e ? "e" : "b");
    fprintf(w->f, ",\"tid\":%" PRId64 ",\"ts\":%" PRId64 ",\"cat\":\"%s\",\"id\":%" PRIu64,
            s->tid, e ? s->end : s->ts, rpt_sp_cat[s->cls], id);
    if (!e) rpt_span_args(w, s);
    fputc('}', w->f);
  }
}

static void rpt_emit_x(rpt_tw *w, const rpt_span *s) {
  char name[160];
  rpt_span_name(w, s, name, sizeof name);
  rpt_ev(w, name, "X");
  fprintf(w->f, ",\"tid\":%" PRId64 ",\"ts\":%" PRId64 ",\"dur\":%" PRId64 ",\"cat\":\"%s\"",
          s->tid, s->ts, s->end - s->ts, rpt_sp_cat[s->cls]);
  rpt_span_args(w, s);
  fputc('}', w->f);
}

static void rpt_open(rpt_tw *w, size_t idx, int cls, int64_t key) {
  const sim_rec *rec = &w->t->recs[idx];
  rpt_span s = {cls == RPT_SP_GATE ? rpt_tid_gate(rec->actor) : rpt_tid_work(rec->actor),
                w->now, w->now, w->seq++, idx, RT_EV_NONE, rec->actor, cls, key};
  if (rpt_push(&w->open, &w->n_open, &w->cap_open, &s) != 0) w->oom = 1;
}

/* Closes open span i at the current time: X when it is the newest open
** span of its track, else async. */
static void rpt_close(rpt_tw *w, size_t i, uint32_t end_kind) {
  rpt_span s = w->open[i];
  s.end = w->now;
  s.end_kind = end_kind;
  int top = s.cls != RPT_SP_FIBER;
  for (size_t j = 0; j < w->n_open && top; j++)
    if (w->open[j].tid == s.tid && w->open[j].cls != RPT_SP_FIBER && w->open[j].seq > s.seq) top = 0;
  memmove(&w->open[i], &w->open[i + 1], (w->n_open - i - 1) * sizeof s);
  w->n_open--;
  if (!top) rpt_emit_async(w, &s);
  else if (rpt_push(&w->xs, &w->n_xs, &w->cap_xs, &s) != 0) w->oom = 1;
}

/* Closes the newest open span of class cls of actor (matching key when
** by_key). */
static void rpt_close_one(rpt_tw *w, uint32_t actor, int cls, int by_key, int64_t key,
                          uint32_t end_kind) {
  for (size_t i = w->n_open; i-- > 0;) {
    const rpt_span *s = &w->open[i];
    if (s->actor == actor && s->cls == cls && (!by_key || s->key == key)) {
      rpt_close(w, i, end_kind);
      return;
    }
  }
}

/* Closes every open span of actor, newest first (so they nest). */
static void rpt_close_actor(rpt_tw *w, uint32_t actor, uint32_t end_kind) {
  for (size_t i = w->n_open; i-- > 0;)
    if (w->open[i].actor == actor) rpt_close(w, i, end_kind);
}

static void rpt_instant(rpt_tw *w, const sim_rec *rec, const char *name) {
  int global = rec->actor >= w->nact;
  rpt_ev(w, name, "i");
  fprintf(w->f, ",\"tid\":%" PRId64 ",\"ts\":%" PRId64 ",\"s\":\"%s\"",
          global ? 0 : rpt_tid_work(rec->actor), w->now, global ? "g" : "t");
  rpt_args(w, rec, NULL, NULL);
  fputc('}', w->f);
}

static void rpt_counter(rpt_tw *w, uint32_t a) {
  char name[64], ab[24];
  snprintf(name, sizeof name, "%s pending", rpt__actor(w->r, a, ab));
  rpt_ev(w, name, "C");
  fprintf(w->f, ",\"tid\":%" PRId64 ",\"ts\":%" PRId64 ",\"args\":{\"waitUntil\":%" PRId64
                ",\"keepAlive\":%" PRId64 "}}",
          rpt_tid_work(a), w->now, w->waituntil[a], w->keepalive[a]);
}

/* Instants: faults, deaths, alarm fires, gate timeouts, recovery
** hand-overs, terminal tool-run statuses, storage failures. */
static void rpt_step_instant(rpt_tw *w, const sim_rec *rec) {
  char name[160], kb[24];
  const char *s = sim_trace_str(w->t, rec->s), *s2 = sim_trace_str(w->t, rec->s2);
  const char *en;
  switch (rec->kind) {
  case RT_EV_FAULT: snprintf(name, sizeof name, "fault: %s%s%s", *s ? s : "?", *s2 ? " " : "", s2); break;
  case RT_EV_ACTOR_DEATH:
    en = rt_schema_enum_name(RT_F_DEATH, rec->a);
    snprintf(name, sizeof name, "death: %s", en ? en : "?");
    break;
  case RT_EV_ALARM_FIRE: snprintf(name, sizeof name, "alarm fire"); break;
  case RT_EV_GATE_TIMEOUT: snprintf(name, sizeof name, "gate timeout"); break;
  case RT_EV_FIBER_RECOVERED:
    en = rt_schema_enum_name(RT_F_ACTION, rec->c);
    snprintf(name, sizeof name, "recovered fiber %" PRId64 " (%s)", rec->a, en ? en : "?");
    break;
  case RT_EV_FIBER_HOOK_THREW: snprintf(name, sizeof name, "recovery hook threw (fiber %" PRId64 ")", rec->a); break;
  case RT_EV_TOOLRUN_STATUS:
    if (!RT_TR_IS_TERMINAL(rec->b)) return;
    en = rt_schema_enum_name(RT_F_TRSTATUS, rec->b);
    snprintf(name, sizeof name, "tool run %" PRId64 " -> %s", rec->a, en ? en : "?");
    break;
  case RT_EV_STORAGE_FAIL: snprintf(name, sizeof name, "%s", rpt__kind_name(rec->kind, kb)); break;
  default: return;
  }
  rpt_instant(w, rec, name);
}

static void rpt_step_counter(rpt_tw *w, const sim_rec *rec) {
  uint32_t a = rec->actor;
  if (rec->kind == RT_EV_KEEPALIVE) w->keepalive[a] = rec->a;
  else if (rec->kind == RT_EV_WAITUNTIL) w->waituntil[a] = rec->a;
  else if (rec->kind == RT_EV_ACTOR_DEATH && (w->keepalive[a] || w->waituntil[a]))
    w->keepalive[a] = w->waituntil[a] = 0;
  else return;
  rpt_counter(w, a);
}

static void rpt_step(rpt_tw *w, size_t idx) {
  const sim_rec *rec = &w->t->recs[idx];
  if (rec->t_us > w->now) w->now = rec->t_us;
  rpt_step_instant(w, rec);
  uint32_t a = rec->actor;
  if (a >= w->nact) return;
  switch (rec->kind) {
  case RT_EV_GATE_ACQUIRE: rpt_open(w, idx, RPT_SP_GATE, 0); break;
  case RT_EV_GATE_RELEASE:
  case RT_EV_GATE_TIMEOUT: rpt_close_one(w, a, RPT_SP_GATE, 0, 0, rec->kind); break;
  case RT_EV_ACTOR_DEATH: rpt_close_actor(w, a, rec->kind); break;
  case RT_EV_STARTUP_BEGIN: rpt_open(w, idx, RPT_SP_STARTUP, 0); break;
  case RT_EV_STARTUP_OK:
  case RT_EV_STARTUP_FAIL: rpt_close_one(w, a, RPT_SP_STARTUP, 0, 0, rec->kind); break;
  case RT_EV_REQUEST_ARRIVE: rpt_open(w, idx, RPT_SP_REQ, rec->a); break;
  case RT_EV_REQUEST_OK:
  case RT_EV_REQUEST_FAIL: rpt_close_one(w, a, RPT_SP_REQ, 1, rec->a, rec->kind); break;
  case RT_EV_ALARM_FIRE: rpt_open(w, idx, RPT_SP_ALARM, 0); break;
  case RT_EV_ALARM_DONE: rpt_close_one(w, a, RPT_SP_ALARM, 0, 0, rec->kind); break;
  case RT_EV_FIBER_START: rpt_open(w, idx, RPT_SP_FIBER, rec->a); break;
  case RT_EV_FIBER_DONE: rpt_close_one(w, a, RPT_SP_FIBER, 1, rec->a, rec->kind); break;
  default: break;
  }
  rpt_step_counter(w, rec);
}

static int rpt_xs_cmp(const void *pa, const void *pb) {
  const rpt_span *a = pa, *b = pb;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void rpt_meta(rpt_tw *w) {
  char name[160], ab[24];
  snprintf(name, sizeof name, "revenant: %s", w->r->scenario_name ? w->r->scenario_name : "?");
  fputs("{\"traceEvents\":[", w->f);
  w->first = 1;
  rpt_ev(w, "process_name", "M");
  fputs(",\"tid\":0,\"args\":{\"name\":", w->f);
  rpt__json_str(w->f, name);
  fputs("}}", w->f);
  rpt_ev(w, "thread_name", "M");
  fputs(",\"tid\":0,\"args\":{\"name\":\"world\"}}", w->f);
  for (uint32_t a = 0; a < w->nact; a++) {
    for (int k = 0; k < 2; k++) {
      snprintf(name, sizeof name, "%s%s", rpt__actor(w->r, a, ab), k ? " work" : " gate");
      rpt_ev(w, "thread_name", "M");
      fprintf(w->f, ",\"tid\":%" PRId64 ",\"args\":{\"name\":", k ? rpt_tid_work(a) : rpt_tid_gate(a));
      rpt__json_str(w->f, name);
      fputs("}}", w->f);
    }
  }
}

static void rpt_tail(rpt_tw *w) {
  char hb[24];
  fputs("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"scenario\":", w->f);
  rpt__json_str(w->f, w->r->scenario_name);
  fputs(",\"seed\":", w->f);
  rpt__json_str(w->f, rpt__hex(hb, sizeof hb, w->r->seed, 0));
  fputs(",\"strategy\":", w->f);
  rpt__json_str(w->f, w->r->strategy);
  fputs(",\"variant\":", w->f);
  rpt__json_str(w->f, w->r->variant);
  fputs(",\"trace_hash\":", w->f);
  rpt__json_str(w->f, rpt__hex(hb, sizeof hb, w->r->trace_hash, 1));
  fputs("}}\n", w->f);
}

static uint32_t rpt_trace_nact(const rpt_run *r) {
  uint32_t n = r->n_actors < RPT_MAX_TRACE_ACTORS ? r->n_actors : RPT_MAX_TRACE_ACTORS;
  const sim_trace *t = r->trace;
  for (size_t i = 0; rpt__rec(t, 0) && i < t->n; i++)
    if (t->recs[i].actor < RPT_MAX_TRACE_ACTORS && t->recs[i].actor >= n) n = t->recs[i].actor + 1;
  return n;
}

int rpt_trace_write(FILE *f, const rpt_run *r) {
  rpt_tw w = {.f = f, .r = r, .t = r->trace, .nact = rpt_trace_nact(r)};
  w.keepalive = calloc(w.nact + 1, sizeof(int64_t));
  w.waituntil = calloc(w.nact + 1, sizeof(int64_t));
  w.oom = !w.keepalive || !w.waituntil;
  if (!w.oom) rpt_meta(&w);
  size_t n = rpt__rec(w.t, 0) ? w.t->n : 0;
  for (size_t i = 0; i < n && !w.oom; i++) rpt_step(&w, i);
  if (r->end_us > w.now) w.now = r->end_us;
  while (w.n_open && !w.oom) rpt_close(&w, w.n_open - 1, RT_EV_NONE);
  if (!w.oom) {
    if (w.n_xs) qsort(w.xs, w.n_xs, sizeof *w.xs, rpt_xs_cmp);
    for (size_t i = 0; i < w.n_xs; i++) rpt_emit_x(&w, &w.xs[i]);
    rpt_tail(&w);
  }
  free(w.open);
  free(w.xs);
  free(w.keepalive);
  free(w.waituntil);
  return (w.oom || ferror(f)) ? -1 : 0;
}
