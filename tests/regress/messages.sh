#!/usr/bin/env bash
# Input and messages (issue 18, item 13): empty names are usage errors; the
# daemon's INVALID_ARGUMENT exits 2 as the client's own checks do; a wrong
# --socket says what is wrong with it; errors name the command typed;
# errors under --json are JSON (one object a line on standard error,
# standard output left to the result); a failed create points at
# `logs LANE`; show of an ended lane does not count down; ^C of a build
# says it was cancelled; typos get the nearest command or option.
. "$(dirname "$0")/lib.sh"

# One JSON object on one line: prints "CODE|message|hint" or "not JSON: ...".
json_error() {
	python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
try:
    assert len(lines) == 1, "%d lines" % len(lines)
    e = json.loads(lines[0])["error"]
    print("%s|%s|%s|%s" % (e["code"], e.get("lane", ""), e["message"], e.get("hint", "")))
except Exception as x:
    print("not JSON: %r (%s)" % (lines, x))'
}

# ---- Without a daemon ------------------------------------------------------------
mkdir -m 0700 "$T/dir"
OUT=$("$LANECTL" --socket "$T/dir" ls 2>&1); RC=$?
check_eq "--socket DIR fails" 1 "$RC"
check_match "saying the path is a directory, not a socket" \
    "at $T/dir: it is a directory, not a socket" "$OUT"
check_nomatch "not 'Connection refused'" 'Connection refused' "$OUT"
check_nomatch "and not advice to start a daemon there" 'run one in the foreground' "$OUT"
touch "$T/file"
OUT=$("$LANECTL" --socket "$T/file" ls 2>&1)
check_match "--socket FILE: a file, not a socket" "it is a file, not a socket" "$OUT"
OUT=$("$LANECTL" --socket "$T/none/x/s.sock" ls 2>&1)
check_match "a socket that does not exist: how to start a daemon there, with a state directory of its own" \
    "run one in the foreground: .*agent-laned --socket $T/none/x/s.sock --state-dir $T/none/x/state;" "$OUT"
check_match "making its directory private first" \
    "\(umask 077; mkdir -p $T/none/x\) && agent-laned" "$OUT"
check_eq "the error and its hint: two lines, the hint one (issue 31)" 2 "$(printf '%s\n' "$OUT" | wc -l)"
OUT=$(HOME=$T/h AGENT_LANE_SOCKET= "$LANECTL" ls 2>&1)
check_match "the default socket: daemon status says how to start it" \
    "^agent-lanectl: no daemon answers on $T/h/.agent-lane/run/agent-laned.sock: \`agent-lanectl daemon status\` says how to start it" "$OUT"
check_nomatch "... and the hint does not advise daemon start, which needs the service" 'daemon start' "$OUT"
ERR=$("$LANECTL" --json --socket "$T/none.sock" ls 2>&1 >"$T/out"); RC=$?
check_eq "--json: a CONNECT error exits 1 with nothing on standard output" "1 0" \
    "$RC $(wc -c <"$T/out")"
check_match "and one JSON object on standard error, with the hint" \
    '^CONNECT\|\|cannot reach agent-laned.*\|no daemon answers on' "$(printf '%s\n' "$ERR" | json_error)"

ERR=$("$LANECTL" --json --socket "$T/none.sock" logs 2>&1 >/dev/null)
check_match "logs --json without a daemon: one JSON object, no text line" '^CONNECT\|' \
    "$(printf '%s\n' "$ERR" | json_error)"

# ---- Typos -------------------------------------------------------------------------
OUT=$("$LANECTL" lss 2>&1); RC=$?
check_eq "an unknown command exits 2" 2 "$RC"
check_match "lss: did you mean ls" 'unknown command "lss"; did you mean "ls"\?' "$OUT"
OUT=$("$LANECTL" crate 2>&1)
check_match "crate: did you mean create" 'did you mean "create"\?' "$OUT"
OUT=$("$LANECTL" frobnicate 2>&1)
check_nomatch "nothing near: no suggestion" 'did you mean' "$OUT"
OUT=$("$LANECTL" --socket "$T/none.sock" create --cpu 2 2>&1); RC=$?
check_eq "an unknown option exits 2" 2 "$RC"
check_match "--cpu: did you mean --cpus" 'unknown option --cpu; did you mean --cpus\?' "$OUT"
OUT=$("$LANECTL" --socket "$T/none.sock" ls --filer x 2>&1)
check_match "--filer: did you mean --filter" 'did you mean --filter\?' "$OUT"
OUT=$("$LANECTL" --socket "$T/none.sock" ls --jsno 2>&1)
check_match "a global option too: --jsno, --json" 'did you mean --json\?' "$OUT"
ERR=$("$LANECTL" --socket "$T/none.sock" --json ls --bogus 2>&1 >/dev/null); RC=$?
check_eq "--json: a usage error exits 2" 2 "$RC"
check_match "as JSON, code USAGE" '^USAGE\|\|ls: unknown option --bogus' \
    "$(printf '%s\n' "$ERR" | json_error)"

# ---- With the daemon ----------------------------------------------------------------
start_daemon || exit 1
L=$(ctl create) || { not_ok "create"; exit 1; }
for cmd in show rm extend events logs; do
	OUT=$(ctl "$cmd" '' 2>&1); RC=$?
	check_eq "$cmd '': a usage error (2)" 2 "$RC"
	check_match "$cmd '': saying the lane name is empty" 'a lane name is empty' "$OUT"
done
OUT=$(ctl exec '' -- true 2>&1); RC=$?
check_eq "exec '' -- true: a usage error (2)" 2 "$RC"
OUT=$(ctl create --name Web 2>&1); RC=$?
check_eq "the daemon's INVALID_ARGUMENT exits 2, as a usage error" "2" "$RC"
check_match "and says INVALID_ARGUMENT" 'INVALID_ARGUMENT' "$OUT"
# No terminal here: shell is refused before it looks for the lane (a
# lane that exists: tests/regress/newcomer.sh; NOT_FOUND on a terminal:
# tty.sh's "error").
OUT=$(ctl shell nosuch 2>&1 </dev/null); RC=$?
check_match "shell nosuch: the error names shell" '^agent-lanectl: shell: the input device is not a TTY' "$OUT"
check_eq "shell without a terminal exits 1, as docker" 1 "$RC"
OUT=$(ctl exec nosuch -- true 2>&1)
check_match "exec nosuch: exec" '^agent-lanectl: exec: NOT_FOUND' "$OUT"

# --json: errors are JSON, standard output holds only results.
ERR=$(ctl --json show nosuch 2>&1 >"$T/out"); RC=$?
check_eq "--json show nosuch: exit 1, nothing on standard output" "1 0" "$RC $(wc -c <"$T/out")"
check_match "one JSON object on standard error" '^NOT_FOUND\|\|' "$(printf '%s\n' "$ERR" | json_error)"
ERR=$(ctl show --json 2>&1 >/dev/null); RC=$?
check_match "--json after the command: a usage error as JSON" '^USAGE\|' \
    "$(printf '%s\n' "$ERR" | json_error)"
ERR=$(ctl --json rm "$L" nosuch 2>"$T/err" >"$T/out"); RC=$?
check_eq "rm --json of a lane and a missing one: exit 1" 1 "$RC"
check_eq "standard output: the names destroyed, as JSON" "[\"$L\"]" "$(cat "$T/out")"
check_match "standard error: the missing one, as JSON with its lane" '^NOT_FOUND\|nosuch\|' \
    "$(json_error <"$T/err")"
ERR=$(ctl --json extend nosuch 1m 2>&1 >/dev/null)
check_match "extend --json nosuch: JSON" '^NOT_FOUND\|' "$(printf '%s\n' "$ERR" | json_error)"
ERR=$(ctl --json create --name Web 2>&1 >/dev/null); RC=$?
check_eq "create --json refused by the daemon: exit 2" 2 "$RC"
check_match "as JSON" '^INVALID_ARGUMENT\|' "$(printf '%s\n' "$ERR" | json_error)"
ERR=$(ctl --json image show nosuch 2>&1 >/dev/null)
check_match "image show --json nosuch: JSON" '^NOT_FOUND\|' "$(printf '%s\n' "$ERR" | json_error)"
ERR=$(ctl --json logs nosuch 2>&1 >/dev/null)
check_match "logs --json nosuch: JSON" '^NOT_FOUND\|' "$(printf '%s\n' "$ERR" | json_error)"

# ---- A failed create -----------------------------------------------------------------
stop_daemon
LIMA_SIM_FAIL=start:1,start:2 start_daemon || exit 1
OUT=$(ctl create 2>&1); RC=$?
check_eq "a create whose start fails exits 1" 1 "$RC"
F=$(ctl ls --all -q --filter state=failed | head -1)
check_match "the lane is failed" '^al-[0-9a-f]{16}$' "$F"
check_match "the failure points at logs LANE" "agent-lanectl logs $F" "$OUT"
check_match "which shows its kept logs" '==> limactl.log <==' "$(ctl logs "$F")"
ERR=$(ctl --json create 2>&1 >/dev/null)
check_match "with --json: the hint in the error object" \
    '^LIMA_FAILED\|\|.*\|lane al-[0-9a-f]{16} failed; `agent-lanectl logs al-' \
    "$(printf '%s\n' "$ERR" | json_error)"
OUT=$(ctl show "$F")
check_match "show of a failed lane: its deadline does not count down" \
    '^deadline: .*\(lane failed\)$' "$OUT"
check_nomatch "no 'in ...' to a deadline" '^deadline: .*\(in ' "$OUT"
check_match "ls says ended for it" "^$F .* ended " "$(ctl ls --all)"

# ---- ^C of an image build -----------------------------------------------------------
cat > "$T/slow.sh" <<'SH'
#!/bin/sh
echo slow-started
sleep 60
SH
"$LANECTL" --socket "$SOCK" image build slow --provision "$T/slow.sh" >/dev/null 2>"$T/slow.err" &
BP=$!
wait_for 20 grep -q slow-started "$T/slow.err"
check "the slow build started its script" grep -q slow-started "$T/slow.err"
kill -INT "$BP"
wait "$BP"
RC=$?
check_eq "the interrupted build dies of SIGINT" 130 "$RC"
check_match "and says the build was cancelled" \
    '^agent-lanectl: image build slow cancelled; the daemon deletes its half-built VM' \
    "$(cat "$T/slow.err")"
exit 0
