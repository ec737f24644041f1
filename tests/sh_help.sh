#!/bin/sh
# sh_help.sh: `revenant CMD --help` tells the truth. For every command, the
# flags its --help lists and the flags docs/cli.md gives it (the section's
# synopsis and its option table) are the same set, every listed flag is one
# the command accepts (never "unknown option"), and a usage error is one line
# and a hint (docs/cli.md: "Unknown commands and options print a one-line
# error and a usage hint"). One TAP line per check.
TAP_NAME=help; . "${0%/*}/tap.sh" # REVENANT, T, ok (tests/tap.sh)
DOC=${DOC:-docs/cli.md}

# flags_of TEXT-ON-STDIN: the -x / --long-name words, one a line, sorted, -h/--help left out.
flags_of() {
  tr -c 'A-Za-z0-9_-' '\n' | grep -E '^--?[A-Za-z][A-Za-z0-9-]*$' | grep -vxE -- '-h|--help' | sort -u
}

# help_flags CMD: the flags at the head of each option line of CMD --help.
help_flags() {
  "$REVENANT" "$1" --help | awk '/^  -/ { sub(/^  /, ""); split($0, a, /  +/); print a[1] }' | flags_of
}

# doc_flags CMD: the flags of CMD's section of docs/cli.md (its "## `revenant CMD"
# line and the first cell of each table row that starts with a flag).
doc_flags() {
  awk -v cmd="$1" '
    /^## / { on = index($0, "## `revenant " cmd " ") == 1 || $0 == "## `revenant " cmd "`" }
    on && /^## / { print; next }
    on && /^\| `-/ { split($0, c, "|"); print c[2] }' "$DOC" | flags_of
}

for cmd in run check replay trace swarm merge shrink; do
  help_flags "$cmd" > "$T/help"
  doc_flags "$cmd" > "$T/doc"
  [ -s "$T/doc" ] || [ "$cmd" = check ]
  ok $? "docs/cli.md has a section for revenant $cmd"
  missing=$(comm -23 "$T/help" "$T/doc" | tr '\n' ' ')
  [ -z "$missing" ]
  ok $? "every flag of 'revenant $cmd --help' is in docs/cli.md${missing:+ (missing: $missing)}"
  extra=$(comm -13 "$T/help" "$T/doc" | tr '\n' ' ')
  [ -z "$extra" ]
  ok $? "every flag docs/cli.md gives $cmd is in its --help${extra:+ (not in --help: $extra)}"
  bad=""
  for f in $(cat "$T/help"); do
    "$REVENANT" "$cmd" "$f" > "$T/out" 2>&1 < /dev/null
    grep -q "unknown option" "$T/out" && bad="$bad $f"
  done
  [ -z "$bad" ]
  ok $? "revenant $cmd accepts every flag its --help lists${bad:+ (unknown:$bad)}"
  "$REVENANT" help "$cmd" > "$T/h1" 2>&1 && "$REVENANT" "$cmd" --help > "$T/h2" 2>&1 && cmp -s "$T/h1" "$T/h2"
  ok $? "revenant help $cmd prints revenant $cmd --help"
  "$REVENANT" "$cmd" --no-such-flag > "$T/out" 2>&1
  rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l < "$T/out")" -le 3 ] && grep -q "try 'revenant $cmd --help'" "$T/out"
  ok $? "revenant $cmd --no-such-flag: exit 2, a short error and the hint, not the whole help ($rc)"
done

# an option where a value is expected is refused, in every command that takes values
printf '{"name": "x", "duration": "1m", "actors": [{"id": "a"}]}\n' > "$T/x.json"
for args in "run x.json --json -q" "trace x.json --case -v" "replay x.json --json -q" \
  "swarm x.json --seeds 3 --json -q" "merge -o -q x.json" "shrink x.json -o -q"; do
  # shellcheck disable=SC2086
  (cd "$T" && "$REVENANT" $args > "$T/out" 2>&1)
  rc=$?
  [ $rc -eq 2 ] && grep -q "needs a value" "$T/out" && [ ! -e "$T/-q" ] && [ ! -e "$T/-v" ]
  ok $? "revenant $args: refused, needs a value ($rc)"
done

echo "1..$n"
[ "$fails" -eq 0 ]
