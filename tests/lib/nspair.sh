# Two network namespaces joined by one veth, for the live suites; source it
# after tests/lib/tap.sh.
#   nspair_up PREFIX SUBNET VETH
#                             creates ${PREFIX}a and ${PREFIX}b (names in $A, $B),
#                             veth ${VETH}0 in A (SUBNET.1/24) and ${VETH}1 in
#                             B (SUBNET.2/24), a scratch dir $T, and a trap that
#                             stops the PIDs in pids[] and removes exactly those
#                             namespaces and $T on exit.
#   wait_for SECONDS CMD...   polls CMD every 0.1 s (readiness, not a timing assertion)
# and, for the probe's reports (one JSON object a line):
#   past_whole_second         sleeps until 20 ms past the next whole second of
#                             the wall clock (the probe's closes are on them)
#   $MID_REPORTS              jq (slurped): the reports closed at mid-interval,
#                             half a second past a whole one, the last (the
#                             SIGTERM flush) excepted
#   only_flush_partial FILE   the last report (the flush) says partial, no other does
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
past_whole_second() {
  sleep "$(date +%s.%N | awk '{f = $1 - int($1); printf "%.3f", f < 0.02 ? 0.02 - f : 1.02 - f}')"
}
MID_REPORTS='[.[:-1][] | select((.ts - (.ts | floor)) > 0.3 and (.ts - (.ts | floor)) < 0.7)]'
only_flush_partial() { jq -se '(.[-1].partial == true) and all(.[:-1][]; has("partial") | not)' "$1" >/dev/null; }
wait_for() { local n=$(($1 * 10)); shift; while ! "$@" 2>/dev/null; do n=$((n - 1)); [ $n -le 0 ] && return 1; sleep 0.1; done; }
