#!/usr/bin/env python3
"""A stand-in for ExaBGP's process API, for tests/unit/test_bgp_logic.c: no
BGP at all. Like ExaBGP it reads its configuration (argv[1]), writes the PID
file named by exabgp_daemon_pid, runs the configuration's `process` and acks
every command it prints ("done", exabgp_api_ack), keeping an Adj-RIB-Out per
neighbor, prefix and path id (add-path); `show adj-rib out` lists it in
ExaBGP's words, the announcement's attributes after the next hop as given
(`show adj-rib out extensive`: as ExaBGP renders them). The test adds
routes the controller never asked for by writing lines into the file
`extra-rib-out` beside the configuration (each listed as is), to check that
the read-back sees them. TERM stops it and its process."""
import os
import re
import signal
import struct
import subprocess
import sys

conf_path = sys.argv[1]
conf = open(conf_path).read()
run = re.search(r"run (.*);", conf).group(1)
with open(os.environ["exabgp_daemon_pid"], "w") as f:
    f.write("%d\n" % os.getpid())
proc = subprocess.Popen(run, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def stop(*_):
    proc.terminate()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
rib = {}  # (neighbor, prefix, path id) -> next hop and the rest of the announcement
# `show adj-rib out extensive` as ExaBGP 4.2.21 writes it (captured from a
# real session): the session's parameters before the family, a single
# community bare, the link-bandwidth extended community in hex (type 0x40,
# subtype 0x04, 2-byte AS, IEEE float of bytes/s).
EXT_HEAD = " local-ip 127.0.0.1 local-as 64999 peer-as 65001 router-id 127.0.0.1 family-allowed in-open"


def extensive(attrs):
    def bandwidth(m):
        asn, bps = m.group(1).split(":")
        return "0x4004%04X%08X" % (int(asn), struct.unpack(">I", struct.pack(">f", float(bps)))[0])
    attrs = re.sub(r"extended-community \[bandwidth:([0-9]+:[0-9.]+)\]",
                   lambda m: "extended-community " + bandwidth(m), attrs)
    return re.sub(r"(?<![-\w])community \[([^] ]+)\]", r"community \1", attrs)
extra = os.path.join(os.path.dirname(conf_path), "extra-rib-out")
for line in iter(proc.stdout.readline, ""):
    w = line.split()
    out = []
    pi = w[w.index("path-information") + 1] if "path-information" in w else ""
    if w[:1] == ["neighbor"] and len(w) >= 6 and w[2] == "announce" and w[3] == "route":
        rib[(w[1], w[4], pi)] = " ".join(w[w.index("next-hop") + 1:])
    elif w[:1] == ["neighbor"] and len(w) >= 5 and w[2] == "withdraw" and w[3] == "route":
        rib.pop((w[1], w[4], pi), None)
    elif w[:3] == ["show", "adj-rib", "out"]:
        ext = w[3:4] == ["extensive"]
        out = ["neighbor %s%s ipv4 unicast %s%s next-hop %s" % (n, EXT_HEAD if ext else "", p,
                                                              " path-information " + i if i else "",
                                                              extensive(nh) if ext else nh)
               for (n, p, i), nh in sorted(rib.items())]
        if os.path.exists(extra):
            out += [x.strip() for x in open(extra) if x.strip()]
    proc.stdin.write("".join(x + "\n" for x in out) + "done\n")
    proc.stdin.flush()
