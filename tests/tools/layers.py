#!/usr/bin/env python3
"""The include and call graphs of a directory of C modules, and its layers.

A module is a file name without .c/.h (lane.c and lane.h are "lane";
X_int.h, the private header of X's files, is X's). The include graph has
an arrow A -> B when A.c or A.h includes "B.h" from the same directory;
the call graph has one when A.o uses a symbol B.o defines (read with nm
from the build's objects).

    layers.py measure DIR OBJDIR [ORDER]   modules, arrows, arrows running
                                           back up (against ORDER), cycles
    layers.py check DIR OBJDIR ORDER       exit 1 unless every call runs
                                           down ORDER (or is a named
                                           exception) and ORDER lists
                                           exactly the modules built
    layers.py draft DIR OBJDIR             a draft ORDER, bottom first,
                                           from the call graph

ORDER (tests/layers/*.order): one module a line, bottom first; a module
may call only modules listed above it. "except A -> B" lines name a call
up that is allowed for now; "#" starts a comment.
"""
import collections
import glob
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)\.h"', re.M)


def module_of(path):
    """lane.c and lane.h are "lane"; X_int.h, X's private header, is X's."""
    m = os.path.splitext(os.path.basename(path))[0]
    return m[:-4] if m.endswith("_int") else m


def include_graph(src):
    files = glob.glob(os.path.join(src, "*.c")) + glob.glob(os.path.join(src, "*.h"))
    mods = {module_of(f) for f in files}
    g = {m: set() for m in mods}
    for f in files:
        m = module_of(f)
        with open(f, encoding="utf-8", errors="replace") as fh:
            for inc in INCLUDE.findall(fh.read()):
                inc = module_of(inc + ".h")
                if inc in mods and inc != m:
                    g[m].add(inc)
    return g


def call_graph(objdir):
    objs = sorted(glob.glob(os.path.join(objdir, "*.o")))
    if not objs:
        sys.exit("no objects in %s (build first)" % objdir)
    defs, uses = {}, collections.defaultdict(set)
    for o in objs:
        n = os.path.basename(o)[:-2]
        uses[n]
        r = subprocess.run(["nm", o], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("nm %s failed: %s" % (o, r.stderr.strip()))
        for line in r.stdout.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDRBCV":
                defs[p[2]] = n
            elif len(p) == 2 and p[0] == "U":
                uses[n].add(p[1])
    return {n: {defs[s] for s in u if s in defs and defs[s] != n}
            for n, u in uses.items()}


def sccs(g):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, out, c = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = c[0]
        c[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def read_order(path):
    order, allowed = [], set()
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"except\s+(\S+)\s*->\s*(\S+)", line)
            if m:
                allowed.add((m.group(1), m.group(2)))
            elif re.fullmatch(r"[A-Za-z0-9_-]+", line):
                if line in order:
                    sys.exit("%s: %s is listed twice" % (path, line))
                order.append(line)
            else:
                sys.exit("%s: cannot read %r" % (path, raw.rstrip()))
    return order, allowed


def back_up(g, order):
    rank = {m: i for i, m in enumerate(order)}
    return sorted((a, b) for a in g for b in g[a]
                  if a in rank and b in rank and rank[b] > rank[a])


def report(name, g, order):
    arrows = sum(len(v) for v in g.values())
    print("%s: %d modules, %d arrows" % (name, len(g), arrows), end="")
    if order is not None:
        up = back_up(g, order)
        print(", %d back up" % len(up), end="")
    cyc = sccs(g)
    print(", %d cycles" % len(cyc))
    if order is not None:
        for a, b in up:
            print("  up: %s -> %s" % (a, b))
    for c in cyc:
        print("  cycle: {%s}" % ", ".join(c))


def draft(g):
    """Bottom first: a module after everything it calls; cycles kept together."""
    comp_of = {}
    for c in sccs(g):
        for m in c:
            comp_of[m] = tuple(c)
    done, out = set(), []

    def place(m, seen):
        if m in done or m in seen:
            return
        seen = seen | set(comp_of.get(m, (m,)))
        for n in comp_of.get(m, (m,)):
            for w in sorted(g.get(n, ())):
                place(w, seen)
        for n in comp_of.get(m, (m,)):
            if n not in done:
                done.add(n)
                out.append(n)

    for m in sorted(g):
        place(m, set())
    return out


def main(argv):
    if len(argv) < 3 or argv[0] not in ("measure", "check", "draft"):
        sys.exit(__doc__)
    cmd, src, objdir = argv[0], argv[1], argv[2]
    order_path = argv[3] if len(argv) > 3 else None
    calls = call_graph(objdir)
    if cmd == "draft":
        print("\n".join(draft(calls)))
        return 0
    order, allowed = read_order(order_path) if order_path else (None, set())
    if cmd == "measure":
        report("%s includes" % src, include_graph(src), order)
        report("%s calls" % src, calls, order)
        return 0
    if order is None:
        sys.exit("check needs an order file")
    bad = 0
    for m in sorted(set(calls) - set(order)):
        print("not in %s: %s (add the new module at its layer)" % (order_path, m))
        bad += 1
    for m in sorted(set(order) - set(calls)):
        print("in %s but not built: %s" % (order_path, m))
        bad += 1
    up = back_up(calls, order)
    for a, b in up:
        if (a, b) not in allowed:
            print("call up: %s -> %s (%s is above %s in %s)" % (a, b, b, a, order_path))
            bad += 1
    for a, b in sorted(allowed - set(up)):
        print("stale exception: %s -> %s no longer runs up (remove it)" % (a, b))
        bad += 1
    cyc = sccs(calls)
    print("modules %d, calls %d, exceptions %d, cycles %d" %
          (len(calls), sum(len(v) for v in calls.values()), len(up), len(cyc)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
