#!/usr/bin/env bash
# tierflowd benchmark (optimised build). Part 2: REST throughput with wrk
# against /api/v1/status and /api/v1/flows holding 10,000 flows while a
# rebalance runs every second, baseline: a static file from the same daemon.
# Part 3: ingest, reports/s for 1,000 probes x 100 fat flows. Targets are
# reported (met/missed), never asserted. Part 1 (netlink) is the nl helper's.
set -u
D=$TF_OPT_BIN/tierflowd; G=$TF_TOOLS/report_gen
command -v wrk >/dev/null || { echo "wrk missing (scripts/deps.sh bench)"; exit 0; }
W=$(mktemp -d); trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$W"' EXIT
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
U=http://127.0.0.1:$PORT
mkdir "$W/web"; head -c 2048 /dev/urandom | base64 > "$W/web/static.txt"
# 50 leaves x 20 hosts = 1,000 host probes; 4 spines.
"$G" --topology leafspine:leaves=50,spines=4,hosts=20,gbps=100 --emit-topology "$W/topo.json"
"$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend none --interval 1 --web-dir "$W/web" \
     --set limits.max_flows_per_report=10000 --log-level warning & PID=$!
for i in $(seq 50); do curl -sf $U/api/v1/status >/dev/null && break; sleep 0.1; done
# 10,000 flows: 1,000 host probes x 10 flows.
"$G" --topology "$W/topo.json" --probes hosts --flows 10 --batch 50 --post $U/api/v1/reports >/dev/null
echo "flows in state: $(curl -s "$U/api/v1/flows?limit=0" | jq .total)"
run() { # name url
  out=$(wrk -t2 -c32 -d5s --latency "$2" 2>&1)
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  ms=$(awk -v v="$p99" 'BEGIN{ if (v ~ /us$/) {sub(/us/,"",v); print v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v); print v+0} else {sub(/s/,"",v); print v*1000} }')
  met=$(awk -v r="$rps" -v m="$ms" 'BEGIN{print (r>=10000 && m<=10) ? "target met" : "target missed"}')
  printf '%-34s %10s req/s  p99 %8s  (%s)\n' "$1" "$rps" "$p99" "$met"
}
echo "== part 2: REST (wrk -t2 -c32 -d5s; targets >= 10000 req/s, p99 <= 10 ms)"
run "baseline static file" "$U/static.txt"
run "/api/v1/status" "$U/api/v1/status"
run "/api/v1/flows?fat=true&limit=100" "$U/api/v1/flows?fat=true&limit=100"
run "/api/v1/flows (limit 1000)" "$U/api/v1/flows"
echo "== part 3: ingest, 1,000 probes x 100 fat flows (batches of 10 reports)"
"$G" --topology "$W/topo.json" --probes hosts --flows 100 --batch 10 --post $U/api/v1/reports
