/*
** rt_uc_declarative.c: the user code a scenario file declares, as an
** rt_usercode table (issue #13 item 1): the fixed menu of the actor spec
** (onStart's duration, whether it throws or never settles, whether it
** calls runAgentTool) and, through the SDK core, the recovery policies and
** the step programs. Behaviour and trace are exactly those of the runtime
** before the table existed (same trace hashes).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stdio.h>
#include <string.h>

#include "runtime/rt_models.h"

/* The user onStart throws: always (the actor's nature), or the next N
** calls after an onstart_throw fault (the scenario's oracle, kept in the
** world so that it survives deaths). */
static int onstart_throws(rt_world *w, uint32_t a) {
  rt_agent_world *aw = RT_AW(w);
  if (aw->onstart_throws_left && a < w->n_actors && aw->onstart_throws_left[a] > 0) {
    aw->onstart_throws_left[a]--;
    return 1;
  }
  return w->actors[a].spec.on_start_throws == RT_THROW_ALWAYS;
}

/* onStart: runAgentTool first when the spec says so (not awaited), then
** on_start_us of work (forever when the actor is stuck in startup). */
static rt_uc_status decl_on_start(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                  rt_uc_out *out) {
  const rt_actor_spec *sp = &self->w->actors[self->a].spec;
  (void)st;
  (void)fr;
  if (sp->on_start_tool_run) /* the user onStart calls runAgentTool */
    rt__toolrun_start(self->w, self->a, sp->on_start_child, sp->on_start_work_us);
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_SLEEP;
  out->cmd.min_us = sp->stuck == RT_STUCK_STARTUP ? -1 : sp->on_start_us;
  return out->status;
}

static const rt_recovery_policy *policy_for(const rt_actor_spec *sp, const char *name) {
  static const rt_recovery_policy dflt = {.action = RT_RECOVER_RESUME};
  for (int i = 0; i < sp->n_policies; i++)
    if (!sp->policies[i].fiber_name[0] || !strcmp(sp->policies[i].fiber_name, name))
      return &sp->policies[i];
  return &dflt;
}

/* 1 if JSON text `snap` is an object with a top-level member `field`. */
int rt__snap_has_field(const char *snap, const char *field) {
  if (!snap) return 0;
  size_t fl = strlen(field);
  int depth = 0, expect_key = 0;
  for (const char *p = snap; *p; p++) {
    if (*p == '"') {
      const char *q = p + 1;
      while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
      if (depth == 1 && expect_key && (size_t)(q - p - 1) == fl && !strncmp(p + 1, field, fl))
        return 1;
      expect_key = 0;
      if (!*q) return 0;
      p = q;
    } else if (*p == '{' || *p == '[') {
      depth++;
      expect_key = *p == '{' && depth == 1;
    } else if (*p == '}' || *p == ']') {
      depth--;
    } else if (*p == ',' && depth == 1) {
      expect_key = 1;
    }
  }
  return 0;
}

/* The action of the hook for orphan o on this call (throws, require_field). */
static rt_recover_action hook_action(rt_world *w, uint32_t a, const rt_orphan *o,
                                     const rt_recovery_policy *p, const char *snap) {
  int calls = rt__hook_call_count(w, a, o->id);
  if (calls <= p->throws) return RT_RECOVER_THROW;
  if (p->action == RT_RECOVER_RESUME && p->require_field[0] &&
      !rt__snap_has_field(snap, p->require_field))
    return RT_RECOVER_DROP;
  return p->action;
}


/* A step program (rt_program): runs steps from the fiber's pc until a step
** waits (work, call: a yielded command) or the body ends. The program
** counter lives in the fiber (rt_fiber.pc) so that the legacy model can
** rewind it for a retry. */
static rt_uc_status run_steps(rt_sdk_actor *self, rt_uc_out *out) {
  rt_world *w = self->w;
  uint32_t a = self->a;
  rt_fiber *f = rt__fiber_find(self->m, self->fiber);
  if (!f) { /* cannot happen: the core calls for a live fiber */
    out->status = RT_UC_THREW;
    snprintf(out->value, sizeof out->value, "declarative: no such fiber");
    return out->status;
  }
  const rt_program *p = &RT_AW(w)->progs[f->prog];
  out->status = RT_UC_YIELD;
  while (f->pc < p->n_steps) {
    const rt_step *st = &p->steps[f->pc];
    switch (st->kind) {
      case RT_STEP_WORK:
        f->pc++;
        out->cmd.kind = RT_UC_CMD_WORK;
        out->cmd.min_us = st->min_us;
        out->cmd.max_us = st->max_us;
        return out->status;
      case RT_STEP_STASH:
        f->pc++;
        rt__fiber_stash(w, a, f->id, f->pc, rt__turn_end(p, f->pc),
                        st->has_value ? st->name : NULL, st->via_this);
        if (RT_MEM(w, a) != self->m) return out->status; /* a failed immediate commit killed it */
        break;
      case RT_STEP_READ: { /* ctx.snapshot / this.stash read back: the row's value */
        char snap[128];
        rt__fiber_snapshot(w, a, f->id, snap, sizeof snap);
        sim_emit(w->s, RT_EV_FIBER_READ, a, f->id, f->pc, 0, rt__str(w, snap), 0);
        f->pc++;
        break;
      }
      case RT_STEP_RETURN:
        out->status = RT_UC_DONE;
        snprintf(out->value, sizeof out->value, "%s", st->name);
        return out->status;
      case RT_STEP_EFFECT:
        rt__emit(w, RT_EV_EFFECT, a, f->id, f->pc, 0, st->name);
        f->pc++;
        break;
      case RT_STEP_CALL:
        f->pc++;
        out->cmd.kind = RT_UC_CMD_CALL;
        out->cmd.target = st->target;
        return out->status;
      case RT_STEP_FAIL:
        out->status = RT_UC_THREW;
        snprintf(out->value, sizeof out->value, "%s", st->name[0] ? st->name : "fiber body threw");
        return out->status;
    }
  }
  out->status = RT_UC_DONE; /* the body ends: undefined */
  out->value[0] = '\0';
  return out->status;
}

static rt_uc_status decl_fiber_body(void *st, rt_sdk_actor *self, const char *name,
                                    const char *snapshot, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)name;
  (void)snapshot; /* the core set the pc from it (resume points of a program) */
  (void)fr;
  return run_steps(self, out);
}

/* onFiberRecovered per the actor's recovery policies: the hook works
** hook_us, then throws (its first `throws` calls per row) or takes its
** action. */
static rt_uc_status decl_on_fiber_recovered(void *st, rt_sdk_actor *self,
                                            const rt_uc_recovery *ctx, rt_uc_frame *fr,
                                            rt_uc_out *out) {
  (void)st;
  (void)fr;
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_SLEEP;
  out->cmd.min_us = policy_for(&self->w->actors[self->a].spec, ctx->name)->hook_us;
  return out->status;
}

static rt_uc_status recovered_decide(rt_sdk_actor *self, const char *snap, rt_uc_out *out) {
  rt_mem *m = self->m;
  const rt_orphan *o = &m->orphans[m->orphan_idx];
  const rt_recovery_policy *p = policy_for(&self->w->actors[self->a].spec, o->name);
  rt_recover_action act = hook_action(self->w, self->a, o, p, snap);
  if (act == RT_RECOVER_THROW) {
    out->status = RT_UC_THREW;
    snprintf(out->value, sizeof out->value, "onFiberRecovered threw");
  } else {
    out->status = RT_UC_DONE;
    out->action = act;
  }
  return out->status;
}

static rt_uc_status sched_steps(rt_sdk_actor *self, rt_uc_out *out);

static rt_uc_status decl_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                const rt_uc_in *in, rt_uc_out *out) {
  (void)st;
  switch (fr->hook) {
    case RT_UC_ON_START:
      if (onstart_throws(self->w, self->a)) {
        out->status = RT_UC_THREW;
        snprintf(out->value, sizeof out->value, "onStart threw");
      } else {
        out->status = RT_UC_DONE;
        out->value[0] = '\0';
      }
      return out->status;
    case RT_UC_ON_REQUEST: return out->status = RT_UC_DONE;
    case RT_UC_TOOL_RUN:
      out->action = self->w->actors[self->a].spec.tool_result;
      return out->status = RT_UC_DONE;
    case RT_UC_FIBER_BODY:
      if (!in->ok) { /* the call it waited for failed: the body throws */
        out->status = RT_UC_THREW;
        snprintf(out->value, sizeof out->value, "fiber body threw");
        return out->status;
      }
      return run_steps(self, out);
    case RT_UC_ON_FIBER_RECOVERED: return recovered_decide(self, in->value, out);
    case RT_UC_ON_SCHEDULE: return sched_steps(self, out);
    default:
      out->status = RT_UC_THREW;
      snprintf(out->value, sizeof out->value, "declarative: nothing to resume");
      return out->status;
  }
}

/* A plain request: answered after the actor's serve_us. The menu has no
** methods by name: such a request fails. */
static rt_uc_status decl_on_request(void *st, rt_sdk_actor *self, const char *method,
                                    const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  int64_t t = self->w->actors[self->a].spec.serve_us;
  (void)st;
  (void)args;
  (void)fr;
  if (method && *method) {
    snprintf(out->value, sizeof out->value, "%s is not a method of %s (it has no script)",
             method, self->w->actors[self->a].spec.id);
    return out->status = RT_UC_THREW;
  }
  if (t <= 0) return out->status = RT_UC_DONE;
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_SLEEP;
  out->cmd.min_us = t;
  return out->status;
}

/* An RPC to a plain actor: its stub answers null at once (undefined). */
static rt_uc_status decl_on_call(void *st, rt_sdk_actor *self, const char *method,
                                 const char *args, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)self;
  (void)method;
  (void)args;
  (void)fr;
  out->value[0] = '\0';
  return out->status = RT_UC_DONE;
}

/* As a sub-agent: the run works as long as the parent's request says (the
** scenario's `work`), then ends as the spec says (tool_result; completed
** by default). */
static rt_uc_status decl_tool_run(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                  rt_uc_out *out) {
  const rt_inc *inc = &self->m->inc;
  (void)st;
  out->status = RT_UC_YIELD;
  out->cmd.kind = RT_UC_CMD_SLEEP;
  out->cmd.min_us = 0;
  for (int i = inc->n_serving; i-- > 0;) /* the startAgentToolRun being served */
    if (inc->serving[i].kind == MSG_CALL_START && inc->serving[i].arg == fr->key) {
      out->cmd.min_us = inc->serving[i].arg2;
      break;
    }
  return out->status;
}

/* onAlarm: keepAliveWhile(fn) with fn taking on_alarm_keepalive_us, when
** the spec says so (a lease re-taken on every wake, #1703/#1704). */
static rt_uc_status decl_on_alarm(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                  rt_uc_out *out) {
  (void)st;
  (void)fr;
  out->status = RT_UC_DONE;
  out->hold_us = self->w->actors[self->a].spec.on_alarm_keepalive_us;
  return out->status;
}

/* onChatRecovery: the options of the actor's chat policy (or the config's). */
static rt_uc_status decl_on_chat_recovery(void *st, rt_sdk_actor *self,
                                          const rt_uc_chat_ctx *ctx, rt_uc_chat_opts *opts) {
  const rt_chat_policy *p = &self->w->actors[self->a].spec.chat;
  (void)st;
  (void)ctx;
  if (!p->set) p = &self->w->cfg.chat;
  opts->persist = !p->no_persist;
  opts->cont = !p->no_continue;
  return RT_UC_DONE;
}

/* onAgentToolFinish: throws when the spec says so (finish_hook_throws);
** with finish_hook_aborts, a completed run aborts every other open run
** (the first result wins; issue #15). */
static rt_uc_status decl_on_agent_tool_finish(void *st, rt_sdk_actor *self, int64_t run,
                                              int status, const char *error) {
  const rt_actor_spec *sp = &self->w->actors[self->a].spec;
  (void)st;
  (void)error;
  if (sp->finish_hook_aborts && status == RT_TR_COMPLETED) {
    int64_t open[64];
    int n = rt_sdk_open_agent_tools(self, open, 64);
    for (int i = 0; i < n && i < 64 && rt_sdk_alive(self); i++)
      if (open[i] != run) rt_sdk_abort_agent_tool(self, open[i]);
  }
  return sp->finish_hook_throws ? RT_UC_THREW : RT_UC_DONE;
}

/* A schedule callback: the program named after the callback, if any (a
** callback without one returns at once). Steps from the row's pc: work
** waits, effect records RT_EV_SCHEDULE_EFFECT (below), fail throws
** (on the first `attempts` attempts only, when set), return returns; a
** step that needs a fiber (stash, read) or an RPC is refused. An effect is
** RT_EV_SCHEDULE_EFFECT, keyed by the row and its occurrence (the row's time
** when it ran), so that effects_once tells a retried or re-run occurrence
** from the next one. */
static rt_uc_status sched_steps(rt_sdk_actor *self, rt_uc_out *out) {
  rt_world *w = self->w;
  rt_mem *m = self->m;
  int idx = rt__prog_find(w, m->due[m->due_idx].callback);
  out->status = RT_UC_DONE;
  out->value[0] = '\0';
  if (idx < 0) return out->status;
  const rt_program *p = &RT_AW(w)->progs[idx];
  while (m->sched_pc < p->n_steps) {
    const rt_step *st = &p->steps[m->sched_pc++];
    switch (st->kind) {
      case RT_STEP_WORK:
        out->status = RT_UC_YIELD;
        out->cmd.kind = RT_UC_CMD_WORK;
        out->cmd.min_us = st->min_us;
        out->cmd.max_us = st->max_us;
        return out->status;
      case RT_STEP_EFFECT:
        sim_emit(w->s, RT_EV_SCHEDULE_EFFECT, self->a, m->due[m->due_idx].id,
                 m->due[m->due_idx].time_s * 1000000, m->sched_attempt, rt__str(w, st->name),
                 rt__str(w, m->due[m->due_idx].callback));
        break;
      case RT_STEP_FAIL:
        if (st->min_us && m->sched_attempt > st->min_us) break; /* attempts */
        out->status = RT_UC_THREW;
        snprintf(out->value, sizeof out->value, "%s",
                 st->name[0] ? st->name : "schedule callback threw");
        return out->status;
      case RT_STEP_RETURN:
        snprintf(out->value, sizeof out->value, "%s", st->name);
        return out->status;
      default:
        out->status = RT_UC_THREW;
        snprintf(out->value, sizeof out->value,
                 "declarative: a schedule callback has no fiber to stash, read or call from");
        return out->status;
    }
  }
  return out->status;
}

static rt_uc_status decl_on_schedule(void *st, rt_sdk_actor *self, const char *callback,
                                     const char *payload, rt_uc_frame *fr, rt_uc_out *out) {
  (void)st;
  (void)callback; /* the row being run (m->due[m->due_idx]) */
  (void)payload;
  (void)fr;
  return sched_steps(self, out);
}

const rt_usercode rt__uc_declarative = {
    .name = "declarative",
    .on_start = decl_on_start,
    .on_request = decl_on_request,
    .on_call = decl_on_call,
    .fiber_body = decl_fiber_body,
    .on_fiber_recovered = decl_on_fiber_recovered,
    .on_alarm = decl_on_alarm,
    .on_schedule = decl_on_schedule,
    .on_chat_recovery = decl_on_chat_recovery,
    .on_agent_tool_finish = decl_on_agent_tool_finish,
    .tool_run = decl_tool_run,
    .resume = decl_resume,
};
