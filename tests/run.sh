#!/usr/bin/env bash
# Runs every test suite and prints one summary line over all of them:
#   N passed, N failed[, N skipped]
# and exits non-zero when anything failed.
#
# Suites: every cmocka binary in $O/san/tests/ (run with TAP output) and every
# executable script tests/**/test_*.sh (which print TAP through tests/lib/tap.sh).
# A suite that exits non-zero without reporting a failing test (a crash, a
# sanitizer report, a timeout) counts as one failure.
#
#   TESTS=REGEX   run only suites whose name matches
#   SUITE_TIMEOUT default seconds per suite (a script may say "# timeout: N")
#   TEST_JOBS     suites run at once in the first phase (default: 3)
#
# Two phases. First every suite that measures nothing of the machine's speed
# (the cmocka binaries, http/, pcap/, sim/, static/, topo/, install/,
# openapi/, browser/), TEST_JOBS at a time: they wait on daemons and
# sockets more than they compute, and one alone leaves a core idle. Then,
# one at a time and alone on the machine, the suites that drive real traffic
# and compare rates or reaction times (tests/e2e, tests/live, and any script
# that says "# alone"), so that their figures are the fabric's and not the
# neighbour's (a live suite that times and rates nothing says "# beside
# others" and runs in the first phase). Results print in suite order within
# each phase.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
O=${O:-build}
case "$O" in /*) ;; *) O="$ROOT/$O" ;; esac
export TF_ROOT="$ROOT" TF_BUILD="$O" TF_BIN="$O/san/bin" TF_OPT_BIN="$O/bin" TF_TOOLS="$O/tools"
export TF_SHARED="${TF_SHARED:-$(cd "$ROOT/.." && pwd)/shared}"
export CMOCKA_MESSAGE_OUTPUT=TAP
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
LOGDIR="$O/test-logs"
mkdir -p "$LOGDIR"

# Scripts first: they are the long suites of the first phase (a browser, a
# build, daemons), and the many short cmocka binaries then fill the slots
# they leave at its end (replayed over one run's durations, 3 at a time:
# 167 s for the phase against 183 s binaries first).
suites=()
while IFS= read -r s; do suites+=("$s"); done < <(find tests -path tests/lib -prune -o -name 'test_*.sh' -type f -perm -u+x -print | sort)
for b in "$O"/san/tests/*; do [ -x "$b" ] && [ -f "$b" ] && suites+=("$b"); done

alone() { # SUITE: whether it must run with nothing beside it
  case $1 in
    tests/e2e/*|tests/live/*) ! grep -qm1 '^# beside others' "$1" ;;
    *.sh) grep -qm1 '^# alone' "$1" ;;
    *) return 1 ;;
  esac
}

# Runs one suite and leaves "passed failed skipped seconds note" in $LOGDIR/NAME.result.
run_one() {
  local s=$1 name limit l log start rc dur p f k note=""
  name=$(basename "$s" .sh)
  limit=${SUITE_TIMEOUT:-300}
  if [[ "$s" == *.sh ]]; then
    l=$(grep -m1 -oE '^# timeout: [0-9]+' "$s" | awk '{print $3}'); [ -n "$l" ] && limit=$l
  fi
  log="$LOGDIR/$name.log"
  start=$(date +%s.%N)
  timeout --kill-after=10 "$limit" "$s" >"$log" 2>&1 </dev/null
  rc=$?
  dur=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  read -r p f k < <(awk '
    /^(not )?ok [0-9]+/ { if ($0 ~ /# SKIP/) k++; else if ($1 == "not") f++; else p++ }
    END { printf "%d %d %d\n", p, f, k }' "$log")
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1; note=" (exit $rc$([ $rc -eq 124 ] && echo ", timed out after ${limit}s"))"
  fi
  printf '%d %d %d %s%s\n' "$p" "$f" "$k" "$dur" "$note" > "$LOGDIR/$name.result"
}

tp=0 tf=0 ts=0
failed_suites=()
report() { # SUITE: adds its result to the totals and prints its line
  local name p f k dur note log
  name=$(basename "$1" .sh); log="$LOGDIR/$name.log"
  [ -s "$LOGDIR/$name.result" ] || echo "0 1 0 0 (left no result)" > "$LOGDIR/$name.result"
  read -r p f k dur note < "$LOGDIR/$name.result"
  tp=$((tp + p)); tf=$((tf + f)); ts=$((ts + k))
  printf '%-34s %4d passed, %d failed, %d skipped  %6ss%s\n' "$name" "$p" "$f" "$k" "$dur" "${note:+ $note}"
  if [ "$f" -gt 0 ]; then
    failed_suites+=("$name")
    echo "---- $name: failing tests and the end of $log"
    grep -E '^not ok' "$log" | grep -v '# SKIP' | head -20
    tail -n 30 "$log" | sed 's/^/    /'
    echo "----"
  fi
  if [ "$k" -gt 0 ]; then
    grep -E '# SKIP' "$log" | head -5 | sed 's/^/    skipped: /'
  fi
}

pool=() serial=()
for s in "${suites[@]}"; do
  name=$(basename "$s" .sh)
  if [ -n "${TESTS:-}" ] && ! [[ "$name" =~ $TESTS ]]; then continue; fi
  rm -f "$LOGDIR/$name.result"
  if alone "$s"; then serial+=("$s"); else pool+=("$s"); fi
done

jobs_max=${TEST_JOBS:-3}
running=0
for s in "${pool[@]}"; do
  if [ "$running" -ge "$jobs_max" ]; then wait -n; running=$((running - 1)); fi
  run_one "$s" & running=$((running + 1))
done
wait
for s in "${pool[@]}"; do report "$s"; done
for s in "${serial[@]}"; do run_one "$s"; report "$s"; done

[ ${#failed_suites[@]} -gt 0 ] && echo "failed suites: ${failed_suites[*]}"
if [ "$ts" -gt 0 ]; then
  echo "$tp passed, $tf failed, $ts skipped"
else
  echo "$tp passed, $tf failed"
fi
[ "$tf" -eq 0 ]
