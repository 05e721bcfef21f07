#!/usr/bin/env bash
# Probe benchmark: tierflow-probe -r on a synthetic 5-million-packet fabric
# capture (tests/tools/gencap: RoCEv2 fat flows with CE and CNPs, TCP/UDP
# mice, VLAN tags, IPv6) against
#   the floor: a bare libpcap pcap_next_ex loop (tests/tools/pcaploop)
#   the peers: softflowd -r and pmacctd (pcap_savefile, print plugin)
# The probe runs twice: as shipped, where libpcap opens and checks the file
# and probes/savefile.c reads its records in blocks (the same records and
# errors, see probes/savefile.h and tierflow-probe(1)), and with
# --file-reader libpcap, where libpcap reads every record: the difference is
# what libpcap's per-record fread()s cost. A third run takes every record as
# an arrival (--inbound with -r: the hole tracking's path, docs/telemetry.md).
# The floor and the probe runs take turns, 5 rounds of each on a warm page
# cache, and the best CPU time (user + sys, children included, from
# /usr/bin/time) of each is kept: taking turns gives each the same share of
# the machine's quiet and busy moments (run back to back, a busy minute once
# moved the floor by 30%). The peers are 5-40x slower (pmacctd takes
# minutes), so they run once: noise of a few percent does not change that
# comparison. CPU time, not wall
# time, is the figure compared: the machine is shared, so wall time mostly
# measures the neighbours. Wall time and peak RSS are printed too.
#   BENCH_PKTS=N   packets to generate (default 5000000)
#   BENCH_BASE_PROBE=PATH   another tierflow-probe (say, main's, before a
#                  change to the per-packet path) run in the same rounds: its
#                  ratio to the floor is printed beside this one's, so that a
#                  change's cost is measured on the same machine at the same
#                  time (gencap's TCP and RoCE packets all carry sequence 0,
#                  so every packet after a flow's first takes the loss
#                  tracking's counting branch: its worst case).
set -u
N=${BENCH_PKTS:-5000000}
P="$TF_OPT_BIN/tierflow-probe" G="$TF_TOOLS/gencap" L="$TF_TOOLS/pcaploop"
for b in "$P" "$G" "$L" /usr/bin/time; do
  [ -x "$b" ] || { echo "missing $b (make all tools; scripts/deps.sh bench)"; exit 1; }
done
T=$(mktemp -d /tmp/tfprb-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
F="$T/fabric.pcap"
"$G" "$F" "$N" || exit 1
cat "$F" >/dev/null   # warm the page cache
echo "capture: $N packets, $(($(stat -c %s "$F") / 1048576)) MiB, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"

# once NAME CMD...: one run; keeps in CPU, WALL, RSS (KiB) the best so far for NAME
declare -A CPU WALL RSS
once() {
  local name=$1; shift
  /usr/bin/time -f '%e %U %S %M' -o "$T/time" "$@" >/dev/null 2>"$T/err" \
    || { echo "$name failed: $(tail -n 3 "$T/err")"; return 1; }
  read -r w u s m <"$T/time"
  c=$(awk -v u="$u" -v s="$s" 'BEGIN{print u + s}')
  if [ -z "${CPU[$name]:-}" ] || awk -v a="$c" -v b="${CPU[$name]}" 'BEGIN{exit !(a < b)}'; then
    CPU[$name]=$c WALL[$name]=$w RSS[$name]=$m
  fi
}
show() { # NAME: prints its line
  awk -v n="$1" -v c="${CPU[$1]}" -v w="${WALL[$1]}" -v r="${RSS[$1]}" -v N="$N" -v f="${CPU[floor]}" 'BEGIN{
    printf "%-34s cpu %7.3f s  %7.1f ns/pkt  %6.2f Mpps  wall %6.2f s  rss %7.1f MiB  x%.2f floor\n",
      n, c, c * 1e9 / N, (c > 0 ? N / c / 1e6 : 0), w, r / 1024, (f > 0 ? c / f : 0) }'
}
ROUNDS=5
echo "floor and probe: best of $ROUNDS runs, taking turns; softflowd and pmacctd: one run each"

cat >"$T/pmacct.conf" <<EOF
daemonize: false
pcap_savefile: $F
aggregate: src_host, dst_host, src_port, dst_port, proto, vlan
plugins: print
print_output_file: $T/pmacct.out
print_output: csv
print_refresh_time: 3600
EOF

for ((i = 0; i < ROUNDS; i++)); do
  once floor "$L" "$F" || exit 1
  once probe "$P" -r "$F" --format json || exit 1
  once "probe --file-reader libpcap" "$P" -r "$F" --format json --file-reader libpcap || exit 1
  once "probe --max-flows 4096" "$P" -r "$F" --format json --max-flows 4096 || exit 1
  once "probe --max-flows 1048576" "$P" -r "$F" --format json --max-flows 1048576 || exit 1
  once "probe --inbound (arrivals)" "$P" -r "$F" --format json --inbound || exit 1
  [ -n "${BENCH_BASE_PROBE:-}" ] && { once "probe (baseline)" "$BENCH_BASE_PROBE" -r "$F" --format json || exit 1; }
done
for name in floor probe "probe --file-reader libpcap" "probe --max-flows 4096" "probe --max-flows 1048576" "probe --inbound (arrivals)"; do
  show "$name"
done
[ -n "${BENCH_BASE_PROBE:-}" ] && { echo "baseline: $BENCH_BASE_PROBE"; show "probe (baseline)"; }
if command -v softflowd >/dev/null; then
  # Exports go to the discard port on loopback: nothing leaves the host.
  once softflowd softflowd -r "$F" -n 127.0.0.1:9 && show softflowd
else echo "softflowd not installed (scripts/deps.sh bench)"; fi
if command -v pmacctd >/dev/null; then
  once pmacctd pmacctd -f "$T/pmacct.conf" && show pmacctd
else echo "pmacctd not installed (scripts/deps.sh bench)"; fi

verdict() { if awk "BEGIN{exit !($2)}"; then echo "target met:    $1"; else echo "target missed: $1"; fi; }
echo
verdict "probe <= 1.5 x bare libpcap loop (x$(awk -v a="${CPU[probe]}" -v b="${CPU[floor]}" 'BEGIN{printf "%.2f", a/b}'))" \
  "${CPU[probe]} <= 1.5 * ${CPU[floor]}"
[ -n "${BENCH_BASE_PROBE:-}" ] &&
  echo "               (the baseline: x$(awk -v a="${CPU["probe (baseline)"]}" -v b="${CPU[floor]}" 'BEGIN{printf "%.2f", a/b}'); this probe costs x$(awk -v a="${CPU[probe]}" -v b="${CPU["probe (baseline)"]}" 'BEGIN{printf "%.3f", a/b}') the baseline's CPU)"
echo "               (every record as an arrival, --inbound's hole tracking: x$(awk -v a="${CPU["probe --inbound (arrivals)"]}" -v b="${CPU[floor]}" 'BEGIN{printf "%.2f", a/b}') against x$(awk -v a="${CPU[probe]}" -v b="${CPU[floor]}" 'BEGIN{printf "%.2f", a/b}') leaving, same rounds; live --inbound also captures each forwarded packet twice)"
echo "               (with --file-reader libpcap: x$(awk -v a="${CPU["probe --file-reader libpcap"]}" -v b="${CPU[floor]}" 'BEGIN{printf "%.2f", a/b}'): libpcap's own reading is then paid on top of the floor's)"
for peer in softflowd pmacctd; do
  [ -n "${CPU[$peer]:-}" ] || continue
  verdict "probe faster than $peer (x$(awk -v a="${CPU[$peer]}" -v b="${CPU[probe]}" 'BEGIN{printf "%.2f", a/b}') less CPU)" \
    "${CPU[probe]} < ${CPU[$peer]}"
done
small=${RSS["probe --max-flows 4096"]} big=${RSS["probe --max-flows 1048576"]}
verdict "memory bounded by --max-flows (rss $((small / 1024)) MiB at 4096, $((big / 1024)) MiB at 1048576, $((RSS[probe] / 1024)) MiB at the default 65536)" \
  "$small < ${RSS[probe]} && ${RSS[probe]} < $big"
exit 0
