#!/usr/bin/env bash
# The differential request-smuggling suite (issue 29): a corpus of hostile
# request streams (smuggle_corpus.py) through the lane proxy's harness,
# plain and intercepted, to two independent upstream parsers, Node's http
# (llhttp, smuggle_node.js) and Python's h11 (smuggle_h11.py). The requests
# each upstream saw must be the ones the proxy counted, and the secret's
# value must land only in a credential header, never back at the guest.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LANED=${AGENT_LANED:-$REPO/build/agent-laned}
HARNESS=$(dirname "$LANED")/tests/al-proxy-harness
if ! command -v openssl >/dev/null 2>&1; then
	echo "not ok 1 - openssl(1) is needed to make the test upstream's CA (tests/install-deps.sh)"
	exit 1
fi
if ! command -v node >/dev/null 2>&1; then
	echo "not ok 1 - node is needed for the llhttp upstream (tests/install-deps.sh)"
	exit 1
fi
# Debian's python3-h11 is in the system's python3, which may not be the
# first python3 on PATH (pyenv).
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import h11' 2>/dev/null; then
		PY=$p
		break
	fi
done
if [ -z "$PY" ]; then
	echo "not ok 1 - python3-h11 is needed for the h11 upstream (tests/install-deps.sh)"
	exit 1
fi
exec "$PY" "$REPO/tests/regress/smuggle.py" "$HARNESS"
