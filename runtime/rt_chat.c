/*
** rt_chat.c: durable chat turns (DESIGN.md "chat").
**
** Follows seed 000 "Layer 3: Chat recovery in AIChatAgent" (the turn as fiber
** `__cf_internal_chat_turn:{requestId}`, onChatRecovery and its options,
** continueLastTurn, "Snapshot ownership", "Recovery strategies by
** provider", "Interaction with hibernation": lastBody / lastClientTools
** restored from cf_ai_chat_request_context), seed 001 "Layer 3: LLM
** recovery in AIChatAgent" (the severed upstream stream; OpenAI store:true
** keeps generating and can be retrieved; Anthropic prefill with a synthetic
** "continue" message; the stream tables of "Integration with existing
** AIChatAgent streaming"), and reference/agents-sdk.md A.7 step 4 and A.12
** (@1604): _handleInternalFiberRecovery finds the stream by request id,
** rebuilds the partial text and parts from the stored chunks, calls
** onChatRecovery, persists the orphaned stream if still active and
** persist != false, completes it, and schedules _chatRecoveryRetry (a
** pre-stream unanswered user turn) or _chatRecoveryContinue with
** schedule(0, ..., {idempotent: true}) unless continue is false.
**
** Modelling choices (docs/runtime.md "Durable chat turns"):
** - One turn at a time per actor (the SDK's turn queue); a chat request
**   waiting for its turn persists nothing and is acknowledged only after
**   its user message commits (the output gate).
** - The upstream is world state: a generation produces its chunks over
**   virtual time on domain 0, delivered only while the connection (the
**   actor incarnation that opened it) lives. A store:true generation keeps
**   generating after the cut and can be retrieved by its response id.
** - Chunk k of generation G is the text "rG.k "; an assistant message's
**   text is the concatenation of the chunks it holds.
** - waitUntilStable: a callback that finds a turn running or queued waits
**   in memory until the queue is idle, for up to 10 s; then every waiting
**   callback decides and its turn joins the turn queue (continueLastTurn /
**   saveMessages enqueue in the SDK). Its schedule row is kept (re-inserted
**   for the deadline) until its turn starts, so a death meanwhile does not
**   lose it: the next incarnation waits afresh, as @1604's alarm, retried
**   after the death, would.
** - A pre-stream turn is retried when its own user message (the snapshot's
**   latestUserMessageId) is still unanswered.
** Every write goes through rt__txn_join / rt__txn_wrote (RT_EV_WRITE).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_models.h"

#define CHAT_PREFIX "__cf_internal_chat_turn:"
#define CB_CONTINUE "_chatRecoveryContinue"
#define CB_RETRY "_chatRecoveryRetry"
#define CB_SYNTH "_continueWithSyntheticMessage"
#define STABLE_MS 10000           /* waitUntilStable({timeout: 10_000}) (A.0) */
#define MAX_WAITING 16
#define TEXT_CAP 4096
#define US 1000000LL

/* ---- state ---------------------------------------------------------------- */

typedef struct chat_turn {
  int live, mode;
  int64_t req, fiber, stream, msg; /* msg: the assistant message written */
  int64_t answers;                 /* the user message it answers */
  int64_t up;                      /* its upstream generation (response id) */
  int deltas;                      /* text chunks received */
  char text[TEXT_CAP];             /* the message text so far */
  int tool_wait;                   /* waiting for its sub-agent tool run */
  int64_t tool_run;                /* ... this one */
  int up_chunks;                   /* the stream to start after the tool */
  int64_t up_every;
  int durable;                     /* 1: runs as a fiber (chatRecovery on) */
} chat_turn;

typedef struct turn_spec {
  int mode;
  int64_t req, answers, target;    /* target: the message to append to (0: a new one) */
  int chunks;
  int64_t every;
  int new_message;                 /* RT_CHAT_BUG_NEW_MESSAGE: target ignored */
  char user[96];                   /* non-empty: saveMessages writes this user message
                                      (id `answers`) as the turn starts */
} turn_spec;

typedef struct chat_cb {           /* a recovery callback and its payload */
  int kind;                        /* RT_CM_CONTINUE, RT_CM_RETRY, RT_CM_SYNTHETIC */
  int64_t sid, target, origin;
  int64_t deadline_ms;             /* informative: when its wait times out */
  int held;                        /* its schedule row still exists (deleted on start) */
  const char *name;
} chat_cb;

typedef struct chat_job {          /* an entry of the turn queue */
  int user;                        /* 1: a chat request (msg); 0: a recovery turn */
  rt_msg msg;
  chat_cb cb;
  turn_spec sp;
} chat_job;

struct rt_chat_mem {
  chat_turn turn;                  /* the running turn (one at a time) */
  chat_job *queue;                 /* the turn queue: requests and recovery turns */
  int n_queue, cap_queue;
  char last_body[128], last_tools[128]; /* restored "in the constructor" */
  int64_t waiting[MAX_WAITING];    /* schedule ids of callbacks in waitUntilStable */
  int n_waiting;
  struct rec_state *rec_wait;      /* a recovery whose onChatRecovery waits: it goes on
                                      in rt__chat_recovery_end (its row stays open) */
};

typedef struct chat_up {
  int64_t id, incarnation, req;
  uint32_t actor, answers_s;       /* answers_s: the answered text (interned) */
  int total, next, stored, attached;
  int provider;                    /* rt_chat_provider; store:true = retrieve */
  int64_t every_us;
} chat_up;

struct rt_chat_world {
  sim_rng rng;                     /* "runtime.chat": chunk spacing */
  chat_up *ups;
  int n_ups, cap_ups;
  rt_chat_recovery_info *last;     /* per actor: the last onChatRecovery */
  uint32_t n_last;
};

/* ---- statements ------------------------------------------------------------ */

enum {
  C_MSG_INSERT, C_MSG_UPDATE, C_MSG_GET, C_MSG_LAST, C_MSG_LAST_ASSIST, C_MSG_ANSWERED,
  C_MSG_ALL, C_MSG_COUNT, C_META_INSERT, C_META_STATUS, C_META_BY_REQ, C_CHUNK_INSERT,
  C_CHUNKS, C_CTX_SET, C_CTX_GET, C_SNAP_SET, C_SNAP_GET, C_PAY_INSERT, C_PAY_GET,
  C_PAY_DELETE, C_PAY_FIND, C_NSTMT
};

static const char *const csql[C_NSTMT] = {
    [C_MSG_INSERT] = "INSERT INTO cf_ai_chat_agent_messages(id,role,answers,message,created_at)"
                     " VALUES(?1,?2,?3,?4,?5)",
    [C_MSG_UPDATE] = "UPDATE cf_ai_chat_agent_messages SET message=?1 WHERE id=?2",
    [C_MSG_GET] = "SELECT role,answers,message FROM cf_ai_chat_agent_messages WHERE id=?1",
    [C_MSG_LAST] = "SELECT id,role,answers,message FROM cf_ai_chat_agent_messages"
                   " ORDER BY created_at DESC,id DESC LIMIT 1",
    [C_MSG_LAST_ASSIST] = "SELECT id,role,answers,message FROM cf_ai_chat_agent_messages"
                          " WHERE role='assistant' ORDER BY created_at DESC,id DESC LIMIT 1",
    [C_MSG_ANSWERED] = "SELECT count(*) FROM cf_ai_chat_agent_messages"
                       " WHERE role='assistant' AND answers=?1",
    [C_MSG_ALL] = "SELECT id,role,answers,message FROM cf_ai_chat_agent_messages"
                  " ORDER BY created_at,id",
    [C_MSG_COUNT] = "SELECT count(*) FROM cf_ai_chat_agent_messages",
    [C_META_INSERT] = "INSERT INTO cf_ai_chat_stream_metadata(id,request_id,status,created_at)"
                      " VALUES(?1,?2,'streaming',?3)",
    [C_META_STATUS] = "UPDATE cf_ai_chat_stream_metadata SET status=?1,completed_at=?2 WHERE id=?3",
    [C_META_BY_REQ] = "SELECT id,status FROM cf_ai_chat_stream_metadata WHERE request_id=?1"
                      " ORDER BY created_at DESC,id DESC LIMIT 1",
    [C_CHUNK_INSERT] = "INSERT INTO cf_ai_chat_stream_chunks(stream_id,chunk_index,body,created_at)"
                       " VALUES(?1,?2,?3,?4)",
    [C_CHUNKS] = "SELECT body FROM cf_ai_chat_stream_chunks WHERE stream_id=?1 ORDER BY chunk_index",
    [C_CTX_SET] = "INSERT OR REPLACE INTO cf_ai_chat_request_context(key,value) VALUES(?1,?2)",
    [C_CTX_GET] = "SELECT value FROM cf_ai_chat_request_context WHERE key=?1",
    [C_SNAP_SET] = "UPDATE cf_agents_runs SET snapshot=?1 WHERE id=?2",
    [C_SNAP_GET] = "SELECT snapshot,created_at FROM cf_agents_runs WHERE id=?1",
    [C_PAY_INSERT] = "INSERT INTO rv_chat_schedule_payload(schedule_id,callback,target,origin,"
                     "deadline) VALUES(?1,?2,?3,?4,?5)",
    [C_PAY_GET] = "SELECT target,origin,deadline,callback FROM rv_chat_schedule_payload"
                  " WHERE schedule_id=?1",
    [C_PAY_DELETE] = "DELETE FROM rv_chat_schedule_payload WHERE schedule_id=?1",
    [C_PAY_FIND] = "SELECT p.schedule_id FROM rv_chat_schedule_payload p JOIN cf_agents_schedules s"
                   " ON s.id=p.schedule_id WHERE p.callback=?1 AND p.target=?2"
                   " ORDER BY p.schedule_id LIMIT 1",
};

/* seed 000 Layer 3; seed 001 "Integration with existing AIChatAgent
** streaming"; reference A.12. Chat writes name their own record (no
** table in the WRITE record). */
static rt_store_module rt__chat_store = {
    .name = "chat",
    .schema =
        "CREATE TABLE IF NOT EXISTS cf_ai_chat_agent_messages(id INTEGER PRIMARY KEY,"
        " role TEXT NOT NULL, answers INTEGER, message TEXT NOT NULL, created_at INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS cf_ai_chat_stream_metadata(id INTEGER PRIMARY KEY,"
        " request_id INTEGER NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL,"
        " completed_at INTEGER);"
        "CREATE TABLE IF NOT EXISTS cf_ai_chat_stream_chunks(stream_id INTEGER NOT NULL,"
        " chunk_index INTEGER NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL,"
        " PRIMARY KEY(stream_id, chunk_index));"
        "CREATE TABLE IF NOT EXISTS cf_ai_chat_request_context(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS rv_chat_schedule_payload(schedule_id INTEGER PRIMARY KEY,"
        " callback TEXT NOT NULL, target INTEGER NOT NULL, origin INTEGER NOT NULL,"
        " deadline INTEGER NOT NULL);",
    .sql = csql,
    .n_sql = C_NSTMT,
    .clear_bindings = 1,
};

static sqlite3_stmt *cst(rt_world *w, uint32_t a, int id) {
  return rt__stmt(w, a, &rt__chat_store, id);
}

/* A write statement of this turn's transaction (NULL if the actor cannot
** write: storage broken or no database). */
static sqlite3_stmt *wst(rt_world *w, uint32_t a, int id) {
  return rt__txn_join(w, a) ? NULL : cst(w, a, id);
}

static int64_t txn_of(rt_world *w, uint32_t a) { return w->actors[a].store.txn_id; }

static int64_t now_ms(rt_world *w) { return w->s->now_us / 1000; }

static void emit2(rt_world *w, uint32_t kind, uint32_t a, int64_t x, int64_t y, int64_t z,
                  const char *s, const char *s2) {
  sim_emit(w->s, kind, a, x, y, z, s ? rt__str(w, s) : 0, s2 ? rt__str(w, s2) : 0);
}

/* Copies src into dst (cap bytes), cut to fit. */
static void cut_copy(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Appends src to dst (cap bytes), cut to fit. */
static void cut_cat(char *dst, size_t cap, const char *src) {
  size_t o = strlen(dst);
  if (o + 1 < cap) cut_copy(dst + o, cap - o, src);
}

static void col_text(sqlite3_stmt *st, int col, char *dst, size_t cap) {
  const unsigned char *t = sqlite3_column_text(st, col);
  snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

/* ---- reads ----------------------------------------------------------------- */

typedef struct chat_row {
  int64_t id, answers;
  int role;                        /* 1 user, 2 assistant */
  char text[TEXT_CAP];
} chat_row;

static void row_read(sqlite3_stmt *st, chat_row *r, int first) {
  const unsigned char *role = sqlite3_column_text(st, first);
  r->role = role && strcmp((const char *)role, "assistant") == 0 ? 2 : 1;
  r->answers = sqlite3_column_int64(st, first + 1);
  col_text(st, first + 2, r->text, sizeof r->text);
}

/* The last message (assistant_only: the last assistant message); 0 or -1. */
static int msg_last(rt_world *w, uint32_t a, int assistant_only, chat_row *r) {
  sqlite3_stmt *st = cst(w, a, assistant_only ? C_MSG_LAST_ASSIST : C_MSG_LAST);
  int found = 0;
  if (!st) return -1;
  if (sqlite3_step(st) == SQLITE_ROW) {
    r->id = sqlite3_column_int64(st, 0);
    row_read(st, r, 1);
    found = 1;
  }
  sqlite3_reset(st);
  return found ? 0 : -1;
}

static int msg_get(rt_world *w, uint32_t a, int64_t id, chat_row *r) {
  sqlite3_stmt *st = cst(w, a, C_MSG_GET);
  int found = 0;
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) == SQLITE_ROW) {
    r->id = id;
    row_read(st, r, 0);
    found = 1;
  }
  sqlite3_reset(st);
  return found ? 0 : -1;
}

static int64_t one_int(rt_world *w, uint32_t a, int id, int64_t arg) {
  sqlite3_stmt *st = cst(w, a, id);
  int64_t v = -1;
  if (!st) return -1;
  if (arg >= 0) sqlite3_bind_int64(st, 1, arg);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return v;
}

/* The text of user message `id` ("" if none): the key the checkers use. */
static void user_text(rt_world *w, uint32_t a, int64_t id, char *dst, size_t cap) {
  chat_row r;
  if (msg_get(w, a, id, &r) == 0)
    cut_copy(dst, cap, r.text);
  else
    dst[0] = '\0';
}

static int ctx_get(rt_world *w, uint32_t a, const char *key, char *dst, size_t cap) {
  sqlite3_stmt *st = cst(w, a, C_CTX_GET);
  int found = 0;
  dst[0] = '\0';
  if (!st) return -1;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) {
    col_text(st, 0, dst, cap);
    found = 1;
  }
  sqlite3_reset(st);
  return found ? 0 : -1;
}

static int count_tokens(const char *text) {
  int n = 0;
  for (; *text; text++) n += *text == ' ';
  return n;
}

/* ---- writes (each one RT_EV_WRITE, plus the chat record) ------------------- */

static int w_user(rt_world *w, uint32_t a, int64_t id, int64_t req, const char *text) {
  sqlite3_stmt *st = wst(w, a, C_MSG_INSERT);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_text(st, 2, "user", -1, SQLITE_STATIC);
  sqlite3_bind_null(st, 3);
  sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 5, now_ms(w));
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) emit2(w, RT_EV_CHAT_USER, a, id, req, txn_of(w, a), text, NULL);
  return rt__txn_wrote(w, a, RT_W_OTHER, id, rc);
}

/* persistMessages for one assistant message: insert (new) or update. */
static int w_assistant(rt_world *w, uint32_t a, int64_t id, int64_t writer, int64_t answers,
                       const char *text, int insert) {
  char q[256];
  sqlite3_stmt *st;
  user_text(w, a, answers, q, sizeof q);
  if (!(st = wst(w, a, insert ? C_MSG_INSERT : C_MSG_UPDATE))) return -1;
  if (insert) {
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, "assistant", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, answers);
    sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, now_ms(w));
  } else {
    sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, id);
  }
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) emit2(w, RT_EV_CHAT_ASSISTANT, a, id, writer, txn_of(w, a), text, q);
  return rt__txn_wrote(w, a, RT_W_OTHER, id, rc);
}

static int w_meta(rt_world *w, uint32_t a, int64_t stream, int64_t req, int status) {
  static const char *const names[] = {"", "streaming", "completed", "error"};
  sqlite3_stmt *st = wst(w, a, status == RT_CS_STREAMING ? C_META_INSERT : C_META_STATUS);
  if (!st) return -1;
  if (status == RT_CS_STREAMING) {
    sqlite3_bind_int64(st, 1, stream);
    sqlite3_bind_int64(st, 2, req);
    sqlite3_bind_int64(st, 3, now_ms(w));
  } else {
    sqlite3_bind_text(st, 1, names[status], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_ms(w));
    sqlite3_bind_int64(st, 3, stream);
  }
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) rt__emit(w, RT_EV_CHAT_STREAM, a, stream, status, req, NULL);
  return rt__txn_wrote(w, a, RT_W_OTHER, stream, rc);
}

static int w_chunk(rt_world *w, uint32_t a, int64_t stream, int index, const char *body) {
  sqlite3_stmt *st = wst(w, a, C_CHUNK_INSERT);
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, stream);
  sqlite3_bind_int(st, 2, index);
  sqlite3_bind_text(st, 3, body, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 4, now_ms(w));
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) rt__emit(w, RT_EV_CHAT_CHUNK, a, stream, index, txn_of(w, a), NULL);
  return rt__txn_wrote(w, a, RT_W_OTHER, stream, rc);
}

static int w_ctx(rt_world *w, uint32_t a, const char *key, const char *value) {
  sqlite3_stmt *st = wst(w, a, C_CTX_SET);
  if (!st) return -1;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT);
  return rt__txn_wrote(w, a, RT_W_OTHER, 0, sqlite3_step(st));
}

/* The fiber snapshot (A.12): the framework's part, and the user's stash
** ({"responseId": G}, or null). Its stash value is G, or 0 for null. */
static int w_snapshot(rt_world *w, uint32_t a, const chat_turn *t, const char *body,
                      const char *tools, int64_t response) {
  char snap[768], user[48] = "null";
  sqlite3_stmt *st = wst(w, a, C_SNAP_SET);
  if (!st) return -1;
  if (response > 0) snprintf(user, sizeof user, "{\"responseId\":%lld}", (long long)response);
  snprintf(snap, sizeof snap,
           "{\"__cfChat\":{\"requestId\":%lld,\"continuation\":%s,\"latestMessageId\":%lld,"
           "\"latestUserMessageId\":%lld,\"lastBody\":%s,\"lastClientTools\":%s},\"user\":%s}",
           (long long)t->req, t->mode == RT_CM_CONTINUE ? "true" : "false", (long long)t->msg,
           (long long)t->answers, body, tools, user);
  sqlite3_bind_text(st, 1, snap, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, t->fiber);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) rt__emit(w, RT_EV_STASH, a, t->fiber, response, txn_of(w, a), snap);
  return rt__txn_wrote(w, a, RT_W_STASH, t->fiber, rc);
}

/* ---- memory ------------------------------------------------------------------ */

/* The extension's slots: world state and this incarnation's state. */
static struct rt_chat_world *chat_w(rt_world *w) { return RT_EXT_WORLD(w, &rt__chat_ext); }
static struct rt_chat_mem *chat_m(rt_mem *m) { return RT_EXT_MEM(m, &rt__chat_ext); }

static struct rt_chat_world *chat_world(rt_world *w) {
  struct rt_chat_world *cw = RT_EXT_WORLD(w, &rt__chat_ext);
  if (!cw && (cw = calloc(1, sizeof *cw)) != NULL) {
    sim_rng_stream(&cw->rng, w->s->seed, "runtime.chat");
    RT_EXT_WORLD(w, &rt__chat_ext) = cw;
  }
  return cw;
}

/* This incarnation's chat memory; the constructor restores lastBody and
** lastClientTools from cf_ai_chat_request_context. */
static struct rt_chat_mem *chat_mem(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  if (!m) return NULL;
  struct rt_chat_mem *cm = RT_EXT_MEM(m, &rt__chat_ext);
  if (!cm && (cm = calloc(1, sizeof *cm)) != NULL) {
    RT_EXT_MEM(m, &rt__chat_ext) = cm;
    ctx_get(w, a, "lastBody", cm->last_body, sizeof cm->last_body);
    ctx_get(w, a, "lastClientTools", cm->last_tools, sizeof cm->last_tools);
  }
  return cm;
}

static void rt__chat_mem_free(rt_world *w, rt_mem *m) {
  struct rt_chat_mem *cm = m ? RT_EXT_MEM(m, &rt__chat_ext) : NULL;
  (void)w;
  if (!cm) return;
  free(cm->queue);
  free(cm->rec_wait); /* a death while onChatRecovery waited: the row is recovered again */
  free(cm);
  RT_EXT_MEM(m, &rt__chat_ext) = NULL;
}

static void rt__chat_world_free(rt_world *w) {
  struct rt_chat_world *cw = w ? RT_EXT_WORLD(w, &rt__chat_ext) : NULL;
  if (!cw) return;
  free(cw->ups);
  free(cw->last);
  free(cw);
  RT_EXT_WORLD(w, &rt__chat_ext) = NULL;
}

static const rt_chat_policy *policy_of(const rt_world *w, uint32_t a) {
  const rt_chat_policy *p = &w->actors[a].spec.chat;
  return p->set ? p : &w->cfg.chat;
}

/* The chat fiber in the active set (_runFiberActiveFibers): prog -1, never
** stepped by rt_agent.c, only looked up by id. */
static int fiber_slot(rt_mem *m, int64_t id, int live) {
  rt_fiber *slot = NULL;
  for (int i = 0; i < m->n_fibers; i++) {
    if (!live && m->fibers[i].live && m->fibers[i].id == id) m->fibers[i].live = 0;
    if (live && !slot && !m->fibers[i].live) slot = &m->fibers[i];
  }
  if (!live) return 0;
  if (!slot) {
    if (m->n_fibers == m->cap_fibers) {
      int nc = m->cap_fibers ? m->cap_fibers * 2 : 4;
      rt_fiber *nf = realloc(m->fibers, (size_t)nc * sizeof *nf);
      if (!nf) return -1;
      m->fibers = nf;
      m->cap_fibers = nc;
    }
    slot = &m->fibers[m->n_fibers++];
  }
  *slot = (rt_fiber){.id = id, .prog = -1, .live = 1};
  return 0;
}

/* lastBody's chunk count and spacing (defaults if absent). */
static void body_params(const struct rt_chat_mem *cm, int *chunks, int64_t *every) {
  long long e = 100000;
  int n = 1;
  if (sscanf(cm->last_body, "{\"chunks\":%d,\"chunkEvery\":%lld}", &n, &e) < 2) e = 100000;
  *chunks = n > 0 ? n : 1;
  *every = e > 0 ? e : 100000;
}

/* lastBody's sub-agent tool call (issue #15): the child's actor index and
** its work; 0 if the body has none. */
static int body_tool(const struct rt_chat_mem *cm, uint32_t *child, int64_t *work) {
  const char *p = strstr(cm->last_body, "\"tool\":");
  const char *q = strstr(cm->last_body, "\"work\":");
  if (!p || !q) return 0;
  *child = (uint32_t)strtoul(p + 7, NULL, 10);
  *work = strtoll(q + 7, NULL, 10);
  return 1;
}

/* ---- the upstream model stream (seed 001 "What LLM providers offer") ------- */

static void turn_chunk(rt_world *w, uint32_t a, int64_t up, int k, int last);
static void turn_finish(rt_world *w, uint32_t a, int status);

static int64_t chunk_gap(struct rt_chat_world *cw, int64_t every) {
  int64_t lo = every / 2 > 0 ? every / 2 : 1;
  return sim_rng_range(&cw->rng, lo, every + every / 2);
}

static void up_emit(rt_world *w, const chat_up *u, int phase) {
  sim_emit(w->s, RT_EV_CHAT_UPSTREAM, u->actor, u->id, phase, u->req, u->answers_s,
           rt__str(w, rt_chat_provider_name(u->provider)));
}

/* The live turn reading generation u, or NULL once its connection is gone
** (the incarnation that opened it died, or the turn ended). */
static chat_turn *up_turn(rt_world *w, const chat_up *u) {
  rt_mem *m = RT_MEM(w, u->actor);
  if (!m || m->inc.incarnation != u->incarnation || !chat_m(m)) return NULL;
  chat_turn *t = &chat_m(m)->turn;
  return t->live && t->up == u->id ? t : NULL;
}

static void up_tick(sim *s, void *ctx, uint64_t idx) {
  rt_world *w = ctx;
  struct rt_chat_world *cw = chat_w(w);
  chat_up *u = &cw->ups[idx];
  (void)s;
  if (u->attached && !up_turn(w, u)) {
    RT_PROBE(w, u->actor, RT_PROBE_UPSTREAM_SEVERED);
    u->attached = 0;
    up_emit(w, u, RT_UP_SEVERED);
  }
  if (!u->attached && !u->stored) return; /* the generation is abandoned */
  int k = u->next++, last = u->next >= u->total, attached = u->attached;
  uint32_t a = u->actor;
  int64_t id = u->id;
  if (last) {
    up_emit(w, u, RT_UP_COMPLETED);
    u->attached = 0; /* the stream is over */
  } else
    sim_after(w->s, chunk_gap(cw, u->every_us), 0, up_tick, w, idx);
  if (attached) turn_chunk(w, a, id, k, last); /* may start a turn: ups may move */
}

/* The provider starts generating `total` chunks for turn t. */
static int up_start(rt_world *w, uint32_t a, chat_turn *t, int total, int64_t every,
                    const char *answered) {
  struct rt_chat_world *cw = chat_world(w);
  if (!cw) return -1;
  if (cw->n_ups == cw->cap_ups) {
    int nc = cw->cap_ups ? cw->cap_ups * 2 : 8;
    chat_up *nu = realloc(cw->ups, (size_t)nc * sizeof *nu);
    if (!nu) return -1;
    cw->ups = nu;
    cw->cap_ups = nc;
  }
  chat_up *u = &cw->ups[cw->n_ups];
  *u = (chat_up){.id = rt__new_id(w), .incarnation = RT_MEM(w, a)->inc.incarnation,
                 .req = t->req, .actor = a, .answers_s = rt__str(w, answered),
                 .total = total > 0 ? total : 1, .attached = 1, .every_us = every,
                 .provider = (int)policy_of(w, a)->provider};
  u->stored = u->provider == RT_CHAT_RETRIEVE;
  t->up = u->id;
  up_emit(w, u, RT_UP_START);
  sim_after(w->s, chunk_gap(cw, every), 0, up_tick, w, (uint64_t)cw->n_ups);
  cw->n_ups++;
  return 0;
}

static chat_up *up_find(rt_world *w, uint32_t a, int64_t id) {
  for (int i = 0; chat_w(w) && i < chat_w(w)->n_ups; i++)
    if (chat_w(w)->ups[i].id == id && chat_w(w)->ups[i].actor == a) return &chat_w(w)->ups[i];
  return NULL;
}

void rt_cut_stream(rt_world *w, uint32_t actor) {
  int n = w && chat_w(w) ? chat_w(w)->n_ups : 0;
  for (int i = 0; i < n; i++) {
    chat_up *u = &chat_w(w)->ups[i];
    if (!u->attached || (actor != RT_NO_ACTOR && u->actor != actor)) continue;
    uint32_t a = u->actor;
    chat_turn *t = up_turn(w, u);
    u->attached = 0;
    up_emit(w, u, RT_UP_SEVERED);
    if (t) turn_finish(w, a, RT_CS_ERROR); /* the stream errors while the actor lives */
  }
}

/* ---- turns (seed 000 Layer 3 "How it works" 1-2) ------------------------------ */

/* runFiber("__cf_internal_chat_turn:<req>") around onChatMessage + _reply:
** the run row, the initial snapshot, keepAlive, the stream metadata and its
** start chunk, then the upstream request. */
static int turn_begin(rt_world *w, uint32_t a, const turn_spec *sp) {
  rt_mem *m = RT_MEM(w, a);
  struct rt_chat_mem *cm = chat_m(m);
  chat_turn *t = &cm->turn;
  char name[80], q[256], body[96];
  chat_row target;
  memset(t, 0, sizeof *t);
  *t = (chat_turn){.live = 1, .mode = sp->mode, .req = sp->req, .answers = sp->answers,
                   .fiber = rt__new_id(w), .stream = rt__new_id(w)};
  int appends = sp->target > 0 && !sp->new_message;
  t->msg = appends ? sp->target : rt__new_id(w);
  if (appends && msg_get(w, a, sp->target, &target) == 0)
    cut_copy(t->text, sizeof t->text, target.text);
  snprintf(name, sizeof name, CHAT_PREFIX "%lld", (long long)t->req);
  t->durable = !policy_of(w, a)->off; /* chatRecovery = false: no fiber */
  if (t->durable && fiber_slot(m, t->fiber, 1)) {
    t->live = 0;
    return -1;
  }
  if (t->durable) {
    rt__emit(w, RT_EV_FIBER_START, a, t->fiber, 0, 0, name);
    rt__w_fiber_insert(w, a, t->fiber, name);
    w_snapshot(w, a, t, cm->last_body, cm->last_tools, 0);
    rt__keepalive_acquire(w, a);
  }
  w_meta(w, a, t->stream, t->req, RT_CS_STREAMING);
  snprintf(body, sizeof body, "{\"type\":\"start\",\"messageId\":%lld}", (long long)t->msg);
  w_chunk(w, a, t->stream, 0, body);
  user_text(w, a, t->answers, q, sizeof q);
  rt__emit(w, RT_EV_CHAT_TURN, a, t->req, sp->mode == RT_CM_CONTINUE ? sp->target : t->msg,
           sp->mode, q);
  uint32_t child;
  int64_t work;
  /* The model's first step is a sub-agent tool call (toolCallId "call-<the
  ** answered user message>"), before any text: a turn that answers afresh
  ** (user, retry) issues it; a continuation follows text, so the call was
  ** answered before it (issue #15, agents #1630). */
  if ((sp->mode == RT_CM_USER || sp->mode == RT_CM_RETRY) && body_tool(cm, &child, &work) &&
      child < w->n_actors && child != a) {
    int stored;
    t->up_chunks = sp->chunks;
    t->up_every = sp->every;
    t->tool_run = rt__toolrun_call(w, a, child, work, t->answers, &stored);
    if (RT_MEM(w, a) != m || !t->live) return 0;
    if (t->tool_run >= 0 && stored < 0) {
      t->tool_wait = 1; /* the stream starts when the run ends */
      return 0;
    }
  }
  return up_start(w, a, t, sp->chunks, sp->every, q);
}

static void rt__chat_tool_done(rt_world *w, uint32_t a, int64_t run, int status) {
  rt_mem *m = RT_MEM(w, a);
  chat_turn *t = m && chat_m(m) ? &chat_m(m)->turn : NULL;
  char q[256];
  (void)status;
  if (!t || !t->live || !t->tool_wait || t->tool_run != run) return;
  t->tool_wait = 0;
  user_text(w, a, t->answers, q, sizeof q);
  up_start(w, a, t, t->up_chunks, t->up_every, q);
}

/* One text-delta chunk arrives: persisted at once (cf_ai_chat_stream_chunks);
** the first one carries the provider's response id, which the user stashes. */
static void turn_chunk(rt_world *w, uint32_t a, int64_t up, int k, int last) {
  struct rt_chat_mem *cm = chat_m(RT_MEM(w, a));
  chat_turn *t = &cm->turn;
  char tok[48], body[112];
  snprintf(tok, sizeof tok, "r%lld.%d ", (long long)up, k);
  snprintf(body, sizeof body, "{\"type\":\"text-delta\",\"delta\":\"%s\"}", tok);
  w_chunk(w, a, t->stream, ++t->deltas, body);
  cut_cat(t->text, sizeof t->text, tok);
  if (t->deltas == 1 && t->durable && policy_of(w, a)->provider == RT_CHAT_RETRIEVE)
    w_snapshot(w, a, t, cm->last_body, cm->last_tools, up); /* this.stash({responseId}) */
  if (last) turn_finish(w, a, RT_CS_COMPLETED);
}

static void start_user_turn(rt_world *w, uint32_t a, const rt_msg *msg);
static void run_waiting(rt_world *w, uint32_t a);
static void resume(rt_world *w, uint32_t a, const chat_cb *cb, const turn_spec *sp);

/* The stream ended (completed, or errored while the actor lives): the
** assistant message is persisted (a continuation updates its target), the
** stream closed, the run row deleted, keepAlive disposed; then the next
** queued request gets its turn. */
static void turn_finish(rt_world *w, uint32_t a, int status) {
  rt_mem *m = RT_MEM(w, a);
  struct rt_chat_mem *cm = chat_m(m);
  chat_turn *t = &cm->turn;
  chat_row ex;
  char name[80];
  if (t->deltas > 0)
    w_assistant(w, a, t->msg, t->req, t->answers, t->text, msg_get(w, a, t->msg, &ex) != 0);
  w_meta(w, a, t->stream, t->req, status);
  t->live = 0;
  if (t->durable) {
    snprintf(name, sizeof name, CHAT_PREFIX "%lld", (long long)t->req);
    rt__w_fiber_delete(w, a, t->fiber);
    fiber_slot(m, t->fiber, 0);
    rt__emit(w, RT_EV_FIBER_DONE, a, t->fiber, 1, 0, name);
    rt__keepalive_release(w, a);
  }
  if (RT_MEM(w, a) != m) return;
  if (cm->n_queue == 0) {
    run_waiting(w, a); /* the queue is idle: waitUntilStable resolves */
    return;
  }
  chat_job next = cm->queue[0];
  memmove(&cm->queue[0], &cm->queue[1], (size_t)(cm->n_queue - 1) * sizeof next);
  cm->n_queue--;
  if (next.user)
    start_user_turn(w, a, &next.msg);
  else
    resume(w, a, &next.cb, &next.sp);
}

/* Appends a job to the turn queue; 0, or -1 on OOM. */
static int queue_push(struct rt_chat_mem *cm, const chat_job *j) {
  if (cm->n_queue == cm->cap_queue) {
    int nc = cm->cap_queue ? cm->cap_queue * 2 : 4;
    chat_job *nq = realloc(cm->queue, (size_t)nc * sizeof *nq);
    if (!nq) return -1;
    cm->queue = nq;
    cm->cap_queue = nc;
  }
  cm->queue[cm->n_queue++] = *j;
  return 0;
}

/* ---- chat requests ------------------------------------------------------------- */

static void ack_cb(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_msg m;
  (void)s;
  if (RT_MEM(w, a) && rt__pop_serving(&RT_MEM(w, a)->inc, (int64_t)(arg & ((1ULL << 40) - 1)), &m))
    rt__request_done(w, a, &m, 1, NULL);
}

/* The reply waits for the user message's commit (the output gate), unless
** the early_ack bug answers at once. */
static void ack(rt_world *w, uint32_t a, int64_t id) {
  uint64_t key = ((uint64_t)a << 40) | (uint64_t)id;
  if (w->cfg.chat_bug == RT_CHAT_BUG_EARLY_ACK || w->cfg.commit != RT_COMMIT_TURN)
    ack_cb(w->s, w, key);
  else
    sim_after(w->s, w->cfg.commit_window_us + 1, RT_MEM(w, a)->inc.dom, ack_cb, w, key);
}

/* onMessage: saveMessages (the user message), the request context, then the
** turn. */
static void start_user_turn(rt_world *w, uint32_t a, const rt_msg *msg) {
  struct rt_chat_mem *cm = chat_m(RT_MEM(w, a));
  int64_t uid = rt__new_id(w);
  char text[64];
  if (msg->str) /* a tool call: the child's index + 1 in str, its work in alarm_at */
    snprintf(cm->last_body, sizeof cm->last_body,
             "{\"chunks\":%d,\"chunkEvery\":%lld,\"tool\":%u,\"work\":%lld}", (int)msg->arg,
             (long long)msg->arg2, msg->str - 1, (long long)msg->alarm_at);
  else
    snprintf(cm->last_body, sizeof cm->last_body, "{\"chunks\":%d,\"chunkEvery\":%lld}",
             (int)msg->arg, (long long)msg->arg2);
  snprintf(cm->last_tools, sizeof cm->last_tools, "[]");
  snprintf(text, sizeof text, "message of request %lld", (long long)msg->id);
  w_user(w, a, uid, msg->id, text);
  w_ctx(w, a, "lastBody", cm->last_body);
  w_ctx(w, a, "lastClientTools", cm->last_tools);
  turn_spec sp = {RT_CM_USER, msg->id, uid, 0, (int)msg->arg, msg->arg2, 0, ""};
  turn_begin(w, a, &sp);
  ack(w, a, msg->id);
}

static void rt__chat_request(rt_world *w, uint32_t a, const rt_msg *m) {
  rt_mem *mem = RT_MEM(w, a);
  struct rt_chat_mem *cm = chat_mem(w, a);
  if (!cm || rt__push_serving(&mem->inc, m)) {
    rt__request_done(w, a, m, 0, "out of memory");
    return;
  }
  if (!cm->turn.live && cm->n_queue == 0) {
    start_user_turn(w, a, m);
    return;
  }
  chat_job j = {.user = 1, .msg = *m};
  rt_msg dropped;
  if (queue_push(cm, &j) && rt__pop_serving(&mem->inc, m->id, &dropped)) /* one turn at a time */
    rt__request_done(w, a, m, 0, "out of memory");
}

int rt_chat_at(rt_world *w, uint32_t actor, int chunks, int64_t chunk_every_us,
               int64_t at_us) {
  if (!w || actor >= w->n_actors || chunks < 1 || chunks > RT_CHAT_MAX_CHUNKS ||
      chunk_every_us <= 0)
    return -1;
  rt_msg m = {0};
  m.kind = MSG_CHAT;
  m.entry = RT_ENTRY_WS; /* webSocketMessage: runs onStart */
  m.arg = chunks;
  m.arg2 = chunk_every_us;
  return rt__deliver_at(w, actor, &m, at_us);
}

int rt_chat_tool_at(rt_world *w, uint32_t actor, int chunks, int64_t chunk_every_us,
                    uint32_t child, int64_t work_us, int64_t at_us) {
  if (!w || actor >= w->n_actors || child >= w->n_actors || child == actor || chunks < 1 ||
      chunks > RT_CHAT_MAX_CHUNKS || chunk_every_us <= 0 || work_us < 0)
    return -1;
  rt_msg m = {0};
  m.kind = MSG_CHAT;
  m.entry = RT_ENTRY_WS;
  m.arg = chunks;
  m.arg2 = chunk_every_us;
  m.str = child + 1;      /* MSG_CHAT: the tool's child + 1 (0: no tool) */
  m.alarm_at = work_us;   /* ... and its work */
  return rt__deliver_at(w, actor, &m, at_us);
}

/* ---- schedule(0, cb, payload, {idempotent: true}) (A.10, A.12) ----------------- */

/* Returns the schedule id (the existing one on a dedup hit), or -1. */
static int64_t chat_schedule(rt_world *w, uint32_t a, const char *cb, int64_t target,
                             int64_t origin, int64_t deadline_ms, int64_t delay_s) {
  sqlite3_stmt *st = cst(w, a, C_PAY_FIND);
  int64_t sid = -1;
  if (st) {
    sqlite3_bind_text(st, 1, cb, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, target);
    if (sqlite3_step(st) == SQLITE_ROW) sid = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
  }
  if (sid < 0) {
    sid = rt__new_id(w);
    rt__w_schedule_insert(w, a, sid, cb, w->s->now_us / US + delay_s, 0);
    if ((st = wst(w, a, C_PAY_INSERT)) != NULL) {
      sqlite3_bind_int64(st, 1, sid);
      sqlite3_bind_text(st, 2, cb, -1, SQLITE_STATIC);
      sqlite3_bind_int64(st, 3, target);
      sqlite3_bind_int64(st, 4, origin);
      sqlite3_bind_int64(st, 5, deadline_ms);
      rt__txn_wrote(w, a, RT_W_SCHEDULE, sid, sqlite3_step(st));
    }
  }
  rt__schedule_next_alarm(w, a); /* a dedup hit still reschedules */
  return sid;
}

/* ---- _handleInternalFiberRecovery (A.7 step 4, A.12) ---------------------------- */

typedef struct rec_state {
  int64_t req, stream, message_id, answers, response, created_ms, value;
  int continuation, status, deltas, persist, cont, n_messages;
  const char *arm;
  int64_t orphan;                  /* the turn's fiber row */
  char name[64];                   /* its name */
  char text[TEXT_CAP];
} rec_state;

static int64_t json_int(const char *s, const char *key) {
  const char *p = strstr(s, key);
  return p ? strtoll(p + strlen(key), NULL, 10) : 0;
}

/* The run row's snapshot: the framework part and the user's stash. */
static void snap_read(rt_world *w, uint32_t a, int64_t fiber, rec_state *r) {
  sqlite3_stmt *st = cst(w, a, C_SNAP_GET);
  char snap[768] = "";
  r->value = -1;
  if (!st) return;
  sqlite3_bind_int64(st, 1, fiber);
  if (sqlite3_step(st) == SQLITE_ROW) {
    col_text(st, 0, snap, sizeof snap);
    r->created_ms = sqlite3_column_int64(st, 1);
  }
  sqlite3_reset(st);
  if (!snap[0]) return;
  r->answers = json_int(snap, "\"latestUserMessageId\":");
  r->continuation = strstr(snap, "\"continuation\":true") != NULL;
  r->response = json_int(snap, "\"responseId\":");
  r->value = r->response;
}

/* _getPartialStreamText: the stream of the request (newest first), and its
** chunks replayed in order (start: the message id; text-delta: text). */
static void partial_read(rt_world *w, uint32_t a, rec_state *r) {
  sqlite3_stmt *st = cst(w, a, C_META_BY_REQ);
  char status[16] = "", body[160];
  if (!st) return;
  sqlite3_bind_int64(st, 1, r->req);
  if (sqlite3_step(st) == SQLITE_ROW) {
    r->stream = sqlite3_column_int64(st, 0);
    col_text(st, 1, status, sizeof status);
  }
  sqlite3_reset(st);
  r->status = !strcmp(status, "streaming") ? RT_CS_STREAMING
              : !strcmp(status, "error")   ? RT_CS_ERROR : RT_CS_COMPLETED;
  if (!r->stream || !(st = cst(w, a, C_CHUNKS))) return;
  sqlite3_bind_int64(st, 1, r->stream);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *d;
    col_text(st, 0, body, sizeof body);
    if (strstr(body, "\"type\":\"start\"")) r->message_id = json_int(body, "\"messageId\":");
    if (!strstr(body, "\"type\":\"text-delta\"") || !(d = strstr(body, "\"delta\":\""))) continue;
    d += 9;
    size_t n = strcspn(d, "\""), have = strlen(r->text);
    if (have + n < sizeof r->text) memcpy(r->text + have, d, n), r->text[have + n] = '\0';
    r->deltas++;
  }
  sqlite3_reset(st);
}

/* OpenAI store:true: GET /v1/responses/{id}; a completed response is
** persisted in full (appended to the target of a continuation). */
static int retrieve(rt_world *w, uint32_t a, rec_state *r) {
  chat_up *u = r->response > 0 ? up_find(w, a, r->response) : NULL;
  char *full;
  chat_row ex;
  if (!u || !u->stored || u->next < u->total || !(full = calloc(1, TEXT_CAP))) return 0;
  int64_t target = r->continuation ? r->message_id : 0;
  int have = target && msg_get(w, a, target, &ex) == 0;
  if (have) cut_copy(full, TEXT_CAP, ex.text);
  for (int k = 0; k < u->total; k++) {
    size_t o = strlen(full);
    snprintf(full + o, TEXT_CAP - o, "r%lld.%d ", (long long)u->id, k);
  }
  up_emit(w, u, RT_UP_RETRIEVED);
  w_assistant(w, a, have ? target : rt__new_id(w), r->req, have ? ex.answers : r->answers,
              full, !have);
  free(full);
  return 1;
}

/* Appends text to buf (cap bytes) as a JSON string, cut to fit. */
static void json_str(char *buf, size_t cap, const char *text) {
  size_t o = strlen(buf);
  if (o + 3 >= cap) return;
  buf[o++] = '"';
  for (; *text && o + 3 < cap; text++) {
    if (*text == '"' || *text == '\\') buf[o++] = '\\';
    buf[o++] = (unsigned char)*text < 0x20 ? ' ' : *text;
  }
  buf[o++] = '"';
  buf[o] = '\0';
}

/* RT_EV_CHAT_RECOVERY_CTX: the whole ctx onChatRecovery receives (A.12
** step 3): streamId, requestId, createdAt, partialText, partialParts (the
** parts rebuilt from the text deltas: one text part, or none),
** recoveryData (the user's stash), messages (how many), lastBody and
** lastClientTools (as restored in the constructor; null when none). */
static char *emit_ctx(rt_world *w, uint32_t a, const rec_state *r) {
  struct rt_chat_mem *cm = chat_m(RT_MEM(w, a));
  char *js = malloc(TEXT_CAP + 1024), rd[48] = "null";
  if (!js) return NULL;
  if (r->response > 0) snprintf(rd, sizeof rd, "{\"responseId\":%lld}", (long long)r->response);
  snprintf(js, TEXT_CAP + 1024,
           "{\"streamId\":%lld,\"requestId\":%lld,\"createdAt\":%lld,\"partialParts\":%d,"
           "\"recoveryData\":%s,\"messages\":%d,\"lastBody\":%s,\"lastClientTools\":%s,"
           "\"partialText\":",
           (long long)r->stream, (long long)r->req, (long long)r->created_ms, r->deltas > 0, rd,
           r->n_messages, cm && cm->last_body[0] ? cm->last_body : "null",
           cm && cm->last_tools[0] ? cm->last_tools : "null");
  json_str(js, TEXT_CAP + 1000, r->text);
  strcat(js, "}");
  sim_emit(w->s, RT_EV_CHAT_RECOVERY_CTX, a, r->stream, r->req, r->n_messages,
           rt__str(w, r->text), rt__str(w, js));
  return js; /* the caller frees it */
}

/* The options onChatRecovery answered, then the provider's strategy (seed
** 000 "Recovery strategies by provider"). */
static void apply_opts(rt_world *w, uint32_t a, rec_state *r, const rt_uc_chat_opts *opts) {
  const rt_chat_policy *p = policy_of(w, a);
  r->persist = opts->persist;
  r->cont = opts->cont;
  if (p->provider == RT_CHAT_RETRIEVE && w->cfg.chat_bug != RT_CHAT_BUG_REGENERATE &&
      retrieve(w, a, r)) {
    r->persist = r->cont = 0;
    r->arm = "retrieved";
  } else if (p->provider == RT_CHAT_SYNTHETIC && r->deltas > 0) {
    chat_schedule(w, a, CB_SYNTH, r->message_id, r->req, 0, 0);
    r->cont = 0;
    r->arm = "synthetic";
  }
}

/* onChatRecovery's options when it returns none or throws: the SDK's defaults. */
static const rt_uc_chat_opts sdk_opts = {1, 1, NULL};

/* Calls the user's onChatRecovery (the actor's configured options without
** one) and applies what it answered: 0, or 1 when it waits (it goes on in
** rt__chat_recovery_end), or -1 when the incarnation died in it. */
static int on_chat_recovery(rt_world *w, uint32_t a, rec_state *r) {
  rt_uc_chat_opts opts = sdk_opts;
  rt_uc_status how = RT_UC_ABSENT;
  rt_uc_chat_ctx ctx = {r->stream, r->req, r->created_ms, r->text, r->response, NULL};
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_mem *m = RT_MEM(w, a);
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  char *js = emit_ctx(w, a, r);
  ctx.context = js;
  if (uc && uc->on_chat_recovery) /* the user's options (rt_usercode.h) */
    how = uc->on_chat_recovery(st, &self, &ctx, &opts);
  if (how == RT_UC_THREW) opts = sdk_opts; /* reported; the defaults */
  free(js);
  if (RT_MEM(w, a) != m) return -1; /* the user's code died (a crash point in its write) */
  if (how == RT_UC_DETACHED) return 1; /* it waits: the SDK awaits it */
  apply_opts(w, a, r, &opts);
  return 0;
}

/* _persistOrphanedStream: the partial becomes the assistant message named
** by the start chunk (appended if it exists: a continuation's target). */
static void persist_orphan(rt_world *w, uint32_t a, const rec_state *r) {
  chat_row ex;
  char *buf;
  int64_t id = r->message_id ? r->message_id : rt__new_id(w);
  if (msg_get(w, a, id, &ex) != 0) {
    w_assistant(w, a, id, r->req, r->answers, r->text, 1);
    return;
  }
  if (!(buf = malloc(TEXT_CAP))) return;
  cut_copy(buf, TEXT_CAP, ex.text);
  cut_cat(buf, TEXT_CAP, r->text);
  w_assistant(w, a, id, r->req, ex.answers, buf, 0);
  free(buf);
}

/* A.12 steps 4-6 after onChatRecovery returned. */
static void after_hook(rt_world *w, uint32_t a, rec_state *r) {
  chat_row last;
  int active = r->stream && r->status == RT_CS_STREAMING;
  if (r->persist && active && r->deltas > 0) persist_orphan(w, a, r);
  if (active) w_meta(w, a, r->stream, r->req, RT_CS_COMPLETED);
  if (!r->cont) {
    if (!r->arm) r->arm = "none";
    return;
  }
  /* a pre-stream turn whose user message (the snapshot's latestUserMessageId;
     else the leaf) has no answer is retried */
  int64_t user = r->answers;
  if (!user && msg_last(w, a, 0, &last) == 0 && last.role == 1) user = last.id;
  if (r->deltas == 0 && user && msg_get(w, a, user, &last) == 0 && last.role == 1 &&
      one_int(w, a, C_MSG_ANSWERED, user) == 0 && w->cfg.chat_bug != RT_CHAT_BUG_NO_RETRY) {
    chat_schedule(w, a, CB_RETRY, user, r->req, 0, 0);
    r->arm = "retry";
    return;
  }
  chat_schedule(w, a, CB_CONTINUE, msg_last(w, a, 1, &last) == 0 ? last.id : 0, r->req, 0, 0);
  r->arm = "continue";
}

static const char *options_text(const rec_state *r) {
  if (r->persist && r->cont) return "{}";
  if (r->persist) return "{continue:false}";
  return r->cont ? "{persist:false}" : "{persist:false,continue:false}";
}

static void save_info(rt_world *w, uint32_t a, const rec_state *r) {
  struct rt_chat_world *cw = chat_world(w);
  struct rt_chat_mem *cm = chat_m(RT_MEM(w, a));
  if (!cw) return;
  if (a >= cw->n_last) {
    rt_chat_recovery_info *nl = realloc(cw->last, (size_t)(a + 1) * sizeof *nl);
    if (!nl) return;
    memset(nl + cw->n_last, 0, (size_t)(a + 1 - cw->n_last) * sizeof *nl);
    cw->last = nl;
    cw->n_last = a + 1;
  }
  rt_chat_recovery_info *in = &cw->last[a];
  *in = (rt_chat_recovery_info){.stream_id = r->stream, .request_id = r->req,
                                .created_at_ms = r->created_ms, .partial_parts = r->deltas > 0,
                                .recovery_data = r->response, .persist = r->persist,
                                .cont = r->cont};
  cut_copy(in->partial_text, sizeof in->partial_text, r->text);
  in->n_messages = r->n_messages;
  snprintf(in->last_body, sizeof in->last_body, "%s", cm ? cm->last_body : "");
  snprintf(in->last_client_tools, sizeof in->last_client_tools, "%s", cm ? cm->last_tools : "");
  snprintf(in->arm, sizeof in->arm, "%s", r->arm);
}

/* A.12 steps 4-6 and the records, once onChatRecovery answered; frees r. */
static void recover_rest(rt_world *w, uint32_t a, rec_state *r) {
  after_hook(w, a, r);
  int resumes = !strcmp(r->arm, "continue") || !strcmp(r->arm, "retry") ||
                !strcmp(r->arm, "synthetic");
  emit2(w, RT_EV_CHAT_RECOVERY, a, r->orphan, r->req, r->deltas, options_text(r), r->arm);
  rt__emit(w, RT_EV_FIBER_RECOVERED, a, r->orphan, r->value,
           resumes ? RT_RECOVER_RESUME : RT_RECOVER_DROP, r->name);
  save_info(w, a, r);
  free(r);
}

static int rt__chat_recover(rt_world *w, uint32_t a, const rt_orphan *o) {
  size_t n = strlen(CHAT_PREFIX);
  rec_state *r;
  if (strncmp(o->name, CHAT_PREFIX, n) != 0) return -1;
  if (!chat_mem(w, a) || !(r = calloc(1, sizeof *r))) return -1;
  r->req = strtoll(o->name + n, NULL, 10);
  snap_read(w, a, o->id, r);
  partial_read(w, a, r);
  r->n_messages = (int)one_int(w, a, C_MSG_COUNT, -1); /* ctx.messages */
  r->orphan = o->id;
  snprintf(r->name, sizeof r->name, "%s", o->name);
  int how = on_chat_recovery(w, a, r);
  if (how < 0) { /* the incarnation died in onChatRecovery */
    free(r);
    return 0;
  }
  if (how == 1) { /* it waits: the turn's recovery stays open */
    struct rt_chat_mem *cm = chat_m(RT_MEM(w, a));
    free(cm->rec_wait);
    cm->rec_wait = r;
    return 1;
  }
  recover_rest(w, a, r);
  return 0;
}

void rt__chat_recovery_end(rt_world *w, uint32_t a, int ok, const rt_uc_chat_opts *opts) {
  rt_mem *m = RT_MEM(w, a);
  struct rt_chat_mem *cm = m ? chat_m(m) : NULL;
  rec_state *r = cm ? cm->rec_wait : NULL;
  if (!r) return;
  cm->rec_wait = NULL;
  apply_opts(w, a, r, ok && opts ? opts : &sdk_opts); /* a throw: reported, the defaults */
  recover_rest(w, a, r);
  if (RT_MEM(w, a) == m) rt__orphan_recovered(w, a); /* the row goes, _checkRunFibers goes on */
}

/* ---- recovery callbacks (_chatRecoveryContinue, _chatRecoveryRetry, the
** seed's _continueWithSyntheticMessage) ------------------------------------ */

static int stable(const struct rt_chat_mem *cm) { return !cm->turn.live && cm->n_queue == 0; }

/* Deletes a callback's payload row (and its schedule row if still held). */
static void release(rt_world *w, uint32_t a, const chat_cb *cb) {
  sqlite3_stmt *st = cb->sid > 0 ? wst(w, a, C_PAY_DELETE) : NULL; /* 0: a direct call */
  if (st) {
    sqlite3_bind_int64(st, 1, cb->sid);
    rt__txn_wrote(w, a, RT_W_SCHEDULE, cb->sid, sqlite3_step(st));
  }
  if (!cb->held) return;
  rt__w_schedule_delete(w, a, cb->sid, cb->name);
  rt__schedule_next_alarm(w, a);
}

static void skipped(rt_world *w, uint32_t a, const chat_cb *cb) {
  release(w, a, cb);
  rt__emit(w, RT_EV_CHAT_RESUME, a, 0, cb->origin, cb->sid, cb->name);
  rt__emit(w, RT_EV_CHAT_TURN, a, 0, cb->target, RT_CM_SKIPPED, "");
}

/* The recovery turn starts: its callback is done. */
static void resume(rt_world *w, uint32_t a, const chat_cb *cb, const turn_spec *sp) {
  release(w, a, cb);
  rt__emit(w, RT_EV_CHAT_RESUME, a, sp->req, cb->origin, cb->sid, cb->name);
  if (sp->user[0]) w_user(w, a, sp->answers, sp->req, sp->user);
  turn_begin(w, a, sp);
}

/* continueLastTurn / saveMessages go through the turn queue: the turn runs
** now if the queue is idle, else after the turns ahead of it. */
static void submit(rt_world *w, uint32_t a, const chat_cb *cb, const turn_spec *sp) {
  struct rt_chat_mem *cm = chat_m(RT_MEM(w, a));
  chat_job j = {.user = 0, .cb = *cb, .sp = *sp};
  if (stable(cm))
    resume(w, a, cb, sp);
  else
    queue_push(cm, &j); /* OOM: the held row fires again later */
}

/* The broken "resend" recovery: the user message again, as a new message,
** and a fresh turn for it. */
static void resend_user(rt_world *w, uint32_t a, const chat_cb *cb, int64_t answers, int n,
                        int64_t every) {
  int64_t uid = rt__new_id(w), req = rt__new_id(w);
  turn_spec sp = {RT_CM_USER, req, uid, 0, n, every, 0, ""};
  user_text(w, a, answers, sp.user, sizeof sp.user);
  submit(w, a, cb, &sp);
}

/* continueLastTurn: appends to the last assistant message (skipped if there
** is none, or if it is no longer the target the recovery named). */
static void run_continue(rt_world *w, uint32_t a, const chat_cb *cb) {
  struct rt_chat_mem *cm = chat_m(RT_MEM(w, a));
  chat_row last;
  int n;
  int64_t every;
  body_params(cm, &n, &every);
  if (msg_last(w, a, 1, &last) || (cb->target && last.id != cb->target)) {
    skipped(w, a, cb);
    return;
  }
  if (w->cfg.chat_bug == RT_CHAT_BUG_RESEND_USER) {
    resend_user(w, a, cb, last.answers, n, every);
    return;
  }
  int left = n - count_tokens(last.text);
  turn_spec sp = {RT_CM_CONTINUE, rt__new_id(w), last.answers, last.id, left > 0 ? left : 1,
                  every, w->cfg.chat_bug == RT_CHAT_BUG_NEW_MESSAGE, ""};
  submit(w, a, cb, &sp);
}

/* The unanswered user turn, again (skipped once something answered it). */
static void run_retry(rt_world *w, uint32_t a, const chat_cb *cb) {
  chat_row u;
  int n;
  int64_t every;
  body_params(chat_m(RT_MEM(w, a)), &n, &every);
  if (msg_get(w, a, cb->target, &u) || u.role != 1 ||
      one_int(w, a, C_MSG_ANSWERED, cb->target) > 0) {
    skipped(w, a, cb);
    return;
  }
  turn_spec sp = {RT_CM_RETRY, rt__new_id(w), cb->target, 0, n, every, 0, ""};
  submit(w, a, cb, &sp);
}

/* Anthropic: saveMessages with a synthetic "continue" user message; the
** reply is a new assistant message for the rest of the answer. */
static void run_synthetic(rt_world *w, uint32_t a, const chat_cb *cb) {
  chat_row t;
  int n;
  int64_t every, uid = rt__new_id(w), req = rt__new_id(w);
  body_params(chat_m(RT_MEM(w, a)), &n, &every);
  int left = n - (msg_get(w, a, cb->target, &t) == 0 ? count_tokens(t.text) : 0);
  turn_spec sp = {RT_CM_SYNTHETIC, req, uid, 0, left > 0 ? left : 1, every, 0, ""};
  snprintf(sp.user, sizeof sp.user, "Continue where you left off (turn %lld)",
           (long long)cb->origin);
  submit(w, a, cb, &sp);
}

static int cb_kind(chat_cb *cb, const char *name) {
  if (!strcmp(name, CB_CONTINUE)) cb->kind = RT_CM_CONTINUE, cb->name = CB_CONTINUE;
  else if (!strcmp(name, CB_RETRY)) cb->kind = RT_CM_RETRY, cb->name = CB_RETRY;
  else if (!strcmp(name, CB_SYNTH)) cb->kind = RT_CM_SYNTHETIC, cb->name = CB_SYNTH;
  else return -1;
  return 0;
}

/* Reads the payload of schedule cb->sid; 0, or -1 if there is none. */
static int pay_read(rt_world *w, uint32_t a, chat_cb *cb) {
  sqlite3_stmt *st = cst(w, a, C_PAY_GET);
  char name[48] = "";
  int found = 0;
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, cb->sid);
  if (sqlite3_step(st) == SQLITE_ROW) {
    cb->target = sqlite3_column_int64(st, 0);
    cb->origin = sqlite3_column_int64(st, 1);
    cb->deadline_ms = sqlite3_column_int64(st, 2);
    col_text(st, 3, name, sizeof name);
    found = 1;
  }
  sqlite3_reset(st);
  return found && cb_kind(cb, name) == 0 ? 0 : -1;
}

static void run_cb(rt_world *w, uint32_t a, const chat_cb *cb) {
  if (cb->kind == RT_CM_RETRY)
    run_retry(w, a, cb);
  else if (cb->kind == RT_CM_SYNTHETIC)
    run_synthetic(w, a, cb);
  else
    run_continue(w, a, cb);
}

/* The turn queue went idle: every callback in waitUntilStable resolves, in
** order; the first turn starts, the others queue behind it. */
static void run_waiting(rt_world *w, uint32_t a) {
  struct rt_chat_mem *cm = chat_m(RT_MEM(w, a));
  int n = cm->n_waiting;
  int64_t sids[MAX_WAITING];
  memcpy(sids, cm->waiting, (size_t)n * sizeof sids[0]);
  cm->n_waiting = 0;
  for (int i = 0; i < n && RT_MEM(w, a) && chat_m(RT_MEM(w, a)) == cm; i++) {
    chat_cb cb = {.sid = sids[i], .held = 1};
    if (pay_read(w, a, &cb) == 0) run_cb(w, a, &cb);
  }
}

/* Removes sid from this incarnation's waiting list; 1 if it was there. */
static int unwait(struct rt_chat_mem *cm, int64_t sid) {
  for (int i = 0; i < cm->n_waiting; i++) {
    if (cm->waiting[i] != sid) continue;
    memmove(&cm->waiting[i], &cm->waiting[i + 1], (size_t)(cm->n_waiting - i - 1) * sizeof sid);
    cm->n_waiting--;
    return 1;
  }
  return 0;
}

/* A queued recovery turn whose row fired: keep it durable with a new row. */
static int requeue_row(rt_world *w, uint32_t a, struct rt_chat_mem *cm, int64_t sid) {
  for (int i = 0; i < cm->n_queue; i++) {
    chat_job *j = &cm->queue[i];
    if (j->user || j->cb.sid != sid) continue;
    chat_cb old = j->cb;
    old.held = 0; /* the alarm already deleted its schedule row */
    release(w, a, &old);
    j->cb.sid = chat_schedule(w, a, old.name, old.target, old.origin,
                              now_ms(w) + STABLE_MS, STABLE_MS / 1000);
    return 1;
  }
  return 0;
}

/* A recovery callback's schedule row fired (the alarm deleted the row):
** run it if the turn queue is idle; else wait for that (up to 10 s in this
** incarnation, behind a new row; that row firing while this incarnation
** still waits means the wait timed out). */
static void rt__chat_callback(rt_world *w, uint32_t a, int64_t sid, const char *name) {
  chat_cb cb = {.sid = sid};
  struct rt_chat_mem *cm;
  if (cb_kind(&cb, name) || !(cm = chat_mem(w, a)) || requeue_row(w, a, cm, sid) ||
      pay_read(w, a, &cb))
    return;
  int timed_out = unwait(cm, sid);
  if (stable(cm)) {
    run_cb(w, a, &cb);
  } else if (timed_out) {
    skipped(w, a, &cb); /* "timed out waiting for stable state, skipping" */
  } else {
    release(w, a, &cb);
    int64_t next = chat_schedule(w, a, cb.name, cb.target, cb.origin, now_ms(w) + STABLE_MS,
                                 STABLE_MS / 1000);
    if (next > 0 && cm->n_waiting < MAX_WAITING) cm->waiting[cm->n_waiting++] = next;
  }
}

/* ---- direct calls (issue #15): continueLastTurn(), saveMessages(), and the
** client's cancel of the running turn ------------------------------------------ */

/* continueLastTurn() called by user code: no schedule row, no payload. */
static int direct_continue(rt_world *w, uint32_t a) {
  chat_cb cb = {.kind = RT_CM_CONTINUE, .name = "continueLastTurn"};
  chat_row last;
  if (!chat_mem(w, a)) return -1;
  int found = msg_last(w, a, 1, &last) == 0;
  run_continue(w, a, &cb);
  return found;
}

/* saveMessages([text]): chunks 0 takes lastBody's. */
static int64_t direct_save(rt_world *w, uint32_t a, const char *text, int chunks,
                           int64_t every) {
  struct rt_chat_mem *cm = chat_mem(w, a);
  chat_cb cb = {.kind = RT_CM_SAVE, .name = "saveMessages"};
  int n;
  int64_t e;
  if (!cm) return -1;
  body_params(cm, &n, &e);
  if (chunks > 0) n = chunks, e = every;
  int64_t req = rt__new_id(w), uid = rt__new_id(w);
  turn_spec sp = {RT_CM_SAVE, req, uid, 0, n, e, 0, ""};
  cut_copy(sp.user, sizeof sp.user, text);
  submit(w, a, &cb, &sp);
  return req;
}

static int sdk_continue(rt_world *w, uint32_t a) { return direct_continue(w, a); }
static int64_t sdk_save(rt_world *w, uint32_t a, const char *text) {
  return direct_save(w, a, text, 0, 0);
}

/* The client cancels the running turn (the request's AbortController): the
** provider stops generating, the turn ends as a finished stream would, its
** partial text persisted (modelling choice, docs/runtime.md). */
static int cancel_turn(rt_world *w, uint32_t a) {
  struct rt_chat_mem *cm = chat_mem(w, a);
  chat_turn *t = cm ? &cm->turn : NULL;
  if (!t || !t->live) {
    rt__emit(w, RT_EV_CHAT_CANCEL, a, 0, 0, 0, NULL);
    return 0;
  }
  rt__emit(w, RT_EV_CHAT_CANCEL, a, t->req, t->deltas, 0, NULL);
  chat_up *u = t->up ? up_find(w, a, t->up) : NULL;
  if (u && u->attached) {
    u->attached = 0;
    u->stored = 0; /* aborted: the provider stops too */
    up_emit(w, u, RT_UP_SEVERED);
  }
  t->tool_wait = 0;
  turn_finish(w, a, RT_CS_COMPLETED);
  return 1;
}

static void chat_cancel(rt_world *w, uint32_t a, const rt_msg *m) {
  cancel_turn(w, a);
  if (RT_MEM(w, a)) rt__request_done(w, a, m, 1, NULL);
}

/* cancel from user code (rt_sdk_chat_cancel) */
static int sdk_cancel(rt_world *w, uint32_t a) {
  if (!chat_mem(w, a)) return -1;
  return cancel_turn(w, a);
}

static void chat_message(rt_world *w, uint32_t a, const rt_msg *m) {
  switch (m->kind) {
    case MSG_CHAT: rt__chat_request(w, a, m); break;
    case MSG_CHAT_CONTINUE:
      direct_continue(w, a);
      if (RT_MEM(w, a)) rt__request_done(w, a, m, 1, NULL);
      break;
    case MSG_CHAT_SAVE:
      direct_save(w, a, sim_trace_str(&w->s->trace, m->str), (int)m->arg, m->arg2);
      if (RT_MEM(w, a)) rt__request_done(w, a, m, 1, NULL);
      break;
    case MSG_CHAT_CANCEL: chat_cancel(w, a, m); break;
    default: break;
  }
}

static int chat_req_at(rt_world *w, uint32_t actor, int kind, rt_entry entry, uint32_t str,
                       int chunks, int64_t every, int64_t at_us) {
  rt_msg m = {0};
  if (!w || actor >= w->n_actors) return -1;
  m.kind = kind;
  m.entry = entry;
  m.str = str;
  m.arg = chunks;
  m.arg2 = every;
  return rt__deliver_at(w, actor, &m, at_us);
}

int rt_chat_continue_at(rt_world *w, uint32_t actor, int64_t at_us) {
  return chat_req_at(w, actor, MSG_CHAT_CONTINUE, RT_ENTRY_FETCH, 0, 0, 0, at_us);
}

int rt_chat_save_at(rt_world *w, uint32_t actor, const char *text, int chunks,
                    int64_t chunk_every_us, int64_t at_us) {
  if (!w || !text || !*text || chunks < 0 || chunks > RT_CHAT_MAX_CHUNKS ||
      (chunks > 0 && chunk_every_us <= 0))
    return -1;
  return chat_req_at(w, actor, MSG_CHAT_SAVE, RT_ENTRY_FETCH, rt__str(w, text), chunks,
                     chunk_every_us, at_us);
}

int rt_chat_cancel_at(rt_world *w, uint32_t actor, int64_t at_us) {
  return chat_req_at(w, actor, MSG_CHAT_CANCEL, RT_ENTRY_WS, 0, 0, 0, at_us);
}

/* ---- inspection -------------------------------------------------------------- */

int rt_chat_messages(rt_world *w, uint32_t actor, rt_chat_message *out, int cap) {
  sqlite3_stmt *st;
  chat_row r;
  int n = 0;
  if (!w || actor >= w->n_actors || !(st = cst(w, actor, C_MSG_ALL))) return -1;
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (n < cap) {
      r.id = sqlite3_column_int64(st, 0);
      row_read(st, &r, 1);
      out[n].id = r.id;
      out[n].role = r.role;
      out[n].answers = r.answers;
      cut_copy(out[n].text, sizeof out[n].text, r.text);
    }
    n++;
  }
  sqlite3_reset(st);
  return n;
}

int rt_chat_last_recovery(rt_world *w, uint32_t actor, rt_chat_recovery_info *out) {
  if (!w || !chat_w(w) || actor >= chat_w(w)->n_last || !chat_w(w)->last[actor].arm[0]) return -1;
  *out = chat_w(w)->last[actor];
  return 0;
}

/* ---- the extension ----------------------------------------------------------- */

static const int chat_kinds[] = {MSG_CHAT, MSG_CHAT_CONTINUE, MSG_CHAT_SAVE, MSG_CHAT_CANCEL};

rt_agent_ext rt__chat_ext = {
    .name = "chat",
    .store = &rt__chat_store,
    .kinds = chat_kinds,
    .n_kinds = (int)(sizeof chat_kinds / sizeof chat_kinds[0]),
    .message = chat_message,
    .schedule_ran = rt__chat_callback,
    .recover_orphan = rt__chat_recover,
    .mem_free = rt__chat_mem_free,
    .world_free = rt__chat_world_free,
};

/* Registers what chat needs from the tool-run model (rt_models.c). */
int rt__chat_register(void) {
  rt__model_calls.continue_last_turn = sdk_continue;
  rt__model_calls.save_messages = sdk_save;
  rt__model_calls.chat_cancel = sdk_cancel;
  return rt__toolrun_on_terminal(rt__chat_tool_done);
}
