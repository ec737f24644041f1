/*
** rpt_decode.c: decoding trace records per kind, names and formats.
**
** The field table below follows the (a, b, c, s, s2) comments of
** runtime/rt_events.h one kind per row; keep them in step.
*/
#include "reports/rpt_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_events.h"

typedef struct rpt__fdesc {
  const char *key;   /* NULL: unused */
  rpt__ftype type;
} rpt__fdesc;

#define N_ {NULL, RPT_F_INT}
#define I_(k) {k, RPT_F_INT}
#define U_(k) {k, RPT_F_US}
#define T_(k) {k, RPT_F_AT}
#define B_(k) {k, RPT_F_BOOL}
#define S_(k) {k, RPT_F_STR}
#define E_(k, t) {k, t}

/* (a, b, c, s, s2) per kind. */
static const rpt__fdesc rpt_fields[RT_EV_KIND_COUNT][RPT__MAX_FIELDS] = {
  [RT_EV_ACTOR_WAKE] = {I_("incarnation"), E_("entry", RPT_F_ENTRY), N_, S_("class"), N_},
  [RT_EV_ACTOR_DEATH] = {E_("cause", RPT_F_DEATH), I_("incarnation"), N_, N_, N_},
  [RT_EV_GATE_ACQUIRE] = {I_("incarnation"), N_, N_, S_("purpose"), N_},
  [RT_EV_GATE_RELEASE] = {U_("held_us"), N_, N_, N_, N_},
  [RT_EV_GATE_TIMEOUT] = {U_("held_us"), U_("ceiling_us"), N_, S_("message"), N_},
  [RT_EV_STARTUP_BEGIN] = {E_("entry", RPT_F_ENTRY), N_, N_, N_, N_},
  [RT_EV_STARTUP_OK] = {U_("duration_us"), N_, N_, N_, N_},
  [RT_EV_STARTUP_FAIL] = {U_("duration_us"), N_, N_, S_("error"), N_},
  [RT_EV_REQUEST_ARRIVE] = {I_("request"), E_("entry", RPT_F_ENTRY), N_, N_, N_},
  [RT_EV_REQUEST_OK] = {I_("request"), U_("latency_us"), N_, N_, N_},
  [RT_EV_REQUEST_FAIL] = {I_("request"), U_("latency_us"), N_, S_("error"), N_},
  [RT_EV_RPC_SEND] = {I_("call"), E_("callee", RPT_F_ACTOR), N_, S_("method"), N_},
  [RT_EV_RPC_REPLY] = {I_("call"), B_("ok"), N_, N_, N_},
  [RT_EV_FIBER_START] = {I_("fiber"), I_("recovered_from"), I_("pc"), S_("name"), N_},
  [RT_EV_STASH] = {I_("fiber"), I_("value"), I_("txn"), N_, N_},
  [RT_EV_EFFECT] = {I_("fiber"), I_("pc"), I_("attempt"), S_("effect"), N_},
  [RT_EV_FIBER_DONE] = {I_("fiber"), B_("ok"), N_, S_("name"), N_},
  [RT_EV_RECOVERY_SCAN] = {E_("source", RPT_F_SOURCE), I_("rows"), N_, N_, N_},
  [RT_EV_RECOVERY_REENTRY] = {E_("source", RPT_F_SOURCE), N_, N_, N_, N_},
  [RT_EV_FIBER_RECOVERED] = {I_("fiber"), I_("snapshot"), E_("action", RPT_F_ACTION), S_("name"), N_},
  [RT_EV_FIBER_HOOK_THREW] = {I_("fiber"), I_("snapshot"), N_, S_("name"), N_},
  [RT_EV_KEEPALIVE] = {I_("refs"), I_("delta"), N_, N_, N_},
  [RT_EV_ALARM_SET] = {T_("at_us"), N_, N_, N_, N_},
  [RT_EV_ALARM_FIRE] = {T_("at_us"), I_("retry"), N_, N_, N_},
  [RT_EV_ALARM_DONE] = {B_("ok"), N_, N_, N_, N_},
  [RT_EV_ALARM_RETRY] = {T_("next_at_us"), I_("retry"), N_, N_, N_},
  [RT_EV_SCHEDULE_RUN] = {I_("schedule"), N_, N_, S_("callback"), N_},
  [RT_EV_WRITE] = {E_("op", RPT_F_WRITEOP), I_("key"), I_("txn"), N_, N_},
  [RT_EV_TXN_COMMIT] = {I_("txn"), I_("writes"), N_, N_, N_},
  [RT_EV_TXN_ROLLBACK] = {I_("txn"), I_("writes"), N_, S_("reason"), N_},
  [RT_EV_WAITUNTIL] = {I_("pending"), I_("delta"), N_, N_, N_},
  [RT_EV_TOOLRUN_INSERT] = {I_("run"), E_("child", RPT_F_ACTOR), N_, S_("agent_type"), N_},
  [RT_EV_TOOLRUN_STATUS] = {I_("run"), E_("status", RPT_F_TRSTATUS), E_("old_status", RPT_F_TRSTATUS), S_("reason"), N_},
  [RT_EV_TOOLRUN_SNAPSHOT] = {I_("run"), N_, N_, N_, N_},
  [RT_EV_TOOLRUN_RECOVERY] = {E_("phase", RPT_F_PHASE), I_("rows"), N_, N_, N_},
  [RT_EV_TOOLRUN_INSPECT] = {I_("run"), E_("outcome", RPT_F_OUTCOME), E_("child_status", RPT_F_TRSTATUS), N_, N_},
  [RT_EV_FAULT] = {I_("x"), I_("y"), N_, S_("fault"), S_("detail")},
  [RT_EV_STORAGE_FAIL] = {I_("txn"), I_("sqlite_code"), N_, N_, N_},
  [RT_EV_LEGACY_FIBER] = {I_("fiber"), I_("status"), I_("retries"), S_("method"), N_},
  /* checkpoint executor (seed 002) */
  [RT_EV_EXEC_TURN] = {I_("turn"), I_("state"), I_("adapter"), S_("reason"), N_},
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
  [RT_EV_THREAD_RUN] = {I_("thread"), I_("run"), I_("state"), S_("error"), N_},
  /* durable chat turns (seed 000 Layer 3) */
  [RT_EV_CHAT_TURN] = {I_("request"), I_("message"), I_("mode"), S_("answers"), N_},
  [RT_EV_CHAT_RESUME] = {I_("request"), I_("interrupted"), I_("schedule"), S_("callback"), N_},
  [RT_EV_CHAT_USER] = {I_("message"), I_("request"), I_("txn"), S_("text"), N_},
  [RT_EV_CHAT_ASSISTANT] = {I_("message"), I_("writer"), I_("txn"), S_("text"), S_("answers")},
  [RT_EV_CHAT_CHUNK] = {I_("stream"), I_("index"), I_("txn"), N_, N_},
  [RT_EV_CHAT_STREAM] = {I_("stream"), I_("status"), I_("request"), N_, N_},
  [RT_EV_CHAT_UPSTREAM] = {I_("response"), I_("phase"), I_("request"), S_("answers"), S_("provider")},
  [RT_EV_CHAT_RECOVERY] = {I_("fiber"), I_("request"), I_("partial_chunks"), S_("options"), S_("arm")},
};

static const rpt__fdesc rpt_unknown[RPT__MAX_FIELDS] = {
    I_("a"), I_("b"), I_("c"), S_("s"), S_("s2")};

int rpt__decode(const sim_trace *t, const sim_rec *r, rpt__fval *out) {
  const rpt__fdesc *d = r->kind < RT_EV_KIND_COUNT && r->kind != RT_EV_NONE
                            ? rpt_fields[r->kind]
                            : rpt_unknown;
  const int64_t ints[3] = {r->a, r->b, r->c};
  const uint32_t strs[2] = {r->s, r->s2};
  int n = 0;
  for (int i = 0; i < RPT__MAX_FIELDS; i++) {
    if (!d[i].key) continue;
    rpt__fval fv = {d[i].key, d[i].type, 0, ""};
    if (i < 3) {
      fv.v = ints[i];
      if (d[i].type == RPT_F_STR) fv.type = RPT_F_INT;
    } else {
      const char *s = t ? sim_trace_str(t, strs[i - 3]) : "";
      if (!*s) continue;
      fv.type = RPT_F_STR;
      fv.str = s;
    }
    out[n++] = fv;
  }
  return n;
}

static const char *rpt_small_name(int64_t v, const char *const *names,
                                  int64_t lo, int64_t hi) {
  if (v < lo || v > hi) return NULL;
  return names[v - lo];
}

static const char *rpt_known(const char *s) {
  return (s && strcmp(s, "?") != 0) ? s : NULL;
}

const char *rpt__enum_name(rpt__ftype type, int64_t v) {
  static const char *const sources[] = {"startup", "alarm"};
  static const char *const outcomes[] = {"inspected", "timed_out", "failed"};
  static const char *const phases[] = {"end", "begin"};
  int iv = (v < -1000000 || v > 1000000) ? -1000001 : (int)v;
  switch (type) {
  case RPT_F_DEATH: return rpt_known(rt_death_name(iv));
  case RPT_F_ENTRY: return rpt_known(rt_entry_name(iv));
  case RPT_F_ACTION: return rpt_known(rt_action_name(iv));
  case RPT_F_TRSTATUS: return rpt_known(rt_toolrun_status_name(iv));
  case RPT_F_WRITEOP: return rpt_known(rt_write_op_name(iv));
  case RPT_F_SOURCE: return rpt_small_name(v, sources, 1, 2);
  case RPT_F_OUTCOME: return rpt_small_name(v, outcomes, 1, 3);
  case RPT_F_PHASE: return rpt_small_name(v, phases, 0, 1);
  default: return NULL;
  }
}

const char *rpt__kind_name(uint32_t kind, char *buf) {
  const char *s = rpt_known(rt_event_name(kind));
  if (s) return s;
  snprintf(buf, 24, "kind_%" PRIu32, kind);
  return buf;
}

const char *rpt__actor(const rpt_run *r, uint32_t a, char *buf) {
  if (a == RT_NO_ACTOR) return "-";
  if (r && r->actor_names && a < r->n_actors && r->actor_names[a] &&
      r->actor_names[a][0])
    return r->actor_names[a];
  snprintf(buf, 24, "#%" PRIu32, a);
  return buf;
}

const char *rpt__inv_name(chk_invariant inv) {
  const char *s = chk_invariant_name(inv);
  return s ? s : "?";
}

const sim_rec *rpt__rec(const sim_trace *t, uint64_t idx) {
  if (!t || !t->keep || !t->recs || idx >= t->n) return NULL;
  return &t->recs[idx];
}

char *rpt__fmt_s(char *buf, size_t len, int64_t us) {
  uint64_t m = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
  snprintf(buf, len, "%s%" PRIu64 ".%03" PRIu64 "s", us < 0 ? "-" : "",
           m / 1000000, m / 1000 % 1000);
  return buf;
}

char *rpt__fmt_dur(char *buf, size_t len, int64_t us) {
  const char *sg = us < 0 ? "-" : "";
  uint64_t m = us < 0 ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
  uint64_t s = m / 1000000;
  if (s >= 86400)
    snprintf(buf, len, "%s%" PRIu64 "d%" PRIu64 "h", sg, s / 86400, s % 86400 / 3600);
  else if (s >= 3600)
    snprintf(buf, len, "%s%" PRIu64 "h%" PRIu64 "m", sg, s / 3600, s % 3600 / 60);
  else if (s >= 60)
    snprintf(buf, len, "%s%" PRIu64 "m%" PRIu64 "s", sg, s / 60, s % 60);
  else if (s >= 1) {
    char frac[8];
    snprintf(frac, sizeof frac, ".%03" PRIu64, m / 1000 % 1000);
    for (int i = 3; i > 0 && frac[i] == '0'; i--) frac[i] = 0;
    if (frac[1] == 0) frac[0] = 0;
    snprintf(buf, len, "%s%" PRIu64 "%ss", sg, s, frac);
  } else if (m >= 1000)
    snprintf(buf, len, "%s%" PRIu64 "ms", sg, m / 1000);
  else
    snprintf(buf, len, "%s%" PRIu64 "us", sg, m);
  return buf;
}

int rpt__utf8_len(const unsigned char *p) {
  unsigned c = p[0];
  int n;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000;
  else return 0;
  unsigned cp = c & (0x7f >> n);
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void rpt__json_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    int n = rpt__utf8_len(p);
    if (n == 0) {
      fputc('?', f);
      p++;
    } else if (*p == '"' || *p == '\\') {
      fputc('\\', f);
      fputc(*p++, f);
    } else if (*p < 0x20) {
      fprintf(f, "\\u%04x", *p++);
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
  fputc('"', f);
}

#define RPT_JSON_EXACT 1000000000000000LL /* 10^15 */

cJSON *rpt__json_int(int64_t v) {
  if (v > -RPT_JSON_EXACT && v < RPT_JSON_EXACT) return cJSON_CreateNumber((double)v);
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  return cJSON_CreateString(buf);
}

cJSON *rpt__json_u64(uint64_t v) {
  if (v < (uint64_t)RPT_JSON_EXACT) return cJSON_CreateNumber((double)v);
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return cJSON_CreateString(buf);
}

char *rpt__hex(char *buf, size_t len, uint64_t v, int pad) {
  snprintf(buf, len, pad ? "0x%016" PRIx64 : "0x%" PRIx64, v);
  return buf;
}

static cJSON *rpt_field_item(const rpt_run *run, const rpt__fval *fv) {
  char abuf[24];
  const char *name;
  switch (fv->type) {
  case RPT_F_STR: return cJSON_CreateString(fv->str);
  case RPT_F_BOOL: return cJSON_CreateBool(fv->v != 0);
  case RPT_F_ACTOR:
    if (fv->v < 0 || fv->v >= (int64_t)RT_NO_ACTOR) return cJSON_CreateNull();
    return cJSON_CreateString(rpt__actor(run, (uint32_t)fv->v, abuf));
  case RPT_F_INT: case RPT_F_US: case RPT_F_AT: return rpt__json_int(fv->v);
  default:
    name = rpt__enum_name(fv->type, fv->v);
    return name ? cJSON_CreateString(name) : rpt__json_int(fv->v);
  }
}

int rpt__json_fields(cJSON *o, const rpt_run *run, const sim_rec *r) {
  rpt__fval fv[RPT__MAX_FIELDS];
  int n = rpt__decode(run ? run->trace : NULL, r, fv);
  for (int i = 0; i < n; i++) {
    cJSON *it = rpt_field_item(run, &fv[i]);
    if (!it) return -1;
    if (!cJSON_AddItemToObject(o, fv[i].key, it)) {
      cJSON_Delete(it);
      return -1;
    }
  }
  return 0;
}
