#!/bin/sh
# Provision script: git, Node 22, Claude Code. Docker comes from
# lima({ docker: true }), which adds the rootless Docker Engine step to the
# same image (Debian packages; the lane user's own daemon).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends git ca-certificates curl xz-utils
NODE_VERSION=22.12.0
case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) exit 1 ;; esac
curl -fsSL "https://nodejs.org/dist/v$NODE_VERSION/node-v$NODE_VERSION-linux-$arch.tar.xz" |
  tar -xJ -C /usr/local --strip-components=1
npm install -g @anthropic-ai/claude-code
