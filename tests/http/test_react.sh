#!/usr/bin/env bash
# The round a report triggers (docs/policy.md, "React to reports"), against
# a real daemon (sanitizer build) on loopback, rounds on the timer off
# (--interval 3600) and thresholds.react_window at 4 s:
#   a collision in L1's report, L2's report of the same look (the same ts)
#   already in: the look is complete and the round runs at once, well
#   before the window (tierflow_rebalance_report_rounds_total 1 within 2 s);
#   the same collision with L2's last report half a second older: the round
#   waits for L2 (none 1.5 s in) and runs as soon as L2's report of that
#   look comes (within 1.5 s, before the window ends);
#   a look L2 did not report at all (as one at mid-interval, which only the
#   probes that saw a flow become fat report): the round waits out the
#   window (none 2 s in, one by 7 s);
#   the periodic round (--interval 2, reactions off), due 0.3 s after each
#   even second of the wall clock (TICK_LAG_MAX), runs as soon as both
#   probes' reports of the interval that ended there are in: posted 20 ms
#   after it, the round has run 250 ms after it;
#   warm-up (thresholds.warmup, on by default): the same collision in the
#   first look the daemon hears is not acted on (a round ran, no move,
#   status says warming_up); two seconds on (over the reports' interval_s
#   of 1 s) the warm-up is over, and the next look's round moves a flow.
# timeout: 60
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; G=$TF_TOOLS/report_gen
[ -x "$D" ] && [ -x "$G" ] || { t_skip all "needs $D and $G (make san tools)"; t_done; }
. "$(dirname "$0")/../lib/daemon.sh"
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"
# reports at ts T: L1's four flows all on its link to S1 (a collision);
# L2's links without flows (nothing contended)
"$G" --topology "$W/topo.json" --flows 4 --congest L1-S1 > "$W/reports"
report() {
  jq -c --arg p "$1" --argjson ts "$2" 'select(.probe == $p) | .ts = $ts | if $p == "L2" then .flows = [] else . end' "$W/reports"
}
post() { curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary "$1" "$U/api/v1/reports"; }
rounds() { curl -s "$U/metrics" | awk '/^tierflow_rebalance_report_rounds_total /{print $2}'; }
# until_rounds N SECONDS: polls until the count is N
until_rounds() { local i n; n=$(awk -v s="$2" 'BEGIN{print int(s * 10)}'); for ((i = 0; i < n; i++)); do [ "$(rounds)" = "$1" ] && return 0; sleep 0.1; done; return 1; }
start() {   # [INTERVAL REACT_WINDOW]
  PORT=$(port); U=http://127.0.0.1:$PORT
  "$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend none --interval "${1:-3600}" \
       --set thresholds.react_window="${2:-4}" 2>>"$W/log" & PID=$!
  wait_up "$U" || { t_fail "daemon starts" "$(tail -3 "$W/log")"; t_done; }
}

start
t=$(date +%s.%N)
t_eq "complete look: L2's report taken" 200 "$(post "$(report L2 "$t")")"
t_eq "complete look: no round before the collision" 0 "$(rounds)"
t_eq "complete look: L1's report taken" 200 "$(post "$(report L1 "$t")")"
t_check "complete look: the round runs before the window (within 2 s of 4)" until_rounds 1 2
stop

# older_l2 NAME: a fresh daemon, L2's report, then L1's with the collision
# half a second later (t: L1's report time)
older_l2() {
  start
  t=$(date +%s.%N)
  t_eq "$1: L2's earlier report taken" 200 "$(post "$(report L2 "$(awk -v t="$t" 'BEGIN{printf "%.6f", t - 0.5}')")")"
  t_eq "$1: L1's report taken" 200 "$(post "$(report L1 "$t")")"
}
older_l2 "L2 late"
sleep 1.5
t_eq "L2 late: no round 1.5 s in (waits for L2)" 0 "$(rounds)"
t_eq "L2 late: L2's report of the look taken" 200 "$(post "$(report L2 "$t")")"
t_check "L2 late: the round runs once it is in, before the window" until_rounds 1 1.5
stop

older_l2 "look L2 missed"
sleep 2
t_eq "look L2 missed: no round 2 s in (waits for L2)" 0 "$(rounds)"
t_check "look L2 missed: the round runs when the window ends" until_rounds 1 5
stop

start 2 0
all_rounds() { curl -s "$U/metrics" | awk '/^tierflow_rebalance_rounds_total /{print $2}'; }
# sleep_to T: until wall-clock time T
sleep_to() { sleep "$(awk -v t="$1" -v n="$(date +%s.%N)" 'BEGIN{d = t - n; printf "%.3f", (d > 0 ? d : 0)}')"; }
b=$(( $(date +%s) / 2 * 2 + 4 ))   # an even second at least 2 s away
sleep_to "$b.020"
before=$(all_rounds)
post "$(report L2 "$b")" >/dev/null; post "$(report L1 "$b")" >/dev/null
sleep_to "$b.250"
after=$(all_rounds)
t_check "tick: the round runs once the interval's reports are in, before its lag ($before -> $after rounds by +250 ms)" \
  test "$after" -gt "$before"
stop

start 2 0
moves() { curl -s "$U/metrics" | awk '/^tierflow_rebalance_moves_total /{print $2}'; }
warming() { curl -s "$U/api/v1/status" | jq -r .rebalance.warming_up; }
t_eq "warm-up: nothing heard yet" true "$(warming)"
b=$(( $(date +%s) / 2 * 2 + 4 ))
sleep_to "$b.020"
before=$(all_rounds)
post "$(report L2 "$b")" >/dev/null; post "$(report L1 "$b")" >/dev/null
# warming until an interval (1 s, less 50 ms) after the first report came
t_eq "warm-up: status says warming_up" true "$(warming)"
sleep_to "$b.900"   # the tick is due at +0.3 s; the rest is room for a loaded machine
t_check "warm-up: the first look's round ran" test "$(all_rounds)" -gt "$before"
t_eq "warm-up: ... and moved nothing" 0 "$(moves)"
sleep_to "$((b + 2)).020"
post "$(report L2 "$((b + 2))")" >/dev/null; post "$(report L1 "$((b + 2))")" >/dev/null
t_eq "warm-up: over an interval on" false "$(warming)"
sleep_to "$((b + 2)).900"
t_check "warm-up: that look's round moved flows" test "$(moves)" -gt 0
stop
t_done
