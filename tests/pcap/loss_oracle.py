#!/usr/bin/env python3
"""An independent reading of a classic pcap file (Ethernet, stacked VLAN
tags, IPv4, IPv6 without extension headers, TCP, RoCEv2) that counts, per
direction, what tierflow-probe's loss signals count (docs/telemetry.md):

  end   TCP segments with payload whose end (seq + len) is at or before the
        highest end seen in that direction (the probe's rule, RFC 1982),
        keep-alives (1 byte ending at the highest end) excepted
  ws    Wireshark's wider rule for tcp.analysis.retransmission: payload that
        starts before the next expected sequence number, keep-alives
        (1 byte at next - 1) excepted, so a segment that overlaps the end
        counts there and not in the probe
  psn   RoCEv2 RC/UC packets (Acknowledges and Read Requests' successors
        excepted) whose PSN is not the previous + 1 modulo 2^24
  nak   RC Acknowledges whose AETH syndrome is 011xxxxx

Usage: loss_oracle.py FILE [FILE OUT [--dup N,N,...] [--swap N] [--nak N]]
With --dup/--swap it first writes OUT: FILE with each given record (0-based)
sent again 5 records later (a retransmission after newer data), and record
N swapped with N + 1 (reordering: the older segment arrives second); --nak
turns record N, an RC Acknowledge in an untagged IPv4 frame, into a NAK
(AETH syndrome 0x60: PSN sequence error).
Prints "end ws psn nak" for FILE (or OUT)."""
import struct
import sys


def records(path):
    d = open(path, 'rb').read()
    magic = d[:4]
    e = '<' if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1') else '>'
    off, out = 24, []
    while off + 16 <= len(d):
        _, _, cl, _ = struct.unpack(e + 'IIII', d[off:off + 16])
        out.append(d[off:off + 16 + cl])
        off += 16 + cl
    return d[:24], out


def serial_le(a, b):  # a <= b in 32-bit serial arithmetic
    return ((a - b) & 0xffffffff) == 0 or ((a - b) & 0xffffffff) >= 0x80000000


def count(path):
    _, recs = records(path)
    hi, nxt, psn = {}, {}, {}
    end = ws = oos = nak = 0
    for r in recs:
        p = r[16:]
        o, t = 12, None
        if len(p) < 14:
            continue
        t = struct.unpack('>H', p[12:14])[0]
        o = 14
        while t in (0x8100, 0x88a8, 0x9100) and len(p) >= o + 4:
            t = struct.unpack('>H', p[o + 2:o + 4])[0]
            o += 4
        if t == 0x0800 and len(p) >= o + 20:
            ihl = (p[o] & 15) * 4
            tl = struct.unpack('>H', p[o + 2:o + 4])[0]
            frag = struct.unpack('>H', p[o + 6:o + 8])[0] & 0x1fff
            proto, src, dst = p[o + 9], p[o + 12:o + 16], p[o + 16:o + 20]
            if frag or tl == 0:
                continue
            l4, ipend = o + ihl, o + tl
        elif t == 0x86dd and len(p) >= o + 40:
            proto, src, dst = p[o + 6], p[o + 8:o + 24], p[o + 24:o + 40]
            l4, ipend = o + 40, o + 40 + struct.unpack('>H', p[o + 4:o + 6])[0]
        else:
            continue
        if proto == 6 and len(p) >= l4 + 20:
            sp, dp, seq = struct.unpack('>HHI', p[l4:l4 + 8])
            plen = ipend - (l4 + (p[l4 + 12] >> 4) * 4)
            k = (src, dst, sp, dp)
            if plen <= 0:
                continue
            e = (seq + plen) & 0xffffffff
            if k in hi:
                if serial_le(e, hi[k]):
                    end += not (plen == 1 and e == hi[k])
                else:
                    hi[k] = e
                n = nxt[k]
                if not serial_le(n, seq) and not (plen <= 1 and seq == (n - 1) & 0xffffffff):
                    ws += 1
                if serial_le(n, e):
                    nxt[k] = e
            else:
                hi[k] = nxt[k] = e
        elif proto == 17 and len(p) >= l4 + 8 + 12 and struct.unpack('>H', p[l4 + 2:l4 + 4])[0] == 4791:
            b = l4 + 8
            op = p[b]
            qp = int.from_bytes(p[b + 5:b + 8], 'big')
            n = int.from_bytes(p[b + 9:b + 12], 'big')
            if op == 0x11:
                if len(p) > b + 12 and p[b + 12] >> 5 == 3:
                    nak += 1
                continue
            if op >> 6 or op == 0x12:
                continue
            k = (src, dst, qp)
            if k in psn and psn[k] is not None and psn[k] != n:
                oos += 1
            psn[k] = None if op == 0x0c else (n + 1) & 0xffffff
    return end, ws, oos, nak


def main():
    a = sys.argv[1:]
    if len(a) >= 2 and ('--dup' in a or '--swap' in a or '--nak' in a):
        src, out = a[0], a[1]
        dup = [int(x) for x in a[a.index('--dup') + 1].split(',')] if '--dup' in a else []
        swap = int(a[a.index('--swap') + 1]) if '--swap' in a else -1
        head, recs = records(src)
        if '--nak' in a:
            n = int(a[a.index('--nak') + 1])
            r = bytearray(recs[n])
            r[16 + 14 + 20 + 8 + 12] = 0x60
            recs[n] = bytes(r)
        if swap >= 0:
            recs[swap], recs[swap + 1] = recs[swap + 1], recs[swap]
        res = []
        for i, r in enumerate(recs):
            res.append(r)
            res.extend(recs[j] for j in dup if i == j + 5)
        open(out, 'wb').write(head + b''.join(res))
        path = out
    else:
        path = a[0]
    print(*count(path))


main()
