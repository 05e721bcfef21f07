#!/usr/bin/env bash
# Gray failures through a real tierflowd (sanitizer build, backend none,
# loopback), fed probe reports as the probes would send them (docs/health.md):
#   - two 15-Mbit/s fat flows from two leaves losing ~1.6% through S1 -> L3 (50 Mbit/s links), clean
#     flows elsewhere: S1 -> L3 is named (link_suspect), and only it; with
#     thresholds.drain it is drained (link_drained, /status links.unhealthy,
#     /topology up false with down_reason "drained", tierflow_link_health 1);
#   - the same loss while L1's and L2's uplink qdiscs drop (congestion):
#     nothing is named;
#   - POST /api/v1/links/{a}/{b}/drain and /undrain: 401 without the token,
#     404 for a direction the topology lacks, 409 for a repeat, the operator's
#     drain holds over health rounds, undrain lifts an automatic drain too.
# timeout: 60
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; TOPO=${TF_OPT_BIN:-$TF_BIN}/tierflow-topo
for b in "$D" "$TOPO"; do [ -x "$b" ] || { t_skip all "needs $b (make san)"; t_done; }; done
. "$(dirname "$0")/../lib/daemon.sh"
"$TOPO" leafspine:leaves=3,spines=3,hosts=2,gbps=0.05 --out "$W/topo.json"
printf 'gray-secret' > "$W/token"; chmod 600 "$W/token"
AUTH=(-H "Authorization: Bearer gray-secret")

# One report of probe $1 (a leaf): flows "SRC DST SPINE SPORT RETX" on
# stdin, its uplinks' qdisc drops $2. Hosts: H1 H2 on L1, H3 H4 on L2, H5 H6 on L3.
report() {
  local probe=$1 qd=$2 src dst sp port retx flows="" sep=""
  while read -r src dst sp port retx; do
    flows+="$sep{\"src\":\"$src\",\"dst\":\"$dst\",\"proto\":6,\"sport\":$port,\"dport\":5201,\"if\":\"$sp\",\"bytes\":100000000,\"pkts\":70000,\"bps\":1.5e7,\"fat\":true,\"retx_pkts\":$retx}"
    sep=,
  done
  printf '{"probe":"%s","interval_s":0.5,"links":[{"if":"S1","tx_bps":3e7,"qdisc_drops":%s},{"if":"S2","tx_bps":3e7,"qdisc_drops":%s},{"if":"S3","tx_bps":3e7}],"flows":[%s]}' \
    "$probe" "$qd" "$qd" "$flows"
}
post() { curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" -H 'Content-Type: application/json' --data-binary @- "$U/api/v1/reports"; }
# Rounds of reports every 0.25 s for $1 s; $2: the uplinks' qdisc drops.
feed() {
  local end=$(( $(date +%s%N) + $1 * 1000000000 )) c
  while [ "$(date +%s%N)" -lt "$end" ]; do
    c=$(report L1 "$2" <<'EOF'
10.0.1.1 10.0.3.1 S1 40001 10
10.0.1.2 10.0.2.1 S1 40002 0
EOF
); c+=" "$(report L2 "$2" <<'EOF'
10.0.2.1 10.0.3.2 S1 40003 9
10.0.2.2 10.0.1.1 S2 40004 0
EOF
); c+=" "$(report L3 0 <<'EOF'
10.0.3.1 10.0.1.2 S3 40005 0
10.0.3.2 10.0.2.2 S2 40006 0
EOF
)
    for r in $c; do echo "$r" | post >/dev/null; done
    sleep 0.25
  done
}
suspects() { curl -s "$U/api/v1/events" | jq -r '[.events[] | select(.kind == "link_suspect") | .message | split(":")[0]] | join(",")'; }

start() {
  PORT=$(port); U=http://127.0.0.1:$PORT
  "$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend none --interval 0.5 --token-file "$W/token" \
       --set ingest.timestamps=ignore --set thresholds.drain=true "$@" 2>"$W/dlog" & PID=$!
  wait_up "$U" || t_fail "tierflowd up" "$(tail -3 "$W/dlog")"
}

# ---- congestion: the same loss with the uplinks' queues dropping -------------
start
feed 3 25
t_eq "loss explained by the queues' own drops names no link" "" "$(suspects)"
stop

# ---- a gray direction --------------------------------------------------------
start
t0=$(date +%s.%N)
feed 3 0
t_eq "S1 -> L3 is named, and only it" "S1 -> L3" "$(suspects)"
curl -s "$U/api/v1/events" > "$W/ev"
t_check "... drained (thresholds.drain)" jq -e '[.events[] | select(.kind == "link_drained")] | length == 1' "$W/ev"
t_check "... with its two lossy flows as evidence" jq -e '.events[] | select(.kind == "link_suspect") | .message | test("2 lossy, 0 clean flows")' "$W/ev"
curl -s "$U/api/v1/status" > "$W/st"
t_check "/status lists it unhealthy (drain auto)" jq -e '.links.unhealthy == [.links.unhealthy[0]] and .links.unhealthy[0].from == "S1" and .links.unhealthy[0].to == "L3" and .links.unhealthy[0].drain == "auto"' "$W/st"
curl -s "$U/api/v1/topology" > "$W/topo"
t_check "/topology: S1 -> L3 not up, down_reason drained" jq -e '.links[] | .. | objects | select(.from? == "S1" and .to? == "L3" and has("up")) | .up == false and .down_reason == "drained" and .health.value == 1' "$W/topo"
t_eq "tierflow_link_health{from=S1,to=L3} 1" 1 "$(curl -s "$U/metrics" | awk '$1 == "tierflow_link_health{from=\"S1\",to=\"L3\"}" {print $2}')"

# ---- the operator's drain ------------------------------------------------------
t_eq "drain without the token: 401" 401 "$(code -X POST "$U/api/v1/links/L2/S2/drain")"
t_eq "drain of a direction the topology lacks: 404" 404 "$(code -X POST "${AUTH[@]}" "$U/api/v1/links/H1/S2/drain")"
t_eq "drain of an unknown node: 404" 404 "$(code -X POST "${AUTH[@]}" "$U/api/v1/links/L2/S9/drain")"
t_eq "GET on drain: 405" 405 "$(code "$U/api/v1/links/L2/S2/drain")"
t_eq "drain L2 -> S2: 200" 200 "$(code -X POST "${AUTH[@]}" "$U/api/v1/links/L2/S2/drain")"
t_check "... answers drain manual" jq -e '.from == "L2" and .to == "S2" and .drain == "manual"' "$W/body"
t_eq "drain it again: 409" 409 "$(code -X POST "${AUTH[@]}" "$U/api/v1/links/L2/S2/drain")"
sleep 1.5   # health rounds with no evidence on it
curl -s "$U/api/v1/topology" > "$W/topo"
t_check "the operator's drain holds over health rounds" jq -e '.links[] | .. | objects | select(.from? == "L2" and .to? == "S2" and has("up")) | .up == false and .health.drain == "manual"' "$W/topo"
t_check "the drain is logged with the caller" grep -q "link L2 -> S2 drained by the operator (127.0.0.1)" "$W/dlog"
t_eq "undrain L2 -> S2: 200" 200 "$(code -X POST "${AUTH[@]}" "$U/api/v1/links/L2/S2/undrain")"
t_eq "undrain it again: 409" 409 "$(code -X POST "${AUTH[@]}" "$U/api/v1/links/L2/S2/undrain")"
t_eq "undrain of health's drain (S1 -> L3): 200" 200 "$(code -X POST "${AUTH[@]}" "$U/api/v1/links/S1/L3/undrain")"
curl -s "$U/api/v1/topology" > "$W/topo"
t_check "... S1 -> L3 up again" jq -e '.links[] | .. | objects | select(.from? == "S1" and .to? == "L3" and has("up")) | .up == true' "$W/topo"
stop
t_done
