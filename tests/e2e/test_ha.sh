#!/usr/bin/env bash
# timeout: 180
# Active/standby tierflowd on etcd (docs/ha.md, issue 19) on the real kernel:
# a 2-leaf x 4-spine lab with traffic, a 3-member etcd on loopback, two
# tierflowd (netlink backend, ha.lease_ttl 2 s) and probes posting to both.
#
#   0. one leads, the other is a standby: a write there is 503 naming the
#      leader; a job registered on the leader is visible on the standby,
#      which ingests the probes' reports as well.
#   1. kill -9 the leader: the standby leads within TTL + 1 s; the pinned
#      flows keep flowing (the uplinks' counters); L1's rules see no change
#      at all (ip monitor: nothing withdrawn, nothing re-added); the job is
#      still there.
#   2. SIGSTOP the leader past its lease; the other takes over and changes a
#      pin (a new colliding flow); SIGCONT: the old leader starts no round,
#      says it lost leadership, and L1's rules do not change because of it.
#   3. one etcd member stopped: nothing changes; two: the leader stops acting
#      within TTL + 1 s and the installed rules stay (fail-static).
# Takeover times are printed; only the bound of the issue is asserted.
set -u
TF_ROOT=${TF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TF_ROOT/tests/lib/tap.sh"
. "$TF_ROOT/tests/lab/lib.sh"
t_need_root e2e_ha
for t in iperf3 jq curl; do command -v $t >/dev/null || { t_fail "tool $t present" "scripts/deps.sh test installs it"; t_done; }; done
command -v etcd >/dev/null || { t_skip "active/standby on etcd" "etcd is not installed (scripts/deps.sh test)"; t_done; }
PROBE=$(tf_bin tierflow-probe); CTL=$(tf_bin tierflowd)
if [ -z "$PROBE" ] || [ -z "$CTL" ]; then
  t_skip "active/standby on etcd" "tierflowd or tierflow-probe not built (make all)"; t_done
fi

MBIT=${E2E_MBIT:-50}
TTL=2
EP=18140        # etcd members: client 18141/18143/18145, peer +1 (ports 18100-18199 are this suite's)
lab_init ha41
trap 'lab_cleanup' EXIT
trap 'exit 130' INT TERM

# ---- a 3-member etcd on loopback ---------------------------------------------
CLUSTER=""; EPS=""
for i in 1 2 3; do
  CLUSTER+="${CLUSTER:+,}m$i=http://127.0.0.1:$((EP + 2 * i))"
  EPS+="${EPS:+,}http://127.0.0.1:$((EP + 2 * i - 1))"
done
for i in 1 2 3; do
  lab_bg "etcd$i" etcd --name "m$i" --data-dir "$LAB_TMP/etcd$i" \
    --listen-client-urls "http://127.0.0.1:$((EP + 2 * i - 1))" --advertise-client-urls "http://127.0.0.1:$((EP + 2 * i - 1))" \
    --listen-peer-urls "http://127.0.0.1:$((EP + 2 * i))" --initial-advertise-peer-urls "http://127.0.0.1:$((EP + 2 * i))" \
    --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token "tf$$" \
    --heartbeat-interval 100 --election-timeout 1000 >"$LAB_TMP/etcd$i.log" 2>&1
done
etcd_ok() { ETCDCTL_API=3 etcdctl --endpoints "$EPS" --command-timeout=1s endpoint health >/dev/null 2>&1; }
for i in $(seq 100); do etcd_ok && break; sleep 0.1; done
t_check "3-member etcd on loopback healthy" etcd_ok

t_check "lab up 2x4x4 at ${MBIT} Mbit/s" lab_up leafspine:leaves=2,spines=4,hosts=4,gbps=100 --mbit "$MBIT" --seed 5
[ -s "$LAB_TOPO" ] || t_done
mapfile -t UP1 < <(lab_uplinks L1)
mapfile -t A < <(lab_hosts_of L1)
mapfile -t B < <(lab_hosts_of L2)
MGMT=$(jq -r '.lab.mgmt.controller' "$LAB_TOPO")
URL1="http://$MGMT:18150" URL2="http://$MGMT:18151"
TOKEN=$LAB_TMP/token; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$TOKEN"; chmod 600 "$TOKEN"
AUTH="Authorization: Bearer $(cat "$TOKEN")"
GBPS=$(awk -v m="$MBIT" 'BEGIN{print m/1000}')
L1NS=$("$LAB" netns L1)

ctl() { # N: starts tierflowd N (1 or 2) as ctlN
  local u; [ "$1" = 1 ] && u=$URL1 || u=$URL2
  lab_bg "ctl$1" "$CTL" --topology "$LAB_TOPO" --backend netlink --listen "$MGMT:${u##*:}" --token-file "$TOKEN" \
    --interval 0.5 --log-level debug --set ha.etcd_endpoints="$EPS" --set ha.advertise_url="$u" \
    --set ha.lease_ttl=$TTL --set ha.election="tfe2e$$" >>"$LAB_TMP/ctl$1.log" 2>&1
}
url_of() { [ "$1" = 1 ] && echo "$URL1" || echo "$URL2"; }
role() { curl -s --max-time 1 "$(url_of "$1")/api/v1/status" | jq -r '.ha.role // "down"' 2>/dev/null; }
leader_now() { local n; for n in 1 2; do [ "$(role $n)" = leader ] && { echo $n; return; }; done; echo none; }
metric() { curl -s --max-time 1 "$(url_of "$1")/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
tf_rules() { ip -n "$L1NS" rule show | grep -vE '^(0|32766|32767):' | sort; }
rates() { # SECS: bit/s per L1 uplink from its counters
  local a b i; a=($(lab_txbytes L1 "${UP1[@]}")); sleep "$1"; b=($(lab_txbytes L1 "${UP1[@]}"))
  for ((i = 0; i < ${#UP1[@]}; i++)); do awk -v x="${a[$i]}" -v y="${b[$i]}" -v s="$1" 'BEGIN{printf "%.0f ", (y-x)*8/s}'; done; echo
}
busy() { local n=0 r; for r in "$@"; do awk -v r="$r" -v m="$MBIT" 'BEGIN{exit !(r >= 0.7*m*1e6)}' && n=$((n + 1)); done; echo $n; }
declare -a FSRC FDST FSPORT
flow() { # I SRC DST WANT_IF SECS: a TCP flow that ECMP sends out of WANT_IF at L1
  local i=$1 src=$2 dst=$3 want=$4 secs=$5 sp
  sp=$(lab_pick_sport L1 "$src" "$(lab_addr "$dst")" $((5500 + i)) "$want" $((43000 + 300 * i)))
  [ -n "$sp" ] || { t_fail "a source port for flow $i on $want"; return 1; }
  FSRC[$i]=$src FDST[$i]=$dst FSPORT[$i]=$sp
  iperf_server "$dst" $((5500 + i)) "$LAB_TMP/srv$i.json"
  iperf_wait_listen "$dst" $((5500 + i))
  iperf_client "$src" "$(lab_addr "$dst")" $((5500 + i)) "$sp" "$secs" "$LAB_TMP/cli$i.json"
}
wait_leader() { # SECS: prints the leader's number and the seconds it took, or "none"
  local t0 n; t0=$(date +%s.%N)
  while awk -v a="$t0" -v b="$(date +%s.%N)" -v s="$1" 'BEGIN{exit !(b - a < s)}'; do
    n=$(leader_now); [ "$n" != none ] && { echo "$n $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}')"; return; }
    sleep 0.05
  done
  echo none
}
stable_rules() { # waits until L1's rules stay the same for 2 s (at most 10 s)
  local a b i; a=$(tf_rules)
  for i in $(seq 10); do sleep 2; b=$(tf_rules); [ "$a" = "$b" ] && return 0; a=$b; done; return 1
}

ctl 1; sleep 0.5; ctl 2
for leaf in L1 L2; do
  a=(); for u in $(lab_uplinks $leaf); do a+=(-i "$u"); done
  lab_bg "probe-$leaf" "$LAB" exec $leaf -- "$PROBE" "${a[@]}" --node $leaf --controller "$URL1" --controller "$URL2" \
    --token-file "$TOKEN" --interval 0.5 --link-gbps "$GBPS" >"$LAB_TMP/probe-$leaf.log" 2>&1
done
read -r LDR took < <(wait_leader 10)
t_ne "one tierflowd leads" none "$LDR"
[ "$LDR" = none ] && t_done
SBY=$((3 - LDR))
t_eq "the other is a standby" standby "$(role $SBY)"
t_eq "tierflow_leader: 1 on the leader" 1 "$(metric $LDR tierflow_leader)"
t_eq "tierflow_leader: 0 on the standby" 0 "$(metric $SBY tierflow_leader)"

# ---- 0. writes go to the leader; jobs live in etcd ---------------------------
JOB='{"ranks":["'${A[0]}'","'${A[1]}'","'${B[0]}'","'${B[1]}'"],"parallelism":[{"dim":"tp","size":2},{"dim":"dp","size":2}]}'
t_eq "job registered on the leader" 201 "$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "$AUTH" -H 'Content-Type: application/json' -d "$JOB" "$(url_of $LDR)/api/v1/jobs/train1")"
c=$(curl -s -o "$LAB_TMP/w.json" -w '%{http_code}' -X POST -H "$AUTH" "$(url_of $SBY)/api/v1/rebalance")
t_eq "a write to the standby: 503" 503 "$c"
t_eq "... naming the leader" "$(url_of $LDR)" "$(jq -r .error.leader "$LAB_TMP/w.json")"
for i in $(seq 30); do curl -s "$(url_of $SBY)/api/v1/jobs/train1" | jq -e .id >/dev/null && break; sleep 0.1; done
t_eq "the job is visible on the standby" train1 "$(curl -s "$(url_of $SBY)/api/v1/jobs/train1" | jq -r .id)"
for i in $(seq 50); do [ "$(curl -s "$(url_of $SBY)/api/v1/status" | jq .probes.alive)" = 2 ] && break; sleep 0.1; done
t_eq "the standby ingests too: both probes alive there" 2 "$(curl -s "$(url_of $SBY)/api/v1/status" | jq .probes.alive)"

# ---- traffic: two flows ECMP puts on one L1 uplink; the leader pins one ------
flow 0 "${A[0]}" "${B[0]}" "${UP1[2]}" 60 && flow 1 "${A[1]}" "${B[1]}" "${UP1[2]}" 60 || t_done
for i in $(seq 40); do [ -n "$(tf_rules)" ] && break; sleep 0.25; done
t_ne "the leader pinned a flow (rules in L1)" "" "$(tf_rules)"
stable_rules
R=($(rates 2))
echo "# before takeover: L1 uplinks $(for r in "${R[@]}"; do awk -v b="$r" 'BEGIN{printf "%.1f ", b/1e6}'; done)Mbit/s"
t_eq "before takeover: two uplinks carry one flow each" 2 "$(busy "${R[@]}")"

# ---- 1. kill -9 the leader --------------------------------------------------
before=$(tf_rules)
ip -n "$L1NS" monitor rule >"$LAB_TMP/mon1.txt" 2>&1 & MON=$!
sleep 0.2
kill -9 "${LAB_PIDS[ctl$LDR]}"; unset "LAB_PIDS[ctl$LDR]"
read -r NEW took < <(wait_leader $((TTL + 4)))
echo "# kill -9: tierflowd $NEW leads after ${took:-?} s (lease TTL $TTL s)"
t_eq "kill -9: the standby leads" "$SBY" "$NEW"
t_ge "kill -9: within TTL + 1 s (${took:-?} s)" "$((TTL + 1))" "${took:-99}"
sleep 3
R=($(rates 2))
kill "$MON"; wait "$MON" 2>/dev/null
echo "# after takeover: L1 uplinks $(for r in "${R[@]}"; do awk -v b="$r" 'BEGIN{printf "%.1f ", b/1e6}'; done)Mbit/s"
t_eq "after takeover: the pinned flows keep flowing (two busy uplinks)" 2 "$(busy "${R[@]}")"
t_eq "after takeover: L1's rules unchanged" "$before" "$(tf_rules)"
# The netlink backend's open adds and deletes one probe rule of its own
# (which selectors the kernel keeps); the pins' rules must not move at all.
sed 's/^/# ip monitor rule in L1 during the takeover: /' "$LAB_TMP/mon1.txt"
touched=0
while IFS= read -r r; do grep -qF -- "${r#*:}" "$LAB_TMP/mon1.txt" && touched=$((touched + 1)); done <<< "$before"
t_eq "after takeover: ip monitor saw none of the $(grep -c . <<< "$before") pin rules withdrawn or re-added" 0 "$touched"
t_eq "the job survived the takeover" train1 "$(curl -s "$(url_of $NEW)/api/v1/jobs/train1" | jq -r .id)"
curl -s "$(url_of $NEW)/api/v1/events" | jq -r '.events[] | select(.kind == "leader" or .kind == "adopt") | "# new leader: \(.kind): \(.message)"'

# ---- 2. SIGSTOP the leader past its lease, SIGCONT after a takeover ----------
OLD=$NEW; ctl "$LDR"; NEXT=$LDR
for i in $(seq 50); do [ "$(role $NEXT)" = standby ] && break; sleep 0.1; done
t_eq "the restarted tierflowd is a standby" standby "$(role $NEXT)"
rounds0=$(metric $OLD tierflow_rebalance_rounds_total)   # printed only: a round may run before the SIGSTOP lands
kill -STOP "${LAB_PIDS[ctl$OLD]}"
read -r got took < <(wait_leader $((TTL + 4)))
echo "# SIGSTOP: tierflowd $got leads after ${took:-?} s"
t_eq "SIGSTOP: the other one takes over" "$NEXT" "$got"
pins0=$(tf_rules)
# A third flow onto an uplink that carries one already: the leader must move one.
R=($(rates 1)); hot=0
for ((i = 1; i < ${#R[@]}; i++)); do awk -v a="${R[$i]}" -v b="${R[$hot]}" 'BEGIN{exit !(a > b)}' && hot=$i; done
flow 2 "${A[2]}" "${B[2]}" "${UP1[$hot]}" 40 || t_done
for i in $(seq 40); do [ "$(tf_rules)" != "$pins0" ] && break; sleep 0.25; done
t_ne "the new leader changed a pin" "$pins0" "$(tf_rules)"
stable_rules
before=$(tf_rules)
ev0=$(curl -s --max-time 1 "$(url_of $NEXT)/api/v1/events" | jq '[.events[] | select(.kind == "rebalance")] | length')
tc=$(date +%s.%N)
kill -CONT "${LAB_PIDS[ctl$OLD]}"
sleep 3
ev1=$(curl -s --max-time 1 "$(url_of $NEXT)/api/v1/events" | jq '[.events[] | select(.kind == "rebalance")] | length')
t_eq "SIGCONT: the old leader is a standby" standby "$(role $OLD)"
# A round the SIGSTOP cut short may finish now (the fence then refuses it);
# what must not happen is a round started after the SIGCONT.
st=$(curl -s --max-time 1 "$(url_of $OLD)/api/v1/status")
echo "# SIGCONT: rounds $rounds0 before the SIGSTOP, $(jq -r .rebalance.rounds <<< "$st") now; the last started $(jq -r --argjson t "$tc" '(.last_rebalance.ts // 0) - $t' <<< "$st") s after the SIGCONT"
started_before() { jq -e --argjson t "$1" '.last_rebalance.ts != null and .last_rebalance.ts < $t' <<< "$2" >/dev/null; }
t_check "SIGCONT: it started no round" started_before "$tc" "$st"
t_check "SIGCONT: it says it lost leadership" bash -c "curl -s '$(url_of $OLD)/api/v1/events' | jq -e '[.events[] | select(.kind == \"leader_lost\")] | length > 0' >/dev/null"
t_eq "SIGCONT: its events since show no round, no backend work" 0 "$(curl -s "$(url_of $OLD)/api/v1/events" |
  jq --argjson t "$tc" '[.events[] | select(.ts >= $t and (.kind == "rebalance" or .kind == "backend_error" or .kind == "adopt" or .kind == "pins_withdrawn" or .kind == "unpinned"))] | length')"
if [ "$ev0" = "$ev1" ]; then
  t_eq "SIGCONT: L1's rules unchanged (the new leader did not move anything meanwhile either)" "$before" "$(tf_rules)"
else
  t_skip "SIGCONT: L1's rules unchanged" "the new leader moved a flow in the same seconds"
fi

# ---- 3. etcd members stopped -----------------------------------------------
LDR=$NEXT
before=$(tf_rules)
# A follower first (stopping the raft leader costs an etcd election of its
# own, about its election timeout, 1 s here), then the raft leader.
RAFT=$(ETCDCTL_API=3 etcdctl --endpoints "$EPS" endpoint status -w json 2>/dev/null |
  jq -r '.[] | select(.Status.header.member_id == .Status.leader) | .Endpoint' | sed 's/.*://')
RAFT=$(( (RAFT - EP + 1) / 2 )); FOLLOWER=$(( RAFT % 3 + 1 ))
kill -STOP "${LAB_PIDS[etcd$FOLLOWER]}"
sleep $((TTL + 1))
t_eq "one etcd member (a follower, m$FOLLOWER) stopped: the leader still leads" leader "$(role $LDR)"
kill -STOP "${LAB_PIDS[etcd$RAFT]}"
t0=$(date +%s.%N)
for i in $(seq 100); do [ "$(metric $LDR tierflow_leader)" = 0 ] && break; sleep 0.05; done
lost=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}')
echo "# two etcd members stopped: the leader stopped acting after $lost s"
t_eq "two etcd members stopped: the leader stops acting" 0 "$(metric $LDR tierflow_leader)"
t_ge "... within TTL + 1 s ($lost s)" "$((TTL + 1))" "$lost"
sleep 1
t_eq "... and the installed rules stay (fail-static)" "$before" "$(tf_rules)"
R=($(rates 2))
t_ge "... and traffic keeps flowing on the pinned paths" "$(busy "${R[@]}")" 2
kill -CONT "${LAB_PIDS[etcd$RAFT]}" "${LAB_PIDS[etcd$FOLLOWER]}"
t_done
