#!/bin/sh
# sh_lua_tools.sh: tool runs of Lua-scripted agents across processes (issue
# #13: runAgentTool, onAgentToolFinish, abortAgentTool). Run by
# tests/run_tests.sh from the repository root, with $REVENANT; prints TAP.
# - each scripted tool-run scenario gives the same per-case trace hashes in
#   two separate processes (a script's pairs order and identities could
#   depend on addresses), and every case passes there;
# - a script that defines onAgentToolFinish with a typo is refused with a
#   did-you-mean at the field.
REVENANT=${REVENANT:-./revenant}
case "$REVENANT" in /*) ;; *) REVENANT="$PWD/$REVENANT" ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/revenant-luatool-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM  # so EXIT runs on a signal too
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ -n "$2" ] && printf '# %s\n' "$2"; }

hash_of() { sed -n 's/.* hash=\(0x[0-9a-f]*\).*/\1/p' "$1" | tr '\n' ' '; }

# 1. two processes, one hash per case
for f in scenarios/scripted/toolrun.json scenarios/scripted/toolrun-stuck.json \
         scenarios/scripted/toolrun-race.json; do
  "$REVENANT" run "$f" > "$T/a.out" 2>&1; ra=$?
  "$REVENANT" run "$f" > "$T/b.out" 2>&1; rb=$?
  ha=$(hash_of "$T/a.out"); hb=$(hash_of "$T/b.out")
  if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ -n "$ha" ] && [ "$ha" = "$hb" ]; then
    ok "two processes give one hash per case: $f ($ha)"
  else no "two processes give one hash per case: $f" "rc $ra/$rb: $ha vs $hb"; fi
done

# 2. a misspelt onAgentToolFinish is refused at load with a did-you-mean
printf 'return { onAgentToolFinsh = function(self, run) end }\n' > "$T/typo.lua"
cat > "$T/typo.json" <<'JSON'
{"name": "typo", "duration": "1s",
 "actors": [{"id": "a", "class": "A", "script": "typo.lua"}]}
JSON
"$REVENANT" run "$T/typo.json" > "$T/typo.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q 'did you mean "onAgentToolFinish"' "$T/typo.out"; then
  ok "a misspelt onAgentToolFinish is refused with a did-you-mean"
else no "a misspelt onAgentToolFinish is refused with a did-you-mean" "rc=$rc $(head -c 300 "$T/typo.out")"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
