#!/usr/bin/env bash
# timeout: 150
# tierflowd's bgp backend (docs/routing.md "The bgp backend") on the routed lab:
# a 2-leaf x 2-spine x 2-host fabric with FRR, ExaBGP as tierflowd's speaker
# on the management network (no netlink, no namespace access from tierflowd),
# iperf3 as the traffic, probes on the leaf uplinks.
#   1. two flows L1 -> L2 to distinct hosts whose ports make ECMP put both on
#      one spine: the speaker's sessions with every switch are Established
#   2. tierflowd steers one: L1's kernel holds a /32 for its destination via
#      the other spine (proto bgp), nothing broader from the controller, the
#      spines do not have it (no-advertise); both uplinks carry a flow and
#      the aggregate reaches >= 0.9 of two flows at the collided rate; the
#      times from the round to the /32 in the kernel and to the traffic on
#      the new uplink (20-ms counter samples) are printed
#   3. restart: tierflowd killed (-9) and started again adopts the running
#      speaker; `ip monitor route` in L1 sees the /32 never deleted
#   4. remote failure: the steering spine's link to L2 goes down; the /32 is
#      withdrawn from L1 within 2 s (time printed), and over 0.5-2 s after
#      the failure the flows carry >= 0.9 of the one spine left
#   5. the speaker is killed: L1 drops its routes with the session, and
#      tierflowd starts a new speaker that announces them again
#   6. stop with --withdraw-on-exit: L1 holds no route from the controller
#      and the speaker is gone
#   7. weights (bgpbench split, the backend's code): a weighted multipath
#      route in L1's kernel
#   8. per destination, through tierflowd's rounds: two flows SRC0 -> DST0
#      that ECMP splits over the two spines, and SRC1 -> DST1 colliding with
#      one of them. One /32 per destination host can only join DST0's flows
#      (BGP routes match destinations), so the rebalance plans (leaf, host)
#      units: afterwards DST0's two flows cross one uplink, DST1's the
#      other, L1 holds one single-path /32 for DST0, the aggregate reaches
#      >= 0.9 of two links, and no flow moves more than once (a per-flow
#      plan would split DST0 and never agree with its route). Then the
#      controller's session with DST1's spine is shut down on the spine: the
#      session shows down in /status and /metrics, that spine's directions
#      are reported out of view (routing_down), no route through it remains
#      in L1's kernel, nor any other from the controller (every L1 -> L2 flow
#      may take that spine: all are left to ECMP, unpinned events say so),
#      and -- out of view is not down -- the flows stay where the leaf
#      routes them: both uplinks busy, the aggregate >= 0.9 of ECMP's; the
#      session back, they are routing_up again.
set -u
TF_ROOT=${TF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TF_ROOT/tests/lib/tap.sh"
. "$TF_ROOT/tests/lab/lib.sh"
. "$TF_ROOT/tests/lab/bgp.sh"
t_need_root bgp_backend
for t in jq vtysh iperf3 ss curl exabgp; do
  command -v $t >/dev/null || { t_skip bgp_backend "'$t' missing (scripts/deps.sh test)"; t_done; }
done
CTL=$(tf_bin tierflowd); PROBE=$(tf_bin tierflow-probe)
[ -n "$CTL" ] && [ -n "$PROBE" ] || { t_skip bgp_backend "tierflowd or tierflow-probe not built (make all)"; t_done; }

MBIT=${BGP_MBIT:-50}
lab_init bgp42
SPK=$LAB_TMP/speaker
speaker_pid() { cat "$SPK/exabgp.pid" 2>/dev/null; }
cleanup() { # the speakers tierflowd and bgpbench started outlive them by design: stop them by their PIDs
  local d
  for d in "$SPK" "$LAB_TMP/speaker-w"; do lab_bgp_speaker_stop "$d"; done
  lab_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t_check "lab up 2x2x2 with BGP at $MBIT Mbit/s" lab_up leafspine:leaves=2,spines=2,hosts=2,gbps=100 --routing bgp \
  --mbit "$MBIT"
[ -s "$LAB_TOPO" ] || t_done
t_check "every switch peers with the controller address" lab_bgp_peer 64999
TOPO=$LAB_TMP/topology-bgp.json
lab_bgp_topology "$TOPO"
mapfile -t UP < <(lab_uplinks L1)
mapfile -t SRC < <(lab_hosts_of L1)
mapfile -t DST < <(lab_hosts_of L2)
uplink_ip() { jq -r --arg i "$1" '.links[] | select(.a == "L1" and .a_if == $i) | .b_ip' "$LAB_TOPO"; }

# ---- 1. two flows collide on UP[0] -------------------------------------------
declare -a SPORT
for i in 0 1; do
  SPORT[$i]=$(lab_pick_sport L1 "${SRC[$i]}" "$(lab_addr "${DST[$i]}")" $((5201 + i)) "${UP[0]}" $((42000 + 300 * i)))
  [ -n "${SPORT[$i]}" ] || { t_fail "a source port for flow $i on ${UP[0]}"; t_done; }
done
# TF_TEST_PORT: the API port (default 18200 + PID % 50), for sessions given a port range
C=$(lab_bgp_controller); PORT=${TF_TEST_PORT:-$((18200 + $$ % 50))}; URL="http://$C:$PORT"
TOKEN=$LAB_TMP/token; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$TOKEN"; chmod 600 "$TOKEN"
cat > "$LAB_TMP/tierflowd.json" <<EOF
{"topology": "$TOPO", "backend": "bgp", "listen": "$C:$PORT", "token_file": "$TOKEN", "interval": 1,
 "withdraw_on_exit": true,
 "backend_options": {"bgp_dir": "$SPK", "bgp_local_address": "$C", "bgp_local_as": 64999, "bgp_hold_time": 9}}
EOF
start_ctl() { lab_bg tierflowd "$CTL" --config "$LAB_TMP/tierflowd.json" >>"$LAB_TMP/tierflowd.log" 2>&1; }
for i in 0 1; do iperf_server "${DST[$i]}" $((5201 + i)) "$LAB_TMP/srv$i.json"; done
for i in 0 1; do iperf_wait_listen "${DST[$i]}" $((5201 + i)); done
for i in 0 1; do
  iperf_client "${SRC[$i]}" "$(lab_addr "${DST[$i]}")" $((5201 + i)) "${SPORT[$i]}" 40 "$LAB_TMP/cli$i.json"
done
GBPS=$(awk -v m="$MBIT" 'BEGIN{print m/1000}')
for leaf in L1 L2; do
  a=(); for ifs in $(lab_uplinks $leaf); do a+=(-i "$ifs"); done
  lab_bg "probe-$leaf" "$LAB" exec $leaf -- "$PROBE" "${a[@]}" --node $leaf --controller "$URL" \
    --token-file "$TOKEN" --interval 1 --link-gbps "$GBPS" >"$LAB_TMP/probe-$leaf.log" 2>&1
done
# bit/s over SECS: each L1 uplink, then what L2 delivers to the two
# destinations (the aggregate; iperf3's JSON comes only at its end)
HIF=($(for i in 0 1; do lab_hostif L2 "${DST[$i]}"; done))
rates() {
  local a b c d; a=($(lab_txbytes L1 "${UP[@]}")); c=($(lab_txbytes L2 "${HIF[@]}")); sleep "$1"
  b=($(lab_txbytes L1 "${UP[@]}")); d=($(lab_txbytes L2 "${HIF[@]}"))
  awk -v s="$1" -v a="${a[*]}" -v b="${b[*]}" -v c="${c[*]}" -v d="${d[*]}" 'BEGIN{split(a,A);split(b,B);split(c,C);split(d,D)
    printf "%.0f %.0f %.0f\n", (B[1]-A[1])*8/s, (B[2]-A[2])*8/s, (D[1]-C[1]+D[2]-C[2])*8/s}'
}
mbit() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1e6}'; }
sleep 1
R=($(rates 2)); COLL=${R[2]}
echo "# ECMP: ${UP[0]} ${UP[1]} carry $(mbit "${R[0]}") $(mbit "${R[1]}") Mbit/s; aggregate $(mbit "$COLL") Mbit/s"
t_ge "ECMP: ${UP[1]} idle while both flows share ${UP[0]}" "$(awk -v m="$MBIT" 'BEGIN{print 0.1*m*1e6}')" "${R[1]}"

# ---- 2. tierflowd steers one flow by BGP -------------------------------------
# For the announce -> traffic figure: L1's route changes with timestamps, and
# UP[1]'s transmitted bytes every 20 ms.
lab_bg steer-monitor "$LAB" exec L1 -- ip -ts -o monitor route > "$LAB_TMP/steer-monitor.out" 2>&1
lab_bg sampler "$LAB" exec L1 -- sh -c "while :; do echo \$(date +%s.%N) \$(cat /sys/class/net/${UP[1]}/statistics/tx_bytes); sleep 0.02; done" \
  > "$LAB_TMP/sampler.out" 2>&1
tstart=$(date +%s.%N)
start_ctl
# tierflowd pins the fat flows where they are, then moves one to UP[1]: wait
# for a /32 via UP[1]'s spine.
NH=$(uplink_ip "${UP[1]}")
steered=""
for _ in $(seq 150); do
  steered=$(lab_bgp_routes L1 | grep " via $NH dev ${UP[1]} "); [ -n "$steered" ] && break; sleep 0.1
done
tsteer=$(date +%s.%N)
echo "# tierflowd start -> a /32 via ${UP[1]} in L1's kernel: $(awk -v a="$tstart" -v b="$tsteer" 'BEGIN{printf "%.2f", b-a}') s: $steered"
t_check "speaker sessions with L1, L2, S1, S2 Established" bash -c \
  "curl -s '$URL/api/v1/status' | jq -e '[.backend.bgp.sessions[] | select(.state == \"established\")] | length == 4' >/dev/null"
DSTS=$(for i in 0 1; do lab_addr "${DST[$i]}"; done)
t_eq "L1 steers one destination host via ${UP[1]} ($NH)" 1 "$(echo "$steered" | grep -c .)"
SDST=$(echo "$steered" | awk '{print $1}')
t_check "the steered prefix is one of the two destinations" grep -qx "$SDST" <<< "$DSTS"
CROUTES=$("$LAB" vtysh L1 -- "show bgp ipv4 unicast neighbors $C routes json" 2>/dev/null | jq -r '.routes | keys[]')
echo "# L1's routes from the controller: $(echo $CROUTES)"
t_check "everything L1 took from the controller is a /32 of a destination (nothing broader)" bash -c \
  "[ -n '$CROUTES' ] && ! grep -vxF -f <(sed 's|$|/32|' <<< '$DSTS') <<< '$CROUTES'"
t_check "L1's route carries no-advertise" bash -c \
  "'$LAB' vtysh L1 -- 'show bgp ipv4 unicast $SDST/32 json' | jq -e '[.paths[].community.list[]?] | index(\"noAdvertise\")' >/dev/null"
t_eq "no spine holds the /32 (no-advertise)" "" "$(for s in S1 S2; do "$LAB" exec $s -- ip -4 route show exact "$SDST/32"; done)"
t_check "/metrics: the speaker up, L1's session up, routes announced" bash -c \
  "curl -s '$URL/metrics' | grep -q '^tierflow_bgp_speaker_up 1' && curl -s '$URL/metrics' | grep -q '^tierflow_bgp_session_up{node=\"L1\",peer=\"[0-9.]*\"} 1' && curl -s '$URL/metrics' | grep -q '^tierflow_bgp_announced_routes [1-9]'"
t_check "the backend is healthy: the speaker's Adj-RIB-Out read back as announced (no-advertise included)" bash -c \
  "for i in \$(seq 60); do curl -s '$URL/api/v1/status' | jq -e '.backend.healthy == true' >/dev/null && exit 0; sleep 0.1; done; exit 1"
t_check "GET /api/v1/routes lists it for L1 via S2" bash -c \
  "curl -s '$URL/api/v1/routes' | jq -e --arg p '$SDST/32' '.bgp.announced | any(.node == \"L1\" and .prefix == \$p)' >/dev/null"
sleep 1.5
R=($(rates 3)); AGG=${R[2]}
echo "# steered: ${UP[0]} ${UP[1]} carry $(mbit "${R[0]}") $(mbit "${R[1]}") Mbit/s; aggregate $(mbit "$AGG") Mbit/s (collided $(mbit "$COLL"))"
lab_stop sampler; lab_stop steer-monitor
# The round that moved the flow (its event), the /32 in L1's kernel, and the
# first 100 ms in which UP[1] carried half of what the flow had collided.
tround=$(curl -s "$URL/api/v1/events" | jq -r '[.events[] | select(.kind == "rebalance" and (.message | startswith("moved")))][0].ts // empty')
tkern=$(awk -v p="$SDST" '$2 == p && /via/ { gsub(/[][]/, "", $1); print $1; exit }' "$LAB_TMP/steer-monitor.out")
tkern=$([ -n "$tkern" ] && date -d "$tkern" +%s.%N)
tmoved=$(awk -v half="$(awk -v c="$COLL" 'BEGIN{print c / 4}')" -v from="${tround:-0}" '
  { t[NR] = $1; b[NR] = $2 }
  NR > 5 && t[NR] >= from && (b[NR] - b[NR-5]) * 8 / (t[NR] - t[NR-5]) >= half { print t[NR]; exit }' "$LAB_TMP/sampler.out")
echo "# announce -> traffic: round $tround, kernel route $tkern, traffic moved $tmoved: round -> kernel" \
  "$(awk -v a="$tround" -v b="$tkern" 'BEGIN{printf "%.0f", (b-a)*1000}') ms, kernel -> traffic" \
  "$(awk -v a="$tkern" -v b="$tmoved" 'BEGIN{printf "%.0f", (b-a)*1000}') ms, round -> traffic" \
  "$(awk -v a="$tround" -v b="$tmoved" 'BEGIN{printf "%.0f", (b-a)*1000}') ms"
t_check "the moved flow shows on ${UP[1]}'s counters after the round (announce -> traffic measured)" \
  test -n "$tround" -a -n "$tkern" -a -n "$tmoved"
t_ge "both uplinks carry a flow" "${R[1]}" "$(awk -v c="$COLL" 'BEGIN{print 0.35*c}')"
t_ge "aggregate >= 0.9 of two flows at the collided link's rate" "$AGG" "$(awk -v c="$COLL" 'BEGIN{print 0.9*2*c}')"

# ---- 3. restart adopts --------------------------------------------------------
SPID=$(speaker_pid)
lab_bg monitor "$LAB" exec L1 -- ip -o monitor route > "$LAB_TMP/monitor.out" 2>&1
kill -9 "${LAB_PIDS[tierflowd]}"; wait "${LAB_PIDS[tierflowd]}" 2>/dev/null
start_ctl
sleep 4
t_check "ip monitor ran through the restart" kill -0 "${LAB_PIDS[monitor]}"
lab_stop monitor
t_eq "the speaker survived tierflowd and was adopted (same PID)" "$SPID" "$(speaker_pid)"
t_check "tierflowd says it adopted the speaker" grep -q "adopting the running speaker" "$LAB_TMP/tierflowd.log"
t_eq "ip monitor: the /32 was never deleted across the restart" 0 \
  "$(grep -c "^Deleted $SDST " "$LAB_TMP/monitor.out" 2>/dev/null || true)"
t_eq "L1 still steers $SDST via ${UP[1]}" 1 "$(lab_bgp_routes L1 | grep -c "^$SDST via $NH ")"

# ---- 4. remote failure: S2 loses its link to L2 -------------------------------
SPINE=$(jq -r --arg i "${UP[1]}" '.links[] | select(.a == "L1" and .a_if == $i) | .b' "$LAB_TOPO")
tdown=$(date +%s.%N)
"$LAB" exec "$SPINE" -- ip link set L2 down
gone=""
for _ in $(seq 50); do
  lab_bgp_routes L1 | grep -q " via $NH " || { gone=$(date +%s.%N); break; }; sleep 0.05
done
ms=$([ -n "$gone" ] && awk -v a="$tdown" -v b="$gone" 'BEGIN{printf "%d", (b-a)*1000}' || echo 9999)
echo "# $SPINE -> L2 down: no /32 via $SPINE in L1's kernel after $ms ms"
t_ge "remote failure: the steered route withdrawn within 2 s ($ms ms)" 2000 "$ms"
# Recovered within 2 s: over [0.5 s, 2 s] after the link went down, the two
# flows (L2 is left with one spine) carry >= 0.9 of that spine's link.
sleep "$(awk -v t="$tdown" -v n="$(date +%s.%N)" 'BEGIN{d = t + 0.5 - n; printf "%.3f", (d > 0 ? d : 0)}')"
R=($(rates 1.5)); AGG=${R[2]}
echo "# after the failure: aggregate $(mbit "$AGG") Mbit/s over one spine in [0.5, 2] s after it (one link: $(mbit "$COLL"))"
t_ge "recovered within 2 s: >= 0.9 of what the one spine left carries" "$AGG" "$(awk -v c="$COLL" 'BEGIN{print 0.9*c}')"
"$LAB" exec "$SPINE" -- ip link set L2 up

# ---- 5. the speaker dies: its routes go with its sessions; tierflowd restarts it
for _ in $(seq 50); do [ -n "$(lab_bgp_routes L1)" ] && break; sleep 0.1; done
SPID=$(speaker_pid)
t_check "L1 holds a controller route before the speaker dies" test -n "$(lab_bgp_routes L1)"
tkill=$(date +%s.%N)
kill -9 "$SPID"
gone=""
for _ in $(seq 100); do [ -z "$(lab_bgp_routes L1)" ] && { gone=$(date +%s.%N); break; }; sleep 0.05; done
ms=$([ -n "$gone" ] && awk -v a="$tkill" -v b="$gone" 'BEGIN{printf "%d", (b-a)*1000}' || echo 9999)
echo "# speaker killed: L1 dropped its controller routes after $ms ms"
t_ge "speaker killed: its routes leave L1 with the session (within the 9 s hold time: $ms ms)" 9000 "$ms"
back=""
for _ in $(seq 100); do
  p=$(speaker_pid); [ -n "$p" ] && [ "$p" != "$SPID" ] && [ -n "$(lab_bgp_routes L1)" ] && { back=$(date +%s.%N); break; }
  sleep 0.1
done
t_check "tierflowd started a new speaker and L1 is steered again" test -n "$back"
[ -n "$back" ] && echo "# new speaker $(speaker_pid), routes back after $(awk -v a="$tkill" -v b="$back" 'BEGIN{printf "%.1f", b-a}') s"

# ---- 6. stop withdraws everything ---------------------------------------------
SPID=$(speaker_pid)
lab_stop tierflowd
sleep 0.5
t_eq "stopped with withdraw_on_exit: L1 holds no route from the controller" "" "$(lab_bgp_routes L1)"
t_check "the speaker is gone" bash -c "! kill -0 '$SPID' 2>/dev/null || grep -q '^[^ ]* ([^)]*) Z' /proc/$SPID/stat"
for i in 0 1; do lab_stop "cli-${SRC[$i]}-${SPORT[$i]}"; done

# ---- 7. weights: pins from L1 to one host split 2:1 over the two spines -------
# (tests/tools/bgpbench split, through the backend's code: two add-path routes
# with link-bandwidth communities); FRR makes a weighted multipath route of them.
BENCH=$(tf_bin bgpbench)
if [ -z "$BENCH" ]; then
  t_skip "weights" "bgpbench not built (make tools)"
else
  out=$("$BENCH" "$TOPO" "$LAB_TMP/speaker-w" "$(lab_bgp_controller)" L1 S1 "$("$LAB" netns L1)" split 2>&1)
  echo "# ${out//$'\n'/ }"
  w=($(grep -o 'weight [0-9]*' <<<"$out" | awk '{print $2}'))
  t_eq "split pins: L1's kernel route to the host has two weighted next hops" 2 "${#w[@]}"
  t_check "the weights follow the pins, 2:1 (${w[*]})" awk -v a="${w[0]:-1}" -v b="${w[1]:-1}" \
    'BEGIN { r = a > b ? a / b : b / a; exit !(r >= 1.8 && r <= 2.2) }'
  t_check "the read-back of ExaBGP's Adj-RIB-Out (extensive) matches: link bandwidths and no-advertise as asked" \
    grep -q "^read-back: matches" <<<"$out"
fi
lab_bgp_speaker_stop "$LAB_TMP/speaker-w"

# ---- 8. per destination through the rounds; a spine's session drops ------------
# Flow k: source host, destination host, the uplink ECMP gives it at L1.
FSRC=("${SRC[0]}" "${SRC[0]}" "${SRC[1]}") FDST=("${DST[0]}" "${DST[0]}" "${DST[1]}") FUP=("${UP[0]}" "${UP[1]}" "${UP[1]}")
declare -a FPORT
for k in 0 1 2; do
  FPORT[$k]=$(lab_pick_sport L1 "${FSRC[$k]}" "$(lab_addr "${FDST[$k]}")" $((5211 + k)) "${FUP[$k]}" $((44000 + 300 * k)))
  [ -n "${FPORT[$k]}" ] || { t_fail "a source port for unit flow $k on ${FUP[$k]}"; t_done; }
done
for k in 0 1 2; do iperf_server "${FDST[$k]}" $((5211 + k)) "$LAB_TMP/usrv$k.json"; done
for k in 0 1 2; do iperf_wait_listen "${FDST[$k]}" $((5211 + k)); done
for k in 0 1 2; do
  iperf_client "${FSRC[$k]}" "$(lab_addr "${FDST[$k]}")" $((5211 + k)) "${FPORT[$k]}" 40 "$LAB_TMP/ucli$k.json"
done
sleep 2
R=($(rates 2)); ECMP8=${R[2]}
echo "# ECMP: ${UP[0]} ${UP[1]} carry $(mbit "${R[0]}") $(mbit "${R[1]}") Mbit/s; aggregate $(mbit "$ECMP8") Mbit/s" \
  "(two links: $(mbit "$(awk -v c="$COLL" 'BEGIN{print 2*c}')"))"
: > "$LAB_TMP/tierflowd.log"
start_ctl
dev_of() { lab_route_dev L1 "${FSRC[$1]}" "$(lab_addr "${FDST[$1]}")" "${FPORT[$1]}" $((5211 + $1)); }
joined=""
for _ in $(seq 100); do
  d0=$(dev_of 0); d1=$(dev_of 1); d2=$(dev_of 2)
  [ -n "$d0" ] && [ "$d0" = "$d1" ] && [ "$d2" != "$d0" ] && { joined=1; break; }
  sleep 0.1
done
echo "# after tierflowd: L1 routes DST0's flows by $d0 and $d1, DST1's by $d2; controller routes:" \
  "$(lab_bgp_routes L1 | tr -s ' ' | tr '\n' ';')"
t_check "DST0's two flows cross one uplink, DST1's the other (ip route get at L1)" test -n "$joined"
D0=$(lab_addr "${DST[0]}")
r0=$("$LAB" exec L1 -- ip -4 -o route show exact "$D0/32" proto bgp)
t_check "L1 holds one single-path /32 for DST0 from the controller ($r0)" \
  bash -c "[ \$(grep -c . <<< '$r0') -eq 1 ] && grep -q ' via ' <<< '$r0' && ! grep -q nexthop <<< '$r0'"
sleep 2
R=($(rates 3)); AGG=${R[2]}
echo "# per destination: ${UP[0]} ${UP[1]} carry $(mbit "${R[0]}") $(mbit "${R[1]}") Mbit/s; aggregate $(mbit "$AGG") Mbit/s"
t_ge "aggregate >= 0.9 of two links" "$AGG" "$(awk -v c="$COLL" 'BEGIN{print 0.9*2*c}')"
umoves() { # the largest move count among the three flows, in tierflowd's view
  curl -s "$URL/api/v1/flows?limit=1000" | jq --argjson p "[${FPORT[0]},${FPORT[1]},${FPORT[2]}]" \
    '[.flows[]? | select(.sport as $s | $p | index($s)) | .moves] | max // -1'
}
t_ge "no flow moved more than once (tierflowd's flows)" 1 "$(umoves)"

SP=$(jq -r --arg i "$d2" '.links[] | select(.a == "L1" and .a_if == $i) | .b' "$LAB_TOPO")
SPAS=$(jq -r --arg n "$SP" '.lab.bgp.asn[$n]' "$LAB_TOPO")
SPNH=$(uplink_ip "$d2")
tshut=$(date +%s)
"$LAB" vtysh "$SP" -- "conf t" "router bgp $SPAS" "neighbor $C shutdown" >/dev/null
down=""
for _ in $(seq 60); do
  curl -s "$URL/api/v1/status" | jq -e --arg n "$SP" '.backend.bgp.sessions[] | select(.node == $n) | .state != "established"' \
    >/dev/null && { down=1; break; }
  sleep 0.1
done
t_check "$SP's session shut on the spine: /status shows it not established" test -n "$down"
t_check "/metrics: tierflow_bgp_session_up for $SP is 0" bash -c \
  "curl -s '$URL/metrics' | grep -q '^tierflow_bgp_session_up{node=\"$SP\",peer=\"[0-9.]*\"} 0'"
evs() { curl -s "$URL/api/v1/events?limit=1024" | jq -r --arg k "$1" --argjson t "$tshut" \
  '[.events[] | select(.kind == $k and .ts >= $t) | .message] | .[]'; }
sleep 1
rd=$(evs routing_down)
echo "# routing_down since the shutdown: $(tr '\n' ';' <<< "$rd")"
t_check "$SP's directions reported out of view (routing_down events name it)" grep -q "$SP: out of the controller's view" <<< "$rd"
t_check "/api/v1/topology: L1 -> $SP still up, and closed to new pins" bash -c \
  "curl -s '$URL/api/v1/topology' | jq -e --arg s '$SP' '[.links[].dirs[] | select(.from == \"L1\" and .to == \$s)] | length == 1 and all(.up and .closed)' >/dev/null"
t_eq "no route through $SP ($SPNH) left in L1's kernel" 0 "$(lab_bgp_routes L1 | grep -c " via $SPNH " || true)"
# Nor through the other spine: every flow from L1 to L2 may take $SP, so
# all are left to the leaf's ECMP while it is out of view (a pin kept on
# the other spine would share it with what ECMP hashes there).
left=x
for _ in $(seq 30); do left=$(lab_bgp_routes L1); [ -z "$left" ] && break; sleep 0.1; done
t_eq "no route from the controller at all in L1's kernel: L1 -> L2 left to ECMP ($(tr -s ' ' <<< "$left" | tr '\n' ';'))" "" "$left"
t_check "tierflowd said so (unpinned: a path it may take is out of the controller's view)" \
  bash -c "curl -s '$URL/api/v1/events?limit=1024' | jq -r '.events[] | select(.kind == \"unpinned\") | .message' | grep -q 'a path it may take is out of'"
R=($(rates 2))
echo "# $SP's session down: ${UP[0]} ${UP[1]} carry $(mbit "${R[0]}") $(mbit "${R[1]}") Mbit/s; aggregate $(mbit "${R[2]}") Mbit/s" \
  "(ECMP $(mbit "$ECMP8"))"
# Out of view is not down: the flows stay where they run (DST1's by the
# leaf's ECMP once its pin is gone), none is piled onto the other spine.
t_ge "no worse than ECMP with $SP out of view (>= 0.9 of ECMP's $(mbit "$ECMP8") Mbit/s)" "${R[2]}" \
  "$(awk -v e="$ECMP8" 'BEGIN{print 0.9*e}')"
t_check "the other spine does not carry all three flows (${UP[0]} ${UP[1]}: $(mbit "${R[0]}") $(mbit "${R[1]}"))" \
  awk -v a="${R[0]}" -v b="${R[1]}" -v c="$COLL" 'BEGIN{exit !(a > 0.3 * c && b > 0.3 * c)}'
"$LAB" vtysh "$SP" -- "conf t" "router bgp $SPAS" "no neighbor $C shutdown" >/dev/null
up=""
for _ in $(seq 150); do
  evs routing_up | grep -q "$SP" && { up=1; break; }
  sleep 0.1
done
t_check "the session back: $SP's directions routing_up again" test -n "$up"
for k in 0 1 2; do lab_stop "cli-${FSRC[$k]}-${FPORT[$k]}"; done
lab_stop tierflowd
t_done
