# Two network namespaces joined by one veth, for the live suites; source it
# after tests/lib/tap.sh.
#   nspair_up PREFIX SUBNET VETH
#                             creates ${PREFIX}a and ${PREFIX}b (names in $A, $B),
#                             veth ${VETH}0 in A (SUBNET.1/24) and ${VETH}1 in
#                             B (SUBNET.2/24), a scratch dir $T, and a trap that
#                             stops the PIDs in pids[] and removes exactly those
#                             namespaces and $T on exit.
#   wait_for SECONDS CMD...   polls CMD every 0.1 s (readiness, not a timing assertion)
pids=()
nspair_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
  rm -rf "$T"
}
nspair_up() {
  local p=$1 net=$2 v=$3
  A="${p}a" B="${p}b" T=$(mktemp -d "/tmp/$p.XXXXXX")
  trap nspair_cleanup EXIT
  trap 'exit 1' INT TERM
  ip netns add "$A" && ip netns add "$B" || { t_fail "create namespaces"; t_done; }
  ip link add "${v}0" netns "$A" type veth peer name "${v}1" netns "$B"
  ip -n "$A" addr add "$net.1/24" dev "${v}0" && ip -n "$B" addr add "$net.2/24" dev "${v}1"
  for n in "$A" "$B"; do ip -n "$n" link set lo up; done
  ip -n "$A" link set "${v}0" up && ip -n "$B" link set "${v}1" up
}
wait_for() { local n=$(($1 * 10)); shift; while ! "$@" 2>/dev/null; do n=$((n - 1)); [ $n -le 0 ] && return 1; sleep 0.1; done; }
