# Traffic patterns and the ECMP-then-tierflow experiment on a lab fabric;
# source after lib.sh, with the lab up ($LAB_TOPO).
#
#   lab_pattern NAME SEED        "SRC DST" host pairs, one flow each, for the Hedera
#                                patterns stride:I, staggered:EDGE_P,POD_P, random, randbij
#   tf_start URL TOKEN GBPS      tierflowd (netlink backend) + a probe on every
#                                leaf's and spine's uplinks, which also reports the
#                                counters of every switch's downlinks (--counters: their
#                                queues, as a fabric's switch counters would; off with
#                                TF_PROBE_COUNTERS=0); needs CTL and PROBE set
#                                (TF_CTL_ARGS: more tierflowd options, e.g. --log-level debug;
#                                TF_BACKEND: none for a dry run, default netlink;
#                                TF_PROBE_FILTER: the probes' --filter;
#                                TF_TOPOLOGY: tierflowd's topology, default $LAB_TOPO)
#   tf_probes URL TOKEN GBPS     the probes alone (they run all along in a fabric);
#                                a later tf_start starts only tierflowd
#   tf_warm URL [SECONDS]        waits until tierflowd's warm-up is over (status
#                                rebalance.warming_up false: an interval after its first
#                                report), at most SECONDS (default 10); 1 if not
#   tf_stop                      stop them (tierflowd withdraws its routes); first adds
#                                tierflowd's gray-failure false positives to GRAY_FP
#                                (tests/lib/gray.sh: suites assert gray_no_false_positives)
#   e2e_run PAIRS_FILE ECMP_S SETTLE_S TF_S
#        runs the pairs as iperf3 flows; ECMP for ECMP_S seconds (the probes
#        running already), then tierflowd (tf_start) and, after SETTLE_S, TF_S
#        seconds of measurement. Sets
#        E2E_ECMP and E2E_TF (aggregate goodput, bit/s, receivers' JSON) and
#        E2E_REACT (seconds from tierflowd's start to the first 1-s bin at
#        >= 90% of E2E_TF). With ECMP_S=0 tierflow runs from the start.
#        E2E_REACT_S: the same from tierflowd's start (or, with ECMP_S=0, from
#        the flows' start) in 0.2-s bins (set IPERF_INTERVAL=0.2 for that
#        resolution); E2E_MOVES: flows moved in all (tierflowd's counter);
#        E2E_MOVES_MAX: the most moves of any one flow (its "moves" in
#        GET /api/v1/flows at the window's end; -1 when unread).
#        E2E_CPU: cores tierflowd and the probes used (tf_cpu).
#        TF_INTERVAL: the probes' and tierflowd's --interval (default 1).
#   e2e_oracle PAIRS_FILE SETTLE_S MEAS_S [probes]
#        the oracle run (docs/lab.md): the simulator's assignment for the same
#        flows (tierflow-sim --algo tierflow, each flow at its NIC's rate)
#        installed as static rules on every switch before the flows start
#        (tests/tools/oracle_batch), no probes and no tierflowd; after SETTLE_S,
#        MEAS_S seconds of measurement. Sets E2E_ORACLE (bit/s); removes the
#        rules afterwards. With "probes", the probes run as in e2e_run and
#        tierflowd computes its rounds but applies nothing (--backend none):
#        the cost of the telemetry alone.
#   e2e_ecmp PAIRS_FILE SETTLE_S MEAS_S
#        the same flows under the fabric's ECMP alone, measured over the same
#        window as the oracle (the same flows carry less 17 s in than 2 s in,
#        whoever places them): E2E_ECMP_LATE (bit/s).
#   e2e_run also sets E2E_EST: the demand estimate's error by tier
#   (_e2e_est_error). Each also gives the senders' TCP retransmits per second over its window:
#   E2E_ECMP_RETX, E2E_ORACLE_RETX, E2E_TF_RETX (iperf_retx).
. "$TF_ROOT/tests/lib/gray.sh"
lab_pod_of_leaf() { # leaves that reach the same spines form a pod
  jq -r --arg l "$1" '(reduce .nodes[] as $x ({}; .[$x.name] = $x.tier)) as $t
    | [.links[] | if .a == $l and $t[.b] == "spine" then .b elif .b == $l and $t[.a] == "spine" then .a else empty end] | sort | join(",")' "$LAB_TOPO"
}

lab_pattern() {
  local name=$1 seed=${2:-1} h
  local -a H E P
  mapfile -t H < <(lab_hosts)
  for h in "${H[@]}"; do E+=("$(lab_leaf_of "$h")"); done
  for ((i = 0; i < ${#H[@]}; i++)); do P+=("$(lab_pod_of_leaf "${E[$i]}")"); done
  for ((i = 0; i < ${#H[@]}; i++)); do printf '%s %s %s\n' "${H[$i]}" "${E[$i]}" "${P[$i]}"; done |
  awk -v pat="$name" -v seed="$seed" '
    { h[NR-1] = $1; e[NR-1] = $2; p[NR-1] = $3; n = NR }
    function pick_where(i, kind,   c, j, k, cand) { c = 0
      for (j = 0; j < n; j++) if (j != i && ((kind == "edge" && e[j] == e[i]) || kind == "any" ||
          (kind == "pod" && p[j] == p[i] && e[j] != e[i]) || (kind == "other" && p[j] != p[i]))) cand[c++] = j
      if (c == 0) return -1
      return cand[int(rand() * c)] }
    END {
      srand(seed)
      split(pat, a, ":"); kind = a[1]; split(a[2], arg, ",")
      if (kind == "stride") { s = arg[1] + 0; for (i = 0; i < n; i++) print h[i], h[(i + s) % n]; exit }
      if (kind == "random") { for (i = 0; i < n; i++) { do j = int(rand() * n); while (j == i); print h[i], h[j] } exit }
      if (kind == "randbij") {
        do { for (i = 0; i < n; i++) q[i] = i
             for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = q[i]; q[i] = q[j]; q[j] = t }
             ok = 1; for (i = 0; i < n; i++) if (q[i] == i) ok = 0 } while (!ok)
        for (i = 0; i < n; i++) print h[i], h[q[i]]; exit }
      if (kind == "staggered") { ep = (arg[1] == "" ? 0.5 : arg[1]); pp = (arg[2] == "" ? 0.3 : arg[2])
        for (i = 0; i < n; i++) { r = rand(); k = (r < ep ? "edge" : (r < ep + pp ? "pod" : "other"))
          # a leaf/spine is one pod: no "other" there, any other host instead
          j = pick_where(i, k); if (j < 0) j = pick_where(i, "other"); if (j < 0) j = pick_where(i, "any")
          print h[i], h[j] } exit }
      print "lab_pattern: unknown pattern " pat > "/dev/stderr"; exit 1 }'
}

declare -gA TF_PROBE_IFS=() TF_PROBE_DOWN=()
TF_PROBE_DOWN_OF=""
tf_start() {
  local url=$1 token=$2 gbps=$3 mgmt port n
  TF_URL=$url
  mgmt=${url#http://}; port=${mgmt##*:}; mgmt=${mgmt%:*}
  _tf_probe_map   # before tierflowd: the first call's jq would delay the probes
  lab_bg tierflowd "$CTL" --topology "${TF_TOPOLOGY:-$LAB_TOPO}" --backend "${TF_BACKEND:-netlink}" --listen "$mgmt:$port" \
    --token-file "$token" --interval "${TF_INTERVAL:-1}" --withdraw-on-exit ${TF_CTL_ARGS:-} >>"$LAB_TMP/tierflowd.log" 2>&1
  for n in "${!LAB_PIDS[@]}"; do [[ "$n" == probe-* ]] && return 0; done   # tf_probes ran already
  tf_probes "$url" "$token" "$gbps"
}
tf_warm() {
  local url=$1 n i
  n=$(( ${2:-10} * 10 ))
  for ((i = 0; i < n; i++)); do
    [ "$(curl -s --max-time 1 "$url/api/v1/status" | jq -r '.rebalance.warming_up' 2>/dev/null)" = false ] && return 0
    sleep 0.1
  done
  echo "tf_warm: tierflowd at $url still warming up after ${2:-10} s" >&2
  return 1
}
# Each switch's probe interfaces, once per lab (jq is slow next to the
# flows): TF_PROBE_IFS (a caller may set it first), TF_PROBE_DOWN; and the
# lab's namespaces (LAB_NS, lib.sh).
_tf_probe_map() {
  local node
  _lab_ns_load
  if [ ${#TF_PROBE_IFS[@]} -eq 0 ]; then
    for node in $(jq -r '.nodes[] | select(.tier == "leaf" or .tier == "spine") | .name' "$LAB_TOPO"); do
      TF_PROBE_IFS[$node]=$(lab_uplinks "$node" | tr '\n' ' ')
    done
  fi
  if [ "$TF_PROBE_DOWN_OF" != "$LAB_TOPO" ]; then
    TF_PROBE_DOWN=(); TF_PROBE_DOWN_OF=$LAB_TOPO
    for node in $(jq -r '.nodes[] | select(.tier != "host") | .name' "$LAB_TOPO"); do
      TF_PROBE_DOWN[$node]=$(lab_downlinks "$node" | tr '\n' ' ')
    done
  fi
}
# The probes alone, as a fabric's run all along: until tierflowd listens at
# URL their reports are refused and dropped after their retries (a report
# older than tierflowd's staleness window is refused with 422 if one comes
# through late). A later tf_start starts tierflowd only.
tf_probes() {
  local url=$1 token=$2 gbps=$3 node a u
  _tf_probe_map
  TF_STARTED=$(date +%s.%N)
  for node in $(printf '%s\n' "${!TF_PROBE_IFS[@]}" "${!TF_PROBE_DOWN[@]}" | sort -u); do
    a=(); for u in ${TF_PROBE_IFS[$node]:-}; do a+=(-i "$u"); done
    # A port captured already (a suite's probes on every port) has its counters.
    if [ "${TF_PROBE_COUNTERS:-1}" = 1 ]; then
      for u in ${TF_PROBE_DOWN[$node]:-}; do [[ " ${TF_PROBE_IFS[$node]:-} " == *" $u "* ]] || a+=(--counters "$u"); done
    fi
    [ ${#a[@]} -gt 0 ] || continue
    [ -n "${LAB_NS[$node]:-}" ] || { echo "tf_probes: no node '$node' in $LAB_TOPO" >&2; return 1; }
    # ip netns exec itself, as iperf_client does, not `lab exec`: 20 copies
    # of that script starting at once, beside 16 flows on two cores, started
    # the probes 2.2-4.6 s after tierflowd (0.1 s each when idle), and each
    # round of a run that starts tierflowd under load waited for them.
    lab_bg "probe-$node" ip netns exec "${LAB_NS[$node]}" "$PROBE" "${a[@]}" --node "$node" --controller "$url" \
      --token-file "$token" --interval "${TF_INTERVAL:-1}" --link-gbps "$gbps" ${TF_PROBE_FILTER:+--filter "$TF_PROBE_FILTER"} ${TF_PROBE_ARGS:-} >>"$LAB_TMP/probe-$node.log" 2>&1
  done
}
# CPU tierflowd and the probes used since the probes started, in cores
# (CPU seconds over wall seconds), for the cost of shorter intervals.
tf_cpu() {
  local n pid t=0
  for n in "${!LAB_PIDS[@]}"; do
    [[ "$n" == probe-* || "$n" == tierflowd ]] || continue
    pid=${LAB_PIDS[$n]}
    [ -r "/proc/$pid/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
  done
  awk -v t="$t" -v hz="$(getconf CLK_TCK)" -v s="$TF_STARTED" -v n="$(date +%s.%N)" 'BEGIN{printf "%.2f", t / hz / (n - s)}'
}
tf_stop() {
  local n
  [ -n "${TF_URL:-}" ] && gray_count_false_positives "$TF_URL"
  for n in "${!LAB_PIDS[@]}"; do [[ "$n" == probe-* ]] && lab_stop "$n"; done
  lab_stop tierflowd 20   # --withdraw-on-exit: through ExaBGP with the bgp backend
}

# The flows of a pairs file: flow i runs from port 42000+i to port 5400+i.
_e2e_flows() {
  local s d
  srcs=() dsts=() addrs=() files=()
  while read -r s d; do srcs+=("$s"); dsts+=("$d"); addrs+=("$(lab_addr "$d")"); done < "$1"
}
_e2e_servers() {
  local i
  rm -f "$LAB_TMP"/run-srv*.json "$LAB_TMP"/run-cli*.json "$LAB_TMP"/run-cli*.json.start
  for ((i = 0; i < ${#srcs[@]}; i++)); do
    iperf_server "${dsts[$i]}" $((5400 + i)) "$LAB_TMP/run-srv$i.json"; files+=("$LAB_TMP/run-srv$i.json")
  done
  for ((i = 0; i < ${#srcs[@]}; i++)); do iperf_wait_listen "${dsts[$i]}" $((5400 + i)); done
}
# The flows start together, as a collective's do: launching 16 clients one
# after the other spread their starts over about a second, which the
# reaction time then counted (a second round for the late ones).
_e2e_clients() { # SECONDS; bases: "EPOCH SERVER_JSON" of each flow, for iperf_reach
  local i at
  bases=()
  at=$(awk -v n="$(date +%s.%N)" -v k="${#srcs[@]}" 'BEGIN{printf "%.3f", n + 0.3 + 0.08 * k}')
  for ((i = 0; i < ${#srcs[@]}; i++)); do
    bases+=("$at" "${files[$i]}")
    IPERF_START_AT=$at iperf_client "${srcs[$i]}" "${addrs[$i]}" $((5400 + i)) $((42000 + i)) "$1" "$LAB_TMP/run-cli$i.json"
  done
  # Launched past the instant: the late ones start on their own, and the
  # reaction counts their spread again. Say so rather than measure it silently.
  awk -v a="$at" -v n="$(date +%s.%N)" 'BEGIN{exit !(n > a)}' &&
    echo "_e2e_clients: the last of ${#srcs[@]} clients launched after their start instant (machine busy?)" >&2
  # The callers' sleeps (settle, windows) count from the flows' start.
  lab_sleep_until "$at"
  return 0
}
# When the clients' iperf3 actually started (iperf_client's JSON.start)
# against their common instant: E2E_LAG, the latest lag (s), and E2E_NLAG,
# how many started over 0.25 s after it (a 0.2-s bin late; 16 clients
# waking at once on two busy cores read 0.12-0.22 s, the date that writes
# JSON.start included). A flow that starts late meets the others' queues
# full and its reaction counts the delay; said, not hidden.
_e2e_started() { # WHAT
  local i at=${bases[0]}
  read -r E2E_LAG E2E_NLAG < <(for ((i = 0; i < ${#srcs[@]}; i++)); do cat "$LAB_TMP/run-cli$i.json.start" 2>/dev/null || echo -1; done |
    awk -v a="$at" '{ d = ($1 < 0 ? 99 : $1 - a); if (d > m) m = d; n += (d > 0.25) } END { printf "%.2f %d\n", m, n }')
  [ "$E2E_NLAG" -gt 0 ] && echo "$1: $E2E_NLAG of ${#srcs[@]} clients started over 0.25 s after their instant (the last $E2E_LAG s)" >&2
  return 0
}
# The clients run out their -t (e2e_run's 10-s margin past the windows,
# less what starting tierflowd and the probes took). Stopped once the
# windows were over (SIGTERM), twice, the figures went wrong: first 2 of 16
# flows of the next run failed to connect (a TIME_WAIT on their fixed
# source port, which iperf_client now drops), then, with that fixed, the
# windows' ends: the servers wrote their last interval twice (counted once
# now, _IPERF_SUMS), and a window's end, a whole second (date +%s) placed
# against intervals placed from a whole-second start, can fall up to a
# second after a stopped flow's last interval and so count a second of
# nothing. Running out the -t is what test_fattree_stride pays for it
# (61-73 s against 55-58 stopped early, docs/HACKING.md).
_e2e_reap() {
  local i
  for ((i = 0; i < ${#srcs[@]}; i++)); do wait "${LAB_PIDS[cli-${srcs[$i]}-$((42000 + i))]}" 2>/dev/null; unset "LAB_PIDS[cli-${srcs[$i]}-$((42000 + i))]"; done
  for ((i = 0; i < ${#srcs[@]}; i++)); do lab_stop "srv-${dsts[$i]}-$((5400 + i))"; done
  _e2e_lost
}
# The flows whose client failed (iperf_failed): E2E_LOST, how many, and
# E2E_LOST_WHY, "SRC->DST: why" of each; said on stderr as well. A client
# that never connected counts as 0 in every figure of the run.
_e2e_lost() {
  local i why lost=()
  for ((i = 0; i < ${#srcs[@]}; i++)); do
    why=$(iperf_failed "$LAB_TMP/run-cli$i.json")
    [ -z "$why" ] || lost+=("${srcs[$i]}->${dsts[$i]}: ${why#"$LAB_TMP/run-cli$i.json: "}")
  done
  E2E_LOST=${#lost[@]}
  E2E_LOST_WHY=$(printf '%s; ' "${lost[@]}"); E2E_LOST_WHY=${E2E_LOST_WHY%; }
  [ "$E2E_LOST" -eq 0 ] || echo "${E2E_WHAT:-tierflow}: $E2E_LOST of ${#srcs[@]} flows failed: $E2E_LOST_WHY" >&2
  return 0
}

# The pairs under whatever placement is in force (none: the fabric's
# ECMP), no controller; after SETTLE_S, MEAS_S seconds of measurement:
# E2E_STATIC (bit/s) and E2E_STATIC_REACH (seconds to 90% of it, 0.2-s bins
# with IPERF_INTERVAL=0.2). PROBES non-empty: probes and a dry-run tierflowd.
_e2e_static() {
  local settle_s=$1 meas_s=$2 probes=$3 te1 te2
  _e2e_servers
  [ -n "$probes" ] && TF_BACKEND=none tf_start "$E2E_URL" "$E2E_TOKEN" "$E2E_GBPS"
  _e2e_clients $((settle_s + meas_s + 4))
  sleep "$settle_s"; _e2e_started "${E2E_WHAT:-static}"; te1=$(date +%s); sleep "$meas_s"; te2=$(date +%s)
  [ -n "$probes" ] && tf_stop
  _e2e_reap
  E2E_STATIC=$(iperf_window "$te1" "$te2" "${files[@]}")
  E2E_STATIC_RETX=$(iperf_retx "$te1" "$te2" "$LAB_TMP"/run-cli*.json)
  E2E_STATIC_LOST=$E2E_LOST
  E2E_STATIC_REACH=$(iperf_reach "$(awk -v a="$E2E_STATIC" 'BEGIN{print 0.9 * a}')" "${bases[0]}" "$te2" 0.2 "${bases[@]}")
}

e2e_oracle() {
  local pairs=$1 settle_s=$2 meas_s=$3 probes=${4:-} i f sw tool sim dir rc=0
  local -a files=() srcs=() dsts=() addrs=() bases=()
  tool=$(tf_bin oracle_batch)
  sim=$(tf_bin tierflow-sim)
  _e2e_flows "$pairs"
  dir="$LAB_TMP/oracle"; rm -rf "$dir"; mkdir -p "$dir"
  jq -Rn '{flows: [inputs | split(" ") | {src: .[0], dst: .[1]}]}' < "$pairs" > "$dir/flows.json"
  "$sim" --topology "$LAB_TOPO" --flows "$dir/flows.json" --algo tierflow --emit-assignment > "$dir/sim.json" || rc=1
  for ((i = 0; i < ${#srcs[@]}; i++)); do
    echo "$(lab_addr "${srcs[$i]}") ${addrs[$i]} $((42000 + i)) $((5400 + i))"
  done > "$dir/flows.txt"
  [ $rc -eq 0 ] && "$tool" "$LAB_TOPO" "$dir/sim.json" tierflow "$dir/flows.txt" "$dir" >/dev/null || rc=1
  for f in "$dir"/*.install; do
    [ -e "$f" ] || continue
    sw=$(basename "$f" .install)
    "$LAB" exec "$sw" -- ip -batch "$f" || rc=1
  done
  [ $rc -eq 0 ] || { echo "e2e_oracle: could not install the oracle's rules" >&2; E2E_ORACLE=0 E2E_ORACLE_LOST=0; return 1; }
  E2E_WHAT=oracle _e2e_static "$settle_s" "$meas_s" "$probes"
  for f in "$dir"/*.clear; do [ -e "$f" ] || continue; "$LAB" exec "$(basename "$f" .clear)" -- ip -batch "$f" || rc=1; done
  E2E_ORACLE=$E2E_STATIC E2E_ORACLE_REACH=$E2E_STATIC_REACH E2E_ORACLE_RETX=$E2E_STATIC_RETX E2E_ORACLE_LOST=$E2E_STATIC_LOST
  return $rc
}

e2e_ecmp() {
  local pairs=$1 settle_s=$2 meas_s=$3
  local -a files=() srcs=() dsts=() addrs=() bases=()
  _e2e_flows "$pairs"
  E2E_WHAT=ecmp _e2e_static "$settle_s" "$meas_s" ""
  E2E_ECMP_LATE=$E2E_STATIC E2E_ECMP_RETX=$E2E_STATIC_RETX E2E_ECMP_LOST=$E2E_STATIC_LOST
}

# The demand estimate's error: each fat flow's rate in tierflowd's view at
# T (GET /api/v1/flows, saved in est-flows.json; the interval that closed at
# the last whole second, probes' intervals being epoch-aligned) against its
# receiver's goodput over that second; median |relative error| by the tier of
# the switch whose report the controller used ("tier: median% (flows)").
# Wire bytes against payload: about +3.6% (1500-byte frames, 1448 of payload).
_e2e_est_error() {
  local t=$1 i rate
  [ -s "$LAB_TMP/est-flows.json" ] || { echo "none"; return; }
  for ((i = 0; i < ${#srcs[@]}; i++)); do
    rate=$(iperf_window $((t - 1)) "$t" "${files[$i]}")
    jq -r --argjson sp $((42000 + i)) --argjson dp $((5400 + i)) --argjson g "$rate" --slurpfile topo "$LAB_TOPO" '
      ($topo[0].nodes | map({(.name): .tier}) | add) as $tier
      | .flows[] | select(.sport == $sp and .dport == $dp and $g > 0)
      | "\($tier[.probe] // "?") \((.bps - $g) / $g | fabs)"' "$LAB_TMP/est-flows.json" 2>/dev/null
  done | sort -k1,1 -k2g | awk '
    { e[$1, ++n[$1]] = $2 }
    END { for (k in n) printf "%s: %.1f%% (%d) ", k, 100 * e[k, int((n[k] + 1) / 2)], n[k] }'
  echo
}

e2e_run() {
  local pairs=$1 ecmp_s=$2 settle_s=$3 tf_s=$4 i=0 total t tstart tctl tm1 tm2 te1 te2 t0 tsnap
  local -a files=() srcs=() dsts=() addrs=() bases=()
  _e2e_flows "$pairs"
  total=$((ecmp_s + settle_s + tf_s + 10))   # margin: starting 16 flows and the probes takes time
  _e2e_servers
  # tierflowd starting on a fabric whose probes run all along, as in a
  # fabric (and a restart): started with it under the flows' load, the
  # probes' first reports came 0.5-1.9 s after its start, and its first
  # rounds saw some switches' reports and not others'.
  [ "$ecmp_s" -gt 0 ] && tf_probes "$E2E_URL" "$E2E_TOKEN" "$E2E_GBPS"
  # With ECMP_S 0 the flows start onto a tierflowd past its warm-up (its
  # first rounds make no choice move: docs/policy.md, "Warm-up"), as in a
  # fabric whose controller has run for a while.
  [ "$ecmp_s" -eq 0 ] && { tf_start "$E2E_URL" "$E2E_TOKEN" "$E2E_GBPS"; sleep 1; tf_warm "$E2E_URL" || true; }
  _e2e_clients "$total"
  tstart=$(date +%s)
  if [ "$ecmp_s" -gt 0 ]; then
    sleep "$ecmp_s"; tctl=$(date +%s); tm1=$((tstart + 2)); tm2=$tctl
    t0=$(date +%s.%N)
    tf_start "$E2E_URL" "$E2E_TOKEN" "$E2E_GBPS"
  else
    tctl=$tstart; t0=${bases[0]}
  fi
  sleep "$settle_s"; _e2e_started "${E2E_WHAT:-tierflow}"; te1=$(date +%s)
  sleep $((tf_s / 2))
  # 0.4 s into a second: the reports of the interval that closed at its
  # start are in
  tsnap=$(date +%s.%N); sleep "$(awk -v t="$tsnap" 'BEGIN{printf "%.3f", 1.4 - (t - int(t))}')"; tsnap=$(date +%s)
  curl -s --max-time 2 "$E2E_URL/api/v1/flows?fat=true&limit=1000" > "$LAB_TMP/est-flows.json" || true
  sleep $((tf_s - tf_s / 2 - 1)); te2=$(date +%s)
  [ "$te2" -gt $((tstart + total - 2)) ] && { echo "e2e_run: measurement ran past the flows; clamped" >&2; te2=$((tstart + total - 2)); }
  E2E_MOVES=$(curl -s --max-time 2 "$E2E_URL/metrics" | awk '/^tierflow_rebalance_moves_total /{print $2}')
  E2E_MOVES_MAX=$(curl -s --max-time 2 "$E2E_URL/api/v1/flows?limit=1000" | jq '[.flows[].moves] | max // 0' 2>/dev/null)
  [[ "$E2E_MOVES_MAX" =~ ^[0-9]+$ ]] || E2E_MOVES_MAX=-1
  E2E_CPU=$(tf_cpu)
  tf_stop
  _e2e_reap
  E2E_TF_LOST=$E2E_LOST
  local iv=$LAB_TMP/e2e-intervals.txt
  _iperf_intervals "${files[@]}" > "$iv"
  E2E_ECMP=0; [ "$ecmp_s" -gt 0 ] && E2E_ECMP=$(iv_window "$iv" "$tm1" "$tm2")
  E2E_TF=$(iv_window "$iv" "$te1" "$te2")
  E2E_TF_RETX=$(iperf_retx "$te1" "$te2" "$LAB_TMP"/run-cli*.json)
  E2E_REACT=-1
  while read -r t b; do
    if awk -v b="$b" -v f="$E2E_TF" 'BEGIN{exit !(b >= 0.9 * f)}'; then E2E_REACT=$((t + 1 - tctl)); break; fi
  done < <(iv_bins "$iv" "$tctl" "$te2")
  E2E_REACT_S=$(iperf_reach "$(awk -v a="$E2E_TF" 'BEGIN{print 0.9 * a}')" "$t0" "$te2" 0.2 "${bases[@]}")
  E2E_EST=$(_e2e_est_error "$tsnap")
  E2E_BINS=$(iv_bins "$iv" "$tstart" "$te2" | awk -v t0="$tstart" '{printf "%d:%.1f ", $1 - t0, $2/1e6}')
}
