#!/usr/bin/env bash
# Every lane YAML agent-laned can write, checked by Lima 2.2's own
# `limactl validate` (part of `make check`): the golden files that
# tests/unit/test_yaml.c pins byte for byte (each network mode, --sudo, and
# the lane without a policy; clones and pool lanes get the same rendering,
# daemon/lanecreate.c:render_yaml), with the default base template
# (template:_images/ubuntu-lts, from Lima's own templates) and with the
# tier's test template. A warning fails too, but for the one Lima prints for
# every lane that drops guest root ("`user.passwordlessSudo: false` is
# experimental"): Lima only warns about an unknown key ("Non-strict YAML"),
# and a key Lima does not know closes nothing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "limactl validate of the lane YAMLs" "$0" "$@"

REPO=$(cd "$HERE/../.." && pwd)
W=$(mktemp -d /tmp/alv.XXXXXX)
trap 'rm -rf "$W"' EXIT
export LIMA_HOME=$W/lima
mkdir -p "$LIMA_HOME"
n=0
failed=0

validate() {
	local what=$1 file=$2 out bad
	n=$((n + 1))
	out=$("$LIMACTL" --tty=false --log-format=json validate "$file" 2>&1)
	local rc=$?
	bad=$(printf '%s\n' "$out" | grep -E '"level":"(warning|error|fatal)"' |
	    grep -v 'user.passwordlessSudo: false` is experimental')
	if [ "$rc" -eq 0 ] && [ -z "$bad" ]; then
		echo "ok $n - $what"
	else
		failed=$((failed + 1))
		echo "not ok $n - $what (exit $rc)"
		printf '%s\n' "$out" | sed 's/^/#   /'
	fi
}

count=0
for f in "$REPO"/tests/unit/golden/lane*.yaml; do
	b=$(basename "$f")
	validate "$b passes limactl validate" "$f"
	if [ -n "${AGENT_LANE_LIMA_TEMPLATE:-}" ]; then
		sed "s|^- template:_images/ubuntu-lts$|- $AGENT_LANE_LIMA_TEMPLATE|" "$f" > "$W/$b"
		validate "$b on the test template passes limactl validate" "$W/$b"
	fi
	count=$((count + 1))
done
# A control, so that a limactl that accepted anything would show: an
# unknown key is what Lima reports as a warning.
printf 'agentLaneNoSuchKey: 1\n' | cat - "$REPO/tests/unit/golden/lane.yaml" > "$W/typo.yaml"
n=$((n + 1))
if "$LIMACTL" --tty=false --log-format=json validate "$W/typo.yaml" 2>&1 |
    grep -q 'Non-strict YAML'; then
	echo "ok $n - the control: an unknown key is reported"
else
	failed=$((failed + 1))
	echo "not ok $n - the control: limactl validate did not report an unknown key"
fi
[ "$count" -ge 5 ] || { echo "not ok $((n + 1)) - only $count golden lane YAMLs found"; exit 1; }
[ "$failed" -eq 0 ]
