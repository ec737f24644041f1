/*
** chk_chat.c: the durable chat turns of seed 000 Layer 3 ("Chat recovery in
** AIChatAgent", "Recovery strategies by provider", continueLastTurn) and
** reference A.12, checked over the trace alone:
**   chat_no_lost_user_message    a user message acknowledged to its client
**                                never rolls back, and every committed user
**                                message is answered (an assistant message
**                                commits for its text), told an error
**                                (stream error), or taken over explicitly
**                                (onChatRecovery returned anything but {}:
**                                the developer handles the rest) within
**                                recovery_bound of its commit or the last
**                                fault;
**   chat_no_duplicate_assistant  one assistant message per user text, and
**                                no message holding one chunk twice;
**   chat_continuation_appends    a continuation continues the interrupted
**                                turn's message: the target answers the
**                                same user text, its writes go to the
**                                target, and each keeps the committed text
**                                as a prefix;
**   chat_no_regeneration         no new generation for a user text once a
**                                stored (store: true) generation for it has
**                                completed on the provider and could be
**                                retrieved: its response id was stashed by
**                                a chat fiber and that stash committed.
** Chat writes (RT_EV_CHAT_USER, RT_EV_CHAT_ASSISTANT) count once their
** transaction commits on the same actor. User texts are interned trace
** strings: equal text, equal id. Each invariant reports once per subject.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk_reg.h"
#include "runtime/rt_events.h"

#define CC_NONE UINT32_MAX

typedef struct cc_head {
  uint32_t actor;
  int64_t key;
  uint64_t idx;               /* the record that created it */
  int64_t t;
} cc_head;

typedef struct cc_q {         /* one user text (key: its string id) */
  cc_head h;
  int64_t msg;                /* the first committed assistant message for it */
  uint64_t msg_idx;
  int64_t msg_t;
  int resolved;
  int stored_done;            /* a store:true generation for it completed */
  int64_t stored_resp, stored_t;
  uint64_t stored_idx;
  int dup_reported, regen_reported;
} cc_q;

typedef struct cc_user {      /* key: message id */
  cc_head h;
  int64_t req;
  uint32_t q;
  int state;                  /* 0 pending, 1 committed, 2 rolled back */
  int acked, reported;
  uint64_t commit_idx, ack_idx;
  int64_t commit_t, ack_t;
} cc_user;

typedef struct cc_msg {       /* an assistant message; key: message id */
  cc_head h;
  uint32_t text;              /* committed text (0: none yet) */
  uint64_t commit_idx;
  int doubled_reported;
} cc_msg;

typedef struct cc_turn {      /* key: request id */
  cc_head h;
  int mode;
  int64_t target, origin;
  uint32_t q;
  uint64_t resume_idx;
  int reported;
} cc_turn;

typedef struct cc_resp {      /* an upstream generation; key: response id */
  cc_head h;
  uint32_t q;
  int completed, known;       /* completed stored; id durably stashed */
  uint64_t done_idx;
  int64_t done_t;
} cc_resp;

typedef struct cc_req {       /* key: request id -> its user message */
  cc_head h;
  uint32_t user;
} cc_req;

typedef struct cc_pend {      /* a chat write waiting for its transaction */
  uint32_t actor;
  int64_t txn, writer;
  int is_user;                /* 1 user, 0 assistant, 2 a stashed response id */
  uint32_t i, text, q;        /* user / message / response index; text; user text */
  uint64_t idx;
} cc_pend;

typedef struct cc_tab {
  void *v;
  size_t n, cap, sz;
  chk_map ix;
} cc_tab;

struct chk_chat {
  cc_tab qs, users, msgs, turns, reqs; /* reqs: (actor, request id) -> user */
  cc_tab resps, fibers;       /* generations; chat fibers (key: fiber id) */
  cc_pend *pend;
  size_t n_pend, cap_pend;
};

/* ---- tables ------------------------------------------------------------- */

extern const chk_class chk__chat_class;

/* The chat checker's state in c. */
#define CHAT(c) ((struct chk_chat *)chk_state((c), &chk__chat_class))

static void *chat_make(chk_set *c) {
  (void)c;
  struct chk_chat *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->qs.sz = sizeof(cc_q);
  s->users.sz = sizeof(cc_user);
  s->msgs.sz = sizeof(cc_msg);
  s->turns.sz = sizeof(cc_turn);
  s->reqs.sz = sizeof(cc_req);
  s->resps.sz = sizeof(cc_resp);
  s->fibers.sz = sizeof(cc_head);
  return s;
}

static void *cc_at(cc_tab *t, uint32_t i) { return (char *)t->v + (size_t)i * t->sz; }

/* Index of (actor, key) in t, created (zeroed, header set) when create is
** 1; CC_NONE when absent or on OOM. */
static uint32_t cc_find(chk_set *c, cc_tab *t, uint32_t actor, int64_t key, int create,
                        const sim_rec *r, uint64_t idx) {
  uint64_t k[4] = {actor, (uint64_t)key, 0, 0};
  uint32_t i;
  if (chk__map_get(&t->ix, k, &i)) return i;
  if (!create) return CC_NONE;
  if (t->n == t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 16;
    void *nv = realloc(t->v, nc * t->sz);
    if (!nv) {
      chk__oom(c);
      return CC_NONE;
    }
    t->v = nv;
    t->cap = nc;
  }
  if (t->n >= UINT32_MAX - 1 || chk__map_put(&t->ix, k, (uint32_t)t->n) != 0) {
    chk__oom(c);
    return CC_NONE;
  }
  cc_head *h = cc_at(t, (uint32_t)t->n);
  memset(h, 0, t->sz);
  *h = (cc_head){actor, key, idx, r->t_us};
  return (uint32_t)t->n++;
}

static cc_q *q_of(struct chk_chat *s, uint32_t i) {
  return i == CC_NONE ? NULL : (cc_q *)cc_at(&s->qs, i);
}

static cc_turn *turn_of(chk_set *c, uint32_t actor, int64_t req) {
  struct chk_chat *s = CHAT(c);
  uint32_t i = cc_find(c, &s->turns, actor, req, 0, NULL, 0);
  return i == CC_NONE ? NULL : (cc_turn *)cc_at(&s->turns, i);
}

static const char *str(chk_set *c, uint32_t id) { return sim_trace_str(chk__trace(c), id); }

/* ---- chat_no_lost_user_message ------------------------------------------- */

static void cc_ack(chk_set *c, const sim_rec *r, uint64_t idx) {
  struct chk_chat *s = CHAT(c);
  uint32_t ri = cc_find(c, &s->reqs, r->actor, r->a, 0, NULL, 0), ui;
  char t1[32];
  if (ri == CC_NONE) return;
  ui = ((cc_req *)cc_at(&s->reqs, ri))->user;
  cc_user *u = cc_at(&s->users, ui);
  u->acked = 1;
  u->ack_idx = idx;
  u->ack_t = r->t_us;
  if (u->state != 2 || u->reported) return;
  uint64_t chain[2] = {u->h.idx, idx};
  u->reported = 1;
  chk__violate(c, CHK_CHAT_NO_LOST_USER_MESSAGE, r->actor, r->t_us, u->h.key, idx, chain, 2,
               "user message %" PRId64 " (request %" PRId64 ") was acknowledged at t=%ss "
               "after its write had rolled back", u->h.key, u->req,
               chk__secs(t1, sizeof t1, r->t_us));
}

static void cc_user_rollback(chk_set *c, cc_user *u, const sim_rec *r, uint64_t idx) {
  char t1[32], t2[32];
  u->state = 2;
  if (!u->acked || u->reported) return;
  uint64_t chain[3] = {u->h.idx, u->ack_idx, idx};
  u->reported = 1;
  chk__violate(c, CHK_CHAT_NO_LOST_USER_MESSAGE, r->actor, r->t_us, u->h.key, idx, chain, 3,
               "user message %" PRId64 " (request %" PRId64 ") was acknowledged at t=%ss "
               "but its write rolled back at t=%ss: the message is lost",
               u->h.key, u->req, chk__secs(t1, sizeof t1, u->ack_t),
               chk__secs(t2, sizeof t2, r->t_us));
}

static void cc_resolve_turn(chk_set *c, uint32_t actor, int64_t req) {
  cc_turn *t = turn_of(c, actor, req);
  cc_q *q = t ? q_of(CHAT(c), t->q) : NULL;
  if (q) q->resolved = 1;
}

static void chat_finish(chk_set *c, void *st, int64_t end_us) {
  struct chk_chat *s = st;
  char t1[32], t2[32], bd[32];
  int64_t fault_t;
  uint64_t fault_idx;
  int has_fault = chk__last_fault(c, &fault_t, &fault_idx);
  int64_t bound = chk__params(c)->recovery_bound_us;
  for (size_t i = 0; s && i < s->users.n; i++) {
    cc_user *u = cc_at(&s->users, (uint32_t)i);
    cc_q *q = q_of(s, u->q);
    int64_t from = has_fault && fault_t > u->commit_t ? fault_t : u->commit_t;
    if (u->state != 1 || u->reported || !q || q->resolved ||
        end_us - from < bound)
      continue;
    uint64_t chain[3] = {u->h.idx, u->commit_idx, has_fault ? fault_idx : CHK_NO_INDEX};
    u->reported = 1;
    chk__violate(c, CHK_CHAT_NO_LOST_USER_MESSAGE, u->h.actor, end_us, u->h.key, CHK_NO_INDEX,
                 chain, 3,
                 "user message %" PRId64 " (request %" PRId64 ", committed at t=%ss) was "
                 "never answered, told an error or taken over by t=%ss (bound %s)",
                 u->h.key, u->req, chk__secs(t1, sizeof t1, u->commit_t),
                 chk__secs(t2, sizeof t2, end_us),
                 chk__dur(bd, sizeof bd, bound));
  }
}

/* ---- chat_no_duplicate_assistant ------------------------------------------ */

/* The first chunk ("rG.k") text holds twice, or NULL (into tok). */
static const char *doubled_token(const char *text, char *tok, size_t cap) {
  for (const char *p = text; *p; p += strcspn(p, " "), p += *p == ' ') {
    size_t n = strcspn(p, " ");
    if (n == 0 || n >= cap) continue;
    for (const char *q = p + n; *q; q += strcspn(q, " "), q += *q == ' ') {
      size_t m = strcspn(q, " ");
      if (m == n && memcmp(p, q, n) == 0 && (q[m] == ' ' || q[m] == '\0')) {
        memcpy(tok, p, n);
        tok[n] = '\0';
        return tok;
      }
    }
  }
  return NULL;
}

static void cc_duplicate(chk_set *c, cc_q *q, const cc_msg *m, const sim_rec *r,
                         uint64_t idx) {
  char t1[32], t2[32];
  if (!q->msg) {
    q->msg = m->h.key;
    q->msg_idx = idx;
    q->msg_t = r->t_us;
    return;
  }
  if (q->msg == m->h.key || q->dup_reported) return;
  uint64_t chain[3] = {q->msg_idx, m->h.idx, idx};
  q->dup_reported = 1;
  chk__violate(c, CHK_CHAT_NO_DUPLICATE_ASSISTANT, r->actor, r->t_us, m->h.key, idx, chain, 3,
               "user message \"%.60s\" is answered twice: assistant message %" PRId64
               " (committed at t=%ss) and assistant message %" PRId64 " (committed at t=%ss)",
               str(c, (uint32_t)q->h.key), q->msg, chk__secs(t1, sizeof t1, q->msg_t),
               m->h.key, chk__secs(t2, sizeof t2, r->t_us));
}

static void cc_doubled(chk_set *c, cc_msg *m, const char *text, const sim_rec *r,
                       uint64_t idx) {
  char tok[64];
  if (m->doubled_reported || !doubled_token(text, tok, sizeof tok)) return;
  uint64_t chain[2] = {m->h.idx, idx};
  m->doubled_reported = 1;
  chk__violate(c, CHK_CHAT_NO_DUPLICATE_ASSISTANT, r->actor, r->t_us, m->h.key, idx, chain, 2,
               "assistant message %" PRId64 " holds chunk \"%s\" twice (its parts were "
               "persisted twice)", m->h.key, tok);
}

/* ---- chat_continuation_appends -------------------------------------------- */

/* A write of a continuation turn (or of the recovery of one): to its
** target, keeping the committed text as a prefix. */
static void cc_appends(chk_set *c, cc_turn *t, const cc_msg *m, const char *text,
                       const cc_pend *pd, const sim_rec *r, uint64_t idx) {
  const char *old = m->text ? str(c, m->text) : "";
  uint64_t chain[4] = {t->resume_idx, t->h.idx, pd->idx, idx};
  if (t->reported) return;
  if (m->h.key != t->target) {
    t->reported = 1;
    chk__violate(c, CHK_CHAT_CONTINUATION_APPENDS, r->actor, r->t_us, m->h.key, idx, chain, 4,
                 "continuation turn %" PRId64 " wrote a new assistant message %" PRId64
                 " instead of appending to message %" PRId64, t->h.key, m->h.key, t->target);
  } else if (strncmp(text, old, strlen(old)) != 0) {
    t->reported = 1;
    chk__violate(c, CHK_CHAT_CONTINUATION_APPENDS, r->actor, r->t_us, m->h.key, idx, chain, 4,
                 "continuation turn %" PRId64 " replaced the text of message %" PRId64
                 " instead of appending to it", t->h.key, m->h.key);
  }
}

/* At a continuation turn's start: its target must answer the same user
** text as the turn it continues. */
static void cc_continue_target(chk_set *c, cc_turn *t, const sim_rec *r, uint64_t idx) {
  cc_turn *o = t->origin ? turn_of(c, r->actor, t->origin) : NULL;
  if (!o || o->q == t->q || t->reported) return;
  uint64_t chain[3] = {o->h.idx, t->resume_idx, idx};
  t->reported = 1;
  chk__violate(c, CHK_CHAT_CONTINUATION_APPENDS, r->actor, r->t_us, t->target, idx, chain, 3,
               "continuation turn %" PRId64 " of interrupted turn %" PRId64 " (answering "
               "\"%.50s\") appends to message %" PRId64 ", which answers \"%.50s\"",
               t->h.key, o->h.key, str(c, (uint32_t)q_of(CHAT(c), o->q)->h.key), t->target,
               str(c, (uint32_t)q_of(CHAT(c), t->q)->h.key));
}

/* ---- chat_no_regeneration --------------------------------------------------- */

static void cc_pend_push(chk_set *c, const sim_rec *r, uint64_t idx, int is_user, uint32_t i);

/* Generation p of user text q became retrievable (completed and its id
** durably stashed), at record idx. */
static void cc_retrievable(chk_set *c, const cc_resp *p, const sim_rec *r, uint64_t idx) {
  cc_q *q = q_of(CHAT(c), p->q);
  if (!q || q->stored_done) return;
  q->stored_done = 1;
  q->stored_resp = p->h.key;
  q->stored_idx = idx;
  q->stored_t = r->t_us;
}

static void cc_upstream(chk_set *c, const sim_rec *r, uint64_t idx) {
  struct chk_chat *s = CHAT(c);
  uint32_t qi = cc_find(c, &s->qs, r->actor, r->s, 1, r, idx);
  uint32_t pi = cc_find(c, &s->resps, r->actor, r->a, 1, r, idx);
  cc_q *q = q_of(s, qi);
  char t1[32];
  if (!q || pi == CC_NONE) return;
  cc_resp *p = cc_at(&s->resps, pi);
  p->q = qi;
  if (r->b == RT_UP_COMPLETED && strcmp(str(c, r->s2), "retrieve") == 0) {
    p->completed = 1;
    p->done_idx = idx;
    p->done_t = r->t_us;
    if (p->known) cc_retrievable(c, p, r, idx);
  } else if (r->b == RT_UP_START && q->stored_done && !q->regen_reported) {
    uint64_t chain[2] = {q->stored_idx, idx};
    q->regen_reported = 1;
    chk__violate(c, CHK_CHAT_NO_REGENERATION, r->actor, r->t_us, r->a, idx, chain, 2,
                 "response %" PRId64 " for \"%.60s\" had completed on the provider and its "
                 "id was stashed (retrievable since t=%ss), but generation %" PRId64
                 " was started for it", q->stored_resp, str(c, r->s),
                 chk__secs(t1, sizeof t1, q->stored_t), r->a);
  }
}

/* A chat fiber's stash (b: the response id) waits for its commit. */
static void cc_stash(chk_set *c, const sim_rec *r, uint64_t idx) {
  struct chk_chat *s = CHAT(c);
  uint32_t pi;
  if (r->b <= 0 || cc_find(c, &s->fibers, r->actor, r->a, 0, NULL, 0) == CC_NONE) return;
  if ((pi = cc_find(c, &s->resps, r->actor, r->b, 1, r, idx)) == CC_NONE) return;
  sim_rec w = *r;
  w.b = 0;                    /* no writer */
  w.s = 0;
  cc_pend_push(c, &w, idx, 2, pi);
}

/* ---- transactions ------------------------------------------------------------ */

static void cc_pend_push(chk_set *c, const sim_rec *r, uint64_t idx, int is_user, uint32_t i) {
  struct chk_chat *s = CHAT(c);
  if (s->n_pend == s->cap_pend) {
    size_t nc = s->cap_pend ? s->cap_pend * 2 : 16;
    cc_pend *np = realloc(s->pend, nc * sizeof *np);
    if (!np) {
      chk__oom(c);
      return;
    }
    s->pend = np;
    s->cap_pend = nc;
  }
  cc_pend *pd = &s->pend[s->n_pend++];
  *pd = (cc_pend){r->actor, r->c, r->b, is_user, i, r->s, CC_NONE, idx};
  if (!is_user) pd->q = cc_find(c, &s->qs, r->actor, r->s2, 1, r, idx);
}

static void cc_apply_assistant(chk_set *c, const cc_pend *pd, const sim_rec *r,
                               uint64_t idx) {
  struct chk_chat *s = CHAT(c);
  cc_msg *m = cc_at(&s->msgs, pd->i);
  cc_turn *t = turn_of(c, pd->actor, pd->writer);
  cc_q *q = q_of(s, pd->q);
  const char *text = str(c, pd->text);
  if (t && t->mode == RT_CM_CONTINUE) cc_appends(c, t, m, text, pd, r, idx);
  if (q) cc_duplicate(c, q, m, r, idx);
  cc_doubled(c, m, text, r, idx);
  m->text = pd->text;
  m->commit_idx = idx;
  if (q) q->resolved = 1;
}

/* Commits (commit = 1) or rolls back the chat writes of txn r->a. */
static void cc_txn_end(chk_set *c, const sim_rec *r, uint64_t idx, int commit) {
  struct chk_chat *s = CHAT(c);
  size_t keep = 0;
  for (size_t i = 0; i < s->n_pend; i++) {
    cc_pend pd = s->pend[i];
    if (pd.actor != r->actor || pd.txn != r->a) {
      s->pend[keep++] = pd;
      continue;
    }
    if (pd.is_user == 0) {
      if (commit) cc_apply_assistant(c, &pd, r, idx);
      continue;
    }
    if (pd.is_user == 2) {
      cc_resp *p = cc_at(&s->resps, pd.i);
      if (commit && !p->known && (p->known = 1) && p->completed) cc_retrievable(c, p, r, idx);
      continue;
    }
    cc_user *u = cc_at(&s->users, pd.i);
    if (!commit) {
      cc_user_rollback(c, u, r, idx);
      continue;
    }
    u->state = 1;
    u->commit_idx = idx;
    u->commit_t = r->t_us;
  }
  s->n_pend = keep;
}

/* ---- records ------------------------------------------------------------------- */

static void cc_user_rec(chk_set *c, const sim_rec *r, uint64_t idx) {
  struct chk_chat *s = CHAT(c);
  uint32_t qi = cc_find(c, &s->qs, r->actor, r->s, 1, r, idx);
  uint32_t ui = cc_find(c, &s->users, r->actor, r->a, 1, r, idx);
  uint32_t ri = cc_find(c, &s->reqs, r->actor, r->b, 1, r, idx);
  if (ui == CC_NONE || ri == CC_NONE) return;
  cc_user *u = cc_at(&s->users, ui);
  u->req = r->b;
  u->q = qi;
  ((cc_req *)cc_at(&s->reqs, ri))->user = ui;
  cc_pend_push(c, r, idx, 1, ui);
}

static void cc_turn_rec(chk_set *c, const sim_rec *r, uint64_t idx) {
  struct chk_chat *s = CHAT(c);
  uint32_t qi = cc_find(c, &s->qs, r->actor, r->s, 1, r, idx);
  uint32_t ti = cc_find(c, &s->turns, r->actor, r->a, 1, r, idx);
  if (ti == CC_NONE) return;
  cc_turn *t = cc_at(&s->turns, ti);
  t->h.idx = idx;
  t->h.t = r->t_us;
  t->mode = (int)r->c;
  t->target = r->b;
  t->q = qi;
  if (t->mode == RT_CM_CONTINUE && qi != CC_NONE) cc_continue_target(c, t, r, idx);
}

static void cc_resume_rec(chk_set *c, const sim_rec *r, uint64_t idx) {
  struct chk_chat *s = CHAT(c);
  uint32_t ti = cc_find(c, &s->turns, r->actor, r->a, 1, r, idx);
  if (ti == CC_NONE) return;
  cc_turn *t = cc_at(&s->turns, ti);
  t->origin = r->b;
  t->resume_idx = idx;
}

#define CHAT_FIBER "__cf_internal_chat_turn:"

/* The kinds chat_record reads (chk_class.record_kind): its cases below. */
static int chat_kind(uint32_t kind) {
  switch (kind) {
    case RT_EV_FIBER_START: case RT_EV_STASH: case RT_EV_CHAT_USER: case RT_EV_CHAT_ASSISTANT:
    case RT_EV_CHAT_TURN: case RT_EV_CHAT_RESUME: case RT_EV_CHAT_STREAM: case RT_EV_CHAT_RECOVERY:
    case RT_EV_CHAT_UPSTREAM: case RT_EV_REQUEST_OK: case RT_EV_TXN_COMMIT: case RT_EV_TXN_ROLLBACK:
      return 1;
    default:
      return 0;
  }
}

static void chat_record(chk_set *c, void *st, const sim_rec *r, uint64_t idx) {
  uint32_t i;
  struct chk_chat *s = st;
  int chat_fiber = r->kind == RT_EV_FIBER_START &&
                   strncmp(str(c, r->s), CHAT_FIBER, sizeof CHAT_FIBER - 1) == 0;
  switch (r->kind) {
    case RT_EV_FIBER_START:
      if (chat_fiber) cc_find(c, &s->fibers, r->actor, r->a, 1, r, idx);
      break;
    case RT_EV_STASH: cc_stash(c, r, idx); break;
    case RT_EV_CHAT_USER: cc_user_rec(c, r, idx); break;
    case RT_EV_CHAT_ASSISTANT:
      if ((i = cc_find(c, &s->msgs, r->actor, r->a, 1, r, idx)) != CC_NONE)
        cc_pend_push(c, r, idx, 0, i);
      break;
    case RT_EV_CHAT_TURN:
      if (r->a) cc_turn_rec(c, r, idx);
      break;
    case RT_EV_CHAT_RESUME:
      if (r->a) cc_resume_rec(c, r, idx);
      break;
    case RT_EV_CHAT_STREAM:
      if (r->b == RT_CS_ERROR) cc_resolve_turn(c, r->actor, r->c); /* the client is told */
      break;
    case RT_EV_CHAT_RECOVERY:
      if (strcmp(str(c, r->s), "{}") != 0) cc_resolve_turn(c, r->actor, r->b); /* taken over */
      break;
    case RT_EV_CHAT_UPSTREAM: cc_upstream(c, r, idx); break;
    case RT_EV_REQUEST_OK: cc_ack(c, r, idx); break;
    case RT_EV_TXN_COMMIT: cc_txn_end(c, r, idx, 1); break;
    case RT_EV_TXN_ROLLBACK: cc_txn_end(c, r, idx, 0); break;
    default: break;
  }
}

static void cc_tab_free(cc_tab *t) {
  free(t->v);
  chk__map_free(&t->ix);
}

static void chat_free(void *st) {
  struct chk_chat *s = st;
  if (!s) return;
  cc_tab_free(&s->qs);
  cc_tab_free(&s->users);
  cc_tab_free(&s->msgs);
  cc_tab_free(&s->turns);
  cc_tab_free(&s->reqs);
  cc_tab_free(&s->resps);
  cc_tab_free(&s->fibers);
  free(s->pend);
  free(s);
}

const chk_class chk__chat_class = {.name = "chat",
                                   .make = chat_make,
                                   .on_record = chat_record,
                                   .record_kind = chat_kind,
                                   .on_finish = chat_finish,
                                   .free = chat_free};
