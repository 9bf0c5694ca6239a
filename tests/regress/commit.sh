#!/usr/bin/env bash
# agent-lanectl commit LANE IMAGE: a ready lane's disk becomes an image.
# The lane stays ready (its VM stopped, cloned, started again; execs get
# UNAVAILABLE meanwhile); the image holds the lane's files but none of its
# CA, ssh host keys, machine id, cloud-init data, logs or audit (the
# simulator's guests are directories: their files are looked at directly);
# --no-workspace; origin in image ls/show/--json; lanes and a pool shape
# from the image; every other lane state refused with its typed error;
# name collisions and the images cap; a failed clone leaves no half image
# and the lane ready; a daemon killed mid-commit starts the lane again.
. "$(dirname "$0")/lib.sh"

# Boots long enough that a commit's restart of the lane can be seen.
export LIMA_SIM_BOOT_MS=300
start_daemon --max-images 3 || exit 1

imgdir() {	# the instance directory of image $1
	local inst
	inst=$(sqlite3 "$STATE/registry.db" "SELECT instance FROM images WHERE name = '$1'" 2>/dev/null)
	[ -n "$inst" ] && echo "$STATE/lima/$inst"
}
half_images() { ls -d "$STATE"/lima/ali-* 2>/dev/null | wc -l; }
ev() { ctl events "$1" 2>/dev/null; }
has_event() { ev "$1" | grep -q -- "$2"; }

KEY="sk-commit-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
L=$(ANTHROPIC_API_KEY=$KEY ctl create --name src --sudo --timeout 20m \
    --secret ANTHROPIC_API_KEY@api.anthropic.com); RC=$?
check_eq "a lane with a secret and sudo is made" "0 ready" "$RC $(lane_state "$L")"
SRC=$(instance_dir "$L")
check "the source lane's guest has the lane CA in its trust store" \
    test -s "$SRC/guestfs/usr/local/share/ca-certificates/agent-lane.crt" -o \
    -s "$SRC/usrfs/upper/local/share/ca-certificates/agent-lane.crt"
ctl exec -n "$L" -- sh -c 'echo from-workspace > ws-file; sudo -n sh -c "
    mkdir -p /etc/ssh /var/log/audit /var/lib/cloud/instances/i-lane /opt
    echo lane-host-key > /etc/ssh/ssh_host_ed25519_key
    echo 0123456789abcdef0123456789abcdef > /etc/machine-id
    echo lane-log > /var/log/lane.log
    echo lane-audit > /var/log/audit/audit.log
    echo lane-instance > /var/lib/cloud/instances/i-lane/data
    echo tool-from-lane > /opt/tool"' >/dev/null 2>&1
check_eq "the lane wrote its files" tool-from-lane "$(ctl exec -n "$L" -- cat /opt/tool 2>&1)"

# ---- commit, and the lane while it runs
ctl commit src img1 >"$T/c1.out" 2>"$T/c1.err" &
CPID=$!
check "the commit starts (event commit)" wait_for 20 has_event "$L" ' commit '
OUT=$(ctl exec -n "$L" -- true 2>&1); RC=$?
check_match "an exec meanwhile gets UNAVAILABLE, committing" 'UNAVAILABLE.*committing' "$OUT"
check_eq "the lane is still ready for its callers" ready "$(lane_state "$L")"
OUT=$(ctl commit src img-again 2>&1)
check_match "a second commit of it meanwhile is FAILED_PRECONDITION" 'FAILED_PRECONDITION.*already being committed' "$OUT"
wait "$CPID"; RC=$?
check_eq "commit exits 0 and prints the image" "0 img1" "$RC $(cat "$T/c1.out")"
check_match "with its phases on stderr" 'scrubbing' "$(cat "$T/c1.err")"
check_eq "the lane is ready and runs again" "ready from-workspace" \
    "$(lane_state "$L") $(ctl exec -n "$L" -- cat ws-file 2>&1)"
check_match "its audit trail has the commit and the restart" 'commit-restarted +img1' "$(ev "$L")"
check_eq "the lane's VM runs" Running "$(sim list --format '{{.Status}}' "$L" 2>/dev/null)"

# ---- what the image holds, looked at in its disk
I=$(imgdir img1)
G=$I/guestfs
check "the image has its instance" test -d "$G"
check_eq "the image VM is stopped" Stopped "$(sim list --format '{{.Status}}' "$(basename "$I")" 2>/dev/null)"
check_eq "it holds the workspace and the lane's files" "from-workspace tool-from-lane" \
    "$(cat "$G"/home/*/workspace/ws-file "$G/opt/tool" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
check "no lane CA in its trust store" test ! -e "$G/usr/local/share/ca-certificates/agent-lane.crt" \
    -a ! -e "$I/usrfs/upper/local/share/ca-certificates/agent-lane.crt"
CAPEM=$(sed -n '2p' "$SRC/guestfs/usr/local/share/ca-certificates/agent-lane.crt" \
    "$SRC/usrfs/upper/local/share/ca-certificates/agent-lane.crt" 2>/dev/null | head -1)
check "the CA's certificate is in no file of the image" \
    sh -c '[ -n "$1" ] && ! grep -rqaF -- "$1" "$2"' _ "$CAPEM" "$I"
check_eq "no ssh host keys" "" "$(ls "$G"/etc/ssh/ssh_host_* 2>/dev/null)"
check_eq "an empty machine id (each lane makes its own)" 0 "$(stat -c %s "$G/etc/machine-id" 2>&1)"
check_eq "no logs or audit" "" "$(find "$G/var/log" -type f 2>/dev/null)"
check_eq "no cloud-init instance data" "" "$(ls -A "$G/var/lib/cloud" 2>/dev/null)"
check "the secret's value is in no file of the image" sh -c '! grep -rqaF -- "$1" "$2"' _ "$KEY" "$I"

# ---- origin
check_match "image ls has an ORIGIN column: commit src" '^img1 .* commit src$' "$(ctl image ls)"
check_match "image show says which lane, when and from which base" \
    "^origin: +commit of lane $L \(src\) at 20[0-9-]+T[0-9:]+Z, base the lane template\$" "$(ctl image show img1)"
check "image show --json has the origin fields" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["origin"] == "commit" and d["committed_from"] == sys.argv[2], d
assert d["committed_alias"] == "src" and d["committed_at_ms"] > 0, d
assert d["from"] == "" and len(d["id"]) == 64, d
' "$(ctl image show --json img1)" "$L"
printf '#!/bin/sh\ntrue\n' > "$T/noop.sh"
check_match "a built image's origin is build" '"origin":"build"' \
    "$(ctl image build plain --provision "$T/noop.sh" 2>/dev/null >/dev/null; ctl image show --json plain)"

# ---- lanes from it
A=$(ctl create --image img1 --timeout 10m 2>/dev/null)
B=$(ctl create --image img1 --timeout 10m 2>/dev/null)
check_eq "two lanes from the image are ready" "ready ready" "$(lane_state "$A") $(lane_state "$B")"
check_eq "both see the workspace file and the tool" "from-workspace tool-from-lane from-workspace tool-from-lane" \
    "$(for x in "$A" "$B"; do ctl exec -n "$x" -- sh -c 'cat ws-file /opt/tool'; done 2>&1 | tr '\n' ' ' | sed 's/ $//')"
check "neither has the lane CA (they have no secrets)" ctl exec -n "$A" -- test ! -e /usr/local/share/ca-certificates/agent-lane.crt
check_eq "neither sees the source's secret variable" "" "$(ctl exec -n "$A" -- printenv ANTHROPIC_API_KEY 2>/dev/null)"
ctl rm "$A" "$B" >/dev/null 2>&1

# ---- --no-workspace, collisions, bad names, the cap
OUT=$(ctl commit "$L" img2 --no-workspace 2>/dev/null); RC=$?
check_eq "commit --no-workspace by lane name" "0 img2" "$RC $OUT"
G2=$(imgdir img2)/guestfs
check_eq "that image has no workspace" "" "$(ls -d "$G2"/home/*/workspace 2>/dev/null)"
check_eq "but the files outside it" tool-from-lane "$(cat "$G2/opt/tool" 2>&1)"
C=$(ctl create --image img2 --timeout 10m 2>/dev/null)
check_eq "a lane from it gets an empty workspace" "ready " \
    "$(lane_state "$C") $(ctl exec -n "$C" -- ls -A 2>&1)"
ctl rm "$C" >/dev/null 2>&1
OUT=$(ctl commit src img1 2>&1); RC=$?
check_match "an image name taken is ALREADY_EXISTS" 'ALREADY_EXISTS.*image img1 exists' "$OUT"
check_eq "and the lane stays ready, not committing" "ready ok" "$(lane_state "$L") $(ctl exec -n "$L" -- echo ok 2>&1)"
OUT=$(ctl commit src Bad/Name 2>&1); RC=$?
check_eq "a bad image name is a usage error (INVALID_ARGUMENT)" 2 "$RC"
OUT=$(ctl commit src img3 2>&1); RC=$?
check_match "past max_images: RESOURCE_EXHAUSTED" 'RESOURCE_EXHAUSTED.*max_images' "$OUT"
check_eq "and nothing was made" 3 "$(half_images)"
ctl image rm plain img2 >/dev/null

# ---- the other lane states
OUT=$(ctl commit al-00000000 imgx 2>&1)
check_match "no such lane: NOT_FOUND" 'NOT_FOUND' "$OUT"
D=$(ctl create --timeout 10m 2>/dev/null)
ctl rm "$D" >/dev/null 2>&1
OUT=$(ctl commit "$D" imgx 2>&1)
check_match "a destroyed lane: FAILED_PRECONDITION, ended" 'FAILED_PRECONDITION.*has ended' "$OUT"
check_eq "no image was left by the refusals" 1 "$(half_images)"

# A destroy during a commit waits for the VM to run again, then goes; the
# image is made all the same.
E=$(ctl create --timeout 10m 2>/dev/null)
ctl commit "$E" img-e >"$T/ce.out" 2>/dev/null &
CPID=$!
wait_for 20 has_event "$E" ' commit '
ctl rm "$E" >"$T/rm.out" 2>&1; RC=$?
wait "$CPID"; CRC=$?
check_eq "rm during a commit ends once it is done" "0 destroyed" "$RC $(lane_state "$E")"
check_eq "and the commit made its image" "0 img-e" "$CRC $(cat "$T/ce.out")"
check_match "the destroy came after the restart" 'commit-restarted.*destroying' "$(ev "$E" | tr '\n' ' ')"

# ---- a pool shape of the committed image
stop_daemon
start_daemon --max-images 3 --pool-shape "1 image=img1" --pool-max-boots 1 || exit 1
pooled() { ctl ls --all --json | python3 -c '
import json, sys
print(" ".join(l["name"] for l in json.load(sys.stdin) if l["state"] == "pooled" and l["workspace"]))'; }
one_pooled() { [ -n "$(pooled)" ]; }
check "the pool boots a lane of the committed image" wait_for 30 one_pooled
P=$(pooled)
Q=$(ctl create --image img1 --timeout 10m 2>/dev/null)
check_eq "create --image takes the pool lane" "$P" "$Q"
check_eq "which has the committed files" "from-workspace tool-from-lane" \
    "$(ctl exec -n "$Q" -- sh -c 'cat ws-file /opt/tool' 2>&1 | tr '\n' ' ' | sed 's/ $//')"
ctl rm "$Q" >/dev/null 2>&1
stop_daemon

# ---- a failed clone: no half image, the lane ready
LIMA_SIM_FAIL='start:1,clone:1' LIMA_SIM_STALL='create:2' LIMA_SIM_STALL_MS=2000 start_daemon --max-images 3 || exit 1
ctl create --name fail-lane --timeout 10m >/dev/null 2>&1
OUT=$(ctl commit fail-lane imgx 2>&1)
check_match "a failed lane: FAILED_PRECONDITION, ended" 'FAILED_PRECONDITION.*has ended' "$OUT"
ctl create --name creating-lane --timeout 10m >/dev/null 2>&1 &
CRPID=$!
creating() { ctl show creating-lane 2>/dev/null | grep -q creating; }
wait_for 20 creating
OUT=$(ctl commit creating-lane imgx 2>&1)
check_match "a creating lane: FAILED_PRECONDITION" 'FAILED_PRECONDITION.*creating' "$OUT"
ctl rm creating-lane >/dev/null 2>&1
wait "$CRPID"
H=$(ctl create --name h --timeout 10m 2>/dev/null)
OUT=$(ctl commit h img-f 2>&1); RC=$?
check_match "a failing limactl clone fails the commit (LIMA_FAILED)" 'LIMA_FAILED.*clone' "$OUT"
check_eq "no image row" "" "$(ctl image ls --json | python3 -c 'import json,sys; print(" ".join(i["name"] for i in json.load(sys.stdin) if i["name"] == "img-f"))')"
check_eq "no image instance beyond img1 and img-e" 2 "$(half_images)"
check_eq "the lane is ready and runs" "ready ok" "$(lane_state "$H") $(ctl exec -n "$H" -- echo ok 2>&1)"
stop_daemon

# ---- a daemon killed mid-commit
LIMA_SIM_HANG='clone:1' start_daemon --max-images 3 || exit 1
ctl commit h img-k >/dev/null 2>&1 &
wait_for 20 has_event "$H" ' commit '
wait_for 20 test -s "$STATE/lima/_sim/clone.count"
kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null; DAEMON_PID=
kill_stray_limactl
check_eq "the lane's VM was left stopped" Stopped "$(sim list --format '{{.Status}}' "$H" 2>/dev/null)"
start_daemon --max-images 3 || exit 1
check "the next start runs the lane again" wait_for 30 has_event "$H" 'commit-recovered'
check_match "saying the commit was interrupted" 'commit-interrupted +img-k' "$(ev "$H")"
check_eq "the lane is ready, its VM running" "ready Running ok" \
    "$(lane_state "$H") $(sim list --format '{{.Status}}' "$H" 2>/dev/null) $(ctl exec -n "$H" -- echo ok 2>&1)"
no_half() { [ "$(half_images)" = 2 ]; }
check "the half-made clone is deleted" wait_for 30 no_half
check_nomatch "and img-k is no image" 'img-k' "$(ctl image ls)"

finish
