/*
** rt_uc_lua.c: the user-code table slot for Lua-scripted agents (issue #13
** item 2). Scripted agents run today in rt_luaagent.c, which the core calls
** directly at the SDK's moments (onStart, onFiberRecovered, a fiber body:
** rt_agent.h, "Lua-scripted agents") and through its extension rt__lua_ext
** (invoke and call messages, replies, schedule callbacks, the state's
** life); an actor with a "script" never selects this table. Moving those
** calls behind this table is left to do; until then it has no callbacks,
** and an actor that selects it fails its startup with a clear message.
*/
#include <stddef.h>

#include "runtime/rt_models.h"

static void *lua_open(const rt_usercode *uc, rt_sdk_actor *self, const char **err) {
  (void)uc;
  (void)self;
  *err = "Lua-scripted agents are not built in yet (issue #13 item 2)";
  return NULL;
}

const rt_usercode rt__uc_lua = {
    .name = "lua",
    .open = lua_open,
};
