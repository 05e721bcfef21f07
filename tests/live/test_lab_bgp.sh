#!/usr/bin/env bash
# timeout: 150
# The lab's BGP fabric (tests/lab/lab, docs/lab.md "Routing: BGP by default"):
# a 3-leaf x 3-spine leaf/spine with one FRR (zebra + bgpd) per switch.
#   1. every leaf holds every other leaf's prefix over all 3 uplinks in its
#      kernel FIB, learned by BGP; the switches carry no static fabric route;
#      every session is up; traffic crosses; ECMP is predictable per 5-tuple
#   2. a link taken down at a leaf, then at a spine: the far leaves' ECMP
#      for the cut-off prefix shrinks well within a second (times printed);
#      link up restores it
#   3. coexistence: tierflow's kind of state (an ip rule in its priority range
#      with proto 77, a proto 77 route in table 7700) and a foreign main-table
#      route survive `clear bgp *` and a zebra + bgpd restart, and FRR's
#      routes come back
#   4. `lab down` stops the routers (by PID) and `--routing static` builds
#      the old fabric: static ECMP routes, no router
#   5. lab_initcwnd (bench 50's senders) adds initcwnd and initrwnd to every
#      host's default route and changes nothing else in it; TCP still flows
#   6. lab_ack_prio (bench 50's queues): every link end gets a class for
#      small packets and one for the data; while two bulk flows overload a
#      port, pings through it wait behind the data in one queue and not
#      with the two classes
set -u
TF_ROOT=${TF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TF_ROOT/tests/lib/tap.sh"
. "$TF_ROOT/tests/lab/lib.sh"
t_need_root lab_bgp
for t in jq vtysh iperf3 ss ping; do command -v $t >/dev/null || { t_skip lab_bgp "'$t' missing (scripts/deps.sh test)"; t_done; }; done
[ -x /usr/lib/frr/bgpd ] || { t_skip lab_bgp "FRR missing (scripts/deps.sh test installs frr)"; t_done; }
[ -n "$(tf_bin tierflow-topo)" ] || { t_skip lab_bgp "tierflow-topo is not built (make all)"; t_done; }

lab_init labbgp
trap 'lab_cleanup' EXIT
trap 'exit 130' INT TERM

# ---- 1. the converged fabric ------------------------------------------------
t_check "lab up leafspine 3x3 with --routing bgp" lab_up leafspine:leaves=3,spines=3,hosts=1,gbps=100 --routing bgp
[ -s "$LAB_TOPO" ] || t_done
STATE=$("$LAB" state)
t_eq "resolved topology says routing bgp" bgp "$(lab_routing)"
conv=$(jq -r '.lab.converge_ms' "$LAB_TOPO")
echo "# lab up: build $(jq -r .lab.build_ms "$LAB_TOPO") ms, BGP convergence $conv ms (up_ms $(cat "$STATE/up_ms"))"
t_check "convergence time recorded ($conv ms)" test "$conv" -gt 0 -a "$conv" = "$(cat "$STATE/converge_ms")"
mapfile -t LEAVES < <("$LAB" nodes leaf)
mapfile -t SPINES < <("$LAB" nodes spine)
pfx() { jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .prefix' "$LAB_TOPO"; }
asn() { jq -r --arg n "$1" '.lab.bgp.asn[$n]' "$LAB_TOPO"; }
t_eq "spines share one ASN" 1 "$(for s in "${SPINES[@]}"; do asn "$s"; done | sort -u | wc -l)"
t_eq "each leaf has its own ASN" "${#LEAVES[@]}" "$(for l in "${LEAVES[@]}"; do asn "$l"; done | sort -u | wc -l)"

full=1 why=""
for l in "${LEAVES[@]}"; do
  nup=$(lab_uplinks "$l" | wc -l)
  for r in "${LEAVES[@]}"; do
    [ "$r" = "$l" ] && continue
    n=$(lab_nexthops "$l" "$(pfx "$r")")
    [ "$n" = "$nup" ] || { full=0; why+="$l has $(pfx "$r") over $n of $nup; "; }
  done
done
t_eq "every leaf has every remote prefix over every uplink (kernel FIB)" 1 "$full"
[ -z "$why" ] || echo "# $why"
t_eq "L1's routes to other leaves are BGP's" 2 "$("$LAB" exec L1 -- ip -4 route show proto bgp | grep -c '^10\.')"
t_eq "no default route on L1" "" "$("$LAB" exec L1 -- ip -4 route show default)"
t_eq "no static fabric route on S1" "" "$("$LAB" exec S1 -- ip -4 route show proto static)"
t_check "L1 blackholes its own prefix (BGP's network import check)" \
  bash -c "'$LAB' exec L1 -- ip -4 route show exact '$(pfx L1)' | grep -q '^blackhole'"
est=1; for n in "${LEAVES[@]}" "${SPINES[@]}"; do lab_bgp_established "$n" || est=0; done
t_eq "every BGP session Established" 1 "$est"
H1=$(lab_hosts_of L1 | head -1); H2=$(lab_hosts_of L2 | head -1)
reach() { # SRC DST PORT: 1 MB of TCP from SRC to DST goes through
  iperf_server "$2" "$3" "$LAB_TMP/reach-$3.json"
  iperf_wait_listen "$2" "$3" || return 1
  "$LAB" exec "$1" -- timeout 10 iperf3 -c "$(lab_addr "$2")" -p "$3" -n 1M >/dev/null 2>&1
  local rc=$?; lab_stop "srv-$2-$3"; return $rc
}
t_check "$H1 reaches $H2 across the fabric (1 MB of TCP)" reach "$H1" "$H2" 5301
mapfile -t UP < <(lab_uplinks L1)
sp=$(lab_pick_sport L1 "$H1" "$(lab_addr "$H2")" 5201 "${UP[2]}" 40000)
t_check "lab_pick_sport finds a port ECMP sends by ${UP[2]} ($sp)" test -n "$sp"
t_eq "ip route get predicts it again" "${UP[2]}" "$(lab_route_dev L1 "$H1" "$(lab_addr "$H2")" "${sp:-0}" 5201)"

# ---- 2. a failure is withdrawn ------------------------------------------------
# wait_far PREFIX N SECS T0 NODE...: polls the NODEs at once (one poller each)
# until each has N next hops for PREFIX; FAR[NODE] = ms since T0, or "".
declare -A FAR=()
wait_far() {
  local p=$1 n=$2 secs=$3 t0=$4 node; shift 4
  local -A pid=()
  for node in "$@"; do lab_wait_nexthops "$node" "$p" "$n" "$secs" "$t0" > "$LAB_TMP/far-$node" & pid[$node]=$!; done
  for node in "$@"; do wait "${pid[$node]}"; FAR[$node]=$(cat "$LAB_TMP/far-$node"); done
}
# Leaf side: L1 loses its link to S1; L2 and L3 must drop that path to L1's
# prefix (S1 withdraws it) -- the static lab would blackhole it instead.
P1=$(pfx L1)
NSL1=$("$LAB" netns L1); NSS2=$("$LAB" netns S2)   # ip -n: the clock starts right at the change
t0=$(date +%s%N)
ip -n "$NSL1" link set S1 down
wait_far "$P1" 2 5 "$t0" L2 L3
for far in L2 L3; do
  ms=${FAR[$far]}
  echo "# L1-S1 down at L1: $far's ECMP for $P1 is 3 -> 2 after ${ms:-(not within 5 s)} ms (kernel FIB polled every 10 ms)"
  t_check "L1-S1 down: $far drops that path within 1 s" test -n "$ms" -a "${ms:-9999}" -lt 1000
done
t_eq "L1 itself uses its two live uplinks" 2 "$(lab_nexthops L1 "$(pfx L2)")"
t0=$(date +%s%N)
ip -n "$NSL1" link set S1 up
wait_far "$P1" 3 10 "$t0" L2 L3
for far in L2 L3; do
  ms=${FAR[$far]}
  echo "# L1-S1 up: $far's ECMP for $P1 back to 3 after ${ms:-(not within 10 s)} ms"
  t_check "L1-S1 up: $far uses all 3 paths again" test -n "$ms"
done
ms=$(lab_wait_nexthops L1 "$(pfx L2)" 3 10 "$t0") || ms=""
t_check "L1-S1 up: L1 uses all 3 uplinks again (${ms:-never} ms)" test -n "$ms"

# Spine side: S2 loses its link to L2; L1 and L3 drop S2 for L2's prefix.
P2=$(pfx L2)
t0=$(date +%s%N)
ip -n "$NSS2" link set L2 down
wait_far "$P2" 2 5 "$t0" L1 L3
for far in L1 L3; do
  ms=${FAR[$far]}
  echo "# S2-L2 down at S2: $far's ECMP for $P2 is 3 -> 2 after ${ms:-(not within 5 s)} ms"
  t_check "S2-L2 down: $far drops that path within 1 s" test -n "$ms" -a "${ms:-9999}" -lt 1000
done
ip -n "$NSS2" link set L2 up
ok=1; for far in L1 L3; do lab_wait_nexthops "$far" "$P2" 3 10 >/dev/null || ok=0; done
t_eq "S2-L2 up: every path back" 1 "$ok"

# ---- 3. coexistence with tierflow's state and foreign routes ---------------
GW=$(jq -r '.links[] | select(.a == "L1" and .a_if == "S2") | .b_ip' "$LAB_TOPO")
"$LAB" exec L1 -- ip rule add pref 20001 from "$(lab_addr "$H1")" to "$(lab_addr "$H2")" ipproto tcp sport 40000 dport 5201 lookup 7700 proto 77
"$LAB" exec L1 -- ip route add "$P2" via "$GW" dev S2 table 7700 proto 77
"$LAB" exec L1 -- ip route add blackhole 192.0.2.1/32 proto static
planted() {
  "$LAB" exec L1 -- ip rule show pref 20001 | sed 's/^20001:\s*//'
  "$LAB" exec L1 -- ip route show table 7700
  "$LAB" exec L1 -- ip route show exact 192.0.2.1/32
}
planted > "$LAB_TMP/planted-before"
t_eq "planted: tierflow rule, tierflow route, foreign route" 3 "$(grep -c . "$LAB_TMP/planted-before")"
converged() { # every leaf has every remote prefix over 3 paths, and L1's sessions are up
  local l r
  for l in "${LEAVES[@]}"; do for r in "${LEAVES[@]}"; do
    [ "$l" = "$r" ] || [ "$(lab_nexthops "$l" "$(pfx "$r")")" = 3 ] || return 1
  done; done
  lab_bgp_established L1
}
wait_converged() { local i; for ((i = 0; i < $1 * 10; i++)); do converged && return 0; sleep 0.1; done; return 1; }

tc0=$(date +%s%N)
lab_vtysh L1 'clear bgp *' >/dev/null
# Sessions reset: wait until all of L1's are younger than the clear, then
# until the FIBs are whole again.
fresh() {
  local age=$(( ($(date +%s%N) - tc0) / 1000000 ))
  lab_vtysh L1 'show bgp ipv4 unicast summary json' 2>/dev/null \
    | jq -e --argjson a "$age" '(.peers | length) == 3 and all(.peers[]; .state == "Established" and .peerUptimeMsec <= $a)' >/dev/null
}
ok=0; for ((i = 0; i < 100; i++)); do fresh && { ok=1; break; }; sleep 0.1; done
t_eq "clear bgp *: L1's sessions reset and came back" 1 "$ok"
t_check "clear bgp *: every FIB whole again" wait_converged 10
planted > "$LAB_TMP/planted-clear"
t_check "clear bgp *: tierflow's rule and route and the foreign route untouched" diff -u "$LAB_TMP/planted-before" "$LAB_TMP/planted-clear"

mapfile -t OLD < <("$LAB" router pids L1)
t_eq "L1 runs zebra and bgpd (2 PIDs from its PID files)" 2 "${#OLD[@]}"
gone() { local p st; for p in "$@"; do { read -r st < "/proc/$p/stat"; } 2>/dev/null || continue; st=${st##*) }; [ "${st%% *}" = Z ] || return 1; done; }
kill "${OLD[@]}"
ok=0; for ((i = 0; i < 50; i++)); do gone "${OLD[@]}" && { ok=1; break; }; sleep 0.1; done
t_eq "zebra and bgpd of L1 stopped by PID" 1 "$ok"
t_eq "L1's BGP routes left with zebra" 0 "$("$LAB" exec L1 -- ip -4 route show proto bgp | grep -c '^10\.')"
ms=$(lab_wait_nexthops L2 "$P1" 0 10) || ms=""
t_check "L2 withdrew L1's prefix while L1's router is down" test -n "$ms"
t_check "lab router start L1" "$LAB" router start L1
t_check "restart: every FIB whole again" wait_converged 15
mapfile -t NEW < <("$LAB" router pids L1)
t_check "restart: new PIDs (${NEW[*]})" test "${#NEW[@]}" -eq 2 -a "${NEW[*]}" != "${OLD[*]}"
planted > "$LAB_TMP/planted-restart"
t_check "restart: tierflow's rule and route and the foreign route untouched" diff -u "$LAB_TMP/planted-before" "$LAB_TMP/planted-restart"
t_eq "restart: the tierflow route is still proto 77 in table 7700" 1 "$("$LAB" exec L1 -- ip route show table 7700 proto 77 | grep -c .)"

# ---- 4. down, and the static fabric -----------------------------------------
ALL=(); for n in "${LEAVES[@]}" "${SPINES[@]}"; do while read -r p; do ALL+=("$p"); done < <("$LAB" router pids "$n"); done
t_eq "every switch runs zebra and bgpd" $(( 2 * (${#LEAVES[@]} + ${#SPINES[@]}) )) "${#ALL[@]}"
"$LAB" down
t_check "lab down stopped every router" gone "${ALL[@]}"
t_check "lab down removed the routers' directories" test ! -e "$STATE/frr"

t_check "lab up --routing static" lab_up leafspine:leaves=3,spines=3,hosts=1,gbps=100 --routing static
t_eq "resolved topology says routing static" static "$(lab_routing)"
t_eq "L1: default over the 3 uplinks, proto static" 3 \
  "$("$LAB" exec L1 -- ip -4 -o route show exact 0.0.0.0/0 proto static | _lab_count_nexthops)"
t_eq "S1: a static route per leaf prefix" 3 "$("$LAB" exec S1 -- ip -4 route show proto static | grep -c '^10\.')"
t_check "static: no router directories" test ! -e "$STATE/frr"
t_check "static: lab vtysh refuses" bash -c "! '$LAB' vtysh L1 -- 'show version' 2>/dev/null"
t_check "static: $H1 reaches $H2 (1 MB of TCP)" reach "$H1" "$H2" 5302

# ---- 5. the hosts' first TCP window (lab_initcwnd, bench 50) ----------------
# The route's words, not its spacing (ip ends the line with a blank): the
# unquoted expansion splits them.
defroute() { echo $("$LAB" exec "$1" -- ip -4 route show default); }
before=$(defroute "$H1")
t_check "lab_initcwnd 100" lab_initcwnd 100
t_eq "$H1's default route: initcwnd and initrwnd 100, gateway, device and source as before" \
  "$before initcwnd 100 initrwnd 100" "$(defroute "$H1")"
t_eq "every host's default route starts TCP with 100 segments" "$(lab_hosts | wc -l)" \
  "$(for h in $(lab_hosts); do defroute "$h"; done | grep -c ' initcwnd 100 initrwnd 100$')"
t_check "initcwnd 100: $H1 reaches $H2 (1 MB of TCP)" reach "$H1" "$H2" 5303

# ---- 6. small packets ahead of the data (lab_ack_prio, bench 50) -------------
# Bulk flows from H2 and H3, each at 80% of the link (UDP: a queue that
# stays full, where two TCP flows' losses drain it now and then), collide
# on L1's port to H1; 2 s into them L1 pings H1 through that port, as the
# ACKs of a flow whose return path crosses a collision go: the ping's mean
# round trip (ms) and the mean backlog of the port's data class over the
# same 2 s, in ms of the link. The flows are stopped once the ping is done;
# they run for up to 10 s: with 6, the first one, started while the second
# was set up, ended before the ping did, its last pings saw the queue
# drain (each ping's time, ms: 115 ... 108 73.4 5.82 0.079), and a fresh
# clone's make test read a mean of 55.7 ms of a 115-ms queue.
H3=$(lab_hosts_of L3 | head -1); PORT=$(lab_hostif L1 "$H1"); MBIT_LAB=$(jq -r '.lab.mbit // 100' "$LAB_TOPO")
isnum() { [[ "$1" =~ ^[0-9.]+$ ]]; }
behind() { # SERVER_PORT: prints "PING_MS BACKLOG_MS" (ports SERVER_PORT and +1)
  local q ping p=$1 h i sp
  for h in "$H2" "$H3"; do
    # H2's flow by S1, H3's by S2: they meet at L1 (on one spine they
    # would meet at its port to L1, which L1's ping does not cross).
    sp=$(lab_pick_sport "$(lab_leaf_of "$h")" "$h" "$(lab_addr "$H1")" "$p" "S$((p - $1 + 1))" 41000 udp)
    [ -n "$sp" ] || { echo "- -"; return; }
    iperf_server "$H1" "$p" "$LAB_TMP/bulk-$p.json"
    iperf_wait_listen "$H1" "$p" || { echo "- -"; return; }
    lab_bg "bulk-$p" "$LAB" exec "$h" -- timeout 15 iperf3 -c "$(lab_addr "$H1")" -p "$p" --cport "$sp" -t 10 -u -b "$((MBIT_LAB * 8 / 10))M" -l 1400 -J --logfile "$LAB_TMP/bulk-cli-$p.json"
    p=$((p + 1))
  done
  sleep 2
  "$LAB" exec L1 -- ping -c 10 -i 0.2 "$(lab_addr "$H1")" > "$LAB_TMP/ping-$1.txt" 2>&1 &
  # The backlog's mean over the ping's 2 s.
  q=$(for i in 1 2 3 4; do
        sleep 0.3
        "$LAB" exec L1 -- tc -s class show dev "$PORT" | awk -v c="$LAB_DATA_CLASS" '$1 == "class" {cur = $3} cur == c && $1 == "backlog" {sub(/b$/, "", $2); print $2; exit}'
      done | awk '{t += $1} END {if (NR) printf "%d", t / NR}')
  wait $!
  ping=$(awk -F/ '/^rtt/{print $5}' "$LAB_TMP/ping-$1.txt")
  for p in "$1" $(($1 + 1)); do lab_stop "bulk-$p" 10; lab_stop "srv-$H1-$p"; done
  echo "${ping:--} $(awk -v b="${q:-0}" -v m="$MBIT_LAB" 'BEGIN{printf "%.1f", b * 8 / (m * 1000)}')"
}
read -r ping0 q0 < <(behind 5304)
echo "# one queue: ping through L1's $PORT ${ping0} ms with its data queue at ${q0} ms"
t_check "lab_ack_prio" lab_ack_prio
ends=0; classes=0
while read -r n dev; do
  ends=$((ends + 1))
  classes=$((classes + $("$LAB" exec "$n" -- tc class show dev "$dev" | grep -cE '^class htb 1:(2 .*prio 0|3 .*prio 1)')))
done < <(jq -r '.links[] | "\(.a) \(.a_if)", "\(.b) \(.b_if)"' "$LAB_TOPO")
t_eq "every link end ($ends): a prio-0 class for small packets and a prio-1 class for the data" $((2 * ends)) "$classes"
read -r ping1 q1 < <(behind 5306)
echo "# ACKs ahead: ping through L1's $PORT ${ping1} ms with its data queue at ${q1} ms"
t_check "both pings answered (${ping0} and ${ping1} ms)" isnum "$ping0$ping1"
echo "# one queue: each ping (ms): $(grep -o 'time=[0-9.]*' "$LAB_TMP/ping-5304.txt" | cut -d= -f2 | tr '\n' ' ')"
t_ge "one queue: the ping waited behind the data (${ping0} ms, at least half the ${q0} ms queue)" "$ping0" "$(awk -v q="$q0" 'BEGIN{print q / 2}')"
t_ge "one queue: the data queue held 20 ms or more (${q0} ms; else nothing here is shown)" "$q0" 20
t_ge "ACKs ahead: the data queue still held 20 ms or more (${q1} ms)" "$q1" 20
t_ge "ACKs ahead: the ping did not wait behind it (${ping1} ms, under a tenth of the queue)" \
  "$(awk -v q="$q1" 'BEGIN{print q / 10}')" "$ping1"
t_check "ACKs ahead: $H1 reaches $H2 (1 MB of TCP)" reach "$H1" "$H2" 5308
t_done
