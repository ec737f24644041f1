/*
** rt_uc_lua.c: the slot for Lua-scripted agents (issue #13 item 2). The
** luaagent work fills this table: each entry runs the script's callback of
** the SDK's name as a coroutine in the incarnation's Lua state (rt_lua.h),
** and its yields are rt_uc_cmd commands. Until then the table has no
** callbacks, and an actor that selects it fails its startup with a clear
** message instead of silently running declarative code.
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
