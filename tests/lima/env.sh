#!/bin/sh
# Prints the shell assignments that run agent-laned on real Lima the way
# the real-Lima tier does (`make -s lima-env` runs this):
#
#   LIMACTL=...                   Lima's own limactl (tests/lima/install.sh)
#   AGENT_LANE_LIMACTL=...        the same, for agent-laned
#   AGENT_LANE_LIMA_TEMPLATE=...  the test guest's base template
#                                 (tests/lima/build-image.sh; built if needed)
#   QEMU_SYSTEM_X86_64=...        tests/lima/qemu-tcg, only where KVM is
#                                 unusable for the user who runs limactl
#
#   eval "$(tests/lima/env.sh)"   then: agent-laned --socket ... &
#
# Exits 1 with the reason on stderr when Lima or the image cannot be had.
# AL_LIMA_USER names the user that will run limactl (default: the caller;
# limactl refuses root, so as root the tier uses its own user, allima).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)

P=$("$HERE/install.sh") || exit 1
IMG=$("$HERE/build-image.sh") || exit 1

# kvm_usable USER: /dev/kvm is a real KVM (not PVM-backed, which hangs a
# stock guest kernel) on a CPU with hardware virtualisation, and USER may
# open it.
kvm_usable() {
	[ -c /dev/kvm ] || return 1
	[ ! -d /sys/module/kvm_pvm ] || return 1
	grep -Eq '^flags.*\b(vmx|svm)\b' /proc/cpuinfo || return 1
	if [ "$(id -un)" = "$1" ]; then
		[ -r /dev/kvm ] && [ -w /dev/kvm ]
	else
		runuser -u "$1" -- sh -c '[ -r /dev/kvm ] && [ -w /dev/kvm ]' 2>/dev/null
	fi
}

user=${AL_LIMA_USER:-$(id -un)}
q() {
	printf "%s='%s'\n" "$1" "$(printf '%s' "$2" | sed "s/'/'\\\\''/g")"
}
q LIMACTL "$P/bin/limactl"
q AGENT_LANE_LIMACTL "$P/bin/limactl"
q AGENT_LANE_LIMA_TEMPLATE "$IMG/template.yaml"
if kvm_usable "$user"; then
	echo "export LIMACTL AGENT_LANE_LIMACTL AGENT_LANE_LIMA_TEMPLATE"
	echo "unset QEMU_SYSTEM_X86_64"
else
	q QEMU_SYSTEM_X86_64 "$HERE/qemu-tcg"
	echo "export LIMACTL AGENT_LANE_LIMACTL AGENT_LANE_LIMA_TEMPLATE QEMU_SYSTEM_X86_64"
fi
