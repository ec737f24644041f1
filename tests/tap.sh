# tap.sh: the prologue the TAP shell tests share. A test sets TAP_NAME and
# sources this file (`TAP_NAME=help; . "${0%/*}/tap.sh"`); it then has:
#   REVENANT  the binary under test as an absolute path (default ./revenant;
#             `make asan` passes build-asan/revenant)
#   T         a fresh temp dir ${TMPDIR:-/tmp}/revenant-$TAP_NAME-XXXXXX, removed
#             on exit and on HUP/INT/TERM (kept when KEEP is set, to look into)
#   ok STATUS DESCRIPTION   one TAP line, "ok N - ..." when STATUS is 0, else
#             "not ok N - ..." counted in $fails
# Not a test itself: run_tests.sh runs tests/sh_*.sh only.
REVENANT=${REVENANT:-./revenant}
case "$REVENANT" in /*) ;; *) REVENANT="$PWD/$REVENANT" ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/revenant-${TAP_NAME:-sh}-XXXXXX") || exit 1
trap 'chmod -R u+rwx "$T" 2> /dev/null; [ -n "$KEEP" ] || rm -rf "$T"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM # so EXIT runs on a signal too
n=0
fails=0

ok() { # ok COND-STATUS DESCRIPTION
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
