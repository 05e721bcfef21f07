#!/usr/bin/env python3
"""Compares tierflow's objects in a network namespace's kernel with one
switch's part of a plan.json (the plan backend's), as sets of normalised
tuples, and prints "N rules, M routes equal" or every difference.

  plancmp.py NETNS PLAN_JSON SWITCH

tierflow's objects: IPv4 rules with protocol 77 and a priority in
20000..20511, routes with protocol 77 in tables 7700..7955 (docs/routing.md).
Exit 0 when equal, 1 when not.
"""
import ipaddress
import json
import socket
import subprocess
import sys

PROTO, PRIO, TABLE = "77", range(20000, 20512), range(7700, 7956)


def ip_json(ns, *args):
    out = subprocess.run(["ip", "-n", ns, "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out or "[]")


def pfx(addr, length=None):
    if addr in (None, "all", "default"):
        return None
    return str(ipaddress.ip_network(addr if length is None or "/" in addr else f"{addr}/{length}"))


def proto_num(p):
    if p is None or p == 0:
        return 0
    return p if isinstance(p, int) else (int(p) if p.isdigit() else socket.getprotobyname(p))


def kernel(ns):
    rules = set()
    for r in ip_json(ns, "rule", "show"):
        if r.get("protocol") != PROTO or r.get("priority") not in PRIO:
            continue
        mark = int(r.get("fwmark", "0"), 16)
        mask = int(r.get("fwmask", "0xffffffff"), 16) if mark else 0
        rules.add((r["priority"], int(r["table"]), pfx(r.get("src"), r.get("srclen")),
                   pfx(r.get("dst"), r.get("dstlen")), proto_num(r.get("ipproto")),
                   r.get("sport", 0), r.get("dport", 0), mark, 0 if mask == 0xffffffff else mask))
    routes = set()
    for r in ip_json(ns, "route", "show", "table", "all"):
        if r.get("protocol") != PROTO or not r.get("table", "").isdigit() or int(r["table"]) not in TABLE:
            continue
        nhs = r.get("nexthops") or [{"gateway": r.get("gateway"), "dev": r.get("dev"), "weight": 1}]
        multi = len(nhs) > 1
        routes.add((int(r["table"]), pfx(r["dst"]),
                    tuple(sorted((h.get("gateway"), h.get("dev"), h.get("weight", 1) if multi else 1) for h in nhs))))
    return rules, routes


def planned(path, sw):
    """plan.json is controller/plan.h's plan_json: switches[] of node, rules, routes."""
    with open(path) as f:
        p = json.load(f)
    rules, routes = set(), set()
    for s in p["switches"]:
        if s["node"] != sw:
            continue
        for r in s["rules"]:
            mask = r["fwmask"] if r["fwmark"] else 0
            rules.add((r["prio"], r["table"], pfx(r["src"] or None), pfx(r["dst"] or None), r["ipproto"],
                       r["sport"], r["dport"], r["fwmark"], 0 if mask == 0xffffffff else mask))
        for r in s["routes"]:
            multi = len(r["nexthops"]) > 1
            routes.add((r["table"], pfx(r["dst"]),
                        tuple(sorted((h["via"] or None, h["dev"], h["weight"] if multi else 1) for h in r["nexthops"]))))
    return rules, routes


def main():
    ns, plan, sw = sys.argv[1:4]
    kr, kt = kernel(ns)
    pr, pt = planned(plan, sw)
    if kr == pr and kt == pt:
        print(f"{len(kr)} rules, {len(kt)} routes equal")
        return 0
    for name, k, p in (("rule", kr, pr), ("route", kt, pt)):
        for x in sorted(k - p, key=str):
            print(f"kernel has {name} not in plan: {x}")
        for x in sorted(p - k, key=str):
            print(f"plan has {name} not in kernel: {x}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
