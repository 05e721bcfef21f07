#!/usr/bin/env bash
# timeout: 240
# Gray failures on the real kernel (docs/health.md): a 3-leaf x 3-spine
# fabric (2 hosts a leaf, FRR when the lab routes with it, links at
# $E2E_MBIT), probes on the leaves' uplinks, tierflowd (netlink backend,
# --interval 1, thresholds.drain on, a short hold-down) running before the
# flows. Six iperf3 flows at 30% of a link each (fat, none congested): two of
# them, from L1 and from L2, to L3's hosts through S1; two between L1 and L2
# through S1 (they clear L1 -> S1 and L2 -> S1), two from L3 through S2 and S3.
#
#   1. 1% random loss on S1's downlink to L3 (iptables statistic DROP in S1's
#      namespace: no interface counter moves): S1 -> L3 is named
#      (link_suspect) and no other direction; the time to name it is printed.
#   2. with drain on it is drained: no fresh fat flow crosses it in tierflow's
#      view, and the aggregate over 4 s is >= 0.9 of what the fabric without
#      that link can carry for these flows (fail_capacity, tierflow-sim).
#   3. the rule removed, the link is clean after the hold-down and undrained.
#   4. the operator's drain on the lab: L1 -> S2 drained, no fat flow on it,
#      undrained (the API's answers are tests/http/test_gray_api.sh's).
#   5. a leaf uplink flapping (down/up 5x in 10 s at L2): drained, held while it
#      flaps, clean and undrained after the hold-down.
# What it does not do: collisions that overflow the queues of the lossy link
# itself (their loss is congestion, explained, by design), and loss on a link
# only one fat flow crosses (no tomography can tell its hops apart).
set -u
TF_ROOT=${TF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TF_ROOT/tests/lib/gray_suite.sh"
gray_suite_needs e2e_gray "gray failures on the lab"
MBIT=${E2E_MBIT:-50}
HOLD=${GRAY_HOLD:-6}
LOSS=${GRAY_LOSS:-0.01}
trap 'gray_rules_clear; lab_cleanup; rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

lab_init ${GRAY_LAB:-gry}
GRAY_CTL_ARGS="--set thresholds.drain=true --set thresholds.gray_holddown=$HOLD"
gray_lab_up "$MBIT" 40 || { t_fail "the gray lab: $GRAY_ERR"; t_done; }   # 40 s: the flows end before the flap scenario does
t_pass "lab up leafspine 3x3 at ${MBIT} Mbit/s, tierflowd answers, $n flows"
echo "# fabric without S1 -> L3 carries $(fail_mbit "$CAP") Mbit/s of these flows (offered $(fail_mbit $((RATE * n))))"
sleep 6
t_eq "no link named before any loss" "" "$(gray_suspects "$URL")"

# ---- 1. 1% loss on S1 -> L3 ---------------------------------------------------
gray_rule_add S1 "$GIF" "$LOSS"
t0=$(date +%s.%N)
named=""
for i in $(seq 40); do
  named=$(gray_suspects "$URL"); [ -n "$named" ] && break; sleep 0.25
done
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
echo "# ${LOSS} loss on S1 -> L3: named after $dt s: '$named'"
t_eq "S1 -> L3 is named" "S1 -> L3" "$named"
if [ -n "${GRAY_DEBUG:-}" ]; then
  curl -s "$URL/api/v1/topology" | jq -c '.links[].dirs[] | select(.from|test("^[LS]")) | select(.to|test("^[LS]")) | [.from,.to,.util,.up,.fat_flows,.health.evidence]' | sed 's/^/# /'
  "$LAB" exec L1 -- timeout 3 "$PROBE" -i "${FAIL_IFTO["L1 S1"]}" --node L1 --interval 1 --format json --link-gbps 0.05 2>/dev/null | head -1 | jq -c '.links, [.flows[] | {src,dst,bps,retx_pkts,fat}]' | sed 's/^/# /'
  curl -s "$URL/api/v1/events" | jq -r '.events[] | "# \(.kind): \(.message)"' | tail -20
  ip netns exec "${FAIL_NS[S1]}" iptables -L FORWARD -v -n 2>&1 | sed 's/^/# /'
  "$LAB" exec L1 -- nstat -az TcpRetransSegs 2>&1 | sed 's/^/# /'; "$LAB" exec H1 -- nstat -az TcpRetransSegs 2>&1 | sed 's/^/# /'
fi
sleep 2
t_eq "... and no other direction" "S1 -> L3" "$(gray_suspects "$URL")"
t_check "... drained (thresholds.drain)" gray_event "$URL" link_drained "S1 -> L3"

# ---- 2. the flows leave it ------------------------------------------------------
sleep 3
t1=$(date +%s)
on=$(curl -s "$URL/api/v1/flows?fat=true&limit=100" | jq '[.flows[] | select(.stale | not) | .path // [] | [.[:-1], .[1:]] | transpose[] | select(.[0] == "S1" and .[1] == "L3")] | length')
t_eq "no fresh fat flow on S1 -> L3 in tierflow's view" 0 "$on"
sleep 5   # [t1, t1 + 4): drained; the receivers' JSON is read once the flows ended (below)

# ---- 3. clean again ---------------------------------------------------------------
gray_rules_clear
for i in $(seq $((4 * (HOLD + 6)))); do gray_event "$URL" link_undrained "S1 -> L3" && break; sleep 0.25; done
t_check "the rule removed: S1 -> L3 clean and undrained after the hold-down" gray_event "$URL" link_undrained "S1 -> L3"

# ---- 4. the operator's drain ---------------------------------------------------------
t_eq "POST drain L1 -> S2: 200" 200 "$(curl -s -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" "$URL/api/v1/links/L1/S2/drain")"
sleep 3
on=$(curl -s "$URL/api/v1/flows?fat=true&limit=100" | jq '[.flows[] | select(.stale | not) | .path // [] | [.[:-1], .[1:]] | transpose[] | select(.[0] == "L1" and .[1] == "S2")] | length')
t_eq "no fresh fat flow on the drained L1 -> S2" 0 "$on"
t_eq "POST undrain L1 -> S2: 200" 200 "$(curl -s -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" "$URL/api/v1/links/L1/S2/undrain")"

# ---- 5. a flapping uplink ---------------------------------------------------------------
FIF=${FAIL_IFTO["L2 S2"]}
for k in 1 2 3 4 5; do
  ip -n "${FAIL_NS[L2]}" link set "$FIF" down; sleep 1
  ip -n "${FAIL_NS[L2]}" link set "$FIF" up; sleep 1
done
t_check "the flapping L2 - S2 is drained" gray_event "$URL" link_drained "L2 -> S2"
for i in $(seq $((4 * (HOLD + 8)))); do gray_event "$URL" link_undrained "L2 -> S2" && break; sleep 0.25; done
t_check "... clean and undrained after the hold-down" gray_event "$URL" link_undrained "L2 -> S2"
curl -s "$URL/api/v1/events" | jq -r '.events[] | select(.kind | startswith("link_")) | "# \(.ts | floor) \(.kind): \(.message)"'
for ((i = 0; i < n; i++)); do wait "${LAB_PIDS[cli-$i]}" 2>/dev/null; done
for ((i = 0; i < n; i++)); do for k in $(seq 50); do [ -s "$LAB_TMP/srv-$i.json" ] && break; sleep 0.1; done; done
agg=$(iperf_window "$t1" $((t1 + 4)) "$LAB_TMP"/srv-*.json)
echo "# aggregate with S1 -> L3 drained, [t1, t1+4): $(fail_mbit "$agg") of $(fail_mbit "$CAP") Mbit/s; bins $(iperf_bins $((t1 - 8)) $((t1 + 4)) "$LAB_TMP"/srv-*.json | awk '{printf "%.1f ", $2/1e6}')"
t_ge "aggregate >= 0.9 of the fabric without S1 -> L3" "$agg" "$(awk -v c="$CAP" 'BEGIN{printf "%.0f", 0.9*c}')"
tf_stop
t_done
