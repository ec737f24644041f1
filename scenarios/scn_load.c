/*
** scn_load.c: reads and validates a scenario file into an scn_scenario.
**
** The text is parsed by scn_json (JSON with comments, positions for every
** node); this file checks every field and fills the scenario that the
** runner assembles a world from. The format is documented field by field in
** docs/scenarios.md. Every mistake becomes one "file:line:col: message" at
** the offending node (at the key for unknown fields, at the enclosing
** object for missing ones). Work goes in this order: header fields, the
** runtime variant, check parameters, actor ids (so that anything may name
** any actor), programs (repeat blocks expanded inline), the rest of each
** actor, the child graph (no cycles), workload, faults, then the cases and
** their expectations (those last three in scn_load_work.c). Nothing here
** keeps global state.
*/
#include "runtime/rt_cron.h"
#include "scenarios/scn_internal.h"
#include "scenarios/scn_load_internal.h"

#include <sys/stat.h>

/* ---- small helpers ------------------------------------------------------ */

const cJSON *ld_get(const cJSON *obj, const char *key) {
  return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}


/* Copies s into dst for use inside quotes in a message: escaped and cut. */
const char *ld_quote(char *dst, size_t cap, const char *s) {
  size_t o = 0;
  for (; *s && o + 11 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      dst[o++] = '\\';
      dst[o++] = (char)c;
    } else if (c < 0x20 || c == 0x7f) {
      o += (size_t)snprintf(dst + o, cap - o, "\\u%04x", c);
    } else {
      dst[o++] = (char)c;
    }
  }
  if (*s) {
    memcpy(dst + o, "...", 3);
    o += 3;
  }
  dst[o] = '\0';
  return dst;
}

void ld_list_add(list *l, const char *name) {
  size_t len = strlen(name), sep = l->n ? 2 : 0;
  if (l->cut) return;
  if (l->n + sep + len + 6 > sizeof l->s) {
    snprintf(l->s + l->n, sizeof l->s - l->n, "%s...", sep ? ", " : "");
    l->cut = 1;
    return;
  }
  snprintf(l->s + l->n, sizeof l->s - l->n, "%s%s", sep ? ", " : "", name);
  l->n += sep + len;
}

/* The shortest exact spelling of a duration: "365d", "90s", "1500us". */
static const char *fmt_dur(char *dst, size_t cap, int64_t us) {
  static const struct { const char *u; int64_t v; } units[] = {
      {"d", DAY_US}, {"h", 3600 * US_PER_S}, {"m", 60 * US_PER_S},
      {"s", US_PER_S}, {"ms", 1000}, {"us", 1}};
  size_t k;
  if (us == 0) {
    snprintf(dst, cap, "0s");
    return dst;
  }
  for (k = 0; us % units[k].v != 0; k++)
    ;
  snprintf(dst, cap, "%" PRId64 "%s", us / units[k].v, units[k].u);
  return dst;
}

/* Formats a message at the key of object member m; returns -1. */
int ld_key_errf(ld *L, const cJSON *m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

int ld_key_errf(ld *L, const cJSON *m, const char *fmt, ...) {
  scn_pos p = scn_doc_key_pos(L->d, m);
  size_t cap = sizeof L->err->text;
  va_list ap;
  int n;
  if (p.line <= 0) p = scn_doc_pos(L->d, m);
  if (p.line > 0)
    n = snprintf(L->err->text, cap, "%s:%d:%d: ", scn_doc_file(L->d), p.line, p.col);
  else
    n = snprintf(L->err->text, cap, "%s: ", scn_doc_file(L->d));
  if (n < 0) n = 0;
  if ((size_t)n >= cap) n = (int)cap - 1;
  va_start(ap, fmt);
  vsnprintf(L->err->text + n, cap - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* -1 with "missing required field" at obj when key is absent, else 0. */
int ld_need(ld *L, const cJSON *obj, const char *key) {
  if (ld_get(obj, key)) return 0;
  return scn_errf(L->err, L->d, obj, "missing required field \"%s\"", key);
}

/* Checks that node is an object (named `what`) holding only `fields`. */
int ld_obj_fields(ld *L, const cJSON *node, const char *what,
                      const char *const *fields) {
  if (scn_expect_type(L->d, node, cJSON_Object, what, L->err) < 0) return -1;
  return scn_check_fields(L->d, node, fields, L->err);
}

/* Checks that node is an array (named `what`) of min..max elements. */
int ld_arr_len(ld *L, const cJSON *node, const char *what, int min, int max,
                   const char *noun) {
  int n;
  if (scn_expect_type(L->d, node, cJSON_Array, what, L->err) < 0) return -1;
  n = cJSON_GetArraySize(node);
  if (n >= min && n <= max) return 0;
  return scn_errf(L->err, L->d, node, "\"%s\": expected %d to %d %s, found %d",
                  what, min, max, noun, n);
}

/* Reads string key into dst (cap bytes); 1 if absent, -1 on error. */
int ld_get_text(ld *L, const cJSON *obj, const char *key, char *dst,
                    size_t cap, int allow_empty) {
  const char *s;
  size_t n;
  int rc = scn_get_string(L->d, obj, key, &s, L->err);
  if (rc != 0) return rc;
  n = strlen(s);
  if (n == 0 && !allow_empty)
    return scn_errf(L->err, L->d, ld_get(obj, key), "\"%s\": must not be empty", key);
  if (n >= cap)
    return scn_errf(L->err, L->d, ld_get(obj, key),
                    "\"%s\": too long (%zu bytes; at most %zu)", key, n, cap - 1);
  memcpy(dst, s, n + 1);
  return 0;
}

/* "unknown value" for a string s at node with the allowed values l. */
int ld_bad_value(ld *L, const cJSON *node, const char *key, const char *s,
                     const list *l) {
  char q[96];
  return scn_errf(L->err, L->d, node, "\"%s\": unknown value \"%s\"; expected one of: %s",
                  key, ld_quote(q, sizeof q, s), l->s);
}

/* Reads an enumerated string into *out; 1 if absent, -1 on error. */
int ld_get_enum(ld *L, const cJSON *obj, const char *key, const opt *opts,
                    int *out) {
  const char *s;
  list l = {{0}, 0, 0};
  int rc = scn_get_string(L->d, obj, key, &s, L->err), k;
  if (rc != 0) return rc;
  for (k = 0; opts[k].name; k++) {
    if (strcmp(s, opts[k].name) == 0) {
      *out = opts[k].value;
      return 0;
    }
  }
  for (k = 0; opts[k].name; k++) ld_list_add(&l, opts[k].name);
  return ld_bad_value(L, ld_get(obj, key), key, s, &l);
}

/* Checks a duration v read at node (label) against [min_us, 365d]. */
static int dur_range(ld *L, const cJSON *node, const char *label, int64_t v,
                     int64_t min_us) {
  char q[96], m[32];
  const char *s = cJSON_IsString(node) ? node->valuestring : "";
  if (v < min_us && min_us == 1)
    return scn_errf(L->err, L->d, node, "\"%s\": \"%s\" is too short (must be more than 0s)",
                    label, ld_quote(q, sizeof q, s));
  if (v < min_us)
    return scn_errf(L->err, L->d, node, "\"%s\": \"%s\" is too short (must be at least %s)",
                    label, ld_quote(q, sizeof q, s), fmt_dur(m, sizeof m, min_us));
  if (v > MAX_DUR_US)
    return scn_errf(L->err, L->d, node, "\"%s\": \"%s\" is too long (must be at most 365d)",
                    label, ld_quote(q, sizeof q, s));
  return 0;
}

/* Reads a duration >= min_us (and <= 365d); 1 if absent, -1 on error. */
int ld_get_dur(ld *L, const cJSON *obj, const char *key, int64_t min_us,
                   int64_t *out) {
  int64_t v;
  int rc = scn_get_duration(L->d, obj, key, &v, L->err);
  if (rc != 0) return rc;
  if (dur_range(L, ld_get(obj, key), key, v, min_us) < 0) return -1;
  *out = v;
  return 0;
}

/* Reads an array element that must be a duration >= min_us. */
static int node_dur(ld *L, const cJSON *node, const char *label, int64_t min_us,
                    int64_t *out) {
  char q[96];
  if (!cJSON_IsString(node))
    return scn_errf(L->err, L->d, node,
                    "\"%s\": expected a duration string such as \"150ms\", \"30s\", "
                    "\"2.5m\", \"7d\", found %s", label, scn_type_name(node));
  if (scn_parse_duration(node->valuestring, out) < 0)
    return scn_errf(L->err, L->d, node,
                    "\"%s\": invalid duration \"%s\"; expected a number and a unit (us, ms, "
                    "s, m, h, d) such as \"150ms\", \"30s\", \"2.5m\", \"7d\"",
                    label, ld_quote(q, sizeof q, node->valuestring));
  return dur_range(L, node, label, *out, min_us);
}

/* Reads a range [lo, hi] of two duration strings at node (lo <= hi). */
static int dur_pair(ld *L, const cJSON *node, const char *key, const char *example,
                    int64_t min_us, int64_t *lo, int64_t *hi) {
  char l0[48], l1[48], q0[96], q1[96];
  if (!cJSON_IsArray(node) || cJSON_GetArraySize(node) != 2)
    return scn_errf(L->err, L->d, node, "\"%s\": expected a range of two durations such as %s",
                    key, example);
  snprintf(l0, sizeof l0, "%.30s[0]", key);
  snprintf(l1, sizeof l1, "%.30s[1]", key);
  if (node_dur(L, node->child, l0, min_us, lo) < 0 ||
      node_dur(L, node->child->next, l1, min_us, hi) < 0)
    return -1;
  if (*lo > *hi)
    return scn_errf(L->err, L->d, node->child->next,
                    "\"%s\": the range is reversed (\"%s\" is more than \"%s\")", key,
                    ld_quote(q0, sizeof q0, node->child->valuestring),
                    ld_quote(q1, sizeof q1, node->child->next->valuestring));
  return 0;
}

/* Reads a time of the run (>= min_us, at most the duration); 1 if absent. */
int ld_get_time(ld *L, const cJSON *obj, const char *key, int64_t min_us,
                    int64_t *out) {
  char q[96], qd[96];
  int64_t v;
  int rc = ld_get_dur(L, obj, key, min_us, &v);
  if (rc != 0) return rc;
  if (v > L->sc->duration_us)
    return scn_errf(L->err, L->d, ld_get(obj, key),
                    "\"%s\": \"%s\" is after the end of the run (\"duration\": \"%s\")", key,
                    ld_quote(q, sizeof q, ld_get(obj, key)->valuestring),
                    ld_quote(qd, sizeof qd, L->duration_text));
  *out = v;
  return 0;
}

/* ---- references ------------------------------------------------------- */

/* Resolves the actor id held by string node s; *out = its index. */
static int find_actor(ld *L, const cJSON *node, uint32_t *out) {
  const scn_scenario *sc = L->sc;
  list l = {{0}, 0, 0};
  char q[96];
  uint32_t i;
  for (i = 0; i < sc->n_actors; i++) {
    if (strcmp(sc->actors[i].id, node->valuestring) == 0) {
      *out = i;
      return 0;
    }
  }
  for (i = 0; i < sc->n_actors; i++) ld_list_add(&l, sc->actors[i].id);
  return scn_errf(L->err, L->d, node, "unknown actor \"%s\"; declared actors: %s",
                  ld_quote(q, sizeof q, node->valuestring), l.s);
}

/* Reads member key of obj as an actor reference; 1 if absent. */
int ld_get_actor(ld *L, const cJSON *obj, const char *key, uint32_t *out) {
  const char *s;
  int rc = scn_get_string(L->d, obj, key, &s, L->err);
  if (rc != 0) return rc;
  return find_actor(L, ld_get(obj, key), out);
}

/* Reads member key of obj as a program reference; 1 if absent. */
int ld_get_program(ld *L, const cJSON *obj, const char *key, int *out) {
  const scn_scenario *sc = L->sc;
  list l = {{0}, 0, 0};
  const char *s;
  char q[96];
  int rc = scn_get_string(L->d, obj, key, &s, L->err), i;
  if (rc != 0) return rc;
  for (i = 0; i < sc->n_programs; i++) {
    if (strcmp(sc->programs[i].name, s) == 0) {
      *out = i;
      return 0;
    }
  }
  if (sc->n_programs == 0)
    return scn_errf(L->err, L->d, ld_get(obj, key),
                    "unknown program \"%s\"; no programs are declared "
                    "(add them under \"programs\")",
                    ld_quote(q, sizeof q, s));
  for (i = 0; i < sc->n_programs; i++) ld_list_add(&l, sc->programs[i].name);
  return scn_errf(L->err, L->d, ld_get(obj, key), "unknown program \"%s\"; declared programs: %s",
                  ld_quote(q, sizeof q, s), l.s);
}

/* ---- header, runtime, checks ------------------------------------------ */

static const char *const top_fields[] = {
    "name", "description", "seed", "duration", "strategy", "pct_depth", "profile",
    "runtime", "programs", "actors", "workload", "faults", "checks", "expect", "cases",
    "invariants", "scripts", "modules", "swarm", NULL};

/* "strategy" through sim_strategy_parse; default fifo. */
static int load_strategy(ld *L) {
  const char *s;
  list l = {{0}, 0, 0};
  int rc = scn_get_string(L->d, L->root, "strategy", &s, L->err), st, k;
  L->sc->strategy = SIM_FIFO;
  if (rc != 0) return rc < 0 ? -1 : 0;
  st = sim_strategy_parse(s);
  if (st >= 0) {
    L->sc->strategy = (sim_strategy)st;
    return 0;
  }
  for (k = SIM_FIFO; k <= SIM_PCT; k++) ld_list_add(&l, sim_strategy_name((sim_strategy)k));
  return ld_bad_value(L, ld_get(L->root, "strategy"), "strategy", s, &l);
}

static int load_header(ld *L) {
  scn_scenario *sc = L->sc;
  const cJSON *r = L->root;
  int64_t depth = 3;
  if (ld_need(L, r, "name") < 0 || ld_get_text(L, r, "name", sc->name, sizeof sc->name, 0) < 0)
    return -1;
  if (ld_get_text(L, r, "description", sc->description, sizeof sc->description, 1) < 0) return -1;
  sc->seed = 1;
  if (scn_get_seed(L->d, r, "seed", &sc->seed, L->err) < 0) return -1;
  if (ld_need(L, r, "duration") < 0 || ld_get_dur(L, r, "duration", 1, &sc->duration_us) < 0)
    return -1;
  L->duration_text = ld_get(r, "duration")->valuestring;
  if (load_strategy(L) < 0) return -1;
  if (scn_get_int(L->d, r, "pct_depth", 1, SIM_PCT_MAX_CHANGES + 1, &depth, L->err) < 0)
    return -1;
  sc->pct_depth = (int)depth;
  return 0;
}

static const char *const runtime_fields[] = {
    "heartbeat", "dispose", "toolrun_recovery", "commit", "commit_window",
    "gate_ceiling", "keepalive_interval", "heartbeat_schedule_interval",
    "idle_eviction", "alarm_retry_base", "alarm_retry_max", "rpc_latency",
    "inspect_timeout", "inspect_total_timeout", "alarm_limit", "hook_timeout",
    "workerd_name_bug", "executor_adapter", "thread_store", "chat_provider", "chat_recovery",
    "chat_bug", "toolrun_ids", "reattach_budget", "fiber_retain", "fiber_max_age",
    "schedule_every_key", "hung_schedule_timeout", "schedule_attempts", "schedule_retry_base",
    "schedule_retry_max_delay", "hook_run_fiber", "commit_fail_reset", NULL};
static const opt every_key_opts[] = {{"sdk", RT_EVERY_KEY_SDK}, {"callback", RT_EVERY_KEY_CALLBACK},
                                     {NULL, 0}};
static const opt hook_run_opts[] = {{"in_hook", RT_HOOK_RUN_IN_HOOK},
                                    {"after_startup", RT_HOOK_RUN_AFTER_STARTUP}, {NULL, 0}};
static const opt fail_reset_opts[] = {{"after_turn", RT_FAIL_RESET_AFTER_TURN},
                                      {"sync", RT_FAIL_RESET_SYNC}, {NULL, 0}};
static const opt retain_opts[] = {{"sdk1604", RT_RETAIN_NONE}, {"sdk1729", RT_RETAIN_1729},
                                  {NULL, 0}};

static const opt hb_opts[] = {{"alarm", RT_HB_ALARM}, {"schedule", RT_HB_SCHEDULE}, {NULL, 0}};
static const opt dispose_opts[] = {
    {"sdk1604", RT_DISPOSE_SDK1604}, {"fixed", RT_DISPOSE_FIXED}, {"sdk1707", RT_DISPOSE_SDK1707},
    {NULL, 0}};
static const opt toolrun_opts[] = {
    {"deferred", RT_TOOLRUN_DEFERRED}, {"gated", RT_TOOLRUN_GATED},
    {"unsnapshotted", RT_TOOLRUN_UNSNAPSHOTTED}, {NULL, 0}};
static const opt ids_opts[] = {
    {"fresh", RT_TR_IDS_FRESH}, {"stable", RT_TR_IDS_STABLE}, {NULL, 0}};
static const opt commit_opts[] = {
    {"turn", RT_COMMIT_TURN}, {"immediate", RT_COMMIT_IMMEDIATE}, {NULL, 0}};

/* Executor adapter (seed 002) and thread store (seed 004) variants. */
const opt ld_adapter_opts[] = {
    {"sqlite", RT_EXEC_SQLITE}, {"memory", RT_EXEC_MEMORY}, {"broken", RT_EXEC_BROKEN}, {NULL, 0}};
const opt ld_store_opts[] = {{"versioned", RT_THREAD_VERSIONED},
                                 {"broken", RT_THREAD_BROKEN}, {"leaky", RT_THREAD_LEAKY}, {NULL, 0}};

static int runtime_models(ld *L, const cJSON *o, rt_config *c) {
  int v = (int)c->exec_adapter;
  if (ld_get_enum(L, o, "executor_adapter", ld_adapter_opts, &v) < 0) return -1;
  c->exec_adapter = (rt_exec_adapter)v;
  v = (int)c->thread_store;
  if (ld_get_enum(L, o, "thread_store", ld_store_opts, &v) < 0) return -1;
  c->thread_store = (rt_thread_store)v;
  return 0;
}

/* Chat recovery (seed 000 Layer 3): the provider strategy and the options
** onChatRecovery returns, as actor fields ("provider", "chat_recovery") or
** runtime defaults ("chat_provider", "chat_recovery"); and the broken
** variants ("chat_bug"). */
static const char *const chat_rec_fields[] = {"persist", "continue", NULL};
static const opt provider_opts[] = {{"inline", RT_CHAT_INLINE}, {"retrieve", RT_CHAT_RETRIEVE},
                                    {"synthetic_continue", RT_CHAT_SYNTHETIC}, {NULL, 0}};
static const opt chat_bug_opts[] = {
    {"none", RT_CHAT_BUG_NONE}, {"resend_user", RT_CHAT_BUG_RESEND_USER},
    {"regenerate", RT_CHAT_BUG_REGENERATE}, {"new_message", RT_CHAT_BUG_NEW_MESSAGE},
    {"no_retry", RT_CHAT_BUG_NO_RETRY}, {"early_ack", RT_CHAT_BUG_EARLY_ACK}, {NULL, 0}};

static int chat_policy(ld *L, const cJSON *o, const char *pkey, rt_chat_policy *p) {
  const cJSON *rec = ld_get(o, "chat_recovery");
  int v = (int)p->provider, persist = !p->no_persist, cont = !p->no_continue;
  int rc = ld_get_enum(L, o, pkey, provider_opts, &v);
  if (rc < 0) return -1;
  p->set |= rc == 0 || rec != NULL;
  p->provider = (rt_chat_provider)v;
  if (!rec) return 0;
  if (cJSON_IsFalse(rec)) { /* chatRecovery = false: turns are not fibers (issue #15) */
    p->off = 1;
    return 0;
  }
  if (cJSON_IsTrue(rec))
    return scn_errf(L->err, L->d, rec,
                    "expected an object or false for \"chat_recovery\", found true (recovery is "
                    "on by default: give {} or leave it out)");
  if (ld_obj_fields(L, rec, "chat_recovery", chat_rec_fields) < 0 ||
      scn_get_bool(L->d, rec, "persist", &persist, L->err) < 0 ||
      scn_get_bool(L->d, rec, "continue", &cont, L->err) < 0)
    return -1;
  p->no_persist = !persist;
  p->no_continue = !cont;
  return 0;
}

static int runtime_chat(ld *L, const cJSON *o, rt_config *c) {
  int v = (int)c->chat_bug;
  if (chat_policy(L, o, "chat_provider", &c->chat) < 0) return -1;
  if (ld_get_enum(L, o, "chat_bug", chat_bug_opts, &v) < 0) return -1;
  c->chat_bug = (rt_chat_bug)v;
  return 0;
}

/* The enumerated and boolean runtime choices. */
static int runtime_enums(ld *L, const cJSON *o, rt_config *c) {
  int v;
  v = (int)c->heartbeat;
  if (ld_get_enum(L, o, "heartbeat", hb_opts, &v) < 0) return -1;
  c->heartbeat = (rt_heartbeat)v;
  v = (int)c->dispose;
  if (ld_get_enum(L, o, "dispose", dispose_opts, &v) < 0) return -1;
  c->dispose = (rt_dispose)v;
  v = (int)c->toolrun;
  if (ld_get_enum(L, o, "toolrun_recovery", toolrun_opts, &v) < 0) return -1;
  c->toolrun = (rt_toolrun_mode)v;
  v = (int)c->toolrun_ids; /* issue #15: #1630 (fresh) or #1640 (stable) */
  if (ld_get_enum(L, o, "toolrun_ids", ids_opts, &v) < 0) return -1;
  c->toolrun_ids = (rt_toolrun_ids)v;
  v = (int)c->commit;
  if (ld_get_enum(L, o, "commit", commit_opts, &v) < 0) return -1;
  c->commit = (rt_commit)v;
  v = (int)c->retain;
  if (ld_get_enum(L, o, "fiber_retain", retain_opts, &v) < 0) return -1;
  c->retain = (rt_retain)v;
  v = (int)c->every_key; /* issue #14: the scheduleEvery dedup key */
  if (ld_get_enum(L, o, "schedule_every_key", every_key_opts, &v) < 0) return -1;
  c->every_key = (rt_every_key)v;
  v = (int)c->hook_run; /* regression variants: the bugs back (docs/scenarios.md) */
  if (ld_get_enum(L, o, "hook_run_fiber", hook_run_opts, &v) < 0) return -1;
  c->hook_run = (rt_hook_run)v;
  v = (int)c->fail_reset;
  if (ld_get_enum(L, o, "commit_fail_reset", fail_reset_opts, &v) < 0) return -1;
  c->fail_reset = (rt_fail_reset)v;
  if (scn_get_bool(L->d, o, "workerd_name_bug", &c->workerd_name_bug, L->err) < 0) return -1;
  return runtime_models(L, o, c); /* executor (seed 002), thread store (seed 004) */
}

/* Duration fields of rt_config: key, offset, smallest value allowed. */
static const struct {
  const char *key;
  size_t off;
  int64_t min;
} rt_durs[] = {
    {"commit_window", offsetof(rt_config, commit_window_us), 0},
    {"gate_ceiling", offsetof(rt_config, gate_ceiling_us), 1},
    {"keepalive_interval", offsetof(rt_config, keepalive_interval_us), 1},
    {"heartbeat_schedule_interval", offsetof(rt_config, heartbeat_schedule_us), 1},
    {"alarm_retry_base", offsetof(rt_config, alarm_retry_base_us), 1},
    {"rpc_latency", offsetof(rt_config, rpc_latency_us), 0},
    {"inspect_timeout", offsetof(rt_config, inspect_timeout_us), 1},
    {"inspect_total_timeout", offsetof(rt_config, inspect_total_us), 0},
    {"alarm_limit", offsetof(rt_config, alarm_limit_us), 1},
    {"hook_timeout", offsetof(rt_config, hook_timeout_us), 0},
    {"reattach_budget", offsetof(rt_config, reattach_budget_us), 1}, /* #1640 */
    {"fiber_max_age", offsetof(rt_config, fiber_max_age_us), 0},
    {"hung_schedule_timeout", offsetof(rt_config, hung_schedule_us), 1000000}, /* issue #14 */
    {"schedule_retry_base", offsetof(rt_config, schedule_retry_base_us), 1000},
    {"schedule_retry_max_delay", offsetof(rt_config, schedule_retry_max_us), 1000},
};

/* Overrides *c with the fields of the runtime object o. */
int ld_load_runtime(ld *L, const cJSON *o, rt_config *c) {
  const cJSON *idle;
  int64_t v;
  size_t k;
  if (ld_obj_fields(L, o, "runtime", runtime_fields) < 0 || runtime_enums(L, o, c) < 0) return -1;
  if (runtime_chat(L, o, c) < 0) return -1; /* chat turns (seed 000 Layer 3) */
  for (k = 0; k < sizeof rt_durs / sizeof rt_durs[0]; k++) {
    int64_t *p = (int64_t *)(void *)((char *)c + rt_durs[k].off);
    if (ld_get_dur(L, o, rt_durs[k].key, rt_durs[k].min, p) < 0) return -1;
  }
  idle = ld_get(o, "idle_eviction");
  if (idle && dur_pair(L, idle, "idle_eviction", "[\"70s\", \"140s\"]", 1,
                       &c->idle_min_us, &c->idle_max_us) < 0)
    return -1;
  v = c->alarm_retry_max;
  if (scn_get_int(L->d, o, "alarm_retry_max", 0, 20, &v, L->err) < 0) return -1;
  c->alarm_retry_max = (int)v;
  v = c->schedule_attempts;
  if (scn_get_int(L->d, o, "schedule_attempts", 1, 100, &v, L->err) < 0) return -1;
  c->schedule_attempts = (int)v;
  if (c->schedule_retry_base_us > c->schedule_retry_max_us)
    return scn_errf(L->err, L->d, ld_get(o, "schedule_retry_base"),
                    "\"schedule_retry_base\" must be at most \"schedule_retry_max_delay\" (the "
                    "SDK: retry.baseDelayMs must be <= retry.maxDelayMs)");
  return 0;
}

static const opt profile_opts[] = {{"cloudflare", 0}, {NULL, 0}};

/* "profile" (the defaults) and the top-level "runtime" overrides. */
static int load_base(ld *L) {
  const cJSON *o = ld_get(L->root, "runtime");
  int profile = 0, rc = ld_get_enum(L, L->root, "profile", profile_opts, &profile);
  if (rc < 0) return -1;
  L->cloudflare = rc == 0;
  rt_config_default(&L->base);
  return o ? ld_load_runtime(L, o, &L->base) : 0;
}

static const char *const check_fields[] = {
    "wedge_k", "serve_bound", "recovery_bound", "keepalive_idle", NULL};

static int load_checks(ld *L) {
  chk_params *p = &L->sc->params;
  const cJSON *o = ld_get(L->root, "checks");
  int64_t k = 3;
  chk_params_default(p);
  if (!o) return 0;
  if (ld_obj_fields(L, o, "checks", check_fields) < 0) return -1;
  k = p->wedge_k;
  if (scn_get_int(L->d, o, "wedge_k", 1, 100, &k, L->err) < 0) return -1;
  p->wedge_k = (int)k;
  if (ld_get_dur(L, o, "serve_bound", 1, &p->serve_bound_us) < 0 ||
      ld_get_dur(L, o, "recovery_bound", 1, &p->recovery_bound_us) < 0 ||
      ld_get_dur(L, o, "keepalive_idle", 1, &p->keepalive_idle_us) < 0)
    return -1;
  return 0;
}

/* ---- actors, first pass: ids ------------------------------------------ */

static const char *const actor_fields[] = {
    "id", "class", "children", "on_start", "on_start_throws", "serve", "inspect_time",
    "stuck", "stuck_delay", "recovery", "stale", "provider", "chat_recovery",
    "on_start_tool_run", "on_alarm_keep_alive", "on_agent_tool_finish", "tool_result",
    "tool_error", "max_concurrent_agent_tools", "tool_chunks", "script", NULL};

static const opt tool_result_opts[] = {{"completed", 0}, {"error", RT_TR_ERROR},
                                       {"aborted", RT_TR_ABORTED}, {NULL, 0}};

/* The sub-agent side of tool runs (issue #15): how the actor's runs end as
** a child, their error message, and its cap as a parent. */
static int actor_tools(ld *L, const cJSON *a, rt_actor_spec *sp) {
  int64_t cap = 0;
  if (ld_get_enum(L, a, "tool_result", tool_result_opts, &sp->tool_result) < 0 ||
      ld_get_text(L, a, "tool_error", sp->tool_error, sizeof sp->tool_error, 0) < 0 ||
      scn_get_int(L->d, a, "max_concurrent_agent_tools", 1, 64, &cap, L->err) < 0)
    return -1;
  int64_t chunks = 0;
  if (scn_get_int(L->d, a, "tool_chunks", 0, 1000, &chunks, L->err) < 0) return -1;
  sp->tool_chunks = (int)chunks;
  if (ld_get(a, "tool_error") && sp->tool_result != RT_TR_ERROR)
    return scn_errf(L->err, L->d, ld_get(a, "tool_error"),
                    "\"tool_error\": only used with \"tool_result\": \"error\"");
  sp->max_tools = (int)cap;
  return 0;
}

static const opt finish_opts[] = {{"returns", 0}, {"throws", 1}, {"aborts_others", 2},
                                   {NULL, 0}};

static int actor_id(ld *L, const cJSON *a, uint32_t i) {
  scn_scenario *sc = L->sc;
  rt_actor_spec *sp = &sc->actors[i];
  char q[96];
  uint32_t j;
  if (ld_need(L, a, "id") < 0 || ld_get_text(L, a, "id", sp->id, sizeof sp->id, 0) < 0) return -1;
  for (j = 0; j < i; j++) {
    if (strcmp(sc->actors[j].id, sp->id) == 0) {
      scn_pos p = scn_doc_pos(L->d, ld_get(L->actor_nodes[j], "id"));
      return scn_errf(L->err, L->d, ld_get(a, "id"),
                      "duplicate actor id \"%s\" (first declared at %d:%d)",
                      ld_quote(q, sizeof q, sp->id), p.line, p.col);
    }
  }
  return 0;
}

static int load_actor_ids(ld *L) {
  const cJSON *arr = ld_get(L->root, "actors"), *a;
  char what[32];
  uint32_t i = 0;
  if (ld_need(L, L->root, "actors") < 0 || ld_arr_len(L, arr, "actors", 1, SCN_MAX_ACTORS, "actors") < 0)
    return -1;
  cJSON_ArrayForEach(a, arr) {
    snprintf(what, sizeof what, "actors[%u]", (unsigned)i);
    L->actor_nodes[i] = a;
    if (ld_obj_fields(L, a, what, actor_fields) < 0 || actor_id(L, a, i) < 0) return -1;
    L->sc->n_actors = ++i;
  }
  return 0;
}

/* ---- programs ------------------------------------------------------------ */

static int step_list(ld *L, rt_program *pr, const cJSON *arr, const char *what);

static int too_many_steps(ld *L, const rt_program *pr, const cJSON *node) {
  char q[96];
  return scn_errf(L->err, L->d, node,
                  "program \"%s\" has more than %d steps once \"repeat\" blocks are expanded",
                  ld_quote(q, sizeof q, pr->name), SCN_MAX_STEPS);
}

static int push_step(ld *L, rt_program *pr, const cJSON *node, const rt_step *s) {
  if (pr->n_steps >= SCN_MAX_STEPS) return too_many_steps(L, pr, node);
  pr->steps[pr->n_steps++] = *s;
  return 0;
}

static const char *const step_fields[] = {
    "work", "stash", "effect", "call", "fail", "return", "read", "repeat", "steps", "value", "via",
    "attempts", NULL};

/* Members that qualify a step rather than say what it is, and the form
** each belongs to. */
static const char *modifier_of(const char *k) {
  if (strcmp(k, "steps") == 0) return "repeat";
  if (strcmp(k, "value") == 0 || strcmp(k, "via") == 0) return "stash";
  if (strcmp(k, "attempts") == 0) return "fail";
  return NULL;
}

/* Finds the one member of step st that says what it is (*form). */
static int step_form(ld *L, const cJSON *st, const cJSON **form) {
  const cJSON *m, *mods[4];
  int n_mods = 0;
  *form = NULL;
  cJSON_ArrayForEach(m, st) {
    if (modifier_of(m->string)) {
      if (n_mods < 4) mods[n_mods++] = m;
    } else if (*form) {
      return ld_key_errf(L, m,
                      "a step has exactly one of \"work\", \"stash\", \"effect\", \"call\", "
                      "\"fail\", \"return\", \"read\" or \"repeat\"; this one has \"%s\" and \"%s\"",
                      (*form)->string, m->string);
    } else {
      *form = m;
    }
  }
  if (!*form && n_mods)
    return ld_key_errf(L, mods[0], "\"%s\" needs \"%s\"%s", mods[0]->string,
                       modifier_of(mods[0]->string),
                       strcmp(mods[0]->string, "steps") ? "" : " (how many times to run them)");
  if (!*form)
    return scn_errf(L->err, L->d, st,
                    "empty step; expected one of {\"work\": \"500ms\"}, {\"stash\": true}, "
                    "{\"effect\": \"name\"}, {\"call\": \"actor\"}, {\"fail\": true}, "
                    "{\"return\": value}, {\"read\": true}, {\"repeat\": N, \"steps\": [...]}");
  for (int i = 0; i < n_mods; i++)
    if (strcmp((*form)->string, modifier_of(mods[i]->string)) != 0)
      return ld_key_errf(L, mods[i], "\"%s\" is only allowed with \"%s\"", mods[i]->string,
                         modifier_of(mods[i]->string));
  return 0;
}

/* A "stash" or "fail" flag, which must be true. */
static int true_flag(ld *L, const cJSON *st, const char *key) {
  int b = 0;
  if (scn_get_bool(L->d, st, key, &b, L->err) < 0) return -1;
  if (!b)
    return scn_errf(L->err, L->d, ld_get(st, key),
                    "\"%s\": must be true (leave the step out instead)", key);
  return 0;
}

static int work_step(ld *L, const cJSON *st, const cJSON *w, rt_step *s) {
  s->kind = RT_STEP_WORK;
  if (cJSON_IsArray(w))
    return dur_pair(L, w, "work", "[\"100ms\", \"900ms\"]", 0, &s->min_us, &s->max_us);
  if (!cJSON_IsString(w))
    return scn_errf(L->err, L->d, w,
                    "\"work\": expected a duration such as \"500ms\" or a range such as "
                    "[\"100ms\", \"900ms\"], found %s", scn_type_name(w));
  if (ld_get_dur(L, st, "work", 0, &s->min_us) < 0) return -1;
  s->max_us = s->min_us;
  return 0;
}

/* Compact JSON text of node v into buf (n bytes, including the NUL). */
static int json_text(ld *L, const cJSON *v, const char *what, char *buf, size_t n) {
  char *t = cJSON_PrintUnformatted(v);
  if (!t) return scn_errf(L->err, L->d, v, "\"%s\": out of memory", what);
  size_t len = strlen(t);
  if (len >= n) {
    free(t);
    return scn_errf(L->err, L->d, v, "\"%s\": the value is %zu bytes as compact JSON; at most %zu",
                    what, len, n - 1);
  }
  memcpy(buf, t, len + 1);
  free(t);
  return 0;
}

static const opt via_opts[] = {{"ctx", 0}, {"this", 1}, {NULL, 0}};

/* {"stash": true} ({"pc":N}), with "value": any JSON, "via": "ctx" | "this". */
static int stash_step(ld *L, const cJSON *st, rt_step *s) {
  const cJSON *v = ld_get(st, "value");
  int via = 0;
  s->kind = RT_STEP_STASH;
  if (true_flag(L, st, "stash") < 0 || ld_get_enum(L, st, "via", via_opts, &via) < 0) return -1;
  s->via_this = via;
  if (!v) return 0;
  s->has_value = 1;
  return json_text(L, v, "value", s->name, sizeof s->name);
}

/* Every step form except repeat. */
static int simple_step(ld *L, const cJSON *st, const cJSON *form, rt_step *s) {
  const char *k = form->string;
  if (strcmp(k, "work") == 0) return work_step(L, st, form, s);
  if (strcmp(k, "stash") == 0) return stash_step(L, st, s);
  if (strcmp(k, "read") == 0) {
    s->kind = RT_STEP_READ;
    return true_flag(L, st, k);
  }
  if (strcmp(k, "return") == 0) {
    s->kind = RT_STEP_RETURN;
    return json_text(L, form, "return", s->name, sizeof s->name);
  }
  if (strcmp(k, "fail") == 0) {
    int64_t n = 0;
    s->kind = RT_STEP_FAIL;
    if (scn_get_int(L->d, st, "attempts", 0, 1000, &n, L->err) < 0) return -1;
    s->min_us = n; /* attempts */
    if (cJSON_IsString(form)) return ld_get_text(L, st, k, s->name, sizeof s->name, 0);
    return true_flag(L, st, k);
  }
  if (strcmp(k, "effect") == 0) {
    s->kind = RT_STEP_EFFECT;
    return ld_get_text(L, st, k, s->name, 48, 0);
  }
  s->kind = RT_STEP_CALL;
  return ld_get_actor(L, st, k, &s->target);
}

/* {"repeat": N, "steps": [...]}: the block, expanded N times in place. */
static int repeat_step(ld *L, rt_program *pr, const cJSON *st) {
  int64_t n = 0, r;
  int start = pr->n_steps, len;
  if (scn_get_int(L->d, st, "repeat", 1, MAX_REPEAT, &n, L->err) < 0) return -1;
  if (ld_need(L, st, "steps") < 0 || step_list(L, pr, ld_get(st, "steps"), "steps") < 0) return -1;
  len = pr->n_steps - start;
  for (r = 1; r < n; r++) {
    if (pr->n_steps + len > SCN_MAX_STEPS) return too_many_steps(L, pr, ld_get(st, "repeat"));
    memmove(&pr->steps[pr->n_steps], &pr->steps[start], (size_t)len * sizeof pr->steps[0]);
    pr->n_steps += len;
  }
  return 0;
}

static int one_step(ld *L, rt_program *pr, const cJSON *st, const char *what) {
  const cJSON *form;
  rt_step s;
  if (ld_obj_fields(L, st, what, step_fields) < 0 || step_form(L, st, &form) < 0) return -1;
  if (strcmp(form->string, "repeat") == 0) return repeat_step(L, pr, st);
  memset(&s, 0, sizeof s);
  if (simple_step(L, st, form, &s) < 0) return -1;
  return push_step(L, pr, form, &s);
}

static int step_list(ld *L, rt_program *pr, const cJSON *arr, const char *what) {
  const cJSON *st;
  char label[112];
  int k = 0;
  if (ld_arr_len(L, arr, what, 1, SCN_MAX_STEPS, "steps") < 0) return -1;
  cJSON_ArrayForEach(st, arr) {
    snprintf(label, sizeof label, "%.90s[%d]", what, k++);
    if (one_step(L, pr, st, label) < 0) return -1;
  }
  return 0;
}

static int load_program(ld *L, const cJSON *p) {
  scn_scenario *sc = L->sc;
  rt_program *pr = &sc->programs[sc->n_programs];
  size_t n = strlen(p->string);
  char what[96];
  if (sc->n_programs == SCN_MAX_PROGRAMS)
    return ld_key_errf(L, p, "too many programs (at most %d)", SCN_MAX_PROGRAMS);
  if (n == 0 || n >= sizeof pr->name)
    return ld_key_errf(L, p, "a program name must be 1 to %zu bytes long", sizeof pr->name - 1);
  memcpy(pr->name, p->string, n + 1);
  pr->steps = sc->steps[sc->n_programs];
  pr->n_steps = 0;
  sc->n_programs++;
  snprintf(what, sizeof what, "programs.%s", pr->name);
  return step_list(L, pr, p, what);
}

static int load_programs(ld *L) {
  const cJSON *o = ld_get(L->root, "programs"), *p;
  if (!o) return 0;
  if (scn_expect_type(L->d, o, cJSON_Object, "programs", L->err) < 0) return -1;
  cJSON_ArrayForEach(p, o) {
    if (load_program(L, p) < 0) return -1;
  }
  return 0;
}

/* ---- actors, second pass ---------------------------------------------- */

static const opt throws_opts[] = {{"never", RT_THROW_NEVER}, {"always", RT_THROW_ALWAYS},
                                  {"until_fresh_request", RT_THROW_UNTIL_FRESH_REQUEST},
                                  {NULL, 0}};
static const opt stuck_opts[] = {{"none", RT_STUCK_NONE}, {"never_answers", RT_STUCK_NEVER_ANSWERS},
                                 {"late", RT_STUCK_LATE}, {"startup", RT_STUCK_STARTUP},
                                 {NULL, 0}};

/* "stuck" and "stuck_delay": a late child needs its delay, and only it. */
static int actor_stuck(ld *L, const cJSON *a, rt_actor_spec *sp) {
  int v = RT_STUCK_NONE;
  if (ld_get_enum(L, a, "stuck", stuck_opts, &v) < 0) return -1;
  sp->stuck = (rt_stuck)v;
  if (ld_get_dur(L, a, "stuck_delay", 1, &sp->stuck_delay_us) < 0) return -1;
  if (v == RT_STUCK_LATE && !ld_get(a, "stuck_delay"))
    return scn_errf(L->err, L->d, ld_get(a, "stuck"),
                    "\"stuck\": \"late\" needs \"stuck_delay\" (how late the answers come)");
  if (v != RT_STUCK_LATE && ld_get(a, "stuck_delay"))
    return scn_errf(L->err, L->d, ld_get(a, "stuck_delay"),
                    "\"stuck_delay\": only used with \"stuck\": \"late\"");
  return 0;
}

static int actor_times(ld *L, const cJSON *a, rt_actor_spec *sp) {
  int v = RT_THROW_NEVER;
  if (ld_get_dur(L, a, "on_start", 0, &sp->on_start_us) < 0 ||
      ld_get_dur(L, a, "serve", 0, &sp->serve_us) < 0 ||
      ld_get_dur(L, a, "inspect_time", 0, &sp->child_inspect_us) < 0 ||
      ld_get_dur(L, a, "on_alarm_keep_alive", 1000, &sp->on_alarm_keepalive_us) < 0)
    return -1;
  if (ld_get_enum(L, a, "on_start_throws", throws_opts, &v) < 0) return -1;
  sp->on_start_throws = (rt_onstart_throw)v;
  return 0;
}

/* "on_start_tool_run": {"child": "id", "work": "5s"}: the user onStart
** starts a sub-agent tool run (a run that startup recovery must leave
** alone: startup_snapshot). */
static int actor_onstart_run(ld *L, const cJSON *a, rt_actor_spec *sp) {
  static const char *const fields[] = {"child", "work", NULL};
  const cJSON *o = ld_get(a, "on_start_tool_run");
  if (!o) return 0;
  if (scn_check_fields(L->d, o, fields, L->err) < 0) return -1;
  const cJSON *child = ld_get(o, "child");
  if (!child)
    return scn_errf(L->err, L->d, o, "missing required field \"child\" in \"on_start_tool_run\"");
  if (scn_expect_type(L->d, child, cJSON_String, "\"child\"", L->err) < 0 ||
      find_actor(L, child, &sp->on_start_child) < 0 ||
      ld_get_dur(L, o, "work", 0, &sp->on_start_work_us) < 0)
    return -1;
  sp->on_start_tool_run = 1;
  return 0;
}

static int actor_children(ld *L, const cJSON *a, uint32_t i) {
  rt_actor_spec *sp = &L->sc->actors[i];
  const cJSON *arr = ld_get(a, "children"), *c;
  char what[32], q[96];
  int k;
  if (!arr) return 0;
  if (ld_arr_len(L, arr, "children", 0, RT_MAX_CHILDREN, "children") < 0) return -1;
  cJSON_ArrayForEach(c, arr) {
    snprintf(what, sizeof what, "children[%d]", sp->n_children);
    if (scn_expect_type(L->d, c, cJSON_String, what, L->err) < 0) return -1;
    if (find_actor(L, c, &sp->children[sp->n_children]) < 0) return -1;
    for (k = 0; k < sp->n_children; k++)
      if (sp->children[k] == sp->children[sp->n_children])
        return scn_errf(L->err, L->d, c, "child \"%s\" is listed twice",
                        ld_quote(q, sizeof q, c->valuestring));
    L->child_nodes[i][sp->n_children++] = c;
  }
  return 0;
}

static const char *const policy_fields[] = {"fiber", "action", "hook_time", "throws",
                                            "require_field", NULL};
static const opt action_opts[] = {{"resume", RT_RECOVER_RESUME}, {"restart", RT_RECOVER_RESTART},
                                  {"drop", RT_RECOVER_DROP}, {"throw", RT_RECOVER_THROW},
                                  {NULL, 0}};

/* Rejects a second policy for the same fiber name (or a second catch-all). */
static int policy_unique(ld *L, const rt_actor_spec *sp, const cJSON *p) {
  const rt_recovery_policy *n = &sp->policies[sp->n_policies];
  char q[96];
  int k;
  for (k = 0; k < sp->n_policies; k++) {
    if (strcmp(sp->policies[k].fiber_name, n->fiber_name) != 0) continue;
    if (n->fiber_name[0] == '\0')
      return scn_errf(L->err, L->d, p,
                      "a recovery policy without \"fiber\" (for every fiber) "
                      "is already given above");
    return scn_errf(L->err, L->d, ld_get(p, "fiber"),
                    "a recovery policy for fiber \"%s\" is already given above",
                    ld_quote(q, sizeof q, n->fiber_name));
  }
  return 0;
}

static int one_policy(ld *L, rt_actor_spec *sp, const cJSON *p, const char *what) {
  rt_recovery_policy *po = &sp->policies[sp->n_policies];
  int prog = -1, act = 0;
  if (ld_obj_fields(L, p, what, policy_fields) < 0 || ld_get_program(L, p, "fiber", &prog) < 0)
    return -1;
  if (prog >= 0) memcpy(po->fiber_name, L->sc->programs[prog].name, sizeof po->fiber_name);
  if (ld_need(L, p, "action") < 0 || ld_get_enum(L, p, "action", action_opts, &act) < 0) return -1;
  po->action = (rt_recover_action)act;
  if (ld_get_dur(L, p, "hook_time", 0, &po->hook_us) < 0 || policy_unique(L, sp, p) < 0) return -1;
  int64_t throws = 0;
  if (scn_get_int(L->d, p, "throws", 0, 1000000, &throws, L->err) < 0 ||
      ld_get_text(L, p, "require_field", po->require_field, sizeof po->require_field, 0) < 0)
    return -1;
  po->throws = (int)throws;
  sp->n_policies++;
  return 0;
}

static int actor_recovery(ld *L, const cJSON *a, rt_actor_spec *sp) {
  const cJSON *arr = ld_get(a, "recovery"), *p;
  char what[32];
  if (!arr) return 0;
  if (ld_arr_len(L, arr, "recovery", 0, RT_MAX_POLICIES, "policies") < 0) return -1;
  cJSON_ArrayForEach(p, arr) {
    snprintf(what, sizeof what, "recovery[%d]", sp->n_policies);
    if (one_policy(L, sp, p, what) < 0) return -1;
  }
  return 0;
}

static const char *const stale_fields[] = {"tool_runs", "fibers", "schedules", NULL};
static const char *const stale_sched_fields[] = {"callback", "time", "interval", "cron", "payload",
                                                 "running", "started_at", "alarm", NULL};
static const char *const stale_tr_fields[] = {"child", "status", "child_status", NULL};
static const char *const stale_fiber_fields[] = {"program", "snapshot", NULL};
static const opt tr_status_opts[] = {{"starting", RT_TR_STARTING}, {"running", RT_TR_RUNNING},
                                     {NULL, 0}};
static const opt child_status_opts[] = {
    {"none", 0}, {"running", RT_TR_RUNNING}, {"completed", RT_TR_COMPLETED},
    {"error", RT_TR_ERROR}, {"aborted", RT_TR_ABORTED}, {NULL, 0}};

/* The next free stale row, or NULL with an error at node. */
static scn_stale *new_stale(ld *L, const cJSON *node, uint32_t owner) {
  scn_stale *s;
  if (L->sc->n_stale >= SCN_MAX_STALE) {
    scn_errf(L->err, L->d, node, "too many stale rows (at most %d in a scenario)", SCN_MAX_STALE);
    return NULL;
  }
  s = &L->sc->stale[L->sc->n_stale++];
  memset(s, 0, sizeof *s);
  s->actor = owner;
  s->program = -1;
  s->snapshot = -1;
  return s;
}

static int stale_toolrun(ld *L, const cJSON *t, uint32_t owner, const char *what) {
  scn_stale *s;
  int st = RT_TR_RUNNING, cs = 0;
  if (ld_obj_fields(L, t, what, stale_tr_fields) < 0 || !(s = new_stale(L, t, owner))) return -1;
  s->is_toolrun = 1;
  if (ld_need(L, t, "child") < 0 || ld_get_actor(L, t, "child", &s->child) < 0) return -1;
  if (ld_get_enum(L, t, "status", tr_status_opts, &st) < 0 ||
      ld_get_enum(L, t, "child_status", child_status_opts, &cs) < 0)
    return -1;
  s->status = (rt_toolrun_status)st;
  s->child_status = cs;
  return 0;
}

static int stale_fiber(ld *L, const cJSON *f, uint32_t owner, const char *what) {
  const cJSON *snap = ld_get(f, "snapshot");
  scn_stale *s;
  int64_t pc = -1;
  if (ld_obj_fields(L, f, what, stale_fiber_fields) < 0 || !(s = new_stale(L, f, owner))) return -1;
  if (ld_need(L, f, "program") < 0 || ld_get_program(L, f, "program", &s->program) < 0) return -1;
  if (snap && !cJSON_IsNull(snap) && !cJSON_IsNumber(snap))
    return scn_errf(L->err, L->d, snap,
                    "\"snapshot\": expected a step index or null, found %s", scn_type_name(snap));
  if (snap && !cJSON_IsNull(snap) &&
      scn_get_int(L->d, f, "snapshot", 0, L->sc->programs[s->program].n_steps, &pc, L->err) < 0)
    return -1;
  s->snapshot = (int)pc;
  return 0;
}

/* A schedule row a previous process left (issue #14): {"callback", "time",
** "interval" | "cron", "payload", "running", "started_at", "alarm"}. */
static int stale_schedule(ld *L, const cJSON *f, uint32_t owner, const char *what) {
  const cJSON *p = ld_get(f, "payload"), *sa = ld_get(f, "started_at");
  scn_stale *s;
  int alarm = 1;
  if (ld_obj_fields(L, f, what, stale_sched_fields) < 0 || !(s = new_stale(L, f, owner))) return -1;
  s->is_toolrun = SCN_STALE_SCHEDULE;
  s->sched.started_us = -1;
  if (ld_need(L, f, "callback") < 0 ||
      ld_get_text(L, f, "callback", s->sched.callback, sizeof s->sched.callback, 0) < 0 ||
      ld_get_dur(L, f, "time", 0, &s->sched.time_us) < 0 ||
      ld_get_dur(L, f, "interval", 1000000, &s->sched.interval_us) < 0 ||
      ld_get_text(L, f, "cron", s->sched.cron, sizeof s->sched.cron, 0) < 0 ||
      scn_get_bool(L->d, f, "running", &s->sched.running, L->err) < 0 ||
      scn_get_bool(L->d, f, "alarm", &alarm, L->err) < 0)
    return -1;
  s->sched.no_alarm = !alarm;
  if (ld_get(f, "interval") && ld_get(f, "cron"))
    return scn_errf(L->err, L->d, ld_get(f, "cron"),
                    "a schedule row has \"interval\" or \"cron\", not both");
  if (s->sched.cron[0]) {
    rt_cron c;
    char err[160];
    if (rt_cron_parse(s->sched.cron, &c, err, sizeof err) < 0)
      return scn_errf(L->err, L->d, ld_get(f, "cron"), "\"cron\": %s", err);
  }
  if (s->sched.running && !s->sched.interval_us)
    return scn_errf(L->err, L->d, ld_get(f, "running"),
                    "\"running\": only an interval row (with \"interval\") runs");
  if (sa && !cJSON_IsNull(sa) && ld_get_dur(L, f, "started_at", 0, &s->sched.started_us) < 0)
    return -1;
  if (p) {
    char *t = cJSON_PrintUnformatted(p);
    size_t len = t ? strlen(t) : 0;
    if (!t || len >= sizeof s->sched.payload) {
      free(t);
      return scn_errf(L->err, L->d, p, "\"payload\": at most %zu bytes as compact JSON",
                      sizeof s->sched.payload - 1);
    }
    memcpy(s->sched.payload, t, len + 1);
    free(t);
  }
  return 0;
}

/* One of the stale arrays: each element through fn. */
static int stale_list(ld *L, const cJSON *st, const char *key, uint32_t owner,
                      int (*fn)(ld *, const cJSON *, uint32_t, const char *)) {
  const cJSON *arr = ld_get(st, key), *e;
  char what[48];
  int k = 0;
  if (!arr) return 0;
  if (ld_arr_len(L, arr, key, 0, SCN_MAX_STALE, "rows") < 0) return -1;
  cJSON_ArrayForEach(e, arr) {
    snprintf(what, sizeof what, "%s[%d]", key, k++);
    if (fn(L, e, owner, what) < 0) return -1;
  }
  return 0;
}

static int actor_stale(ld *L, const cJSON *a, uint32_t i) {
  const cJSON *st = ld_get(a, "stale");
  if (!st) return 0;
  if (ld_obj_fields(L, st, "stale", stale_fields) < 0) return -1;
  if (stale_list(L, st, "tool_runs", i, stale_toolrun) < 0) return -1;
  if (stale_list(L, st, "schedules", i, stale_schedule) < 0) return -1;
  return stale_list(L, st, "fibers", i, stale_fiber);
}

static int load_actor(ld *L, const cJSON *a, uint32_t i) {
  rt_actor_spec *sp = &L->sc->actors[i];
  snprintf(sp->cls, sizeof sp->cls, "Agent");
  if (ld_get_text(L, a, "class", sp->cls, sizeof sp->cls, 0) < 0) return -1;
  if (actor_times(L, a, sp) < 0 || actor_stuck(L, a, sp) < 0 || actor_onstart_run(L, a, sp) < 0)
    return -1;
  int fin = 0;
  if (ld_get_enum(L, a, "on_agent_tool_finish", finish_opts, &fin) < 0 ||
      actor_tools(L, a, sp) < 0)
    return -1;
  sp->finish_hook_throws = fin == 1;
  sp->finish_hook_aborts = fin == 2; /* issue #15: the first result wins */
  if (actor_children(L, a, i) < 0 || actor_recovery(L, a, sp) < 0) return -1;
  if (chat_policy(L, a, "provider", &sp->chat) < 0) return -1; /* chat (seed 000) */
  if (ld_actor_script(L, a, i) < 0) return -1; /* Lua (issue #13) */
  return actor_stale(L, a, i);
}

/* Reports the cycle stack[from..depth] closed by the child node c. */
static int cycle_err(ld *L, const uint32_t *stack, int from, int depth, const cJSON *c) {
  char path[400];
  size_t o = 0;
  int k;
  for (k = from; k <= depth && o + 70 < sizeof path; k++)
    o += (size_t)snprintf(path + o, sizeof path - o, "%s -> ", L->sc->actors[stack[k]].id);
  snprintf(path + o, sizeof path - o, "%s", k <= depth ? "... -> " : "");
  o = strlen(path);
  snprintf(path + o, sizeof path - o, "%s", L->sc->actors[stack[from]].id);
  return scn_errf(L->err, L->d, c, "child cycle: %s", path);
}

/* Depth-first walk of the child graph; color 1 = on the path, 2 = done. */
static int walk(ld *L, uint32_t a, int *color, uint32_t *stack, int depth) {
  const rt_actor_spec *sp = &L->sc->actors[a];
  int k, j;
  color[a] = 1;
  stack[depth] = a;
  for (k = 0; k < sp->n_children; k++) {
    uint32_t c = sp->children[k];
    if (color[c] == 1) {
      for (j = 0; stack[j] != c; j++)
        ;
      return cycle_err(L, stack, j, depth, L->child_nodes[a][k]);
    }
    if (color[c] == 0 && walk(L, c, color, stack, depth + 1) < 0) return -1;
  }
  color[a] = 2;
  return 0;
}

static int load_actors(ld *L) {
  int color[SCN_MAX_ACTORS] = {0};
  uint32_t stack[SCN_MAX_ACTORS], i;
  for (i = 0; i < L->sc->n_actors; i++)
    if (load_actor(L, L->actor_nodes[i], i) < 0) return -1;
  for (i = 0; i < L->sc->n_actors; i++)
    if (color[i] == 0 && walk(L, i, color, stack, 0) < 0) return -1;
  return 0;
}

/* ---- entry points --------------------------------------------------------- */

/* The cloudflare profile's platform life: code-update restarts at 2 a day
** (the platform does 1-2), unless the scenario plans restarts itself. The
** profile's constants are rt_config_default's. */
static void profile_faults(ld *L) {
  scn_scenario *sc = L->sc;
  if (!L->cloudflare || sc->n_faults >= SCN_MAX_FAULTS) return;
  for (int i = 0; i < sc->n_faults; i++)
    if (sc->faults[i].kind == FLT_RESTART) return;
  flt_fault f = {FLT_RESTART, RT_NO_ACTOR, -1, 2, 0, 0, RT_STUCK_NONE, 0, 0, 0};
  sc->faults[sc->n_faults++] = f;
}

static int load_root(ld *L) {
  const cJSON *repro = ld_get(L->root, "revenant_repro");
  if (repro) /* a file `run` wrote for a failure: say what reads it */
    return scn_errf(L->err, L->d, repro, "this is a repro file, not a scenario: revenant replay FILE "
                    "runs it again, revenant shrink FILE shrinks it (docs/reports.md, \"Repro file\")");
  if (scn_check_fields(L->d, L->root, top_fields, L->err) < 0) return -1;
  if (load_header(L) < 0 || load_base(L) < 0 || load_checks(L) < 0) return -1;
  if (ld_load_invariants(L) < 0) return -1;
  if (load_actor_ids(L) < 0 || load_programs(L) < 0 || load_actors(L) < 0) return -1;
  if (ld_load_workload(L) < 0 || ld_load_faults(L) < 0) return -1;
  profile_faults(L);
  if (ld_load_swarm(L) < 0) return -1;
  return ld_load_cases(L);
}

static void put_err(char *err, size_t errlen, const char *msg) {
  if (err && errlen > 0) snprintf(err, errlen, "%s", msg);
}

int scn_load_text(const char *path, const char *text, size_t len, scn_scenario *out,
                  char *err, size_t errlen) {
  scn_err e = {{0}};
  scn_doc *d = NULL;
  ld L;
  int rc;
  memset(out, 0, sizeof *out);
  if (!path) path = "<input>";
  if (len > SCN_MAX_FILE_BYTES) {
    if (err && errlen > 0)
      snprintf(err, errlen, "%s: too large: a scenario may be at most %d bytes (1 MiB)", path, SCN_MAX_FILE_BYTES);
    return -1;
  }
  if (scn_doc_parse(path, text, len, &d, &e) < 0) {
    put_err(err, errlen, e.text);
    return -1;
  }
  memset(&L, 0, sizeof L);
  L.d = d;
  L.err = &e;
  L.sc = out;
  L.root = scn_doc_root(d);
  snprintf(out->file, sizeof out->file, "%s", path);
  rc = load_root(&L);
  if (rc == 0 && out->n_actor_scripts) {
    /* agent scripts: repro files and shrink output carry them inline (and
    ** scn_write embeds the invariants' scripts too) */
    if (!(out->source = scn_write_string(out))) rc = scn_errf(&e, d, NULL, "out of memory");
  } else if (rc == 0 && !(out->source = scn__embed_scripts(out, text, len))) {
    rc = scn_errf(&e, d, NULL, "out of memory");
  }
  scn_doc_free(d);
  if (rc == 0) return 0;
  scn_free(out);
  memset(out, 0, sizeof *out);
  put_err(err, errlen, e.text);
  return -1;
}

/* Reads the whole file (at most SCN_MAX_FILE_BYTES: a regular file that
** is larger is refused before anything is read); 0, or -1 with errno set
** (EFBIG: too large, EISDIR: a directory). */
static int read_file(const char *path, char **text, size_t *len) {
  FILE *f = scn_fopen_read(path);
  size_t cap = 0, n = 0, got;
  char *buf = NULL, *nb;
  int saved = 0;
  struct stat st;
  if (!f) return -1;
  if (fstat(fileno(f), &st) == 0 && (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size > SCN_MAX_FILE_BYTES))) {
    fclose(f);
    errno = S_ISDIR(st.st_mode) ? EISDIR : EFBIG;
    return -1;
  }
  do {
    if (n == cap) {
      cap = cap ? cap * 2 : 4096;
      nb = cap <= 2 * (size_t)SCN_MAX_FILE_BYTES ? realloc(buf, cap) : NULL;
      if (!nb) {
        saved = cap <= 2 * (size_t)SCN_MAX_FILE_BYTES ? ENOMEM : EFBIG;
        break;
      }
      buf = nb;
    }
    got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0 && ferror(f)) saved = errno ? errno : EIO;
  } while (got > 0);
  fclose(f);
  if (saved) {
    free(buf);
    errno = saved;
    return -1;
  }
  *text = buf;
  *len = n;
  return 0;
}

int scn_load(const char *path, scn_scenario *out, char *err, size_t errlen) {
  char *text = NULL;
  size_t len = 0;
  int rc;
  memset(out, 0, sizeof *out);
  errno = 0;
  if (read_file(path, &text, &len) < 0 || len > SCN_MAX_FILE_BYTES) {
    if (err && errlen > 0 && (errno == EFBIG || text))
      snprintf(err, errlen, "%s: file too large: a scenario file may be at most %d bytes (1 MiB)", path,
               SCN_MAX_FILE_BYTES);
    else if (err && errlen > 0)
      snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    free(text);
    return -1;
  }
  rc = scn_load_text(path, text, len, out, err, errlen);
  free(text);
  return rc;
}

void scn_free(scn_scenario *sc) {
  if (!sc) return;
  scn__actor_scripts_free(sc);
  free(sc->source);
  sc->source = NULL;
}
