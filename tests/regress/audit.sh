#!/usr/bin/env bash
# The audit trail (issue 11): events records every exec (argv[0] and how it
# ended, never the arguments or environment) and every copy (direction,
# path, bytes), keeps at most max_audit_events of them per lane, and
# events -f follows new events until the lane ends.
. "$(dirname "$0")/lib.sh"

start_daemon --max-audit-events 6 || exit 1
L=$(ctl create)
ev() { ctl events "$L"; }
ctl exec "$L" -- sh -c 'exit 3'
ctl exec --env AUDIT_SECRET=hunter2-value "$L" -- printf '%s' arg-secret-value >/dev/null
ctl exec --timeout 1s "$L" -- sleep 30 2>/dev/null
ctl exec "$L" -- no-such-command-here 2>/dev/null
echo hello > "$T/f"
ctl cp "$T/f" "$L:sub/f"
ctl cp "$L:sub/f" "$T/g"
OUT=$(ev)
check_match "an exec: argv[0] and its exit status" ' exec +sh exit=3$' "$OUT"
check_match "a killed exec says so" ' exec +sleep failed: .*timed out' "$OUT"
check_match "a command that is not found exits 127" ' exec +no-such-command-here exit=127$' "$OUT"
check_nomatch "never the arguments" 'arg-secret-value' "$OUT"
check_nomatch "never the environment" 'hunter2-value|AUDIT_SECRET' "$OUT"
check_match "a copy in: direction, path, bytes" ' copy-in +sub/f bytes=[0-9]+$' "$OUT"
check_match "a copy out: direction, path, bytes" ' copy-out +sub/f bytes=6$' "$OUT"
check_match "the lifecycle is there too" ' ready ' "$OUT"

# max_audit_events: the oldest exec and copy events go, the lifecycle stays.
for i in 1 2 3 4 5 6; do ctl exec "$L" -- sh -c "exit $((10 + i))"; done
OUT=$(ev)
check_eq "at most max_audit_events of them" 6 "$(printf '%s\n' "$OUT" | grep -Ec ' (exec|copy-in|copy-out) ')"
check_match "the newest kept" 'exit=16$' "$OUT"
check_nomatch "the oldest gone" 'exit=3$' "$OUT"
check_match "lifecycle events kept" ' registered ' "$OUT"

# events -f: new events as they come, then the lane's end.
"$LANECTL" --socket "$SOCK" events -f "$L" > "$T/follow" 2>&1 &
F=$!
# It follows once it has printed the trail so far (the newest is exit=16).
wait_for 20 grep -q 'exit=16$' "$T/follow"
ctl exec "$L" -- sh -c 'exit 42'
followed() { grep -q 'exit=42$' "$T/follow"; }
check "events -f prints an exec that ran after it started" wait_for 10 followed
ctl rm "$L" >/dev/null
check "and returns once the lane has ended" wait_for 10 sh -c "! kill -0 $F 2>/dev/null"
wait $F; RC=$?
check_eq "with status 0" 0 "$RC"
check_match "after printing the end" ' destroyed ' "$(cat "$T/follow")"
check_eq "each event once" 1 "$(grep -c 'exit=42$' "$T/follow")"
OUT=$(ctl events --json "$L" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)) > 0)')
check_eq "--json is still one array" True "$OUT"
finish
