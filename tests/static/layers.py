#!/usr/bin/env python3
"""The include rules of docs/HACKING.md (Layout), checked on the sources.

  layers.py [--root DIR] circles   no include circle between modules
  layers.py [--root DIR] layers    no folder includes a higher layer
  layers.py [--root DIR] --tap     both, then the checker on made-up trees,
                                   as TAP (tests/static/test_layers.sh)

Exit 0 when the rule holds, 1 (with one line per breach on stdout) when it
does not, 2 on a usage error.

Modules. X.h and X.c are one module. A file without a partner of the same
name joins the module of what it implements: a .c the module whose header
declares the functions it defines (api_flows.c joins api.h), a header the
module whose files define the functions it declares (a private header such
as topo_index.h joins topo_model.c, whose functions it declares). Two X.h/X.c
modules never merge that way, whatever they implement for each other. What
is still loose then joins its family by name, the X.h/X.c module whose X_
prefix it carries (rebalance_int.h and rebalance_judge.c join rebalance.h).
Anything else (an entry point, a header of types or constants) is a module
of its own. Functions are recognised by the house layout: a
definition starts at the beginning of its line and is not static; a
prototype ends with ");".

Circles. Module A depends on B when a file of A includes a header of B. A
circle is a set of modules that depend on each other round, e.g. the old
topology family: topo.c included topobuild.h (for the index functions it
defined) and topobuild.h included topo.h, so the model needed the builder and
the builder the model, and neither could be read, tested or moved without the
other. Include guards hide such circles from the compiler, which is why they
need a check.

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
# Includes that close a circle still to be cut, each with its reason. The
# check leaves them out of the graph; one that no longer exists or no longer
# closes a circle is reported (a skipped test in the suite, listed by
# tests/run.sh) so that the list does not rot: delete the line with the
# change that cuts the circle.
KNOWN_CIRCLES = [
]

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# A non-static function definition at the start of a line: NAME(...) {
DEFINITION = re.compile(r'^(?!static\b|typedef\b|extern\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)[ \t]*\([^;{}]*\)\s*\{',
                        re.M)
# A prototype: NAME(...) [attributes] ; (not static inline, not a macro)
PROTOTYPE = re.compile(r'^[ \t]*(?!static\b|typedef\b|#)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)[ \t]*\([^;{}]*\)[^;{}()]*'
                       r'(?:__attribute__[ \t]*\(\([^;{}]*\)\)[ \t]*)?;', re.M)


class Source:
    def __init__(self, includes, functions):
        self.includes = includes      # quoted includes, in order
        self.functions = functions    # .c: defined (non-static); .h: declared


def parse(path, text):
    quoted = INCLUDE.findall(re.sub(r'/\*.*?\*/|//[^\n]*', "", text, flags=re.S))
    code = NOISE.sub('""', text)
    found = (DEFINITION if path.endswith(".c") else PROTOTYPE).findall(code)
    return Source(quoted, set(found))


def scan(root):
    """{path: Source} for every .c and .h of FOLDERS."""
    files = {}
    for d in FOLDERS:
        p = os.path.join(root, d)
        if not os.path.isdir(p):
            continue
        for f in sorted(os.listdir(p)):
            if f.endswith((".c", ".h")):
                with open(os.path.join(p, f), encoding="utf-8", errors="replace") as fh:
                    files[d + "/" + f] = parse(f, fh.read())
    return files


def includes(files):
    """Every (file, quoted include), in a stable order."""
    for f, src in sorted(files.items()):
        for i in src.includes:
            yield f, i


def check_unresolved(files):
    return [f'{f}: #include "{i}" names no file under {"/".join(FOLDERS)}/ (write it as "folder/file.h")'
            for f, i in includes(files) if i not in files]


def check_layers(files):
    bad = []
    for f, i in includes(files):
        folder, to = f.split("/")[0], i.split("/")[0]
        if to != folder and to in MAY_INCLUDE and to not in MAY_INCLUDE[folder]:
            allowed = ", ".join(sorted(MAY_INCLUDE[folder] | {folder}))
            bad.append(f'{f}: includes "{i}": {folder}/ may include only {allowed}')
    return bad


def stem(path):
    return path.rsplit(".", 1)[0]


def modules(files):
    """{file: module name}: the union of X.h + X.c pairs and what implements
    what, never joining two pairs (module docstring)."""
    parent = {f: f for f in files}
    anchored = {f: False for f in files}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra == rb or (anchored[ra] and anchored[rb]):
            return
        parent[rb] = ra
        anchored[ra] = anchored[ra] or anchored[rb]

    for f in files:
        if f.endswith(".c") and stem(f) + ".h" in files:
            union(stem(f) + ".h", f)
            anchored[find(f)] = True
    headers = [h for h in files if h.endswith(".h")]
    links = []
    for c in files:
        if c.endswith(".c") and files[c].functions:
            for h in headers:
                if stem(h) != stem(c) and files[c].functions & files[h].functions:
                    # A family member's own prefix first (api_flows.c -> api.h), then by name.
                    prefix = stem(os.path.basename(c)).startswith(stem(os.path.basename(h)) + "_")
                    links.append((not prefix, c, h))
    for _, c, h in sorted(links):
        union(h, c)
    # What is still loose joins its family by name: rebalance_int.h and the
    # rebalance_*.c that implement it join rebalance.h (the longest X_ prefix).
    pairs = {stem(h) for h in headers if stem(h) + ".c" in files}
    for f in sorted(files):
        if anchored[find(f)]:
            continue
        fam = [p for p in pairs if os.path.dirname(p) == os.path.dirname(f) and stem(f).startswith(p + "_")]
        if fam:
            union(max(fam, key=len) + ".h", f)
    name = {}
    for f in sorted(files):
        r = find(f)
        members = [g for g in files if find(g) == r] if r not in name else None
        if members is not None:
            pairs = sorted(g for g in members if g.endswith(".h") and stem(g) + ".c" in files)
            hs = sorted(g for g in members if g.endswith(".h"))
            name[r] = (pairs or hs or sorted(members))[0]
    return {f: name[find(f)] for f in files}


def module_graph(files, mod, leave_out=()):
    edges = {}   # module -> {module: (file, header) that makes the edge}
    for f, src in sorted(files.items()):
        a = mod[f]
        edges.setdefault(a, {})
        for i in src.includes:
            if i in files and mod[i] != a and (f, i) not in leave_out:
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
    mod = modules(files)
    edges = module_graph(files, mod, set(known))
    bad = []
    for comp in sorted(strongly_connected(edges), key=min):
        bad.append(f"include circle between {', '.join(sorted(comp))}: {one_cycle(edges, comp)}")
    return bad


def stale_known(files, known=KNOWN_CIRCLES):
    """The KNOWN_CIRCLES lines that no longer close a circle."""
    mod = modules(files)
    every = strongly_connected(module_graph(files, mod))
    stale = []
    for f, h in known:
        if f not in files or h not in files[f].includes:
            stale.append(f'{f} no longer includes "{h}"')
        elif not any(mod[f] in c and mod[h] in c for c in every):
            stale.append(f'{f} including "{h}" closes no circle now')
    return [f"known circle: {s}: delete its line from KNOWN_CIRCLES in tests/static/layers.py" for s in stale]


def run(files, rule, known=KNOWN_CIRCLES):
    """The breaches of one rule (unresolved includes always count)."""
    if rule == "circles":
        return check_unresolved(files) + check_circles(files, known)
    return check_unresolved(files) + check_layers(files)


def tree(spec):
    """A made-up tree, one file a line: "path: includes... [; functions...]"
    (functions: what a .c defines or a header declares)."""
    files = {}
    for line in spec.strip().splitlines():
        f, _, rest = line.partition(":")
        incs, _, funcs = rest.partition(";")
        files[f.strip()] = Source(incs.split(), set(funcs.split()))
    return files


# The old topology family (issue 15): topo.c defined the index functions
# that topobuild.h declared and included it for them; topobuild.h included
# topo.h.
OLD_TOPO = tree("""
common/util.h: ; tf_fail
common/util.c: common/util.h ; tf_fail
policy/topo.h: ; topo_free topo_load topo_generate topo_path_count
policy/topo.c: policy/topo.h common/util.h policy/topobuild.h ; topo_free topo_index_new
policy/paths.c: policy/topo.h ; topo_path_count
policy/topogen.c: policy/topo.h common/util.h policy/topobuild.h ; topo_generate
policy/topojson.c: policy/topo.h common/util.h policy/topobuild.h ; topo_load
policy/topobuild.h: common/util.h policy/topo.h ; topobuild_init topo_index_new
policy/topobuild.c: policy/topobuild.h common/util.h ; topobuild_init
""")
# The family now: a public header over lower ones, each file including only
# what sits below it; topo_index.h is topo_model.c's private header.
FAMILY = tree("""
common/util.h: ; tf_fail
common/util.c: common/util.h ; tf_fail
policy/topo.h: policy/topo_model.h policy/topo_paths.h policy/topo_gen.h
policy/topo_model.h: ; topo_free
policy/topo_model.c: policy/topo_model.h common/util.h policy/topo_index.h ; topo_free topo_index_new
policy/topo_index.h: ; topo_index_new
policy/topo_paths.h: policy/topo_model.h ; topo_path_count
policy/topo_paths.c: policy/topo_paths.h ; topo_path_count
policy/topo_build.h: policy/topo_model.h ; topo_build_init
policy/topo_build.c: policy/topo_build.h policy/topo_index.h policy/topo_paths.h ; topo_build_init
policy/topo_gen.h: policy/topo_model.h ; topo_generate
policy/topo_gen.c: policy/topo_gen.h policy/topo_build.h ; topo_generate
policy/topo_main.c: common/util.h policy/topo.h ; main
sim/sim_main.c: common/util.h policy/topo.h ; main
controller/state.h: policy/topo.h ; state_new
controller/api.h: controller/state.h ; api_handle
controller/api_internal.h: controller/api.h ; api_reply api_flows_get
controller/api.c: controller/api.h controller/api_internal.h ; api_handle api_reply
controller/api_flows.c: common/util.h controller/api_internal.h ; api_flows_get
controller/rebalance.h: controller/state.h ; rebalance_run
controller/rebalance.c: controller/rebalance.h controller/rebalance_int.h ; rebalance_run
controller/rebalance_int.h: controller/rebalance.h ; rebalance_judge
controller/rebalance_judge.c: common/util.h controller/rebalance_int.h ; rebalance_judge
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


def with_include(files, path, header):
    out = dict(files)
    out[path] = Source(files[path].includes + [header], files[path].functions)
    return out


def selftests():
    """(name, breaches, want): the checker on made-up trees, so that a checker
    that finds nothing fails. want None: no breach; else a breach holds it."""
    odd = tree("common/util.h:\ncommon/util.c: common/util.h util.h")
    c_text = ("static int helper(int a)\n{\n    return a;\n}\n\n"
              "const char *topo_tier_name(int tier)\n{\n    return \"x(\";\n}\n\n"
              "int topo_build_link(struct topo_build *b, uint32_t a,\n"
              "                    const struct topo_build_ends *ends)\n{\n    return 0;\n}\n")
    h_text = ("static inline uint32_t topo_dir(uint32_t link) { return 2 * link; }\n"
              "#define topo_x(a) (a)\n/* int topo_comment(void); */\n"
              "int  topo_build_link(struct topo_build *b, uint32_t a,\n"
              "                     const struct topo_build_ends *ends);\n"
              "void tf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));\n"
              "struct k { int (*gen)(int); };\n")
    return [
        ("finds the old topology circle and names the include that closes it", run(OLD_TOPO, "circles", []),
         'policy/topo.c (of policy/topo.h) includes "policy/topobuild.h"'),
        ("a family header over lower headers, private headers: no circle", run(FAMILY, "circles", []), None),
        ("sim and controller may include policy", run(FAMILY, "layers", []), None),
        ("a builder that includes the family header it serves is a circle",
         run(with_include(FAMILY, "policy/topo_build.c", "policy/topo.h"), "circles", []),
         "include circle between policy/topo.h, policy/topo_build.h"),
        ("a module's private header that includes a higher module is a circle",
         run(with_include(FAMILY, "policy/topo_index.h", "policy/topo_build.h"), "circles", []),
         "include circle between policy/topo_build.h, policy/topo_model.h"),
        ("a known circle's include is left out",
         run(with_include(FAMILY, "policy/topo_build.c", "policy/topo.h"), "circles",
             [("policy/topo_build.c", "policy/topo.h")]), None),
        ("a known circle that is cut is reported",
         stale_known(FAMILY, [("policy/topo_gen.c", "policy/topo_build.h")]),
         'policy/topo_gen.c including "policy/topo_build.h" closes no circle now'),
        ("a known circle whose include is gone is reported",
         stale_known(FAMILY, [("policy/topo_gen.c", "policy/topo.h")]),
         'policy/topo_gen.c no longer includes "policy/topo.h"'),
        ("policy may not include controller", run(BREACH, "layers", []),
         'policy/assign.c: includes "controller/state.h": policy/ may include only common, policy'),
        ("probes may not include policy", run(BREACH, "layers", []), 'probes/flowtab.c: includes "policy/assign.h"'),
        ("policy may not include sim", run(BREACH, "layers", []), 'policy/job.h: includes "sim/bound.h"'),
        ("an include that names no file is refused", run(odd, "layers", []), '#include "util.h" names no file'),
        ("definitions are found as the house writes them",
         [" ".join(sorted(parse("x.c", c_text).functions))], "topo_build_link topo_tier_name"),
        ("prototypes are found as the house writes them",
         [" ".join(sorted(parse("x.h", h_text).functions))], "tf_log topo_build_link"),
    ]


def tap(root):
    files = scan(root)
    results = [
        ("no include circle between modules (outside the known ones)", run(files, "circles"), None),
        ("no folder includes a higher layer", run(files, "layers"), None),
    ] + selftests()
    failed = 0
    for n, (name, bad, want) in enumerate(results, 1):
        ok = not bad if want is None else any(want == b if name.startswith(("definitions", "prototypes")) else
                                              want in b for b in bad)
        failed += not ok
        print(f"{'ok' if ok else 'not ok'} {n} - {name}")
        if not ok:
            print(f"# want {'no breach' if want is None else repr(want)}, got:")
            for b in bad or ["(nothing)"]:
                print(f"#   {b}")
    stale, n = stale_known(files), len(results) + 1
    if stale:
        print(f"ok {n} # SKIP every known circle still closes one: " + "; ".join(stale))
    else:
        print(f"ok {n} - every known circle still closes one")
    print(f"1..{n}")
    return 1 if failed else 0


def main(argv):
    root = "."
    args = list(argv)
    if len(args) >= 2 and args[0] == "--root":
        root, args = args[1], args[2:]
    if args == ["--tap"]:
        return tap(root)
    if len(args) != 1 or args[0] not in ("circles", "layers"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    files = scan(root)
    if not files:
        print(f"{root}: no sources under {', '.join(FOLDERS)}", file=sys.stderr)
        return 2
    bad = run(files, args[0])
    for b in bad:
        print(b)
    if args[0] == "circles":
        for s in stale_known(files):
            print(f"note: {s}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
