#!/bin/sh
# sh_limits.sh: limits a user can reach from the command line and from a
# script, met at their edges: a seed range that would pass 2^64-1 (refused,
# never wrapped to seed 0), a Lua SDK method called with a dot instead of a
# colon (the message says how to call it, at the script's line), a script
# with more function names than the loader once listed, and shrink
# output kept under revenant-out/ beside the scenarios that a later
# `revenant run DIR` walks. One TAP line per check; every command runs
# under a watchdog.
EX="$PWD/scenarios/examples"
TAP_NAME=limits; . "${0%/*}/tap.sh" # REVENANT, T, ok (tests/tap.sh)

# rv ARGS...: runs revenant (20 s watchdog) in $T; stdout+stderr to $T/out, status in rc.
rv() {
  (cd "$T" && timeout -s KILL 20 "$REVENANT" "$@" > "$T/out" 2>&1)
  rc=$?
}
has() { grep -q -- "$1" "$T/out"; }

cp "$EX/alarm-wake.json" "$T/a.json"

# ---- seeds near 2^64 ----------------------------------------------------------
rv swarm a.json --seeds 2 --seed-base 0xffffffffffffffff -j 1 -q --json s.json --repro-dir ro
ok $(( rc != 2 )) "swarm --seed-base 2^64-1 --seeds 2 exits 2, no wrap to seed 0 ($rc)"
has "would pass the last seed 0xffffffffffffffff (at most 1 from this base)"
ok $? "... and says so"
[ ! -e "$T/s.json" ]
ok $? "... and writes no results"
rv swarm a.json --seeds 0xffffffffffffffff --seed-base 1 -j 1 -q
ok $(( rc != 2 )) "swarm --seeds 2^64-1 from seed 1 exits 2 ($rc)"
rv swarm a.json --seeds 0xffffffffffffffff --seed-base 0 -j 1 -q
ok $(( rc != 2 )) "swarm --seeds 2^64-1 x 2 cases (more than 2^64 runs) exits 2 ($rc)"
has "more than 2^64 runs"
ok $? "... and says so"
rv swarm a.json --seeds 2 --seed-base 0xfffffffffffffffe -j 1 -q --json s.json --repro-dir ro
ok $rc "swarm up to seed 2^64-1 exactly runs ($rc)"
seeds=$(grep -o '"seed":[[:space:]]*"0x[0-9a-f]*"' "$T/s.json" | sort -u | tr -d ' \t\n')
[ "$seeds" = '"seed":"0xfffffffffffffffe""seed":"0xffffffffffffffff"' ]
ok $? "... seeds 2^64-2 and 2^64-1 ($seeds)"
rv swarm a.json --time 8s --seed-base 0xfffffffffffffffe -j 1 --json s.json --repro-dir ro
ok $rc "swarm --time from seed 2^64-2 ends at the last seed, not after 8s of wrapped seeds ($rc)"
has "stops after 2 seeds at the latest"
ok $? "... and says where it stops"
ok $(( $(grep -c '"seed"' "$T/s.json") != 4 )) "... 2 seeds x 2 cases in the results"
rv run a.json --seeds 0xfffffffffffffffe..0xffffffffffffffff
ok $rc "run --seeds up to 2^64-1 runs ($rc)"
ok $(( $(grep -c '^PASS' "$T/out") != 4 )) "... 2 seeds x 2 cases, no wrap"

# ---- an SDK method called with a dot ------------------------------------------
printf '%s\n' '{"name": "dot", "seed": 1, "duration": "1m",' \
  ' "actors": [{"id": "agent", "class": "DotAgent", "script": "d.lua"}],' \
  ' "workload": [{"invoke": "agent", "method": "go", "at": "1s"}]}' > "$T/d.json"
# dot BODY MESSAGE: BODY on line 3 of the script must fail with "d.lua:3: MESSAGE"
dot() {
  printf 'local A = {}\nfunction A:go()\n  %s\nend\nreturn A\n' "$1" > "$T/d.lua"
  rv trace d.json
  has "error=\"d.lua:3: $2"
  ok $? "$1: says \"$2\" at the script's line"
}
dot 'self.runFiber("x", function(f) end)' "runFiber: call it as self:runFiber(name, fn), with a colon"
dot 'local h = self:runFiber("x", function(f) revenant.work(10) return 1 end) h.await()' \
  "await: call it as handle:await(), with a colon"
dot 'self:runFiber("x", function(fiber) fiber.stash(1) end)' "stash: call it as fiber:stash(value), with a colon"
dot 'self:runFiber("x", function(fiber) fiber.stash({done = 1}) end)' "stash: call it as fiber:stash(value), with a colon"
dot 'self.stash({done = 1})' "stash: call it as self:stash(value), with a colon"
dot 'self.keepAliveWhile(function() end)' "keepAliveWhile: call it as self:keepAliveWhile(fn), with a colon"
dot 'self.schedule(1, "go")' "schedule: call it as self:schedule(when, callback, payload), with a colon"
dot 'self.call("a", "b")' "call: call it as self:call(actor, method, args), with a colon"
dot 'self.saveMessages("hi")' "saveMessages: call it as self:saveMessages(text), with a colon"
h1=$(cd "$T" && "$REVENANT" run d.json | grep -o 'hash=0x[0-9a-f]*')
h2=$(cd "$T" && "$REVENANT" run d.json | grep -o 'hash=0x[0-9a-f]*')
[ -n "$h1" ] && [ "$h1" = "$h2" ]
ok $? "the dot error's run has one trace hash in two processes ($h1 $h2)"
dot 'self:runFiber("", function() end)' "runFiber: the name must be a non-empty string"
dot 'self:runFiber("x", 1)' "runFiber: fn must be a function"
printf 'local A = {}\nfunction A:go()\n  %s\nend\nreturn A\n' \
  'self:runFiber("x", function(fiber) fiber:stash({done = 1}) self:stash({done = 2}) end)' > "$T/d.lua"
rv trace d.json
has 'value={"done":2}'
ok $? "fiber:stash and self:stash with a colon still stash"

# ---- a script with many functions: every name is checked and callable --------
# mk FILE EXTRA: a script with 1000 methods m0000..m0999 (and EXTRA before the return)
mk() {
  { echo 'local A = {}'
    i=0
    while [ $i -lt 1000 ]; do printf 'function A:m%04d() revenant.log("m%04d") end\n' $i $i; i=$((i + 1)); done
    echo "$2"
    echo 'return A'; } > "$T/$1"
}
mk many.lua ''
mk many-bad.lua 'local Base = {} function Base:onStrat() end setmetatable(A, {__index = Base})'
printf '%s\n' '{"name": "many", "seed": 1, "duration": "1m",' \
  ' "actors": [{"id": "agent", "class": "ManyAgent", "script": "many.lua"}],' \
  ' "workload": [{"invoke": "agent", "method": "m0999", "at": "1s"}, {"invoke": "agent", "method": "m0000", "at": "2s"}]}' \
  > "$T/many.json"
sed 's/many.lua/many-bad.lua/' "$T/many.json" > "$T/many-bad.json"
rv check many.json
ok $rc "a script with 1000 methods loads, its last one invokable ($rc)"
rv trace many.json
has 'message="m0999"'
ok $? "... and m0999 runs"
rv check many-bad.json
ok $(( rc != 2 )) "a misspelled callback of a base table under 1000 methods is still caught ($rc)"
has 'unknown callback "onStrat"; did you mean "onStart"?'
ok $? "... with its did-you-mean"

# ---- shrink output under revenant-out/ and a later `run .` ------------------------
mkdir -p "$T/sp/lua"
cp "$EX/lua/sees_last_stash.lua" "$T/sp/lua/"
# the turn-commits case expects the stricter invariant to hold: it fails (a bug to shrink)
sed 's/"no_double_recovery"\], "violate": \["recovery_sees_last_stash"\]/"no_double_recovery", "recovery_sees_last_stash"]/' \
  "$EX/lua-sees-last-stash.json" > "$T/sp/s.json"
(cd "$T/sp" && timeout -s KILL 20 "$REVENANT" run . -q > "$T/out" 2>&1)
ok $(( $? != 1 )) "the edited scenario fails (the bug)"
(cd "$T/sp" && timeout -s KILL 40 "$REVENANT" shrink revenant-out/repro-*.json --time 20s > "$T/out" 2>&1)
ok $? "shrink of its repro writes revenant-out/ ($(tail -1 "$T/out"))"
cp "$T/sp/revenant-out/lua-sees-last-stash-shrunk.json" "$T/sp/revenant-out/kept.json"
(cd "$T/sp" && timeout -s KILL 40 "$REVENANT" shrink s.json --case turn-commits -o revenant-out/o.json --time 20s > /dev/null 2>&1)
[ -f "$T/sp/revenant-out/o.json" ]
ok $? "shrink -o revenant-out/o.json writes it"
# the bug fixed: the case expects what happens; the shrunk files still fail, and are output
cp "$EX/lua-sees-last-stash.json" "$T/sp/s.json"
(cd "$T/sp" && timeout -s KILL 20 "$REVENANT" run . > "$T/out" 2>&1)
rc=$?
ok $rc "a later 'run .' passes: it does not load revenant-out/ ($rc)"
has "^2 passed, 0 failed"
ok $? "... only the two cases of s.json run"
(cd "$T/sp" && timeout -s KILL 20 "$REVENANT" run revenant-out -q > "$T/out" 2>&1)
rc=$?
has "^0 passed, 3 failed"
ok $(( $? + (rc != 1) )) "naming revenant-out walks it: the three shrunk files, not the repro ($rc)"

echo "1..$n"
[ "$fails" -eq 0 ]
