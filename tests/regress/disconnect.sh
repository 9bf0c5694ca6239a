#!/usr/bin/env bash
# A client that goes away is noticed at once, whatever the daemon was doing
# with its connection: even while it has stopped reading the client's
# stdin (backpressure), the guest process group is killed and every slot
# the call held (exec slot, connection, descriptors, its helper in the
# guest) is given back; the lane's exec channel (one limactl shell for all
# its execs) stays, and is the only limactl shell left. And when the daemon itself stops, calls in flight get a
# typed UNAVAILABLE, not a bare close.
. "$(dirname "$0")/lib.sh"

# One exec slot: a leaked one makes the next exec fail.
start_daemon --max-execs-per-lane 1 || exit 1
L=$(ctl create --timeout 10m)

# A duration no other test (or concurrent run) uses: how the guest command
# is found from the host.
NAP=$((200000 + RANDOM))
guest_sleep() { pgrep -fx "sleep $NAP" >/dev/null; }
shell_pids() {
	local p
	for p in $(pgrep -f 'limactl --tty=false shell' 2>/dev/null); do
		if { tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null |
		    grep -qx "LIMA_HOME=$STATE/lima"; then
			echo "$p"
		fi
	done
}
lima_shells() { shell_pids | wc -l; }
# The guest helpers of this lane's execs: the perl processes under its
# limactl shell, less the channel helper itself.
exec_helpers() {
	local p n=0
	for p in $(shell_pids); do
		n=$((n + $(pstree -p "$p" | grep -o 'perl([0-9]*)' | wc -l) - 1))
	done
	echo "$n"
}
daemon_nfds() { ls /proc/"$DAEMON_PID"/fd | wc -l; }
# check_fds "what": that the daemon's descriptors came back to FDS0, where
# this shell may count them (lib.sh: daemon_proc_readable).
check_fds() {
	if daemon_proc_readable; then
		check "$1 ($(daemon_nfds) vs $FDS0)" wait_for 2 fds_back
	else
		ok "$1 # SKIP $DAEMON_PROC_SKIP"
	fi
}
# The daemon has paused reading the client $CLI: through a look of 0.2 s
# the client, asleep (poll(2) is its one wait once the call runs), read
# nothing of the input waiting in its stdin pipe.
backed_up() {
	python3 - "$CLI" 2>/dev/null <<'PY'
import fcntl, os, struct, sys, termios, time
pid = sys.argv[1]
fd = os.open("/proc/%s/fd/0" % pid, os.O_RDONLY | os.O_NONBLOCK)
def look():
    n = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    with open("/proc/%s/stat" % pid) as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    with open("/proc/%s/io" % pid) as f:
        read = f.readline()
    return struct.unpack("i", n)[0] > 0 and state == "S", read
first = look()
time.sleep(0.2)
sys.exit(0 if first[0] and look() == first else 1)
PY
}

check_eq "a first exec takes the one slot and gives it back" ok \
    "$(ctl exec -n "$L" -- echo ok)"
FDS0=$(daemon_nfds 2>/dev/null)

# 100 MB of stdin to a command that never reads it: the guest's pipe and
# the daemon's buffer fill, the daemon pauses reading the client, and the
# client blocks writing. Then Ctrl-C.
head -c 100000000 /dev/zero | "$LANECTL" --socket "$SOCK" exec "$L" -- sleep "$NAP" \
    >/dev/null 2>&1 &
CLI=$!
check "the guest command runs" wait_for 5 guest_sleep
check "the daemon paused reading (stdin backed up to the client)" wait_for 20 backed_up
kill -INT "$CLI"
wait "$CLI" 2>/dev/null
no_guest() { ! guest_sleep; }
one_shell() { [ "$(lima_shells)" = 1 ]; }
no_helper() { [ "$(exec_helpers)" = 0 ]; }
fds_back() { [ "$(daemon_nfds)" -le "$FDS0" ]; }
logged() { grep -q 'client disconnected' "$LOG"; }
check "the guest command is killed at once" wait_for 2 no_guest
check "its helper in the guest is gone" wait_for 2 no_helper
check "only the lane's exec channel is left of limactl shells" one_shell
check_fds "the daemon's descriptors are released"
check "the disconnect is logged" wait_for 2 logged
OUT=$(ctl exec -n "$L" -- echo ok 2>&1)
check_eq "the exec slot is free again" ok "$OUT"
check_eq "the lane stays ready" ready "$(lane_state "$L")"

# The same with the client half-way through a frame: no difference.
head -c 100000000 /dev/zero | "$LANECTL" --socket "$SOCK" exec "$L" -- sleep "$NAP" \
    >/dev/null 2>&1 &
CLI=$!
check "a second stuck exec runs" wait_for 5 guest_sleep
check "the daemon paused reading it too" wait_for 20 backed_up
kill -KILL "$CLI"
wait "$CLI" 2>/dev/null
check "killed with SIGKILL, its guest command goes too" wait_for 2 no_guest
check_fds "and its descriptors"

# Where the event backend cannot report a close early (libevent's kqueue
# and select backends), the daemon polls a paused socket instead: the same
# again on select (epoll and poll both have EV_FEATURE_EARLY_CLOSE).
stop_daemon
EVENT_NOEPOLL=1 EVENT_NOPOLL=1 start_daemon --max-execs-per-lane 1 || exit 1
# A first exec opens the lane's exec channel, which keeps its descriptors.
ctl exec -n "$L" -- true
FDS0=$(daemon_nfds 2>/dev/null)
head -c 100000000 /dev/zero | "$LANECTL" --socket "$SOCK" exec "$L" -- sleep "$NAP" \
    >/dev/null 2>&1 &
CLI=$!
check "on select: the stuck exec runs" wait_for 5 guest_sleep
check "on select: the daemon paused reading" wait_for 20 backed_up
kill -INT "$CLI"
wait "$CLI" 2>/dev/null
check "on select: the guest command is killed at once" wait_for 2 no_guest
check_fds "on select: the descriptors are released"
check_eq "on select: the exec slot is free again" ok \
    "$(ctl exec -n "$L" -- echo ok 2>&1)"

# SIGTERM to the daemon: an exec in flight is told why it ended.
"$LANECTL" --socket "$SOCK" exec -n "$L" -- sleep "$NAP" >"$T/term.out" 2>"$T/term.err" &
CLI=$!
check "an exec runs when the daemon is stopped" wait_for 5 guest_sleep
stop_daemon
wait "$CLI"; RC=$?
check_eq "the interrupted exec exits 125" 125 "$RC"
check_match "with UNAVAILABLE" 'UNAVAILABLE' "$(cat "$T/term.err")"
check_match "saying the daemon is shutting down" 'shutting down' "$(cat "$T/term.err")"
check "and its guest command is killed" wait_for 3 no_guest
