#!/usr/bin/env bash
# A crash of agent-laned leaves no core, and no file anywhere holds a
# secret value: the daemon is started under `ulimit -c unlimited` from a
# scratch directory, holds a lane secret (and, in the test daemon, has sent
# it through its proxy to a loopback upstream), and is killed with SIGSEGV
# and SIGABRT. Every file that appeared since in the scratch directory, the
# state directory, the daemon's working directory and where core_pattern
# points is grepped for the value.
#
# Control, so that this can fail: a process without the daemon's
# protections (a shell that execs sleep with the value in its environment)
# killed the same way must leave a core that holds its value. Where it
# does not (core_pattern pipes to a collector, the hard core limit is 0),
# the suite is skipped with that reason.
. "$(dirname "$0")/lib.sh"

secret() { echo "cd$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
PATTERN=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
if [ -z "$PATTERN" ]; then
	echo "ok 1 # SKIP no /proc/sys/kernel/core_pattern: cannot tell where a core would go"
	exit 0
fi
case $PATTERN in
'|'*)
	echo "ok 1 # SKIP core_pattern pipes cores to a collector ($PATTERN): no file to look for"
	exit 0 ;;
esac
if ! ulimit -c unlimited 2>/dev/null; then
	echo "ok 1 # SKIP the hard core size limit is $(ulimit -Hc): cores are off for this shell"
	exit 0
fi
# Under the sanitizers' build, SIGSEGV must reach the kernel as it would
# without them, not be reported and turned into an exit by ASan.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_abort=0
CWD=$T/cwd
mkdir -p "$CWD"
cd "$CWD" || exit 1

# The directory a core_pattern with a slash names (an absolute pattern).
pattern_dir() {
	case $PATTERN in
	*/*) dirname "$PATTERN" ;;
	esac
}
# Files that appeared since the marker $1 where a core could be: the
# scratch cwd, the state directory, the crashed process's cwd $2 (its top
# level) and the pattern's directory.
new_files() {
	{
		find "$CWD" "$STATE" -type f -newer "$1" 2>/dev/null
		find "$2" -maxdepth 1 -type f -newer "$1" 2>/dev/null
		[ -n "$(pattern_dir)" ] && find "$(pattern_dir)" -maxdepth 1 \
		    -type f -newer "$1" 2>/dev/null
	} | sort -u
}
cores_in() { grep -E '/core([.][0-9]+)?$|/core[^/]*$' || true; }

# ---- Control: an unprotected process dumps its value ----
V0=$(secret)
touch "$T/mark0"
COREVAL=$V0 sh -c 'ulimit -c unlimited; exec sleep 100' &
HP=$!
# Killed once it is sleep, not the shell still setting up.
wait_for 10 grep -qx sleep "/proc/$HP/comm"
kill -SEGV "$HP"
wait "$HP" 2>/dev/null
CORES=$(new_files "$T/mark0" "$CWD" | cores_in)
if [ -z "$CORES" ]; then
	echo "ok 1 # SKIP a process without protections left no core here (core_pattern \"$PATTERN\", ulimit -c $(ulimit -c)): nothing to compare with"
	exit 0
fi
if ! grep -laF -- "$V0" $CORES >/dev/null; then
	echo "ok 1 # SKIP the core of a process without protections does not hold its environment (core_pattern \"$PATTERN\"): a check for values would prove nothing"
	exit 0
fi
ok "control: a process without protections leaves a core with its value ($(echo "$CORES" | head -n 1))"
rm -f $CORES

# crash MODE SIG V: kills the running daemon with SIG, then looks for cores
# and for V in every new file.
crash() {
	local mode=$1 sig=$2 v=$3 pid=$DAEMON_PID dcwd files
	dcwd=$(readlink "/proc/$pid/cwd")
	check_eq "$mode: the daemon's core size limit is 0" 0 \
	    "$(awk '/^Max core file size/ { print $5 }' "/proc/$pid/limits")"
	touch "$T/mark"
	# Any change after the mark counts: the mark is a second older.
	touch -d '-2 seconds' "$T/mark"
	kill "-$sig" "$pid"
	wait "$pid" 2>/dev/null
	DAEMON_PID=
	check "$mode: SIG$sig ended the daemon" sh -c "! kill -0 $pid 2>/dev/null"
	files=$(new_files "$T/mark" "${dcwd:-/}")
	check_eq "$mode: SIG$sig left no core (in $CWD, $STATE, ${dcwd:-/}${PATTERN:+, core_pattern $PATTERN})" \
	    "" "$(printf '%s\n' "$files" | cores_in)"
	check_eq "$mode: no file that appeared holds the value" "" \
	    "$(printf '%s\n' "$files" | while read -r f; do
		[ -n "$f" ] && grep -laF -- "$v" "$f"; done)"
	check_eq "$mode: nor the daemon's log" "" "$(grep -aF -- "$v" "$LOG")"
	# A core this run provoked (a failure) is not left lying about.
	printf '%s\n' "$files" | cores_in | while read -r f; do
		[ -n "$f" ] && rm -f -- "$f"; done
}

# ---- The daemon, with a lane secret ----
for sig in SEGV ABRT; do
	start_daemon || exit 1
	V=$(secret)
	E=$(TOKEN=$V ctl create --secret TOKEN@api.example.com)
	check_eq "real daemon: the lane with a secret is ready ($sig)" ready "$(lane_state "$E")"
	crash "real daemon" "$sig" "$V"
done

# ---- The test daemon, after its proxy used the value ----
TESTD=$(dirname "$LANED")/tests/agent-laned-test
UP=$T/up
mkdir -p "$UP"
python3 "$REPO/tests/regress/secret_upstream.py" "$UP" >"$T/up.ports" 2>"$T/up.err" &
UPID=$!
stop_upstream() { kill "$UPID" 2>/dev/null; wait "$UPID" 2>/dev/null; }
FINISH_HOOK=stop_upstream
wait_for 20 test -s "$T/up.ports"
read -r HTTPS_PORT HTTP_PORT <"$T/up.ports"
AGENT_LANED_TEST_RESOLVE="api.test=127.0.0.1" AGENT_LANED_TEST_TRUST=$UP/ca.pem \
    LANED=$TESTD start_daemon --proxy-connect-ports "$HTTPS_PORT" || exit 1
V=$(secret)
E=$(TOKEN=$V ctl create --secret TOKEN@api.test)
EP=$(ctl show --json "$E" | python3 -c 'import json,sys; print(json.load(sys.stdin)["proxy_port"])')
sed -n '/BEGIN CERTIFICATE/,/END CERTIFICATE/p' "$(instance_dir "$E")/lima.yaml" |
    sed 's/^    //' >"$T/laneca.pem"
curl -sS --max-time 20 --proxy "http://127.0.0.1:$EP" --cacert "$T/laneca.pem" \
    -H "x-api-key: $(ctl exec "$E" -- printenv TOKEN)" \
    "https://api.test:$HTTPS_PORT/v1/messages" >/dev/null 2>&1
check_eq "test daemon: the proxy sent the value upstream" "api.test:$HTTPS_PORT $V" \
    "$(tail -n 1 "$UP/seen" 2>/dev/null)"
crash "test daemon, after the proxy used it" SEGV "$V"
