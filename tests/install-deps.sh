#!/bin/sh
# Installs what Agent Lane needs to build and test, on Debian/Ubuntu (apt)
# or macOS (Homebrew). `make setup` runs it; so does CI (.ci/run).
set -eu

if command -v apt-get >/dev/null 2>&1; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -q
	# Build: compiler, pkg-config, the six libraries (OpenSSL 3 for the
	# lane proxy's TLS and its CA, and for digests; libpsl and the
	# system's Public Suffix List, publicsuffix, which a secret's wildcard
	# host must not cover), protoc-c; openssl(1)
	# makes the test upstream's own CA in tests/regress/proxytls.py.
	# Tests: cmocka; clang with its sanitizer and libFuzzer runtimes; the
	# limactl simulator's bubblewrap, util-linux (nsenter, setpriv) and
	# python3; perl, tar and git inside simulated guests; sqlite3 and
	# procps for assertions; mandoc (man page lint), ruby (the Homebrew
	# formula's syntax), zsh and fish (completion scripts); nftables and
	# iproute2 to load each lane network policy in a network namespace.
	$SUDO apt-get install -y -q --no-install-recommends \
	    build-essential pkg-config ca-certificates \
	    libevent-dev libprotobuf-c-dev protobuf-c-compiler \
	    libsqlite3-dev sqlite3 libarchive-dev libssl-dev openssl \
	    libpsl-dev publicsuffix \
	    libcmocka-dev clang llvm libclang-rt-dev \
	    bubblewrap util-linux procps python3 python3-yaml perl tar git \
	    passwd mandoc ruby zsh fish nftables iproute2
	# The differential smuggling suite (tests/regress/smuggle.sh): h11,
	# a second HTTP/1.1 parser independent of Node's llhttp, as an upstream.
	$SUDO apt-get install -y -q --no-install-recommends python3-h11
	# Remote hosts (tests/regress/remote.sh, tests/remote/fixture): a real
	# OpenSSH server on 127.0.0.1 and the client, as a user would have them.
	$SUDO apt-get install -y -q --no-install-recommends \
	    openssh-server openssh-client
	# Real Lima (tests/lima): QEMU and qemu-img, which Lima drives, the
	# guest image build (debootstrap, mke2fs), OpenSSH's client, which
	# Lima's shell and copy use, and curl for the network checks.
	$SUDO apt-get install -y -q --no-install-recommends \
	    qemu-system-x86 qemu-utils debootstrap e2fsprogs \
	    openssh-client curl
	if ! command -v node >/dev/null 2>&1; then
		$SUDO apt-get install -y -q --no-install-recommends nodejs npm
	fi
elif command -v brew >/dev/null 2>&1; then
	# libarchive, sqlite and openssl@3 are keg-only; the Makefile finds them.
	brew install libevent protobuf-c sqlite libarchive openssl@3 libpsl pkg-config cmocka \
	    llvm node lima
else
	echo "install-deps: no apt-get or brew; install libevent, protobuf-c" \
	    "(with protoc-c), sqlite3, libarchive, OpenSSL 3, libpsl, cmocka and" \
	    "pkg-config" >&2
	exit 1
fi

# Lima 2.2 itself, built by `go install` from the Go module proxy into a
# cache outside the repository (tests/lima/install.sh). Without Go or the
# proxy the real-Lima suites report themselves skipped, with the reason.
if [ "$(uname -s)" = Linux ]; then
	if ! "$(dirname "$0")/lima/install.sh" >/dev/null; then
		echo "install-deps: Lima could not be installed (above); the" \
		    "real-Lima suites will be skipped" >&2
	fi
fi

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
	echo "install-deps: Node.js 20 or later is needed for the Sandcastle" \
	    "provider (found $(node --version 2>/dev/null || echo none))" >&2
	exit 1
fi
