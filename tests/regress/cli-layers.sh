#!/usr/bin/env bash
# The CLI's structure (issue 18): one command table whose entries carry
# their handler, no call cycle among the files of client/ctl (each calls
# only those below it), and platform #ifs only in the named compat files
# (daemon/compat.c, peercred.c, sockact.c; client/ctl/ctlcompat.c), with
# policy kept out of compat.c. Read from the objects of the build under
# test (nm) and from the sources; no daemon runs.
. "$(dirname "$0")/lib.sh"

OBJ=$(cd "$(dirname "$LANECTL")" && pwd)/obj/client/ctl
if ! command -v nm >/dev/null; then
	not_ok "nm is installed (binutils): the call graph is read with it"
	exit 1
fi
# Every object's defined and undefined symbols; nm failing is a failure.
OUT=$(python3 - "$OBJ" <<'PY' 2>&1
import collections, glob, os, subprocess, sys
objs = sorted(glob.glob(os.path.join(sys.argv[1], "*.o")))
if len(objs) < 10:
    sys.exit("only %d objects in %s" % (len(objs), sys.argv[1]))
defs, uses = {}, collections.defaultdict(set)
for o in objs:
    n = os.path.basename(o)[:-2]
    r = subprocess.run(["nm", o], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        sys.exit("nm %s failed: %s" % (o, r.stderr.strip()))
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDRBC":
            defs[p[2]] = n
        elif len(p) == 2 and p[0] == "U":
            uses[n].add(p[1])
g = {n: sorted({defs[s] for s in uses[n] if s in defs and defs[s] != n})
     for n in set(defs.values()) | set(uses)}
# Cycles: Tarjan's strongly connected components.
index, low, stack, on, sccs, c = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = c[0]; c[0] += 1; stack.append(v); on.add(v)
    for w in g[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(" ".join(sorted(comp)))
for v in sorted(g):
    if v not in index:
        visit(v)
print("files %d" % len(g))
print("cycles %s" % ("; ".join(sccs) or "none"))
# Who calls a command's handler: only the table.
callers = sorted({n for n, u in uses.items() if any(s.startswith("cmd_") for s in u)})
print("handler-callers %s" % " ".join(callers))
print("main-calls %s" % " ".join(g.get("agent-lanectl", [])))
PY
)
RC=$?
check_eq "the call graph of client/ctl was read" 0 "$RC"
check_match "from every object" '^files [0-9]+' "$OUT"
check_eq "no call cycle among the files of client/ctl" "cycles none" \
    "$(printf '%s\n' "$OUT" | grep '^cycles')"
check_eq "only the command table refers to the handlers" \
    "handler-callers commands" "$(printf '%s\n' "$OUT" | grep '^handler-callers')"
check_match "main runs commands through the table" '^main-calls .*commands' "$OUT"

# Platform #ifs: only in the compat files.
PLAT='^[[:space:]]*#[[:space:]]*if.*(__APPLE__|__linux__|__FreeBSD__|_WIN32|POSIX_SPAWN_CLOEXEC_DEFAULT|SOCK_CLOEXEC|SO_NOSIGPIPE|F_SETPIPE_SZ)'
STRAY=$(cd "$REPO" && grep -lE "$PLAT" daemon/*.c daemon/*.h client/ctl/*.c client/ctl/*.h |
    grep -vxE 'daemon/(compat|peercred|sockact)\.c|client/ctl/ctlcompat\.c')
check_eq "platform #ifs only in compat.c, peercred.c, sockact.c and ctlcompat.c" "" "$STRAY"
check_match "the check sees the compat files' own #ifs" 'compat' \
    "$(cd "$REPO" && grep -lE "$PLAT" daemon/*.c client/ctl/*.c)"
# compat.c is platform code: no SQLite, no libevent, no wiping policy.
POLICY=$(grep -nE 'sqlite|PRAGMA|event2/|event_set_mem_functions|wire_wipe' "$REPO/daemon/compat.c")
check_eq "no policy in daemon/compat.c (pragmas, wipe-on-free)" "" "$POLICY"
exit 0
