#!/bin/sh
# Installs Lima (limactl and its guest agent) at a pinned version from the
# Go module proxy, outside the repository, and prints the prefix:
#
#   PREFIX/bin/limactl
#   PREFIX/share/lima/lima-guestagent.Linux-x86_64
#   PREFIX/share/lima/templates/            (Lima's own, from the module)
#
# which is the layout limactl looks for next to itself
# (<dir of limactl>/../share/lima). An existing install of the same version
# is reused. Lima's source stays in the Go module cache; nothing of it
# enters the repository.
#
#   tests/lima/install.sh           install if needed; print PREFIX
#   tests/lima/install.sh --check   print PREFIX if installed, else exit 1
#
# Environment:
#   AL_LIMA_VERSION   the version (default 2.2.0)
#   AL_LIMA_PREFIX    where (default: /var/cache/agent-lane/lima-vVERSION as
#                     root, so that the tier's unprivileged user can run it;
#                     else $XDG_CACHE_HOME/agent-lane/lima-vVERSION)
#
# Exits 1 with the reason on stderr when it cannot install (no Go, no
# module proxy).
set -eu
umask 022

V=${AL_LIMA_VERSION:-2.2.0}
MOD=github.com/lima-vm/lima/v2
if [ "$(id -u)" -eq 0 ]; then
	P=${AL_LIMA_PREFIX:-/var/cache/agent-lane/lima-v$V}
else
	P=${AL_LIMA_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-lane/lima-v$V}
fi

die() {
	echo "lima-install: $*" >&2
	exit 1
}

installed() {
	[ -x "$P/bin/limactl" ] && [ -f "$P/share/lima/lima-guestagent.Linux-x86_64" ] &&
	    [ -f "$P/share/lima/templates/default.yaml" ] &&
	    [ -f "$P/share/lima/templates/_images/ubuntu-lts.yaml" ] &&
	    [ "$(cat "$P/VERSION" 2>/dev/null)" = "$V" ]
}
if installed; then
	echo "$P"
	exit 0
fi
[ "${1:-}" = --check ] && exit 1

command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null 2>&1 || die "Go is not installed (Lima is built with go install)"
[ "$(uname -s)" = Linux ] ||
    die "this script installs Lima for Linux hosts; on a Mac use Homebrew's lima"

mkdir -p "$(dirname "$P")"
exec 9>"$(dirname "$P")/.lima-install.lock"
flock 9 2>/dev/null || true
if installed; then
	echo "$P"
	exit 0
fi
W=$(mktemp -d "$(dirname "$P")/.lima-install.XXXXXX")
trap 'rm -rf "$W"' EXIT

# `go install MOD/cmd/limactl@vV` asks the proxy for the module's version
# list to look for a deprecation notice, and some proxies refuse that list
# while serving the version itself. Downloading the exact version and
# installing from its module directory builds the same thing: the module's
# own go.mod and go.sum, no replace directives, the version pinned.
echo "lima-install: fetching $MOD@v$V from the Go module proxy" >&2
dir=$(go mod download -json "$MOD@v$V" 2>"$W/download.log" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || true
[ -n "$dir" ] && [ -d "$dir" ] ||
    die "cannot download $MOD@v$V: $(tail -n 3 "$W/download.log" | tr '\n' ' ')"

echo "lima-install: building limactl and lima-guestagent $V" >&2
mkdir -p "$W/bin" "$W/share/lima"
(cd "$dir" && GOBIN="$W/bin" GOFLAGS=-mod=readonly go install \
    -ldflags "-X $MOD/pkg/version.Version=v$V" ./cmd/limactl) >"$W/build.log" 2>&1 ||
    die "go install limactl failed: $(tail -n 5 "$W/build.log" | tr '\n' ' ')"
# The guest agent is static (no cgo), like Lima's release builds. Plain
# lanes never start it, but limactl insists on finding it.
(cd "$dir" && GOBIN="$W/gabin" CGO_ENABLED=0 GOOS=linux GOARCH=amd64 \
    GOFLAGS=-mod=readonly go install ./cmd/lima-guestagent) >>"$W/build.log" 2>&1 ||
    die "go install lima-guestagent failed: $(tail -n 5 "$W/build.log" | tr '\n' ' ')"
mv "$W/gabin/lima-guestagent" "$W/share/lima/lima-guestagent.Linux-x86_64"
rmdir "$W/gabin"
cp -R "$dir/templates" "$W/share/lima/templates"
chmod -R u+w "$W/share/lima/templates"
# Go module zips leave symbolic links out, and Lima's templates have some:
# the aliases such as _images/ubuntu-lts, which agent-laned's default base
# template names. These are the links of the v2.2.0 tag's tree.
if [ "$V" = 2.2.0 ]; then
	while read -r link target; do
		[ -e "$W/share/lima/templates/$link" ] ||
		    ln -s "$target" "$W/share/lima/templates/$link"
	done <<'LINKS'
_images/fedora.yaml fedora-44.yaml
_images/freebsd.yaml freebsd-15.yaml
_images/macos.yaml macos-26.yaml
_images/opensuse-leap.yaml opensuse-leap-16.yaml
_images/ubuntu-lts.yaml ubuntu-26.04.yaml
_images/ubuntu.yaml ubuntu-26.04.yaml
almalinux.yaml almalinux-10.yaml
alpine.yaml alpine-3.23.yaml
centos-stream.yaml centos-stream-9.yaml
debian.yaml debian-13.yaml
experimental/almalinux-kitten.yaml almalinux-kitten-10.yaml
experimental/freebsd-current.yaml freebsd-16.yaml
experimental/ubuntu-next.yaml ubuntu-26.10.yaml
fedora.yaml fedora-44.yaml
freebsd.yaml freebsd-15.yaml
homebrew-linux.yaml linuxbrew.yaml
macos.yaml macos-26.yaml
opensuse-leap.yaml opensuse-leap-16.yaml
opensuse.yaml opensuse-leap.yaml
oraclelinux.yaml oraclelinux-10.yaml
rocky.yaml rocky-10.yaml
ubuntu-lts.yaml ubuntu-26.04.yaml
ubuntu.yaml ubuntu-26.04.yaml
windows.yaml windows-11.yaml
LINKS
fi
echo "$V" > "$W/VERSION"
chmod -R u+w,a+rX "$W"
rm -f "$W/download.log" "$W/build.log"
rm -rf "$P"
mv -T "$W" "$P"
trap - EXIT
"$P/bin/limactl" --version >/dev/null 2>&1 ||
    [ "$(id -u)" -eq 0 ] || die "$P/bin/limactl does not run"
echo "lima-install: installed Lima $V in $P" >&2
echo "$P"
