#!/usr/bin/env bash
# Interrupting create (issue 11): ^C during create cancels it, the daemon
# destroys the lane and the client says so; a client that dies before
# `ready` has its lane destroyed too; create --detach carries on without it.
export LIMA_SIM_BOOT_MS=3000	# a boot slow enough to interrupt
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
registered() { grep -Eo 'lane al-[0-9a-f]{16}: registered' "$LOG" | sed -n "${1}p" | cut -d' ' -f2 | tr -d :; }
have_registered() { test -n "$(registered "$1")"; }
state_is() { [ "$(lane_state "$1")" = "$2" ]; }

# ---- ^C --------------------------------------------------------------------
"$LANECTL" --socket "$SOCK" create 2>"$T/err1" &
P=$!
wait_for 10 have_registered 1
L=$(registered 1)
sleep 0.3
kill -INT $P
wait $P; RC=$?
check_eq "^C: create dies of SIGINT (130)" 130 "$RC"
check_match "and says the lane is being destroyed" "create interrupted; lane $L is being destroyed" "$(cat "$T/err1")"
check "the daemon destroys it" wait_for 20 state_is "$L" destroyed
check_match "the audit trail says why" "creating client disconnected" "$(ctl events "$L")"

# ---- The client dies -------------------------------------------------------
"$LANECTL" --socket "$SOCK" create 2>/dev/null &
P=$!
wait_for 10 have_registered 2
L=$(registered 2)
kill -KILL $P
wait $P 2>/dev/null
check "a create whose client died is destroyed" wait_for 20 state_is "$L" destroyed

# ---- --detach ----------------------------------------------------------------
"$LANECTL" --socket "$SOCK" create --detach 2>/dev/null &
P=$!
wait_for 10 have_registered 3
L=$(registered 3)
kill -KILL $P
wait $P 2>/dev/null
check "create --detach carries on without its client" wait_for 30 state_is "$L" ready
"$LANECTL" --socket "$SOCK" create -d 2>"$T/err4" &
P=$!
wait_for 10 have_registered 4
L4=$(registered 4)
sleep 0.3
kill -INT $P
wait $P
check_match "^C with --detach says the lane carries on" "lane $L4 carries on" "$(cat "$T/err4")"
check "and it does" wait_for 30 state_is "$L4" ready
ctl rm "$L" "$L4" >/dev/null

# ---- A daemon stopping does not destroy what is being created ----------------
"$LANECTL" --socket "$SOCK" create 2>/dev/null &
P=$!
wait_for 10 have_registered 5
L=$(registered 5)
stop_daemon
wait $P 2>/dev/null
check_eq "shutdown is not a disconnect to act on" "" "$(grep "$L: its creator disconnected" "$LOG")"
finish
