# Gray-failure helpers for the lab suites (docs/health.md); source after
# tests/lab/lib.sh (and failures.sh's fail_init for FAIL_NS).
#   gray_suspects URL           the directions named by link_suspect events, "A -> B,C -> D" (sorted)
#   gray_event URL KIND TEXT    an event of KIND whose message starts with TEXT exists
#   gray_false_positives URL    link_suspect events on links routing or a probe never
#                               reported down (a link taken down is routing's business):
#                               every e2e suite without a gray failure asserts 0 at teardown
#   gray_count_false_positives URL   adds them to GRAY_FP (tf_stop calls it)
#   gray_no_false_positives [WHAT]     the TAP check: GRAY_FP is 0
#   gray_rule_add NODE IF P     iptables: drop P of the packets forwarded out of IF in NODE
#                               (remembered; gray_rules_clear removes exactly those)
GRAY_RULES=()
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
