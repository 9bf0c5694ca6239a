#!/usr/bin/env bash
# The lane proxy's TLS interception and secrets (issue 17), on loopback,
# through its harness: the lane CA's leaves, replacement and refusals,
# SNI/Host/target agreement, upstream verification, HTTP/1.1 framing,
# bounds, opaque tunnels. See proxytls.py. Also: the test-only overrides
# (upstream trust store, resolver) exist in the test daemon only.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LANED=${AGENT_LANED:-$REPO/build/agent-laned}
HARNESS=$(dirname "$LANED")/tests/al-proxy-harness
TESTD=$(dirname "$LANED")/tests/agent-laned-test
if ! command -v openssl >/dev/null 2>&1; then
	echo "not ok 1 - openssl(1) is needed to make the test upstream's CA (tests/install-deps.sh)"
	exit 1
fi
exec python3 "$REPO/tests/regress/proxytls.py" "$HARNESS" "$LANED" "$TESTD"
