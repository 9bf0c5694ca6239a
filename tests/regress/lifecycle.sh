#!/usr/bin/env bash
# create -> ls shows it ready with an isolated instance -> rm -> gone.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1

L=$(ctl create --cpus 2 --memory 2G --disk 10G --timeout 10m --label run=lifecycle)
check_match "create prints a lane name" '^al-[0-9a-f]{16}$' "$L"
check_eq "lane is ready after create" ready "$(lane_state "$L")"

LS=$(ctl ls --json)
check_match "ls --json lists the lane" "\"name\":\"$L\"" "$LS"
check "ls --json has the documented fields" python3 -c '
import json, sys
lanes = json.loads(sys.argv[1])
need = {"name", "state", "cpus", "memory_gib", "disk_gib", "created_at", "deadline"}
l = [x for x in lanes if x["name"] == sys.argv[2]][0]
assert need <= set(l), set(l)
assert l["state"] == "ready" and l["cpus"] == 2 and l["memory_gib"] == 2 and l["disk_gib"] == 10
assert l["labels"] == {"run": "lifecycle"}
' "$LS" "$L"
check_match "ls table shows the lane ready" "$L +- +ready" "$(ctl ls)"

D=$(instance_dir "$L")
check "instance directory exists" test -d "$D"
Y=$D/lima.yaml
for key in 'plain: true' 'mounts: \[\]' 'forwardAgent: false' \
    'loadDotSSHPubKeys: false' 'forwardX11: false' 'propagateProxyEnv: false' \
    'enabled: false' 'display: none' 'ignore: true' 'guestIPMustBeZero: false' \
    'cpus: 2' 'memory: 2GiB' 'disk: 10GiB' 'system: false' 'user: false'; do
	check "lane YAML has '$key'" grep -Eq "^ *-? *$key\$" "$Y"
done
# limactl's own view of the instance's configuration (list --json), so
# that no YAML parser is needed here.
CFG=$(sim list --json "$L" 2>/dev/null)
check "lane YAML has no mounts" python3 -c '
import json, sys
sys.exit(0 if not json.loads(sys.argv[1])["config"].get("mounts") else 1)' "$CFG"
if [ "$REAL_LIMA" = 1 ]; then
	# Lima embeds the base template at create: the instance then holds its
	# images instead of a base.
	check "Lima embedded the lane's image-only base template" python3 -c '
import json, sys
c = json.loads(sys.argv[1])["config"]
locs = [i["location"] for i in c.get("images") or []]
want = open(sys.argv[2]).read() if sys.argv[2] else ""
ok = "base" not in c and locs and all(
    (l in want) if want else ("ubuntu" in l) for l in locs)
sys.exit(0 if ok else 1)' "$CFG" "${AGENT_LANE_LIMA_TEMPLATE:-}"
else
	# The simulator embeds base: at create as Lima does: the lane's YAML
	# then has no base and ends with what the image-only template adds,
	# exactly as `template copy --embed-all` writes it.
	WANT=$(printf 'base: template:_images/ubuntu-lts\n' | sim template copy --embed-all - - 2>/dev/null |
	    sed -n '/^vmType:/,$p')
	check "lane YAML embeds an image-only base template (no base:, then its vmType and images)" \
	    sh -c '! grep -q "^base:" "$1" && [ -n "$2" ] && [ "$(sed -n "/^vmType:/,\$p" "$1")" = "$2" ]' \
	    _ "$Y" "$WANT"
fi
check_eq "VM is running in Lima" Running \
    "$(sim list --format '{{.Status}}' "$L" 2>/dev/null)"

SHOW=$(ctl show "$L")
check_match "show prints the workspace" 'workspace: +/' "$SHOW"
check_match "version reaches the daemon" 'agent-laned 0\.' "$(ctl version)"

check "rm succeeds" ctl rm "$L"
check "instance directory is gone" test ! -e "$D"
check_eq "lane is destroyed" destroyed "$(lane_state "$L")"
check_nomatch "ls no longer lists it" "$L" "$(ctl ls)"
check_match "ls --all still lists it" "$L +- +destroyed" "$(ctl ls --all)"
check "rm again is idempotent" ctl rm "$L"

EV=$(ctl events "$L")
for e in registered vm-created started ready destroying destroyed; do
	check_match "audit trail has $e" "  $e " "$EV"
done

OUT=$(ctl show al-0000000000000000 2>&1); RC=$?
check_eq "show of an unknown lane exits 1" 1 "$RC"
check_match "unknown lane is NOT_FOUND" 'NOT_FOUND' "$OUT"
OUT=$(ctl show 'al-../../etc' 2>&1); RC=$?
check_eq "a malformed lane name is refused as a usage error (2)" 2 "$RC"
check_match "malformed name is INVALID_ARGUMENT" 'INVALID_ARGUMENT' "$OUT"
ctl frobnicate >/dev/null 2>&1; check_eq "unknown command exits 2" 2 "$?"
ctl create --cpus x >/dev/null 2>&1; check_eq "bad flag value exits 2" 2 "$?"
