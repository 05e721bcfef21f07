#!/usr/bin/env bash
# What `lab up` waits for before it returns (tests/lab/frr.jq "expect"
# lines, docs/lab.md "Convergence"), from the generated fabrics without
# root or routers: every switch, not only the leaves, must hold every other
# leaf's prefix over each next hop of a shortest valley-free path. A CI run
# once took test_fattree_stride's "tables as before tierflowd" snapshot while
# an aggregation switch held a remote pod's prefix over one core of two.
# timeout: 60
set -u
. "$TF_ROOT/tests/lib/tap.sh"
T="$TF_BIN/tierflow-topo"
[ -x "$T" ] || { t_fail "tierflow-topo built" "missing $T"; t_done; }
command -v jq >/dev/null || { t_fail "tool jq present" "scripts/deps.sh test installs it"; t_done; }
# "NODE N" per expect line, counted: "COUNT NODE N".
expects() {
  "$T" "$1" | jq --arg prefix tfx --argjson mbit 50 --argjson seed 7 --arg id x --arg mgmtnet 10.253.0.0/24 \
      --arg mgmtif m0 --arg routing bgp -f "$TF_ROOT/tests/lab/resolve.jq" |
    jq -r -f "$TF_ROOT/tests/lab/frr.jq" | awk -F'\t' '$1 == "expect" {print $2, $4}' | sort | uniq -c |
    awk '{print $1, $2, $3}'
}
ft=$(expects fattree:k=4,gbps=1)
t_eq "fat tree: 20 switches wait for routes" 20 "$(awk '{print $2}' <<< "$ft" | sort -u | wc -l)"
t_eq "fat tree: a leaf, 7 other leaves over both aggregation switches" "7 L1 2" "$(grep ' L1 ' <<< "$ft")"
t_eq "fat tree: an aggregation switch, its pod's 2 leaves over 1 downlink, the 6 others over both cores" \
  "2 S1 1,6 S1 2" "$(grep ' S1 ' <<< "$ft" | paste -sd,)"
t_eq "fat tree: a core, 8 leaves over 1 downlink each" "8 SS1 1" "$(grep ' SS1 ' <<< "$ft")"
ls=$(expects leafspine:leaves=3,spines=3,hosts=2,gbps=100)
t_eq "leaf/spine 3x3: a leaf, 2 other leaves over 3 spines" "2 L1 3" "$(grep ' L1 ' <<< "$ls")"
t_eq "leaf/spine 3x3: a spine, 3 leaves over 1 downlink each" "3 S2 1" "$(grep ' S2 ' <<< "$ls")"
t_done
