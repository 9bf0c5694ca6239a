#!/usr/bin/env bash
# D1 on a real full disk: the state directory is a small tmpfs, filled up
# while a lane boots and again before rm. Needs mount(2) (root); elsewhere
# the locked-registry test (registry-faults.sh) covers the same paths.
. "$(dirname "$0")/lib.sh"

DB=$STATE/registry.db
row_state() { sqlite3 "$DB" "SELECT state FROM lanes WHERE name = '$1'"; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
running() { kill -0 "$1" 2>/dev/null; }
exited() { ! kill -0 "$1" 2>/dev/null; }
booting() { [ "$(sqlite3 "$DB" "SELECT count(*) FROM events WHERE event = 'vm-created'" 2>/dev/null)" = 1 ]; }
no_vms() { ! ls "$STATE/lima" 2>/dev/null | grep -q '^al-'; }
fill() { dd if=/dev/zero of="$STATE/filler" bs=64k >/dev/null 2>&1; true; }
unfill() { rm -f "$STATE/filler"; }

mkdir -p "$STATE"
if [ "$(id -u)" -ne 0 ] ||
    ! mount -t tmpfs -o size=16m,mode=0700 tmpfs "$STATE" 2>/dev/null; then
	echo "ok 1 # SKIP cannot mount a tmpfs here (not root)"
	exit 0
fi
unmount_state() { umount -l "$STATE"; }
FINISH_HOOK=unmount_state

# ---- The disk fills while a lane boots ----
# limactl itself then fails too (the simulator, like Lima, writes in the
# instance directory): create must fail, and the failure must be recorded
# before the VM goes. The creator is not kept waiting for the disk: it is
# answered UNAVAILABLE at once, saying why, and the change is retried.
LIMA_SIM_BOOT_MS=2500 start_daemon || exit 1
ctl create >"$T/create.out" 2>"$T/create.err" &
CREATE=$!
# The VM exists and boots (2.5 s): now the disk fills.
wait_for 10 booting
L=$(sqlite3 "$DB" 'SELECT name FROM lanes')
fill
check "the daemon cannot write the failure" wait_for 15 \
    grep -q "cannot record creating -> destroying" "$LOG"
check "create is answered while the disk is full" wait_for 10 exited "$CREATE"
check_eq "the row still says creating" creating "$(row_state "$L")"
check "the VM was not deleted before the row says so" test -d "$(instance_dir "$L")"
unfill
wait "$CREATE"; RC=$?
check_eq "create fails" 1 "$RC"
check_eq "and reports no lane" "" "$(cat "$T/create.out")"
check_match "with UNAVAILABLE, saying why" 'UNAVAILABLE.*registry cannot record creating -> destroying.*full' "$(cat "$T/create.err")"
check "the lane ends failed once space is back" wait_for 10 state_is "$L" failed
check "and its VM is deleted" no_vms

# A lane made while there is space.
L=$(ctl create)
check_eq "a lane is ready" ready "$(lane_state "$L")"

# ---- The disk is full during rm ----
fill
OUT=$(ctl rm "$L" 2>&1); RC=$?
check "rm fails on a full disk (exit $RC)" test "$RC" -ne 0
check_match "and says why" 'registry.*full' "$OUT"
check_eq "the row did not move" ready "$(row_state "$L")"
check "the VM was not deleted behind the row's back" test -d "$(instance_dir "$L")"
OUT=$(ctl reap 2>&1); RC=$?
check "reap does not report success (exit $RC)" test "$RC" -ne 0
unfill
check "the retried destroy ends the lane" wait_for 20 state_is "$L" destroyed
check "and deletes its VM" no_vms
check_eq "no live row is left" 0 \
    "$(sqlite3 "$DB" "SELECT count(*) FROM lanes WHERE state IN ('creating','ready','destroying')")"
stop_daemon
