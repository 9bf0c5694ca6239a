#!/usr/bin/env bash
# agent-lanectl commit on real Lima (part of `make check-lima`): a lane in
# which a file was written and a package installed (a .deb made here on
# the host: the guests reach no mirror) is committed through a real
# `limactl stop` + `limactl clone` + one scrubbing boot; the lane runs on;
# two lanes started from the image both see the file and the package, and
# each has its own machine id and ssh host key (neither the source lane's
# nor the other's), and neither has the source lane's logs.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "commit a lane and start two from it on real Lima" "$0" "$@"
. "$HERE/../regress/lib.sh"

start_daemon || exit 1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# A package of our own: installed with dpkg, seen by dpkg -s and on PATH.
mkdir -p "$T/pkg/DEBIAN" "$T/pkg/usr/bin"
cat > "$T/pkg/DEBIAN/control" <<'EOF'
Package: al-commit-probe
Version: 1.0
Architecture: all
Maintainer: agent-lane tests <tests@invalid>
Description: a package installed in a lane before it is committed
EOF
printf '#!/bin/sh\necho probe-from-package\n' > "$T/pkg/usr/bin/al-commit-probe"
chmod 0755 "$T/pkg/usr/bin/al-commit-probe"
dpkg-deb --build --root-owner-group "$T/pkg" "$T/probe.deb" >/dev/null 2>&1
check "the probe package is built on the host" test -s "$T/probe.deb"

t=$(date +%s%N)
L=$(ctl create --name prep --sudo --timeout "$(life 1800)")
echo "# create (cold) -> ready: $(ms "$t") ms"
check_eq "the source lane is ready" ready "$(lane_state "$L")"
g() { ctl exec -n "$1" -- "${@:2}"; }
g "$L" sh -c 'echo prepared-in-lane > prepared.txt'
check "the .deb is copied into the lane" ctl cp "$T/probe.deb" "$L:probe.deb"
OUT=$(g "$L" sh -c 'sudo -n dpkg -i probe.deb >/dev/null && rm probe.deb && al-commit-probe' 2>&1)
check_eq "and installed with dpkg" probe-from-package "$OUT"
g "$L" sudo -n sh -c 'echo lane-log-marker > /var/log/al-commit-marker.log'
MID_L=$(g "$L" cat /etc/machine-id 2>/dev/null)
KEY_L=$(g "$L" sudo -n cat /etc/ssh/ssh_host_ed25519_key.pub 2>/dev/null | awk '{print $2}')
check "the source lane has a machine id and an ed25519 host key" test -n "$MID_L" -a -n "$KEY_L"

t=$(date +%s%N)
OUT=$(ctl commit prep prepared 2>"$T/commit.err"); RC=$?
COMMIT_MS=$(ms "$t")
echo "# commit (stop + clone + restart; the copy booted once and scrubbed): $COMMIT_MS ms"
check_eq "commit exits 0 and prints the image" "0 prepared" "$RC $OUT"
[ "$RC" -eq 0 ] || sed 's/^/#   /' "$T/commit.err"
check_eq "the source lane is ready and runs again, its file kept" "ready prepared-in-lane" \
    "$(lane_state "$L") $(g "$L" cat prepared.txt 2>&1)"
check_match "image show gives the origin" "^origin: +commit of lane $L \(prep\)" "$(ctl image show prepared)"

# Two lanes from the image, booted side by side.
t=$(date +%s%N)
ctl create --image prepared --timeout "$(life 1800)" >"$T/a" 2>"$T/a.err" &
PA=$!
ctl create --image prepared --timeout "$(life 1800)" >"$T/b" 2>"$T/b.err" &
PB=$!
wait "$PA"; wait "$PB"
echo "# two creates --image prepared -> both ready: $(ms "$t") ms"
A=$(cat "$T/a"); B=$(cat "$T/b")
check_eq "two lanes from the image are ready" "ready ready" "$(lane_state "$A") $(lane_state "$B")"
for x in "$A" "$B"; do
	check_eq "$x sees the file written in the source lane" prepared-in-lane "$(g "$x" cat prepared.txt 2>&1)"
	check_eq "$x has the package, for dpkg and on PATH" "install ok installed probe-from-package" \
	    "$(g "$x" sh -c 'dpkg-query -W -f "\${Status}" al-commit-probe; echo; al-commit-probe' 2>&1 | tr '\n' ' ' | sed 's/ $//')"
	check "$x has none of the source lane's logs" g "$x" test ! -e /var/log/al-commit-marker.log
done
MID_A=$(g "$A" cat /etc/machine-id 2>/dev/null); MID_B=$(g "$B" cat /etc/machine-id 2>/dev/null)
KEY_A=$(g "$A" sh -c 'cut -d" " -f2 /etc/ssh/ssh_host_ed25519_key.pub' 2>/dev/null)
KEY_B=$(g "$B" sh -c 'cut -d" " -f2 /etc/ssh/ssh_host_ed25519_key.pub' 2>/dev/null)
echo "# machine ids: source $MID_L, $MID_A, $MID_B"
check "each lane has its own machine id" sh -c '[ -n "$1" ] && [ -n "$2" ] && [ "$1" != "$2" ] && [ "$1" != "$3" ] && [ "$2" != "$3" ]' _ "$MID_A" "$MID_B" "$MID_L"
check "and its own ssh host key" sh -c '[ -n "$1" ] && [ -n "$2" ] && [ "$1" != "$2" ] && [ "$1" != "$3" ] && [ "$2" != "$3" ]' _ "$KEY_A" "$KEY_B" "$KEY_L"
ctl rm "$A" "$B" "$L" >/dev/null 2>&1
ctl image rm prepared >/dev/null 2>&1
finish
