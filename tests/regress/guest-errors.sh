#!/usr/bin/env bash
# Errors that come from inside the guest keep their real cause: an
# unreadable path is PERMISSION_DENIED (not NOT_FOUND), and the guest's own
# words reach the client intact, non-ASCII text included (valid UTF-8 for
# the protobuf string field; only invalid bytes and controls are replaced).
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create --timeout 10m)

# The simulator's guest user is not root (uid 1000 when the host runs as
# root): mode 000 really keeps it out.
check_eq "the guest user is not root" 1 \
    "$(ctl exec "$L" -- sh -c '[ "$(id -u)" != 0 ] && echo 1')"
ctl exec "$L" -- sh -c 'mkdir -p /tmp/dé && echo secret > /tmp/dé/ü.txt &&
    chmod 000 /tmp/dé/ü.txt && mkdir -p /tmp/lockée/in && echo x > /tmp/lockée/in/f &&
    chmod 000 /tmp/lockée && mkdir -p /tmp/d2 && echo y > /tmp/d2/ok &&
    echo z > /tmp/d2/nope && chmod 000 /tmp/d2/nope'

OUT=$(ctl cp "$L:/tmp/dé/ü.txt" "$T/u.txt" 2>&1); RC=$?
check "copy-out of an unreadable file fails" test "$RC" -ne 0
check_match "as PERMISSION_DENIED" 'PERMISSION_DENIED' "$OUT"
check_nomatch "not as NOT_FOUND" 'NOT_FOUND' "$OUT"
check_match "with the guest's cause and the path, non-ASCII intact" \
    '/tmp/dé/ü\.txt: Permission denied' "$OUT"
check "no file is left on the host" test ! -e "$T/u.txt"

OUT=$(ctl cp "$L:/tmp/lockée/in/f" "$T/f" 2>&1); RC=$?
check "a file under an unsearchable directory fails" test "$RC" -ne 0
check_match "as PERMISSION_DENIED" 'PERMISSION_DENIED' "$OUT"
check_match "with its path" '/tmp/lockée/in/f: Permission denied' "$OUT"

OUT=$(ctl cp "$L:/tmp/lockée" "$T/lk" 2>&1); RC=$?
check_match "an unreadable directory is PERMISSION_DENIED" 'PERMISSION_DENIED' "$OUT"

OUT=$(ctl cp "$L:/tmp/dé/nöne" "$T/n" 2>&1); RC=$?
check_match "a missing file is still NOT_FOUND" 'NOT_FOUND' "$OUT"
check_match "naming the path" '/tmp/dé/nöne' "$OUT"

OUT=$(ctl cp "$L:/tmp/d2" "$T/d2" 2>&1); RC=$?
check "a directory with an unreadable file in it fails" test "$RC" -ne 0
check_match "with tar's own words" 'nope' "$OUT"

# Guest stderr in an error message: copy-in into a directory the guest
# user may not write, under a non-ASCII name.
ctl exec "$L" -- sh -c 'mkdir -p /tmp/rö && chmod 555 /tmp/rö'
mkdir -p "$T/src" && echo a > "$T/src/a"
OUT=$(ctl cp "$T/src" "$L:/tmp/rö/sub" 2>&1); RC=$?
check "copy-in into a read-only guest directory fails" test "$RC" -ne 0
check_match "the guest's message keeps its UTF-8" "/tmp/rö/sub" "$OUT"
check_nomatch "with no ? in place of letters" 'r\?\?/' "$OUT"
check "the whole message is valid UTF-8" python3 -c \
    'import sys; sys.argv[1].encode("utf-8", "surrogateescape").decode("utf-8")' "$OUT"

# A control character from the guest is replaced, everything else kept
# (invalid UTF-8 is covered by tests/unit/test_text.c).
ctl exec "$L" -- sh -c "mkdir -p /tmp/ctl && chmod 000 /tmp/ctl"
OUT=$(ctl cp "$L:$(printf '/tmp/ctl/\033[31mé')" "$T/x" 2>&1); RC=$?
check_match "an escape becomes ?, é stays" '/tmp/ctl/\?\[31mé' "$OUT"
check "no escape character reaches the client" sh -c \
    "! printf '%s' \"\$1\" | grep -q \"\$(printf '\\033')\"" _ "$OUT"

ctl rm "$L" >/dev/null
