# The real-Lima tier's entry, sourced first by each of its suites:
#
#   HERE=$(cd "$(dirname "$0")" && pwd)
#   . "$HERE/tier.sh"
#   lima_tier_enter "suite description" "$0" "$@"
#
# Lima's limactl refuses to run as root, and these machines run everything
# as root, so as root this:
#   - finds Lima 2.2 (tests/lima/install.sh; `make setup` installs it) and
#     the guest image (tests/lima/build-image.sh builds it, as root);
#   - creates the tier's own unprivileged user (AL_LIMA_USER, default
#     allima) if it is missing;
#   - when that user cannot read the checkout (a clone under /root, say),
#     copies what the suites run into a world-readable staging directory;
#   - then runs the suite again as that user, with the environment that
#     `make -s lima-env` prints, LIMA_SIM pointing at tests/lima/limactl
#     (Lima's own, with the simulator's call log) and AL_REAL_LIMA=1 for
#     tests/regress/lib.sh.
# As any other user it runs the suite as that user, which is how the daemon
# runs on a Mac. Where something cannot be had, the suite reports one SKIP
# line with the reason; it never passes without having run.

AL_LIMA_USER=${AL_LIMA_USER:-allima}
# A boot under TCG takes about a minute, three or more with the machine
# loaded; waits and lifetimes that span a boot allow this much.
export AL_BOOT_S=${AL_BOOT_S:-300}

lima_skip_all() {
	echo "ok 1 - ${LIMA_SUITE:-real-Lima suite} # SKIP $*"
	exit 0
}

# lima_stage REPO: a copy of what the suites run (the tree without .git
# and the sanitizer and fuzz builds), readable by everyone; prints its path.
lima_stage() {
	local src=$1 dst
	dst=/var/tmp/agent-lane-lima-stage/$(printf '%s' "$src" | sha256sum | cut -c1-12)
	mkdir -p "$dst" || return 1
	chmod 0755 /var/tmp/agent-lane-lima-stage "$dst"
	tar -C "$src" --exclude=./.git --exclude=./build/asan --exclude=./build/fuzz \
	    --exclude=./build/obj --exclude=./build/clang -cf - . |
	    tar -C "$dst" --no-same-owner -xf - || return 1
	chmod -R a+rX "$dst"
	echo "$dst"
}

# lima_user_can_run REPO: the tier's user reaches the binaries and suites.
lima_user_can_run() {
	runuser -u "$AL_LIMA_USER" -- sh -c '
	    [ -x "$1/build/agent-laned" ] && [ -x "$1/build/agent-lanectl" ] &&
	    [ -r "$1/tests/regress/lib.sh" ] && [ -x "$1/tests/lima/qemu-tcg" ]' \
	    sh "$1" 2>/dev/null
}

# On a Mac (make poc): Homebrew's Lima as it is, its default VM type and
# agent-laned's default base template; the suites run as you.
lima_tier_mac() {
	LIMACTL=$(command -v limactl) ||
	    lima_skip_all "limactl is not installed (brew install lima)"
	export LIMACTL AGENT_LANE_LIMACTL=$LIMACTL
	LIMA_SIM=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/limactl
	export LIMA_SIM
	export AL_LIMA_ENTERED=1 AL_REAL_LIMA=1 AL_LIMA_USER=$(id -un)
	unset AGENT_LANE_LIMA_TEMPLATE QEMU_SYSTEM_X86_64
}

lima_tier_enter() {
	local what=$1 self=$2 repo rel env
	shift 2
	LIMA_SUITE=$what
	[ -n "${AL_LIMA_ENTERED:-}" ] && return 0
	if [ "$(uname -s)" = Darwin ]; then
		lima_tier_mac
		return 0
	fi
	[ "$(uname -s)" = Linux ] ||
	    lima_skip_all "needs Linux with QEMU, or a Mac with Homebrew's Lima (make poc)"
	[ "$(uname -m)" = x86_64 ] || lima_skip_all "the test guest image is x86_64 only"
	# The checkout is where this file is; the suite may live anywhere in
	# it (tests/lima, bench).
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	self=$(cd "$(dirname "$self")" && pwd)/$(basename "$self")
	rel=${self#"$repo"/}
	case $rel in /*) lima_skip_all "$self is outside the checkout $repo" ;; esac
	command -v qemu-system-x86_64 >/dev/null 2>&1 ||
	    lima_skip_all "qemu-system-x86_64 is not installed (tests/install-deps.sh installs it)"
	command -v ssh >/dev/null 2>&1 ||
	    lima_skip_all "ssh is not installed (Lima needs OpenSSH's client)"
	[ -x "$repo/build/agent-laned" ] ||
	    lima_skip_all "build/agent-laned is not built (make tests)"
	if ! "$repo/tests/lima/install.sh" --check >/dev/null 2>&1; then
		local why
		why=$("$repo/tests/lima/install.sh" 2>&1 >/dev/null | tail -n 1)
		"$repo/tests/lima/install.sh" --check >/dev/null 2>&1 ||
		    lima_skip_all "Lima 2.2 cannot be installed here: ${why:-unknown reason}"
	fi
	if [ "$(id -u)" -ne 0 ]; then
		AL_LIMA_USER=$(id -un)
		env=$(AL_LIMA_USER=$AL_LIMA_USER "$repo/tests/lima/env.sh" 2>&1) ||
		    lima_skip_all "$(printf '%s' "$env" | tail -n 1)"
		eval "$env"
		export AL_LIMA_ENTERED=1 AL_REAL_LIMA=1 LIMA_SIM=$repo/tests/lima/limactl
		return 0
	fi
	if ! id "$AL_LIMA_USER" >/dev/null 2>&1; then
		useradd -m -s /bin/bash -c "agent-lane real-Lima tier" "$AL_LIMA_USER" ||
		    lima_skip_all "cannot create the tier's user $AL_LIMA_USER"
	fi
	if ! lima_user_can_run "$repo"; then
		repo=$(lima_stage "$repo") || lima_skip_all "cannot stage the checkout for $AL_LIMA_USER"
	fi
	env=$(AL_LIMA_USER=$AL_LIMA_USER "$repo/tests/lima/env.sh" 2>&1) || {
		echo "$env" | sed 's/^/# /'
		echo "not ok 1 - $what: the guest image cannot be built ($(printf '%s' "$env" | tail -n 1))"
		exit 1
	}
	eval "$env"
	# Exactly the environment the suite needs: the user's own HOME and
	# PATH, no root variables (bench/lima.sh's BENCH_LIMA_* knobs pass, as
	# plain words).
	exec runuser -u "$AL_LIMA_USER" -- env -i \
	    HOME="$(getent passwd "$AL_LIMA_USER" | cut -d: -f6)" \
	    USER="$AL_LIMA_USER" LOGNAME="$AL_LIMA_USER" SHELL=/bin/bash \
	    PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
	    LANG=C.UTF-8 TMPDIR=/tmp \
	    LIMACTL="$LIMACTL" AGENT_LANE_LIMACTL="$AGENT_LANE_LIMACTL" \
	    AGENT_LANE_LIMA_TEMPLATE="$AGENT_LANE_LIMA_TEMPLATE" \
	    ${QEMU_SYSTEM_X86_64:+QEMU_SYSTEM_X86_64="$QEMU_SYSTEM_X86_64"} \
	    LIMA_SIM="$repo/tests/lima/limactl" AL_REAL_LIMA=1 AL_LIMA_ENTERED=1 \
	    AL_BOOT_S="$AL_BOOT_S" AL_LIMA_USER="$AL_LIMA_USER" \
	    $(env | grep -E '^BENCH_LIMA_[A-Z_]+=[A-Za-z0-9_.]*$') \
	    ${AGENT_LANED:+AGENT_LANED="$AGENT_LANED"} \
	    ${AGENT_LANECTL:+AGENT_LANECTL="$AGENT_LANECTL"} \
	    bash "$repo/$rel" "$@"
}
