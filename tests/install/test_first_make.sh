#!/usr/bin/env bash
# The first `make` on a fresh machine works: the Makefile must not read
# pkg-config before scripts/deps.sh has run. A fresh machine is played by a
# pkg-config (first on PATH) that fails until "the packages are installed",
# which is the deps step's doing: deps.sh asks dpkg about every package, and
# the dpkg on PATH marks them installed. A Makefile that reads pkg-config
# while it is parsed gets no flags and fails (`netlink/attr.h` not found),
# as the one before this suite did. Then: pkg-config is read once per kind
# (memoised), and a build that skips the deps step stops with an error
# naming scripts/deps.sh instead of compiling without flags.
# timeout: 240
set -u
. "$TF_ROOT/tests/lib/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset MAKEFLAGS MFLAGS MAKELEVEL
mkdir "$tmp/bin"
real_pc=$(command -v pkg-config) real_dpkg=$(command -v dpkg)
[ -n "$real_pc" ] && [ -n "$real_dpkg" ] || { t_skip all "needs pkg-config and dpkg"; t_done; }
cat >"$tmp/bin/pkg-config" <<EOF
#!/bin/sh
if [ -f "$tmp/installed" ]; then echo "\$*" >>"$tmp/pc.ok"; exec "$real_pc" "\$@"; fi
echo "\$*" >>"$tmp/pc.refused"
echo "pkg-config: \$*: not installed yet" >&2
exit 1
EOF
cat >"$tmp/bin/dpkg" <<EOF
#!/bin/sh
touch "$tmp/installed"
exec "$real_dpkg" "\$@"
EOF
chmod +x "$tmp/bin/pkg-config" "$tmp/bin/dpkg"

fresh() { PATH="$tmp/bin:$PATH" make -C "$TF_ROOT" --no-print-directory -j2 O="$tmp/build" "$@" >"$tmp/log" 2>&1; }
if fresh; then
  t_pass "first make on a machine without the packages"
else
  t_fail "first make on a machine without the packages" "$(grep -m3 -E 'error|\*\*\*' "$tmp/log")"
fi
for p in tierflowd tierflow-probe tierflow-sim tierflow-topo; do
  t_check "builds $p" test -x "$tmp/build/bin/$p"
done
t_eq "pkg-config never read before the deps step" "" "$(cat "$tmp/pc.refused" 2>/dev/null)"
t_eq "pkg-config read once for --cflags and once for --libs" "2 1 1" \
  "$(printf '%s %s %s' "$(wc -l <"$tmp/pc.ok" 2>/dev/null || echo 0)" \
      "$(grep -c -- '^--cflags' "$tmp/pc.ok" 2>/dev/null)" "$(grep -c -- '^--libs' "$tmp/pc.ok" 2>/dev/null)")"

# Skipping the deps step on such a machine: a clear stop, nothing compiled.
rm -rf "$tmp/build" "$tmp/installed"
if fresh programs; then
  t_fail "a build without the deps step stops" "make programs exited 0"
else
  t_check "a build without the deps step stops, naming scripts/deps.sh" \
    grep -q 'pkg-config --cflags .*failed: run scripts/deps.sh build' "$tmp/log"
  t_eq "nothing compiled without the flags" "" "$(find "$tmp/build" -name '*.o' 2>/dev/null | head -1)"
fi
t_done
