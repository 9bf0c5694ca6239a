#!/usr/bin/env bash
# exec -t/-i and shell (issue 11): a real terminal in the guest, its size at
# start and after a resize, ^C and ^Z reaching the guest, the exit status
# kept, and our terminal put back however agent-lanectl ends. Driven in a
# pty that tests/regress/term.py opens (not tty.py: that would shadow the module pty imports).
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create)
# The simulator's guest has pseudo-terminals only when it runs as root
# (tests/lima-sim/README.md, "Unprivileged mode"); CI runs as root, and
# there a guest without them fails (guest_ptys).
guest_ptys "$L"
case $? in
1)	ok "# SKIP $PTY_SKIP"
	ctl rm "$L" >/dev/null
	finish ;;
2)	ctl rm "$L" >/dev/null
	finish ;;
esac
term() { python3 "$(dirname "$0")/term.py" "$LANECTL" "$SOCK" "$L" "$1"; }

check_eq "exec -t: the size at start, a pts, TERM passed on" \
    "0 33 101 True TERM=vt100" "$(term size)"
check_eq "exec -ti: raw while it runs, a resize reaches the guest, status kept, terminal restored" \
    "True True True 3 True" "$(term resize)"
check_eq "^C interrupts the guest command (128+SIGINT), terminal restored" \
    "True 130 True" "$(term ctrl-c)"
check_eq "shell: job control, ^Z stops the job, exit status kept" \
    "True True True 4 True" "$(term ctrl-z)"
check_eq "SIGTERM to agent-lanectl: the terminal is restored, we die of it" \
    "True True -15 True" "$(term sigterm)"
check_eq "an error (no such lane) also restores the terminal" \
    "125 True True" "$(term error)"
OUT=$(ctl exec -t "$L" -- sh -c 'read x; echo "read:$?"' </dev/null)
check_eq "-t without -i: the command reads nothing (no terminal here: 24x80)" "read:1" "$(printf %s "$OUT" | tr -d '\r')"
OUT=$(ctl exec -t "$L" -- stty size | tr -d '\r')
check_eq "no local terminal: 24x80" "24 80" "$OUT"
OUT=$(ctl exec -ti --no-stdin "$L" -- true 2>&1); RC=$?
check_eq "-i with --no-stdin is a usage error" 2 "$RC"
# A window size on an exec without a tty is refused by the daemon.
OUT=$(PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$L" <<'PY'
import socket, sys
from wire import HELLO, frame, split_frames, field, varint
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(sys.argv[1])
win = field(1, 0, varint(10)) + field(2, 0, varint(10))
ex = field(1, 2, sys.argv[2].encode()) + field(2, 2, b"true") + field(9, 2, win)
s.sendall(HELLO + frame(field(7, 2, ex)))
data = b""
while True:
    c = s.recv(65536)
    if not c:
        break
    data += c
print(b"".join(split_frames(data)[1:]).decode(errors="replace"))
PY
)
check_match "a window size without tty is refused" "a window size is for an exec with a tty" "$OUT"
ctl rm "$L" >/dev/null
finish
