#!/usr/bin/env bash
# Benchmark part: real traffic on two emulated fabrics, a 4-leaf x 4-spine
# leaf/spine (4 hosts a leaf) and the k=4 fat tree (16 hosts each), links
# shaped to BENCH_MBIT (default 50). For each Hedera pattern (stride 1/2/4/8,
# staggered(0.5,0.3), random, randbij) 16 iperf3 flows run three times in the
# same run: the oracle (the simulator's optimal assignment for these flows
# installed as static rules before they start, no probes: what this machine
# can carry on those paths, docs/lab.md), then plain ECMP, then tierflow
# (probes on every leaf and spine uplink, tierflowd with the netlink backend)
# on the same flows: aggregate goodput of each from the receivers' iperf3
# JSON, tierflow's ratio to ECMP and to the oracle, and its moves per flow
# (the mean, and the most any one flow made: issue 13 asks at most one).
# ECMP is measured twice: in tierflow's run before tierflowd starts (2-8 s
# after the flows start, "ECMP early"; the probes run from the flows'
# start, as a fabric's run all along, and tierflowd starts onto them), and
# in a run of its own over the same late window as tierflow and the oracle
# (17-25 s): tf/ECMP is against the late one, since the same flows carry
# less 17 s in than 2 s in, whoever places them.
# Then the reaction: tierflowd already running, colliding stride:4 flows
# start; seconds until the aggregate reaches 90% of its settled value (0.2-s
# bins), at --interval 1 and 0.2, BENCH_REACT_RUNS runs each (median;
# default 5: single runs on the fat tree spread from 1.2 to 6.8 s), with
# the oracle's own ramp (TCP start, no collision) beside it, how much later
# than the oracle run before it each run got there (what the loop adds to
# TCP's own start), and the cores
# tierflowd and the probes used (BENCH_REACT_INTERVALS: which intervals,
# default "1 0.2"); last, the gray-failure false positives of all its
# tierflow runs (no link loses packets here, issue 18). BENCH_REPEAT=N
# (default 1) runs each pattern's three runs N times, prints each, then
# a median row (each column's median, the lower middle one for an even
# N; the ratios are the medians of the runs' own ratios; a react of -1,
# never reached, counts as the longest; max moves is the most of any run):
# with the lab's CUBIC senders the same stride:1 flows read within 0.6%
# from run to run (10% with the BBR the machine had set, docs/lab.md).
# BENCH_QUEUE_MS=N bounds every link's queue to N ms of its rate first
# (lab_bound_queues; default 100; 0: the lab's own, a pfifo of 1000 GSO
# packets, seconds at 50 Mbit/s). In those the probes read a median of
# 376 ms of queue where flows collided, a moved flow's packets on its old
# path arrive after its move (its receiver delivers in order), moved flows
# climbed for 0.5-1.0 s, and the fat tree's reaction at --interval 1 read
# 1.4-1.6 s; bounded to 100 ms (with the ACKs ahead, below) 0.8-1.2 s.
# 24, test_failures' bound, lost a 100-segment first window's packets and
# the reaction paid for it (docs/lab.md, "Bounded queues with the ACKs
# ahead").
# BENCH_INITCWND=N (default 100; 0: the kernel's 10)
# starts every host's TCP with N segments of congestion and receive window
# (lab_initcwnd), as a RoCE queue pair starts at line rate: from 10, the
# oracle's own ramp read 0.4-1.8 s, its CUBIC flows leaving slow start
# early on the others' queues (docs/lab.md, "The senders' first window").
# BENCH_ACK_PRIO=1 (the default) serves every link's small packets (TCP's
# ACKs) ahead of its data (lab_ack_prio): in one queue a sender's ACKs
# waited behind other flows' data, hundreds of ms of it where flows met,
# and flows that lost their window in the first collisions regrew on free
# paths for 5-10 s after the moves (the fat tree's reaction: 1.8-9.4 s with
# one queue, 1.0-1.6 with the ACKs ahead; docs/lab.md, "ACKs ahead of the
# data"). 0: one queue, as before.
# Figures are reported, not asserted. Needs root.
set -u
TF_ROOT=${TF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TF_ROOT/tests/lab/lib.sh"
. "$TF_ROOT/tests/lab/traffic.sh"
[ "$(id -u)" -eq 0 ] || { echo "50-e2e: skipped, needs root for network namespaces"; exit 0; }
MBIT=${BENCH_MBIT:-50}
PATTERNS=${BENCH_PATTERNS:-"stride:1 stride:2 stride:4 stride:8 staggered:0.5,0.3 random randbij"}
FABRICS=${BENCH_FABRICS:-"leafspine:leaves=4,spines=4,hosts=4,gbps=1 fattree:k=4,gbps=1"}
RUNS=${BENCH_REACT_RUNS:-5}
REACT_INTERVALS=${BENCH_REACT_INTERVALS:-"1 0.2"}   # the reaction part's --interval values
REPEAT=${BENCH_REPEAT:-1}
QUEUE_MS=${BENCH_QUEUE_MS:-100}   # link queues in ms of the link rate (lab_bound_queues); 0: the lab's own
ACK_PRIO=${BENCH_ACK_PRIO:-1}   # 1: small packets ahead of the data on every link (lab_ack_prio); 0: one queue
INITCWND=${BENCH_INITCWND:-100}   # the hosts' initial TCP window in segments (lab_initcwnd); 0: the kernel's 10
export LAB_TCP_CC=${LAB_TCP_CC:-cubic}   # the senders' congestion control, not the machine's (docs/lab.md)
[[ "$REPEAT" =~ ^[1-9][0-9]?$ ]] || { echo "50-e2e: BENCH_REPEAT '$REPEAT' is not a count from 1 to 99"; exit 1; }
whole() { [[ "$2" =~ ^[0-9]{1,4}$ ]] || { echo "50-e2e: $1 '$2' is not a whole number of $3 from 0 to 9999"; exit 1; }; }  # NAME VALUE UNIT
whole BENCH_INITCWND "$INITCWND" segments
whole BENCH_QUEUE_MS "$QUEUE_MS" ms
[[ "$ACK_PRIO" =~ ^[01]$ ]] || { echo "50-e2e: BENCH_ACK_PRIO '$ACK_PRIO' is not 0 or 1"; exit 1; }
CTL=$(tf_bin tierflowd); PROBE=$(tf_bin tierflow-probe)
if [ -z "$CTL" ] || [ -z "$PROBE" ] || [ -z "$(tf_bin tierflow-sim)" ]; then
  echo "50-e2e: NOT RUN: tierflowd, tierflow-probe or tierflow-sim is not built ($TF_OPT_BIN)"; exit 1
fi
trap 'lab_cleanup' EXIT
trap 'exit 130' INT TERM
ideal=$(awk -v m="$MBIT" 'BEGIN{print 16 * 0.955 * m * 1e6}')   # 16 flows at one flow's TCP ceiling
mb() { awk -v a="$1" 'BEGIN{printf "%.1f", a/1e6}'; }
pc() { awk -v a="$1" -v b="$ideal" 'BEGIN{printf "%.0f%%", 100*a/b}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", (b > 0 ? a/b : 0)}'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {print (NR ? v[int((NR + 1) / 2)] : -1)}'; }
# One pattern's row: name, ECMP early, ECMP late, tierflow, oracle (bit/s),
# tf/ECMP, tf/oracle, moves/flow, react, most moves of one flow; each value
# also goes into col[i] (the caller's per-pattern columns) for the median row.
row() {
  local i
  for ((i = 2; i <= $#; i++)); do col[$i]+=" ${!i}"; done
  printf '%-18s %8s (%4s) %8s (%4s) %8s (%4s) %8s (%4s) %7s %9s %10s %6s %9s\n' "$1" "$(mb "$2")" "$(pc "$2")" \
    "$(mb "$3")" "$(pc "$3")" "$(mb "$4")" "$(pc "$4")" "$(mb "$5")" "$(pc "$5")" "$6" "$7" "$8" "$9" "${10}"
}

echo "links $MBIT Mbit/s, queues $([ "$QUEUE_MS" = 0 ] && echo "the lab's own" || echo "bounded to $QUEUE_MS ms")$([ "$ACK_PRIO" = 1 ] && echo ", small packets (ACKs) ahead of the data"), senders' first window $([ "$INITCWND" = 0 ] && echo "the kernel's" || echo "$INITCWND segments"); % = of 16 flows x one flow's ceiling (0.955 x $MBIT) = $(mb "$ideal") Mbit/s,"
echo "reachable only by the permutations (stride, randbij): random and staggered send several flows to some hosts."
echo "oracle = the simulator's assignment as static rules before the flows start, no probes (this machine's ceiling);"
echo "react = seconds from tierflowd's start to the first 1-s bin at >= 90% of its settled aggregate;"
echo "max moves = the most moves any one flow made in the run (-1: not read)."
for fab in $FABRICS; do
  lab_init bench50
  TF_PROBE_IFS=()
  lab_up "$fab" --mbit "$MBIT" --seed 7 || { echo "50-e2e: lab up $fab failed"; exit 1; }
  [ "$ACK_PRIO" = 0 ] || lab_ack_prio || { echo "50-e2e: cannot give the lab's small packets a class of their own"; exit 1; }
  lab_bound_queues "$QUEUE_MS" || { echo "50-e2e: cannot bound the lab's queues to $QUEUE_MS ms"; exit 1; }
  lab_initcwnd "$INITCWND" || { echo "50-e2e: cannot set the hosts' initial window to $INITCWND segments"; exit 1; }
  MGMT=$(jq -r '.lab.mgmt.controller' "$LAB_TOPO")
  E2E_URL="http://$MGMT:$((20000 + $$ % 2000))"
  E2E_TOKEN=$LAB_TMP/token; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$E2E_TOKEN"; chmod 600 "$E2E_TOKEN"
  E2E_GBPS=$(awk -v m="$MBIT" 'BEGIN{print m/1000}')
  echo
  echo "== $fab"
  GRAY_FP=0
  printf '%-18s %15s %15s %15s %15s %7s %9s %10s %6s %9s\n' pattern "ECMP early" "ECMP Mbit/s" tierflow oracle "tf/ECMP" "tf/oracle" "moves/flow" "react" "max moves"
  for p in $PATTERNS; do
    lab_pattern "$p" 1 > "$LAB_TMP/pairs"
    declare -A col=()
    for ((k = 0; k < REPEAT; k++)); do
      # measured over the window tierflow is (17 s to 25 s after the flows
      # start): 16 TCP flows through deep queues are not settled after 3 s
      e2e_oracle "$LAB_TMP/pairs" 17 8 || E2E_ORACLE=0
      e2e_ecmp "$LAB_TMP/pairs" 17 8
      e2e_run "$LAB_TMP/pairs" 8 9 8
      row "$p" "$E2E_ECMP" "$E2E_ECMP_LATE" "$E2E_TF" "$E2E_ORACLE" "$(ratio "$E2E_TF" "$E2E_ECMP_LATE")" \
        "$(ratio "$E2E_TF" "$E2E_ORACLE")" "$(ratio "${E2E_MOVES:-0}" 16)" "$E2E_REACT" "$E2E_MOVES_MAX"
      echo "    TCP retransmits/s over the window: ECMP $E2E_ECMP_RETX, tierflow $E2E_TF_RETX, oracle ${E2E_ORACLE_RETX:--};" \
        "demand estimate's median error by reporting tier: $E2E_EST"
      [ "$E2E_ORACLE_LOST$E2E_ECMP_LOST$E2E_TF_LOST" = 000 ] ||
        echo "    !! flows whose iperf3 client failed (of 16; one that never connected counts as 0): oracle $E2E_ORACLE_LOST, ECMP $E2E_ECMP_LOST, tierflow $E2E_TF_LOST"
    done
    if [ "$REPEAT" -gt 1 ]; then
      row "median of $REPEAT" "$(echo "${col[2]}" | median)" "$(echo "${col[3]}" | median)" "$(echo "${col[4]}" | median)" \
        "$(echo "${col[5]}" | median)" "$(echo "${col[6]}" | median)" "$(echo "${col[7]}" | median)" \
        "$(echo "${col[8]}" | median)" "$(echo "${col[9]}" | sed 's/\(^\| \)-1\b/ inf/g' | median | sed 's/^inf$/-1/')" \
        "$(echo "${col[10]}" | tr ' ' '\n' | grep -v '^$' | sort -g | tail -1)"   # the most of any run, not a median
    fi
    unset col
  done
  lab_pattern stride:4 1 > "$LAB_TMP/pairs"
  for iv in $REACT_INTERVALS; do
    r=""; o=""; d=""; cpu=""; lost=0
    for ((k = 0; k < RUNS; k++)); do
      IPERF_INTERVAL=0.2 e2e_oracle "$LAB_TMP/pairs" 3 5 || true; o+=" $E2E_ORACLE_REACH"
      IPERF_INTERVAL=0.2 TF_INTERVAL=$iv e2e_run "$LAB_TMP/pairs" 0 8 6; r+=" $E2E_REACT_S"; cpu+=" $E2E_CPU"
      lost=$((lost + E2E_ORACLE_LOST + E2E_TF_LOST))
      # What the loop adds to TCP's own start: this run against the oracle
      # run just before it (both -1 when never reached: not counted).
      d+=" $(awk -v a="$E2E_REACT_S" -v b="$E2E_ORACLE_REACH" 'BEGIN{if (a < 0 || b < 0) print "-"; else printf "%.1f", a - b}')"
    done
    echo "reaction at --interval $iv (stride:4 flows start with tierflowd running; 90% of the settled aggregate, 0.2-s bins):" \
      "median $(echo "$r" | median) s (runs:$r); the oracle's own ramp: median $(echo "$o" | median) s (runs:$o);" \
      "beyond the oracle run before it: median $(echo "$d" | tr ' ' '\n' | grep -vx -- - | tr '\n' ' ' | median) s (runs:$d);" \
      "tierflowd + probes used$cpu cores"
    [ "$lost" -eq 0 ] || echo "    !! flows whose iperf3 client failed in these runs: $lost (of 16 a run; one that never connected counts as 0)"
  done
  echo "gray-failure false positives on $fab (link_suspect on a link neither routing nor a probe reported down, every tierflow run): $GRAY_FP"
  lab_cleanup
done
