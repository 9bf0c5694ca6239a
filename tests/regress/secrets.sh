#!/usr/bin/env bash
# Exec environment values are wiped from the daemon's memory once sent to
# the guest: its own copies, the unpacked request, the frame it came in, and
# the buffer that carried them to limactl. Scans the daemon's writable
# memory through /proc (Linux; the test shell is the daemon's parent).
. "$(dirname "$0")/lib.sh"

if [ ! -r /proc/self/mem ]; then
	echo "ok 1 # SKIP no /proc/PID/mem here"
	exit 0
fi

# Occurrences of $2 in the writable mappings of process $1.
scan() { python3 "$(dirname "$0")/memscan.py" "$1" "$2"; }
secret() { echo "zq$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }

start_daemon || exit 1
L=$(ctl create)

# The scan works: the lane's name lives in the daemon's memory.
check "the scan finds what the daemon holds (the lane name)" \
    test "$(scan "$DAEMON_PID" "$L")" -ge 1

# Accepted execs: the value reaches the command, then leaves the daemon.
S=$(secret)
for i in 1 2 3; do
	ctl exec --env "TOKEN=$S" -n "$L" -- sh -c 'test "$TOKEN" = "$1"' sh "$S"
	check_eq "exec $i sees the value" 0 $?
done
ctl exec --env "TOKEN=$S" -n "$L" -- sh -c 'exit 3'
check_eq "a failing command too" 3 $?
# A refused exec (relative workdir): the request carried the value all the same.
OUT=$(ctl exec --env "TOKEN=$S" --workdir rel -n "$L" -- true 2>&1)
OUT=$(ctl exec --env "TOKEN=$S" --env "BAD NAME=x" -n "$L" -- true 2>&1)
# Looked at once the daemon has closed their connections: only its
# listening socket is left at its address. Not asked by a call, which
# could write over a copy left in its memory.
conns_closed() { [ "$(awk -v p="$SOCK" '$8 == p' /proc/net/unix | wc -l)" = 1 ]; }
wait_for 20 conns_closed
check_eq "no copy of the value is left in the daemon" 0 "$(scan "$DAEMON_PID" "$S")"

ctl rm "$L" >/dev/null
stop_daemon
