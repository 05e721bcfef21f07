# Helpers for the end-to-end tests, the demo and the e2e benchmark; source it.
# Everything started here is recorded by PID and stopped by PID (lab_cleanup);
# the fabric is removed with `lab down` for this LAB_ID only.
#
#   lab_init ID                     set LAB_ID (ID + PID), LAB_TMP; remove dead labs
#   lab_up TOPOLOGY ARGS...         lab up; the resolved topology in $LAB_TOPO
#   lab_addr NODE / lab_uplinks NODE / lab_downlinks NODE / lab_hostif LEAF HOST / lab_hosts_of LEAF
#   lab_pick_sport LEAF HOST DST DPORT WANT_IF FROM   a source port ECMP sends by WANT_IF
#   lab_bg NAME CMD...              start CMD in the background, remember its PID
#   lab_stop NAME [SECS]            stop one remembered process (TERM, then KILL after SECS, default 5)
#   lab_sleep_until EPOCH           sleep until then (at once when past)
#   iperf_server NODE PORT JSON     one-shot iperf3 server writing its JSON report
#   iperf_client NODE DST PORT CPORT SECS JSON   (IPERF_START_AT=EPOCH: it waits
#                                   in the node until then, so that flows start together;
#                                   JSON.start: when iperf3 was started, epoch s)
#   iperf_window T1 T2 JSON...      aggregate goodput (bit/s) received in [T1,T2] (epoch s)
#   iperf_bins T1 T2 JSON...        per-second aggregate goodput, "T BPS" lines
#   iperf_reach LEVEL T0 T1 STEP BASE JSON...   when the aggregate first reaches LEVEL
#   (IPERF_INTERVAL: iperf3's report interval, default 1 s)
#   lab_cc                          iperf3's option for the senders' TCP congestion
#                                   control: LAB_TCP_CC (unset or "default": the
#                                   namespace's own, which is the machine's; bench 50
#                                   sets cubic; docs/lab.md)
#   lab_ack_prio                    every link's small packets (ACKs) served ahead
#                                   of its data (two htb classes; bench 50)
#   lab_hosts                       the topology's hosts, one a line
#   lab_initcwnd N                  every host's TCP starts with N segments of window
#                                   (its default route's initcwnd and initrwnd)
#   lab_txbytes NODE IF...          tx_bytes of interfaces inside NODE
#   tf_bin NAME                     path of a tierflow program (optimised first), or fail
#   lab_cleanup                     stop every remembered process, lab down
LAB_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TF_ROOT=${TF_ROOT:-$(cd "$LAB_LIB_DIR/../.." && pwd)}
LAB="$LAB_LIB_DIR/lab"
declare -gA LAB_PIDS=()

# ID gets this shell's PID appended unless LAB_FIXED_ID is set, so that
# concurrent runs of the same test never share a lab; leftovers of killed runs
# are removed by `lab gc` here.
lab_init() {
  export LAB_OWNER_PID=$$
  if [ -n "${LAB_FIXED_ID:-}" ]; then export LAB_ID=$1; else export LAB_ID=$1$$; fi
  "$LAB" gc 2>/dev/null || true
  LAB_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tflab-$1.XXXXXX")
  LAB_TOPO=$LAB_TMP/topology.json
}

lab_up() { LAB_NS_OF=""; "$LAB" up "$@" > "$LAB_TOPO"; }

# Each node's namespace, read once from the resolved topology (lab_up's):
# iperf_client starts many clients at one instant, and a `lab exec` each
# (a bash script, an awk) made bench 50's 16 clients start 0.4-1.6 s after
# it on a busy machine (docs/lab.md).
declare -gA LAB_NS=()
LAB_NS_OF=""
_lab_ns_load() {
  [ "$LAB_NS_OF" = "$LAB_TOPO" ] && return 0
  local n ns
  LAB_NS=()
  while read -r n ns; do LAB_NS[$n]=$ns; done < <(jq -r '.nodes[] | "\(.name) \(.netns)"' "$LAB_TOPO" 2>/dev/null)
  LAB_NS_OF=$LAB_TOPO
}

# Bounds every link end's queue (both ends of every link, hosts' too) to MS
# milliseconds of the lab's link rate, at least 128 kB (more than one GSO
# packet): a bfifo under the lab's own htb class, in this lab's namespaces,
# removing nothing. The lab's default is the pfifo of txqueuelen (1000)
# packets, GSO super-packets of up to 64 kB: about 10 s at 50 Mbit/s, where
# a data-center switch buffers milliseconds. LAB_QUEUE_BYTES: the bound
# (0 with MS 0, which leaves the lab's queues as they are). docs/lab.md,
# "Late starters below the fat threshold".
lab_bound_queues() { # MS
  local ms=$1 mbit
  LAB_QUEUE_BYTES=0
  [ "$ms" = 0 ] && return 0
  mbit=$(jq -r '.lab.mbit // 100' "$LAB_TOPO")
  LAB_QUEUE_BYTES=$(awk -v m="$mbit" -v ms="$ms" 'BEGIN{b = m * 1e6 / 8 * ms / 1000; if (b < 131072) b = 131072; printf "%d", b}')
  _lab_tc_every_end "qdisc replace dev DEV parent $LAB_DATA_CLASS handle 10: bfifo limit $LAB_QUEUE_BYTES"$'\n'
}

# Runs TEMPLATE (tc batch lines, DEV standing for the interface) at every
# link end, both ends of every link, hosts' too: one read of the topology,
# one `tc -batch` a namespace.
_lab_tc_every_end() { # TEMPLATE
  local n dev
  local -A cmds=()
  while read -r n dev; do
    cmds[$n]+=${1//DEV/$dev}
  done < <(jq -r '(reduce .nodes[] as $x ({}; .[$x.name] = $x.netns)) as $ns
    | .links[] | "\($ns[.a]) \(.a_if)", "\($ns[.b]) \(.b_if)"' "$LAB_TOPO")
  for n in "${!cmds[@]}"; do printf '%s' "${cmds[$n]}" | tc -n "$n" -batch - || return 1; done
}

# Gives every link end's small packets (IP datagrams under 128 bytes: a
# TCP flow's ACKs, pings) a class of their own under the lab's htb, served
# before the data (htb prio 0, guaranteed 5% of the link, up to all of it),
# the data in a second class beside it: in this lab's namespaces, removing
# nothing. Without it a sender's ACKs wait behind other flows' data in the
# lab's deep queues (lab_bound_queues), hundreds of ms where flows meet: a
# flow that lost its window in a collision regrows at that round trip's pace
# long after a move gave it a free path (docs/lab.md, "ACKs ahead of the
# data"), where a switch's shallow buffer would hold them microseconds.
# The lab's default class (1:1) becomes the two classes' parent; the
# filters classify every packet, none falls to the default.
# LAB_DATA_CLASS: the class whose queue lab_bound_queues bounds.
LAB_DATA_CLASS=1:1
lab_ack_prio() {
  local mbit
  mbit=$(jq -r '.lab.mbit // 100' "$LAB_TOPO")
  _lab_tc_every_end "class add dev DEV parent 1:1 classid 1:2 htb rate $((mbit * 50))kbit ceil ${mbit}mbit prio 0 quantum 1514
class add dev DEV parent 1:1 classid 1:3 htb rate $((mbit * 950))kbit ceil ${mbit}mbit prio 1 quantum 60000
filter add dev DEV parent 1: protocol ip prio 1 u32 match u16 0 0xff80 at 2 flowid 1:2
filter add dev DEV parent 1: protocol all prio 2 u32 match u32 0 0 at 0 flowid 1:3
" || return 1
  LAB_DATA_CLASS=1:3
}

# Starts every host's TCP flows with N segments in flight (initcwnd) and
# offers N segments of receive window from the first ACK (initrwnd): each
# host's default route changed in place, in this lab's namespaces, nothing
# removed. N 0 leaves the routes as they are. A RoCE queue pair starts at
# line rate; a CUBIC sender from 10 segments, and a slow start that its
# HyStart ends early when other flows' queues lift the round trip leaves it
# growing by CUBIC's rule for seconds on a free path (docs/lab.md, "The
# senders' first window"): the bench measures placement, not that.
lab_initcwnd() { # N
  local n=$1 h r
  [ "$n" = 0 ] && return 0
  _lab_ns_load
  for h in $(lab_hosts); do
    r=$(ip -n "${LAB_NS[$h]}" route show default) && [ -n "$r" ] || { echo "lab_initcwnd: no default route on $h" >&2; return 1; }
    # shellcheck disable=SC2086  # the route's own words, re-given
    ip -n "${LAB_NS[$h]}" route change $r initcwnd "$n" initrwnd "$n" || return 1
  done
}

lab_hosts() { jq -r '.nodes[] | select(.tier == "host") | .name' "$LAB_TOPO"; }
lab_addr() { jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .addr' "$LAB_TOPO"; }
lab_tier_of() { jq -r --arg n "$1" '.nodes[] | select(.name == $n) | .tier' "$LAB_TOPO"; }
# Interfaces of NODE toward the tier above it, in file order.
# NODE's ports towards a higher tier (up), or towards a lower tier's switch,
# not its hosts (down: a spine's downlinks).
_lab_ports() {
  jq -r --arg n "$1" --arg way "$2" '.tiers as $tiers | (reduce range(0; $tiers|length) as $i ({}; .[$tiers[$i]] = $i)) as $ti
    | (reduce .nodes[] as $x ({}; .[$x.name] = $ti[$x.tier])) as $t
    | def want($me; $far): if $way == "up" then $t[$far] > $t[$me] else $t[$far] < $t[$me] and $t[$far] > 0 end;
      .links[] | if .a == $n and want(.a; .b) then .a_if elif .b == $n and want(.b; .a) then .b_if else empty end' "$LAB_TOPO"
}
lab_uplinks() { _lab_ports "$1" up; }
lab_downlinks() { _lab_ports "$1" down; }
lab_hostif() {
  jq -r --arg l "$1" --arg h "$2" '.links[] | if .a == $l and .b == $h then .a_if elif .b == $l and .a == $h then .b_if else empty end' "$LAB_TOPO"
}
lab_hosts_of() {
  jq -r --arg l "$1" '(reduce .nodes[] as $x ({}; .[$x.name] = $x.tier)) as $t
    | .links[] | if .a == $l and $t[.b] == "host" then .b elif .b == $l and $t[.a] == "host" then .a else empty end' "$LAB_TOPO"
}
lab_leaf_of() {
  jq -r --arg h "$1" '(reduce .nodes[] as $x ({}; .[$x.name] = $x.tier)) as $t
    | [.links[] | if .a == $h and $t[.b] == "leaf" then .b elif .b == $h and $t[.a] == "leaf" then .a else empty end][0]' "$LAB_TOPO"
}

# The first source port >= FROM that the leaf's multipath hash sends out of
# WANT_IF for a flow HOST -> DST:DPORT of PROTO (tcp unless given: the hash
# takes the protocol in). One `ip -batch` for 256 candidates.
lab_pick_sport() {
  local leaf=$1 host=$2 dst=$3 dport=$4 want=$5 from=$6 proto=${7:-tcp} src iif
  src=$(lab_addr "$host"); iif=$(lab_hostif "$leaf" "$host")
  seq "$from" $((from + 255)) | awk -v d="$dst" -v s="$src" -v i="$iif" -v dp="$dport" -v p="$proto" \
      '{ printf "route get %s from %s iif %s ipproto %s sport %d dport %d\n", d, s, i, p, $1, dp }' \
    | "$LAB" exec "$leaf" -- ip -o -batch - \
    | awk -v w="$want" -v f="$from" '{ for (k = 1; k < NF; k++) if ($k == "dev" && $(k+1) == w) { print f + NR - 1; exit } }'
}

# ECMP's choice (uplink name) at LEAF for a TCP flow HOST -> DST sport:dport.
lab_route_dev() {
  local leaf=$1 host=$2 dst=$3 sport=$4 dport=$5
  "$LAB" exec "$leaf" -- ip -o route get "$dst" from "$(lab_addr "$host")" iif "$(lab_hostif "$leaf" "$host")" \
    ipproto tcp sport "$sport" dport "$dport" | awk '{ for (k = 1; k < NF; k++) if ($k == "dev") { print $(k+1); exit } }'
}

lab_bg() {
  local name=$1; shift
  "$@" &
  LAB_PIDS[$name]=$!
}
lab_stop() {
  local pid=${LAB_PIDS[$1]:-} i
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null
  for i in $(seq $((${2:-5} * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  # Said, since what it did not finish (a withdrawal on exit) is left behind.
  kill -0 "$pid" 2>/dev/null && echo "lab_stop: $1 (pid $pid) still running ${2:-5} s after SIGTERM: SIGKILL" >&2
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  unset "LAB_PIDS[$1]"
  return 0
}
# NAME [SECS]: waits up to SECS (default 3) for NAME to exit on its own (an
# iperf3 -s -1 whose client is gone writes its JSON and ends), then lab_stop.
lab_end() {
  local pid=${LAB_PIDS[$1]:-} i
  for i in $(seq $((${2:-3} * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  lab_stop "$1"
}
lab_cleanup() {
  local n
  for n in "${!LAB_PIDS[@]}"; do kill "${LAB_PIDS[$n]}" 2>/dev/null; done
  sleep 0.2
  for n in "${!LAB_PIDS[@]}"; do kill -9 "${LAB_PIDS[$n]}" 2>/dev/null; wait "${LAB_PIDS[$n]}" 2>/dev/null; done
  LAB_PIDS=()
  "$LAB" down 2>/dev/null
  [ -n "${LAB_TMP:-}" ] && [ -z "${LAB_KEEP_TMP:-}" ] && rm -rf "$LAB_TMP"
  return 0
}

# A namespace inherits the machine's default congestion control (BBR on
# the development machine checked, CUBIC on a stock Debian) and may not
# choose another outside the root's allowed list, so each sender sets its
# own on the socket when LAB_TCP_CC names one: bench 50's figures must not
# depend on the machine's sysctl (with BBR the same stride:1 flows read
# 621-681 Mbit/s, with CUBIC 758-763). The suites still inherit:
# test_bgp_backend, tuned with BBR, fails 5 checks with CUBIC senders
# (docs/lab.md).
lab_cc() { [ "${LAB_TCP_CC:-default}" = default ] || echo "-C $LAB_TCP_CC"; }

# Sleeps until EPOCH (seconds, fractions allowed); at once when it is past.
lab_sleep_until() { sleep "$(awk -v t="$1" -v n="$(date +%s.%N)" 'BEGIN{d = t - n; printf "%.3f", (d > 0 ? d : 0)}')"; }

iperf_server() { lab_bg "srv-$1-$2" "$LAB" exec "$1" -- iperf3 -s -1 -J -i "${IPERF_INTERVAL:-1}" -p "$2" --logfile "$3"; }
# A client's source port is fixed (--cport: the same five-tuple, the same
# ECMP path, run after run), so a TIME_WAIT left on it by the run before
# fails the next bind: "unable to connect stream: Address already in use".
# The client keeps one, 60 s, when its end closes first or at once with the
# server's; bench 50's randbij lost flows so in 4 of 6 runs, silently.
# tcp_tw_reuse does not help a bind; the client's namespace (the lab's)
# drops its own TIME_WAIT on that one port first (ss -K, SOCK_DESTROY).
iperf_client() {
  _lab_ns_load
  [ -n "${LAB_NS[$1]:-}" ] || { echo "iperf_client: no node '$1' in $LAB_TOPO" >&2; return 1; }
  lab_bg "cli-$1-$4" ip netns exec "${LAB_NS[$1]}" sh -c 'ss -K -tn state time-wait "( sport = :$2 )" >/dev/null 2>&1
    sleep "$(awk -v a="$0" -v n="$(date +%s.%N)" "BEGIN{d = a - n; printf \"%.3f\", (d > 0 ? d : 0)}")"; date +%s.%N > "$1.start"; shift 2; exec "$@"' \
    "${IPERF_START_AT:-0}" "$6" "$4" iperf3 -c "$2" -p "$3" --cport "$4" $(lab_cc) -t "$5" -i "${IPERF_INTERVAL:-1}" -J --logfile "$6"
}
# The clients of FILE... (their -J logs, of clients that ran out their -t)
# that failed, one line each: FILE: iperf3's error, or "no result" (no
# interval sent). A lost flow lowers an aggregate as a slow one does;
# whoever sums them says so.
iperf_failed() {
  local f why
  for f in "$@"; do
    why="no result"
    [ ! -s "$f" ] || why=$(jq -r '.error // (if (.intervals | length) > 0 then "" else "no result" end)' "$f" 2>/dev/null) ||
      why="no result"
    [ -z "$why" ] || echo "$f: $why"
  done
}
# Waits until NODE listens on PORT (iperf3 server up), at most 5 s.
iperf_wait_listen() {
  local i
  for i in $(seq 50); do
    "$LAB" exec "$1" -- ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
    sleep 0.1
  done
  return 1
}

# A log's interval sums, each once: a server whose client was stopped
# (SIGTERM, "the client has terminated") writes its last interval twice,
# which counted a second twice in a window that held it (bench 50's oracle
# at 102-109% of what 16 flows can carry once e2e runs stopped their
# clients after the windows).
_IPERF_SUMS='[.intervals[]?.sum] | unique_by(.start) | .[]'
# Interval reports as "START_EPOCH END_EPOCH VALUE" lines, VALUE being KEY
# of each interval's sum (0 when absent).
_iperf_field() {
  local key=$1 f; shift
  for f in "$@"; do
    [ -s "$f" ] || continue
    jq -r --arg k "$key" ".start.timestamp.timesecs as \$t | $_IPERF_SUMS"' | "\($t + .start) \($t + .end) \(.[$k] // 0)"' "$f" 2>/dev/null
  done
}
# Receiver-side interval reports, as "START_EPOCH END_EPOCH BYTES" lines.
_iperf_intervals() { _iperf_field bytes "$@"; }
# "START END VALUE" lines (FILE, else stdin) summed over [T1, T2), each
# prorated by its overlap, per second of the window, times MULT, printed
# with FMT: iperf_window's bit/s, iperf_retx's retransmits/s, iv_window's.
_iperf_per_s() { # T1 T2 MULT FMT [FILE]
  awk -v a="$1" -v b="$2" -v m="$3" -v f="$4" '
    { s = $1; e = $2; if (e <= s) next; lo = (s > a ? s : a); hi = (e < b ? e : b)
      if (hi > lo) n += $3 * (hi - lo) / (e - s) }
    END { printf f "\n", (b > a ? n * m / (b - a) : 0) }' ${5:+"$5"}
}
iperf_window() {
  local t1=$1 t2=$2; shift 2
  _iperf_intervals "$@" | _iperf_per_s "$t1" "$t2" 8 %.0f
}
# The same from an intervals file written once by _iperf_intervals (reading
# the JSON costs a jq per file; a run's windows and bins read it once):
#   iv_window FILE T1 T2   aggregate goodput (bit/s) over [T1, T2)
#   iv_bins FILE T1 T2     1-s bins over [T1, T2), "T BPS" lines
iv_window() { _iperf_per_s "$2" "$3" 8 %.0f "$1"; }
iv_bins() {
  local t
  for ((t = $2; t < $3; t++)); do echo "$t $(iv_window "$1" "$t" $((t + 1)))"; done
}
# iperf_reach LEVEL T0 T1 STEP BASE JSON [BASE JSON ...]: seconds from T0 to
# the end of the first STEP-long bin in [T0, T1] whose aggregate reaches
# LEVEL bit/s, or -1. iperf3 stamps its start in whole seconds, so each
# receiver's intervals are placed from BASE (epoch, sub-second: when its
# client was started) instead; IPERF_INTERVAL below 1 gives the resolution.
iperf_reach() {
  local level=$1 t0=$2 t1=$3 step=$4; shift 4
  while [ $# -ge 2 ]; do
    [ -s "$2" ] && jq -r --argjson b "$1" "$_IPERF_SUMS"' | "\($b + .start) \($b + .end) \(.bytes)"' "$2" 2>/dev/null
    shift 2
  done | awk -v L="$level" -v a="$t0" -v b="$t1" -v st="$step" '
    { s[NR] = $1; e[NR] = $2; by[NR] = $3; n = NR }
    END { for (t = a; t + st <= b + 1e-9; t += st) { bytes = 0
            for (i = 1; i <= n; i++) { if (e[i] <= s[i]) continue
              lo = (s[i] > t ? s[i] : t); hi = (e[i] < t + st ? e[i] : t + st)
              if (hi > lo) bytes += by[i] * (hi - lo) / (e[i] - s[i]) }
            if (bytes * 8 / st >= L) { printf "%.1f\n", t + st - a; exit } }
          print -1 }'
}
# iperf_retx T1 T2 CLIENT_JSON...: TCP segments the senders retransmitted
# per second over [T1, T2) (the clients' interval reports, prorated).
iperf_retx() {
  local t1=$1 t2=$2; shift 2
  _iperf_field retransmits "$@" | _iperf_per_s "$t1" "$t2" 1 %.1f
}
iperf_bins() {
  local t1=$1 t2=$2; shift 2
  local iv; iv=$(mktemp); _iperf_intervals "$@" > "$iv"
  iv_bins "$iv" "$t1" "$t2"; rm -f "$iv"
}

lab_txbytes() { # one exec for all, so that the counters are read together
  local node=$1; shift
  local -a f=()
  local i; for i in "$@"; do f+=("/sys/class/net/$i/statistics/tx_bytes"); done
  "$LAB" exec "$node" -- cat "${f[@]}" | tr '\n' ' '
  echo
}

tf_bin() {
  local c
  for c in "${TF_OPT_BIN:-}/$1" "${TF_BIN:-}/$1" "${TF_TOOLS:-}/$1" "$TF_ROOT/build/bin/$1" "$TF_ROOT/build/tools/$1"; do
    [ -x "$c" ] && [ -f "$c" ] && { echo "$c"; return 0; }
  done
  command -v "$1" 2>/dev/null
}

# ---- routing (lab BGP)
# For labs that route with BGP (`lab up --routing bgp`, the default): FIB
# queries read the kernel (what forwards), not FRR.
#   lab_routing                       bgp or static (.lab.routing of $LAB_TOPO)
#   lab_nexthops NODE PREFIX          live next hops of PREFIX in NODE's main-table FIB
#                                     (0 when absent; "dead"/"linkdown" ones do not count)
#   lab_wait_nexthops NODE PREFIX N SECS [T0]   until it has N; prints the milliseconds
#                                     since T0 (date +%s%N; default: now), polled every
#                                     10 ms; fails after SECS
#   lab_vtysh NODE CMD...             vtysh -c CMD ... against NODE's router
#   lab_bgp_established NODE          every BGP session of NODE is Established
lab_routing() { jq -r '.lab.routing // "static"' "$LAB_TOPO"; }
_lab_count_nexthops() {
  awk '{ k = split($0, seg, /nexthop /)
         if (k == 1) { if ($0 ~ / via | dev / && $0 !~ /dead|linkdown|blackhole|unreachable/) n++ }
         else for (i = 2; i <= k; i++) if (seg[i] !~ /dead|linkdown/) n++ }
       END { print n + 0 }'
}
lab_nexthops() { ip -n "$("$LAB" netns "$1")" -4 -o route show exact "$2" | _lab_count_nexthops; }
lab_wait_nexthops() {
  local ns t0=${5:-} now; ns=$("$LAB" netns "$1") || return 1
  [ -n "$t0" ] || t0=$(date +%s%N)
  while :; do
    [ "$(ip -n "$ns" -4 -o route show exact "$2" | _lab_count_nexthops)" = "$3" ] && break
    now=$(date +%s%N)
    [ $(( (now - t0) / 1000000 )) -lt $(( $4 * 1000 )) ] || return 1
    sleep 0.01
  done
  echo $(( ($(date +%s%N) - t0) / 1000000 ))
}
lab_vtysh() { local n=$1; shift; "$LAB" vtysh "$n" -- "$@"; }
lab_bgp_established() {
  lab_vtysh "$1" 'show bgp ipv4 unicast summary json' 2>/dev/null \
    | jq -e '(.peers | length) > 0 and all(.peers[]; .state == "Established")' >/dev/null
}
