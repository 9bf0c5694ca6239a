#!/usr/bin/env bash
# The guest rule set of each network mode (daemon/netpolicy.c, printed by
# build/tests/al-netpolicy-print), loaded by the real nft into a real
# kernel: a user+network namespace plays the guest, its parent the Lima
# user-mode network (192.168.5.2 = host loopback, .3 = DNS, public and
# private addresses). Reachable means the connection was refused or made;
# blocked means it timed out or sendto failed with EPERM. A control run
# without rules shows every target reachable, so the matrix can fail. The
# daemon's pre-ready check script runs in the same guest namespace.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LANED=${AGENT_LANED:-$REPO/build/agent-laned}
PRINT=$(dirname "$LANED")/tests/al-netpolicy-print
for t in nft ip unshare nsenter mount perl python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "not ok 1 - $t is missing (tests/install-deps.sh)"; exit 1; }
done
# Its own user, network and mount namespaces: the rules, the addresses and
# the /run the check reads are the test's, never the host's.
exec unshare -rnm python3 "$REPO/tests/regress/netpolicy.py" "$REPO" "$PRINT"
