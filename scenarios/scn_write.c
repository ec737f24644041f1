/*
** scn_write.c: serializes a loaded scenario back to a scenario file.
**
** The output is the format of docs/scenarios.md, written for people: one
** line per actor, workload item, fault and case, default values left out,
** repeated step blocks folded back into {"repeat": N, "steps": [...]}.
** scn_load of the text gives a scenario that runs exactly as the one
** written (same trace hashes); tests/test_shrink.c checks the round trip.
** Used by `revenant shrink` (its result) and `revenant swarm` (the mutated
** scenario embedded in a repro file).
*/
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "scenarios/scn.h"
#include "scenarios/scn_internal.h"

#define US_PER_S 1000000LL
#define DAY_US (86400LL * US_PER_S)

/* An object or array being written: the separator state. */
typedef struct wobj {
  FILE *f;
  int n;
} wobj;

static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

/* Starts member `key` of o (key NULL: an array element). */
static void key(wobj *o, const char *k) {
  if (o->n++) fputs(", ", o->f);
  if (k) {
    put_str(o->f, k);
    fputs(": ", o->f);
  }
}

/* The shortest exact spelling of a duration: "7d", "90s", "1500us". */
static const char *dur_text(char *dst, size_t cap, int64_t us) {
  static const struct { const char *u; int64_t v; } units[] = {
      {"d", DAY_US}, {"h", 3600 * US_PER_S}, {"m", 60 * US_PER_S},
      {"s", US_PER_S}, {"ms", 1000}, {"us", 1}};
  size_t k = 0;
  if (us == 0) {
    snprintf(dst, cap, "0s");
    return dst;
  }
  while (us % units[k].v != 0) k++;
  snprintf(dst, cap, "%" PRId64 "%s", us / units[k].v, units[k].u);
  return dst;
}

static void m_str(wobj *o, const char *k, const char *v) {
  key(o, k);
  put_str(o->f, v);
}

static void m_dur(wobj *o, const char *k, int64_t us) {
  char b[40];
  m_str(o, k, dur_text(b, sizeof b, us));
}

static void m_int(wobj *o, const char *k, int64_t v) {
  key(o, k);
  fprintf(o->f, "%" PRId64, v);
}

static void m_raw(wobj *o, const char *k, const char *raw) {
  key(o, k);
  fputs(raw, o->f);
}

static void m_actor(wobj *o, const scn_scenario *sc, const char *k, uint32_t a) {
  m_str(o, k, a < sc->n_actors ? sc->actors[a].id : "?");
}

/* A top-level member on its own line. */
static void top_key(wobj *top, const char *k) {
  fputs(top->n++ ? ",\n  " : "  ", top->f);
  put_str(top->f, k);
  fputs(": ", top->f);
}

/* ---- runtime ------------------------------------------------------------ */

typedef enum ftype { F_DUR, F_INT, F_ENUM } ftype;

static const char *const hb_names[] = {"alarm", "schedule", NULL};
static const char *const dispose_names[] = {"sdk1604", "fixed", "sdk1707", NULL};
static const char *const toolrun_names[] = {"deferred", "gated", "unsnapshotted", NULL};
static const char *const commit_names[] = {"turn", "immediate", NULL};
static const char *const ids_names[] = {"fresh", "stable", NULL};
static const char *const bool_names[] = {"false", "true", NULL};
static const char *const retain_names[] = {"sdk1604", "sdk1729", NULL};
static const char *const every_key_names[] = {"sdk", "callback", NULL};
static const char *const hook_run_names[] = {"in_hook", "after_startup", NULL};
static const char *const fail_reset_names[] = {"after_turn", "sync", NULL};
static const char *const adapter_names[] = {"sqlite", "memory", "broken", NULL};    /* seed 002 */
static const char *const store_names[] = {"versioned", "broken", "leaky", NULL};   /* seed 004 */

/* The rt_config fields a scenario file can set (idle_eviction apart). */
static const struct rtf {
  const char *key;
  size_t off;
  ftype t;
  const char *const *names; /* F_ENUM: value -> name; bool_names: raw */
} rt_fields[] = {
    {"heartbeat", offsetof(rt_config, heartbeat), F_ENUM, hb_names},
    {"dispose", offsetof(rt_config, dispose), F_ENUM, dispose_names},
    {"toolrun_recovery", offsetof(rt_config, toolrun), F_ENUM, toolrun_names},
    {"toolrun_ids", offsetof(rt_config, toolrun_ids), F_ENUM, ids_names},
    {"reattach_budget", offsetof(rt_config, reattach_budget_us), F_DUR, NULL},
    {"commit", offsetof(rt_config, commit), F_ENUM, commit_names},
    {"commit_window", offsetof(rt_config, commit_window_us), F_DUR, NULL},
    {"gate_ceiling", offsetof(rt_config, gate_ceiling_us), F_DUR, NULL},
    {"keepalive_interval", offsetof(rt_config, keepalive_interval_us), F_DUR, NULL},
    {"heartbeat_schedule_interval", offsetof(rt_config, heartbeat_schedule_us), F_DUR, NULL},
    {"alarm_retry_base", offsetof(rt_config, alarm_retry_base_us), F_DUR, NULL},
    {"alarm_retry_max", offsetof(rt_config, alarm_retry_max), F_INT, NULL},
    {"alarm_limit", offsetof(rt_config, alarm_limit_us), F_DUR, NULL},
    {"rpc_latency", offsetof(rt_config, rpc_latency_us), F_DUR, NULL},
    {"inspect_timeout", offsetof(rt_config, inspect_timeout_us), F_DUR, NULL},
    {"inspect_total_timeout", offsetof(rt_config, inspect_total_us), F_DUR, NULL},
    {"hook_timeout", offsetof(rt_config, hook_timeout_us), F_DUR, NULL},
    {"workerd_name_bug", offsetof(rt_config, workerd_name_bug), F_ENUM, bool_names},
    {"executor_adapter", offsetof(rt_config, exec_adapter), F_ENUM, adapter_names},
    {"thread_store", offsetof(rt_config, thread_store), F_ENUM, store_names},
    {"fiber_retain", offsetof(rt_config, retain), F_ENUM, retain_names},
    {"fiber_max_age", offsetof(rt_config, fiber_max_age_us), F_DUR, NULL},
    {"schedule_every_key", offsetof(rt_config, every_key), F_ENUM, every_key_names},
    {"hung_schedule_timeout", offsetof(rt_config, hung_schedule_us), F_DUR, NULL},
    {"schedule_attempts", offsetof(rt_config, schedule_attempts), F_INT, NULL},
    {"schedule_retry_base", offsetof(rt_config, schedule_retry_base_us), F_DUR, NULL},
    {"schedule_retry_max_delay", offsetof(rt_config, schedule_retry_max_us), F_DUR, NULL},
    {"hook_run_fiber", offsetof(rt_config, hook_run), F_ENUM, hook_run_names},
    {"commit_fail_reset", offsetof(rt_config, fail_reset), F_ENUM, fail_reset_names},
};
#define N_RT_FIELDS (sizeof rt_fields / sizeof rt_fields[0])

_Static_assert(sizeof(rt_exec_adapter) == sizeof(int) && sizeof(rt_thread_store) == sizeof(int),
               "runtime enums are read as int");
_Static_assert(sizeof(rt_heartbeat) == sizeof(int) && sizeof(rt_dispose) == sizeof(int) &&
                   sizeof(rt_toolrun_mode) == sizeof(int) && sizeof(rt_commit) == sizeof(int),
               "runtime enums are read as int");

static size_t field_size(const struct rtf *fd) { return fd->t == F_DUR ? sizeof(int64_t) : sizeof(int); }

static int field_eq(const struct rtf *fd, const rt_config *a, const rt_config *b) {
  return memcmp((const char *)a + fd->off, (const char *)b + fd->off, field_size(fd)) == 0;
}

static int64_t field_get(const struct rtf *fd, const rt_config *c) {
  int64_t v64;
  int v;
  if (fd->t == F_DUR) {
    memcpy(&v64, (const char *)c + fd->off, sizeof v64);
    return v64;
  }
  memcpy(&v, (const char *)c + fd->off, sizeof v);
  return v;
}

/* The largest value of a NULL-terminated enum name table. */
static int64_t names_max(const char *const *names) {
  int64_t n = 0;
  while (names[n]) n++;
  return n - 1;
}

static int idle_eq(const rt_config *a, const rt_config *b) {
  return a->idle_min_us == b->idle_min_us && a->idle_max_us == b->idle_max_us;
}

/* Chat recovery policies (seed 000 Layer 3): the runtime's and an actor's. */
static int chat_eq(const rt_chat_policy *a, const rt_chat_policy *b) {
  return a->set == b->set && a->provider == b->provider && a->no_persist == b->no_persist &&
         a->no_continue == b->no_continue && a->off == b->off;
}

/* "<pkey>": provider and "chat_recovery" as members of o (loader: chat_policy). */
static void put_chat_policy(wobj *o, const char *pkey, const rt_chat_policy *p) {
  if (o->f) m_str(o, pkey, rt_chat_provider_name(p->provider));
  if (o->f && p->off) {
    key(o, "chat_recovery");
    fputs("false", o->f);
    return;
  }
  if (!o->f || (!p->no_persist && !p->no_continue)) return;
  key(o, "chat_recovery");
  fprintf(o->f, "{\"persist\": %s, \"continue\": %s}", p->no_persist ? "false" : "true",
          p->no_continue ? "false" : "true");
}

/* The chat members of a runtime diff; returns how many (o->f NULL: count). */
static int runtime_chat_diff(wobj *o, const rt_config *base, const rt_config *c) {
  int n = 0;
  if (!chat_eq(&base->chat, &c->chat)) {
    n++;
    put_chat_policy(o, "chat_provider", &c->chat);
  }
  if (base->chat_bug != c->chat_bug) {
    n++;
    if (o->f) m_str(o, "chat_bug", rt_chat_bug_name(c->chat_bug));
  }
  return n;
}

/* Writes the members of c that differ from base into o; returns how many
** (with o->f NULL only counts). */
static int runtime_diff(wobj *o, const rt_config *base, const rt_config *c) {
  int n = 0;
  for (size_t k = 0; k < N_RT_FIELDS; k++) {
    const struct rtf *fd = &rt_fields[k];
    if (field_eq(fd, base, c)) continue;
    n++;
    if (!o->f) continue;
    int64_t v = field_get(fd, c);
    if (fd->t == F_DUR) m_dur(o, fd->key, v);
    else if (fd->t == F_INT) m_int(o, fd->key, v);
    else if (fd->names == bool_names) m_raw(o, fd->key, v ? "true" : "false");
    else m_str(o, fd->key, v >= 0 && v <= names_max(fd->names) ? fd->names[v] : "?");
  }
  n += runtime_chat_diff(o, base, c);
  if (!idle_eq(base, c)) {
    char a[40], b[40];
    n++;
    if (o->f) {
      key(o, "idle_eviction");
      fprintf(o->f, "[\"%s\", \"%s\"]", dur_text(a, sizeof a, c->idle_min_us),
              dur_text(b, sizeof b, c->idle_max_us));
    }
  }
  return n;
}

/* The top-level runtime: every field on which all cases agree. */
static void runtime_base(const scn_scenario *sc, rt_config *base) {
  rt_config_default(base);
  for (size_t k = 0; k < N_RT_FIELDS; k++) {
    const struct rtf *fd = &rt_fields[k];
    int same = 1;
    for (int i = 1; i < sc->n_cases; i++) same &= field_eq(fd, &sc->cases[0].cfg, &sc->cases[i].cfg);
    if (same) memcpy((char *)base + fd->off, (const char *)&sc->cases[0].cfg + fd->off, field_size(fd));
  }
  int same = 1, chat = 1, bug = 1;
  for (int i = 1; i < sc->n_cases; i++) {
    chat &= chat_eq(&sc->cases[0].cfg.chat, &sc->cases[i].cfg.chat);
    bug &= sc->cases[0].cfg.chat_bug == sc->cases[i].cfg.chat_bug;
  }
  if (chat) base->chat = sc->cases[0].cfg.chat;
  if (bug) base->chat_bug = sc->cases[0].cfg.chat_bug;
  for (int i = 1; i < sc->n_cases; i++) same &= idle_eq(&sc->cases[0].cfg, &sc->cases[i].cfg);
  if (same) {
    base->idle_min_us = sc->cases[0].cfg.idle_min_us;
    base->idle_max_us = sc->cases[0].cfg.idle_max_us;
  }
}

/* 1 if c differs from base in a field a scenario file can set. */
static int runtime_differs(const rt_config *base, const rt_config *c) {
  wobj dry = {NULL, 0};
  return runtime_diff(&dry, base, c) > 0;
}

/* {...}: the fields of c that differ from base. */
static void runtime_body(FILE *f, const rt_config *base, const rt_config *c) {
  wobj r = {f, 0};
  fputc('{', f);
  runtime_diff(&r, base, c);
  fputc('}', f);
}

/* ---- programs ------------------------------------------------------------ */

static int step_eq(const rt_step *a, const rt_step *b) {
  return a->kind == b->kind && a->min_us == b->min_us && a->max_us == b->max_us &&
         a->target == b->target && a->has_value == b->has_value && a->via_this == b->via_this &&
         strcmp(a->name, b->name) == 0;
}

static void put_step(wobj *o, const scn_scenario *sc, const rt_step *s) {
  char a[40], b[40];
  key(o, NULL);
  wobj st = {o->f, 0};
  fputc('{', o->f);
  switch (s->kind) {
    case RT_STEP_WORK:
      if (s->min_us == s->max_us) {
        m_dur(&st, "work", s->min_us);
      } else {
        key(&st, "work");
        fprintf(o->f, "[\"%s\", \"%s\"]", dur_text(a, sizeof a, s->min_us),
                dur_text(b, sizeof b, s->max_us));
      }
      break;
    case RT_STEP_STASH:
      m_raw(&st, "stash", "true");
      if (s->has_value) m_raw(&st, "value", s->name);
      if (s->via_this) m_str(&st, "via", "this");
      break;
    case RT_STEP_EFFECT: m_str(&st, "effect", s->name); break;
    case RT_STEP_CALL: m_actor(&st, sc, "call", s->target); break;
    case RT_STEP_FAIL:
      if (s->name[0])
        m_str(&st, "fail", s->name);
      else
        m_raw(&st, "fail", "true");
      if (s->min_us) m_int(&st, "attempts", s->min_us);
      break;
    case RT_STEP_RETURN: m_raw(&st, "return", s->name); break;
    case RT_STEP_READ: m_raw(&st, "read", "true"); break;
  }
  fputc('}', o->f);
}

/* The longest-covering repeated block starting at steps[i]: *len, *count. */
static void find_repeat(const rt_step *s, int n, int i, int *len, int *count) {
  *len = 1;
  *count = 1;
  for (int l = 1; l <= 32 && i + 2 * l <= n; l++) {
    int k = 1;
    while (i + (k + 1) * l <= n && k < 1000) {
      int same = 1;
      for (int j = 0; j < l && same; j++) same = step_eq(&s[i + j], &s[i + k * l + j]);
      if (!same) break;
      k++;
    }
    if (k >= 2 && k * l > *count * *len) {
      *len = l;
      *count = k;
    }
  }
}

static void put_program(FILE *f, const scn_scenario *sc, const rt_program *p) {
  wobj arr = {f, 0};
  fputs("    ", f);
  put_str(f, p->name);
  fputs(": [", f);
  for (int i = 0; i < p->n_steps;) {
    int len, count;
    find_repeat(p->steps, p->n_steps, i, &len, &count);
    if (count < 2) {
      put_step(&arr, sc, &p->steps[i++]);
      continue;
    }
    key(&arr, NULL);
    fprintf(f, "{\"repeat\": %d, \"steps\": [", count);
    wobj in = {f, 0};
    for (int j = 0; j < len; j++) put_step(&in, sc, &p->steps[i + j]);
    fputs("]}", f);
    i += len * count;
  }
  fputc(']', f);
}

/* ---- actors ---------------------------------------------------------------- */

static const char *const throws_names[] = {"never", "always", "until_fresh_request"};
static const char *const stuck_names[] = {"none", "never_answers", "late", "startup"};
static const char *const action_names[] = {"?", "resume", "restart", "drop", "throw"};
static const char *const tr_names[] = {"none", "starting", "running", "completed",
                                       "error", "aborted", "interrupted"};

static const char *name_of(const char *const *names, size_t n, int v) {
  return v >= 0 && (size_t)v < n ? names[v] : "?";
}
#define NAME(tab, v) name_of(tab, sizeof tab / sizeof tab[0], (int)(v))

static void put_policies(wobj *o, const rt_actor_spec *a) {
  if (a->n_policies == 0) return;
  key(o, "recovery");
  fputc('[', o->f);
  wobj arr = {o->f, 0};
  for (int i = 0; i < a->n_policies; i++) {
    const rt_recovery_policy *p = &a->policies[i];
    key(&arr, NULL);
    wobj po = {o->f, 0};
    fputc('{', o->f);
    if (p->fiber_name[0]) m_str(&po, "fiber", p->fiber_name);
    m_str(&po, "action", NAME(action_names, p->action));
    if (p->hook_us) m_dur(&po, "hook_time", p->hook_us);
    if (p->throws) m_int(&po, "throws", p->throws);
    if (p->require_field[0]) m_str(&po, "require_field", p->require_field);
    fputc('}', o->f);
  }
  fputc(']', o->f);
}

/* The stale rows owned by actor ai of one kind, as member `k` of o. */
static void put_stale_list(wobj *o, const scn_scenario *sc, uint32_t ai, int toolruns) {
  int any = 0;
  wobj arr = {o->f, 0};
  for (int i = 0; i < sc->n_stale; i++) {
    const scn_stale *s = &sc->stale[i];
    if (s->actor != ai || s->is_toolrun != toolruns) continue;
    if (!any++) {
      key(o, toolruns == SCN_STALE_SCHEDULE ? "schedules" : toolruns ? "tool_runs" : "fibers");
      fputc('[', o->f);
    }
    key(&arr, NULL);
    wobj r = {o->f, 0};
    fputc('{', o->f);
    if (toolruns == SCN_STALE_SCHEDULE) {
      const rt_schedule_seed *d = &s->sched;
      m_str(&r, "callback", d->callback);
      m_dur(&r, "time", d->time_us);
      if (d->interval_us > 0) m_dur(&r, "interval", d->interval_us);
      if (d->cron[0]) m_str(&r, "cron", d->cron);
      if (d->payload[0]) m_raw(&r, "payload", d->payload);
      if (d->running) m_raw(&r, "running", "true");
      if (d->started_us >= 0) m_dur(&r, "started_at", d->started_us);
      if (d->no_alarm) m_raw(&r, "alarm", "false");
    } else if (toolruns) {
      m_actor(&r, sc, "child", s->child);
      if (s->status != RT_TR_RUNNING) m_str(&r, "status", NAME(tr_names, s->status));
      if (s->child_status) m_str(&r, "child_status", NAME(tr_names, s->child_status));
    } else {
      m_str(&r, "program", s->program >= 0 ? sc->programs[s->program].name : "?");
      if (s->snapshot >= 0) m_int(&r, "snapshot", s->snapshot);
    }
    fputc('}', o->f);
  }
  if (any) fputc(']', o->f);
}

static void put_stale(wobj *o, const scn_scenario *sc, uint32_t ai) {
  int any = 0;
  for (int i = 0; i < sc->n_stale; i++) any |= sc->stale[i].actor == ai;
  if (!any) return;
  key(o, "stale");
  fputc('{', o->f);
  wobj st = {o->f, 0};
  put_stale_list(&st, sc, ai, 1);
  put_stale_list(&st, sc, ai, SCN_STALE_SCHEDULE);
  put_stale_list(&st, sc, ai, 0);
  fputc('}', o->f);
}

static void put_actor(FILE *f, const scn_scenario *sc, uint32_t ai) {
  const rt_actor_spec *a = &sc->actors[ai];
  wobj o = {f, 0};
  fputs("    {", f);
  m_str(&o, "id", a->id);
  if (strcmp(a->cls, "Agent") != 0) m_str(&o, "class", a->cls);
  if (a->n_children) {
    key(&o, "children");
    fputc('[', f);
    wobj arr = {f, 0};
    for (int i = 0; i < a->n_children; i++) m_actor(&arr, sc, NULL, a->children[i]);
    fputc(']', f);
  }
  if (a->on_start_us) m_dur(&o, "on_start", a->on_start_us);
  if (a->on_start_throws) m_str(&o, "on_start_throws", NAME(throws_names, a->on_start_throws));
  if (a->serve_us) m_dur(&o, "serve", a->serve_us);
  if (a->child_inspect_us) m_dur(&o, "inspect_time", a->child_inspect_us);
  if (a->on_alarm_keepalive_us) m_dur(&o, "on_alarm_keep_alive", a->on_alarm_keepalive_us);
  if (a->finish_hook_throws) m_str(&o, "on_agent_tool_finish", "throws"); /* issue #15 */
  if (a->tool_result) m_str(&o, "tool_result", rt_toolrun_status_name(a->tool_result));
  if (a->tool_error[0]) m_str(&o, "tool_error", a->tool_error);
  if (a->max_tools) m_int(&o, "max_concurrent_agent_tools", a->max_tools);
  if (a->tool_chunks) m_int(&o, "tool_chunks", a->tool_chunks);
  if (a->finish_hook_aborts) m_str(&o, "on_agent_tool_finish", "aborts_others");
  if (a->stuck) m_str(&o, "stuck", NAME(stuck_names, a->stuck));
  if (a->stuck == RT_STUCK_LATE) m_dur(&o, "stuck_delay", a->stuck_delay_us);
  if (a->on_start_tool_run) {
    key(&o, "on_start_tool_run");
    fputc('{', f);
    wobj r = {f, 0};
    m_actor(&r, sc, "child", a->on_start_child);
    m_dur(&r, "work", a->on_start_work_us);
    fputc('}', f);
  }
  put_policies(&o, a);
  if (a->chat.set) put_chat_policy(&o, "provider", &a->chat);
  if (sc->actor_scripts[ai].name[0]) { /* inline, so the file runs from any folder */
    const scn_actor_script *s = &sc->actor_scripts[ai];
    char h[24];
    key(&o, "script");
    fputc('{', f);
    wobj so = {f, 0};
    m_str(&so, "name", s->name);
    if (s->path[0]) m_str(&so, "file", s->path);
    snprintf(h, sizeof h, "%016" PRIx64, s->hash);
    m_str(&so, "hash", h);
    m_str(&so, "text", s->text);
    fputc('}', f);
  }
  put_stale(&o, sc, ai);
  fputc('}', f);
}

/* ---- workload, faults, checks, cases ----------------------------------- */

static const char *const entry_names[] = {"?", "fetch", "ws", "alarm", "setName", "rpc"};

/* executor_turn fields that differ from rt_exec_turn_default (seed 002). */
static void put_exec(wobj *o, const scn_scenario *sc, const scn_work *w) {
  const rt_exec_turn_spec *t = &w->exec;
  m_actor(o, sc, "executor_turn", w->actor);
  if (t->tools != 1) m_int(o, "tools", t->tools);
  if (t->adapter >= 0) m_str(o, "adapter", rt_exec_adapter_name(t->adapter));
  if (t->fail_phase) m_str(o, "fail", rt_exec_phase_name(t->fail_phase));
  if (t->cancel_after_us > 0) m_dur(o, "cancel", t->cancel_after_us);
  if (t->dup_ppm) m_int(o, "duplicate_ppm", t->dup_ppm);
}

/* thread_writers fields that differ from rt_thread_spec_default (seed 004). */
static void put_thread(wobj *o, const scn_scenario *sc, const scn_work *w) {
  const rt_thread_spec *t = &w->thread;
  rt_thread_spec d;
  rt_thread_spec_default(&d);
  m_actor(o, sc, "thread_writers", w->actor);
  if (t->writers != d.writers) m_int(o, "writers", t->writers);
  if (t->runs != d.runs) m_int(o, "runs", t->runs);
  if (t->tools != d.tools) m_int(o, "tools", t->tools);
  if (t->store >= 0) m_str(o, "store", rt_thread_store_name(t->store));
  if (t->fail_reason) m_str(o, "fail", rt_thread_reason_name(t->fail_reason));
  if (t->step_max_us != d.step_max_us) m_dur(o, "step", t->step_max_us);
}

static void put_work(FILE *f, const scn_scenario *sc, const scn_work *w) {
  wobj o = {f, 0};
  fputs("    {", f);
  if (w->kind == SCN_W_REQUEST) {
    m_actor(&o, sc, "request", w->actor);
    if (w->entry != RT_ENTRY_FETCH) m_str(&o, "entry", NAME(entry_names, w->entry));
  } else if (w->kind == SCN_W_FIBER) {
    m_str(&o, "fiber", w->program >= 0 ? sc->programs[w->program].name : "?");
    m_actor(&o, sc, "actor", w->actor);
    if (w->await) m_raw(&o, "await", "true");
  } else if (w->kind == SCN_W_STASH) {
    m_actor(&o, sc, "stash", w->actor);
  } else if (w->kind == SCN_W_TOOLRUN) {
    m_actor(&o, sc, "tool_run", w->child);
    m_actor(&o, sc, "actor", w->actor);
    m_dur(&o, "work", w->work_us);
    if (w->run_id) m_int(&o, "run_id", w->run_id);
  } else if (w->kind == SCN_W_TOOL_ABORT) { /* the rest of issue #15 */
    m_actor(&o, sc, "tool_abort", w->actor);
    m_actor(&o, sc, "tool", w->child);
  } else if (w->kind == SCN_W_TOOL_RECONNECT) {
    m_actor(&o, sc, "tool_reconnect", w->actor);
    if (w->since != -1) m_int(&o, "since", w->since);
  } else if (w->kind == SCN_W_CHAT_CONTINUE) {
    m_actor(&o, sc, "continue_last_turn", w->actor);
  } else if (w->kind == SCN_W_CHAT_CANCEL) {
    m_actor(&o, sc, "chat_cancel", w->actor);
  } else if (w->kind == SCN_W_CHAT_SAVE) {
    m_actor(&o, sc, "save_messages", w->actor);
    m_str(&o, "text", w->text);
    if (w->chunks) {
      m_int(&o, "chunks", w->chunks);
      m_dur(&o, "chunk_every", w->chunk_every_us);
    }
  } else if (w->kind == SCN_W_EXEC_TURN) {
    put_exec(&o, sc, w); /* seed 002 */
  } else if (w->kind == SCN_W_THREAD) {
    put_thread(&o, sc, w); /* seed 004 */
  } else if (w->kind == SCN_W_CHAT) { /* seed 000 Layer 3; defaults of work_chat_item */
    m_actor(&o, sc, "chat", w->actor);
    if (w->chunks != 20) m_int(&o, "chunks", w->chunks);
    if (w->chunk_every_us != 200000) m_dur(&o, "chunk_every", w->chunk_every_us);
    if (w->chat_tool) {
      m_actor(&o, sc, "tool", w->child);
      m_dur(&o, "work", w->work_us);
    }
  } else if (w->kind == SCN_W_SCHEDULE) {
    m_actor(&o, sc, "schedule", w->actor);
    m_str(&o, "callback", w->callback);
    if (w->cron[0])
      m_str(&o, "cron", w->cron);
    else if (w->interval_us > 0)
      m_dur(&o, "interval", w->interval_us);
    else
      m_dur(&o, "delay", w->delay_us);
    if (w->payload[0]) m_raw(&o, "payload", w->payload);
    if (w->idempotent) m_raw(&o, "idempotent", w->idempotent == 1 ? "true" : "false");
  } else if (w->kind == SCN_W_CANCEL_SCHEDULE) {
    m_actor(&o, sc, "cancel_schedule", w->actor);
    m_str(&o, "callback", w->callback);
  } else if (w->kind == SCN_W_TOOL_RECOVERY) {
    m_actor(&o, sc, "tool_recovery", w->actor);
  } else if (w->kind == SCN_W_KEEPALIVE) {
    m_actor(&o, sc, "keep_alive", w->actor);
    m_dur(&o, "for", w->work_us);
    if (w->throws) m_str(&o, "throws", w->callback);
  } else if (w->kind == SCN_W_INVOKE) {
    m_actor(&o, sc, "invoke", w->actor);
    m_str(&o, "method", w->method);
    if (w->args[0]) m_raw(&o, "args", w->args);
  } else if (w->kind == SCN_W_KA_ACQUIRE || w->kind == SCN_W_KA_DISPOSE) {
    m_actor(&o, sc, w->kind == SCN_W_KA_ACQUIRE ? "keep_alive_acquire" : "keep_alive_dispose",
            w->actor);
    m_str(&o, "lease", w->callback);
  }
  m_dur(&o, "at", w->at_us);
  if (w->every_us > 0) {
    m_dur(&o, "every", w->every_us);
    if (w->until_us != sc->duration_us) m_dur(&o, "until", w->until_us);
  }
  fputc('}', f);
}

static void put_rate(wobj *o, int64_t per_day) {
  char b[48];
  if (per_day > 100000 && per_day % 24 == 0)
    snprintf(b, sizeof b, "%" PRId64 "/h", per_day / 24);
  else
    snprintf(b, sizeof b, "%" PRId64 "/d", per_day);
  m_str(o, "rate", b);
}

/* The kind-specific fields of a fault. */
static void put_fault_params(wobj *o, const scn_scenario *sc, const scn_fault *ft) {
  switch (ft->kind) {
    case FLT_CRASH: case FLT_RESTART: case FLT_SIGKILL:
      if (ft->delay_us > 0) m_dur(o, "down_for", ft->delay_us);
      break;
    case FLT_EVICT: case FLT_STREAM_CUT: case FLT_ONSTART_THROW: case FLT_ALARM_LOST:
      if (ft->actor != RT_NO_ACTOR) m_actor(o, sc, "actor", ft->actor);
      if (ft->count > 0 && ft->kind == FLT_ONSTART_THROW ? ft->count != 1 : ft->count > 0)
        m_int(o, "count", ft->count);
      break;
    case FLT_STUCK_CHILD:
      m_actor(o, sc, "actor", ft->actor);
      m_str(o, "mode", NAME(stuck_names, ft->stuck));
      if (ft->stuck == RT_STUCK_LATE) m_dur(o, "delay", ft->delay_us);
      break;
    case FLT_STORAGE_FAIL:
      if (ft->ppm) {
        m_int(o, "ppm", ft->ppm);
        break;
      }
      if (ft->actor != RT_NO_ACTOR) m_actor(o, sc, "actor", ft->actor);
      if (ft->count != 1) m_int(o, "count", ft->count);
      break;
    case FLT_RPC_DELAY: case FLT_ALARM_DELAY: m_dur(o, "delay", ft->delay_us); break;
    case FLT_RPC_DROP: m_int(o, "ppm", ft->ppm); break;
    case FLT_GATE_TIMEOUT:
      m_actor(o, sc, "actor", ft->actor);
      m_dur(o, "delay", ft->delay_us);
      break;
    default: break;
  }
  /* count on the kinds whose count limits a rate's arrivals */
  switch (ft->kind) {
    case FLT_STORAGE_FAIL: case FLT_EVICT: case FLT_STREAM_CUT: case FLT_ONSTART_THROW:
    case FLT_ALARM_LOST: break;
    default:
      if (ft->count > 0) m_int(o, "count", ft->count);
      break;
  }
}

static void put_fault(FILE *f, const scn_scenario *sc, const scn_fault *ft) {
  wobj o = {f, 0};
  fputs("    {", f);
  m_str(&o, "kind", flt_kind_name(ft->kind));
  put_fault_params(&o, sc, ft);
  if (ft->after_write) {
    m_int(&o, "after_write", (int64_t)ft->after_write);
  } else if (ft->at_us >= 0) {
    m_dur(&o, "at", ft->at_us);
  } else {
    put_rate(&o, ft->per_day);
    if (ft->until_us > 0) m_dur(&o, "until", ft->until_us);
  }
  fputc('}', f);
}

static void put_checks(wobj *top, const scn_scenario *sc) {
  chk_params d;
  const chk_params *p = &sc->params;
  chk_params_default(&d);
  if (p->wedge_k == d.wedge_k && p->serve_bound_us == d.serve_bound_us &&
      p->recovery_bound_us == d.recovery_bound_us && p->keepalive_idle_us == d.keepalive_idle_us)
    return;
  top_key(top, "checks");
  wobj o = {top->f, 0};
  fputc('{', top->f);
  if (p->wedge_k != d.wedge_k) m_int(&o, "wedge_k", p->wedge_k);
  if (p->serve_bound_us != d.serve_bound_us) m_dur(&o, "serve_bound", p->serve_bound_us);
  if (p->recovery_bound_us != d.recovery_bound_us) m_dur(&o, "recovery_bound", p->recovery_bound_us);
  if (p->keepalive_idle_us != d.keepalive_idle_us) m_dur(&o, "keepalive_idle", p->keepalive_idle_us);
  fputc('}', top->f);
}

static const char *const swarm_mode_names[] = {"every", "once", "report"};

/* "swarm": {"faults": {...}} when the file has an allowance. The default
** mode of expected violations is written per case (expect.swarm). */
static void put_swarm(wobj *top, const scn_scenario *sc) {
  static const flt_kind kinds[] = {FLT_EVICT, FLT_RESTART, FLT_CRASH, FLT_STORAGE_FAIL,
                                   FLT_RPC_DELAY, FLT_RPC_DROP, FLT_ALARM_DELAY, FLT_STUCK_CHILD};
  const scn_allow *al = &sc->allow;
  if (!al->given) return;
  top_key(top, "swarm");
  fputs("{\"faults\": {", top->f);
  wobj fo = {top->f, 0};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    flt_kind k = kinds[i];
    int on = (al->kinds >> k) & 1;
    if (!on && !al->off[k][0]) continue;
    key(&fo, flt_kind_name(k));
    if (!on) {
      wobj b = {top->f, 0};
      fputc('{', top->f);
      m_str(&b, "off", al->off[k]);
      fputc('}', top->f);
      continue;
    }
    if (!al->max_per_day[k] && !(al->no_after_write >> k & 1) && !al->max_ppm[k] && !al->max_delay_us[k]) {
      fputs("true", top->f);
      continue;
    }
    wobj b = {top->f, 0};
    fputc('{', top->f);
    if (al->max_per_day[k]) {
      char r[32];
      snprintf(r, sizeof r, "%" PRId64 "/d", al->max_per_day[k]);
      m_str(&b, "max_rate", r);
    }
    if (al->no_after_write >> k & 1) m_raw(&b, "after_write", "false");
    if (al->max_ppm[k]) m_int(&b, "max_ppm", al->max_ppm[k]);
    if (al->max_delay_us[k]) m_dur(&b, "max_delay", al->max_delay_us[k]);
    fputc('}', top->f);
  }
  fputs("}}", top->f);
}

/* "invariants" and the texts they ran with ("scripts"), so that the file
** runs the same from any folder (scn_load_scripts.c). */
static void put_scripts(wobj *top, const scn_scenario *sc) {
  if (!sc->n_scripts) return;
  top_key(top, "invariants");
  fputc('[', top->f);
  wobj arr = {top->f, 0};
  for (int i = 0; i < sc->n_scripts; i++) m_str(&arr, NULL, sc->scripts[i].path);
  fputc(']', top->f);
  cJSON *o = scn__scripts_json(sc);
  char *js = o ? cJSON_PrintUnformatted(o) : NULL;
  if (js) {
    top_key(top, "scripts");
    fputs(js, top->f);
  }
  free(js);
  cJSON_Delete(o);
}

/* "modules": the texts of the modules the process loaded for the
** scenario's folder (scn__modules_json), so that the file replays from
** any folder. */
static void put_modules(wobj *top, const scn_scenario *sc) {
  cJSON *o = scn__modules_json(sc);
  char *js = o ? cJSON_PrintUnformatted(o) : NULL;
  if (js) {
    top_key(top, "modules");
    fputs(js, top->f);
  }
  free(js);
  cJSON_Delete(o);
}

static void put_inv_list(wobj *o, const scn_scenario *sc, const char *k, uint32_t mask) {
  if (!mask) return;
  key(o, k);
  fputc('[', o->f);
  wobj arr = {o->f, 0};
  for (int i = 0; i < 32; i++)
    if ((mask & (1u << i)) && scn_inv_of_bit(sc, i) >= 0)
      m_str(&arr, NULL, chk_invariant_name((chk_invariant)scn_inv_of_bit(sc, i)));
  fputc(']', o->f);
}

/* 1 if fact i goes with mask: every case (mask 0: the top level of a file
** with cases, or the only case) or exactly case bit mask. */
static int fact_in(const scn_scenario *sc, int i, uint32_t mask) {
  uint32_t all = sc->n_cases >= 32 ? 0xffffffffu : (1u << sc->n_cases) - 1;
  uint32_t m = sc->facts[i].case_mask & all;
  return mask ? m == mask && m != all : m == all;
}

static int has_facts(const scn_scenario *sc, uint32_t mask) {
  for (int i = 0; i < sc->n_facts; i++)
    if (fact_in(sc, i, mask)) return 1;
  return 0;
}

/* "facts": [...] of the facts that go with mask, each as written. */
static void put_facts(wobj *e, const scn_scenario *sc, uint32_t mask) {
  if (!has_facts(sc, mask)) return;
  key(e, "facts");
  fputc('[', e->f);
  for (int i = 0, n = 0; i < sc->n_facts; i++)
    if (fact_in(sc, i, mask)) fprintf(e->f, "%s\n      %s", n++ ? "," : "", sc->facts[i].json);
  fputc(']', e->f);
}

/* "reach": [...] probe names, in probe order. */
static void put_reach(wobj *o, uint64_t mask) {
  if (!mask) return;
  key(o, "reach");
  fputc('[', o->f);
  wobj arr = {o->f, 0};
  for (int p = 0; p < RT_PROBE_COUNT; p++)
    if (mask & (1ull << p)) m_str(&arr, NULL, rt_probe_name(p));
  fputc(']', o->f);
}

static void expect_body(FILE *f, const scn_case *c, const scn_scenario *sc, uint32_t mask,
                        int with_facts) {
  wobj e = {f, 0};
  fputc('{', f);
  if (c) {
    put_inv_list(&e, sc, "hold", c->hold_mask);
    put_inv_list(&e, sc, "violate", c->violate_mask);
    put_reach(&e, c->reach_mask);
    if (c->violate_mask && c->swarm_mode != SCN_SWARM_EVERY) m_str(&e, "swarm", swarm_mode_names[c->swarm_mode]);
  }
  if (with_facts) put_facts(&e, sc, mask);
  fputc('}', f);
}

static void put_cases(wobj *top, const scn_scenario *sc, const rt_config *base) {
  if (sc->n_cases == 1 && strcmp(sc->cases[0].label, "default") == 0) {
    if (sc->cases[0].hold_mask || sc->cases[0].violate_mask || sc->cases[0].reach_mask ||
        has_facts(sc, 0)) {
      top_key(top, "expect");
      expect_body(top->f, &sc->cases[0], sc, 0, 1);
    }
    return;
  }
  if (has_facts(sc, 0)) { /* facts of every case */
    top_key(top, "expect");
    expect_body(top->f, NULL, sc, 0, 1);
  }
  top_key(top, "cases");
  fputs("[\n", top->f);
  for (int i = 0; i < sc->n_cases; i++) {
    wobj o = {top->f, 0};
    fputs("    {", top->f);
    const scn_case *c = &sc->cases[i];
    m_str(&o, "name", c->label);
    if (runtime_differs(base, &c->cfg)) {
      key(&o, "runtime");
      runtime_body(top->f, base, &c->cfg);
    }
    uint32_t bit = i < 32 ? 1u << i : 0;
    if (c->hold_mask || c->violate_mask || c->reach_mask || (bit && has_facts(sc, bit))) {
      key(&o, "expect");
      expect_body(top->f, c, sc, bit, bit != 0);
    }
    fputs(i + 1 < sc->n_cases ? "},\n" : "}\n", top->f);
  }
  fputs("  ]", top->f);
}

/* ---- entry points ------------------------------------------------------------ */

static void put_header(wobj *top, const scn_scenario *sc, const rt_config *base) {
  rt_config def;
  char b[40];
  top_key(top, "name");
  put_str(top->f, sc->name);
  if (sc->description[0]) {
    top_key(top, "description");
    put_str(top->f, sc->description);
  }
  top_key(top, "seed");
  fprintf(top->f, "\"0x%" PRIx64 "\"", sc->seed);
  top_key(top, "duration");
  put_str(top->f, dur_text(b, sizeof b, sc->duration_us));
  if (sc->strategy != SIM_FIFO) {
    top_key(top, "strategy");
    put_str(top->f, sim_strategy_name(sc->strategy));
  }
  if (sc->pct_depth != 3 && sc->pct_depth > 0) {
    top_key(top, "pct_depth");
    fprintf(top->f, "%d", sc->pct_depth);
  }
  rt_config_default(&def);
  if (runtime_differs(&def, base)) {
    top_key(top, "runtime");
    runtime_body(top->f, &def, base);
  }
}

/* Writes one array member of top: name, then each item on its own line. */
static void put_items(wobj *top, const char *k, int n, const scn_scenario *sc,
                      void (*item)(FILE *, const scn_scenario *, int)) {
  if (n == 0) return;
  top_key(top, k);
  fputs("[\n", top->f);
  for (int i = 0; i < n; i++) {
    item(top->f, sc, i);
    fputs(i + 1 < n ? ",\n" : "\n", top->f);
  }
  fputs("  ]", top->f);
}

static void item_actor(FILE *f, const scn_scenario *sc, int i) { put_actor(f, sc, (uint32_t)i); }
static void item_work(FILE *f, const scn_scenario *sc, int i) { put_work(f, sc, &sc->work[i]); }
static void item_fault(FILE *f, const scn_scenario *sc, int i) { put_fault(f, sc, &sc->faults[i]); }

/* 1 if every workload kind of sc is one this writer knows (anything else
** fails the write instead of giving a file that runs differently). */
static int writable(const scn_scenario *sc) {
  for (int i = 0; i < sc->n_work; i++) {
    scn_work_kind k = sc->work[i].kind;
    if (k != SCN_W_REQUEST && k != SCN_W_FIBER && k != SCN_W_TOOLRUN && k != SCN_W_EXEC_TURN &&
        k != SCN_W_THREAD && k != SCN_W_CHAT && k != SCN_W_SCHEDULE &&
        k != SCN_W_CANCEL_SCHEDULE && k != SCN_W_KEEPALIVE && k != SCN_W_STASH &&
        k != SCN_W_KA_ACQUIRE && k != SCN_W_KA_DISPOSE &&
        k != SCN_W_TOOL_RECOVERY && k != SCN_W_TOOL_ABORT && k != SCN_W_TOOL_RECONNECT &&
        k != SCN_W_CHAT_CONTINUE && k != SCN_W_CHAT_SAVE && k != SCN_W_CHAT_CANCEL &&
        k != SCN_W_INVOKE)
      return 0;
  }
  return 1;
}

int scn_write(FILE *f, const scn_scenario *sc) {
  rt_config base;
  wobj top = {f, 0};
  if (!writable(sc)) return -1;
  runtime_base(sc, &base);
  fputs("{\n", f);
  put_header(&top, sc, &base);
  if (sc->n_programs) {
    top_key(&top, "programs");
    fputs("{\n", f);
    for (int i = 0; i < sc->n_programs; i++) {
      put_program(f, sc, &sc->programs[i]);
      fputs(i + 1 < sc->n_programs ? ",\n" : "\n", f);
    }
    fputs("  }", f);
  }
  put_items(&top, "actors", (int)sc->n_actors, sc, item_actor);
  put_items(&top, "workload", sc->n_work, sc, item_work);
  put_items(&top, "faults", sc->n_faults, sc, item_fault);
  put_checks(&top, sc);
  put_swarm(&top, sc);
  put_scripts(&top, sc);
  put_modules(&top, sc);
  put_cases(&top, sc, &base);
  fputs("\n}\n", f);
  return ferror(f) ? -1 : 0;
}

char *scn_write_string(const scn_scenario *sc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  int rc = scn_write(f, sc);
  if (fclose(f) != 0 || rc != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
