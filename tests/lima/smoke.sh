#!/usr/bin/env bash
# The real-Lima smoke test of `make check`: agent-laned drives Lima 2.2's own
# limactl (QEMU; TCG where KVM is unusable) through one lane: create, exec
# (exit statuses, 1 MiB byte-exact both ways), cp in and out, the default
# network policy (the host's 127.0.0.1 unreachable through 192.168.5.2 while
# the internet is reachable, no guest root by any of the ways Lima leaves
# open), rm. tests/lima/tier.sh runs it as the tier's unprivileged user.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "real-Lima smoke" "$0" "$@"
. "$HERE/../regress/lib.sh"

echo "# $("$SIM" --version); template ${AGENT_LANE_LIMA_TEMPLATE:-the default};" \
    "QEMU_SYSTEM_X86_64=${QEMU_SYSTEM_X86_64:-unset (KVM)}"
start_daemon || exit 1
t=$(date +%s%N)
L=$(ctl create -q --cpus 2 --memory 1G --disk 4G --timeout 30m)
check_eq "a lane is created on real Lima" ready "$(lane_state "$L")"
echo "# create -> ready: $(( ($(date +%s%N) - t) / 1000000 )) ms"
check_eq "its VM is Running in Lima's own list" Running \
    "$(sim list --json "$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')"
g() { ctl exec "$L" -- "$@"; }

GK=$(g uname -r)
check "exec runs in the guest's own kernel ($GK)" test -n "$GK" -a "$GK" != "$(uname -r)"
for c in 0 1 3 255; do
	g sh -c "exit $c"
	check_eq "exit status $c passes through" "$c" "$?"
done
g sh -c 'kill -TERM $$'
check_eq "death by SIGTERM is 143" 143 "$?"
head -c 1048576 /dev/urandom > "$T/in.bin"
g cat < "$T/in.bin" > "$T/out.bin"
check "1 MiB of random bytes through stdin and stdout comes back byte-exact" \
    cmp -s "$T/in.bin" "$T/out.bin"

mkdir -p "$T/tree/sub" && echo hello > "$T/tree/sub/f" && cp "$T/in.bin" "$T/tree/blob"
check "cp into the lane" ctl cp "$T/tree" "$L:tree"
check_eq "arrives intact" "$(sha256sum < "$T/in.bin" | cut -d' ' -f1)" \
    "$(g sh -c 'sha256sum < tree/blob' | cut -d' ' -f1)"
check "cp out of the lane" ctl cp "$L:tree" "$T/back"
check "comes back intact" diff -r "$T/tree" "$T/back"

# The default policy (internet). A server on the host's 127.0.0.1, which
# Lima's user-mode network maps to 192.168.5.2 in the guest.
python3 -u -m http.server --bind 127.0.0.1 0 --directory "$T" > "$T/http.log" 2>&1 &
HTTP=$!
port_of() { sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/http.log" | head -n 1; }
wait_for 10 test -n "$(port_of)"
PORT=$(port_of)
check "the host server answers on 127.0.0.1:$PORT" \
    curl -fsS -o /dev/null "http://127.0.0.1:$PORT/"
check "the guest cannot reach it through 192.168.5.2" \
    g sh -c "! curl -sS -m 5 -o /dev/null http://192.168.5.2:$PORT/ 2>/dev/null"
# The control: the same guest reaches the Debian mirror its image came
# from, so the refusal above is the policy, not a missing network.
MIRROR=$(g sh -c "sed -n 's/^deb \\(http[^ ]*\\) .*/\\1/p' /etc/apt/sources.list | head -n 1")
check "the guest reaches the internet ($MIRROR)" \
    g curl -fsS -m 30 -o /dev/null "$MIRROR/dists/bookworm/Release"
check "the lane user has no passwordless sudo" g sh -c '! sudo -n true 2>/dev/null'
check "nor does the password Lima 2.2 leaves in ~/password open sudo" \
    g sh -c '[ ! -r ~/password ] || ! sudo -S -k -p "" true < ~/password 2>/dev/null'
check "nor can the lane user flush the rules" g sh -c '! nft flush ruleset 2>/dev/null'
check_match "the lane says its policy is enforced" '"network_policy": *"enforced"' \
    "$(ctl show --json "$L")"
kill "$HTTP" 2>/dev/null

# info and stats on a real guest: Lima's own version and driver, the
# policy enforceable; the lane's figures its own kernel's, not the host's.
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
I=$(ctl info --json)
check_eq "info: Lima 2.2.0, the qemu driver" "2.2.0 qemu" \
    "$(printf '%s' "$I" | jq_ '"%s %s" % (d["limactl"]["version"], d["limactl"]["driver"])')"
check_eq "info: network policies are enforceable on real Lima" True \
    "$(printf '%s' "$I" | jq_ 'd["network"]["enforceable"]')"
check_eq "info counts the lane" "1 1" "$(printf '%s' "$I" | jq_ '"%s %s" % (d["lanes"]["live"], d["lanes"]["ready"])')"
S=$(ctl stats --no-stream --json "$L")
srow() { printf '%s' "$S" | jq_ "d['lanes'][0]['$1']"; }
check_eq "stats: the lane's memory limit is its 1 GiB" $((1 << 30)) "$(srow memory_limit_bytes)"
MT=$(srow memory_total_bytes)
check "the guest kernel's own memory total: under 1 GiB, not the host's ($MT)" \
    test "$MT" -gt $((512 << 20)) -a "$MT" -le $((1 << 30))
check_eq "disk against the lane's 4 GiB" $((4 << 30)) "$(srow disk_limit_bytes)"
DT=$(srow disk_total_bytes)
check "the guest's root filesystem fits its 4 GiB disk ($DT bytes)" test "$DT" -gt 0 -a "$DT" -le $((4 << 30))
check "disk used is the guest's root filesystem ($(srow disk_used_bytes) bytes)" \
    test "$(srow disk_used_bytes)" -gt 0
check_match "CPU measured between two samples" '^[0-9.]+$' "$(srow cpu_percent)"
AGE=$(( $(date +%s%3N) - $(ctl show --json "$L" | jq_ 'd["created_at_ms"]') ))
UP=$(srow uptime_ms)
check "uptime is the guest's boot: positive, no longer than the lane has lived ($UP <= $AGE ms)" \
    test "$UP" -gt 0 -a "$UP" -le "$AGE"
check "processes are the guest's ($(srow processes))" test "$(srow processes)" -ge 10

check "rm" ctl rm "$L"
check "the VM is gone" test ! -e "$(instance_dir "$L")"
check_eq "and Lima no longer lists it" "" "$(sim list -q 2>/dev/null)"
