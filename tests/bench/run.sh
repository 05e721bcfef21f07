#!/usr/bin/env bash
# `make bench`: runs every benchmark part tests/bench/NN-*.sh in name order.
# Each part prints its own figures and the ratio to a baseline it measures in
# the same run; targets are reported (met / missed), never asserted.
set -u
cd "$(dirname "$0")/../.."
export TF_ROOT=$PWD
O=${O:-build}; case "$O" in /*) ;; *) O="$TF_ROOT/$O" ;; esac
export TF_BUILD="$O" TF_OPT_BIN="$O/bin" TF_TOOLS="$O/tools"
export TF_SHARED="${TF_SHARED:-$(cd "$TF_ROOT/.." && pwd)/shared}"
rc=0
for part in tests/bench/[0-9][0-9]-*.sh; do
  [ -x "$part" ] || continue
  [ -n "${BENCH:-}" ] && ! [[ "$part" =~ $BENCH ]] && continue
  echo "==== $(basename "$part" .sh) ===="
  "$part" || { echo "bench part $part failed (exit $?)"; rc=1; }
  echo
done
exit $rc
