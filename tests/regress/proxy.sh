#!/usr/bin/env bash
# The lane egress proxy (daemon/proxy.c) on loopback, through its harness:
# allow, deny, wildcards, rebinding, ports, bounds. See proxy.py.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LANED=${AGENT_LANED:-$REPO/build/agent-laned}
HARNESS=$(dirname "$LANED")/tests/al-proxy-harness
exec python3 "$REPO/tests/regress/proxy.py" "$HARNESS"
