#!/usr/bin/env bash
# Agent Lane benchmarks against the limactl simulator. Each figure is a
# ratio against a baseline measured in the same run; nothing here is
# pass/fail. Usage: bench/run.sh [exec|copy|rss ...]  (default: all)
#   BENCH_EXEC_RUNS   exec round trips per side (default 41)
#   BENCH_COPY_MIB    size of the copied tree (default 512)
#   BENCH_STREAM_MIB  exec stdout streamed to a slow reader (default 1024)
set -u
. "$(dirname "$0")/../tests/regress/lib.sh" >/dev/null
trap 'finish >/dev/null 2>&1' EXIT

WHAT=${*:-exec copy rss}
RUNS=${BENCH_EXEC_RUNS:-41}
COPY_MIB=${BENCH_COPY_MIB:-512}
STREAM_MIB=${BENCH_STREAM_MIB:-1024}

start_daemon || exit 1
L=$(ctl create --timeout 2h)
echo "lane $L; daemon pid $DAEMON_PID; $(nproc) cpus"

median_ms() {
	sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] }'
}

# Wall time of one command in milliseconds.
time_ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000 )) | awk '{ printf "%.3f\n", $1 / 1000 }'
}

bench_exec() {
	local direct=() lane=() i
	# Warm both paths, then alternate so drift hits both sides alike.
	sim shell "$L" -- true >/dev/null 2>&1
	ctl exec -n "$L" -- true
	for i in $(seq 1 "$RUNS"); do
		direct+=("$(time_ms sim shell --workdir / "$L" -- true)")
		lane+=("$(time_ms ctl exec -n "$L" -- true)")
	done
	local d l
	d=$(printf '%s\n' "${direct[@]}" | median_ms)
	l=$(printf '%s\n' "${lane[@]}" | median_ms)
	echo "exec round trip (median of $RUNS):"
	echo "  baseline  limactl shell NAME -- true       ${d} ms"
	echo "  measured  agent-lanectl exec LANE -- true  ${l} ms"
	awk -v d="$d" -v l="$l" 'BEGIN { printf "  overhead  %.2f ms (ratio %.2f; goal: within 5 ms)\n", l - d, l / d }'
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
	g sh -c 'rm -rf /tmp/bc-direct /tmp/bc-lane; mkdir -p /tmp/bc-direct'
	local t0 t1 td tl
	t0=$(date +%s%N)
	tar -c -f - -C "$src" . | sim shell --workdir / "$L" -- tar -x -f - -C /tmp/bc-direct
	t1=$(date +%s%N); td=$(( (t1 - t0) / 1000000 ))
	g sh -c 'rm -rf /tmp/bc-direct'
	t0=$(date +%s%N)
	ctl cp "$src" "$L:/tmp/bc-lane" >/dev/null
	t1=$(date +%s%N); tl=$(( (t1 - t0) / 1000000 ))
	local want got
	want=$(cd "$src" && find . -type f | wc -l)
	got=$(g sh -c 'find /tmp/bc-lane -type f | wc -l')
	g sh -c 'rm -rf /tmp/bc-lane'
	rm -rf "$src"
	echo "copy-in of a ${COPY_MIB} MiB tree ($want files; arrived: $got):"
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
