#!/bin/sh
# Runs every cmocka test binary given as argument (TAP output, counted), the
# shell tests tests/sh_*.sh (TAP), then the scenario library through the
# revenant binary, and ends with the line
# "N passed, N failed". Exit status 1 if anything failed.
REVENANT=${REVENANT:-./revenant}
passed=0
failed=0
failed_names=""
for t in "$@"; do
  out=$(CMOCKA_MESSAGE_OUTPUT=TAP "$t" 2>&1)
  rc=$?
  p=$(printf '%s\n' "$out" | grep -c '^ok ')
  f=$(printf '%s\n' "$out" | grep -c '^not ok ')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed before reporting
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" -ne 0 ]; then
    failed_names="$failed_names $t"
    printf '%s\n' "$out" | grep -E '^(not ok|#)' | head -40
  fi
  printf '%-40s %4d passed, %d failed\n' "$(basename "$t")" "$p" "$f"
done
# Shell tests of the command line (TAP lines), with the same binary.
for t in tests/sh_*.sh; do
  [ -f "$t" ] && [ -x "$REVENANT" ] || continue
  out=$(REVENANT="$REVENANT" sh "$t" 2>&1)
  rc=$?
  p=$(printf '%s\n' "$out" | grep -c '^ok ')
  f=$(printf '%s\n' "$out" | grep -c '^not ok ')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" -ne 0 ]; then
    failed_names="$failed_names $t"
    printf '%s\n' "$out" | grep -E '^(not ok|#)' | head -40
  fi
  printf '%-40s %4d passed, %d failed\n' "$(basename "$t")" "$p" "$f"
done
if [ -d scenarios ] && [ -x "$REVENANT" ]; then
  "$REVENANT" run scenarios -q > "${BUILD:-build}/scenarios.out" 2>&1
  rc=$?
  last=$(tail -n 1 "${BUILD:-build}/scenarios.out")
  sp=$(printf '%s\n' "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
  sf=$(printf '%s\n' "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
  if [ -z "$sp" ]; then sp=0; sf=1; fi
  if [ "$rc" -ne 0 ] && [ "$sf" -eq 0 ]; then sf=1; fi
  if [ "$sf" -ne 0 ]; then cat "${BUILD:-build}/scenarios.out"; failed_names="$failed_names scenarios"; fi
  printf '%-40s %4d passed, %d failed\n' "scenario library" "$sp" "$sf"
  passed=$((passed + sp))
  failed=$((failed + sf))
fi
[ -n "$failed_names" ] && echo "failing:$failed_names"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
