#!/bin/sh
# Installs what Agent Lane needs to build and test, on Debian/Ubuntu (apt)
# or macOS (Homebrew). `make setup` runs it; so does CI (.ci/run).
set -eu

if command -v apt-get >/dev/null 2>&1; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -q
	# Build: compiler, pkg-config, the four libraries, protoc-c.
	# Tests: cmocka; clang with its sanitizer and libFuzzer runtimes; the
	# limactl simulator's bubblewrap, util-linux (nsenter, setpriv) and
	# python3; perl, tar and git inside simulated guests; sqlite3 and
	# procps for assertions; mandoc (man page lint), ruby (the Homebrew
	# formula's syntax), zsh and fish (completion scripts); nftables and
	# iproute2 to load each lane network policy in a network namespace.
	$SUDO apt-get install -y -q --no-install-recommends \
	    build-essential pkg-config ca-certificates \
	    libevent-dev libprotobuf-c-dev protobuf-c-compiler \
	    libsqlite3-dev sqlite3 libarchive-dev \
	    libcmocka-dev clang llvm libclang-rt-dev \
	    bubblewrap util-linux procps python3 python3-yaml perl tar git \
	    passwd mandoc ruby zsh fish nftables iproute2
	# Remote hosts (tests/regress/remote.sh, tests/remote/fixture): a real
	# OpenSSH server on 127.0.0.1 and the client, as a user would have them.
	$SUDO apt-get install -y -q --no-install-recommends \
	    openssh-server openssh-client
	# The real-VM tier (tests/lima-vm): QEMU, the guest image build
	# (debootstrap, mke2fs), the cidata ISO, and ssh/scp as Lima uses them.
	$SUDO apt-get install -y -q --no-install-recommends \
	    qemu-system-x86 qemu-utils debootstrap e2fsprogs genisoimage \
	    openssh-client
	if ! command -v node >/dev/null 2>&1; then
		$SUDO apt-get install -y -q --no-install-recommends nodejs npm
	fi
elif command -v brew >/dev/null 2>&1; then
	# libarchive and sqlite are keg-only; the Makefile finds them.
	brew install libevent protobuf-c sqlite libarchive pkg-config cmocka \
	    llvm node lima
else
	echo "install-deps: no apt-get or brew; install libevent, protobuf-c" \
	    "(with protoc-c), sqlite3, libarchive, cmocka and pkg-config" >&2
	exit 1
fi

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
	echo "install-deps: Node.js 20 or later is needed for the Sandcastle" \
	    "provider (found $(node --version 2>/dev/null || echo none))" >&2
	exit 1
fi
