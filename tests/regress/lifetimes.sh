#!/usr/bin/env bash
# Hard deadlines (also mid-exec and after the client died), idle timeouts
# that never kill a busy lane, and extensions capped by max_lifetime.
. "$(dirname "$0")/lib.sh"

# Two kinds of lifetime. `life N` is for a lane whose deadline the suite
# waits out: it spans one calibrated boot, so the wait is short. `far N` is
# for a lane that must not meet its deadline at all: on real Lima it spans
# the slowest boot a suite allows (AL_BOOT_S), since a boot twice the
# calibrated one happens under TCG, and nothing waits for it.
far() {
	if [ "$VM" = 1 ]; then echo "$(( $1 + ${AL_BOOT_S:-300} ))s"; else life "$1"; fi
}
start_daemon --max-lifetime "$(far 60)" --default-lifetime "$(far 30)" || exit 1
calibrate_boot || exit 1
MAXLIFE=$(far 60)
stop_daemon
start_daemon --max-lifetime "$MAXLIFE" --default-lifetime "$(far 30)" || exit 1

gone() { [ "$(lane_state "$1")" = destroyed ] && [ ! -e "$(instance_dir "$1")" ]; }

deadline_ms() {
	ctl show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["deadline_ms"])'
}
L=$(ctl create --timeout "$(life 3)")
check_eq "a short-lived lane starts ready" ready "$(lane_state "$L")"
DL=$(deadline_ms "$L")
check "it is destroyed at its deadline" wait_for $((BOOT_S + 8)) gone "$L"
LATE=$(( $(date +%s%3N) - DL ))
check "not much later than the deadline (${LATE} ms)" test "$LATE" -le 3000
check_match "the audit trail says why" 'destroying +deadline reached' "$(ctl events "$L")"

# Mid-exec: the exec ends with a typed error, the lane goes.
L=$(ctl create --timeout "$(life 3)")
OUT=$(ctl exec "$L" -- sleep $((BOOT_S + 30)) 2>&1); RC=$?
check_eq "an exec running at the deadline exits 125" 125 "$RC"
check_match "with DEADLINE_EXCEEDED" 'DEADLINE_EXCEEDED' "$OUT"
check "and the lane is destroyed" wait_for "$(tw 5)" gone "$L"

# Extensions: capped by max_lifetime counted from creation.
L=$(ctl create --timeout "$(far 30)")
OUT=$(ctl extend "$L" 10s)
check_match "a small extension is granted" "$L deadline .*Z\$" "$OUT"
OUT=$(ctl extend "$L" 10m)
check_match "a large one is capped" 'capped by max_lifetime' "$OUT"
check "the deadline is exactly created_at + max_lifetime" python3 -c '
import json, sys
l = json.loads(sys.argv[1])
sys.exit(0 if l["deadline_ms"] == l["created_at_ms"] + int(sys.argv[2][:-1]) * 1000 else 1)' \
    "$(ctl show --json "$L")" "$MAXLIFE"
check_match "extensions are in the audit trail" 'extended .*capped' "$(ctl events "$L")"
OUT=$(ctl extend al-0000000000000000 1m 2>&1)
check_match "extending an unknown lane is NOT_FOUND" 'NOT_FOUND' "$OUT"
ctl rm "$L" >/dev/null
OUT=$(ctl extend "$L" 1m 2>&1)
check_match "extending an ended lane is refused" 'FAILED_PRECONDITION' "$OUT"

# Idle timeout: an idle lane goes early, a busy silent one does not.
L=$(ctl create --timeout "$(far 50)" --idle-timeout 2s)
check "an idle lane is destroyed after its idle timeout" wait_for "$(tw 6)" gone "$L"
check_match "for being idle" 'idle timeout reached' "$(ctl events "$L")"
L=$(ctl create --timeout "$(far 50)" --idle-timeout 2s)
OUT=$(ctl exec "$L" -- sh -c 'sleep 4; echo still-here'); RC=$?
check_eq "a silent 4 s exec survives a 2 s idle timeout" still-here "$OUT"
check_eq "and the lane is still ready right after" ready "$(lane_state "$L")"
check "then it idles out" wait_for "$(tw 6)" gone "$L"

# A client of create --detach killed with SIGKILL during create (the VM
# takes a second to boot): the lane lives on, then is reaped at its
# deadline. (Without --detach it is destroyed: create-interrupt.sh.)
stop_daemon
LIMA_SIM_BOOT_MS=1000 start_daemon --max-lifetime "$MAXLIFE" --default-lifetime "$(far 30)" || exit 1
BEFORE=$(ctl ls --all -q | wc -l)
"$LANECTL" --socket "$SOCK" create --detach --timeout "$(life 4)" > "$T/created" 2>/dev/null &
CLI=$!
newest() { ctl ls --all --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["name"])'; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
# Killed once its lane is registered and before it is ready.
registered_new() { [ "$(ctl ls --all -q | wc -l)" -gt "$BEFORE" ]; }
wait_for 10 registered_new
L=$(newest)
check_eq "the lane is being created" creating "$(lane_state "$L")"
check "the client is killed while the lane is being created" kill -KILL "$CLI"
wait "$CLI" 2>/dev/null
check_eq "it never printed a name" "" "$(cat "$T/created")"
check "the orphaned creation still finishes" wait_for $((BOOT_S + 5)) state_is "$L" ready
check "and is reaped at its deadline" wait_for $((BOOT_S + 8)) gone "$L"
