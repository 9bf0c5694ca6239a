#!/usr/bin/env bash
# The real-Lima rows of `make bench` (bench/run.sh runs this; alone:
# bench/lima.sh): agent-laned driving Lima 2.2's own limactl on QEMU guests
# (TCG where KVM is unusable), each figure against a baseline measured in
# the same run. Boots take a minute or more under TCG, so each create is
# measured BENCH_LIMA_BOOTS times (default 1) and the table says so; exec
# and copy are medians of alternating pairs. Never pass/fail.
#
# Rows (FIGURE, BASELINE, MEASURED, RATIO, GOAL, tab-separated, on stdout;
# progress on stderr):
#   cold create -> ready       against `limactl create` + `limactl start`
#                              of the same lane YAML, by hand
#   create -> first output     from the warm pool against cold; then
#                              from the pool with a secret against without
#   exec -- true               against `limactl shell LANE -- true`
#   copy in / out of a tree    against a raw `tar | limactl shell -- tar`
#                              pipe (what copy-in is underneath) and back
#   a Sandcastle run           a trivial createSandbox + run on a lane from
#                              an image, against `agent-lanectl run --image`
#                              doing the same copy-in, command and copy-out,
#                              each on a lane from a warm pool of the image
#                              (Sandcastle allows a create 120 s)
#
#   BENCH_LIMA_EXEC_RUNS  exec pairs (default 11)
#   BENCH_LIMA_COPY_MIB   the copied tree (default 64)
#   BENCH_LIMA_BOOTS      creates per side (default 1)
#   BENCH_LIMA_SANDCASTLE 0: skip the Sandcastle row
#   commit of a lane           against `limactl stop` + `limactl clone` of
#                              the same lane by hand
#   create -> first output     from a warm pool of the committed image,
#                              against the cold create -> first output of
#                              the lane that was committed
#
#   BENCH_LIMA_ONLY       sandcastle: only the Sandcastle row; pool: only
#                         the pool rows (create -> first output and its
#                         breakdown, against limactl shell by hand);
#                         commit: only the commit rows
#   BENCH_LIMA_TRACE      1: the Sandcastle run's provider calls, each with
#                         its time (AGENT_LANE_PROVIDER_TRACE), and single
#                         calls timed on its lane after it, on stderr
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../tests/lima/tier.sh"
lima_skip_all() {
	printf '%s\t%s\t%s\t%s\t%s\n' "real Lima rows" "n/a" "n/a" "-" "not measured: $*"
	exit 0
}
lima_tier_enter "real-Lima benchmarks" "$0" "$@"
. "$HERE/../tests/regress/lib.sh" >/dev/null
trap 'finish >/dev/null 2>&1' EXIT
RUNS=${BENCH_LIMA_EXEC_RUNS:-11}
MIB=${BENCH_LIMA_COPY_MIB:-64}
BOOTS=${BENCH_LIMA_BOOTS:-1}
SHAPE="--cpus 2 --memory 2G --disk 10G"

say() { echo "bench-lima: $*" >&2; }
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@"; }
ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }
lc() { LIMA_HOME=$STATE/lima "$SIM" --tty=false "$@"; }
med() { python3 -c 'import statistics, sys; print("%.0f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }

# A pool lane that has booted (its workspace is made).
booted() {
	ctl ls --all --json | python3 -c '
import json, sys
sys.exit(0 if any(l["state"] == "pooled" and l["workspace"] for l in json.load(sys.stdin)) else 1)'
}
say "$("$SIM" --version), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
# BENCH_LIMA_ONLY=sandcastle or pool: those rows alone (boots take long).
if [ "${BENCH_LIMA_ONLY:-}" = "" ]; then
start_daemon || exit 1

# --- cold create: ours against limactl by hand ----------------------------
ours=() theirs=()
for i in $(seq 1 "$BOOTS"); do
	say "cold create $i/$BOOTS: agent-lanectl create"
	t=$(ms); L=$(ctl create -q --timeout 2h $SHAPE) || exit 1; one=$(( $(ms) - t ))
	# The YAML is taken before the lane goes: rm deletes its instance.
	cp "$(instance_dir "$L")/lima.yaml" "$T/by-hand.yaml" || exit 1
	# The last lane stays, for the exec and copy rows.
	[ "$i" -lt "$BOOTS" ] && ctl rm "$L" >/dev/null
	say "cold create $i/$BOOTS: limactl create + start of the same YAML"
	t=$(ms)
	# A failed by-hand boot is no sample: its few milliseconds would pull
	# the median down and flatter no one.
	if ! lc create --name=byhand "$T/by-hand.yaml" >/dev/null 2>&1 ||
	    ! lc start --timeout 20m byhand >/dev/null 2>&1; then
		say "limactl by hand failed"
		lc delete --force byhand >/dev/null 2>&1
		exit 1
	fi
	other=$(( $(ms) - t ))
	ours+=("$one") theirs+=("$other")
	# By name, not ${a[-1]}: macOS bash 3.2 (make bench on a Mac) has none.
	say "cold create $i/$BOOTS: $one ms agent-lanectl, $other ms limactl"
	lc delete --force byhand >/dev/null 2>&1
done
c=$(med "${ours[@]}") b=$(med "${theirs[@]}")
row "real Lima cold create -> ready ($BOOTS run(s) each)" "$((b / 1000)) s limactl create+start" \
    "$((c / 1000)) s" "$(awk -v a="$c" -v b="$b" 'BEGIN { printf "%+.0f%%", (a / b - 1) * 100 }')" "-"

# --- exec against limactl shell -------------------------------------------
say "exec: $RUNS pairs against limactl shell in $L"
set -- $(LIMA_HOME=$STATE/lima python3 "$HERE/execpairs.py" "$SIM" "$L" "$LANECTL" "$SOCK" "$RUNS")
row "real Lima exec -- true, median of $RUNS pairs" "$(printf %.0f "$1") ms limactl shell" \
    "$(printf %.0f "$2") ms" "$(awk -v a="$2" -v b="$1" 'BEGIN { printf "%.2fx", a / b }')" "within +10%"

# --- copy in and out against a raw tar pipe through limactl shell ---------
src=$T/src
mkdir -p "$src"
head -c $((MIB * 1048576)) /dev/urandom | split -b 1048576 -a 4 - "$src/f."
ctl exec "$L" -- mkdir -p /tmp/raw /tmp/ours >/dev/null
say "copy: $MIB MiB tree, raw tar pipe and agent-lanectl cp, in and out"
t=$(ms); tar -C "$src" -cf - . | lc shell --workdir=/ "$L" -- tar -C /tmp/raw -xf -; raw_in=$(( $(ms) - t ))
t=$(ms); ctl cp "$src" "$L:/tmp/ours/src" >/dev/null; in=$(( $(ms) - t ))
mkdir -p "$T/rawback"
t=$(ms); lc shell --workdir=/ "$L" -- tar -C /tmp/raw -cf - . | tar -C "$T/rawback" -xf -; raw_out=$(( $(ms) - t ))
t=$(ms); ctl cp "$L:/tmp/ours/src" "$T/back" >/dev/null; out=$(( $(ms) - t ))
diff -r "$src" "$T/back" >/dev/null || say "copy-out differs!"
awk -v m="$MIB" -v ri="$raw_in" -v i="$in" -v ro="$raw_out" -v o="$out" 'BEGIN {
	OFS = "\t"
	print "real Lima copy-in " m " MiB tree", sprintf("%.1f MiB/s raw tar | limactl shell", m / (ri / 1000)), sprintf("%.1f MiB/s", m / (i / 1000)), sprintf("%.2f", ri / i), ">= 0.8"
	print "real Lima copy-out " m " MiB tree", sprintf("%.1f MiB/s raw limactl shell | tar", m / (ro / 1000)), sprintf("%.1f MiB/s", m / (o / 1000)), sprintf("%.2f", ro / o), ">= 0.8"
}'
ctl rm "$L" >/dev/null
stop_daemon
fi

# --- the warm pool against cold ---------------------------------------------
# Create -> first output from the pool (the lane waits with its exec channel
# open), and where the time goes: the create call, then the exec to its
# first byte; a CLI call that does nothing (start-up, connect, one round
# trip); later execs on the lane; against `limactl shell LANE -- echo x` by
# hand on the same lane (what one command in a booted guest costs without
# a channel), in alternating pairs, and the cold create above where it ran.
pool_timings() {
	LIMA_HOME=$STATE/lima python3 - "$LANECTL" "$SOCK" "$SIM" "$SHAPE" "$RUNS" <<'PY'
import statistics, subprocess, sys, time
ctl, sock, limactl, shape, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), int(sys.argv[5])
c = [ctl, "--socket", sock]
def timed(argv):
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000
t0 = time.perf_counter()
name = subprocess.run(c + ["create", "-q", "--timeout", "1h"] + shape,
                      check=True, stdout=subprocess.PIPE).stdout.decode().strip()
t1 = time.perf_counter()
p = subprocess.Popen(c + ["exec", name, "--", "echo", "x"], stdout=subprocess.PIPE)
p.stdout.read(1)
t2 = time.perf_counter()
p.wait()
noop, ours, raw = [], [], []
for _ in range(runs):
    noop.append(timed(c + ["version"]))
    ours.append(timed(c + ["exec", name, "--", "echo", "x"]))
    raw.append(timed([limactl, "--tty=false", "shell", "--workdir=/", name, "--", "echo", "x"]))
# In the guest, what an exec's helper pays there: a fork of a perl, and a
# fork + exec of echo (each the mean of 10, in ms; "n/a" without HiRes).
guest = subprocess.run(c + ["exec", name, "--", "perl", "-e", r"""
eval { require Time::HiRes; 1 } or do { print "n/a n/a\n"; exit 0 };
my ($f, $e) = (0, 0);
for (1 .. 10) {
    my $t = Time::HiRes::time(); my $p = fork(); exit(0) if !$p;
    waitpid($p, 0); $f += Time::HiRes::time() - $t;
    $t = Time::HiRes::time(); $p = fork();
    if (!$p) { open(STDOUT, ">", "/dev/null"); exec("/bin/echo", "x"); exit(127); }
    waitpid($p, 0); $e += Time::HiRes::time() - $t;
}
printf("%.0f %.0f\n", $f * 100, $e * 100);
"""], check=True, stdout=subprocess.PIPE).stdout.decode().split()
m = statistics.median
print(name, "%.0f %.0f %.0f %.0f %.0f %.0f" % ((t2 - t0) * 1000, (t1 - t0) * 1000,
      (t2 - t1) * 1000, m(noop), m(ours), m(raw)), guest[0], guest[1])
PY
}
# secret_first_output: create with a secret (its lane's proxy and CA take
# it) -> the first byte of an exec's output; prints "LANE MS".
secret_first_output() {
	python3 - "$LANECTL" "$SOCK" "$SHAPE" <<'PY'
import os, subprocess, sys, time
ctl, sock, shape = sys.argv[1], sys.argv[2], sys.argv[3].split()
env = dict(os.environ, BENCH_SECRET="sk-bench-" + os.urandom(16).hex())
t0 = time.perf_counter()
name = subprocess.run([ctl, "--socket", sock, "create", "-q", "--timeout", "1h",
                       "--secret", "BENCH_SECRET@api.example.test"] + shape,
                      check=True, stdout=subprocess.PIPE, env=env).stdout.decode().strip()
p = subprocess.Popen([ctl, "--socket", sock, "exec", name, "--", "echo", "x"],
                     stdout=subprocess.PIPE)
p.stdout.read(1)
t = (time.perf_counter() - t0) * 1000
p.wait()
print("%s %.0f" % (name, t))
PY
}
pool_rows() {
	local P first create exec1 noop warm raw gfork gexec
	say "pool: one pooled lane, then its create -> first output"
	start_daemon -d --pool-size 1 --pool-max-boots 1 --default-cpus 2 \
	    --default-memory 2G --default-disk 10G || exit 1
	if ! wait_for $((AL_BOOT_S * 3)) booted; then
		row "real Lima create -> first output, pooled" "-" "n/a" "-" "the pool did not fill"
		return
	fi
	read -r P first create exec1 noop warm raw gfork gexec < <(pool_timings)
	# The daemon's side of the take and the first exec, for the profile.
	sed -n "/lane $P: taken from the warm pool/,\$p" "$LOG" | head -n 30 |
	    cut -c1-200 | sed 's/^/bench-lima: daemon: /' >&2
	ctl rm "$P" >/dev/null
	row "real Lima create -> first output, pooled" \
	    "$raw ms limactl shell LANE -- echo x" "$first ms" \
	    "$(awk -v a="$raw" -v b="$first" 'BEGIN { printf "%.2f", a / b }')" "<= 300 ms"
	row "  of which agent-lanectl create (the take)" "-" "$create ms" "-" "-"
	row "  of which exec -- echo x, to its first byte" "-" "$exec1 ms" "-" "-"
	row "  agent-lanectl version (start, connect, one call)" "-" "$noop ms" "-" "-"
	row "  in the guest: a fork of perl; a fork + exec of echo" "-" "$gfork ms; $gexec ms" "-" "-"
	row "  later exec -- echo x on that lane ($RUNS)" \
	    "$raw ms limactl shell LANE -- echo x" "$warm ms" \
	    "$(awk -v a="$raw" -v b="$warm" 'BEGIN { printf "%.2f", a / b }')" "-"
	if [ -n "${c:-}" ]; then
		row "real Lima create -> first output, pooled vs the cold create above" \
		    "$((c / 1000)) s cold (to ready)" "$first ms" \
		    "$(awk -v a="$c" -v b="$first" 'BEGIN { printf "%.0fx faster", a / b }')" "-"
	fi
	# The same from the refilled pool, the create carrying a secret.
	if wait_for $((AL_BOOT_S * 3)) booted; then
		read -r P secret < <(secret_first_output)
		ctl rm "$P" >/dev/null
		row "real Lima create -> first output, pooled with a secret" \
		    "$first ms pooled without" "$secret ms" \
		    "$(awk -v a="$secret" -v b="$first" 'BEGIN { printf "%.2fx", a / b }')" "<= 300 ms"
	else
		row "real Lima create -> first output, pooled with a secret" "-" "n/a" "-" "the pool did not refill"
	fi
}
if [ "${BENCH_LIMA_ONLY:-}" = "" ] || [ "${BENCH_LIMA_ONLY:-}" = pool ]; then
	pool_rows
	stop_daemon
fi

# --- a trivial Sandcastle run on a lane from an image -----------------------
# Sandcastle gives a provider's create() 120 s and no more, which a cold
# clone's boot under TCG can pass, so both sides take their lane from a warm
# pool of the image's shape, as a user on a slow host would set it up; the
# pool is full again before each side starts.
sandcastle_rows() {
	local repo=$T/repo t run_ms sc_ms shape="1 image=bench"
	start_daemon || return 1
	say "sandcastle: an image, then a pool of it"
	printf '#!/bin/sh\necho tool > /usr/local/bin/bench-tool; chmod 755 /usr/local/bin/bench-tool\n' > "$T/tool.sh"
	ctl image build bench --provision "$T/tool.sh" >/dev/null 2>&1 || { say "image build failed"; return 1; }
	stop_daemon
	start_daemon --pool-shape "$shape" --pool-max-boots 1 || return 1
	mkdir -p "$repo" && (cd "$repo" && git init -q -b main && git config user.name b &&
	    git config user.email b@b && echo hi > f && git add f && git commit -qm init)
	wait_for $((AL_BOOT_S * 3)) booted || { say "the image pool did not fill"; return 1; }
	t=$(ms)
	ctl run -q --image bench --cp "$repo:repo" --out repo/f:"$T/f.out" -- sh -c 'cd repo && echo done >> f' >/dev/null ||
	    { say "agent-lanectl run failed"; return 1; }
	run_ms=$(( $(ms) - t ))
	wait_for $((AL_BOOT_S * 3)) booted || { say "the image pool did not refill"; return 1; }
	t=$(ms)
	if ! (cd "$REPO/client/sandcastle" &&
	    AGENT_LANE_PROVIDER_TRACE=${BENCH_LIMA_TRACE:-0} node - "$SOCK" "$repo" "$T" <<'JS'
const [sock, repo, tmp] = process.argv.slice(2);
const { createSandbox, createIsolatedSandboxProvider } = await import("@ai-hero/sandcastle");
const { lima, createLaneHandle } = await import("./dist/index.js");
const agent = {
  name: "bench-agent", env: {}, captureSessions: false,
  buildPrintCommand: () => ({ command: "echo done >> f && git -c user.name=b -c user.email=b@b commit -qam bench" }),
  parseStreamLine: (line) => [{ type: "text", text: line }],
};
const fs = await import("node:fs");
const opts = { image: "bench", socketPath: sock, timeoutMinutes: 30 };
// BENCH_LIMA_TRACE=1: the provider's own create (lima()'s), kept to time
// single calls on the same lane after the run, outside the timed part.
let handle;
const provider = process.env.BENCH_LIMA_TRACE !== "1" ? lima(opts) : createIsolatedSandboxProvider({
  name: "agent-lane-lima", create: async (o) => (handle = await createLaneHandle(opts, o)) });
const t0 = performance.now();
let ran = 0;
const sandbox = await createSandbox({ branch: "bench/run", cwd: repo, sandbox: provider });
try {
  const r = await sandbox.run({ agent, prompt: "x", maxIterations: 1 });
  if (r.commits.length !== 1) throw new Error("the run brought back " + r.commits.length + " commits");
  // Since this process started (performance.now()'s origin), as the row
  // times it from outside; the single calls below are left out of it.
  ran = performance.now();
  if (handle) {
    process.stderr.write(`agent-lane trace: createSandbox + run took ${(ran - t0).toFixed(0)} ms; single calls:\n`);
    fs.writeFileSync(`${tmp}/small`, "x\n");
    for (let i = 0; i < 5; i++) await handle.exec("true");
    for (let i = 0; i < 5; i++) await handle.exec("git rev-parse HEAD");
    for (let i = 0; i < 3; i++) await handle.copyIn(`${tmp}/small`, `/tmp/bench-small-${i}`);
    for (let i = 0; i < 3; i++) await handle.copyFileOut(`/tmp/bench-small-${i}`, `${tmp}/small.out`);
  }
} finally {
  const tc = performance.now();
  await sandbox.close();
  if (ran) fs.writeFileSync(`${tmp}/sc.ms`, String(Math.round(ran + performance.now() - tc)));
}
JS
	) >/dev/null 2>"$T/sc.err"; then
		say "the Sandcastle run failed:"; tail -n 20 "$T/sc.err" >&2
		row "real Lima Sandcastle run on a pooled lane from an image" \
		    "$((run_ms / 1000)) s agent-lanectl run --image" "failed" "-" "-"
		return 1
	fi
	sc_ms=$(( $(ms) - t ))
	if [ "${BENCH_LIMA_TRACE:-}" = 1 ]; then
		grep '^agent-lane trace:' "$T/sc.err" >&2
		# The node process's own time to the end of its close, without
		# the single calls timed after the run.
		sc_ms=$(cat "$T/sc.ms")
	fi
	row "real Lima Sandcastle run on a pooled lane from an image (1 run)" \
	    "$((run_ms / 1000)).$(( run_ms % 1000 / 100 )) s agent-lanectl run --image" \
	    "$((sc_ms / 1000)).$(( sc_ms % 1000 / 100 )) s" \
	    "$(awk -v a="$sc_ms" -v b="$run_ms" 'BEGIN { printf "%.2fx", a / b }')" "-"
}
if [ "${BENCH_LIMA_SANDCASTLE:-1}" != 0 ] && [ "${BENCH_LIMA_ONLY:-}" != pool ] &&
    [ "${BENCH_LIMA_ONLY:-}" != commit ] &&
    [ -f "$REPO/client/sandcastle/dist/index.js" ]; then
	sandcastle_rows
	stop_daemon
fi

# --- commit: ours against limactl stop + clone by hand ----------------------
# The same lane both ways: agent-lanectl commit (stop, clone, restart the
# lane, boot the copy once to scrub it, stop it), then `limactl stop` +
# `limactl clone` of it by hand (what commit cannot do with less). Then a
# warm pool of the committed image: create -> first output from it, against
# the cold create -> first output of the lane that was committed.
first_output() {	# create [ARGS] then exec echo x: ms to its first byte
	python3 - "$LANECTL" "$SOCK" "$@" <<'PY'
import subprocess, sys, time
ctl, sock, args = sys.argv[1], sys.argv[2], sys.argv[3:]
c = [ctl, "--socket", sock]
t0 = time.perf_counter()
name = subprocess.run(c + ["create", "-q", "--timeout", "2h"] + args, check=True,
                      stdout=subprocess.PIPE).stdout.decode().strip()
p = subprocess.Popen(c + ["exec", name, "--", "echo", "x"], stdout=subprocess.PIPE)
p.stdout.read(1)
print(name, "%.0f" % ((time.perf_counter() - t0) * 1000))
p.wait()
PY
}
commit_rows() {
	local L cold t ours byhand P first
	start_daemon --default-cpus 2 --default-memory 2G --default-disk 10G || return 1
	say "commit: a cold lane, then agent-lanectl commit of it"
	read -r L cold < <(first_output --name benchc) || return 1
	ctl exec benchc -- sh -c 'head -c 8388608 /dev/urandom > prepared.bin' >/dev/null
	t=$(ms)
	ctl commit benchc benchc-img >/dev/null 2>"$T/commit.err" || { say "commit failed"; cat "$T/commit.err" >&2; return 1; }
	ours=$(( $(ms) - t ))
	say "commit: limactl stop + clone of the same lane by hand"
	t=$(ms)
	if ! lc stop "$L" >/dev/null 2>&1 || ! lc clone "$L" byhand-commit >/dev/null 2>&1; then
		say "limactl stop + clone by hand failed"; return 1
	fi
	byhand=$(( $(ms) - t ))
	lc delete --force byhand-commit >/dev/null 2>&1
	ctl rm "$L" >/dev/null 2>&1
	row "real Lima commit of a lane (stop, clone, restart, scrub boot)" \
	    "$((byhand / 1000)).$(( byhand % 1000 / 100 )) s limactl stop + clone by hand" \
	    "$((ours / 1000)).$(( ours % 1000 / 100 )) s" \
	    "$(awk -v a="$ours" -v b="$byhand" 'BEGIN { printf "%.2fx", a / b }')" "-"
	stop_daemon
	say "commit: a warm pool of the committed image"
	start_daemon --default-cpus 2 --default-memory 2G --default-disk 10G \
	    --pool-shape "1 image=benchc-img" --pool-max-boots 1 || return 1
	wait_for $((AL_BOOT_S * 3)) booted || { say "the pool of the committed image did not fill"; return 1; }
	read -r P first < <(first_output --image benchc-img) || return 1
	ctl rm "$P" >/dev/null 2>&1
	row "real Lima create -> first output, pool of a committed image" \
	    "$((cold / 1000)).$(( cold % 1000 / 100 )) s cold create -> first output" "$first ms" \
	    "$(awk -v a="$cold" -v b="$first" 'BEGIN { printf "%.0fx faster", a / b }')" "-"
}
if [ "${BENCH_LIMA_ONLY:-}" = "" ] || [ "${BENCH_LIMA_ONLY:-}" = commit ]; then
	commit_rows
	stop_daemon
fi
