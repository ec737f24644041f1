/*
** rt_usercode.c: names of the user-code hooks (rt_usercode.h).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <stddef.h>

#include "runtime/rt_usercode.h"

const char *rt_uc_hook_name(rt_uc_hook h) {
  static const char *const names[RT_UC_HOOKS] = {
      [RT_UC_ON_START] = "onStart",
      [RT_UC_ON_REQUEST] = "onRequest",
      [RT_UC_FIBER_BODY] = "runFiber",
      [RT_UC_ON_FIBER_RECOVERED] = "onFiberRecovered",
      [RT_UC_ON_ALARM] = "onAlarm",
      [RT_UC_ON_SCHEDULE] = "schedule",
      [RT_UC_ON_CHAT_RECOVERY] = "onChatRecovery",
      [RT_UC_ON_AGENT_TOOL_FINISH] = "onAgentToolFinish",
      [RT_UC_TOOL_RUN] = "runAgentTool",
  };
  return (int)h >= 0 && h < RT_UC_HOOKS ? names[h] : NULL;
}
