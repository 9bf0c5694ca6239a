#!/usr/bin/env bash
# The open-file limit (issue 18 4a): the daemon raises its soft NOFILE
# limit towards the hard one at start, and refuses a configuration whose
# lane proxies and client connections cannot all have their descriptors
# (max_lanes x 2 x proxy_max_connections + max_connections + a reserve).
. "$(dirname "$0")/lib.sh"

laned() {
	AGENT_LANE_CONFIG=/dev/null "$LANED" --socket "$SOCK" \
	    --state-dir "$STATE" --limactl "$SIM" "$@"
}

# Defaults: 4 x 2 x 64 + 256 + 64 = 832 descriptors.
OUT=$( (ulimit -n 300 && laned --check-config) 2>&1)
RC=$?
check_eq "defaults under a hard limit of 300 are refused (exit 2)" 2 "$RC"
check_match "the message names the keys and the figures" \
    'max_lanes 4 x 2 x proxy_max_connections 64 \+ max_connections 256 \+ 64 .* = 832 descriptors, but the open-file limit is 300' "$OUT"

OUT=$( (ulimit -n 300 && laned --check-config --max-lanes 1 \
    --proxy-max-connections 32 --max-connections 64) 2>&1)
check_eq "a configuration that fits 300 is accepted" 0 $?

# A soft limit of 100 under a hard one of 4096: the daemon raises it, so
# the defaults fit (launchd's soft limit is 256).
OUT=$( (ulimit -Sn 100 && ulimit -Hn 4096 && laned --check-config) 2>&1)
check_eq "a low soft limit is raised towards the hard one" 0 $?

# And the raise is real: a running daemon's own limit.
start_daemon_soft() {
	(ulimit -Sn 100 && ulimit -Hn 4096 && exec "$LANED" --socket "$SOCK" \
	    --state-dir "$STATE" --limactl "$SIM" >>"$LOG" 2>&1) &
	DAEMON_PID=$!
	wait_for 5 ctl version >/dev/null 2>&1
}
if [ -r /proc/self/limits ]; then
	start_daemon_soft
	SOFT=$(awk '/Max open files/ {print $4}' "/proc/$DAEMON_PID/limits")
	check_eq "the running daemon's soft NOFILE is its hard one" 4096 "$SOFT"
else
	ok "# SKIP no /proc/PID/limits to read a running daemon's limit"
fi
finish
