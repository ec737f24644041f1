/*
** rpt_wait.c: who waits on whom at a virtual time (the "who waits" block of
** the terminal report and the wait-for edges of the HTML timeline).
*/
#include <stdlib.h>
#include <string.h>

#include "reports/rpt_internal.h"
#include "runtime/rt_events.h"

static void rpt_wait_add(rpt__waits *ws, rpt__wait w) {
  if (ws->n == ws->cap) {
    size_t nc = ws->cap ? ws->cap * 2 : 32;
    rpt__wait *nw = realloc(ws->w, nc * sizeof *nw);
    if (!nw) {
      ws->oom = 1;
      return;
    }
    ws->w = nw;
    ws->cap = nc;
  }
  ws->w[ws->n++] = w;
}

static void rpt_wait_del(rpt__waits *ws, size_t i) {
  memmove(&ws->w[i], &ws->w[i + 1], (ws->n - i - 1) * sizeof ws->w[0]);
  ws->n--;
}

/* Index of the latest item of category cat for actor (and id when
** match_id), or -1. */
static long rpt_wait_find(const rpt__waits *ws, int cat, uint32_t actor,
                          int match_id, int64_t id) {
  for (size_t i = ws->n; i-- > 0;) {
    const rpt__wait *w = &ws->w[i];
    if (w->cat == cat && w->actor == actor && (!match_id || w->id == id)) return (long)i;
  }
  return -1;
}

static void rpt_wait_drop(rpt__waits *ws, int cat, uint32_t actor, int match_id, int64_t id) {
  long i = rpt_wait_find(ws, cat, actor, match_id, id);
  if (i >= 0) rpt_wait_del(ws, (size_t)i);
}

static void rpt_wait_death(rpt__waits *ws, uint32_t actor) {
  for (size_t i = ws->n; i-- > 0;)
    if (ws->w[i].actor == actor && (ws->w[i].cat == RPT__W_GATE || ws->w[i].cat == RPT__W_RPC))
      rpt_wait_del(ws, i);
}

static void rpt_wait_alarm(rpt__waits *ws, const sim_rec *r, int64_t at, uint64_t idx) {
  long i = rpt_wait_find(ws, RPT__W_ALARM, r->actor, 0, 0);
  if (i >= 0) {
    ws->w[i].x = at;
    ws->w[i].t = r->t_us;
    ws->w[i].idx = idx;
  } else {
    rpt_wait_add(ws, (rpt__wait){RPT__W_ALARM, r->actor, 0, r->t_us, at, 0, idx});
  }
}

static void rpt_wait_step(rpt__waits *ws, const sim_rec *r, uint64_t idx) {
  switch (r->kind) {
  case RT_EV_GATE_ACQUIRE: rpt_wait_add(ws, (rpt__wait){RPT__W_GATE, r->actor, 0, r->t_us, 0, r->s, idx}); break;
  case RT_EV_GATE_RELEASE:
  case RT_EV_GATE_TIMEOUT: rpt_wait_drop(ws, RPT__W_GATE, r->actor, 0, 0); break;
  case RT_EV_ACTOR_DEATH: rpt_wait_death(ws, r->actor); break;
  case RT_EV_RPC_SEND: rpt_wait_add(ws, (rpt__wait){RPT__W_RPC, r->actor, r->a, r->t_us, r->b, r->s, idx}); break;
  case RT_EV_RPC_REPLY: rpt_wait_drop(ws, RPT__W_RPC, r->actor, 1, r->a); break;
  case RT_EV_REQUEST_ARRIVE: rpt_wait_add(ws, (rpt__wait){RPT__W_REQ, r->actor, r->a, r->t_us, r->b, 0, idx}); break;
  case RT_EV_REQUEST_OK:
  case RT_EV_REQUEST_FAIL: rpt_wait_drop(ws, RPT__W_REQ, r->actor, 1, r->a); break;
  case RT_EV_ALARM_SET: rpt_wait_alarm(ws, r, r->a, idx); break;
  case RT_EV_ALARM_RETRY: rpt_wait_alarm(ws, r, r->a, idx); break;
  case RT_EV_ALARM_DELETE:
  case RT_EV_ALARM_FIRE: rpt_wait_drop(ws, RPT__W_ALARM, r->actor, 0, 0); break;
  default: break;
  }
}

void rpt__waits_at(const sim_trace *t, int64_t now, rpt__waits *ws) {
  if (!rpt__rec(t, 0)) return;
  for (size_t i = 0; i < t->n && t->recs[i].t_us <= now && !ws->oom; i++)
    rpt_wait_step(ws, &t->recs[i], i);
}
