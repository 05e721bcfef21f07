#!/usr/bin/env bash
# A backend that cannot act shows it (issue 14, item 3 and 4), against a
# real daemon (sanitizer build) on loopback:
#   --check-config refuses a plan or netlink backend on a topology whose
#   uplinks lack interfaces and addresses (naming the first such link) and
#   accepts backend none there;
#   with --backend plan on such a topology every round that must pin a flow
#   fails: the rebalance answers applied false with the reason, /status says
#   the backend is not healthy and why (last_rebalance.error too), every
#   failed round counts in tierflow_backend_errors_total, but the event is
#   written once for that cause, not once a round; after a reload to a
#   topology with addresses a round acts (files written, healthy again), and
#   the same failure coming back is an event again;
#   the plan backend writes no `ip rule ... dscp` for a switch whose iproute2
#   (topology "iproute2", default 6.1) lacks it: the class rule is refused,
#   the rest written, the backend not healthy naming switch and version; with
#   "iproute2": "6.13.0" it is written; a bad "iproute2" fails --check-config;
#   --backend none accepts the round and answers applied false;
#   a missing plan folder (issue 12, item 6): every automatic round fails and
#   counts, /status says why (naming backend_options.plan_dir), but the log
#   has one line for it, not one a round; once the folder exists the next
#   round writes the files and the log says, once, that the backend works again.
# timeout: 180
set -u
. "$(dirname "$0")/../lib/tap.sh"
D=$TF_BIN/tierflowd; G=$TF_TOOLS/report_gen; TOPO=$TF_BIN/tierflow-topo
[ -x "$D" ] && [ -x "$G" ] && [ -x "$TOPO" ] || { t_skip all "needs $D, $G and $TOPO (make san tools)"; t_done; }
. "$(dirname "$0")/../lib/daemon.sh"
nevents() { curl -s "$U/api/v1/events" | jq "[.events[]|select(.kind==\"$1\")]|length"; }
wait_event() { for i in $(seq 100); do [ "$(nevents "$1")" -ge "$2" ] && return 0; sleep 0.1; done; return 1; }
# GET views are cached for up to a second: poll until FILTER holds on /status.
status_is() { for i in $(seq 30); do curl -s "$U/api/v1/status" | jq -e "$1" >/dev/null && return 0; sleep 0.1; done; return 1; }
errors_total() { curl -s "$U/metrics" | awk '$1=="tierflow_backend_errors_total"{print $2}'; }

# Generated without addresses (tierflow-topo), and with them (report_gen).
"$TOPO" leafspine:leaves=2,spines=4,hosts=4,gbps=100 > "$W/bare.json"
"$G" --topology leafspine:leaves=2,spines=4,hosts=4,gbps=100 --emit-topology "$W/addressed.json"
mkdir "$W/plans"

# ---- --check-config ------------------------------------------------------
for k in plan netlink; do
  "$D" --topology "$W/bare.json" --backend $k --plan-dir "$W/plans" --check-config >"$W/out" 2>&1; rc=$?
  t_eq "--check-config --backend $k on a bare topology exits 2" 2 "$rc"
  t_check "... naming the backend and the first link without an address" \
    grep -q "backend $k cannot program this topology: link L1-S1: no address at the upper end" "$W/out"
done
t_check "--check-config --backend none on a bare topology passes" \
  "$D" --topology "$W/bare.json" --backend none --check-config
t_check "--check-config --backend plan on an addressed topology passes" \
  "$D" --topology "$W/addressed.json" --backend plan --plan-dir "$W/plans" --check-config

# ---- plan backend on a bare topology --------------------------------------
PORT=$(port); U=http://127.0.0.1:$PORT
cp "$W/bare.json" "$W/topo.json"
# No reaction to reports (thresholds.react_window 0): the rounds counted
# are the three asked for.
"$D" --topology "$W/topo.json" --listen 127.0.0.1:$PORT --backend plan --plan-dir "$W/plans" \
     --interval 3600 --set thresholds.react_window=0 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon starts" "$(tail -3 "$W/log")"; t_done; }
t_check "the start warns that rounds will fail" grep -q "backend plan cannot program this topology" "$W/log"
"$G" --topology "$W/topo.json" --flows 4 --congest L1-S1 --post $U/api/v1/reports >/dev/null
for i in 1 2 3; do curl -s -X POST "$U/api/v1/rebalance" > "$W/rb$i"; done
t_check "a round that cannot build its plan is not applied and says why" \
  jq -e '(.applied|not) and (.error|test("^plan: link L1-S[1-4]: no address"))' "$W/rb1"
t_check "/status: backend not healthy, with the reason" \
  status_is '(.backend.healthy|not) and (.backend.error|test("link L1-S[1-4]"))'
t_check "/status: last_rebalance not applied, with the reason" \
  status_is '(.last_rebalance.applied|not) and (.last_rebalance.error|test("link L1-S[1-4]"))'
t_eq "three failed rounds count three backend errors" 3 "$(errors_total)"
t_eq "one backend_error event for one cause" 1 "$(nevents backend_error)"
t_check "no plan files were written" test ! -e "$W/plans/plan.json"

# Reload to a topology with addresses: the next round acts.
cp "$W/addressed.json" "$W/topo.json"
kill -HUP $PID
t_check "reload event" wait_event reload 1
"$G" --topology "$W/topo.json" --flows 4 --congest L1-S1 --post $U/api/v1/reports >/dev/null
curl -s -X POST "$U/api/v1/rebalance" > "$W/rb4"
t_check "with addresses the round is applied" jq -e '.applied and .error==null and .moved>=1' "$W/rb4"
t_check "... and the plan files are written" test -s "$W/plans/plan.json"
t_check "/status: healthy again" \
  status_is '.backend.healthy and .backend.error==null and .last_rebalance.applied and .last_rebalance.error==null'
# Back to the bare topology: the same cause after a success is news again.
cp "$W/bare.json" "$W/topo.json"
kill -HUP $PID
t_check "second reload event" wait_event reload 2
"$G" --topology "$W/topo.json" --flows 4 --congest L1-S1 --post $U/api/v1/reports >/dev/null
curl -s -X POST "$U/api/v1/rebalance" >/dev/null
t_eq "the failure after a success is a second event" 2 "$(nevents backend_error)"
t_eq "and a fourth error counted" 4 "$(errors_total)"
stop

# ---- a DSCP class the switches' iproute2 cannot take ------------------------
# The plan backend writes only what each switch's iproute2 takes: `ip rule
# ... dscp` needs 6.13, and a node without "iproute2" is taken as 6.1.
echo '{"classes": [{"name": "roce", "match": {"dscp": [26]}, "path": {"via": ["S1", "S2"]}}]}' > "$W/policy.json"
rm -rf "$W/plans"; mkdir "$W/plans"
PORT=$(port); U=http://127.0.0.1:$PORT
"$D" --topology "$W/addressed.json" --policy "$W/policy.json" --listen 127.0.0.1:$PORT --backend plan \
     --plan-dir "$W/plans" --interval 3600 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon with a DSCP class starts" "$(tail -3 "$W/log")"; t_done; }
for i in 1 2; do curl -s -X POST "$U/api/v1/rebalance" > "$W/rbd$i"; done
t_check "dscp: the round is applied (the rest of the plan is)" jq -e '.applied and .error==null' "$W/rbd1"
t_check "dscp: no dscp selector in any file" bash -c "! grep -q 'dscp' '$W'/plans/*.ipbatch"
t_check "dscp: plan.json holds no DSCP rule" jq -e '[.switches[].rules[]|select(.dscp != null)]|length==0' "$W/plans/plan.json"
t_check "dscp: the class's routes are still written" grep -q "route replace table 7828 proto 77 10.0.2.0/24 nexthop" "$W/plans/L1.full.ipbatch"
t_check "/status: not healthy, naming the switch, its iproute2 and the selector" \
  status_is '(.backend.healthy|not) and (.backend.error|test("^switch L1: its iproute2 6.1 \\(assumed\\) has no `ip rule ... dscp` \\(6.13\\+\\): DSCP class rules refused"))'
t_check "/status: backend.unsupported lists each switch and the feature" \
  status_is '.backend.unsupported == [{"switch": "L1", "feature": "dscp (FRA_DSCP)"}, {"switch": "L2", "feature": "dscp (FRA_DSCP)"}]'
t_eq "dscp: one event for two rounds" 1 "$(nevents backend_error)"
stop
# A topology that says its switches have iproute2 6.13: the rule is written.
jq '.nodes |= map(if .tier=="leaf" then . + {"iproute2": "6.13.0"} else . end)' "$W/addressed.json" > "$W/new.json"
PORT=$(port); U=http://127.0.0.1:$PORT
"$D" --topology "$W/new.json" --policy "$W/policy.json" --listen 127.0.0.1:$PORT --backend plan \
     --plan-dir "$W/plans" --interval 3600 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon with iproute2 6.13 starts" "$(tail -3 "$W/log")"; t_done; }
curl -s -X POST "$U/api/v1/rebalance" > "$W/rbd3"
t_check "iproute2 6.13: the DSCP rule is in the files" grep -q 'rule add pref 20256 dscp 26 table 7828 protocol 77' "$W/plans/L1.ipbatch"
t_check "iproute2 6.13: healthy, nothing unsupported" status_is '.backend.healthy and .backend.unsupported == []'
stop
echo '{"name": "x", "tiers": ["host", "leaf", "spine"], "nodes": [{"name": "L1", "tier": "leaf", "iproute2": "six"}], "links": []}' > "$W/badv.json"
"$D" --topology "$W/badv.json" --check-config >"$W/out" 2>&1; rc=$?
t_eq "a bad \"iproute2\" is a configuration error" 2 "$rc"
t_check "... naming the node and the value" grep -q 'node L1: "iproute2" "six" is not a version' "$W/out"

# ---- a missing plan folder: one log line, not one a round --------------------
PORT=$(port); U=http://127.0.0.1:$PORT
"$D" --topology "$W/addressed.json" --listen 127.0.0.1:$PORT --backend plan --plan-dir "$W/missing" \
     --interval 0.1 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon with a missing plan folder starts" "$(tail -3 "$W/log")"; t_done; }
for i in $(seq 100); do n=$(errors_total); [ "${n:-0}" -ge 15 ] && break; sleep 0.1; done
t_ge "missing folder: at least 15 automatic rounds failed" "$(errors_total)" 15
t_eq "... and the log says so once (and its event once)" "1 1" \
  "$(grep -c 'warning: rebalance: backend: backend_options.plan_dir' "$W/log") $(grep -c 'event backend_error' "$W/log")"
t_check "... naming the key, the folder and the cause" \
  grep -q "rebalance: backend: backend_options.plan_dir $W/missing: No such file or directory" "$W/log"
t_eq "... one backend_error event" 1 "$(nevents backend_error)"
t_check "/status: not healthy, naming plan_dir" \
  status_is '(.backend.healthy|not) and (.backend.error|test("backend_options.plan_dir .*/missing: No such file"))'
mkdir "$W/missing"
for i in $(seq 50); do [ -s "$W/missing/plan.json" ] && break; sleep 0.1; done
t_check "once the folder exists a round writes the plan" test -s "$W/missing/plan.json"
t_check "/status: healthy again" status_is '.backend.healthy and .backend.error==null'
sleep 0.5
t_eq "the log says once that it works again" 1 "$(grep -c 'backend plan: working again' "$W/log")"
t_eq "... and nothing more about the folder" 3 "$(grep -c 'plan_dir' "$W/log")"
stop

# ---- backend none ----------------------------------------------------------
PORT=$(port); U=http://127.0.0.1:$PORT
"$D" --topology "$W/addressed.json" --listen 127.0.0.1:$PORT --backend none --interval 3600 2>"$W/log" & PID=$!
wait_up "$U" || { t_fail "daemon none starts" "$(tail -3 "$W/log")"; t_done; }
"$G" --topology "$W/addressed.json" --flows 4 --congest L1-S1 --post $U/api/v1/reports >/dev/null
curl -s -X POST "$U/api/v1/rebalance" > "$W/rbn"
t_check "none: the round moves flows but is not applied" jq -e '.moved>=1 and (.applied|not) and .error==null' "$W/rbn"
t_check "none: /status says not applied, healthy, no error" \
  status_is '(.last_rebalance.applied|not) and .last_rebalance.error==null and .backend.healthy'
t_eq "none: no backend errors" 0 "$(errors_total)"
stop
t_done
