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

# ---- The registry is locked while a lane boots ----
LIMA_SIM_BOOT_MS=2500 start_daemon || exit 1
ctl create >"$T/create.out" 2>"$T/create.err" &
CREATE=$!
wait_for 10 registered
L=$(sqlite3 "$DB" 'SELECT name FROM lanes')
check_eq "the lane is registered while it boots" creating "$(row_state "$L")"
lock_registry
# Boot (2.5 s), then the write of "ready" waits out the busy timeout and
# fails. A daemon that carries on regardless answers create instead (after
# a busy timeout per write it tries on the way).
refused_or_answered() {
	exited "$CREATE" || grep -q 'cannot record creating -> ready' "$LOG"
}
wait_for 60 refused_or_answered
sleep 1
check "create has not reported success while the row cannot say ready" \
    running "$CREATE"
check_eq "the row still says creating" creating "$(row_state "$L")"
unlock_registry
check "create returns once the write is retried" wait_for 15 exited "$CREATE"
wait "$CREATE"; RC=$?
check_eq "create succeeds" 0 "$RC"
check_eq "with the lane's name" "$L" "$(cat "$T/create.out")"
check_eq "the row says ready" ready "$(row_state "$L")"
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
