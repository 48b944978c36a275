# Shared by scripts/sanitize/asan and scripts/sanitize/tsan (sourced, not run).
# Each check runs with the sanitizer writing its reports to $logs/<name>.<pid>; a check fails
# when its command fails or leaves a report behind. The last line is `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
passed=0
failed=0
failures=()
logs=$(mktemp -d "${TMPDIR:-/tmp}/luadispatch-${sanitizer}-XXXXXX")

# check NAME COMMAND...: runs COMMAND, then looks for sanitizer reports named NAME.*
check() {
  local name=$1; shift
  local start=$SECONDS status=0
  echo "== $sanitizer: $name: $*" >&2
  "$@" || status=$?
  judge "$name" "$status" "$start"
}

# judge NAME STATUS START: counts a check that ended with STATUS (begun at $SECONDS = START)
# as passed or failed, with the reports named NAME.* it left.
judge() {
  local name=$1 status=$2 start=$3
  local reports
  reports=$(ls "$logs"/"$name".* 2>/dev/null | wc -l)
  if [ "$status" -eq 0 ] && [ "$reports" -eq 0 ]; then
    passed=$((passed + 1))
    echo "== $sanitizer: $name: clean ($((SECONDS - start)) s)" >&2
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "== $sanitizer: $name: NOT clean: exit status $status, $reports report(s) ($((SECONDS - start)) s)" >&2
    for f in "$logs"/"$name".*; do [ -f "$f" ] && head -c 20000 "$f" >&2; done
  fi
}

finish() {
  if [ "$failed" -eq 0 ]; then
    echo "$sanitizer: clean" >&2
  else
    echo "$sanitizer: NOT clean: ${failures[*]} (reports kept in $logs)" >&2
  fi
  [ "$failed" -eq 0 ] && rm -rf "$logs"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
