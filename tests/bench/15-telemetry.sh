#!/usr/bin/env bash
# Benchmark: the switch-telemetry inputs against direct capture of the same
# inner packets. telemetry_send --write-pcaps writes N frames three ways
# (direct, mirrored in ERSPAN II, sampled into sFlow v5 datagrams of eight
# samples); tierflow-probe -r --telemetry reads each. CPU time (user+sys),
# best of 3, so that a loaded machine does not distort the ratio.
set -u
N=${TELEMETRY_BENCH_FRAMES:-2000000}
P="$TF_OPT_BIN/tierflow-probe" G="$TF_TOOLS/telemetry_send"
for b in "$P" "$G"; do [ -x "$b" ] || { echo "missing $b (make all tools)"; exit 1; }; done
T=$(mktemp -d /tmp/tf-telbench.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$G" --write-pcaps "$T" --count "$N" --rate 1000 >"$T/gen.json" || exit 1
dgrams=$(sed -E 's/.*"sflow_datagrams": ([0-9]+).*/\1/' "$T/gen.json")
cpu() { # best CPU seconds of 3 runs of the probe on $1
  local best=
  for _ in 1 2 3; do
    local t
    /usr/bin/time -o "$T/time" -f '%U %S' "$P" -r "$1" --telemetry >/dev/null 2>&1
    t=$(awk '{print $1 + $2}' "$T/time")
    best=$(awk -v a="$best" -v b="$t" 'BEGIN{print (a == "" || b < a) ? b : a}')
  done
  echo "$best"
}
cat "$T"/*.pcap >/dev/null # warm the page cache
d=$(cpu "$T/direct.pcap"); e=$(cpu "$T/erspan.pcap"); s=$(cpu "$T/sflow.pcap")
printf 'frames: %d (256 flows, 1000 B, snap 128); sFlow: %d datagrams of 8 samples; %s\n' "$N" "$dgrams" "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
awk -v n="$N" -v dg="$dgrams" -v d="$d" -v e="$e" -v s="$s" 'BEGIN {
  printf "%-34s cpu %7.3f s  %7.1f ns/frame   %6.2f M frames/s    x1.00 direct\n", "direct capture (baseline)", d, d/n*1e9, n/d/1e6
  printf "%-34s cpu %7.3f s  %7.1f ns/frame   %6.2f M frames/s    x%.2f direct\n", "ERSPAN II mirrors", e, e/n*1e9, n/e/1e6, e/d
  printf "%-34s cpu %7.3f s  %7.1f ns/sample  %6.2f M samples/s   x%.2f direct per inner packet\n", "sFlow v5 samples", s, s/n*1e9, n/s/1e6, s/d
  printf "%-34s %.0f datagrams/s (%.2f us each)\n", "sFlow v5 datagrams", dg/s, s/dg*1e6
}'
