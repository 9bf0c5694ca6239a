#!/usr/bin/env bash
# Self-test of the limactl simulator (tests/lima-sim/limactl).
# Prints one TAP-style "ok N - ..." / "not ok N - ..." line per check and
# exits non-zero if any check failed.  Cleans up everything it started.
# Usage: tests/lima-sim/test-sim.sh            (root or an unprivileged user)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
LIMACTL=$HERE/limactl
T=$(mktemp -d /tmp/ls.XXXX)          # short: the socket-path limit counts LIMA_HOME
export LIMA_HOME=$T/lima
export LIMA_SIM_BOOT_MS=50
unset LIMA_SIM_FAIL LIMA_SIM_HANG LIMA_SIM_DIE LIMA_SIM_REFUSE_ROOT LIMA_SIM_LOG LIMA_SIM_VERSION
BG_PIDS=()
N=0
FAILED=0
T0=$(date +%s.%N)

cleanup() {
    local p d
    for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    if [ -d "$LIMA_HOME" ]; then
        for d in "$LIMA_HOME"/*/; do
            [ -d "$d" ] || continue
            [ -f "$d/lima.yaml" ] || : > "$d/lima.yaml"
            "$LIMACTL" delete -f "$(basename "$d")" >/dev/null 2>&1
        done
        for p in "$LIMA_HOME"/*/*.pid; do          # belt and braces
            [ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
        done
    fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

report() {  # report STATUS DESCRIPTION [DETAIL]
    N=$((N + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $N - $2"
    else
        echo "not ok $N - $2${3:+ ($3)}"
        FAILED=$((FAILED + 1))
    fi
}
check() {  # check DESCRIPTION COMMAND...
    local d=$1
    shift
    "$@"
    report $? "$d"
}
lc() { "$LIMACTL" "$@" </dev/null; }
# run: capture stdout/stderr/exit status of one limactl call
run() {
    "$LIMACTL" "$@" >"$T/out" 2>"$T/err" </dev/null
    RC=$?
}
has_err() { grep -qF -- "$1" "$T/err"; }
rc_err() {  # rc_err EXPECTED_RC TEXT: last run exited so and logged TEXT on stderr
    [ "$RC" = "$1" ] && has_err "$2"
}
status_of() { lc list --format '{{.Status}}' "$1" 2>/dev/null </dev/null; }
wait_for() {  # wait_for SECONDS COMMAND...: poll until COMMAND succeeds
    local deadline=$(($(date +%s%N) + ${1%.*} * 1000000000 + 1))
    shift
    until "$@"; do
        [ "$(date +%s%N)" -gt "$deadline" ] && return 1
        sleep 0.02
    done
}
is_status() { [ "$(status_of "$1")" = "$2" ]; }
pyjson() { /usr/bin/python3 -c "$1" "${@:2}"; }
# fault variables count calls per LIMA_HOME; this is the number of the next one
next_call() { echo $(($(cat "$LIMA_HOME/_sim/$1.count" 2>/dev/null || echo 0) + 1)); }

cat > "$T/lane.yaml" <<'EOF'
# lane template used by the simulator self-test
cpus: 2
memory: 2GiB
disk: 10GiB
plain: true
EOF

# ---------------------------------------------------------------- basics
run --version
check "--version prints limactl version 2.2.0" \
    test "$RC" = 0 -a "$(cat "$T/out")" = "limactl version 2.2.0"

run list --json
check "list on an empty LIMA_HOME: warning, empty stdout, exit 0" \
    test "$RC" = 0 -a ! -s "$T/out" -a -n "$(grep 'No instance found' "$T/err")"

bad=0
for name in 'my/instance' 'c:default' 'dot.' '.dot' 'dot..dot' 'underscore_' '_underscore' \
            'dash--dash' '-dash' 'default.yaml' 'MY.YAML' 'My.YmL'; do
    "$LIMACTL" --tty=false create --name="$name" "$T/lane.yaml" >/dev/null 2>"$T/err" </dev/null
    rc=$?
    if [ $rc != 1 ] || ! grep -q 'level=fatal' "$T/err"; then bad=1; echo "# accepted bad name $name"; fi
done
check "create rejects invalid instance names (Lima's test vectors) with a fatal error" test $bad = 0
maxlen=$((80 - ${#LIMA_HOME}))
long=$(printf 'a%.0s' $(seq 1 $((maxlen + 1))))
run --tty=false create --name="$long" "$T/lane.yaml"
check "create enforces the socket-path limit (len(LIMA_HOME)+len(name)+27 < 108)" \
    test "$RC" = 1 -a ! -e "$LIMA_HOME/$long" -a -n "$(grep 'UNIX_PATH_MAX' "$T/err")"
run --tty=false create --name="${long:1}" "$T/lane.yaml"
check "a name exactly at the socket-path limit is accepted" test "$RC" = 0
lc delete -f "${long:1}" >/dev/null 2>&1

# ---------------------------------------------------------------- create
A=al-0123456789abcdef
run --tty=false --log-format=json create --name=$A "$T/lane.yaml"
check "create (daemon form) exits 0 and prints nothing on stdout" test "$RC" = 0 -a ! -s "$T/out"
check "create logs JSON lines on stderr with --log-format=json" \
    pyjson 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$T/err"
check "create writes lima.yaml (verbatim), lima-version (0444), cloud-config.yaml, disk" \
    bash -c "cmp -s '$T/lane.yaml' '$LIMA_HOME/$A/lima.yaml' && test -f '$LIMA_HOME/$A/cloud-config.yaml' \
             -a -f '$LIMA_HOME/$A/disk' -a \"\$(stat -c %a '$LIMA_HOME/$A/lima-version')\" = 444"
run --tty=false create --name=$A "$T/lane.yaml"
check "create on an existing name exits 1" test "$RC" = 1
run --tty=false create -
check "create - without --name exits 1" rc_err 1 'must pass instance name with --name'
"$LIMACTL" --tty=false create --name=fromstdin - <"$T/lane.yaml" >"$T/out" 2>"$T/err"
check "create --name=X - reads the template from stdin" cmp -s "$T/lane.yaml" "$LIMA_HOME/fromstdin/lima.yaml"
run -y create bare1
check "create with a bare instance name uses template:default and logs the deprecation" \
    bash -c "test $RC = 0 -a -f '$LIMA_HOME/bare1/lima.yaml' && grep -q 'deprecated' '$T/err'"
run -y create --name=tmpl2 template://default
check "template://default warns and works" \
    bash -c "test $RC = 0 -a -f '$LIMA_HOME/tmpl2/lima.yaml' && grep -q 'should be written' '$T/err'"
run -y create --name=edited --cpus 3 --memory 0.5 --disk=7 "$T/lane.yaml"
check "--cpus/--memory/--disk edit the written lima.yaml" \
    bash -c "grep -qx 'cpus: 3' '$LIMA_HOME/edited/lima.yaml' && grep -qx 'memory: \"0.5GiB\"' '$LIMA_HOME/edited/lima.yaml' \
             && grep -qx 'disk: \"7GiB\"' '$LIMA_HOME/edited/lima.yaml'"
printf 'cpus: [unclosed\n' > "$T/broken.yaml"
run -y create --name=badyaml "$T/broken.yaml"
check "a create that fails leaves no half-made directory" test "$RC" = 1 -a ! -e "$LIMA_HOME/badyaml"
lc delete fromstdin bare1 tmpl2 edited >/dev/null 2>&1

run list --json $A
check "list --json of a stopped instance: Stopped, no PIDs, keys in Lima's order" pyjson '
import json, sys
d = json.loads(open(sys.argv[1]).read())
keys = ["name","hostname","status","dir","vmType","arch","cpus","memory","disk","sshConfigFile",
        "config","sshAddress","protected","limaVersion","HostOS","HostArch","LimaHome","IdentityFile"]
assert list(d) == keys, list(d)
assert d["status"] == "Stopped" and d["hostname"] == "lima-" + d["name"] and d["vmType"] == "qemu"
assert d["memory"] == 2 << 30 and d["disk"] == 10 << 30 and d["cpus"] == 2
' "$T/out"

# ---------------------------------------------------------------- start
t_start=$(date +%s%N)
exec 7>"$T/leak-marker"
"$LIMACTL" --tty=false start $A >"$T/out" 2>"$T/err" </dev/null
RC=$?
exec 7>&-
t_start=$((($(date +%s%N) - t_start) / 1000000))
check "start exits 0, stdout empty, READY on stderr (took ${t_start} ms)" \
    bash -c "test $RC = 0 -a ! -s '$T/out' && grep -q 'READY' '$T/err'"
D=$LIMA_HOME/$A
check "start wrote ha.pid, qemu.pid, ha.sock (a socket), ssh.config and the running event" \
    bash -c "test -f '$D/ha.pid' -a -f '$D/qemu.pid' -a -S '$D/ha.sock' -a -f '$D/ssh.config' \
             && grep -q '\"running\":true' '$D/ha.stdout.log'"
HA=$(cat "$D/ha.pid")
check "the hostagent inherited the caller's inheritable fd 7 (fd leaks are observable)" \
    test "$(readlink "/proc/$HA/fd/7")" = "$T/leak-marker"
check "the driver process (qemu.pid) inherited fd 7 as well" \
    test "$(readlink "/proc/$(cat "$D/qemu.pid")/fd/7")" = "$T/leak-marker"
check "the hostagent runs in its own process group" \
    test "$(ps -o pgid= -p "$HA" | tr -d ' ')" = "$HA"
run start $A
check "start on a running instance: exit 0 with 'already running'" rc_err 0 'is already running'

run list --json
check "list --json of a running instance: Running, PIDs, sshLocalPort, keys in order" pyjson '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1
d = json.loads(lines[0])
keys = ["name","hostname","status","dir","vmType","arch","cpus","memory","disk","sshLocalPort",
        "sshConfigFile","hostAgentPID","driverPID","config","sshAddress","protected","limaVersion",
        "HostOS","HostArch","LimaHome","IdentityFile"]
assert list(d) == keys, list(d)
assert d["status"] == "Running" and d["hostAgentPID"] > 0 and d["driverPID"] > 0
assert d["sshLocalPort"] > 0 and d["limaVersion"] == "v2.2.0"
' "$T/out"
run list --json $A nosuch1
check "list with an unknown name prints the known ones, then exits 1 'unmatched instances'" \
    bash -c "test $RC = 1 -a \$(wc -l < '$T/out') = 1 && grep -q 'unmatched instances' '$T/err'"
run list -q
check "list -q prints names only" test "$RC" = 0 -a "$(cat "$T/out")" = "$A"
run --tty false ls --format '{{.Status}}' $A
check "global flags before the subcommand (--tty false) and --format '{{.Status}}'" \
    test "$RC" = 0 -a "$(cat "$T/out")" = Running

# ---------------------------------------------------------------- shell
run shell $A -- sh -c 'exit 42'
check "shell: exit status of the remote command (42)" test "$RC" = 42
run shell $A sh -c 'kill -9 $$'
check "shell: remote killed by a signal gives 255" test "$RC" = 255
run shell --workdir /nonexistent $A true
check "shell --workdir to a missing directory exits 1" test "$RC" = 1
run shell --workdir /tmp $A pwd
check "shell --workdir /tmp runs there" test "$RC" = 0 -a "$(cat "$T/out")" = /tmp
run shell $A pwd
check "shell without --workdir starts in the guest home (/home/<user>.guest)" \
    bash -c "test $RC = 0 && grep -qx '/home/.*\.guest' '$T/out'"
echo 'echo "script from stdin"; exit 7' | "$LIMACTL" shell $A >"$T/out" 2>"$T/err"
check "shell without a command runs bash -l on stdin" test "$?" = 7 -a "$(cat "$T/out")" = "script from stdin"
run shell $A -- echo --workdir /x -- y
check "shell: flags after NAME belong to the command, one leading -- stripped" \
    test "$RC" = 0 -a "$(cat "$T/out")" = "--workdir /x -- y"
run shell $A FOO='a b$c' sh -c 'printf %s "$FOO"'
check "shell: leading KEY=value arguments are environment assignments" test "$(cat "$T/out")" = 'a b$c'
HOST_ONLY_SECRET=leak-me-$$ "$LIMACTL" shell $A env >"$T/out" 2>"$T/err" </dev/null
check "shell: clean guest environment (HOME, USER, SHELL, PATH, LANG; nothing from the host)" pyjson '
import sys
env = dict(l.split("=", 1) for l in open(sys.argv[1]).read().splitlines() if "=" in l)
assert env["SHELL"] == "/bin/bash" and env["LANG"] == "C.UTF-8" and env["HOME"].endswith(".guest")
assert env["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
assert env["USER"] == env["LOGNAME"]
assert not any("leak-me" in v for v in env.values()), env
assert "LIMA_HOME" not in env and "LIMA_SIM_BOOT_MS" not in env
' "$T/out"
KEEP_A=1 KEEP_B=2 TERM=xterm SHLVL=9 LIMA_SHELLENV_ALLOW=SHLVL "$LIMACTL" shell --preserve-env $A env \
    >"$T/out" 2>"$T/err" </dev/null
check "shell --preserve-env: Lima 2.2's block list (TERM blocked), the allow list only exempts" pyjson '
import sys
env = dict(l.split("=", 1) for l in open(sys.argv[1]).read().splitlines() if "=" in l)
assert env.get("KEEP_A") == "1" and env.get("KEEP_B") == "2", env
assert env.get("TERM") != "xterm" and env.get("SHLVL") == "9", env
' "$T/out"
LIMA_SHELLENV_BLOCK='+KEEP-A' "$LIMACTL" shell --preserve-env $A true >"$T/out" 2>"$T/err" </dev/null
RC=$?
check "shell --preserve-env: a block pattern outside [A-Za-z0-9_*] is fatal, as in Lima" \
    rc_err 1 'Invalid LIMA_SHELLENV_BLOCK pattern: pattern `KEEP-A` contains invalid character `-` at position 4'
run shell
check "shell without a name: Lima's \"requires instance name as first argument\"" \
    rc_err 1 'msg="requires instance name as first argument"'
head -c 4194304 /dev/urandom > "$T/rand"
sum_in=$(sha256sum < "$T/rand" | cut -d' ' -f1)
sum_out=$("$LIMACTL" shell $A cat < "$T/rand" 2>/dev/null | sha256sum | cut -d' ' -f1)
check "shell: 4 MiB of random bytes through stdin/stdout are byte-exact" test "$sum_in" = "$sum_out"
run shell $A sh -c 'echo out; echo err >&2'
check "shell: stdout carries only the remote stdout" test "$(cat "$T/out")" = out -a "$(cat "$T/err")" = err
run shell $A sh -c 'id -u; hostname; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "'
check "guest: unprivileged user, hostname lima-NAME, only the lo interface" \
    bash -c "test \"\$(sed -n 1p '$T/out')\" != 0 -a \"\$(sed -n 2p '$T/out')\" = lima-$A \
             -a \"\$(sed -n '3,\$p' '$T/out')\" = lo"
run shell $A sh -c 'cat /proc/1/cmdline | tr "\0" " "; echo; ps -e --no-headers | wc -l'
host_init=$(tr '\0' ' ' </proc/1/cmdline)
check "guest: own PID namespace (pid 1 is the sandbox init, a handful of processes)" \
    bash -c "grep -q '^/usr/bin/bwrap --args' '$T/out' && test \"\$(sed -n 1p '$T/out')\" != '$host_init' \
             && test \$(sed -n 2p '$T/out') -lt 10"
echo "host-secret" > "$T/host-marker"
echo "host-secret" > "/tmp/ls-sim-marker-$$"
run shell $A sh -c "test -e /work || test -e '$LIMA_HOME' || test -e '$T' || test -e /tmp/ls-sim-marker-$$ \
    || test -e '$HERE' || test -e /root/.cache || grep -rqs host-secret /tmp /home /var/tmp; test \$? = 1"
rm -f "/tmp/ls-sim-marker-$$"
check "guest cannot see /work, /root contents, host /tmp, LIMA_HOME, the test dir" test "$RC" = 0
if [ "$(id -u)" = 0 ]; then
    G=$(cat "$D/guest.pid")
    check "guest's /root is its own empty directory (checked from the host with nsenter)" \
        test -z "$(nsenter -t "$G" -m -r ls -A /root)"
fi
run shell $A sh -c 'command -v ps kill perl tar git sh bash awk >/dev/null && perl -e 1 && echo x | awk "{print}" && git --version'
check "guest has ps, kill, perl, tar, git, sh, bash, awk" test "$RC" = 0

lc shell $A sh -c 'echo persisted > /tmp/persist; echo home > ~/h' </dev/null
run shell $A cat /tmp/persist
check "a file written to the guest's /tmp is there in the next shell" test "$(cat "$T/out")" = persisted
# The starting shell ends only once its child runs sleep (not while it is
# still nohup, or the forked sh), so that a busy machine cannot make the
# check below look before the exec rather than after the shell's end.
lc shell $A sh -c 'nohup sleep 100 >/dev/null 2>&1 & p=$!; i=0
    while [ "$(ps -o args= -p "$p")" != "sleep 100" ] && [ $i -lt 400 ]; do
        sleep 0.05; i=$((i + 1)); done' </dev/null
run shell $A ps -eo args
check "a background process survives the shell that started it" grep -qx 'sleep 100' "$T/out"

# killing the host-side `limactl shell` must look like a dropped ssh connection
# The kills wait until the guest command has begun (it says so in a file),
# never for a guessed time.
lc shell $A rm -f /tmp/eof-seen /tmp/x /tmp/cat-started </dev/null
mkfifo "$T/fifo"
"$LIMACTL" shell $A sh -c 'touch /tmp/cat-started; cat > /tmp/x; echo done > /tmp/eof-seen' <"$T/fifo" >/dev/null 2>&1 &
SP=$!
BG_PIDS+=("$SP")
exec 8>"$T/fifo"                      # keep the writer open: the guest would block forever
echo partial >&8
wait_for 20 lc shell $A test -f /tmp/cat-started </dev/null
{ kill -9 $SP; wait $SP; } 2>/dev/null
check "SIGKILL of the host limactl shell: the guest side sees EOF on stdin" \
    wait_for 20 lc shell $A test -f /tmp/eof-seen
exec 8>&-
lc shell $A rm -f /tmp/epipe /tmp/y-started </dev/null
"$LIMACTL" shell $A sh -c 'trap "" PIPE; touch /tmp/y-started; while :; do echo y || { echo epipe > /tmp/epipe; exit 3; }; done' \
    >/dev/null 2>&1 </dev/null &
SP=$!
BG_PIDS+=("$SP")
wait_for 20 lc shell $A test -f /tmp/y-started </dev/null
{ kill -9 $SP; wait $SP; } 2>/dev/null
check "SIGKILL of the host limactl shell: the guest side gets EPIPE on stdout" \
    wait_for 20 lc shell $A test -f /tmp/epipe
echo 'hello copy' > "$T/cp-src"
lc copy "$T/cp-src" "$A:/tmp/cp-dst" 2>/dev/null && lc cp "$A:/tmp/cp-dst" "$T/cp-back" 2>/dev/null
check "copy host -> guest -> host" cmp -s "$T/cp-src" "$T/cp-back"

# ---------------------------------------------------------------- stop
run stop $A
check "graceful stop exits 0 and the instance is Stopped (pid/sock files gone)" \
    bash -c "test $RC = 0 && test \"\$('$LIMACTL' list --format '{{.Status}}' $A)\" = Stopped \
             -a ! -e '$D/ha.pid' -a ! -e '$D/ha.sock' && grep -q '\"exiting\":true' '$D/ha.stdout.log'"
check "the hostagent is gone after stop" bash -c "! kill -0 $HA 2>/dev/null || grep -q '^State:.*Z' /proc/$HA/status"
run stop $A
check "stop on a stopped instance exits 1 (expected status Running)" \
    bash -c "test $RC = 1 && grep -q 'expected status .Running., got .Stopped.' '$T/err'"
run shell $A true
check "shell on a stopped instance exits 1 'is stopped'" rc_err 1 'is stopped'
run shell nosuch2 true
check "shell on a missing instance exits 1 'does not exist'" rc_err 1 'does not exist'
run stop -f $A
check "stop -f on a stopped instance exits 0" test "$RC" = 0
run stop nosuch3
check "stop of a missing instance exits 1" test "$RC" = 1
run stop -f nosuch3
check "stop -f of a missing instance exits 1" test "$RC" = 1
lc start $A >/dev/null 2>&1 </dev/null
run shell $A cat /tmp/persist
check "guest files survive stop/start" test "$(cat "$T/out")" = persisted
lc shell $A sh -c 'nohup sleep 101 >/dev/null 2>&1 &' </dev/null
: > "$D/junk.tmp"
run stop -f $A
check "stop -f on a running instance: exit 0, *.pid *.sock *.tmp removed" \
    bash -c "test $RC = 0 && ! ls '$D' | grep -qE '\\.(pid|sock|tmp)\$'"
check "stop -f killed the guest's background processes" bash -c "! pgrep -x -f 'sleep 101' >/dev/null"
check "status is Stopped after stop -f" is_status $A Stopped

# ---------------------------------------------------------------- delete
run delete nosuch4
check "delete of a missing instance: warning and exit 0" rc_err 0 'Ignoring non-existent instance'
lc start $A >/dev/null 2>&1 </dev/null
run delete $A
check "delete of a running instance without -f exits 1 and keeps it" \
    bash -c "test $RC = 1 && test -f '$D/lima.yaml'"
mkdir -p "$LIMA_HOME/probe"
run list --json probe
check "a directory without lima.yaml is listed as Broken" \
    bash -c "grep -q '^{\"name\":\"probe\",\"hostname\":\"[^\"]*\",\"status\":\"Broken\"' '$T/out'"
run delete -f probe
check "delete refuses a directory without lima.yaml (exit 1, not deleted)" test "$RC" = 1 -a -d "$LIMA_HOME/probe"
rmdir "$LIMA_HOME/probe"
HA=$(cat "$D/ha.pid")
run rm -f $A
check "delete -f (alias rm) of a running instance removes the whole directory" \
    bash -c "test $RC = 0 -a ! -e '$D' && grep -q 'Deleted' '$T/err'"
check "its hostagent is gone" bash -c "! kill -0 $HA 2>/dev/null || grep -q '^State:.*Z' /proc/$HA/status"

# ---------------------------------------------------------------- as Lima 2.2 (README.md, "Checked against Lima 2.2")
mkdir -p "$LIMA_HOME/half1"
lc --tty=false create --name=whole1 "$T/lane.yaml" >/dev/null 2>&1
run delete half1 whole1
check "delete: a directory without lima.yaml is kept with Lima's text, the other names still go, exit 1" \
    bash -c "test $RC = 1 -a -d '$LIMA_HOME/half1' -a ! -e '$LIMA_HOME/whole1' && grep -qF 'it was NOT deleted, in case it is currently being cloned into. If no \`limactl\` operation is using it, remove it manually' '$T/err'"
mkdir -p "$LIMA_HOME/badyaml1" && printf 'cpus: [\n' > "$LIMA_HOME/badyaml1/lima.yaml"
run list --json half1 badyaml1
check "list --json: a missing lima.yaml is Broken with hostname \"\" and Go's PathError; an unloadable one has status \"\"" pyjson '
import json, sys
a, b = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert a["status"] == "Broken" and a["hostname"] == "" and a["errors"] == [{"Op": "open", "Path": sys.argv[2] + "/half1/lima.yaml", "Err": 2}], a
assert b["status"] == "" and b["hostname"] == "lima-badyaml1" and b["vmType"] == "" and b["errors"] == [] and "config" not in b, b
assert list(a)[-4:] == ["HostOS", "HostArch", "LimaHome", "IdentityFile"]
' "$T/out" "$LIMA_HOME"
check "list warns that LIMA_HOME does not look like a valid Lima directory" \
    has_err 'does not look like a valid Lima directory'
run delete badyaml1
check "delete of an unloadable lima.yaml without -f: expected status Stopped, got \"\"" \
    rc_err 1 'expected status `Stopped`, got ``'
run delete -f badyaml1
check "... and with -f it goes" test "$RC" = 0 -a ! -e "$LIMA_HOME/badyaml1"
rmdir "$LIMA_HOME/half1"
printf 'plain: false\nuser:\n  passwordlessSudo: false\n' > "$T/nopw.yaml"
run --tty=false create --name=nopw "$T/nopw.yaml"
check "create: user.passwordlessSudo: false without plain: true is refused with Lima's message" \
    bash -c "test $RC = 1 -a ! -e '$LIMA_HOME/nopw' && grep -qF '\`user.passwordlessSudo: false\` requires \`plain: true\`' '$T/err'"
printf 'minimumLimaVersion: 9.0.0\nmemory: lots\n' > "$T/minv.yaml"
run --tty=false create --name=minv "$T/minv.yaml"
check "create: every validation error, joined, with Lima's minimumLimaVersion and size messages" \
    rc_err 1 'template requires Lima version `9.0.0`; this is only `v2.2.0`\nfield `memory` has an invalid value: invalid size: '
printf 'plain: true\nbogusKey: 1\n' > "$T/unk.yaml"
run --tty=false create --name=unk "$T/unk.yaml"
check "create: an unknown key only warns \"Non-strict YAML detected\" (template, then the instance's file twice)" \
    bash -c "test $RC = 0 -a \"\$(grep -c 'Non-strict YAML detected' '$T/err')\" = 3 && grep -q 'unknown field' '$T/err'"
check "create: the instance directory is 0700, lima-version says v2.2.0, cloud-config.yaml is 0444" \
    bash -c "test \"\$(stat -c %a '$LIMA_HOME/unk')\" = 700 -a \"\$(cat '$LIMA_HOME/unk/lima-version')\" = v2.2.0 -a \"\$(stat -c %a '$LIMA_HOME/unk/cloud-config.yaml')\" = 444"
lc delete -f unk >/dev/null 2>&1
printf 'images:\n- location: /srv/img/guest.qcow2\n  arch: %s\nplain: true\n' "$(uname -m)" > "$T/img.yaml"
run --tty=false create --name=img1 "$T/img.yaml"
check "create: the download lines name lima.yaml's image, a local file quoted with backquotes" \
    bash -c "grep -q 'location=/srv/img/guest.qcow2' '$T/err' && grep -qF 'Downloaded the image from \`/srv/img/guest.qcow2\`' '$T/err'"
lc delete -f img1 >/dev/null 2>&1
run stop a b
check "argument errors carry cobra's usage line and the command's Short, as Lima's WrapArgsError" \
    has_err 'Usage:  limactl stop INSTANCE [flags]\n\nStop an instance"'
cat > "$T/gotmpl.yaml" <<'EOF'
plain: true
param:
  FOO: bar
provision:
- mode: system
  script: |
    echo '{{.Name}} {{.Hostname}} {{.UID}} {{.User}} {{.Home}} {{.Param.FOO}} {{.Nope}}' {{- /* c */ -}} !
- mode: user
  script: |
    echo {{.User
- mode: system
  script: echo "$LIMA_CIDATA_USER"
EOF
run --tty=false create --name=gotmpl "$T/gotmpl.yaml"
check "create: a provision script that does not parse as a Go template is kept, with Lima's warning" \
    rc_err 0 "msg=\"Couldn't process provisioning script \\\"echo {{.User\\\\n\\\" as a template\" error=\"template: :2: unclosed action started at :1\""
check "create: a script that uses the LIMA_CIDATA variables gets Lima's warning" \
    has_err 'msg="provisioning scripts should not reference the LIMA_CIDATA variables"'
run list --json gotmpl
check "list --json: the config has the scripts expanded ({{.Name}} {{.Hostname}} {{.UID}} {{.User}} {{.Home}} {{.Param.KEY}})" pyjson '
import json, os, pwd, sys
p = json.loads(open(sys.argv[1]).read())["config"]["provision"]
u = "lane" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
uid = 1000 if os.geteuid() == 0 else os.geteuid()
want = "echo %sgotmpl lima-gotmpl %d %s /home/%s.guest bar <no value>%s!\n" % (chr(39), uid, u, u, chr(39))
assert p[0]["script"] == want, (p[0]["script"], want)
assert p[1]["script"] == "echo {{.User\n" and p[2]["mode"] == "system", p
' "$T/out"
lc delete -f gotmpl >/dev/null 2>&1
printf 'plain: true\nprovision:\n- script: "{{if .User}}x{{end}}"\n' > "$T/gotmpl2.yaml"
run --tty=false create --name=gotmpl2 "$T/gotmpl2.yaml"
check "create: a template action other than a field reference fails loudly (not guessed at)" \
    rc_err 1 'implements only field references such as {{.User}} and {{.Param.KEY}} in Go templates, not {{if .User}}'
# `limactl template copy --embed-all`: what Lima 2.2 prints for these files (with the
# simulator's stand-in of _images/ubuntu-lts as a local file), byte for byte.
mkdir -p "$T/tmpl"
cat > "$T/tmpl/base.yaml" <<'EOF'
# a local base
vmType: qemu
cpus: 4
ssh:
  localPort: 2222
mounts:
- location: /b
provision:
- mode: system
  script: echo base
EOF
cat > "$T/tmpl/t.yaml" <<'EOF'
# the template
minimumLimaVersion: 2.0.0
base:
- ./base.yaml
- template:_images/ubuntu-lts
cpus: 2
ssh:
  forwardAgent: false
mounts: []
provision:
- mode: system
  script: echo top
EOF
cat > "$T/tmpl/want" <<'EOF'
# the template
minimumLimaVersion: 2.0.0
cpus: 2
ssh:
  forwardAgent: false
  localPort: 2222
mounts:
- location: /b
provision:
- mode: system
  script: echo base
- mode: system
  script: echo top

# a local base
vmType: qemu
images:
- location: "https://cloud-images.ubuntu.com/releases/noble/release/ubuntu-24.04-server-cloudimg-amd64.img"
  arch: "x86_64"
- location: "https://cloud-images.ubuntu.com/releases/noble/release/ubuntu-24.04-server-cloudimg-arm64.img"
  arch: "aarch64"
EOF
run template copy --embed-all "$T/tmpl/t.yaml"
check "template copy --embed-all FILE: the bases (a local file, a template:) merged as Lima merges them, no base: left" \
    cmp -s "$T/out" "$T/tmpl/want"
(cd "$T/tmpl" && "$LIMACTL" tmpl copy --embed-all - - < t.yaml > "$T/out" 2>"$T/err")
check "template copy --embed-all - -: the same from stdin (relative bases from the working directory) to stdout" \
    cmp -s "$T/out" "$T/tmpl/want"
run template copy --embed-all "$T/tmpl/t.yaml" "$T/tmpl/copy.yaml"
check "template copy --embed-all FILE DEST writes DEST (0644), nothing on stdout" \
    bash -c "test $RC = 0 -a ! -s '$T/out' && cmp -s '$T/tmpl/copy.yaml' '$T/tmpl/want' && test \"\$(stat -c %a '$T/tmpl/copy.yaml')\" = 644"
run template copy "$T/tmpl/t.yaml"
check "template copy FILE (no embedding) makes the relative base absolute, as Lima's UseAbsLocators" \
    bash -c "test $RC = 0 && grep -qx -- '- $T/tmpl/base.yaml' '$T/out' && grep -qx -- '- template:_images/ubuntu-lts' '$T/out'"
run template copy --embed "$T/tmpl/t.yaml"
check "template copy --embed embeds the file base and keeps the template: one" \
    bash -c "test $RC = 0 && grep -qx 'base:' '$T/out' && grep -qx -- '- template:_images/ubuntu-lts' '$T/out' && ! grep -q 'base.yaml' '$T/out' && grep -qx '  localPort: 2222' '$T/out'"
run template copy --embed --verbatim "$T/tmpl/t.yaml"
check "template copy: --verbatim with --embed is Lima's error" \
    rc_err 1 '--verbatim cannot be used with any of --embed, --embed-all, or --fill'
printf 'base: loop.yaml\n' > "$T/tmpl/loop.yaml"
run template copy --embed-all "$T/tmpl/loop.yaml"
check "template copy: a base loop is Lima's error" \
    rc_err 1 "base template loop detected: template \`$T/tmpl/loop.yaml\` already included"
run template copy
check "template copy without arguments: Lima's usage error" \
    rc_err 1 '`limactl template copy` accepts between 1 and 2 arg(s), received 0.\nSee `limactl template copy --help`.\n\nUsage:  limactl template copy [OPTIONS] TEMPLATE [DEST] [flags]\n\nCopy template'
run validate "$T/tmpl/t.yaml" "$T/lane.yaml"
check "validate FILE...: each embedded and validated, \"\`FILE\`: OK\"" \
    bash -c "test $RC = 0 && grep -qF 'msg=\"\`$T/tmpl/t.yaml\`: OK\"' '$T/err' && grep -qF 'msg=\"\`$T/lane.yaml\`: OK\"' '$T/err'"
run --tty=false create --name=emb1 "$T/tmpl/t.yaml"
check "create embeds the base templates into lima.yaml, as template copy --embed-all does (no base: left)" \
    bash -c "test $RC = 0 && cmp -s '$LIMA_HOME/emb1/lima.yaml' '$T/tmpl/want'"
cp "$T/tmpl/t.yaml" "$LIMA_HOME/emb1/lima.yaml"
run list --json emb1
check "an instance's lima.yaml that still has base: does not validate: status \"\", Lima's warning" pyjson '
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["status"] == "" and d["vmType"] == "" and "config" not in d, d
assert "field `base` must be empty for YAML validation" in open(sys.argv[2]).read()
' "$T/out" "$T/err"
run start emb1
check "... start refuses it: instance \"NAME\" has configuration errors" \
    rc_err 1 'instance \"emb1\" has configuration errors: field `base` must be empty for YAML validation'
run shell emb1 true
check "... and shell: instance \`NAME\` has no configuration" rc_err 1 'msg="instance `emb1` has no configuration"'
lc delete -f emb1 >/dev/null 2>&1
printf 'cpus: 0\n' > "$T/tmpl/cpus0.yaml"
run validate "$T/tmpl/cpus0.yaml"
check "validate: a template that fails validation, with Lima's message" \
    rc_err 1 "failed to validate YAML file \`$T/tmpl/cpus0.yaml\`: field \`cpus\` must be set"
printf 'plain: true\nparam:\n  FOO: bar\nprovision:\n- script: "true"\n' > "$T/param.yaml"
run --tty=false create --name=param1 "$T/param.yaml"
check "create: a param that no script uses is refused with Lima's message" \
    rc_err 1 'field `param` key `FOO` is not used in any provision, probe, copyToHost, or portForward'

# ---------------------------------------------------------------- start variants
run start lazy1
check "start of a missing name creates it (Lima's hazard) and boots it" \
    bash -c "test $RC = 0 -a -f '$LIMA_HOME/lazy1/lima.yaml' && test \"\$('$LIMACTL' ls --format '{{.Status}}' lazy1)\" = Running"
lc delete -f lazy1 >/dev/null 2>&1
lc -y create --name=b1 "$T/lane.yaml" >/dev/null 2>&1
LIMA_SIM_BOOT_MS=1000 "$LIMACTL" start --timeout 200ms b1 >"$T/out" 2>"$T/err" </dev/null
RC=$?
check "start --timeout expiry: exit 1, 'did not receive an event with the running status'" \
    rc_err 1 'did not receive an event with the `running` status'
check "... and the VM is left running" wait_for 5 is_status b1 Running
lc stop -f b1 >/dev/null 2>&1
LIMA_SIM_BOOT_MS=2000 "$LIMACTL" start b1 >"$T/out" 2>"$T/err" </dev/null &
SP=$!
BG_PIDS+=("$SP")
wait_for 3 test -s "$LIMA_HOME/b1/ha.pid"
kill -9 "$(cat "$LIMA_HOME/b1/ha.pid")"
wait $SP
RC=$?
check "start exits 1 when the hostagent dies" rc_err 1 'host agent process has exited'
check "the guest dies with its hostagent" wait_for 3 is_status b1 Stopped

# ---------------------------------------------------------------- faults
LIMA_SIM_FAIL=create:$(next_call create) "$LIMACTL" -y create --name=f1 "$T/lane.yaml" >"$T/out" 2>"$T/err"
check "LIMA_SIM_FAIL=create: exit 1 with a fatal message, nothing created" \
    bash -c "test $? = 1 -a ! -e '$LIMA_HOME/f1' && grep -q 'level=fatal' '$T/err'"
c0=$(cat "$LIMA_HOME/_sim/list.count" 2>/dev/null || echo 0)
r1=0; r2=0; r3=0
LIMA_SIM_FAIL="list:$((c0 + 2))" "$LIMACTL" list -q >/dev/null 2>&1 || r1=$?
LIMA_SIM_FAIL="list:$((c0 + 2))" "$LIMACTL" list -q >/dev/null 2>&1 || r2=$?
LIMA_SIM_FAIL="list:$((c0 + 2))" "$LIMACTL" list -q >/dev/null 2>&1 || r3=$?
check "LIMA_SIM_FAIL=list:N fails only the N-th call, counted across processes" \
    test "$r1/$r2/$r3" = "0/1/0" -a "$(cat "$LIMA_HOME/_sim/list.count")" = $((c0 + 3))
LIMA_SIM_HANG=list:$(next_call list) timeout 1 "$LIMACTL" list >/dev/null 2>&1
check "LIMA_SIM_HANG=list hangs until killed" test $? = 124
LIMA_SIM_HANG=start:$(next_call start) "$LIMACTL" start b1 >"$T/out" 2>"$T/err" </dev/null &
SP=$!
BG_PIDS+=("$SP")
check "LIMA_SIM_HANG=start: the VM becomes Running while start hangs" wait_for 5 is_status b1 Running
sleep 0.1
check "... start never reports READY and is still running" \
    bash -c "kill -0 $SP && ! grep -q READY '$T/err'"
{ kill -9 $SP; wait $SP; } 2>/dev/null
check "... killing start leaves the VM running (shell works)" lc shell b1 true </dev/null
lc stop -f b1 >/dev/null 2>&1
{ LIMA_SIM_DIE=start:$(next_call start) "$LIMACTL" start b1 >/dev/null 2>&1 </dev/null; RC=$?; } 2>/dev/null
check "LIMA_SIM_DIE=start: start dies by SIGKILL (137)" test "$RC" = 137
check "... and the VM still comes up" wait_for 5 is_status b1 Running
{ LIMA_SIM_DIE=delete:$(next_call delete) "$LIMACTL" delete -f b1 >/dev/null 2>&1; RC=$?; } 2>/dev/null
check "LIMA_SIM_DIE=delete: delete dies after killing the VM, directory left behind" \
    bash -c "test $RC = 137 -a -f '$LIMA_HOME/b1/lima.yaml' && test \"\$('$LIMACTL' ls --format '{{.Status}}' b1)\" = Stopped"
{ LIMA_SIM_DIE=create:$(next_call create) "$LIMACTL" -y create --name=d1 "$T/lane.yaml" >/dev/null 2>&1; RC=$?; } 2>/dev/null
check "LIMA_SIM_DIE=create: dies after lima.yaml, before disk" \
    test "$RC" = 137 -a -f "$LIMA_HOME/d1/lima.yaml" -a ! -e "$LIMA_HOME/d1/disk"
run start d1
check "... such a half-made instance still starts (disk prepared at start)" test "$RC" = 0 -a -f "$LIMA_HOME/d1/disk"
LIMA_SIM_STALL=create:$(next_call create) "$LIMACTL" -y create --name=st1 "$T/lane.yaml" >/dev/null 2>&1 </dev/null &
SP=$!
BG_PIDS+=("$SP")
check "LIMA_SIM_STALL=create: the directory is made and lima.yaml is not" \
    wait_for 5 test -d "$LIMA_HOME/st1" -a ! -e "$LIMA_HOME/st1/lima.yaml"
run delete -f st1
check "... where delete refuses it (\"NOT deleted\")" rc_err 1 'NOT deleted'
{ kill -9 $SP; wait $SP; } 2>/dev/null
rmdir "$LIMA_HOME/st1"
LIMA_SIM_STALL=create:$(next_call create) LIMA_SIM_STALL_MS=200 "$LIMACTL" -y create --name=st2 "$T/lane.yaml" \
    >/dev/null 2>&1 </dev/null
check "LIMA_SIM_STALL_MS=200: the stalled create carries on and completes" \
    test $? = 0 -a -f "$LIMA_HOME/st2/lima.yaml" -a -f "$LIMA_HOME/st2/disk"
lc delete -f st2 >/dev/null 2>&1
LIMA_SIM_FAIL=shell:$(next_call shell) "$LIMACTL" shell d1 true >/dev/null 2>"$T/err" </dev/null
check "LIMA_SIM_FAIL=shell exits 1" test $? = 1
LIMA_SIM_BOOT_MS=400 "$LIMACTL" -y create --name=slow "$T/lane.yaml" >/dev/null 2>&1
t=$(date +%s%N)
LIMA_SIM_BOOT_MS=400 "$LIMACTL" start slow >/dev/null 2>&1 </dev/null
t=$((($(date +%s%N) - t) / 1000000))
check "LIMA_SIM_BOOT_MS=400 delays READY (took $t ms)" test "$t" -ge 400
LIMA_SIM_LOG="$T/calls.log" "$LIMACTL" --tty=false list -q >/dev/null 2>&1
check "LIMA_SIM_LOG records each invocation's argv" grep -qx 'limactl --tty=false list -q' "$T/calls.log"
if [ "$(id -u)" = 0 ]; then
    LIMA_SIM_REFUSE_ROOT=1 "$LIMACTL" list >"$T/out" 2>"$T/err"
    check "LIMA_SIM_REFUSE_ROOT=1 refuses euid 0 like limactl" \
        test $? = 1 -a "$(cat "$T/err")" = "limactl: must not run as the root user" -a ! -s "$T/out"
fi

# ---------------------------------------------------------------- log formats
run --log-format json shell nosuch5 true
check "--log-format json: fatal errors are JSON lines, exit 1" pyjson '
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert list(d) == ["level", "msg", "time"] and d["level"] == "fatal" and "does not exist" in d["msg"]
' "$T/err"
run shell nosuch5 true
check "text log format: time=\"...\" level=fatal msg=\"...\"" \
    grep -qE '^time="[^"]+" level=fatal msg="instance `nosuch5` does not exist' "$T/err"
run info
check "info prints JSON with Lima's version.Version (v2.2.0) and limaHome" pyjson '
import json, sys
d = json.load(open(sys.argv[1])); assert d["version"] == "v2.2.0" and d["limaHome"] == sys.argv[2]
' "$T/out" "$LIMA_HOME"

# ---------------------------------------------------------------- writable root, provision, sudo, clone
if [ "$(id -u)" = 0 ]; then
cat > "$T/prov.yaml" <<'EOF'
cpus: 1
memory: 1GiB
disk: 5GiB
plain: true
provision:
- mode: system
  script: |
    #!/bin/sh
    set -e
    echo provisioned-on-stdout
    n=$(cat /var/lib/prov-count 2>/dev/null || echo 0)
    echo $((n + 1)) > /var/lib/prov-count
    printf '#!/bin/sh\necho x-ran\n' > /usr/local/bin/x
    chmod 755 /usr/local/bin/x
    echo why > /etc/y
    id -u > /etc/prov-uid
    echo '{{.User}}:{{.UID}}:{{.Home}}:{{.Name}}:{{.Hostname}}' > /etc/prov-tmpl
- mode: user
  script: |
    #!/bin/bash
    id -un > "$HOME/prov-user"
EOF
P=al-00000000000000b1
C=al-00000000000000c1
lc --tty=false create --name=$P "$T/prov.yaml" >/dev/null 2>&1
LIMA_SIM_BOOT_MS=0 lc start $P >/dev/null 2>&1
run shell $P -- sh -c 'x && cat /etc/y /etc/prov-uid /var/lib/prov-count ~/prov-user'
check "system provision scripts run as root before running: /usr/local/bin/x and /etc/y exist" \
    test "$RC" = 0 -a "$(tr '\n' ' ' < "$T/out")" = "x-ran why 0 1 lane "
run shell $P -- cat /etc/prov-tmpl
check "provision scripts run as Go templates: {{.User}}, {{.UID}}, {{.Home}}, {{.Name}}, {{.Hostname}} expanded" \
    test "$RC" = 0 -a "$(cat "$T/out")" = "lane:1000:/home/lane.guest:$P:lima-$P"
check "provision output goes to the guest's /var/log/cloud-init-output.log" \
    bash -c "'$LIMACTL' shell $P -- cat /var/log/cloud-init-output.log </dev/null 2>/dev/null | grep -qx provisioned-on-stdout"
run shell $P -- sh -c 'sudo touch /usr/bin/zz-guest && echo w | sudo tee /usr/share/zz-guest'
check "the guest's /usr is writable per instance; the host's /usr is untouched" \
    test "$RC" = 0 -a "$(cat "$T/out")" = w -a ! -e /usr/bin/zz-guest -a ! -e /usr/share/zz-guest
run shell $P -- touch /usr/bin/zz-user
check "the guest user still cannot write /usr without sudo" test "$RC" = 1
run shell $P -- sudo -n id -u
check "the default user has passwordless sudo (guest root is uid 0)" test "$RC" = 0 -a "$(cat "$T/out")" = 0
run shell $P -- sh -c 'echo in | sudo sh -c "cat; exit 7"'
check "sudo passes stdin/stdout through and returns the command's exit status" \
    test "$RC" = 7 -a "$(cat "$T/out")" = in
run shell $P -- sh -c 'sudo touch /root/r && sudo ls /root'
check "sudo can write where only root can" test "$RC" = 0 -a "$(cat "$T/out")" = r
start=$(date +%s)
lc shell $P -- sh -c 'sudo sleep 30 & sleep 0.5; kill -INT $!; wait $!; echo rc=$?' >"$T/out" 2>/dev/null
check "SIGINT to sudo reaches the root command" test "$(cat "$T/out")" = rc=130 -a $(($(date +%s) - start)) -lt 10
run shell $P -- sh -c 'sudo cat /etc/sudoers.d/90-cloud-init-users && sudo stat -c %a /etc/sudoers.d/90-cloud-init-users && test ! -e ~/password'
check "cloud-init's /etc/sudoers.d/90-cloud-init-users (0440) gives the default user NOPASSWD:ALL; no ~/password" \
    bash -c "test $RC = 0 && grep -qx 'lane ALL=(ALL) NOPASSWD:ALL' '$T/out' && grep -qx 440 '$T/out'"
run shell $P -- sh -c 'sudo rm /etc/sudoers.d/90-cloud-init-users && sudo -n true'
check "sudo honours the guest's rule file: once root removed it, sudo -n asks for a password" \
    rc_err 1 'sudo: a password is required'
run clone $P $C
check "clone of a running instance fails with Lima's message" \
    bash -c "test $RC = 1 && grep -q 'cannot clone a running instance' '$T/err' && test ! -e '$LIMA_HOME/$C'"
lc stop $P >/dev/null 2>&1
LIMA_SIM_BOOT_MS=0 lc start $P >/dev/null 2>&1
run shell $P -- cat /var/lib/prov-count
check "provision scripts run again at every start" test "$(cat "$T/out")" = 2
run shell $P -- sudo -n true
check "cloud-init writes the rule file again at the next boot (Lima gives every boot a new instance-id)" test "$RC" = 0
lc stop $P >/dev/null 2>&1
run --tty=false clone $P $C
check "clone of a stopped instance: exit 0, nothing on stdout, its own directory" \
    test "$RC" = 0 -a ! -s "$T/out" -a -f "$LIMA_HOME/$C/lima.yaml" -a -d "$LIMA_HOME/$C/guestfs"
run clone $P $C
check "clone onto an existing name fails" rc_err 1 "instance \`$C\` already exists"
run clone al-00000000000000ff al-00000000000000fe
check "clone of a missing instance fails" rc_err 1 'not found'
cp "$LIMA_HOME/$P/lima.yaml" "$T/p.yaml"
printf 'plain: true\nplain: true\n' >> "$LIMA_HOME/$P/lima.yaml"
run clone $P dupkey
check "clone of an instance whose lima.yaml gives a key twice panics, as Lima 2.2's does (exit 2)" \
    bash -c "test $RC = 2 && grep -q 'nil pointer dereference' '$T/err' && test ! -e '$LIMA_HOME/dupkey'"
cp "$T/p.yaml" "$LIMA_HOME/$P/lima.yaml"
LIMA_SIM_BOOT_MS=0 lc start $C >/dev/null 2>&1
run shell $C -- sh -c 'x && cat /etc/y && hostname && cat /etc/hostname'
check "the clone has the source's disk (x, /etc/y) and its own identity (hostname)" \
    test "$RC" = 0 -a "$(tr '\n' ' ' < "$T/out")" = "x-ran why lima-$C lima-$C "
lc shell $C -- sudo touch /usr/local/bin/only-in-clone >/dev/null 2>&1
check "writes in the clone do not reach the source" \
    test -e "$LIMA_HOME/$C/usrfs/upper/local/bin/only-in-clone" -a ! -e "$LIMA_HOME/$P/usrfs/upper/local/bin/only-in-clone"
run list --json $C
check "list shows the clone Running under its own name and directory" pyjson '
import json, sys
d = json.loads(open(sys.argv[1]).read()); assert d["name"] == sys.argv[2] and d["status"] == "Running" and d["dir"].endswith(sys.argv[2])
' "$T/out" "$C"
lc delete -f $C >/dev/null 2>&1
run --tty=false clone --set '.user.passwordlessSudo = false' --cpus 2 $P $C
check "clone takes edit flags (--cpus, --set)" \
    bash -c "test $RC = 0 && grep -qx 'cpus: 2' '$LIMA_HOME/$C/lima.yaml'"
LIMA_SIM_BOOT_MS=0 lc start $C >/dev/null 2>&1
run shell $C -- sudo -n true
check "user.passwordlessSudo: false: sudo -n fails (a password is required)" rc_err 1 'a password is required'
run shell $C -- sh -c 'stat -c "%a %U" ~/password && grep -Ex "[0-9a-f]{16}" ~/password && test -f ~/.lima-password-set'
check "... and Lima's boot left the user a random 16-hex-digit password in ~/password (0600, the user's)" \
    test "$RC" = 0 -a "$(head -1 "$T/out")" = "600 lane"
run shell $C -- sh -c 'sudo -S id -u < ~/password'
check "... which opens sudo -S (sudo is kept, with a password, as in Lima 2.2)" \
    test "$RC" = 0 -a "$(cat "$T/out")" = 0 -a "$(cat "$T/err")" = "[sudo] password for lane: "
run shell $C -- sh -c 'printf "x\ny\nz\n" | sudo -S -p "" true'
check "... a wrong password does not: three tries, sudo's messages" \
    bash -c "test $RC = 1 && test \"\$(grep -c 'Sorry, try again.' '$T/err')\" = 2 && grep -qx 'sudo: 3 incorrect password attempts' '$T/err'"
run shell $C -- sh -c '{ cat ~/password; echo payload; } | sudo -S -p "" cat'
check "sudo -S takes only the password line from stdin; the rest is the command's" \
    test "$RC" = 0 -a "$(cat "$T/out")" = payload
run shell $C -- sh -c 'sudo true'
check "without -S and without a terminal, sudo says it needs one" \
    rc_err 1 'sudo: a terminal is required to read the password'
run shell $C -- sh -c 'sudo -S -p "" cat /etc/sudoers.d/90-cloud-init-users < ~/password'
check "cloud-init's rule for passwordlessSudo: false is lane ALL=(ALL) ALL" grep -qx 'lane ALL=(ALL) ALL' "$T/out"
run shell $C -- sh -c 'sudo -S -p "" sh -c "echo \"lane ALL=(ALL) NOPASSWD: /bin/true\" > /etc/sudoers.d/zz" < ~/password &&
    sudo -S -p "" true < ~/password'
check "a sudoers rule for the user outside the subset the simulator reads fails loudly" \
    rc_err 1 'the limactl simulator cannot read the sudoers rule `lane ALL=(ALL) NOPASSWD: /bin/true` in /etc/sudoers.d/zz'
rm -f "$LIMA_HOME/$C/guestfs/etc/sudoers.d/zz"
run shell $C -- sh -c 'sudo -S -p "" rm /etc/sudoers.d/90-cloud-init-users < ~/password; sudo -S -p "" true < ~/password'
check "once root removed the rule file, sudo refuses whatever the password (not in the sudoers file)" \
    bash -c "test $RC = 1 && grep -qx 'lane is not in the sudoers file.' '$T/err'"
run shell $C -- sh -c 'getent passwd lane | cut -d: -f6; echo ~; test ! -e /home/lane.linux'
check "the root-mode user lane has Lima 2.2's home, /home/lane.guest (and with plain: true no .linux link)" \
    test "$RC" = 0 -a "$(tr '\n' ' ' < "$T/out")" = "/home/lane.guest /home/lane.guest "
lc delete -f $C $P >/dev/null 2>&1
printf 'cpus: 1\nmemory: 1GiB\n' > "$T/nonplain.yaml"
lc -y create --name=nonplain "$T/nonplain.yaml" >/dev/null 2>&1
LIMA_SIM_BOOT_MS=0 lc start nonplain >/dev/null 2>&1
run shell nonplain -- sh -c 'readlink /home/lane.linux && cd /home/lane.linux && pwd -P'
check "without plain: true, Lima's boot links the pre-2.1 home /home/lane.linux to lane.guest" \
    test "$RC" = 0 -a "$(tr '\n' ' ' < "$T/out")" = "lane.guest /home/lane.guest "
lc delete -f nonplain >/dev/null 2>&1
else
    echo "# skipped: writable /usr, provision, sudo and clone checks need root (overlayfs)"
fi

# ---------------------------------------------------------------- leftovers
for d in "$LIMA_HOME"/*/; do lc delete -f "$(basename "$d")" >/dev/null 2>&1; done
left=""
for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = $$ ] && continue
    for f in "$p"/fd/*; do
        case $(readlink "$f" 2>/dev/null) in "$T"/*) left="$left ${p#/proc/}"; break ;; esac
    done 2>/dev/null
done
check "no process is left holding files of the test's LIMA_HOME after delete -f" test -z "$left"
[ -n "$left" ] && ps -o pid,ppid,stat,args -p ${left// /,} | sed 's/^/# /'

T1=$(date +%s.%N)
echo "# $N checks, $FAILED failed, $(awk "BEGIN{printf \"%.1f\", $T1 - $T0}") s"
[ "$FAILED" = 0 ]
