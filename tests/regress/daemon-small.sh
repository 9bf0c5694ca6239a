#!/usr/bin/env bash
# Small daemon items of issue 11: the hello names the daemon's pid, start
# time and state directory (shown by `daemon status`); a relative exec
# workdir is joined onto the workspace by the daemon itself; the daemon
# refuses label values that are not UTF-8 or hold control characters
# whatever the client checked; a plain number in the daemon's configuration
# means seconds, as in the CLI; an unknown flag is one, with a did-you-mean.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1

# ---- daemon status: pid, uptime, state directory -------------------------
OUT=$(ctl daemon status --no-load 2>&1)
check_match "daemon status shows the daemon's pid" "^pid: +$DAEMON_PID, up [0-9]" "$OUT"
check_match "and its state directory" "^state: +$STATE\$" "$OUT"
OUT=$(ctl daemon status --no-load --json)
check_eq "--json carries pid and state_dir" "$DAEMON_PID $STATE" \
    "$(python3 -c 'import json,sys; d=json.load(sys.stdin)["daemon"]; print(d["pid"], d["state_dir"])' <<<"$OUT")"
NOW=$(date +%s)	# whole seconds: the daemon may have started later in this one
check "started_at_ms is this run's start" python3 -c '
import json, sys
t = json.loads(sys.argv[1])["daemon"]["started_at_ms"] / 1000
sys.exit(0 if -2 <= float(sys.argv[2]) - t < 120 else 1)' "$OUT" "$NOW"

# ---- Raw requests, so that no client-side check gets in the way ----------
# raw SOCK HEX-OF-REQUEST-BODY: prints the first response after the hello
# as "error CODE MESSAGE", or "frame N" for anything else.
raw() {
	PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$1" <<'PY'
import socket, sys
from wire import HELLO, frame, split_frames, field, varint
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(sys.argv[1])
s.sendall(HELLO + frame(bytes.fromhex(sys.argv[2])))
data = b""
while len(split_frames(data)) < 2:
    c = s.recv(65536)
    if not c:
        break
    data += c
fr = split_frames(data)
if len(fr) < 2:
    print("closed"); sys.exit(0)
r = fr[1]
# Response.error = 2: Error{code = 1, message = 2}
if r[0] == (2 << 3 | 2):
    body = r[2:]
    code = body[1] if body[0] == 8 else 0
    i = body.find(b"\x12")
    print("error", code, body[i + 2:].decode("utf-8", "replace"))
else:
    print("frame", r[0] >> 3)
PY
}
hexreq() {
	PYTHONPATH=$(dirname "$0") python3 -c "import sys; from wire import field, varint; print(($1).hex())"
}
for v in 'b"\xe9t\xe9"' 'b"\xc0\xaf"' 'b"a\x1b[2J"' 'b"\xc2\x9b"'; do
	REQ=$(hexreq "field(2, 2, field(6, 2, field(1, 2, b'k') + field(2, 2, $v)))")
	OUT=$(raw "$REQ")
	check_match "create refuses the label value $v" "^error 1 label k: the value must be valid UTF-8 without control characters" "$OUT"
done
check_eq "no lane was created" "" "$(ctl ls -q)"

# Exec{lane = 1, argv = 2, workdir = 4}: a relative workdir is in the workspace.
L=$(ctl create)
WS=$(ctl show "$L" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["workspace"])')
ctl exec "$L" -- mkdir -p rel/dir
OUT=$(PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$L" <<'PY'
import socket, sys
from wire import HELLO, frame, split_frames, field
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(sys.argv[1])
ex = field(1, 2, sys.argv[2].encode()) + field(2, 2, b"pwd") + field(4, 2, b"rel/dir")
s.sendall(HELLO + frame(field(7, 2, ex)))
data = b""
while True:
    c = s.recv(65536)
    if not c:
        break
    data += c
out = b""
for r in split_frames(data)[1:]:
    if r[0] == (7 << 3 | 2):       # ExecOutput{stream = 1, data = 2}
        b = r[2:] if r[1] < 0x80 else r[3:]
        i = b.find(b"\x12")
        out += b[i + 2:]
    elif r[0] == (2 << 3 | 2):
        out += b"error " + r
print(out.decode().strip())
PY
)
check_eq "a relative workdir sent as is runs in the workspace" "$WS/rel/dir" "$OUT"
ctl rm "$L" >/dev/null

# ---- Configuration: durations carry their unit (units.h) ---------------------
stop_daemon
OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl "$SIM" \
    --default-lifetime 90 --check-config 2>&1); RC=$?
check_eq "--default-lifetime 90 (no unit) is refused as a usage error" 2 "$RC"
check_match "saying it needs its unit" 'default-lifetime: "90" needs its unit \(90s or 90m\)' "$OUT"
OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl "$SIM" \
    --default-memory 4 --check-config 2>&1); RC=$?
check_eq "--default-memory 4 (no unit) is refused as a usage error" 2 "$RC"
check_match "saying 4G or 4M" '"4" needs its unit \(4G or 4M\)' "$OUT"

# ---- Unknown flags: what they are, before what they need -----------------
OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" --bogus 2>&1); RC=$?
check_eq "agent-laned --bogus is a usage error" 2 "$RC"
check_match "an unknown option, not one that needs a value" \
    '^agent-laned: unknown option --bogus \(see agent-laned --help\)$' "$OUT"
for typo in "--max-lane 3:max-lanes" "--max-lane=3:max-lanes" \
    "--chek-config:check-config" "--defualt-cpus 2:default-cpus"; do
	# shellcheck disable=SC2086 # the flag and its value, as typed
	OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" ${typo%:*} 2>&1)
	RC=$?
	check_match "agent-laned ${typo%:*}: did you mean --${typo#*:}? (exit $RC)" \
	    "unknown option --[a-z-]*; did you mean --${typo#*:}\\?" \
	    "$RC $OUT"
	check_eq "and exits 2 (${typo%:*})" 2 "$RC"
done
# --allow takes --secret's rule: a host that can never work is refused
# (create --allow: lane-network.sh).
for h in localhost 2130706433 '*.1.2.3'; do
	OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl "$SIM" \
	    --allow "$h" --check-config 2>&1); RC=$?
	check_match "agent-laned --allow $h is refused (exit $RC)" \
	    "^2 agent-laned: allow: \"${h//\*/\\*}\" is (an address|a loopback name), not a host name" \
	    "$RC $OUT"
done
start_daemon --default-lifetime 90s --max-lifetime 7200s --max-copy-out-bytes 1048576 || exit 1
L=$(ctl create)
OUT=$(ctl show "$L" --json | python3 -c 'import json,sys; l=json.load(sys.stdin); print((l["deadline_ms"]-l["created_at_ms"])//1000)')
check_eq "--default-lifetime 90s is 90 seconds" 90 "$OUT"
OUT=$(ctl create --timeout 7201s 2>&1); RC=$?
check_match "--max-lifetime 7200s is two hours" "RESOURCE_EXHAUSTED.*max_lifetime" "$OUT"
ctl rm "$L" >/dev/null
finish
