#!/usr/bin/env bash
# `make install` honours PREFIX, SYSCONFDIR and DESTDIR: programs, dashboard,
# man pages and the systemd units land under DESTDIR/PREFIX, the default
# configuration under DESTDIR/SYSCONFDIR, nowhere else, and the installed
# programs run. (tests/install/test_units.sh checks the units themselves.)
# timeout: 300
set -u
. "$TF_ROOT/tests/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest="$tmp/root"
. "$TF_ROOT/tests/lib/buildcopy.sh"
build_copy "$tmp/build" 2>"$tmp/log" || { t_fail "copy of the build" "$(head -3 "$tmp/log")"; t_done; }
if ! make -C "$TF_ROOT" --no-print-directory O="$tmp/build" PREFIX=/opt/tf DESTDIR="$dest" install >"$tmp/log" 2>&1; then
  t_fail "make install" "$(tail -5 "$tmp/log")"
  t_done
fi
t_pass "make install PREFIX=/opt/tf DESTDIR=..."
for p in tierflow-probe tierflowd tierflow-sim tierflow-topo; do
  t_check "installs $p" test -x "$dest/opt/tf/bin/$p"
done
t_check "installed tierflowd runs" "$dest/opt/tf/bin/tierflowd" --help
t_check "installed tierflowd looks in /opt/tf/share/tierflow" grep -q -a /opt/tf/share/tierflow "$dest/opt/tf/bin/tierflowd"
t_check "installed tierflow-probe runs" "$dest/opt/tf/bin/tierflow-probe" --help
t_check "installs the dashboard" test -f "$dest/opt/tf/share/tierflow/web/index.html"
t_check "installs tierflowd(8)" test -f "$dest/opt/tf/share/man/man8/tierflowd.8"
t_check "installs tierflow-probe(1)" test -f "$dest/opt/tf/share/man/man1/tierflow-probe.1"
for m in man1/tierflow-sim.1 man1/tierflow-topo.1; do
  t_check "installs $m" test -f "$dest/opt/tf/share/man/$m"
done
unit="$dest/opt/tf/lib/systemd/system/tierflowd.service"
t_check "installs the systemd units" test -f "$unit" -a -f "$dest/opt/tf/lib/systemd/system/tierflow-probe@.service"
t_check "unit points at the installed binary" grep -q "ExecStart=/opt/tf/bin/tierflowd " "$unit"
t_check "installs the default configuration in SYSCONFDIR" test -f "$dest/etc/tierflow/tierflowd.json"
outside=$(find "$dest" -mindepth 1 -maxdepth 1 ! -name opt ! -name etc | head -3)
t_eq "nothing installed outside PREFIX and SYSCONFDIR" "" "$outside"
t_eq "nothing in SYSCONFDIR but tierflow/" "tierflow" "$(ls "$dest/etc")"
t_done
