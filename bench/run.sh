#!/usr/bin/env bash
# Agent Lane benchmarks against the limactl simulator. Each figure is a
# ratio against a baseline measured in the same run; nothing here is
# pass/fail. Usage: bench/run.sh [exec|copy|rss ...]  (default: all)
#   BENCH_EXEC_RUNS   exec round trips per side (default 61)
#   BENCH_COPY_MIB    size of the copied tree (default 512)
#   BENCH_STREAM_MIB  exec stdout streamed to a slow reader (default 1024)
set -u
. "$(dirname "$0")/../tests/regress/lib.sh" >/dev/null
trap 'finish >/dev/null 2>&1' EXIT

WHAT=${*:-exec copy rss}
RUNS=${BENCH_EXEC_RUNS:-61}
COPY_MIB=${BENCH_COPY_MIB:-512}
STREAM_MIB=${BENCH_STREAM_MIB:-1024}

start_daemon || exit 1
L=$(ctl create --timeout 2h)
echo "lane $L; daemon pid $DAEMON_PID; $(nproc) cpus"

bench_exec() {
	# Timed from Python (perf_counter around each run, no shell forks in
	# the measurement); both sides alternate so drift hits them alike.
	LIMA_HOME=$STATE/lima python3 - "$SIM" "$L" "$LANECTL" "$SOCK" "$RUNS" <<'PY'
import os, statistics, subprocess, sys, time
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
print("exec round trip (median of %d):" % runs)
print("  baseline  limactl shell NAME -- true       %6.2f ms" % md)
print("  measured  agent-lanectl exec LANE -- true  %6.2f ms" % mo)
print("  overhead  %.2f ms (ratio %.2f; goal: within 5 ms)" % (mo - md, mo / md))
PY
}

bench_copy() {
	local src=$T/copy-src n
	mkdir -p "$src"
	# A tree: COPY_MIB one-MiB files of random data in 16 directories.
	for n in $(seq 0 15); do mkdir -p "$src/d$n"; done
	head -c $((COPY_MIB * 1048576)) /dev/urandom | split -b 1048576 -a 4 - "$src/f."
	for f in "$src"/f.*; do mv "$f" "$src/d$(( $(cksum <<<"$f" | cut -d' ' -f1) % 16 ))/"; done
	sync
	g() { ctl exec -n "$L" -- "$@"; }
	# Three alternating rounds, median of each side: the guest writes the
	# whole tree to disk every time, and writeback makes single runs noisy.
	local t0 t1 td tl want got round tds=() tls=()
	for round in 1 2 3; do
		g sh -c 'rm -rf /tmp/bc-direct /tmp/bc-lane; mkdir -p /tmp/bc-direct'
		sync
		t0=$(date +%s%N)
		tar -c -f - -C "$src" . | sim shell --workdir / "$L" -- tar -x -f - -C /tmp/bc-direct
		t1=$(date +%s%N); tds+=($(( (t1 - t0) / 1000000 )))
		g sh -c 'rm -rf /tmp/bc-direct'
		sync
		t0=$(date +%s%N)
		ctl cp "$src" "$L:/tmp/bc-lane" >/dev/null
		t1=$(date +%s%N); tls+=($(( (t1 - t0) / 1000000 )))
		want=$(cd "$src" && find . -type f | wc -l)
		got=$(g sh -c 'find /tmp/bc-lane -type f | wc -l')
	done
	g sh -c 'rm -rf /tmp/bc-lane'
	rm -rf "$src"
	td=$(printf '%s\n' "${tds[@]}" | sort -n | sed -n 2p)
	tl=$(printf '%s\n' "${tls[@]}" | sort -n | sed -n 2p)
	echo "copy-in of a ${COPY_MIB} MiB tree ($want files; arrived: $got; median of 3):"
	awk -v td="$td" -v tl="$tl" -v m="$COPY_MIB" 'BEGIN {
		printf "  baseline  tar -c | limactl shell NAME -- tar -x  %6.0f ms  %7.1f MiB/s\n", td, m / (td / 1000)
		printf "  measured  agent-lanectl cp DIR LANE:DIR          %6.0f ms  %7.1f MiB/s\n", tl, m / (tl / 1000)
		printf "  throughput ratio %.2f (goal: at least 0.8)\n", td / tl }'
}

bench_rss() {
	local base peak t0 t1 secs
	base=$(awk '/^VmHWM/ { print $2 }' "/proc/$DAEMON_PID/status")
	t0=$(date +%s%N)
	# The reader sleeps 2 s first (the daemon must stop reading the
	# guest), then reads in small slow gulps.
	ctl exec -n "$L" -- sh -c "head -c $((STREAM_MIB * 1048576)) /dev/zero" |
	    python3 -c '
import sys, time
time.sleep(2)
n = 0
r = sys.stdin.buffer.raw
while True:
    b = r.read(65536)
    if not b:
        break
    n += len(b)
    if n % (8 << 20) < 65536:
        time.sleep(0.01)
print(n, file=sys.stderr)' 2>"$T/streamed"
	t1=$(date +%s%N)
	peak=$(awk '/^VmHWM/ { print $2 }' "/proc/$DAEMON_PID/status")
	secs=$(( (t1 - t0) / 1000000 ))
	echo "daemon memory while streaming $(( $(cat "$T/streamed") / 1048576 )) MiB of exec stdout to a slow reader (${secs} ms):"
	awk -v b="$base" -v p="$peak" 'BEGIN {
		printf "  baseline  peak RSS after start and one create  %6.1f MiB\n", b / 1024
		printf "  measured  peak RSS after the stream             %6.1f MiB\n", p / 1024
		printf "  ratio %.2f; growth %.1f MiB (goal: peak under 64 MiB)\n", p / b, (p - b) / 1024 }'
}

for w in $WHAT; do
	case $w in
	exec) bench_exec ;;
	copy) bench_copy ;;
	rss) bench_rss ;;
	*) echo "unknown benchmark $w" >&2 ;;
	esac
done
ctl rm "$L" >/dev/null
