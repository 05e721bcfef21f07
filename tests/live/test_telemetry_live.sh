#!/usr/bin/env bash
# timeout: 90
# Switch telemetry, live: a "switch" namespace exports sFlow v5 datagrams
# (1-in-1000 samples of a 40 Gb/s RoCEv2 fat flow and a 0.5 Gb/s TCP mouse
# leaving its port ifIndex 7, plus that port's interface counters) over UDP,
# and ERSPAN type II mirrors of a RoCEv2 flow (session 42) over GRE, to the
# probe in a "management host" namespace. The probe listens for sFlow on a
# socket, captures the mirrors with libpcap, and attributes both through a
# mapping file to topology link directions (L1:eth1, L2:eth3). Checks: the fat
# flow on the right node and interface at its rate within the sampling error,
# the mouse not fat, the link rate from the switch's counters, sequence-loss
# counting, the mirrored flow's rate, the look at mid-interval the mirrored
# flow brings (not the sampled one), and the views' SIGTERM flush saying
# partial.
set -u
. "$(dirname "$0")/../lib/tap.sh"
t_need_root "telemetry live test"
for b in "$TF_BIN/tierflow-probe" "$TF_TOOLS/telemetry_send"; do
  [ -x "$b" ] || { t_fail "built: $b" "make san tools first"; t_done; }
done
command -v jq >/dev/null || { t_skip live "needs jq"; t_done; }

. "$(dirname "$0")/../lib/nspair.sh"
nspair_up "tftel$$" 10.78.0 tftv

cat >"$T/map.json" <<'MAP'
{"sflow":  [{"agent": "10.78.0.1", "ifindex": 7, "node": "L1", "if": "eth1", "link_gbps": 100}],
 "erspan": [{"src": "10.78.0.1", "session": 42, "node": "L2", "if": "eth3", "link_gbps": 0.05}]}
MAP

ip netns exec "$B" "$TF_BIN/tierflow-probe" -i tftv1 --sflow-listen 6343 --mirror-map "$T/map.json" \
  --interval 1 --node MGMT --format json >"$T/reports" 2>"$T/probe.err" &
probe=$!; pids+=($probe)
udp_bound() { ip netns exec "$B" ss -Hlun "sport = :6343" | grep -q .; }
wait_for 10 udp_bound || t_fail "probe listens on UDP 6343" "$(cat "$T/probe.err")"
wait_for 10 test -s "$T/reports" || t_fail "probe emits a first report" "$(cat "$T/probe.err")"

# Just after a whole second (the probe's closes are on them): the mirrored
# flow is new and fat at the look half a second in (probe.c, "The look at
# mid-interval").
past_whole_second
ip netns exec "$A" "$TF_TOOLS/telemetry_send" --sflow 10.78.0.2:6343 --agent 10.78.0.1 --ifindex 7 \
  --rate 1000 --flow-gbps 40 --pkt-bytes 4096 --mouse-gbps 0.5 --seconds 5 --skip-every 25 \
  --seed 7 >"$T/sflow.json" &
s1=$!
ip netns exec "$A" "$TF_TOOLS/telemetry_send" --erspan 10.78.0.2 --session 42 --pps 1000 \
  --inner-bytes 1000 --seconds 5 >"$T/erspan.json" &
s2=$!
wait $s1; wait $s2
sleep 1.5
kill -TERM "$probe"; wait "$probe"; prc=$?
t_eq "probe exits 0 after SIGTERM" 0 "$prc"
t_check "no sanitizer report" bash -c "! grep -qE 'Sanitizer|runtime error' '$T/probe.err'"
t_check "sender reported what it sent" jq -e '.datagrams > 100 and .fat_samples > 1000' "$T/sflow.json"

# Interval reports of one node while the senders ran (first and last seconds
# are partial: take the middle ones).
node() { jq -c --arg n "$1" 'select(.probe == $n)' "$T/reports"; }
node L1 >"$T/L1"; node L2 >"$T/L2"
t_check "reports for switch L1 (sFlow)" test -s "$T/L1"
t_check "reports for switch L2 (ERSPAN)" test -s "$T/L2"

median() { sort -g | awk '{a[NR]=$1} END{if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); else print 0}'; }
fat='.flows[] | select(.src=="10.0.1.1" and .dst=="10.0.2.1" and .qp==4660)'
jq -c "$fat" "$T/L1" >"$T/L1fat"
t_check "fat flow is attributed to L1 eth1, sampled 1-in-1000" \
  jq -se 'length >= 3 and all(.[]; .["if"]=="eth1" and .source=="sflow" and .sampling==1000)' "$T/L1fat"
# Full intervals inside the 5 s of sending: 1000 samples/s or more.
bps=$(jq -r 'select(.bps > 2e10) | .bps' "$T/L1fat" | median)
want=$(jq -r .fat_bps "$T/sflow.json")
# ~1220 samples per second: relative standard error ~2.9%; 10% is > 3 sigma.
t_check "fat flow rate $bps within 10% of $want" awk -v a="$bps" -v b="$want" 'BEGIN{exit !(a > 0.9*b && a < 1.1*b)}'
t_check "fat flow is declared fat" jq -se 'map(select(.bps > 2e10)) | length > 0 and all(.[]; .fat)' "$T/L1fat"
t_check "the mouse is seen and not fat" \
  jq -se '[.[] | .flows[] | select(.src=="10.0.1.2")] | length > 0 and all(.[]; (.fat|not) and .source=="sflow")' "$T/L1"
ltx=$(jq -r '.links[] | select(.["if"]=="eth1" and .tx_bps > 0) | .tx_bps' "$T/L1" | median)
lwant=$(jq -r .link_tx_bps "$T/sflow.json")
t_check "L1 eth1 rate from the switch's counters ($ltx vs $lwant)" \
  awk -v a="$ltx" -v b="$lwant" 'BEGIN{exit !(a > 0.95*b && a < 1.05*b)}'
t_check "L1 eth1 is up, 100 Gb/s, source sflow" \
  jq -se 'map(.links[] | select(.["if"]=="eth1")) | last | .oper=="up" and .speed_bps==1e11 and .source=="sflow"' "$T/L1"
skipped=$(jq -r .skipped_seq "$T/sflow.json")
lost=$(tail -n 1 "$T/L1" | jq -r .stats.telemetry.sflow_lost_datagrams)
t_ge "sender skipped some sequence numbers ($skipped)" "$skipped" 1
t_eq "lost datagrams counted from sequence numbers" "$skipped" "$lost"

ebps=$(jq -r '.flows[] | select(.src=="10.0.1.1" and .source=="erspan") | .bps' "$T/L2" | awk '$1 > 0' | median)
ewant=$(jq -r .inner_bps "$T/erspan.json")
t_check "mirrored flow on L2 eth3 ($ebps vs $ewant b/s, within 10%)" \
  awk -v a="$ebps" -v b="$ewant" 'BEGIN{exit !(a > 0.9*b && a < 1.1*b)}'
t_check "mirrored flow is fat on a 50 Mb/s link" \
  jq -se '[.[] | .flows[] | select(.source=="erspan" and .bps > 4e6)] | length > 0 and all(.[]; .fat and .["if"]=="eth3")' "$T/L2"
# The look at mid-interval: the mirrored flow, captured whole, closes one
# interval of every view at its middle (a whole report of half an
# interval); the sampled one never would.
t_eq "L2: one report at mid-interval, half an interval long, not partial" true \
  "$(jq -s "$MID_REPORTS | length == 1 and all(.[]; .interval_s > 0.4 and .interval_s < 0.6 and (has(\"partial\") | not))" "$T/L2")"
t_eq "... holding the mirrored flow, fat" true \
  "$(jq -s "$MID_REPORTS | .[0].flows | any(.source == \"erspan\" and .fat)" "$T/L2")"
t_eq "L1 (sFlow) closed there too, and only there" 1 "$(jq -s "$MID_REPORTS | length" "$T/L1")"
# The SIGTERM flush cuts every view's interval short and says so, as the
# probe's own report does; no other report does.
t_check "L1: the SIGTERM flush alone says partial" only_flush_partial "$T/L1"
t_check "L2: the SIGTERM flush alone says partial" only_flush_partial "$T/L2"
t_check "ERSPAN frames counted" jq -se 'last | .stats.telemetry.erspan_frames > 3000' "$T/L2"
t_check "the probe's own view does not count mirrors as flows" \
  jq -se '[.[] | select(.probe=="MGMT") | .flows[] | select(.proto==47 or .dport==6343)] | length == 0' "$T/reports"
t_done
