#!/usr/bin/env bash
# SIGKILL the daemon at each phase of a lane's life, restart it, and check
# the reconcile: no instance without a live row, no expired lane running,
# no live lane lost, and a sound registry.
. "$(dirname "$0")/lib.sh"

integrity() { [ "$(sqlite3 "$STATE/registry.db" 'PRAGMA integrity_check')" = ok ]; }
no_vm() { [ ! -e "$(instance_dir "$1")" ]; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
newest() {
	sqlite3 "$STATE/registry.db" 'SELECT name FROM lanes ORDER BY created_at_ms DESC, rowid DESC LIMIT 1'
}

# A live lane that must survive every crash below. Its lifetime outlasts
# the whole suite, whatever its boots take (five of them on real Lima).
start_daemon || exit 1
KEEP=$(ctl create --timeout 2h)
stop_daemon

# 1. After the row is committed, before limactl create does anything.
LIMA_SIM_HANG=create start_daemon || exit 1
ctl create --timeout 10m >/dev/null 2>&1 &
new_row() { [ "$(newest)" != "$KEEP" ]; }
wait_for 10 new_row
L=$(newest)
check_eq "the row is committed as creating before limactl runs" creating \
    "$(sqlite3 "$STATE/registry.db" "SELECT state FROM lanes WHERE name='$L'")"
kill9_daemon; kill_stray_limactl
start_daemon || exit 1
check "after restart the interrupted lane ends failed" wait_for "$(tw 5)" state_is "$L" failed
check "with no instance directory" no_vm "$L"
check_eq "the live lane was not lost" ready "$(lane_state "$KEEP")"
check "registry integrity" integrity
stop_daemon

# 2. During limactl start (the VM is up, start never reports).
LIMA_SIM_HANG=start start_daemon || exit 1
ctl create --timeout 10m >/dev/null 2>&1 &
L=""
wait_for "$(tw 5)" sh -c "[ -e '$STATE/lima/'\$(sqlite3 '$STATE/registry.db' 'SELECT name FROM lanes ORDER BY created_at_ms DESC LIMIT 1')/ha.pid ]"
L=$(newest)
check "the VM of the lane being started is running" test -e "$(instance_dir "$L")/ha.pid"
kill9_daemon; kill_stray_limactl
start_daemon || exit 1
check "after restart the half-started VM is deleted" wait_for "$(tw 5)" no_vm "$L"
check "and the lane ended failed" wait_for "$(tw 5)" state_is "$L" failed
check_match "keeping the logs of the start the crash cut short" \
    '^==> ha.stderr.log <==' "$(ctl logs "$L" 2>&1)"
check_eq "the live lane was not lost" ready "$(lane_state "$KEEP")"
check "registry integrity" integrity
stop_daemon

# 3. During limactl delete.
start_daemon || exit 1
L=$(ctl create --timeout 10m)
stop_daemon
LIMA_SIM_HANG=delete start_daemon || exit 1
ctl rm "$L" >/dev/null 2>&1 &
check "the lane is destroying" wait_for "$(tw 5)" state_is "$L" destroying
kill9_daemon; kill_stray_limactl
start_daemon || exit 1
check "after restart the delete is finished" wait_for "$(tw 5)" state_is "$L" destroyed
check "with no instance directory" no_vm "$L"
check_eq "the live lane was not lost" ready "$(lane_state "$KEEP")"
check "registry integrity" integrity
stop_daemon

# 4. A lane that expired while the daemon was down. Its deadline is moved
# into the past in the registry while the daemon is dead (what a long
# enough outage does), so that no boot time can decide the outcome.
start_daemon || exit 1
L=$(ctl create --timeout 1h)
kill9_daemon
sqlite3 "$STATE/registry.db" \
    "UPDATE lanes SET deadline_ms = $(( $(date +%s%3N) - 1000 )) WHERE name = '$L'"
start_daemon || exit 1
check "an expired lane is destroyed by the first reconcile" wait_for "$(tw 5)" state_is "$L" destroyed
check "its VM is gone" no_vm "$L"
check_match "because its deadline passed while the daemon was down" \
    'while agent-laned was down' "$(ctl events "$L")"

# 5. A VM that died while the daemon was down.
L=$(ctl create --timeout 10m)
stop_daemon
sim stop --force "$L" >/dev/null 2>&1
start_daemon || exit 1
check "a lane whose VM stopped is destroyed at reconcile" wait_for "$(tw 5)" state_is "$L" destroyed
check_eq "the live lane was not lost" ready "$(lane_state "$KEEP")"
check "no instance directory without a live row" sh -c '
	for d in '"$STATE"'/lima/al-*; do
		[ -d "$d" ] || continue
		n=$(basename "$d")
		s=$(sqlite3 '"$STATE"'/registry.db "SELECT state FROM lanes WHERE name='"'"'$n'"'"'")
		case "$s" in creating|ready|destroying) ;; *) echo "# stray $n ($s)"; exit 1;; esac
	done'
check "registry integrity" integrity
ctl rm "$KEEP" >/dev/null
