/*
** rt_models.c: the composition root of the runtime. It names every model
** and registers them on the agent SDK core in the SDK's order, so that no
** lower file has to name them: the host (rt_world.c, rt_storage.c) knows
** only its actor class and storage modules, the core (rt_agent.c) only the
** extensions it is given.
**
** Order matters and is the SDK's (reference/agents-sdk.md A.2): inside the
** startup gate, legacy fibers' _checkInterruptedFibers runs before the
** tool-run reconciliation; after the gate opens, tool-run recovery is
** scheduled before resumed fibers start, and legacy fibers and executor
** turns resume after them.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stddef.h>

#include "runtime/rt_models.h"

/* Registers the models once per process; 0 or -1. */
static int register_models(void) {
  static int done, failed;
  rt_agent_ext *exts[] = {&rt__legacy_ext, &rt__toolrun_ext, &rt__exec_ext, &rt__thread_ext,
                          &rt__chat_ext, &rt__lua_ext};
  if (done) return failed ? -1 : 0;
  done = 1;
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
    if (rt__agent_register(exts[i])) failed = 1;
  if (rt__chat_register() || rt__toolrun_register()) failed = 1;
  if (rt__lg_tool_register()) failed = 1;
  return failed ? -1 : 0;
}

rt_world *rt_world_new(sim *s, const rt_config *cfg) {
  if (register_models()) return NULL;
  return rt__agent_world_new(s, cfg, &rt__uc_declarative);
}
