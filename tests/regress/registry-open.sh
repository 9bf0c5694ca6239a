#!/usr/bin/env bash
# D7: the registry is checked whole before the socket is bound. A missing
# file starts a fresh registry; an empty, damaged or foreign one is refused
# loudly, and nothing is served from it.
. "$(dirname "$0")/lib.sh"

DB=$STATE/registry.db

# Starts the daemon expecting a refusal: exit status and stderr in $OUT/$RC.
start_refused() {
	rm -f "$T/stderr"
	# SIGKILL on a timeout: a daemon that did bind leaves its socket.
	timeout -s KILL 20 "$LANED" --socket "$SOCK" --state-dir "$STATE" \
	    --limactl "$SIM" 2>"$T/stderr" >/dev/null
	RC=$?
	OUT=$(cat "$T/stderr")
}
no_socket() { [ ! -S "$SOCK" ]; }

# ---- Missing: a fresh registry ----
start_daemon || exit 1
check "the daemon migrated a fresh registry" test -n "$(build_schema)"
check_eq "a missing registry starts fresh (schema $(build_schema))" "$(build_schema)" \
    "$(sqlite3 "$DB" 'PRAGMA user_version')"
L=$(ctl create)
check_eq "and works" ready "$(lane_state "$L")"
check_eq "a fresh start says so in one line, not one a migration" 1 \
    "$(grep -c -e 'registry: created .* at schema [0-9]' -e 'migrated' "$LOG")"
probed() { grep -q 'limactl [0-9.]*: ' "$LOG"; }
wait_for "$(tw 5)" probed
check_nomatch "and no root warning when the limactl is not Lima's" \
    'running as root' "$(cat "$LOG")"
stop_daemon
# log/ is the daemon's own log (and kept logs of failed starts).
check "no initialisation file is left behind" \
    test -z "$(ls "$STATE" | grep -v -e '^registry\.db' -e '^agent-laned\.lock$' -e '^lima$' -e '^lanes$' -e '^log$')"

# ---- Empty: refused, not mistaken for a fresh one ----
cp "$DB" "$T/good.db"
: >"$DB"
rm -f "$DB-wal" "$DB-shm"
start_refused
check "an empty registry is refused (exit $RC)" test "$RC" -ne 0 -a "$RC" -ne 137
check_match "with a clear error naming the file" "$DB.*empty" "$OUT"
check "the socket was never bound" no_socket
check_eq "the empty file is left as it was" 0 "$(stat -c %s "$DB")"
check "the lane's VM was not touched" test -d "$(instance_dir "$L")"

# ---- Damaged inside (the header is fine): quick_check before bind ----
cp "$T/good.db" "$DB"
sqlite3 "$DB" "PRAGMA journal_mode = DELETE" >/dev/null
# Enough rows that the events table and its index span several pages.
sqlite3 "$DB" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
    WHERE i < 3000) INSERT INTO events (time_ms, lane, event, detail)
    SELECT i, '$L', 'filler', printf('%0200d', i) FROM n"
PAGES=$(sqlite3 "$DB" 'PRAGMA page_count')
PSIZE=$(sqlite3 "$DB" 'PRAGMA page_size')
# Scribble over a page in the middle of the file.
python3 - "$DB" $(( (PAGES / 2) * PSIZE )) "$PSIZE" <<'PY'
import sys
path, off, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "r+b") as f:
    f.seek(off + 8)
    f.write(bytes((i * 37 + 11) % 256 for i in range(n - 16)))
PY
check "the damage is real (quick_check fails)" \
    test "$(sqlite3 "$DB" 'PRAGMA quick_check' 2>&1 | head -1)" != ok
start_refused
check "a damaged registry is refused (exit $RC)" test "$RC" -ne 0 -a "$RC" -ne 137
check_match "with an error naming the file and the check" "$DB.*(check|malformed)" "$OUT"
check "the socket was never bound" no_socket

# ---- Not ours: a table missing, or an SQLite file of something else ----
cp "$T/good.db" "$DB"
sqlite3 "$DB" "DROP TABLE lane_labels"
start_refused
check "a registry missing a table is refused (exit $RC)" test "$RC" -ne 0 -a "$RC" -ne 137
check_match "and says which" 'lane_labels' "$OUT"
check "the socket was never bound" no_socket

rm -f "$DB" "$DB-wal" "$DB-shm"
sqlite3 "$DB" "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('x')"
start_refused
check "an SQLite file that is not a registry is refused (exit $RC)" test "$RC" -ne 0 -a "$RC" -ne 137
check_match "and says so" 'not an agent-laned registry' "$OUT"
check_eq "it is left untouched" "0 notes delete" \
    "$(sqlite3 "$DB" 'PRAGMA user_version; SELECT group_concat(name) FROM sqlite_master; PRAGMA journal_mode' | tr '\n' ' ' | sed 's/ $//')"

# ---- The good registry again: the lane is still there ----
rm -f "$DB" "$DB-wal" "$DB-shm"
cp "$T/good.db" "$DB"
start_daemon || exit 1
check_eq "the restored registry still knows the lane" ready "$(lane_state "$L")"
ctl rm "$L" >/dev/null
stop_daemon
