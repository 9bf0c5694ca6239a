#!/bin/sh
# Builds the guest image of the real-VM limactl (tests/lima-vm) from Debian
# packages only, and prints the directory that holds it:
#
#   DIR/disk.qcow2   ext4 root filesystem (no partition table)
#   DIR/vmlinuz      the guest's own kernel (booted with -kernel)
#   DIR/initrd.img   its initramfs
#
# The image is cached outside the repository, keyed by the hash of this
# script and of guest/ (what goes into the image), so that editing either
# builds a new one. A build happens in a temporary directory renamed into
# place at the end: an interrupted build is never used. Concurrent callers
# wait on a lock instead of building twice.
#
#   tests/lima-vm/build-image.sh            build if needed; print DIR
#   tests/lima-vm/build-image.sh --check    print DIR if built, else exit 1
#
# Environment:
#   LIMA_VM_CACHE    cache directory (default $XDG_CACHE_HOME/agent-lane-vm,
#                    i.e. ~/.cache/agent-lane-vm)
#   LIMA_VM_MIRROR   Debian mirror (default: the bookworm one apt uses)
#
# Needs root (debootstrap, chroot), debootstrap, mke2fs (e2fsprogs) and
# qemu-img. Exit 1 with the reason on stderr when the image cannot be built.
set -eu
umask 022

HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=bookworm
CACHE=${LIMA_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-lane-vm}
# Debian packages in the guest. The kernel is the cloud flavour (virtio,
# no hardware drivers); the rest is what Lima's guests provide that lanes
# use: systemd, sshd, sudo, perl for the guest helper, tar for copies,
# nftables for the guest network policy, ps for the tests.
PACKAGES=linux-image-cloud-amd64,initramfs-tools,zstd,systemd-sysv,udev,dbus,\
libpam-systemd,openssh-server,sudo,perl-base,tar,nftables,iproute2,procps,\
e2fsprogs,kmod
ROOT_SIZE=2G

die() {
	echo "build-image: $*" >&2
	exit 1
}

KEY=$( { cat "$0"; for f in "$HERE"/guest/*; do echo "== $f"; cat "$f"; done; } |
    sha256sum | cut -c1-16)
OUT=$CACHE/img-$KEY

if [ -f "$OUT/disk.qcow2" ] && [ -f "$OUT/vmlinuz" ] && [ -f "$OUT/initrd.img" ]; then
	echo "$OUT"
	exit 0
fi
[ "${1:-}" = --check ] && exit 1

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot); run it once as root"
for t in debootstrap mke2fs qemu-img chroot flock; do
	command -v "$t" >/dev/null 2>&1 ||
	    PATH=$PATH:/usr/sbin:/sbin command -v "$t" >/dev/null 2>&1 ||
	    die "$t is not installed (apt-get install debootstrap e2fsprogs qemu-utils)"
done
export PATH="$PATH:/usr/sbin:/sbin"

# The mirror apt already uses for bookworm (deb822 .sources or one-line
# sources.list), so that the build needs no other network access.
mirror() {
	[ -n "${LIMA_VM_MIRROR:-}" ] && { echo "$LIMA_VM_MIRROR"; return; }
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v suite="$SUITE" '
		    /^[[:space:]]*$/ { if (u != "" && s) { print u; exit } u = ""; s = 0; next }
		    /^URIs:/ { u = $2 }
		    /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) s = 1 }
		    END { if (u != "" && s) print u }' "$f"
	done | head -n 1 | grep . && return
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
	    awk -v suite="$SUITE" '$1 == "deb" && $0 !~ /\[/ && $3 == suite { print $2; exit }
		$1 == "deb" && $0 ~ /\[/ { for (i = 2; i <= NF; i++) if ($i ~ /\]$/) break;
		    if ($(i + 2) == suite) { print $(i + 1); exit } }' | grep . && return
	echo http://deb.debian.org/debian
}

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
# Someone else may have built it while we waited.
if [ -f "$OUT/disk.qcow2" ]; then
	echo "$OUT"
	exit 0
fi
# Leftovers of interrupted builds (we hold the lock: nobody is using them).
rm -rf "$CACHE"/.build-*

W=$(mktemp -d "$CACHE/.build-$KEY.XXXXXX")
chmod 0755 "$W"
trap 'rm -rf "$W"' EXIT
R=$W/rootfs
MIRROR=$(mirror)
mkdir -p "$CACHE/debs"
start=$(date +%s)
echo "build-image: debootstrap $SUITE from $MIRROR" >&2
if ! debootstrap --variant=minbase --include="$PACKAGES" \
    --cache-dir="$CACHE/debs" "$SUITE" "$R" "$MIRROR" >"$W/debootstrap.log" 2>&1; then
	tail -n 20 "$W/debootstrap.log" >&2
	die "debootstrap failed (log above)"
fi

# --- configure the root filesystem ---------------------------------------
# Root is mounted read-write by the kernel (root=/dev/vda rw); no fstab
# entry, so boot does not wait for a dev-vda.device unit.
printf '# / is mounted by the kernel command line (root=/dev/vda rw)\n' > "$R/etc/fstab"
echo localhost > "$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$R/etc/hosts"
# Lima's user-mode network: DHCP from slirp, DNS at 192.168.5.3.
rm -f "$R/etc/resolv.conf"
echo 'nameserver 192.168.5.3' > "$R/etc/resolv.conf"
mkdir -p "$R/etc/systemd/network"
printf '[Match]\nName=e*\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
    > "$R/etc/systemd/network/10-lima.network"
# Empty machine-id: every instance generates its own on first boot.
: > "$R/etc/machine-id"
rm -f "$R/var/lib/dbus/machine-id"
# Host keys are made per instance by lima-init.
rm -f "$R"/etc/ssh/ssh_host_*
cat > "$R/etc/ssh/sshd_config.d/lima.conf" <<'EOF'
# Lima-like guest: public keys only, one host key made at first boot.
HostKey /etc/ssh/ssh_host_ed25519_key
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UseDNS no
# limactl multiplexes sessions over one ControlMaster connection.
MaxSessions 64
MaxStartups 64:30:128
EOF
# Root's password is locked: no `su` to root, whatever sudo allows.
chroot "$R" passwd -l root >/dev/null
install -m 0755 "$HERE/guest/lima-init" "$R/usr/local/sbin/lima-init"
install -m 0644 "$HERE/guest/lima-init.service" "$HERE/guest/lima-boot.service" \
    "$R/etc/systemd/system/"
chroot "$R" systemctl enable -q systemd-networkd.service lima-init.service lima-boot.service
# Nothing that costs boot time under TCG and that a lane does not need.
chroot "$R" systemctl mask -q systemd-networkd-wait-online.service \
    apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
    fstrim.timer getty@tty1.service serial-getty@ttyS0.service \
    systemd-pstore.service 2>/dev/null || true
rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/var/cache/apt/archives/*.deb

# --- kernel, initrd, disk -------------------------------------------------
K=$(ls "$R"/boot/vmlinuz-* | sort -V | tail -n 1)
I=$(ls "$R"/boot/initrd.img-* | sort -V | tail -n 1)
[ -f "$K" ] && [ -f "$I" ] || die "no kernel or initrd in the image"
cp "$K" "$W/vmlinuz"
cp "$I" "$W/initrd.img"
mke2fs -q -t ext4 -L lima-root -d "$R" "$W/disk.raw" "$ROOT_SIZE" >&2 ||
    die "mke2fs -d failed"
qemu-img convert -O qcow2 "$W/disk.raw" "$W/disk.qcow2" || die "qemu-img convert failed"
rm -f "$W/disk.raw"
rm -rf "$R"
end=$(date +%s)
printf 'built %s in %ss from %s\npackages: %s\n' "$(date -u +%FT%TZ)" \
    $((end - start)) "$MIRROR" "$PACKAGES" > "$W/BUILD-INFO"
mv -T "$W" "$OUT"
trap - EXIT
# Older images stay: instances made from them still use them as backing
# files. `rm -rf` the cache when no instance is left.
echo "build-image: built $OUT in $((end - start)) s" >&2
echo "$OUT"
