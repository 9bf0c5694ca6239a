#!/usr/bin/env bash
# info and stats (issue 19, items 5 and 6) against the limactl simulator:
# what the daemon says of itself (versions, limactl, network policies,
# caps, pool, lanes, images, disk), and what each lane's guest reports,
# read strictly through its exec channel, streamed and once, refreshed at
# a terminal, and never counted as lane activity. Under the simulator the
# guest shares the host's kernel: CPU, memory and disk are the host's,
# processes and uptime the sandbox's, and the checks say which is which.
. "$(dirname "$0")/lib.sh"

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

start_daemon --max-lanes 5 --max-cpus 6 --default-memory 1G --max-images 7 \
    --pool-size 1 || exit 1
ctl info >"$T/info.txt" 2>&1
check_match "info prints the daemon's version" '^ Version: +0\.1\.0 \(protocol 1\)' \
    "$(sed -n '/^Daemon:/,$p' "$T/info.txt")"
I=$(ctl info --json)
check_eq "info --json: version, protocol, pid" "0.1.0 1 $DAEMON_PID" \
    "$(printf '%s' "$I" | json '"%s %s %s" % (d["daemon"]["version"], d["daemon"]["protocol"], d["daemon"]["pid"])')"
check_eq "its state directory and socket" "$STATE $SOCK" \
    "$(printf '%s' "$I" | json 'd["daemon"]["state_dir"] + " " + d["daemon"]["socket"]')"
check_match "its uptime" '^[0-9]+$' "$(printf '%s' "$I" | json 'd["daemon"]["uptime_ms"]')"
check_eq "limactl: the program, its version and the lanes' driver" "$SIM 2.2.0 qemu" \
    "$(printf '%s' "$I" | json '"%s %s %s" % (d["limactl"]["path"], d["limactl"]["version"], d["limactl"]["driver"])')"
check_eq "network policies cannot be enforced under the simulator" False \
    "$(printf '%s' "$I" | json 'd["network"]["enforceable"]')"
check_match "and info says why" 'simulator' "$(printf '%s' "$I" | json 'd["network"]["note"]')"
check_eq "caps as configured" "5 6 1024 7" \
    "$(printf '%s' "$I" | json '"%s %s %s %s" % (d["caps"]["max_lanes"], d["caps"]["max_cpus"], d["caps"]["default_memory_mib"], d["caps"]["max_images"])')"
check_eq "the caps match the hello's" \
    "$(ctl info --json | json 'd["caps"]["max_frame_bytes"]')" 1048576
check_eq "the client side: no context, the local socket" "default unix://$SOCK" \
    "$(printf '%s' "$I" | json 'd["client"]["context"] + " " + d["client"]["host"]')"
pool_full() { [ "$(ctl info --json | json 'd["pool"]["state"]')" = full ]; }
check "the pool fills (info: full)" wait_for 20 pool_full
check_eq "pool: size and ready" "1 1 0" \
    "$(ctl info --json | json '"%s %s %s" % (d["pool"]["size"], d["pool"]["ready"], d["pool"]["booting"])')"
check_match "the pool's lane takes disk" '^[1-9]' "$(ctl info --json | json 'd["lanes"]["disk_bytes"]')"
check_eq "but is not a live lane" 0 "$(ctl info --json | json 'd["lanes"]["live"]')"
# Not the pool's shape: a lane booted for this create, so that its age is
# its guest's.
L=$(ctl create -q --memory 2G --timeout 10m)
check_eq "info counts a lane" "1 1" "$(ctl info --json | json '"%s %s" % (d["lanes"]["live"], d["lanes"]["ready"])')"
check_match "and the disk free where they are" '^[1-9]' "$(ctl info --json | json 'd["disk_free_bytes"]')"
if [ "$(id -u)" -eq 0 ]; then
	printf '#!/bin/sh\ntrue\n' >"$T/p.sh"
	ctl image build im --provision "$T/p.sh" >/dev/null 2>&1
	check_eq "info counts images and their disk" "1 True" \
	    "$(ctl info --json | json '"%s %s" % (d["images"]["count"], d["images"]["disk_bytes"] > 0)')"
	ctl image rm im >/dev/null
else
	ok "# SKIP images: not root, and the unprivileged simulator has no guest root to provision with"
fi

# ---- stats ----------------------------------------------------------------------
S=$(ctl stats --no-stream --json "$L")
check_eq "stats --no-stream --json: one sample of the lane" "1 $L ready" \
    "$(printf '%s' "$S" | json '"%s %s %s" % (len(d["lanes"]), d["lanes"][0]["name"], d["lanes"][0]["state"])')"
row() { printf '%s' "$S" | json "d['lanes'][0]['$1']"; }
check_eq "memory against the lane's own limit" 2147483648 "$(row memory_limit_bytes)"
check_eq "disk against the lane's size" $((30 << 30)) "$(row disk_limit_bytes)"
check_match "CPU measured between two samples" '^[0-9.]+$' "$(row cpu_percent)"
HOST_MEM=$(( $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024 ))
check_eq "the simulator's guest shares the host's kernel: its memory total is the host's" \
    "$HOST_MEM" "$(row memory_total_bytes)"
HOST_PROCS=$(ls -d /proc/[0-9]* | wc -l)
P=$(row processes)
check "but processes are the sandbox's own (a PID namespace): a few, not the host's $HOST_PROCS" \
    test "$P" -ge 1 -a "$P" -lt "$HOST_PROCS"
AGE=$(( $(date +%s%3N) - $(ctl show --json "$L" | json 'd["created_at_ms"]') ))
UP=$(row uptime_ms)
check "and uptime is its init's: positive, no longer than the lane has lived ($UP <= $AGE ms)" \
    test "$UP" -gt 0 -a "$UP" -le "$AGE"
L2=$(ctl create -q --timeout 10m)
check_eq "without LANE: every live lane (the pool's aside)" 2 \
    "$(ctl stats --no-stream --json | json 'len(d["lanes"])')"
check_eq "by alias or prefix too" "$L2" \
    "$(ctl stats --no-stream --json "${L2:3:6}" | json 'd["lanes"][0]["name"]')"
OUT=$(ctl stats --no-stream al-0000000000000000 2>&1); RC=$?
check_match "a lane no one has: NOT_FOUND" 'NOT_FOUND' "$OUT"
check_eq "exit 1" 1 "$RC"
ctl rm "$L2" >/dev/null
check_match "an ended lane: a row saying so, not figures" '"code": ?"NOT_FOUND"' \
    "$(ctl stats --no-stream --json "$L2")"
OUT=$(ctl stats --no-stream "$L")
check_match "the table" "^NAME +ALIAS +CPU % +MEM USAGE / LIMIT +MEM % +DISK USED / SIZE +PIDS +UPTIME" "$OUT"
check_match "its row: memory of 2GiB" "$L +- +[0-9.]+% +[0-9.]+[KMG]iB / 2GiB" "$OUT"
# A stream: a sample a second, until the reader goes.
ctl stats --json "$L" 2>/dev/null | head -n 3 >"$T/stream"
check_eq "a stream: one object a sample" 3 "$(wc -l <"$T/stream")"
check "samples a second apart or more" python3 -c '
import json, sys
t = [json.loads(l)["time_ms"] for l in open(sys.argv[1])]
sys.exit(0 if all(b - a >= 900 for a, b in zip(t, t[1:])) else 1)' "$T/stream"
# At a terminal the table is redrawn in place; ^C ends it.
OUT=$(python3 - "$LANECTL" "$SOCK" "$L" <<'PY'
import os, pty, select, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "--socket", sys.argv[2], "stats", sys.argv[3]])
out, end = b"", time.time() + 30
lane = sys.argv[3].encode()
while (out.count(b"\x1b[H\x1b[2J") < 2 or out.count(lane) < 2) and time.time() < end:
    if select.select([fd], [], [], 0.2)[0]:
        try:
            out += os.read(fd, 65536)
        except OSError:
            break
os.kill(pid, signal.SIGINT)
_, st = os.waitpid(pid, 0)
print(out.count(b"\x1b[H\x1b[2J") >= 2, out.count(sys.argv[3].encode()) >= 2,
      os.waitstatus_to_exitcode(st))
PY
)
check_eq "at a terminal: redrawn in place each sample; ^C ends it" "True True -2" "$OUT"

# ---- stats is not activity ------------------------------------------------------
IL=$(ctl create -q --idle-timeout 3s --timeout 10m)
ctl stats --json "$IL" >"$T/idle.stats" 2>&1 &
SPID=$!
timeout 60 "$LANECTL" --socket "$SOCK" events -f "$IL" >"$T/idle.events" 2>&1
check_match "a lane watched by stats still ends when idle" 'idle' "$(grep -i destroy "$T/idle.events")"
# The stream samples once a second: its sample after the end may be a
# second behind the events.
said_ended() { tail -n 1 "$T/idle.stats" | grep -Eq '"code": ?"(NOT_FOUND|FAILED_PRECONDITION)"'; }
wait_for 20 said_ended
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
check_match "and stats said so" '"code": ?"(NOT_FOUND|FAILED_PRECONDITION)"' "$(tail -1 "$T/idle.stats")"

# ---- a hostile guest ----------------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
	H=$(ctl create -q --sudo --timeout 10m)
	# Guest root puts its own grep and df first on the guest's PATH.
	ctl exec "$H" -- sudo sh -c 'printf "#!/bin/sh\nhead -c 100000 /dev/zero | tr \"\\\\0\" 7\n" >/usr/local/bin/grep && chmod +x /usr/local/bin/grep'
	check_match "a guest that prints too much: TOO_LARGE for its lane" \
	    '"code": ?"TOO_LARGE".*4096 bytes' "$(ctl stats --no-stream --json "$H")"
	check_match "and the others' figures are still there" '"processes": ?[1-9]' \
	    "$(ctl stats --no-stream --json "$L" "$H")"
	ctl exec "$H" -- sudo sh -c 'rm /usr/local/bin/grep; printf "#!/bin/sh\necho h; echo \"f 10 20 x\"\n" >/usr/local/bin/df && chmod +x /usr/local/bin/df'
	check_match "a guest that lies: UNAVAILABLE, saying what did not hold" \
	    '"code": ?"UNAVAILABLE".*disk used above its size' "$(ctl stats --no-stream --json "$H")"
	# Figures that parse but that no lane can have: 65,536 CPUs (on a
	# host of a few: the simulator's limits are the host's), and a disk
	# of 2^55+7 KiB, which kib << 10 wrapped to 7168 bytes.
	ctl exec "$H" -- sudo sh -c 'printf "#!/bin/sh\necho 65536\n" >/usr/local/bin/grep && chmod +x /usr/local/bin/grep; printf "#!/bin/sh\necho h; echo \"f 36028797018963975 7 x\"\n" >/usr/local/bin/df && chmod +x /usr/local/bin/df'
	S=$(ctl stats --no-stream --json "$H")
	check_eq "a guest claiming 65536 CPUs and a 2^55+7 KiB disk: those figures are unknown (null), not wrapped" \
	    "None None None None" \
	    "$(printf '%s' "$S" | json '" ".join(str(d["lanes"][0][k]) for k in ("cpus", "cpu_percent", "disk_used_bytes", "disk_total_bytes"))')"
	check_eq "its other figures are still there" "None True True" \
	    "$(printf '%s' "$S" | json '"%s %s %s" % (d["lanes"][0]["error"], d["lanes"][0]["memory_total_bytes"] > 0, d["lanes"][0]["processes"] > 0)')"
	check_match "the table shows them as --" "^$H +- +-- +[0-9.]+[KMG]iB / [0-9.]+GiB +[0-9.]+% +-- +[1-9]" \
	    "$(ctl stats --no-stream "$H")"
	check_eq "the daemon logged the refusal once for the lane, over several samples" 1 \
	    "$(grep -c "lane $H: stats refused" "$LOG")"
	check_match "saying what the guest claimed, in numbers" "65536 CPUs, the lane has [0-9]+; a disk of 36028797018963975 KiB" \
	    "$(grep "lane $H: stats refused" "$LOG")"
	ctl exec "$H" -- sudo rm /usr/local/bin/df /usr/local/bin/grep
	check_match "once it stops, its figures are back" '"processes": ?[1-9]' \
	    "$(ctl stats --no-stream --json "$H")"
	check_eq "all of them" "True True" \
	    "$(ctl stats --no-stream --json "$H" | json '"%s %s" % (d["lanes"][0]["cpus"] > 0, d["lanes"][0]["disk_total_bytes"] > 0)')"
	check "the daemon is still there" kill -0 "$DAEMON_PID"
	ctl rm "$H" >/dev/null
else
	ok "# SKIP a hostile guest: not root, and only guest root (the simulator's, as root) can replace the guest's tools"
fi
ctl rm "$L" >/dev/null

# ---- a limactl that cannot be run --------------------------------------------------
stop_daemon
START_ARGS=
"$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl /bin/false --tick 1s \
    >>"$LOG" 2>&1 &
DAEMON_PID=$!
wait_for 10 ctl version >/dev/null 2>&1
I=$(ctl info --json)
check_eq "limactl that fails: no version" "" "$(printf '%s' "$I" | json 'd["limactl"]["version"]')"
check_match "and info says what failed" 'limactl --version failed' \
    "$(printf '%s' "$I" | json 'd["limactl"]["error"] + d["network"]["note"]')"
finish
