#!/usr/bin/env bash
# Copy-out bounds (issue 18 item 10): a guest file or directory larger than
# the bound is refused before anything is sent, naming the bound
# (max_copy_out_bytes, or the client's --max-bytes), instead of streaming a
# gigabyte and failing in the middle; --max-bytes above the daemon's cap is
# an error, not silently lowered; and a failure ends cp's progress line
# before the error is printed (tests/regress/progress.py, at a terminal).
export LIMA_SIM_BOOT_MS=20
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
term() { python3 "$(dirname "$0")/progress.py" "$LANECTL" "$SOCK" "$@"; }
field() { printf '%s\n' "$1" | awk -F' [|] ' -v n="$2" '{ print $n }'; }
L=$(ctl create)
g() { ctl exec "$L" -- "$@"; }

# The daemon's default bound is 1 GiB; the file 1.5 GiB, sparse: no disk.
g truncate -s 1536M big.bin
OUT=$(term cp-fail "$L:big.bin" "$T/big.bin")
check_eq "a file past max_copy_out_bytes: cp fails, the progress line ended first" "1 True" "$(field "$OUT" 1)"
check_eq "with not one byte moved: refused before streaming" "-" "$(field "$OUT" 2)"
check_match "TOO_LARGE, with the sizes and the bound's name" \
    "TOO_LARGE: the guest file is 1.5GiB \(1610612736 bytes\), above the copy-out bound of 1GiB \(max_copy_out_bytes\); nothing was copied" \
    "$(field "$OUT" 3)"
check "nothing was written" test ! -e "$T/big.bin"
check_eq "nor a temporary file" "" "$(find "$T" -name '*.agent-lane-*')"
check_match "the daemon refused it before any data" \
    'copy-out in lane al-[0-9a-f]+: TOO_LARGE: the guest file is 1.5GiB.*nothing was copied' "$(cat "$LOG")"
OUT=$(ctl cp "$L:big.bin" - 2>&1 >"$T/stream.tar"); RC=$?
check_eq "the same as a tar stream: exit 1, and nothing on standard output" "1 0" \
    "$RC $(stat -c %s "$T/stream.tar")"
check_match "naming the bound" 'TOO_LARGE.*max_copy_out_bytes' "$OUT"

OUT=$(ctl cp --max-bytes 2G "$L:big.bin" "$T/big.bin" 2>&1); RC=$?
check_eq "--max-bytes above the daemon's cap is an error" 1 "$RC"
check_match "RESOURCE_EXHAUSTED naming both" \
    'RESOURCE_EXHAUSTED: a copy-out bound of 2GiB is above the daemon.s cap of 1GiB \(max_copy_out_bytes\)' "$OUT"
OUT=$(term cp-fail --max-bytes 2G "$L:big.bin" "$T/big.bin")
check_eq "at a terminal too, after the progress line" "1 True" "$(field "$OUT" 1)"

g sh -c 'head -c 300000 /dev/zero > mid.bin'
OUT=$(ctl cp --max-bytes 100K "$L:mid.bin" "$T/mid.bin" 2>&1); RC=$?
check_eq "a file past --max-bytes fails" 1 "$RC"
check_match "before streaming, naming the client's bound" \
    'TOO_LARGE: the guest file is 292KiB \(300000 bytes\), above the copy-out bound of 100KiB \(the bound the client asked for\); nothing was copied' "$OUT"
check "a file within the bound copies" ctl cp --max-bytes 300000 "$L:mid.bin" "$T/mid.bin"
check_eq "whole" 300000 "$(stat -c %s "$T/mid.bin")"

# A directory: its files add up to more than the bound.
g sh -c 'mkdir -p tree && for i in 1 2 3; do head -c 100000 /dev/zero > tree/f$i; done'
OUT=$(ctl cp --max-bytes 200K "$L:tree" "$T/tree" 2>&1); RC=$?
check_eq "a directory past the bound fails" 1 "$RC"
check_match "before streaming, saying what its files add up to" \
    "TOO_LARGE: the guest directory's files add up to 292KiB \(300000 bytes\), above the copy-out bound of 200KiB" "$OUT"
check "and leaves nothing" test ! -e "$T/tree"
check "the same directory within the bound copies" ctl cp --max-bytes 400K "$L:tree" "$T/tree"

# The guest's word on the size is only a lower bound: 3000 empty files
# add up to 0, but their tar stream passes 1 MiB as it goes. The failure
# then comes mid-stream, and the line it cuts short ends first.
g sh -c 'mkdir -p many && cd many && seq 1 3000 | xargs touch'
OUT=$(term cp-fail --max-bytes 1M "$L:many" "$T/many")
check_eq "a stream that passes the bound as it goes: cp fails, the progress line ended first" "1 True" "$(field "$OUT" 1)"
check_match "TOO_LARGE" 'TOO_LARGE' "$(field "$OUT" 3)"
check "and leaves nothing" test ! -e "$T/many"
check_eq "nor a temporary directory" "" "$(find "$T" -name '*.agent-lane-*')"
ctl rm "$L" >/dev/null
finish
