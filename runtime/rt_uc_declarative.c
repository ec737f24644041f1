/*
** rt_uc_declarative.c: the user code a scenario file declares, as an
** rt_usercode table (issue #13 item 1): the fixed menu of the actor spec
** (onStart's duration, whether it throws or never settles, whether it
** calls runAgentTool) and, through the SDK core, the recovery policies and
** the step programs. Behaviour and trace are exactly those of the runtime
** before the table existed (same trace hashes).
*/
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

static rt_uc_status decl_resume(void *st, rt_sdk_actor *self, rt_uc_frame *fr,
                                const rt_uc_in *in, rt_uc_out *out) {
  (void)st;
  (void)in;
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
    default:
      out->status = RT_UC_THREW;
      snprintf(out->value, sizeof out->value, "declarative: nothing to resume");
      return out->status;
  }
}

const rt_usercode rt__uc_declarative = {
    .name = "declarative",
    .on_start = decl_on_start,
    .resume = decl_resume,
};
