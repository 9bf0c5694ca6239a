#!/usr/bin/env bash
# Malformed, oversized and truncated frames close only their connection.
. "$(dirname "$0")/lib.sh"

start_daemon --max-frame-bytes 65536 || exit 1
L=$(ctl create --timeout 10m)
# A long exec holds a second connection open throughout: it says when it
# has begun and runs until its stdin ends.
mkfifo "$T/long.in"
ctl exec "$L" -- sh -c 'echo begun >&2; cat >/dev/null; echo survived' \
    <"$T/long.in" >"$T/long.out" 2>"$T/long.err" &
LONG=$!
exec 8>"$T/long.in"
wait_for 20 grep -q begun "$T/long.err"

OUT=$(python3 "$(dirname "$0")/frames.py" "$SOCK")
# Codes: 1 INVALID_ARGUMENT, 5 TOO_LARGE, 10 VERSION_MISMATCH.
check_match "garbage gets INVALID_ARGUMENT or TOO_LARGE" '^garbage error(1|5)$' "$(echo "$OUT" | grep ^garbage)"
check_match "oversized frame gets TOO_LARGE" '^oversized error5$' "$(echo "$OUT" | grep '^oversized ')"
check_match "oversized after hello gets TOO_LARGE" 'oversized_after_hello error5' "$OUT"
check_match "truncated frame is just closed" 'truncated closed' "$OUT"
check_match "a call before hello gets INVALID_ARGUMENT" 'no_hello error1' "$OUT"
check_match "another protocol version gets VERSION_MISMATCH" 'bad_version error10' "$OUT"
check_match "a request without a body gets INVALID_ARGUMENT" 'empty_request error1' "$OUT"
check_match "input without a call gets INVALID_ARGUMENT" 'input_without_call error1' "$OUT"

check "the daemon still serves others" ctl version
exec 8>&-
wait "$LONG"
check_eq "the exec running meanwhile was not disturbed" survived "$(cat "$T/long.out")"
check_match "oversized frames are logged" 'above the cap' "$(cat "$LOG")"

check_eq "a client still writing stdin reads the exit status (linger)" \
    "exit 3 epipe=False" "$(python3 "$(dirname "$0")/linger.py" "$SOCK" "$L")"

# A client that connects and never speaks is timed out, not kept forever.
stop_daemon
start_daemon --request-timeout 1s || exit 1
python3 - "$SOCK" <<'PY' > "$T/idle.out"
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
t = time.time(); s.settimeout(5)
data = s.recv(100)
print("closed_after_%d" % round(time.time() - t), len(data) > 0)
PY
check_match "a silent client is dropped after request_timeout" 'closed_after_1 True' "$(cat "$T/idle.out")"
ctl rm "$L" >/dev/null
