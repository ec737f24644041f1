/*
** rt_toolrun.c: sub-agent tool runs and their startup reconciliation.
**
** Follows seed 003 and reference/agents-sdk.md A.11 and section C:
**   live runAgentTool: INSERT starting → child start → running → child
**   result → completed; terminal rows are immutable (@1604);
**   gated (before PR #1604): inside the parent's startup gate, each stale
**   row in started_at order resolves its child (the child's own startup in
**   its own gate, recursively) and is finalized only after that work, with
**   no timeout: the #1595 wedge;
**   deferred (PR #1604): ids snapshotted before the user onStart, then after
**   a zero-delay yield, single-flight under waitUntil, each inspection raced
**   against 2 s, timed-out or failed rows finalized `interrupted` with the
**   documented reason; optional 5 s total deadline (#1611).
**
** Tool calls of chat turns (issue #15; agents #1630, PR #1640, reference
** section C "Later changes"): @1604 every runAgentTool call makes a fresh
** run id, so a recovered chat turn that re-issues its tool call starts the
** child's work again while the abandoned first run (interrupted "still
** running") keeps working: the work is done twice. PR #1640 derives a
** stable child runId `agent-tool:<toolCallId>` (here RT_TR_STABLE_BASE +
** the call), so the re-issued call finds the existing row: a terminal row
** returns its stored result, an open row re-attaches to the child (its
** live tail, modelled as a call answered when the child's run ends) with
** the no-progress budget of 120_000 ms, and startup recovery re-attaches a
** still-running child instead of interrupting it. The child's
** startAgentToolRun for a run id it already has does not start the work
** again (the facet is named by the run id).
**
** The rest of issue #15 (reference A.11; the agents RFC "Agent tool event
** protocol", "V1 observer semantics"): every run broadcasts agent-tool-event
** frames with a per-run sequence (started 0, chunk k, then the terminal
** event), RT_EV_TOOLRUN_EVENT; a child stores its chunks (sequence 1..n,
** rv_child_chunks) and answers inspections with its status and n; the
** reconciliation replays the n chunks (replay: true) before the terminal
** event; a reconnecting client gets every run's events after its
** afterSequence (getAgentToolChunks per run, in started_at order). The
** parent may abort a run (its signal: `aborted`, then cancelAgentToolRun on
** the child, which stops its work). A plain runAgentTool with the id of an
** existing row (@1604): terminal → its stored result; open → its chunks
** replayed, then `interrupted` (no second start).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_models.h"

/* storage (the end of this file) */
static int rt__w_toolrun_insert(rt_world *w, uint32_t a, int64_t run, uint32_t child,
                                int status);
static int rt__w_toolrun_status(rt_world *w, uint32_t a, int64_t run, int status,
                                const char *reason);
static int rt__w_child_run(rt_world *w, uint32_t a, int64_t run, int status);
static int rt__load_open_toolruns(rt_world *w, uint32_t a, int64_t *out, int cap);
static int rt__child_run_get(rt_world *w, uint32_t a, int64_t run);
static void rt__toolrun_schedule_recovery(rt_world *w, uint32_t a);
static int load_all_toolruns(rt_world *w, uint32_t a, int64_t *out, int cap);
static int child_chunk_count(rt_world *w, uint32_t a, int64_t run);
static int w_child_chunk(rt_world *w, uint32_t a, int64_t run, int seq);

/* A child's answer about a run: its status in the low 8 bits, the number
** of chunks it stored above them (inspectAgentToolRun + the chunk count). */
#define ANS_STATUS(v) ((int)((v) & 0xff))
#define ANS_CHUNKS(v) ((int)((v) >> 8))

/* ---- incarnation memory: the sequence broadcast per run, client replays -- */

#define SEQ_SLOTS 128
#define MAX_REPLAYS 8

typedef struct tr_mem {
  int64_t seq_run[SEQ_SLOTS];      /* runs whose events this incarnation sent ... */
  int seq_last[SEQ_SLOTS];         /* ... the last sequence sent */
  uint32_t seq_call[SEQ_SLOTS];    /* ... and the tool call id (trace string, 0 none) */
  int n_seq, next_slot;
  rt_msg replays[MAX_REPLAYS];     /* client replays: the first runs, the others wait */
  int n_replays;
  int64_t rows[RT_MAX_ROWS];       /* the running replay's runs, started_at order */
  int n_rows, idx;
  rt_uc_frame *fr;                 /* the child's tool-run bodies waiting for their work */
  int n_fr, cap_fr;                /* (rt_usercode.h) */
} tr_mem;

static tr_mem *trm(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  if (!m) return NULL;
  tr_mem *t = RT_EXT_MEM(m, &rt__toolrun_ext);
  if (!t && (t = calloc(1, sizeof *t)) != NULL) RT_EXT_MEM(m, &rt__toolrun_ext) = t;
  return t;
}

static void toolrun_mem_free(rt_world *w, rt_mem *m) {
  tr_mem *t = RT_EXT_MEM(m, &rt__toolrun_ext);
  (void)w;
  if (!t) return;
  free(t->fr);
  free(t);
  RT_EXT_MEM(m, &rt__toolrun_ext) = NULL;
}

/* The slot of run (made if absent: the oldest is reused when full). */
static int seq_slot(tr_mem *t, int64_t run) {
  for (int i = 0; i < t->n_seq; i++)
    if (t->seq_run[i] == run) return i;
  int i = t->n_seq < SEQ_SLOTS ? t->n_seq++ : t->next_slot;
  t->next_slot = (i + 1) % SEQ_SLOTS;
  t->seq_run[i] = run;
  t->seq_last[i] = -1;
  t->seq_call[i] = 0;
  return i;
}

/* Sends an agent-tool-event frame of run at sequence seq: to every client
** (replay 0 live, 1 a recovery's replay: both advance the run's last
** sequence) or to one reconnecting client (replay 2, recorded as a replay). */
static void broadcast(rt_world *w, uint32_t a, int64_t run, int seq, int replay,
                      const char *kind) {
  tr_mem *t = trm(w, a);
  uint32_t call = 0;
  if (t) {
    int i = seq_slot(t, run);
    call = t->seq_call[i];
    if (replay < 2 && seq > t->seq_last[i]) t->seq_last[i] = seq;
  }
  sim_emit(w->s, RT_EV_TOOLRUN_EVENT, a, run, seq, replay, rt__str(w, kind), call);
}

static int last_seq(rt_world *w, uint32_t a, int64_t run) {
  tr_mem *t = trm(w, a);
  return t ? t->seq_last[seq_slot(t, run)] : -1;
}

/* The event of a terminal status (the RFC's AgentToolEvent kinds). */
static const char *terminal_kind(int status) {
  return status == RT_TR_COMPLETED ? "finished"
         : status == RT_TR_ERROR   ? "error"
         : status == RT_TR_ABORTED ? "aborted" : "interrupted";
}

/* Replays chunks from+1..n of run (replay frames; how: 1 to every client,
** 2 to one reconnecting client). */
static void replay_chunks(rt_world *w, uint32_t a, int64_t run, int from, int n, int how) {
  for (int k = from + 1 > 1 ? from + 1 : 1; k <= n; k++) broadcast(w, a, run, k, how, "chunk");
}

/* Listeners of terminal runs (rt__toolrun_on_terminal): chat turns. */
static void (*terminal_fns[4])(rt_world *w, uint32_t a, int64_t run, int status);
static int n_terminal;

int rt__toolrun_on_terminal(void (*fn)(rt_world *w, uint32_t a, int64_t run, int status)) {
  for (int i = 0; i < n_terminal; i++)
    if (terminal_fns[i] == fn) return 0;
  if (n_terminal == 4) return -1;
  terminal_fns[n_terminal++] = fn;
  return 0;
}

/* onAgentToolFinish(run) (issue #15): the user hook returns, or throws
** (the SDK routes it to onError and swallows it, then continues). */
static void finish_hook(rt_world *w, uint32_t a, int64_t run, int status, uint32_t msg,
                        int deferred) {
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  int threw = uc && uc->on_agent_tool_finish &&
              uc->on_agent_tool_finish(st, &self, run, status,
                                       msg ? sim_trace_str(&w->s->trace, msg) : NULL) ==
                  RT_UC_THREW;
  sim_emit(w->s, RT_EV_TOOLRUN_FINISH, a, run, status, threw ? RT_CB_THREW : RT_CB_RETURNED,
           msg ? msg : rt__str(w, ""), rt__str(w, deferred ? "deferred" : "live"));
}

/* _runDeferredAgentToolFinishHooks: the closures in order; each throw is
** swallowed and the next runs. */
static void run_deferred_hooks(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  for (int i = 0; i < m->n_finish_hooks; i++)
    finish_hook(w, a, m->finish[i].run, m->finish[i].status, m->finish[i].msg, 1);
  m->n_finish_hooks = 0;
}

/* _finishAgentToolRun: the UPDATE applies only to a non-terminal row
** (@1604); a row that became terminal broadcasts and calls
** onAgentToolFinish, or returns the call as a deferred closure while a
** reconciliation runs with deferFinishHooks (reference A.11). */
static int rt__finish_toolrun(rt_world *w, uint32_t a, int64_t run, int status,
                       const char *reason) {
  rt_mem *m = RT_MEM(w, a);
  int old = rt__toolrun_get(w, a, run, NULL);
  int changed = rt__w_toolrun_status(w, a, run, status, reason);
  if (changed == 1) rt__emit(w, RT_EV_TOOLRUN_STATUS, a, run, status, old, reason);
  if (changed != 1 || !RT_TR_IS_TERMINAL(status)) return changed;
  broadcast(w, a, run, last_seq(w, a, run) + 1, 0, terminal_kind(status));
  if (RT_MEM(w, a) != m) return changed;
  uint32_t msg = reason ? rt__str(w, reason) : 0;
  if (m->defer_finish == 2) { /* refused before it started: no hook */
  } else if (m->defer_finish && m->n_finish_hooks < RT_MAX_ROWS &&
             RT_MEM_ARRAY(m->finish, RT_MAX_ROWS)) {
    m->finish[m->n_finish_hooks++] = (struct rt_finish_hook){run, status, msg};
  } else {
    finish_hook(w, a, run, status, msg, 0);
  }
  for (int i = 0; i < n_terminal && RT_MEM(w, a) == m; i++) terminal_fns[i](w, a, run, status);
  return changed;
}

/* A reconciliation finishes run (its hook deferred). */
static void reconcile_finish(rt_world *w, uint32_t a, int64_t run, int status, const char *reason) {
  rt_mem *m = RT_MEM(w, a);
  m->defer_finish = 1;
  rt__finish_toolrun(w, a, run, status, reason);
  m->defer_finish = 0;
}

static void rt__toolrun_started(rt_world *w, uint32_t a) {
  if (w->cfg.toolrun == RT_TOOLRUN_GATED)
    run_deferred_hooks(w, a); /* old wrapper: after the user onStart succeeded */
  else
    rt__toolrun_schedule_recovery(w, a);
}

/* Maps a child's answer to the parent's terminal status (A.11 step 3); an
** error carries the child's message ("Agent tool run failed" if none). */
static void finish_from_child(rt_world *w, uint32_t a, int64_t run, int64_t answer) {
  int child_status = ANS_STATUS(answer), last = last_seq(w, a, run);
  if (ANS_CHUNKS(answer) > last) { /* chunks this incarnation did not send: replayed */
    if (last < 0) last = 0;
    replay_chunks(w, a, run, last, ANS_CHUNKS(answer), 1);
  }
  uint32_t child = 0;
  rt__toolrun_get(w, a, run, &child);
  const char *msg = w->actors[child].spec.tool_error;
  if (child_status == RT_TR_COMPLETED)
    rt__finish_toolrun(w, a, run, RT_TR_COMPLETED, NULL);
  else if (child_status == RT_TR_ERROR)
    rt__finish_toolrun(w, a, run, RT_TR_ERROR, *msg ? msg : "Agent tool run failed");
  else if (child_status == RT_TR_ABORTED)
    rt__finish_toolrun(w, a, run, RT_TR_ABORTED, NULL);
  else
    rt__finish_toolrun(w, a, run, RT_TR_INTERRUPTED, RT_MSG_TR_STILL_RUNNING);
}

/* ---- live runs -------------------------------------------------------- */

/* INSERT starting, then startAgentToolRun on the child; tool_call is the
** trace string of the chat tool call id (0: none). */
static void start_run(rt_world *w, uint32_t a, int64_t run, uint32_t child, int64_t work_us,
                      uint32_t tool_call) {
  rt_mem *m = RT_MEM(w, a);
  int cap = w->actors[a].spec.max_tools;
  int64_t open[RT_MAX_ROWS];
  int n_open = cap > 0 ? rt__load_open_toolruns(w, a, open, RT_MAX_ROWS) : 0;
  rt__w_toolrun_insert(w, a, run, child, RT_TR_STARTING);
  sim_emit(w->s, RT_EV_TOOLRUN_INSERT, a, run, child, RT_TR_STARTING,
           rt__str(w, w->actors[child].spec.cls), tool_call);
  tr_mem *t = trm(w, a);
  if (t) t->seq_call[seq_slot(t, run)] = tool_call;
  if (cap > 0 && n_open >= cap) { /* an error row, no child spawned, no finish hook */
    char msg[64];
    snprintf(msg, sizeof msg, "maxConcurrentAgentTools (%d) exceeded", cap);
    m->defer_finish = 2;
    rt__finish_toolrun(w, a, run, RT_TR_ERROR, msg);
    m->defer_finish = 0;
    return;
  }
  broadcast(w, a, run, 0, 0, "started"); /* after onAgentToolStart */
  rt_call *c = rt__new_call(w, a, CALL_TOOL_START, run, child);
  if (!c) return;
  c->str = tool_call;
  rt__send_call(w, a, child, MSG_CALL_START, "startAgentToolRun", RT_ENTRY_FACET_INIT, c, run,
                work_us);
}

void rt__toolrun_start(rt_world *w, uint32_t a, uint32_t child, int64_t work_us) {
  start_run(w, a, rt__new_id(w), child, work_us, 0);
}

/* ---- tool calls of chat turns: fresh ids (#1630) or stable ids (#1640) --- */

static void attach_budget(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_mem *m = RT_MEM(w, a);
  rt_call *c = m ? rt__find_call(&m->inc, (int64_t)(arg & ((1ULL << 40) - 1))) : NULL;
  (void)s;
  if (!c) return;
  c->live = 0;
  sim_emit(w->s, RT_EV_TOOLRUN_ATTACH, a, c->key, RT_TRA_GAVE_UP,
           rt__toolrun_get(w, a, c->key, NULL), c->str, 0);
  rt__finish_toolrun(w, a, c->key, RT_TR_INTERRUPTED, "no-progress");
}

/* Re-attaches to the child of open run `run` (#1640): a tail call the
** child answers when its run ends, given up after the no-progress budget
** (AgentToolInterruptedReason "no-progress"). */
static void attach(rt_world *w, uint32_t a, int64_t run, int how, uint32_t tool_call) {
  uint32_t child = 0;
  int st = rt__toolrun_get(w, a, run, &child);
  rt_call *c = rt__new_call(w, a, CALL_TOOL_ATTACH, run, child);
  sim_emit(w->s, RT_EV_TOOLRUN_ATTACH, a, run, how, st, tool_call, 0);
  if (!c) return;
  c->str = tool_call;
  rt__send_call(w, a, child, MSG_CALL_ATTACH, "tailAgentToolRun", RT_ENTRY_FACET_INIT, c, run, 0);
  c->timer = sim_after(w->s, w->cfg.reattach_budget_us, RT_MEM(w, a)->inc.dom, attach_budget, w,
                       ((uint64_t)a << 40) | (uint64_t)c->id);
}

int64_t rt__toolrun_call(rt_world *w, uint32_t a, uint32_t child, int64_t work_us,
                         int64_t call, int *stored_status) {
  char tc[40];
  snprintf(tc, sizeof tc, "call-%lld", (long long)call);
  uint32_t tcs = rt__str(w, tc);
  *stored_status = -1;
  if (w->cfg.toolrun_ids != RT_TR_IDS_STABLE) {
    int64_t run = rt__new_id(w); /* @1604: a fresh run per call */
    start_run(w, a, run, child, work_us, tcs);
    return run;
  }
  int64_t run = RT_TR_STABLE_BASE + call; /* #1640: agent-tool:<toolCallId> */
  int st = rt__toolrun_get(w, a, run, NULL);
  if (st < 0) {
    start_run(w, a, run, child, work_us, tcs);
  } else if (RT_TR_IS_TERMINAL(st)) { /* an existing terminal row: its stored result */
    sim_emit(w->s, RT_EV_TOOLRUN_ATTACH, a, run, RT_TRA_STORED, st, tcs, 0);
    *stored_status = st;
  } else {
    attach(w, a, run, RT_TRA_TAIL, tcs);
  }
  return run;
}

/* A plain runAgentTool(child) with runId run_id (> 0: run RT_TR_USER_BASE +
** it; 0: a fresh id), for the workload and for user code (rt_sdk.h). Returns
** the run id. A new id starts a run; an existing terminal row
** returns its stored result; an open row is re-attached (#1640 ids) or, at
** @1604, gets its chunks replayed and is then finished `interrupted`. */
static int64_t run_agent_tool(rt_world *w, uint32_t a, uint32_t child, int64_t work_us,
                              int64_t run_id) {
  int64_t run = run_id > 0 ? RT_TR_USER_BASE + run_id : 0;
  int st = run ? rt__toolrun_get(w, a, run, NULL) : -1;
  if (st < 0) {
    if (!run) run = rt__new_id(w);
    start_run(w, a, run, child, work_us, 0);
  } else if (RT_TR_IS_TERMINAL(st)) {
    sim_emit(w->s, RT_EV_TOOLRUN_ATTACH, a, run, RT_TRA_STORED, st, 0, 0);
  } else if (w->cfg.toolrun_ids == RT_TR_IDS_STABLE) {
    attach(w, a, run, RT_TRA_TAIL, 0);
  } else {
    uint32_t owner = 0;
    rt__toolrun_get(w, a, run, &owner);
    sim_emit(w->s, RT_EV_TOOLRUN_ATTACH, a, run, RT_TRA_REUSED, st, 0, 0);
    rt_call *c = rt__new_call(w, a, CALL_TOOL_CHUNKS, run, owner);
    if (c)
      rt__send_call(w, a, owner, MSG_CALL_CHUNKS, "getAgentToolChunks", RT_ENTRY_FACET_INIT, c,
                    run, 0);
  }
  return run;
}

/* The workload's runAgentTool request: run_agent_tool, then the answer. */
static void rt__toolrun_request(rt_world *w, uint32_t a, const rt_msg *m) {
  run_agent_tool(w, a, (uint32_t)m->arg, m->arg2, m->alarm_at > 0 ? m->alarm_at : 0);
  if (RT_MEM(w, a)) rt__request_done(w, a, m, 1, NULL);
}

/* ---- abort by the parent (the run's AbortSignal) ------------------------ */

static int abort_run(rt_world *w, uint32_t a, int64_t run, const char *by) {
  uint32_t child = 0;
  int st = rt__toolrun_get(w, a, run, &child);
  if (st < 0) return 0;
  rt__emit(w, RT_EV_TOOLRUN_ABORT, a, run, child, st, by);
  if (RT_TR_IS_TERMINAL(st)) return 0; /* terminal rows are not rewritten */
  rt__finish_toolrun(w, a, run, RT_TR_ABORTED, NULL);
  if (!RT_MEM(w, a)) return 1;
  rt_call *c = rt__new_call(w, a, CALL_TOOL_CANCEL, run, child);
  if (c)
    rt__send_call(w, a, child, MSG_CALL_CANCEL, "cancelAgentToolRun", RT_ENTRY_FACET_INIT, c,
                  run, 0);
  return 1;
}

static int sdk_abort(rt_world *w, uint32_t a, int64_t run, const char *by) {
  return abort_run(w, a, run, by);
}

/* rt_sdk_run_agent_tool: the run and its status after the call (-1: the
** actor died in it). */
static int64_t sdk_run(rt_world *w, uint32_t a, uint32_t child, int64_t work_us, int64_t run_id,
                       int *status) {
  rt_mem *m = RT_MEM(w, a);
  int64_t run = run_agent_tool(w, a, child, work_us, run_id);
  *status = RT_MEM(w, a) == m ? rt__toolrun_get(w, a, run, NULL) : -1;
  return run;
}

static int sdk_open(rt_world *w, uint32_t a, int64_t *out, int cap) {
  int64_t all[RT_MAX_ROWS];
  int n = rt__load_open_toolruns(w, a, all, RT_MAX_ROWS);
  for (int i = 0; i < n && i < cap; i++) out[i] = all[i];
  return n;
}

/* The workload's abort: every open run of child m->arg, oldest first. */
static void abort_request(rt_world *w, uint32_t a, const rt_msg *m) {
  int64_t open[RT_MAX_ROWS];
  int n = rt__load_open_toolruns(w, a, open, RT_MAX_ROWS);
  for (int i = 0; i < n && RT_MEM(w, a); i++) {
    uint32_t child = 0;
    rt__toolrun_get(w, a, open[i], &child);
    if (child == (uint32_t)m->arg) abort_run(w, a, open[i], "workload");
  }
  if (RT_MEM(w, a)) rt__request_done(w, a, m, 1, NULL);
}

/* ---- a reconnecting client: every run's events after afterSequence ------- */

static void replay_next(rt_world *w, uint32_t a);

static void replay_begin(rt_world *w, uint32_t a) {
  tr_mem *t = trm(w, a);
  t->n_rows = load_all_toolruns(w, a, t->rows, RT_MAX_ROWS);
  t->idx = 0;
  rt__emit(w, RT_EV_TOOLRUN_REPLAY, a, t->replays[0].id, t->replays[0].arg, t->n_rows, NULL);
  replay_next(w, a);
}

static void replay_request(rt_world *w, uint32_t a, const rt_msg *m) {
  tr_mem *t = trm(w, a);
  if (!t || t->n_replays == MAX_REPLAYS) {
    rt__request_done(w, a, m, 0, t ? "too many reconnecting clients" : "out of memory");
    return;
  }
  t->replays[t->n_replays++] = *m;
  if (t->n_replays == 1) replay_begin(w, a);
}

/* Asks the child of the next run for its chunks, or ends this replay. */
static void replay_next(rt_world *w, uint32_t a) {
  tr_mem *t = trm(w, a);
  while (t->idx < t->n_rows) {
    uint32_t child = 0;
    int64_t run = t->rows[t->idx];
    if (rt__toolrun_get(w, a, run, &child) < 0) {
      t->idx++;
      continue;
    }
    rt_call *c = rt__new_call(w, a, CALL_TOOL_CHUNKS, run, child);
    if (!c) break;
    c->str = 1; /* a client replay (0: a reused run id) */
    rt__send_call(w, a, child, MSG_CALL_CHUNKS, "getAgentToolChunks", RT_ENTRY_FACET_INIT, c,
                  run, 0);
    return;
  }
  rt_msg done = t->replays[0];
  memmove(&t->replays[0], &t->replays[1], (size_t)(t->n_replays - 1) * sizeof done);
  t->n_replays--;
  rt__request_done(w, a, &done, 1, NULL);
  if (RT_MEM(w, a) && t->n_replays > 0) replay_begin(w, a);
}

/* getAgentToolChunks answered n chunks (ok 0: none, the error swallowed). */
static void chunks_reply(rt_world *w, uint32_t a, rt_call *c, int ok, int64_t n) {
  int64_t run = c->key;
  if (!ok) n = 0;
  if (!c->str) { /* a reused open run id (@1604): replay, then interrupted */
    replay_chunks(w, a, run, 0, (int)n, 1);
    rt__finish_toolrun(w, a, run, RT_TR_INTERRUPTED, RT_MSG_TR_STILL_RUNNING);
    return;
  }
  tr_mem *t = trm(w, a);
  int since = (int)t->replays[0].arg;
  int st = rt__toolrun_get(w, a, run, NULL);
  if (since < 0) broadcast(w, a, run, 0, 2, "started");
  replay_chunks(w, a, run, since, (int)n, 2);
  if (RT_TR_IS_TERMINAL(st) && n + 1 > since) broadcast(w, a, run, (int)n + 1, 2, terminal_kind(st));
  t->idx++;
  replay_next(w, a);
}

int rt_toolrun_abort_at(rt_world *w, uint32_t parent, uint32_t child, int64_t at_us) {
  rt_msg m = {0};
  if (!w || parent >= w->n_actors || child >= w->n_actors) return -1;
  m.kind = MSG_TOOL_ABORT;
  m.entry = RT_ENTRY_FETCH;
  m.arg = child;
  return rt__deliver_at(w, parent, &m, at_us);
}

int rt_toolrun_replay_at(rt_world *w, uint32_t parent, int since, int64_t at_us) {
  rt_msg m = {0};
  if (!w || parent >= w->n_actors || since < -1) return -1;
  m.kind = MSG_TOOL_REPLAY;
  m.entry = RT_ENTRY_WS; /* the client's WebSocket reconnects */
  m.arg = since;
  return rt__deliver_at(w, parent, &m, at_us);
}

/* A child's run ended (its RT_MC_NOTIFY message to this incarnation). */
static void toolrun_notify(rt_world *w, uint32_t a, const rt_msg *m) {
  if (m->kind == MSG_RUN_DONE) finish_from_child(w, a, m->arg, m->arg2);
  if (m->kind == MSG_TOOL_CHUNK) { /* a live chunk of an open run, in order */
    int st = rt__toolrun_get(w, a, m->arg, NULL);
    /* the tail is a stream: chunks arrive in order, none skipped */
    for (int k = last_seq(w, a, m->arg) + 1; st >= 0 && !RT_TR_IS_TERMINAL(st) && k <= m->arg2;
         k++)
      broadcast(w, a, m->arg, k < 1 ? 1 : k, 0, "chunk");
  }
}

/* ---- the child side --------------------------------------------------- */

/* 1 if this incarnation of the child is working on run (a start it serves). */
static int child_live(const rt_mem *mem, int64_t run) {
  for (int i = 0; i < mem->inc.n_serving; i++)
    if (mem->inc.serving[i].kind == MSG_CALL_START && mem->inc.serving[i].arg == run) return 1;
  return 0;
}

/* The child's answer about run: its status and its stored chunks. */
static int64_t answer(rt_world *w, uint32_t a, int64_t run, int status) {
  return (int64_t)status | ((int64_t)child_chunk_count(w, a, run) << 8);
}

/* The serving start of run on this incarnation, or NULL. */
static const rt_msg *serving_start(const rt_mem *mem, int64_t id) {
  for (int i = 0; i < mem->inc.n_serving; i++)
    if (mem->inc.serving[i].kind == MSG_CALL_START && mem->inc.serving[i].id == id)
      return &mem->inc.serving[i];
  return NULL;
}

/* The child stores its next chunk while it works (tool_chunks of them,
** evenly over the work) and sends it up the parent's tail. */
static void child_chunk(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_mem *mem = RT_MEM(w, a);
  const rt_msg *start = mem ? serving_start(mem, (int64_t)(arg & ((1ULL << 40) - 1))) : NULL;
  int n = w->actors[a].spec.tool_chunks;
  (void)s;
  if (!start) return; /* the run ended, was cancelled, or this incarnation died */
  int seq = child_chunk_count(w, a, start->arg) + 1;
  if (seq > n || w_child_chunk(w, a, start->arg, seq)) return;
  rt_msg r = {0};
  r.kind = MSG_TOOL_CHUNK;
  r.cls = RT_MC_NOTIFY;
  r.from = a;
  r.from_dom = start->from_dom;
  r.arg = start->arg;
  r.arg2 = seq;
  uint32_t parent = start->from;
  int64_t gap = start->arg2 / (n + 1);
  rt__deliver(w, parent, &r, w->cfg.rpc_latency_us + w->rpc_extra_us);
  if (seq < n) sim_after(w->s, gap, mem->inc.dom, child_chunk, w, arg);
}

static int frame_put(rt_mem *m, const rt_uc_frame *f) {
  tr_mem *t = RT_EXT_MEM(m, &rt__toolrun_ext);
  if (!t && !(t = calloc(1, sizeof *t))) return -1;
  RT_EXT_MEM(m, &rt__toolrun_ext) = t;
  if (t->n_fr == t->cap_fr) {
    int nc = t->cap_fr ? t->cap_fr * 2 : 4;
    rt_uc_frame *n = realloc(t->fr, (size_t)nc * sizeof *n);
    if (!n) return -1;
    t->fr = n;
    t->cap_fr = nc;
  }
  t->fr[t->n_fr++] = *f;
  return 0;
}

static int frame_take(rt_mem *m, int64_t key, rt_uc_frame *out) {
  tr_mem *t = RT_EXT_MEM(m, &rt__toolrun_ext);
  for (int i = 0; t && i < t->n_fr; i++) {
    if (t->fr[i].key != key) continue;
    *out = t->fr[i];
    t->fr[i] = t->fr[--t->n_fr];
    return 1;
  }
  return 0;
}

/* The child's body of run m->arg (the user's code, rt_usercode.h) starts;
** returns how long it works (the parent's request when the class has no
** body of its own), or -1 if the actor died. */
static int64_t child_body_start(rt_world *w, uint32_t a, const rt_msg *m) {
  rt_mem *mem = RT_MEM(w, a);
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_frame fr = {.hook = RT_UC_TOOL_RUN, .key = m->arg};
  rt_uc_out out;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  memset(&out, 0, sizeof out);
  if (!uc || !uc->tool_run) return m->arg2;
  rt_uc_status how = uc->tool_run(st, &self, &fr, &out);
  if (RT_MEM(w, a) != mem) return -1;
  if (frame_put(mem, &fr)) return m->arg2;
  if (how != RT_UC_YIELD) return 0; /* decided at once: ends at the next event */
  if (out.cmd.kind == RT_UC_CMD_WORK && out.cmd.max_us > out.cmd.min_us)
    return sim_rng_range(&RT_AW(w)->rng_work, out.cmd.min_us, out.cmd.max_us);
  return out.cmd.min_us > 0 ? out.cmd.min_us : 0;
}

/* How the child's run `run` ends: its body's answer (a terminal
** rt_toolrun_status), completed without a body of its own. */
static int child_body_result(rt_world *w, uint32_t a, int64_t run, int *died) {
  rt_mem *mem = RT_MEM(w, a);
  rt_sdk_actor self;
  void *st;
  const char *err = NULL;
  rt_uc_frame fr;
  rt_uc_out out;
  rt_uc_in in = {1, NULL};
  *died = 0;
  if (!frame_take(mem, run, &fr)) return RT_TR_COMPLETED;
  const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
  memset(&out, 0, sizeof out);
  rt_uc_status how = uc ? uc->resume(st, &self, &fr, &in, &out) : RT_UC_THREW;
  if (RT_MEM(w, a) != mem) *died = 1;
  if (how == RT_UC_THREW) return RT_TR_ERROR;
  return out.action > 0 && RT_TR_IS_TERMINAL(out.action) ? out.action : RT_TR_COMPLETED;
}

static void child_work_done(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  rt_msg done;
  uint32_t a = (uint32_t)(arg >> 40);
  (void)s;
  rt_mem *mem = RT_MEM(w, a);
  int died;
  if (!rt__pop_serving(&mem->inc, (int64_t)(arg & ((1ULL << 40) - 1)), &done)) return;
  int result = child_body_result(w, a, done.arg, &died);
  if (died) return;
  rt__w_child_run(w, a, done.arg, result);
  if (done.str) /* the work of a chat tool call: its external effect */
    sim_emit(w->s, RT_EV_TOOLRUN_EFFECT, a, done.arg, done.from, 0, done.str, 0);
  for (int i = mem->inc.n_serving; i-- > 0;) { /* tails re-attached to this run (#1640) */
    rt_msg t;
    if (mem->inc.serving[i].kind != MSG_CALL_ATTACH || mem->inc.serving[i].arg != done.arg) continue;
    if (rt__pop_serving(&mem->inc, mem->inc.serving[i].id, &t))
      rt__send_reply(w, a, &t, 1, answer(w, a, done.arg, result), 0);
  }
  rt_msg r = {0};
  r.kind = MSG_RUN_DONE;
  r.cls = RT_MC_NOTIFY;
  r.from = a;
  r.from_dom = done.from_dom;
  r.arg = done.arg;
  r.arg2 = answer(w, a, done.arg, result);
  rt__deliver(w, done.from, &r, w->cfg.rpc_latency_us + w->rpc_extra_us);
}

static void child_inspect_done(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  rt_msg call;
  uint32_t a = (uint32_t)(arg >> 40);
  (void)s;
  if (!rt__pop_serving(&RT_MEM(w, a)->inc, (int64_t)(arg & ((1ULL << 40) - 1)), &call)) return;
  rt__send_reply(w, a, &call, 1, answer(w, a, call.arg, rt__child_run_get(w, a, call.arg)), 0);
}

static void rt__child_handle(rt_world *w, uint32_t a, const rt_msg *m) {
  const rt_actor_spec *sp = &w->actors[a].spec;
  rt_mem *mem = RT_MEM(w, a);
  if (sp->stuck == RT_STUCK_NEVER_ANSWERS) return;
  int64_t late = sp->stuck == RT_STUCK_LATE ? sp->stuck_delay_us : 0;
  uint64_t key = ((uint64_t)a << 40) | (uint64_t)m->id;
  switch (m->kind) {
    case MSG_CALL_START:
      if (rt__child_run_get(w, a, m->arg) != 0) { /* this run exists: no second start (#1640) */
        rt__send_reply(w, a, m, 1, 0, late);
        break;
      }
      rt__w_child_run(w, a, m->arg, RT_TR_RUNNING);
      rt__send_reply(w, a, m, 1, 0, late);
      rt__push_serving(&mem->inc, m);
      {
        int64_t work = child_body_start(w, a, m);
        if (work < 0) break; /* the body killed the actor */
        sim_after(w->s, work + late, mem->inc.dom, child_work_done, w, key);
        for (int i = 0; i < mem->inc.n_serving; i++) /* chunks spread over the decided work */
          if (mem->inc.serving[i].id == m->id) mem->inc.serving[i].arg2 = work;
        if (sp->tool_chunks > 0)
          sim_after(w->s, work / (sp->tool_chunks + 1) + late, mem->inc.dom, child_chunk, w, key);
      }
      break;
    case MSG_CALL_CANCEL: { /* cancelAgentToolRun: idempotent; terminal runs stay */
      rt_msg run;
      rt_uc_frame fr;
      for (int i = mem->inc.n_serving; i-- > 0;)
        if (mem->inc.serving[i].kind == MSG_CALL_START && mem->inc.serving[i].arg == m->arg)
          rt__pop_serving(&mem->inc, mem->inc.serving[i].id, &run);
      if (frame_take(mem, m->arg, &fr)) { /* its body is dropped, not resumed */
        rt_sdk_actor self;
        void *st;
        const char *err = NULL;
        const rt_usercode *uc = rt__uc_enter(w, a, &self, &st, &err);
        if (uc && uc->drop) uc->drop(st, &fr);
      }
      if (rt__child_run_get(w, a, m->arg) == RT_TR_RUNNING)
        rt__w_child_run(w, a, m->arg, RT_TR_ABORTED);
      rt__send_reply(w, a, m, 1, 0, late);
      break;
    }
    case MSG_CALL_CHUNKS: /* getAgentToolChunks: the stored chunks (their count) */
      rt__send_reply(w, a, m, 1, child_chunk_count(w, a, m->arg), late);
      break;
    case MSG_CALL_INSPECT:
      rt__push_serving(&mem->inc, m);
      sim_after(w->s, sp->child_inspect_us + late, mem->inc.dom, child_inspect_done, w, key);
      break;
    case MSG_CALL_ATTACH: {
      int st = rt__child_run_get(w, a, m->arg);
      if (st == RT_TR_RUNNING && child_live(mem, m->arg))
        rt__push_serving(&mem->inc, m); /* answered when the run ends */
      else
        rt__send_reply(w, a, m, 1, answer(w, a, m->arg, st), late); /* ended, or idle here */
      break;
    }
    default: rt__send_reply(w, a, m, 1, 0, late); break;
  }
}

/* ---- gated reconciliation (before #1604) ------------------------------ */

static void rt__inspect_timeout(sim *s, void *ctx, uint64_t arg);

static void send_inspect(rt_world *w, uint32_t a, int64_t run, rt_call_purpose p) {
  uint32_t child = 0;
  rt__toolrun_get(w, a, run, &child);
  rt_call *c = rt__new_call(w, a, p, run, child);
  if (!c) return;
  rt__send_call(w, a, child, MSG_CALL_INSPECT, "inspectAgentToolRun", RT_ENTRY_FACET_INIT, c, run,
                0);
  if (p == CALL_DEFERRED_INSPECT) {
    rt_mem *m = RT_MEM(w, a);
    int64_t t = w->cfg.inspect_timeout_us;
    if (m->recovery_deadline && m->recovery_deadline - w->s->now_us < t)
      t = m->recovery_deadline - w->s->now_us;
    c->timer = sim_after(w->s, t, m->inc.dom, rt__inspect_timeout, w,
                         ((uint64_t)a << 40) | (uint64_t)c->id);
  }
}

static void rt__toolrun_gated_next(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  if (m->row_idx >= m->n_rows) {
    rt__startup_continue(w, a);
    return;
  }
  send_inspect(w, a, m->rows[m->row_idx], CALL_GATED_INSPECT);
}

/* ---- deferred reconciliation (#1604) ---------------------------------- */

/* The open runs of actor a into the incarnation array *rows (made when
** there is one); returns how many. */
static int load_open(rt_world *w, uint32_t a, int64_t **rows) {
  int64_t buf[RT_MAX_ROWS];
  int n = rt__load_open_toolruns(w, a, buf, RT_MAX_ROWS);
  if (n <= 0 || !RT_MEM_ARRAY(*rows, RT_MAX_ROWS)) return 0; /* none, or out of memory */
  memcpy(*rows, buf, (size_t)n * sizeof buf[0]);
  return n;
}

static void rt__toolrun_snapshot(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  m->n_snapshot = load_open(w, a, &m->snapshot);
  for (int i = 0; i < m->n_snapshot; i++)
    rt__emit(w, RT_EV_TOOLRUN_SNAPSHOT, a, m->snapshot[i], 0, 0, NULL);
}

static void deferred_next(rt_world *w, uint32_t a);

static void recovery_begin(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)arg;
  rt_mem *m = RT_MEM(w, a);
  (void)s;
  rt__emit(w, RT_EV_TOOLRUN_RECOVERY, a, 1, m->n_deferred, 0, NULL);
  m->recovery_deadline = w->cfg.inspect_total_us ? w->s->now_us + w->cfg.inspect_total_us : 0;
  deferred_next(w, a);
}

static void rt__toolrun_schedule_recovery(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  if (w->cfg.toolrun == RT_TOOLRUN_UNSNAPSHOTTED) /* runIds undefined: every open row */
    m->n_snapshot = load_open(w, a, &m->snapshot);
  if (m->toolrun_recovery) RT_PROBE(w, a, RT_PROBE_RECONCILE_IN_FLIGHT);
  if (m->toolrun_recovery || m->n_snapshot == 0) return; /* single-flight; [] → done */
  if (!RT_MEM_ARRAY(m->deferred_rows, RT_MAX_ROWS)) return; /* out of memory */
  m->toolrun_recovery = 1;
  m->n_deferred = m->n_snapshot;
  for (int i = 0; i < m->n_snapshot; i++) m->deferred_rows[i] = m->snapshot[i];
  m->deferred_idx = 0;
  m->inc.waituntil++;
  rt__emit(w, RT_EV_WAITUNTIL, a, m->inc.waituntil, 1, 0, NULL);
  sim_after(w->s, 0, m->inc.dom, recovery_begin, w, a); /* await setTimeout(0) */
}

/* A direct _scheduleAgentToolRunRecovery() (reference A.11 step 1-3): a
** pass in flight is returned as is (its options ignored); otherwise every
** open row (runIds undefined) is reconciled in the background. */
static void rt__toolrun_recovery_request(rt_world *w, uint32_t a, const rt_msg *msg) {
  rt_mem *m = RT_MEM(w, a);
  if (m->toolrun_recovery) { /* single flight: the call joins the pass in flight */
    RT_PROBE(w, a, RT_PROBE_RECONCILE_IN_FLIGHT);
    rt__emit(w, RT_EV_TOOLRUN_RECOVERY, a, 2, m->n_deferred, 0, NULL);
  } else {
    m->n_snapshot = load_open(w, a, &m->snapshot);
    rt__toolrun_schedule_recovery(w, a);
  }
  rt__request_done(w, a, msg, 1, NULL); /* the promise is not awaited */
}

int rt_toolrun_recovery_at(rt_world *w, uint32_t actor, int64_t at_us) {
  rt_msg m = {0};
  if (!w || actor >= rt_actor_count(w)) return -1;
  m.kind = MSG_TOOL_RECOVERY;
  m.entry = RT_ENTRY_FETCH;
  return rt__deliver_at(w, actor, &m, at_us);
}

static void deferred_next(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  while (m->deferred_idx < m->n_deferred) {
    int64_t run = m->deferred_rows[m->deferred_idx];
    if (RT_TR_IS_TERMINAL(rt__toolrun_get(w, a, run, NULL))) {
      m->deferred_idx++;
      continue;
    }
    if (m->recovery_deadline && w->s->now_us >= m->recovery_deadline) {
      RT_PROBE(w, a, RT_PROBE_INSPECT_DEADLINE);
      rt__emit(w, RT_EV_TOOLRUN_INSPECT, a, run, 2, 0, NULL);
      reconcile_finish(w, a, run, RT_TR_INTERRUPTED, RT_MSG_TR_TIMED_OUT);
      m->deferred_idx++;
      continue;
    }
    send_inspect(w, a, run, CALL_DEFERRED_INSPECT);
    return;
  }
  run_deferred_hooks(w, a); /* then the deferred finish hooks, in order */
  m->toolrun_recovery = 0;
  rt__emit(w, RT_EV_TOOLRUN_RECOVERY, a, 0, m->n_deferred, 0, NULL);
  m->inc.waituntil--;
  rt__emit(w, RT_EV_WAITUNTIL, a, m->inc.waituntil, -1, 0, NULL);
}

static void rt__inspect_timeout(sim *s, void *ctx, uint64_t arg) {
  rt_world *w = ctx;
  uint32_t a = (uint32_t)(arg >> 40);
  rt_mem *m = RT_MEM(w, a);
  rt_call *c = rt__find_call(&m->inc, (int64_t)(arg & ((1ULL << 40) - 1)));
  (void)s;
  if (!c) return;
  c->live = 0; /* the loser is not cancelled: a late reply finds no call */
  RT_PROBE(w, a, RT_PROBE_INSPECT_TIMEOUT);
  rt__emit(w, RT_EV_TOOLRUN_INSPECT, a, c->key, 2, 0, NULL);
  reconcile_finish(w, a, c->key, RT_TR_INTERRUPTED, RT_MSG_TR_TIMED_OUT);
  m->deferred_idx++;
  deferred_next(w, a);
}

static void rt__toolrun_reply(rt_world *w, uint32_t a, rt_call *c, int ok, int64_t answer_v) {
  rt_mem *m = RT_MEM(w, a);
  int64_t run = c->key;
  int64_t value = ANS_STATUS(answer_v);
  c->live = 0;
  if (c->purpose == CALL_TOOL_CANCEL) return; /* cancelAgentToolRun: not awaited */
  if (c->purpose == CALL_TOOL_CHUNKS) {
    chunks_reply(w, a, c, ok, answer_v);
    return;
  }
  if (c->purpose == CALL_TOOL_START) {
    if (ok)
      rt__finish_toolrun(w, a, run, RT_TR_RUNNING, NULL);
    else
      rt__finish_toolrun(w, a, run, RT_TR_ERROR, "Agent tool run failed");
    return;
  }
  sim_cancel(w->s, c->timer);
  if (c->purpose == CALL_TOOL_ATTACH) { /* #1640: the re-attached tail ended */
    if (ok && value == RT_TR_RUNNING)
      rt__finish_toolrun(w, a, run, RT_TR_INTERRUPTED, "no-progress");
    else if (ok)
      finish_from_child(w, a, run, answer_v);
    else
      rt__finish_toolrun(w, a, run, RT_TR_INTERRUPTED, RT_MSG_TR_FAILED);
    return;
  }
  rt__emit(w, RT_EV_TOOLRUN_INSPECT, a, run, ok ? 1 : 3, value, NULL);
  if (ok && c->purpose == CALL_DEFERRED_INSPECT && w->cfg.toolrun_ids == RT_TR_IDS_STABLE &&
      (value == RT_TR_RUNNING || value == RT_TR_STARTING))
    attach(w, a, run, RT_TRA_RECOVERY, 0); /* #1640: re-attach, do not abandon */
  else {
    m->defer_finish = 1; /* _reconcileAgentToolRuns({deferFinishHooks: true}) */
    if (ok)
      finish_from_child(w, a, run, answer_v); /* its chunks replayed first (seq 1..n) */
    else
      rt__finish_toolrun(w, a, run, RT_TR_INTERRUPTED, RT_MSG_TR_FAILED);
    m->defer_finish = 0;
  }
  if (c->purpose == CALL_GATED_INSPECT) {
    m->row_idx++;
    rt__toolrun_gated_next(w, a);
  } else {
    m->deferred_idx++;
    deferred_next(w, a);
  }
}

/* ---- storage: cf_agent_tool_runs (parent side) and rv_child_runs (child
** side), registered with the host's storage (rt__store_register) ------- */

enum { ST_TR_INSERT, ST_TR_STATUS, ST_TR_OPEN, ST_TR_GET, ST_CHILD_SET, ST_CHILD_GET,
       ST_TR_ALL, ST_CHUNK_SET, ST_CHUNK_COUNT, ST_TR_ERROR, ST_COUNT };

static const char *const sql[ST_COUNT] = {
    [ST_TR_INSERT] = "INSERT INTO cf_agent_tool_runs(run_id,agent_type,child,status,started_at)"
                     " VALUES(?,?,?,?,?)",
    [ST_TR_STATUS] = "UPDATE cf_agent_tool_runs SET status=?,error_message=?,completed_at=?"
                     " WHERE run_id=? AND status IN (1,2)",
    [ST_TR_OPEN] = "SELECT run_id FROM cf_agent_tool_runs WHERE status IN (1,2)"
                   " ORDER BY started_at,run_id",
    [ST_TR_GET] = "SELECT status,child FROM cf_agent_tool_runs WHERE run_id=?",
    [ST_CHILD_SET] = "INSERT OR REPLACE INTO rv_child_runs(run_id,status) VALUES(?,?)",
    [ST_CHILD_GET] = "SELECT status FROM rv_child_runs WHERE run_id=?",
    [ST_TR_ALL] = "SELECT run_id FROM cf_agent_tool_runs ORDER BY started_at,run_id",
    [ST_CHUNK_SET] = "INSERT OR REPLACE INTO rv_child_chunks(run_id,sequence,body) VALUES(?,?,?)",
    [ST_CHUNK_COUNT] = "SELECT count(*) FROM rv_child_chunks WHERE run_id=?",
    [ST_TR_ERROR] = "SELECT status,error_message FROM cf_agent_tool_runs WHERE run_id=?",
};

static const rt_store_op ops[] = {
    {RT_W_TOOLRUN_INSERT, "cf_agent_tool_runs"},
    {RT_W_TOOLRUN_STATUS, "cf_agent_tool_runs"},
    {RT_W_CHILD_RUN, "rv_child_runs"},
    {RT_W_OTHER, "rv_child_chunks"},
};

static rt_store_module rt__toolrun_store = {
    .name = "toolrun",
    .schema =
        "CREATE TABLE IF NOT EXISTS cf_agent_tool_runs(run_id INTEGER PRIMARY KEY,"
        " agent_type TEXT NOT NULL, child INTEGER, status INTEGER NOT NULL, error_message TEXT,"
        " started_at INTEGER NOT NULL, completed_at INTEGER);"
        "CREATE TABLE IF NOT EXISTS rv_child_runs(run_id INTEGER PRIMARY KEY, status INTEGER);"
        "CREATE TABLE IF NOT EXISTS rv_child_chunks(run_id INTEGER NOT NULL, sequence INTEGER"
        " NOT NULL, body TEXT NOT NULL, PRIMARY KEY(run_id, sequence));",
    .sql = sql,
    .n_sql = ST_COUNT,
    .ops = ops,
    .n_ops = (int)(sizeof ops / sizeof ops[0]),
};

static sqlite3_stmt *stmt(rt_world *w, uint32_t a, int id) {
  return rt__stmt(w, a, &rt__toolrun_store, id);
}

static int rt__w_toolrun_insert(rt_world *w, uint32_t a, int64_t run, uint32_t child,
                         int status) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_TR_INSERT))) return -1;
  sqlite3_bind_int64(st, 1, run);
  sqlite3_bind_text(st, 2, w->actors[child].spec.cls, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, child);
  sqlite3_bind_int(st, 4, status);
  sqlite3_bind_int64(st, 5, w->s->now_us / 1000);
  return rt__txn_wrote_row(w, a, RT_W_TOOLRUN_INSERT, run, sqlite3_step(st),
                       rt_toolrun_status_name(status));
}

/* Returns 1 if the row changed, 0 if it was terminal or absent, -1 on
** error. Terminal rows are immutable (@1604). */
static int rt__w_toolrun_status(rt_world *w, uint32_t a, int64_t run, int status,
                         const char *reason) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_TR_STATUS))) return -1;
  sqlite3_bind_int(st, 1, status);
  if (reason)
    sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, 2);
  if (RT_TR_IS_TERMINAL(status))
    sqlite3_bind_int64(st, 3, w->s->now_us / 1000);
  else
    sqlite3_bind_null(st, 3);
  sqlite3_bind_int64(st, 4, run);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) return rt__txn_wrote(w, a, RT_W_TOOLRUN_STATUS, run, rc);
  if (sqlite3_changes(w->actors[a].store.db) == 0) return 0;
  return rt__txn_wrote_row(w, a, RT_W_TOOLRUN_STATUS, run, rc, rt_toolrun_status_name(status)) ? -1 : 1;
}

static int rt__w_child_run(rt_world *w, uint32_t a, int64_t run, int status) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_CHILD_SET))) return -1;
  sqlite3_bind_int64(st, 1, run);
  sqlite3_bind_int(st, 2, status);
  return rt__txn_wrote(w, a, RT_W_CHILD_RUN, run, sqlite3_step(st));
}

/* A chunk the child stored (the body names the run and its sequence). */
static int w_child_chunk(rt_world *w, uint32_t a, int64_t run, int seq) {
  sqlite3_stmt *st;
  char body[80];
  if (rt__txn_join(w, a) || !(st = stmt(w, a, ST_CHUNK_SET))) return -1;
  snprintf(body, sizeof body, "{\"type\":\"text-delta\",\"delta\":\"t%lld.%d \"}", (long long)run,
           seq);
  sqlite3_bind_int64(st, 1, run);
  sqlite3_bind_int(st, 2, seq);
  sqlite3_bind_text(st, 3, body, -1, SQLITE_TRANSIENT);
  return rt__txn_wrote(w, a, RT_W_OTHER, run, sqlite3_step(st));
}

static int child_chunk_count(rt_world *w, uint32_t a, int64_t run) {
  sqlite3_stmt *st = stmt(w, a, ST_CHUNK_COUNT);
  int n = 0;
  if (!st) return 0;
  sqlite3_bind_int64(st, 1, run);
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
  sqlite3_reset(st);
  return n;
}

/* Every run of the parent, started_at order (a reconnecting client's replay). */
static int load_all_toolruns(rt_world *w, uint32_t a, int64_t *out, int cap) {
  sqlite3_stmt *st = stmt(w, a, ST_TR_ALL);
  int n = 0;
  if (!st) return 0;
  while (n < cap && sqlite3_step(st) == SQLITE_ROW) out[n++] = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return n;
}

static int rt__load_open_toolruns(rt_world *w, uint32_t a, int64_t *out, int cap) {
  int n = 0;
  if (rt__scan_cached(w, a, RT_SCAN_OPEN_TOOLRUNS, 0, out, sizeof *out, cap, &n)) return n;
  if (rt__table_empty(w, a, "cf_agent_tool_runs")) return 0;
  sqlite3_stmt *st = stmt(w, a, ST_TR_OPEN);
  if (!st) return 0;
  while (n < cap && sqlite3_step(st) == SQLITE_ROW) out[n++] = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  rt__scan_store(w, a, RT_SCAN_OPEN_TOOLRUNS, 0, out, sizeof *out, cap, n);
  return n;
}

/* Status of a tool run (or -1) and its child actor. */
int rt__toolrun_get(rt_world *w, uint32_t a, int64_t run, uint32_t *child) {
  int64_t got[3] = {0, -1, 0}; /* found, status, child */
  int n = 0;
  if (!rt__scan_cached(w, a, RT_SCAN_TOOLRUN_GET, run, got, sizeof got, 1, &n)) {
    sqlite3_stmt *st = stmt(w, a, ST_TR_GET);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run);
    if (sqlite3_step(st) == SQLITE_ROW) {
      got[0] = 1;
      got[1] = sqlite3_column_int(st, 0);
      got[2] = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    rt__scan_store(w, a, RT_SCAN_TOOLRUN_GET, run, got, sizeof got, 1, 1);
  }
  if (got[0] && child) *child = (uint32_t)got[2];
  return (int)got[1];
}

/* rt_sdk_agent_tool_status: the row's status (-1 none) and its error
** message into err ("" none). */
static int sdk_info(rt_world *w, uint32_t a, int64_t run, char *err, size_t n) {
  sqlite3_stmt *st = stmt(w, a, ST_TR_ERROR);
  int status = -1;
  if (n) err[0] = '\0';
  if (!st) return -1;
  sqlite3_bind_int64(st, 1, run);
  if (sqlite3_step(st) == SQLITE_ROW) {
    status = sqlite3_column_int(st, 0);
    const unsigned char *e = sqlite3_column_text(st, 1);
    if (e && n) snprintf(err, n, "%s", (const char *)e);
  }
  sqlite3_reset(st);
  return status;
}

static int rt__child_run_get(rt_world *w, uint32_t a, int64_t run) {
  sqlite3_stmt *st = stmt(w, a, ST_CHILD_GET);
  int status = 0;
  if (!st) return 0;
  sqlite3_bind_int64(st, 1, run);
  if (sqlite3_step(st) == SQLITE_ROW) status = sqlite3_column_int(st, 0);
  sqlite3_reset(st);
  return status;
}

/* ---- workload entry points and inspection (rt.h) ------------------------ */

int rt_toolrun_at(rt_world *w, uint32_t parent, uint32_t child, int64_t work_us,
                  int64_t at_us) {
  if (child >= w->n_actors) return -1;
  rt_msg m = {0};
  m.kind = MSG_TOOLRUN;
  m.entry = RT_ENTRY_FETCH;
  m.arg = child;
  m.arg2 = work_us;
  return rt__deliver_at(w, parent, &m, at_us);
}

int rt_toolrun_id_at(rt_world *w, uint32_t parent, uint32_t child, int64_t work_us,
                     int64_t run_id, int64_t at_us) {
  rt_msg m = {0};
  if (!w || child >= w->n_actors || run_id <= 0) return -1;
  m.kind = MSG_TOOLRUN;
  m.entry = RT_ENTRY_FETCH;
  m.arg = child;
  m.arg2 = work_us;
  m.alarm_at = run_id; /* MSG_TOOLRUN: the given runId (0: a fresh one) */
  return rt__deliver_at(w, parent, &m, at_us);
}

int64_t rt_seed_stale_toolrun(rt_world *w, uint32_t parent, uint32_t child,
                              rt_toolrun_status status, int child_status) {
  if (parent >= w->n_actors || child >= w->n_actors) return -1;
  int64_t run = rt__new_id(w);
  if (rt__w_toolrun_insert(w, parent, run, child, status)) return -1;
  rt__emit(w, RT_EV_TOOLRUN_INSERT, parent, run, child, status, w->actors[child].spec.cls);
  if (child_status && rt__w_child_run(w, child, run, child_status)) return -1;
  return run;
}


int rt_toolrun_status_of(rt_world *w, uint32_t parent, int64_t run) {
  return parent < w->n_actors ? rt__toolrun_get(w, parent, run, NULL) : -1;
}

/* ---- the extension ----------------------------------------------------------- */

/* Startup inside the gate, after _checkRunFibers: the pre-fix gated
** reconciliation (continues by itself), or the #1604 snapshot of open runs. */
static int toolrun_startup_gated(rt_world *w, uint32_t a) {
  rt_mem *m = RT_MEM(w, a);
  if (w->cfg.toolrun == RT_TOOLRUN_GATED) {
    m->n_rows = load_open(w, a, &m->rows);
    m->row_idx = 0;
    rt__toolrun_gated_next(w, a);
    return 1;
  }
  if (w->cfg.toolrun == RT_TOOLRUN_DEFERRED) rt__toolrun_snapshot(w, a);
  return 0;
}

static void toolrun_message(rt_world *w, uint32_t a, const rt_msg *m) {
  switch (m->kind) {
    case MSG_TOOLRUN: rt__toolrun_request(w, a, m); break;
    case MSG_TOOL_RECOVERY: rt__toolrun_recovery_request(w, a, m); break;
    case MSG_TOOL_ABORT: abort_request(w, a, m); break;
    case MSG_TOOL_REPLAY: replay_request(w, a, m); break;
    default: rt__child_handle(w, a, m); break; /* MSG_CALL_*: the child side */
  }
}

static const int toolrun_kinds[] = {MSG_TOOLRUN,     MSG_TOOL_RECOVERY, MSG_CALL_INSPECT,
                                    MSG_CALL_START,  MSG_CALL_ATTACH,   MSG_CALL_PLAIN,
                                    MSG_TOOL_ABORT,  MSG_TOOL_REPLAY,   MSG_CALL_CANCEL,
                                    MSG_CALL_CHUNKS};
static const int toolrun_purposes[] = {CALL_GATED_INSPECT, CALL_DEFERRED_INSPECT,
                                       CALL_TOOL_START,    CALL_TOOL_ATTACH,
                                       CALL_TOOL_CANCEL,   CALL_TOOL_CHUNKS};

rt_agent_ext rt__toolrun_ext = {
    .name = "toolrun",
    .store = &rt__toolrun_store,
    .kinds = toolrun_kinds,
    .n_kinds = (int)(sizeof toolrun_kinds / sizeof toolrun_kinds[0]),
    .message = toolrun_message,
    .purposes = toolrun_purposes,
    .n_purposes = (int)(sizeof toolrun_purposes / sizeof toolrun_purposes[0]),
    .reply = rt__toolrun_reply,
    .notify = toolrun_notify,
    .startup_gated = toolrun_startup_gated,
    .startup_early = rt__toolrun_started,
    .mem_free = toolrun_mem_free,
};

/* Registers the tool-run SDK calls (rt_sdk_abort_agent_tool, ...). */
int rt__toolrun_register(void) {
  rt__model_calls.abort_tool_run = sdk_abort;
  rt__model_calls.open_tool_runs = sdk_open;
  rt__model_calls.run_tool = sdk_run;
  rt__model_calls.tool_info = sdk_info;
  return 0;
}
