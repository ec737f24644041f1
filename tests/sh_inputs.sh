#!/bin/sh
# sh_inputs.sh: paths that are not what they seem, met by a new user's pass
# (docs/cli.md "Paths"): a named pipe where a scenario, a script, an
# invariant script or a module is expected (it must not block the open), a
# directory that cannot be read, a symlink loop in a scenario tree, and a
# Lua agent that schedules a callback it does not define. One TAP line per
# check; every command runs under a watchdog, so a hang is a failure.
TAP_NAME=inputs; . "${0%/*}/tap.sh" # REVENANT, T, ok (tests/tap.sh)

# rv ARGS...: runs revenant (10 s watchdog) in $T; stdout+stderr to $T/out, status in rc.
rv() {
  (cd "$T" && timeout -s KILL 10 "$REVENANT" "$@" > "$T/out" 2>&1)
  rc=$?
}
has() { grep -q -- "$1" "$T/out"; }

printf '{"name": "x", "duration": "1m", "actors": [{"id": "a"}]}\n' > "$T/a.json"

# ---- named pipes: read as empty, never a blocked open ------------------------
mkfifo "$T/pipe.json" "$T/pipe.lua"
rv check pipe.json
ok $(( rc != 2 )) "check of a named pipe with no writer exits 2 (it blocked in open) ($rc)"
has "pipe.json:1:1: expected a value: the file is empty"
ok $? "... and says the file is empty"
rv run pipe.json
ok $(( rc != 2 )) "run of a named pipe exits 2 ($rc)"
rv replay pipe.json
ok $(( rc != 2 )) "replay of a named pipe exits 2 ($rc)"
rv shrink pipe.json -o out.json
ok $(( rc != 2 )) "shrink of a named pipe exits 2 ($rc)"
rv merge pipe.json
ok $(( rc != 2 )) "merge of a named pipe exits 2 ($rc)"
printf '{"name": "x", "duration": "1m", "actors": [{"id": "a", "script": "pipe.lua"}]}\n' > "$T/s.json"
rv check s.json
ok $(( rc != 2 )) "an agent script that is a named pipe is an error, not a hang ($rc)"
printf '{"name": "x", "duration": "1m", "actors": [{"id": "a"}], "invariants": "pipe.lua"}\n' > "$T/i.json"
rv check i.json
ok $(( rc != 2 )) "an invariant script that is a named pipe is an error, not a hang ($rc)"
printf 'local m = require("pipe")\nreturn {}\n' > "$T/req.lua"
printf '{"name": "x", "duration": "1m", "actors": [{"id": "a", "script": "req.lua"}]}\n' > "$T/r.json"
rv check r.json
ok $(( rc != 2 )) "require of a module that is a named pipe is an error, not a hang ($rc)"
has "require 'pipe': pipe.lua: not a regular file"
ok $? "... naming it: pipe.lua: not a regular file"
rv check /dev/stdin < "$T/a.json"
ok $(( rc != 0 )) "a scenario on standard input (/dev/stdin) still loads ($rc)"
(cd "$T" && cat a.json | timeout -s KILL 10 "$REVENANT" check /dev/stdin > "$T/out" 2>&1)
ok $? "... and so does one piped in (a pipe with a writer)"

# ---- a directory given as a script -------------------------------------------
mkdir "$T/d.lua"
printf '{"name": "x", "duration": "1m", "actors": [{"id": "a", "script": "d.lua"}]}\n' > "$T/d.json"
rv check d.json
has '"script": cannot read ./d.lua: Is a directory'
ok $? "a script path that is a directory says so (it read as an empty script)"

# ---- a symlink loop in a scenario tree: each scenario once -------------------
mkdir -p "$T/tree/sub"
cp "$T/a.json" "$T/tree/sub/a.json"
ln -s .. "$T/tree/sub/up"
rv check tree
has "^1 valid, 0 invalid" && ! has "up/"
ok $? "check of a tree with a symlink loop loads each file once (it loaded 41 copies)"
rv run tree -q
has "^1 passed, 0 failed"
ok $? "... and run runs it once"

# ---- run . twice: the first run's outputs are not scenarios of the second ----
mkdir -p "$T/proj"
printf '{"name": "p", "duration": "1m", "actors": [{"id": "a"}], "expect": {"violate": ["no_wedge"]}}\n' > "$T/proj/p.json"
(cd "$T/proj" && timeout -s KILL 20 "$REVENANT" run . -q --json r.json --trace t.json > /dev/null 2>&1)
(cd "$T/proj" && timeout -s KILL 20 "$REVENANT" swarm p.json --seeds 2 -j 1 -q --write-baseline bl.json > /dev/null 2>&1)
(cd "$T/proj" && timeout -s KILL 20 "$REVENANT" run . -q > "$T/out" 2>&1)
rc=$?
[ $rc -eq 1 ] && [ -f "$T/proj/revenant-out/repro-p-default-0x1.json" ] && has "^0 passed, 1 failed$"
ok $? "a second 'run .' leaves out the repro, results, trace and baseline files written before (1 error each) ($rc)"

# ---- paths that cannot be read (as a user the permissions apply to) ----------
AS=""
if [ "$(id -u)" -eq 0 ]; then
  command -v setpriv > /dev/null && AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
if [ "$(id -u)" -ne 0 ] || [ -n "$AS" ]; then
  mkdir -p "$T/locked" "$T/part/inner"
  cp "$T/a.json" "$T/locked/a.json"
  cp "$T/a.json" "$T/part/a.json"
  chmod 000 "$T/locked" "$T/part/inner"
  chmod 755 "$T"
  (cd "$T" && timeout -s KILL 10 $AS "$REVENANT" check locked > "$T/out" 2>&1)
  rc=$?
  [ $rc -eq 2 ] && has "locked: cannot read the directory: Permission denied"
  ok $? "an unreadable directory is named with the reason (it exited 2 silently) ($rc)"
  (cd "$T" && timeout -s KILL 10 $AS "$REVENANT" run locked/a.json > "$T/out" 2>&1)
  rc=$?
  [ $rc -eq 2 ] && has "locked/a.json: Permission denied"
  ok $? "a file in an unreadable directory says Permission denied, not 'no such file' ($rc)"
  (cd "$T" && timeout -s KILL 10 $AS "$REVENANT" check part > "$T/out" 2>&1)
  rc=$?
  [ $rc -eq 2 ] && has "part/inner: cannot read the directory" && has "^ok part/a.json" &&
    has "^1 valid, 1 invalid"
  ok $? "check counts the readable file valid and the unreadable folder invalid (it said 0 valid) ($rc)"
else
  for k in 1 2 3; do ok 0 "# skip: running as root without setpriv"; done
fi

# ---- a replay line a shell can run: a path with a space, a case with a quote ----
mkdir -p "$T/my dir"
printf '{"name": "q", "duration": "1m", "actors": [{"id": "a"}],\n "cases": [{"name": "it'"'"'s x", "expect": {"violate": ["no_wedge"]}}]}\n' > "$T/my dir/q.json"
rv run "my dir/q.json" -q --repro-dir ro
line=$(sed -n 's/^ *replay: revenant //p' "$T/out")
[ -n "$line" ] && (cd "$T" && eval "\"\$REVENANT\" $line -q" > "$T/out2" 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "^0 passed, 1 failed" "$T/out2"
ok $? "the replay line of a failure quotes a path with a space and a case with a quote: a shell runs it ($rc: $line)"

# ---- an output over an input is refused, the input kept ----------------------
cp "$T/a.json" "$T/keep.json"
rv run keep.json -q --json keep.json
[ $rc -eq 2 ] && has "would overwrite the input keep.json" && cmp -s "$T/a.json" "$T/keep.json"
ok $? "run --json over its own scenario file is refused and the file kept (it was replaced by results) ($rc)"
rv swarm keep.json --seeds 1 -q --html keep.json
[ $rc -eq 2 ] && cmp -s "$T/a.json" "$T/keep.json"
ok $? "so is swarm --html over it ($rc)"
rv shrink keep.json -o keep.json
[ $rc -eq 2 ] && has "would overwrite the input" && cmp -s "$T/a.json" "$T/keep.json"
ok $? "and shrink -o over its input ($rc)"

# ---- a Lua agent that schedules a callback it does not define ----------------
cat > "$T/sched.lua" << 'EOF'
local A = {}
function A:arm()
  self:schedule(5, "remnid", {n = 1})
end
function A:remind(payload) revenant.log("remind", payload.n) end
return A
EOF
printf '{"name": "sched", "duration": "1m", "actors": [{"id": "a", "script": "sched.lua"}],\n "workload": [{"invoke": "a", "method": "arm", "at": "1s"}]}\n' > "$T/sched.json"
rv trace sched.json --filter 'request_fail,schedule_set,user_log'
has "request_fail .*sched.lua:3: schedule: this.remnid is not a function (sched.lua has no function 'remnid'; did you mean 'remind'?)"
ok $? "schedule of a callback the script lacks fails the call at its line (it was accepted and ran nothing)"
! has schedule_set
ok $? "... and writes no schedule row"
rv trace sched.json --format jsonl --filter script_error
h1=$(cat "$T/out")
rv trace sched.json --format jsonl --filter script_error
[ -n "$h1" ] && [ "$h1" = "$(cat "$T/out")" ]
ok $? "... the same script_error in two processes"

# ---- shrink --invariant with a typo: named before any case is picked ----------
REPO=$PWD
rv shrink "$REPO/scenarios/examples/lua-effects-once.json" --invariant lua_efects_once -o x.json
[ $rc -eq 2 ] && has "unknown invariant: lua_efects_once .*did you mean lua_effects_once?" && [ ! -e "$T/x.json" ]
ok $? "shrink --invariant with a typo names it with a did-you-mean (it said 'no case fails') ($rc)"

# ---- a script table that inherits its methods (class A extends Base) --------
cat > "$T/inh.lua" << 'LUA'
local Base = {}
function Base:tick() revenant.log("tick") end
function Base:arm() self:schedule(1, "tick") return "armed" end
return setmetatable({}, {__index = Base})
LUA
printf '{"name": "inh", "duration": "1m", "actors": [{"id": "a", "script": "inh.lua"}],\n "workload": [{"invoke": "a", "method": "arm", "at": "1s"}]}\n' > "$T/inh.json"
rv trace inh.json --filter 'request_ok,user_log'
[ $rc -eq 0 ] && has 'request_ok .*result="armed"' && has 'user_log .*message="tick"'
ok $? "invoke and schedule reach a method the script table inherits through __index (the loader said 'no function') ($rc)"

# ---- a script saved with a byte order mark, or with a #! line (as lua reads them) ----
printf '\357\273\277#!/usr/bin/env lua\nlocal A = {}\nfunction A:go() error("at three") end\nreturn A\n' > "$T/bom.lua"
printf '{"name": "bom", "duration": "1m", "actors": [{"id": "a", "script": "bom.lua"}],\n "workload": [{"invoke": "a", "method": "go", "at": "1s"}]}\n' > "$T/bom.json"
rv trace bom.json --filter request_fail
[ $rc -eq 0 ] && has 'error="bom.lua:3: at three"'
ok $? "a script with a byte order mark and a #! line loads, its lines numbered as in the file (it was a syntax error) ($rc)"

# ---- a crash-point failure's repro replays the crash point ---------------------
cat > "$T/cp.lua" << 'LUA'
local A = {}
function A:go()
  self:runFiber("f", function(f) revenant.work(100) f:stash({n = 1}) revenant.work(100) end)
end
function A:onFiberRecovered(ctx) return ctx.snapshot.n end -- a nil snapshot throws
return A
LUA
printf '{"name": "cp", "duration": "1m", "actors": [{"id": "a", "script": "cp.lua"}],\n "workload": [{"invoke": "a", "method": "go", "at": "1s"}, {"request": "a", "at": "10s"}],\n "expect": {"hold": ["recovery_finishes"]}}\n' > "$T/cp.json"
rv run cp.json --crash-at 3 --repro-dir cpo
[ $rc -eq 1 ] && has "replay: revenant run cp.json --case default --seed 0x1 --strategy fifo --crash-at 3" &&
  [ -f "$T/cpo/repro-cp-default-0x1-crash3.json" ]
ok $? "run --crash-at 3 fails, and its replay line carries --crash-at 3 ($rc)"
rv replay cpo/repro-cp-default-0x1-crash3.json
[ $rc -eq 0 ] && has "REPRODUCED cp case=default seed=0x1 crash-at=3"
ok $? "replay of its repro runs crash point 3 again: REPRODUCED (it said DIVERGED) ($rc)"
rv shrink cpo/repro-cp-default-0x1-crash3.json -o cps.json
[ $rc -eq 2 ] && has "shrink does not replay crash points" && [ ! -e "$T/cps.json" ]
ok $? "shrink refuses a crash-point repro instead of shrinking another run ($rc)"

# ---- bytes that are not UTF-8: reports stay valid JSON, scripts are refused ----
# valid JSON (jq, when installed) and UTF-8 (iconv: jq takes bad bytes silently)
json_ok() {
  if command -v jq > /dev/null; then jq -e . "$1" > /dev/null 2>&1 || return 1; else [ -s "$1" ] || return 1; fi
  if command -v iconv > /dev/null; then iconv -f UTF-8 -t UTF-8 "$1" > /dev/null 2>&1; fi
}
cat > "$T/bytes.lua" << 'LUA'
local A = {}
function A:go() revenant.log("raw \xff\xfe bytes") revenant.effect("pay\xff") error("declined \xc0") end
return A
LUA
printf '{"name": "bytes", "duration": "10s", "actors": [{"id": "a", "script": "bytes.lua"}],\n "workload": [{"invoke": "a", "method": "go", "at": "1s"}], "expect": {"violate": ["no_wedge"]}}\n' > "$T/bytes.json"
rv trace bytes.json --format jsonl
cp "$T/out" "$T/bytes.jsonl"
grep -q '"message":"raw ?? bytes"' "$T/bytes.jsonl" && json_ok "$T/bytes.jsonl"
ok $? "trace --format jsonl of a script's non-UTF-8 bytes is valid JSON ('?' for each bad byte)"
rv run bytes.json -q --json r.json --repro-dir ro
[ $rc -eq 1 ] && json_ok "$T/r.json"
ok $? "run --json with a script error holding non-UTF-8 bytes writes valid JSON ($rc)"
rv swarm bytes.json --seeds 2 -j 1 -q --json s.json --repro-dir ro
json_ok "$T/s.json"
ok $? "so does swarm --json"
printf 'local A = {}\nfunction A:go() revenant.log("caf\351") end\nreturn A\n' > "$T/latin.lua"
printf '{"name": "l", "duration": "10s", "actors": [{"id": "a", "script": "latin.lua"}]}\n' > "$T/latin.json"
rv check latin.json
[ $rc -eq 2 ] && has "script latin.lua: line 2 is not UTF-8 text (byte 0xe9)"
ok $? "a script that is not UTF-8 is refused with its line (its repro replayed as 'edited') ($rc)"
printf 'return {s = "\351"}\n' > "$T/latinmod.lua"
printf 'local m = require("latinmod")\nreturn {}\n' > "$T/usemod.lua"
printf '{"name": "m", "duration": "10s", "actors": [{"id": "a", "script": "usemod.lua"}]}\n' > "$T/usemod.json"
rv check usemod.json
[ $rc -eq 2 ] && has "latinmod.lua: line 1 is not UTF-8 text (byte 0xe9)"
ok $? "so is a module that is not UTF-8 ($rc)"

echo "1..$n"
[ "$fails" -eq 0 ]
