#!/usr/bin/env bash
# Lanes survive a daemon restart (clean or SIGKILL); the registry stays sound.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create --timeout 10m)
check_eq "lane is ready" ready "$(lane_state "$L")"

stop_daemon
check "VM keeps running while the daemon is down" \
    test "$(sim list --format '{{.Status}}' "$L")" = Running
start_daemon || exit 1
check_eq "lane is still ready after a restart" ready "$(lane_state "$L")"
check_eq "exec works after a restart" hello "$(ctl exec "$L" -- echo hello)"

kill9_daemon
start_daemon || exit 1
check_eq "lane is still ready after SIGKILL" ready "$(lane_state "$L")"
check "registry passes integrity_check" test "$(sqlite3 "$STATE/registry.db" \
    'PRAGMA integrity_check')" = ok
# 2: the images table (tests/regress/images.sh), 3: the warm pool's pooled
# column (tests/regress/pool.sh), 4: aliases and owned lanes (names.sh,
# run.sh), and so on: the latest the daemon migrated to.
check "the registry schema is at least 3" test "$(build_schema)" -ge 3
check_eq "registry schema version" "$(build_schema)" \
    "$(sqlite3 "$STATE/registry.db" 'PRAGMA user_version')"
check_eq "registry is in WAL mode" wal \
    "$(sqlite3 "$STATE/registry.db" 'PRAGMA journal_mode')"
check "registry file is private" test "$(stat -c %a "$STATE/registry.db")" = 600
ctl rm "$L" >/dev/null
