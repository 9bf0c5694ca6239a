#!/usr/bin/env bash
# Terminal escapes (issue 18, item 5): what a guest writes to its boot
# console, and paths and messages echoed back, reach the user's terminal
# by the daemon's rule (proto/text.c): valid UTF-8 stays, C0, DEL, C1
# (U+009B CSI, U+009D OSC, U+009C ST), bidi overrides and invalid bytes
# (a raw 0x9b) become '?'. `logs` runs on a pty this test opens, since it
# filters only on a terminal; a pipe gets the bytes as they are.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create) || { not_ok "create"; exit 1; }
SERIAL=$(instance_dir "$L")/serial.log
check "the lane has a boot console log" test -f "$SERIAL"
# Clear the screen, set the title, write the clipboard (OSC 52), in every
# spelling: UTF-8 C1, raw 8-bit C1, ESC; then text that must survive.
printf 'BEGIN\xc2\x9b2J|\xc2\x9d0;pwned\x07|\xc2\x9d52;c;aGk=\xc2\x9c|\x9b2J|\x9d0;t\x9c|\x1b]0;t\x1b\\|\xe2\x80\xaeevil|caf\xc3\xa9 \xe6\x96\x87\tEND\r\n' >>"$SERIAL"

# logs LANE on a terminal: the bytes the terminal receives.
PTY_OUT=$T/pty.out
python3 - "$LANECTL" "$SOCK" "$L" "$PTY_OUT" <<'PY'
import os, pty, sys
ctl, sock, lane, out = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.execv(ctl, [ctl, "--socket", sock, "logs", lane])
data = b""
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    data += b
_, status = os.waitpid(pid, 0)
open(out, "wb").write(data)
sys.exit(os.waitstatus_to_exitcode(status))
PY
RC=$?
check_eq "logs LANE on a terminal succeeds" 0 "$RC"
LINE=$(grep -a 'BEGIN' "$PTY_OUT" | tr -d '\r')
check_eq "each escape is shown as ?, the text survives" \
    "$(printf 'BEGIN?2J|?0;pwned?|?52;c;aGk=?|?2J|?0;t?|?]0;t?\\|?evil|caf\xc3\xa9 \xe6\x96\x87\tEND')" "$LINE"
BAD=$(python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
bad = [n for n, s in (("U+009B", b"\xc2\x9b"), ("U+009D", b"\xc2\x9d"), ("U+009C", b"\xc2\x9c"),
    ("U+202E", b"\xe2\x80\xae"), ("BEL", b"\x07")) if s in d]
# Raw C1 bytes outside well-formed UTF-8.
t = d.decode("utf-8", "replace")
bad += ["raw 0x%x" % c for c in (0x9b, 0x9d, 0x9c) if "\ufffd" in t]
print(" ".join(bad))' "$PTY_OUT")
check_eq "no C1 control, BEL, bidi override or raw 0x9b reaches the terminal" "" "$BAD"
ESC=$(python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
# The lane header "==> FILE <==" is ours; the guest text is on BEGIN.
print(d[d.index(b"BEGIN"):].count(b"\x1b"))' "$PTY_OUT")
check_eq "and no ESC from the guest" 0 "$ESC"
OUT=$(ctl logs "$L" | grep -a BEGIN)
check_match "through a pipe the bytes are as the guest wrote them" \
    "$(printf '\xc2\x9b')2J" "$OUT"
OUT=$(ctl --json logs "$L" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if "BEGIN" in r["line"]:
        print(repr(r["line"][:12]))' )
check_eq "logs --json keeps the text, C1 controls escaped" "'BEGIN\\x9b2J|\\x9d0;'" "$OUT"
RAW=$(ctl --json logs "$L" | grep -a BEGIN | grep -c "$(printf '\xc2\x9b')")
check_eq "and no raw C1 in the JSON text itself" 0 "$RAW"

# A path echoed in an error: the same rule (ctl_put_safe).
OUT=$(ctl cp "$L:/no/such$(printf '\xc2\x9d0;title\x07\x9b2J')" "$T/x" 2>&1); RC=$?
check_eq "cp of a missing guest path fails" 1 "$RC"
check_match "its message shows the path made safe" '/no/such\?0;title\?\?2J' "$OUT"
check_nomatch "with no C1 control or raw 0x9b" "$(printf '\xc2\x9d|\x9b|\x07')" "$OUT"
ctl rm "$L" >/dev/null
exit 0
