#!/bin/sh
# sh_seam.sh: the floors inside runtime/ stay floors (issue #13 item 1;
# docs/architecture.md, "Inside runtime/"). Run by tests/run_tests.sh from
# the repository root.
#
#   host   rt_world.c rt_storage.c rt_query.c rt_host.h   (the platform)
#   core   rt_agent.c rt_agent_store.c rt_sdk.c rt_agent.h (the SDK core)
#   models rt_toolrun.c rt_legacy.c rt_executor.c rt_thread.c rt_chat.c,
#          user code rt_uc_*.c, the composition root rt_models.c
#
# A host file may not include a header of a floor above or name what lives
# there (an SDK function, message kind, call purpose, memory type or table);
# a core file may not include rt_models.h or name a model. Comments count:
# the host should not even describe the layers above by name.
# Prints one TAP line per check; the first checks run the checker on a
# planted violation, so the test can fail.
cd "${ROOT:-.}" || exit 1
n=0
fails=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }

# Names of the floors above the host (extended regular expressions).
HOST_BANNED='#include "runtime/(rt_agent|rt_models|rt_usercode|rt_sdk|rt_lua[a-z_]*)\.h"|\brt__(fiber|toolrun|chat|legacy|exec|thread|schedule|keepalive|startup|check_run_fibers|alarm_handle\b|hook|orphan|prog|uc|agent|w_fiber|w_stash|w_schedule|w_toolrun|w_child|load_orphans|due_schedules|callbacks_cut)[a-z_]*|\brt_mem\b|\bRT_MEM\b|\bMSG_(FIBER|TOOLRUN|CALL_[A-Z]+|RUN_DONE|LEGACY_[A-Z]+|EXEC_TURN|THREAD_WRITER|CHAT|SCHEDULE|CANCEL_SCHEDULE|KEEPALIVE_[A-Z]+|TOOL_RECOVERY|STASH_OUTSIDE)\b|\bCALL_(GATED|DEFERRED|FIBER|TOOL)_[A-Z]+|\bcf_agents?_|\bcf_ai_chat|\bbeach_turn|\brv_(child|thread|chat)|\bSU_[A-Z_]+|\brt_(fiber|orphan|agent_ext|usercode|sdk_actor)\b'
# Names of the models, banned in the core.
CORE_BANNED='#include "runtime/rt_models\.h"|\brt__(toolrun|chat|legacy|exec|thread)_[a-z_]*|\brt__uc_(declarative|lua)\b|\bcf_agent_tool_runs\b|\bcf_agents_fibers\b|\bcf_ai_chat|\bbeach_turn|\brv_(child|thread|chat)'
# Script names, banned in the core's .c files: scripts reach it only through
# the user-code table (rt_uc_lua.c; issue #13 item 1).
SCRIPT_BANNED='\brt__lg_[a-z_]*|\brt__lua_ext\b|->lua\b|\blua_[A-Za-z_]+|\bLUA_[A-Z_]+|#include "runtime/rt_lua[a-z_]*\.h"|#include <lua'

# check FILE REGEX: prints the offending lines, status 1 if any.
check() {
  if grep -nE "$2" "$1"; then return 1; fi
  return 0
}

T=$(mktemp -d "${TMPDIR:-/tmp}/revenant-seam-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM  # so EXIT runs on a signal too

# The checker catches planted violations (so a pass below means something).
printf '#include "runtime/rt_agent.h"\nstatic void f(void) { rt__toolrun_start(0, 0, 0, 0); }\n' > "$T/host.c"
if check "$T/host.c" "$HOST_BANNED" > /dev/null; then notok "checker misses a host violation"; else ok "checker catches a host violation"; fi
printf 'static const char *q = "SELECT * FROM cf_agent_tool_runs";\n' > "$T/core.c"
if check "$T/core.c" "$CORE_BANNED" > /dev/null; then notok "checker misses a core violation"; else ok "checker catches a core violation"; fi
printf 'static int busy(const rt_inc *m) { return m->gate_held; }\n' > "$T/clean.c"
if check "$T/clean.c" "$HOST_BANNED" > /dev/null; then ok "checker passes clean host code"; else notok "checker flags clean host code"; fi
printf 'static void g(rt_fiber *f) { if (f->lua) rt__lg_fiber_begin(0, 0, f->id); }\n' > "$T/script.c"
if check "$T/script.c" "$SCRIPT_BANNED" > /dev/null; then notok "checker misses a script call in the core"; else ok "checker catches a script call in the core"; fi
if check "$T/clean.c" "$SCRIPT_BANNED" > /dev/null; then ok "checker passes core code without scripts"; else notok "checker flags core code without scripts"; fi

for f in runtime/rt_world.c runtime/rt_storage.c runtime/rt_query.c runtime/rt_host.h; do
  if [ ! -f "$f" ]; then notok "$f missing"; continue; fi
  if out=$(check "$f" "$HOST_BANNED"); then
    ok "host file $f names nothing above the host"
  else
    notok "host file $f names the layers above it"
    printf '%s\n' "$out" | sed 's/^/# /' | head -20
  fi
done
for f in runtime/rt_agent.c runtime/rt_agent_store.c runtime/rt_agent.h runtime/rt_sdk.c; do
  if [ ! -f "$f" ]; then notok "$f missing"; continue; fi
  if out=$(check "$f" "$CORE_BANNED"); then
    ok "core file $f names no model"
  else
    notok "core file $f names a model"
    printf '%s\n' "$out" | sed 's/^/# /' | head -20
  fi
done
for f in runtime/rt_agent.c runtime/rt_agent_store.c runtime/rt_sdk.c; do
  if [ ! -f "$f" ]; then notok "$f missing"; continue; fi
  if out=$(check "$f" "$SCRIPT_BANNED"); then
    ok "core file $f names no script symbol (scripts go through rt_usercode)"
  else
    notok "core file $f names script symbols"
    printf '%s\n' "$out" | sed 's/^/# /' | head -20
  fi
done
# Scripts reach the agent layer only through their user-code table: no
# runtime file but the script's own (rt_luaagent.c, rt_uc_lua.c, the Lua
# state rt_lua*.c), the composition root rt_models.c and the models'
# header rt_models.h names a script symbol (nor do the floors' headers), and the script's extension handles no message kind or call reply
# (its methods, RPCs and replies go through on_request, on_call and
# call_reply; no script-specific message kind or call purpose exists).
SCRIPT_SYM='\brt__lg_[a-z_]*|\brt__lua_ext\b|\bMSG_LUA_[A-Z_]*|\bCALL_LUA\b'
printf 'static void h(rt_world *w) { rt__lg_method(w, 0, 1, "m", 0, 0); }\n' > "$T/model.c"
if check "$T/model.c" "$SCRIPT_SYM" > /dev/null; then notok "checker misses a script symbol in a model"; else ok "checker catches a script symbol in a model"; fi
bad=""
for f in runtime/*.c runtime/rt_agent.h runtime/rt_host.h runtime/rt_usercode.h runtime/rt_sdk.h; do
  case "$f" in runtime/rt_luaagent.c|runtime/rt_uc_lua.c|runtime/rt_lua*.c|runtime/rt_models.c) continue ;; esac
  if ! check "$f" "$SCRIPT_SYM" > /dev/null; then bad="$bad $f"; fi
done
if [ -z "$bad" ]; then ok "no runtime file or floor header outside the script's own names a script symbol"
else notok "runtime files name script symbols:$bad"; fi
ext=$(sed -n '/^rt_agent_ext rt__lua_ext = {/,/^};/p' runtime/rt_luaagent.c)
if [ -z "$ext" ]; then notok "rt__lua_ext not found in runtime/rt_luaagent.c"
elif printf '%s\n' "$ext" | grep -qE '\.(kinds|message|purposes|reply|notify)\b'; then
  notok "the script's extension handles messages or replies (use the user-code table)"
  printf '%s\n' "$ext" | sed 's/^/# /'
else ok "the script's extension handles no message kind or reply"; fi

# Only runtime/ sees the floors' internal headers.
if out=$(grep -lE '#include "runtime/(rt_host|rt_agent|rt_models)\.h"' \
           sim/*.c faults/*.c checks/*.c scenarios/*.c reports/*.c cli/*.c 2>/dev/null); then
  notok "a folder outside runtime/ includes a runtime floor header"
  printf '%s\n' "$out" | sed 's/^/# /'
else
  ok "no folder outside runtime/ includes a runtime floor header"
fi
[ "$fails" -eq 0 ]
