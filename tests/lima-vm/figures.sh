#!/usr/bin/env bash
# The figures of docs/performance.md, measured the same way against either
# limactl: the simulator (default) or the real-VM one
# (LIMA_SIM=tests/lima-vm/limactl). Prints figures; never pass/fail.
#   FIG_RUNS      exec round trips (default 21)
#   FIG_COPY_MIB  size of the copied tree (default 100)
set -u
. "$(dirname "$0")/../regress/lib.sh" >/dev/null
trap 'finish >/dev/null 2>&1' EXIT
RUNS=${FIG_RUNS:-21}
MIB=${FIG_COPY_MIB:-100}

start_daemon || exit 1
echo "limactl: $SIM ($(nproc) cpus; load $(cut -d' ' -f1-3 /proc/loadavg))"
t0=$(date +%s%N)
L=$(ctl create --cpus 2 --memory 2G --disk 10G --timeout 2h)
echo "cold create -> ready:          $(( ($(date +%s%N) - t0) / 1000000 )) ms"

LIMA_HOME=$STATE/lima python3 - "$SIM" "$L" "$LANECTL" "$SOCK" "$RUNS" <<'PY'
import statistics, subprocess, sys, time
sim, lane, ctl, sock, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
direct = [sim, "--tty=false", "shell", "--workdir=/", lane, "--", "true"]
ours = [ctl, "--socket", sock, "exec", "-n", lane, "--", "true"]
def once(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) * 1000
for argv in (direct, ours):
    once(argv)
d, o = [], []
for _ in range(runs):
    d.append(once(direct))
    o.append(once(ours))
print("limactl shell NAME -- true:    %.0f ms (median of %d)" % (statistics.median(d), runs))
print("agent-lanectl exec LANE true:  %.0f ms (median of %d)" % (statistics.median(o), runs))
PY

src=$T/src
mkdir -p "$src"
head -c $((MIB * 1048576)) /dev/urandom | split -b 1048576 -a 4 - "$src/f."
sync
t0=$(date +%s%N)
ctl cp "$src" "$L:/tmp/fig" >/dev/null || echo "copy-in FAILED"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
awk -v ms="$ms" -v m="$MIB" 'BEGIN { printf "copy-in  %d MiB tree:          %d ms (%.1f MiB/s)\n", m, ms, m / (ms / 1000) }'
t0=$(date +%s%N)
ctl cp "$L:/tmp/fig" "$T/back" >/dev/null || echo "copy-out FAILED"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
awk -v ms="$ms" -v m="$MIB" 'BEGIN { printf "copy-out %d MiB tree:          %d ms (%.1f MiB/s)\n", m, ms, m / (ms / 1000) }'
diff -rq "$src" "$T/back" >/dev/null || echo "copy round trip DIFFERS"
t0=$(date +%s%N)
ctl rm "$L" >/dev/null
echo "rm:                            $(( ($(date +%s%N) - t0) / 1000000 )) ms"
