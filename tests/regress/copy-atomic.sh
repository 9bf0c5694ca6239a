#!/usr/bin/env bash
# An interrupted copy-in leaves no partial file (issue 11): the guest
# extracts into a temporary directory and renames into place, so a copy cut
# off mid-file (the client interrupted, the stream stopped) leaves the
# destination as it was; a whole copy still merges into what is there.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create)
ctl exec "$L" -- sh -c 'mkdir -p dst/sub && echo old > dst/keep && echo old > dst/sub/f && echo old > dst/big.bin'

# A tar stream with an 8 MiB member of which only 4 MiB arrive; then the
# client goes away (as an interrupted one does), sent raw so that nothing
# on the host buffers it.
PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$L" "$T/sent" <<'PY' &
import socket, sys, tarfile, time
from wire import HELLO, frame, field
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
ti = tarfile.TarInfo("big.bin"); ti.size = 8 << 20; ti.mode = 0o644
data = ti.tobuf(tarfile.USTAR_FORMAT) + b"x" * (4 << 20)
s.sendall(HELLO + frame(field(9, 2, field(1, 2, sys.argv[2].encode()) + field(2, 2, b"dst"))))
for off in range(0, len(data), 65536):
    s.sendall(frame(field(11, 2, field(1, 2, data[off:off + 65536]))))
open(sys.argv[3], "w").write("sent\n")
time.sleep(30)
PY
CP=$!
# Until the guest has the bytes: the temporary directory holds them.
grow() { [ "$(ctl exec "$L" -- sh -c 'du -sk dst/.agent-lane-in.* 2>/dev/null | cut -f1' | head -1)" -ge 2048 ] 2>/dev/null; }
check "the partial member is being written (to a temporary directory)" wait_for 20 grow
kill $CP
wait $CP 2>/dev/null
check_eq "the file being replaced is untouched" "old" "$(ctl exec "$L" -- head -c 3 dst/big.bin)"
check "no temporary directory is left for long" wait_for 10 sh -c "[ -z \"\$('$LANECTL' --socket '$SOCK' exec '$L' -- sh -c 'ls -A dst | grep agent-lane-in')\" ]"

# A whole copy merges into existing directories and replaces files
# (SRC/. is its contents, docker cp's way to copy into dst itself).
mkdir -p "$T/src/sub"
echo new > "$T/src/sub/f"
echo added > "$T/src/sub/g"
head -c 300000 /dev/urandom > "$T/src/big.bin"
ctl cp "$T/src/." "$L:dst" >/dev/null
check_eq "a directory copy merges: kept, replaced, added" "old new added" \
    "$(ctl exec "$L" -- sh -c 'echo $(cat dst/keep dst/sub/f dst/sub/g)')"
check_eq "and replaces the file whole" "$(sha256sum < "$T/src/big.bin" | cut -d' ' -f1)" \
    "$(ctl exec "$L" -- sh -c 'sha256sum < dst/big.bin' | cut -d' ' -f1)"
check_eq "no temporary directory is left" "" "$(ctl exec "$L" -- sh -c 'ls -A dst | grep agent-lane-in')"
ctl rm "$L" >/dev/null
finish
