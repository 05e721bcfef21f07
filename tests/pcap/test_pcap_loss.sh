#!/usr/bin/env bash
# timeout: 120
# tierflow-probe's loss signals (retx_pkts, psn_oos, naks) on the real
# captures in $TF_SHARED/pcaps, against tests/pcap/loss_oracle.py, an
# independent reading of the same files that counts by the probe's rule and
# by Wireshark's (tcp.analysis.retransmission: payload starting before the
# next expected sequence number, keep-alives excepted). tshark itself is not
# a dependency (scripts/deps.sh); the oracle's Wireshark rule differs from
# the probe's on segments that overlap the highest end seen (new data past
# it: Wireshark flags them, the probe does not) and on Wireshark's timing
# heuristics ("out-of-order" within an RTT), which it leaves out.
# Flow expiry is off (--idle-timeout 0): a report carries live flows only,
# and the counts of a flow idle for 30 s at the end of a file would be lost.
set -u
. "$(dirname "$0")/../lib/tap.sh"
P="$TF_BIN/tierflow-probe" D="$TF_SHARED/pcaps" O="$(dirname "$0")/loss_oracle.py"
T=$(mktemp -d /tmp/grp-pcap.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
if [ ! -x "$P" ] || [ ! -d "$D" ]; then t_skip pcap_loss "need $P and $D"; t_done; fi
command -v jq >/dev/null && command -v python3 >/dev/null || { t_skip pcap_loss "needs jq and python3"; t_done; }

# probe FILE: "retx psn_oos naks" summed over the one report
probe() {
  "$P" -r "$1" --format json --top 10000 --idle-timeout 0 2>"$T/err" |
    jq -rs '[.[].flows[]] | "\(map(.retx_pkts // 0) | add // 0) \(map(.psn_oos // 0) | add // 0) \(map(.naks // 0) | add // 0)"'
}
check() { # NAME FILE: the probe's counts against the oracle's
  local got want end ws psn nak
  read -r end ws psn nak < <(python3 "$O" "$2")
  got=$(probe "$2")
  t_eq "$1: retx/psn_oos/naks as the oracle counts them (Wireshark's rule: $ws retransmissions)" \
    "$end $psn $nak" "$got"
  t_check "$1: no sanitizer report" bash -c "! grep -qE 'Sanitizer|runtime error' '$T/err'"
  echo "# $1: probe $got (retx psn_oos naks); oracle: $end retx by the probe's rule, $ws by Wireshark's"
}
check tls2 "$D/pcpp_tls2.pcap"              # 17 retransmissions in 334 conversations, IPv6 and IPv4
check example2 "$D/pcpp_example2.pcap"      # 20, keep-alives of idle desktop connections excepted
check nfs_bad_stalls "$D/wsk_nfs_bad_stalls.cap" # stalls without a resend; snap length 96 (lengths from IP)
check smb2 "$D/zeek_smb_smb2.pcap"          # a clean elephant flow: 0
check roce "$D/oferby_proxy_roce.pcap"      # real RC: SENDs in sequence, 37 ACKs (none a NAK)
check roce_read "$D/montybeatnik_roce_capture_read-write-ecn.pcap" # UD MADs, a READ and its responses
# A clean transfer with three data segments sent again later and two
# swapped (the older arrives second): 4 retransmissions by both rules.
python3 "$O" "$D/linaro_iperf.pcap" "$T/resent.pcap" --dup 4,6,21 --swap 28 >/dev/null
check resent "$T/resent.pcap"
t_eq "resent: 4 retransmissions on the data flow" "4 0 0" "$(probe "$T/resent.pcap")"
# The real RC capture with PSN 4 sent again after PSN 7 (go-back-N) and one
# ACK turned into a NAK: 7, 4, 8 is two PSNs out of sequence.
python3 "$O" "$D/oferby_proxy_roce.pcap" "$T/gbn.pcap" --dup 22 --nak 24 >/dev/null
check roce_gbn "$T/gbn.pcap"
t_eq "roce_gbn: 2 PSNs out of sequence, 1 NAK" "0 2 1" "$(probe "$T/gbn.pcap")"
t_done
