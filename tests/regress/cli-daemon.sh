#!/usr/bin/env bash
# agent-lanectl daemon start|stop|restart|status and install without a
# systemd user manager (issue 11), with stand-ins for systemctl and
# launchctl on PATH that log their arguments.
. "$(dirname "$0")/lib.sh"

H=$T/home
B=$T/bin
mkdir -p "$H" "$B"
HSOCK=$H/.agent-lane/run/agent-laned.sock
hctl() { HOME=$H AGENT_LANE_SOCKET=$HSOCK PATH=$B:$PATH "$LANECTL" "$@"; }

# A systemctl with no user manager behind it, as in a container.
cat > "$B/systemctl" <<'SH'
#!/bin/sh
echo "systemctl $*" >> "$(dirname "$0")/calls"
echo "Failed to connect to bus: No medium found" >&2
exit 1
SH
chmod +x "$B/systemctl"

# Status before install: no `daemon start` advice, which would fail
# (issue 31); the daemon's own error does not send us to `daemon status`.
OUT=$(hctl daemon status --no-load 2>&1); RC=$?
check_eq "status before install, no daemon: exit 3" 3 "$RC"
check_nomatch "it does not advise daemon start" 'daemon start' "$OUT"
check_match "it advises daemon install" 'the service is not installed: agent-lanectl daemon install' "$OUT"
check_nomatch "it does not quote daemon status inside daemon status" 'daemon status' "$OUT"
check_match "the foreground command, default socket: no --state-dir needed" \
    "or in the foreground: .*/agent-laned --socket $HSOCK\$" "$OUT"
OUT=$(HOME=$H AGENT_LANE_SOCKET=$T/other/s.sock PATH=$B:$PATH "$LANECTL" daemon status --no-load 2>&1)
check_match "another socket: the foreground command names --state-dir too" \
    "agent-laned --socket $T/other/s.sock --state-dir $T/other/state\$" "$OUT"
OUT=$(hctl daemon start 2>&1); RC=$?
check_eq "start before install fails" 1 "$RC"
check_match "and says to install first" 'not installed: run `agent-lanectl daemon install`' "$OUT"
OUT=$(hctl daemon install 2>&1); RC=$?
check_eq "install without a user manager exits 1" 1 "$RC"
check_match "after writing the units" 'wrote .*agent-laned.service' "$OUT"
check_match "it explains why" 'no systemd user manager answers `systemctl --user`' "$OUT"
check_match "and gives the foreground command" "agent-laned --socket $HSOCK --state-dir $H/.agent-lane" "$OUT"
check_nomatch "it did not try to enable anything" 'enable' "$(cat "$B/calls")"
OUT=$(hctl daemon start 2>&1); RC=$?
check_eq "start without a user manager exits 1" 1 "$RC"
check_match "with the foreground command too" "agent-laned --socket $HSOCK" "$OUT"

# Nothing answers on the socket.
OUT=$(hctl daemon status --no-load 2>&1); RC=$?
check_eq "status without a daemon exits 3" 3 "$RC"
check_match "and says how to run it" "agent-laned --socket $HSOCK" "$OUT"
check_match "installed: start it with daemon start" 'start it: agent-lanectl daemon start' "$OUT"
OUT=$(hctl daemon status --no-load --json); RC=$?
check_eq "status --json without a daemon exits 3" 3 "$RC"
check_eq "with valid JSON that says so" "False None" "$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j["daemon"]["answering"], j["lanes"])' "$OUT")"
hctl daemon install --json >/dev/null 2>&1; check_eq "--json is for daemon status only" 2 "$?"
hctl daemon frob >/dev/null 2>&1; check_eq "an unknown verb exits 2" 2 "$?"

# A working user manager.
cat > "$B/systemctl" <<'SH'
#!/bin/sh
echo "systemctl $*" >> "$(dirname "$0")/calls"
exit 0
SH
for v in start stop restart; do
	: > "$B/calls"
	OUT=$(hctl daemon "$v" 2>&1); RC=$?
	check_eq "daemon $v exits 0" 0 "$RC"
	check_match "daemon $v runs systemctl --user $v on both units" \
	    "^systemctl --user $v agent-laned.socket agent-laned.service\$" "$(cat "$B/calls")"
done
hctl daemon start --no-load >/dev/null 2>&1; check_eq "start --no-load exits 2" 2 "$?"

# launchd: not loaded, then loaded.
hctl daemon install --no-load --platform launchd >/dev/null
cat > "$B/launchctl" <<'SH'
#!/bin/sh
echo "launchctl $*" >> "$(dirname "$0")/calls"
[ "$1" = print ] && exit "$(cat "$(dirname "$0")/loaded")"
exit 0
SH
chmod +x "$B/launchctl"
U=$(id -u)
P=$H/Library/LaunchAgents/dev.agent-lane.agent-laned.plist
echo 113 > "$B/loaded"; : > "$B/calls"
hctl daemon start --platform launchd >/dev/null
check_match "launchd start of an unloaded agent bootstraps it" "^launchctl bootstrap gui/$U $P\$" "$(cat "$B/calls")"
echo 0 > "$B/loaded"; : > "$B/calls"
hctl daemon restart --platform launchd >/dev/null
check_match "launchd restart kickstarts -k" "^launchctl kickstart -k gui/$U/dev.agent-lane.agent-laned\$" "$(cat "$B/calls")"
: > "$B/calls"
hctl daemon stop --platform launchd >/dev/null
check_match "launchd stop unloads (KeepAlive would restart a killed daemon)" "^launchctl bootout gui/$U/dev.agent-lane.agent-laned\$" "$(cat "$B/calls")"

# status with a daemon, through the service manager stand-ins.
SOCK=$HSOCK
start_daemon || exit 1
OUT=$(hctl daemon status --platform launchd); RC=$?
check_eq "status with a daemon exits 0" 0 "$RC"
check_match "it shows the service" 'service: +launchd agent gui/[0-9]+/dev.agent-lane.agent-laned \(installed\), loaded' "$OUT"
check_match "the socket" "socket: +$HSOCK" "$OUT"
check_match "and the lanes" 'lanes: +0 live of at most' "$OUT"
check_match "and the daemon's pid and uptime" "pid: +$DAEMON_PID, up " "$OUT"
# status --json: every key it prints is in the man page's list, and the
# man page no longer says the daemon lacks its pid (issue 18).
OUT=$(hctl daemon status --platform launchd --json | python3 -c '
import json, re, subprocess, sys
j = json.load(sys.stdin)
man = open(sys.argv[1]).read()
block = man.split(".It Cm status\n", 1)[1].split("\n.It Cm ", 1)[0]
listed = set(re.findall(r"\b([a-z_]+)\b", " ".join(l for l in block.splitlines() if l.startswith((".Li", ".Pq Li")))))
keys = set(j) | set(j["service"]) | set(j["daemon"]) | set(j["lanes"]) | set(j["pool"])
missing = sorted(keys - listed)
print("pid %s started %s; not in the man page: %s%s" % (j["daemon"]["pid"] > 0, j["daemon"]["started_at_ms"] > 0,
    missing or "none", "; it says the daemon lacks them" if "does not yet report" in block else ""))' \
    "$REPO/docs/agent-lanectl.1")
check_eq "status --json has the pid and start time, and the man page lists every key" \
    "pid True started True; not in the man page: none" "$OUT"
