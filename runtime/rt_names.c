/*
** rt_names.c: stable names of the trace vocabulary (rt_events.h).
**
** Each table is indexed by its enum value through designated initializers,
** so a reordering of an enum cannot shift a name onto the wrong value. Any
** value outside a table, or a hole in it, reads as "?". These names appear
** in reports, JSON output and scenario files: never rename one.
*/
#include "runtime/rt_events.h"

#include <stddef.h>

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
