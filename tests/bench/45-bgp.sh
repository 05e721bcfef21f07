#!/usr/bin/env bash
# bgp backend (docs/bgp.md): on a routed 2-leaf x 2-spine lab with FRR, the
# time from backend_apply to the steered /32 in the leaf's kernel (ExaBGP ->
# FRR -> zebra), and the rate for BGP_BENCH_ROUTES /32s announced at once and
# withdrawn, through tierflowd's own backend code (tests/tools/bgpbench).
# Baseline: the issue's measurement with ExaBGP alone, 0.078 s and 1,000
# routes in 0.66 s.
set -u
N=${BGP_BENCH_ROUTES:-1000}
. "$TF_ROOT/tests/lab/lib.sh"
. "$TF_ROOT/tests/lab/bgp.sh"
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root for the lab"; exit 0; }
for t in exabgp vtysh jq; do command -v $t >/dev/null || { echo "skipped: '$t' missing (scripts/deps.sh test)"; exit 0; }; done
BENCH="$TF_TOOLS/bgpbench"
[ -x "$BENCH" ] || { echo "missing $BENCH (make tools)"; exit 1; }
lab_init bgpbench
trap 'lab_cleanup' EXIT
trap 'exit 130' INT TERM
lab_up leafspine:leaves=2,spines=2,hosts=1,gbps=100 --routing bgp || exit 1
lab_bgp_peer 64999 || exit 1
lab_bgp_topology "$LAB_TMP/topology-bgp.json"
"$BENCH" "$LAB_TMP/topology-bgp.json" "$LAB_TMP/speaker" "$(lab_bgp_controller)" L1 S2 "$("$LAB" netns L1)" "$N"
