#!/bin/sh
# sh_hostile.sh: the command line against a hostile tester (issue #17):
# bad and nasty inputs, every output flag at once, write errors, interrupts,
# a swarm whose workers are killed mid-SIGKILL, repro names. Each check is
# one TAP line ("ok N - ..." / "not ok N - ..."); run by tests/run_tests.sh
# (and so under `make asan` with REVENANT=build-asan/revenant) from the
# repository root. Every command runs under a watchdog: a hang is a failure.
TAP_NAME=hostile; . "${0%/*}/tap.sh" # REVENANT, T, ok (tests/tap.sh)

# rv SECONDS ARGS...: runs revenant with a watchdog; stdout+stderr to $T/out.
rv() {
  secs=$1
  shift
  timeout -s KILL "$secs" "$REVENANT" "$@" > "$T/out" 2>&1
  rc=$?
  return 0
}

has() { grep -q -- "$1" "$T/out"; }
json_ok() { if command -v jq > /dev/null; then jq -e . "$1" > /dev/null 2>&1; else [ -s "$1" ]; fi; }
xml_ok() { if command -v xmllint > /dev/null; then xmllint --noout "$1" 2> /dev/null; else [ -s "$1" ]; fi; }

# ---- 1: every output flag at once over the whole library ----------------------
rv 300 run scenarios/examples --json "$T/r.json" --junit "$T/j.xml" --trace "$T/t.json" -v -q \
  --repro-dir "$T/ro"
ok $(( rc != 0 )) "run scenarios/examples --json --junit --trace -v exits 0 (was SIGSEGV with 7+ files)"
json_ok "$T/r.json" && json_ok "$T/t.json" && xml_ok "$T/j.xml"
ok $? "the three report files are valid JSON / XML"
rv 300 merge "$T/r.json"
ok $(( rc != 0 )) "merge reads the run's results JSON back"

# ---- 2: a swarm whose workers die while a SIGKILL generation waits -------------
# Under `make coverage` these processes are killed at any instant, also while
# gcov writes their counters, and a half-written .gcda file makes every later
# process of the build print "Merge mismatch" (which broke the later tests'
# outputs): sections 2 and 2b write theirs under a prefix thrown away with $T.
GCOV_PREFIX="$T/gcov"
export GCOV_PREFIX
mkdir -p "$T/tmp"
good=0
i=0
while [ $i -lt 10 ]; do
  TMPDIR="$T/tmp" timeout -s KILL 60 "$REVENANT" swarm scenarios/examples/sigkill-recover.json \
    --seeds 100 --timeout 1us -q --repro-dir "$T/rs" > "$T/out" 2>&1
  rc=$?
  [ $rc -eq 1 ] && good=$((good + 1))
  i=$((i + 1))
done
ok $(( good != 10 )) "sigkill swarm with --timeout 1us finishes (watchdog 60 s) in 10 of 10 tries ($good)"
left=$(ls "$T/tmp" | wc -l)
ok $(( left != 0 )) "no revenant-sigkill-* or revenant-swarm-* directory is left behind ($left)"

# ---- 2b: a SIGKILLed swarm's directory is removed by the next one ---------------
mkdir -p "$T/tk"
TMPDIR="$T/tk" "$REVENANT" swarm scenarios/examples/keepalive-dispose.json --time 60s -j 2 -q \
  --repro-dir "$T/rk" > "$T/out" 2>&1 &
pid=$!
k=0
while [ $k -lt 300 ] && ! ls "$T/tk" | grep -q "^revenant-swarm-$pid-"; do sleep 0.1; k=$((k + 1)); done
kill -s KILL $pid 2> /dev/null
wait $pid 2> /dev/null
sleep 1 # the workers die with their parent (PR_SET_PDEATHSIG)
left=$(ls "$T/tk" | grep -c "^revenant-swarm-$pid-")
mkdir "$T/tk/revenant-swarm-$$-live" # a live process's (this shell's): kept
TMPDIR="$T/tk" rv 60 swarm scenarios/examples/keepalive-dispose.json --seeds 2 -q --repro-dir "$T/rk"
after=$(ls "$T/tk" | grep -c "^revenant-swarm-$pid-")
unset GCOV_PREFIX
ok $(( left != 1 || after != 0 || rc != 0 )) "a SIGKILLed swarm leaves its directory ($left), the next swarm removes it ($after left, exit $rc)"
[ -d "$T/tk/revenant-swarm-$$-live" ]
ok $? "the directory of a process still alive is kept"

# ---- 3: interrupts write what finished -------------------------------------------
interrupt() { # interrupt SIGNAL READY ARGS...: start, wait until READY (a shell test:
  # the handlers are installed by then) and a little work, signal, wait
  sig=$1
  ready=$2
  shift 2
  "$REVENANT" "$@" > "$T/out" 2>&1 &
  pid=$!
  (sleep 60 && kill -s KILL $pid 2> /dev/null) > /dev/null 2>&1 & # the watchdog
  dog=$!
  k=0
  while [ $k -lt 300 ] && ! eval "$ready"; do sleep 0.1; k=$((k + 1)); done
  sleep 1
  kill -s "$sig" $pid 2> /dev/null
  wait $pid
  rc=$?
  kill $dog 2> /dev/null
  wait $dog 2> /dev/null
}
interrupt INT 'grep -q "^swarm:" "$T/out"' swarm scenarios/examples/keepalive-dispose.json --time 60s -j 2 --json "$T/si.json" \
  --repro-dir "$T/ro"
ok $(( rc != 130 )) "swarm stopped by SIGINT exits 130 ($rc)"
has "interrupted after [0-9]* seeds" && has "^[0-9]* passed, [0-9]* failed" && json_ok "$T/si.json"
ok $? "swarm stopped by SIGINT prints what finished and writes its JSON"
interrupt TERM 'ls "$T" | grep -q "ri.json.tmp-"' run scenarios/examples/keepalive-dispose.json --seeds 1..1000000000000 -q \
  --json "$T/ri.json" --junit "$T/ri.xml"
ok $(( rc != 143 )) "run --seeds 1..1000000000000 is accepted and exits 143 on SIGTERM ($rc)"
has "interrupted after [0-9]* seeds" && json_ok "$T/ri.json" && xml_ok "$T/ri.xml"
ok $? "the interrupted run writes valid JSON and JUnit with what finished"
ls "$T" | grep -q "\.tmp-"
ok $(( $? == 0 )) "no temporary report file is left behind"

# ---- 4: inputs larger than the documented size ----------------------------------
head -c 2000000 /dev/zero | tr '\0' ' ' > "$T/huge.json"
rv 30 check "$T/huge.json"
ok $(( rc != 2 )) "a 2 MB scenario file is refused (exit 2)"
has "file too large"
ok $? "... with 'file too large' before it is parsed"

# ---- 5: crash points ---------------------------------------------------------------
rv 30 run tests/corpus/cli/throwing-hook.json --crash-at 300 --repro-dir "$T/ro"
ok $(( rc != 2 )) "--crash-at past the last write boundary exits 2"
has "beyond the last durable write boundary"
ok $? "... and says so"
rv 30 run tests/corpus/cli/throwing-hook.json --crash-points --repro-dir "$T/ro"
replay=$(grep -m1 "replay: revenant run .*--crash-at" "$T/out" | sed 's/^ *replay: revenant //')
# shellcheck disable=SC2086
rv 30 $replay --repro-dir "$T/ro"
ok $(( rc != 1 )) "the replay line of a failing crash point fails again ($replay)"
sed 's/"repeat": 3/"repeat": 8/' tests/corpus/cli/throwing-hook.json > "$T/th8.json"
rv 60 run "$T/th8.json" --crash-points --repro-dir "$T/ro"
has "\.\.\. and 4 more failing boundaries" && has "9 failed"
ok $? "more than 5 failing crash points end with '... and N more'"
h1=$("$REVENANT" run scenarios/examples/sigkill-recover.json --crash-at 2 --repro-dir "$T/ro" | grep -o "hash=0x[0-9a-f]*")
h2=$("$REVENANT" run scenarios/examples/sigkill-recover.json --crash-at 3 --repro-dir "$T/ro" |
  grep -o "hash=0x[0-9a-f]*")
[ -n "$h1" ] && [ "$h1" != "$h2" ]
ok $? "--crash-at K changes the run of a sigkill scenario ($h1 vs $h2)"

# ---- 6: repro names ------------------------------------------------------------------
mkdir -p "$T/dup/a" "$T/dup/b"
cp tests/corpus/cli/failing.json "$T/dup/a/failing.json"
cp tests/corpus/cli/failing.json "$T/dup/b/failing.json"
sed 's/"name": "cli-failing"/"name": "..\/..\/escape"/' tests/corpus/cli/failing.json > "$T/dup/evil.json"
rv 60 run "$T/dup" --repro-dir "$T/rd"
ok $(( $(ls "$T/rd" | wc -l) != 3 )) "three failing files (two share a name) give three repro files"
[ ! -e "$T/escape" ] && [ ! -e "$T/../escape" ] && ls "$T/rd" | grep -q "_.._escape"
ok $? "a scenario name with ../ stays inside the repro directory"
rv 60 swarm "$T/dup/a/failing.json" "$T/dup/b/failing.json" --seeds 2 -j 1 --repro-dir "$T/sd"
ok $(( $(ls "$T/sd" | wc -l) != 2 )) "swarm: two files with the same name give two repro files"
rv 60 swarm "$T/dup/a/failing.json" --seeds 2 --seed-base 100 -j 1 --repro-dir "$T/sd"
ok $(( $(ls "$T/sd" | wc -l) != 3 )) "swarm: a later swarm with other seeds does not overwrite a repro file"

# ---- 7: invalid files are counted -------------------------------------------------
mkdir -p "$T/mixed"
cp tests/corpus/cli/passing.json "$T/mixed/a.json"
echo '{"name": "broken",' > "$T/mixed/b.json"
rv 60 run "$T/mixed" --json "$T/m.json" --junit "$T/m.xml"
ok $(( rc != 2 )) "a directory with one invalid file exits 2"
tail -n 1 "$T/out" | grep -q "^1 passed, 0 failed, 1 error$"
ok $? "the final line counts the load error ($(tail -n 1 "$T/out"))"
grep -q 'errors="1"' "$T/m.xml" && xml_ok "$T/m.xml"
ok $? "JUnit counts it as an error"
if command -v jq > /dev/null; then
  jq -e '.summary.errors == 1 and (.errors | length) == 1' "$T/m.json" > /dev/null
else json_ok "$T/m.json"; fi
ok $? "JSON lists it in errors and summary.errors"
rv 30 merge "$T/m.json" -o "$T/mm.json"
ok $(( rc != 2 )) "merge keeps an input's load error: exit 2 ($rc)"
tail -n 1 "$T/out" | grep -q ", 1 error$" && grep -q '"errors"' "$T/mm.json"
ok $? "... in its final line and in the merged document"
rv 30 run "$T/mixed/b.json" --json "$T/e.json" --junit "$T/e.xml" --trace "$T/e.trace.json"
json_ok "$T/e.json" && xml_ok "$T/e.xml" && json_ok "$T/e.trace.json" && grep -q 'tests="1"' "$T/e.xml"
ok $? "a single invalid file still writes valid report files"

# ---- 8: a flag where a value is expected -----------------------------------------------
cd "$T" || exit 1
rv 30 run "$OLDPWD/tests/corpus/cli/passing.json" --json -q
ok $(( rc != 2 )) "run --json -q is a usage error"
[ ! -e "$T/-q" ]
ok $? "... and writes no file named -q"
rv 30 run "$OLDPWD/tests/corpus/cli/passing.json" --case -q
has "needs a value"
ok $? "run --case -q is a usage error, not a search for a case named -q"
rv 30 swarm "$OLDPWD/tests/corpus/cli/passing.json" --seeds 2 --json --quiet
ok $(( rc != 2 )) "swarm --json --quiet is a usage error"
rv 30 merge -o -q "$T/r.json"
ok $(( rc != 2 )) "merge -o -q is a usage error"
cd "$OLDPWD" || exit 1

# ---- 9: write errors ----------------------------------------------------------------
timeout -s KILL 30 "$REVENANT" check scenarios/examples > /dev/full 2> "$T/out"
rc=$?
ok $(( rc != 2 )) "check > /dev/full exits 2 ($rc)"
has "No space left on device"
ok $? "... and says why"
rv 60 shrink tests/corpus/cli/failing.json -o /dev/full --time 5s
ok $(( rc != 2 )) "shrink -o /dev/full exits 2 ($rc)"
has "wrote /dev/full"
ok $(( $? == 0 )) "... and does not claim to have written it"
rv 30 run tests/corpus/cli/failing.json --repro-dir /dev/full
ok $(( rc != 2 )) "run --repro-dir /dev/full exits 2 ($rc)"
has "repro: /dev/full"
ok $(( $? == 0 )) "... and prints no repro path"
rv 30 run tests/corpus/cli/passing.json --json /dev/full
ok $(( rc != 2 )) "run --json /dev/full exits 2"
echo "old" > "$T/keep.json"
# (gcov's counters, under `make coverage`, go under a throwaway prefix: the
# size limit would cut them short too, as in section 2)
(ulimit -f 4 && trap '' XFSZ && GCOV_PREFIX="$T/gcov" exec "$REVENANT" run scenarios/examples -q --json "$T/keep.json") \
  > /dev/null 2> "$T/out"
rc=$?
ok $(( rc != 2 )) "a report that cannot be written whole (file size limit) exits 2 ($rc)"
[ "$(cat "$T/keep.json")" = "old" ] && ! ls "$T" | grep -q "keep.json.tmp"
ok $? "... and leaves the earlier file as it was, with no temporary file (atomic write)"
rv 30 run tests/corpus/cli/passing.json --json "$T/nodir/x.json"
ok $(( rc != 2 )) "run --json into a missing directory exits 2"

# ---- 10: the smaller items ---------------------------------------------------------------
echo '{"schema": "revenant.results/1", "runs": [{"seed": 5}]}' > "$T/bad-runs.json"
rv 30 merge "$T/bad-runs.json"
ok $(( rc != 2 )) "merge of a malformed run exits 2 ($rc)"
rv 30 merge "$T/missing.json"
has "No such file" && ! has "not a results file"
ok $? "merge of a missing file says it is missing"
rv 30 replay "$T/missing.json"
has "No such file"
ok $? "replay of a missing file says so"
rv 30 replay "$T"
has "is a directory"
ok $? "replay of a directory says so"
echo '{' > "$T/bad.json"
rv 30 replay "$T/bad.json"
has "not valid JSON"
ok $? "replay of bad JSON says so"
"$REVENANT" run tests/corpus/cli/failing.json --repro-dir "$T/r10" > /dev/null 2>&1
repro=$(ls "$T/r10"/*.json | head -n 1)
sed 's/"revenant_repro":[ 	]*1/"revenant_repro": 2/' "$repro" > "$T/v2.json"
rv 30 replay "$T/v2.json"
ok $(( rc != 2 )) "replay refuses revenant_repro: 2"
rv 30 replay "$repro" --json -q
ok $(( rc != 2 )) "replay --json -q is a usage error"
rv 30 run "$repro"
ok $(( rc != 2 )) "run on a repro file exits 2"
has "use revenant replay"
ok $? "... and points to revenant replay"
if command -v script > /dev/null; then
  NO_COLOR= script -qec "$REVENANT run tests/corpus/cli/passing.json" /dev/null > "$T/out" 2>&1
  grep -q "$(printf '\033')\[" "$T/out"
  ok $? "an empty NO_COLOR does not turn colour off (no-color.org)"
  script -qec "$REVENANT run tests/corpus/cli/passing.json --seeds 1..20000 -q" /dev/null > "$T/out" 2>&1
  has "runs/s" && has "20000 passed, 0 failed"
  ok $? "run --seeds shows its progress on a terminal"
  NO_COLOR=1 script -qec "$REVENANT run tests/corpus/cli/passing.json" /dev/null > "$T/out" 2>&1
  grep -q "$(printf '\033')\[" "$T/out"
  ok $(( $? == 0 )) "NO_COLOR=1 turns colour off"
fi

rv 30 run tests/corpus/cli/passing.json --seeds 1..2
has "every seed is the same run"
ok $? "run --seeds over a scenario that draws nothing from its seed says every seed is the same run"
sed 's/"recovery_finishes", "stash_durable"/"recovery_finishes", "stash_durabel"/' tests/corpus/cli/passing.json \
  > "$T/typo.json"
rv 30 check "$T/typo.json"
has 'did you mean "stash_durable"'
ok $? "a misspelt invariant in expect gets a did-you-mean"
rv 30 run tests/corpus/cli/failing.json -v --repro-dir "$T/ro"
has "first_request_ok_ms=none" && ! has "first_request_ok_ms=-1"
ok $? "a request that never succeeded prints first_request_ok_ms=none, not a -1 sentinel"
rv 30 run tests/corpus/cli/passing.json
has "not judged: recovery_finishes"
ok $? "a run that ends within a liveness bound of its last fault says which check it could not judge"

echo "1..$n"
[ "$fails" -eq 0 ]
