#!/usr/bin/env bash
# D5: ListLanes and GetEvents are paged, never cut: 205 live lanes and 250
# ended ones, every one carrying 16 labels of 63 + 255 bytes (far more than one
# frame), all come back across pages; so does a trail of 5000 events.
# Spoken with tests/regress/paging.py, not agent-lanectl.
. "$(dirname "$0")/lib.sh"

DB=$STATE/registry.db
P() { python3 "$REPO/tests/regress/paging.py" "$SOCK" "$@"; }
val() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# Lanes only as registry rows: their proxies get one connection each, so the
# descriptor check (nofile.sh) holds under a hard limit of 1024.
start_daemon --max-lanes 400 --proxy-max-connections 1 --max-connections 64 || exit 1
L=$(ctl create --label team=paging)
check_eq "a real lane is ready" ready "$(lane_state "$L")"

# Rows written behind the daemon's back (it lists from the registry): live
# ones in state ready, ended ones destroyed, each with 16 large labels.
python3 - "$DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
now = 1_800_000_000_000
with db:
    for i in range(455):
        name = "al-%016x" % (0x5000000000000000 + i)
        live = i < 205
        db.execute("INSERT INTO lanes (name, state, cpus, memory_mib, "
                   "disk_gib, created_at_ms, deadline_ms, last_activity_ms, "
                   "ended_at_ms, owner_uid) VALUES (?,?,2,2048,20,?,?,?,?,0)",
                   (name, "ready" if live else "destroyed",
                    # Some share a creation time: the order still holds.
                    now - 10_000 + i // 3, now + 3_600_000, now,
                    0 if live else now))
        for k in range(16):
            db.execute("INSERT INTO lane_labels VALUES (?,?,?)",
                       (name, ("key-%02d-" % k).ljust(63, "k"),
                        chr(65 + k) * 255))
PY

OUT=$(P lanes 0 0 "$T/live")
check_eq "every live lane comes back" 206 "$(val total "$OUT")"
check_eq "each once" 206 "$(val unique "$OUT")"
check "over more than one page ($OUT)" test "$(val pages "$OUT")" -ge 2
check "no page passes the frame maximum" test "$(val maxframe "$OUT")" -le 1048576
check_eq "with every label" $((205 * 16 + 1)) "$(val labels "$OUT")"
check "the real lane is among them" grep -qx "$L" "$T/live"
sqlite3 "$DB" "SELECT name FROM lanes WHERE state IN ('creating','ready',
    'destroying') ORDER BY created_at_ms, name" >"$T/want"
check "oldest first, as one list would be" cmp -s "$T/want" "$T/live"

OUT=$(P lanes 1 0 "$T/all")
check_eq "--all returns every lane, ended ones too" 456 "$(val total "$OUT")"
check_eq "each once (--all)" 456 "$(val unique "$OUT")"
check "over more than one page (--all: $OUT)" test "$(val pages "$OUT")" -ge 2

OUT=$(P lanes 1 7 "$T/small")
check_eq "a page size is honoured and pages still cover all" 456 "$(val total "$OUT")"
check_eq "in pages of 7" $(( (456 + 6) / 7 )) "$(val pages "$OUT")"
check "the same lanes in the same order" cmp -s "$T/all" "$T/small"

# A long audit trail.
python3 - "$DB" "$L" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
with db:
    db.executemany("INSERT INTO events (time_ms, lane, event, detail) "
                   "VALUES (?, ?, 'filler', ?)",
                   [(2_000_000_000_000 + i, sys.argv[2], "d" * 400)
                    for i in range(5000)])
PY
N=$(sqlite3 "$DB" "SELECT count(*) FROM events WHERE lane = '$L'")
OUT=$(P events "$L" 0)
check_eq "every event comes back" "$N" "$(val total "$OUT")"
check_eq "oldest first" 1 "$(val ordered "$OUT")"
check "over more than one page ($OUT)" test "$(val pages "$OUT")" -ge 2
OUT=$(P events "$L" 1000)
check_eq "events in pages of 1000" "$N" "$(val total "$OUT")"
check_eq "six pages" $(( (N + 999) / 1000 )) "$(val pages "$OUT")"

OUT=$(P token lanes "not-a-token")
check_match "a forged page token is refused" '^error=1 ' "$OUT"
OUT=$(P token "$L" "zz")
check_match "a forged event token is refused" '^error=1 ' "$OUT"
OUT=$(P events al-0123456789abcdef 0)
check_match "events of an unknown lane: NOT_FOUND" '^error=2 ' "$OUT"

# The client sees them all too (the CLI pages as the protocol asks).
ctl rm "$L" >/dev/null
stop_daemon
