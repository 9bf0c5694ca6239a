#!/usr/bin/env bash
# The client at its edges: non-ASCII names in any locale, closed standard
# descriptors, a small frame cap announced in the hello, sparse files,
# temporary files left by a killed copy-out, and `cp --max-bytes 0`.
. "$(dirname "$0")/lib.sh"
umask 022

start_daemon || exit 1
L=$(ctl create --timeout 10m)
WS=$(ctl show --json "$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workspace"])')
g() { ctl exec -n "$L" -- "$@"; }
# The client with no locale at all, as under a bare launchd or cron.
noloc() { env -u LANG -u LC_ALL -u LC_CTYPE -u LANGUAGE "$@"; }
utf8=
locale -a 2>/dev/null | grep -Eqi '^c\.utf-?8$' && utf8=C.UTF-8

# ---- D3: names from many scripts, both directions, files and dirs ----
NAMES=(
	"café crème" "Ærøskøbing" "naïve-Zoë" "ελληνικά" "Кириллица"
	"العربية" "עברית" "देवनागरी" "ภาษาไทย" "中文字符" "日本語のファイル"
	"한국어" "emoji-🦀🚀" "e$(printf '\xcc\x81')-combining" "mixed Ωμέγα 名前 🎉"
)
H=$T/scripts
mkdir -p "$H"
for n in "${NAMES[@]}"; do
	mkdir -p "$H/$n"
	echo "in $n" > "$H/$n/$n.txt"
	echo "top $n" > "$H/$n.file"
done
listing='find . -mindepth 1 -printf "%p %y %m\n" | LC_ALL=C sort'
HOST_LIST=$(cd "$H" && eval "$listing")

OUT=$(noloc "$LANECTL" --socket "$SOCK" cp "$H" "$L:$WS/scripts" 2>&1); RC=$?
check_eq "copy-in of non-ASCII names with no locale succeeds" 0 "$RC"
check_nomatch "without a translation error" "translate" "$OUT"
check_eq "every name arrives byte for byte" "$HOST_LIST" \
    "$(g sh -c "cd '$WS/scripts' && $listing")"
check "copy-in of one file to a non-ASCII guest name, no locale" \
    noloc "$LANECTL" --socket "$SOCK" cp "$H/café crème.file" "$L:$WS/ü-ñ-日本.txt"
check_eq "it lands under that name" "top café crème" "$(g cat "$WS/ü-ñ-日本.txt")"

OUT=$(noloc "$LANECTL" --socket "$SOCK" cp "$L:$WS/scripts" "$T/back" 2>&1); RC=$?
check_eq "copy-out of the same tree with no locale succeeds" 0 "$RC"
check_eq "and brings every name back" "$HOST_LIST" "$(cd "$T/back" 2>/dev/null && eval "$listing")"
check "copy-out of one non-ASCII file, no locale" \
    noloc "$LANECTL" --socket "$SOCK" cp "$L:$WS/ü-ñ-日本.txt" "$T/"
check_eq "lands under its guest name" "top café crème" "$(cat "$T/ü-ñ-日本.txt" 2>/dev/null)"
if [ -n "$utf8" ]; then
	OUT=$(LC_ALL=$utf8 "$LANECTL" --socket "$SOCK" cp "$H" "$L:$WS/scripts-utf8" 2>&1); RC=$?
	check_eq "copy-in under $utf8 succeeds" 0 "$RC"
	check_eq "with the same names" "$HOST_LIST" \
	    "$(g sh -c "cd '$WS/scripts-utf8' && $listing")"
	check "copy-out under $utf8" env LC_ALL=$utf8 "$LANECTL" --socket "$SOCK" \
	    cp "$L:$WS/scripts-utf8" "$T/back-utf8"
	check_eq "with the same names" "$HOST_LIST" "$(cd "$T/back-utf8" 2>/dev/null && eval "$listing")"
else
	echo "# no UTF-8 locale here: only the locale-free runs"
fi
# A name that is not UTF-8 at all is still just bytes.
mkdir -p "$T/latin1"; echo x > "$T/latin1/$(printf 'caf\xe9')"
check "a Latin-1 (not UTF-8) name copies in" noloc "$LANECTL" --socket "$SOCK" \
    cp "$T/latin1" "$L:$WS/latin1"
check_eq "byte for byte" "$(cd "$T/latin1" && ls | od -An -tx1)" \
    "$(g sh -c "cd '$WS/latin1' && ls" | od -An -tx1)"

# ---- D4: a closed 0, 1 or 2 never becomes the control socket ----
MARK=$(wc -l < "$LOG")
ctl exec -n "$L" -- sh -c 'echo err >&2; exit 3' 2>&-; RC=$?
check_eq "exec with stderr closed passes the guest's status" 3 "$RC"
ctl exec -n "$L" -- sh -c 'echo out; exit 4' >&-; RC=$?
check_eq "exec with stdout closed passes the guest's status" 4 "$RC"
ctl exec "$L" -- sh -c 'cat; exit 5' <&- >/dev/null; RC=$?
check_eq "exec with stdin closed passes the guest's status" 5 "$RC"
ctl exec "$L" -- sh -c 'echo x; echo y >&2; exit 6' <&- >&- 2>&-; RC=$?
check_eq "exec with all three closed passes the guest's status" 6 "$RC"
check_eq "show with stdin and stderr closed works" "ready" \
    "$(ctl show --json "$L" <&- 2>&- | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')"
check_nomatch "the daemon saw no garbage frames" 'frame of|malformed|protocol' \
    "$(tail -n +"$((MARK + 1))" "$LOG")"

# ---- cp --max-bytes 0 means the daemon's cap ----
g sh -c 'echo zero-cap > /tmp/zc.txt'
OUT=$(ctl cp --max-bytes 0 "$L:/tmp/zc.txt" "$T/zc.txt" 2>&1); RC=$?
check_eq "cp --max-bytes 0 is accepted" 0 "$RC"
check_eq "and copies under the daemon's cap" zero-cap "$(cat "$T/zc.txt" 2>/dev/null)"

# ---- A killed copy-out's temporary files are swept next time ----
g sh -c 'head -c 268435456 /dev/zero > /tmp/huge'
mkdir -p "$T/sweep"
"$LANECTL" --socket "$SOCK" cp "$L:/tmp/huge" "$T/sweep/huge" 2>/dev/null &
CP=$!
partial() { find "$T/sweep" -name '.huge.agent-lane-*' | grep -q .; }
wait_for 5 partial
kill -KILL "$CP"; wait "$CP" 2>/dev/null
check "SIGKILL leaves a temporary file (nothing can clean it)" partial
STALE=$(find "$T/sweep" -name '.huge.agent-lane-*' | head -1)
touch -d '-10 minutes' "$STALE"
# Decoys that are not ours, or not stale, must survive the sweep.
echo mine > "$T/sweep/.huge.agent-lane-user-file"
echo mine > "$T/sweep/.other.agent-lane-99999999-AbCdEf"
touch -d '-10 minutes' "$T/sweep/.other.agent-lane-99999999-AbCdEf"
echo live > "$T/sweep/.huge.agent-lane-$$-LiVe01"
touch -d '-10 minutes' "$T/sweep/.huge.agent-lane-$$-LiVe01"
mkdir -p "$T/sweep/.huge.agent-lane-99999999-DiRaaa/sub"
echo part > "$T/sweep/.huge.agent-lane-99999999-DiRaaa/sub/f"
touch -d '-10 minutes' "$T/sweep/.huge.agent-lane-99999999-DiRaaa"
echo fresh > "$T/sweep/.huge.agent-lane-99999999-FrEsh1"
ln -s /etc/hostname "$T/sweep/.huge.agent-lane-99999999-SyMl01"
touch -h -d '-10 minutes' "$T/sweep/.huge.agent-lane-99999999-SyMl01"
g sh -c 'echo small > /tmp/small'
check "the next copy-out to that destination succeeds" \
    ctl cp "$L:/tmp/small" "$T/sweep/huge"
check "and sweeps the killed copy's temporary file" test -n "$STALE" -a ! -e "$STALE"
check "but not a file whose name is not ours" test -e "$T/sweep/.huge.agent-lane-user-file"
check "nor one for another destination" test -e "$T/sweep/.other.agent-lane-99999999-AbCdEf"
check "nor one whose creator is alive" test -e "$T/sweep/.huge.agent-lane-$$-LiVe01"
check "nor a symbolic link" test -L "$T/sweep/.huge.agent-lane-99999999-SyMl01"
check "a stale temporary directory of a dead copy goes too" \
    test ! -e "$T/sweep/.huge.agent-lane-99999999-DiRaaa"
check "but not a dead copy's file touched in the last minute" \
    test -e "$T/sweep/.huge.agent-lane-99999999-FrEsh1"
g rm -f /tmp/huge

# ---- Sparse files stay sparse on copy-in ----
truncate -s 4G "$T/sparse.img"
printf 'x' | dd of="$T/sparse.img" bs=1 seek=$((4 * 1024 * 1024 * 1024 - 1)) conv=notrunc 2>/dev/null
START=$(date +%s)
OUT=$(timeout 60 "$LANECTL" --socket "$SOCK" cp "$T/sparse.img" "$L:$WS/sparse.img" 2>&1); RC=$?
check_eq "copy-in of a 4 GiB file holding 1 byte succeeds" 0 "$RC"
check "in well under the time a full copy takes" test $(( $(date +%s) - START )) -lt 20
check_eq "its size is kept" 4294967296 "$(g stat -c %s "$WS/sparse.img")"
KB=$(g du -k "$WS/sparse.img" | cut -f1)
check "and it allocates almost nothing in the guest (${KB:-?} KiB)" test "${KB:-999999}" -lt 1024
check_eq "the byte at the end arrived" x "$(g tail -c 1 "$WS/sparse.img")"
mkdir -p "$T/sparsedir"; truncate -s 1G "$T/sparsedir/hole"; echo data > "$T/sparsedir/plain"
printf 'y' | dd of="$T/sparsedir/hole" bs=1 seek=$((1024 * 1024 * 1024 - 1)) conv=notrunc 2>/dev/null
check "a sparse file inside a tree copies in" timeout 60 "$LANECTL" --socket "$SOCK" cp "$T/sparsedir" "$L:$WS/sparsedir"
KB=$(g du -k "$WS/sparsedir/hole" | cut -f1)
check "and stays sparse (${KB:-?} KiB)" test "${KB:-999999}" -lt 1024
check_eq "beside a plain file" data "$(g cat "$WS/sparsedir/plain")"
check_eq "with its last byte" y "$(g tail -c 1 "$WS/sparsedir/hole")"
g rm -f "$WS/sparse.img" "$WS/sparsedir/hole"

# ---- D6: a daemon announcing a 4 KiB frame cap ----
stop_daemon
MARK=$(wc -l < "$LOG")
start_daemon --max-frame-bytes 4096 || exit 1
head -c 300000 /dev/urandom > "$T/blob"
mkdir -p "$T/small-frames"; cp "$T/blob" "$T/small-frames/b1"; echo hi > "$T/small-frames/b2"
OUT=$(ctl cp "$T/blob" "$L:$WS/blob" 2>&1); RC=$?
check_eq "copy-in of a file under a 4096-byte frame cap" 0 "$RC"
check_eq "arrives intact" "$(sha256sum < "$T/blob" | cut -d' ' -f1)" \
    "$(g sh -c "sha256sum < '$WS/blob'" | cut -d' ' -f1)"
check "copy-in of a tree under a 4096-byte frame cap" ctl cp "$T/small-frames" "$L:$WS/small-frames"
OUT=$(ctl exec "$L" -- sha256sum < "$T/blob" 2>&1); RC=$?
check_eq "stdin-fed exec under a 4096-byte frame cap" 0 "$RC"
check_eq "the guest read every byte" "$(sha256sum < "$T/blob" | cut -d' ' -f1)" "${OUT%% *}"
check "copy-out under a 4096-byte frame cap" ctl cp "$L:$WS/blob" "$T/blob.back"
check "intact" cmp -s "$T/blob" "$T/blob.back"
check_nomatch "the daemon refused no frame" 'TOO_LARGE|frame of' "$(tail -n +"$((MARK + 1))" "$LOG")"
stop_daemon
