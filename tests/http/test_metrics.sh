#!/usr/bin/env bash
# /metrics and /api/v1/history of a real tierflowd (sanitizer build) on
# loopback: promtool's lint passes on every mode of metrics.host_links and
# on the clos3 24K fabric, whose scrape stays under 2 MB; known reports give
# known values (bytes as _total counters, measured vs estimated, the
# imbalance index, per-probe freshness); the Grafana dashboard in contrib/
# uses only metric names a scrape has; the history ring holds what the
# rounds did. Ports 18410-18413.
# timeout: 120
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; G=$TF_TOOLS/report_gen
[ -x "$D" ] && [ -x "$G" ] || { t_skip all "needs $D and $G (make san tools)"; t_done; }
command -v promtool >/dev/null || { t_fail "promtool is installed (scripts/deps.sh test installs prometheus)"; t_done; }
. "$TF_ROOT/tests/lib/daemon.sh"
cd "$TF_ROOT"
echo secret-token > "$W/token"; chmod 600 "$W/token"
A="Authorization: Bearer secret-token"; J="Content-Type: application/json"
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"

start() { # PORT ARGS...: a daemon on PORT, its PID in PID
  local p=$1; shift
  "$D" --topology "${TOPO:-$W/topo.json}" --listen 127.0.0.1:$p --backend none --token-file "$W/token" "$@" \
       2>>"$W/log" & PID=$!
  wait_up http://127.0.0.1:$p || { t_fail "tierflowd on port $p starts" "$(tail -5 "$W/log")"; t_done; }
}
# promtool check metrics prints nothing and exits 0 when there is no lint.
lint() { promtool check metrics < "$1" > "$W/lint" 2>&1 && [ ! -s "$W/lint" ] || { cat "$W/lint" | head -5 | sed 's/^/# /'; false; }; }
# The value of the one sample whose name and labels are exactly $2.
val() { awk -v k="$2" '$1==k {print $2}' "$1"; }
names() { cat "$@" | grep -v '^#' | sed -E 's/[{ ].*//' | sort -u; }
# Stops the daemon: SIGTERM, exit 0 (the sanitizers found nothing).
stopped() { kill "$PID"; wait "$PID"; local rc=$?; PID=; t_eq "$1: tierflowd exits cleanly (sanitizers quiet)" 0 "$rc"; }

# Two reports from L1, 1 s each: L1 -> S1 at 97 Gb/s (F1 and F2, fat), L1 ->
# S2 at 30 Gb/s (F3, fat), the other uplinks idle, H1's link at 1 Gb/s.
# Nothing reports S1 -> L2, which the flows F1 and F2 cross: estimated.
report() { # TS
  jq -nc --argjson ts "$1" '{probe: "L1", ts: $ts, interval_s: 1,
    links: [{if: "S1", tx_bps: 9.7e10, qdisc_backlog: 125000000}, {if: "S2", tx_bps: 3e10}, {if: "S3", tx_bps: 0}, {if: "S4", tx_bps: 0},
            {if: "H1", tx_bps: 1e9}],
    flows: [{src: "10.0.1.1", dst: "10.0.2.1", proto: 17, sport: 49152, dport: 4791, if: "S1", bps: 4.8e10, fat: true},
            {src: "10.0.1.2", dst: "10.0.2.2", proto: 17, sport: 49153, dport: 4791, if: "S1", bps: 4.9e10, fat: true},
            {src: "10.0.1.3", dst: "10.0.2.3", proto: 6, sport: 40001, dport: 5201, if: "S2", bps: 3e10, fat: true}]}'
}
# Two looks an interval apart, as a probe sends them: the second ends
# tierflowd's warm-up (docs/policy.md), so rounds may move flows.
post_reports() { # PORT
  local dt
  for dt in 0 1; do
    [ "$dt" = 0 ] || sleep 1
    code -X POST -H "$J" -H "$A" --data-binary "$(report "$(date +%s.%N)")" http://127.0.0.1:$1/api/v1/reports >/dev/null
  done
}

# No rounds: none on the clock, and none reacting 0.1 s after a report shows
# a contended direction (L1 -> S1 at 0.97), which would move F2 off S1 before
# a slow scrape.
NOROUNDS="--interval 3600 --set thresholds.react_window=0"

# ---- default configuration, no rounds ---------------------------------------
start 18410 $NOROUNDS
post_reports 18410
curl -s http://127.0.0.1:18410/metrics > "$W/m1"
curl -s http://127.0.0.1:18410/api/v1/status > "$W/status"
t_check "2x4: promtool check metrics, no lint" lint "$W/m1"
echo "# scrape 2x4, default: $(wc -c < "$W/m1") bytes, $(grep -vc '^#' "$W/m1") samples"
t_eq "build_info carries the status' version" 1 "$(val "$W/m1" "tierflow_build_info{version=\"$(jq -r .version "$W/status")\"}")"
t_check "bytes are a counter named _total" grep -qx '# TYPE tierflow_link_transmit_bytes_total counter' "$W/m1"
t_check "no bits-per-second gauge any more" bash -c "! grep -q bits_per_second '$W/m1'"
t_eq "L1 -> S1 bytes: 2 reports x 97 Gb/s x 1 s / 8" 24250000000 "$(val "$W/m1" 'tierflow_link_transmit_bytes_total{from="L1",to="S1"}')"
t_eq "L1 -> S1 is measured, 0.97" 0.97 "$(val "$W/m1" 'tierflow_link_utilization_ratio{from="L1",to="S1",source="measured"}')"
t_eq "S1 -> L2 is estimated from its flows, 0.97" 0.97 "$(val "$W/m1" 'tierflow_link_utilization_ratio{from="S1",to="L2",source="estimated"}')"
t_eq "an estimated direction has no bytes" 0 "$(val "$W/m1" 'tierflow_link_transmit_bytes_total{from="S1",to="L2"}')"
t_eq "L1 -> S1 queue: 125 MB at 100 Gb/s is 10 ms" 0.01 "$(val "$W/m1" 'tierflow_link_queue_delay_seconds{from="L1",to="S1"}')"
t_check "no queue series where no report gave a backlog" bash -c "! grep -qE '^tierflow_link_queue_delay_seconds\{from=\"L1\",to=\"S2\"' '$W/m1'"
t_check "host links are off by default" bash -c "! grep -qE 'from=\"H[0-9]|to=\"H[0-9]|peer=\"host\"' '$W/m1'"
t_eq "max link utilisation" 0.97 "$(val "$W/m1" tierflow_max_link_utilization_ratio)"
# Fat flows per switch direction: 2 on L1>S1 and S1>L2, 1 on L1>S2 and
# S2>L2, none on the other 12: mean 6/16; the busiest (L1>S1) has 2.
t_eq "imbalance index: 2 / (6/16)" 5.33333 "$(val "$W/m1" tierflow_imbalance_ratio)"
ts=$(val "$W/m1" 'tierflow_probe_last_report_timestamp_seconds{probe="L1"}')
t_check "L1's last report time is now (within 30 s): $ts" awk -v t="$ts" -v n="$(date +%s)" 'BEGIN{exit !(t > n-30 && t < n+30)}'
t_check "no probe time for probes that never reported" bash -c "! grep -q 'last_report_timestamp_seconds{probe=\"L2\"}' '$W/m1'"
stopped default

# ---- aggregated: host links per leaf, switch links per switch (bound 0);
# ---- rounds every 0.3 s, so that the history fills ---------------------
start 18411 --interval 0.3 --set thresholds.stale_intervals=100 --set metrics.host_links=aggregate --set metrics.max_link_series=0
post_reports 18411
sleep 1.5
curl -s http://127.0.0.1:18411/metrics > "$W/m2"
t_check "aggregate: promtool check metrics, no lint" lint "$W/m2"
echo "# scrape 2x4, aggregate and max_link_series=0: $(wc -c < "$W/m2") bytes, $(grep -vc '^#' "$W/m2") samples"
t_check "aggregate: no per-direction link series" bash -c "! grep -q '^tierflow_link_utilization_ratio{' '$W/m2'"
t_eq "aggregate: L1's uplinks, measured, max 0.97" 0.97 "$(val "$W/m2" 'tierflow_switch_links_max_utilization_ratio{switch="L1",peer="spine",dir="tx",source="measured"}')"
t_eq "aggregate: L1's uplink bytes (97 + 30 Gb/s, 2 reports)" 31750000000 "$(val "$W/m2" 'tierflow_switch_links_transmit_bytes_total{switch="L1",peer="spine",dir="tx",source="measured"}')"
t_eq "aggregate: L1's host links folded in, 0.01" 0.01 "$(val "$W/m2" 'tierflow_switch_links_max_utilization_ratio{switch="L1",peer="host",dir="tx",source="measured"}')"
curl -s http://127.0.0.1:18411/api/v1/history > "$W/h"
t_check "history: 10 s buckets over an hour" jqf '.step_s == 10 and .window_s == 3600 and (.buckets|length) >= 1' "$W/h"
t_check "history: the buckets saw 0.97 and the moves of the rounds" \
  jqf '([.buckets[].max_util]|max) >= 0.97 and ([.buckets[].moves]|add) >= 1' "$W/h"
t_check "history: the moving round is annotated and is the last action" \
  jqf '([.annotations[].kind]|index("rebalance")) and .last_action.kind == "rebalance" and .last_action.moved >= 1' "$W/h"
t_check "history: moves agree with /metrics' counter" \
  bash -c "[ \"\$(jq '[.buckets[].moves]|add' '$W/h')\" -le \"\$(curl -s http://127.0.0.1:18411/metrics | awk '\$1==\"tierflow_rebalance_moves_total\"{print \$2}')\" ]"
stopped aggregate

start 18412 $NOROUNDS --set metrics.host_links=all
post_reports 18412
curl -s http://127.0.0.1:18412/metrics > "$W/m3"
t_check "all: promtool check metrics, no lint" lint "$W/m3"
t_eq "all: L1 -> H1 has its own series" 0.01 "$(val "$W/m3" 'tierflow_link_utilization_ratio{from="L1",to="H1",source="measured"}')"
stopped all

# ---- every metric the Grafana dashboard uses exists ----------------------
G_JSON=contrib/grafana/tierflow.json
t_check "Grafana dashboard is JSON with panels and a Prometheus input" \
  jqf '(.panels|length) >= 8 and .__inputs[0].pluginId == "prometheus"' "$G_JSON"
names "$W/m1" "$W/m2" "$W/m3" > "$W/have"
missing=$(jq -r '[.. | .expr? // empty] | .[]' "$G_JSON" | grep -oE 'tierflow_[a-z_]+' | sort -u | comm -23 - "$W/have" | tr '\n' ' ')
t_eq "every metric the dashboard queries is in a scrape" "" "$missing"
# Its queries parse as PromQL: promtool checks them as recording rules
# (Grafana's $__rate_interval read as 1m).
jq -r '"groups:\n- name: grafana\n  rules:", ([.. | .expr? // empty] | to_entries[] |
  "  - record: tierflow_grafana_q\(.key)\n    expr: \(.value | gsub("\\$__rate_interval"; "1m") | tojson)")' \
  "$G_JSON" > "$W/rules.yml"
t_check "every query of the dashboard is valid PromQL (promtool check rules)" \
  bash -c "promtool check rules '$W/rules.yml' > '$W/rules.out' 2>&1 || { sed 's/^/# /' '$W/rules.out' | head -8; false; }"

# ---- Meta's 24K (clos3, 49,664 links), default configuration -------------
# Every leaf (1,536) reports its links and 4 fat flows, so that the scrape
# carries measured and estimated series and a timestamp per probe.
C3='clos3:pods=8,racks=192,hosts=16,oversub=7'
TOPO=$C3 start 18413 $NOROUNDS
curl -s http://127.0.0.1:18413/metrics > "$W/m4"
echo "# scrape clos3 24K, default, no report yet: $(wc -c < "$W/m4") bytes, $(grep -vc '^#' "$W/m4") samples"
t_check "24K: every leaf's report accepted" "$G" --topology "$C3" --probes leaves --flows 4 --batch 64 \
  --post http://127.0.0.1:18413/api/v1/reports --token-file "$W/token"
curl -s http://127.0.0.1:18413/metrics > "$W/m4"
size=$(wc -c < "$W/m4")
echo "# scrape clos3 24K, default, 1536 leaves reporting: $size bytes, $(grep -vc '^#' "$W/m4") samples"
t_check "24K: scrape under 2 MB ($size bytes)" [ "$size" -lt 2000000 ]
t_check "24K: promtool check metrics, no lint" lint "$W/m4"
t_check "24K: past the bound, switch links are per switch, measured ones too" \
  grep -q '^tierflow_switch_links_max_utilization_ratio{switch="L1",peer="spine",dir="tx",source="measured"}' "$W/m4"
t_eq "24K: a last-report time per leaf" 1536 "$(grep -c '^tierflow_probe_last_report_timestamp_seconds{probe="L' "$W/m4")"
stopped 24K
t_done
