#!/usr/bin/env bash
# The docs say what the code does (issue 31, defect 7): the guest does not
# reach the host's loopback (the policy drops 192.168.5.2: netpolicy.sh
# here, tests/lima/netpolicy.sh on real Lima); lanes owned by a connection
# (run, the provider) end with it (run.sh, the provider's tests); and the
# tests run on real Lima as well as the simulator (tests/lima). Each stale
# sentence is named so that it cannot come back, and each page says the
# true one.
. "$(dirname "$0")/lib.sh"

# Text as a reader sees it: man pages rendered, words on one line.
text() {
	case $1 in
	*.8) mandoc -T ascii "$1" | col -b ;;
	*) cat "$1" ;;
	esac | tr -s ' \t\n' ' '
}
STALE='(guest|lane)s? (can )?reach(es)? (services listening on )?the host.s loopback|reaches services listening on the host|lanes outlive the Node process|Lanes belong to the daemon, not to the client|tests here run against a limactl simulator$|Lima cannot boot VMs on the Linux|demonstrates that lanes can reach it'
for f in docs/POC.md docs/agent-laned.8 docs/architecture.md docs/migration.md; do
	check_nomatch "$f makes none of the stale claims" "$STALE" "$(text "$REPO/$f")"
done
check_match "POC E7 expects the host's loopback unreachable" \
    'never prints `host-loopback-marker`' "$(text "$REPO/docs/POC.md")"
check_match "agent-laned(8) says the policy drops 192.168.5.2" \
    'drops the guest.s traffic to 192\.168\.5\.2' "$(text "$REPO/docs/agent-laned.8")"
check_match "agent-laned(8) says owned lanes end with their connection" \
    'lane owned by the connection that created it' "$(text "$REPO/docs/agent-laned.8")"
check_match "architecture.md says owned lanes end with their connection" \
    'destroys it when that connection closes' "$(text "$REPO/docs/architecture.md")"
check_match "migration.md says the provider's lanes end with its process" \
    'the provider.s lanes are owned by its connection' "$(text "$REPO/docs/migration.md")"
check_match "migration.md says the tests run on real Lima too" \
    'Lima 2\.2.s own `limactl` on QEMU guests' "$(text "$REPO/docs/migration.md")"
