#!/usr/bin/env bash
# timeout: 240
# tierflow-probe -r on the real captures in $TF_SHARED/pcaps (see INDEX.md),
# checked against tshark's and libpcap's counts from INDEX.md, an independent
# reading of the pcap record headers (pcaploop --raw), and the sanitizers.
set -u
. "$(dirname "$0")/../lib/tap.sh"
P="$TF_BIN/tierflow-probe"
D="$TF_SHARED/pcaps"
T=$(mktemp -d /tmp/tfprb-pcap.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM

if [ ! -x "$P" ] || [ ! -d "$D" ]; then
  t_skip pcaps "need $P and $D"; t_done
fi
command -v jq >/dev/null || { t_fail jq "jq is not installed (scripts/deps.sh test)"; t_done; }

# run FILE [ARGS]: JSON lines to $T/out, stderr to $T/err, exit status to $rc
run() { local f=$1; shift; "$P" -r "$D/$f" --format json "$@" >"$T/out" 2>"$T/err"; rc=$?; }
last() { tail -n 1 "$T/out"; }
san_clean() { ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$T/err"; }

# --- ECN --------------------------------------------------------------------
run wsk_tcp-ecn-sample.pcap
t_eq "tcp-ecn: exit 0" 0 "$rc"
t_eq "tcp-ecn: 52 CE packets on the link" 52 "$(last | jq '.links[0].ce_pkts')"
t_eq "tcp-ecn: CE packets in flows = 52" 52 \
  "$(last | jq '[.flows[] | .ce_frac * .pkts] | add | round')"

run p4aqm_ecn_org1.pcap
t_eq "p4aqm: four flows, all CE, by size" "12300:2116:1 12325:767:1 12335:740:1 12330:402:1" \
  "$(last | jq -r '[.flows[] | select(.dport == 12346) | "\(.sport):\(.pkts):\(.ce_frac)"] | join(" ")')"
t_eq "p4aqm: report is bounded and sorted by rate" true \
  "$(last | jq '[.flows[].bps] as $b | $b == ($b | sort | reverse)')"

# --- VLAN -------------------------------------------------------------------
run zeek_vlan-collisions.pcap
t_eq "vlan-collisions: one 5-tuple, three flows (untagged, 42, 10/20)" "0: 10:20 42:" \
  "$(last | jq -r '[.flows[] | select(.sport == 80) | "\(.vlan):\(.vlan_inner // "")"] | sort | join(" ")')"

# --- RoCEv2 -----------------------------------------------------------------
run oferby_proxy_roce.pcap
t_eq "roce: destination QPs 0x45 and 0x48" "69 72" \
  "$(last | jq -r '[.flows[] | select(.dport == 4791) | .qp] | sort | map(tostring) | join(" ")')"
t_eq "roce: BTH opcode counts" '{"0x00":33,"0x03":33,"0x05":2,"0x11":37}' \
  "$(last | jq -c '.stats.roce_opcodes')"
t_eq "roce: RoCE frames are ECT(0), never CE" "1 0" \
  "$(last | jq -r '[.flows[] | select(.dport == 4791)] | "\(map(.ect_frac) | min) \(map(.ce_frac) | max)"')"

# --- wire length, not caplen ------------------------------------------------
run wsk_nfs_bad_stalls.cap
want=$("$TF_TOOLS/pcaploop" --raw "$D/wsk_nfs_bad_stalls.cap" | awk '{print $4}')
t_eq "nfs (snaplen 96): bytes = sum of record wire lengths ($want)" "$want" "$(last | jq '.stats.bytes')"
t_ge "nfs: wire bytes exceed captured bytes" "$want" \
  "$("$TF_TOOLS/pcaploop" --raw "$D/wsk_nfs_bad_stalls.cap" | awk '{print $6 + 1}')"

# --- interval reports on packet time ------------------------------------------
run zeek_smb_smb2.pcap --interval 0.1
t_ge "smb2 --interval 0.1: several reports (0.43 s of packets)" "$(wc -l <"$T/out")" 4
t_eq "smb2: every line is a report object" true \
  "$(jq -s 'all(type == "object" and has("probe") and has("links") and has("flows") and has("stats"))' "$T/out")"

# --- libpcap's packet counts (INDEX.md) and sanitizers on every file ---------
declare -A want_pkts=(
  [linaro_iperf.pcap]=100 [montybeatnik_roce_capture_read-write-ecn.pcap]=12 [montybeatnik_test.pcap]=16
  [ndpi_badpackets.pcap]=93 [oferby_proxy_roce.pcap]=123 [p4aqm_ecn_org1.pcap]=4025
  [pcpp_QinQ_802.1_AD.pcapng]=1 [pcpp_Sll2Packet.pcap]=1 [pcpp_VlanPackets.pcap]=26
  [pcpp_example2.pcap]=4709 [pcpp_many_interfaces-1.pcapng]=0 [pcpp_pcapng-example.pcapng]=59
  [pcpp_tls2.pcap]=7451 [tcpdump_accecn_handshake.pcap]=6
  [tcpdump_bad-ipv4-version-pgm-heapoverflow.pcap]=1 [tcpdump_bigtcp-ipv4.pcap]=1
  [tcpdump_bigtcp-ipv6.pcap]=1 [tcpdump_erspan-type-ii-1.pcap]=1 [tcpdump_erspan-type-ii-2.pcap]=16
  [tcpdump_erspan-type-iii-ft-0.pcap]=9 [tcpdump_erspan-type-iii-pb-1.pcap]=1
  [tcpdump_heapoverflow-tcp_print.pcap]=1 [tcpdump_ip6_frag_asan.pcap]=1
  [tcpdump_ipv6_jumbogram_1.pcap]=1 [tcpdump_ipv6hdr-heapoverflow.pcap]=1
  [tcpdump_sflow-print-v6.pcap]=25 [tcpdump_sflow_expanded.pcap]=1
  [tcpdump_sflow_multiple_counter_30_pdus.pcap]=30 [tcpdump_sflow_print-segv.pcap]=1
  [wsk_nfs_bad_stalls.cap]=7038 [wsk_tcp-ecn-sample.pcap]=479 [wsk_teardrop.cap]=17
  [wsk_v6-http.cap]=55 [zeek_http-vlan-0.pcap]=14 [zeek_ldap_gap-data-missing.pcapng]=0
  [zeek_q-in-q.pcap]=5 [zeek_smb_smb2.pcap]=1178 [zeek_tcp_truncated-header.pcap]=24
  [zeek_trunc_ip4-trunc.pcap]=1 [zeek_trunc_ip6-trunc.pcap]=1
  [zeek_udp-contents-truncated-oob.pcap]=1 [zeek_vlan-collisions.pcap]=42
  [zeek_vlan-pcp-dei.pcapng]=9 [zeek_vlan-qinqinq.pcap]=14
)
# Files libpcap reads part-way: the report of what was read, then the error.
declare -A read_error=(
  [pcpp_pcapng-example.pcapng]="type 113 different" [pcpp_many_interfaces-1.pcapng]="different"
  [zeek_ldap_gap-data-missing.pcapng]="snapshot length"
)

for path in "$D"/*; do
  f=$(basename "$path")
  [ "$f" = INDEX.md ] && continue
  run "$f"
  if ! san_clean; then
    t_fail "$f: sanitizer report" "$(grep -m3 -E 'Sanitizer|runtime error' "$T/err")"
    continue
  fi
  if [ "$f" = srini_infiniband_erf.pcap ]; then
    if [ "$rc" -eq 1 ] && grep -q "srini_infiniband_erf.pcap: link type ERF" "$T/err" && [ ! -s "$T/out" ]; then
      t_pass "$f: refused with an error naming ERF, exit 1"
    else
      t_fail "$f: want exit 1 and an error naming ERF" "rc=$rc: $(head -c 300 "$T/err")"
    fi
    continue
  fi
  if [ -z "${want_pkts[$f]+x}" ]; then
    t_fail "$f: not in this suite's INDEX table (add its libpcap count)"; continue
  fi
  got=$(last | jq '.stats.pkts' 2>/dev/null)
  if [ -n "${read_error[$f]+x}" ]; then
    if [ "$rc" -eq 1 ] && grep -q "$f: read failed after ${want_pkts[$f]} packets: .*${read_error[$f]}" "$T/err" \
       && [ "$got" = "${want_pkts[$f]}" ]; then
      t_pass "$f: report of ${want_pkts[$f]} packets, then libpcap's error, exit 1"
    else
      t_fail "$f: want a report of ${want_pkts[$f]} packets then a read error, exit 1" \
        "rc=$rc pkts=$got err=$(head -c 300 "$T/err")"
    fi
    continue
  fi
  if [ "$rc" -eq 0 ] && [ "$got" = "${want_pkts[$f]}" ] && [ ! -s "$T/err" ]; then
    t_pass "$f: exit 0, ${want_pkts[$f]} packets as libpcap, sanitizers quiet"
  else
    t_fail "$f: want exit 0 and ${want_pkts[$f]} packets" "rc=$rc pkts=$got err=$(head -c 300 "$T/err")"
  fi
done

# --- the block reader (probes/savefile.c) against libpcap's ------------------
# The same reports, the same messages (log time stamps aside) and the same
# exit status with either reader: on every shared capture, on generated files
# in both byte orders, with nanosecond time stamps and with records longer
# than the header's snapshot length, on cuts of a file that spans several
# read blocks, and with a --filter. The first check proves that the block
# reader is the one in use (else the rest would compare libpcap with itself).
"$P" -r "$D/p4aqm_ecn_org1.pcap" --log-level info >/dev/null 2>"$T/err"
t_check "classic pcap: records read by the block reader" grep -q 'records read by the block reader' "$T/err"
"$P" -r "$D/zeek_vlan-pcp-dei.pcapng" --log-level info >/dev/null 2>"$T/err"
t_check "pcapng: records read by libpcap" grep -q 'records read by libpcap' "$T/err"
# readers FILE [ARGS]: empty when both readers agree, else what differs
readers() {
  local f=$1; shift
  "$P" -r "$f" --format json "$@" >"$T/a.out" 2>"$T/a.err"; local ra=$?
  "$P" -r "$f" --format json --file-reader libpcap "$@" >"$T/b.out" 2>"$T/b.err"; local rb=$?
  sed -i 's/^[0-9T:.-]*Z //' "$T/a.err" "$T/b.err"
  [ "$ra" = "$rb" ] || echo "exit $ra vs $rb"
  cmp -s "$T/a.out" "$T/b.out" || echo "reports differ"
  cmp -s "$T/a.err" "$T/b.err" || echo "stderr: $(head -c 160 "$T/a.err") | $(head -c 160 "$T/b.err")"
}
bad=
for path in "$D"/*; do
  [ "$(basename "$path")" = INDEX.md ] && continue
  d=$(readers "$path")
  [ -z "$d" ] || bad+="$(basename "$path"): $d; "
done
t_eq "readers agree on every shared capture" "" "$bad"
G="$TF_TOOLS/gencap"
for v in "--swapped" "--nsec" "--swapped --nsec" "--snaplen 64"; do
  # shellcheck disable=SC2086
  "$G" "$T/v.pcap" 20000 $v
  t_eq "readers agree: generated capture $v" "" "$(readers "$T/v.pcap")"
done
"$G" "$T/v.pcap" 20000 --snaplen 64
t_ge "snaplen 64: records over it were cut (truncated frames counted)" \
  "$(readers "$T/v.pcap" >/dev/null; jq '.stats.truncated' "$T/a.out")" 1
"$G" "$T/big.pcap" 12000   # about 1 MB: four read blocks
size=$(stat -c %s "$T/big.pcap")
bad=
for cut in 30 40 41 100 262143 262144 262160 524300 $((size / 2)) $((size - 1)); do
  head -c "$cut" "$T/big.pcap" >"$T/cut.pcap"
  d=$(readers "$T/cut.pcap")
  [ -z "$d" ] || bad+="cut $cut: $d; "
done
t_eq "readers agree on a capture cut at 10 places (report, then the error)" "" "$bad"
t_eq "readers agree with --filter" "" "$(readers "$T/big.pcap" --filter 'udp port 4791')"
t_check "--file-reader bogus rejected" bash -c \
  "'$P' -r x --file-reader bogus 2>&1 | grep -q \"file-reader 'bogus': must be auto or libpcap\""

# --- errors on bad input ------------------------------------------------------
"$P" -r "$T/nonexistent.pcap" >"$T/out" 2>"$T/err"; rc=$?
t_check "missing file: exit 1, error names it" \
  bash -c "[ $rc -eq 1 ] && grep -q 'nonexistent.pcap' '$T/err'"
echo "not a capture" >"$T/junk.pcap"
"$P" -r "$T/junk.pcap" >"$T/out" 2>"$T/err"; rc=$?
t_check "not a capture file: exit 1, error names it" \
  bash -c "[ $rc -eq 1 ] && grep -q 'junk.pcap' '$T/err'"
"$P" -r "$D/p4aqm_ecn_org1.pcap" --filter 'udp port nonsense' >"$T/out" 2>"$T/err"; rc=$?
t_check "bad BPF filter: exit 1, error quotes it" \
  bash -c "[ $rc -eq 1 ] && grep -q \"filter 'udp port nonsense'\" '$T/err'"
"$P" -r "$D/p4aqm_ecn_org1.pcap" --filter 'udp src port 12300' >"$T/out" 2>"$T/err"; rc=$?
t_eq "BPF filter applies: only the 2116 packets of sport 12300" "0 2116" "$rc $(last | jq '.stats.pkts')"

# --- CLI validation -----------------------------------------------------------
cli() { "$P" "$@" >"$T/out" 2>"$T/err"; echo "$?:$(head -n1 "$T/err")"; }
t_eq "--interval 0 rejected with bounds" \
  "2:tierflow-probe: --interval '0': must be a number in 0.01..3600" "$(cli -r x --interval 0)"
t_eq "--fat-share 2 rejected" \
  "2:tierflow-probe: --fat-share '2': must be a number in 0.001..1" "$(cli -r x --fat-share 2)"
t_eq "--format xml rejected" "2:tierflow-probe: --format 'xml': must be json or table" \
  "$(cli -r x --format xml)"
t_eq "--max-flows 0 rejected" \
  "2:tierflow-probe: --max-flows '0': must be an integer in 1..16777216" "$(cli -r x --max-flows 0)"
t_eq "--snaplen 10 rejected" \
  "2:tierflow-probe: --snaplen '10': must be an integer in 64..262144" "$(cli -r x --snaplen 10)"
usage_src="give -i IFACE, --counters IFACE (one or more each) and/or --sflow-listen, or -r FILE"
t_eq "-i and -r together rejected" "2:tierflow-probe: $usage_src" "$(cli -r x -i lo)"
t_eq "--counters and -r together rejected" "2:tierflow-probe: $usage_src" "$(cli -r x --counters lo)"
t_eq "an interface both captured and counted rejected" \
  "2:tierflow-probe: --counters 'lo': already given (with -i or --counters): one interface, one link in the report" \
  "$(cli -i lo --counters lo)"
t_eq "--counters with a path rejected" \
  "2:tierflow-probe: --counters 'a/b': not an interface name (1..15 printable characters)" "$(cli --counters a/b)"
t_eq "65 interfaces with -i and --counters rejected" \
  "2:tierflow-probe: --counters 'c64': too many interfaces (at most 64 with -i and --counters together)" \
  "$(cli $(for i in $(seq 0 31); do printf -- '-i i%d ' "$i"; done) $(for i in $(seq 32 64); do printf -- '--counters c%d ' "$i"; done))"
t_eq "unknown option rejected" "2:tierflow-probe: --bogus '': unknown option" "$(cli --bogus)"
t_eq "--controller must be http(s): a usage error" \
  "2:tierflow-probe: --controller 'ftp://x': not an http:// or https:// URL with a host" \
  "$(cli -r "$D/p4aqm_ecn_org1.pcap" --controller ftp://x)"
t_eq "--help exits 0" "0" "$("$P" --help >/dev/null 2>&1; echo $?)"
t_check "--version names the program" bash -c "'$P' --version | grep -q '^tierflow-probe '"
t_eq "unknown interface: exit 1, error names it" "1" \
  "$(cli -i tfprb-noif0 | cut -d: -f1)"
t_check "unknown interface message names it" grep -q 'tfprb-noif0' "$T/err"
t_eq "unknown --counters interface: exit 1" "1" "$(cli --counters tfprb-noif1 | cut -d: -f1)"
t_check "... and the error names the option and the interface" grep -q -- '--counters tfprb-noif1: no such interface' "$T/err"

t_eq "missing --token-file: exit 1" "1" \
  "$(cli -r "$D/p4aqm_ecn_org1.pcap" --controller http://127.0.0.1:9 --token-file "$T/no-token" | cut -d: -f1)"
t_check "missing --token-file message names it" grep -q "token-file $T/no-token" "$T/err"
# A token file others may read is refused, as the daemon refuses it (one
# rule: tf_secret_file_check).
echo secret > "$T/token"; chmod 644 "$T/token"
t_eq "world-readable --token-file: exit 1" "1" \
  "$(cli -r "$D/p4aqm_ecn_org1.pcap" --controller http://127.0.0.1:9 --token-file "$T/token" | cut -d: -f1)"
t_check "world-readable --token-file: the message names the file, its mode and chmod 600" \
  grep -q -- "--token-file $T/token: mode 0644 lets group or others read it; chmod 600" "$T/err"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$P" -i lo >"$T/out" 2>"$T/err"; rc=$?
  t_check "no capture permission: exit 1, error names the interface and the cause" \
    bash -c "[ $rc -eq 1 ] && grep -qi -- '-i lo: .*permi' '$T/err'"
else
  t_skip "no-permission error" "needs root and setpriv to drop to an unprivileged user"
fi

t_done
