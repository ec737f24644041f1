#!/bin/sh
# sh_lua_chat.sh: the chat, alarm and schedule surface of Lua-scripted agents
# across processes (issue #13; docs/scripting.md). Run by tests/run_tests.sh
# from the repository root, with $REVENANT; prints TAP.
# - each case of the scripted chat-recovery (its awaiting onChatRecovery
#   too) and digest scenarios gives the
#   same trace hash in two separate processes (Lua's string hashes and pairs
#   order differ between processes);
# - a throwing onChatRecovery is reported with the script's file:line in the
#   text report and the JSON;
# - crash points over the custom onChatRecovery scenario hold its checks.
REVENANT=${REVENANT:-./revenant}
case "$REVENANT" in /*) ;; *) REVENANT="$PWD/$REVENANT" ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/revenant-luachat-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM  # so EXIT runs on a signal too
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ -n "$2" ] && printf '# %s\n' "$2"; }

hashes() { sed -n 's/.*\[\([a-z]*\)\].* hash=\(0x[0-9a-f]*\).*/\1=\2/p' "$1" | tr '\n' ' '; }

# 1. two processes, one hash per case
for f in scenarios/scripted/chat-recovery.json scenarios/scripted/chat-recovery-await.json \
         scenarios/scripted/digest.json; do
  "$REVENANT" run "$f" > "$T/a.out" 2>&1; ra=$?
  "$REVENANT" run "$f" > "$T/b.out" 2>&1; rb=$?
  ha=$(hashes "$T/a.out"); hb=$(hashes "$T/b.out")
  cases=$(echo "$ha" | wc -w)
  if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ "$cases" -ge 2 ] && [ "$ha" = "$hb" ]; then
    ok "two processes give one hash per case: $f ($ha)"
  else no "two processes give one hash per case: $f" "rc $ra/$rb: $ha vs $hb"; fi
done

# 2. a throwing onChatRecovery: file:line in the text report and the JSON
"$REVENANT" run -v --case throws --json "$T/th.json" scenarios/scripted/chat-recovery.json > "$T/th.out" 2>&1
if grep -q "script error in onChatRecovery on chat" "$T/th.out" &&
   grep -q "chat-recovery.lua:[0-9]*: attempt to index a nil value (field 'recoveryData')" "$T/th.out"; then
  ok "a throwing onChatRecovery with file:line in the text report"
else no "a throwing onChatRecovery with file:line in the text report" "$(head -c 300 "$T/th.out")"; fi
if grep -q '"script_errors"' "$T/th.json" && grep -q "chat-recovery.lua:[0-9]*: attempt to index" "$T/th.json"; then
  ok "a throwing onChatRecovery with file:line in the JSON"
else no "a throwing onChatRecovery with file:line in the JSON"; fi

# 3. crash points over the custom onChatRecovery scenario
timeout 120 "$REVENANT" run --crash-points --case fixed scenarios/scripted/chat-recovery.json > "$T/cp.out" 2>&1
if [ $? -eq 0 ] && grep -q "crash-points scripted-chat-recovery \[fixed\].* 0 failed" "$T/cp.out"; then
  ok "crash points over a scripted onChatRecovery"
else no "crash points over a scripted onChatRecovery" "$(tail -3 "$T/cp.out")"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
