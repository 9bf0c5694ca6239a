#!/usr/bin/env bash
# Agent Lane benchmarks against the limactl simulator. Every figure is a
# ratio or a percentile against a baseline measured in the same run; nothing
# here is pass/fail. The sections run in order and print ONE table at the
# end (the progress goes to stderr).
#
# Usage: bench/run.sh [rpc exec copy rss create scale tls vm ...]  (default: all)
#   BENCH_BIN         where echod and rpcload are (default: build/bench)
#   BENCH_RPC_SECS    seconds per RPC load run (default 3)
#   BENCH_EXEC_RUNS   exec round trips per side (default 61)
#   BENCH_COPY_MIB    size of the copied tree (default 512)
#   BENCH_STREAM_MIB  exec stdout streamed to a slow reader (default 1024)
#   BENCH_CREATES     creates per side for create -> first output (default 20)
#   BENCH_BOOT_MS     simulated boot time for that section (default 3000)
#   BENCH_LANES       lanes registered for the scale section (default 1000)
#   BENCH_TLS_REQUESTS requests per side for the tls section (default 400)
#   BENCH_VM          0: skip the real-Lima rows (bench/lima.sh: Lima 2.2
#                     on QEMU guests, minutes under TCG)
set -u
. "$(dirname "$0")/../tests/regress/lib.sh" >/dev/null
trap 'finish >/dev/null 2>&1' EXIT

WHAT=${*:-rpc exec copy rss create scale tls vm}
BIN=${BENCH_BIN:-$REPO/build/bench}
RPC_SECS=${BENCH_RPC_SECS:-3}
RUNS=${BENCH_EXEC_RUNS:-61}
COPY_MIB=${BENCH_COPY_MIB:-512}
STREAM_MIB=${BENCH_STREAM_MIB:-1024}
CREATES=${BENCH_CREATES:-20}
BOOT_MS=${BENCH_BOOT_MS:-3000}
NLANES=${BENCH_LANES:-1000}
ROWS=$T/rows
: > "$ROWS"

say() { echo "bench: $*" >&2; }
# row FIGURE BASELINE MEASURED RATIO GOAL
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$ROWS"; }

# 1024 lanes; no lane here proxies, and the daemon checks that every lane's
# proxy could open its connections under the open-file limit (20000 on
# some hosts): a small proxy cap keeps 1024 lanes within it.
MANY="--max-lanes 1024 --proxy-max-connections 4"
L=
need_lane() {
	[ -n "$L" ] && return 0
	start_daemon $MANY || exit 1
	L=$(ctl create --timeout 2h) || exit 1
	say "lane $L; daemon pid $DAEMON_PID; $(nproc) cpus"
}
drop_lane() {
	[ -n "$L" ] && ctl rm "$L" >/dev/null
	L=
	stop_daemon
}

bench_rpc() {
	local e1 e32 d1 d32 esock=$T/echo.sock epid
	need_lane
	"$BIN/echod" "$esock" & epid=$!
	for _ in $(seq 1 50); do [ -S "$esock" ] && break; sleep 0.02; done
	say "rpc: echo server, 1 and 32 clients"
	e1=$("$BIN/rpcload" echo "$esock" 1 "$RPC_SECS" "$L")
	e32=$("$BIN/rpcload" echo "$esock" 32 "$RPC_SECS" "$L")
	kill "$epid"; wait "$epid" 2>/dev/null
	say "rpc: agent-laned GetLane, 1 and 32 clients"
	d1=$("$BIN/rpcload" daemon "$SOCK" 1 "$RPC_SECS" "$L")
	d32=$("$BIN/rpcload" daemon "$SOCK" 32 "$RPC_SECS" "$L")
	# rpcload prints: calls/s p50-us p99-us failed
	awk -v e1="$e1" -v e32="$e32" -v d1="$d1" -v d32="$d32" 'BEGIN {
		split(e1, a); split(e32, b); split(d1, c); split(d32, d)
		OFS = "\t"
		print "RPC GetLane calls/s, 1 client", a[1] "/s echo", c[1] "/s", sprintf("%.2f", c[1] / a[1]), "-"
		print "RPC GetLane p50 / p99, 1 client", sprintf("%.3f / %.3f ms", a[2] / 1000, a[3] / 1000), sprintf("%.3f / %.3f ms", c[2] / 1000, c[3] / 1000), sprintf("%.1fx / %.1fx", c[2] / a[2], c[3] / a[3]), "-"
		print "RPC GetLane calls/s, 32 clients", b[1] "/s echo", d[1] "/s", sprintf("%.2f", d[1] / b[1]), ">= 0.50"
		print "RPC GetLane p50 / p99, 32 clients", sprintf("%.3f / %.3f ms", b[2] / 1000, b[3] / 1000), sprintf("%.3f / %.3f ms", d[2] / 1000, d[3] / 1000), sprintf("%.1fx / %.1fx", d[2] / b[2], d[3] / b[3]), "p99 < 5 ms"
		if (c[4] + d[4] > 0)
			print "RPC failed calls", "0", c[4] + d[4], "-", "0"
	}' >> "$ROWS"
}

bench_exec() {
	need_lane
	say "exec: $RUNS pairs"
	set -- $(LIMA_HOME=$STATE/lima python3 "$REPO/bench/execpairs.py" \
	    "$SIM" "$L" "$LANECTL" "$SOCK" "$RUNS")
	awk -v d="$1" -v o="$2" -v n="$RUNS" 'BEGIN {
		printf "exec -- true, median of %d\t%.2f ms limactl shell\t%.2f ms\t%+.2f ms (%.2fx)\t< +2 ms\n",
		    n, d, o, o - d, o / d }' >> "$ROWS"
}

bench_copy() {
	local src=$T/copy-src n
	need_lane
	say "copy: ${COPY_MIB} MiB tree, 3 rounds"
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
	[ "$want" = "$got" ] || row "copy-in: files arrived" "$want" "$got" "-" "all"
	awk -v td="$td" -v tl="$tl" -v m="$COPY_MIB" 'BEGIN {
		printf "copy-in %d MiB tree, median of 3\t%.0f MiB/s tar | limactl shell\t%.0f MiB/s\t%.2f\t>= 0.80\n",
		    m, m / (td / 1000), m / (tl / 1000), td / tl }' >> "$ROWS"
}

bench_rss() {
	local base peak
	need_lane
	say "rss: streaming ${STREAM_MIB} MiB of exec stdout to a slow reader"
	base=$(awk '/^VmHWM/ { print $2 }' "/proc/$DAEMON_PID/status")
	# The reader sleeps 2 s first (the daemon must stop reading the
	# guest), then reads in small slow gulps.
	ctl exec -n "$L" -- sh -c "head -c $((STREAM_MIB * 1048576)) /dev/zero" |
	    python3 -c '
import sys, time
time.sleep(2)
r = sys.stdin.buffer.raw
n = 0
while True:
    b = r.read(65536)
    if not b:
        break
    n += len(b)
    if n % (8 << 20) < 65536:
        time.sleep(0.01)'
	peak=$(awk '/^VmHWM/ { print $2 }' "/proc/$DAEMON_PID/status")
	awk -v b="$base" -v p="$peak" -v m="$STREAM_MIB" 'BEGIN {
		printf "daemon peak RSS, %d MiB exec stream\t%.1f MiB before\t%.1f MiB\t%.2f\t< 64 MiB\n",
		    m, b / 1024, p / 1024, p / b }' >> "$ROWS"
}

# create -> first exec output, cold and from the warm pool, at a simulated
# boot of BOOT_MS. The pooled side waits for a booted pool lane before each
# create: it measures a create the pool can serve, not the refill rate.
bench_create() {
	local cold pooled
	drop_lane
	say "create: $CREATES cold creates at LIMA_SIM_BOOT_MS=$BOOT_MS"
	LIMA_SIM_BOOT_MS=$BOOT_MS start_daemon || exit 1
	cold=$(create_series false) || exit 1
	stop_daemon
	say "create: $CREATES creates from a warm pool of 2"
	LIMA_SIM_BOOT_MS=$BOOT_MS start_daemon --pool-size 2 \
	    --pool-max-boots 2 || exit 1
	pooled=$(create_series true) || exit 1
	stop_daemon
	# create_series prints: p50-ms p95-ms
	awk -v c="$cold" -v p="$pooled" -v b="$BOOT_MS" 'BEGIN {
		split(c, a); split(p, q); OFS = "\t"
		print "create -> first output p50 (boot " b " ms)", sprintf("%.0f ms cold", a[1]), sprintf("%.1f ms pooled", q[1]), sprintf("%.0fx faster", a[1] / q[1]), "< 100 ms, >= 30x"
		print "create -> first output p95 (boot " b " ms)", sprintf("%.0f ms cold", a[2]), sprintf("%.1f ms pooled", q[2]), sprintf("%.0fx faster", a[2] / q[2]), "-"
		print "  of which agent-lanectl create, p50", sprintf("%.0f ms cold", a[3]), sprintf("%.1f ms pooled", q[3]), sprintf("%.0fx faster", a[3] / q[3]), "-"
	}' >> "$ROWS"
}

create_series() {
	python3 - "$LANECTL" "$SOCK" "$CREATES" "$1" <<'PY'
import json, statistics, subprocess, sys, time
ctl, sock, n, pooled = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "true"
def run(*args, **kw):
    return subprocess.run([ctl, "--socket", sock] + list(args), check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **kw).stdout
def booted_pool_lane():
    lanes = json.loads(run("ls", "--all", "--json"))
    return any(l["state"] == "pooled" and l.get("workspace") for l in lanes)
times, creates = [], []
for _ in range(n):
    if pooled:
        end = time.monotonic() + 120
        while not booted_pool_lane():
            if time.monotonic() > end:
                sys.exit("bench: the warm pool did not fill")
            time.sleep(0.05)
    t0 = time.perf_counter()
    name = run("create", "--timeout", "10m").decode().strip()
    creates.append((time.perf_counter() - t0) * 1000)
    # First output: exec prints one line; Popen so that the first byte,
    # not the exit, stops the clock.
    p = subprocess.Popen([ctl, "--socket", sock, "exec", name, "--", "echo", "x"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdout.read(1)
    times.append((time.perf_counter() - t0) * 1000)
    p.wait()
    run("rm", name)
times.sort()
print("%.1f %.1f %.1f" % (statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))],
                         statistics.median(creates)))
PY
}

# ls latency, start-up reconcile and idle memory with NLANES lanes
# registered, against the same with one. The other lanes are clones of
# the one real lane: registry rows, and instance directories whose pid
# files and host-agent socket are the real lane's, so that `limactl list`
# reports every one Running and reconcile keeps them all.
bench_scale() {
	local one many lane0 inst vmpid
	drop_lane
	say "scale: one lane"
	start_daemon $MANY || exit 1
	lane0=$(ctl create --timeout 2h) || exit 1
	stop_daemon
	one=$(scale_measure) || exit 1
	say "scale: $NLANES lanes (clones of $lane0)"
	inst=$STATE/lima/$lane0
	python3 - "$STATE/registry.db" "$STATE/lima" "$lane0" "$NLANES" <<'PY' || exit 1
import os, shutil, sqlite3, sys
db, home, lane0, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = sqlite3.connect(db)
cols = [r[1] for r in c.execute("PRAGMA table_info(lanes)")]
row = dict(zip(cols, c.execute("SELECT * FROM lanes WHERE name = ?", (lane0,)).fetchone()))
src = os.path.join(home, lane0)
for i in range(1, n):
    name = "al-%016x" % (0xbe7c000000000000 + i)
    row["name"] = name
    c.execute("INSERT INTO lanes (%s) VALUES (%s)" % (",".join(cols), ",".join("?" * len(cols))),
              [row[k] for k in cols])
    d = os.path.join(home, name)
    os.mkdir(d, 0o700)
    for f in os.listdir(src):
        p = os.path.join(src, f)
        if f == "ha.sock":
            os.symlink(p, os.path.join(d, f))
        elif os.path.isfile(p) and not os.path.islink(p):
            shutil.copy2(p, os.path.join(d, f))
c.commit()
PY
	many=$(scale_measure) || exit 1
	# Clones share the real lane's processes: remove them by hand.
	rm -rf "$STATE"/lima/al-be7c*
	sqlite3 "$STATE/registry.db" "DELETE FROM lanes WHERE name GLOB 'al-be7c*'"
	start_daemon $MANY || exit 1
	ctl rm "$lane0" >/dev/null
	stop_daemon
	# scale_measure prints: lanes-ready ls-ms reconcile-ms rss-kib daemon-ms
	awk -v o="$one" -v m="$many" -v n="$NLANES" 'BEGIN {
		split(o, a); split(m, b); OFS = "\t"
		print "ls, " n " lanes (median of 21)", sprintf("%.1f ms at 1 lane", a[2]), sprintf("%.1f ms", b[2]), sprintf("%.1fx", b[2] / a[2]), "< 50 ms"
		print "start-up reconcile, " n " lanes", sprintf("%.0f ms at 1 lane", a[3]), sprintf("%.0f ms", b[3]), sprintf("%.1fx", b[3] / a[3]), "< 1000 ms"
		print "  of which agent-laned (not limactl list)", sprintf("%.0f ms at 1 lane", a[5]), sprintf("%.0f ms", b[5]), sprintf("%.1fx", b[5] / (a[5] > 0 ? a[5] : 1)), "-"
		print "daemon idle RSS, " n " lanes", sprintf("%.1f MiB at 1 lane", a[4] / 1024), sprintf("%.1f MiB", b[4] / 1024), sprintf("%.2fx", b[4] / a[4]), "< 32 MiB"
		print "lanes still ready after reconcile", a[1], b[1], "-", n
	}' >> "$ROWS"
}

# Starts the daemon on the registry as it is; prints lanes ready after the
# start-up reconcile, median ls ms, reconcile ms (adopt + limactl list
# and its checks, from the daemon's log) and idle RSS in KiB.
scale_measure() {
	local mark rec list adopt ready lsms rss
	mark=$(wc -l < "$LOG")
	start_daemon $MANY || return 1
	wait_for 60 sh -c "tail -n +$((mark + 1)) '$LOG' | grep -q 'reconcile: done in'"
	rec=$(tail -n +$((mark + 1)) "$LOG" | sed -n 's/.*reconcile: done in \([0-9]*\) ms.*/\1/p' | head -1)
	list=$(tail -n +$((mark + 1)) "$LOG" | sed -n 's/.*reconcile: done in .*(limactl list \([0-9]*\) ms).*/\1/p' | head -1)
	adopt=$(tail -n +$((mark + 1)) "$LOG" | sed -n 's/.*adopted in \([0-9]*\) ms.*/\1/p' | head -1)
	ready=$(ctl ls -q 2>/dev/null | wc -l)
	lsms=$(python3 - "$LANECTL" "$SOCK" <<'PY'
import statistics, subprocess, sys, time
t = []
for _ in range(22):
    t0 = time.perf_counter()
    subprocess.run([sys.argv[1], "--socket", sys.argv[2], "ls"], check=True,
                   stdout=subprocess.DEVNULL)
    t.append((time.perf_counter() - t0) * 1000)
print("%.2f" % statistics.median(t[1:]))
PY
)
	sleep 1
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON_PID/status")
	stop_daemon
	echo "$ready $lsms $(( ${rec:-0} + ${adopt:-0} )) $rss $(( ${rec:-0} + ${adopt:-0} - ${list:-0} ))"
}

# What the intercepting proxy (secrets) adds to an HTTPS request, against
# a direct TLS connection to the same loopback upstream.
bench_tls() {
	say "tls: loopback upstream, direct and through the intercepting proxy"
	python3 "$REPO/bench/proxytls.py" "$REPO/build/tests/al-proxy-harness" \
	    "${BENCH_TLS_REQUESTS:-400}" >> "$ROWS"
}

# Real Lima (bench/lima.sh): Lima 2.2's own limactl on QEMU guests, each
# create a boot of a minute or more under TCG.
bench_vm() {
	if [ "${BENCH_VM:-1}" = 0 ]; then
		row "real Lima rows" "n/a" "n/a" "-" "not measured (BENCH_VM=0)"
	else
		say "vm: real Lima (bench/lima.sh): boots take minutes under TCG"
		"$REPO/bench/lima.sh" >> "$ROWS"
	fi
}

for w in $WHAT; do
	case $w in
	rpc) bench_rpc ;;
	exec) bench_exec ;;
	copy) bench_copy ;;
	rss) bench_rss ;;
	create) bench_create ;;
	scale) bench_scale ;;
	tls) bench_tls ;;
	vm) bench_vm ;;
	*) echo "unknown benchmark $w" >&2 ;;
	esac
done
drop_lane

echo "Agent Lane benchmarks, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cpus, limactl simulator (rows \"real Lima\": Lima 2.2 on QEMU, bench/lima.sh)"
{
	printf 'figure\tbaseline\tmeasured\tratio\tgoal\n'
	cat "$ROWS"
} | awk -F'\t' '
	{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR }
	END {
		for (r = 1; r <= n; r++) {
			line = ""
			for (i = 1; i <= 5; i++)
				line = line sprintf("%-" w[i] "s", c[r, i]) (i < 5 ? "  " : "")
			print line
			if (r == 1) {
				line = ""
				for (i = 1; i <= 5; i++) { s = ""; for (k = 0; k < w[i]; k++) s = s "-"; line = line s (i < 5 ? "  " : "") }
				print line
			}
		}
	}'
