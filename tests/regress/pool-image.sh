#!/usr/bin/env bash
# Warm-pool shapes include the image: a pool_shape with image=NAME keeps
# clones of that image booted; only a create --image NAME of the same shape
# takes one (a plain create boots cold, and an image create never gets a
# lane of the base template); the lane's image survives a daemon restart,
# and a pool without that shape any more destroys it.
. "$(dirname "$0")/lib.sh"

export LIMA_SIM_BOOT_MS=300

pooled() {
	ctl ls --all --json | python3 -c '
import json, sys
for l in json.load(sys.stdin):
    if l["state"] == "pooled" and l["workspace"]:
        print(l["name"])'
}
npooled() { pooled | grep -c .; }
# Lanes of mode none throughout: only a pool lane without a lane CA is
# kept over a restart (tests/regress/pool-secrets.sh).
one_pooled() { [ "$(npooled)" = 1 ]; }

start_daemon --network none || exit 1
cat > "$T/tools.sh" <<'EOF'
#!/bin/sh
echo y-from-image > /etc/y
EOF
check_eq "an image is built" tools \
    "$(ctl image build tools --provision "$T/tools.sh" 2>/dev/null)"
stop_daemon

start_daemon --network none --pool-shape "1 image=tools" --pool-max-boots 1 || exit 1
check "the pool boots a lane of the image shape" wait_for 30 one_pooled
P=$(pooled)
check_match "a clone of the image" 'image +tools' "$(ctl events "$P")"

L=$(ctl create --timeout 10m)
check_nomatch "a plain create does not take it" "^$P\$" "$L"
check_nomatch "and boots cold" 'taken-from-pool' "$(ctl events "$L")"
check_eq "the image lane is still pooled" "$P" "$(pooled)"
ctl rm "$L" >/dev/null

I=$(ctl create --image tools --timeout 10m)
check_eq "create --image of the shape takes it" "$P" "$I"
check_match "the audit trail says so" 'taken-from-pool' "$(ctl events "$I")"
check_eq "it has the image's files" y-from-image "$(ctl exec "$I" -- cat /etc/y)"
ctl rm "$I" >/dev/null
check "the pool refills with the image" wait_for 30 one_pooled
P2=$(pooled)

# Across a restart the lane keeps its image (the row does not hold it):
# looked at once the new daemon has reconciled its lanes with limactl.
stop_daemon
NREC=$(grep -c 'reconcile: done' "$LOG")
reconciled() { [ "$(grep -c 'reconcile: done' "$LOG")" -gt "$NREC" ]; }
start_daemon --network none --pool-shape "1 image=tools" --pool-max-boots 1 || exit 1
wait_for 20 reconciled
check_eq "a restart keeps the image pool lane" "$P2" "$(pooled)"
L=$(ctl create --timeout 10m)
check_nomatch "still not for a plain create" "^$P2\$" "$L"
ctl rm "$L" >/dev/null
I=$(ctl create --image tools --timeout 10m)
check_eq "still for create --image" "$P2" "$I"
ctl rm "$I" >/dev/null
check "the pool refills" wait_for 30 one_pooled
P3=$(pooled)

# The same sizes without the image: not the same shape.
stop_daemon
start_daemon --network none --pool-size 1 --pool-max-boots 1 || exit 1
gone() { [ "$(lane_state "$P3")" = destroyed ]; }
check "a pool without the image shape destroys the image lane" wait_for 30 gone
check "and boots a lane of the base template" wait_for 30 one_pooled
B=$(pooled)
I=$(ctl create --image tools --timeout 10m)
check_nomatch "which create --image never takes" "^$B\$" "$I"
check_eq "the image lane is a clone all the same" y-from-image \
    "$(ctl exec "$I" -- cat /etc/y)"
ctl rm "$I" >/dev/null
