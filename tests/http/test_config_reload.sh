#!/usr/bin/env bash
# SIGHUP re-reads tierflowd's configuration (controller/config.h): a
# threshold changed in the file takes effect (a direction at 50% becomes
# congested when thresholds.util drops from 0.8 to 0.4), with a "reload"
# event naming the key; a key a reload may not change (interval) is
# reported as needing a restart (reload_failed) and keeps its value; a
# command-line flag still overrides the file after the reload; a broken
# file keeps the whole old configuration.
# timeout: 120
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; G=$TF_TOOLS/report_gen
[ -x "$D" ] && [ -x "$G" ] || { t_skip all "needs $D and $G (make san tools)"; t_done; }
. "$(dirname "$0")/../lib/daemon.sh"
# Polls (the reload runs on the main loop) until ${3:-1} events of kind $1
# have a message matching the regex $2.
has_event() {
  for i in $(seq 100); do
    curl -s "$U/api/v1/events" | jq -e --arg k "$1" --arg m "$2" --argjson n "${3:-1}" \
      '[.events[]|select(.kind==$k and (.message|test($m)))]|length == $n' >/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# The L1 -> S1 direction's "congested" flag.
congested() { curl -s "$U/api/v1/topology" | jq '[.links[].dirs[]|select(.from=="L1" and .to=="S1")][0].congested'; }
conf() {   # conf UTIL INTERVAL
  printf '{"topology": "%s", "listen": "127.0.0.1:%s", "backend": "none", "interval": %s,
           "thresholds": {"util": %s, "max_moves": 5}}\n' "$W/topo.json" "$PORT" "$2" "$1" > "$W/conf.json"
}

PORT=$(port); U=http://127.0.0.1:$PORT
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/topo.json"
conf 0.8 3600
"$D" --config "$W/conf.json" --set thresholds.max_moves=7 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon starts" "$(tail -3 "$W/log")"; t_done; }
# One 50 Gb/s flow from L1 by S1: that direction at util 0.5 (posted again
# after each reload, which also reloads the topology and so its loads).
report() { "$G" --topology "$W/topo.json" --flows 1 --gbps 50 --congest L1-S1 --post $U/api/v1/reports >/dev/null; }
report
t_eq "util 0.5 under thresholds.util 0.8: not congested" false "$(congested)"

conf 0.4 5
kill -HUP $PID
t_check "reload event names thresholds.util" has_event reload '^thresholds[.]util: 0[.]8 -> 0[.]4$'
t_check "topology reloaded after it" has_event reload '^topology .* reloaded'
report
t_eq "thresholds.util 0.4 after SIGHUP: congested" true "$(congested)"
t_check "interval: reported as needing a restart" has_event reload_failed '^interval: 3600 -> 5 needs a restart'
t_eq "interval: kept" 3600 "$(curl -s $U/api/v1/status | jq .interval_s)"
t_check "the command line still overrides the file (no max_moves change reported)" \
  sh -c "! curl -s $U/api/v1/events | jq -e '.events[]|select(.message|test(\"max_moves\"))' >/dev/null"
grep -q "thresholds.util: 0.8 -> 0.4" "$W/log"; t_eq "the change is logged" 0 $?

echo '{"thresholds": {"util": ' > "$W/conf.json"
kill -HUP $PID
t_check "broken file: reload_failed names it" has_event reload_failed 'conf[.]json'
# The topology file is still good and is re-read after the failed
# configuration, which again resets the loads: post after that, not before.
t_check "broken file: topology reloaded after it" has_event reload '^topology .* reloaded' 2
report
t_eq "broken file: thresholds.util 0.4 kept" true "$(congested)"
kill -TERM $PID; wait $PID; rc=$?; PID=
t_eq "SIGTERM after reloads exits 0" 0 $rc
t_done
