#!/usr/bin/env bash
# agent-lanectl logs (issue 11): the daemon's own bounded log file and
# `logs` showing it; a lane's Lima logs while it lives; a lane whose start
# failed keeps its Lima logs (and what limactl said) after its VM is
# deleted, until `rm` or until its row leaves the registry; -f follows.
. "$(dirname "$0")/lib.sh"

# The first `limactl start` hangs once the VM runs (tests/lima-sim/README.md)
# and the daemon's start timeout kills it: the start fails with the
# hostagent's logs written and the VM up, as a real timed-out boot does.
export LIMA_SIM_HANG=start:1
start_daemon --start-timeout 2s || exit 1
unset LIMA_SIM_HANG

# ---- The daemon's log --------------------------------------------------------
check_eq "the daemon keeps its log in STATE/log (0600, directory 0700)" \
    "600 700" "$(stat -c %a "$STATE/log/agent-laned.log") $(stat -c %a "$STATE/log")"

# ---- A failed start --------------------------------------------------------------
OUT=$(ctl create 2>&1); RC=$?
check_eq "the injected start failure fails create" 1 "$RC"
check_match "it timed out" 'DEADLINE_EXCEEDED' "$OUT"
L=$(ctl ls --all -q --filter state=failed | head -1)
check_match "the lane is failed" '^al-[0-9a-f]{16}$' "$L"
check "its VM is deleted" test ! -e "$(instance_dir "$L")"
OUT=$(ctl logs "$L"); RC=$?
check_eq "logs LANE of the failed lane succeeds" 0 "$RC"
check_match "it shows the hostagent's log" '^==> ha.stderr.log <==' "$OUT"
check_match "with the hostagent's own lines" 'hostagent socket created' "$OUT"
check_match "the running event" '"running":true' "$OUT"
check_match "and what limactl start said" '^==> limactl.log <==' "$OUT"
check_match "its lines" 'Starting the instance' "$OUT"
check_eq "one header per file, in order" "ha.stderr.log ha.stdout.log limactl.log" \
    "$(printf '%s\n' "$OUT" | sed -n 's/^==> \(.*\) <==$/\1/p' | grep -v '^serial' | tr '\n' ' ' | sed 's/ $//')"
KEPT=$STATE/log/lanes/$L
check_eq "the kept copies are private (0700 directory, 0600 files)" \
    "700 600" "$(stat -c %a "$KEPT") $(stat -c %a "$KEPT/ha.stderr.log")"
OUT=$(ctl logs | grep -c "lane $L: kept")
check_eq "logs without LANE shows the daemon's log" 1 "$OUT"
JL=$(ctl --json logs "$L" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
print(" ".join(sorted({r["source"] for r in rows if not r["source"].startswith("serial")})),
      any("Starting the instance" in r["line"] for r in rows),
      all(set(r) == {"source", "line"} and "\n" not in r["line"] for r in rows))')
check_eq "logs --json: one object a line, each file's lines" \
    "ha.stderr.log ha.stdout.log limactl.log True True" "$JL"
check_eq "logs --json without LANE: the daemon's log" 1 \
    "$(ctl --json logs | python3 -c '
import json, sys
print(sum(1 for l in sys.stdin if "kept" in json.loads(l)["line"] and json.loads(l)["source"] == "agent-laned.log"))')"

# ---- A live lane -------------------------------------------------------------------
L2=$(ctl create)
OUT=$(ctl logs "$L2")
check_match "a live lane's logs come from its VM: the running event" \
    '"running":true' "$OUT"
"$LANECTL" --socket "$SOCK" logs -f "$L2" >"$T/follow-lane" 2>&1 &
FP=$!
# Following: it has shown what the VM's logs hold so far.
wait_for 20 grep -q '"running":true' "$T/follow-lane"
ctl rm "$L2" >/dev/null
check "logs -f LANE ends by itself when the lane is gone" wait_for "$(tw 10)" \
    bash -c "! kill -0 $FP 2>/dev/null"
wait $FP; RC=$?
check_eq "and succeeds" 0 "$RC"
check_match "having shown the VM's logs" '"running":true' "$(cat "$T/follow-lane")"
OUT=$(ctl logs "$L2" 2>&1); RC=$?
check_eq "a destroyed lane has no logs: NOT_FOUND" "1" "$RC"
check_match "said plainly" 'has no logs: they went with its VM' "$OUT"

# ---- -f follows the daemon's log ----------------------------------------------------
"$LANECTL" --socket "$SOCK" logs -f >"$T/follow" 2>&1 &
FP=$!
# It follows once it has shown the log so far: only then is L3 created.
wait_for 20 test -s "$T/follow"
L3=$(ctl create)
check "logs -f shows lines written after it started" wait_for 10 \
    grep -q "lane $L3: registered" "$T/follow"
kill -INT $FP
wait $FP; RC=$?
check_eq "^C ends it (130)" 130 "$RC"
ctl rm "$L3" >/dev/null

# ---- rm removes the evidence ----------------------------------------------------------
OUT=$(ctl rm "$L")
check_eq "rm of the failed lane names it" "$L" "$OUT"
check "its kept logs are gone" test ! -e "$KEPT"
OUT=$(ctl logs "$L" 2>&1); RC=$?
check_eq "logs LANE after rm: NOT_FOUND" "1" "$RC"
check_match "said" 'NOT_FOUND' "$OUT"

OUT=$(ctl logs nosuchlane 2>&1); RC=$?
check_eq "logs of an unknown lane fails" 1 "$RC"
stop_daemon

# ---- A boot that outlives its lifetime is a failed start too ---------------------------
# Its deadline passes during a 6 s boot: the creator is told to look at the
# logs, so they are kept. A creation cancelled by rm keeps nothing, and
# says nothing about logs.
LIMA_SIM_BOOT_MS=6000 start_daemon || exit 1
OUT=$(ctl create --timeout 2s 2>&1); RC=$?
L=$(printf '%s\n' "$OUT" | grep -Eo 'lane al-[0-9a-f]{16} failed' | cut -d' ' -f2)
check_eq "create past its deadline fails" 1 "$RC"
check_match "with DEADLINE_EXCEEDED, naming the lane" \
    "DEADLINE_EXCEEDED.*deadline reached" "$OUT"
check "its VM is deleted" wait_for 10 test ! -e "$(instance_dir "${L:-none}")"
OUT=$(ctl logs "${L:-none}" 2>&1); RC=$?
check_eq "its logs are kept, as the hint says" 0 "$RC"
check_match "the hostagent's, up to the deadline" 'hostagent socket created' "$OUT"
"$LANECTL" --socket "$SOCK" create > "$T/cancelled" 2>&1 &
CP=$!
creating() { [ -n "$(ctl ls -q --filter state=creating)" ]; }
wait_for 10 creating
L2=$(ctl ls -q --filter state=creating | head -1)
check_match "a second creation is under way" '^al-' "$L2"
ctl rm "$L2" >/dev/null
wait "$CP"
OUT=$(cat "$T/cancelled")
check_match "rm cancels it" 'CANCELLED' "$OUT"
check_nomatch "without pointing at logs it did not keep" 'agent-lanectl logs' "$OUT"
OUT=$(ctl logs "$L2" 2>&1); RC=$?
check_eq "and it kept none" 1 "$RC"
stop_daemon

# ---- Retention: kept logs leave with the row -------------------------------------------
export LIMA_SIM_FAIL=start:1
start_daemon --retention 1s --max-log-bytes 64KiB --debug || exit 1
unset LIMA_SIM_FAIL
ctl create >/dev/null 2>&1
L=$(grep -Eo "lane al-[0-9a-f]{16}: kept" "$LOG" | tail -1 | cut -d' ' -f2 | tr -d :)
check_match "a second failed start" '^al-' "$L"
check "its logs go when its row is pruned" wait_for 10 test ! -e "$STATE/log/lanes/$L"

# ---- The daemon's log is bounded -----------------------------------------------------------
# --debug logs every connection: enough calls pass half of max_log_bytes.
for _ in $(seq 1 200); do ctl version >/dev/null; done
D=$STATE/log/agent-laned.log
check "past half of max_log_bytes the log is rotated to .1" test -s "$D.1"
check "each of the two within half of it" \
    test "$(stat -c %s "$D")" -le 32768 -a "$(stat -c %s "$D.1")" -le 32768
check_eq "the rotated copy is private too" 600 "$(stat -c %a "$D.1")"
OUT=$(ctl logs)
check "logs sends at most half of max_log_bytes" test "${#OUT}" -gt 0 -a "${#OUT}" -le 32768
# GetLogs{max_bytes: 2000} by hand: at most that, from a line's start, then eof.
OUT=$(PYTHONPATH=$(dirname "$0") python3 - "$SOCK" <<'PY'
import socket, sys
from wire import HELLO, frame, split_frames, field, varint

def fields(b):
    i, out = 0, {}
    while i < len(b):
        key, shift = 0, 0
        while True:
            c = b[i]; i += 1; key |= (c & 0x7F) << shift; shift += 7
            if c < 0x80: break
        num, wt = key >> 3, key & 7
        v, shift = 0, 0
        while True:
            c = b[i]; i += 1; v |= (c & 0x7F) << shift; shift += 7
            if c < 0x80: break
        if wt == 2:
            out[num] = b[i:i + v]; i += v
        else:
            out[num] = v
    return out

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(sys.argv[1])
s.sendall(HELLO + frame(field(40, 2, field(3, 0, varint(2000)))))
data = b""
while True:
    c = s.recv(65536)
    if not c:
        break
    data += c
got, eof, sources = b"", False, set()
for f in split_frames(data)[1:]:
    ch = fields(fields(f)[40])
    got += ch.get(2, b"")
    sources.add(ch.get(1, b"").decode())
    eof = eof or ch.get(3, 0) == 1
print(0 < len(got) <= 2000, got[:2] == b"20", got.endswith(b"\n"), eof,
      sorted(sources - {""}))
PY
)
check_eq "GetLogs max_bytes: at most that, whole lines, then eof" \
    "True True True True ['agent-laned.log']" "$OUT"
stop_daemon

# ---- No daemon: where to look ------------------------------------------------------------
OUT=$(ctl logs 2>&1); RC=$?
check_eq "no daemon: logs fails" 1 "$RC"
check_match "and says where the log file is" 'log/agent-laned.log' "$OUT"
finish
