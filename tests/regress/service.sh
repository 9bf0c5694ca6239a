#!/usr/bin/env bash
# launchd and systemd integration that can be checked on Linux: the plist
# and units `daemon install` writes, idempotence, and socket activation
# through LISTEN_FDS.
. "$(dirname "$0")/lib.sh"

H=$T/home
mkdir -p "$H"
hctl() { HOME=$H AGENT_LANE_SOCKET=$H/.agent-lane/run/agent-laned.sock "$LANECTL" "$@"; }

OUT=$(hctl daemon install --no-load --platform launchd); RC=$?
check_eq "daemon install (launchd) succeeds" 0 "$RC"
P=$H/Library/LaunchAgents/dev.agent-lane.agent-laned.plist
check "it writes the LaunchAgent plist" test -f "$P"
check "the plist parses and has the required keys" python3 - "$P" "$H" "$(dirname "$LANECTL")" <<'PY'
import plistlib, sys
path, home, bindir = sys.argv[1:4]
with open(path, "rb") as f:
    p = plistlib.load(f)
assert p["Label"] == "dev.agent-lane.agent-laned", p["Label"]
args = p["ProgramArguments"]
assert args[0] == bindir + "/agent-laned", args
assert "--socket" in args and args[args.index("--socket") + 1] == home + "/.agent-lane/run/agent-laned.sock"
assert p["RunAtLoad"] is True and p["KeepAlive"] is True
path_env = p["EnvironmentVariables"]["PATH"].split(":")
assert "/opt/homebrew/bin" in path_env and "/usr/local/bin" in path_env, path_env
assert p["StandardErrorPath"].startswith(home + "/") and p["StandardOutPath"].startswith(home + "/")
assert p["ProcessType"] in ("Standard", "Adaptive", "Background", "Interactive")
l = p["Sockets"]["Listeners"]
assert l["SockPathName"] == home + "/.agent-lane/run/agent-laned.sock"
assert l["SockPathMode"] == 0o600
for v in [args[0], l["SockPathName"], p["StandardErrorPath"]]:
    assert "~" not in v and "$" not in v, v
PY
check "the socket directory was made private" test "$(stat -c %a "$H/.agent-lane/run")" = 700
OUT=$(hctl daemon install --no-load --platform launchd)
check_match "installing again is idempotent" '^unchanged ' "$OUT"
OUT=$(hctl daemon uninstall --no-load --platform launchd); RC=$?
check_eq "uninstall succeeds" 0 "$RC"
check "and removes the plist" test ! -e "$P"
check "uninstalling again is fine" sh -c "HOME='$H' '$LANECTL' daemon uninstall --no-load --platform launchd >/dev/null"

OUT=$(hctl daemon install --no-load --platform systemd); RC=$?
check_eq "daemon install (systemd) succeeds" 0 "$RC"
U=$H/.config/systemd/user
check "it writes the service and socket units" test -f "$U/agent-laned.service" -a -f "$U/agent-laned.socket"
check_match "the service runs the installed daemon" \
    "ExecStart=\"$(dirname "$LANECTL")/agent-laned\" --socket \"$H/.agent-lane/run/agent-laned.sock\"" \
    "$(cat "$U/agent-laned.service")"
check_match "the service keeps VMs alive across restarts" '^KillMode=process$' "$(cat "$U/agent-laned.service")"
check_match "the socket unit listens on the socket" \
    "^ListenStream=$H/.agent-lane/run/agent-laned.sock\$" "$(cat "$U/agent-laned.socket")"
check_match "with mode 0600" '^SocketMode=0600$' "$(cat "$U/agent-laned.socket")"
if command -v systemd-analyze >/dev/null 2>&1; then
	# --man=no: the man page is not installed where the test runs.
	OUT=$(systemd-analyze verify --man=no "$U/agent-laned.socket" "$U/agent-laned.service" 2>&1); RC=$?
	check_eq "systemd-analyze verify accepts the units ($OUT)" 0 "$RC"
else
	ok "# SKIP systemd-analyze is not installed"
fi
check_match "installing again is idempotent" 'unchanged .*agent-laned.service' \
    "$(hctl daemon install --no-load --platform systemd)"
check "uninstall removes the units" sh -c "HOME='$H' '$LANECTL' daemon uninstall --no-load --platform systemd >/dev/null && test ! -e '$U/agent-laned.service'"

OUT=$(HOME=$H AGENT_LANE_SOCKET=$T/none.sock "$LANECTL" daemon status --no-load); RC=$?
check_eq "status says 3 when nothing answers" 3 "$RC"
check_match "and says so" 'not answering' "$OUT"

# Socket activation: a listening socket inherited as fd 3 with LISTEN_FDS.
start_activated_daemon --state-dir "$STATE" --limactl "$SIM"
answers() { ctl version >/dev/null 2>&1; }
check "an activated daemon answers on the inherited socket" wait_for 5 answers
check_match "and says it was activated" 'listening on an activated socket' "$(cat "$LOG")"
L=$(ctl create --timeout 10m)
check_eq "it creates lanes" ready "$(lane_state "$L")"
check "the children it spawned do not see LISTEN_FDS" sh -c \
    "! grep -qa LISTEN_FDS /proc/\$(cat '$(instance_dir "$L")/ha.pid')/environ"
ctl rm "$L" >/dev/null
stop_daemon
check "the activated socket is left for its owner" test -S "$SOCK"
