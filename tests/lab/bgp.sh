# The lab's switches as a BGP-steered fabric for tierflowd's bgp backend
# (docs/routing.md "The bgp backend"); source it after lib.sh, with a lab up
# with --routing bgp.
#
#   lab_bgp_peer AS          every switch's bgpd peers with the controller
#                            (AS, the management network's controller address):
#                            passive (the speaker connects), single hop over
#                            mgmt0; a switch below the top tier (it has
#                            uplinks to steer) accepts host routes only, the
#                            top tier nothing
#   lab_bgp_topology OUT     the resolved topology with each switch's "mgmt"
#                            address and "asn", what tierflowd's bgp backend reads
#   lab_bgp_routes NODE      NODE's kernel routes learned from the controller
#                            (proto bgp, via a spine, /32), one per line
#   lab_bgp_speaker_stop DIR the ExaBGP speaker whose PID file is in DIR (it
#                            outlives tierflowd by design), by its PID, if it
#                            is still that speaker

lab_bgp_controller() { jq -r '.lab.mgmt.controller' "$LAB_TOPO"; }

lab_bgp_peer() {
  local as=$1 c n asn tier top
  c=$(lab_bgp_controller); top=$(jq -r '.tiers[-1]' "$LAB_TOPO")
  for n in $("$LAB" nodes leaf) $("$LAB" nodes spine) $("$LAB" nodes superspine); do
    asn=$(jq -r --arg n "$n" '.lab.bgp.asn[$n]' "$LAB_TOPO"); tier=$(lab_tier_of "$n")
    local in=()
    if [ "$tier" != "$top" ]; then
      in=("ip prefix-list TF-CTL-IN seq 5 permit 0.0.0.0/0 ge 32")
    else
      in=("ip prefix-list TF-CTL-IN seq 5 deny 0.0.0.0/0 le 32")
    fi
    "$LAB" vtysh "$n" -- "conf t" "${in[@]}" "router bgp $asn" "neighbor $c remote-as $as" "neighbor $c passive" \
      "neighbor $c disable-connected-check" "neighbor $c timers 3 9" "neighbor $c description tierflow controller" \
      "address-family ipv4 unicast" "neighbor $c prefix-list TF-CTL-IN in" >/dev/null || return 1
  done
}

lab_bgp_topology() {
  jq '.lab as $l | .nodes |= map(if $l.mgmt.nodes[.name] then
        .mgmt = $l.mgmt.nodes[.name].addr | .asn = $l.bgp.asn[.name] else . end)' "$LAB_TOPO" > "$1"
}

lab_bgp_routes() {
  "$LAB" exec "$1" -- ip -4 -o route show proto bgp | awk '$1 ~ /\/32$/ || $1 !~ /\// { print }' | grep -v ' nexthop ' || true
}

lab_bgp_speaker_stop() {
  local p
  p=$(cat "$1/exabgp.pid" 2>/dev/null)
  [ -n "$p" ] && grep -q exabgp "/proc/$p/cmdline" 2>/dev/null && kill "$p" 2>/dev/null
  return 0
}
