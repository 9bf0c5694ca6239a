#!/usr/bin/env bash
# Checks only a real VM and real Lima can make (part of `make check-lima`):
# a guest kernel of its own, ssh as the exec transport (byte-exactness, exit
# statuses, a dead ssh against a command's own 255, process groups), a
# 100 MiB tree copied both ways, Lima's user-mode network, and the parts of
# limactl's contract the daemon relies on, from Lima 2.2 itself: cidata
# (user, provisioning, what passwordlessSudo: false really leaves), stop by
# ACPI, clone, a half-made instance, start --timeout, delete.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "real-Lima VM checks" "$0" "$@"
. "$HERE/../regress/lib.sh"

# LIMACTL: Lima's own limactl (tests/lima/tier.sh), called directly below.
start_daemon || exit 1
T0=$(date +%s%N)
# --sudo: the checks of the guest's root below need it; the network policy
# is then advisory but still loaded (tests/lima/netpolicy.sh covers a
# default lane: no sudo, enforced).
L=$(ctl create --timeout 30m --sudo)
check_eq "a lane is created on a real VM" ready "$(lane_state "$L")"
echo "# create -> ready: $(( ($(date +%s%N) - T0) / 1000000 )) ms"
g() { ctl exec "$L" -- "$@"; }

# --- the guest is a VM --------------------------------------------------
GK=$(g uname -r)
check_eq "the guest runs a Linux kernel" Linux "$(g uname -s)"
check "the guest kernel is not the host's ($GK vs $(uname -r))" test "$GK" != "$(uname -r)"
check "nor is its boot id" test "$(g cat /proc/sys/kernel/random/boot_id)" != \
    "$(cat /proc/sys/kernel/random/boot_id)"
check_eq "the guest's PID 1 is systemd" systemd "$(g cat /proc/1/comm)"

# --- exec over ssh --------------------------------------------------------
head -c 1048576 /dev/urandom > "$T/in.bin"
ctl exec "$L" -- cat < "$T/in.bin" > "$T/out.bin"
check "1 MiB of random stdin comes back byte-exact through cat" cmp -s "$T/in.bin" "$T/out.bin"
GSUM=$(g sh -c 'head -c 1048576 /dev/urandom > /tmp/r1; sha256sum < /tmp/r1' | cut -d' ' -f1)
check_eq "1 MiB of random stdout is byte-exact" "$GSUM" "$(g cat /tmp/r1 | sha256sum | cut -d' ' -f1)"
check_eq "the guest saw the stdin exactly" "$(sha256sum < "$T/in.bin" | cut -d' ' -f1)" \
    "$(ctl exec "$L" -- sha256sum < "$T/in.bin" | cut -d' ' -f1)"
for c in 0 1 3 254 255; do
	ctl exec "$L" -- sh -c "exit $c"
	check_eq "exit $c passes through" "$c" "$?"
done
ctl exec "$L" -- sh -c 'kill -TERM $$'; check_eq "death by SIGTERM gives 143" 143 "$?"
ctl exec "$L" -- sh -c 'kill -KILL $$'; check_eq "death by SIGKILL gives 137" 137 "$?"
ctl exec "$L" -- sh -c 'kill -SEGV $$'; check_eq "death by SIGSEGV gives 139" 139 "$?"

# A dead ssh is not a command's exit 255: kill the ControlMaster (every
# session of the lane runs over it) while a command runs.
# The master renames itself "ssh: PATH [mux]"; its clients keep their
# command line.
master() {
	pgrep -f "^ssh: $(instance_dir "$L")/ssh\.sock \[mux\]" | head -n 1
}
check "the lane's ssh ControlMaster runs" test -n "$(master)"
"$LANECTL" --socket "$SOCK" exec "$L" -- sleep 600 > /dev/null 2> "$T/dead.err" &
EX=$!
has_600() { g ps -eo args | grep -q '^sleep 600'; }
check "a long command runs" wait_for "$(tw 10)" has_600
kill -KILL "$(master)"
wait "$EX"; RC=$?
check "an exec whose ssh died does not exit 255 (it exited $RC)" test "$RC" -ne 255
check_eq "it is an Agent Lane failure (125)" 125 "$RC"
check_match "reported as UNAVAILABLE" UNAVAILABLE "$(cat "$T/dead.err")"
check_eq "the next exec opens a new connection" ok "$(g echo ok)"
LIMA_HOME=$STATE/lima "$LIMACTL" shell "$L" -- sleep 600 >/dev/null 2>&1 &
SH=$!
check "a long command runs through limactl shell" wait_for "$(tw 10)" has_600
kill -KILL "$(master)"
wait "$SH"
check_eq "limactl shell itself exits 255 when ssh dies" 255 "$?"
LIMA_HOME=$STATE/lima "$LIMACTL" shell "$L" -- sh -c 'exit 255'
check_eq "and a command's own exit 255 is 255 there too" 255 "$?"

# The client dies: the guest's whole process group goes.
"$LANECTL" --socket "$SOCK" exec "$L" -- sh -c 'sleep 401 & sleep 402' >/dev/null 2>&1 &
CLI=$!
has_40x() { g ps -eo args | grep -Eq '^sleep 40[12]'; }
check "the guest command and its child run" wait_for "$(tw 10)" has_40x
kill -KILL "$CLI"; wait "$CLI" 2>/dev/null
no_40x() { ! has_40x; }
check "killing the client kills the guest process group" wait_for "$(tw 10)" no_40x

# --- copy a 100 MiB tree both ways -----------------------------------------
H=$T/big
mkdir -p "$H/d1/d2" "$H/d3"
for i in $(seq 1 40); do head -c 2097152 /dev/urandom > "$H/d1/f$i"; done
for i in $(seq 1 15); do head -c 1048576 /dev/urandom > "$H/d1/d2/g$i"; done
head -c 5242880 /dev/urandom > "$H/d3/h"
for i in $(seq 1 200); do echo "small $i" > "$H/d3/s$i"; done
SZ=$(du -sb "$H" | cut -f1)
sums='find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum'
HS=$(cd "$H" && eval "$sums")
WS=$(ctl show --json "$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workspace"])')
t=$(date +%s%N)
check "copy-in of a $((SZ / 1048576)) MiB tree succeeds" ctl cp "$H" "$L:$WS/big"
ms=$(( ($(date +%s%N) - t) / 1000000 ))
echo "# copy in: $SZ bytes in $ms ms ($(( SZ * 1000 / 1048576 / (ms + 1) )) MiB/s)"
check_eq "its contents match in the guest" "$HS" "$(g sh -c "cd '$WS/big' && $sums")"
t=$(date +%s%N)
check "copy-out of the tree succeeds" ctl cp "$L:$WS/big" "$T/back"
ms=$(( ($(date +%s%N) - t) / 1000000 ))
echo "# copy out: $SZ bytes in $ms ms ($(( SZ * 1000 / 1048576 / (ms + 1) )) MiB/s)"
check_eq "and they match on the way back" "$HS" "$(cd "$T/back" && eval "$sums")"
rm -rf "$H" "$T/back"

# --- Lima's user-mode network ---------------------------------------------
check_match "the guest has Lima's address" 'inet 192\.168\.5\.15/24' "$(g ip -4 addr show eth0)"
check_match "its default route is the gateway 192.168.5.2" '^default via 192\.168\.5\.2 ' "$(g ip route)"
check_match "its DNS server is 192.168.5.3" '^nameserver 192\.168\.5\.3$' "$(g cat /etc/resolv.conf)"
check_match "ssh arrives from 192.168.5.2" '^192\.168\.5\.2 ' "$(g sh -c 'echo "$SSH_CLIENT"')"
python3 -c '
import http.server, socket, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"host-loopback\n")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' > "$T/http.port" &
HTTPD=$!
wait_for 5 test -s "$T/http.port"
HP=$(head -n 1 "$T/http.port")
# The user-mode network makes 192.168.5.2 the host's loopback; the lane's
# rules drop it (netpolicy.sh shows the same server reached once a sudo
# lane flushes them).
OUT=$(g timeout 5 bash -c "exec 3<>/dev/tcp/192.168.5.2/$HP && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3" 2>&1)
check_eq "the lane's rules keep the host's loopback (192.168.5.2) out" "" \
    "$(printf '%s' "$OUT" | grep -o host-loopback)"
check_match "and say it is advisory with --sudo" '^advisory$' \
    "$(ctl show --json "$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["network_policy"])')"
kill "$HTTPD"; wait "$HTTPD" 2>/dev/null

# --- the guest user and root ------------------------------------------------
check_match "with --sudo the lane user keeps passwordless sudo" '^ok$' "$(g sudo -n echo ok)"
check_match "root's password is locked" '^root:[!*]' "$(g sudo -n grep '^root:' /etc/shadow)"
check_match "the home is Lima 2.2's /home/NAME.guest" '^/home/[a-z0-9_-]+\.guest$' "$(g sh -c 'echo "$HOME"')"

ctl rm "$L" >/dev/null
check "rm removes the VM" test ! -e "$(instance_dir "$L")"
# A function, not `sh -c`: pgrep -f would find the shell's own command line.
no_qemu() { ! pgrep -f "file=$1/disk," >/dev/null; }
check "and its QEMU" wait_for 5 no_qemu "$(instance_dir "$L")"
stop_daemon

# --- limactl itself on QEMU: cidata, stop, clone, delete --------------------
export LIMA_HOME=$T/lh
lc() { "$LIMACTL" --tty=false "$@"; }
# What a failed check left running goes before lib.sh's clean-up.
cleanup_vms() {
	local d
	for d in "$LIMA_HOME"/*/; do
		[ -f "$d/lima.yaml" ] && lc delete --force "$(basename "$d")" >/dev/null 2>&1
	done
	finish
}
trap cleanup_vms EXIT
cat > "$T/p.yaml" <<EOF
minimumLimaVersion: 2.2.0
base:
- ${AGENT_LANE_LIMA_TEMPLATE:-template:_images/ubuntu-lts}
cpus: 1
memory: 1GiB
disk: 4GiB
plain: true
mounts: []
ssh:
  loadDotSSHPubKeys: false
  forwardAgent: false
propagateProxyEnv: false
hostResolver:
  enabled: false
user:
  passwordlessSudo: false
provision:
- mode: system
  script: |
    #!/bin/sh
    echo "\$(id -u) {{.Name}} {{.User}}" > /etc/provisioned-system
EOF
check "create from a YAML file" lc create --name=p "$T/p.yaml"
check "the user key pair is made like Lima's" test -s "$LIMA_HOME/_config/user" -a -s "$LIMA_HOME/_config/user.pub"
INFO=$(qemu-img info -U "$LIMA_HOME/p/disk")
check_match "the disk is a copy of the image" '^file format: qcow2' "$INFO"
check_nomatch "with no backing file" '^backing file:' "$INFO"
t=$(date +%s%N)
check "start waits for ssh and provisioning" lc start --timeout 20m p
echo "# limactl start (1 vCPU, 1 GiB): $(( ($(date +%s%N) - t) / 1000000 )) ms"
check_eq "system provisioning ran as root, with Lima's template variables expanded" \
    "0 p $(id -un)" "$(lc shell p -- cat /etc/provisioned-system)"
lc shell p -- sudo -n true 2>/dev/null
check_eq "passwordlessSudo: false leaves no passwordless sudo" 1 "$?"
# What Lima 2.2 leaves instead, and why lanes remove the sudo rule
# themselves (daemon/netpolicy.c); this fails the day Lima stops doing it.
check "but Lima 2.2 gives the user a password in ~/password" lc shell p -- test -s password
check "which opens sudo" lc shell p -- sh -c 'sudo -S -k -p "" true < password'
check_match "list --json says Running with the QEMU pid" '"status":"Running".*"driverPID":[0-9]+' \
    "$(lc list --json p)"
check_match "the hostname is lima-NAME" '^lima-p$' "$(lc shell p -- hostname)"
ID1=$(lc shell p -- cat /etc/machine-id)
t=$(date +%s%N)
check "stop powers the guest down" lc stop p
echo "# limactl stop: $(( ($(date +%s%N) - t) / 1000000 )) ms"
check_eq "it is Stopped" Stopped "$(lc list --format '{{.Status}}' p)"
OUT=$(lc shell p -- true 2>&1); RC=$?
check_eq "shell on a stopped instance exits 1" 1 "$RC"
check_match "saying so" 'is stopped' "$OUT"
check "clone copies the stopped instance" lc clone p q
check "with a disk of its own" test ! "$LIMA_HOME/q/disk" -ef "$LIMA_HOME/p/disk"
check "the clone starts" lc start --timeout 20m q
check_match "with its own hostname" '^lima-q$' "$(lc shell q -- hostname)"
check_eq "but the machine id of the stopped source (Lima copies its disk; image builds clear it so that their lanes differ)" "$ID1" "$(lc shell q -- cat /etc/machine-id)"
check_eq "provisioning ran again for it" "0 q $(id -un)" "$(lc shell q -- cat /etc/provisioned-system)"
OUT=$(lc clone q r 2>&1); RC=$?
check_eq "cloning a running instance fails" 1 "$RC"
check_match "as Lima says" 'cannot clone a running instance' "$OUT"
check "delete --force on a running instance" lc delete --force q
check "removes it" test ! -e "$LIMA_HOME/q"
check "and its QEMU" wait_for 5 no_qemu "$LIMA_HOME/q"
check "delete of the stopped one" lc delete p
# A directory without lima.yaml: what a create or clone stopped half-way
# leaves. Lima refuses to delete it (daemon/vm.c removes it itself).
mkdir -p "$LIMA_HOME/h" && : > "$LIMA_HOME/h/disk"
OUT=$(lc delete --force h 2>&1); RC=$?
check_eq "delete of a half-made instance (no lima.yaml) fails" 1 "$RC"
check_match "saying why" 'NOT deleted' "$OUT"
echo "# limactl: $(printf '%s' "$OUT" | tail -n 1)"
check "and keeps the directory" test -d "$LIMA_HOME/h"
check_eq "list says Broken" Broken "$(lc list --format '{{.Status}}' h 2>/dev/null)"
rm -rf "$LIMA_HOME/h"
check "start --timeout expiry" sh -c "'$LIMACTL' --tty=false create --name=s '$T/p.yaml' 2>/dev/null &&
    ! '$LIMACTL' --tty=false start --timeout 2s s 2>'$T/s.err'"
check_match "says it got no running event" 'did not receive an event with the `running` status' "$(cat "$T/s.err")"
check_eq "and leaves the VM running, as Lima" Running "$(lc list --format '{{.Status}}' s)"
check "stop -f kills it" lc stop -f s
check_eq "Stopped" Stopped "$(lc list --format '{{.Status}}' s)"
check "delete" lc delete s
