#!/usr/bin/env bash
# The warm pool: a matching create takes a booted pool lane and a other
# shape boots cold; refills reach the pool size and never pass the cap on
# concurrent boots; pooled lanes past their age are recycled; a SIGKILLed
# daemon leaks none; a pool lane runs nothing; rm never returns a lane.
. "$(dirname "$0")/lib.sh"

export LIMA_SIM_LOG=$T/sim.log
export LIMA_SIM_BOOT_MS=400

# Pool lanes as "name booted|booting", from ls --all (a pool lane whose VM
# still boots is shown "booting", a booted one "pooled").
pool_lanes() {
	ctl ls --all --json | python3 -c '
import json, sys
for l in json.load(sys.stdin):
    if l["state"] in ("pooled", "booting"):
        print(l["name"], "booted" if l["state"] == "pooled" else "booting")'
}
count_booted() { pool_lanes | grep -c ' booted$'; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
state_in() { case " $2 " in *" $(lane_state "$1") "*) return 0 ;; esac; return 1; }
has_booted() { [ "$(count_booted)" -ge 1 ]; }
pool_count_is() { [ "$(pool_lanes | wc -l)" = "$1" ]; }
no_pool() { [ -z "$(pool_lanes)" ]; }
count_booting() { pool_lanes | grep -c ' booting$'; }
pool_full() { [ "$(count_booted)" = "$1" ] && [ "$(count_booting)" = 0 ]; }
shells_of() { grep -c "shell.* $1 " "$LIMA_SIM_LOG"; }
# The limactl shells of a lane's boot: its workspace setup, after the
# network policy check wherever the policy was checked (not where the lane
# says "unenforced": the simulator's guests have no network to check).
setup_shells() {
	case $(ctl show --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["network_policy"])') in
	unenforced) echo 1 ;;
	*) echo 2 ;;
	esac
}

start_daemon --pool-size 2 --pool-max-boots 1 || exit 1

# Sample while the pool fills: never two boots at once, never more lanes
# than its size. The refill that follows the last boot runs in the same
# turn of the daemon's loop that records it: once full, it stays so.
maxb=0 maxn=0
end=$(( $(date +%s) + $(bw 30 2) ))
while [ "$(date +%s)" -lt "$end" ]; do
	p=$(pool_lanes)
	b=$(printf '%s\n' "$p" | grep -c ' booting$')
	n=$(printf '%s\n' "$p" | grep -c .)
	[ "$b" -gt "$maxb" ] && maxb=$b
	[ "$n" -gt "$maxn" ] && maxn=$n
	pool_full 2 && break
	# A real guest's boot takes minutes: sample it without taking a core.
	[ "$VM" = 1 ] && sleep 1
done
check "the pool fills to its size" pool_full 2
check_eq "never more pool boots at once than pool_max_boots" 1 "$maxb"
check_eq "and never past its size" 2 "$maxn"
check_eq "nor once full" 2 "$(pool_lanes | wc -l)"
check_eq "plain ls does not list pool lanes" "" "$(ctl ls -q)"
check_match "daemon status shows the pool" 'warm pool: +2 booted, 0 booting' \
    "$(ctl daemon status --no-load 2>/dev/null || ctl daemon status)"

POOLED=$(pool_lanes | cut -d' ' -f1)
P1=$(echo "$POOLED" | head -1)
out=$(ctl exec "$P1" -- true 2>&1)
check_match "exec in a pool lane is refused" 'pooled, not ready' "$out"
check_eq "a pool lane's VM ran only the guest setup" "$(setup_shells "$P1")" "$(shells_of "$P1")"

# A create of the default shape takes the oldest pool lane.
L=$(ctl create --timeout 10m --label who=test)
check_match "a matching create takes a pooled lane" "^($(echo $POOLED | tr ' ' '|'))\$" "$L"
check_eq "it is ready" ready "$(lane_state "$L")"
SETUP=$(setup_shells "$L")
check_eq "it ran nothing before it was taken" "$SETUP" "$(shells_of "$L")"
check_match "its labels are set" '"who"' "$(ctl show --json "$L")"
check_match "the audit trail says so" 'taken-from-pool' "$(ctl events "$L")"
json=$(ctl show --json "$L")
life=$(python3 -c 'import json,sys; l=json.loads(sys.argv[1]); print((l["deadline_ms"] - l["created_at_ms"]) // 1000)' "$json")
check_eq "its lifetime starts when taken" 600 "$life"
age=$(python3 -c 'import json,sys,time; l=json.loads(sys.argv[1]); print(int(time.time()*1000 - l["created_at_ms"]) < 5000)' "$json")
check_eq "its creation time is the take" True "$age"
check_eq "exec works in it" hi "$(ctl exec "$L" -- echo hi)"
# Its exec channel opened with the guest setup, in the pool, and stayed
# open (tests/regress/pool-warm.sh): execs after the take open no limactl
# shell, whatever their number.
ctl exec "$L" -- true
check_eq "its execs ran on the channel the pool boot opened" "$SETUP" "$(shells_of "$L")"

# Another shape boots cold.
C=$(ctl create --cpus 1 --timeout 10m)
check_nomatch "a create of another shape boots cold" "^($(echo $POOLED | tr ' ' '|'))\$" "$C"
check_nomatch "and takes nothing from the pool" 'taken-from-pool' "$(ctl events "$C")"

wait_for "$(bw 20 2)" pool_full 2
check "the pool refills after a take" pool_full 2

# rm never returns a lane to the pool.
ctl rm "$L" >/dev/null
check_eq "a removed lane ends destroyed" destroyed "$(lane_state "$L")"
wait_for "$(bw 20 1)" pool_full 2
check_nomatch "a removed lane is not pooled again" "$L" "$(pool_lanes)"
check "the pool stays at its size" pool_full 2
check "no VM of the removed lane remains" test ! -d "$(instance_dir "$L")"
ctl rm "$C" >/dev/null

# Max age: a short one recycles the pool (after a restart, the new age
# applies to the lanes kept, too). Only pool lanes without a lane CA (mode
# none) are kept over a restart (tests/regress/pool-secrets.sh): the pool
# is booted so first.
stop_daemon
start_daemon --network none --pool-size 2 --pool-max-boots 1 || exit 1
wait_for "$(bw 20 2)" pool_full 2
stop_daemon
OLD=$(sqlite3 "$STATE/registry.db" \
    "SELECT name FROM lanes WHERE pooled = 1 AND state = 'ready'")
RESTART_MS=$(date +%s%3N)
start_daemon --network none --pool-size 2 --pool-max-boots 1 \
    --pool-max-age 2s || exit 1
recycled() {
	local n s k=0
	for n in $OLD; do
		s=$(lane_state "$n")
		[ "$s" = destroyed ] && k=$((k + 1))
	done
	[ "$k" = 2 ]
}
wait_for "$(bw 20 1)" recycled
check "pool lanes past their max age are recycled" recycled
check_match "the recycling is in their audit trail" 'pool max age reached' \
    "$(ctl events "$(echo "$OLD" | head -1)")"
# A pool lane registered since the restart: its age counts from its start
# (booted by then or not: under load a boot can outlast a 2 s max age).
since_restart() {
	sqlite3 "$STATE/registry.db" "SELECT name FROM lanes WHERE pooled = 1 AND created_at_ms >= $RESTART_MS ORDER BY created_at_ms LIMIT 1"
}
have_since_restart() { [ -n "$(since_restart)" ]; }
wait_for "$(bw 20 1)" have_since_restart
NEW=$(since_restart)
check "and so are the pool lanes started since" wait_for "$(bw 20 1)" state_is "$NEW" destroyed
check_match "at their max age" 'pool max age reached' "$(ctl events "$NEW")"
check_nomatch "a recycled lane ran nothing" 'exec|copy' "$(ctl events "$NEW")"
stop_daemon

# SIGKILL while one pool lane is booted and another boots.
start_daemon --pool-size 2 --pool-max-boots 1 || exit 1
wait_for "$(bw 20 1)" pool_count_is 2
wait_for "$(bw 20 2)" sh -c "[ \"\$(sqlite3 '$STATE/registry.db' \"SELECT count(*) FROM lanes WHERE pooled = 1 AND state = 'creating'\")\" = 1 ]"
BEFORE=$(sqlite3 "$STATE/registry.db" "SELECT name FROM lanes WHERE pooled = 1 AND state IN ('creating','ready')")
kill9_daemon
kill_stray_limactl
start_daemon --pool-size 2 --pool-max-boots 1 || exit 1
wait_for "$(bw 30 3)" pool_full 2
check "after SIGKILL the pool is back at its size" pool_full 2
leaked=0
for n in $BEFORE; do
	s=$(lane_state "$n")
	case $s in
	pooled) ;;
	destroyed|failed) [ -d "$(instance_dir "$n")" ] && leaked=$((leaked + 1)) ;;
	*) wait_for "$(bw 20 1)" state_in "$n" "destroyed failed pooled" || leaked=$((leaked + 1)) ;;
	esac
done
check_eq "every pool lane of the killed daemon is recovered or destroyed" 0 "$leaked"
check_eq "no orphaned VM is left" "" \
    "$(ctl reap --json | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin).get("orphans", [])))')"
insts=$(ls "$STATE/lima" | grep -c '^al-')
live=$(sqlite3 "$STATE/registry.db" "SELECT count(*) FROM lanes WHERE state IN ('creating','ready','destroying')")
check_eq "every VM belongs to a live row" "$live" "$insts"
check_eq "the pool holds no more than its size" 2 "$(pool_lanes | wc -l)"

# Off by default: a daemon without pool_size destroys the pool it finds.
stop_daemon
start_daemon || exit 1
wait_for "$(bw 20 1)" no_pool
check_eq "without pool_size, no pool lane is kept or booted" "" "$(pool_lanes)"
