#!/usr/bin/env bash
# Lima's hostagent and VM outlive `limactl start` and inherit every
# descriptor not marked close-on-exec (the simulator keeps that behaviour):
# none of the daemon's may reach them.
. "$(dirname "$0")/lib.sh"

# A descriptor leaked to the daemon by whatever started it (a shell, a
# supervisor) must not pass through it either.
exec 7>"$T/canary"
start_daemon || exit 1
exec 7>&-
if ! daemon_proc_readable; then
	echo "ok 1 # SKIP $DAEMON_PROC_SKIP"
	exit 0
fi
# A client connection is open while the VM starts.
ctl exec al-0000000000000000 -- true >/dev/null 2>&1
L=$(ctl create --timeout 10m)
D=$(instance_dir "$L")
HA=$(cat "$D/ha.pid")
check "the hostagent is running" kill -0 "$HA"

daemon_fds() {
	for f in /proc/"$DAEMON_PID"/fd/*; do readlink "$f"; done | sort -u
}
leaks() {
	local pid=$1
	for f in /proc/"$pid"/fd/*; do
		t=$(readlink "$f") || continue
		case "$t" in
		*registry.db*|*agent-laned.lock|*laned.sock*|*/canary)
			echo "$pid $f -> $t" ;;
		socket:*|pipe:*|anon_inode:*)
			# Shared with the daemon: inherited from it.
			if daemon_fds | grep -qxF "$t"; then echo "$pid $f -> $t"; fi ;;
		esac
	done
}
OUT=$(leaks "$HA")
check_eq "the hostagent holds none of the daemon's descriptors" "" "$OUT"
for p in $(cat "$D"/*.pid 2>/dev/null); do
	OUT=$(leaks "$p")
	check_eq "process $p of the VM holds none of them" "" "$OUT"
done
check "the daemon's own descriptors are close-on-exec" python3 - "$DAEMON_PID" <<'PY'
import os, sys
pid = sys.argv[1]
bad = []
for fd in os.listdir(f"/proc/{pid}/fd"):
    if int(fd) <= 2:
        continue
    with open(f"/proc/{pid}/fdinfo/{fd}") as f:
        flags = int([l for l in f if l.startswith("flags:")][0].split()[1], 8)
    if not flags & 0o2000000:  # O_CLOEXEC
        bad.append(fd)
if bad:
    print("# not close-on-exec:", bad)
sys.exit(1 if bad else 0)
PY
ctl rm "$L" >/dev/null
