#!/bin/sh
# sh_lua_agents.sh: Lua-scripted agents across processes (issue #13). Run by
# tests/run_tests.sh from the repository root, with $REVENANT; prints TAP.
# - the same script gives the same trace hash in two separate processes
#   (stock Lua's string hashes, pairs order and math.random differ there);
# - every sandbox escape from a callback, an endless loop and an
#   allocation bomb end the run with exit 2 and a clear message, in time;
# - a Lua error shows file:line in the text report and the JSON;
# - scripts run in swarm, shrink (its output runs from another folder),
#   replay of a repro file from another folder, crash points and a SIGKILL
#   worker; handle:await() of ended and throwing fibers.
REVENANT=${REVENANT:-./revenant}
case "$REVENANT" in /*) ;; *) REVENANT="$PWD/$REVENANT" ;; esac
ROOT=$PWD
C=tests/corpus/lua_agents
T=$(mktemp -d "${TMPDIR:-/tmp}/revenant-lua-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM  # so EXIT runs on a signal too
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ -n "$2" ] && printf '# %s\n' "$2"; }

hash_of() { sed -n 's/.* hash=\(0x[0-9a-f]*\).*/\1/p' "$1" | tr '\n' ' '; }

# 1. two processes, one hash (per case)
for f in $C/determinism.json scenarios/scripted/research.json; do
  "$REVENANT" run "$f" > "$T/a.out" 2>&1
  "$REVENANT" run "$f" > "$T/b.out" 2>&1
  ha=$(hash_of "$T/a.out"); hb=$(hash_of "$T/b.out")
  if [ -n "$ha" ] && [ "$ha" = "$hb" ]; then ok "two processes give one hash: $f ($ha)"
  else no "two processes give one hash: $f" "$ha vs $hb"; fi
done

# 2. escapes, budget and memory: exit 2 with the refusal named, within 30 s
check_exit2() { # file, expected text
  timeout 30 "$REVENANT" run "$C/$1.json" > "$T/o" 2>&1
  rc=$?
  if [ $rc -eq 2 ] && grep -q "$2" "$T/o"; then ok "$1: exit 2, \"$2\""
  else no "$1: exit 2, \"$2\"" "rc=$rc: $(head -c 300 "$T/o")"; fi
}
check_exit2 execute "sandbox escape in execute: escapes.lua:4: os.execute is refused"
check_exit2 open "escapes.lua:5: io.open is refused"
check_exit2 requireOutside "require '../secret' is refused"
check_exit2 requireModule "require 'socket': socket.lua: no such file in the scenario's folder"
check_exit2 binary "escapes.lua:8: load: binary chunks are refused"
check_exit2 dump "escapes.lua:9: string.dump is refused"
check_exit2 caught "sandbox escape in caught: escapes.lua:11: os.execute is refused"
check_exit2 loop "instruction budget exhausted in loop"
check_exit2 bomb "memory cap exceeded in bomb"
[ -e /tmp/revenant-escaped ] && no "os.execute did not run" "/tmp/revenant-escaped exists"

# 3. a Lua error: file:line in the text report and the JSON
"$REVENANT" run -v --case fixed --json "$T/ka.json" scenarios/scripted/keepalive.json > "$T/ka.out" 2>&1
if grep -q "script error in pay" "$T/ka.out" && grep -q "keepalive.lua:13: card declined" "$T/ka.out"; then
  ok "Lua error with file:line in the text report"
else no "Lua error with file:line in the text report" "$(head -c 300 "$T/ka.out")"; fi
if grep -q '"script_errors"' "$T/ka.json" && grep -q 'keepalive.lua:13: card declined' "$T/ka.json"; then
  ok "Lua error with file:line in the JSON"
else no "Lua error with file:line in the JSON"; fi

# 4. swarm over a scripted scenario (failures are findings, exit 1; 2 is an error)
"$REVENANT" swarm scenarios/scripted/orders.json --seeds 12 -j 2 --repro-dir "$T/sw" \
  --json "$T/sw.json" > "$T/sw.out" 2>&1
rc=$?
if [ $rc -le 1 ] && grep -q "24 runs" "$T/sw.out"; then ok "swarm runs a scripted scenario"
else no "swarm runs a scripted scenario" "rc=$rc $(tail -3 "$T/sw.out")"; fi

# 5. a repro from a scripted scenario replays from another folder; shrink -o
#    output runs from there too (the scripts are embedded)
"$REVENANT" run --repro-dir "$T/rp" $C/orders-fails.json > /dev/null 2>&1
rp=$(ls "$T"/rp/*.json 2>/dev/null | head -1)
if [ -n "$rp" ] && (cd / && "$REVENANT" replay "$rp" > "$T/rp.out" 2>&1; [ $? -le 1 ]) &&
   grep -q REPRODUCED "$T/rp.out"; then ok "replay of a scripted repro from another folder"
else no "replay of a scripted repro from another folder" "$(head -c 300 "$T/rp.out" 2>/dev/null)"; fi
if [ -n "$rp" ] && (cd / && "$REVENANT" shrink "$rp" -o "$T/shrunk.json" > "$T/sh.out" 2>&1) &&
   grep -q '"text"' "$T/shrunk.json" && (cd / && "$REVENANT" run "$T/shrunk.json" > /dev/null 2>&1; [ $? -le 1 ]); then
  ok "shrink -o output of a scripted scenario runs from another folder"
else no "shrink -o output of a scripted scenario runs from another folder" "$(tail -3 "$T/sh.out" 2>/dev/null)"; fi

# 6. a SIGKILL worker runs the script; the next process resumes its fiber
timeout 60 "$REVENANT" run $C/sigkill.json > "$T/sk.out" 2>&1
if [ $? -eq 0 ] && grep -q "^PASS lua-sigkill" "$T/sk.out"; then ok "scripts in SIGKILL workers"
else no "scripts in SIGKILL workers" "$(head -c 300 "$T/sk.out")"; fi

# 7. handle:await() of a fiber that already ended and of one that throws
"$REVENANT" run $C/await.json > "$T/aw.out" 2>&1
if [ $? -eq 0 ]; then ok "await of an ended fiber and of a throwing one"
else no "await of an ended fiber and of a throwing one" "$(head -c 300 "$T/aw.out")"; fi

# 8. crash points over a scripted scenario: a crash right after each durable write
timeout 120 "$REVENANT" run --crash-points --case fixed scenarios/scripted/orders.json > "$T/cp.out" 2>&1
if [ $? -eq 0 ] && grep -q "crash-points scripted-orders \[fixed\].* 0 failed" "$T/cp.out"; then
  ok "crash points over a scripted scenario"
else no "crash points over a scripted scenario" "$(tail -3 "$T/cp.out")"; fi

# shrink drops an unused actor in front of a scripted one: the script moves
# with its actor (the slots are per actor index), so the result still fails
mkdir -p "$T/shr"
cp scenarios/scripted/orders.json scenarios/scripted/orders.lua scenarios/scripted/charged_once.lua "$T/shr/"
sed -i 's|"actors": \[{"id": "shop"|"actors": [{"id": "idle"}, {"id": "shop"|' "$T/shr/orders.json"
if "$REVENANT" shrink "$T/shr/orders.json" --case broken -o "$T/shr/out.json" > "$T/shr.out" 2>&1 &&
   grep -q "after:  1 actors" "$T/shr.out" && grep -q '"script"' "$T/shr/out.json"; then
  ok "shrink removes an actor before a scripted one and keeps the script on its actor"
else no "shrink removes an actor before a scripted one and keeps the script on its actor" "$(tail -3 "$T/shr.out")"; fi

# the host's look-ups of a script's callbacks: through __index as a script
# reads them (an inherited onStart runs), but protected (an __index that
# throws or loops, at load or when an alarm fires, is a clear exit 2, never
# an abort); a schedule's look-up throws in the calling script; fibers
# nested without a wait get an error in the body instead of a stack overflow
L=$C/lookups.json
lookup() { # case, expected exit (2, or 0 for "at most 1"), expected text
  timeout 30 "$REVENANT" run -v --case "$1" "$L" > "$T/lk.out" 2>&1
  rc=$?
  if { { [ "$2" = 2 ] && [ $rc -eq 2 ]; } || { [ "$2" = 0 ] && [ $rc -le 1 ]; }; } && grep -q "$3" "$T/lk.out"; then
    ok "callback look-up, $1: exit $rc, \"$3\""
  else no "callback look-up, $1: \"$3\"" "rc=$rc: $(head -c 300 "$T/lk.out")"; fi
}
lookup inherits 0 "runFiber: 200 fibers started one inside another without a wait"
lookup throws 2 "looking up the callback onStart: lookups.lua:[0-9]*: no such callback: onStart"
lookup loops 2 "looking up the callback onStart: lookups.lua:[0-9]*: instruction budget"
lookup alarm 2 "looking up the callback onAlarm: lookups.lua:[0-9]*: onAlarm is not here today"
lookup schedule 0 "lookups.lua:[0-9]*: schedule looked up nowhere"
if "$REVENANT" trace --case inherits "$L" 2>&1 | grep -q 'message="inherited onStart"'; then
  ok "an onStart inherited through __index runs"
else no "an onStart inherited through __index runs"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
