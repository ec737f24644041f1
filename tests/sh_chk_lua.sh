#!/bin/sh
# sh_chk_lua.sh: Lua invariants through the command line (issue #13 item 3):
# a script error at load and during a run exits 2 with file:line and a
# traceback; a failing Lua invariant writes a repro that replays from
# another folder without the script, and says when the script changed; the
# swarm signature and shrink name the Lua invariant. TAP lines, run by
# tests/run_tests.sh from the repository root.
TAP_NAME=chklua; . "${0%/*}/tap.sh" # REVENANT, T, ok (tests/tap.sh)

rv() { # rv ARGS...: revenant under a watchdog, output in $T/out, status in rc
  (cd "$T" && timeout -s KILL 120 "$REVENANT" "$@") > "$T/out" 2>&1
  rc=$?
}

has() { grep -q -- "$1" "$T/out"; }

mkdir -p "$T/a/lua"
cat > "$T/a/s.json" <<'J'
{"name": "charge", "duration": "10s", "invariants": "lua/charge.lua",
 "programs": {"job": [{"work": "100ms"}, {"effect": "charge"}, {"effect": "charge"}]},
 "actors": [{"id": "shop"}],
 "workload": [{"fiber": "job", "actor": "shop", "at": "1s"}],
 "expect": {"hold": ["charged_once"]}}
J
cat > "$T/a/lua/charge.lua" <<'L'
local seen = {}
revenant.invariant("charged_once", {kinds = {"effect"}, on_record = function(r)
  if seen[r.effect] then revenant.violate("charged twice", seen[r.effect], r) end
  seen[r.effect] = r
end})
L

rv run a/s.json --repro-dir ro
ok $(( rc != 1 )) "a violated Lua invariant fails the run (exit 1)"
has "violation 1/1: charged_once  actor shop" && has "chain:" && has "effect fiber=.* effect=\"charge\""
ok $? "the text report shows the Lua violation with its chain"
repro=$(ls "$T"/ro/repro-*.json 2> /dev/null | head -1)
ok $(( $? != 0 )) "a repro file is written"
mkdir -p "$T/elsewhere" && cp "$repro" "$T/elsewhere/r.json" && mv "$T/a/lua/charge.lua" "$T/charge.lua.bak"
rv replay elsewhere/r.json
ok $(( rc != 0 )) "replay works from another folder with the script gone"
has "REPRODUCED"
ok $? "... and reproduces the hash"
sed 's/charged twice/charged 2x/' "$T/charge.lua.bak" > "$T/a/lua/charge.lua"
rv replay elsewhere/r.json
has "note: script .*charge.lua changed since this file was written"
ok $? "replay says the script changed and runs the embedded copy"

rv swarm a/s.json --seeds 4 -j 1 --repro-dir sw
has "charged_once/Agent/"
ok $? "the swarm signature names the Lua invariant"
rv shrink elsewhere/r.json --invariant charged_once -o "$T/small.json"
ok $(( rc != 0 )) "shrink --invariant takes the Lua invariant's name"

printf 'revenant.invariant("charged_once", {on_record = function(r)\n  local t = nil\n  return t.x\nend})\n' > "$T/a/lua/charge.lua"
rv run a/s.json --json e.json
ok $(( rc != 2 )) "an error inside on_record is a scenario error (exit 2)"
has "invariant charged_once: a/lua/charge.lua:3: attempt to index a nil value" && has "stack traceback:"
ok $? "... with file:line and a traceback"
grep -q '"errors"' "$T/e.json" && grep -q 'a/lua/charge.lua:3: attempt to index a nil value.*stack traceback' "$T/e.json"
ok $? "... also in the JSON report's errors"
printf 'revenant.invariant("charged_once", {on_record = function(r) end})\nlocal = 1\n' > "$T/a/lua/charge.lua"
rv run a/s.json
ok $(( rc != 2 )) "a syntax error exits 2"
has "a/s.json:1:.*invariants: a/lua/charge.lua:2:"
ok $? "... naming the scenario field and the script's line"
printf 'revenant.invariant("charged_once", {on_record = function(r) local t = {} while true do t[#t+1] = {} end end})\n' > "$T/a/lua/charge.lua"
rv run a/s.json
ok $(( rc != 2 )) "a memory bomb in a callback exits 2"
has "memory cap of"
ok $? "... with the memory cap in the message"
