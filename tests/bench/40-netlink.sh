#!/usr/bin/env bash
# Netlink backend throughput: install then remove 10,000 pinned-flow rules
# in a throwaway namespace through the backend (batched rtnetlink), against
# `ip -batch` doing the same rules in a namespace set up the same way, in
# the same run. Target: the backend at least as fast as ip -batch.
set -u
N=${NLBENCH_RULES:-10000}
NLBENCH="$TF_TOOLS/nlbench"
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root for network namespaces"; exit 0; }
[ -x "$NLBENCH" ] || { echo "missing $NLBENCH (make tools)"; exit 1; }
NS="tfnl$$-bench"
TMP=$(mktemp -d)
cleanup() { ip netns del "$NS" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

setup() {
  ip netns del "$NS" 2>/dev/null
  ip netns add "$NS" && ip -n "$NS" link set lo up &&
  ip -n "$NS" link add up1 type veth peer name up1p &&
  ip -n "$NS" addr add 10.255.0.1/31 dev up1 &&
  ip -n "$NS" link set up1 up && ip -n "$NS" link set up1p up &&
  ip -n "$NS" route add 10.0.0.0/8 via 10.255.0.0 dev up1   # routing must offer the pins' next hop
}
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.3f s, %.0f rules/s", b-a, n/(b-a) }'; }

"$NLBENCH" --write-batch "$TMP/rules" "$N" || exit 1
setup || exit 1
t0=$(now); ip -n "$NS" -batch "$TMP/rules.add" || exit 1; t1=$(now)
got=$(ip -n "$NS" rule show | grep -c 'proto 77')
ip -n "$NS" -batch "$TMP/rules.del" || exit 1; t2=$(now)
ip_add=$(awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN{print n/(b-a)}')
ip_del=$(awk -v n="$N" -v a="$t1" -v b="$t2" 'BEGIN{print n/(b-a)}')
echo "ip -batch: install $got rules: $(rate "$N" "$t0" "$t1"); remove: $(rate "$N" "$t1" "$t2")"

setup || exit 1
out=$(ip netns exec "$NS" "$NLBENCH" "$N") || exit 1
echo "backend:   $(echo "$out" | tr '\n' ';' | sed 's/;$//; s/;/; /')"
be_add=$(echo "$out" | awk '/^install/ { for (i = 1; i <= NF; i++) if ($i == "rules/s,") print $(i-1) }')
be_del=$(echo "$out" | awk '/^remove/ { for (i = 1; i <= NF; i++) if ($i == "rules/s,") print $(i-1) }')
left=$(ip -n "$NS" rule show | grep -c 'proto 77')
echo "rules left after removal: $left"
awk -v a="$be_add" -v b="$ip_add" -v c="$be_del" -v d="$ip_del" 'BEGIN {
  printf "ratio backend/ip-batch: install %.2fx, remove %.2fx\n", a/b, c/d
  print ((a >= b && c >= d) ? "target met" : "target missed") " (backend at least as fast as ip -batch)" }'
