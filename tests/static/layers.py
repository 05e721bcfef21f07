#!/usr/bin/env python3
"""The include rules of docs/HACKING.md (Layout), checked on the sources.

  layers.py [--root DIR] circles   no include circle between modules
  layers.py [--root DIR] layers    no folder includes a higher layer
  layers.py [--root DIR] own       every module .c opens with its own header
  layers.py [--root DIR] --tap     all three, then the checker on made-up
                                   trees, as TAP (tests/static/test_layers.sh)

Exit 0 when the rule holds, 1 (with one line per breach on stdout) when it
does not, 2 on a usage error.

A module is a header with the .c files that implement it: a .c implements
the header it includes first (the house rule `own` checks), so topo_model.c
belongs to topo_model.h and a family header such as policy/topo.h stands
for the files that open with it. Entry points (*_main.c) are modules of
their own. Module A depends on module B when a file of A includes a header
of B; a circle is a set of modules that depend on each other round, e.g.
the old topo.h -> topo.c -> topobuild.h -> topobuild.c -> topo.h (topo.c
pulled in the builder, whose own header needed topo.h): there the builder
needs the model and the model's file needs the builder, so neither can be
read, tested or moved without the other. Include guards hide such circles
from the compiler, which is why they need a check.

Layers, lowest first: common; probes and policy (side by side, neither may
include the other); sim and controller (both above policy, neither above
the other). Only quoted includes count; each must name a file under the
root, as "folder/file.h".
"""
import os
import re
import sys

FOLDERS = ["common", "probes", "policy", "sim", "controller"]
# What a folder's files may include, besides their own folder.
MAY_INCLUDE = {
    "common": set(),
    "probes": {"common"},
    "policy": {"common"},
    "sim": {"common", "policy"},
    "controller": {"common", "policy"},
}
# Circles that exist and are owned by a brief still under way; each entry is
# the exact set of modules (headers) of one circle. The check fails when a
# listed circle changes or disappears, so the list cannot rot: delete the
# entry with the change that removes the circle.
KNOWN_CIRCLES = [
    # backend.c opens every kind (it includes each kind's header) and each
    # kind's header includes backend.h for the interface: the table of
    # backend kinds belongs in a module of its own (issue 15, controller).
    {"controller/backend.h", "controller/bgp_backend.h", "controller/nl_backend.h",
     "controller/plan_backend.h"},
    # history.c reads struct metrics and metrics.c calls history_summary
    # (issue 15, the one fabric summary for /status and /metrics).
    {"controller/history.h", "controller/metrics.h"},
]

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
COMMENTS = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def scan(root):
    """{path: [quoted includes in order]} for every .c and .h of FOLDERS."""
    files = {}
    for d in FOLDERS:
        p = os.path.join(root, d)
        if not os.path.isdir(p):
            continue
        for f in sorted(os.listdir(p)):
            if f.endswith((".c", ".h")):
                rel = d + "/" + f
                with open(os.path.join(p, f), encoding="utf-8", errors="replace") as fh:
                    files[rel] = INCLUDE.findall(COMMENTS.sub("", fh.read()))
    return files


def is_entry(path):
    return path.endswith("_main.c")


def module_of(files):
    """Each file's module: a header is its own; a .c joins its first include."""
    mod = {}
    for f, incs in files.items():
        own = [i for i in incs if i in files]
        if f.endswith(".c") and not is_entry(f) and own:
            mod[f] = own[0]
        else:
            mod[f] = f
    return mod


def includes(files):
    """Every (file, quoted include), in a stable order."""
    for f, incs in sorted(files.items()):
        for i in incs:
            yield f, i


def check_unresolved(files):
    return [f'{f}: #include "{i}" names no file under {"/".join(FOLDERS)}/ (write it as "folder/file.h")'
            for f, i in includes(files) if i not in files]


def check_own(files):
    bad = []
    for f, incs in sorted(files.items()):
        if not f.endswith(".c") or is_entry(f):
            continue
        if not incs:
            bad.append(f"{f}: includes no header of its own")
        elif os.path.dirname(incs[0]) != os.path.dirname(f):
            bad.append(f'{f}: its first include "{incs[0]}" is not a header of its own folder '
                       "(a module's .c opens with its own header)")
    return bad


def check_layers(files):
    bad = []
    for f, i in includes(files):
        folder, to = f.split("/")[0], i.split("/")[0]
        if to != folder and to in MAY_INCLUDE and to not in MAY_INCLUDE[folder]:
            allowed = ", ".join(sorted(MAY_INCLUDE[folder] | {folder}))
            bad.append(f'{f}: includes "{i}": {folder}/ may include only {allowed}')
    return bad


def module_graph(files):
    mod = module_of(files)
    edges = {}   # module -> {module: (file, header) that makes the edge}
    for f, incs in files.items():
        a = mod[f]
        edges.setdefault(a, {})
        for i in incs:
            if i in files and mod[i] != a:
                edges[a].setdefault(mod[i], (f, i))
    return edges


def strongly_connected(edges):
    """Tarjan, iterative: the components with more than one module."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(comp)
    return comps


def describe(module, f, header):
    of = f" (of {module})" if f != module else ""
    return f'{f}{of} includes "{header}"'


def one_cycle(edges, comp):
    """A shortest walk round the circle from its first module, as text."""
    start = min(comp)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, {})):
                if w not in comp:
                    continue
                if w == start:
                    walk, x = [(v, w)], v
                    while prev[x] is not None:
                        walk.append((prev[x], x))
                        x = prev[x]
                    walk.reverse()
                    return "; ".join(describe(a, *edges[a][b]) for a, b in walk)
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return ""


def check_circles(files, known=KNOWN_CIRCLES):
    edges = module_graph(files)
    bad = []
    found = strongly_connected(edges)
    for comp in sorted(found, key=min):
        if comp in known:
            continue
        bad.append(f"include circle between {', '.join(sorted(comp))}: {one_cycle(edges, comp)}")
    for k in known:
        if k not in found:
            bad.append(f"the known circle {', '.join(sorted(k))} is gone or changed: "
                       "delete it from KNOWN_CIRCLES in tests/static/layers.py")
    return bad


def run(files, rule, known=KNOWN_CIRCLES):
    """The breaches of one rule (unresolved includes always count)."""
    if rule == "circles":
        return check_unresolved(files) + check_circles(files, known)
    return check_unresolved(files) + {"layers": check_layers, "own": check_own}[rule](files)


def tree(spec):
    """A made-up tree from "file: include include ..." lines."""
    files = {}
    for line in spec.strip().splitlines():
        f, _, incs = line.partition(":")
        files[f.strip()] = incs.split()
    return files


# The old topology family (issue 15): topo.c pulled in the builder's header,
# and the builder needs topo.h.
OLD_TOPO = tree("""
common/util.h:
common/util.c: common/util.h
policy/topo.h:
policy/topo.c: policy/topo.h common/util.h policy/topobuild.h
policy/paths.c: policy/topo.h
policy/topobuild.h: common/util.h policy/topo.h
policy/topobuild.c: policy/topobuild.h common/util.h
""")
# The family now: a public header over lower ones, each file including only
# what sits below it.
FAMILY = tree("""
common/util.h:
common/util.c: common/util.h
policy/topo.h: policy/topo_model.h policy/topo_paths.h policy/topo_gen.h
policy/topo_model.h:
policy/topo_model.c: policy/topo_model.h policy/topo_index.h common/util.h
policy/topo_index.h:
policy/topo_paths.h: policy/topo_model.h
policy/topo_paths.c: policy/topo_paths.h
policy/topo_build.h: policy/topo_model.h
policy/topo_build.c: policy/topo_build.h policy/topo_index.h policy/topo_paths.h
policy/topo_gen.h: policy/topo_model.h
policy/topo_gen.c: policy/topo_gen.h policy/topo_build.h
policy/topo_main.c: policy/topo.h
sim/sim_main.c: policy/topo.h common/util.h
controller/state.h: policy/topo.h
""")
BREACH = tree("""
common/util.h:
controller/state.h: common/util.h
policy/assign.h:
policy/assign.c: policy/assign.h controller/state.h
probes/flowtab.h:
probes/flowtab.c: probes/flowtab.h policy/assign.h
sim/bound.h:
policy/job.h: sim/bound.h
""")


def selftests():
    """(name, breaches, want): the checker on made-up trees, so that a checker
    that finds nothing fails. want None: no breach; else a breach holds it."""
    fam2 = dict(FAMILY)
    fam2["policy/topo_build.c"] = fam2["policy/topo_build.c"] + ["policy/topo.h"]
    odd = tree("common/util.h:\ncommon/util.c: common/util.h util.h")
    own = tree("common/util.h:\npolicy/assign.h:\npolicy/assign.c: common/util.h policy/assign.h")
    return [
        ("finds the old topology circle and names the include that closes it", run(OLD_TOPO, "circles", []),
         'policy/topo.c (of policy/topo.h) includes "policy/topobuild.h"'),
        ("a family header over lower headers is no circle", run(FAMILY, "circles", []), None),
        ("sim and controller may include policy", run(FAMILY, "layers", []), None),
        ("a builder that includes the family header it serves is a circle", run(fam2, "circles", []),
         "include circle between policy/topo.h, policy/topo_build.h"),
        ("a known circle that is gone is reported", run(FAMILY, "circles", [{"policy/topo.h", "common/util.h"}]),
         "the known circle common/util.h, policy/topo.h is gone"),
        ("policy may not include controller", run(BREACH, "layers", []),
         'policy/assign.c: includes "controller/state.h": policy/ may include only common, policy'),
        ("probes may not include policy", run(BREACH, "layers", []), 'probes/flowtab.c: includes "policy/assign.h"'),
        ("policy may not include sim", run(BREACH, "layers", []), 'policy/job.h: includes "sim/bound.h"'),
        ("an include that names no file is refused", run(odd, "layers", []), '#include "util.h" names no file'),
        ("a module .c that does not open with its own header is refused", run(own, "own", []),
         'policy/assign.c: its first include "common/util.h"'),
    ]


def tap(root):
    files = scan(root)
    results = [
        ("no include circle between modules (outside the known ones)", run(files, "circles"), None),
        ("no folder includes a higher layer", run(files, "layers"), None),
        ("every module .c opens with a header of its own folder", run(files, "own"), None),
    ] + selftests()
    failed = 0
    for n, (name, bad, want) in enumerate(results, 1):
        ok = not bad if want is None else any(want in b for b in bad)
        failed += not ok
        print(f"{'ok' if ok else 'not ok'} {n} - {name}")
        if not ok:
            print(f"# want {'no breach' if want is None else repr(want)}, got:")
            for b in bad or ["(nothing)"]:
                print(f"#   {b}")
    print(f"1..{len(results)}")
    return 1 if failed else 0


def main(argv):
    root = "."
    args = list(argv)
    if len(args) >= 2 and args[0] == "--root":
        root, args = args[1], args[2:]
    if args == ["--tap"]:
        return tap(root)
    if len(args) != 1 or args[0] not in ("circles", "layers", "own"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    files = scan(root)
    if not files:
        print(f"{root}: no sources under {', '.join(FOLDERS)}", file=sys.stderr)
        return 2
    bad = run(files, args[0])
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
