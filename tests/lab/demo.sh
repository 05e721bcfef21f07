#!/usr/bin/env bash
# `make demo`: an emulated 2-leaf x 4-spine fabric (4 hosts per leaf) on this
# machine, routed with eBGP (one FRR per switch, as real fabrics are), four
# colliding fat flows, tierflow moving them apart, and a link failure.
#   1. lab up (BGP converges); 2. iperf3 H1..H4 -> H5..H8 with source ports
#   that ECMP hashes onto two spines; 3. per-spine load bars every second,
#   read from L1's own uplink counters, first under plain ECMP; 4.
#   tierflow-probe on the leaf uplinks and tierflowd (netlink backend,
#   dashboard at /) start, and the bars show the rebalance; 5. once the bars
#   are full, the busiest L1 uplink goes down (`ip link set IF down` in L1):
#   BGP withdraws that path everywhere and the bars show the flows on the
#   surviving uplinks; after DEMO_FAIL_SECONDS the link comes back; 6. runs
#   until Ctrl-C or DEMO_SECONDS; 7. removes everything (trap).
#   DEMO_SECONDS (default: until Ctrl-C)   DEMO_MBIT (default 100)
#   DEMO_ECMP_SECONDS (default 10)         DEMO_PORT (default 8080)
#   DEMO_TF_SECONDS (default 20): the longest tierflow runs before the
#     failure when the bars never fill (they usually do within seconds)
#   DEMO_FAIL_SECONDS (default 15; 0: no failure): how long the link stays down
#   LAB_ROUTING=static: the old static fabric (a far leaf then keeps
#     sending into the dead path: nothing withdraws it)
set -u
TF_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$TF_ROOT/tests/lab/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it builds network namespaces): sudo make demo" >&2; exit 1; }
for t in iperf3 jq tc curl; do command -v $t >/dev/null || { echo "demo: '$t' missing (scripts/deps.sh demo)" >&2; exit 1; }; done
case "${O:-build}" in /*) ;; *) O="$TF_ROOT/${O:-build}" ;; esac
export TF_OPT_BIN=${TF_OPT_BIN:-$O/bin}

MBIT=${DEMO_MBIT:-100}
SECS=${DEMO_SECONDS:-0}
ECMP_SECS=${DEMO_ECMP_SECONDS:-10}
PORT=${DEMO_PORT:-8080}
TF_SECS=${DEMO_TF_SECONDS:-20}
FAIL_SECS=${DEMO_FAIL_SECONDS:-15}
lab_init demo
stopping=0
cleanup() { [ $stopping -eq 1 ] && return; stopping=1; [ -t 1 ] && printf '\e[?25h'; printf '\ndemo: tearing down the fabric\n'; lab_cleanup; }
trap cleanup EXIT
trap 'exit 0' INT TERM

echo "== 1. emulated fabric: 2 leaves x 4 spines x 4 hosts per leaf, links shaped to $MBIT Mbit/s"
lab_up leafspine:leaves=2,spines=4,hosts=4,gbps=100 --mbit "$MBIT" --seed 7 || { echo "demo: lab up failed" >&2; exit 1; }
echo "   topology (what tierflowd reads): $LAB_TOPO"
ROUTING=$(lab_routing)
P1=$(jq -r '.nodes[] | select(.name == "L1") | .prefix' "$LAB_TOPO")
P2=$(jq -r '.nodes[] | select(.name == "L2") | .prefix' "$LAB_TOPO")
if [ "$ROUTING" = bgp ]; then
  echo "   routing: eBGP, one FRR (zebra + bgpd) per switch, converged in $(jq -r .lab.converge_ms "$LAB_TOPO") ms;"
  echo "   L1 reaches $P2 over $(lab_nexthops L1 "$P2") spines (try: $LAB vtysh L1 -- 'show bgp summary', with LAB_ID=$LAB_ID)"
else
  echo "   routing: static routes (LAB_ROUTING=static)"
fi
mapfile -t UP < <(lab_uplinks L1)
mapfile -t SRC < <(lab_hosts_of L1)
mapfile -t DST < <(lab_hosts_of L2)
declare -a SPORT
for i in 0 1 2 3; do
  SPORT[$i]=$(lab_pick_sport L1 "${SRC[$i]}" "$(lab_addr "${DST[$i]}")" $((5201 + i)) "${UP[$((i / 2))]}" $((41000 + 300 * i)))
done
echo "== 2. four fat flows; ECMP (5-tuple hash) puts them two by two on ${UP[0]} and ${UP[1]}:"
for i in 0 1 2 3; do
  echo "   ${SRC[$i]} $(lab_addr "${SRC[$i]}"):${SPORT[$i]} -> ${DST[$i]} $(lab_addr "${DST[$i]}"):$((5201 + i))   via $(lab_route_dev L1 "${SRC[$i]}" "$(lab_addr "${DST[$i]}")" "${SPORT[$i]}" $((5201 + i)))"
done
for i in 0 1 2 3; do lab_bg "srv$i" "$LAB" exec "${DST[$i]}" -- iperf3 -s -p $((5201 + i)) >/dev/null 2>&1; done
for i in 0 1 2 3; do iperf_wait_listen "${DST[$i]}" $((5201 + i)); done
for i in 0 1 2 3; do
  lab_bg "cli$i" "$LAB" exec "${SRC[$i]}" -- iperf3 -c "$(lab_addr "${DST[$i]}")" -p $((5201 + i)) --cport "${SPORT[$i]}" $(lab_cc) -t 86400 >/dev/null 2>&1
done

PROBE=$(tf_bin tierflow-probe); CTL=$(tf_bin tierflowd)
MGMT=$(jq -r '.lab.mgmt.controller' "$LAB_TOPO")
URL="http://$MGMT:$PORT"
TOKEN=$LAB_TMP/token; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$TOKEN"; chmod 600 "$TOKEN"

bar() { # rate max width
  awk -v r="$1" -v m="$2" -v w="$3" 'BEGIN{ n = int(r / m * w + 0.5); if (n > w) n = w
    s = ""; for (i = 0; i < n; i++) s = s "#"; for (; i < w; i++) s = s "."; printf "%s", s }'
}
prev=($(lab_txbytes L1 "${UP[@]}")); tprev=$(date +%s.%N)
declare -a RATE=(0 0 0 0)
DOWN_IDX=-1          # the L1 uplink that is down now, if any
EVENTS=""            # what the failure did, shown under the bars
paths() { # NODE PREFIX: live next hops toward PREFIX in NODE's FIB (static: the default route's)
  local n; n=$(lab_nexthops "$1" "$2")
  [ "$n" = 0 ] && [ "$ROUTING" = static ] && n=$(lab_nexthops "$1" 0.0.0.0/0)
  echo "$n"
}
routes_line() { # what routing currently gives each leaf toward the other (kernel FIB)
  echo "  routes ($ROUTING): L1 -> L2's $P2 over $(paths L1 "$P2") uplinks;  L2 -> L1's $P1 over $(paths L2 "$P1") spines"
}
show() { # one screenful: per-spine bars and the aggregate against the ideal
  local now cur i r tot=0 dt mark
  sleep 1
  cur=($(lab_txbytes L1 "${UP[@]}")); now=$(date +%s.%N)
  dt=$(awk -v a="$tprev" -v b="$now" 'BEGIN{print b-a}')
  if [ -t 1 ]; then printf '\e[H\e[J'; else echo; fi
  echo "tierflow demo: L1 uplinks, $MBIT Mbit/s each, read from L1's counters    [$1]"
  for i in 0 1 2 3; do
    r=$(awk -v a="${prev[$i]}" -v b="${cur[$i]}" -v t="$dt" 'BEGIN{printf "%.1f", (b-a)*8/t/1e6}')
    RATE[$i]=$r
    tot=$(awk -v a="$tot" -v b="$r" 'BEGIN{print a+b}')
    mark=""; [ "$i" -eq "$DOWN_IDX" ] && mark="   <- LINK DOWN"
    printf '  L1->%-4s %s %6.1f Mbit/s%s\n' "${UP[$i]}" "$(bar "$r" "$MBIT" 50)" "$r" "$mark"
  done
  printf '  aggregate %s %6.1f of %d Mbit/s ideal (%.0f%%)\n' "$(bar "$tot" $((4 * MBIT)) 50)" "$tot" $((4 * MBIT)) \
    "$(awk -v a="$tot" -v m="$MBIT" 'BEGIN{print 100*a/(4*m)}')"
  routes_line
  prev=("${cur[@]}"); tprev=$now
  [ -n "$EVENTS" ] && printf '%s' "$EVENTS"
  [ -n "${2:-}" ] && printf '%s\n' "$2"
}
bars_full() { # every uplink carries at least 80% of its rate
  local i; for i in 0 1 2 3; do awk -v r="${RATE[$i]}" -v m="$MBIT" 'BEGIN{exit !(r >= 0.8 * m)}' || return 1; done
}
event() { EVENTS+="  +$(elapsed)s $*"$'\n'; }
# The far leaf's view is what BGP changes: L2 stops (or resumes) sending
# L1-bound traffic through the spine that lost its link to L1.
fail_link() {
  local i best=0 ms w
  for i in 1 2 3; do awk -v a="${RATE[$i]}" -v b="${RATE[$best]}" 'BEGIN{exit !(a > b)}' && best=$i; done
  DOWN_IDX=$best
  w=$(paths L2 "$P1")
  local t0; t0=$(date +%s%N)
  "$LAB" exec L1 -- ip link set "${UP[$best]}" down
  if [ "$ROUTING" = bgp ]; then
    ms=$(lab_wait_nexthops L2 "$P1" $((w - 1)) 3 "$t0") \
      && w="BGP withdrew it: L2 reaches $P1 over $((w - 1)) spines after $ms ms" \
      || w="L2 still has $(lab_nexthops L2 "$P1") paths to $P1 after 3 s"
  else
    w="static routes: L2 keeps all $w paths to $P1 (the one through ${UP[$best]} now blackholes)"
  fi
  event "link L1->${UP[$best]} down: 'ip link set ${UP[$best]} down' in L1, it carried ${RATE[$best]} Mbit/s; $w"
}
restore_link() {
  local ms w t0; t0=$(date +%s%N)
  "$LAB" exec L1 -- ip link set "${UP[$DOWN_IDX]}" up
  w=""
  if [ "$ROUTING" = bgp ]; then
    ms=$(lab_wait_nexthops L2 "$P1" 4 5 "$t0") && w="; BGP: L2 over 4 spines again after $ms ms"
  fi
  event "link L1->${UP[$DOWN_IDX]} up: restored$w"
  DOWN_IDX=-1
}

start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
done_yet() { [ "$SECS" -gt 0 ] && [ "$(elapsed)" -ge "$SECS" ]; }
[ -t 1 ] && printf '\e[?25l'
while [ "$(elapsed)" -lt "$ECMP_SECS" ] && ! done_yet; do show "plain ECMP, $(elapsed)s"; done

info=""
if [ -z "$PROBE" ] || [ -z "$CTL" ]; then
  info="!! tierflow-probe or tierflowd is not built ($O/bin): showing plain ECMP only. Run: make all"
else
  web=(); "$CTL" --help 2>&1 | grep -q -- '--web-dir' && web=(--web-dir "$TF_ROOT/web")
  lab_bg tierflowd "$CTL" --topology "$LAB_TOPO" --backend netlink --listen "$MGMT:$PORT" \
    --token-file "$TOKEN" --interval 1 --withdraw-on-exit "${web[@]}" >"$LAB_TMP/tierflowd.log" 2>&1
  for leaf in L1 L2; do
    a=(); for u in $(lab_uplinks $leaf); do a+=(-i "$u"); done
    lab_bg "probe-$leaf" "$LAB" exec $leaf -- "$PROBE" "${a[@]}" --node $leaf --controller "$URL" \
      --token-file "$TOKEN" --interval 1 --link-gbps "$(awk -v m="$MBIT" 'BEGIN{print m/1000}')" >"$LAB_TMP/probe-$leaf.log" 2>&1
  done
  info=$(cat <<INFO

tierflowd: dashboard $URL/   (from another machine: ssh -L $PORT:$MGMT:$PORT this-host, then http://127.0.0.1:$PORT/)
  curl -s $URL/api/v1/status | jq
  curl -s '$URL/api/v1/flows?fat=true' | jq
  curl -s '$URL/api/v1/paths?src=L1&dst=L2' | jq
  curl -s $URL/api/v1/routes | jq
  curl -s -X POST -H "Authorization: Bearer \$(cat $TOKEN)" '$URL/api/v1/rebalance?dry_run=true' | jq
  ip netns exec $("$LAB" netns L1) ip rule        # the rules tierflow installed on L1
logs: $LAB_TMP/tierflowd.log $LAB_TMP/probe-L1.log
INFO
)
fi
# phase: rebalance (until the bars are full for 3 s, or TF_SECS) -> failed
# (FAIL_SECS) -> restored (until the end)
phase=rebalance; t_phase=$(elapsed); full=0
[ "$FAIL_SECS" -gt 0 ] || phase=restored
while ! done_yet; do
  if [ -n "${LAB_PIDS[tierflowd]:-}" ] && ! kill -0 "${LAB_PIDS[tierflowd]}" 2>/dev/null; then
    info="!! tierflowd exited; its log: $LAB_TMP/tierflowd.log"$'\n'"$(tail -5 "$LAB_TMP/tierflowd.log")"
    unset "LAB_PIDS[tierflowd]"
  fi
  show "$([ -n "${LAB_PIDS[tierflowd]:-}" ] && echo tierflow || echo 'plain ECMP'), $(elapsed)s$([ "$SECS" -gt 0 ] && echo " of $SECS"); Ctrl-C to stop" "$info"
  case $phase in
    rebalance)
      if bars_full; then full=$((full + 1)); else full=0; fi
      if [ $full -ge 3 ] || [ $(( $(elapsed) - t_phase )) -ge "$TF_SECS" ]; then
        fail_link; phase=failed; t_phase=$(elapsed)
      fi ;;
    failed)
      if [ $(( $(elapsed) - t_phase )) -ge "$FAIL_SECS" ]; then restore_link; phase=restored; fi ;;
  esac
done
