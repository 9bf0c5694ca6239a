#!/usr/bin/env bash
# Progress (issue 11 item 10), at a terminal that tests/regress/progress.py
# opens: create shows the daemon's phases with a spinner and the time
# taken, and always ends its line with a newline (ready, failed, ^C,
# SIGTERM); -q and no terminal keep quiet; a slow first image download is
# explained; cp shows a percentage where the size is known.
export LIMA_SIM_BOOT_MS=1500	# a boot long enough to see and interrupt
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
term() { python3 "$(dirname "$0")/progress.py" "$LANECTL" "$SOCK" "$@"; }

check_eq "create at a terminal: the phases with a spinner and the time, then ready and a newline" \
    "0 registered|creating|starting|setup True" "$(term create)"
check_eq "^C: the line ends as interrupted, with a newline, before the message" \
    "True -2 True" "$(term sigint)"
check_eq "SIGTERM: the same" "True -15 True" "$(term sigterm)"
# Issue 31: the time stays in sight on a narrow terminal; Lima's wait for
# ssh is said as what it is (the simulator's hostagent names it as Lima's).
check_eq "80 columns: every redraw fits and keeps its time; the ssh wait explained" \
    "0 True True True False" "$(term width 80)"
check_eq "50 columns: the phase text gives way, never the time" \
    "0 True True False True" "$(term width 50)"
ctl rm --all >/dev/null	# within max_lanes for what follows
check_eq "-q: no progress line at a terminal" "0 True True" "$(term quiet)"
ctl create 2>"$T/err" >"$T/out"; RC=$?
check_eq "no terminal: nothing on stderr" "0 " "$RC $(cat "$T/err")"
check_match "only the name on stdout" '^al-[0-9a-f]{16}$' "$(cat "$T/out")"

# ---- cp -------------------------------------------------------------------------------
L=$(ctl create -q)
head -c 3000000 /dev/urandom >"$T/blob"
mkdir -p "$T/dir/sub" && cp "$T/blob" "$T/dir/sub/a" && echo hi >"$T/dir/b"
check_eq "cp in, a file: a percentage, 100% when done, a newline" "0 True" \
    "$(term cp "$T/blob" "$L:blob")"
check_eq "cp in, a directory: the same (estimated from the tree)" "0 True" \
    "$(term cp "$T/dir" "$L:dir")"
check_eq "cp out, a file: a percentage of the size the guest gives" "0 True" \
    "$(term cp "$L:blob" "$T/back")"
check "and the copy is whole" cmp -s "$T/blob" "$T/back"
check_eq "cp out, a directory: bytes and rate (no size known beforehand)" "0 True" \
    "$(term cp-out "$L:dir" "$T/backdir")"
check "and the copy is whole" cmp -s "$T/blob" "$T/backdir/sub/a"
OUT=$(term raw cp -q "$T/blob" "$L:blob2")
check_eq "cp -q: nothing" "0 b''" "$OUT"
ctl cp "$T/blob" "$L:blob3" 2>"$T/err"
check_eq "cp without a terminal: nothing on stderr" "" "$(cat "$T/err")"
ctl rm "$L" >/dev/null
stop_daemon

# ---- A slow first download ---------------------------------------------------------------
export LIMA_SIM_DOWNLOAD_MS=6000 LIMA_SIM_BOOT_MS=20
start_daemon || exit 1
check_eq "a download past 5 s is explained on a line of its own" "0 True True True" \
    "$(term download)"
check_match "the daemon logs it" 'limactl: Downloaded the image from' "$(cat "$LOG")"
finish
