#!/usr/bin/env bash
# Exec: streaming, stdin, exit codes and signals, byte-exact output,
# environment kept off the host, timeouts and client death killing the
# guest process group while the lane stays ready.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create --timeout 10m)

# Streaming: the first line must arrive while the command still sleeps.
# The command sleeps longer against a real VM, where starting it over ssh
# takes a good part of a second by itself.
PAUSE=$((2 + 3 * VM))
OUT=$(python3 - "$LANECTL" "$SOCK" "$L" "$PAUSE" <<'PY'
import subprocess, sys, time
ctl, sock, lane = sys.argv[1:4]
t0 = time.time()
p = subprocess.Popen([ctl, "--socket", sock, "exec", lane, "--", "sh", "-c",
                      "echo first; sleep %s; echo second" % sys.argv[4]],
                     stdout=subprocess.PIPE)
first = p.stdout.readline()
t1 = time.time() - t0
rest = p.stdout.read()
p.wait()
print("%s %.2f %s %d" % (first.strip().decode(), t1, rest.strip().decode(), p.returncode))
PY
)
read -r FIRST T1 SECOND RC <<<"$OUT"
check_eq "first line arrives" first "$FIRST"
check "first line arrives before the command ends (${T1}s)" \
    python3 -c "import sys; sys.exit(0 if float('$T1') < $PAUSE - 0.5 else 1)"
check_eq "the rest follows" second "$SECOND"
check_eq "streamed exec exits 0" 0 "$RC"

check_eq "stdin reaches the command" "hello stdin" \
    "$(printf 'hello stdin' | ctl exec "$L" -- cat)"
head -c 1048576 /dev/urandom > "$T/stdin.bin"
check_eq "1 MiB of stdin arrives intact" "$(sha256sum < "$T/stdin.bin" | cut -d' ' -f1)" \
    "$(ctl exec "$L" -- sha256sum < "$T/stdin.bin" | cut -d' ' -f1)"
check_eq "no stdin (-n) gives EOF at once" "" "$(ctl exec -n "$L" -- cat)"

ctl exec "$L" -- sh -c 'exit 3'; check_eq "exit status passes through" 3 "$?"
ctl exec "$L" -- sh -c 'kill -TERM $$'; check_eq "SIGTERM gives 143" 143 "$?"
ctl exec "$L" -- sh -c 'kill -KILL $$'; check_eq "SIGKILL gives 137" 137 "$?"
OUT=$(ctl exec "$L" -- no-such-command 2>&1); RC=$?
check_eq "a missing command exits 127" 127 "$RC"
check_match "with a message on stderr" 'no-such-command' "$OUT"
OUT=$(ctl exec --workdir /no/such/dir "$L" -- true 2>&1); RC=$?
check_eq "a missing workdir is an Agent Lane failure (125)" 125 "$RC"
check_match "reported as NOT_FOUND" 'NOT_FOUND' "$OUT"
check_eq "stderr is separate from stdout" "out" \
    "$(ctl exec "$L" -- sh -c 'echo out; echo err >&2' 2>/dev/null)"

WS=$(ctl show --json "$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workspace"])')
check_eq "exec runs in the workspace by default" "$WS" "$(ctl exec "$L" -- pwd)"
check_eq "--workdir is honoured" /tmp "$(ctl exec --workdir /tmp "$L" -- pwd)"
check_eq "a final newline is kept" "$(printf 'a\nb\n' | od -c)" \
    "$(ctl exec "$L" -- printf 'a\nb\n' | od -c)"
check_eq "no newline is added" "$(printf 'x' | od -c)" \
    "$(ctl exec "$L" -- printf x | od -c)"

# Byte-exact binary stdout: 4 MiB of random bytes made in the guest.
GSUM=$(ctl exec "$L" -- sh -c 'head -c 4194304 /dev/urandom > /tmp/r.bin && sha256sum < /tmp/r.bin' | cut -d' ' -f1)
HSUM=$(ctl exec "$L" -- cat /tmp/r.bin | sha256sum | cut -d' ' -f1)
check_eq "4 MiB of binary stdout is byte-exact" "$GSUM" "$HSUM"

# The environment travels over a pipe: never on a host command line (the
# CLI takes the value from its own environment with --env NAME), in the
# registry or in the log. The command says when it has begun and runs
# until its stdin ends: the host is looked at while the exec is in flight.
SECRET=sekrit-$RANDOM$RANDOM-value
mkfifo "$T/env.in"
AL_TEST_SECRET=$SECRET "$LANECTL" --socket "$SOCK" exec --env AL_TEST_SECRET "$L" -- \
    sh -c 'echo begun >&2; cat >/dev/null; echo "$AL_TEST_SECRET"' \
    <"$T/env.in" >"$T/env.out" 2>"$T/env.err" &
EXEC=$!
exec 8>"$T/env.in"
wait_for 20 grep -q begun "$T/env.err"
LEAK=""
for f in /proc/[0-9]*/cmdline; do
	if grep -qa -- "$SECRET" "$f" 2>/dev/null; then
		LEAK="$LEAK ${f%/cmdline}"
	fi
done
check_eq "env value is on no host command line during the exec" "" "$LEAK"
LEAK=""
for f in /proc/[0-9]*/cmdline; do
	if grep -qa limactl "$f" 2>/dev/null &&
	    grep -qa -- "$SECRET" "${f%/cmdline}/environ" 2>/dev/null; then
		LEAK="$LEAK ${f%/cmdline}"
	fi
done
check_eq "nor in the environment of any host limactl process" "" "$LEAK"
exec 8>&-
wait "$EXEC"
check_eq "the command saw the env value" "$SECRET" "$(cat "$T/env.out")"
check "env value is not in the registry" sh -c "! grep -rqa -- '$SECRET' '$STATE'"
check "env value is not in the daemon log" sh -c "! grep -qa -- '$SECRET' '$LOG'"
check_eq "env values with newlines and = survive" "$(printf 'a=b\nc')" \
    "$(ctl exec --env "V=$(printf 'a=b\nc')" "$L" -- sh -c 'printf %s "$V"')"

# A timeout kills the whole guest process group, background children too.
START=$(date +%s%N)
OUT=$(ctl exec --timeout 1s "$L" -- sh -c 'sleep 300 & sleep 301' 2>&1); RC=$?
DUR=$(( ($(date +%s%N) - START) / 1000000 ))
check_eq "a timed-out exec exits 125" 125 "$RC"
check_match "with DEADLINE_EXCEEDED" 'DEADLINE_EXCEEDED' "$OUT"
check "it ended near its timeout (${DUR} ms)" test "$DUR" -lt 5000
# The guest's processes; fails (and so does every check built on it) when
# the exec itself does, so that "none left" cannot pass by a failed ps.
guest_ps() {
	ctl exec "$L" -- ps -eo args >"$T/ps" && grep -q '^ps -eo args$' "$T/ps"
}
no_sleepers() {
	guest_ps && ! grep -Eq '^sleep 30[01]' "$T/ps"
}
check "the backgrounded guest child is gone too" wait_for "$(tw 3)" no_sleepers
check_eq "the lane is still ready after the timeout" ready "$(lane_state "$L")"

# A client killed mid-exec: same clean-up.
"$LANECTL" --socket "$SOCK" exec "$L" -- sh -c 'sleep 302 & sleep 303' >/dev/null 2>&1 &
CLI=$!
has_sleepers() {
	guest_ps && grep -Eq '^sleep 30[23]' "$T/ps"
}
check "the guest command runs" wait_for "$(tw 3)" has_sleepers
kill -KILL "$CLI"
wait "$CLI" 2>/dev/null
gone() {
	guest_ps && ! grep -Eq '^sleep 30[23]' "$T/ps"
}
check "killing the client kills the guest process group" wait_for "$(tw 5)" gone
check_eq "the lane stays ready" ready "$(lane_state "$L")"

# Ctrl-C on the client: it dies of SIGINT and the guest command goes too.
"$LANECTL" --socket "$SOCK" exec "$L" -- sh -c 'sleep 305' >/dev/null 2>&1 &
CLI=$!
has_305() { guest_ps && grep -q '^sleep 305' "$T/ps"; }
check "the guest command runs" wait_for "$(tw 3)" has_305
kill -INT "$CLI"; wait "$CLI"; RC=$?
check_eq "an interrupted exec dies of SIGINT (130)" 130 "$RC"
no_305() { guest_ps && ! grep -q '^sleep 305' "$T/ps"; }
check "and its guest command is killed" wait_for "$(tw 5)" no_305

# Background processes started on purpose survive a normal exit.
ctl exec "$L" -- sh -c 'setsid sleep 304 </dev/null >/dev/null 2>&1 &'
check "a detached daemon outlives its exec" \
    sh -c "'$LANECTL' --socket '$SOCK' exec '$L' -- ps -eo args | grep -q '^sleep 304'"

OUT=$(ctl exec al-0000000000000000 -- true 2>&1); RC=$?
check_eq "exec in an unknown lane exits 125" 125 "$RC"
check_match "with NOT_FOUND" NOT_FOUND "$OUT"
ctl rm "$L" >/dev/null
