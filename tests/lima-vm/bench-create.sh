#!/usr/bin/env bash
# The real-VM rows of `make bench` (bench/run.sh runs this when it exists):
# create -> first exec output, cold against from the warm pool, and exec
# overhead against `limactl shell`, on QEMU guests (tests/lima-vm/limactl).
# Boots take most of a minute under TCG, so each create is measured ONCE
# (the table says so); exec is the median of BENCH_VM_EXEC_RUNS pairs.
# Prints rows for bench/run.sh (FIGURE, BASELINE, MEASURED, RATIO, GOAL,
# tab-separated); progress goes to stderr. A row says "not measured" when
# the VM tier cannot run here (no QEMU, no image).
#   BENCH_VM_EXEC_RUNS  exec pairs (default 11)
set -u
export LIMA_SIM=${LIMA_SIM_VM:-$(cd "$(dirname "$0")" && pwd)/limactl}
export AL_BOOT_S=${AL_BOOT_S:-120}
. "$(dirname "$0")/../regress/lib.sh" >/dev/null
trap 'finish >/dev/null 2>&1' EXIT
RUNS=${BENCH_VM_EXEC_RUNS:-11}
SHAPE="--cpus 2 --memory 2G --disk 10G"

say() { echo "bench-vm: $*" >&2; }
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@"; }

# The image is built (or found in the cache) first, so that no create
# below pays for it.
if ! img=$("$(dirname "$0")/build-image.sh" 2>"$T/image.log"); then
	why=$(tail -1 "$T/image.log")
	row "real VM create -> first output" "n/a" "n/a" "-" \
	    "not measured (no guest image: ${why:-build failed})"
	exit 0
fi
say "image $img"

# create -> first byte of `exec -- echo x`, in ms.
first_output() {
	python3 - "$LANECTL" "$SOCK" "$SHAPE" <<'PY'
import subprocess, sys, time
ctl, sock, shape = sys.argv[1], sys.argv[2], sys.argv[3].split()
t0 = time.perf_counter()
name = subprocess.run([ctl, "--socket", sock, "create", "--timeout", "1h"] + shape,
                      check=True, stdout=subprocess.PIPE).stdout.decode().strip()
tc = (time.perf_counter() - t0) * 1000
p = subprocess.Popen([ctl, "--socket", sock, "exec", name, "--", "echo", "x"],
                     stdout=subprocess.PIPE)
p.stdout.read(1)
t = (time.perf_counter() - t0) * 1000
p.wait()
print("%s %.0f %.0f" % (name, t, tc))
PY
}

say "cold create (one VM boot)"
start_daemon || exit 1
read -r L cold coldc < <(first_output) || exit 1

say "exec: $RUNS pairs against limactl shell in $L"
exec_row=$(LIMA_HOME=$STATE/lima python3 - "$SIM" "$L" "$LANECTL" "$SOCK" "$RUNS" <<'PY'
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
md, mo = statistics.median(d), statistics.median(o)
print("real VM exec -- true, median of %d pairs\t%.0f ms limactl shell\t%.0f ms\t%+.0f%% (%.2fx)\twithin +10%%"
      % (runs, md, mo, (mo / md - 1) * 100, mo / md))
PY
)
ctl rm "$L" >/dev/null
stop_daemon

say "pooled create (the pool boots one VM first)"
start_daemon --pool-size 1 --pool-max-boots 1 --default-cpus 2 \
    --default-memory 2G --default-disk 10G || exit 1
booted() {
	ctl ls --all --json | python3 -c '
import json, sys
sys.exit(0 if any(l["state"] == "pooled" and l["workspace"] for l in json.load(sys.stdin)) else 1)'
}
if ! wait_for $((AL_BOOT_S * 3)) booted; then
	row "real VM create -> first output" "$cold ms cold" "n/a" "-" \
	    "the pool did not fill"
	exit 0
fi
read -r P pooled pooledc < <(first_output) || exit 1
ctl rm "$P" >/dev/null
# The pool refills behind the take; stopping the daemon stops that boot,
# and finish (lib.sh) deletes every VM left in the state directory.
stop_daemon

awk -v c="$cold" -v p="$pooled" -v cc="$coldc" -v pc="$pooledc" 'BEGIN {
	OFS = "\t"
	print "real VM create -> first output (1 run each)", sprintf("%.1f s cold", c / 1000), sprintf("%.0f ms pooled", p), sprintf("%.0fx faster", c / p), "-"
	print "  of which agent-lanectl create", sprintf("%.1f s cold", cc / 1000), sprintf("%.0f ms pooled", pc), sprintf("%.0fx faster", cc / pc), "-"
}'
echo "$exec_row"
