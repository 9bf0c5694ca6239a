#!/usr/bin/env bash
# The warm pool while it boots (issue 18): ls, show and daemon status call
# a pool lane whose VM still boots "booting", then "pooled". A create that
# finds only a booting pool lane of its shape takes it when it will be
# ready sooner than a cold boot, instead of booting one more VM; a pool
# boot late by more than a typical cold boot (measured from the registry's
# create-to-ready times) is left, and the create boots cold.
. "$(dirname "$0")/lib.sh"

export LIMA_SIM_LOG=$T/sim.log
DB=$STATE/registry.db
booting_pool() { sqlite3 "$DB" "SELECT name FROM lanes WHERE pooled = 1 AND state = 'creating'"; }
have_booting_pool() { [ -n "$(booting_pool)" ]; }
booted_pool() { sqlite3 "$DB" "SELECT name FROM lanes WHERE pooled = 1 AND state = 'ready'"; }
have_booted_pool() { [ -n "$(booted_pool)" ]; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
creates() { grep -c ' create --name=al-' "$LIMA_SIM_LOG"; }
# Lanes of mode none: only a pool lane without a lane CA is kept across
# the restart below (tests/regress/pool-secrets.sh).
ls_state() { ctl ls --all --json | python3 -c 'import json,sys; print([l["state"] for l in json.load(sys.stdin) if l["name"] == sys.argv[1]][0])' "$1"; }

# ---- A booting pool lane is shown booting, and taken rather than a cold boot
LIMA_SIM_BOOT_MS=4000 start_daemon --network none --pool-size 1 || exit 1
wait_for 10 have_booting_pool
P=$(booting_pool)
check_eq "ls --all shows the pool lane booting" booting "$(ls_state "$P")"
check_match "ls --all's table too" "^$P +[^ ]+ +booting " "$(ctl ls --all)"
check_eq "show says booting" booting "$(lane_state "$P")"
check_match "daemon status counts it booting" 'warm pool: +0 booted, 1 booting' \
    "$(ctl daemon status --no-load 2>/dev/null)"
L=$(ctl create --timeout 10m)
check_eq "a create takes the booting pool lane" "$P" "$L"
check_eq "its lane is ready" ready "$(lane_state "$L")"
check_match "the audit trail says it was taken while booting" 'taken-from-pool.*booting' "$(ctl events "$L")"
check_eq "no cold VM was made for it: two creates in all (it and the refill)" 2 "$(creates)"
check "the refill boots and is shown pooled" wait_for 20 have_booted_pool
check_eq "ls --all shows the booted pool lane pooled" pooled "$(ls_state "$(booted_pool)")"
ctl rm "$L" >/dev/null
stop_daemon

# ---- A pool boot late by more than a typical cold boot is not waited for
# The first start after this restart (the refill's) hangs; the estimate
# comes from the registry (the boots above).
LIMA_SIM_HANG=start:1 LIMA_SIM_BOOT_MS=4000 start_daemon --network none --pool-size 1 || exit 1
TYPICAL=$(grep -o 'a cold boot takes about [0-9]* ms' "$LOG" | tail -1 | awk '{ print $6 }')
check "the daemon measured a typical cold boot from the registry ($TYPICAL ms)" \
    test "${TYPICAL:-0}" -ge 1000 -a "${TYPICAL:-0}" -lt 60000
K=$(booted_pool)
check "a booted pool lane was kept across the restart" test -n "$K"
L=$(ctl create --timeout 10m)
check_eq "a create takes the booted pool lane kept across the restart" "$K" "$L"
check_match "its exec channel (gone with the old daemon) was reopened before the hand-over" \
    'channel +reopened' "$(ctl events "$L")"
wait_for 10 have_booting_pool
S=$(booting_pool)
stuck_late() {
	local c
	c=$(sqlite3 "$DB" "SELECT created_at_ms FROM lanes WHERE name = '$S'")
	[ $(( $(date +%s%3N) - c )) -gt $(( 2 * TYPICAL + 500 )) ]
}
check "its refill hangs in limactl start, past twice a typical boot" wait_for 60 stuck_late
N0=$(creates)
C=$(ctl create --timeout 10m)
check_nomatch "the next create does not wait for it" "^$S\$" "$C"
check_eq "it boots cold" "$((N0 + 1))" "$(creates)"
check_eq "and is ready" ready "$(lane_state "$C")"
check_eq "the stuck pool lane is left booting" booting "$(lane_state "$S")"
ctl rm "$L" "$C" >/dev/null
stop_daemon
finish
