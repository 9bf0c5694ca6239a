#!/usr/bin/env bash
# agent-lanectl for people (issue 11), against the real daemon: help never
# reaches it, global options anywhere before "--", the "--" guard, units,
# ls -q/--filter/labels, rm --all/-f, --json everywhere (valid JSON, UTF-8
# labels), exec --workdir relative to the workspace, cp with "-", and errors
# that name the path and the cause.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1

# json_get JSON PYTHON-EXPR: evaluates EXPR with j bound to the parsed JSON.
json_get() {
	python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}
valid_json() {
	python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8", "strict"))'
}
nlanes() { ctl ls -q | wc -l; }

# ---- Help is local; global options and the "--" guard --------------------
L=$(ctl create --label run=cli --label owner=ada)
check_match "create prints a lane name" '^al-[0-9a-f]{16}$' "$L"
ctl rm --help >/dev/null
check_eq "rm --help leaves the lane alone" ready "$(lane_state "$L")"
ctl rm "$L" --help >/dev/null
check_eq "rm LANE --help too" ready "$(lane_state "$L")"
N=$(nlanes)
ctl create -h >/dev/null; RC=$?
check_eq "create -h exits 0" 0 "$RC"
check_eq "create -h creates nothing" "$N" "$(nlanes)"
OUT=$("$LANECTL" ls -q --socket "$SOCK"); RC=$?
check_eq "--socket after the command" "0 $L" "$RC $OUT"
OUT=$("$LANECTL" show "$L" --socket="$SOCK" --json | valid_json && echo valid)
check_eq "--socket= and --json after the operand" valid "$OUT"
OUT=$(ctl rm -- --help 2>&1); RC=$?
check_eq "after --, a dash word is a lane name (refused by the daemon: a usage error, 2)" 2 "$RC"
check_match "and the daemon says why" 'INVALID_ARGUMENT' "$OUT"
OUT=$(ctl rm -weird 2>&1); RC=$?
check_eq "before --, a dash word is never a lane name" 2 "$RC"
check_eq "so nothing was destroyed" ready "$(lane_state "$L")"
OUT=$(ctl exec "$L" echo --json --help --socket x)
check_eq "exec: words of the command are the command's" "--json --help --socket x" "$OUT"
OUT=$(ctl exec "$L" -- echo -n hi)
check_eq "exec -- CMD: options after the command are the command's" "hi" "$OUT"
OUT=$(ctl exec -n "$L" --json -- true 2>&1); RC=$?
check_eq "exec takes no --json" 2 "$RC"
OUT=$(ctl exec -e A=1 -w / --timeout 1m30s "$L" sh -c 'echo $A; pwd')
check_eq "exec -e, -w and a compound --timeout" "1 /" "$(echo $OUT)"

# ---- Units -----------------------------------------------------------------
L2=$(ctl create --memory 2G --disk 12GiB --timeout 1h30m --idle-timeout 1.5h --label run=units)
J=$(ctl show --json "$L2")
check_eq "--memory 2G is 2048 MiB" 2048 "$(json_get "$J" 'j["memory_mib"]')"
check_eq "--disk 12GiB is 12 GiB" 12 "$(json_get "$J" 'j["disk_gib"]')"
check_eq "--timeout 1h30m is 5400 s" 5400000 "$(json_get "$J" 'j["deadline_ms"] - j["created_at_ms"]')"
check_eq "--idle-timeout 1.5h is 5400 s" 5400 "$(json_get "$J" 'j["idle_timeout_s"]')"
L3=$(ctl create --memory 512M --disk 10G --timeout 600s --label run=units)
J=$(ctl show --json "$L3")
check_eq "--memory 512M" 512 "$(json_get "$J" 'j["memory_mib"]')"
check_eq "--disk 10G" 10 "$(json_get "$J" 'j["disk_gib"]')"
check_eq "--timeout 600s" 600000 "$(json_get "$J" 'j["deadline_ms"] - j["created_at_ms"]')"
J=$(ctl extend --json "$L3" 90s)
check_eq "extend 90s" 690000 "$(json_get "$J" 'j["lane"]["deadline_ms"] - j["lane"]["created_at_ms"]')"
# The one rule for plain numbers: a duration or size carries its unit.
for bad in "--memory 4" "--memory 0.5" "--disk 10" "--timeout 600" "--idle-timeout 90"; do
	OUT=$(ctl create $bad 2>&1); RC=$?
	check_eq "create $bad (no unit) is a usage error" 2 "$RC"
	check_match "create $bad: saying it needs its unit" 'say its unit .* a plain number is taken only where the name says its unit' "$OUT"
done
OUT=$(ctl extend "$L3" 90 2>&1); RC=$?
check_eq "extend LANE 90 (no unit) is a usage error" 2 "$RC"
check_match "it suggests 90s or 90m" '90s or 90m' "$OUT"
OUT=$(ctl exec --timeout 30 "$L3" -- true 2>&1); RC=$?
check_eq "exec --timeout 30 (no unit) is a usage error" 2 "$RC"
check_eq "extend --json says whether it was capped" False "$(json_get "$J" 'j["capped"]')"
for bad in "--memory 8x" "--memory 1.0001G" "--disk 1.5G" "--timeout 30m1h" "--timeout 0.5ms" "--idle-timeout 1h30"; do
	ctl create $bad >/dev/null 2>&1
	check_eq "create $bad is a usage error" 2 "$?"
done
OUT=$(ctl create --timeout 1h30 2>&1)
check_match "the usage error shows the forms" '1h30m' "$OUT"

# ---- exec --workdir relative to the workspace, as cp --------------------
WS=$(json_get "$(ctl show --json "$L")" 'j["workspace"]')
ctl exec "$L" -- mkdir -p sub/dir
check_eq "exec --workdir sub/dir is in the workspace" "$WS/sub/dir" "$(ctl exec --workdir sub/dir "$L" -- pwd)"
check_eq "an absolute --workdir is as given" "/tmp" "$(ctl exec --workdir /tmp "$L" -- pwd)"
OUT=$(ctl exec -w nosuch "$L" -- pwd 2>&1); RC=$?
check_eq "a missing relative workdir fails as Agent Lane's (125)" 125 "$RC"
# As the user gave it: the daemon joins it onto the workspace (daemon-small.sh).
check_match "with NOT_FOUND, naming the directory" "NOT_FOUND: --workdir nosuch: " "$OUT"

# ---- ls and rm -------------------------------------------------------------
OUT=$(ctl ls -q | sort)
check_eq "ls -q prints the names only" "$(printf '%s\n' "$L" "$L2" "$L3" | sort)" "$OUT"
OUT=$(ctl ls)
check_match "ls shows a LABELS column" 'LABELS$' "$(echo "$OUT" | head -1)"
check_match "with the lane's labels" "^$L .*(run=cli,owner=ada|owner=ada,run=cli)\$" "$OUT"
check_eq "--filter label=K=V" "$L" "$(ctl ls -q --filter label=run=cli)"
check_eq "--filter label=K (any value)" "$L" "$(ctl ls -q --filter label=owner)"
check_eq "--filter twice: both must match" "" "$(ctl ls -q --filter label=run=cli --filter label=run=units)"
check_eq "--filter name=PREFIX" "$L" "$(ctl ls -q --filter "name=${L:0:12}")"
check_eq "--filter state=ready and label" "$(printf '%s\n' "$L2" "$L3" | sort)" \
    "$(ctl ls -q --filter state=ready --filter label=run=units | sort)"
check_eq "--filter with --json" "[\"$L\"]" "$(json_get "$(ctl ls --json --filter label=run=cli)" 'json.dumps([x["name"] for x in j])' | tr -d ' ')"
ctl ls --filter color=red >/dev/null 2>&1; check_eq "an unknown filter exits 2" 2 "$?"
ctl ls --filter state=sleepy >/dev/null 2>&1; check_eq "an unknown state exits 2" 2 "$?"
ctl ls -q --json >/dev/null 2>&1; check_eq "-q and --json together exit 2" 2 "$?"

OUT=$(ctl rm "$L3"); RC=$?
check_eq "rm prints what it destroyed" "0 $L3" "$RC $OUT"
OUT=$(ctl rm al-0000000000000000 2>&1); RC=$?
check_eq "rm of a missing lane fails" 1 "$RC"
OUT=$(ctl rm -f al-0000000000000000 2>&1); RC=$?
check_eq "rm -f of a missing lane succeeds quietly" "0 " "$RC $OUT"
OUT=$(ctl rm --json -f al-0000000000000000 "$L3")
check_eq "rm --json lists what it destroyed (an ended lane too)" "[\"$L3\"]" "$OUT"
ctl rm --all "$L" >/dev/null 2>&1; check_eq "rm --all with names exits 2" 2 "$?"
ctl rm >/dev/null 2>&1; check_eq "rm without lanes exits 2" 2 "$?"
OUT=$(ctl rm -f); RC=$?
check_eq "rm -f without lanes does nothing" "0 " "$RC $OUT"

# ---- --json everywhere, and valid ----------------------------------------
# A label value with quotes, a backslash and UTF-8 travels as valid JSON.
J=$(ctl create --json --label 'note=say "hé\llo" ✓')
check "create --json is valid JSON" sh -c 'printf "%s" "$1" | python3 -c "import json,sys; json.load(sys.stdin)"' _ "$J"
L4=$(json_get "$J" 'j["name"]')
check_eq "the label value round-trips" 'say "hé\llo" ✓' "$(json_get "$J" 'j["labels"]["note"]')"
for c in "ls" "ls --all" "show $L4" "events $L4" "reap" "version" "daemon status --no-load"; do
	OUT=$(ctl --json $c | valid_json 2>&1 && echo valid)
	check_eq "$c --json is valid JSON" valid "$OUT"
done
J=$(ctl version --json)
check_match "version --json has both versions" '"client":\{"version":"0\.[^}]*\},"daemon":\{"version":"0\.' "$J"
J=$(ctl reap --json)
check_eq "reap --json has its four lists" "['deleted_orphans', 'destroyed', 'orphans', 'pending']" "$(json_get "$J" 'sorted(j)')"
J=$(ctl daemon status --no-load --json)
check_eq "daemon status --json: answering" True "$(json_get "$J" 'j["daemon"]["answering"]')"
check_eq "daemon status --json: live lanes" 3 "$(json_get "$J" 'j["lanes"]["live"]')"
check_eq "daemon status --json: the socket" "$SOCK" "$(json_get "$J" 'j["socket"]')"
OUT=$(ctl daemon status --no-load)
check_match "daemon status shows the lane counts" 'lanes: +3 live of at most [0-9]+ \(0 creating, 3 ready, 0 destroying\)' "$OUT"
check_match "and the version" 'agent-laned: 0\.[0-9.]+ \(protocol [0-9]+\), answering' "$OUT"
# Invalid UTF-8 and control characters are refused before the daemon.
OUT=$(ctl create --label "bad=$(printf 'a\377b')" 2>&1); RC=$?
check_eq "a label value that is not UTF-8 exits 2" 2 "$RC"
check_match "and says why" 'valid UTF-8' "$OUT"
ctl create --label "bad=$(printf 'a\001b')" >/dev/null 2>&1
check_eq "a label value with a control character exits 2" 2 "$?"
ctl create --label "bad=$(printf '\355\240\200')" >/dev/null 2>&1
check_eq "an encoded surrogate is not UTF-8 either" 2 "$?"

# ---- cp with "-" and its errors ------------------------------------------
mkdir -p "$T/src/d" && echo one > "$T/src/a.txt" && echo two > "$T/src/d/b.txt"
chmod 0750 "$T/src/d"
# A private TMPDIR: cp - stages there, and other runs on this host stage in /tmp.
export TMPDIR="$T/stage"; mkdir -p "$TMPDIR"
tar -cf - -C "$T/src" . | ctl cp - "$L4:in"; RC=$?
check_eq "cp - LANE:DIR reads a tar stream" 0 "$RC"
check_eq "its files land in DIR" "one two" "$(ctl exec "$L4" -- sh -c 'cat in/a.txt in/d/b.txt' | tr '\n' ' ' | sed 's/ $//')"
check_eq "with their modes" 750 "$(ctl exec "$L4" -- stat -c %a in/d)"
ctl cp "$L4:in" - > "$T/out.tar"; RC=$?
check_eq "cp LANE:PATH - writes a tar stream" 0 "$RC"
check_eq "named from the path's last component" "in/ in/a.txt in/d/ in/d/b.txt" \
    "$(tar -tf "$T/out.tar" | sed 's|^\./||' | sort | tr '\n' ' ' | sed 's/ $//')"
mkdir "$T/x" && tar -xf "$T/out.tar" -C "$T/x"
check_eq "and the stream extracts to the same bytes" "two" "$(cat "$T/x/in/d/b.txt")"
check_eq "a single file comes as a one-member tar" "a.txt" "$(ctl cp "$L4:in/a.txt" - | tar -tf -)"
check_eq "no staging directory is left behind" "" "$(ls "${TMPDIR:-/tmp}" | grep "^agent-lanectl\." | while read -r d; do [ -O "${TMPDIR:-/tmp}/$d" ] && echo "$d"; done)"
printf 'not a tar' | ctl cp - "$L4:junk" >/dev/null 2>&1
check_eq "a stream that is not tar fails" 1 "$?"
OUT=$(script -qc "$LANECTL --socket $SOCK cp $L4:in -" /dev/null 2>&1 < /dev/null); RC=$?
check_match "cp LANE:PATH - refuses a terminal as standard output" 'which is a terminal' "$OUT"
OUT=$(ctl cp "$L4:in/a.txt" "$T/nodir/a.txt" 2>&1); RC=$?
check_eq "a copy out to a missing host directory fails" 1 "$RC"
check_match "naming the path and the cause" "$T/nodir/a.txt: No such file or directory \(the destination's directory $T/nodir must exist\)" "$OUT"
OUT=$(ctl cp "$T/nosuch" "$L4:x" 2>&1); RC=$?
check_match "a missing host source names the path" "cp: $T/nosuch: No such file or directory" "$OUT"
OUT=$(ctl cp "$T/src/a.txt" "al-12ab0123456789abcd:x" 2>&1); RC=$?
check_eq "a mistyped lane name is a usage error" 2 "$RC"
check_match "that says it is not a lane name" '"al-12ab0123456789abcd:x": not a lane name' "$OUT"
OUT=$(ctl cp "$T/src/a.txt" "al-12ab:x" 2>&1); RC=$?
check_match "a name prefix nobody has is the daemon's NOT_FOUND" 'al-12ab:x: NOT_FOUND' "$OUT"
OUT=$(ctl cp "$T/src/a.txt" "al-0000000000000000:x" 2>&1); RC=$?
check_match "a lane that does not exist is named" 'al-0000000000000000:x: NOT_FOUND: no lane al-0000000000000000' "$OUT"
OUT=$(ctl cp "$L4:nosuch" "$T/" 2>&1); RC=$?
check_match "a missing guest path is named" "$L4:nosuch: NOT_FOUND: .*nosuch: No such file or directory" "$OUT"

# ---- rm --all and rm $(ls -q) ----------------------------------------------
OUT=$(ctl rm $(ctl ls -q --filter label=run=units))
check_eq "rm \$(ls -q --filter ...) destroys and prints them" "$L2" "$OUT"
OUT=$(ctl rm --all | sort)
check_eq "rm --all destroys every live lane and prints them" "$(printf '%s\n' "$L" "$L4" | sort)" "$OUT"
check_eq "none is left" 0 "$(nlanes)"

# ---- The missing-daemon error explains the way forward -------------------
OUT=$("$LANECTL" --socket "$T/none.sock" ls 2>&1); RC=$?
check_eq "no daemon: exit 1" 1 "$RC"
check_match "it says how to run the daemon in the foreground" "agent-laned --socket $T/none.sock" "$OUT"
check_match "and how to point at another socket" '--socket PATH, or AGENT_LANE_SOCKET=PATH' "$OUT"
OUT=$("$LANECTL" --socket "$T/none.sock" --json version 2>/dev/null); RC=$?
check_eq "version --json without a daemon still prints the client's" "1 null" "$RC $(json_get "$OUT" 'j["daemon"] or "null"')"
