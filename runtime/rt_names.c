/*
** rt_names.c: stable names of the trace vocabulary (rt_events.h).
**
** Each table is indexed by its enum value through designated initializers,
** so a reordering of an enum cannot shift a name onto the wrong value. Any
** value outside a table, or a hole in it, reads as "?". These names appear
** in reports, JSON output and scenario files: never rename one.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include "runtime/rt_events.h"

#include <stddef.h>
#include <string.h>

static const char *const rt_event_names[RT_EV_KIND_COUNT] = {
  [RT_EV_NONE] = "none",
  [RT_EV_ACTOR_WAKE] = "actor_wake",
  [RT_EV_ACTOR_DEATH] = "actor_death",
  [RT_EV_GATE_ACQUIRE] = "gate_acquire",
  [RT_EV_GATE_RELEASE] = "gate_release",
  [RT_EV_GATE_TIMEOUT] = "gate_timeout",
  [RT_EV_STARTUP_BEGIN] = "startup_begin",
  [RT_EV_STARTUP_OK] = "startup_ok",
  [RT_EV_STARTUP_FAIL] = "startup_fail",
  [RT_EV_ONSTART_BEGIN] = "onstart_begin",
  [RT_EV_REQUEST_ARRIVE] = "request_arrive",
  [RT_EV_REQUEST_OK] = "request_ok",
  [RT_EV_REQUEST_FAIL] = "request_fail",
  [RT_EV_RPC_SEND] = "rpc_send",
  [RT_EV_RPC_REPLY] = "rpc_reply",
  [RT_EV_FIBER_START] = "fiber_start",
  [RT_EV_STASH] = "stash",
  [RT_EV_EFFECT] = "effect",
  [RT_EV_FIBER_DONE] = "fiber_done",
  [RT_EV_RECOVERY_SCAN] = "recovery_scan",
  [RT_EV_RECOVERY_REENTRY] = "recovery_reentry",
  [RT_EV_FIBER_RECOVERED] = "fiber_recovered",
  [RT_EV_FIBER_HOOK_THREW] = "fiber_hook_threw",
  [RT_EV_KEEPALIVE] = "keepalive",
  [RT_EV_ALARM_SET] = "alarm_set",
  [RT_EV_ALARM_DELETE] = "alarm_delete",
  [RT_EV_ALARM_FIRE] = "alarm_fire",
  [RT_EV_ALARM_DONE] = "alarm_done",
  [RT_EV_ALARM_RETRY] = "alarm_retry",
  [RT_EV_SCHEDULE_RUN] = "schedule_run",
  [RT_EV_WRITE] = "write",
  [RT_EV_TXN_COMMIT] = "txn_commit",
  [RT_EV_TXN_ROLLBACK] = "txn_rollback",
  [RT_EV_WAITUNTIL] = "waituntil",
  [RT_EV_TOOLRUN_INSERT] = "toolrun_insert",
  [RT_EV_TOOLRUN_STATUS] = "toolrun_status",
  [RT_EV_TOOLRUN_SNAPSHOT] = "toolrun_snapshot",
  [RT_EV_TOOLRUN_RECOVERY] = "toolrun_recovery",
  [RT_EV_TOOLRUN_INSPECT] = "toolrun_inspect",
  [RT_EV_FAULT] = "fault",
  [RT_EV_STORAGE_FAIL] = "storage_fail",
  [RT_EV_LEGACY_FIBER] = "legacy_fiber",
  [RT_EV_EXEC_TURN] = "exec_turn",             /* checkpoint executor (seed 002) */
  [RT_EV_EXEC_CHECKPOINT] = "exec_checkpoint",
  [RT_EV_EXEC_ACK] = "exec_ack",
  [RT_EV_EXEC_RESTORE] = "exec_restore",
  [RT_EV_EXEC_RESTORED] = "exec_restored",
  [RT_EV_THREAD_LOAD] = "thread_load",         /* thread store (seed 004) */
  [RT_EV_THREAD_APPEND] = "thread_append",
  [RT_EV_THREAD_SET] = "thread_set",
  [RT_EV_THREAD_DELETE] = "thread_delete",
  [RT_EV_THREAD_MSG] = "thread_msg",
  [RT_EV_THREAD_COMMIT] = "thread_commit",
  [RT_EV_THREAD_RUN] = "thread_run",
  [RT_EV_CHAT_TURN] = "chat_turn",             /* durable chat turns (seed 000) */
  [RT_EV_CHAT_RESUME] = "chat_resume",
  [RT_EV_CHAT_USER] = "chat_user",
  [RT_EV_CHAT_ASSISTANT] = "chat_assistant",
  [RT_EV_CHAT_CHUNK] = "chat_chunk",
  [RT_EV_CHAT_STREAM] = "chat_stream",
  [RT_EV_CHAT_UPSTREAM] = "chat_upstream",
  [RT_EV_CHAT_RECOVERY] = "chat_recovery",
  [RT_EV_ONSTART_END] = "onstart_end",
  [RT_EV_HOOK_BEGIN] = "hook_begin",
  [RT_EV_HOOK_END] = "hook_end",
  [RT_EV_SCHEDULE_SET] = "schedule_set",
  [RT_EV_TOOLRUN_EFFECT] = "toolrun_effect",
  [RT_EV_TOOLRUN_ATTACH] = "toolrun_attach",
  [RT_EV_TOOLRUN_FINISH] = "toolrun_finish",
  [RT_EV_FIBER_READ] = "fiber_read",
  [RT_EV_FIBER_RETAINED] = "fiber_retained",
  [RT_EV_FIBER_SKIPPED] = "fiber_skipped",
  [RT_EV_KEEPALIVE_DISPOSE] = "keepalive_dispose",
  [RT_EV_USER_LOG] = "user_log",
  [RT_EV_SCRIPT_ERROR] = "script_error",
  [RT_EV_PROBE] = "probe",
  [RT_EV_CHAT_RECOVERY_CTX] = "chat_recovery_ctx",
  [RT_EV_CHAT_CANCEL] = "chat_cancel",
  [RT_EV_TOOLRUN_EVENT] = "toolrun_event",
  [RT_EV_TOOLRUN_ABORT] = "toolrun_abort",
  [RT_EV_TOOLRUN_REPLAY] = "toolrun_replay",
  [RT_EV_SCHEDULE_RETRY] = "schedule_retry",
  [RT_EV_SCHEDULE_ERROR] = "schedule_error",
  [RT_EV_SCHEDULE_SKIP] = "schedule_skip",
  [RT_EV_SCHEDULE_HUNG] = "schedule_hung",
  [RT_EV_SCHEDULE_DEDUP] = "schedule_dedup",
  [RT_EV_SCHEDULE_EFFECT] = "schedule_effect",
};

static const char *const rt_probe_names[] = {
  [RT_PROBE_COMMIT_WINDOW_DEATH] = "commit_window_death",
  [RT_PROBE_RECOVERY_REENTRY] = "recovery_reentry",
  [RT_PROBE_RECONCILE_IN_FLIGHT] = "reconcile_in_flight",
  [RT_PROBE_GATE_RESET_IN_HOOK] = "gate_reset_in_hook",
  [RT_PROBE_GATE_RESET_IN_ONSTART] = "gate_reset_in_onstart",
  [RT_PROBE_INSPECT_TIMEOUT] = "inspect_timeout",
  [RT_PROBE_INSPECT_DEADLINE] = "inspect_deadline",
  [RT_PROBE_ALARM_RETRIES_EXHAUSTED] = "alarm_retries_exhausted",
  [RT_PROBE_LATE_REPLY] = "late_reply",
  [RT_PROBE_STORAGE_FAIL_COMMIT] = "storage_fail_commit",
  [RT_PROBE_REPLY_HELD] = "reply_held",
  [RT_PROBE_WAITERS_FAILED] = "waiters_failed",
  [RT_PROBE_ALARM_CUT] = "alarm_cut",
  [RT_PROBE_STARTUP_POISONED] = "startup_poisoned",
  [RT_PROBE_UPSTREAM_SEVERED] = "upstream_severed",
};

static const char *const rt_death_names[] = {
  [RT_DEATH_EVICT] = "evict",
  [RT_DEATH_RESTART] = "restart",
  [RT_DEATH_CRASH] = "crash",
  [RT_DEATH_SIGKILL] = "sigkill",
  [RT_DEATH_GATE_RESET] = "gate_reset",
  [RT_DEATH_STORAGE] = "storage",
  [RT_DEATH_IDLE] = "idle",
};

static const char *const rt_entry_names[] = {
  [RT_ENTRY_FETCH] = "fetch",
  [RT_ENTRY_WS] = "ws",
  [RT_ENTRY_ALARM] = "alarm",
  [RT_ENTRY_SETNAME] = "setName",
  [RT_ENTRY_RPC] = "rpc",
  [RT_ENTRY_FACET_INIT] = "facet_init",
};

static const char *const rt_action_names[] = {
  [RT_RECOVER_RESUME] = "resume",
  [RT_RECOVER_RESTART] = "restart",
  [RT_RECOVER_DROP] = "drop",
  [RT_RECOVER_THROW] = "throw",
};

static const char *const rt_toolrun_status_names[] = {
  [RT_TR_STARTING] = "starting",
  [RT_TR_RUNNING] = "running",
  [RT_TR_COMPLETED] = "completed",
  [RT_TR_ERROR] = "error",
  [RT_TR_ABORTED] = "aborted",
  [RT_TR_INTERRUPTED] = "interrupted",
};

static const char *const rt_write_op_names[] = {
  [RT_W_FIBER_INSERT] = "fiber_insert",
  [RT_W_STASH] = "stash",
  [RT_W_FIBER_DELETE] = "fiber_delete",
  [RT_W_ALARM_SET] = "alarm_set",
  [RT_W_ALARM_DELETE] = "alarm_delete",
  [RT_W_TOOLRUN_INSERT] = "toolrun_insert",
  [RT_W_TOOLRUN_STATUS] = "toolrun_status",
  [RT_W_SCHEDULE] = "schedule",
  [RT_W_CHILD_RUN] = "child_run",
  [RT_W_LEGACY_FIBER] = "legacy_fiber",
  [RT_W_OTHER] = "other",
  [RT_W_CHECKPOINT] = "checkpoint",
  [RT_W_THREAD] = "thread",
  [RT_W_USER_SQL] = "user_sql",
};

/* Looks v up in a table of n names; "?" outside it or in a hole. */
static const char *rt_name_in(const char *const *tab, size_t n, long long v) {
  if (v < 0 || (unsigned long long)v >= n || !tab[v]) return "?";
  return tab[v];
}

#define RT_NAME_IN(tab, v) rt_name_in((tab), sizeof(tab) / sizeof((tab)[0]), (v))

const char *rt_event_name(uint32_t kind) {
  return RT_NAME_IN(rt_event_names, (long long)kind);
}

const char *rt_probe_name(int probe) { return RT_NAME_IN(rt_probe_names, probe); }

int rt_probe_find(const char *name) {
  for (int p = 0; name && p < RT_PROBE_COUNT; p++)
    if (strcmp(rt_probe_names[p], name) == 0) return p;
  return -1;
}

const char *rt_death_name(int cause) { return RT_NAME_IN(rt_death_names, cause); }

const char *rt_entry_name(int entry) { return RT_NAME_IN(rt_entry_names, entry); }

const char *rt_action_name(int action) {
  return RT_NAME_IN(rt_action_names, action);
}

const char *rt_toolrun_status_name(int status) {
  return RT_NAME_IN(rt_toolrun_status_names, status);
}

const char *rt_write_op_name(int op) {
  return RT_NAME_IN(rt_write_op_names, op);
}

/* ---- legacy fibers (seed 001; rt_legacy.c) ----------------------------- */

static const char *const rt_legacy_status_names[] = {
  [RT_LF_RUNNING] = "running",
  [RT_LF_COMPLETED] = "completed",
  [RT_LF_FAILED] = "failed",
  [RT_LF_INTERRUPTED] = "interrupted",
  [RT_LF_CANCELLED] = "cancelled",
};

/* cf_agents_fibers.status names, exactly as stored in the table. */
const char *rt_legacy_status_name(int status) {
  return RT_NAME_IN(rt_legacy_status_names, status);
}

/* ---- checkpoint executor (seed 002) and thread store (seed 004) -------- */

static const char *const rt_exec_phase_names[] = {
  [RT_PH_STARTED] = "started",
  [RT_PH_LLM_COMPLETE] = "llm-complete",
  [RT_PH_TOOL_DISPATCHED] = "tool-dispatched",
  [RT_PH_TOOL_RECEIVED] = "tool-received",
  [RT_PH_SETTLED] = "settled",
};

static const char *const rt_exec_adapter_names[] = {
  [RT_EXEC_SQLITE] = "sqlite",
  [RT_EXEC_MEMORY] = "memory",
  [RT_EXEC_BROKEN] = "broken",
};

static const char *const rt_exec_turn_state_names[] = {
  [RT_TS_OPEN] = "open",
  [RT_TS_RUNNING] = "running",
  [RT_TS_COMPLETE] = "complete",
  [RT_TS_ABORTED] = "aborted",
  [RT_TS_NOT_RUN] = "not_run",
  [RT_TS_CANCEL] = "cancel",
  [RT_TS_CANCELLED] = "cancelled",
  [RT_TS_RESUMED] = "resumed",
  [RT_TS_REPLAYED] = "replayed",
};

static const char *const rt_thread_store_names[] = {
  [RT_THREAD_VERSIONED] = "versioned",
  [RT_THREAD_BROKEN] = "broken",
  [RT_THREAD_LEAKY] = "leaky",
};

static const char *const rt_thread_reason_names[] = {
  [RT_CK_USER_MESSAGE] = "UserMessage",
  [RT_CK_ASSISTANT_TURN_COMMITTED] = "AssistantTurnCommitted",
  [RT_CK_TOOL_RESULTS_COMMITTED] = "ToolResultsCommitted",
  [RT_CK_RUN_FINISHED] = "RunFinished",
};

static const char *const rt_thread_scope_names[] = {
  [RT_SCOPE_THREAD] = "thread",
  [RT_SCOPE_RUN] = "run",
  [RT_SCOPE_TOOL_CALL] = "tool_call",
};

static const char *const rt_thread_run_state_names[] = {
  [RT_RUN_STARTED] = "started",
  [RT_RUN_FINISHED] = "finished",
  [RT_RUN_FAILED] = "failed",
  [RT_RUN_SUPPRESSED] = "finish_suppressed",
};

const char *rt_exec_phase_name(int phase) { return RT_NAME_IN(rt_exec_phase_names, phase); }

const char *rt_exec_adapter_name(int adapter) {
  return RT_NAME_IN(rt_exec_adapter_names, adapter);
}

const char *rt_exec_turn_state_name(int state) {
  return RT_NAME_IN(rt_exec_turn_state_names, state);
}

const char *rt_thread_store_name(int store) { return RT_NAME_IN(rt_thread_store_names, store); }

const char *rt_thread_reason_name(int reason) {
  return RT_NAME_IN(rt_thread_reason_names, reason);
}

const char *rt_thread_scope_name(int scope) { return RT_NAME_IN(rt_thread_scope_names, scope); }

const char *rt_thread_run_state_name(int state) {
  return RT_NAME_IN(rt_thread_run_state_names, state);
}

/* ---- durable chat turns (seed 000 Layer 3; rt_chat.c) ------------------ */

static const char *const rt_chat_mode_names[] = {
  [RT_CM_USER] = "user",
  [RT_CM_CONTINUE] = "continue",
  [RT_CM_RETRY] = "retry",
  [RT_CM_SYNTHETIC] = "synthetic",
  [RT_CM_SKIPPED] = "skipped",
  [RT_CM_SAVE] = "save_messages",
};

static const char *const rt_chat_provider_names[] = {
  [RT_CHAT_INLINE] = "inline",
  [RT_CHAT_RETRIEVE] = "retrieve",
  [RT_CHAT_SYNTHETIC] = "synthetic_continue",
};

static const char *const rt_chat_bug_names[] = {
  [RT_CHAT_BUG_NONE] = "none",
  [RT_CHAT_BUG_RESEND_USER] = "resend_user",
  [RT_CHAT_BUG_REGENERATE] = "regenerate",
  [RT_CHAT_BUG_NEW_MESSAGE] = "new_message",
  [RT_CHAT_BUG_NO_RETRY] = "no_retry",
  [RT_CHAT_BUG_EARLY_ACK] = "early_ack",
};

static const char *const rt_chat_stream_status_names[] = {
  [RT_CS_STREAMING] = "streaming",
  [RT_CS_COMPLETED] = "completed",
  [RT_CS_ERROR] = "error",
};

static const char *const rt_chat_upstream_phase_names[] = {
  [RT_UP_START] = "start",
  [RT_UP_COMPLETED] = "completed",
  [RT_UP_SEVERED] = "severed",
  [RT_UP_RETRIEVED] = "retrieved",
};

const char *rt_chat_mode_name(int mode) { return RT_NAME_IN(rt_chat_mode_names, mode); }

const char *rt_chat_provider_name(int provider) {
  return RT_NAME_IN(rt_chat_provider_names, provider);
}

const char *rt_chat_bug_name(int bug) { return RT_NAME_IN(rt_chat_bug_names, bug); }

const char *rt_chat_stream_status_name(int status) {
  return RT_NAME_IN(rt_chat_stream_status_names, status);
}

const char *rt_chat_upstream_phase_name(int phase) {
  return RT_NAME_IN(rt_chat_upstream_phase_names, phase);
}

static const char *const rt_cb_outcome_names[] = {
  [RT_CB_RETURNED] = "returned",
  [RT_CB_THREW] = "threw",
  [RT_CB_TIMED_OUT] = "timed_out",
  [RT_CB_CUT] = "cut",
};

const char *rt_cb_outcome_name(int outcome) { return RT_NAME_IN(rt_cb_outcome_names, outcome); }

static const char *const rt_tr_attach_names[] = {
  [RT_TRA_STORED] = "stored",
  [RT_TRA_TAIL] = "tail",
  [RT_TRA_RECOVERY] = "recovery",
  [RT_TRA_GAVE_UP] = "gave_up",
  [RT_TRA_REUSED] = "reused",
};

const char *rt_tr_attach_name(int how) { return RT_NAME_IN(rt_tr_attach_names, how); }
