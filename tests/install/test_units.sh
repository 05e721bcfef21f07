#!/usr/bin/env bash
# The installed systemd units and default configuration, with systemd's own
# tools: `systemd-analyze verify` passes for tierflowd.service and an
# instance of tierflow-probe@.service (their binaries and man pages
# installed where the units say), `systemd-analyze security --offline=yes`
# scores each at most 3.0; the default configuration passes
# tierflowd --check-config and its plan folder is one the unit's
# StateDirectory= creates; a second `make install` keeps an edited
# configuration; what the units grant is enough, and needed: the probe
# captures with CAP_NET_RAW alone as an unprivileged user and cannot
# without it, and tierflowd's netlink backend, as an unprivileged user with
# CAP_NET_ADMIN alone in a network namespace of its own, writes (and
# removes) the rule it probes the kernel with, which without it is refused.
# Under the units stderr is the journal: both programs then prefix each
# line with its syslog priority (<N>) for journald to file it under.
# timeout: 120
set -u
. "$TF_ROOT/tests/lib/tap.sh"
command -v systemd-analyze >/dev/null || { t_skip all "no systemd-analyze (Debian package systemd)"; t_done; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # the unprivileged probe below runs the program installed here
unset MAKEFLAGS MFLAGS MAKELEVEL
p=$tmp/p
# From a copy of the build (tests/lib/buildcopy.sh): an install with a new
# PREFIX into $TF_BUILD relinked the tierflowd the other suites run, and a
# test_ops copying the build meanwhile once found two objects to compile.
. "$TF_ROOT/tests/lib/buildcopy.sh"
build_copy "$tmp/build" 2>"$tmp/copy.log" || { t_fail "copy of the build" "$(head -3 "$tmp/copy.log")"; t_done; }
if ! make -C "$TF_ROOT" --no-print-directory O="$tmp/build" PREFIX="$p" SYSCONFDIR="$p/etc" install >"$tmp/log" 2>&1; then
  t_fail "make install" "$(tail -5 "$tmp/log")"
  t_done
fi
units=$p/lib/systemd/system
cfg=$p/etc/tierflow/tierflowd.json
t_check "installs tierflowd.service" test -f "$units/tierflowd.service"
t_check "installs tierflow-probe@.service" test -f "$units/tierflow-probe@.service"
t_check "installs the default configuration" test -f "$cfg"
t_eq "no path left unsubstituted" "" "$(grep -l '@[A-Z]*@' "$units"/*.service "$cfg")"
ln -s tierflow-probe@.service "$units/tierflow-probe@lo.service"

cd "$units"
out=$(MANPATH=$p/share/man systemd-analyze verify ./tierflowd.service ./tierflow-probe@lo.service 2>&1); rc=$?
t_eq "systemd-analyze verify: no complaint" "0:" "$rc:$out"
for u in tierflowd.service tierflow-probe@lo.service; do
  systemd-analyze security --offline=yes "./$u" >"$tmp/sec" 2>&1
  score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/sec")
  echo "# $u: exposure $score"
  grep '✗' "$tmp/sec" | sed 's/^/#   /'
  if [ -n "$score" ]; then
    t_check "$u: exposure $score <= 3.0" awk -v s="$score" 'BEGIN{exit !(s <= 3.0)}'
  else
    t_fail "$u: exposure score" "$(tail -3 "$tmp/sec")"
  fi
done
t_check "systemd-analyze security --threshold=30 passes both" sh -c \
  "systemd-analyze security --offline=yes --threshold=30 ./tierflowd.service ./tierflow-probe@lo.service >/dev/null 2>&1"
cd "$TF_ROOT"

t_check "tierflowd runs as a dynamic user with CAP_NET_ADMIN only" \
  grep -qxE 'CapabilityBoundingSet=CAP_NET_ADMIN' "$units/tierflowd.service"
t_check "every writable path is optional or made by systemd" \
  sh -c "! grep -hE '^ReadWritePaths=[^-]' '$units'/*.service"
plan=$(jq -r '.backend_options.plan_dir' "$cfg")
state=$(sed -n 's/^StateDirectory=//p' "$units/tierflowd.service")
t_check "the configuration's plan_dir ($plan) is a StateDirectory= of the unit" \
  sh -c "for d in $state; do [ \"/var/lib/\$d\" = '$plan' ] && exit 0; done; exit 1"
t_check "ExecStart names the installed binary and configuration" \
  grep -q "^ExecStart=$p/bin/tierflowd --config $cfg " "$units/tierflowd.service"
if "$p/bin/tierflowd" --config "$cfg" --set topology=leafspine:leaves=2,spines=2 --check-config >"$tmp/chk" 2>&1; then
  t_pass "the default configuration passes --check-config"
else
  t_fail "the default configuration passes --check-config" "$(cat "$tmp/chk")"
fi
echo '{"topology": "mine.json"}' >"$cfg"
make -C "$TF_ROOT" --no-print-directory O="$tmp/build" PREFIX="$p" SYSCONFDIR="$p/etc" install >"$tmp/log" 2>&1
t_eq "a second make install keeps the operator's configuration" '{"topology": "mine.json"}' "$(cat "$cfg")"

# journald: stderr is the stream JOURNAL_STREAM names (DEV:INODE), as systemd
# sets it for a unit whose output is the journal; then a plain stream.
jlog() { : >"$tmp/j.err"; JOURNAL_STREAM=$(stat -c '%d:%i' "$tmp/j.err") "$@" >/dev/null 2>>"$tmp/j.err"; }
jlog "$p/bin/tierflowd" --topology "$tmp/no-such-topology.json"
t_check "tierflowd's error to the journal: <3>error: ..." grep -q '^<3>error: .*no-such-topology.json' "$tmp/j.err"
jlog "$p/bin/tierflowd" --topology leafspine --set thresholds.util=x
t_check "a configuration tierflowd refuses at start, to the journal: <3>tierflowd: ..." \
  grep -q '^<3>tierflowd: .*thresholds.util' "$tmp/j.err"
jlog "$p/bin/tierflow-probe" -r "$tmp/no-such.pcap"
t_check "the probe's error to the journal: <3>error: ..." grep -q '^<3>error: .*no-such.pcap' "$tmp/j.err"
"$p/bin/tierflow-probe" -r "$tmp/no-such.pcap" 2>"$tmp/plain.err" >/dev/null
t_check "on a plain stderr: time, program and level, no prefix" \
  grep -qE '^[0-9]{4}-[0-9-]+T[0-9:.]+Z tierflow-probe error: .*no-such.pcap' "$tmp/plain.err"
"$p/bin/tierflow-probe" --journal -r "$tmp/no-such.pcap" 2>"$tmp/asked.err" >/dev/null
t_check "--journal asks for the prefixes on any stream" grep -q '^<3>error: .*no-such.pcap' "$tmp/asked.err"

# What the probe's unit grants: an unprivileged user, CAP_NET_RAW alone.
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
  t_skip "probe with CAP_NET_RAW only" "needs root and setpriv to drop to nobody"
else
  nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="-all$1" --ambient-caps="-all$1" \
               --bounding-set="-all$1" -- timeout -s INT 2 "$p/bin/tierflow-probe" -i lo --interval 0.3; }
  nobody ,+net_raw >"$tmp/cap.out" 2>"$tmp/cap.err"
  t_check "as nobody with CAP_NET_RAW the probe captures on lo and reports" \
    jq -se 'length >= 2 and all(.links[0].if == "lo")' "$tmp/cap.out"
  nobody "" >"$tmp/nocap.out" 2>"$tmp/nocap.err"; rc=$?
  t_check "without it the probe exits 1 naming the interface" \
    sh -c "[ $rc -eq 1 ] && grep -q -- '-i lo:.*permission' '$tmp/nocap.err'"

  # tierflowd's netlink backend in an unnamed network (and UTS) namespace that
  # vanishes with it, programming "switch L1", the host name it is given.
  # At start it adds a rule that matches nothing (from 255.255.255.255, at
  # tierflow's last priority) to learn whether the kernel keeps the DSCP
  # selector, reads it back and deletes it.
  ctl() { # CAPS OUT: runs tierflowd there until it answers, then lists the rules
    unshare -n -u sh -c '
      hostname L1; ip link set lo up
      setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="-all$1" --ambient-caps="-all$1" \
        --bounding-set="-all$1" -- "$3" --topology leafspine:leaves=2,spines=2 --backend netlink \
        --listen 127.0.0.1:18311 --interval 3600 2>"$2.log" & pid=$!
      i=0; while [ $i -lt 100 ] && ! curl -sf http://127.0.0.1:18311/api/v1/status >/dev/null; do sleep 0.1; i=$((i+1)); done
      ip rule list >"$2.rules"; kill $pid; wait $pid' sh "$1" "$2" "$p/bin/tierflowd"
  }
  ctl ,+net_admin "$tmp/nl"
  t_check "as nobody with CAP_NET_ADMIN the netlink backend starts" grep -q 'netlink backend: 1 switch' "$tmp/nl.log"
  t_check "... and its rule writes are not refused" sh -c "! grep -q 'not permitted' '$tmp/nl.log'"
  t_check "... and the probe rule is gone again" sh -c "! grep -q '255.255.255.255' '$tmp/nl.rules'"
  ctl "" "$tmp/nonl"
  t_check "without CAP_NET_ADMIN the same write is refused" grep -q 'Operation not permitted' "$tmp/nonl.log"
fi
t_done
