#!/bin/sh
# sh_lua_modules.sh: repro files embed the Lua modules their runs loaded
# (issue #13): a failing scripted scenario whose agent script requires one
# module at its top level and another inside a callback, and whose
# invariant script requires a third, writes a repro that replays alone in
# another folder with the same hash; a changed module on disk is named in a
# note and the embedded copy runs; a module too large for a repro file is a
# clear error. TAP lines, run by tests/run_tests.sh from the repository root.
TAP_NAME=modules; . "${0%/*}/tap.sh" # REVENANT, T, ok (tests/tap.sh)

rv() { # rv ARGS...: revenant under a watchdog, output in $T/out, status in rc
  (cd "$T" && timeout -s KILL 120 "$REVENANT" "$@") > "$T/out" 2>&1
  rc=$?
}

has() { grep -q -- "$1" "$T/out"; }
hash_of() { sed -n 's/.*hash[= ]\(0x[0-9a-f]*\).*/\1/p' "$T/out" | head -1; }

mkdir -p "$T/a/lib"
cat > "$T/a/s.json" <<'J'
{"name": "modules", "duration": "10s", "invariants": "inv.lua",
 "actors": [{"id": "shop", "script": "agent.lua"}],
 "workload": [{"invoke": "shop", "method": "charge", "at": "1s"}],
 "expect": {"hold": ["charged_once"]}}
J
cat > "$T/a/agent.lua" <<'L'
local money = require("lib.money")
return {
  charge = function(self)
    local fmt = require("lib.fmt") -- loaded inside a callback, at run time
    revenant.effect("charge", fmt.key(money.amount()))
    revenant.effect("charge", fmt.key(money.amount())) -- the bug: twice
  end,
}
L
echo 'return {amount = function() return 42 end}' > "$T/a/lib/money.lua"
echo 'return {key = function(v) return "order-" .. v end}' > "$T/a/lib/fmt.lua"
cat > "$T/a/inv.lua" <<'L'
local keys = require("invkeys")
local seen = {}
revenant.invariant("charged_once", {kinds = {"effect"}, on_record = function(r)
  local k = keys.of(r)
  if seen[k] then revenant.violate("charged twice: " .. k, seen[k], r) end
  seen[k] = r
end})
L
echo 'return {of = function(r) return r.effect end}' > "$T/a/invkeys.lua"

rv run a/s.json --repro-dir ro
ok $(( rc != 1 )) "the scripted run with three modules fails as written (exit 1)"
h1=$(hash_of)
repro=$(ls "$T"/ro/repro-*.json 2> /dev/null | head -1)
ok $(( $? != 0 )) "a repro file is written"
for m in lib/money.lua lib/fmt.lua invkeys.lua; do
  grep -q "\"$m\":{\"hash\":\"0x" "$repro"
  ok $? "the repro embeds $m with its hash"
done

mkdir -p "$T/elsewhere" && cp "$repro" "$T/elsewhere/r.json"
rv replay elsewhere/r.json
has "REPRODUCED" && [ "$(hash_of)" = "$h1" ]
ok $? "the repro alone in another folder replays with the same hash ($h1)"
! has "changed since"
ok $? "... and no module is said to have changed"

echo 'return {amount = function() return 43 end}' > "$T/a/lib/money.lua"
rv replay elsewhere/r.json
has "note: .*module .*lib/money.lua changed since this file was written" && has "running the embedded copy"
ok $? "a module changed on disk since is named in a note"
has "REPRODUCED"
ok $? "... and the embedded copy runs (same hash)"

rm -rf "$T/a/lib"
rv shrink elsewhere/r.json -o "$T/small.json"
grep -q '"lib/fmt.lua":{"hash":"0x' "$T/small.json" && [ "$(grep -o '"modules"' "$T/small.json" | wc -l)" -eq 1 ]
ok $? "shrink -o of the repro (its module files gone) embeds the modules again, once"
mkdir -p "$T/third" && cp "$T/small.json" "$T/third/small.json"
rv run third/small.json
[ "$rc" -eq 1 ] && has "expected charged_once to hold, but it was violated"
ok $? "... and that file runs alone in a third folder (the kept bug, exit 1, not a missing module)"

awk 'BEGIN { printf "return {pad = \""; for (i = 0; i < 1100000; i++) printf "x"; print "\"}" }' > "$T/a/big.lua"
cat > "$T/a/big.json" <<'J'
{"name": "big", "duration": "5s", "actors": [{"id": "b", "script": "bigagent.lua"}],
 "workload": [{"invoke": "b", "method": "go", "at": "1s"}]}
J
printf 'return {go = function(self) return #require("big").pad end}\n' > "$T/a/bigagent.lua"
rv run a/big.json
has "big.lua: too large (.* bytes; a module is at most 1048576 bytes"
ok $? "a module too large for a repro file is a clear error"
