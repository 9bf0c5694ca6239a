#!/usr/bin/env bash
# Lanes through ssh against the local socket, in the same run (issue 19):
# one daemon, reached both ways (tests/remote/fixture: a real sshd on
# 127.0.0.1; root's daemon there, so that both sides are the same process
# with the same lane), and a plain `ssh host cat` pipe as the floor that no
# ssh transport can beat. Every figure is a ratio against a baseline of the
# same run; nothing here is pass/fail. Needs root (the fixture).
#
#   bench/remote.sh
#   BENCH_EXEC_RUNS   exec round trips per side (default 21)
#   BENCH_COPY_MIB    the file copied in (default 64)
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
LANECTL=${AGENT_LANECTL:-$REPO/build/agent-lanectl}
RUNS=${BENCH_EXEC_RUNS:-21}
MIB=${BENCH_COPY_MIB:-64}
[ "$(id -u)" -eq 0 ] || { echo "bench/remote.sh: needs root (tests/remote/fixture)" >&2; exit 2; }
FX=$(mktemp -d /run/alfxb.XXXXXX)
trap '"$REPO/tests/remote/fixture" stop "$FX"; rm -rf "$FX"' EXIT
"$REPO/tests/remote/fixture" start "$FX" >&2 || exit 1
. "$FX/env"
export PATH=$AL_SSH_BIN:$PATH HOME=$AL_CLIENT_HOME
unset AGENT_LANE_SOCKET AGENT_LANE_HOST AGENT_LANE_CONTEXT SSH_AUTH_SOCK
# The fixture's ssh wrapper picks its configuration by AL_SSH_CONFIG, which
# ssh inherits only when named here.
export AGENT_LANE_SSH_ENV=AL_SSH_CONFIG
SOCK=$FX/rootd/run/laned.sock
L=$("$LANECTL" --socket "$SOCK" create -q --timeout 2h) || exit 1
echo "bench: lane $L, $(nproc) cpus" >&2
head -c $((MIB << 20)) /dev/urandom >"$FX/blob"

python3 - "$LANECTL" "$SOCK" "$L" "$AL_SSH_PORT" "$FX/blob" "$RUNS" "$MIB" <<'PY'
import statistics, subprocess, sys, time
ctl, sock, lane, port, blob, runs, mib = sys.argv[1:8]
runs, mib = int(runs), int(mib)
local = [ctl, "--socket", sock]
remote = [ctl, "--context", "remote-root"]
floor = ["ssh", "-T", "-p", port, "root@127.0.0.1"]

def once(argv, stdin=None):
    with open(stdin or "/dev/null", "rb") as f:
        t0 = time.perf_counter()
        subprocess.run(argv, stdin=f, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        return (time.perf_counter() - t0) * 1000

def paired(cmds, n):
    """Median ms of each (argv, stdin) in cmds, run in turn n times: drift
    hits them all alike."""
    for argv, stdin in cmds:
        once(argv, stdin)
    t = [[] for _ in cmds]
    for _ in range(n):
        for i, (argv, stdin) in enumerate(cmds):
            t[i].append(once(argv, stdin))
    return [statistics.median(x) for x in t]

rows = []
e_local, e_ssh, e_floor = paired([(local + ["exec", "-n", lane, "--", "true"], None),
                                  (remote + ["exec", "-n", lane, "--", "true"], None),
                                  (floor + ["cat"], None)], runs)
rows.append(("exec -- true, median of %d" % runs, "%.1f ms local socket" % e_local,
             "%.1f ms over ssh" % e_ssh, "%.1fx local; %.2fx ssh cat (%.1f ms)"
             % (e_ssh / e_local, e_ssh / e_floor, e_floor)))
# The same with the connection shared (ControlMaster/ControlPersist in the
# user's ssh configuration): the handshake is paid once.
import os
mux = os.path.join(os.path.dirname(blob), "client", "config.mux")
os.environ["AL_SSH_CONFIG"] = mux
m_local, m_ssh, m_floor = paired([(local + ["exec", "-n", lane, "--", "true"], None),
                                  (remote + ["exec", "-n", lane, "--", "true"], None),
                                  (floor + ["cat"], None)], runs)
del os.environ["AL_SSH_CONFIG"]
rows.append(("the same, ssh ControlMaster", "%.1f ms local socket" % m_local,
             "%.1f ms over ssh" % m_ssh, "%.1fx local; %.2fx ssh cat (%.1f ms)"
             % (m_ssh / m_local, m_ssh / m_floor, m_floor)))
cruns = max(3, runs // 7)
# The floor: the file itself through a plain ssh pipe into cat.
c_local, c_ssh, c_floor = paired([(local + ["cp", "-q", blob, lane + ":blob"], None),
                                  (remote + ["cp", "-q", blob, lane + ":blob"], None),
                                  (floor + ["cat > /dev/null"], blob)], cruns)
mbs = lambda ms: mib / (ms / 1000)
rows.append(("copy-in %d MiB file, median of %d" % (mib, cruns), "%.0f MiB/s local socket" % mbs(c_local),
             "%.0f MiB/s over ssh" % mbs(c_ssh), "%.2f of local; %.2f of ssh cat (%.0f MiB/s)"
             % (c_local / c_ssh, c_floor / c_ssh, mbs(c_floor))))
w = [max(len(r[i]) for r in rows) for i in range(4)]
for r in [("figure", "baseline", "measured", "ratio")] + rows:
    print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)))
PY
"$LANECTL" --socket "$SOCK" rm "$L" >/dev/null
