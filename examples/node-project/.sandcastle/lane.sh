#!/bin/sh
# Provision script for the lane image: runs once, as root, in the guest
# (Debian/Ubuntu). Keep it idempotent; its bytes are the image's identity.
set -eu
export DEBIAN_FRONTEND=noninteractive

apt-get update
apt-get install -y --no-install-recommends git ca-certificates curl xz-utils

# Node 22 from the official tarball (the distribution's nodejs is older).
NODE_VERSION=22.12.0
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
curl -fsSL "https://nodejs.org/dist/v$NODE_VERSION/node-v$NODE_VERSION-linux-$arch.tar.xz" |
  tar -xJ -C /usr/local --strip-components=1
node --version

# The agent's CLI.
npm install -g @anthropic-ai/claude-code
claude --version
