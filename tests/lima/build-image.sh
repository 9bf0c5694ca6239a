#!/bin/sh
# Builds the guest image that real Lima boots in the real-Lima tier, from
# Debian packages only, and prints the directory that holds it:
#
#   DIR/disk.qcow2     ext4 root filesystem on the whole disk (no partition
#                      table, no backing file: what Lima accepts as a base)
#   DIR/vmlinuz        the guest's own kernel, booted directly by QEMU
#   DIR/initrd.img     its initramfs
#   DIR/template.yaml  a Lima base template whose `images:` are these local
#                      files (direct kernel boot, legacy BIOS: no firmware
#                      to find, the fastest boot under TCG)
#
# The guest is what Lima needs of any image: cloud-init (Lima configures
# every QEMU guest through a NoCloud cidata ISO; it has no other way), bash,
# sudo and sshd. Plus what lanes use: perl for the guest helper, tar for
# copies, nftables for the network policy, ca-certificates for the lane CA,
# git, curl and procps for agents and tests, and the packages rootless
# Docker needs at run time come from the mirror when an image build asks.
#
# Cached outside the repository by the hash of this script, so editing it
# builds a new image. A build runs in a temporary directory renamed into
# place at the end (an interrupted build is never used); concurrent callers
# wait on a lock instead of building twice.
#
#   tests/lima/build-image.sh            build if needed; print DIR
#   tests/lima/build-image.sh --check    print DIR if built, else exit 1
#
# Environment:
#   AL_LIMA_IMAGE_CACHE  cache directory (default: /var/cache/agent-lane/image
#                        as root, so that the tier's unprivileged user can
#                        read it; else $XDG_CACHE_HOME/agent-lane/image)
#   LIMA_VM_MIRROR       Debian mirror (default: the bookworm one apt uses)
#
# Needs root (debootstrap, chroot), debootstrap, mke2fs and qemu-img. Exits
# 1 with the reason on stderr when the image cannot be built.
set -eu
umask 022

SUITE=bookworm
if [ "$(id -u)" -eq 0 ]; then
	CACHE=${AL_LIMA_IMAGE_CACHE:-/var/cache/agent-lane/image}
else
	CACHE=${AL_LIMA_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-lane/image}
fi
# Debian packages in the guest. debootstrap adds their dependencies but not
# virtual ones: python3-cffi-backend provides what python3-cryptography
# (cloud-init) needs.
PACKAGES=linux-image-cloud-amd64,initramfs-tools,zstd,systemd-sysv,udev,dbus,\
libpam-systemd,cloud-init,openssh-server,sudo,bash,perl-base,tar,nftables,\
iproute2,procps,e2fsprogs,kmod,ca-certificates,curl,git,less,python3-cffi-backend
ROOT_SIZE=3G
CMDLINE='root=/dev/vda rw console=ttyS0 net.ifnames=0 no_timer_check quiet'

die() {
	echo "build-image: $*" >&2
	exit 1
}

KEY=$(sha256sum < "$0" | cut -c1-16)
OUT=$CACHE/img-$KEY

built() {
	[ -f "$OUT/disk.qcow2" ] && [ -f "$OUT/vmlinuz" ] &&
	    [ -f "$OUT/initrd.img" ] && [ -f "$OUT/template.yaml" ]
}
if built; then
	echo "$OUT"
	exit 0
fi
[ "${1:-}" = --check ] && exit 1

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot); run it once as root"
export PATH="$PATH:/usr/sbin:/sbin"
for t in debootstrap mke2fs qemu-img chroot flock; do
	command -v "$t" >/dev/null 2>&1 ||
	    die "$t is not installed (apt-get install debootstrap e2fsprogs qemu-utils)"
done

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
chmod 0755 "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if built; then
	echo "$OUT"
	exit 0
fi
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

# --- the root filesystem --------------------------------------------------
# The kernel mounts / read-write (root=/dev/vda rw): no fstab entry, so
# boot does not wait for a dev-vda.device unit.
printf '# / is mounted by the kernel command line\n' > "$R/etc/fstab"
echo localhost > "$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$R/etc/hosts"
# Lima's user-mode network: DHCP from QEMU's slirp, DNS at 192.168.5.3.
# systemd-networkd does the DHCP; cloud-init leaves the network alone.
rm -f "$R/etc/resolv.conf"
echo 'nameserver 192.168.5.3' > "$R/etc/resolv.conf"
mkdir -p "$R/etc/systemd/network"
printf '[Match]\nName=eth*\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
    > "$R/etc/systemd/network/10-lima.network"
# Every instance makes its own machine id and host keys at first boot.
: > "$R/etc/machine-id"
rm -f "$R/var/lib/dbus/machine-id" "$R"/etc/ssh/ssh_host_*
cat > "$R/etc/ssh/sshd_config.d/lima.conf" <<'EOF'
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UseDNS no
# limactl multiplexes sessions over one ControlMaster connection.
MaxSessions 64
MaxStartups 64:30:128
EOF
# cloud-init: only the NoCloud data source (no probing of cloud metadata
# services) and only the modules Lima's user-data uses. The network is
# networkd's (above).
cat > "$R/etc/cloud/cloud.cfg" <<'EOF'
# agent-lane real-Lima test image: what Lima's NoCloud user-data needs.
datasource_list: [NoCloud]
network: {config: disabled}
disable_root: true
preserve_hostname: false
ssh_pwauth: false
ssh_deletekeys: true
ssh_genkeytypes: [ed25519]
users: []
cloud_init_modules:
  - bootcmd
  - write_files
  - growpart
  - resizefs
  - set_hostname
  - update_hostname
  - update_etc_hosts
  - ca_certs
  - users_groups
  - ssh
cloud_config_modules: []
cloud_final_modules:
  - scripts_per_boot
  - scripts_per_instance
  - final_message
system_info:
  distro: debian
  paths:
    cloud_dir: /var/lib/cloud/
    templates_dir: /etc/cloud/templates/
  ssh_svcname: ssh
manage_etc_hosts: localhost
EOF
rm -f "$R"/etc/cloud/cloud.cfg.d/*
# Root's password is locked: no `su` to root, whatever sudo allows.
chroot "$R" passwd -l root >/dev/null
chroot "$R" systemctl enable -q systemd-networkd.service
# Nothing that costs boot time under TCG and that a lane does not need.
chroot "$R" systemctl mask -q systemd-networkd-wait-online.service \
    apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
    e2scrub_reap.service fstrim.timer man-db.timer getty@tty1.service \
    serial-getty@ttyS0.service systemd-pstore.service cloud-config.service \
    cloud-init-local.service 2>/dev/null || true
# cloud-init's local stage only finds the data source here: Lima's NoCloud
# seed says dsmode net and the network is networkd's, so cloud-init.service
# finds the same seed in its own search and does all the work. The local
# stage cost a Python start, a third of the guest's boot under TCG (24 s
# of 67). Without it cloud-init.service still waits for the root file
# system and for udev to have seen the cidata drive, and it must drop the
# instance cache first, as the local stage did: the network stage trusts
# a cache it finds, so a clone (limactl clone) would boot as its source,
# with the source's hostname and host keys. With the cache gone it looks
# for the seed and compares instance ids, and a clone is a new instance.
mkdir -p "$R/etc/systemd/system/cloud-init.service.d"
printf '%s\n' '[Unit]' \
    'After=systemd-remount-fs.service systemd-udev-trigger.service' '' \
    '[Service]' \
    'ExecStartPre=/bin/rm -f /var/lib/cloud/instance/boot-finished /var/lib/cloud/instance' \
    > "$R/etc/systemd/system/cloud-init.service.d/agent-lane.conf"
rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin \
    "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/cloud

# --- kernel, initrd, disk, template ---------------------------------------
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
cat > "$W/template.yaml" <<EOF
# Base template of the real-Lima test tier (tests/lima): a Debian $SUITE
# guest built from Debian packages by tests/lima/build-image.sh. Lanes
# name it through agent-laned's lima_template (AGENT_LANE_LIMA_TEMPLATE).
vmType: qemu
arch: x86_64
images:
- location: $OUT/disk.qcow2
  arch: x86_64
  kernel:
    location: $OUT/vmlinuz
    cmdline: $CMDLINE
  initrd:
    location: $OUT/initrd.img
firmware:
  legacyBIOS: true
EOF
end=$(date +%s)
printf 'built %s in %ss from %s\npackages: %s\n' "$(date -u +%FT%TZ)" \
    $((end - start)) "$MIRROR" "$PACKAGES" > "$W/BUILD-INFO"
chmod -R a+rX "$W"
mv -T "$W" "$OUT"
trap - EXIT
echo "build-image: built $OUT in $((end - start)) s" >&2
echo "$OUT"
