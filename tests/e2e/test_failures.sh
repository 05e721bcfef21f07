#!/usr/bin/env bash
# timeout: 600
# Failures end to end, tierflow against the fabric's own ECMP, side by side,
# on a 3-leaf x 3-spine fabric (3 hosts a leaf) and on the k=4 fat tree, links
# at $E2E_MBIT. tests/lab/failures.sh has the scenarios and the harness.
#
# Traffic: one iperf3 fat flow per host, across leaves, both ways (every leaf
# sends and receives; 9 flows on the leaf/spine, 16 on the fat tree), source
# ports picked so that ECMP puts two flows on one uplink of every leaf. Per
# topology two continuous runs of the same flows go through the scenarios in
# turn (fail, hold, check, restore, settle, next): first with the routing
# alone (ECMP: BGP when the lab routes with it, else its static routes), then
# with tierflow (a probe on every leaf's and spine's uplinks, tierflowd with
# the bgp or the netlink backend, see below, --interval 1). The lab's link queues are bounded first
# (fail_bound_queues: with its 1000-packet GSO queues, two-way TCP gets ~60%
# of what any placement allows, ECMP's and tierflow's alike).
#
# Per scenario the 100% is what the surviving fabric can carry for these
# flows: tierflow-sim on the lab's topology without the failed links, flows
# at the measured single-flow ceiling, max-min fair throughput of the best
# assignment it finds (flap: with the flapping link down; restore: the whole
# fabric). The recovery target -- a 1-s bin (receivers' iperf3 JSON) at
# >= 90% of that capacity within 3 s of the failure (flap: of its first
# down), the bins after it averaging >= 90% too; restore: within the 8 s
# after the link is back (BGP re-establishes the session first, and tierflow
# holds a returned link off for thresholds.link_holddown, 3 s) -- is a
# performance figure: printed here as met or MISSED, reported by
# tests/bench/55-failures.sh, asserted only with E2E_FAIL_ASSERT_TARGET=1.
# Asserted, per topology and scenario, for tierflow:
#   - its aggregate after the failure ([t0+3, t0+6); flap: to 6 s after the
#     last up) not below ECMP's in the same scenario by more than
#     $E2E_FAIL_TOL (3%: the aggregates of one placement repeat within about
#     1% here, flows on shared links wobble more), unless the placement it
#     left in force (the data plane's paths, max-min) carries at least what
#     ECMP's did: then the gap is the emulation's (a CI run once measured 4%
#     between two placements that both carry 215 Mbit/s), and it is printed;
#   - with the failure in place (flap: in its last down phase), no flow that
#     a tierflow rule steers has a forwarding path (ip route get hop by hop,
#     rules included) that crosses a down link or ends without a route; and
#     (link failures) tierflow's own view (GET /api/v1/flows) puts no fresh
#     fat flow on a down link;
#   - restore: at most one move per flow in the 8 s after the link comes
#     back (GET /api/v1/events), i.e. no oscillation.
# ECMP's figures are printed beside them, with what the placement in force at
# the check could carry (max-min of the traced paths) for both, which tells a
# placement shortfall from a TCP one. Not asserted beyond "the collision
# happened" before any failure.
#
# Backends: on the leaf/spine tierflowd drives the switches through the bgp
# backend (ExaBGP peered with every switch over the management network, /32
# next hops, no netlink; its pins are found hop by hop as /32 routes FRR
# learned from the controller), on the fat tree through netlink (policy
# rules). E2E_FAIL_LS_MODES / E2E_FAIL_FT_MODES ("tierflow", "bgp" or both)
# pick others; bench 55 runs both backends on both topologies.
# Scenarios (to shorten make test): the leaf/spine runs every one but
# far-downlink, which test_bgp_backend's remote failure covers for the bgp
# backend, and spine, which the fat tree runs (its core switch, through
# netlink; bench 55 runs it on the leaf/spine with both backends): the
# leaf/spine's child was the suite's long pole, 237 s against the fat
# tree's 195, and make test came within 5 s of its 15 min; the fat tree
# runs what three tiers add, far-downlink (an aggregation switch's report
# names a path through the failure) and spine, while the netlink backend's
# local uplink failure is test_leafspine's.
# The two topologies run side by side, each in a child of this suite with
# its own lab, 3-4 min (E2E_FAIL_PARALLEL=0: one after the other, about
# 6 min; see the end).
# tests/bench/55-failures.sh runs every scenario on both topologies and
# prints the whole matrix as rows, the oracle beside them.
# E2E_FAIL_TOPOS, E2E_FAIL_SCENARIOS (leaf/spine) and E2E_FAIL_FT_SCENARIOS
# pick others; E2E_FAIL_ORACLE=1 adds the oracle run (fail_run oracle).
set -u
TF_ROOT=${TF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TF_ROOT/tests/lib/tap.sh"
. "$TF_ROOT/tests/lab/lib.sh"
. "$TF_ROOT/tests/lab/traffic.sh"
. "$TF_ROOT/tests/lab/bgp.sh"
. "$TF_ROOT/tests/lab/failures.sh"
t_need_root e2e_failures
for t in iperf3 jq tc ss curl; do command -v $t >/dev/null || { t_fail "tool $t present" "scripts/deps.sh test installs it"; t_done; }; done

MBIT=${E2E_MBIT:-50}
TOL=${E2E_FAIL_TOL:-0.03}
SCENARIOS=${E2E_FAIL_SCENARIOS:-"src-uplink restore two-links flap"}
FT_SCENARIOS=${E2E_FAIL_FT_SCENARIOS:-"far-downlink spine"}
TOPOS=${E2E_FAIL_TOPOS:-"leafspine fattree"}
LS_MODES=${E2E_FAIL_LS_MODES:-"bgp"}
FT_MODES=${E2E_FAIL_FT_MODES:-"tierflow"}
PROBE=$(tf_bin tierflow-probe); CTL=$(tf_bin tierflowd); SIM=$(tf_bin tierflow-sim); TOPO=$(tf_bin tierflow-topo)
missing=""
for b in PROBE CTL SIM TOPO; do [ -n "${!b}" ] || missing+=" $b"; done
if [ -n "$missing" ]; then
  echo "# !!!! NOT TESTED: missing$missing (build them: make all) !!!!" >&2
  t_skip "failure scenarios, tierflow vs ECMP" "not built:$missing"
  t_done
fi
trap 'lab_cleanup' EXIT
trap 'exit 130' INT TERM
mb() { fail_mbit "$1"; }
pc() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.0f%%", (b > 0 ? 100*a/b : 0)}'; }

run_topology() {
  local name=$1 spec=$2 seed=$3 SCENARIOS=$4 MODES=$5 s c e t lim n
  lab_init "fl$name"
  t_check "$name: lab up $spec at ${MBIT} Mbit/s" lab_up "$spec" --mbit "$MBIT" --seed "$seed"
  [ -s "$LAB_TOPO" ] || return 0
  fail_init
  echo "# $name: routing $FAIL_ROUTING; link queues bounded to $FAIL_QUEUE_BYTES bytes (0: the lab's own)"
  local H=(${FAIL_HOSTS[${FAIL_LEAVES[0]}]}) D=(${FAIL_HOSTS[${FAIL_LEAVES[1]}]})
  c=$(fail_ceiling "${H[0]}" "${D[0]}")
  echo "# $name: single-flow ceiling C = $(mb "$c") Mbit/s"
  t_ge "$name: one flow reaches >= 85% of the shaped rate" "$c" "$(awk -v m="$MBIT" 'BEGIN{printf "%.0f", 0.85*m*1e6}')" || true
  fail_flows "$c" || { t_fail "$name: flows with colliding ports"; lab_cleanup; return 0; }
  t_eq "$name: ip route get puts the ${#FAIL_FSRC[@]} flows where fail_flows wanted (two on one uplink a leaf)" 0 "$(fail_check_collisions)"
  fail_capacities $SCENARIOS
  for s in none $SCENARIOS; do
    t_ge "$name: capacity for $s computed" "${FAIL_CAP[$s]}" 1
  done
  MGMT=$(jq -r '.lab.mgmt.controller' "$LAB_TOPO")
  FAIL_URL="http://$MGMT:$((16000 + $$ % 2000))"
  FAIL_TOKEN=$LAB_TMP/token; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$FAIL_TOKEN"; chmod 600 "$FAIL_TOKEN"
  FAIL_GBPS=$(awk -v m="$MBIT" 'BEGIN{print m/1000}')
  t=$(date +%s); fail_run ecmp $SCENARIOS; echo "# $name: ECMP run $(( $(date +%s) - t )) s"
  if [ -n "${E2E_FAIL_ORACLE:-}" ]; then   # this machine's ceiling per scenario (bench 55 always runs it)
    t_check "$name: the oracle's rules for every scenario" fail_oracle_prepare $SCENARIOS
    t=$(date +%s); fail_run oracle $SCENARIOS; echo "# $name: oracle run $(( $(date +%s) - t )) s"
  fi
  # The controller runs: tierflowd with the netlink backend ("tierflow")
  # and/or with the bgp backend ("bgp": ExaBGP peered with every switch,
  # /32 next hops, no netlink), the same scenarios and assertions.
  local m
  for m in $MODES; do
    t=$(date +%s); fail_run $m $SCENARIOS; echo "# $name: $m run $(( $(date +%s) - t )) s"
    t_eq "$name $m: tierflowd ran through the scenarios" 1 "${FAIL_R[$m alive]}"
    gray_no_false_positives "$name $m: tierflowd"; GRAY_FP=0
    echo "# $name $m: ${FAIL_R[$m probes]} probes alive at the end; tierflow moved ${FAIL_R[$m all moves]} flows in all"
    echo "# $name: 1-s aggregate bins, Mbit/s, ECMP:     ${FAIL_R[ecmp all bins]}"
    echo "# $name: 1-s aggregate bins, Mbit/s, $m: ${FAIL_R[$m all bins]}"

    # Baseline: the collision happened, tierflow fixed it.
    e=${FAIL_R[ecmp none after]}; t=${FAIL_R[$m none after]}
    echo "# $name none ($m): ideal $(mb "${FAIL_CAP[none]}") Mbit/s; ECMP $(mb "$e") ($(pc "$e" "${FAIL_CAP[none]}"), placement $(mb "${FAIL_R[ecmp none placement]}")), tierflow $(mb "$t") ($(pc "$t" "${FAIL_CAP[none]}"), placement $(mb "${FAIL_R[$m none placement]}"))"
    [ "$m" = "${MODES%% *}" ] && t_ge "$name: ECMP before any failure <= 85% of the ideal (the collision happened)" "$(awk -v c="${FAIL_CAP[none]}" 'BEGIN{printf "%.0f", 0.85*c}')" "$e"
    t_ge "$name $m: tierflow before any failure >= ECMP - ${TOL}" "$t" "$(awk -v e="$e" -v k="$TOL" 'BEGIN{printf "%.0f", (1-k)*e}')"

    for s in $SCENARIOS; do
      c=${FAIL_CAP[$s]}; e=${FAIL_R[ecmp $s after]}; t=${FAIL_R[$m $s after]}
      echo "# $name $s ($(fail_describe "$s")): capacity $(mb "$c") Mbit/s (${FAIL_R[cap_from $s]})"
      echo "#   ECMP     after $(mb "$e") ($(pc "$e" "$c")), 90% after ${FAIL_R[ecmp $s rec]} s; placement in force carries $(mb "${FAIL_R[ecmp $s placement]}"), dead paths ${FAIL_R[ecmp $s dead]}; routing back in ${FAIL_R[ecmp $s routing]:-n/a} s; bins ${FAIL_R[ecmp $s bins]}"
      echo "#   tierflow after $(mb "$t") ($(pc "$t" "$c")), 90% after ${FAIL_R[$m $s rec]} s; placement in force carries $(mb "${FAIL_R[$m $s placement]}"), dead paths ${FAIL_R[$m $s dead]} (${FAIL_R[$m $s dead_tf]} steered by tierflow), fat flows on a down link in its view ${FAIL_R[$m $s view]}, moves ${FAIL_R[$m $s moves]}; routing back in ${FAIL_R[$m $s routing]:-n/a} s; bins ${FAIL_R[$m $s bins]}"
      [ -n "${FAIL_R[oracle $s after]:-}" ] && echo "#   oracle   after $(mb "${FAIL_R[oracle $s after]}") ($(pc "${FAIL_R[oracle $s after]}" "$c")), 90% after ${FAIL_R[oracle $s rec]} s; tierflow at 90% of the oracle after ${FAIL_R[$m $s rec_oracle]} s; bins ${FAIL_R[oracle $s bins]}"
      echo "#   tierflow/capacity $(awk -v a="$t" -v b="$c" 'BEGIN{printf "%.2f", a/b}'), tierflow/ECMP $(awk -v a="$t" -v b="$e" 'BEGIN{printf "%.2f", (b > 0 ? a/b : 0)}')"
      [ "$s" = flap ] && echo "#   while flapping (from 3 s after the first down): ECMP $(mb "${FAIL_R[ecmp flap during]}"), tierflow $(mb "${FAIL_R[$m flap during]}"); after the last up: ECMP $(mb "${FAIL_R[ecmp flap after_up]}"), tierflow $(mb "${FAIL_R[$m flap after_up]}") Mbit/s (full fabric $(mb "${FAIL_CAP[none]}"))"
      if [ "${FAIL_R[$m $s dead]}" != 0 ] || [ "${FAIL_R[ecmp $s dead]}" != 0 ]; then
        printf '%s' "${FAIL_R[$m $s trace]}" | grep DEAD | sed 's/^/#   tierflow run: /'
        printf '%s' "${FAIL_R[ecmp $s trace]}" | grep DEAD | sed 's/^/#   ECMP run: /'
      fi
      # The recovery target (>= 90% of the surviving capacity within 3 s; for
      # restore, of the full fabric within the hold) is a performance figure:
      # printed here and reported met or missed by tests/bench/55-failures.sh,
      # asserted only with E2E_FAIL_ASSERT_TARGET=1. What is asserted below is
      # behaviour: never below ECMP, never a pin on a dead link, no oscillation.
      n=${FAIL_R[$m $s rec]}
      if [ "$s" = restore ]; then tgt="back to >= 90% of the full fabric within ${FAIL_R[$m $s hold]} s"; ok=$([ "$n" -ge 1 ] && echo 1 || echo 0)
      else tgt=">= 90% of the surviving capacity within 3 s"; ok=$([ "$n" -ge 1 ] && [ "$n" -le 3 ] && echo 1 || echo 0); fi
      if [ -n "${E2E_FAIL_ASSERT_TARGET:-}" ]; then
        if [ "$ok" = 1 ]; then t_pass "$name $s $m: tierflow $tgt (${n} s)"; else t_fail "$name $s $m: tierflow $tgt" "first 1-s bin at >= 90%: ${n} s (-1: not within ${FAIL_R[$m $s hold]} s); bins ${FAIL_R[$m $s bins]}"; fi
      else
        echo "#   target (bench): tierflow $tgt: $([ "$ok" = 1 ] && echo "met (${n} s)" || echo "MISSED (first 1-s bin at >= 90%: ${n} s)")"
      fi
      # Never worse than ECMP: measured, within TOL; or, when the goodput of
      # the two runs differs by more, the placement tierflow left in force
      # (the data plane's paths, hop by hop) carries at least what ECMP's did,
      # so the gap is the emulation's, not a worse choice (said so).
      pt=${FAIL_R[$m $s placement]:-0}; pe=${FAIL_R[ecmp $s placement]:-0}
      if awk -v t="$t" -v e="$e" -v k="$TOL" 'BEGIN{exit !(t < (1-k)*e)}' && awk -v a="$pt" -v b="$pe" 'BEGIN{exit !(a >= b)}'; then
        echo "#   goodput $(mb "$t") below ECMP's $(mb "$e") by more than ${TOL}, with a placement that carries as much ($(mb "$pt") vs $(mb "$pe")): the emulation's noise"
        t_pass "$name $s $m: tierflow after the failure >= ECMP (placement $(mb "$pt") vs $(mb "$pe"); goodput $(mb "$t") vs $(mb "$e"))"
      else
        t_ge "$name $s $m: tierflow after the failure >= ECMP - ${TOL} ($(mb "$t") vs $(mb "$e"))" "$t" "$(awk -v e="$e" -v k="$TOL" 'BEGIN{printf "%.0f", (1-k)*e}')"
      fi
      t_eq "$name $s $m: no flow steered by tierflow onto a dead link (data plane, ip route get hop by hop)" 0 "${FAIL_R[$m $s dead_tf]}"
      # tierflow's own view (GET /api/v1/flows), not only the data plane: on
      # three tiers an aggregation switch's report of the interval around the
      # failure names a path through it (state_flow_place keeps a live pin).
      case $s in
        flap|restore) ;;
        *) t_eq "$name $s $m: tierflow's view puts no fat flow on a down link" 0 "${FAIL_R[$m $s view]}" ;;
      esac
      if [ "$s" = restore ]; then
        # Using the returned link takes a few moves; more moves than flows
        # would mean flows going back and forth.
        lim=${#FAIL_FSRC[@]}
        t_ge "$name restore $m: tierflow moves <= $lim (one per flow) in the ${FAIL_R[$m restore hold]} s after the link is back (no oscillation)" "$lim" "${FAIL_R[$m restore moves]}"
        # What the count is made of (a fresh-clone make test once counted
        # 12, which no run since has reproduced): routing events in the
        # window would say the fabric changed again, not tierflow.
        echo "#   events in those ${FAIL_R[$m restore hold]} s: ${FAIL_R[$m restore events]:-none}"
      fi
    done
  done
  [ -n "${LAB_KEEP_TMP:-}" ] && declare -p FAIL_R > "$LAB_TMP/fail-results.txt"
  lab_cleanup
}

t0=$(date +%s)
set -- $TOPOS
if [ $# -gt 1 ] && [ "${E2E_FAIL_PARALLEL:-1}" = 1 ]; then
  # The topologies side by side, each in a child of this script with its
  # own lab (350 s one after the other, 227-257 s side by side). The
  # goodput checks compare two runs on one fabric and hold under the load
  # that adds. The restore move count once did not (12 moves of 9 flows;
  # its events were not kept). A later run showed the likely way: a round
  # moved 8 flows on the probe's link_up, before routing was back, and
  # another round 1 more once it was (9, the limit). A probe's return is
  # now held down like routing's: the restore is mostly one round after
  # both (seven runs of eight; the eighth moved 1 flow, then 8).
  # The figures printed are not benchmarks.
  trap - EXIT
  declare -A KID=()
  trap 'kill "${KID[@]}" 2>/dev/null; wait; exit 130' INT TERM
  out=$(mktemp -d)
  for topo in "$@"; do
    E2E_FAIL_TOPOS=$topo E2E_FAIL_PARALLEL=0 bash "$0" > "$out/$topo.tap" 2>&1 & KID[$topo]=$!
  done
  for topo in "$@"; do wait "${KID[$topo]}"; done
  for topo in "$@"; do echo "# ---- $topo"; t_replay "$topo" "$out/$topo.tap"; done
  rm -rf "$out"
else
  for topo in "$@"; do
    case $topo in
      leafspine) run_topology leafspine leafspine:leaves=3,spines=3,hosts=3,gbps=100 5 "$SCENARIOS" "$LS_MODES" ;;
      fattree)   run_topology fattree fattree:k=4,gbps=1 7 "$FT_SCENARIOS" "$FT_MODES" ;;
      *) t_fail "known topology $topo" "leafspine or fattree" ;;
    esac
  done
fi
echo "# wall time $(( $(date +%s) - t0 )) s"
t_done
