#!/bin/sh
# test_html.sh: the HTML report in a real browser (docs/reports.md).
#
# Writes reports with ./revenant (run, replay, swarm; the whole scenario
# library in one page), opens each one in
# headless Chromium from file:// and checks the dumped DOM: the page
# finished (data-ready), no JavaScript error was caught (#rv-errors, the
# page's error hook) or logged, and the lanes, fault and reset markers,
# the selected violation's chain and its wait-for edges are drawn. The
# #1595 page must stay within its size budget (5 MB).
#
# Chromium: Debian's package, installed with apt-get when missing and
# running as root; otherwise the test is skipped, except under CI (CI set),
# where a missing browser is a failure.
#
#   sh tests/browser/test_html.sh                  # the test
#   sh tests/browser/test_html.sh --screenshots docs  # also the PNGs of docs/reports.md
set -eu
cd "$(dirname "$0")/../.."
REVENANT=${REVENANT:-./revenant}
BUDGET=5000000
shots=""
[ "${1:-}" = "--screenshots" ] && shots=${2:?--screenshots needs a directory}

browser() {
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then echo "$b"; return 0; fi
  done
  return 1
}
B=$(browser || true)
if [ -z "$B" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test_html: installing chromium with apt-get"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >&2 || true
  B=$(browser || true)
fi
if [ -z "$B" ]; then
  if [ -n "${CI:-}" ]; then
    echo "test_html: FAIL: chromium is missing and could not be installed"
    exit 1
  fi
  echo "test_html: SKIP: no chromium (install Debian's: sudo apt-get install chromium)"
  exit 0
fi
[ -x "$REVENANT" ] || { echo "test_html: build first (make): no $REVENANT"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM  # so EXIT runs on a signal too
fails=0
fail() { echo "test_html: FAIL: $*"; fails=$((fails + 1)); }

# open FILE FRAGMENT: loads file://FILE#FRAGMENT, leaves the DOM without its
# scripts in $tmp/dom and the browser's log in $tmp/log.
open_page() {
  "$B" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --enable-logging=stderr --v=0 --virtual-time-budget=10000 --run-all-compositor-stages-before-draw \
    --dump-dom "file://$1#$2" >"$tmp/raw" 2>"$tmp/log" || true
  perl -0pe 's/<script\b.*?<\/script>//gs' "$tmp/raw" >"$tmp/dom"
}

# check NAME: the page loaded and ran without a JavaScript error.
check_clean() {
  grep -q 'data-ready="1"' "$tmp/dom" || fail "$1: the page did not finish (no data-ready)"
  if grep -q 'js-error' "$tmp/dom"; then
    fail "$1: JavaScript error: $(grep -o '<pre id="rv-errors"[^<]*' "$tmp/dom" | head -3)"
  fi
  if grep -E 'CONSOLE.*(Uncaught|Error)' "$tmp/log" >/dev/null; then
    fail "$1: console error: $(grep -E 'CONSOLE.*(Uncaught|Error)' "$tmp/log" | head -3)"
  fi
}

# has NAME PATTERN [MIN]: the DOM holds PATTERN at least MIN (1) times.
has() {
  n=$(grep -o -- "$2" "$tmp/dom" | wc -l)
  [ "$n" -ge "${3:-1}" ] || fail "$1: expected ${3:-1}+ of '$2' in the DOM, found $n"
}

shot() {
  [ -n "$shots" ] || return 0
  "$B" --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000 \
    --window-size=1280,760 --screenshot="$shots/$2" "file://$1#$3" >/dev/null 2>&1
  echo "test_html: wrote $shots/$2"
}

# 1. the 7-day #1595 run: both cases, lanes of the gated case, resets, faults, chain
"$REVENANT" run scenarios/incidents/issue-1595.json --html "$tmp/r1595.html" -q >/dev/null
size=$(wc -c <"$tmp/r1595.html")
echo "test_html: issue-1595 page: $size bytes (budget $BUDGET)"
[ "$size" -le "$BUDGET" ] || fail "issue-1595: $size bytes over the budget of $BUDGET"
open_page "$tmp/r1595.html" "run=0"
check_clean "issue-1595 gated"
for a in parent researcher coder browser sandbox; do has "issue-1595" "class=\"lane\" data-actor=\"$a\""; done
has "issue-1595" 'class="ev death reset"'
has "issue-1595" 'class="viol selected"'
has "issue-1595" 'class="chain-mark"' 3
has "issue-1595" 'class="chain-rec"' 3
has "issue-1595" 'fault-rec'
open_page "$tmp/r1595.html" "run=0&fit"
check_clean "issue-1595 whole run"
has "issue-1595 whole run" 'class="fault-marker"'
has "issue-1595 whole run" 'class="fold"'
open_page "$tmp/r1595.html" "run=0&fit&fold=0"
check_clean "issue-1595 fold details"
has "issue-1595 fold details" '<td>folded</td><td class="mono">19502 repeats'
open_page "$tmp/r1595.html" "run=0&span=0"
check_clean "issue-1595 span details"
has "issue-1595 span details" '<h3>opened by</h3>'
has "issue-1595 span details" 'class="sel-outline"'
shot "$tmp/r1595.html" html-run.png "run=0"

# 2. a failing run (escaped name), its replay, wait-for edges of violation 2
if "$REVENANT" run tests/browser/wedge-unexpected.json --html "$tmp/fail.html" \
     --repro-dir "$tmp/out" -q >/dev/null; then
  fail "wedge-unexpected: expected the run to fail"
fi
open_page "$tmp/fail.html" "v=1&rec=4"
check_clean "failing run"
has "failing run" 'badge fail'
has "failing run" 'wedge-unexpected&lt;b&gt;&amp;amp;&lt;i&gt;'
has "failing run" 'class="wait-rec"'
has "failing run" 'class="wait-bar"'
has "failing run" 'class="lane" data-actor="helper"'
has "failing run" '<td>record</td><td class="mono">#4</td>'
has "failing run" 'class="sel-outline"'
open_page "$tmp/fail.html" "v=2"
check_clean "failing fact"
has "failing fact" 'selected fact</h3>'
has "failing fact" 'class="viol fact selected"'
has "failing fact" 'class="chain-mark"'
set -- "$tmp"/out/repro-*.json
"$REVENANT" replay "$1" --html "$tmp/replay.html" >/dev/null || true
open_page "$tmp/replay.html" ""
check_clean "replay"
has "replay" 'class="chain-mark"'

# 3. every scenario of the library in one file, each page drawn once (#all)
runs=$("$REVENANT" run scenarios --html "$tmp/library.html" -q | tail -n 1 |
       awk '{print $1 + $3}')
open_page "$tmp/library.html" "all"
check_clean "scenario library"
pages=$(grep -o 'data-pages="[0-9]*"' "$tmp/dom" | tr -dc 0-9)
[ "${pages:-0}" -eq "${runs:-x}" ] || fail "scenario library: expected $runs pages drawn, got ${pages:-0}"

# 4. a swarm: signatures, recovery-time plot, runs per fault kind, run pages
"$REVENANT" swarm scenarios/examples/sigkill-recover.json tests/browser/wedge-unexpected.json \
  --seeds 12 -j 2 -q --repro-dir "$tmp/out" --html "$tmp/swarm.html" >/dev/null 2>&1 || true
[ -s "$tmp/swarm.html" ] || fail "swarm: no page written"
open_page "$tmp/swarm.html" "all"
check_clean "swarm"
open_page "$tmp/swarm.html" ""
check_clean "swarm summary"
has "swarm" 'class="sig"'
has "swarm" 'class="plot recovery-plot"'
has "swarm" 'class="plot kinds-plot"'
has "swarm" 'class="runlink"'
shot "$tmp/swarm.html" html-swarm.png ""

if [ "$fails" -ne 0 ]; then
  echo "test_html: $fails check(s) failed"
  exit 1
fi
echo "test_html: all pages passed in $("$B" --version 2>/dev/null | head -1)"
