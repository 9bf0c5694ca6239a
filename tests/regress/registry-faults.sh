#!/usr/bin/env bash
# D1: the registry cannot write (locked by another process, or its disk is
# full). No success is reported and no state moves unless the row was
# committed; failed writes are retried; rm fails loudly.
. "$(dirname "$0")/lib.sh"

DB=$STATE/registry.db
no_vms() { ! ls "$STATE/lima" 2>/dev/null | grep -q '^al-'; }
row_state() { sqlite3 "$DB" "SELECT state FROM lanes WHERE name = '$1'"; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
running() { kill -0 "$1" 2>/dev/null; }
exited() { ! kill -0 "$1" 2>/dev/null; }
registered() { [ -n "$(sqlite3 "$DB" 'SELECT name FROM lanes' 2>/dev/null)" ]; }

# Holds a write lock on the registry (BEGIN EXCLUSIVE from another SQLite
# connection) until $T/unlock appears. A real lock, not a hook: the daemon
# sees SQLITE_BUSY after its busy timeout, as with any other writer.
LOCKER=
lock_registry() {
	rm -f "$T/locked" "$T/unlock"
	python3 - "$DB" "$T" <<'PY' &
import os, sqlite3, sys, time
db, t = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db, isolation_level=None, timeout=30)
c.execute("BEGIN EXCLUSIVE")
open(os.path.join(t, "locked"), "w").close()
while not os.path.exists(os.path.join(t, "unlock")):
    time.sleep(0.05)
c.execute("ROLLBACK")
c.close()
PY
	LOCKER=$!
	wait_for 10 test -e "$T/locked"
}
unlock_registry() {
	touch "$T/unlock"
	wait "$LOCKER" 2>/dev/null
	LOCKER=
}

# ---- The registry is locked while lanes boot ----
# The creator is not kept waiting on the registry: once the write of
# "ready" has failed it is answered UNAVAILABLE, saying why. Nobody will
# have the lane, so the change retried becomes its cancellation; nothing
# moves, and no VM goes, until the registry has recorded that. A lane made
# --detach carries on and is ready once the registry can record it.
LIMA_SIM_BOOT_MS=2500 start_daemon || exit 1
ctl create >"$T/create.out" 2>"$T/create.err" &
CREATE=$!
wait_for 10 registered
L=$(sqlite3 "$DB" 'SELECT name FROM lanes')
ctl create --detach >"$T/detach.out" 2>"$T/detach.err" &
DETACH=$!
wait_for 10 sh -c "[ \"\$(sqlite3 '$DB' 'SELECT count(*) FROM lanes')\" = 2 ]"
D=$(sqlite3 "$DB" "SELECT name FROM lanes WHERE name != '$L'")
check_eq "the lanes are registered while they boot" "creating creating" "$(row_state "$L") $(row_state "$D")"
lock_registry
# Boot (2.5 s), then the write of "ready" waits out the busy timeout and
# fails.
check "the write of ready fails" wait_for 30 grep -q "$L: the registry cannot record creating -> ready" "$LOG"
check "create is answered while the registry is still locked" wait_for 10 exited "$CREATE"
check_eq "the row still says creating" creating "$(row_state "$L")"
check "its VM is not deleted behind the row's back" test -d "$(instance_dir "$L")"
check "the detached create is answered too" wait_for 30 exited "$DETACH"
unlock_registry
# (Waited for only now: a daemon that kept them waiting answers them now.)
wait "$CREATE"; RC=$?
check_eq "create fails" 1 "$RC"
check_eq "and reports no lane" "" "$(cat "$T/create.out")"
check_match "with UNAVAILABLE, saying why" 'UNAVAILABLE.*registry cannot record creating -> ready.*(locked|busy)' "$(cat "$T/create.err")"
check_match "and what becomes of the lane" 'destroyed once the registry can record it' "$(cat "$T/create.err")"
wait "$DETACH"
check_match "the detached one, saying its lane carries on" 'UNAVAILABLE.*carries on' "$(cat "$T/detach.err")"
check "the retried change cancels the undelivered lane" wait_for 20 state_is "$L" destroyed
check "and deletes its VM" wait_for 10 test ! -e "$(instance_dir "$L")"
check "the detached lane is ready once the registry can record it" wait_for 20 state_is "$D" ready
L=$D
check_match "the audit trail has the ready event" 'ready' "$(ctl events "$L")"
stop_daemon
start_daemon || exit 1
check_eq "after a restart the lane is still ready" ready "$(lane_state "$L")"
check "and its VM still exists" test -d "$(instance_dir "$L")"
check_eq "exec works in it" hi "$(ctl exec "$L" -- echo hi)"

# ---- The registry is locked during rm ----
lock_registry
OUT=$(ctl rm "$L" 2>&1); RC=$?
check "rm fails while the registry cannot record it (exit $RC)" test "$RC" -ne 0
check_match "and says why" 'registry' "$OUT"
check_eq "the row did not move" ready "$(row_state "$L")"
OUT=$(ctl rm "$L" 2>&1); RC=$?
check "a second rm fails too (exit $RC)" test "$RC" -ne 0
OUT=$(ctl reap 2>&1); RC=$?
check "reap does not report success either (exit $RC)" test "$RC" -ne 0
check_match "reap says why" 'registry' "$OUT"
unlock_registry
check "the retried destroy ends the lane" wait_for 20 state_is "$L" destroyed
check "and deletes its VM" no_vms
check_nomatch "ls no longer shows it" "$L" "$(ctl ls)"
check_eq "no live row counts toward max_lanes" 0 \
    "$(sqlite3 "$DB" "SELECT count(*) FROM lanes WHERE state IN ('creating','ready','destroying')")"
OUT=$(ctl rm "$L" 2>&1); RC=$?
check_eq "rm of the ended lane now succeeds" 0 "$RC"
stop_daemon
