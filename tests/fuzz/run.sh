#!/usr/bin/env bash
# Runs libFuzzer targets for a bounded time each; called by `make fuzz`:
#   O=build FUZZ_SECONDS=60 tests/fuzz/run.sh BIN...
# Each target keeps its corpus in $O/fuzz-corpus/<target>/, seeded on first
# use from tests/fuzz/seeds/<target without fuzz_>/ when that folder exists
# (e.g. probe reports for fuzz_ingest), with the small shared classic
# captures themselves for fuzz_savefile (whole files), else from the shared captures
# ($TF_SHARED/pcaps, default ../shared relative to the repository, as
# tests/run.sh) through $O/tools/pcap2corpus. tests/fuzz/<target>.dict, when
# present, is passed as -dict. Crashing inputs land in $O/fuzz-artifacts/.
# Exits non-zero when any target fails.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
O=${O:-build}
case "$O" in /*) ;; *) O="$ROOT/$O" ;; esac
SECS=${FUZZ_SECONDS:-60}
SHARED=${TF_SHARED:-$(cd "$ROOT/.." && pwd)/shared}
[ -d "$SHARED/pcaps" ] || SHARED=/work/shared
[ $# -gt 0 ] || { echo "usage: tests/fuzz/run.sh BIN..." >&2; exit 2; }

mkdir -p "$O/fuzz-artifacts"
failed=()
for bin in "$@"; do
  name=$(basename "$bin")
  corpus="$O/fuzz-corpus/$name"
  mkdir -p "$corpus"
  seeds="$ROOT/tests/fuzz/seeds/${name#fuzz_}"
  dict=(); [ -f "$ROOT/tests/fuzz/$name.dict" ] && dict=(-dict="$ROOT/tests/fuzz/$name.dict")
  if [ -z "$(ls -A "$corpus")" ]; then
    if [ "$name" = fuzz_savefile ] && [ -d "$SHARED/pcaps" ]; then
      # whole capture files: the classic ones that fit -max_len
      find "$SHARED/pcaps" -maxdepth 1 -type f \( -name '*.pcap' -o -name '*.cap' \) -size -68k \
        -exec cp {} "$corpus"/ \;
    elif [ -d "$seeds" ]; then
      cp "$seeds"/* "$corpus"/
    elif [ -x "$O/tools/pcap2corpus" ] && [ -d "$SHARED/pcaps" ]; then
      mapfile -t caps < <(find "$SHARED/pcaps" -maxdepth 1 -type f \( -name '*.pcap' -o -name '*.pcapng' -o -name '*.cap' \) | sort)
      "$O/tools/pcap2corpus" "$corpus" "${caps[@]}" 2>&1 | tail -n 1
    else
      echo "run.sh: no seeds for $name (missing $O/tools/pcap2corpus or $SHARED/pcaps); starting empty" >&2
    fi
  fi
  echo "== $name: ${SECS}s, corpus $corpus ($(ls "$corpus" | wc -l) inputs)"
  log="$O/fuzz-artifacts/$name.log"
  "$bin" "${dict[@]}" -max_total_time="$SECS" -max_len=70000 -timeout=10 -rss_limit_mb=2048 \
         -print_final_stats=1 -artifact_prefix="$O/fuzz-artifacts/$name-" "$corpus" >"$log" 2>&1
  rc=$?
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)' "$log" | sed 's/^/   /'
  if [ $rc -ne 0 ]; then
    echo "run.sh: $name failed (exit $rc); the end of $log:" >&2
    tail -n 40 "$log" >&2
    failed+=("$name")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failed: ${failed[*]}" >&2; exit 1; }
echo "fuzz: all ${#} target(s) ran ${SECS}s without a crash"
