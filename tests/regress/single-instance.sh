#!/usr/bin/env bash
# One daemon per state directory and per socket; stale sockets replaced
# only when nothing listens; unsafe socket directories refused.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
OUT=$("$LANED" --socket "$T/run2/other.sock" --state-dir "$STATE" \
    --limactl "$SIM" 2>&1); RC=$?
check "a second daemon on the same state directory fails" test "$RC" -ne 0
check_match "and says another one holds the lock" 'another agent-laned.*pid' "$OUT"

OUT=$("$LANED" --socket "$SOCK" --state-dir "$T/st2" --limactl "$SIM" 2>&1); RC=$?
check "a second daemon on the same socket fails" test "$RC" -ne 0
check_match "and names the socket" 'another agent-laned' "$OUT"
check "the first daemon still answers" ctl version
stop_daemon

# A socket file nobody listens on: replaced.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCK"
check "a stale socket is present" test -S "$SOCK"
start_daemon || exit 1
check "the daemon replaced the stale socket" ctl version
check "socket is 0600" test "$(stat -c %a "$SOCK")" = 600
check "socket directory is 0700" test "$(stat -c %a "$T/run")" = 700
stop_daemon

# A regular file where the socket goes is never removed.
rm -f "$SOCK"; echo keep > "$SOCK"
OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl "$SIM" 2>&1); RC=$?
check "a non-socket at the socket path stops the daemon" test "$RC" -ne 0
check_eq "and the file is untouched" keep "$(cat "$SOCK")"
rm -f "$SOCK"

# Unsafe socket directory.
mkdir -p "$T/open"; chmod 0755 "$T/open"
OUT=$("$LANED" --socket "$T/open/s.sock" --state-dir "$STATE" --limactl "$SIM" 2>&1); RC=$?
check "a group/world-readable socket directory is refused" test "$RC" -ne 0
check_match "with a clear message" 'unsafe permissions' "$OUT"
ln -s "$T/run" "$T/link"
OUT=$("$LANED" --socket "$T/link/s.sock" --state-dir "$STATE" --limactl "$SIM" 2>&1); RC=$?
check "a symlinked socket directory is refused" test "$RC" -ne 0

LONG=$T/$(printf 'd%.0s' $(seq 1 120))
OUT=$("$LANED" --socket "$LONG/s.sock" --state-dir "$STATE" --limactl "$SIM" 2>&1); RC=$?
check "an over-long socket path is refused" test "$RC" -ne 0
check_match "with a clear message" 'at most [0-9]+' "$OUT"

OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl /nonexistent/limactl 2>&1); RC=$?
check "a missing limactl is a clear start-up error" test "$RC" -ne 0
check_match "naming limactl" 'limactl /nonexistent/limactl is not an executable file; install Lima' "$OUT"

OUT=$("$LANED" --help); RC=$?
check_eq "--help exits 0" 0 "$RC"
check_match "--help documents --limactl" '--limactl PATH' "$OUT"
check_match "--help lists config keys as flags" '--max-lanes' "$OUT"
