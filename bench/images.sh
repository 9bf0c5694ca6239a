#!/usr/bin/env bash
# create -> ready for a lane cloned from an image against a cold create, at
# the same simulated boot time, against the limactl simulator. Also: the
# same toolchain installed by running the provision script in a cold lane.
# Usage: bench/images.sh   (BENCH_BOOT_MS, default 3000; BENCH_RUNS, default 5)
set -u
export LIMA_SIM_BOOT_MS=${BENCH_BOOT_MS:-3000}
. "$(dirname "$0")/../tests/regress/lib.sh" >/dev/null
trap 'finish >/dev/null 2>&1' EXIT
RUNS=${BENCH_RUNS:-5}

start_daemon || exit 1
# A toolchain-like provision script: many files under /usr/local.
cat > "$T/tool.sh" <<'SH'
#!/bin/sh
set -e
mkdir -p /usr/local/lib/tool
i=0
while [ $i -lt 2000 ]; do echo "file $i" > /usr/local/lib/tool/f$i; i=$((i + 1)); done
printf '#!/bin/sh\necho tool\n' > /usr/local/bin/tool
chmod 755 /usr/local/bin/tool
SH
ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }
t0=$(ms); ctl image build tool --provision "$T/tool.sh" >/dev/null 2>&1 || exit 1
echo "image build (once): $(( $(ms) - t0 )) ms at LIMA_SIM_BOOT_MS=$LIMA_SIM_BOOT_MS"

python3 - "$LANECTL" "$SOCK" "$RUNS" "$T/tool.sh" <<'PY'
import statistics, subprocess, sys, time
ctl, sock, runs, script = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def run(*a, **kw):
    return subprocess.run([ctl, "--socket", sock, *a], check=True, capture_output=True, text=True, **kw).stdout.strip()
def timed(f):
    t0 = time.perf_counter(); lane = f(); t = (time.perf_counter() - t0) * 1000
    run("rm", lane)
    return t
cold = lambda: run("create")
image = lambda: run("create", "--image", "tool")
def cold_provisioned():
    lane = run("create")
    with open(script, "rb") as f:
        subprocess.run([ctl, "--socket", sock, "exec", lane, "--", "sudo", "-n", "sh"], stdin=f, check=True, capture_output=True)
    return lane
res = {"cold create": [], "create --image": [], "cold create + provision in the lane": []}
for _ in range(runs):   # interleaved, so drift hits all alike
    res["cold create"].append(timed(cold))
    res["create --image"].append(timed(image))
    res["cold create + provision in the lane"].append(timed(cold_provisioned))
base = statistics.median(res["cold create"])
for k, v in res.items():
    m = statistics.median(v)
    print("%-38s median %6.0f ms  (min %6.0f, max %6.0f; %d runs)  %.2fx cold" % (k, m, min(v), max(v), len(v), m / base))
PY
