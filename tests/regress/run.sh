#!/usr/bin/env bash
# run (issue 11): one command creates a lane, copies in, runs, copies out
# and destroys the lane, exiting with the command's status. The lane is
# bound to the run's connection: ^C, a failed copy or the client's death
# (SIGKILL: the daemon sees the connection go) destroy it, and so does a
# daemon restart that finds its owner gone; --keep keeps it.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
registered() { grep -Eo 'lane al-[0-9a-f]{16}: registered' "$LOG" | sed -n "${1}p" | cut -d' ' -f2 | tr -d :; }
have_registered() { test -n "$(registered "$1")"; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
no_live() { [ -z "$(ctl ls -q 2>/dev/null)" ]; }
nrun=0	# lanes registered so far (the daemon's log counts them)

# ---- Exit status ------------------------------------------------------------
OUT=$(ctl run -- sh -c 'echo out; echo err >&2; exit 7' 2>"$T/err"); RC=$?
nrun=$((nrun + 1))
check_eq "run exits with the command's status" 7 "$RC"
check_eq "its standard output is the command's" out "$OUT"
check_match "and so is its standard error" '^err$' "$(cat "$T/err")"
L=$(registered $nrun)
check_eq "the lane is destroyed when run ends" destroyed "$(lane_state "$L")"
check "no lane is left live" no_live
ctl run -- sh -c 'kill -TERM $$'; RC=$?
nrun=$((nrun + 1))
check_eq "a command killed by SIGTERM: 128+15, as exec" 143 "$RC"
check_eq "input reaches the command" "from stdin" "$(echo 'from stdin' | ctl run -- cat)"
nrun=$((nrun + 1))
ctl run --label job=42 --timeout 10m -- true; RC=$?
nrun=$((nrun + 1))
check_eq "create options are taken" 0 "$RC"
check_match "the label went on the lane" 'job.*42' "$(ctl show --json "$(registered $nrun)")"
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
nrun=$((nrun + 1))
check_eq "run with --cp and --out exits 0" 0 "$RC"
check_eq "the command ran" ran "$OUT"
check_eq "--out copies a file out" HELLO "$(cat "$T/outdir/up.txt" 2>/dev/null)"
check_eq "--out copies a directory out" "nested single" \
    "$(cat "$T/tree/b.txt" "$T/tree/one.txt" 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
check "and the lane is gone" no_live

# A failing copy still destroys the lane, and the command never runs.
OUT=$(ctl run --cp "$T/missing:x" -- sh -c 'echo should-not-run' 2>&1); RC=$?
nrun=$((nrun + 1))
check_eq "a failing copy-in fails run with 125" 125 "$RC"
check_nomatch "the command did not run" should-not-run "$OUT"
check_match "the error names the host path" "$T/missing" "$OUT"
L=$(registered $nrun)
check "the lane of a failed copy-in is destroyed" wait_for 20 state_is "$L" destroyed
OUT=$(ctl run --out "nothere:$T/nothere" -- true 2>&1); RC=$?
nrun=$((nrun + 1))
check_eq "a failing copy-out after a command that succeeded exits 125" 125 "$RC"
check "the lane of a failed copy-out is destroyed" wait_for 20 state_is "$(registered $nrun)" destroyed
OUT=$(ctl run --out "nothere:$T/nothere" -- sh -c 'exit 3' 2>&1); RC=$?
nrun=$((nrun + 1))
check_eq "after a failed command, run keeps the command's status" 3 "$RC"

# ---- ^C ----------------------------------------------------------------------
ctl run -- sleep 60 2>"$T/int.err" &
P=$!
nrun=$((nrun + 1))
wait_for 20 have_registered $nrun
L=$(registered $nrun)
wait_for 20 state_is "$L" ready
sleep 0.5
kill -INT $P
wait $P; RC=$?
check_eq "^C: run dies of SIGINT (130)" 130 "$RC"
check_match "and says the lane is being destroyed" "lane $L is being destroyed" "$(cat "$T/int.err")"
check "^C destroys the lane" wait_for 20 state_is "$L" destroyed

# ^C while the lane is still being created.
ctl run -- true 2>/dev/null &
P=$!
nrun=$((nrun + 1))
wait_for 20 have_registered $nrun
kill -INT $P
wait $P
L=$(registered $nrun)
check "^C during the create destroys the lane too" wait_for 20 state_is "$L" destroyed

# ---- The client dies: the daemon destroys the lane ---------------------------
ctl run -- sleep 60 &
P=$!
nrun=$((nrun + 1))
wait_for 20 have_registered $nrun
L=$(registered $nrun)
wait_for 20 state_is "$L" ready
sleep 0.5
kill -KILL $P
wait $P 2>/dev/null
check "SIGKILL of run: the daemon destroys its lane" wait_for 20 state_is "$L" destroyed
check_match "the audit trail says why" "owning client disconnected" "$(ctl events "$L")"

# ---- --keep ------------------------------------------------------------------
OUT=$(ctl run --keep -- sh -c 'echo kept > k.txt' 2>&1); RC=$?
nrun=$((nrun + 1))
L=$(registered $nrun)
check_eq "run --keep exits with the command's status" 0 "$RC"
check_match "and names the lane it kept" "$L" "$OUT"
check_eq "--keep keeps the lane" ready "$(lane_state "$L")"
check_eq "with what the command left" kept "$(ctl exec "$L" -- cat k.txt)"
ctl run --keep -- sleep 60 2>/dev/null &
P=$!
nrun=$((nrun + 1))
wait_for 20 have_registered $nrun
L2=$(registered $nrun)
wait_for 20 state_is "$L2" ready
sleep 0.5
kill -KILL $P
wait $P 2>/dev/null
sleep 1
check_eq "--keep: the client's death keeps the lane" ready "$(lane_state "$L2")"
ctl rm "$L" "$L2" >/dev/null

# ---- A restart finds the owner gone ----------------------------------------
ctl run -- sleep 60 2>/dev/null &
P=$!
nrun=$((nrun + 1))
wait_for 20 have_registered $nrun
L=$(registered $nrun)
wait_for 20 state_is "$L" ready
sleep 0.5
kill9_daemon
kill -KILL $P
wait $P 2>/dev/null
start_daemon || exit 1
check "an owned lane whose owner is gone is destroyed at start-up" wait_for 20 state_is "$L" destroyed
check_match "the audit trail says why" "owner" "$(ctl events "$L" | grep -i destroy)"
finish
