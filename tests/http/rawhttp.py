#!/usr/bin/env python3
"""Raw-socket HTTP clients for the HTTP test suites: what curl will not do.

  rawhttp.py send PORT FILE [--src ADDR]
      sends FILE's bytes as they are (a hand-made request), prints the reply
  rawhttp.py slowloris PORT --src ADDR --conns N --seconds S [--every T]
      keeps N connections from ADDR, each trickling a request header one
      byte every T seconds and never finishing it; a connection the server
      closes is opened again (at most every 0.2 s per slot). Prints JSON:
      lifetimes of the connections the server closed after they had sent
      something, how many were closed before they could send anything
      (refused), and the most that were open at once.
  rawhttp.py trickle-body PORT --src ADDR --length L --send B --seconds S
      [--every T] [--header 'K: V' ...] [--path P]
      one POST declaring Content-Length L: B bytes at once, then one byte
      every T seconds. Prints JSON: when the server closed it (null if not
      within S) and the status line of any reply.

Every connection is bound to --src, so that a test can play an attacker on
127.0.0.2 beside a normal client on 127.0.0.1 (loopback takes all of 127/8):
the server's per-address limit is per address.
"""
import argparse
import json
import select
import socket
import sys
import time


def connect(src, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def closed_by_peer(s):
    """True when the server has closed (EOF or reset); never blocks."""
    try:
        r, _, _ = select.select([s], [], [], 0)
        if not r:
            return False
        return s.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError, OSError):
        return True


def cmd_send(a):
    data = open(a.file, "rb").read()
    s = socket.create_connection(("127.0.0.1", a.port), timeout=10, source_address=(a.src, 0))
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    sys.stdout.buffer.write(out)


def cmd_slowloris(a):
    header = b"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100000
    slots = [None] * a.conns  # [sock, opened_at, bytes_sent, next_send]
    last_open = [0.0] * a.conns
    lifetimes, refused, max_open = [], 0, 0
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        now = time.monotonic()
        for i in range(a.conns):
            c = slots[i]
            if c is None:
                if now - last_open[i] >= 0.2:
                    last_open[i] = now
                    try:
                        slots[i] = [connect(a.src, a.port), now, 0, now]
                    except OSError:
                        slots[i] = None
                continue
            s, opened, sent, nxt = c
            if closed_by_peer(s):
                if sent > 0:
                    lifetimes.append(round(now - opened, 2))
                else:
                    refused += 1
                s.close()
                slots[i] = None
                continue
            if now >= nxt:
                try:
                    n = s.send(header[sent:sent + 1])
                    c[2] += n
                except BlockingIOError:
                    pass
                except OSError:
                    pass
                c[3] = now + a.every
        max_open = max(max_open, sum(1 for c in slots if c is not None and c[2] > 0))
        time.sleep(0.02)
    for c in slots:
        if c:
            c[0].close()
    lifetimes.sort()
    print(json.dumps({"lifetimes": lifetimes, "refused": refused, "max_open": max_open}))


def cmd_trickle_body(a):
    hdr = "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n" % (a.path, a.length)
    for h in a.header or []:
        hdr += h + "\r\n"
    hdr += "\r\n"
    s = socket.create_connection(("127.0.0.1", a.port), timeout=5, source_address=(a.src, 0))
    start = time.monotonic()
    s.sendall(hdr.encode() + b"x" * a.send)
    s.setblocking(False)
    sent, closed_at, reply = a.send, None, b""
    nxt = time.monotonic() + a.every
    while time.monotonic() - start < a.seconds:
        try:
            r, _, _ = select.select([s], [], [], 0.05)
            if r:
                b = s.recv(65536)
                if not b:
                    closed_at = time.monotonic() - start
                    break
                reply += b
        except OSError:
            closed_at = time.monotonic() - start
            break
        if time.monotonic() >= nxt and sent < a.length:
            try:
                sent += s.send(b"x")
            except BlockingIOError:
                pass
            except OSError:
                closed_at = time.monotonic() - start
                break
            nxt = time.monotonic() + a.every
    s.close()
    line = reply.split(b"\r\n", 1)[0].decode("latin-1") if reply else None
    print(json.dumps({"closed_after": None if closed_at is None else round(closed_at, 2), "status_line": line,
                      "sent": sent}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("port", type=int)
    s.add_argument("file")
    s.add_argument("--src", default="127.0.0.1")
    s = sub.add_parser("slowloris")
    s.add_argument("port", type=int)
    s.add_argument("--src", default="127.0.0.2")
    s.add_argument("--conns", type=int, default=100)
    s.add_argument("--seconds", type=float, default=10)
    s.add_argument("--every", type=float, default=0.5)
    s = sub.add_parser("trickle-body")
    s.add_argument("port", type=int)
    s.add_argument("--src", default="127.0.0.2")
    s.add_argument("--length", type=int, required=True)
    s.add_argument("--send", type=int, default=0)
    s.add_argument("--seconds", type=float, default=10)
    s.add_argument("--every", type=float, default=0.5)
    s.add_argument("--path", default="/api/v1/reports")
    s.add_argument("--header", action="append")
    a = p.parse_args()
    {"send": cmd_send, "slowloris": cmd_slowloris, "trickle-body": cmd_trickle_body}[a.cmd](a)


if __name__ == "__main__":
    main()
