#!/usr/bin/env bash
# Secret values leave the daemon's memory, read as it is (memscan.py: every
# rw mapping through /proc/PID/mem, freed heap included), once their use is
# over:
#   - exec environment values, once sent to the guest: its own copies, the
#     unpacked request, the frame it came in, the buffer to limactl;
#   - a lane secret's value, once the lane is gone, after it went through
#     the proxy to a real (loopback) upstream that echoes it back, so that
#     it sat in every buffer a wipe covers: the lane's secret set
#     (secret_set_free), OpenSSL's record buffers (tls_wipe_on_free) and
#     libevent's chains (wipe_libevent_on_free). Twice: values in the
#     secure heap (secmem.h, the daemon's default), and in the ordinary
#     memory it falls back to (the test daemon's
#     AGENT_LANED_TEST_SECURE_HEAP=off), where only the wipes clear them.
# Removing any one of those three wipes fails this suite.
#
# The scan searches for pieces of a value (see pieces below), not the whole
# of it: the allocator writes its bookkeeping over parts of a freed block,
# which would hide an unwiped copy. Linux only; agent-laned is not
# dumpable, so reading its memory takes CAP_SYS_PTRACE (root).
. "$(dirname "$0")/lib.sh"

if [ ! -r /proc/self/mem ]; then
	echo "ok 1 # SKIP no /proc/PID/mem here"
	exit 0
fi

scan() { python3 "$(dirname "$0")/memscan.py" "$@"; }
# Long (4 KiB): a freed block's start is what the allocator reuses first,
# and the scan looks for the tail.
secret() { echo "zq$(head -c 2000 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
# pieces V: 32-byte pieces of V from its start to its tail, for the scan.
# Any one found means a copy was left; pieces, because the allocator
# writes its own bookkeeping over parts of a freed block (its first 16
# bytes, and the header of any block it splits off).
pieces() {
	local v=$1 o
	for o in $(seq 16 480 $(( ${#v} - 33 ))); do printf '%s\n' "${v:$o:32}"; done
	printf '%s\n' "${v: -32}"
}
copies() { scan "$1" $(pieces "$2"); }

start_daemon || exit 1
if ! daemon_proc_readable; then
	echo "ok 1 # SKIP $DAEMON_PROC_SKIP"
	exit 0
fi
L=$(ctl create)

# The scan works: the lane's name lives in the daemon's memory.
check "the scan finds what the daemon holds (the lane name)" \
    test "$(scan "$DAEMON_PID" "$L")" -ge 1

# Accepted execs: the value reaches the command, then leaves the daemon.
S=$(secret)
# The command compares a checksum: the value as an argument would be a
# copy the daemon has no reason to wipe (arguments are not secrets).
SUM=$(printf %s "$S" | cksum)
for i in 1 2 3; do
	ctl exec --env "TOKEN=$S" -n "$L" -- sh -c 'test "$(printf %s "$TOKEN" | cksum)" = "$1"' sh "$SUM"
	check_eq "exec $i sees the value" 0 $?
done
ctl exec --env "TOKEN=$S" -n "$L" -- sh -c 'exit 3'
check_eq "a failing command too" 3 $?
# A refused exec (relative workdir): the request carried the value all the same.
OUT=$(ctl exec --env "TOKEN=$S" --workdir rel -n "$L" -- true 2>&1)
OUT=$(ctl exec --env "TOKEN=$S" --env "BAD NAME=x" -n "$L" -- true 2>&1)
# Looked at once the daemon has closed their connections: only its
# listening socket is left at its address. Not asked by a call, which
# could write over a copy left in its memory.
conns_closed() { [ "$(awk -v p="$SOCK" '$8 == p' /proc/net/unix | wc -l)" = 1 ]; }
wait_for 20 conns_closed
check_eq "no copy of an exec value is left in the daemon" 0 "$(copies "$DAEMON_PID" "$S")"

ctl rm "$L" >/dev/null
stop_daemon

# ---- A lane secret through the proxy, to an upstream that echoes it ----
TESTD=$(dirname "$LANED")/tests/agent-laned-test
UP=$T/up
mkdir -p "$UP"
python3 "$(dirname "$0")/secret_upstream.py" "$UP" >"$T/up.ports" 2>"$T/up.err" &
UPID=$!
stop_upstream() { kill "$UPID" 2>/dev/null; wait "$UPID" 2>/dev/null; }
FINISH_HOOK=stop_upstream
wait_for 20 test -s "$T/up.ports"
read -r HTTPS_PORT HTTP_PORT <"$T/up.ports"
# Established TCP connections to the upstream's TLS port (any process).
up_conns() {
	awk -v p="$(printf ':%04X' "$HTTPS_PORT")" \
	    '$4 == "01" && substr($3, length($3) - 4) == p' /proc/net/tcp | wc -l
}
no_up_conns() { [ "$(up_conns)" = 0 ]; }

# proxy_pass MODE: one daemon, one lane, three requests, the lane removed,
# then the scans. MODE "secure" (the default daemon) or "plain" (no
# secure heap: ordinary memory).
proxy_pass() {
	local mode=$1 heap= V E EP PHE OUT LENS= i PAD
	# The value 8 KiB deep in the request's buffers as well.
	PAD=$(printf '%08192d' 0)
	[ "$mode" = plain ] && heap=off
	: >"$UP/seen"
	AGENT_LANED_TEST_SECURE_HEAP=$heap \
	    AGENT_LANED_TEST_RESOLVE="api.test=127.0.0.1" \
	    AGENT_LANED_TEST_TRUST=$UP/ca.pem LANED=$TESTD \
	    start_daemon --proxy-connect-ports "$HTTPS_PORT" || exit 1
	if [ "$mode" = plain ]; then
		check "$mode: the test daemon runs without a secure heap" \
		    grep -q 'no secure heap (AGENT_LANED_TEST_SECURE_HEAP=off)' "$LOG"
	else
		check "$mode: the daemon set its secure heap up, locked" \
		    grep -q 'secure heap: [0-9]* KiB, locked in memory' "$LOG"
	fi
	V=$(secret)
	# Fifteen more values that only the lane's secret set holds: one
	# freed block is soon reused, and an unwiped copy among fifteen
	# outlives that.
	local k XS=() XARGS=()
	for k in $(seq 1 15); do
		XS+=("$(secret)")
		XARGS+=(--secret "X$k@api.test")
	done
	E=$(for k in $(seq 1 15); do export "X$k=${XS[$((k - 1))]}"; done
	    TOKEN=$V ctl create --secret TOKEN@api.test "${XARGS[@]}")
	EP=$(ctl show --json "$E" | python3 -c 'import json,sys; print(json.load(sys.stdin)["proxy_port"])')
	PHE=$(ctl exec "$E" -- printenv TOKEN)
	sed -n '/BEGIN CERTIFICATE/,/END CERTIFICATE/p' "$(instance_dir "$E")/lima.yaml" |
	    sed 's/^    //' >"$T/laneca.pem"
	check "$mode: while the lane lives, the daemon holds the value" \
	    test "$(copies "$DAEMON_PID" "$V")" -ge 1
	check "$mode: and the other fifteen" \
	    test "$(scan "$DAEMON_PID" $(for k in "${XS[@]}"; do pieces "$k"; done))" -ge 15
	for i in 1 2 3; do
		OUT=$(curl -sS --max-time 20 --proxy "http://127.0.0.1:$EP" \
		    --cacert "$T/laneca.pem" -H "X-Pad: $PAD" -H "x-api-key: $PHE" \
		    "https://api.test:$HTTPS_PORT/echo" 2>&1)
		check_match "$mode: request $i went through the proxy and back" "^echo " "$OUT"
		LENS+=${LENS:+$'\n'}${#OUT}
	done
	check_eq "$mode: the upstream got the value each time" 3 \
	    "$(grep -cxF "api.test:$HTTPS_PORT $V" "$UP/seen")"
	# As long as the echo: whether or not the proxy redacts the value
	# on its way back, all of it passed through the proxy's buffers.
	check_eq "$mode: and echoed it whole, three times" \
	    "$(printf '%s\n' $(( 5 + 8192 + ${#V} )) $(( 5 + 8192 + ${#V} )) $(( 5 + 8192 + ${#V} )))" \
	    "$LENS"
	# The value in a request the proxy reads, decrypts and refuses (421:
	# Host is not the CONNECT target): its TLS read buffer and event
	# chain held it, and no forwarded write follows to cover them. No
	# guest knows a value; any bytes it sends take the same path.
	printf '%s%s' "$PAD" "$V" >"$T/body"
	OUT=$(curl -sS --max-time 20 --proxy "http://127.0.0.1:$EP" \
	    --cacert "$T/laneca.pem" -H "Host: other.test" -H "Expect:" \
	    --data-binary @"$T/body" -o /dev/null -w '%{http_code}' \
	    "https://api.test:$HTTPS_PORT/refused" 2>&1)
	rm -f "$T/body"
	check_eq "$mode: a request whose Host is not its target is refused" 421 "$OUT"
	ctl rm "$E" >/dev/null
	check_eq "$mode: the lane is gone" destroyed "$(lane_state "$E")"
	wait_for 20 conns_closed
	wait_for 20 no_up_conns
	check_eq "$mode: no connection to the upstream is left" 0 "$(up_conns)"
	check_eq "$mode: no copy of the value is left in the daemon" 0 \
	    "$(copies "$DAEMON_PID" "$V")"
	check_eq "$mode: nor of the other fifteen" 0 \
	    "$(scan "$DAEMON_PID" $(for k in "${XS[@]}"; do pieces "$k"; done))"
	stop_daemon
}
proxy_pass secure
proxy_pass plain
