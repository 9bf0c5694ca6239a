#!/usr/bin/env bash
# `image build --docker` on real Lima (part of `make check-lima`): the image
# gets Docker Engine from Debian packages, rootless for the lane user, in a
# VM that real `limactl clone` then copies; a lane cloned from it runs a
# container as that user, without sudo, through agent-lanectl exec. No
# registry is reachable, so the container image is made in the guest from a
# Debian package: busybox-static's binary packed with tar and loaded with
# `docker import`. It never passes without having run a container.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "rootless Docker in a lane on real Lima" "$0" "$@"
. "$HERE/../regress/lib.sh"

start_daemon || exit 1

# --- the image ------------------------------------------------------------
# Package installs under TCG take minutes: the build VM gets 2 CPUs and
# 2 GiB, and the disk room docker.io needs.
t=$(date +%s%N)
OUT=$(ctl image build dock --docker --cpus 2 --memory 2G --disk 8G 2>"$T/build.err")
RC=$?
BUILD_MS=$(( ($(date +%s%N) - t) / 1000000 ))
echo "# image build --docker: $BUILD_MS ms"
check_eq "image build --docker exits 0 and prints the image name" "0 dock" "$RC $OUT"
if [ "$RC" -ne 0 ]; then
	tail -n 30 "$T/build.err" | sed 's/^/#   /'
	finish
fi

t=$(date +%s%N)
L=$(ctl create --image dock --timeout 30m)
echo "# create --image (docker image) -> ready: $(( ($(date +%s%N) - t) / 1000000 )) ms"
check_eq "a lane is created from the docker image" ready "$(lane_state "$L")"
g() { ctl exec "$L" -- "$@"; }

# --- the lane user is not root, nor root's equivalent ----------------------
U=$(g id -un)
UID_G=$(g id -u)
check "the lane user is not root ($U, uid $UID_G)" test -n "$UID_G" -a "$UID_G" != 0
check_nomatch "nor in the docker group" '(^| )docker( |$)' "$(g id -nG)"
check_nomatch "nor listed as a member of it" "[:,]$U(,|\$)" "$(g getent group docker)"
check "no system Docker socket exists in the guest" \
    g sh -c 'test ! -e /run/docker.sock && test ! -e /var/run/docker.sock'
check_nomatch "nor a system dockerd" '^dockerd' "$(g ps -eo user:20,args | awk '$1 == "root" { $1 = ""; print substr($0, 2) }')"

# --- exec's environment names the user's own daemon -----------------------
check_eq "DOCKER_HOST is the lane user's rootless socket" \
    "unix:///run/user/$UID_G/docker.sock" "$(g sh -c 'echo "$DOCKER_HOST"')"
# The user's manager starts docker.service at boot (linger); a lane is
# ready when ssh answers, which can be before dockerd has made its socket.
t=$(date +%s%N)
sock_up() { g test -S "/run/user/$UID_G/docker.sock"; }
check "the lane user's Docker socket appears" wait_for 300 sock_up
echo "# ready -> docker socket up: $(( ($(date +%s%N) - t) / 1000000 )) ms"
check "and belongs to the lane user" g test -O "/run/user/$UID_G/docker.sock"
INFO=$(g docker info --format '{{json .SecurityOptions}}' 2>&1)
if echo "$INFO" | grep -Eqi 'cannot connect|no such file|permission denied'; then
	echo "# docker info: $INFO"
	echo "# the user's docker service:"
	g sh -c 'systemctl --user status docker.service --no-pager 2>&1 | tail -n 20;
	    journalctl --user -u docker.service --no-pager 2>&1 | tail -n 30' | sed 's/^/#   /'
fi
check_match "docker info (as the lane user, no sudo) reports rootless" 'name=rootless' "$INFO"
# Rootless Docker lives in user namespaces: a lane with Docker keeps them
# (every other lane has none: netpolicy.sh).
check "the lane keeps user namespaces (unshare -Ur true)" g unshare -Ur true
echo "# storage driver: $(g docker info --format '{{.Driver}}' 2>&1)"

# --- a container from a Debian package ------------------------------------
t=$(date +%s%N)
OUT=$(g sh -c 'set -e
	d=$(mktemp -d); cd "$d"
	apt-get download busybox-static >/dev/null
	dpkg-deb -x busybox-static_*.deb root
	tar -C root -c bin/busybox | docker import - al-busybox:test >/dev/null
	rm -rf "$d"
	docker image ls --format "{{.Repository}}:{{.Tag}}" al-busybox' 2>&1)
echo "# busybox image made and imported: $(( ($(date +%s%N) - t) / 1000000 )) ms"
check_eq "docker import of busybox-static's binary" al-busybox:test "$OUT"
t=$(date +%s%N)
OUT=$(g docker run --rm al-busybox:test busybox echo ok 2>&1)
echo "# docker run: $(( ($(date +%s%N) - t) / 1000000 )) ms"
check_eq "docker run IMAGE busybox echo ok, as the lane user" ok "$OUT"
check_eq "root in the container is the lane user outside it" \
    "0 $UID_G" "$(g sh -c 'docker run --rm -d al-busybox:test busybox sleep 60 >/dev/null &&
	c=$(docker ps -q | head -n 1) &&
	echo "$(docker exec "$c" busybox id -u) $(ps -o uid= -p "$(docker inspect -f "{{.State.Pid}}" "$c")" | tr -d " ")";
	docker rm -f "$c" >/dev/null')"

check "rm" ctl rm "$L"
check "image rm" ctl image rm dock
finish
