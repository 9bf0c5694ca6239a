#!/usr/bin/env bash
# The guest rule set of each network mode (daemon/netpolicy.c, as pinned by
# tests/unit/golden/netpolicy-*.yaml), loaded by the real nft into a real
# kernel: a user+network namespace plays the guest, its parent the Lima
# user-mode network (192.168.5.2 = host loopback, .3 = DNS, public and
# private addresses). Reachable means the connection was refused or made;
# blocked means it timed out or sendto failed with EPERM. A control run
# without rules shows every target reachable, so the matrix can fail.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
for t in nft ip unshare nsenter python3; do
	command -v "$t" >/dev/null 2>&1 || { echo "not ok 1 - $t is missing (tests/install-deps.sh)"; exit 1; }
done
exec unshare -rn python3 "$REPO/tests/regress/netpolicy.py" "$REPO"
