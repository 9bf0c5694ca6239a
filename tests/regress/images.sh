#!/usr/bin/env bash
# Images: image build provisions a stopped VM as root; create --image clones
# it and rewrites the clone's YAML from the lane template; identical inputs
# do nothing; failed and cancelled builds leave no VM and no row; image rm
# waits for clones; create --provision is addressed by content.
. "$(dirname "$0")/lib.sh"

# A lane's template, with the default network policy (internet).
REPO_GOLDEN=$REPO/tests/unit/golden/lane-internet.yaml
SIMLOG=$T/sim.log
export LIMA_SIM_LOG=$SIMLOG
start_daemon || exit 1

images() { ls -d "$STATE"/lima/ali-* 2>/dev/null | wc -l; }
# images_are N: for wait_for, which must count again each time.
images_are() { [ "$(images)" = "$1" ]; }
sim_calls() { grep -c -- " $1 " "$SIMLOG" 2>/dev/null || echo 0; }

cat > "$T/tools.sh" <<'EOF'
#!/bin/sh
set -e
echo provision-stdout-line
echo provision-stderr-line >&2
printf '#!/bin/sh\necho x-from-image\n' > /usr/local/bin/x
chmod 755 /usr/local/bin/x
echo y-from-image > /etc/y
id -u > /etc/provisioned-by
# how --docker sets DOCKER_HOST for execs: a login-shell profile file
echo 'export LANE_FROM_PROFILE=yes' > /etc/profile.d/zz-lane.sh
EOF
cat > "$T/extra.sh" <<'EOF'
#!/usr/bin/env bash
echo extra-from-child > /etc/extra
EOF
cat > "$T/fail.sh" <<'EOF'
#!/bin/bash
echo "line one of the failure" >&2
echo "E: Unable to locate package no-such-package" >&2
exit 3
EOF
# Long lines before the reason, more than an error message holds: the
# reason, last, is what must be quoted, whole.
cat > "$T/noisy.sh" <<'EOF'
#!/bin/bash
for i in 1 2 3 4 5 6 7 8; do
	printf 'noise %d %0200d\n' "$i" 0 >&2
done
echo "E: the reason is in this last line, quoted whole" >&2
exit 4
EOF
# More stderr than the daemon keeps (2 KiB): the reason, last, is quoted
# whole, without the part of the long line before it that was kept.
cat > "$T/cut.sh" <<'EOF'
#!/bin/bash
printf 'start-of-a-long-line %03000d\n' 0 >&2
echo "E: after a long line" >&2
exit 5
EOF
cat > "$T/slow.sh" <<'EOF'
#!/bin/sh
echo slow-started
touch /etc/slow-started
sleep 60
EOF

# ---- build, then a lane from the image has what the script wrote
OUT=$(ctl image build tools --provision "$T/tools.sh" 2>"$T/build.err")
RC=$?
check_eq "image build exits 0 and prints the image name" "0 tools" "$RC $OUT"
check_match "the script's stdout streams to the client" 'provision-stdout-line' "$(cat "$T/build.err")"
check_match "the script's stderr streams to the client" 'provision-stderr-line' "$(cat "$T/build.err")"
check_match "progress names the script" 'provision: tools.sh' "$(cat "$T/build.err")"
check_eq "one image instance exists" 1 "$(images)"
IMG=$(basename "$(ls -d "$STATE"/lima/ali-*)")
check_match "the image instance is named ali- + 16 hex" '^ali-[0-9a-f]{16}$' "$IMG"
check_eq "the image VM is stopped" Stopped "$(sim list --format '{{.Status}}' "$IMG" 2>/dev/null)"
check "image ls --json lists it with its content id" python3 -c '
import json, sys
v = json.loads(sys.argv[1])
assert len(v) == 1 and v[0]["name"] == "tools" and len(v[0]["id"]) == 64, v
assert v[0]["scripts"] == ["tools.sh"] and v[0]["in_use"] == 0, v
' "$(ctl image ls --json)"
check_match "image show prints it" 'script: +tools.sh' "$(ctl image show tools)"
check_nomatch "ls (lanes) does not list the image" 'ali-' "$(ctl ls --all)"

L=$(ctl create --image tools 2>/dev/null)
check_match "create --image prints a lane name" '^al-[0-9a-f]{16}$' "$L"
check_eq "the lane is ready" ready "$(lane_state "$L")"
check_eq "the lane has /usr/local/bin/x and /etc/y, written as root" \
    "x-from-image y-from-image 0" \
    "$(ctl exec -n "$L" -- sh -c 'x; cat /etc/y /etc/provisioned-by' 2>&1 | tr '\n' ' ' | sed 's/ $//')"
check_match "the lane was cloned, not created" 'vm-cloned' "$(ctl events "$L")"
check_eq "exec's environment has what the image's /etc/profile.d exports" yes \
    "$(ctl exec -n "$L" -- sh -c 'echo $LANE_FROM_PROFILE' 2>&1)"
check_eq "the image is still stopped" Stopped "$(sim list --format '{{.Status}}' "$IMG" 2>/dev/null)"

# ---- image build --from: a child image on top of a parent
OUT=$(ctl image build child --from tools --provision "$T/extra.sh" 2>"$T/child.err")
check_eq "image build --from builds the child" child "$OUT"
check_match "... by cloning the parent" 'cloning: tools' "$(cat "$T/child.err")"
LC=$(ctl create --image child 2>/dev/null)
check_eq "a lane from the child has the parent's and the child's files" \
    "x-from-image extra-from-child" \
    "$(ctl exec -n "$LC" -- sh -c 'x; cat /etc/extra' 2>&1 | tr '\n' ' ' | sed 's/ $//')"
check_match "the child names its parent" '"from":"tools"' "$(ctl image show --json child)"
ctl rm "$LC" >/dev/null 2>&1

# ---- the id and id prefixes image ls shows name an image, as in docker
image_id() { ctl image show --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
TID=$(image_id tools)
CID=$(image_id child)
SHORT=$(ctl image ls | awk '$1 == "tools" { print $2 }')
check_eq "image ls shows the id's first 12 digits" "${TID:0:12}" "$SHORT"
check_match "image show takes that short id" '^name: +tools$' "$(ctl image show "$SHORT" 2>&1)"
check_match "... the whole id" '^name: +tools$' "$(ctl image show "$TID" 2>&1)"
check_match "... and a shorter prefix" '^name: +tools$' "$(ctl image show "${TID:0:5}" 2>&1)"
LI=$(ctl create --image "$SHORT" 2>/dev/null)
check_match "create --image takes the short id, and clones that image" \
    'image +tools' "$(ctl events "$LI" 2>&1)"
ctl rm "$LI" >/dev/null 2>&1
R=$(ctl image show 0123456789ab 2>&1); RC=$?
check_match "an id prefix of no image is NOT_FOUND (exit $RC)" 'NOT_FOUND: no image 0123456789ab' "$R"
# Two ids with a long common prefix (the child's rewritten to share 63
# digits with its parent): a prefix of both is refused, typed.
ALT=${TID:0:63}$( [ "${TID:63:1}" = 0 ] && echo 1 || echo 0)
sqlite3 "$STATE/registry.db" "UPDATE images SET id = '$ALT' WHERE name = 'child'"
R=$(ctl image show "${TID:0:20}" 2>&1); RC=$?
check_eq "a prefix of two images' ids is refused, exit 1" 1 "$RC"
check_match "... as AMBIGUOUS, naming both" 'AMBIGUOUS: .* matches more than one image: tools \([0-9a-f]{12}\), child \([0-9a-f]{12}\)' "$R"
R=$(ctl image rm "${TID:0:20}" 2>&1)
check_match "image rm refuses it too" 'AMBIGUOUS' "$R"
R=$(ctl create --image "${TID:0:20}" 2>&1)
check_match "... and create --image" 'AMBIGUOUS' "$R"
check_match "the whole id still names one" '^name: +tools$' "$(ctl image show "$TID" 2>&1)"
sqlite3 "$STATE/registry.db" "UPDATE images SET id = '$CID' WHERE name = 'child'"
R=$(ctl image rm "${CID:0:12}" 2>&1)
check_eq "image rm takes the short id: the child image is removed" child "$R"

# ---- an image is never handed out as a lane
R=$(ctl exec -n "$IMG" -- true 2>&1)
check_match "exec into an image's instance name is refused" 'INVALID_ARGUMENT' "$R"
R=$(ctl rm "$IMG" 2>&1)
check_match "rm of an image's instance name is refused" 'INVALID_ARGUMENT' "$R"

# ---- identical inputs: nothing is built
C0=$(sim_calls create)
S0=$(sim_calls start)
OUT=$(ctl image build tools --provision "$T/tools.sh" 2>"$T/build2.err")
check_eq "a second identical build prints the image" tools "$OUT"
check_match "... and says nothing was built" 'up to date' "$(cat "$T/build2.err")"
check_eq "... and ran no limactl create or start" "$C0 $S0" "$(sim_calls create) $(sim_calls start)"
check_eq "... and made no VM" 1 "$(images)"
printf '\n# changed\n' >> "$T/tools.sh"
R=$(ctl image build tools --provision "$T/tools.sh" --no-replace 2>&1)
check_match "with --no-replace, other inputs under the same name are refused" 'FAILED_PRECONDITION.*other inputs' "$R"
check_eq "... and nothing was built" "1 $C0" "$(images) $(sim_calls create)"
inst_of() { sqlite3 "$STATE/registry.db" "SELECT instance FROM images WHERE name = '$1'"; }
OLDINST=$(inst_of tools)
OLDID=$(ctl image show --json tools | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
OUT=$(ctl image build tools --provision "$T/tools.sh" 2>/dev/null); RC=$?
check_eq "without it, the build replaces the image, as docker build -t retags" "0 tools" "$RC $OUT"
NEWID=$(ctl image show --json tools | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
check "... whose id is the new inputs'" test "$NEWID" != "$OLDID" -a -n "$NEWID"
check_eq "... listed once" 1 "$(ctl image ls --json | python3 -c 'import json,sys; print(sum(i["name"] == "tools" for i in json.load(sys.stdin)))')"
gone() { [ ! -e "$STATE/lima/$1" ]; }
check "... and the replaced image's VM is deleted" wait_for "$(tw 10)" gone "$OLDINST"
check_eq "... with its row" "tools" "$(sqlite3 "$STATE/registry.db" 'SELECT group_concat(name) FROM images')"
check_match "its events say it was replaced" 'image-replaced' "$(sqlite3 "$STATE/registry.db" "SELECT event FROM events WHERE lane = '$OLDINST'")"
check_match "image show ID of the old id finds nothing" 'NOT_FOUND' "$(ctl image show "$OLDID" 2>&1)"

# ---- a failing script: no VM, no row, its stderr quoted
R=$(ctl image build broken --provision "$T/fail.sh" 2>&1)
RC=$?
check_eq "a failing build exits 1" 1 "$RC"
check_match "the error names the script and its status" 'fail.sh failed \(exit 3\)' "$R"
check_match "the error quotes the script's last stderr lines" 'Unable to locate package no-such-package' "$R"
check_eq "the failed build left no VM" 1 "$(images)"
check_match "... and no image" 'NOT_FOUND' "$(ctl image show broken 2>&1)"
check_nomatch "... and image ls does not list it" 'broken' "$(ctl image ls)"
R=$(ctl image build noisy --provision "$T/noisy.sh" 2>&1 >/dev/null | tail -n 1)
check_match "after long lines the error still ends with the script's last line, whole" \
    'noisy.sh failed \(exit 4\): .*E: the reason is in this last line, quoted whole$' "$R"
check_nomatch "... with no line cut in the middle" 'noise [0-9] 0{0,199}\|' "$R"
R=$(ctl image build cut --provision "$T/cut.sh" 2>&1 >/dev/null | tail -n 1)
check_match "after more stderr than the daemon keeps, the last line is quoted whole, alone" \
    'cut.sh failed \(exit 5\): E: after a long line$' "$R"

# ---- Ctrl-C during a build cleans up
"$LANECTL" --socket "$SOCK" image build slow --provision "$T/slow.sh" >/dev/null 2>"$T/slow.err" &
BP=$!
wait_for $((BOOT_S + 20)) grep -q slow-started "$T/slow.err"
check "the slow build started its script" grep -q slow-started "$T/slow.err"
kill -INT "$BP"
wait "$BP"
RC=$?
check "the interrupted build exits non-zero" test "$RC" -ne 0
wait_for "$(tw 20)" images_are 1
check_eq "the cancelled build's VM is deleted" 1 "$(images)"
check_match "... and it has no image" 'NOT_FOUND' "$(ctl image show slow 2>&1)"
check_match "the daemon logged the cancellation" 'slow: build failed: the client went away' "$(cat "$LOG")"

# ---- the clone's YAML comes from the lane template, whatever the image says
# The keys are set, not appended: a lima.yaml with a key twice does not
# parse, and Lima 2.2's clone then panics (clone.go:81) before anything
# of the daemon's is at stake.
python3 - "$STATE/lima/$IMG/lima.yaml" <<'PY'
import sys, yaml
path = sys.argv[1]
with open(path) as f:
    y = yaml.safe_load(f)
y["mounts"] = [{"location": "~", "writable": True}]
y["portForwards"] = [{"guestPort": 8080, "hostPort": 8080}]
y["ssh"] = dict(y.get("ssh") or {}, forwardAgent=True, loadDotSSHPubKeys=True)
y["hostResolver"] = {"enabled": True}
with open(path, "w") as f:
    yaml.safe_dump(y, f, sort_keys=False)
PY
L2=$(ctl create --image tools --cpus 2 --memory 4G --disk 30G 2>/dev/null)
check_eq "a lane from a tampered image is ready" ready "$(lane_state "$L2")"
# Lima embeds a template's base: into the instance's lima.yaml (and refuses
# one that still has a base:), so the clone's file is the golden template
# with its image-only base embedded, as `limactl template copy --embed-all`
# writes it.
# The golden file names the default base; the daemon writes the one it is
# configured with (on real Lima the tier's test template: tests/lima).
sed "/^base:\$/{n;s|^- .*|- ${AGENT_LANE_LIMA_TEMPLATE:-template:_images/ubuntu-lts}|;}" \
    "$REPO_GOLDEN" > "$T/golden.yaml"
sim template copy --embed-all "$T/golden.yaml" "$T/golden-embedded.yaml" 2>/dev/null
check "its lima.yaml is the golden lane template (tests/unit/golden/lane-internet.yaml), base embedded" \
    cmp -s "$T/golden-embedded.yaml" "$(instance_dir "$L2")/lima.yaml"
check "... with no mount, forward or agent forwarding from the image" python3 -c '
import json, re, sys
text = open(sys.argv[1]).read()
# the text the daemon wrote, before the embedded image-only base (its images: have locations)
own = text.split("\nimages:\n")[0]
assert not re.search("location:|forwardAgent: true|hostPort|loadDotSSHPubKeys: true", own), own
c = json.loads(sys.argv[2])["config"]
assert not c.get("mounts") and "base" not in c, c
assert not any("hostPort" in p for p in c.get("portForwards") or []), c["portForwards"]
assert c["ssh"]["forwardAgent"] is False and c["ssh"]["loadDotSSHPubKeys"] is False, c["ssh"]
assert c["hostResolver"]["enabled"] is False, c["hostResolver"]
' "$(instance_dir "$L2")/lima.yaml" "$(sim list --json "$L2" 2>/dev/null)"
# Two lanes cloned from one image are two machines: Lima copies the image's
# disk into each clone as it is, so what tells them apart must be made at
# each lane's first boot.
check_eq "each lane from an image has its own hostname, lima-NAME" \
    "lima-$L lima-$L2" \
    "$(ctl exec -n "$L" -- hostname 2>&1) $(ctl exec -n "$L2" -- hostname 2>&1)"
if [ "$REAL_LIMA" = 1 ]; then
	# The simulator's guests have no systemd and no sshd: only a real
	# guest makes a machine id and host keys.
	ident() {
		ctl exec -n "$1" -- sh -c 'cat /etc/machine-id &&
		    cut -d" " -f1,2 /etc/ssh/ssh_host_*_key.pub' 2>&1
	}
	check "... and its own machine id and ssh host keys (image builds clear the id; cloud-init makes keys for a new instance)" \
	    python3 -c '
import re, sys
a, b = (t.split("\n") for t in sys.argv[1:])
for t in (a, b):
    assert re.fullmatch("[0-9a-f]{32}", t[0]), t
    assert t[1:] and all(re.fullmatch("ssh-[a-z0-9-]+ [A-Za-z0-9+/=]+", k) for k in t[1:]), t
assert a[0] != b[0], ("one machine id", a[0])
assert not set(a[1:]) & set(b[1:]), ("a shared host key", a[1:], b[1:])
' "$(ident "$L")" "$(ident "$L2")"
fi
ctl rm "$L2" >/dev/null 2>&1

# ---- image rm is refused while a clone of it runs
stop_daemon
LIMA_SIM_HANG='clone:*' start_daemon --command-timeout 4s --image-build-timeout 3s || exit 1
N0=$(images)
R=$(ctl image build late --provision "$T/slow.sh" 2>&1)
check_match "a build past image_build_timeout fails with DEADLINE_EXCEEDED" \
    'DEADLINE_EXCEEDED: image build did not finish within 3 s' "$R"
check_eq "... and leaves no VM" "$N0" "$(images)"
check_match "... and no image" 'NOT_FOUND' "$(ctl image show late 2>&1)"
# Its clone has begun once the log has one more (earlier lanes' are there).
NCLONE=$(sim_calls clone)
new_clone() { [ "$(sim_calls clone)" -gt "$NCLONE" ]; }
ctl create --image tools >/dev/null 2>"$T/hung.err" &
CP=$!
wait_for 20 new_clone
R=$(ctl image rm tools 2>&1)
check_match "image rm is refused while a clone runs" 'FAILED_PRECONDITION.*in use' "$R"
check_match "image show counts the clone" 'in use: +1' "$(ctl image show tools)"
wait "$CP"
check_match "the hung clone failed the lane at the command timeout" 'clone' "$(cat "$T/hung.err")"
check_match "afterwards the image is free" 'in use: +0' "$(ctl image show tools)"
stop_daemon

# ---- a replacement while a clone of the image runs: the old VM stays
# until the clone is done with it
LIMA_SIM_HANG='clone:*' start_daemon --command-timeout 5s || exit 1
NCLONE=$(sim_calls clone)
ctl create --image tools >/dev/null 2>"$T/hung2.err" &
CP=$!
wait_for 20 new_clone
OLDINST=$(inst_of tools)
printf '\n# changed again\n' >> "$T/tools.sh"
OUT=$(ctl image build tools --provision "$T/tools.sh" 2>&1); RC=$?
check_eq "an image a clone holds is replaced all the same" "0 tools" "$RC $(tail -n 1 <<<"$OUT")"
check "... but its VM stays while the clone runs" test -e "$STATE/lima/$OLDINST"
check_eq "... retired: hidden, not an image" "tools" \
    "$(ctl image ls --json | python3 -c 'import json,sys; print(",".join(i["name"] for i in json.load(sys.stdin)))')"
wait "$CP"
check "... and goes once the clone is done" wait_for "$(tw 10)" gone "$OLDINST"
# Inputs no image has, for what follows.
printf '\n# and once more\n' >> "$T/tools.sh"
stop_daemon
start_daemon || exit 1

# ---- create --provision: the image is addressed by content
C0=$(sim_calls create)
L3=$(ctl create --provision "$T/tools.sh" 2>"$T/p1.err")
check_eq "create --provision makes a ready lane" ready "$(lane_state "$L3")"
check_eq "... that has the provisioned tools" x-from-image "$(ctl exec -n "$L3" -- x 2>&1)"
PNAME=$(ctl image ls --json | python3 -c 'import json,sys; print([i["name"] for i in json.load(sys.stdin) if i["name"].startswith("p-")][0])')
check_match "the image is named by its content" '^p-[0-9a-f]{16}$' "$PNAME"
C1=$(sim_calls create)
L4=$(ctl create --provision "$T/tools.sh" 2>"$T/p2.err")
check_eq "a second create --provision is ready" ready "$(lane_state "$L4")"
check_match "... reusing the image" "image $PNAME is up to date" "$(cat "$T/p2.err")"
check_eq "... without building (no limactl create for an image)" "$C1" "$(sim_calls create)"
check_eq "two images in all" 2 "$(images)"
ctl rm "$L" "$L3" "$L4" >/dev/null 2>&1

# ---- create --provision after image build NAME: reused by content, whatever
# the image is called (Sandcastle's create timeout counts on it)
cat > "$T/lane.sh" <<'EOF'
#!/bin/sh
echo lane-tools > /etc/lane-tools
EOF
check_eq "image build fake --provision lane.sh" fake "$(ctl image build fake --provision "$T/lane.sh" 2>/dev/null)"
NI=$(images)
C1=$(sim_calls create)
S1=$(sim_calls start)
L5=$(ctl create --provision "$T/lane.sh" 2>"$T/p5.err")
check_eq "create --provision lane.sh is ready" ready "$(lane_state "$L5")"
check_match "... reusing image fake, found by its content" 'image fake is up to date' "$(cat "$T/p5.err")"
check_eq "... without a second build (no limactl create)" "$C1" "$(sim_calls create)"
check_eq "... and one limactl start, the lane's own" "$((S1 + 1))" "$(sim_calls start)"
check_eq "... and no new image" "$NI" "$(images)"
check_match "the lane is a clone of fake" 'image +fake' "$(ctl events "$L5")"
check_eq "... with what the script wrote" lane-tools "$(ctl exec -n "$L5" -- cat /etc/lane-tools 2>&1)"
ctl rm "$L5" >/dev/null 2>&1
ctl image rm fake >/dev/null 2>&1

# ---- a build interrupted by a daemon crash is undone at the next start
"$LANECTL" --socket "$SOCK" image build crash --provision "$T/slow.sh" >/dev/null 2>"$T/crash.err" &
BP=$!
wait_for $((BOOT_S + 20)) grep -q slow-started "$T/crash.err"
kill9_daemon
wait "$BP" 2>/dev/null
kill_stray_limactl
# An instance of nobody's: real Lima creates only from a YAML with images.
if [ "$REAL_LIMA" = 1 ]; then
	{ cat "$AGENT_LANE_LIMA_TEMPLATE"; printf 'plain: true\n'; } > "$T/plain.yaml"
else
	printf 'plain: true\n' > "$T/plain.yaml"
fi
sim create --name=ali-00000000000000ff "$T/plain.yaml" >/dev/null 2>&1
start_daemon || exit 1
wait_for "$(tw 20)" images_are 3
check_eq "start-up deletes the VM of an unfinished build" 3 "$(images)"
check_match "... and its row" 'NOT_FOUND' "$(ctl image show crash 2>&1)"
check_match "start-up reports an image-shaped instance without a row" \
    'ali-00000000000000ff has no image row' "$(cat "$LOG")"
check "... and leaves it alone" test -d "$STATE/lima/ali-00000000000000ff"
sim delete --force ali-00000000000000ff >/dev/null 2>&1

# ---- image rm
R=$(ctl image rm tools 2>&1)
check_eq "image rm succeeds when nothing uses it and prints its name" tools "$R"
check_eq "... and deletes its VM" 1 "$(images)"
check_match "... and its row" 'NOT_FOUND' "$(ctl image show tools 2>&1)"
