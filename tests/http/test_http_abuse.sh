#!/usr/bin/env bash
# The API stays available under abuse (issue 12, item 4), against a real
# daemon (sanitizer build): a slowloris from one address (100 connections
# trickling header bytes, and one trickling a body) beside a normal client
# and a probe posting reports; the per-address connection limit, the header
# and body deadlines that a byte every half second does not reset, and the
# bound on request-body memory in flight (503 naming the key, and served
# again once the holders are cut).
#
# The attacker is bound to 127.0.0.2 and the normal client and the poster to
# 127.0.0.1 (loopback takes all of 127/8): the limit is per address, so an
# attacker on the normal client's own address would still crowd it out.
# timeout: 180
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; G=$TF_TOOLS/report_gen; R="python3 $(dirname "$0")/rawhttp.py"
[ -x "$D" ] && [ -x "$G" ] || { t_skip all "needs $D and $G (make san tools)"; t_done; }
. "$(dirname "$0")/../lib/daemon.sh"
python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.2",0))' 2>/dev/null ||
  { t_skip all "cannot bind 127.0.0.2 (loopback without 127/8)"; t_done; }
echo abuse-token > "$W/token"; chmod 600 "$W/token"
A="Authorization: Bearer abuse-token"; J="Content-Type: application/json"
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"

# ---- slowloris beside a normal client and a poster ----------------------
# 64 connections in all: without the per-address limit, 100 trickling
# connections take every one of them (the audit saw 0/4 answers in 26 s).
PORT=$(port); U=http://127.0.0.1:$PORT
"$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend none --token-file "$W/token" --interval 3600 \
     --set limits.max_connections=64 --set limits.max_connections_per_addr=16 \
     --set limits.header_timeout=2 --set limits.body_timeout=3 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon starts" "$(tail -3 "$W/log")"; t_done; }
$R trickle-body $PORT --src 127.0.0.2 --length 100000 --send 10 --seconds 10 --every 0.5 \
   --header "$A" --header "$J" > "$W/body.json" & BG+=($!); TB=$!
sleep 0.3 # (its connection first: the slowloris fills the address's share)
$R slowloris $PORT --src 127.0.0.2 --conns 100 --seconds 10 --every 0.5 > "$W/slow.json" & BG+=($!); SL=$!
sleep 1.5 # the attacker holds its connections before the others come
ok=0 slow=0 n=0 posted=0
for i in $(seq 12); do
  n=$((n + 1))
  t=$(curl -s -o /dev/null --max-time 3 -w '%{http_code} %{time_total}' $U/api/v1/status)
  [ "${t% *}" = 200 ] && ok=$((ok + 1))
  awk -v x="${t#* }" 'BEGIN{exit !(x > 2)}' && slow=$((slow + 1))
  if [ $((i % 3)) = 0 ]; then
    "$G" --topology "$W/topo.json" --flows 4 --post $U/api/v1/reports --token-file "$W/token" >/dev/null 2>&1 &&
      posted=$((posted + 1))
  fi
  sleep 0.5
done
wait $SL $TB
t_eq "normal client from 127.0.0.1 served during the slowloris ($ok/$n)" "$n" "$ok"
t_eq "no answer took over 2 s" 0 "$slow"
t_eq "the poster's reports accepted during the slowloris (4)" 4 "$posted"
t_check "the slowloris ran (it held connections)" jqf '.max_open >= 8' "$W/slow.json"
t_check "at most 16 (+ threads-1) attacker connections open at once: $(jq -c .max_open "$W/slow.json")" \
  jqf '.max_open <= 19' "$W/slow.json"
t_check "connections over the per-address limit refused" jqf '.refused >= 10' "$W/slow.json"
# A byte every 0.5 s would hold a connection forever against an idle timeout:
# the header deadline (2 s) is total.
t_check "trickled headers cut at the 2 s deadline: $(jq -c '.lifetimes[:3]' "$W/slow.json")" \
  jqf '(.lifetimes|length) >= 16 and (.lifetimes|max) < 3.5 and (.lifetimes|min) >= 1.5' "$W/slow.json"
t_check "trickled body cut at the 3 s deadline: $(cat "$W/body.json")" \
  jqf '.closed_after != null and .closed_after >= 2.5 and .closed_after < 5' "$W/body.json"
t_check "log names limits.max_connections_per_addr" grep -q "limits.max_connections_per_addr (16)" "$W/log"
t_check "log names the header and body deadlines" grep -q "limits.header_timeout (2 s).*limits.body_timeout (3 s)" "$W/log"
t_eq "still serving after the attack" 200 "$(curl -s -o /dev/null -w '%{http_code}' $U/api/v1/status)"
stop

# ---- request bodies in flight: a bound, a 503 naming it, recovery -------
# 2 held bodies of 60000 bytes (buffers of 60001) leave 11071 of 131072: a
# report of ~20 kB does not fit until they are cut (body_timeout 4 s).
PORT=$(port); U=http://127.0.0.1:$PORT
"$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend none --token-file "$W/token" --interval 3600 \
     --set limits.max_body=65536 --set limits.max_body_inflight=131072 --set limits.body_timeout=4 \
     2>"$W/log2" & PID=$!
wait_up "$U" || { t_fail "daemon starts (budget)" "$(tail -3 "$W/log2")"; t_done; }
for k in 1 2; do
  $R trickle-body $PORT --src 127.0.0.2 --length 60000 --send 50000 --seconds 7 --every 10 \
     --header "$A" --header "$J" > "$W/hold$k.json" & BG+=($!)
done
python3 -c 'import json;print(json.dumps({"probe":"L1","flows":[{"src":"10.0.1.1","dst":"10.0.2.1","proto":17,
  "sport":1000+i,"dport":4791,"if":"S1","bps":1e6} for i in range(200)]}))' > "$W/report.json"
t_ge "the report is over 11071 bytes" "$(wc -c < "$W/report.json")" 11072
sleep 1
t_eq "a report while the budget is held: 503" 503 \
  "$(curl -s -o "$W/b503" -w '%{http_code}' -H "$A" -H "$J" --data-binary @"$W/report.json" $U/api/v1/reports)"
t_check "503 names limits.max_body_inflight and its bound" \
  jqf '.error.code=="unavailable" and (.error.message|contains("limits.max_body_inflight (131072 bytes)"))' "$W/b503"
t_check "503 says Retry-After" sh -c "curl -s -D - -o /dev/null -H '$A' -H '$J' --data-binary @'$W/report.json' $U/api/v1/reports | grep -qi '^retry-after: 1'"
# A write without the token is refused at its header: it holds no body
# memory, so it gets its 401 even now (buffered, it would have been a 503).
t_eq "a write without the token while the budget is held: 401, not 503" 401 \
  "$(curl -s -o /dev/null -w '%{http_code}' -H "$J" --data-binary @"$W/report.json" $U/api/v1/reports)"
t_eq "a small report still fits: 200" 200 \
  "$(curl -s -o /dev/null -w '%{http_code}' -H "$A" -H "$J" -d '{"probe":"L1"}' $U/api/v1/reports)"
wait "${BG[@]}" 2>/dev/null
t_check "the held bodies were cut at the body deadline" \
  sh -c "jq -e '.closed_after != null and .closed_after < 6' '$W/hold1.json' >/dev/null && jq -e '.closed_after != null' '$W/hold2.json' >/dev/null"
t_eq "once they are cut the report is taken: 200" 200 \
  "$(curl -s -o /dev/null -w '%{http_code}' -H "$A" -H "$J" --data-binary @"$W/report.json" $U/api/v1/reports)"
stop
t_done
