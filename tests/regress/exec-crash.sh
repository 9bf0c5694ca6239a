#!/usr/bin/env bash
# An exec in flight when the daemon dies: it is in the registry before its
# command runs, and the next start records it in the lane's events as
# interrupted by a daemon restart. An exec that ends leaves no record.
. "$(dirname "$0")/lib.sh"

inflight() { sqlite3 "$STATE/registry.db" 'SELECT count(*) FROM execs'; }
running() { [ "$(inflight)" = 1 ]; }

start_daemon || exit 1
L=$(ctl create --timeout "$(life 600)")

ctl exec "$L" -- true
check_eq "an exec that ended leaves no record in flight" 0 "$(inflight)"
check_match "and its event says how it ended" 'exec +true exit=0' \
    "$(ctl events "$L")"

ctl exec "$L" -- sleep 300 >/dev/null 2>&1 &
EXEC_PID=$!
check "a running exec is recorded as in flight" wait_for "$(tw 5)" running
kill9_daemon; kill_stray_limactl
wait "$EXEC_PID" 2>/dev/null
check_nomatch "nothing said it ended while the daemon was dead" \
    'sleep' "$(sqlite3 "$STATE/registry.db" \
    "SELECT detail FROM events WHERE lane='$L' AND event='exec'")"
start_daemon || exit 1
check_match "after the restart its events say it was interrupted" \
    'exec +sleep interrupted by a daemon restart' "$(ctl events "$L")"
check_eq "and no record stays in flight" 0 "$(inflight)"
check_match "the daemon's log says so" \
    'registry: 1 exec interrupted by a daemon restart' "$(cat "$LOG")"
stop_daemon
start_daemon || exit 1
check_eq "a second restart does not say it again" 1 \
    "$(ctl events "$L" | grep -c 'interrupted by a daemon restart')"
ctl rm "$L" >/dev/null
