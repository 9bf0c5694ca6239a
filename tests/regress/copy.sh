#!/usr/bin/env bash
# Copy in (client-built tar into guest tar -x) and copy out (bounded, into
# an O_EXCL temporary renamed into place; directories through libarchive's
# secure extraction), including archives from a hostile guest.
. "$(dirname "$0")/lib.sh"
umask 022

start_daemon || exit 1
L=$(ctl create --timeout 10m)
WS=$(ctl show --json "$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workspace"])')
g() { ctl exec "$L" -- "$@"; }

# A tree with modes, nested directories, symlinks and awkward names.
H=$T/tree
mkdir -p "$H/a/b" "$H/empty" "$H/with space"
printf '#!/bin/sh\necho hi\n' > "$H/a/script.sh"; chmod 0755 "$H/a/script.sh"
echo secret > "$H/a/secret"; chmod 0600 "$H/a/secret"
head -c 300000 /dev/urandom > "$H/a/b/blob.bin"
echo spaced > "$H/with space/f i le.txt"
chmod 0750 "$H/a"
ln -s a/script.sh "$H/rel-link"
ln -s /etc/hostname "$H/abs-link"
touch "$H/a/b/empty-file"

listing='find . -mindepth 1 -printf "%p %y %m %l\n" | LC_ALL=C sort'
sums='find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum'
HOST_LIST=$(cd "$H" && eval "$listing")
HOST_SUMS=$(cd "$H" && eval "$sums")

OUT=$(ctl cp "$H" "$L:$WS/tree" 2>&1); RC=$?
check_eq "copy-in of a tree succeeds" 0 "$RC"
check_eq "types, modes and symlink targets match inside the guest" "$HOST_LIST" \
    "$(g sh -c "cd '$WS/tree' && $listing")"
check_eq "file checksums match inside the guest" "$HOST_SUMS" \
    "$(g sh -c "cd '$WS/tree' && $sums")"
check_eq "the script keeps its execute bit" hi "$(g "$WS/tree/a/script.sh")"

echo "one file" > "$T/single.txt"
check "copy-in of a file into missing parent directories" \
    ctl cp "$T/single.txt" "$L:$WS/x/y/z/renamed.txt"
check_eq "the file arrives under its new name" "one file" \
    "$(g cat "$WS/x/y/z/renamed.txt")"

check "a relative guest path lands in the workspace" ctl cp "$T/single.txt" "$L:rel/one.txt"
check_eq "there" "one file" "$(g cat "$WS/rel/one.txt")"
check "and copies back out from there" ctl cp "$L:rel/one.txt" "$T/rel-back.txt"
check_eq "intact" "one file" "$(cat "$T/rel-back.txt")"

OUT=$(ctl cp "$T/single.txt" "$L:/usr/forbidden/f.txt" 2>&1); RC=$?
check_eq "copy-in to an unwritable guest path fails" 1 "$RC"
check_match "as a typed FAILED_PRECONDITION from the guest" 'FAILED_PRECONDITION' "$OUT"
OUT=$(ctl cp "$T/nonexistent" "$L:$WS/n" 2>&1); RC=$?
check_eq "copy-in of a missing host file fails" 1 "$RC"
no_temps() {
	! find "$T" -name '*.agent-lane-*' | grep -q .
}
mkfifo "$H/fifo"
OUT=$(ctl cp "$H" "$L:$WS/tree2" 2>&1); RC=$?
check_eq "a FIFO in the tree fails the copy" 1 "$RC"
check_match "saying why" 'FIFOs' "$OUT"
rm "$H/fifo"
# The guest's half-made copy is removed by its watcher once the killed
# copy script is gone (a second or so later), not by the script itself.
check "the abandoned copy's temporary directory is removed" \
    wait_for 15 no_temps

# Copy out: a directory round trip and a file.
check "copy-out of the tree succeeds" ctl cp "$L:$WS/tree" "$T/back"
check_eq "the round trip keeps types, modes and links" "$HOST_LIST" \
    "$(cd "$T/back" && eval "$listing")"
check_eq "and contents" "$HOST_SUMS" "$(cd "$T/back" && eval "$sums")"
GSUM=$(g sh -c 'head -c 3000000 /dev/urandom > /tmp/r.bin; sha256sum < /tmp/r.bin' | cut -d' ' -f1)
check "copy-out of a file succeeds" ctl cp "$L:/tmp/r.bin" "$T/r.bin"
check_eq "its bytes are exact" "$GSUM" "$(sha256sum < "$T/r.bin" | cut -d' ' -f1)"
mkdir "$T/into"
check "copy-out into an existing directory" ctl cp "$L:/tmp/r.bin" "$T/into"
check "lands inside it under the guest name" test -f "$T/into/r.bin"
check "copy-out over an existing file replaces it" ctl cp "$L:$WS/x/y/z/renamed.txt" "$T/r.bin"
check_eq "with the new content" "one file" "$(cat "$T/r.bin")"


# Over the bound: typed error, destination untouched, no temporary file.
echo original > "$T/dest"
g sh -c 'head -c 2097152 /dev/zero > /tmp/big'
OUT=$(ctl cp --max-bytes 1M "$L:/tmp/big" "$T/dest" 2>&1); RC=$?
check_eq "copy-out over --max-bytes exits 1" 1 "$RC"
check_match "with TOO_LARGE" 'TOO_LARGE' "$OUT"
check_eq "the destination is untouched" original "$(cat "$T/dest")"
check "no temporary file is left" no_temps
OUT=$(ctl cp --max-bytes 100K "$L:$WS/tree" "$T/tree-too-big" 2>&1); RC=$?
check_match "a directory over the bound is TOO_LARGE" 'TOO_LARGE' "$OUT"
check "and leaves no directory behind" test ! -e "$T/tree-too-big"
check "nor a temporary one" no_temps
OUT=$(ctl cp "$L:/no/such/file" "$T/dest" 2>&1); RC=$?
check_match "a missing guest path is NOT_FOUND" 'NOT_FOUND' "$OUT"
check_eq "and the destination is still untouched" original "$(cat "$T/dest")"

# An interrupted copy-out cleans up after itself.
g sh -c 'head -c 268435456 /dev/zero > /tmp/huge'
"$LANECTL" --socket "$SOCK" cp "$L:/tmp/huge" "$T/huge" 2>/dev/null &
CP=$!
partial() { find "$T" -name '.huge.agent-lane-*' | grep -q .; }
check "a large copy-out writes its temporary file" wait_for "$(tw 5)" partial
kill -TERM "$CP"; wait "$CP"; RC=$?
check_eq "the interrupted copy dies of SIGTERM" 143 "$RC"
check "and leaves no temporary file" no_temps
check "nor a destination" test ! -e "$T/huge"
g rm -f /tmp/huge

# The daemon's own bound applies whatever the client asks, and a client
# may not ask for more (copy-bounds.sh has the rest).
stop_daemon
start_daemon --max-copy-out-bytes 1M || exit 1
OUT=$(ctl cp "$L:/tmp/big" "$T/dest" 2>&1)
check_match "max_copy_out_bytes bounds a copy" 'TOO_LARGE.*max_copy_out_bytes' "$OUT"
OUT=$(ctl cp --max-bytes 1G "$L:/tmp/big" "$T/dest" 2>&1)
check_match "a larger client request is refused, not lowered" \
    'RESOURCE_EXHAUSTED.*max_copy_out_bytes' "$OUT"
check_eq "destination untouched again" original "$(cat "$T/dest")"
check "no temporary file is left" no_temps

# A hostile guest replaces tar (through its login profile) and sends
# archives that try to escape. Nothing may land outside the destination.
python3 - "$T" <<'PY'
import io, os, sys, tarfile
t = sys.argv[1]
def make(name, members):
    with tarfile.open(os.path.join(t, name + ".tar"), "w", format=tarfile.GNU_FORMAT) as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
def reg(name, data=b"pwned\n"):
    i = tarfile.TarInfo(name); i.size = len(data); return (i, data)
def sym(name, target):
    i = tarfile.TarInfo(name); i.type = tarfile.SYMTYPE; i.linkname = target; return (i, None)
def dev(name):
    i = tarfile.TarInfo(name); i.type = tarfile.CHRTYPE; i.devmajor = 1; i.devminor = 3; return (i, None)
def hard(name, target):
    i = tarfile.TarInfo(name); i.type = tarfile.LNKTYPE; i.linkname = target; return (i, None)
make("evil-abs", [reg("ok.txt"), reg(t + "/outside/pwned-abs")])
make("evil-dotdot", [reg("ok.txt"), reg("../pwned-dotdot"), reg("a/../../pwned-dotdot2")])
make("evil-symlink", [sym("link", t + "/outside"), reg("link/pwned-link")])
make("evil-device", [reg("ok.txt"), dev("null-dev")])
make("evil-hardlink", [hard("hard", "/etc/passwd")])
PY
mkdir -p "$T/outside" "$T/out"
GH=$(g sh -c 'echo "$HOME"')
for n in abs dotdot symlink device hardlink; do
	ctl cp "$T/evil-$n.tar" "$L:$GH/evil/evil-$n.tar" >/dev/null
	g mkdir -p "/tmp/evil-$n"
done
g sh -c 'mkdir -p "$HOME/evil/bin" && cat > "$HOME/evil/bin/tar" && chmod 755 "$HOME/evil/bin/tar"' <<'FAKE'
#!/bin/sh
# Hostile tar: for /tmp/evil-* directories, send a prepared archive.
case "$5" in
/tmp/evil-*) exec cat "$HOME/evil/$(basename "$5").tar" ;;
esac
exec /usr/bin/tar "$@"
FAKE
# The profile also prints noise before the helper starts.
g sh -c 'printf "echo Welcome to your lane\nexport PATH=\"\$HOME/evil/bin:\$PATH\"\n" >> "$HOME/.bash_profile"'
# Copies run on the lane's exec channel, whose login shell read the profile
# before this: end the channel, so that the next one starts from it.
chan_pids() {
	local p
	for p in $(pgrep -f 'limactl --tty=false shell' 2>/dev/null); do
		{ tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null |
		    grep -qx "LIMA_HOME=$STATE/lima" && echo "$p"
	done
}
kill $(chan_pids) 2>/dev/null
no_chan() { [ -z "$(chan_pids)" ]; }
wait_for 30 no_chan
check_eq "exec still works with a noisy login profile" ok "$(g echo ok)"
before=$(cd "$T" && find . -path ./st -prune -o -print | LC_ALL=C sort)
for n in abs dotdot symlink device hardlink; do
	OUT=$(ctl cp "$L:/tmp/evil-$n" "$T/out/evil-$n" 2>&1); RC=$?
	check_eq "hostile archive ($n) is refused" 1 "$RC"
	check_match "as UNSAFE ($n)" 'UNSAFE' "$OUT"
	check "nothing is left at the destination ($n)" test ! -e "$T/out/evil-$n"
done
after=$(cd "$T" && find . -path ./st -prune -o -print | LC_ALL=C sort)
check_eq "nothing was written anywhere outside" "$before" "$after"
check "the symlink target directory is still empty" test -z "$(ls -A "$T/outside")"
check "no pwned file exists anywhere" sh -c "! find '$T' /tmp -maxdepth 3 -name 'pwned*' 2>/dev/null | grep -q ."
check "no temporary directory is left" no_temps
ctl rm "$L" >/dev/null
