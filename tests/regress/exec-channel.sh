#!/usr/bin/env bash
# The lane's exec channel: every exec of a lane runs over one limactl shell
# and one guest helper. Concurrent execs never see each other's bytes (each
# gets exactly its own stdin back, and its own exit code); one whose client
# does not read stalls no other and holds bounded memory; a channel that
# dies fails the execs in flight with a typed error at once (never a hang)
# and is replaced by the next exec.
. "$(dirname "$0")/lib.sh"

# Every limactl call, to count the shells opened (the tier's limactl keeps
# the same log on real Lima).
export LIMA_SIM_LOG=$T/sim.log
start_daemon || exit 1
L=$(ctl create --timeout "$(life 600)")

# The limactl shell processes of this daemon (found by its LIMA_HOME).
shell_pids() {
	local p
	for p in $(pgrep -f 'limactl --tty=false shell' 2>/dev/null); do
		if { tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null |
		    grep -qx "LIMA_HOME=$STATE/lima"; then
			echo "$p"
		fi
	done
}
nshells() { shell_pids | wc -l; }
# in_guest CMD...: CMD where the lane's processes are visible. The
# simulator's guests are host processes; a real guest's are inside its VM,
# reached by a limactl shell of its own (not the lane's channel).
in_guest() {
	if [ "$VM" = 1 ]; then
		sim shell --workdir=/ "$L" -- "$@" </dev/null
	else
		"$@"
	fi
}

check_eq "a first exec runs" ok "$(ctl exec -n "$L" -- echo ok)"
check_eq "it opened one limactl shell for the lane" 1 "$(nshells)"
CH=$(shell_pids)
for i in 1 2 3 4 5; do ctl exec -n "$L" -- true; done
check_eq "later execs reuse it" "$CH" "$(shell_pids)"

# An idle channel keeps a spare: the next exec's helper, forked (with its
# keeper) ahead, so that an exec pays neither fork (docs/performance.md).
# Seen from the guest (its pid namespace on both tiers), as $PPID is.
spares() { sim shell --workdir=/ "$L" -- pgrep -x agent-lane-spar </dev/null; }
two_spares() { [ "$(spares | wc -l)" = 2 ]; }
check "an idle channel has a spare helper and its keeper" wait_for 10 two_spares
S=$(spares)
PARENT=$(ctl exec -n "$L" -- sh -c 'echo $PPID')
check_match "the next exec runs in the spare" "^$PARENT\$" "$S"
check "and a new spare is made" wait_for 10 two_spares
check_nomatch "not the one just used" "^$PARENT\$" "$(spares)"

# Copies in and out run on the channel too: a small copy pays no limactl
# shell, ssh session or login shell of its own (docs/performance.md).
shells() { grep -c ' shell ' "$LIMA_SIM_LOG"; }
n0=$(shells)
echo small > "$T/small"
ctl cp "$T/small" "$L:/tmp/small" && ctl cp "$L:/tmp/small" "$T/small.back"
check_eq "a copy in and out: the file came back" small "$(cat "$T/small.back")"
check_eq "copies opened no limactl shell of their own" "$n0" "$(shells)"
check_eq "and left the channel as it was" "$CH" "$(shell_pids)"

# Six execs at once, each with its own 3 MiB of random stdin that it sends
# back on stdout (and a marker on stderr), and its own exit code.
N=6
for i in $(seq 1 $N); do
	head -c $((3 * 1048576 + i * 4099)) /dev/urandom > "$T/in.$i"
done
for i in $(seq 1 $N); do
	"$LANECTL" --socket "$SOCK" exec "$L" -- sh -c \
	    "cat; echo marker-$i >&2; exit $((20 + i))" \
	    < "$T/in.$i" > "$T/out.$i" 2> "$T/err.$i" &
	eval "P$i=\$!"
done
same=0 codes=0 errs=0
for i in $(seq 1 $N); do
	eval "wait \$P$i"; rc=$?
	[ "$rc" = $((20 + i)) ] && codes=$((codes + 1))
	cmp -s "$T/in.$i" "$T/out.$i" && same=$((same + 1))
	[ "$(cat "$T/err.$i")" = "marker-$i" ] && errs=$((errs + 1))
done
check_eq "concurrent execs: each got exactly its own bytes back" $N "$same"
check_eq "each its own stderr" $N "$errs"
check_eq "each its own exit code" $N "$codes"
check_eq "all over the one channel" "$CH" "$(shell_pids)"

# The same with clients that read slowly: the daemon pauses each exec's
# output, so an exec's last frames (input acks among them) often wait
# unparsed in it when its helper's stream ends. Those acks are no error
# (tests/unit/test_gexec.c has the exact order; here about one exec in
# five failed without it).
slow_read() {
	python3 -c 'import os, time
while True:
    d = os.read(0, 16384)
    if not d: break
    os.write(1, d)
    time.sleep(0.004)'
}
for i in $(seq 1 $N); do
	{ "$LANECTL" --socket "$SOCK" exec "$L" -- sh -c \
	    "cat; echo marker-$i >&2; exit $((20 + i))" \
	    < "$T/in.$i" 2> "$T/err.$i" | slow_read > "$T/out.$i"
	  echo "${PIPESTATUS[0]}" > "$T/rc.$i"; } &
	eval "P$i=\$!"
done
same=0 codes=0
for i in $(seq 1 $N); do
	eval "wait \$P$i"
	[ "$(cat "$T/rc.$i")" = $((20 + i)) ] && codes=$((codes + 1))
	cmp -s "$T/in.$i" "$T/out.$i" && same=$((same + 1))
done
check_eq "slow clients: each got its own bytes back" $N "$same"
check_eq "and its own exit code" $N "$codes"

# Distinct large outputs with no stdin, at once, checked byte for byte.
for i in 1 2 3; do
	"$LANECTL" --socket "$SOCK" exec -n "$L" -- sh -c \
	    "i=0; while [ \$i -lt 40000 ]; do echo exec-$i-line-\$i; i=\$((i + 1)); done" \
	    > "$T/big.$i" &
	eval "B$i=\$!"
done
okbig=0
for i in 1 2 3; do
	eval "wait \$B$i"
	[ "$(sort -u "$T/big.$i" | sed 's/-line-.*//' | uniq)" = "exec-$i" ] &&
	    [ "$(wc -l < "$T/big.$i")" = 40000 ] &&
	    [ "$(tail -1 "$T/big.$i")" = "exec-$i-line-39999" ] && okbig=$((okbig + 1))
done
check_eq "concurrent large outputs arrive whole and unmixed" 3 "$okbig"

# An exec whose client never reads: its output window fills and it waits,
# while other execs on the channel go on.
mkfifo "$T/fifo"
"$LANECTL" --socket "$SOCK" exec -n "$L" -- yes channel-stall > "$T/fifo" &
STALL=$!
exec 7<"$T/fifo"	# opened, never read
# The stall has settled: its output has reached the fifo, and none of it
# moves any more (the daemon used no CPU for a look of 0.2 s).
in_fifo() {
	python3 -c 'import fcntl, struct, termios
exit(struct.unpack("i", fcntl.ioctl(7, termios.FIONREAD, b"\0\0\0\0"))[0] == 0)'
}
daemon_cpu() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; }
stalled() {
	local cpu
	in_fifo || return 1
	cpu=$(daemon_cpu)
	sleep 0.2
	[ "$(daemon_cpu)" = "$cpu" ]
}
check "the exec waits (its output stops moving)" wait_for 20 stalled
RSS0=$(awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON_PID/status")
t0=$(date +%s%N)
OUT=$(ctl exec -n "$L" -- echo still)
t1=$(date +%s%N)
check_eq "an exec runs while another's client does not read" still "$OUT"
check "and promptly ($(( (t1 - t0) / 1000000 )) ms)" test $(( (t1 - t0) / 1000000 )) -lt 3000
# A window for the negative check: a daemon that kept reading the stalled
# exec's output would grow meanwhile.
sleep 1
RSS1=$(awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON_PID/status")
check "the daemon's memory stays bounded (${RSS0} -> ${RSS1} KiB)" \
    test "$RSS1" -lt $((RSS0 + 16384))
kill "$STALL"; wait "$STALL" 2>/dev/null
exec 7<&-
stall_gone() { ! in_guest pgrep -f '^yes channel-stall$' >/dev/null; }
check "its guest command is killed with its client" wait_for "$(tw 3)" stall_gone

# The channel dies under an exec in flight: a typed error at once, and the
# guest command is gone.
NAP=$((300000 + RANDOM))
guest_sleep() { in_guest pgrep -fx "sleep $NAP" >/dev/null; }
"$LANECTL" --socket "$SOCK" exec -n "$L" -- sleep "$NAP" >/dev/null 2>"$T/dead.err" &
CLI=$!
check "an exec runs" wait_for "$(tw 5)" guest_sleep
kill -KILL $(shell_pids)
cli_done() { ! kill -0 "$CLI" 2>/dev/null; }
check "when its channel dies the exec ends at once" wait_for 5 cli_done
# A client that did not end is ended here, so the checks below fail
# instead of the suite hanging (it is a zombie if it did end).
kill -KILL "$CLI" 2>/dev/null; wait "$CLI"; RC=$?
check_eq "with exit 125" 125 "$RC"
check_match "and UNAVAILABLE" 'UNAVAILABLE' "$(cat "$T/dead.err")"
check_match "saying the channel ended" 'exec channel' "$(cat "$T/dead.err")"
no_guest() { ! guest_sleep; }
check "its guest command is killed" wait_for "$(tw 3)" no_guest
check_eq "the next exec opens a new channel" ok "$(ctl exec -n "$L" -- echo ok)"
check_nomatch "a new limactl shell" "^$CH\$" "$(shell_pids)"
check_eq "one again" 1 "$(nshells)"

# The same when the channel's helper in the guest dies.
"$LANECTL" --socket "$SOCK" exec -n "$L" -- sleep "$NAP" >/dev/null 2>"$T/dead2.err" &
CLI=$!
check "another exec runs" wait_for "$(tw 5)" guest_sleep
# Every helper process at once (the channel's and the exec's), as the OOM
# killer or the agent itself might: inside the guest on both tiers, so no
# surviving helper can clean up after the others.
check "the guest's helpers are killed" sim shell --workdir=/ "$L" -- \
    pkill -KILL -x perl </dev/null
check "when the guest helper dies the exec ends at once" wait_for 5 cli_done
# A client that did not end is ended here, so the checks below fail
# instead of the suite hanging (it is a zombie if it did end).
kill -KILL "$CLI" 2>/dev/null; wait "$CLI"; RC=$?
check_eq "with exit 125" 125 "$RC"
check_match "and UNAVAILABLE" 'UNAVAILABLE' "$(cat "$T/dead2.err")"
check "its guest command is killed" wait_for "$(tw 3)" no_guest
check_eq "the lane still runs execs" ok "$(ctl exec -n "$L" -- echo ok)"

# The keeper that did that ends with its exec when the helper ends on its
# own, and spares what a command leaves running in the background.
BG=$((400000 + RANDOM))
check "an exec that leaves a background job ends" \
    ctl exec -n "$L" -- sh -c "sleep $BG </dev/null >/dev/null 2>&1 &"
no_keeper() { ! sim shell --workdir=/ "$L" -- pgrep -x agent-lane-keep </dev/null >/dev/null; }
check "no keeper outlives its exec" wait_for "$(tw 3)" no_keeper
check "its background job goes on" in_guest pgrep -fx "sleep $BG"
in_guest pkill -fx "sleep $BG"
check_eq "the lane is ready" ready "$(lane_state "$L")"

# rm closes the channel with the lane.
ctl rm "$L" >/dev/null
no_shells() { [ "$(nshells)" = 0 ]; }
check "rm closes the lane's channel" wait_for 5 no_shells
