#!/usr/bin/env bash
# The probe's own reports are within the controller's bounds, and a refused
# report is dropped, not retried (issue 14, item 6), against a real tierflowd
# and report_sink (sanitizer builds) on loopback:
#   tierflow-probe -r FILE --node L1 --controller URL is accepted: the file's
#   pseudo-interface is its base name without extension, cut to 15 bytes;
#   a --node longer than 31 bytes, or with a space, is refused at start;
#   a report the controller refuses (400, unknown node) is sent once, the
#   controller's message is logged and the report dropped, and the
#   controller logs it too, with the probe, the sender and the reason
#   (issue 12, item 6); a 5xx is retried;
#   a capture's report carries the capture's time: replayed to a controller
#   that checks report times (the default) it is refused as stale (422),
#   each side saying why; with ingest.timestamps ignore it is taken;
#   --controller twice sends every report to both, five times is refused.
# timeout: 120
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; P=$TF_BIN/tierflow-probe; G=$TF_TOOLS/report_gen; S=$TF_TOOLS/report_sink
CAP="$TF_SHARED/pcaps/p4aqm_ecn_org1.pcap"
for b in "$D" "$P" "$G" "$S"; do [ -x "$b" ] || { t_skip all "needs $b (make san tools)"; t_done; }; done
[ -r "$CAP" ] || { t_skip all "needs $CAP"; t_done; }
W=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$W"' EXIT
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
PORT=$(port); U=http://127.0.0.1:$PORT
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"
# Captures replayed: their reports are as old as the capture, so this
# controller takes every report as of its arrival (ingest.timestamps ignore).
"$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend none --interval 3600 \
     --set ingest.timestamps=ignore 2>"$W/dlog" & pids+=($!)
for i in $(seq 50); do curl -sf $U/api/v1/status >/dev/null && break; sleep 0.1; done

# ---- a capture file's report is accepted -----------------------------------
"$P" -r "$CAP" --node L1 --controller $U >"$W/out" 2>"$W/err"; rc=$?
t_eq "probe -r FILE --controller exits 0" 0 "$rc"
t_eq "its pseudo-interface is the base name without extension" p4aqm_ecn_org1 "$(jq -r '.links[0].if' "$W/out")"
curl -s $U/api/v1/status > "$W/status"
t_check "tierflowd accepted the report (L1: 1 report, its file interface unmapped)" \
  jq -e '.probes.list[]|select(.node=="L1")|.reports==1 and .unmapped_ifs==["p4aqm_ecn_org1"]' "$W/status"
t_check "no 'HTTP status' in the probe's log" bash -c "! grep -q 'HTTP status' '$W/err'"
cp "$CAP" "$W/a-capture-file-named-at-length.pcap"
"$P" -r "$W/a-capture-file-named-at-length.pcap" --node L1 >"$W/out" 2>/dev/null
t_eq "a long file name is cut to 15 bytes" a-capture-file- "$(jq -r '.links[0].if' "$W/out")"
cp "$CAP" "$W/with space.pcap"
"$P" -r "$W/with space.pcap" --node L1 >"$W/out" 2>/dev/null
t_eq "a space in the file name becomes _" with_space "$(jq -r '.links[0].if' "$W/out")"

# ---- --node is checked at start -------------------------------------------
long=$(printf 'n%.0s' $(seq 35))
"$P" -r "$CAP" --node "$long" --controller $U >/dev/null 2>"$W/err"; rc=$?
t_eq "a 35-byte --node: exit 2" 2 "$rc"
t_check "... naming --node and the bound" grep -q -- "--node '$long': must be 1..31 printable ASCII" "$W/err"
"$P" -r "$CAP" --node "L 1" >/dev/null 2>"$W/err"; rc=$?
t_eq "a --node with a space: exit 2" 2 "$rc"
"$P" -r "$CAP" --node "$(printf 'n%.0s' $(seq 31))" >/dev/null 2>&1; rc=$?
t_eq "a 31-byte --node is taken" 0 "$rc"

# ---- a refused report is dropped, not retried -------------------------------
before=$(curl -s $U/metrics | awk '$1=="tierflow_http_requests_total{code=\"400\"}"{print $2}')
"$P" -r "$CAP" --node S9 --controller $U >"$W/out" 2>"$W/err"; rc=$?
after=$(curl -s $U/metrics | awk '$1=="tierflow_http_requests_total{code=\"400\"}"{print $2}')
t_eq "a report for an unknown node: the probe still exits 0" 0 "$rc"
t_eq "... it was sent once (one more 400 at the controller)" 1 "$(( ${after:-0} - ${before:-0} ))"
t_check "... the controller's message is logged" \
  grep -q "HTTP status 400: probe: 'S9' is not a node of topology" "$W/err"
t_check "... and the report dropped" grep -q "report dropped" "$W/err"
t_eq "... one log line for it" 1 "$(grep -c 'HTTP status' "$W/err")"
# The controller's side needs POST /api/v1/reports to go through
# ingest_post (controller/ingest.h) with the client's address.
wired=$(curl -s -X POST -H 'Content-Type: application/json' --data-binary '{"probe":"H1"}' $U/api/v1/reports |
        jq 'has("refused_entries")')
if [ "$wired" != true ]; then
  t_skip "controller side" "POST /api/v1/reports does not go through ingest_post yet (api.c do_reports, api_req.peer)"
  t_done
fi
t_check "the controller logs the refusal: probe, sender, reason" \
  grep -q "report refused (400 bad_request): probe S9 from 127.0.0.1: probe: 'S9' is not a node of topology" "$W/dlog"

# ---- a replayed capture is stale to a controller that checks times ----------
P2=$(port); U2=http://127.0.0.1:$P2
"$D" --topology "$W/topo.json" --listen 127.0.0.1:$P2 --backend none --interval 3600 2>"$W/dlog2" & pids+=($!)
for i in $(seq 50); do curl -sf $U2/api/v1/status >/dev/null && break; sleep 0.1; done
"$P" -r "$CAP" --node L1 --controller $U2 >/dev/null 2>"$W/err"; rc=$?
t_eq "a replayed capture to a checking controller: the probe exits 0" 0 "$rc"
t_check "... its report refused as stale (422), the probe logs why" \
  grep -qE "HTTP status 422: report.ts: 1589024392.468 is [0-9.]+ s old, beyond the staleness window .*report dropped" "$W/err"
t_check "... the controller logs it with the probe and the sender" \
  grep -q "report refused (422 stale_report): probe L1 from 127.0.0.1: report.ts: 1589024392.468" "$W/dlog2"
t_check "... and applied nothing" bash -c "curl -s $U2/api/v1/status | jq -e '([.probes.list[]|select(.node==\"L1\")|.reports]|add // 0) == 0'"

# ---- a 5xx is retried -------------------------------------------------------
SP=$(port)
"$S" 127.0.0.1 $SP "$W/posts503" 503 & pids+=($!)
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:$SP/ && break; sleep 0.1; done
: > "$W/posts503"
"$P" -r "$CAP" --node L1 --controller http://127.0.0.1:$SP >/dev/null 2>"$W/err"
t_ge "a 503 is retried" "$(wc -l < "$W/posts503")" 2
t_check "... without 'report dropped'" bash -c "! grep -q 'report dropped' '$W/err'"
SP4=$(port)
"$S" 127.0.0.1 $SP4 "$W/posts401" 401 & pids+=($!)
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:$SP4/ && break; sleep 0.1; done
: > "$W/posts401"
"$P" -r "$CAP" --node L1 --controller http://127.0.0.1:$SP4 >/dev/null 2>"$W/err"
t_eq "a 401 is not retried" 1 "$(wc -l < "$W/posts401")"

# ---- several controllers (an active/standby pair, docs/ha.md) -----------------
SP5=$(port)
"$S" 127.0.0.1 $SP5 "$W/posts2" & pids+=($!)
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:$SP5/ && break; sleep 0.1; done
: > "$W/posts2"
n0=$(curl -s $U/api/v1/status | jq '.probes.list[]|select(.node=="L1")|.reports')
"$P" -r "$CAP" --node L1 --controller $U --controller http://127.0.0.1:$SP5 >/dev/null 2>"$W/err"; rc=$?
t_eq "two --controller: exits 0" 0 "$rc"
t_eq "two --controller: the report reached the first (tierflowd)" $((n0 + 1)) \
  "$(curl -s $U/api/v1/status | jq '.probes.list[]|select(.node=="L1")|.reports')"
t_eq "two --controller: and the second (report_sink)" 1 "$(wc -l < "$W/posts2")"
"$P" -r "$CAP" --node L1 $(for i in 1 2 3 4 5; do echo --controller http://127.0.0.1:$SP5; done) >/dev/null 2>"$W/err"; rc=$?
t_eq "five --controller: refused at start (exit 2)" 2 "$rc"
t_check "... naming the option and the bound" grep -q -- "--controller.*at most 4 controllers" "$W/err"
t_done
