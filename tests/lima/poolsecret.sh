#!/usr/bin/env bash
# A lane with a secret from the warm pool, on real Lima (make check-lima):
# the pool lane boots with its proxy and its own lane CA in the guest's
# trust store (checked by the daemon before the lane joins the pool); a
# create with a secret takes it, and the lane user's stock curl makes an
# HTTPS call through the proxy, trusting the system bundle, to a loopback
# test upstream, which sees the real value while the guest holds only the
# placeholder. Prints the time from the pooled create to the first output
# of an exec that reads the secret's variable.
#
# The test build of the daemon (build/tests/agent-laned-test) resolves
# api.test to the loopback upstream and trusts that upstream's test CA
# (tests/proxy/testhooks.h); agent-laned itself has no such switch.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "a lane with a secret from the warm pool on real Lima" "$0" "$@"
. "$HERE/../regress/lib.sh"
TESTD=$(dirname "$LANED")/tests/agent-laned-test
[ "$REAL_LIMA" = 1 ] || { echo "not ok 1 - not on real Lima (run it through tests/lima/run.sh)"; exit 1; }
[ -x "$TESTD" ] || { echo "not ok 1 - $TESTD is not built (make tests)"; exit 1; }

booted_pool() {
	ctl ls --all --json | python3 -c '
import json, sys
for l in json.load(sys.stdin):
    if l["state"] == "pooled" and l["workspace"]:
        print(l["name"])'
}
have_booted() { [ -n "$(booted_pool)" ]; }
now_ms() { date +%s%3N; }

UP=$T/up
mkdir -p "$UP"
python3 "$HERE/../regress/secret_upstream.py" "$UP" >"$T/up.ports" 2>"$T/up.err" &
UPID=$!
stop_upstream() { kill "$UPID" 2>/dev/null; wait "$UPID" 2>/dev/null; }
FINISH_HOOK=stop_upstream
wait_for 20 test -s "$T/up.ports" || { echo "not ok 1 - the test upstream did not start: $(cat "$T/up.err")"; exit 1; }
read -r HTTPS_PORT _ <"$T/up.ports"

# The default policy (internet), as a Sandcastle run of an agent has it.
LANED=$TESTD AGENT_LANED_TEST_RESOLVE="api.test=127.0.0.1" \
    AGENT_LANED_TEST_TRUST="$UP/ca.pem" start_daemon --pool-size 1 \
    --proxy-connect-ports "$HTTPS_PORT" || exit 1
check "a pool lane boots" wait_for "$(bw 30 1)" have_booted
P=$(booted_pool)
check_match "its policy was checked in the guest, lane CA in the bundle included" \
    "network +internet enforced" "$(ctl events "$P")"

KEY="sk-ant-api03-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
T0=$(now_ms)
L=$(ANTHROPIC_API_KEY=$KEY ctl create -q --name poolsec --secret ANTHROPIC_API_KEY@api.test)
T1=$(now_ms)
PH=$(ctl exec poolsec -- printenv ANTHROPIC_API_KEY)
T2=$(now_ms)
check_eq "a create with a secret takes the pool lane" "$P" "$L"
check_match "the guest holds a placeholder" '^AGENTLANE_SECRET_[0-9a-f]{48}$' "$PH"
echo "# pooled create with a secret: $((T1 - T0)) ms; create -> first output: $((T2 - T0)) ms"

OUT=$(ctl exec "$L" -- sh -c 'curl -sS --max-time 60 -H "x-api-key: $ANTHROPIC_API_KEY" "https://api.test:$1/v1/messages" 2>&1' sh "$HTTPS_PORT")
check_match "the lane user's curl reaches the upstream through the proxy over HTTPS" \
    "hello from the test upstream" "$OUT"
check_eq "the upstream saw the real value" "api.test:$HTTPS_PORT $KEY" "$(tail -n 1 "$UP/seen" 2>/dev/null)"
check_nomatch "the guest never did" "$KEY" "$OUT$(ctl exec "$L" -- env)"
check_match "the use is in the lane's events" "secret-use +secret ANTHROPIC_API_KEY used for api.test" "$(ctl events "$L")"
ctl rm "$L" >/dev/null
check_eq "the daemon's log holds no value" "" "$(grep -aF -e "$KEY" "$LOG")"
finish
