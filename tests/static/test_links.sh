#!/usr/bin/env bash
# timeout: 60
# Each program links only its own layers (docs/HACKING.md, Layout): a
# program's entry point that calls one function of every layer's archive is
# linked with exactly what the Makefile links that program with
# (`make print-libs-PROGRAM`); the functions the linker cannot find must be
# exactly those of the layers the program may not use. So the probe calling
# controller code fails to link, and a Makefile that links every archive
# into every program again fails here. Needs the optimised archives (`make`
# or `make test` builds them); about a second.
set -u
. "$TF_ROOT/tests/lib/tap.sh"
B=${TF_BUILD:-$TF_ROOT/build}
unset MAKEFLAGS MFLAGS MAKELEVEL   # run by make test: not a sub-make of it

# The layers each program may use: the oracle, written down independently of
# the Makefile's LIBS_<program> lists.
declare -A MAY=(
  [tierflow-probe]="libtfprobe.a libtfcommon.a"
  [tierflow-sim]="libtfsim.a libtfpolicy.a libtfcommon.a"
  [tierflow-topo]="libtfpolicy.a libtfcommon.a"
  [tierflowd]="libtfctl.a libtfpolicy.a libtfcommon.a"
)
ARCHIVES="libtfcommon.a libtfprobe.a libtfpolicy.a libtfsim.a libtfctl.a"

for a in $ARCHIVES; do
  [ -f "$B/opt/$a" ] || { t_skip all "no $B/opt/$a: build first (make)"; t_done; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tf-links.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# One defined function of each archive (the first by name, so the choice is
# stable), and an entry point that calls them all. It is linked, never run.
declare -A SYM
{
  for a in $ARCHIVES; do
    s=$(nm -g --defined-only "$B/opt/$a" 2>/dev/null | awk '$2 == "T" { print $3 }' | sort | head -1)
    [ -n "$s" ] || { t_fail "$a defines a function" "nm found none"; t_done; }
    SYM[$a]=$s
    echo "extern void $s(void);"
  done
  echo "int main(void) {"
  for a in $ARCHIVES; do echo "    ${SYM[$a]}();"; done
  echo "    return 0;"
  echo "}"
} >"$tmp/main.c"
t_check "the entry point that calls every layer compiles" ${CC:-cc} -c "$tmp/main.c" -o "$tmp/main.o"

for prog in tierflow-probe tierflow-topo tierflow-sim tierflowd; do
  libs=$(make -s --no-print-directory -C "$TF_ROOT" O="$B" "print-libs-$prog") ||
    { t_fail "$prog: make print-libs-$prog"; continue; }
  ${CC:-cc} "$tmp/main.o" $libs -o "$tmp/$prog" >"$tmp/$prog.err" 2>&1
  want="" got=""
  for a in $ARCHIVES; do
    case " ${MAY[$prog]} " in *" $a "*) ;; *) want="$want ${SYM[$a]}" ;; esac
    grep -q "undefined reference to \`${SYM[$a]}'" "$tmp/$prog.err" && got="$got ${SYM[$a]}"
  done
  t_eq "$prog links only ${MAY[$prog]} (unresolved: the other layers' functions)" "${want# }" "${got# }"
done
t_done
