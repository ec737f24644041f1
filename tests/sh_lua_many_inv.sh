#!/bin/sh
# sh_lua_many_inv.sh: more distinct Lua invariant names in one process than
# one scenario's masks hold (issue #13): three generated scenarios of 8
# invariants each (24 names) run, swarm and report in one process; a
# violated invariant whose process number is past 31 is judged, named in
# the text report, the JUnit file, a repro and the swarm signature; one scenario
# with 16 invariants is a clear load error. TAP lines, run by
# tests/run_tests.sh from the repository root.
TAP_NAME=manyinv; . "${0%/*}/tap.sh" # REVENANT, T, ok (tests/tap.sh)

rv() { # rv ARGS...: revenant under a watchdog, output in $T/out, status in rc
  (cd "$T" && timeout -s KILL 120 "$REVENANT" "$@") > "$T/out" 2>&1
  rc=$?
}

has() { grep -q -- "$1" "$T/out"; }

# gen DIR S COUNT BAD EXPECT: scenario DIR/s.json whose script registers
# COUNT invariants s<S>_inv<j>; number BAD (0: none) always fails; EXPECT is
# the "expect" object.
gen() {
  mkdir -p "$T/$1"
  j=1
  : > "$T/$1/inv.lua"
  while [ "$j" -le "$3" ]; do
    if [ "$j" -eq "$4" ]; then body='revenant.violate("s'$2' number '$j' always fails")'; else body=''; fi
    echo "revenant.invariant(\"s$2_inv$j\", {on_finish = function() $body end})" >> "$T/$1/inv.lua"
    j=$((j + 1))
  done
  cat > "$T/$1/s.json" <<J
{"name": "many-$2", "duration": "2s", "invariants": "inv.lua",
 "programs": {"job": [{"work": "100ms"}]},
 "actors": [{"id": "a"}],
 "workload": [{"fiber": "job", "actor": "a", "at": "1s"}],
 "expect": $5}
J
}

gen f1 1 8 0 '{"hold": ["s1_inv1", "s1_inv8"]}'
gen f2 2 8 0 '{"hold": ["s2_inv1", "s2_inv8"]}'
# s3_inv8 is the 24th name of the process: number 17 + 23 = 40
gen f3 3 8 8 '{"hold": ["s3_inv1"], "violate": ["s3_inv8"]}'

rv run f1/s.json f2/s.json f3/s.json
ok $rc "24 distinct Lua invariant names in one process load and run (exit 0)"
has "many-3 .*s3_inv8 violated as expected"
ok $? "the 24th name is judged and named as expected"

gen f4 4 8 8 '{"hold": ["s4_inv8"]}'
rv run f1/s.json f2/s.json f3/s.json f4/s.json --repro-dir ro --junit j.xml
ok $(( rc != 1 )) "a violated 32nd name fails its run (exit 1)"
has "expected s4_inv8 to hold, but it was violated" && has "violation 1/1: s4_inv8"
ok $? "... naming it in the failure and the violation"
grep -q 's4_inv8' "$T/j.xml"
ok $? "... and in the JUnit file"
repro=$(ls "$T"/ro/repro-*.json 2> /dev/null | head -1)
mkdir -p "$T/elsewhere" && cp "$repro" "$T/elsewhere/r.json" 2> /dev/null
rv replay elsewhere/r.json
has "REPRODUCED"
ok $? "its repro replays in a fresh process with the same hash"

rv swarm f1/s.json f2/s.json f3/s.json f4/s.json --seeds 2 -j 1
has "s4_inv8/"
ok $? "the swarm signature names the 32nd invariant"

gen f5 5 16 0 '{}'
rv run f5/s.json
ok $(( rc != 2 )) "16 invariants in one scenario: a load error (exit 2)"
has "a scenario may register at most 15 invariants"
ok $? "... that says the bound"
