#!/usr/bin/env bash
# run (issue 11): one command creates a lane, copies in, runs, copies out
# and destroys the lane, exiting with the command's status. The lane is
# bound to the run's connection: ^C, a failed copy or the client's death
# (SIGKILL: the daemon sees the connection go) destroy it, and so does a
# daemon restart that finds its owner gone; --keep keeps it.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
# The lane registered last (the daemon's log says so), and a wait for the
# next one.
newest() { grep -Eo 'lane al-[0-9a-f]{16}: registered' "$LOG" | tail -n 1 | cut -d' ' -f2 | tr -d :; }
newer_than() { [ "$(newest)" != "$1" ]; }
wait_new() { wait_for "$(bw 20 1)" newer_than "$1"; newest; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
no_live() { [ -z "$(ctl ls -q 2>/dev/null)" ]; }

# ---- Exit status ------------------------------------------------------------
OUT=$(ctl run -- sh -c 'echo out; echo err >&2; exit 7' 2>"$T/err"); RC=$?
check_eq "run exits with the command's status" 7 "$RC"
check_eq "its standard output is the command's" out "$OUT"
check_match "and so is its standard error" '^err$' "$(cat "$T/err")"
L=$(newest)
check_eq "the lane is destroyed when run ends" destroyed "$(lane_state "$L")"
check "no lane is left live" no_live
ctl run -- sh -c 'kill -TERM $$'; RC=$?
check_eq "a command killed by SIGTERM: 128+15, as exec" 143 "$RC"
check_eq "input reaches the command" "from stdin" "$(echo 'from stdin' | ctl run -- cat)"
ctl run --label job=42 --timeout 10m -- true; RC=$?
check_eq "create options are taken" 0 "$RC"
check_match "the label went on the lane" 'job.*42' "$(ctl show --json "$(newest)")"
OUT=$(ctl run 2>&1); RC=$?
check_eq "run without a command is a usage error" 2 "$RC"
OUT=$(ctl run --out nocolon -- true 2>&1); RC=$?
check_eq "--out without LANEPATH:HOST is a usage error" 2 "$RC"
check "usage errors create nothing" no_live

# ---- --cp and --out --------------------------------------------------------
mkdir -p "$T/in/sub" "$T/outdir"
echo hello > "$T/in/a.txt"
echo nested > "$T/in/sub/b.txt"
echo single > "$T/one.txt"
OUT=$(ctl run --cp "$T/in:src" --cp "$T/one.txt:one.txt" \
    --out "up.txt:$T/outdir/up.txt" --out "tree:$T/tree" -- \
    sh -c 'tr a-z A-Z < src/a.txt > up.txt; mkdir tree; cp src/sub/b.txt one.txt tree/; echo ran')
RC=$?
check_eq "run with --cp and --out exits 0" 0 "$RC"
check_eq "the command ran" ran "$OUT"
check_eq "--out copies a file out" HELLO "$(cat "$T/outdir/up.txt" 2>/dev/null)"
check_eq "--out copies a directory out" "nested single" \
    "$(cat "$T/tree/b.txt" "$T/tree/one.txt" 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
check "and the lane is gone" no_live

# A missing host path is found before any lane is made.
PREV=$(newest)
OUT=$(ctl run --cp "$T/missing:x" -- sh -c 'echo should-not-run' 2>&1); RC=$?
check_eq "a missing --cp host path fails run with 125" 125 "$RC"
check_match "naming the path" "$T/missing" "$OUT"
check_eq "and makes no lane" "$PREV" "$(newest)"
# A copy that fails in the lane still destroys it, and the command never runs.
OUT=$(ctl run --cp "$T/one.txt:/usr/forbidden/x" -- sh -c 'echo should-not-run' 2>&1); RC=$?
check_eq "a failing copy-in fails run with 125" 125 "$RC"
check_nomatch "the command did not run" should-not-run "$OUT"
check_match "the error names the copy" "--cp $T/one.txt:/usr/forbidden/x" "$OUT"
L=$(newest)
check "the lane of a failed copy-in is destroyed" wait_for "$(bw 20 1)" state_is "$L" destroyed
OUT=$(ctl run --out "nothere:$T/nothere" -- true 2>&1); RC=$?
check_eq "a failing copy-out after a command that succeeded exits 125" 125 "$RC"
check "the lane of a failed copy-out is destroyed" wait_for "$(bw 20 1)" state_is "$(newest)" destroyed
OUT=$(ctl run --out "nothere:$T/nothere" -- sh -c 'exit 3' 2>&1); RC=$?
check_eq "after a failed command, run keeps the command's status" 3 "$RC"

# The run's command is running in the lane (its exec has started).
runs_sleep60() { ctl exec "$1" -- ps -eo args 2>/dev/null | grep -q '^sleep 60$'; }

# ---- ^C ----------------------------------------------------------------------
PREV=$(newest)
"$LANECTL" --socket "$SOCK" run -- sleep 60 2>"$T/int.err" &
P=$!
L=$(wait_new "$PREV")
wait_for "$(bw 20 1)" state_is "$L" ready
wait_for "$(bw 20 1)" runs_sleep60 "$L"
kill -INT $P
wait $P; RC=$?
check_eq "^C: run dies of SIGINT (130)" 130 "$RC"
check_match "and says the lane is being destroyed" "lane $L is being destroyed" "$(cat "$T/int.err")"
check "^C destroys the lane" wait_for "$(bw 20 1)" state_is "$L" destroyed

# ^C while the lane is still being created.
PREV=$(newest)
"$LANECTL" --socket "$SOCK" run -- sleep 5 2>/dev/null &
P=$!
L=$(wait_new "$PREV")
kill -INT $P
wait $P
check "^C during the create destroys the lane too" wait_for "$(bw 20 1)" state_is "$L" destroyed

# ---- The client dies: the daemon destroys the lane ---------------------------
PREV=$(newest)
"$LANECTL" --socket "$SOCK" run -- sleep 60 &
P=$!
L=$(wait_new "$PREV")
wait_for "$(bw 20 1)" state_is "$L" ready
wait_for "$(bw 20 1)" runs_sleep60 "$L"
kill -KILL $P
wait $P 2>/dev/null
check "SIGKILL of run: the daemon destroys its lane" wait_for "$(bw 20 1)" state_is "$L" destroyed
check_match "the audit trail says why" "owning client disconnected" "$(ctl events "$L")"

# ---- --keep ------------------------------------------------------------------
OUT=$(ctl run --keep -- sh -c 'echo kept > k.txt' 2>&1); RC=$?
L=$(newest)
check_eq "run --keep exits with the command's status" 0 "$RC"
check_match "and names the lane it kept" "$L" "$OUT"
check_eq "--keep keeps the lane" ready "$(lane_state "$L")"
check_eq "with what the command left" kept "$(ctl exec "$L" -- cat k.txt)"
PREV=$(newest)
"$LANECTL" --socket "$SOCK" run --keep -- sleep 60 2>/dev/null &
P=$!
L2=$(wait_new "$PREV")
runs_60() { ctl exec "$L2" -- ps -eo args >"$T/ps" 2>/dev/null && grep -q '^sleep 60$' "$T/ps"; }
check "--keep: the command runs" wait_for "$(bw 20 1)" runs_60
kill -KILL $P
wait $P 2>/dev/null
# The daemon has taken in the client's death once the exec it ran has
# ended in the lane's events; an owned lane would be destroying by then.
exec_ended() { ctl events "$L2" | grep -Eq 'exec +sleep.*the client disconnected'; }
check "--keep: the daemon saw the client go (its exec ended)" wait_for "$(bw 20 1)" exec_ended
check_eq "--keep: the client's death keeps the lane" ready "$(lane_state "$L2")"
check_nomatch "and nothing asked for its destruction" 'destroy' "$(ctl events "$L2")"
ctl rm "$L" "$L2" >/dev/null

# ---- A restart finds the owner gone ----------------------------------------
PREV=$(newest)
"$LANECTL" --socket "$SOCK" run -- sleep 60 2>/dev/null &
P=$!
L=$(wait_new "$PREV")
wait_for "$(bw 20 1)" state_is "$L" ready
wait_for "$(bw 20 1)" runs_sleep60 "$L"
kill9_daemon
kill -KILL $P 2>/dev/null
wait $P 2>/dev/null
start_daemon || exit 1
check "an owned lane whose owner is gone is destroyed at start-up" wait_for "$(bw 20 1)" state_is "$L" destroyed
check_match "the audit trail says why" "owner" "$(ctl events "$L" | grep -i destroy)"

# ---- A lane from the warm pool is owned just the same ------------------------
stop_daemon
start_daemon --pool-size 1 --pool-max-boots 1 || exit 1
pooled() { ctl ls -q --all --filter state=pooled 2>/dev/null; }
booted() { [ -n "$(pooled)" ] && [ -n "$(ctl show --json "$(pooled)" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workspace"])')" ]; }
wait_for "$(bw 20 1)" booted
P0=$(pooled)
"$LANECTL" --socket "$SOCK" run --name pooled-run -- sleep 60 2>/dev/null &
P=$!
check "run takes the booted pool lane" wait_for "$(bw 20 1)" state_is "$P0" ready
check_eq "with its alias" "$P0" "$(ctl show --json pooled-run 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])')"
kill -KILL $P
wait $P 2>/dev/null
check "SIGKILL of run: the pool lane it took is destroyed" wait_for "$(bw 20 1)" state_is "$P0" destroyed
finish
