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

# Runs `agent-lanectl create ARGS...` on a terminal of its own and sends it
# SIGINT (^C) the moment its progress names the lane, so that the client
# knows which lane it began; prints what it wrote, then "status=N".
interrupt_create() {
	python3 - "$LANECTL" "$SOCK" "$@" <<'PY'
import os, pty, select, signal, sys, time
lanectl, sock, args = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "vt100"
    os.execv(lanectl, [lanectl, "--socket", sock, "create"] + args)
out, sent, end = b"", False, time.time() + 30
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
    if not sent and b"registered - al-" in out:
        os.kill(pid, signal.SIGINT)
        sent = True
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace").replace("\r", "\n"))
print("\nstatus=%d" % (128 + os.WTERMSIG(st) if os.WIFSIGNALED(st)
    else os.WEXITSTATUS(st)))
PY
}
named() { printf '%s\n' "$1" | grep -Eo 'registered - al-[0-9a-f]{16}' | head -1 | cut -d' ' -f3; }

# ---- ^C --------------------------------------------------------------------
OUT=$(interrupt_create)
L=$(named "$OUT")
check_eq "^C: create dies of SIGINT (130)" status=130 "$(printf '%s\n' "$OUT" | tail -1)"
check_match "and says the lane is being destroyed" "create interrupted; lane $L is being destroyed" "$OUT"
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
OUT=$(interrupt_create -d)
L4=$(named "$OUT")
check_match "^C with --detach says the lane carries on" "lane $L4 carries on" "$OUT"
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
# ---- A half-made instance directory (issue 18) --------------------------------
# LIMA_SIM_STALL holds limactl create right after it made the instance
# directory, before lima.yaml: the window in which limactl delete refuses
# the directory ("NOT deleted, in case it is currently being cloned into").
# Killing the create there used to leave a lane destroying for ever.
export LIMA_SIM_LOG=$T/sim.log
halfmade() { [ -d "$(instance_dir "$1")" ] && [ ! -e "$(instance_dir "$1")/lima.yaml" ]; }
calls() { grep -c " $1 .*$2\$" "$LIMA_SIM_LOG"; }
newest() { sqlite3 "$STATE/registry.db" 'SELECT name FROM lanes ORDER BY created_at_ms DESC, rowid DESC LIMIT 1'; }

# The creator dies in the window: the create is let finish, then deleted.
LIMA_SIM_STALL=create LIMA_SIM_STALL_MS=1500 start_daemon || exit 1
"$LANECTL" --socket "$SOCK" create 2>/dev/null &
P=$!
wait_for 10 sh -c "[ -n \"\$(sqlite3 '$STATE/registry.db' \"SELECT name FROM lanes WHERE state = 'creating'\")\" ]"
L=$(newest)
check "the create stalls with its directory half-made" wait_for 10 halfmade "$L"
kill -KILL $P
wait $P 2>/dev/null
check "a creator that died in that window has its lane destroyed" \
    wait_for 20 state_is "$L" destroyed
check "with no instance directory left" test ! -e "$(instance_dir "$L")"
check_eq "the create ran to its end: one limactl delete did it" 1 "$(calls delete "$L")"
check_nomatch "no limactl delete was refused (the create was let finish)" 'destroy-failed' "$(ctl events "$L")"
stop_daemon

# The create hangs in the window until its timeout kills it: limactl delete
# refuses what it left, and agent-laned removes the directory itself.
LIMA_SIM_STALL=create start_daemon --command-timeout 2s || exit 1
OUT=$(ctl create 2>&1); RC=$?
L=$(newest)
check_eq "a create killed by its timeout fails" 1 "$RC"
check_match "with DEADLINE_EXCEEDED" 'DEADLINE_EXCEEDED' "$OUT"
check "the lane ends failed" wait_for 20 state_is "$L" failed
check "and its half-made directory is gone" test ! -e "$(instance_dir "$L")"
check_match "removed by agent-laned, in the audit trail" 'vm-dir-removed' "$(ctl events "$L")"
check "limactl delete was not retried for ever ($(calls delete "$L") calls)" test "$(calls delete "$L")" -le 2
stop_daemon

# An image build cancelled in the same window: no row, no instance left.
printf '#!/bin/sh\ntrue\n' > "$T/prov.sh"
LIMA_SIM_STALL=create LIMA_SIM_STALL_MS=1500 start_daemon || exit 1
"$LANECTL" --socket "$SOCK" image build stall --provision "$T/prov.sh" >/dev/null 2>&1 &
P=$!
I=""
wait_for 10 sh -c "[ -n \"\$(sqlite3 '$STATE/registry.db' 'SELECT instance FROM images')\" ]"
I=$(sqlite3 "$STATE/registry.db" 'SELECT instance FROM images')
check "the build's create stalls with its directory half-made" wait_for 10 halfmade "$I"
kill -KILL $P
wait $P 2>/dev/null
gone_image() { [ -z "$(sqlite3 "$STATE/registry.db" 'SELECT name FROM images')" ] && [ ! -e "$(instance_dir "$I")" ]; }
check "a cancelled build leaves neither its row nor its instance" wait_for 20 gone_image
check_eq "its create ran to its end: one limactl delete did it" 1 "$(calls delete "$I")"
stop_daemon
finish
