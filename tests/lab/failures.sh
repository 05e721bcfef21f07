# Failure scenarios end to end on a lab that is up: the same fat flows under
# the fabric's routing alone (ECMP: BGP, or the lab's static routes) and with
# tierflow, while links and switches fail. Source after lib.sh and traffic.sh;
# needs SIM and TOPO (tierflow-sim, tierflow-topo), and CTL and PROBE for
# MODE tierflow (traffic.sh's tf_start, with FAIL_URL, FAIL_TOKEN, FAIL_GBPS);
# MODE bgp also needs bgp.sh sourced.
#
#   fail_init                   maps of the resolved topology ($LAB_TOPO), the
#                               routing mode, bounded link queues (see
#                               fail_bound_queues), every switch's routes once stable
#   fail_ceiling SRC DST        one TCP flow's goodput alone (bit/s), iperf3 seconds 1..5
#   fail_flows C                the flows: every leaf sends and receives, across
#                               leaves, in both directions; source ports make ECMP
#                               put two flows on one uplink of every leaf
#                               (lab_pick_sport); C (bit/s) is one flow's ceiling;
#                               writes $FAIL_FLOWS_FILE (tierflow-sim's flows file)
#   fail_check_collisions       flows that ECMP does not send where fail_flows chose (0)
#   fail_ends SCENARIO          the link ends it takes down, "NODE IF" lines
#   fail_describe SCENARIO      the same as "NODE:IF ..."
#   fail_capacity SCENARIO      what the surviving fabric can carry for these flows:
#                               "BPS ALGO seed N" (tierflow-sim on $LAB_TOPO without the
#                               scenario's links, max-min fair throughput x offered
#                               load, best of tierflow's and gff's assignments from
#                               three seeds)
#   fail_capacities SCEN...     FAIL_CAP[SCEN] for "none" and each scenario
#   fail_down / fail_up SCEN    take its links down / bring them back (static
#                               routing: and the lab's routes the kernel dropped)
#   fail_wait_routing SECS      until every switch's FIB is as before any failure
#   fail_trace                  every flow's forwarding path hop by hop (ip route get
#                               with iif and ports, so policy rules count) in
#                               FAIL_TRACE; FAIL_DEAD: flows whose path crosses an
#                               interface that is not UP, ends without a route or
#                               loops; FAIL_DEAD_TF: those of them that a tierflow
#                               table (FAIL_TABLE_MIN..MAX) steered on the way
#   fail_placement              max-min throughput of the paths fail_trace found
#                               (what the placement in force could carry, bit/s)
#   fail_tf_view URL SCENARIO   fresh fat flows whose path in tierflow's view
#                               (GET /api/v1/flows) crosses one of its down links
#   fail_moves URL T1 T2        flows tierflow moved in [T1, T2) (rebalance events)
#   fail_events URL T1 T2       tierflowd's events in [T1, T2), one line: "+S KIND[ N]"
#                               (S: seconds after T1; N: flows moved) by "; "
#   fail_oracle_prepare SCEN... the oracle's rules per scenario (fail_capacities first)
#   fail_oracle_install SCEN    installs them on every switch (clear: removes them)
#   fail_run MODE SCEN...       one continuous traffic run (MODE: ecmp, tierflow,
#                               bgp (tierflowd with the bgp backend, fail_ctl), oracle)
#                               through the scenarios, in order; results in
#                               FAIL_R["MODE SCEN KEY"]: t0 hold wend after bins rec
#                               placement dead dead_tf trace routing (and view moves
#                               with tierflow; flap: during after_up)
#
# Scenarios (FAIL_SCENARIOS), chosen from the topology and the flows, never by name:
#   src-uplink    the first leaf's uplink that ECMP gives two of its flows, down at the leaf
#   far-downlink  a spine's downlink to the leaf the first leaf's first flow goes
#                 to, down inside the spine: the source leaf sees no local change
#   spine         a spine above the first leaf, every fabric interface of it down
#   two-links     an uplink of the second leaf and one of the last leaf, on two
#                 different spines, that leave every host pair connected
#   flap          the last leaf's doubly loaded uplink down/up five times in ten
#                 seconds (1 s down, 1 s up), ending up
#   restore       src-uplink's link back (right after src-uplink, or taken down first)
# Timeline: flows start (tierflow: 1.5 s after tf_start), FAIL_WARMUP s, then
# the baseline "none" (FAIL_BASE s). Per scenario the event comes at a whole
# second t0, the failure holds FAIL_HOLD s, the data-plane check (fail_trace,
# tierflow's view) runs 1.5 s before its end, then the links come back, the
# routing is waited for and FAIL_SETTLE s pass (none after the last).
# Windows end 1 s before the links come back, so that no 1-s bin holds any
# of the restore: bins over [t0, t0+FAIL_HOLD-1), "after" =
# [t0+3, t0+FAIL_HOLD-1). flap: t0 = its
# first down, the failure lasts its 10 s plus FAIL_HOLD s after the last up
# (capacity: with the link down; the check runs in its last down phase).
# restore: t0 = the "up", FAIL_RESTORE_HOLD s (capacity: the whole fabric).
# rec = seconds to the first bin at >= 90% of the capacity from which the
# bins to the window's end also average >= 90% (-1: never in the window).
# Aggregates come from the receivers' iperf3 JSON (0.5-s reports, 1-s bins).
FAIL_SCENARIOS="src-uplink restore far-downlink spine two-links flap"
FAIL_HOLD=${FAIL_HOLD:-7}
FAIL_SETTLE=${FAIL_SETTLE:-4}
FAIL_RESTORE_HOLD=${FAIL_RESTORE_HOLD:-8}
FAIL_WARMUP=${FAIL_WARMUP:-6}
FAIL_BASE=${FAIL_BASE:-4}
# Routing comes back within 0-2.5 s of a link's return here (ECMP runs);
# past this the run goes on and the scenario says -1.
FAIL_ROUTING_WAIT=${FAIL_ROUTING_WAIT:-12}
FAIL_TABLE_MIN=${FAIL_TABLE_MIN:-7700}   # tierflow's tables (tierflowd's table_base + 0..255)
FAIL_TABLE_MAX=${FAIL_TABLE_MAX:-7955}

declare -gA FAIL_NS=() FAIL_TIER=() FAIL_RANK=() FAIL_ADDR=() FAIL_PEER=() FAIL_LIDX=() FAIL_IFTO=()
declare -gA FAIL_UPS=() FAIL_HOSTS=() FAIL_LEAF_OF=() FAIL_STATIC=() FAIL_RTSIG=() FAIL_CAP=() FAIL_R=()
declare -ga FAIL_LEAVES=() FAIL_SWITCHES=() FAIL_FSRC=() FAIL_FDST=() FAIL_FSPORT=() FAIL_FDPORT=() FAIL_FWANT=()

fail_now() { date +%s.%N; }
fail_align() { FAIL_T=$(( $(date +%s) + 1 )); lab_sleep_until "$FAIL_T"; }   # next whole second
fail_mbit() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1e6}'; }

fail_init() {
  local kind a b c d e f
  FAIL_NS=() FAIL_TIER=() FAIL_RANK=() FAIL_ADDR=() FAIL_PEER=() FAIL_LIDX=() FAIL_IFTO=()
  FAIL_UPS=() FAIL_HOSTS=() FAIL_LEAF_OF=() FAIL_STATIC=() FAIL_RTSIG=() FAIL_CAP=()
  FAIL_LEAVES=() FAIL_SWITCHES=()
  # The bgp mode's peering and topology are the lab's: a second lab (bench
  # 55's fat tree after its leaf/spine) ran tierflowd on the first lab's
  # topology file, with no switch peering (or, that file gone, not at all).
  FAIL_BGP_TOPO=""
  FAIL_ROUTING=$(jq -r '.lab.routing // "static"' "$LAB_TOPO")
  TF_PROBE_IFS=()   # traffic.sh caches the probes' interfaces per lab
  while read -r kind a b c d e f; do
    case $kind in
      node) FAIL_TIER[$a]=$b; FAIL_NS[$a]=$c; FAIL_ADDR[$a]=$d; FAIL_RANK[$a]=$e
            [ "$b" = leaf ] && FAIL_LEAVES+=("$a"); [ "$b" != host ] && FAIL_SWITCHES+=("$a") ;;
      link) FAIL_PEER["$b $c"]="$d $e"; FAIL_PEER["$d $e"]="$b $c"
            FAIL_LIDX["$b $c"]=$a; FAIL_LIDX["$d $e"]=$a; FAIL_IFTO["$b $d"]=$c; FAIL_IFTO["$d $b"]=$e
            if [ "${FAIL_RANK[$d]}" -gt "${FAIL_RANK[$b]}" ]; then FAIL_UPS[$b]+="$c "
            elif [ "${FAIL_RANK[$b]}" -gt "${FAIL_RANK[$d]}" ]; then FAIL_UPS[$d]+="$e "; fi
            if [ "${FAIL_TIER[$b]}" = host ]; then FAIL_HOSTS[$d]+="$b "; FAIL_LEAF_OF[$b]=$d
            elif [ "${FAIL_TIER[$d]}" = host ]; then FAIL_HOSTS[$b]+="$d "; FAIL_LEAF_OF[$d]=$b; fi ;;
    esac
  done < <(jq -r '.tiers as $t | (reduce range(0; $t|length) as $i ({}; .[$t[$i]] = $i)) as $ti
      | (.nodes[] | "node \(.name) \(.tier) \(.netns) \(.addr // "-") \($ti[.tier])"),
        (.links | to_entries[] | "link \(.key) \(.value.a) \(.value.a_if) \(.value.b) \(.value.b_if)")' "$LAB_TOPO")
  fail_bound_queues
  # The baseline routes: once every switch's FIB has stayed the same for 2 s
  # (lab up waits for the leaves; spines and cores may still be converging).
  local n all prev="" t0; t0=$(date +%s)
  while :; do
    all=""; for n in "${FAIL_SWITCHES[@]}"; do all+="$n: $(fail_rt_sig "$n")"$'\n'; done
    [ "$all" = "$prev" ] && break
    [ $(( $(date +%s) - t0 )) -gt 30 ] && { echo "fail_init: routing still changing after 30 s" >&2; break; }
    prev=$all; sleep 2
  done
  for n in "${FAIL_SWITCHES[@]}"; do
    FAIL_RTSIG[$n]=$(fail_rt_sig "$n")
    # Static routes: an admin link-down deletes the routes through it and
    # nothing puts them back, so fail_up replays the lab's own routes.
    [ "$FAIL_ROUTING" = static ] && FAIL_STATIC[$n]=$(ip -n "${FAIL_NS[$n]}" -o route show table main proto static)
  done
  return 0
}

# The lab's link queues (lab_bound_queues) hold about 10 s at 50 Mbit/s.
# One-way flows do not mind; with fat flows both ways the ACKs of one
# direction wait behind the other direction's data, RTTs reach most of a
# second and TCP delivers about 60% of what the placement allows (9 flows on
# 3x3: 175 Mbit/s against a max-min 287, ECMP and tierflow alike). So every
# link end gets FAIL_QUEUE_MS (24) of the link rate; the same flows then
# measure 284-286 of 287. FAIL_QUEUE_MS=0 leaves the lab's queues as they are.
fail_bound_queues() {
  lab_bound_queues "${FAIL_QUEUE_MS:-24}" || return 1
  FAIL_QUEUE_BYTES=$LAB_QUEUE_BYTES
}

# A switch's forwarding state as "prefix dev" pairs (live next hops only,
# management network left out): equal to the baseline once routing is back.
# A switch's routing, as "PREFIX DEV" pairs of its live next hops; host
# routes (/32) from BGP are left out: those are the bgp backend's steering
# (fail_bgp_steered), not the fabric's routing.
fail_rt_sig() {
  ip -n "${FAIL_NS[$1]}" -o route show table main 2>/dev/null | awk '
    $1 ~ /^[0-9.]+$/ && / proto bgp / { next }
    { pfx = $1; n = split($0, seg, /nexthop/)
      for (s = 1; s <= n; s++) { if (seg[s] ~ /dead|linkdown/) continue
        m = split(seg[s], w, /[ \t\\]+/)
        for (k = 1; k < m; k++) if (w[k] == "dev" && w[k+1] != "mgmt0") print pfx, w[k+1] } }' | sort | tr '\n' ' '
}
fail_wait_routing() { # prints seconds waited, or -1 after SECS
  local t0 n ok; t0=$(fail_now)
  while :; do
    ok=1
    for n in "${FAIL_SWITCHES[@]}"; do [ "$(fail_rt_sig "$n")" = "${FAIL_RTSIG[$n]}" ] || { ok=0; break; }; done
    [ $ok -eq 1 ] && { awk -v a="$t0" -v b="$(fail_now)" 'BEGIN{printf "%.1f\n", b - a}'; return 0; }
    awk -v a="$t0" -v b="$(fail_now)" -v s="$1" 'BEGIN{exit !(b - a > s)}' && {
      # Say which switch, and how: a CI run once spent 5 x 30 s here.
      for n in "${FAIL_SWITCHES[@]}"; do
        [ "$(fail_rt_sig "$n")" = "${FAIL_RTSIG[$n]}" ] ||
          echo "# routing at $n not back after $1 s: now [$(fail_rt_sig "$n")], before [${FAIL_RTSIG[$n]}]; table: $(ip -n "${FAIL_NS[$n]}" -o route show table main | tr -s '\n\t\\' '|  ')" >&2
      done
      echo -1; return 1; }
    sleep 0.2
  done
}

fail_ceiling() { # SRC DST: one flow alone, bit/s over its seconds 1..4
  local s=$1 d=$2 t0
  iperf_server "$d" 5299 "$LAB_TMP/ceiling.json"
  iperf_wait_listen "$d" 5299
  "$LAB" exec "$s" -- iperf3 -c "${FAIL_ADDR[$d]}" -p 5299 $(lab_cc) -t 5 -J > "$LAB_TMP/ceiling-c.json" 2>&1
  lab_stop "srv-$d-5299"
  t0=$(jq -r '.start.timestamp.timesecs' "$LAB_TMP/ceiling.json" 2>/dev/null)
  [ -n "$t0" ] && [ "$t0" != null ] || { echo 0; return 1; }
  iperf_window $((t0 + 1)) $((t0 + 5)) "$LAB_TMP/ceiling.json"
}

# Leaves that reach the same switches above form a pod.
fail_pod() { local u out=""; for u in ${FAIL_UPS[$1]}; do out+="${FAIL_PEER["$1 $u"]%% *},"; done; tr ',' '\n' <<< "$out" | sort | tr '\n' ,; }

fail_flows() {
  FAIL_C=$1
  FAIL_FSRC=() FAIL_FDST=() FAIL_FSPORT=() FAIL_FDPORT=() FAIL_FWANT=()
  local -a pods=() leaves=("${FAIL_LEAVES[@]}") H D U
  local -A podix=() posinpod=() podleaves=()
  local l p i j k nl=${#FAIL_LEAVES[@]} partner
  for l in "${leaves[@]}"; do
    p=$(fail_pod "$l")
    [ -n "${podix[$p]+x}" ] || { podix[$p]=${#pods[@]}; pods+=("$p"); }
    posinpod[$l]=$(wc -w <<< "${podleaves[$p]:-}"); podleaves[$p]+="$l "
  done
  # Pairs: with several pods (fat tree) pod 2m <-> 2m+1, leaf for leaf, host for
  # host, both ways; in one pod (leaf/spine) host j of leaf i sends to host j of
  # leaf i+1 or i+2 (alternating with j), so that leaves send to and hear from
  # several leaves and every pair of leaves carries both directions.
  local -a pairs=()
  local half split=1
  for l in "${leaves[@]}"; do H=(${FAIL_HOSTS[$l]}); [ ${#H[@]} -ge 4 ] && [ $((${#H[@]} % 2)) -eq 0 ] || split=0; done
  for ((i = 0; i < nl; i++)); do
    l=${leaves[$i]}; H=(${FAIL_HOSTS[$l]})
    if [ ${#pods[@]} -gt 1 ]; then
      p=${podix[$(fail_pod "$l")]}; k=$((p ^ 1)); [ $k -ge ${#pods[@]} ] && k=$((p - 1))
      local -a pl=(${podleaves[${pods[$k]}]})
      partner=${pl[${posinpod[$l]}]}
    fi
    half=${#H[@]}; [ $split -eq 1 ] && half=$((half / 2))
    for ((j = 0; j < half; j++)); do
      if [ ${#pods[@]} -le 1 ]; then
        k=1; [ "$nl" -gt 2 ] && k=$((1 + j % 2)); partner=${leaves[$(((i + k) % nl))]}
      fi
      D=(${FAIL_HOSTS[$partner]})
      # split: the first half of a leaf's hosts send, the second half receive
      [ $((j + (${#H[@]} - half))) -lt ${#D[@]} ] && pairs+=("${H[$j]} ${D[$((j + ${#D[@]} - half))]} $i $j")
    done
  done
  # Source ports: flow j of leaf i leaves by uplink (i + j/2) mod n, so that
  # ECMP puts two flows on one uplink of every leaf.
  local s d n=0 want sp
  for p in "${pairs[@]}"; do
    read -r s d i j <<< "$p"
    U=(${FAIL_UPS[${FAIL_LEAF_OF[$s]}]})
    if [ -n "${FAIL_SPREAD:-}" ]; then want=${U[$(((i + j) % ${#U[@]}))]}   # no collision at the leaves (experiments)
    else want=${U[$(((i + j / 2) % ${#U[@]}))]}; fi
    sp=$(lab_pick_sport "${FAIL_LEAF_OF[$s]}" "$s" "${FAIL_ADDR[$d]}" $((5300 + n)) "$want" $((41000 + 300 * n)))
    [ -n "$sp" ] || { echo "fail_flows: no source port sends $s -> $d by $want" >&2; return 1; }
    FAIL_FSRC+=("$s"); FAIL_FDST+=("$d"); FAIL_FSPORT+=("$sp"); FAIL_FDPORT+=($((5300 + n))); FAIL_FWANT+=("$want")
    n=$((n + 1))
  done
  FAIL_FLOWS_FILE=$LAB_TMP/fail-flows.json
  for ((i = 0; i < n; i++)); do echo "${FAIL_FSRC[$i]} ${FAIL_FDST[$i]}"; done |
    jq -R -s --argjson g "$(awk -v c="$FAIL_C" 'BEGIN{printf "%.9g", c/1e9}')" \
      '{flows: [split("\n")[] | select(length > 0) | split(" ") | {src: .[0], dst: .[1], gbps: $g}]}' > "$FAIL_FLOWS_FILE"
  fail_scenario_links
}

# Where ECMP (the kernel, now) sends each flow at its source leaf; "ok" when
# it is the uplink fail_flows chose.
fail_check_collisions() {
  local i got bad=0
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do
    got=$(lab_route_dev "${FAIL_LEAF_OF[${FAIL_FSRC[$i]}]}" "${FAIL_FSRC[$i]}" "${FAIL_ADDR[${FAIL_FDST[$i]}]}" "${FAIL_FSPORT[$i]}" "${FAIL_FDPORT[$i]}")
    [ "$got" = "${FAIL_FWANT[$i]}" ] || bad=$((bad + 1))
  done
  echo "$bad"
}

fail_scenario_links() {
  local -a U1 UD UL U2
  local l1=${FAIL_LEAVES[0]} l2=${FAIL_LEAVES[1]} ll=${FAIL_LEAVES[$((${#FAIL_LEAVES[@]} - 1))]} s1 dl sp u i
  U1=(${FAIL_UPS[$l1]})
  FAIL_ENDS[src-uplink]="$l1 ${U1[0]}"
  FAIL_ENDS[restore]=${FAIL_ENDS[src-uplink]}
  s1=${FAIL_PEER["$l1 ${U1[0]}"]%% *}
  dl=${FAIL_LEAF_OF[${FAIL_FDST[0]}]}
  UD=(${FAIL_UPS[$dl]})
  sp=""
  for u in "${UD[@]}"; do sp=${FAIL_PEER["$dl $u"]%% *}; [ "$sp" != "$s1" ] && break; done
  FAIL_ENDS[far-downlink]="$sp ${FAIL_IFTO["$sp $dl"]}"
  sp=${FAIL_PEER["$l1 ${U1[$((${#U1[@]} - 1))]}"]%% *}
  FAIL_ENDS[spine]=""
  for i in "${!FAIL_PEER[@]}"; do [ "${i%% *}" = "$sp" ] && FAIL_ENDS[spine]+="$i"$'\n'; done
  FAIL_ENDS[spine]=$(sort <<< "${FAIL_ENDS[spine]}" | sed '/^$/d')
  # two-links: the second leaf's second uplink and an uplink of the last
  # leaf to another spine, the first such that every host still reaches
  # every other (in a k=4 fat tree two leaves left with aggregation switches
  # of disjoint core groups would be cut apart: a partition, not a failure).
  U2=(${FAIL_UPS[$l2]}); UL=(${FAIL_UPS[$ll]})
  local e1="$l2 ${U2[$((1 % ${#U2[@]}))]}"
  FAIL_ENDS[two-links]=""
  for u in "${UL[@]}"; do
    [ "${FAIL_PEER["$ll $u"]%% *}" = "${FAIL_PEER["$e1"]%% *}" ] && continue
    FAIL_ENDS[two-links]="$e1"$'\n'"$ll $u"
    fail_topo_without two-links > "$LAB_TMP/fail-topo-check.json"
    "$TOPO" "$LAB_TMP/fail-topo-check.json" --check >/dev/null 2>&1 && break
  done
  i=$((${#FAIL_LEAVES[@]} - 1))
  FAIL_ENDS[flap]="$ll ${UL[$((i % ${#UL[@]}))]}"
}
declare -gA FAIL_ENDS=()
fail_ends() { printf '%s\n' "${FAIL_ENDS[$1]}"; }
fail_describe() { # "L1:S1 S2:L3" (node:interface of every end)
  fail_ends "$1" | awk 'NF == 2 { printf "%s%s:%s", (n++ ? " " : ""), $1, $2 } END { print "" }'
}

# The topology without the scenario's links, every link at one flow's
# ceiling (a link shared by TCP flows carries about C in all, not its shaped
# rate), and the flows at C each: the simulator's max-min fair throughput of
# the best of several assignments (tierflow's and greedy-first-fit's, from
# three seeds) times the offered load.
fail_topo_without() { # SCENARIO: the lab's topology without its links, every link at C
  local idx
  idx=$(case $1 in none|restore) ;; *) fail_ends "$1" | while read -r a b; do [ -n "$a" ] && echo "${FAIL_LIDX["$a $b"]}"; done ;; esac | sort -un | jq -R -s -c '[split("\n")[] | select(length > 0) | tonumber]')
  jq --argjson drop "$idx" --argjson g "$(awk -v c="$FAIL_C" 'BEGIN{printf "%.9g", c/1e9}')" \
    '.links |= ([to_entries[] | select(.key as $k | $drop | index($k) | not) | .value | .gbps = $g])' "$LAB_TOPO"
}
fail_capacity() {
  local scen=$1 best=0 from="" s t topo=$LAB_TMP/fail-topo-$1.json
  fail_topo_without "$scen" > "$topo"
  for s in 1 2 3; do
    t=$("$SIM" --topology "$topo" --flows "$FAIL_FLOWS_FILE" --algo tierflow,gff --seed "$s" 2>/dev/null |
        jq -r '.offered_gbps as $o | .algorithms | to_entries[] | "\(.value.throughput * $o * 1e9) \(.key)"')
    while read -r a b; do
      [ -n "$a" ] || continue
      awk -v a="$a" -v b="$best" 'BEGIN{exit !(a > b)}' && { best=$a; from="$b seed $s"; }
    done <<< "$t"
  done
  printf '%.0f %s\n' "$best" "$from"
}

fail_down() {
  local a b
  while read -r a b; do [ -n "$a" ] && ip -n "${FAIL_NS[$a]}" link set "$b" down; done < <(fail_ends "$1")
}
fail_up() {
  local a b line pfx rest
  local -A nodes=()
  while read -r a b; do [ -n "$a" ] && { ip -n "${FAIL_NS[$a]}" link set "$b" up; nodes[$a]=1; }; done < <(fail_ends "$1")
  [ "$FAIL_ROUTING" = static ] || return 0
  for a in "${!nodes[@]}"; do
    while IFS= read -r line; do
      line=$(sed 's/\\/ /g; s/\t/ /g; s/ linkdown//g; s/ dead//g' <<< "$line")
      read -r pfx rest <<< "$line"
      [ -n "$pfx" ] && ip -n "${FAIL_NS[$a]}" route replace $pfx proto static $rest 2>/dev/null
    done <<< "${FAIL_STATIC[$a]}"
  done
  return 0
}

# The controller modes of fail_run: tierflow (tierflowd with the netlink
# backend, FAIL_STEER=rules: its pins are policy rules into tables
# FAIL_TABLE_MIN..MAX) and bgp (tierflowd with the bgp backend driving an
# ExaBGP speaker peered with every switch over the lab's management network,
# no netlink; FAIL_STEER=bgp: its pins are /32 routes the switches' FRR
# learned from the controller's session, proto bgp in their main table).
FAIL_STEER=rules
fail_ctl() { [ "$1" = tierflow ] || [ "$1" = bgp ]; }
fail_tf_start() {
  if [ "$1" = bgp ]; then
    if [ -z "${FAIL_BGP_TOPO:-}" ]; then # once per lab: the switches peer with the controller's address
      lab_bgp_peer 64999 || echo "fail_tf_start: lab_bgp_peer failed" >&2
      FAIL_BGP_TOPO=$LAB_TMP/topology-bgp.json; lab_bgp_topology "$FAIL_BGP_TOPO"
    fi
    FAIL_STEER=bgp FAIL_SPEAKER=$LAB_TMP/speaker
    TF_BACKEND=bgp TF_TOPOLOGY=$FAIL_BGP_TOPO TF_CTL_ARGS="${TF_CTL_ARGS:-} --set backend_options.bgp_dir=$FAIL_SPEAKER \
      --set backend_options.bgp_local_address=$(lab_bgp_controller) --set backend_options.bgp_local_as=64999" \
      tf_start "$FAIL_URL" "$FAIL_TOKEN" "$FAIL_GBPS"
  else
    FAIL_STEER=rules
    tf_start "$FAIL_URL" "$FAIL_TOKEN" "$FAIL_GBPS"
  fi
}
# tierflowd withdraws and stops its speaker on exit (--withdraw-on-exit); a
# speaker left behind (tierflowd killed) is stopped by its PID file.
fail_tf_stop() {
  tf_stop
  [ "$FAIL_STEER" = bgp ] && lab_bgp_speaker_stop "$FAIL_SPEAKER"
  FAIL_STEER=rules
}
# The host routes (/32) NODE holds from BGP, one "NODE ADDR" a line: those
# the controller announced (FRR installs them with proto bgp; the fabric's
# own routes are the leaves' subnets).
fail_bgp_steered() {
  ip -n "${FAIL_NS[$1]}" -4 -o route show proto bgp 2>/dev/null | awk -v n="$1" '$1 ~ /^[0-9.]+$/ { print n, $1 }'
}

# Follows every flow through the switches with `ip route get` (policy rules
# included, so tierflow's pins count) from its source leaf until it reaches
# its destination host. Dead: an interface on the way is not UP (admin
# down, or its peer is), no route, or a loop. FAIL_TRACE has one line a flow.
# The switches' links and (bgp) host routes are read once, every switch at
# once, then every flow is walked at once, one `ip route get` a hop: one
# after the other, with an awk and an `ip route show` a hop, a check took
# 2-5 s on the leaf/spine beside the fat tree's run (xtrace on), past the
# 1.5 s the hold leaves it, and every scenario after it started that late.
fail_trace() {
  local -A st=() steered=()
  local d=$LAB_TMP/trace n i ifn s line path
  local -a pids=()
  rm -rf "$d"; mkdir -p "$d"
  for n in "${FAIL_SWITCHES[@]}"; do
    { ip -n "${FAIL_NS[$n]}" -br link > "$d/link.$n" 2>/dev/null
      [ "$FAIL_STEER" != bgp ] || fail_bgp_steered "$n" > "$d/bgp.$n"; } & pids+=($!)
  done
  wait "${pids[@]}"   # these, not the lab's iperf3 and daemons
  for n in "${FAIL_SWITCHES[@]}"; do
    while read -r ifn s _; do st["$n ${ifn%@*}"]=$s; done < "$d/link.$n"
    [ -f "$d/bgp.$n" ] && while read -r ifn s; do steered["$ifn $s"]=1; done < "$d/bgp.$n"
  done
  pids=()
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do fail_trace_flow "$i" > "$d/flow.$i" & pids+=($!); done
  wait "${pids[@]}"
  FAIL_DEAD=0 FAIL_DEAD_TF=0 FAIL_TRACE=""
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do
    IFS= read -r line < "$d/flow.$i" || line="${FAIL_FSRC[$i]}->${FAIL_FDST[$i]} ? DEAD (not traced)"
    path=${line#* }; path=${path%% *}   # a "*" marks a hop steered by tierflow
    if [[ "$line" == *" DEAD ("* ]]; then
      FAIL_DEAD=$((FAIL_DEAD + 1)); [[ "$path" == *"*"* ]] && FAIL_DEAD_TF=$((FAIL_DEAD_TF + 1))
    fi
    FAIL_TRACE+="$line"$'\n'
  done
}
# Flow I's walk (fail_trace's st and steered in scope): its FAIL_TRACE line,
# "SRC->DST PATH", then " DEAD (why)" when it does not arrive.
fail_trace_flow() {
  local i=$1 dev node iif dst src hops out path dead via tbl prev
  src=${FAIL_FSRC[$i]}; dst=${FAIL_FDST[$i]}
  node=${FAIL_LEAF_OF[$src]}; iif=${FAIL_IFTO["$node $src"]}
  path=$node dead="" hops=0 prev=""
  while :; do
    hops=$((hops + 1)); [ $hops -gt 8 ] && { dead=loop; break; }
    out=$(ip -n "${FAIL_NS[$node]}" -o route get "${FAIL_ADDR[$dst]}" from "${FAIL_ADDR[$src]}" iif "$iif" \
            ipproto tcp sport "${FAIL_FSPORT[$i]}" dport "${FAIL_FDPORT[$i]}" 2>&1)
    dev=- tbl=main
    [[ " $out " =~ [[:space:]]dev[[:space:]]+([^[:space:]]+) ]] && dev=${BASH_REMATCH[1]}
    [[ " $out " =~ [[:space:]]table[[:space:]]+([^[:space:]]+) ]] && tbl=${BASH_REMATCH[1]}
    [ "$dev" != - ] || { dead="no route at $node; ${prev:-?} routes it by $(ip -n "${FAIL_NS[${prev:-$node}]}" -o route show match "${FAIL_ADDR[$dst]}" 2>/dev/null | grep -v '^default' | head -1 | tr -s ' \t\\' ' ')"; break; }
    if { [[ "$tbl" =~ ^[0-9]+$ ]] && [ "$tbl" -ge "$FAIL_TABLE_MIN" ] && [ "$tbl" -le "$FAIL_TABLE_MAX" ]; } ||
       [ -n "${steered["$node ${FAIL_ADDR[$dst]}"]:-}" ]; then path+="*"; fi
    [ "${st["$node $dev"]:-UNKNOWN}" = UP ] || { dead="$node:$dev ${st["$node $dev"]:-missing}"; break; }
    via=${FAIL_PEER["$node $dev"]:-}
    [ -n "$via" ] || { dead="$node:$dev leads nowhere"; break; }
    prev=$node; read -r node iif <<< "$via"
    path+=">$node"
    [ "$node" = "$dst" ] && break
    [ "${FAIL_TIER[$node]}" = host ] && { dead="reached $node"; break; }
  done
  echo "$src->$dst $path${dead:+ DEAD ($dead)}"
}

# Max-min fair rates (progressive filling) of the flows on the paths
# fail_trace found, every link direction carrying C, every flow asking C;
# dead flows get nothing. What the placement in force could carry, to set
# beside what TCP made of it.
fail_placement() {
  printf '%s' "$FAIL_TRACE" | awk -v c="$FAIL_C" '
    { split($1, sd, "->"); p = $2; gsub(/\*/, "", p); n = split(p, hop, ">")
      f = NR; dead[f] = ($3 == "DEAD"); ne[f] = 0
      prev = sd[1]; for (k = 1; k <= n; k++) { e = prev ">" hop[k]; ed[f, ++ne[f]] = e; cap[e] = c; prev = hop[k] }
      nf = f }
    END {
      for (f = 1; f <= nf; f++) { rate[f] = 0; act[f] = !dead[f] }
      for (;;) {
        delete cnt; any = 0
        for (f = 1; f <= nf; f++) if (act[f]) { any = 1; for (k = 1; k <= ne[f]; k++) cnt[ed[f, k]]++ }
        if (!any) break
        inc = -1
        for (e in cnt) { x = cap[e] / cnt[e]; if (inc < 0 || x < inc) inc = x }
        for (f = 1; f <= nf; f++) if (act[f] && (inc < 0 || c - rate[f] < inc)) inc = c - rate[f]
        for (f = 1; f <= nf; f++) if (act[f]) { rate[f] += inc; for (k = 1; k <= ne[f]; k++) cap[ed[f, k]] -= inc }
        for (f = 1; f <= nf; f++) if (act[f]) {
          if (rate[f] >= c * 0.999999) act[f] = 0
          for (k = 1; k <= ne[f]; k++) if (cap[ed[f, k]] <= c * 1e-6) act[f] = 0 }
      }
      for (f = 1; f <= nf; f++) t += rate[f]
      printf "%.0f\n", t }'
}

fail_tf_view() { # URL SCENARIO: fresh fat flows whose path (tierflow's view) crosses a down link
  local pairs
  pairs=$(fail_ends "$2" | while read -r a b; do [ -n "$a" ] && echo "$a ${FAIL_PEER["$a $b"]%% *}"; done |
          jq -R -s -c '[split("\n")[] | select(length > 0) | split(" ")]')
  curl -s --max-time 3 "$1/api/v1/flows?fat=true&limit=10000" | jq --argjson dl "$pairs" \
    '[.flows[]? | select(.stale | not) | .path as $p
      | select([range(0; ($p | length) - 1) as $k | [$p[$k], $p[$k + 1]] as $e
                | $dl[] | select(. == $e or . == [$e[1], $e[0]])] | length > 0)] | length' 2>/dev/null || echo unknown
}
fail_moves() { # URL T1 T2
  curl -s --max-time 3 "$1/api/v1/events?limit=1024" | jq --argjson a "$2" --argjson b "$3" \
    '[.events[]? | select(.kind == "rebalance" and .ts >= $a and .ts < $b) | .moved] | add // 0' 2>/dev/null || echo unknown
}

fail_events() { # URL T1 T2
  curl -s --max-time 3 "$1/api/v1/events?limit=1024" | jq -r --argjson a "$2" --argjson b "$3" \
    '[.events[]? | select(.ts >= $a and .ts < $b)
      | "+\(.ts - $a | . * 10 | floor / 10) \(.kind)\(if .kind == "rebalance" then " \(.moved)" else "" end)"] | join("; ")' \
    2>/dev/null || echo unknown
}

# One traffic run: servers, (tierflow,) clients; FAIL_WARMUP seconds, the
# baseline ("none") over FAIL_BASE seconds, then every scenario in turn.
# Per scenario: FAIL_R["MODE SCEN t0|hold|dead|dead_tf|view|moves|trace|routing"],
# and after the run FAIL_R[... after|rec]; aggregates from the receivers' JSON.
fail_run() {
  local mode=$1 i s t0 te k e down_src=0 secs=${FAIL_FLOW_SECS:-900}
  shift
  local -a files=()
  rm -f "$LAB_TMP"/fail-"$mode"-srv*.json
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do
    # 0.5-s reports: a 1-s bin then takes less of the seconds around it
    lab_bg "srv-${FAIL_FDST[$i]}-${FAIL_FDPORT[$i]}" "$LAB" exec "${FAIL_FDST[$i]}" -- \
      iperf3 -s -1 -J -i 0.5 -p "${FAIL_FDPORT[$i]}" --logfile "$LAB_TMP/fail-$mode-srv$i.json"
    files+=("$LAB_TMP/fail-$mode-srv$i.json")
  done
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do iperf_wait_listen "${FAIL_FDST[$i]}" "${FAIL_FDPORT[$i]}"; done
  if fail_ctl "$mode"; then fail_tf_start "$mode"; sleep 1.5; fi
  [ "$mode" = oracle ] && fail_oracle_install none
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do
    IPERF_INTERVAL=0.5 iperf_client "${FAIL_FSRC[$i]}" "${FAIL_ADDR[${FAIL_FDST[$i]}]}" "${FAIL_FDPORT[$i]}" "${FAIL_FSPORT[$i]}" \
      "$secs" "$LAB_TMP/fail-$mode-cli$i.json"
  done
  sleep "$FAIL_WARMUP"
  fail_align; FAIL_R["$mode none t0"]=$FAIL_T; FAIL_R["$mode none hold"]=$FAIL_BASE
  lab_sleep_until "$(awk -v t="$FAIL_T" -v h="$FAIL_BASE" 'BEGIN{printf "%.3f", t + h - 1.5}')"
  fail_trace; FAIL_R["$mode none trace"]=$FAIL_TRACE; FAIL_R["$mode none placement"]=$(fail_placement)
  FAIL_R["$mode none dead"]=$FAIL_DEAD; FAIL_R["$mode none dead_tf"]=$FAIL_DEAD_TF
  lab_sleep_until $((FAIL_R["$mode none t0"] + FAIL_BASE))   # the window ends at t0 + FAIL_BASE - 1
  for s in "$@"; do
    case $s in
      flap)
        fail_align; t0=$FAIL_T; te=$t0
        for k in 0 1 2 3 4; do
          lab_sleep_until $((t0 + 2 * k)); fail_down flap
          [ "$mode" = oracle ] && [ $k -eq 0 ] && fail_oracle_install flap
          if [ $k -eq 4 ]; then # the check, inside the last down phase
            sleep 0.2; fail_trace
            FAIL_R["$mode $s dead"]=$FAIL_DEAD; FAIL_R["$mode $s dead_tf"]=$FAIL_DEAD_TF; FAIL_R["$mode $s trace"]=$FAIL_TRACE
            FAIL_R["$mode $s placement"]=$(fail_placement)
          fi
          lab_sleep_until $((t0 + 2 * k + 1)); fail_up flap
        done
        FAIL_R["$mode flap up"]=$((t0 + 9)) ;;
      restore)
        if [ $down_src -eq 0 ]; then fail_down restore; sleep "$FAIL_HOLD"; fi
        fail_align; te=$FAIL_T
        fail_up restore; down_src=0
        [ "$mode" = oracle ] && fail_oracle_install none
        FAIL_R["$mode restore routing"]=$(fail_wait_routing "$FAIL_ROUTING_WAIT") ;;
      *)
        fail_align; te=$FAIL_T
        fail_down "$s"
        [ "$mode" = oracle ] && fail_oracle_install "$s"
        [ "$s" = src-uplink ] && down_src=1 ;;
    esac
    FAIL_R["$mode $s t0"]=$te
    local hold=$FAIL_HOLD; [ "$s" = restore ] && hold=$FAIL_RESTORE_HOLD; [ "$s" = flap ] && hold=$((9 + FAIL_HOLD))
    FAIL_R["$mode $s hold"]=$hold
    # The data-plane check runs inside the hold, with the failure in place.
    lab_sleep_until "$(awk -v t="$te" -v h="$hold" 'BEGIN{printf "%.3f", t + h - 1.5}')"
    if [ "$s" != flap ]; then
      FAIL_R["$mode $s check_at"]=$(fail_now)
      fail_trace
      FAIL_R["$mode $s check_end"]=$(fail_now)
      FAIL_R["$mode $s dead"]=$FAIL_DEAD; FAIL_R["$mode $s dead_tf"]=$FAIL_DEAD_TF; FAIL_R["$mode $s trace"]=$FAIL_TRACE
      FAIL_R["$mode $s placement"]=$(fail_placement)
    fi
    if fail_ctl "$mode"; then
      case $s in flap|restore) FAIL_R["$mode $s view"]=n/a ;; *) FAIL_R["$mode $s view"]=$(fail_tf_view "$FAIL_URL" "$s") ;; esac
      curl -s --max-time 3 "$FAIL_URL/api/v1/routes" > "$LAB_TMP/fail-routes-$s.json" 2>/dev/null
    fi
    lab_sleep_until $((te + hold))
    if fail_ctl "$mode"; then
      FAIL_R["$mode $s moves"]=$(fail_moves "$FAIL_URL" "$te" $((te + hold)))
      FAIL_R["$mode $s events"]=$(fail_events "$FAIL_URL" "$te" $((te + hold)))
    fi
    case $s in
      restore) ;;
      flap) [ "$mode" = oracle ] && fail_oracle_install none ;;
      src-uplink) [ "$(fail_next "$s" "$@")" = restore ] || { fail_up "$s"; down_src=0; [ "$mode" = oracle ] && fail_oracle_install none; } ;;
      *) fail_up "$s"; [ "$mode" = oracle ] && fail_oracle_install none ;;
    esac
    if [ $down_src -eq 0 ]; then
      [ "$s" = restore ] || FAIL_R["$mode $s routing"]=$(fail_wait_routing "$FAIL_ROUTING_WAIT")
      # The next scenario starts from a settled fabric; after the last one
      # nothing is measured (4 s a run, 8 of make test's long pole).
      [ -z "$(fail_next "$s" "$@")" ] || sleep "$FAIL_SETTLE"
    fi
  done
  FAIL_R["$mode end"]=$(date +%s)
  if fail_ctl "$mode"; then
    kill -0 "${LAB_PIDS[tierflowd]:-0}" 2>/dev/null && FAIL_R["$mode alive"]=1 || FAIL_R["$mode alive"]=0
    # Say why in the output: a bench 55 run once found it gone, and its log
    # went with the lab's folder.
    [ "${FAIL_R["$mode alive"]}" = 1 ] || { echo "# $mode: tierflowd is not running at the end of the run; its log ends:"
                                             tail -n 15 "$LAB_TMP/tierflowd.log" 2>/dev/null | sed 's/^/#   /'; } >&2
    FAIL_R["$mode probes"]=0
    for k in "${!LAB_PIDS[@]}"; do [[ "$k" == probe-* ]] && kill -0 "${LAB_PIDS[$k]}" 2>/dev/null && FAIL_R["$mode probes"]=$((${FAIL_R["$mode probes"]} + 1)); done
  fi
  fail_ctl "$mode" && FAIL_R["$mode all moves"]=$(curl -s --max-time 3 "$FAIL_URL/api/v1/status" | jq -r '.rebalance.moves // "unknown"' 2>/dev/null)
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do lab_stop "cli-${FAIL_FSRC[$i]}-${FAIL_FSPORT[$i]}"; done
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do lab_end "srv-${FAIL_FDST[$i]}-${FAIL_FDPORT[$i]}"; done
  fail_ctl "$mode" && { cp "$LAB_TMP/tierflowd.log" "$LAB_TMP/tierflowd-$mode.log" 2>/dev/null; fail_tf_stop; }
  [ "$mode" = oracle ] && fail_oracle_install clear
  local iv=$LAB_TMP/fail-$mode-intervals.txt
  _iperf_intervals "${files[@]}" > "$iv"   # read the JSON once; windows as iperf_window computes them
  FAIL_R["$mode all bins"]=$(iv_bins "$iv" "${FAIL_R["$mode none t0"]}" "${FAIL_R["$mode end"]}" | awk '{printf "%.1f ", $2/1e6}')
  # Windows end a second before the links come back (t0 + hold), so that no
  # bin holds any of the restore; "none" ends a second before the first failure.
  for s in none "$@"; do
    t0=${FAIL_R["$mode $s t0"]}; k=${FAIL_R["$mode $s hold"]}
    case $s in flap|restore) e=$((t0 + k)) ;; *) e=$((t0 + k - 1)) ;; esac
    FAIL_R["$mode $s wend"]=$e
    if [ "$s" = none ]; then FAIL_R["$mode $s after"]=$(iv_window "$iv" "$t0" "$e")
    else FAIL_R["$mode $s after"]=$(iv_window "$iv" $((t0 + 3)) "$e"); fi
    FAIL_R["$mode $s bins"]=$(iv_bins "$iv" "$t0" "$e" | awk '{printf "%.1f ", $2/1e6}')
    [ "$s" = flap ] && FAIL_R["$mode flap during"]=$(iv_window "$iv" $((t0 + 3)) "${FAIL_R["$mode flap up"]}") \
      && FAIL_R["$mode flap after_up"]=$(iv_window "$iv" "${FAIL_R["$mode flap up"]}" "$e")
    FAIL_R["$mode $s rec"]=$(fail_rec "$iv" "$t0" "$e" "${FAIL_CAP[$s]}")
    # Against this machine's ceiling too, when the oracle ran first.
    [ "$mode" != oracle ] && [ -n "${FAIL_R["oracle $s after"]:-}" ] &&
      FAIL_R["$mode $s rec_oracle"]=$(fail_rec "$iv" "$t0" "$e" "${FAIL_R["oracle $s after"]}")
  done
}
# Recovered at bin k: bin k at >= 90% of REF (bit/s) and the bins from k to
# the end of the window at >= 90% on average (one lucky bin does not count);
# k in seconds from T0 (the failure), -1 when never in the window.
fail_rec() { # INTERVALS T0 END REF
  iv_bins "$1" "$2" "$3" | awk -v c="$4" '
    { b[NR] = $2 } END { for (k = 1; k <= NR; k++) { if (b[k] < 0.9 * c) continue
      m = 0; for (j = k; j <= NR; j++) m += b[j]; if (m / (NR - k + 1) >= 0.9 * c) { print k; exit } }
      print -1 }'
}
# FAIL_CAP for the baseline and every scenario given.
fail_capacities() {
  local s k
  for s in none "$@"; do
    case $s in none|restore) [ -n "${FAIL_CAP[none]:-}" ] && { FAIL_CAP[$s]=${FAIL_CAP[none]}; FAIL_R["cap_from $s"]=${FAIL_R["cap_from none"]}; continue; } ;; esac
    read -r FAIL_CAP[$s] k < <(fail_capacity "$s"); FAIL_R["cap_from $s"]=$k
  done
}
# The oracle per scenario (docs/lab.md "The oracle run"): the assignment
# behind FAIL_CAP (the simulator's best algorithm and seed on the surviving
# topology) as every switch's tierflow rules (tests/tools/oracle_batch), in
# $LAB_TMP/oracle-SCEN. fail_run oracle installs it the moment the failure
# happens and the whole fabric's when the links come back: no probes, no
# reaction time -- the ceiling any controller has on this machine.
fail_oracle_prepare() { # SCEN...
  local s k algo seed tool i dir
  tool=$(tf_bin oracle_batch)
  [ -x "$tool" ] || { echo "fail_oracle_prepare: tests/tools/oracle_batch is not built" >&2; return 1; }
  for ((i = 0; i < ${#FAIL_FSRC[@]}; i++)); do
    echo "${FAIL_ADDR[${FAIL_FSRC[$i]}]} ${FAIL_ADDR[${FAIL_FDST[$i]}]} ${FAIL_FSPORT[$i]} ${FAIL_FDPORT[$i]}"
  done > "$LAB_TMP/oracle-flows.txt"
  for s in none "$@"; do
    k=$s; [ "$s" = restore ] && k=none
    dir=$LAB_TMP/oracle-$k
    [ -d "$dir" ] && continue
    read -r algo _ seed <<< "${FAIL_R["cap_from $k"]}"
    mkdir -p "$dir"
    "$SIM" --topology "$LAB_TMP/fail-topo-$k.json" --flows "$FAIL_FLOWS_FILE" --algo "$algo" --seed "$seed" \
      --emit-assignment > "$dir/sim.json" &&
      "$tool" "$LAB_TMP/fail-topo-$k.json" "$dir/sim.json" "$algo" "$LAB_TMP/oracle-flows.txt" "$dir" >/dev/null ||
      { echo "fail_oracle_prepare: $k: no oracle rules" >&2; return 1; }
  done
}
# Every switch at once (ip -batch replaces tierflow's whole state there).
fail_oracle_install() { # SCEN | clear
  local f sw ext=install dir=$LAB_TMP/oracle-$1 rc=0
  local -a pids=()
  [ "$1" = clear ] && { dir=$LAB_TMP/oracle-none; ext=clear; }
  [ "$1" = restore ] && dir=$LAB_TMP/oracle-none
  for f in "$dir"/*."$ext"; do
    [ -e "$f" ] || continue
    sw=$(basename "$f" ".$ext")
    ip -n "${FAIL_NS[$sw]}" -batch "$f" & pids+=($!)
  done
  for f in "${pids[@]}"; do wait "$f" || rc=1; done
  [ $rc -eq 0 ] || echo "fail_oracle_install: $1: a switch refused its rules" >&2
  return $rc
}
fail_next() { local want=$1 s prev=""; shift; for s in "$@"; do [ "$prev" = "$want" ] && { echo "$s"; return; }; prev=$s; done; }
