#!/usr/bin/env bash
# LIMA_SIM_FAIL at each step of create and destroy, LIMA_SIM_HANG on start
# with a start timeout: typed errors, and no VM left once retries succeed.
. "$(dirname "$0")/lib.sh"

no_vms() { ! ls "$STATE/lima" 2>/dev/null | grep -q '^al-'; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
newest() {
	ctl ls --all --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["name"])'
}

for step in create start shell; do
	LIMA_SIM_FAIL=$step start_daemon || exit 1
	OUT=$(ctl create 2>&1); RC=$?
	check_eq "create fails when limactl $step fails" 1 "$RC"
	check_match "with a typed error ($step)" '(LIMA_FAILED|UNAVAILABLE):' "$OUT"
	check "no VM is left ($step)" no_vms
	check_eq "the lane ended failed ($step)" failed "$(lane_state "$(newest)")"
	# The fault hit only the first call: the next create works.
	L=$(ctl create 2>/dev/null)
	check_eq "the next create succeeds ($step)" ready "$(lane_state "$L")"
	ctl rm "$L" >/dev/null
	stop_daemon
done

# limactl delete fails once: the lane stays destroying, visible, retried.
LIMA_SIM_FAIL=delete start_daemon || exit 1
L=$(ctl create)
OUT=$(ctl rm "$L" 2>&1); RC=$?
check_eq "rm reports the failed delete" 1 "$RC"
check_match "as LIMA_FAILED with a retry" 'LIMA_FAILED.*retrying' "$OUT"
check_eq "the lane stays visible as destroying" destroying "$(lane_state "$L")"
check_match "and says why" 'error: +limactl delete failed' "$(ctl show "$L")"
check "the retry deletes it" wait_for 6 state_is "$L" destroyed
check "no VM is left once the retry succeeded" no_vms
check_match "the audit trail has the failure" 'destroy-failed' "$(ctl events "$L")"
stop_daemon

# A requested destroy whose delete failed, then a daemon restart: the lane
# still ends "destroyed" (only failed creations end "failed").
LIMA_SIM_FAIL=delete start_daemon --destroy-retry-max 30s || exit 1
L=$(ctl create)
ctl rm "$L" >/dev/null 2>&1
check_eq "the failed delete leaves the lane destroying" destroying "$(lane_state "$L")"
stop_daemon
start_daemon || exit 1
check "after a restart it is destroyed" wait_for 5 state_is "$L" destroyed
check "no VM is left" no_vms
stop_daemon

# Deletes that keep failing back off instead of spinning.
LIMA_SIM_FAIL=delete:1,delete:2,delete:3 start_daemon || exit 1
L=$(ctl create)
ctl rm "$L" >/dev/null 2>&1
sleep 2
N=$(ctl events "$L" | grep -c destroy-failed)
check "retries back off (only $N failures in 2 s)" test "$N" -le 3
check "and finally succeed" wait_for 10 state_is "$L" destroyed
check "no VM is left" no_vms
stop_daemon

# limactl start hangs: the start timeout ends it and cleans up.
LIMA_SIM_HANG=start start_daemon --start-timeout 2s || exit 1
START=$(date +%s)
OUT=$(ctl create 2>&1); RC=$?
check_eq "a hanging start fails the create" 1 "$RC"
check_match "with DEADLINE_EXCEEDED" 'DEADLINE_EXCEEDED' "$OUT"
check "within the start timeout ($(( $(date +%s) - START )) s)" test $(( $(date +%s) - START )) -le 10
check "and the VM it left running is deleted" no_vms
