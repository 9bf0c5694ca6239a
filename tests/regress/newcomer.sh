#!/usr/bin/env bash
# What a newcomer tripped on (issue 31), on the CLI's side: a terminal
# asked for without one is refused at once; `logs | head` ends quietly;
# the docker user's words get a hint; create --no-wait and wait; exec
# waits for a lane still creating; ls keeps its table readable.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create) || { not_ok "create"; exit 1; }

# ---- A terminal without one (defect 2) ---------------------------------------
for args in "shell $L" "exec -t -i $L -- sh"; do
	# timeout: without the check the guest shell waits for keys forever.
	OUT=$(timeout 20 "$LANECTL" --socket "$SOCK" $args </dev/null 2>&1); RC=$?
	check_eq "${args/$L/LANE} with stdin not a terminal: refused at once, exit 1" 1 "$RC"
	check_match "... as docker says it" \
	    "^agent-lanectl: ${args%% *}: the input device is not a TTY$" "$OUT"
done
OUT=$(printf 'echo hi\n' | timeout 20 "$LANECTL" --socket "$SOCK" shell "$L" 2>&1); RC=$?
check_eq "shell fed from a pipe: refused too" 1 "$RC"

# ---- A closed pipe (defect 6) ------------------------------------------------
# More than a pipe holds, so that head(1) is gone before the last write.
seq 1 200000 | sed 's/^/serial line /' >>"$(instance_dir "$L")/serial.log"
"$LANECTL" --socket "$SOCK" logs "$L" 2>"$T/logs.err" | head -1 >/dev/null
check_eq "logs LANE | head: ends as SIGPIPE would (141), as exec does" 141 "${PIPESTATUS[0]}"
check_eq "... quietly" "" "$(cat "$T/logs.err")"

# ---- The docker user's words (frictions) -------------------------------------
OUT=$("$LANECTL" 2>/dev/null); RC=$?
check_eq "agent-lanectl alone: help, exit 0 (as docker, gh)" 0 "$RC"
check_match "... the help on standard output" '^Commands:' "$OUT"
for o in --rm -d --detach; do
	OUT=$(ctl run $o -- true 2>&1); RC=$?
	check_eq "run $o: a usage error" 2 "$RC"
done
check_match "run --rm: says run always destroys its lane" \
    'unknown option --rm: run always destroys its lane afterwards \(--keep keeps it\)' \
    "$(ctl run --rm -- true 2>&1)"
check_match "run -d: says to create and exec instead" \
    'unknown option -d: run waits for its command; for a lane that stays, `create` and then `exec`' \
    "$(ctl run -d -- true 2>&1)"
OUT=$(ctl image biuld 2>&1); RC=$?
check_eq "image biuld: a usage error" 2 "$RC"
check_match "... with the nearest subcommand, from image's table" \
    'image: no subcommand "biuld"; did you mean "build"\?' "$OUT"
check_match "help image lists its subcommands from the table" \
    '^  rm IMAGE\.\.\. +remove images' "$(ctl help image)"
check_eq "ps is ls" "$(ctl ls -q)" "$(ctl ps -q)"
check_match "help ls names ps" 'agent-lanectl ps \.\.\.' "$(ctl help ls)"

# ---- Units and kinds (defect 16) ---------------------------------------------
OUT=$(ctl create --timeout 48h 2>&1); RC=$?
check_eq "a lifetime above the cap: exit 1" 1 "$RC"
check_eq "... said in the unit given" \
    "agent-lanectl: RESOURCE_EXHAUSTED: --timeout 48h is above the cap of 24h (max_lifetime)" "$OUT"
OUT=$(ctl create --idle-timeout 48h 2>&1); RC=$?
check_eq "an idle timeout above the same cap: the same exit status" 1 "$RC"
check_eq "... and the same kind, in the unit given" \
    "agent-lanectl: RESOURCE_EXHAUSTED: --idle-timeout 48h is above the cap of 24h (max_lifetime)" "$OUT"
check_match "minutes given: the cap in minutes" 'idle-timeout 2880m is above the cap of 1440m ' \
    "$(ctl create --idle-timeout 2880m 2>&1)"
check_match "a size above its cap: sizes as everywhere" \
    'RESOURCE_EXHAUSTED: memory 100GiB is above the cap of 16GiB \(max_memory\)' \
    "$(ctl create --memory 100G 2>&1)"
L3=$(ctl create --memory 512M)
check_match "ls: 512MiB, 30GiB" "^$L3 .* 512MiB +30GiB " "$(ctl ls | grep "$L3")"
check_match "show: the same" 'memory: +512MiB' "$(ctl show "$L3")"
check_match "info: the same" 'Memory: +default 4GiB, at most 16GiB' "$(ctl info)"
check_match "info: disk the same" 'Disk: +default 30GiB, at most 100GiB' "$(ctl info)"
ctl rm "$L3" >/dev/null

# ---- ls's table (frictions) --------------------------------------------------
LONG=a-rather-long-alias-for-a-lane-of-the-web-team
L2=$(ctl create --name "$LONG" --label 'hosts=a.example,b.example' --label 'q=say "hi"') ||
    not_ok "create with a long alias"
col() { awk -v w="$1" '{ print index($0, w) }'; }
HEAD=$(ctl ls | head -1)
check_eq "a long alias keeps the columns: STATE over each lane's state" \
    "$(printf '%s\n' "$HEAD" | col STATE) $(printf '%s\n' "$HEAD" | col STATE)" \
    "$(ctl ls | grep "$L " | col ready) $(ctl ls | grep "$L2" | col ready)"
check_match "a label value with a comma is quoted, a quote escaped" \
    'hosts="a\.example,b\.example",q="say \\"hi\\""$' "$(ctl ls | grep "$L2")"

ctl rm "$L" "$L2" >/dev/null

# ---- create --no-wait, wait, exec on a lane still creating (frictions) --------
# Boots of 4 s, so that "still creating" is true for a while.
stop_daemon
LIMA_SIM_BOOT_MS=4000 start_daemon || exit 1
A=$(ctl create --no-wait); RC=$?
check_eq "create --no-wait: exit 0 at once" 0 "$RC"
check_match "... with the lane's name" '^al-[0-9a-f]{16}$' "$A"
check_eq "... the lane is still creating" creating "$(lane_state "$A")"
B=$(ctl create --no-wait --name second)
OUT=$(ctl wait --timeout 100ms "$A" 2>&1); RC=$?
check_eq "wait --timeout before it is ready: 124, as timeout(1)" 124 "$RC"
check_match "... saying so" "wait: $A: .*still creating after --timeout" "$OUT"
OUT=$(ctl exec "$A" -- echo hi 2>&1 </dev/null); RC=$?
check_eq "exec on a lane still creating waits for it and runs (tried, refused, again)" "0 hi" "$RC $OUT"
E=$(ctl create --no-wait)
OUT=$(echo piped | ctl exec "$E" -- cat 2>&1); RC=$?
check_eq "... with a pipe on stdin too, not a byte lost (its state asked first)" "0 piped" "$RC $OUT"
OUT=$(ctl wait "$A" second); RC=$?
check_eq "wait LANE...: exit 0 once all are ready, each name printed" \
    "0 $A $B" "$RC $(echo $OUT)"
C=$(ctl create --no-wait)
OUT=$(ctl exec --timeout 100ms "$C" -- true 2>&1); RC=$?
check_eq "exec --timeout shorter than the boot: 125" 125 "$RC"
check_match "... the lane still creating" 'DEADLINE_EXCEEDED: the lane was still creating after --timeout' "$OUT"
ctl rm "$A" "$B" "$C" "$E" >/dev/null
OUT=$(ctl wait "$A" 2>&1); RC=$?
check_eq "wait on an ended lane: exit 1" 1 "$RC"
check_match "... saying it will not be ready" "is destroyed, and will not be ready" "$OUT"
finish
