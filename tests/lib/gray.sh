# Gray-failure helpers for the lab suites (docs/health.md); source after
# tests/lab/lib.sh (and failures.sh's fail_init for FAIL_NS).
#   gray_suite_needs SUITE WHAT root, the tools and the programs (sets PROBE CTL SIM)
#   gray_suspects URL           the directions named by link_suspect events, "A -> B,C -> D" (sorted)
#   gray_event URL KIND TEXT    an event of KIND whose message starts with TEXT exists
#   gray_false_positives URL    link_suspect events on links routing or a probe never
#                               reported down (a link taken down is routing's business):
#                               every e2e suite without a gray failure asserts 0 at teardown
#   gray_count_false_positives URL   adds them to GRAY_FP (tf_stop calls it)
#   gray_no_false_positives [WHAT]     the TAP check: GRAY_FP is 0
#   gray_single_downlink URL    "SPINE LEAF": a spine downlink exactly one fat flow crosses
#   gray_rule_add NODE IF P     iptables: drop P of the packets forwarded out of IF in NODE
#                               (remembered; gray_rules_clear removes exactly those)
#   gray_lab_up MBIT SECS       (after lab_init; needs CTL PROBE SIM) the gray lab of
#                               tests/e2e/test_gray.sh and bench 65: leafspine 3x3, 2 hosts a
#                               leaf, six iperf3 flows at 30% of a link for SECS s (FLOWS below),
#                               hosts at MSS-sized frames, tierflowd (GRAY_CTL_ARGS) and probes;
#                               sets URL TOKEN AUTH n RATE GIF (S1's interface to L3) CAP (what
#                               the fabric without S1 -> L3 carries of them); GRAY_ERR on failure.
#                               GRAY_HOP=1: the per-hop scenario instead (GRAY_HOP_FLOWS below:
#                               colliding flows at the full link rate; probes on every port of
#                               every switch with --inbound, docs/health.md "Per hop")
GRAY_RULES=()
# The e2e suites' preconditions (after tests/lib/tap.sh): root, the tools,
# and tierflow-probe, tierflowd and tierflow-sim (sets PROBE CTL SIM); a
# missing tool fails, unbuilt programs skip WHAT, saying so.
gray_suite_needs() { # SUITE WHAT
  local t
  t_need_root "$1"
  for t in iperf3 jq curl iptables; do command -v $t >/dev/null || { t_fail "tool $t present" "scripts/deps.sh test installs it"; t_done; }; done
  PROBE=$(tf_bin tierflow-probe); CTL=$(tf_bin tierflowd); SIM=$(tf_bin tierflow-sim)
  if [ -z "$PROBE" ] || [ -z "$CTL" ] || [ -z "$SIM" ]; then
    t_skip "$2" "tierflowd, tierflow-probe or tierflow-sim not built (make all)"; t_done
  fi
}
gray_events() { curl -s "$1/api/v1/events"; }
gray_suspects() {
  gray_events "$1" | jq -r '[.events[] | select(.kind == "link_suspect") | .message | split(":")[0]] | unique | join(",")'
}
gray_event() {
  gray_events "$1" | jq -e --arg k "$2" --arg t "$3" 'any(.events[]; .kind == $k and (.message | startswith($t)))' >/dev/null
}
gray_false_positives() {
  gray_events "$1" | jq '
    [.events[] | select(.kind == "routing_down" or .kind == "link_down") | .message | split(":")[0] | split(" (")[0]
     | split(" -> ") | ., reverse | join(" -> ")] as $down
    | [.events[] | select(.kind == "link_suspect") | .message | split(":")[0] | select(. as $d | $down | index($d) | not)]
    | length'
}
GRAY_FP=0
gray_count_false_positives() {
  local n; n=$(gray_false_positives "$1" 2>/dev/null)
  [ -n "$n" ] && [ "$n" != null ] && GRAY_FP=$((GRAY_FP + n))
  gray_events "$1" | jq -r '.events[]? | select(.kind == "link_suspect") | "# gray suspect: \(.message)"' >&2
  return 0
}
gray_no_false_positives() {
  t_eq "${1:-tierflowd}: no link named a gray-failure suspect (none loses packets here; links taken down excluded)" 0 "$GRAY_FP"
}
gray_rule_add() {
  local ns=${FAIL_NS[$1]:-$("$LAB" netns "$1")}
  ip netns exec "$ns" iptables -A FORWARD -o "$2" -m statistic --mode random --probability "$3" -j DROP &&
    GRAY_RULES+=("$ns $2 $3")
}
gray_rules_clear() {
  local r ns ifn p
  for r in "${GRAY_RULES[@]}"; do
    read -r ns ifn p <<< "$r"
    ip netns exec "$ns" iptables -D FORWARD -o "$ifn" -m statistic --mode random --probability "$p" -j DROP 2>/dev/null
  done
  GRAY_RULES=()
}

# The flows: SRC DST SPINE (the leaf uplink ECMP must pick). Two of them, from
# L1 and L2, reach L3 through S1; two between L1 and L2 through S1 clear
# L1 -> S1 and L2 -> S1; two from L3 go through S2 and S3.
GRAY_FLOWS=("H1 H5 S1" "H3 H6 S1" "H2 H4 S1" "H4 H2 S1" "H5 H1 S2" "H6 H3 S3")
# The per-hop scenario (issue 18's): two fat flows at the full link rate
# that ECMP puts on one uplink (L1's two to L3's hosts, both on S1, so they
# share L1 -> S1 and S1 -> L3), which tierflow then separates: one flow per
# link, the case path intersection cannot place. No host both sends and
# receives (a receiver's ACKs would share its sender's link: with four
# flows, H1 and H2 both, the aggregate stayed near 0.86 of the fabric's).
GRAY_HOP_FLOWS=("H1 H5 S1" "H2 H6 S1")
# Every interface of switch NODE (the probes of the per-hop scenario).
gray_switch_ifs() {
  jq -r --arg n "$1" '.links[] | if .a == $n then .a_if elif .b == $n then .b_if else empty end' "$LAB_TOPO" | tr '\n' ' '
}
gray_lab_up() {
  local mbit=$1 dur=$2 f s d sp l p h i share=0.3 node
  local -a flows=("${GRAY_FLOWS[@]}")
  [ "${GRAY_HOP:-0}" = 1 ] && { share=1; flows=("${GRAY_HOP_FLOWS[@]}"); }
  GRAY_ERR=""
  lab_up leafspine:leaves=3,spines=3,hosts=2,gbps=100 --mbit "$mbit" --seed 11 && [ -s "$LAB_TOPO" ] ||
    { GRAY_ERR="lab up failed"; return 1; }
  fail_init
  URL="http://$(jq -r '.lab.mgmt.controller' "$LAB_TOPO"):$(port)"
  TOKEN=$LAB_TMP/token; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$TOKEN"; chmod 600 "$TOKEN"
  AUTH=(-H "Authorization: Bearer $(cat "$TOKEN")")
  RATE=$(awk -v m="$mbit" -v s="$share" 'BEGIN{printf "%.0f", s * m * 1e6}')
  FAIL_FSRC=() FAIL_FDST=() FAIL_FSPORT=() FAIL_FDPORT=()
  n=0
  for f in "${flows[@]}"; do
    read -r s d sp <<< "$f"
    l=${FAIL_LEAF_OF[$s]}
    p=$(lab_pick_sport "$l" "$s" "${FAIL_ADDR[$d]}" $((5400 + n)) "${FAIL_IFTO["$l $sp"]}" $((42000 + 300 * n)))
    [ -n "$p" ] || { GRAY_ERR="no source port sends $s -> $d by $sp"; return 1; }
    FAIL_FSRC+=("$s"); FAIL_FDST+=("$d"); FAIL_FSPORT+=("$p"); FAIL_FDPORT+=($((5400 + n))); n=$((n + 1))
  done
  FAIL_C=$RATE
  FAIL_FLOWS_FILE=$LAB_TMP/gray-flows.json
  for ((i = 0; i < n; i++)); do echo "${FAIL_FSRC[$i]} ${FAIL_FDST[$i]}"; done |
    jq -R -s --argjson g "$(awk -v c="$RATE" 'BEGIN{printf "%.9g", c/1e9}')" \
      '{flows: [split("\n")[] | select(length > 0) | split(" ") | {src: .[0], dst: .[1], gbps: $g}]}' > "$FAIL_FLOWS_FILE"
  # A switch port carries MSS-sized frames; the lab's veths keep offloads on,
  # and with GSO super-packets (about 28 kB here) iptables drops 1% of those,
  # not of segments: 12 drops in 10 s for two 15-Mbit/s flows, one resend a
  # second or less per flow, which the probe sees as a handful of
  # retransmitted (super-)packets, below thresholds.gray_min_loss. The hosts
  # here send MSS-sized frames, so that P is the share of packets lost.
  for h in "${!FAIL_LEAF_OF[@]}"; do
    ip -n "${FAIL_NS[$h]}" link set "${FAIL_IFTO["$h ${FAIL_LEAF_OF[$h]}"]}" gso_max_segs 1 ||
      { GRAY_ERR="gso_max_segs 1 on $h"; return 1; }
  done
  GIF=${FAIL_IFTO["S1 L3"]}
  FAIL_ENDS[gray]="S1 $GIF"
  CAP=$(fail_capacity gray | cut -d' ' -f1)
  if [ "${GRAY_HOP:-0}" = 1 ]; then # arrivals on every port: the bracket of every hop
    TF_PROBE_IFS=()
    for node in "${FAIL_SWITCHES[@]}"; do TF_PROBE_IFS[$node]=$(gray_switch_ifs "$node"); done
  fi
  TF_PROBE_ARGS=$([ "${GRAY_HOP:-0}" = 1 ] && echo --inbound) TF_CTL_ARGS=${GRAY_CTL_ARGS:-} \
    tf_start "$URL" "$TOKEN" "$(awk -v m="$mbit" 'BEGIN{print m/1000}')"
  curl -sf --retry 15 --retry-connrefused --retry-delay 1 -o /dev/null "$URL/api/v1/status" ||
    { GRAY_ERR="tierflowd does not answer"; return 1; }
  for ((i = 0; i < n; i++)); do iperf_server "${FAIL_FDST[$i]}" "${FAIL_FDPORT[$i]}" "$LAB_TMP/srv-$i.json"; done
  for ((i = 0; i < n; i++)); do iperf_wait_listen "${FAIL_FDST[$i]}" "${FAIL_FDPORT[$i]}"; done
  for ((i = 0; i < n; i++)); do
    lab_bg "cli-$i" "$LAB" exec "${FAIL_FSRC[$i]}" -- iperf3 -c "${FAIL_ADDR[${FAIL_FDST[$i]}]}" -p "${FAIL_FDPORT[$i]}" \
      --cport "${FAIL_FSPORT[$i]}" $(lab_cc) -t "$dur" -b "$RATE" -i 1 -J --logfile "$LAB_TMP/cli-$i.json"
  done
}
# Waits (up to SECS) for a link_suspect event newer than event id SINCE;
# prints "SECONDS NAMED" (NAMED: the directions named since, "" none).
gray_time_to_name() {
  local url=$1 since=$2 secs=$3 t0 names="" ev t1
  t0=$(date +%s.%N)
  while awk -v a="$t0" -v b="$(date +%s.%N)" -v s="$secs" 'BEGIN{exit !(b - a < s)}'; do
    ev=$(curl -s "$url/api/v1/events?since=$since")
    names=$(jq -r '[.events[] | select(.kind == "link_suspect") | .message | split(":")[0]] | unique | join(",")' <<< "$ev")
    [ -n "$names" ] && break
    sleep 0.25
  done
  # The time is the first link_suspect event's own (the poll above comes
  # up to 0.3 s after it), or the time given up at.
  [ -n "${ev:-}" ] || ev='{}'
  t1=$(jq -r '[.events[]? | select(.kind == "link_suspect") | .ts] | min // empty' <<< "$ev")
  echo "$(awk -v a="$t0" -v b="${t1:-$(date +%s.%N)}" 'BEGIN{printf "%.1f", b - a}') $names"
}
# "SPINE LEAF" of a spine downlink that exactly one fresh fat flow crosses
# (the first by name), "" when none does.
gray_single_downlink() {
  curl -s "$1/api/v1/flows?fat=true&limit=100" | jq -r '[.flows[] | select(.stale | not) | .path // [] | [.[:-1], .[1:]]
    | transpose[] | select((.[0] | test("^S")) and (.[1] | test("^L"))) | join(" ")] | group_by(.)
    | map(select(length == 1) | .[0]) | sort | .[0] // empty'
}
gray_last_id() { curl -s "$1/api/v1/events?limit=1" | jq -r '.events[-1].id // 0'; }
