#!/usr/bin/env bash
# Pool lanes are handed over warm: a pool lane's exec channel is open (its
# guest helper started, its workspace made) before a create takes it, so
# the first exec opens no limactl shell. A channel that dies while the
# lane waits in the pool is reopened before hand-over, and the lane's
# events say so; a lane whose channel cannot be reopened is destroyed,
# never handed over, and the pool boots another (a create that took the
# lane while its channel reopened waits for it, and fails if it cannot).
. "$(dirname "$0")/lib.sh"

export LIMA_SIM_LOG=$T/sim.log
export LIMA_SIM_BOOT_MS=200

pooled() {
	ctl ls --all --json | python3 -c '
import json, sys
for l in json.load(sys.stdin):
    if l["state"] == "pooled" and l["workspace"]:
        print(l["name"])'
}
have_pooled() { [ -n "$(pooled)" ]; }
# The live limactl shells of lane $1 (this daemon's, by its LIMA_HOME).
shell_pids() {
	local p
	for p in $(pgrep -f "limactl --tty=false shell .*$1 " 2>/dev/null); do
		if { tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null |
		    grep -qx "LIMA_HOME=$STATE/lima"; then
			echo "$p"
		fi
	done
}
# The limactl shell calls for lane $1, in the simulator's call log.
shells_of() { grep -c "shell.* $1 " "$LIMA_SIM_LOG"; }
events_match() { ctl events "$1" 2>/dev/null | grep -q "$2"; }

start_daemon --pool-size 1 || exit 1
wait_for "$(bw 20 1)" have_pooled
P=$(pooled)
check "a lane boots for the pool" test -n "$P"

# ---- Warm: the channel is open before the take
CH=$(shell_pids "$P")
check_eq "the pool lane waits with one limactl shell open: its channel" 1 \
    "$(echo "$CH" | grep -c .)"
check_match "it is the exec channel (the helper's mux mode)" ' mux$' \
    "$(tr '\0' ' ' < "/proc/$CH/cmdline" | sed 's/ *$//')"

# ---- A channel that dies in the pool is reopened before hand-over
kill -KILL "$CH"
reopened() { events_match "$P" 'channel.*reopened'; }
check "the channel killed in the pool is reopened" wait_for 10 reopened
check_match "the lane's events say it died and why" \
    'channel +died in the warm pool \(lost the guest' "$(ctl events "$P")"
CH2=$(shell_pids "$P")
check_eq "one limactl shell again" 1 "$(echo "$CH2" | grep -c .)"
check_nomatch "a new one" "^$CH\$" "$CH2"
check_eq "the lane is still pooled" pooled "$(lane_state "$P")"

N=$(shells_of "$P")
L=$(ctl create --timeout "$(life 600)")
check_eq "a create takes it" "$P" "$L"
check_eq "exec works in it at once" hi "$(ctl exec "$L" -- echo hi)"
check_eq "its first exec opened no limactl shell: the channel was open" \
    "$N" "$(shells_of "$L")"
check_eq "and ran on that channel" "$CH2" "$(shell_pids "$L")"
ctl rm "$L" >/dev/null
stop_daemon

# ---- A channel that cannot be reopened: the lane is never handed over
# Shell call 1 is the pool lane's setup (its channel: the simulator's
# guests have no network to check); call 2, the reopening, fails.
LIMA_SIM_FAIL=shell:2 start_daemon --pool-size 1 || exit 1
wait_for "$(bw 20 1)" have_pooled
B=$(pooled)
check "a lane boots for the pool" test -n "$B"
kill -KILL $(shell_pids "$B")
gone() { state=$(lane_state "$B"); [ "$state" = destroyed ]; }
check "a pool lane whose channel cannot be reopened is destroyed" \
    wait_for 10 gone
check_match "its events say why" 'channel +could not be reopened: ' \
    "$(ctl events "$B")"
other() { have_pooled && [ "$(pooled)" != "$B" ]; }
check "the pool boots another" wait_for "$(bw 20 1)" other
L=$(ctl create --timeout "$(life 600)")
check_nomatch "a create never gets the broken lane" "^$B\$" "$L"
check_eq "exec works in the lane it gets" hi "$(ctl exec "$L" -- echo hi)"
ctl rm "$L" >/dev/null
stop_daemon

# ---- A create that takes a lane while its channel reopens waits for it
# The reopening (shell call 2) hangs until the command timeout: the
# create that took the lane meanwhile is answered then, with why, and
# never gets the lane without a channel.
printf 'command_timeout = 2s\n' > "$T/laned.conf"
LIMA_SIM_HANG=shell:2 start_daemon --config "$T/laned.conf" --pool-size 1 || exit 1
wait_for "$(bw 20 1)" have_pooled
W=$(pooled)
kill -KILL $(shell_pids "$W")
reopening() { events_match "$W" 'channel.*reopening'; }
check "the channel killed in the pool starts reopening" wait_for 10 reopening
OUT=$(ctl create --timeout "$(life 600)" 2>&1); RC=$?
check_eq "the create that took it while it reopened fails" 1 "$([ "$RC" != 0 ] && echo 1)"
check_match "saying its channel could not be reopened" \
    "exec channel could not be reopened" "$OUT"
check_nomatch "it printed no lane" "^$W\$" "$OUT"
stop_daemon

finish
