#!/usr/bin/env bash
# Lanes with secrets from the warm pool: a pool lane of an allow or
# internet policy boots with its proxy (an empty allow list) and its lane
# CA (key in the daemon, certificate in the guest's trust store), and a
# create of its shape takes it whatever its allow list and secrets. The
# take records both in the registry, then hands them to the running proxy
# before the create is answered: by name, alias and prefix the lane gives
# the secret's placeholder, the secret works through the proxy against a
# loopback upstream, the taker's allow list holds and no other lane's
# does. A restart destroys pool lanes whose CA key died with the daemon,
# never hands them out, and says so in their events.
#
# The simulator's guests have no network: a host client plays the guest
# (as in tests/regress/lane-secrets.sh), trusting only the lane CA taken
# from the lane's YAML. Real guests: tests/lima/poolsecret.sh.
. "$(dirname "$0")/lib.sh"

export LIMA_SIM_BOOT_MS=300

json() { ctl show --json "$1" 2>/dev/null | python3 -c "import json,sys; l=json.load(sys.stdin); print($2)"; }
val() { echo "sk-$1-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
PH='^AGENTLANE_SECRET_[0-9a-f]{48}$'
booted_pool() {
	ctl ls --all --json | python3 -c '
import json, sys
for l in json.load(sys.stdin):
    if l["state"] == "pooled" and l["workspace"]:
        print(l["name"])'
}
have_booted() { [ -n "$(booted_pool)" ]; }
laneca() {	# laneca LANE FILE: the CA the guest's trust store gets
	sed -n '/BEGIN CERTIFICATE/,/END CERTIFICATE/p' "$(instance_dir "$1")/lima.yaml" |
	    sed 's/^    //' >"$2"
}
via() { local p=$1; shift; curl -sS --max-time 20 --proxy "http://127.0.0.1:$p" "$@"; }
code_via() { via "$1" -o /dev/null -w '%{http_code}' "$2" 2>/dev/null; }

TESTD=$(dirname "$LANED")/tests/agent-laned-test
UP=$T/up
mkdir -p "$UP"
python3 "$(dirname "$0")/secret_upstream.py" "$UP" >"$T/up.ports" 2>"$T/up.err" &
UPID=$!
stop_upstream() { kill "$UPID" 2>/dev/null; wait "$UPID" 2>/dev/null; }
FINISH_HOOK=stop_upstream
wait_for 20 test -s "$T/up.ports"
read -r HTTPS_PORT HTTP_PORT <"$T/up.ports"
export AGENT_LANED_TEST_RESOLVE="api.test=127.0.0.1,other.test=127.0.0.1,third.test=127.0.0.1"
export AGENT_LANED_TEST_TRUST=$UP/ca.pem
DARGS=(--network allow --pool-size 1 --pool-max-boots 1
    --proxy-connect-ports "$HTTPS_PORT" --proxy-http-ports "$HTTP_PORT")
LANED=$TESTD start_daemon "${DARGS[@]}" || exit 1

# ---- What a pool lane holds before it is taken ----
wait_for "$(bw 20 1)" have_booted
P1=$(booted_pool)
check "a pool lane is booted" test -n "$P1"
P1PORT=$(json "$P1" 'l["proxy_port"]')
check "its proxy runs" test "$P1PORT" -gt 0
laneca "$P1" "$T/ca1.pem"
check "its YAML holds its lane CA (the guest's trust store)" grep -q "BEGIN CERTIFICATE" "$T/ca1.pem"
check_nomatch "and no key" "PRIVATE KEY" "$(cat "$(instance_dir "$P1")/lima.yaml")"
check_eq "its proxy allows nothing yet" 403 "$(code_via "$P1PORT" "http://other.test:$HTTP_PORT/")"
check_eq "its row holds no allow list" "" "$(sqlite3 "$STATE/registry.db" "SELECT allow FROM lanes WHERE name = '$P1'")"
check_eq "nor secrets" "" "$(sqlite3 "$STATE/registry.db" "SELECT secrets FROM lanes WHERE name = '$P1'")"

# ---- A create with secrets and its own allow list takes it ----
K1=$(val one)
A=$(ANTHROPIC_API_KEY=$K1 ctl create --name sec1 --allow other.test \
    --secret ANTHROPIC_API_KEY@api.test); RC=$?
check_eq "create --secret --allow succeeds" 0 "$RC"
check_eq "and takes the pool lane" "$P1" "$A"
EV=$(ctl events "$A")
check_match "the audit trail says so" "taken-from-pool +.*alias=sec1" "$EV"
check_match "and names the secret" "secret +ANTHROPIC_API_KEY for api.test" "$EV"
check_eq "the row has the taker's allow list" other.test \
    "$(sqlite3 "$STATE/registry.db" "SELECT allow FROM lanes WHERE name = '$A'")"
check_eq "and its secrets" "['ANTHROPIC_API_KEY']" "$(json "$A" '[s["name"] for s in l["secrets"]]')"
PHA=$(ctl exec "$A" -- printenv ANTHROPIC_API_KEY)
check_match "by name an exec gets the placeholder" "$PH" "$PHA"
check_eq "by alias the same" "$PHA" "$(ctl exec sec1 -- printenv ANTHROPIC_API_KEY)"
check_eq "by prefix the same" "$PHA" "$(ctl exec "${A:3:8}" -- printenv ANTHROPIC_API_KEY)"
check_match "execs go through the proxy" "^HTTPS_PROXY=http://192.168.5.2:$P1PORT\$" "$(ctl exec sec1 -- env)"
check_nomatch "and never see the value" "$K1" "$(ctl exec sec1 -- env)"
OUT=$(via "$P1PORT" --cacert "$T/ca1.pem" -H "x-api-key: $PHA" \
    "https://api.test:$HTTPS_PORT/v1/messages" 2>&1)
check_match "through the proxy, trusting only the CA the lane booted with, the secret's host answers" \
    "hello from the test upstream" "$OUT"
check_eq "and saw the real value" "api.test:$HTTPS_PORT $K1" "$(tail -n 1 "$UP/seen" 2>/dev/null)"
check_nomatch "the client never saw it" "$K1" "$OUT"
check_eq "the taker's allow list holds" 200 "$(code_via "$P1PORT" "http://other.test:$HTTP_PORT/")"
check_eq "and nothing else passes" 403 "$(code_via "$P1PORT" "http://third.test:$HTTP_PORT/")"

# ---- The next taker gets its own list, not the last one's ----
wait_for "$(bw 20 1)" have_booted
P2=$(booted_pool)
check "the pool refilled" test -n "$P2"
K2=$(val two)
B=$(ANTHROPIC_API_KEY=$K2 ctl create --allow third.test --secret ANTHROPIC_API_KEY@api.test)
check_eq "a second secrets create takes the new pool lane" "$P2" "$B"
P2PORT=$(json "$B" 'l["proxy_port"]')
laneca "$B" "$T/ca2.pem"
check "with a CA of its own" sh -c "! cmp -s '$T/ca1.pem' '$T/ca2.pem'"
check_eq "its taker's list holds" 200 "$(code_via "$P2PORT" "http://third.test:$HTTP_PORT/")"
check_eq "the first taker's does not" 403 "$(code_via "$P2PORT" "http://other.test:$HTTP_PORT/")"
PHB=$(ctl exec "$B" -- printenv ANTHROPIC_API_KEY)
check "its placeholder is its own" test "$PHB" != "$PHA"
via "$P2PORT" --cacert "$T/ca2.pem" -H "x-api-key: $PHB" "https://api.test:$HTTPS_PORT/" >/dev/null 2>&1
check_eq "its secret is its own" "api.test:$HTTPS_PORT $K2" "$(tail -n 1 "$UP/seen" 2>/dev/null)"
OUT=$(via "$P2PORT" --cacert "$T/ca1.pem" "https://api.test:$HTTPS_PORT/" 2>&1)
check_nomatch "the first lane's CA is not its CA" "hello from the test upstream" "$OUT"
check_eq "no file holds either value" "" "$(grep -rlaF -e "$K1" -e "$K2" "$STATE" 2>/dev/null)"
ctl rm "$A" "$B" >/dev/null

# ---- A pool lane whose CA key died with the daemon ----
wait_for "$(bw 20 1)" have_booted
P3=$(booted_pool)
check "the pool refilled again" test -n "$P3"
stop_daemon
LANED=$TESTD start_daemon "${DARGS[@]}" || exit 1
C=$(ANTHROPIC_API_KEY=$K1 ctl create --secret ANTHROPIC_API_KEY@api.test --timeout 10m)
check "after a restart a secrets create does not get it" test -n "$C" -a "$C" != "$P3"
# It may take a pool lane the new daemon boots (while it boots): that
# lane's CA key is this daemon's, and the secret works through it.
CPORT=$(json "$C" 'l["proxy_port"]')
laneca "$C" "$T/ca3.pem"
PHC=$(ctl exec "$C" -- printenv ANTHROPIC_API_KEY)
via "$CPORT" --cacert "$T/ca3.pem" -H "x-api-key: $PHC" "https://api.test:$HTTPS_PORT/" >/dev/null 2>&1
check_eq "the lane it gets has a working secret" "api.test:$HTTPS_PORT $K1" "$(tail -n 1 "$UP/seen" 2>/dev/null)"
gone() { [ "$(lane_state "$P3")" = destroyed ]; }
check "it is destroyed" wait_for 20 gone
check_match "its events say why" "its lane CA key died with the daemon" "$(ctl events "$P3")"
ctl rm "$C" >/dev/null
stop_daemon
finish
