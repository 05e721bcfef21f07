#!/usr/bin/env bash
# timeout: 90
# tierflow-probe live: two namespaces joined by a veth shaped with htb to
# 200 Mbit/s, one iperf3 TCP flow for 5 s, the probe on the sender's end
# (-i, --interval 1, --link-gbps 0.2) posting every report to report_sink on
# 127.0.0.1 inside the sender's namespace with a bearer token. Checks the
# flow's rate against iperf3's own measurement (--json), the link counters,
# the POSTs, SIGHUP mid-run (logged, nothing stops), the look at
# mid-interval (the flow, started just after a whole second, is reported
# half a second in, in a whole report of half an interval) and the SIGTERM
# flush; then a controller answering 500.
set -u
. "$(dirname "$0")/../lib/tap.sh"
t_need_root "probe live test"
for b in "$TF_BIN/tierflow-probe" "$TF_TOOLS/report_sink"; do
  [ -x "$b" ] || { t_skip live "missing $b (make san tools)"; t_done; }
done
command -v iperf3 >/dev/null && command -v jq >/dev/null || { t_skip live "needs iperf3 and jq"; t_done; }

. "$(dirname "$0")/../lib/nspair.sh"
nspair_up "tfprb$$" 10.77.0 tfpv
tc -n "$A" qdisc add dev tfpv0 root handle 1: htb default 10
tc -n "$A" class add dev tfpv0 parent 1: classid 1:10 htb rate 200mbit ceil 200mbit 2>/dev/null
echo "s3cret-token-$$" >"$T/token"; chmod 600 "$T/token"   # a token others may read is refused


listening() { ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q .; }

ip netns exec "$A" "$TF_TOOLS/report_sink" 127.0.0.1 18080 "$T/posts" & pids+=($!)
ip netns exec "$B" iperf3 -s -1 -p 5201 >"$T/iperf-s.log" 2>&1 & pids+=($!)
ip netns exec "$A" "$TF_BIN/tierflow-probe" -i tfpv0 --interval 1 --link-gbps 0.2 --node A --log-level debug \
  --controller http://127.0.0.1:18080 --token-file "$T/token" --format json \
  >"$T/reports" 2>"$T/probe.err" &
probe=$!; pids+=($probe)
# The same link's counters alone (--counters): no capture handle, no flows.
ip netns exec "$A" "$TF_BIN/tierflow-probe" --counters tfpv0 --interval 1 --link-gbps 0.2 --node A \
  --format json >"$T/counters" 2>"$T/counters.err" &
cprobe=$!; pids+=($cprobe)
# The first report says the probe is capturing.
wait_for 10 listening "$A" 18080 || t_fail "report_sink up"
wait_for 10 test -s "$T/reports" || t_fail "probe emits a first report" "$(cat "$T/probe.err")"
wait_for 10 listening "$B" 5201 || t_fail "iperf3 server up"
# Just after a whole second (the probe's closes are on them): the flow is
# new and fat at the look half a second in (probe.c, "The look at
# mid-interval").
past_whole_second
ip netns exec "$A" iperf3 -c 10.77.0.2 -p 5201 -t 5 --json >"$T/iperf.json" 2>&1 &
iperf=$!
# SIGHUP mid-run (it used to kill the probe silently): logged, and the
# probe carries on (the flow checks below need every interval).
sleep 2; kill -HUP "$probe"
wait_for 5 grep -q 'SIGHUP' "$T/probe.err"
t_check "SIGHUP: the probe says what it did" grep -q 'SIGHUP: no --mirror-map to reload; carrying on' "$T/probe.err"
t_check "the capturing probe has a packet socket (ss -0 sees it)" \
  bash -c "ip netns exec '$A' ss -0 -p | grep -q 'pid=$probe,'"
t_eq "--counters: the probe opened no packet socket" "" \
  "$(ip netns exec "$A" ss -0 -p 2>/dev/null | grep "pid=$cprobe," || true)"
wait "$iperf"
t_check "... and is still running after it" kill -0 "$probe"
sleep 1.5   # let one more interval close so the flow's last second is reported
kill -TERM "$probe"; wait "$probe"; prc=$?
t_eq "probe exits 0 after SIGTERM" 0 "$prc"
kill -TERM "$cprobe"; wait "$cprobe"; t_eq "--counters probe exits 0 after SIGTERM" 0 "$?"
t_check "--counters probe stderr has no sanitizer report" bash -c "! grep -qE 'Sanitizer|runtime error' '$T/counters.err'"
t_check "probe stderr has no sanitizer report" bash -c "! grep -qE 'Sanitizer|runtime error' '$T/probe.err'"

ibps=$(jq '.end.sum_received.bits_per_second' "$T/iperf.json")
ibytes=$(jq '.end.sum_received.bytes' "$T/iperf.json")
t_check "iperf3 measured a rate ($ibps b/s)" awk -v r="$ibps" 'BEGIN{exit !(r > 1e7)}'
# The SIGTERM flush cuts its interval short and says so; no other report does.
t_check "the SIGTERM flush alone says partial" only_flush_partial "$T/reports"
t_check "--counters: the SIGTERM flush alone says partial" only_flush_partial "$T/counters"
# The look at mid-interval: one report (the flow became fat once), half a
# second after a whole one, half an interval long, not partial, holding
# the new flow fat.
t_eq "one report at mid-interval" 1 "$(jq -s "$MID_REPORTS | length" "$T/reports")"
t_eq "... of half an interval, not partial" true \
  "$(jq -s "$MID_REPORTS | .[0] | .interval_s > 0.4 and .interval_s < 0.6 and (has(\"partial\") | not)" "$T/reports")"
t_eq "... holding the new flow, fat" true \
  "$(jq -s "$MID_REPORTS | .[0].flows | any(.dst == \"10.77.0.2\" and .dport == 5201 and .fat)" "$T/reports")"
t_check "the probe logged why" grep -q 'mid-interval report: 1 flow became fat' "$T/probe.err"
t_check "every report line is a DESIGN 2.3 object" \
  bash -c "jq -se 'length >= 5 and all(type == \"object\" and .probe == \"A\" and (.links | length) == 1)' '$T/reports' >/dev/null"

# The data flow: A -> B to port 5201 with the most bytes.
flow='[.flows[] | select(.src == "10.77.0.1" and .dst == "10.77.0.2" and .dport == 5201)] | max_by(.bytes)'
# Intervals in which the flow ran all along: drop the first and last active ones.
mid=$(jq -s "[.[] | ($flow) | select(. != null) | .bps | select(. > 0)] | .[1:-1] | sort | .[length/2|floor]" "$T/reports")
t_check "flow's median interval rate $mid b/s within 10% of iperf3's $ibps b/s" \
  awk -v a="$mid" -v b="$ibps" 'BEGIN{exit !(a > 0 && a/b > 0.9 && a/b < 1.1)}'
fbytes=$(jq -s "[.[] | ($flow) | select(. != null) | .bytes] | max" "$T/reports")
t_check "flow's wire bytes $fbytes within 10% of the $ibytes payload bytes iperf3 received" \
  awk -v a="$fbytes" -v b="$ibytes" 'BEGIN{exit !(a/b > 0.9 && a/b < 1.1)}'
t_eq "flow is fat against the shaped 200 Mbit/s link" true \
  "$(jq -s "[.[] | ($flow) | select(. != null) | .fat] | any" "$T/reports")"
t_eq "flow is reported on tfpv0 from pcap, sampling 1" '"tfpv0" "pcap" 1' \
  "$(jq -rs "[.[] | ($flow) | select(. != null)] | last | \"\\\"\(.if)\\\" \\\"\(.source)\\\" \(.sampling)\"" "$T/reports")"
ltx=$(jq -s '[.[].links[0].tx_bps] | sort | .[-2]' "$T/reports")
t_check "link tx_bps from the kernel counters ($ltx) near iperf3's rate" \
  awk -v a="$ltx" -v b="$ibps" 'BEGIN{exit !(a/b > 0.9 && a/b < 1.15)}'
t_eq "link: oper up, speed 2e8, htb counters present" "up 200000000 true" \
  "$(jq -rs '.[-2].links[0] | "\(.oper) \(.speed_bps) \(has("qdisc_backlog") and has("qdisc_drops") and has("qdisc_overlimits"))"' "$T/reports")"

t_eq "--counters: every report has the one link and no flow" true \
  "$(jq -s 'length >= 5 and all(.links == [.links[0]] and .links[0].if == "tfpv0" and .flows == [])' "$T/counters")"
ctx=$(jq -s '[.[].links[0].tx_bps] | sort | .[-2]' "$T/counters")
t_check "--counters: tx_bps from the kernel counters ($ctx) near iperf3's rate" \
  awk -v a="$ctx" -v b="$ibps" 'BEGIN{exit !(a/b > 0.9 && a/b < 1.15)}'
t_eq "--counters: oper up, speed 2e8, htb counters present" "up 200000000 true" \
  "$(jq -rs '.[-2].links[0] | "\(.oper) \(.speed_bps) \(has("qdisc_backlog") and has("qdisc_drops"))"' "$T/counters")"

# POST: one request per report (the SIGTERM flush included), all with the token.
nrep=$(wc -l <"$T/reports")
kill -TERM "${pids[0]}"; wait "${pids[0]}" 2>/dev/null
t_eq "controller got every report ($nrep)" "$nrep" "$(wc -l <"$T/posts")"
t_eq "all POSTs to /api/v1/reports" "POST /api/v1/reports" "$(cut -f1,2 "$T/posts" | sort -u | tr '\t' ' ')"
t_eq "all carry the bearer token" "Bearer s3cret-token-$$" "$(cut -f3 "$T/posts" | sort -u)"
t_check "posted bodies are the reports" bash -c "cut -f4 '$T/posts' | jq -se 'all(.probe == \"A\" and has(\"flows\"))' >/dev/null"
t_eq "final posted report equals the final printed one" "$(tail -n1 "$T/reports" | jq -c .ts)" \
  "$(tail -n1 "$T/posts" | cut -f4 | jq -c .ts)"

# A controller that answers 500: logged with the status, capture unaffected.
ip netns exec "$A" "$TF_TOOLS/report_sink" 127.0.0.1 18081 "$T/posts500" 500 & s500=$!; pids+=($s500)
wait_for 5 listening "$A" 18081
ip netns exec "$A" "$TF_BIN/tierflow-probe" -i lo --interval 0.5 --controller http://127.0.0.1:18081/ \
  --format json >"$T/r500" 2>"$T/e500" & p500=$!; pids+=($p500)
wait_for 20 grep -q 'HTTP status 500' "$T/e500"; t_check "non-2xx answer logged with its status" grep -q 'HTTP status 500' "$T/e500"
kill -TERM "$p500"; wait "$p500"; rc=$?
t_eq "probe with a failing controller still exits 0 on SIGTERM" 0 "$rc"
t_check "and keeps printing reports" test -s "$T/r500"

t_done
