# Shared helpers for the regress tests: each test starts the real
# agent-laned on a private socket and state directory, with the limactl
# simulator, and drives it with the real agent-lanectl. Output is TAP-like:
# one "ok N - what" or "not ok N - what" line per check.
#
# Sourced by tests/regress/*.sh. Environment:
#   AGENT_LANED, AGENT_LANECTL   binaries under test (default: build/)
#   LIMA_SIM                     the limactl to drive (default: the simulator,
#                                tests/lima-sim/limactl; `make check-lima`
#                                sets Lima's own, with AL_REAL_LIMA=1 and
#                                AGENT_LANE_LIMA_TEMPLATE: tests/lima/tier.sh)
#   AL_BOOT_S                    seconds a lane's VM may take to boot (default
#                                0: the simulator boots in milliseconds). Lane
#                                lifetimes and waits that span a boot add it.

set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LANED=${AGENT_LANED:-$REPO/build/agent-laned}
LANECTL=${AGENT_LANECTL:-$REPO/build/agent-lanectl}
SIM=${LIMA_SIM:-$REPO/tests/lima-sim/limactl}
export LIMA_SIM_BOOT_MS=${LIMA_SIM_BOOT_MS:-20}
BOOT_S=${AL_BOOT_S:-0}
# Real VMs: the suites that are not specific to the simulator run against
# Lima's own limactl too (make check-lima: tests/lima/tier.sh sets
# AL_REAL_LIMA=1 and LIMA_SIM to it), with longer waits (tw, and bw for
# waits that span boots) and lifetimes (life) where a boot is involved.
# REAL_LIMA=1 there.
REAL_LIMA=${AL_REAL_LIMA:-0}
VM=$REAL_LIMA

# bw N K: a wait of N seconds plus K boots. BOOT_S is 0 on the simulator,
# whose boots are LIMA_SIM_BOOT_MS (unless calibrate_boot measured more);
# a real guest's boot may take AL_BOOT_S. For waits that span boots.
bw() { echo $(( $1 + $2 * BOOT_S )); }

# life N: a lane lifetime of N seconds once its VM is up (lifetimes count
# from the create request, boot included).
life() {
	echo "$(bw "$1" 1)s"
}

# calibrate_boot: times one create and rm on the running daemon, so that
# lifetimes of a few seconds span this machine's boot and no more. Suites
# whose lanes must outlive their boot by a short, exact margin, and then
# wait for their deadline, call it after start_daemon.
#   - The simulator: adds twice the create to BOOT_S (a create that takes
#     50 ms idle took over 3 s while three test runs shared two cores).
#   - Real guests: BOOT_S becomes twice the boot measured plus 60 s,
#     capped by AL_BOOT_S. Each lane of such a suite waits out its whole
#     lifetime, so the tier's worst case (AL_BOOT_S, five minutes) would
#     cost every one of them minutes of idling after a boot of one. Twice:
#     quiet boots here spread over 73-97 s, but one in a run took more than
#     173 s after a calibrated 75 s, and half as long again plus 30 s was
#     not enough for it.
calibrate_boot() {
	local t0 l ms
	t0=$(date +%s%3N)
	l=$(ctl create -q) || return 1
	ms=$(( $(date +%s%3N) - t0 ))
	ctl rm "$l" >/dev/null
	if [ "$VM" = 1 ]; then
		BOOT_S=$(( (2 * ms + 999) / 1000 + 60 ))
		[ "$BOOT_S" -gt "${AL_BOOT_S:-300}" ] && BOOT_S=${AL_BOOT_S:-300}
	else
		BOOT_S=$(( BOOT_S + (2 * ms + 999) / 1000 ))
	fi
	echo "# a create took $ms ms here: lifetimes and waits add ${BOOT_S} s"
}

# tw N: a wait of N seconds for something that involves limactl start,
# stop or delete; longer against real VMs.
tw() {
	if [ "$VM" = 1 ]; then echo $(( $1 * 6 )); else echo "$1"; fi
}

# sleep_until_ms T: sleeps until the wall clock (ms) passes T.
sleep_until_ms() {
	local now
	now=$(date +%s%3N)
	[ "$1" -gt "$now" ] && sleep "$(( ($1 - now) / 1000 + 1 ))"
	return 0
}

# Short paths: Lima's instance sockets must fit in sun_path.
T=$(mktemp -d /tmp/alr.XXXXXX)
SOCK=$T/run/laned.sock
STATE=$T/st
LOG=$T/laned.log
DAEMON_PID=

_n=0
_failed=0

ok() {
	_n=$((_n + 1))
	echo "ok $_n - $*"
}

not_ok() {
	_n=$((_n + 1))
	_failed=$((_failed + 1))
	echo "not ok $_n - $*"
}

# check "what" command...: ok when the command succeeds.
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}

check_eq() {
	local what=$1 want=$2 got=$3
	if [ "$want" = "$got" ]; then
		ok "$what"
	else
		not_ok "$what (want '$want', got '$got')"
	fi
}

check_match() {
	local what=$1 pattern=$2 text=$3
	if printf '%s' "$text" | grep -Eq -- "$pattern"; then
		ok "$what"
	else
		not_ok "$what (no /$pattern/ in: $(printf '%s' "$text" | head -c 300))"
	fi
}

check_nomatch() {
	local what=$1 pattern=$2 text=$3
	if printf '%s' "$text" | grep -Eq -- "$pattern"; then
		not_ok "$what (found /$pattern/)"
	else
		ok "$what"
	fi
}

ctl() {
	"$LANECTL" --socket "$SOCK" "$@"
}

# guest_ptys LANE: whether the lane's guest has pseudo-terminals. The only
# guest without them is the simulator's when it runs unprivileged, as a
# user other than root (tests/lima-sim/README.md, "Unprivileged mode"):
# then it returns 1 and PTY_SKIP holds that reason for the SKIP. As root,
# or on real VMs, a guest without them is a failure: it says why and
# returns 2.
guest_ptys() {
	local out
	PTY_SKIP=
	if out=$(ctl exec "$1" -- perl -e 'sysopen(my $m, "/dev/ptmx", 2) or die "/dev/ptmx: $!\n"' 2>&1); then
		return 0
	fi
	if [ "$VM" = 0 ] && [ "$(id -u)" -ne 0 ]; then
		PTY_SKIP="not root (uid $(id -u)): the simulator's unprivileged guest has no pseudo-terminals"
		return 1
	fi
	not_ok "the guest has pseudo-terminals ($([ "$VM" = 1 ] && echo "a real VM" || echo "the simulator runs as root")): $out"
	return 2
}

# Starts the daemon with extra arguments; waits until it answers.
start_daemon() {
	reset_faults
	"$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl "$SIM" \
	    --tick 1s "$@" >>"$LOG" 2>&1 &
	DAEMON_PID=$!
	for _ in $(seq 1 100); do
		if ctl version >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			echo "# agent-laned exited during start; log:" >&2
			sed 's/^/#   /' "$LOG" >&2
			DAEMON_PID=
			return 1
		fi
		sleep 0.05
	done
	echo "# agent-laned did not answer" >&2
	return 1
}

# Starts the daemon as launchd or systemd socket activation does: its
# socket listens (inherited as fd 3, with LISTEN_FDS) before the daemon
# runs, so a client may connect first. The arguments are the daemon's,
# after --socket. Does not wait for it to answer.
start_activated_daemon() {
	reset_faults
	mkdir -p "$T/run"
	chmod 700 "$T/run"
	python3 - "$SOCK" "$LANED" "$LOG" "$@" <<'PY' &
import os, socket, sys
path, laned, log = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX)
s.bind(path); os.chmod(path, 0o600); s.listen(16)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
os.dup2(out, 1); os.dup2(out, 2)
env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
os.execve(laned, [laned, "--socket", path] + sys.argv[4:], env)
PY
	DAEMON_PID=$!
}

stop_daemon() {
	if [ -n "$DAEMON_PID" ]; then
		kill -TERM "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
		DAEMON_PID=
	fi
}

kill9_daemon() {
	if [ -n "$DAEMON_PID" ]; then
		kill -KILL "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
		DAEMON_PID=
	fi
}

# agent-laned makes itself not dumpable (PR_SET_DUMPABLE 0: no core, see
# SECURITY.md "Core dumps and swap"), so its /proc/PID/fd, fdinfo, io,
# environ and mem belong to root, and reading them takes CAP_SYS_PTRACE.
# daemon_proc_readable: whether this shell can (as root, as CI runs).
# DAEMON_PROC_SKIP: the reason a check that needs them is skipped when not.
daemon_proc_readable() { ls "/proc/$DAEMON_PID/fd" >/dev/null 2>&1; }
DAEMON_PROC_SKIP="agent-laned is not dumpable (against core dumps): its /proc/PID/fd and mem are root's; run as root, as CI does"

# Waits up to $1 seconds for a command to succeed.
wait_for() {
	local secs=$1
	shift
	local end=$(( $(date +%s%N) + secs * 1000000000 ))
	while [ "$(date +%s%N)" -lt "$end" ]; do
		if "$@"; then
			return 0
		fi
		sleep 0.05
	done
	"$@"
}

# The registry schema this build writes: the highest its log reports, at
# a registry's creation ("created PATH at schema N") or a migration ("...
# to schema N"). Never a number written in a test: migrations are appended
# as the schema grows.
build_schema() {
	grep -Eo '(at|to) schema [0-9]+' "$LOG" | awk '{ print $3 }' |
	    sort -n | tail -n 1
}

lane_state() {
	ctl show --json "$1" 2>/dev/null | python3 -c \
	    'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null
}

instance_dir() {
	echo "$STATE/lima/$1"
}

# Fault counters live in the Lima home and count across processes:
# start every fault scenario from zero.
reset_faults() {
	rm -rf "$STATE/lima/_sim"
}

# Runs the simulator directly on the daemon's Lima home.
sim() {
	LIMA_HOME=$STATE/lima "$SIM" --tty=false "$@"
}

# limactl commands left running by a daemon killed with SIGKILL (they are
# in their own process groups): found by their LIMA_HOME. Hostagents are
# the VMs themselves and stay.
kill_stray_limactl() {
	local p
	for p in $(pgrep -f 'limactl --tty=false' 2>/dev/null); do
		if { tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null |
		    grep -qx "LIMA_HOME=$STATE/lima"; then
			kill -KILL "$p" 2>/dev/null
		fi
	done
}

# After a failure: the tails of the logs the daemon kept of failed starts
# (a real boot's console says where it was slow), before $STATE goes.
show_kept_logs() {
	local d f
	for d in "$STATE"/log/lanes/*; do
		[ -d "$d" ] || continue
		for f in serial.log ha.stderr.log limactl.log; do
			[ -s "$d/$f" ] || continue
			echo "# kept $(basename "$d")/$f:"
			tail -n 25 "$d/$f" | cut -c1-300 | sed 's/^/#   /'
		done
	done
}

finish() {
	stop_daemon
	kill_stray_limactl
	# Under the ASan+UBSan build a report in the daemon's log is a failure.
	if [ -f "$LOG" ] && grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$LOG"; then
		not_ok "the daemon ran clean under the sanitizers"
	fi
	# Whatever a failed test left: VMs (their sandboxes), then files.
	if [ -d "$STATE/lima" ]; then
		for d in "$STATE"/lima/al-* "$STATE"/lima/ali-*; do
			[ -d "$d" ] && sim delete --force "$(basename "$d")" \
			    >/dev/null 2>&1
		done
	fi
	if [ "$_failed" -gt 0 ] && [ -f "$LOG" ]; then
		echo "# agent-laned log:"
		sed 's/^/#   /' "$LOG" | tail -n 60
		show_kept_logs
	fi
	# A test's own teardown (e.g. unmounting what it mounted under $T).
	if [ -n "${FINISH_HOOK:-}" ]; then
		$FINISH_HOOK
	fi
	rm -rf "$T"
	if [ "$_failed" -gt 0 ]; then
		exit 1
	fi
	exit 0
}
trap finish EXIT
