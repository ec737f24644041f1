/*
** rt_schema.c: the field table of every trace record kind and the SDK
** tables end-state facts may read (rt_schema.h).
**
** The table follows the (a, b, c, s, s2) comments of rt_events.h one kind
** per row; keep them in step (tests/test_schema.c checks that every kind
** has a row and that names are unique within a kind).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include "runtime/rt_schema.h"

#include <stdio.h>
#include <string.h>

#include "runtime/rt_events.h"

#define N_ {NULL, RT_F_INT}
#define I_(k) {k, RT_F_INT}
#define U_(k) {k, RT_F_US}
#define T_(k) {k, RT_F_AT}
#define B_(k) {k, RT_F_BOOL}
#define S_(k) {k, RT_F_STR}
#define J_(k) {k, RT_F_JSON}
#define E_(k, t) {k, t}

/* (a, b, c, s, s2) per kind. */
static const rt_field rt_fields[RT_EV_KIND_COUNT][RT_FIELDS] = {
  [RT_EV_ACTOR_WAKE] = {I_("incarnation"), E_("entry", RT_F_ENTRY), N_, S_("class"), N_},
  [RT_EV_ACTOR_DEATH] = {E_("cause", RT_F_DEATH), I_("incarnation"), N_, N_, N_},
  [RT_EV_GATE_ACQUIRE] = {I_("incarnation"), N_, N_, S_("purpose"), N_},
  [RT_EV_GATE_RELEASE] = {U_("held_us"), N_, N_, N_, N_},
  [RT_EV_GATE_TIMEOUT] = {U_("held_us"), U_("ceiling_us"), N_, S_("message"), N_},
  [RT_EV_STARTUP_BEGIN] = {E_("entry", RT_F_ENTRY), N_, N_, N_, N_},
  [RT_EV_STARTUP_OK] = {U_("duration_us"), N_, N_, N_, N_},
  [RT_EV_STARTUP_FAIL] = {U_("duration_us"), N_, N_, S_("error"), N_},
  [RT_EV_ONSTART_BEGIN] = {N_, N_, N_, N_, N_},
  [RT_EV_REQUEST_ARRIVE] = {I_("request"), E_("entry", RT_F_ENTRY), N_, N_, N_},
  [RT_EV_REQUEST_OK] = {I_("request"), U_("latency_us"), N_, J_("result"), N_},
  [RT_EV_REQUEST_FAIL] = {I_("request"), U_("latency_us"), N_, S_("error"), N_},
  [RT_EV_RPC_SEND] = {I_("call"), E_("callee", RT_F_ACTOR), N_, S_("method"), N_},
  [RT_EV_RPC_REPLY] = {I_("call"), B_("ok"), N_, N_, N_},
  [RT_EV_FIBER_START] = {I_("fiber"), I_("recovered_from"), I_("pc"), S_("name"), N_},
  [RT_EV_STASH] = {I_("fiber"), I_("pc"), I_("txn"), J_("value"), S_("via")},
  [RT_EV_EFFECT] = {I_("fiber"), I_("pc"), I_("attempt"), S_("effect"), N_},
  [RT_EV_FIBER_DONE] = {I_("fiber"), B_("ok"), N_, S_("name"), S_("result")},
  [RT_EV_KEEPALIVE_DISPOSE] = {B_("released"), I_("refs"), N_, S_("lease"), N_},
  [RT_EV_USER_LOG] = {I_("fiber"), N_, N_, S_("message"), S_("callback")},
  [RT_EV_SCRIPT_ERROR] = {I_("code"), I_("fiber"), N_, S_("callback"), S_("error")},
  [RT_EV_FIBER_READ] = {I_("fiber"), I_("pc"), N_, J_("snapshot"), N_},
  [RT_EV_FIBER_RETAINED] = {I_("fiber"), U_("age_us"), I_("calls"), S_("name"), N_},
  [RT_EV_FIBER_SKIPPED] = {I_("fiber"), U_("age_us"), N_, S_("name"), S_("reason")},
  [RT_EV_RECOVERY_SCAN] = {E_("source", RT_F_SOURCE), I_("rows"), N_, N_, N_},
  [RT_EV_RECOVERY_REENTRY] = {E_("source", RT_F_SOURCE), N_, N_, N_, N_},
  [RT_EV_FIBER_RECOVERED] = {I_("fiber"), I_("pc"), E_("action", RT_F_ACTION), S_("name"), J_("snapshot")},
  [RT_EV_FIBER_HOOK_THREW] = {I_("fiber"), I_("pc"), N_, S_("name"), J_("snapshot")},
  [RT_EV_KEEPALIVE] = {I_("refs"), I_("delta"), N_, N_, N_},
  [RT_EV_ALARM_SET] = {T_("at_us"), N_, N_, N_, N_},
  [RT_EV_ALARM_DELETE] = {N_, N_, N_, N_, N_},
  [RT_EV_ALARM_FIRE] = {T_("at_us"), I_("retry"), N_, N_, N_},
  [RT_EV_ALARM_DONE] = {B_("ok"), N_, N_, N_, N_},
  [RT_EV_ALARM_RETRY] = {T_("next_at_us"), I_("retry"), N_, N_, N_},
  [RT_EV_SCHEDULE_RUN] = {I_("schedule"), N_, N_, S_("callback"), N_},
  [RT_EV_WRITE] = {E_("op", RT_F_WRITEOP), I_("key"), I_("txn"), S_("table"), S_("name")},
  [RT_EV_TXN_COMMIT] = {I_("txn"), I_("writes"), N_, N_, N_},
  [RT_EV_TXN_ROLLBACK] = {I_("txn"), I_("writes"), N_, S_("reason"), N_},
  [RT_EV_WAITUNTIL] = {I_("pending"), I_("delta"), N_, N_, N_},
  [RT_EV_TOOLRUN_INSERT] = {I_("run"), E_("child", RT_F_ACTOR), E_("status", RT_F_TRSTATUS), S_("agent_type"), S_("tool_call")},
  [RT_EV_TOOLRUN_STATUS] = {I_("run"), E_("status", RT_F_TRSTATUS), E_("old_status", RT_F_TRSTATUS), S_("reason"), N_},
  [RT_EV_TOOLRUN_SNAPSHOT] = {I_("run"), N_, N_, N_, N_},
  [RT_EV_TOOLRUN_RECOVERY] = {E_("phase", RT_F_PHASE), I_("rows"), N_, N_, N_},
  [RT_EV_TOOLRUN_INSPECT] = {I_("run"), E_("outcome", RT_F_OUTCOME), E_("child_status", RT_F_TRSTATUS), N_, N_},
  [RT_EV_FAULT] = {I_("x"), I_("y"), N_, S_("fault"), S_("detail")},
  [RT_EV_STORAGE_FAIL] = {I_("txn"), I_("sqlite_code"), N_, N_, N_},
  [RT_EV_LEGACY_FIBER] = {I_("fiber"), E_("status", RT_F_LFSTATUS), I_("retries"), S_("method"), N_},
  /* checkpoint executor (seed 002) */
  [RT_EV_EXEC_TURN] = {I_("turn"), E_("state", RT_F_EXECSTATE), E_("adapter", RT_F_ADAPTER), S_("reason"), N_},
  [RT_EV_EXEC_CHECKPOINT] = {I_("turn"), I_("phase"), I_("timestamp_ms"), S_("phase_name"), S_("delivery")},
  [RT_EV_EXEC_ACK] = {I_("turn"), B_("ok"), I_("phase"), S_("error"), N_},
  [RT_EV_EXEC_RESTORE] = {I_("turn"), I_("count"), I_("purpose"), N_, N_},
  [RT_EV_EXEC_RESTORED] = {I_("turn"), I_("phase"), I_("timestamp_ms"), S_("phase_name"), N_},
  /* thread store (seed 004) */
  [RT_EV_THREAD_LOAD] = {I_("thread"), I_("version"), I_("run"), N_, N_},
  [RT_EV_THREAD_APPEND] = {I_("thread"), I_("run"), I_("expected_version"), S_("reason"), N_},
  [RT_EV_THREAD_SET] = {I_("thread"), I_("scope"), I_("call"), S_("path"), N_},
  [RT_EV_THREAD_DELETE] = {I_("thread"), I_("scope"), I_("call"), S_("path"), N_},
  [RT_EV_THREAD_MSG] = {I_("thread"), I_("role"), I_("call"), N_, N_},
  [RT_EV_THREAD_COMMIT] = {I_("thread"), I_("version"), I_("run"), S_("error"), N_},
  [RT_EV_THREAD_RUN] = {I_("thread"), I_("run"), E_("state", RT_F_RUNSTATE), S_("error"), N_},
  /* durable chat turns (seed 000 Layer 3) */
  [RT_EV_CHAT_TURN] = {I_("request"), I_("message"), E_("mode", RT_F_CHATMODE), S_("answers"), N_},
  [RT_EV_CHAT_RESUME] = {I_("request"), I_("interrupted"), I_("schedule"), S_("callback"), N_},
  [RT_EV_CHAT_USER] = {I_("message"), I_("request"), I_("txn"), S_("text"), N_},
  [RT_EV_CHAT_ASSISTANT] = {I_("message"), I_("writer"), I_("txn"), S_("text"), S_("answers")},
  [RT_EV_CHAT_CHUNK] = {I_("stream"), I_("index"), I_("txn"), N_, N_},
  [RT_EV_CHAT_STREAM] = {I_("stream"), E_("status", RT_F_STREAM), I_("request"), N_, N_},
  [RT_EV_CHAT_UPSTREAM] = {I_("response"), E_("phase", RT_F_UPSTREAM), I_("request"), S_("answers"), S_("provider")},
  [RT_EV_CHAT_RECOVERY] = {I_("fiber"), I_("request"), I_("partial_chunks"), S_("options"), S_("arm")},
  /* user callbacks and schedule rows (issue #12) */
  [RT_EV_ONSTART_END] = {E_("outcome", RT_F_CBOUTCOME), U_("duration_us"), N_, S_("error"), N_},
  [RT_EV_HOOK_BEGIN] = {I_("fiber"), I_("pc"), T_("created_at_us"), S_("name"), J_("snapshot")},
  [RT_EV_HOOK_END] = {I_("fiber"), E_("outcome", RT_F_CBOUTCOME), U_("duration_us"), S_("name"), S_("error")},
  [RT_EV_TOOLRUN_EFFECT] = {I_("run"), E_("parent", RT_F_ACTOR), N_, S_("tool_call"), N_},
  [RT_EV_TOOLRUN_ATTACH] = {I_("run"), E_("how", RT_F_TRATTACH), E_("status", RT_F_TRSTATUS), S_("tool_call"), N_},
  [RT_EV_TOOLRUN_FINISH] = {I_("run"), E_("status", RT_F_TRSTATUS), E_("outcome", RT_F_CBOUTCOME), S_("error"), S_("when")},
  [RT_EV_SCHEDULE_SET] = {I_("schedule"), T_("at_us"), U_("interval_us"), S_("callback"), N_},
  /* probes (issue #16) */
  [RT_EV_PROBE] = {I_("id"), N_, N_, S_("probe"), N_},
  /* issue #15, the rest */
  [RT_EV_CHAT_RECOVERY_CTX] = {I_("stream"), I_("request"), I_("messages"), S_("partial_text"), J_("context")},
  [RT_EV_CHAT_CANCEL] = {I_("request"), I_("chunks"), N_, N_, N_},
  [RT_EV_TOOLRUN_EVENT] = {I_("run"), I_("sequence"), I_("replay"), S_("event"), S_("tool_call")},
  [RT_EV_TOOLRUN_ABORT] = {I_("run"), E_("child", RT_F_ACTOR), E_("status", RT_F_TRSTATUS), S_("by"), N_},
  [RT_EV_TOOLRUN_REPLAY] = {I_("replay"), I_("after_sequence"), I_("runs"), N_, N_},
  /* schedule callbacks (issue #14) */
  [RT_EV_SCHEDULE_RETRY] = {I_("schedule"), I_("attempt"), U_("delay_us"), S_("callback"), S_("error")},
  [RT_EV_SCHEDULE_ERROR] = {I_("schedule"), I_("attempts"), N_, S_("callback"), S_("error")},
  [RT_EV_SCHEDULE_SKIP] = {I_("schedule"), T_("started_at_us"), N_, S_("callback"), N_},
  [RT_EV_SCHEDULE_HUNG] = {I_("schedule"), I_("started_at_us"), N_, S_("callback"), N_},
  [RT_EV_SCHEDULE_DEDUP] = {I_("schedule"), N_, N_, S_("callback"), S_("type")},
  [RT_EV_SCHEDULE_EFFECT] = {I_("schedule"), T_("at_us"), I_("attempt"), S_("effect"), S_("callback")},
};

static const rt_field rt_unknown[RT_FIELDS] = {I_("a"), I_("b"), I_("c"), S_("s"), S_("s2")};

const rt_field *rt_schema_fields(uint32_t kind) {
  return kind < RT_EV_KIND_COUNT && kind != RT_EV_NONE ? rt_fields[kind] : rt_unknown;
}

int rt_schema_kind(const char *name) {
  for (uint32_t k = 1; name && k < RT_EV_KIND_COUNT; k++)
    if (strcmp(rt_event_name(k), name) == 0) return (int)k;
  return -1;
}

int rt_schema_slot(uint32_t kind, const char *key) {
  const rt_field *f = rt_schema_fields(kind);
  for (int i = 0; key && i < RT_FIELDS; i++)
    if (f[i].key && strcmp(f[i].key, key) == 0) return i;
  return -1;
}

int rt_schema_slot_loose(uint32_t kind, const char *key) {
  char with_us[40];
  int slot = rt_schema_slot(kind, key);
  if (slot >= 0 || !key || strlen(key) + 4 > sizeof with_us) return slot;
  snprintf(with_us, sizeof with_us, "%s_us", key);
  slot = rt_schema_slot(kind, with_us);
  if (slot < 0) return -1;
  rt_ftype t = rt_schema_fields(kind)[slot].type;
  return t == RT_F_US || t == RT_F_AT ? slot : -1;
}

static const char *known(const char *s) { return (s && strcmp(s, "?") != 0) ? s : NULL; }

static const char *small_name(int64_t v, const char *const *names, int64_t lo, int64_t hi) {
  return v < lo || v > hi ? NULL : names[v - lo];
}

const char *rt_schema_enum_name(rt_ftype t, int64_t v) {
  static const char *const sources[] = {"startup", "alarm"};
  static const char *const outcomes[] = {"inspected", "timed_out", "failed"};
  static const char *const phases[] = {"end", "begin", "joined"};
  int iv = (v < -1000000 || v > 1000000) ? -1000001 : (int)v;
  switch (t) {
    case RT_F_DEATH: return known(rt_death_name(iv));
    case RT_F_ENTRY: return known(rt_entry_name(iv));
    case RT_F_ACTION: return known(rt_action_name(iv));
    case RT_F_TRSTATUS: return known(rt_toolrun_status_name(iv));
    case RT_F_WRITEOP: return known(rt_write_op_name(iv));
    case RT_F_SOURCE: return small_name(v, sources, 1, 2);
    case RT_F_OUTCOME: return small_name(v, outcomes, 1, 3);
    case RT_F_PHASE: return small_name(v, phases, 0, 2);
    case RT_F_CBOUTCOME: return known(rt_cb_outcome_name(iv));
    case RT_F_LFSTATUS: return known(rt_legacy_status_name(iv));
    case RT_F_CHATMODE: return known(rt_chat_mode_name(iv));
    case RT_F_STREAM: return known(rt_chat_stream_status_name(iv));
    case RT_F_UPSTREAM: return known(rt_chat_upstream_phase_name(iv));
    case RT_F_EXECSTATE: return known(rt_exec_turn_state_name(iv));
    case RT_F_ADAPTER: return known(rt_exec_adapter_name(iv));
    case RT_F_RUNSTATE: return known(rt_thread_run_state_name(iv));
    case RT_F_TRATTACH: return known(rt_tr_attach_name(iv));
    default: return NULL;
  }
}

int rt_schema_is_enum(rt_ftype t) { return t >= RT_F_DEATH && t < RT_F_STR; }

/* Every enum above has its values in 0..31. */
#define RT_ENUM_MAX 32

int rt_schema_enum_value(rt_ftype t, const char *name, int64_t *out) {
  for (int64_t v = 0; name && v < RT_ENUM_MAX; v++) {
    const char *n = rt_schema_enum_name(t, v);
    if (n && strcmp(n, name) == 0) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

void rt_schema_enum_list(rt_ftype t, char *buf, int cap) {
  int o = 0;
  if (cap > 0) buf[0] = '\0';
  for (int64_t v = 0; v < RT_ENUM_MAX && o < cap; v++) {
    const char *n = rt_schema_enum_name(t, v);
    if (n) o += snprintf(buf + o, (size_t)(cap - o), "%s%s", o ? ", " : "", n);
  }
}

const char *rt_schema_type_word(rt_ftype t) {
  switch (t) {
    case RT_F_INT: return "integer";
    case RT_F_US: return "duration";
    case RT_F_AT: return "time";
    case RT_F_BOOL: return "boolean";
    case RT_F_ACTOR: return "actor";
    case RT_F_STR: return "string";
    case RT_F_JSON: return "JSON value";
    default: return "name";
  }
}

/* ---- SDK tables ------------------------------------------------------- */

static const rt_column col_runs[] = {
  {"id", RT_F_INT}, {"name", RT_F_STR}, {"snapshot", RT_F_JSON}, {"created_at", RT_F_INT}, {NULL, 0}};
static const rt_column col_schedules[] = {
  {"id", RT_F_INT}, {"callback", RT_F_STR}, {"type", RT_F_STR}, {"time", RT_F_INT},
  {"intervalSeconds", RT_F_INT}, {"running", RT_F_INT}, {"created_at", RT_F_INT},
  {"payload", RT_F_STR}, {"cron", RT_F_STR}, {"delayInSeconds", RT_F_INT},
  {"execution_started_at", RT_F_INT}, {NULL, 0}};
static const rt_column col_toolruns[] = {
  {"run_id", RT_F_INT}, {"agent_type", RT_F_STR}, {"child", RT_F_INT}, {"status", RT_F_TRSTATUS},
  {"error_message", RT_F_STR}, {"started_at", RT_F_INT}, {"completed_at", RT_F_INT}, {NULL, 0}};
static const rt_column col_fibers[] = {
  {"id", RT_F_INT}, {"callback", RT_F_STR}, {"payload", RT_F_STR}, {"snapshot", RT_F_JSON},
  {"status", RT_F_STR}, {"retry_count", RT_F_INT}, {"max_retries", RT_F_INT}, {"result", RT_F_STR},
  {"error", RT_F_STR}, {"started_at", RT_F_INT}, {"updated_at", RT_F_INT},
  {"completed_at", RT_F_INT}, {"created_at", RT_F_INT}, {NULL, 0}};
static const rt_column col_checkpoints[] = {
  {"turn_id", RT_F_INT}, {"session_id", RT_F_STR}, {"phase", RT_F_STR}, {"state", RT_F_STR},
  {"timestamp", RT_F_INT}, {NULL, 0}};
static const rt_column col_messages[] = {
  {"id", RT_F_INT}, {"role", RT_F_STR}, {"answers", RT_F_INT}, {"message", RT_F_STR},
  {"created_at", RT_F_INT}, {NULL, 0}};
static const rt_column col_stream_meta[] = {
  {"id", RT_F_INT}, {"request_id", RT_F_INT}, {"status", RT_F_STR}, {"created_at", RT_F_INT},
  {"completed_at", RT_F_INT}, {NULL, 0}};
static const rt_column col_stream_chunks[] = {
  {"stream_id", RT_F_INT}, {"chunk_index", RT_F_INT}, {"body", RT_F_STR},
  {"created_at", RT_F_INT}, {NULL, 0}};

static const struct {
  const char *name;
  const rt_column *cols;
} rt_tables[] = {
  {"cf_agents_runs", col_runs},
  {"cf_agents_schedules", col_schedules},
  {"cf_agent_tool_runs", col_toolruns},
  {"cf_agents_fibers", col_fibers},
  {"beach_turn_checkpoints", col_checkpoints},
  {"cf_ai_chat_agent_messages", col_messages},
  {"cf_ai_chat_stream_metadata", col_stream_meta},
  {"cf_ai_chat_stream_chunks", col_stream_chunks},
};

#define N_TABLES ((int)(sizeof rt_tables / sizeof rt_tables[0]))

int rt_schema_table_count(void) { return N_TABLES; }

const char *rt_schema_table_name(int i) { return i >= 0 && i < N_TABLES ? rt_tables[i].name : NULL; }

int rt_schema_table(const char *name) {
  for (int i = 0; name && i < N_TABLES; i++)
    if (strcmp(rt_tables[i].name, name) == 0) return i;
  return -1;
}

const rt_column *rt_schema_columns(int ti) { return ti >= 0 && ti < N_TABLES ? rt_tables[ti].cols : NULL; }
