#!/usr/bin/env bash
# Benchmark part: real traffic on the emulated k=4 fat tree (16 hosts, links
# shaped to BENCH_MBIT, default 50). For each Hedera pattern (stride 1/2/4/8,
# staggered(0.5,0.3), random, randbij) 16 iperf3 flows run first under plain
# ECMP, then with tierflow (probes on every leaf and spine uplink, tierflowd
# with the netlink backend): the aggregate goodput of each, from the
# receivers' iperf3 JSON, in the same run -- the experiment the Stanford
# reproductions of Hedera ran on Mininet. Then the reaction time: tierflowd
# already running, colliding stride:4 flows start, seconds until the
# aggregate reaches 90% of its settled value. Figures are reported, not
# asserted. Needs root.
set -u
TF_ROOT=${TF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TF_ROOT/tests/lab/lib.sh"
. "$TF_ROOT/tests/lab/traffic.sh"
[ "$(id -u)" -eq 0 ] || { echo "50-e2e: skipped, needs root for network namespaces"; exit 0; }
MBIT=${BENCH_MBIT:-50}
PATTERNS=${BENCH_PATTERNS:-"stride:1 stride:2 stride:4 stride:8 staggered:0.5,0.3 random randbij"}
CTL=$(tf_bin tierflowd); PROBE=$(tf_bin tierflow-probe)
if [ -z "$CTL" ] || [ -z "$PROBE" ]; then
  echo "50-e2e: NOT RUN: tierflowd or tierflow-probe is not built ($TF_OPT_BIN)"; exit 1
fi
lab_init bench50
trap 'lab_cleanup' EXIT
trap 'exit 130' INT TERM
lab_up fattree:k=4,gbps=1 --mbit "$MBIT" --seed 7 || { echo "50-e2e: lab up failed"; exit 1; }
MGMT=$(jq -r '.lab.mgmt.controller' "$LAB_TOPO")
E2E_URL="http://$MGMT:$((20000 + $$ % 2000))"
E2E_TOKEN=$LAB_TMP/token; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$E2E_TOKEN"; chmod 600 "$E2E_TOKEN"
E2E_GBPS=$(awk -v m="$MBIT" 'BEGIN{print m/1000}')
ideal=$(awk -v m="$MBIT" 'BEGIN{print 16 * 0.955 * m * 1e6}')   # 16 flows at one flow's TCP ceiling
mb() { awk -v a="$1" 'BEGIN{printf "%.1f", a/1e6}'; }
pc() { awk -v a="$1" -v b="$ideal" 'BEGIN{printf "%.0f%%", 100*a/b}'; }

echo "fattree:k=4, 16 hosts, links $MBIT Mbit/s; % = of 16 flows x one flow's ceiling (0.955 x $MBIT) = $(mb "$ideal") Mbit/s,"
echo "reachable only by the permutations (stride, randbij): random and staggered send several flows to some hosts"
echo "react = seconds from tierflowd's start to the first 1-s bin at >= 90% of its settled aggregate"
printf '%-20s %14s %14s %8s %8s\n' pattern "ECMP Mbit/s" "tierflow" "ratio" "react s"
for p in $PATTERNS; do
  lab_pattern "$p" 1 > "$LAB_TMP/pairs"
  e2e_run "$LAB_TMP/pairs" 8 9 8
  printf '%-20s %8s (%4s) %8s (%4s) %8s %8s\n' "$p" "$(mb "$E2E_ECMP")" "$(pc "$E2E_ECMP")" "$(mb "$E2E_TF")" "$(pc "$E2E_TF")" \
    "$(awk -v a="$E2E_TF" -v b="$E2E_ECMP" 'BEGIN{printf "%.2f", (b > 0 ? a/b : 0)}')" "$E2E_REACT"
done
lab_pattern stride:4 1 > "$LAB_TMP/pairs"
e2e_run "$LAB_TMP/pairs" 0 8 6
echo "reaction: stride:4 flows start with tierflowd running; 90% of the settled $(mb "$E2E_TF") Mbit/s after ${E2E_REACT}s (1-s bins: $E2E_BINS)"
