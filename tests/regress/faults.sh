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

# Deletes that keep failing back off instead of spinning: every delete
# fails, and the attempts are 1 s, 2 s, then destroy_retry_max (2 s) apart.
# Counted when the fourth failure is recorded: a retry loop without a
# back-off, or one that does not double, has made more calls, or sooner.
export LIMA_SIM_LOG=$T/sim.log
LIMA_SIM_FAIL='delete:*' start_daemon --destroy-retry-max 2s || exit 1
L=$(ctl create)
failures() { ctl events "$L" | grep -c destroy-failed; }
four_failures() { [ "$(failures)" -ge 4 ]; }
T0=$(date +%s%3N)
ctl rm "$L" >/dev/null 2>&1
check "a delete that keeps failing is retried" wait_for 30 four_failures
T1=$(date +%s%3N)
N=$(grep -c " delete --force $L\$" "$LIMA_SIM_LOG")
check "once per back-off: $N limactl delete calls by the fourth failure" \
    test "$N" -ge 4 -a "$N" -le 5
check "which took the back-offs, 1 + 2 + 2 s ($(( T1 - T0 )) ms)" \
    test $(( T1 - T0 )) -ge 4500
check_eq "the lane stays destroying meanwhile" destroying "$(lane_state "$L")"
stop_daemon
start_daemon || exit 1
check "and once limactl delete works it succeeds" wait_for 10 state_is "$L" destroyed
check "no VM is left" no_vms
stop_daemon
unset LIMA_SIM_LOG

# limactl start hangs: the start timeout ends it and cleans up.
LIMA_SIM_HANG=start start_daemon --start-timeout 2s || exit 1
START=$(date +%s)
OUT=$(ctl create 2>&1); RC=$?
check_eq "a hanging start fails the create" 1 "$RC"
check_match "with DEADLINE_EXCEEDED" 'DEADLINE_EXCEEDED' "$OUT"
check "within the start timeout ($(( $(date +%s) - START )) s)" test $(( $(date +%s) - START )) -le 10
check "and the VM it left running is deleted" no_vms
