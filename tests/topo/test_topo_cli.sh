#!/usr/bin/env bash
# tierflow-topo end to end: generate, write, reload, list paths, and fail
# clearly (the offending item named) on bad input: exit 1 for a bad
# topology or query, 2 for a usage error.
# timeout: 120
set -u
. "$TF_ROOT/tests/lib/tap.sh"
T="$TF_BIN/tierflow-topo"
[ -x "$T" ] || { t_fail "tierflow-topo built" "missing $T"; t_done; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

t_check "fattree writes a file" "$T" fattree:k=4 --out "$tmp/ft.json"
t_check "the file reloads and validates" "$T" "$tmp/ft.json" --check
"$T" "$tmp/ft.json" > "$tmp/ft2.json"
t_check "write/load round-trips byte for byte" cmp -s "$tmp/ft.json" "$tmp/ft2.json"
t_eq "paths between pods" 4 "$("$T" fattree:k=4 --paths H1 H16 | grep -c '^  \["H1"')"
t_check "a path lists node names up and down" \
  sh -c "'$T' fattree:k=4 --paths H1 H3 | grep -q '\[\"H1\", \"L1\", \"S1\", \"L2\", \"H3\"\]'"
sum=$("$T" clos3:pods=8,racks=192,hosts=16,oversub=7 --summary)
t_check "24K clos3 has 24576 endpoints" sh -c "echo '$sum' | grep -q '\"endpoints\": 24576'"
t_check "24K clos3: 64 paths between pods" sh -c "echo '$sum' | grep -q '\"last-host\".*\"paths\": 64'"

err=$("$T" clos3:podz=3 2>&1); rc=$?
t_check "bad generator key exits 1" test $rc -eq 1
t_check "bad generator key is named" sh -c "echo '$err' | grep -q podz"
sed 's/"b": "L8"/"b": "L99"/' "$tmp/ft.json" > "$tmp/bad.json"
err=$("$T" "$tmp/bad.json" --check 2>&1); rc=$?
t_check "unknown node in a link exits 1" test $rc -eq 1
t_check "unknown node is named with its file" sh -c "echo '$err' | grep -q 'bad.json: links\[.*unknown node \"L99\"'"
err=$("$T" fattree:k=4 --paths H1 H99 2>&1); rc=$?
t_check "--paths with an unknown node exits 1, naming it" sh -c "test $rc -eq 1 && echo '$err' | grep -q H99"
err=$("$T" fattree:k=4 --paths H1 2>&1); rc=$?
t_check "--paths without DST is a usage error (exit 2)" sh -c "test $rc -eq 2 && echo '$err' | grep -q 'needs SRC and DST'"
t_done
