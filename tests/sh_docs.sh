#!/bin/sh
# sh_docs.sh: every command the documentation shows in a ```sh block runs and
# exits as the documentation says (issue #17 item 11). Run by
# tests/run_tests.sh from the repository root, with $REVENANT.
#
# Rules (also in docs/architecture.md, "Documentation commands"):
# - only ```sh blocks of README.md and docs/*.md are run (```bash blocks are
#   batch scripts for clusters, plain ``` blocks show output);
# - the commands of one file run in order, each in its own `sh -c`, in one
#   directory per file: a temporary copy
#   of the repository's scenarios/, docs/ and tests/corpus/ with ./revenant
#   pointing at $REVENANT, so a later line may use a file an earlier one wrote;
# - a line whose comment contains "illustrative" is not run (long swarms,
#   CI-only steps); lines starting with "make" are not run (this test runs
#   inside `make test`);
# - the expected exit status is 0, or N when the line's comment contains
#   "exit N"; each command has a watchdog of 120 s (a hang is a failure).
# Prints one TAP line per command.
REVENANT=${REVENANT:-./revenant}
case "$REVENANT" in /*) ;; *) REVENANT="$PWD/$REVENANT" ;; esac
ROOT=$PWD
T=$(mktemp -d "${TMPDIR:-/tmp}/revenant-docs-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM  # so EXIT runs on a signal too
n=0
fails=0

# The runnable lines of one markdown file: continuation lines joined, blank
# and comment-only lines dropped.
extract() {
  awk '
    /^```sh[ \t]*$/ { on = 1; next }
    /^```/ { on = 0; next }
    !on { next }
    { line = (pending == "" ? $0 : pending " " $0) }
    /\\$/ { sub(/\\$/, "", line); pending = line; next }
    { pending = ""; if (line ~ /^[ \t]*(#|$)/) next; print line }
  ' "$1"
}

for doc in "$ROOT"/README.md "$ROOT"/docs/*.md; do
  name=${doc#"$ROOT"/}
  W="$T/$(basename "$doc" .md)"
  mkdir -p "$W/tests"
  cp -R "$ROOT/scenarios" "$ROOT/docs" "$W/"
  cp -R "$ROOT/tests/corpus" "$W/tests/"
  ln -s "$REVENANT" "$W/revenant"
  extract "$doc" > "$T/cmds"
  while IFS= read -r cmd; do
    case "$cmd" in
      *"#"*illustrative*) continue ;;
      make\ * | make) continue ;;
    esac
    want=0
    note=$(printf '%s\n' "$cmd" | sed -n 's/.*#.*exit \([0-9][0-9]*\).*/\1/p')
    [ -n "$note" ] && want=$note
    (cd "$W" && timeout -s KILL 120 sh -c "$cmd" > "$T/out" 2>&1 < /dev/null)
    rc=$?
    n=$((n + 1))
    if [ "$rc" -eq "$want" ]; then
      echo "ok $n - $name: $cmd"
    else
      echo "not ok $n - $name: exit $rc, documented $want: $cmd"
      sed 's/^/# /' "$T/out" | tail -n 5
      fails=$((fails + 1))
    fi
  done < "$T/cmds"
done
echo "1..$n"
[ "$fails" -eq 0 ]
