#!/usr/bin/env bash
# Lanes on another machine through ssh (issue 19), end to end: a real
# OpenSSH server on 127.0.0.1 and a second local user whose own daemon
# holds the lanes (tests/remote/fixture); the client is this user with a
# key and known_hosts of its own. Every command through ssh, the library,
# owned lanes across a killed ssh, typed failures (no server, no key, an
# unknown host key, another protocol version, ssh killed mid-exec), and
# what the ssh child gets (its argv, its descriptors, its process group).
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "ok 1 - # SKIP needs root: it creates the remote user and runs sshd"
	exit 0
fi
FIXTURE=$REPO/tests/remote/fixture
# Not under /tmp: sshd's StrictModes checks root's key file's directories.
FX=$(mktemp -d /run/alfx.XXXXXX)
fixture_stop() {
	"$FIXTURE" stop "$FX"
	rm -rf "$FX"
}
FINISH_HOOK=fixture_stop
if ! OUT=$("$FIXTURE" start "$FX" 2>&1); then
	not_ok "the ssh fixture starts (sshd, the remote user, its daemon): $OUT"
	exit 1
fi
. "$FX/env"
export PATH=$AL_SSH_BIN:$PATH HOME=$AL_CLIENT_HOME
unset AGENT_LANE_SOCKET AGENT_LANE_HOST AGENT_LANE_CONTEXT SSH_AUTH_SOCK
# The fixture's ssh wrapper picks its configuration by $AL_SSH_CONFIG,
# which ssh gets only when named here (the client passes ssh no other
# variable of its environment but what ssh needs).
export AGENT_LANE_SSH_ENV=AL_SSH_CONFIG
ARGV=$FX/ssh.argv

r() { "$LANECTL" --context remote "$@"; }
# The remote host itself: its user, on its own socket, no ssh.
there() {
	setpriv --reuid="$AL_REMOTE_UID" --regid="$AL_REMOTE_GID" --init-groups \
	    env -i HOME="$AL_REMOTE_HOME" PATH=/usr/bin:/bin "$LANECTL" "$@"
}
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# ---- who answers ------------------------------------------------------------
OUT=$(r version)
check_match "version through ssh: the remote daemon answers" '^agent-laned 0\.1\.0 \(protocol 1\)' \
    "$(printf '%s\n' "$OUT" | tail -1)"
INFO=$(r info --json)
check_eq "info: the remote user's state directory" "$AL_REMOTE_HOME/.agent-lane" \
    "$(printf '%s' "$INFO" | json 'd["daemon"]["state_dir"]')"
check_eq "info: the context in use and why" "remote --context $AL_REMOTE_URL" \
    "$(printf '%s' "$INFO" | json 'd["client"]["context"], d["client"]["context_from"], d["client"]["host"]' | tr -d "(),'")"
check_match "ssh's argv: BatchMode, no terminal, port, user, -- before the host, dial-stdio" \
    "^-o BatchMode=yes -T -p $AL_SSH_PORT -l $AL_REMOTE_USER -- 127\.0\.0\.1 $AL_REMOTE_CMD system dial-stdio\$" \
    "$(tail -1 "$ARGV")"
check_nomatch "no host key checking is switched off for the user" 'StrictHostKeyChecking|UserKnownHostsFile' \
    "$(cat "$ARGV")"

# ---- lanes, exec, copies, events, logs --------------------------------------
L=$(r create -q --timeout "$(life 600)" --name web)
check_match "create through ssh" '^al-[0-9a-f]{16}$' "$L"
check_eq "the lane is the remote daemon's" "$L" "$(there ls -q)"
check_eq "show by alias" "ready" "$(r show --json web | json 'd["state"]')"
check_match "ls" "$L +web +ready" "$(r ls)"
check_match "extend" 'deadline' "$(r extend web 1m)"
OUT=$(printf 'abc' | r exec web -- sh -c 'cat; echo; echo e >&2; exit 7' 2>"$T/e"); RC=$?
check_eq "exec: stdin in, stdout and stderr back, the exit status" "abc|e|7" \
    "$OUT|$(cat "$T/e")|$RC"
head -c 3000000 /dev/urandom >"$T/blob"
check_eq "exec: 3 MB of stdin, whole" "$(sha256sum <"$T/blob" | cut -d' ' -f1)" \
    "$(r exec web -- sha256sum <"$T/blob" | cut -d' ' -f1)"
SECRET=s3cr3t-$$-value
check_eq "exec -e NAME: a secret reaches the guest" 0 \
    "$(SECRET=$SECRET r exec -e SECRET web -- sh -c 'test "$SECRET" = '"$SECRET"; echo $?)"
check_nomatch "and is on no ssh command line" "$SECRET" "$(cat "$ARGV")"

# ---- no secret in ssh's environment ---------------------------------------
# A user whose ssh_config says SendEnv for a secret's variable (the
# fixture's sshd accepts it): ssh must not have it to send. The remote
# end of this context writes down the environment sshd gave it.
mkdir -m 0700 "$FX/envdump" && chown "$AL_REMOTE_UID" "$FX/envdump"
printf '#!/bin/sh
env >"%s/envdump/$$"
exec "%s" "$@"
' "$FX" "$AL_REMOTE_CMD" \
    >"$FX/env-remote"
chmod 0755 "$FX/env-remote"
"$LANECTL" context create sendenv --host "$AL_REMOTE_URL" \
    --remote-command "$FX/env-remote" >/dev/null
sendenv() {
	AL_SSH_CONFIG=$FX/client/config.sendenv LANG=C.UTF-8 \
	    "$LANECTL" --context sendenv "$@"
}
KEY=sk-sendenv-$$-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
SL=$(AL_SENDENV_KEY=$KEY AL_SENDENV_OTHER=$KEY sendenv create -q \
    --secret AL_SENDENV_KEY@api.example.com --timeout "$(life 600)")
check_match "create --secret through an ssh that would send the secret's variable" \
    '^al-[0-9a-f]{16}$' "$SL"
check_eq "the remote daemon has the secret" AL_SENDENV_KEY \
    "$(r show --json "$SL" | json '" ".join(s["name"] for s in d["secrets"])')"
# The remote user's daemon (DIR/laned.pid is the shell that started it).
RPID=$(pgrep -u "$AL_REMOTE_UID" -x agent-laned)
check "and holds its value (in the lane's proxy)" \
    test "$(python3 "$(dirname "$0")/memscan.py" "$RPID" "$KEY")" -ge 1
# No input (</dev/null): with a pipe, exec asks the lane's state first.
AL_SENDENV_X=$KEY sendenv exec -e AL_SENDENV_X "$SL" -- true </dev/null
check_eq "the remote end was reached through SendEnv's ssh (two calls)" 2 \
    "$(ls "$FX/envdump" | wc -l)"
check_match "SendEnv works: LANG, which ssh may have, arrived" '^LANG=C\.UTF-8$' \
    "$(cat "$FX"/envdump/*)"
check_nomatch "the secret's variable did not (create --secret, exec -e)" \
    '^AL_SENDENV_' "$(cat "$FX"/envdump/*)"
check_nomatch "nor its value under any name" "$KEY" "$(cat "$FX"/envdump/*)"
r rm "$SL" >/dev/null
check "cp in, a file" r cp -q "$T/blob" web:blob
mkdir -p "$T/tree/sub" && echo one >"$T/tree/a" && cp "$T/blob" "$T/tree/sub/b"
check "cp in, a directory" r cp -q "$T/tree" web:tree
check "cp out, a file" r cp -q web:blob "$T/blob.back"
check "it came back whole" cmp -s "$T/blob" "$T/blob.back"
check "cp out, a directory" r cp -q web:tree "$T/tree.back"
check "it came back whole" cmp -s "$T/tree/sub/b" "$T/tree.back/sub/b"
check_eq "cp out to standard output (tar)" "one" "$(r cp web:tree/a - | tar -xOf -)"
OUT=$(r cp --max-bytes 1000 web:blob "$T/big" 2>&1); RC=$?
check_match "cp out past its bound: TOO_LARGE" 'TOO_LARGE' "$OUT"
check "and nothing is left" test ! -e "$T/big"
term_cp() { python3 "$(dirname "$0")/progress.py" "$LANECTL" --context=remote "$@"; }
check_eq "cp in at a terminal: the percentage, 100% when done" "0 True" \
    "$(term_cp cp "$T/blob" "$L:blob2")"
check_eq "cp out at a terminal: the same" "0 True" "$(term_cp cp "$L:blob2" "$T/blob2")"
EV=$(r events web)
check_match "events: execs and copies" 'exec.*sha256sum' "$EV"
check_match "events: copies" 'copy-in' "$EV"
check_match "logs of a lane" 'serial' "$(r logs web | head -40)"
check_match "the daemon's log, the remote one" "listening on $AL_REMOTE_HOME" "$(r logs)"
OUT=$(r stats --no-stream --json web)
check_match "stats: the guest's processes" '"processes":[1-9]' "$OUT"
check_match "info counts the lane" '^[1-9]' "$(r info --json | json 'd["lanes"]["live"]')"
# Images on root's daemon: the remote user's unprivileged simulator has no
# guest root to provision with (tests/lima-sim/README.md).
rr() { "$LANECTL" --context remote-root "$@"; }
printf '#!/bin/sh\necho provisioned > /etc/provisioned\n' >"$T/prov.sh"
check_match "image build" '^img1$' "$(rr image build img1 --provision "$T/prov.sh" 2>"$T/img.err")"
check_match "image ls" 'img1' "$(rr image ls)"
I=$(rr create -q --image img1)
check_eq "a lane from the image" "provisioned" "$(rr exec "$I" -- cat /etc/provisioned)"
check_eq "rm" "$I" "$(rr rm "$I")"
check_match "image rm" 'img1' "$(rr image rm img1)"
check "reap" r reap

# ---- following: events -f and logs -f end when the lane does ---------------
# Not through the shell function: $! must be agent-lanectl's own pid.
timeout 120 "$LANECTL" --context remote events -f web >"$T/evf" 2>&1 &
EVPID=$!
timeout 120 "$LANECTL" --context remote logs -f web >"$T/logf" 2>&1 &
LOGPID=$!
# Both are following once their first lines are out.
wait_for 20 grep -q created "$T/evf"
wait_for 20 grep -q serial "$T/logf"
check_eq "rm through ssh" "$L" "$(r rm web)"
wait "$EVPID"; RC=$?
check_eq "events -f ends when the lane does" 0 "$RC"
check_match "with the destruction" 'destroyed' "$(tail -2 "$T/evf")"
wait "$LOGPID"; RC=$?
check_eq "logs -f ends when the lane is gone" 0 "$RC"
check_eq "the remote daemon agrees" destroyed "$(there show --json "$L" | json 'd["state"]')"

# ---- run: owned lanes ---------------------------------------------------------
OUT=$(r run -q -- sh -c 'echo hi; exit 4'); RC=$?
check_eq "run: output and status through ssh" "hi 4" "$OUT $RC"
check_eq "and its lane is gone" "" "$(there ls -q)"
mkfifo "$T/runout"
timeout 120 "$LANECTL" --context remote run -q -- sh -c 'echo started; exec sleep 600' \
    >"$T/runout" 2>"$T/run.err" &
TPID=$!
exec 7<"$T/runout"
read -r LINE <&7
check_eq "run: the command runs" started "$LINE"
RUNPID=$(pgrep -P "$TPID" -x agent-lanectl)
RL=$(there ls -q)
check_match "in an owned lane on the remote host" '"owned": ?true' "$(there show --json "$RL")"
# Its ssh connections (the owner's, the exec's): killed like a dropped link.
SSHS=$(pgrep -P "$RUNPID" -x ssh | tr '\n' ' ')
check_match "run holds its connections through ssh" '[0-9]' "$SSHS"
# Bounded: a daemon that never destroys the lane fails the check, not hangs.
timeout 120 setpriv --reuid="$AL_REMOTE_UID" --regid="$AL_REMOTE_GID" --init-groups \
    env -i HOME="$AL_REMOTE_HOME" PATH=/usr/bin:/bin "$LANECTL" events -f "$RL" \
    >"$T/rl.events" 2>&1 &
RLEV=$!
wait_for 20 grep -q ready "$T/rl.events"
kill -KILL $SSHS
wait "$TPID"; RC=$?
exec 7<&-
check_eq "run fails with Agent Lane's status" 125 "$RC"
check_match "saying the connection was lost" 'UNAVAILABLE' "$(cat "$T/run.err")"
wait "$RLEV"
check_match "the remote daemon destroyed the lane (the event, waited on)" \
    'destroy.*owning client disconnected' "$(cat "$T/rl.events")"
check_eq "and it is gone" destroyed "$(there show --json "$RL" | json 'd["state"]')"

# ---- ssh dies mid-exec; an unowned lane keeps its deadline --------------------
L=$(r create -q --timeout "$(life 15)")
DL=$(there show --json "$L" | json 'd["deadline_ms"]')
mkfifo "$T/xout"
exec 8</etc/hostname	# left open, not close-on-exec: ssh must not get it
timeout 120 "$LANECTL" --context remote exec "$L" -- sh -c 'echo partial; exec sleep 600' \
    >"$T/xout" 2>"$T/x.err" &
TXPID=$!
exec 8<&-
exec 9<"$T/xout"
read -r LINE <&9
check_eq "exec: output as it comes" partial "$LINE"
XPID=$(pgrep -P "$TXPID" -x agent-lanectl)
XSSH=$(pgrep -P "$XPID" -x ssh)
# As spawned (the fixture's wrapper wrote them down: ssh closes all but
# 0-2 itself once it runs, so its own /proc would prove nothing).
FDS=$(cat "$FX/fds/$XSSH" 2>/dev/null)
check_nomatch "ssh inherits no descriptor the program left open" '/etc/hostname' "$FDS"
check_match "its input and output are a socket" '^.* 0 -> socket:' "$FDS"
check_match "its stderr a pipe (kept for messages)" ' 2 -> pipe:' "$FDS"
check "in a process group of its own (a ^C is the CLI's to handle)" \
    test "$(ps -o pgid= -p "$XSSH" | tr -d ' ')" != "$(ps -o pgid= -p "$XPID" | tr -d ' ')"
kill -KILL "$XSSH"
wait "$TXPID"; RC=$?
exec 9<&-
check_eq "ssh killed mid-exec: Agent Lane's status" 125 "$RC"
check_match "UNAVAILABLE, saying ssh was lost" 'UNAVAILABLE: ssh://.*(signal 9|closed)' "$(cat "$T/x.err")"
check_eq "the lane was not owned: it lives on" ready "$(there show --json "$L" | json 'd["state"]')"
check_eq "with its deadline" "$DL" "$(there show --json "$L" | json 'd["deadline_ms"]')"
timeout 120 setpriv --reuid="$AL_REMOTE_UID" --regid="$AL_REMOTE_GID" --init-groups \
    env -i HOME="$AL_REMOTE_HOME" PATH=/usr/bin:/bin "$LANECTL" events -f "$L" \
    >"$T/dl.events" 2>&1
check_match "which the remote daemon keeps (the lane expires there)" 'deadline' \
    "$(grep -i destroy "$T/dl.events")"

# ---- a terminal through ssh (root's daemon: its guests have ptys) ----------------
RL=$(rr create -q)
OUT=$(rr exec "$RL" -- perl -e 'sysopen(my $m, "/dev/ptmx", 2) or die "/dev/ptmx: $!\n"' 2>&1)
if [ $? -ne 0 ]; then
	not_ok "root's simulator has pseudo-terminals: $OUT"
else
	term() { python3 "$(dirname "$0")/term.py" "$LANECTL" --context=remote-root "$RL" "$1"; }
	check_eq "exec -t through ssh: the size at start, a pts, TERM passed on" \
	    "0 33 101 True TERM=vt100" "$(term size)"
	check_eq "exec -ti through ssh: a resize reaches the guest, status kept" \
	    "True True True 3 True" "$(term resize)"
	check_eq "^C through ssh reaches the guest command (128+SIGINT)" \
	    "True 130 True" "$(term ctrl-c)"
	check_eq "shell through ssh: a command in, its answer out, the status" \
	    "True 5 True" "$(term shell-exit)"
fi
rr rm "$RL" >/dev/null

# ---- typed failures --------------------------------------------------------------
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OUT=$("$LANECTL" --host "ssh://$AL_REMOTE_USER@127.0.0.1:$PORT" ls 2>&1); RC=$?
check_eq "no ssh server: exit 1" 1 "$RC"
check_match "UNAVAILABLE with ssh's own words" "UNAVAILABLE: ssh://$AL_REMOTE_USER@127.0.0.1:$PORT: .*Connection refused" "$OUT"
OUT=$(AL_SSH_CONFIG=$FX/client/config.stranger r ls 2>&1)
check_match "a key the host does not know: UNAVAILABLE, ssh's words" 'UNAVAILABLE: .*Permission denied \(publickey\)' "$OUT"
OUT=$(AL_SSH_CONFIG=$FX/client/config.empty r ls 2>&1)
check_match "an unknown host key: refused, UNAVAILABLE" 'UNAVAILABLE: .*Host key verification failed' "$OUT"
check_eq "and never accepted: known_hosts stays empty" 0 "$(wc -c <"$FX/client/known_hosts.empty")"
"$LANECTL" context create nocmd --host "$AL_REMOTE_URL" --remote-command /nonexistent/agent-lanectl >/dev/null
OUT=$("$LANECTL" --context nocmd ls 2>&1)
check_match "no agent-lanectl there: UNAVAILABLE with the remote shell's words" \
    'UNAVAILABLE: .*/nonexistent/agent-lanectl.*(not found|No such file)' "$OUT"
"$LANECTL" context create proto2 --host "$AL_REMOTE_URL" \
    --remote-command "$(dirname "$LANECTL")/tests/agent-lanectl-proto2" >/dev/null
OUT=$("$LANECTL" --context proto2 ls 2>&1); RC=$?
check_match "a remote agent-lanectl of another protocol version: FAILED_PRECONDITION" \
    'FAILED_PRECONDITION: .*protocol version 2, the client 1' "$OUT"
check_eq "exit 1" 1 "$RC"
# A daemon of another version behind a relay that let it through: the
# client checks the hello itself.
cat >"$FX/fake-remote" <<PY
#!/usr/bin/env python3
import os, sys
sys.path.insert(0, "$(dirname "$0")")
from wire import field, varint, frame
# HelloReply{protocol_version: 2, daemon_version: "9.9.9"}
os.write(1, frame(field(1, 2, field(1, 0, varint(2)) + field(2, 2, b"9.9.9"))))
sys.stdin.buffer.read(4)
PY
chmod 0755 "$FX/fake-remote"
cp "$(dirname "$0")/wire.py" "$FX/" && chmod 0644 "$FX/wire.py"
"$LANECTL" context create fakev2 --host "$AL_REMOTE_URL" --remote-command "$FX/fake-remote" >/dev/null
OUT=$("$LANECTL" --context fakev2 ls 2>&1)
check_match "a daemon of another version: FAILED_PRECONDITION naming both" \
    'FAILED_PRECONDITION: .*agent-laned 9\.9\.9 speaks protocol version 2, this client 1' "$OUT"

# ---- the relay on its own ---------------------------------------------------------
OUT=$(PYTHONPATH=$(dirname "$0") python3 - "$LANECTL" <<'PY'
import subprocess, sys
from wire import field, varint, frame, split_frames
def run(hello, env):
    p = subprocess.run([sys.argv[1], "system", "dial-stdio"], input=hello,
                       capture_output=True, env=env)
    return split_frames(p.stdout)[0].decode(errors="replace")
v2 = frame(field(1, 2, field(1, 0, varint(2))))
v1 = frame(field(1, 2, field(1, 0, varint(1))))
env = {"PATH": "/usr/bin:/bin", "AGENT_LANE_SOCKET": "/nonexistent/s.sock", "HOME": "/nonexistent"}
print(run(v2, env))
print(run(v1, env))
PY
)
check_match "dial-stdio answers a hello of another version with both versions" \
    'speaks protocol version 1, the client 2' "$(printf '%s' "$OUT" | head -1)"
check_match "and no daemon with UNAVAILABLE, where it looked" 'cannot reach agent-laned at /nonexistent/s.sock' \
    "$(printf '%s' "$OUT" | tail -1)"
OUT=$(AGENT_LANE_HOST=ssh://x "$LANECTL" --context remote system dial-stdio </dev/null 2>&1); RC=$?
check_eq "dial-stdio never follows a context (usage error)" 2 "$RC"

# ---- contexts pick the daemon -------------------------------------------------------
check_match "context ls: default and the fixture's" 'remote-root' "$("$LANECTL" context ls)"
check_eq "context use" remote "$("$LANECTL" context use remote)"
check_match "then a plain command reaches the remote daemon" "$AL_REMOTE_HOME" \
    "$("$LANECTL" info --json | json 'd["daemon"]["state_dir"]')"
check_match "context show says why" 'selected by: +current context' "$("$LANECTL" context show)"
check_match "\$AGENT_LANE_HOST beats the current context" "$FX/rootd" \
    "$(AGENT_LANE_HOST=unix://$FX/rootd/run/laned.sock "$LANECTL" info --json | json 'd["daemon"]["state_dir"]')"
check_match "--context beats \$AGENT_LANE_HOST" "$FX/rootd" \
    "$(AGENT_LANE_HOST=unix:///nonexistent "$LANECTL" --context remote-root info --json | json 'd["daemon"]["state_dir"]')"
check_eq "context use default" default "$("$LANECTL" context use default)"

# ---- the library ----------------------------------------------------------------------
LIBREMOTE=$(dirname "$LANECTL")/tests/al-libremote
if [ -x "$LIBREMOTE" ]; then
	head -c 200000 /dev/urandom >"$T/lib.bin"
	"$LIBREMOTE" "$AL_REMOTE_URL" "$AL_REMOTE_CMD" "$T/lib.bin" \
	    "ssh://$AL_REMOTE_USER@127.0.0.1:$PORT" >"$T/lib.out" 2>&1
	RC=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "${line#ok * - }" ;;
		"not ok "*) not_ok "${line#not ok * - }" ;;
		*) echo "# $line" ;;
		esac
	done <"$T/lib.out"
	check_eq "al-libremote exits 0" 0 "$RC"
	check "the library's copy came back whole" cmp -s "$T/lib.bin" "$T/lib.bin.back"
else
	not_ok "al-libremote is built ($LIBREMOTE; make tests)"
fi
check_eq "no lane left on the remote host" "" "$(there ls -q)"
# Under the ASan+UBSan build a report in a fixture daemon's log is a failure.
for f in "$FX/laned.log" "$FX/rootd.log"; do
	if grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$f"; then
		not_ok "$(basename "$f" .log) ran clean under the sanitizers"
		grep -E -A20 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$f" | head -40 | sed 's/^/#   /'
	fi
done
if [ "$_failed" -gt 0 ]; then
	echo "# the remote daemon's log:"
	tail -n 40 "$FX/laned.log" | sed 's/^/#   /'
	echo "# sshd:"
	tail -n 20 "$FX/sshd.log" | sed 's/^/#   /'
fi
finish
