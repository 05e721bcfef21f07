#!/usr/bin/env bash
# timeout: 120
# beside others: no traffic and no clock; iproute2 into its own namespaces
# The plan backend's files applied by iproute2 into network namespaces, one
# per leaf (issue 14, item 1). tests/tools/plan_steps writes the files of a
# scripted run through the plan backend: flows pinned on both leaves and a
# firewall-mark class, flows that move, flows that end, L2 losing everything,
# then L1. Per step and switch:
#   - <switch>.ipbatch (the transition from the step before) with `ip -batch`
#     exits 0, and the kernel's tierflow objects equal plan.json's for that
#     switch (tests/lib/plancmp.py);
#   - applied twice more, it still exits 0 and still equals plan.json.
# Then <switch>.full.ipbatch, in a scrambled step order, each on top of
# whatever the last one left plus planted garbage in tierflow's own
# priorities and tables (and foreign objects beside them): equal to that
# step's plan.json, exits 0 when applied again, and the foreign objects
# (another protocol, another table type) are untouched.
set -u
. "$(dirname "$0")/../lib/tap.sh"
t_need_root "plan apply test"
PS=$TF_TOOLS/plan_steps; CMP="$(dirname "$0")/../lib/plancmp.py"
[ -x "$PS" ] || { t_skip all "missing $PS (make tools)"; t_done; }
T=$(mktemp -d); NS=(); trap 'for n in "${NS[@]}"; do ip netns del "$n" 2>/dev/null; done; rm -rf "$T"' EXIT

# One namespace per leaf with the uplinks plan_steps' topology names:
# eth<k> holding 10.<l>.<k>.1/31, so that next hop 10.<l>.<k>.0 is on-link.
for l in 1 2; do
  n="tfpa$$-L$l"; NS+=("$n"); ip netns add "$n"
  for k in 1 2 3 4; do
    ip -n "$n" link add eth$k type veth peer name peer$k
    ip -n "$n" link set eth$k up; ip -n "$n" link set peer$k up
    ip -n "$n" addr add 10.$l.$k.1/31 dev eth$k
  done
done
ns() { echo "tfpa$$-$1"; }
"$PS" "$T" > "$T/steps" || { t_fail "plan_steps writes the run"; t_done; }
sed 's/^/# /' "$T/steps"
nsteps=$(wc -l < "$T/steps")

echo "# per step and switch: apply <switch>.ipbatch, compare with plan.json, re-apply twice, compare"
for s in $(seq "$nsteps"); do
  for sw in L1 L2; do
    f="$T/step$s/$sw.ipbatch"
    [ -f "$f" ] || continue
    ip -n "$(ns $sw)" -batch "$f" 2>"$T/err"; rc=$?
    cmp1=$(python3 "$CMP" "$(ns $sw)" "$T/step$s/plan.json" "$sw"); c1=$?
    ip -n "$(ns $sw)" -batch "$f" 2>>"$T/err"; r2=$?
    ip -n "$(ns $sw)" -batch "$f" 2>>"$T/err"; r3=$?
    cmp2=$(python3 "$CMP" "$(ns $sw)" "$T/step$s/plan.json" "$sw"); c2=$?
    echo "# step $s $sw: $(grep -vc '^#' "$f") commands, exit $rc; kernel vs plan.json: $cmp1; again twice: exit $r2 $r3; $cmp2"
    t_eq "step $s $sw.ipbatch exits 0" 0 "$rc"
    t_eq "step $s $sw: kernel equals plan.json" 0 "$c1"
    [ $c1 -eq 0 ] || echo "$cmp1" | sed 's/^/#   /'
    t_eq "step $s $sw.ipbatch applied twice more exits 0 0" "0 0" "$r2 $r3"
    t_eq "step $s $sw: still equal after re-applying" 0 "$c2"
    [ -s "$T/err" ] && sed 's/^/#   ip: /' "$T/err"
  done
done
t_check "L2 lost everything at step 3-4: no tierflow rule or route left" \
  bash -c "python3 '$CMP' '$(ns L2)' '$T/step$nsteps/plan.json' L2 | grep -q '^0 rules, 0 routes equal'"

echo "# full-state files, scrambled order, on planted garbage"
plant() {
  local n; n=$(ns "$1")
  ip -n "$n" rule add pref 20005 from 1.2.3.4 table 7705 protocol 77           # stale tierflow rule
  ip -n "$n" rule add pref 20000 from 10.0.1.9 to 10.0.2.9 table 7700 protocol 77
  ip -n "$n" rule add pref 20256 fwmark 0x20 table 7828 protocol 77
  ip -n "$n" route replace table 7703 proto 77 10.0.9.0/24 via 10.${1#L}.1.0 dev eth1   # stale tierflow route
  ip -n "$n" rule add pref 20005 from 1.2.3.4 table 7705 protocol 78           # foreign: other protocol
  ip -n "$n" route replace table 7703 proto static 10.0.8.0/24 via 10.${1#L}.1.0 dev eth1
}
foreign_ok() {
  local n; n=$(ns "$1")
  ip -n "$n" rule | grep -q '^20005:.*from 1.2.3.4 lookup 7705 proto 78' &&
    ip -n "$n" route show table 7703 | grep -q '^10.0.8.0/24 via .* proto static'
}
for sw in L1 L2; do plant $sw; done
for s in 3 1 5 2 4; do
  [ "$s" -le "$nsteps" ] || continue
  for sw in L1 L2; do
    f="$T/step$s/$sw.full.ipbatch"
    [ -f "$f" ] || continue
    t0=$(date +%s%N)
    ip -n "$(ns $sw)" -batch "$f" 2>"$T/err"; rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    cmp1=$(python3 "$CMP" "$(ns $sw)" "$T/step$s/plan.json" "$sw"); c1=$?
    ip -n "$(ns $sw)" -batch "$f" 2>>"$T/err"; r2=$?
    echo "# full step $s $sw: $(grep -vc '^#' "$f") commands in $ms ms, exit $rc; kernel vs plan.json: $cmp1; again: exit $r2"
    t_eq "full step $s $sw exits 0" 0 "$rc"
    t_eq "full step $s $sw: kernel equals plan.json" 0 "$c1"
    [ $c1 -eq 0 ] || echo "$cmp1" | sed 's/^/#   /'
    t_eq "full step $s $sw applied again exits 0" 0 "$r2"
    t_check "full step $s $sw: foreign rule and route untouched" foreign_ok $sw
    [ -s "$T/err" ] && sed 's/^/#   ip: /' "$T/err"
  done
  for sw in L1 L2; do plant $sw 2>/dev/null; done   # garbage again for the next one
done
t_done
