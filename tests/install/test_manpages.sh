#!/usr/bin/env bash
# The four programs' command-line contract and their man pages:
# `mandoc -Tlint` finds nothing (style included) in docs/man; each page has
# NAME, SYNOPSIS, DESCRIPTION, OPTIONS, FILES, EXIT STATUS, EXAMPLES and
# SEE ALSO; every long option a program's --help names is in its page;
# --help (stdout) and --version ("PROGRAM VERSION") exit 0; an unknown option, a bad option value or a missing argument exits
# 2 with a message on stderr and nothing on stdout.
# timeout: 60
set -u
. "$TF_ROOT/tests/lib/tap.sh"
command -v mandoc >/dev/null || { t_skip all "no mandoc (scripts/deps.sh test installs it)"; t_done; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
M=$TF_ROOT/docs/man

for f in "$M"/*.[18]; do
  t_eq "mandoc -Tlint $(basename "$f"): clean" "0:" "$(mandoc -Tlint -Wstyle "$f" 2>&1; echo "$?:")"
done

declare -A PAGE=([tierflowd]=tierflowd.8 [tierflow-probe]=tierflow-probe.1
                 [tierflow-sim]=tierflow-sim.1 [tierflow-topo]=tierflow-topo.1)
# A usage error per program: an option with a bad value, and no arguments.
declare -A BADVAL=([tierflowd]="--topology leafspine --interval x" [tierflow-probe]="-r x.pcap --interval x"
                   [tierflow-sim]="--topology leafspine --pattern random --seed x"
                   [tierflow-topo]="leafspine --max-paths x")
for prog in tierflowd tierflow-probe tierflow-sim tierflow-topo; do
  page=$M/${PAGE[$prog]}
  bin=$TF_BIN/$prog
  [ -f "$page" ] || { t_fail "$prog has a man page" "${PAGE[$prog]} missing"; continue; }
  missing=""
  for s in NAME SYNOPSIS DESCRIPTION OPTIONS FILES "EXIT STATUS" EXAMPLES "SEE ALSO"; do
    grep -qx "\.SH \"\?$s\"\?" "$page" || missing+="$s; "
  done
  t_eq "${PAGE[$prog]} has every section" "" "$missing"
  [ -x "$bin" ] || { t_fail "$prog built" "no $bin (make san)"; continue; }

  "$bin" --help >"$tmp/out" 2>"$tmp/err"; rc=$?
  t_check "$prog --help: exit 0, usage on stdout" sh -c "[ $rc -eq 0 ] && grep -qi usage '$tmp/out' && [ ! -s '$tmp/err' ]"
  text=$(mandoc -Tutf8 "$page" 2>/dev/null | col -b)
  undocumented=""
  for o in $(grep -oE -- '--[a-z][a-z-]+' "$tmp/out" | sort -u); do
    grep -q -- "$o" <<<"$text" || undocumented+="$o "
  done
  t_eq "every option of $prog --help is in ${PAGE[$prog]}" "" "$undocumented"

  v=$("$bin" --version 2>&1); rc=$?
  t_check "$prog --version: exit 0, '$prog VERSION'" sh -c "[ $rc -eq 0 ] && echo '$v' | grep -qE '^$prog [^ ]+$'"

  for args in "--no-such-option" "${BADVAL[$prog]}" ""; do
    # shellcheck disable=SC2086 # the arguments are words
    "$bin" $args >"$tmp/out" 2>"$tmp/err" </dev/null; rc=$?
    t_check "$prog ${args:-(no arguments)}: exit 2, a message, no output" \
      sh -c "[ $rc -eq 2 ] && [ -s '$tmp/err' ] && [ ! -s '$tmp/out' ]"
  done
done
# Bad values the option parsers check beyond a number's range.
P=$TF_BIN/tierflow-probe
for args in "-r x.pcap --controller http://" "-r x.pcap --controller ftp://ctl" "-r x.pcap --token-file t"; do
  # shellcheck disable=SC2086
  "$P" $args >"$tmp/out" 2>"$tmp/err"; rc=$?
  t_check "tierflow-probe $args: exit 2, naming the option" \
    sh -c "[ $rc -eq 2 ] && grep -q -- '--[a-z-]* ' '$tmp/err' && [ ! -s '$tmp/out' ]"
done
t_done
