#!/usr/bin/env bash
# Start-up reconcile judges only the lanes its limactl list could have seen
# (issue 18): a create sent the instant the daemon starts, as the first
# client of a socket-activated daemon sends it, gets a lane that the
# reconcile running meanwhile leaves alone, while a lane of the registry
# whose VM went missing is still destroyed; so does a warm-pool lane that
# booted meanwhile (seen on real VMs: "pooled -> destroying (VM missing at
# reconcile)" 50 ms after it registered). To make the race certain, the
# daemon's limactl is a wrapper whose `list` takes its picture at once and
# prints it only once the test says so (after the new lane is ready).
. "$(dirname "$0")/lib.sh"

state_is() { [ "$(lane_state "$1")" = "$2" ]; }
reconciled() { grep -q 'reconcile: done' "$LOG"; }

cat > "$T/limactl" <<EOF
#!/bin/sh
for a; do
	[ "\$a" = list ] || continue
	out=\$("$SIM" "\$@"); rc=\$?
	i=0
	while [ ! -e "$T/go" ] && [ \$i -lt 600 ]; do sleep 0.05; i=\$((i + 1)); done
	[ -n "\$out" ] && printf '%s\n' "\$out"
	exit \$rc
done
exec "$SIM" "\$@"
EOF
chmod 755 "$T/limactl"

# A lane of the registry whose VM goes missing while the daemon is down.
touch "$T/go"
start_daemon || exit 1
K=$(ctl create --timeout 10m)
check_eq "a lane from before the restart is ready" ready "$(lane_state "$K")"
stop_daemon
sim delete --force "$K" >/dev/null 2>&1
rm -f "$T/go"
: > "$LOG"

# Socket activation: the socket listens before the daemon runs, and the
# first client's create is what it finds on it.
start_activated_daemon --state-dir "$STATE" --limactl "$T/limactl" \
    --tick 1s --pool-size 1
wait_for 10 test -S "$SOCK"
L=$(ctl create --timeout 10m)
check_eq "a create sent as the daemon starts makes a ready lane" ready "$(lane_state "$L")"
check "the start-up reconcile is still listing" sh -c "! grep -q 'reconcile: done' '$LOG'"
pool_booted() { [ "$(sqlite3 "$STATE/registry.db" "SELECT count(*) FROM lanes WHERE pooled = 1 AND state = 'ready'")" -ge 1 ]; }
check "a pool lane has booted while it lists" wait_for 20 pool_booted
touch "$T/go"
check "then the reconcile ends" wait_for 20 reconciled
check_eq "the new lane survives it" ready "$(lane_state "$L")"
check_nomatch "it was not judged by a list older than its VM" 'VM missing at reconcile' "$(ctl events "$L")"
check "its VM still runs" test -e "$(instance_dir "$L")/ha.pid"
check "the lane whose VM went missing is destroyed" wait_for 10 state_is "$K" destroyed
check_match "by the reconcile" 'VM missing at reconcile' "$(ctl events "$K")"
check_eq "and no other lane is" "$K" "$(grep 'VM missing at reconcile' "$LOG" | grep -o 'al-[0-9a-f]*' | sort -u | tr '\n' ' ' | sed 's/ $//')"
ctl rm "$L" >/dev/null
stop_daemon
finish
