#!/usr/bin/env bash
# "al-" with nothing after it is no lane reference (issue 31, defect 1):
# `agent-lanectl rm "al-$ID"` with an empty $ID resolved to the only live
# lane and destroyed it. Every command that takes a LANE is given "al-"
# (and "al-" with the path of cp) beside one live lane: each is refused as
# a usage error (INVALID_ARGUMENT, exit 2) and the lane is untouched, with
# no exec, copy or extension in its events.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create)
check_match "one live lane" '^al-[0-9a-f]{16}$' "$L"
ID=
echo data >"$T/f.txt"
refused() {	# refused WHAT CMD...
	local what=$1 out rc
	shift
	out=$(timeout 20 "$LANECTL" --socket "$SOCK" "$@" </dev/null 2>&1); rc=$?
	check_eq "$what: refused as a usage error" "2 INVALID_ARGUMENT" \
	    "$rc $(printf '%s\n' "$out" | grep -o INVALID_ARGUMENT | head -1)"
	check_nomatch "$what: names no lane" "$L" "$out"
}
refused "show al-" show "al-$ID"
refused "show --json al-" show --json "al-$ID"
refused "rm al-" rm "al-$ID"
refused "rm -f al-" rm -f "al-$ID"
refused "extend al-" extend "al-$ID" 1m
refused "exec al-" exec "al-$ID" -- echo hi
refused "cp into al-:PATH" cp "$T/f.txt" "al-$ID:f.txt"
refused "cp out of al-:PATH" cp "al-$ID:f.txt" "$T/back.txt"
refused "events al-" events "al-$ID"
refused "logs al-" logs "al-$ID"
refused "stats al-" stats --no-stream "al-$ID"
# shell at a terminal (a pseudo-terminal python opens), as a user types it.
OUT=$(timeout 20 python3 -c '
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
' "$LANECTL" --socket "$SOCK" shell "al-$ID" 2>&1); RC=$?
check_eq "shell al-: refused as a usage error" "2 INVALID_ARGUMENT" \
    "$RC $(printf '%s\n' "$OUT" | grep -o INVALID_ARGUMENT | head -1)"
check_eq "the lane is still ready" ready "$(lane_state "$L")"
check_eq "and the only one" "$L" "$(ctl ls -q)"
check_eq "no exec, copy or extension reached it" "" \
    "$(ctl events "$L" | grep -E 'exec|copy-in|copy-out|extend')"
check "the lane itself still answers" ctl exec "$L" -- true
check_eq "a one-digit prefix still finds it" "$L" "$(ctl rm "al-${L:3:1}")"
finish
