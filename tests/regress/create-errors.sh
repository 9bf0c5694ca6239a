#!/usr/bin/env bash
# Creation failures are typed, leave a "failed" lane and no VM behind;
# caps and an unsafe Lima home are refused before any VM exists.
. "$(dirname "$0")/lib.sh"

no_vm_left() {
	! ls "$STATE/lima" | grep -q '^al-'
}

LIMA_SIM_FAIL=start start_daemon || exit 1
OUT=$(ctl create --timeout 10m 2>&1); RC=$?
check_eq "create with a failing limactl start exits 1" 1 "$RC"
check_match "the error is typed LIMA_FAILED and names start" \
    'LIMA_FAILED: limactl start failed' "$OUT"
L=$(ctl ls --all --json | python3 -c \
    'import json,sys; print(json.load(sys.stdin)[-1]["name"])')
check_eq "the lane ended failed" failed "$(lane_state "$L")"
check_match "the failed lane records why" 'error: +limactl start failed' "$(ctl show "$L")"
check "no VM is left behind" no_vm_left
check_match "audit trail shows create-failed" 'create-failed' "$(ctl events "$L")"
stop_daemon

LIMA_SIM_FAIL=create start_daemon || exit 1
OUT=$(ctl create 2>&1); RC=$?
check_eq "a failing limactl create exits 1" 1 "$RC"
check_match "and is LIMA_FAILED" 'LIMA_FAILED: limactl create failed' "$OUT"
check "no VM is left behind" no_vm_left
stop_daemon

if [ "$(id -u)" -eq 0 ]; then
	LIMA_SIM_REFUSE_ROOT=1 start_daemon || exit 1
	OUT=$(ctl create 2>&1); RC=$?
	check_eq "limactl refusing root fails the create" 1 "$RC"
	check_match "with limactl's own message" 'must not run as the root user' "$OUT"
	check_match "the daemon warned at start that it runs as root" \
	    'running as root' "$(cat "$LOG")"
	check "no VM is left behind" no_vm_left
	stop_daemon
fi

start_daemon --max-lanes 1 --max-cpus 4 --max-memory 8G --max-lifetime 2h || exit 1
# A lane the previous daemon could not delete (limactl refused root) is
# still destroying, and counts as live, until this daemon's reconcile.
no_live() { [ "$(ctl ls --json)" = "[]" ]; }
check "the reconcile finishes what the last daemon could not" wait_for 5 no_live
L=$(ctl create --timeout 10m)
OUT=$(ctl create 2>&1); RC=$?
check_eq "a lane over max_lanes exits 1" 1 "$RC"
check_match "max_lanes is RESOURCE_EXHAUSTED" 'RESOURCE_EXHAUSTED.*max_lanes' "$OUT"
ctl rm "$L" >/dev/null
OUT=$(ctl create --cpus 5 2>&1)
check_match "cpus above max_cpus is RESOURCE_EXHAUSTED" 'RESOURCE_EXHAUSTED.*max_cpus' "$OUT"
OUT=$(ctl create --memory 9G 2>&1)
check_match "memory above max_memory is RESOURCE_EXHAUSTED" 'RESOURCE_EXHAUSTED.*max_memory' "$OUT"
OUT=$(ctl create --timeout 3h 2>&1)
check_match "lifetime above max_lifetime is RESOURCE_EXHAUSTED" 'RESOURCE_EXHAUSTED.*max_lifetime' "$OUT"
check "refused creates left no VM" no_vm_left

mkdir -p "$STATE/lima/_config"
echo 'mounts: [{location: "~"}]' > "$STATE/lima/_config/override.yaml"
OUT=$(ctl create 2>&1); RC=$?
check_eq "an override.yaml in the Lima home blocks creation" 1 "$RC"
check_match "as FAILED_PRECONDITION naming the file" \
    'FAILED_PRECONDITION.*override.yaml' "$OUT"
rm "$STATE/lima/_config/override.yaml"
for f in default.yaml base.yaml; do
	: > "$STATE/lima/_config/$f"
	OUT=$(ctl create 2>&1)
	check_match "_config/$f blocks creation too" "FAILED_PRECONDITION.*$f" "$OUT"
	rm "$STATE/lima/_config/$f"
done
check "no VM was made meanwhile" no_vm_left
