/*
** scn_load_work.c: the second half of the scenario loader: the workload
** items, the faults (fixed or rated) and the expectations and cases. The
** same error rules as scn_load.c: every mistake is one "file:line:col:
** message" at the offending node. See docs/scenarios.md.
*/
#include "runtime/rt_cron.h"
#include "scenarios/scn_load_internal.h"

/* ---- workload ------------------------------------------------------------ */

static const char *const work_all[] = {
    "request", "fiber", "tool_run", "actor", "entry", "work", "at", "every", "until",
    "executor_turn", "thread_writers", "tools", "adapter", "fail", "cancel", "duplicate_ppm",
    "writers", "runs", "store", "step", "chat", "chunks", "chunk_every", "schedule",
    "cancel_schedule", "callback", "delay", "interval", "keep_alive", "for", "await", "stash",
    "throws", "keep_alive_acquire", "keep_alive_dispose", "lease", "tool", "tool_recovery",
    "run_id", "tool_abort", "tool_reconnect", "since", "continue_last_turn", "save_messages",
    "text", "chat_cancel",
    "cron", "payload", "idempotent", "invoke", "method", "args", NULL};
static const char *const work_inv[] = {"invoke", "method", "args", "at", "every", "until", NULL};
static const char *const work_req[] = {"request", "entry", "at", "every", "until", NULL};
static const char *const work_fib[] = {"fiber", "actor", "await", "at", "every", "until", NULL};
static const char *const work_stash[] = {"stash", "at", "every", "until", NULL};
static const char *const work_tr[] = {"tool_run", "actor", "work", "run_id", "at", "every",
                                      "until", NULL};
static const char *const work_tab[] = {"tool_abort", "tool", "at", "every", "until", NULL};
static const char *const work_trc[] = {"tool_reconnect", "since", "at", "every", "until", NULL};
static const char *const work_ccont[] = {"continue_last_turn", "at", "every", "until", NULL};
static const char *const work_csave[] = {"save_messages", "text", "chunks", "chunk_every", "at",
                                         "every", "until", NULL};
static const char *const work_ccan[] = {"chat_cancel", "at", "every", "until", NULL};
static const char *const work_ex[] = {"executor_turn", "tools", "adapter", "fail", "cancel",
                                      "duplicate_ppm", "at", "every", "until", NULL};
static const char *const work_chat[] = {"chat", "chunks", "chunk_every", "tool", "work", "at",
                                        "every", "until", NULL};
static const char *const work_sch[] = {"schedule", "callback", "delay", "interval", "cron",
                                       "payload", "idempotent", "at", "every", "until", NULL};
static const char *const work_csch[] = {"cancel_schedule", "callback", "at", "every", "until",
                                        NULL};
static const char *const work_ka[] = {"keep_alive", "for", "throws", "at", "every", "until", NULL};
static const char *const work_kacq[] = {"keep_alive_acquire", "lease", "at", "every", "until", NULL};
static const char *const work_kdis[] = {"keep_alive_dispose", "lease", "at", "every", "until", NULL};
static const char *const work_trec[] = {"tool_recovery", "at", "every", "until", NULL};
static const char *const work_th[] = {"thread_writers", "writers", "runs", "tools", "store",
                                      "fail", "step", "at", "every", "until", NULL};

/* The kinds of workload items: the field that names each, and its fields. */
static const struct {
  const char *key;
  scn_work_kind kind;
  const char *const *fields;
} work_kinds[] = {{"request", SCN_W_REQUEST, work_req},
                  {"fiber", SCN_W_FIBER, work_fib},
                  {"tool_run", SCN_W_TOOLRUN, work_tr},
                  {"executor_turn", SCN_W_EXEC_TURN, work_ex},   /* seed 002 */
                  {"thread_writers", SCN_W_THREAD, work_th},     /* seed 004 */
                  {"chat", SCN_W_CHAT, work_chat},               /* seed 000 Layer 3 */
                  {"schedule", SCN_W_SCHEDULE, work_sch},        /* reference A.10 */
                  {"cancel_schedule", SCN_W_CANCEL_SCHEDULE, work_csch},
                  {"keep_alive", SCN_W_KEEPALIVE, work_ka},      /* reference A.3 */
                  {"tool_recovery", SCN_W_TOOL_RECOVERY, work_trec}, /* issue #15 */
                  {"stash", SCN_W_STASH, work_stash},            /* Agent.stash outside */
                  {"keep_alive_acquire", SCN_W_KA_ACQUIRE, work_kacq}, /* keepAlive() */
                  {"keep_alive_dispose", SCN_W_KA_DISPOSE, work_kdis},
                  {"tool_abort", SCN_W_TOOL_ABORT, work_tab},          /* issue #15 */
                  {"tool_reconnect", SCN_W_TOOL_RECONNECT, work_trc},
                  {"continue_last_turn", SCN_W_CHAT_CONTINUE, work_ccont},
                  {"save_messages", SCN_W_CHAT_SAVE, work_csave},
                  {"chat_cancel", SCN_W_CHAT_CANCEL, work_ccan},
                  {"invoke", SCN_W_INVOKE, work_inv}};           /* a script's method (issue #13) */
#define N_WORK_KINDS (int)(sizeof work_kinds / sizeof work_kinds[0])
static const opt entry_opts[] = {{"fetch", RT_ENTRY_FETCH}, {"ws", RT_ENTRY_WS},
                                 {"alarm", RT_ENTRY_ALARM}, {"setName", RT_ENTRY_SETNAME},
                                 {"rpc", RT_ENTRY_RPC}, {NULL, 0}};

/* The kind names for messages: "request", "fiber", ... or "thread_writers". */
static const char *work_kind_list(char *buf, size_t cap) {
  size_t o = 0;
  for (int k = 0; k < N_WORK_KINDS && o < cap; k++)
    o += (size_t)snprintf(buf + o, cap - o, "%s\"%s\"",
                          k == 0 ? "" : k == N_WORK_KINDS - 1 ? " or " : ", ", work_kinds[k].key);
  return buf;
}

/* Which kind item w is (exactly one of the work_kinds keys). */
static int work_kind(ld *L, const cJSON *w, scn_work_kind *kind) {
  const cJSON *seen = NULL;
  char names[512];
  int k, which = -1;
  for (k = 0; k < N_WORK_KINDS; k++) {
    const cJSON *m = ld_get(w, work_kinds[k].key);
    if (!m) continue;
    if (seen)
      return ld_key_errf(L, m, "a workload item has exactly one of %s; this one has \"%s\" and "
                      "\"%s\"", work_kind_list(names, sizeof names), seen->string, m->string);
    seen = m;
    which = k;
  }
  if (which < 0)
    return scn_errf(L->err, L->d, w, "a workload item needs one of %s",
                    work_kind_list(names, sizeof names));
  *kind = work_kinds[which].kind;
  return scn_check_fields(L->d, w, work_kinds[which].fields, L->err);
}

/* "at" (default 0), "every" (default once), "until" (default the end). */
static int work_times(ld *L, const cJSON *w, scn_work *out) {
  const cJSON *until = ld_get(w, "until");
  char q[96], qa[96];
  out->until_us = L->sc->duration_us;
  if (ld_get_time(L, w, "at", 0, &out->at_us) < 0 || ld_get_dur(L, w, "every", 1, &out->every_us) < 0)
    return -1;
  if (!until) return 0;
  if (!ld_get(w, "every"))
    return scn_errf(L->err, L->d, until, "\"until\": only allowed with \"every\"");
  if (ld_get_time(L, w, "until", 0, &out->until_us) < 0) return -1;
  if (out->until_us < out->at_us)
    return scn_errf(L->err, L->d, until, "\"until\": \"%s\" is before \"at\" (\"%s\")",
                    ld_quote(q, sizeof q, until->valuestring),
                    ld_quote(qa, sizeof qa, ld_get(w, "at")->valuestring));
  return 0;
}

static int work_toolrun(ld *L, const cJSON *w, scn_work *out) {
  if (ld_get_actor(L, w, "tool_run", &out->child) < 0) return -1;
  if (ld_need(L, w, "actor") < 0 || ld_get_actor(L, w, "actor", &out->actor) < 0) return -1;
  if (out->child == out->actor)
    return scn_errf(L->err, L->d, ld_get(w, "tool_run"),
                    "\"tool_run\": an actor cannot run itself as a tool");
  if (ld_need(L, w, "work") < 0 || ld_get_dur(L, w, "work", 0, &out->work_us) < 0) return -1;
  return scn_get_int(L->d, w, "run_id", 1, 1000000000, &out->run_id, L->err) < 0 ? -1 : 0;
}

/* The rest of issue #15: {"tool_abort": parent, "tool": child},
** {"tool_reconnect": parent, "since": N}, {"continue_last_turn": actor},
** {"save_messages": actor, "text", "chunks", "chunk_every"},
** {"chat_cancel": actor}. */
static int work_issue15(ld *L, const cJSON *w, scn_work *out) {
  int64_t since = -1, n = 0;
  switch (out->kind) {
    case SCN_W_TOOL_ABORT:
      if (ld_get_actor(L, w, "tool_abort", &out->actor) < 0 || ld_need(L, w, "tool") < 0 ||
          ld_get_actor(L, w, "tool", &out->child) < 0)
        return -1;
      if (out->child == out->actor)
        return scn_errf(L->err, L->d, ld_get(w, "tool"),
                        "\"tool\": an actor cannot run itself as a tool");
      return 0;
    case SCN_W_TOOL_RECONNECT:
      if (ld_get_actor(L, w, "tool_reconnect", &out->actor) < 0 ||
          scn_get_int(L->d, w, "since", -1, 1000000, &since, L->err) < 0)
        return -1;
      out->since = (int)since;
      return 0;
    case SCN_W_CHAT_CONTINUE: return ld_get_actor(L, w, "continue_last_turn", &out->actor);
    case SCN_W_CHAT_CANCEL: return ld_get_actor(L, w, "chat_cancel", &out->actor);
    case SCN_W_CHAT_SAVE:
      out->chunk_every_us = 200000;
      if (ld_get_actor(L, w, "save_messages", &out->actor) < 0 || ld_need(L, w, "text") < 0 ||
          ld_get_text(L, w, "text", out->text, sizeof out->text, 0) < 0 ||
          scn_get_int(L->d, w, "chunks", 1, RT_CHAT_MAX_CHUNKS, &n, L->err) < 0 ||
          ld_get_dur(L, w, "chunk_every", 1, &out->chunk_every_us) < 0)
        return -1;
      if (!out->text[0])
        return scn_errf(L->err, L->d, ld_get(w, "text"), "\"text\": the user message is empty");
      if (ld_get(w, "chunk_every") && !ld_get(w, "chunks"))
        return scn_errf(L->err, L->d, ld_get(w, "chunk_every"),
                        "\"chunk_every\": only used with \"chunks\"");
      out->chunks = (int)n;
      return 0;
    default: return -1;
  }
}

/* {"executor_turn": actor, "tools", "adapter", "fail", "cancel", "duplicate_ppm"}
** (seed 002; rt_exec_turn_spec). */
static const opt phase_opts[] = {{"started", RT_PH_STARTED}, {"llm-complete", RT_PH_LLM_COMPLETE},
                                 {"tool-dispatched", RT_PH_TOOL_DISPATCHED},
                                 {"tool-received", RT_PH_TOOL_RECEIVED},
                                 {"settled", RT_PH_SETTLED}, {NULL, 0}};

static int work_exec(ld *L, const cJSON *w, scn_work *out) {
  rt_exec_turn_spec *t = &out->exec;
  int64_t tools = 1, ppm = 0;
  rt_exec_turn_default(t);
  if (ld_get_actor(L, w, "executor_turn", &out->actor) < 0 ||
      scn_get_int(L->d, w, "tools", 0, RT_EXEC_MAX_TOOLS, &tools, L->err) < 0 ||
      ld_get_enum(L, w, "adapter", ld_adapter_opts, &t->adapter) < 0 ||
      ld_get_enum(L, w, "fail", phase_opts, &t->fail_phase) < 0 ||
      ld_get_dur(L, w, "cancel", 1, &t->cancel_after_us) < 0 ||
      scn_get_int(L->d, w, "duplicate_ppm", 0, MAX_PPM, &ppm, L->err) < 0)
    return -1;
  t->tools = (int)tools;
  t->dup_ppm = (uint32_t)ppm;
  return 0;
}

/* {"thread_writers": actor, "writers", "runs", "tools", "store", "fail",
** "step"} (seed 004; rt_thread_spec). */
static const opt reason_opts[] = {{"UserMessage", RT_CK_USER_MESSAGE},
                                  {"AssistantTurnCommitted", RT_CK_ASSISTANT_TURN_COMMITTED},
                                  {"ToolResultsCommitted", RT_CK_TOOL_RESULTS_COMMITTED},
                                  {"RunFinished", RT_CK_RUN_FINISHED}, {NULL, 0}};

static int work_thread(ld *L, const cJSON *w, scn_work *out) {
  rt_thread_spec *t = &out->thread;
  int64_t writers, runs, tools;
  rt_thread_spec_default(t);
  writers = t->writers, runs = t->runs, tools = t->tools;
  if (ld_get_actor(L, w, "thread_writers", &out->actor) < 0 ||
      scn_get_int(L->d, w, "writers", 1, RT_THREAD_MAX_WRITERS, &writers, L->err) < 0 ||
      scn_get_int(L->d, w, "runs", 1, 100, &runs, L->err) < 0 ||
      scn_get_int(L->d, w, "tools", 0, RT_EXEC_MAX_TOOLS, &tools, L->err) < 0 ||
      ld_get_enum(L, w, "store", ld_store_opts, &t->store) < 0 ||
      ld_get_enum(L, w, "fail", reason_opts, &t->fail_reason) < 0 ||
      ld_get_dur(L, w, "step", 1000, &t->step_max_us) < 0)
    return -1;
  t->writers = (int)writers;
  t->runs = (int)runs;
  t->tools = (int)tools;
  return 0;
}

/* {"chat": actor, "chunks": N, "chunk_every": "200ms"}: a user message
** whose reply streams N chunks (seed 000 Layer 3; rt_chat_at). */
static int work_chat_item(ld *L, const cJSON *w, scn_work *out) {
  int64_t n = 20;
  out->chunk_every_us = 200000;
  if (ld_get_actor(L, w, "chat", &out->actor) < 0 ||
      scn_get_int(L->d, w, "chunks", 1, RT_CHAT_MAX_CHUNKS, &n, L->err) < 0 ||
      ld_get_dur(L, w, "chunk_every", 1, &out->chunk_every_us) < 0)
    return -1;
  out->chunks = (int)n;
  if (!ld_get(w, "tool")) {
    if (ld_get(w, "work"))
      return scn_errf(L->err, L->d, ld_get(w, "work"),
                      "\"work\": only used with \"tool\" (the sub-agent's work)");
    return 0;
  }
  /* "tool": child, "work": "60s": the turn first calls runAgentTool (issue #15) */
  if (ld_get_actor(L, w, "tool", &out->child) < 0 || ld_get_dur(L, w, "work", 0, &out->work_us) < 0)
    return -1;
  if (out->child == out->actor)
    return scn_errf(L->err, L->d, ld_get(w, "tool"),
                    "\"tool\": an actor cannot run itself as a tool");
  out->chat_tool = 1;
  return 0;
}

/* "cron" (checked with the cron-schedule rules), "payload" (any JSON, kept
** as compact text) and "idempotent" of a schedule item (issue #14). */
static int sched_extras(ld *L, const cJSON *w, scn_work *out) {
  const cJSON *p = ld_get(w, "payload");
  int b = 0;
  if (ld_get(w, "cron")) {
    rt_cron c;
    char err[160];
    if (ld_get_text(L, w, "cron", out->cron, sizeof out->cron, 0) < 0) return -1;
    if (rt_cron_parse(out->cron, &c, err, sizeof err) < 0)
      return scn_errf(L->err, L->d, ld_get(w, "cron"), "\"cron\": %s", err);
    if (rt_cron_next(&c, 0) < 0 && rt_cron_next(&c, 366LL * 86400 * 3) < 0)
      return scn_errf(L->err, L->d, ld_get(w, "cron"),
                      "\"cron\": No valid next date was found.");
  }
  if (ld_get(w, "idempotent")) {
    if (scn_get_bool(L->d, w, "idempotent", &b, L->err) < 0) return -1;
    out->idempotent = b ? 1 : 2;
  }
  if (p) {
    char *t = cJSON_PrintUnformatted(p);
    size_t len = t ? strlen(t) : 0;
    if (!t) return scn_errf(L->err, L->d, p, "\"payload\": out of memory");
    if (len >= sizeof out->payload) {
      free(t);
      return scn_errf(L->err, L->d, p,
                      "\"payload\": the value is %zu bytes as compact JSON; at most %zu", len,
                      sizeof out->payload - 1);
    }
    memcpy(out->payload, t, len + 1);
    free(t);
  }
  return 0;
}

/* {"schedule": actor, "callback": name, "delay" | "interval"},
** {"cancel_schedule": actor, "callback": name}, {"keep_alive": actor,
** "for": duration}: the SDK's schedule API and keepAliveWhile. */
static int work_sched(ld *L, const cJSON *w, scn_work *out) {
  const char *key = out->kind == SCN_W_SCHEDULE ? "schedule"
                    : out->kind == SCN_W_KEEPALIVE ? "keep_alive" : "cancel_schedule";
  const char *cb = NULL;
  if (ld_get_actor(L, w, key, &out->actor) < 0) return -1;
  if (out->kind == SCN_W_KEEPALIVE) {
    if (ld_need(L, w, "for") < 0 || ld_get_dur(L, w, "for", 0, &out->work_us) < 0) return -1;
    if (!ld_get(w, "throws")) return 0;
    out->throws = 1;
    return ld_get_text(L, w, "throws", out->callback, sizeof out->callback, 0);
  }
  if (ld_need(L, w, "callback") < 0 || scn_get_string(L->d, w, "callback", &cb, L->err) < 0)
    return -1;
  if (!*cb || strlen(cb) >= sizeof out->callback)
    return scn_errf(L->err, L->d, ld_get(w, "callback"),
                    "\"callback\": expected a name of 1 to %zu characters", sizeof out->callback - 1);
  snprintf(out->callback, sizeof out->callback, "%s", cb);
  if (out->kind != SCN_W_SCHEDULE) return 0;
  if (!!ld_get(w, "delay") + !!ld_get(w, "interval") + !!ld_get(w, "cron") > 1)
    return scn_errf(L->err, L->d, ld_get(w, ld_get(w, "cron") ? "cron" : "interval"),
                    "a schedule has one of \"delay\" (schedule), \"interval\" (scheduleEvery) "
                    "or \"cron\" (schedule with a cron expression)");
  if (ld_get_dur(L, w, "delay", 0, &out->delay_us) < 0 ||
      ld_get_dur(L, w, "interval", 1000000, &out->interval_us) < 0)
    return -1;
  return sched_extras(L, w, out);
}

/* {"invoke": actor, "method": name, "args": [...]}: a request that calls a
** method of the actor's script; an array of args is spread into arguments. */
static int work_invoke(ld *L, const cJSON *w, scn_work *out) {
  const char *m = NULL;
  if (ld_get_actor(L, w, "invoke", &out->actor) < 0 || ld_need(L, w, "method") < 0 ||
      scn_get_string(L->d, w, "method", &m, L->err) < 0)
    return -1;
  if (!*m || strlen(m) >= sizeof out->method)
    return scn_errf(L->err, L->d, ld_get(w, "method"), "\"method\": expected a name of 1 to %zu "
                    "characters", sizeof out->method - 1);
  snprintf(out->method, sizeof out->method, "%s", m);
  if (ld_check_invoke(L, ld_get(w, "method"), out->actor, m) < 0) return -1;
  const cJSON *args = ld_get(w, "args");
  if (!args) return 0;
  char *txt = cJSON_PrintUnformatted(args);
  if (!txt) return scn_errf(L->err, L->d, args, "out of memory");
  size_t n = strlen(txt);
  if (n >= sizeof out->args) {
    free(txt);
    return scn_errf(L->err, L->d, args, "\"args\": at most %zu bytes of JSON", sizeof out->args - 1);
  }
  memcpy(out->args, txt, n + 1);
  free(txt);
  return 0;
}

static int work_item(ld *L, const cJSON *w, const char *what, scn_work *out) {
  int e = RT_ENTRY_FETCH;
  memset(out, 0, sizeof *out);
  out->program = -1;
  if (ld_obj_fields(L, w, what, work_all) < 0 || work_kind(L, w, &out->kind) < 0) return -1;
  if (out->kind == SCN_W_REQUEST) {
    if (ld_get_actor(L, w, "request", &out->actor) < 0 ||
        ld_get_enum(L, w, "entry", entry_opts, &e) < 0)
      return -1;
    out->entry = (rt_entry)e;
  } else if (out->kind == SCN_W_FIBER) {
    if (ld_get_program(L, w, "fiber", &out->program) < 0 || ld_need(L, w, "actor") < 0 ||
        ld_get_actor(L, w, "actor", &out->actor) < 0 ||
        scn_get_bool(L->d, w, "await", &out->await, L->err) < 0)
      return -1;
  } else if (out->kind == SCN_W_STASH) {
    if (ld_get_actor(L, w, "stash", &out->actor) < 0) return -1;
  } else if (out->kind == SCN_W_KA_ACQUIRE || out->kind == SCN_W_KA_DISPOSE) {
    const char *key = out->kind == SCN_W_KA_ACQUIRE ? "keep_alive_acquire" : "keep_alive_dispose";
    if (ld_get_actor(L, w, key, &out->actor) < 0 || ld_need(L, w, "lease") < 0 ||
        ld_get_text(L, w, "lease", out->callback, sizeof out->callback, 0) < 0)
      return -1;
  } else if (out->kind == SCN_W_TOOLRUN && work_toolrun(L, w, out) < 0) {
    return -1;
  } else if (out->kind == SCN_W_TOOL_RECOVERY) {
    if (ld_get_actor(L, w, "tool_recovery", &out->actor) < 0) return -1;
  } else if (out->kind == SCN_W_INVOKE) {
    if (work_invoke(L, w, out) < 0) return -1;
  } else if (out->kind >= SCN_W_TOOL_ABORT) {
    if (work_issue15(L, w, out) < 0) return -1;
  } else if ((out->kind == SCN_W_EXEC_TURN && work_exec(L, w, out) < 0) ||
             (out->kind == SCN_W_THREAD && work_thread(L, w, out) < 0) ||
             (out->kind == SCN_W_CHAT && work_chat_item(L, w, out) < 0) ||
             (out->kind >= SCN_W_SCHEDULE && work_sched(L, w, out) < 0)) {
    return -1;
  }
  return work_times(L, w, out);
}

int ld_load_workload(ld *L) {
  const cJSON *arr = ld_get(L->root, "workload"), *w;
  char what[32];
  if (!arr) return 0;
  if (ld_arr_len(L, arr, "workload", 0, SCN_MAX_WORK, "items") < 0) return -1;
  cJSON_ArrayForEach(w, arr) {
    snprintf(what, sizeof what, "workload[%d]", L->sc->n_work);
    if (work_item(L, w, what, &L->sc->work[L->sc->n_work]) < 0) return -1;
    L->sc->n_work++;
  }
  return 0;
}

/* ---- faults -------------------------------------------------------------- */

static const char *const flt_all[] = {
    "kind", "actor", "at", "rate", "until", "mode", "delay", "count", "ppm", "after_write",
    "down_for", NULL};
static const char *const f_plain[] = {"kind", "count", "at", "rate", "until", NULL};
static const char *const f_proc[] = {"kind", "count", "at", "rate", "until", "after_write",
                                     "down_for", NULL};
static const char *const f_kill[] = {"kind", "count", "at", "rate", "until", "down_for", NULL};
static const char *const f_evict[] = {"kind", "actor", "count", "at", "rate", "until", NULL};
static const char *const f_stuck[] = {
    "kind", "actor", "mode", "delay", "count", "at", "rate", "until", NULL};
static const char *const f_storage[] = {
    "kind", "actor", "count", "ppm", "at", "rate", "until", NULL};
static const char *const f_delay[] = {"kind", "delay", "count", "at", "rate", "until", NULL};
static const char *const f_drop[] = {"kind", "ppm", "count", "at", "rate", "until", NULL};
static const char *const f_gate[] = {"kind", "actor", "delay", "count", "at", "rate", "until",
                                     NULL};
static const opt mode_opts[] = {{"never_answers", RT_STUCK_NEVER_ANSWERS}, {"late", RT_STUCK_LATE},
                                {"startup", RT_STUCK_STARTUP}, {NULL, 0}};

/* The fields a fault of kind k may have. */
static const char *const *fault_fields(int k) {
  switch (k) {
    case FLT_EVICT: return f_evict;
    case FLT_STUCK_CHILD: return f_stuck;
    case FLT_STORAGE_FAIL: return f_storage;
    case FLT_RPC_DELAY: case FLT_ALARM_DELAY: return f_delay;
    case FLT_RPC_DROP: return f_drop;
    case FLT_GATE_TIMEOUT: return f_gate;
    case FLT_STREAM_CUT: return f_evict; /* kind, actor (optional), when */
    case FLT_ONSTART_THROW: return f_evict; /* kind, actor (optional), count, when */
    case FLT_CRASH: case FLT_RESTART: return f_proc;
    case FLT_SIGKILL: return f_kill;
    case FLT_ALARM_LOST: return f_evict; /* kind, actor (optional), when */
    default: return f_plain;
  }
}

/* "kind" through flt_kind_parse. */
static int fault_kind(ld *L, const cJSON *f, int *kind) {
  const char *s;
  list l = {{0}, 0, 0};
  int k;
  if (ld_need(L, f, "kind") < 0 || scn_get_string(L->d, f, "kind", &s, L->err) < 0) return -1;
  *kind = flt_kind_parse(s);
  if (*kind > 0) return 0;
  for (k = 1; k < FLT_KIND_COUNT; k++) ld_list_add(&l, flt_kind_name((flt_kind)k));
  return ld_bad_value(L, ld_get(f, "kind"), "kind", s, &l);
}

/* A rate field: "N/d" or "N/h" with N in 1..MAX_RATE, as a count per day. */
int ld_get_rate(ld *L, const cJSON *f, const char *key, int64_t *per_day) {
  const cJSON *m = ld_get(f, key);
  const char *s = cJSON_IsString(m) ? m->valuestring : NULL, *p = s;
  char q[96];
  int64_t n = 0;
  if (!s)
    return scn_errf(L->err, L->d, m,
                    "\"%s\": expected a rate such as \"2/d\" or \"5/h\", found %s",
                    key, scn_type_name(m));
  for (; *p >= '0' && *p <= '9' && p - s < 9; p++) n = n * 10 + (*p - '0');
  if (p == s || p[0] != '/' || (p[1] != 'd' && p[1] != 'h') || p[2] != '\0')
    return scn_errf(L->err, L->d, m,
                    "\"%s\": invalid rate \"%s\"; expected a count per day or per hour such as "
                    "\"2/d\" or \"5/h\"", key, ld_quote(q, sizeof q, s));
  if (n < 1 || n > MAX_RATE)
    return scn_errf(L->err, L->d, m,
                    "\"%s\": \"%s\" is out of range (the count must be between 1 and %d)",
                    key, ld_quote(q, sizeof q, s), MAX_RATE);
  *per_day = p[1] == 'h' ? n * 24 : n;
  return 0;
}

/* When: "at" (fixed), "rate" with an optional "until", or (crash, restart)
** "after_write": right after the k-th durable write. */
static int fault_when(ld *L, const cJSON *f, scn_fault *out) {
  const cJSON *at = ld_get(f, "at"), *rate = ld_get(f, "rate"), *until = ld_get(f, "until");
  const cJSON *aw = ld_get(f, "after_write");
  int64_t k = 0;
  if (aw && (at || rate))
    return scn_errf(L->err, L->d, aw, "give one of \"at\", \"rate\" or \"after_write\"");
  if (aw) {
    if (until) return scn_errf(L->err, L->d, until, "\"until\": only allowed with \"rate\"");
    if (scn_get_int(L->d, f, "after_write", 1, MAX_AFTER_WRITE, &k, L->err) < 0) return -1;
    out->after_write = (uint64_t)k;
    return 0;
  }
  if (at && rate)
    return scn_errf(L->err, L->d, rate, "give either \"at\" or \"rate\", not both");
  if (!at && !rate)
    return scn_errf(L->err, L->d, f,
                    "a fault needs \"at\" (a time such as \"3s\") or \"rate\" (such as \"2/d\")");
  if (until && !rate)
    return scn_errf(L->err, L->d, until, "\"until\": only allowed with \"rate\"");
  if (at) return ld_get_time(L, f, "at", 0, &out->at_us);
  if (ld_get_rate(L, f, "rate", &out->per_day) < 0) return -1;
  return ld_get_time(L, f, "until", 1, &out->until_us) < 0 ? -1 : 0;
}

/* Reads a required "delay" (> 0). */
static int need_delay(ld *L, const cJSON *f, scn_fault *out) {
  if (ld_need(L, f, "delay") < 0) return -1;
  return ld_get_dur(L, f, "delay", 1, &out->delay_us);
}

static int fault_stuck(ld *L, const cJSON *f, scn_fault *out) {
  int mode = 0;
  if (ld_need(L, f, "actor") < 0 || ld_get_actor(L, f, "actor", &out->actor) < 0) return -1;
  if (ld_need(L, f, "mode") < 0 || ld_get_enum(L, f, "mode", mode_opts, &mode) < 0) return -1;
  out->stuck = (rt_stuck)mode;
  if (mode == RT_STUCK_LATE && !ld_get(f, "delay"))
    return scn_errf(L->err, L->d, ld_get(f, "mode"),
                    "\"mode\": \"late\" needs \"delay\" (how late the answers come)");
  if (mode == RT_STUCK_LATE) return need_delay(L, f, out);
  if (ld_get(f, "delay"))
    return scn_errf(L->err, L->d, ld_get(f, "delay"), "\"delay\": only used with \"mode\": \"late\"");
  return 0;
}

static int fault_storage(ld *L, const cJSON *f, scn_fault *out) {
  int64_t v = 1;
  if (ld_get_actor(L, f, "actor", &out->actor) < 0) return -1;
  if (ld_get(f, "count") && ld_get(f, "ppm"))
    return scn_errf(L->err, L->d, ld_get(f, "ppm"), "give either \"count\" or \"ppm\", not both");
  if (ld_get(f, "actor") && ld_get(f, "ppm"))
    return scn_errf(L->err, L->d, ld_get(f, "actor"),
                    "\"actor\": not used with \"ppm\" (the chance applies to every commit)");
  if (scn_get_int(L->d, f, "count", 1, MAX_COUNT, &v, L->err) < 0) return -1;
  out->count = ld_get(f, "ppm") ? 0 : (int)v;
  v = 0;
  if (scn_get_int(L->d, f, "ppm", 1, MAX_PPM, &v, L->err) < 0) return -1;
  out->ppm = (uint32_t)v;
  return 0;
}

/* The kind-specific fields. */
static int fault_params(ld *L, const cJSON *f, scn_fault *out) {
  int64_t v = 0;
  switch (out->kind) {
    case FLT_EVICT:
    case FLT_STREAM_CUT:
    case FLT_ALARM_LOST:
    case FLT_ONSTART_THROW: return ld_get_actor(L, f, "actor", &out->actor) < 0 ? -1 : 0;
    case FLT_CRASH: case FLT_RESTART: case FLT_SIGKILL: /* issue #14: down_for */
      return ld_get_dur(L, f, "down_for", 0, &out->delay_us);
    case FLT_STUCK_CHILD: return fault_stuck(L, f, out);
    case FLT_STORAGE_FAIL: return fault_storage(L, f, out);
    case FLT_RPC_DELAY: case FLT_ALARM_DELAY: return need_delay(L, f, out);
    case FLT_RPC_DROP:
      if (ld_need(L, f, "ppm") < 0 || scn_get_int(L->d, f, "ppm", 1, MAX_PPM, &v, L->err) < 0)
        return -1;
      out->ppm = (uint32_t)v;
      return 0;
    case FLT_GATE_TIMEOUT:
      if (ld_need(L, f, "actor") < 0 || ld_get_actor(L, f, "actor", &out->actor) < 0) return -1;
      return need_delay(L, f, out);
    default: return 0;
  }
}

/* "count": how many times the fault happens (docs/faults.md). storage_fail
** reads its own (commits, default 1); onstart_throw: onStart calls (default
** 1); any other kind: at most N arrivals of a rate. */
static int fault_count(ld *L, const cJSON *f, scn_fault *out) {
  int64_t v = 0;
  if (out->kind == FLT_STORAGE_FAIL || !ld_get(f, "count")) {
    if (out->kind == FLT_ONSTART_THROW) out->count = 1;
    return 0;
  }
  if (scn_get_int(L->d, f, "count", 1, MAX_COUNT, &v, L->err) < 0) return -1;
  if (!flt_count_per_arrival(out->kind) && out->at_us >= 0 && v != 1)
    return scn_errf(L->err, L->d, ld_get(f, "count"),
                    "\"count\": a %s at a fixed time happens once; give \"rate\" to repeat it "
                    "at most %" PRId64 " times", flt_kind_name(out->kind), v);
  out->count = (int)v;
  return 0;
}

static int fault_item(ld *L, const cJSON *f, const char *what, scn_fault *out) {
  int k = 0;
  if (ld_obj_fields(L, f, what, flt_all) < 0 || fault_kind(L, f, &k) < 0) return -1;
  if (scn_check_fields(L->d, f, fault_fields(k), L->err) < 0) return -1;
  memset(out, 0, sizeof *out);
  out->kind = (flt_kind)k;
  out->actor = RT_NO_ACTOR;
  out->at_us = -1;
  if (fault_when(L, f, out) < 0 || fault_params(L, f, out) < 0) return -1;
  return fault_count(L, f, out);
}

int ld_load_faults(ld *L) {
  const cJSON *arr = ld_get(L->root, "faults"), *f;
  char what[32];
  if (!arr) return 0;
  if (ld_arr_len(L, arr, "faults", 0, SCN_MAX_FAULTS, "faults") < 0) return -1;
  cJSON_ArrayForEach(f, arr) {
    snprintf(what, sizeof what, "faults[%d]", L->sc->n_faults);
    if (fault_item(L, f, what, &L->sc->faults[L->sc->n_faults]) < 0) return -1;
    L->sc->n_faults++;
  }
  return 0;
}

/* ---- expectations and cases ------------------------------------------- */

static const char *const expect_fields[] = {"hold", "violate", "facts", "reach", "swarm", NULL};
static const char *const case_fields[] = {"name", "runtime", "expect", NULL};

/* One invariant name of a hold/violate list into *mask. */
static int one_invariant(ld *L, const cJSON *n, const char *key, uint32_t other,
                         uint32_t *mask) {
  list l = {{0}, 0, 0};
  char q[96];
  int v = chk_invariant_parse(n->valuestring), k, m = 0;
  if (v >= CHK_INVARIANT_COUNT) { /* a user invariant: only this scenario's scripts' */
    int mine = 0;
    for (k = 0; k < L->sc->n_lua_inv; k++) mine |= L->sc->lua_inv[k] == v;
    if (!mine) v = -1;
  }
  if (v < 0) {
    const char *names[CHK_INVARIANT_COUNT + CHK_LUA_MAX_INVARIANTS + 1];
    for (k = 0; k < CHK_INVARIANT_COUNT; k++) names[m++] = chk_invariant_name((chk_invariant)k);
    for (k = 0; k < L->sc->n_lua_inv; k++) names[m++] = chk_invariant_name((chk_invariant)L->sc->lua_inv[k]);
    names[m] = NULL;
    const char *best = scn_suggest(n->valuestring, names);
    if (best)
      return scn_errf(L->err, L->d, n, "unknown invariant \"%s\"; did you mean \"%s\"?",
                      ld_quote(q, sizeof q, n->valuestring), best);
    for (k = 0; k < m; k++) ld_list_add(&l, names[k]);
    return scn_errf(L->err, L->d, n, "unknown invariant \"%s\"; expected one of: %s%s",
                    ld_quote(q, sizeof q, n->valuestring), l.s,
                    L->sc->n_scripts ? "" : " (a Lua invariant needs its script in \"invariants\")");
  }
  uint32_t bit = scn_inv_bit(L->sc, v); /* the scenario's own bit (scn.h) */
  if (*mask & bit)
    return scn_errf(L->err, L->d, n, "invariant \"%s\" is listed twice in \"%s\"",
                    n->valuestring, key);
  if (other & bit)
    return scn_errf(L->err, L->d, n, "invariant \"%s\" is in both \"hold\" and \"violate\"",
                    n->valuestring);
  *mask |= bit;
  return 0;
}

static int inv_list(ld *L, const cJSON *ex, const char *key, uint32_t other, uint32_t *mask) {
  const cJSON *arr = ld_get(ex, key), *n;
  char what[32];
  int k = 0;
  if (!arr) return 0;
  if (!cJSON_IsArray(arr))
    return scn_errf(L->err, L->d, arr,
                    "\"%s\": expected an array of invariant names such as [\"no_wedge\"], found %s",
                    key, scn_type_name(arr));
  cJSON_ArrayForEach(n, arr) {
    snprintf(what, sizeof what, "%s[%d]", key, k++);
    if (scn_expect_type(L->d, n, cJSON_String, what, L->err) < 0 ||
        one_invariant(L, n, key, other, mask) < 0)
      return -1;
  }
  return 0;
}

/* "hold: a, b; violate: c" in file order. */
static void expect_text(const cJSON *ex, scn_case *c) {
  static const char *const keys[] = {"hold", "violate"};
  size_t o = 0, cap = sizeof c->expect_text;
  int k;
  c->expect_text[0] = '\0';
  for (k = 0; k < 2; k++) {
    const cJSON *arr = ld_get(ex, keys[k]), *n;
    if (cJSON_GetArraySize(arr) == 0 || o >= cap) continue;
    o += (size_t)snprintf(c->expect_text + o, cap - o, "%s%s:", o ? "; " : "", keys[k]);
    cJSON_ArrayForEach(n, arr) {
      if (o >= cap) return;
      o += (size_t)snprintf(c->expect_text + o, cap - o, "%s %s", n == arr->child ? "" : ",",
                            n->valuestring);
    }
  }
}

/* "reach": probe names (rt_probe_name) into *mask, with a did-you-mean. */
static int reach_list(ld *L, const cJSON *ex, uint64_t *mask) {
  const cJSON *arr = ld_get(ex, "reach"), *n;
  const char *names[RT_PROBE_COUNT + 1];
  char what[32], q[96];
  int k = 0;
  if (!arr) return 0;
  if (!cJSON_IsArray(arr))
    return scn_errf(L->err, L->d, arr,
                    "\"reach\": expected an array of probe names such as "
                    "[\"commit_window_death\"], found %s", scn_type_name(arr));
  for (int p = 0; p < RT_PROBE_COUNT; p++) names[p] = rt_probe_name(p);
  names[RT_PROBE_COUNT] = NULL;
  cJSON_ArrayForEach(n, arr) {
    snprintf(what, sizeof what, "reach[%d]", k++);
    if (scn_expect_type(L->d, n, cJSON_String, what, L->err) < 0) return -1;
    int p = rt_probe_find(n->valuestring);
    if (p < 0) {
      const char *best = scn_suggest(n->valuestring, names);
      list l = {{0}, 0, 0};
      if (best)
        return scn_errf(L->err, L->d, n, "unknown probe \"%s\"; did you mean \"%s\"?",
                        ld_quote(q, sizeof q, n->valuestring), best);
      for (int i = 0; names[i]; i++) ld_list_add(&l, names[i]);
      return scn_errf(L->err, L->d, n, "unknown probe \"%s\"; expected one of: %s",
                      ld_quote(q, sizeof q, n->valuestring), l.s);
    }
    if (*mask & (1ull << p))
      return scn_errf(L->err, L->d, n, "probe \"%s\" is listed twice in \"reach\"",
                      n->valuestring);
    *mask |= 1ull << p;
  }
  return 0;
}

/* An expectation; its facts apply to the cases in case_mask. */
static int load_expect(ld *L, const cJSON *ex, scn_case *c, uint32_t case_mask) {
  const cJSON *facts = ld_get(ex, "facts");
  if (ld_obj_fields(L, ex, "expect", expect_fields) < 0) return -1;
  if (inv_list(L, ex, "hold", 0, &c->hold_mask) < 0 ||
      inv_list(L, ex, "violate", c->hold_mask, &c->violate_mask) < 0 ||
      reach_list(L, ex, &c->reach_mask) < 0 || ld_swarm_mode(L, ex, c) < 0)
    return -1;
  expect_text(ex, c);
  return facts ? ld_load_facts(L, facts, case_mask) : 0;
}

/* A top-level "expect" beside "cases" may hold only facts and reach (for
** every case). */
static int shared_facts(ld *L, const cJSON *ex) {
  const cJSON *m;
  uint64_t reach = 0;
  if (ld_obj_fields(L, ex, "expect", expect_fields) < 0) return -1;
  cJSON_ArrayForEach(m, ex) {
    if (strcmp(m->string, "facts") != 0 && strcmp(m->string, "reach") != 0)
      return ld_key_errf(L, m, "give either \"expect\" or \"cases\", not both "
                         "(each case has its own \"expect\"; a top-level \"expect\" beside "
                         "\"cases\" may hold only \"facts\" and \"reach\")");
  }
  if (reach_list(L, ex, &reach) < 0) return -1;
  L->shared_reach = reach;
  return ld_get(ex, "facts") ? ld_load_facts(L, ld_get(ex, "facts"), 0xffffffffu) : 0;
}

static int load_case(ld *L, const cJSON *o, int i, const char *what) {
  scn_case *c = &L->sc->cases[i];
  const cJSON *rt = ld_get(o, "runtime"), *ex = ld_get(o, "expect");
  char q[96];
  int k;
  if (ld_obj_fields(L, o, what, case_fields) < 0) return -1;
  if (ld_need(L, o, "name") < 0 || ld_get_text(L, o, "name", c->label, sizeof c->label, 0) < 0)
    return -1;
  for (k = 0; k < i; k++)
    if (strcmp(L->sc->cases[k].label, c->label) == 0)
      return scn_errf(L->err, L->d, ld_get(o, "name"), "duplicate case name \"%s\"",
                      ld_quote(q, sizeof q, c->label));
  c->cfg = L->base;
  c->reach_mask = L->shared_reach;
  if (rt && ld_load_runtime(L, rt, &c->cfg) < 0) return -1;
  return ex ? load_expect(L, ex, c, 1u << i) : 0;
}

int ld_load_cases(ld *L) {
  scn_scenario *sc = L->sc;
  const cJSON *ex = ld_get(L->root, "expect"), *cs = ld_get(L->root, "cases"), *o;
  char what[32];
  if (ex && cs && (!cJSON_IsObject(ex) || (!ld_get(ex, "facts") && !ld_get(ex, "reach"))))
    return ld_key_errf(L, cs, "give either \"expect\" or \"cases\", not both "
                    "(each case has its own \"expect\")");
  if (!cs) {
    sc->n_cases = 1;
    snprintf(sc->cases[0].label, sizeof sc->cases[0].label, "default");
    sc->cases[0].cfg = L->base;
    return ex ? load_expect(L, ex, &sc->cases[0], 0xffffffffu) : 0;
  }
  if (ex && shared_facts(L, ex) < 0) return -1;
  if (ld_arr_len(L, cs, "cases", 1, SCN_MAX_CASES, "cases") < 0) return -1;
  cJSON_ArrayForEach(o, cs) {
    snprintf(what, sizeof what, "cases[%d]", sc->n_cases);
    if (load_case(L, o, sc->n_cases, what) < 0) return -1;
    sc->n_cases++;
  }
  return 0;
}

