#!/usr/bin/env bash
# Lane network policies through the daemon, on the simulator: the policy
# keys in each lane's YAML, create validation, the Lima version gate, how
# show and ls --json report a policy, the per-lane proxy of allow lanes
# (its port persisted and bound again across restarts, its records in the
# lane's events, freed with the lane), the exec environment, and the warm
# pool keeping lanes of another policy apart.
#
# The simulator's guests have no network (only lo), so nothing can be
# enforced or checked in them: the daemon learns that from `limactl info`
# and says "unenforced". The allow-lane proxy is therefore driven here from
# the host side (127.0.0.1:PORT); tests/lima/netpolicy.sh drives it from
# a real guest. The test build of the daemon (build/tests/agent-laned-test)
# maps test names to a loopback server (AGENT_LANED_TEST_RESOLVE).
. "$(dirname "$0")/lib.sh"
TESTD=$(dirname "$LANED")/tests/agent-laned-test

json() {	# json LANE EXPR: a field of show --json, printed by python
	ctl show --json "$1" 2>/dev/null | python3 -c "import json,sys; l=json.load(sys.stdin); print($2)"
}
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
has_pooled() { ctl ls --all --json | grep -q '"state":"pooled"'; }
booted() { ctl show --json "$1" | grep -q '"workspace":"/'; }

# ---- A default lane ----
start_daemon || exit 1
L=$(ctl create)
check_eq "default lane is ready" ready "$(lane_state "$L")"
check_eq "its network is the default, internet" internet "$(json "$L" 'l["network"]')"
check_eq "no sudo, no allow list, no proxy" "False [] 0" \
    "$(json "$L" 'l["sudo"], l["allow"], l["proxy_port"]' | tr -d '(),')"
check_eq "the simulator cannot enforce: the lane says unenforced" unenforced \
    "$(json "$L" 'l["network_policy"]')"
check_match "and why" "simulator" "$(json "$L" 'l["network_note"]')"
Y=$(instance_dir "$L")/lima.yaml
check "its YAML drops guest root" grep -qx '  passwordlessSudo: false' "$Y"
check "its YAML asks for Lima 2.2" grep -qx 'minimumLimaVersion: 2.2.0' "$Y"
check "its YAML loads the internet rule set at boot" \
    grep -q '# agent-lane network policy: internet. Runs as root at every boot.' "$Y"
check_match "the events say how the policy holds" "network +internet unenforced" \
    "$(ctl events "$L")"
check_match "show prints the policy" "policy: +unenforced" "$(ctl show "$L")"
check_match "ls --json has the fields" '"network":"internet","allow":\[\],"sudo":false,"network_policy":"unenforced"' \
    "$(ctl ls --json)"
ENV=$(ctl exec "$L" -- env)
check_nomatch "a non-allow lane's execs get no proxy variables" "PROXY" "$ENV"
ctl rm "$L" >/dev/null

# ---- none and --sudo ----
N=$(ctl create --network none)
check_eq "--network none" none "$(json "$N" 'l["network"]')"
check "its YAML loads the none rule set" \
    grep -q 'policy drop;' "$(instance_dir "$N")/lima.yaml"
S=$(ctl create --sudo)
check_eq "--sudo is reported" True "$(json "$S" 'l["sudo"]')"
check "a --sudo lane keeps guest root (no passwordlessSudo key)" \
    test "$(grep -c passwordlessSudo "$(instance_dir "$S")/lima.yaml")" = 0
check_match "a --sudo lane's sudo works in the guest" "^0$" \
    "$(ctl exec "$S" -- sh -c 'sudo -n true; echo $?' 2>&1)"
check_match "a policy lane's sudo does not" "password is required" \
    "$(ctl exec "$N" -- sudo -n true 2>&1)"
ctl rm "$N" "$S" >/dev/null

# ---- Create validation: typed errors ----
OUT=$(ctl create --network bogus 2>&1); RC=$?
check_eq "a bad --network is a usage error" 2 "$RC"
OUT=$(ctl create --network internet --allow example.org 2>&1); RC=$?
check_eq "--allow without --network allow is a usage error" 2 "$RC"
OUT=$(ctl create --network allow --allow '*.org' 2>&1); RC=$?
check_eq "a one-label wildcard is refused (the daemon's INVALID_ARGUMENT: 2)" 2 "$RC"
check_match "as INVALID_ARGUMENT, saying why" 'INVALID_ARGUMENT.*\*\.org.*is not a host name' "$OUT"
# Names that can never work, with the words --secret uses (hostrule.c).
OUT=$(ctl create --network allow --allow 2130706433 2>&1); RC=$?
check_eq "an address in one number is refused (exit 2)" 2 "$RC"
check_match "saying it is an address and why" \
    'INVALID_ARGUMENT: allow: "2130706433" is an address, not a host name: the proxy checks the name in the host.s certificate and refuses non-public addresses' "$OUT"
for a in 127.1 0x7f.1 '*.1.2.3' '[::1]' '::ffff:127.0.0.1'; do
	OUT=$(ctl create --network allow --allow "$a" 2>&1); RC=$?
	check_eq "--allow $a: exit 2" 2 "$RC"
	check_match "--allow $a: an address" 'INVALID_ARGUMENT: allow: ".*" is an address, not a host name' "$OUT"
done
OUT=$(ctl create --network allow --allow localhost 2>&1); RC=$?
check_eq "localhost is refused (exit 2)" 2 "$RC"
check_match "as a loopback name" \
    'INVALID_ARGUMENT: allow: "localhost" is a loopback name, not a host name: the proxy refuses non-public addresses' "$OUT"
OUT=$(ctl create --network allow --allow '*.app.localhost' 2>&1); RC=$?
check_eq "a wildcard under .localhost is refused (exit 2)" 2 "$RC"
G=$(ctl create --network allow --allow '*.github.io'); RC=$?
check_eq "an allow list may open a public suffix (*.github.io)" 0 "$RC"
[ "$RC" = 0 ] && ctl rm "$G" >/dev/null
OUT=$("$LANED" --check-config --allow 'ok.example.org,0177.0.0.1' 2>&1); RC=$?
check_eq "agent-laned.conf's allow key refuses an address too (exit 2)" 2 "$RC"
check_match "with the same words" 'allow: "0177.0.0.1" is an address, not a host name' "$OUT"
OUT=$(ctl create --network allow --allow 'a..b' 2>&1)
check_match "a malformed name is refused" "INVALID_ARGUMENT" "$OUT"
OUT=$(ctl create --network allow --allow "$(printf 'a%.0s' $(seq 1 300)).org" 2>&1)
check_match "an over-long name is refused" "INVALID_ARGUMENT" "$OUT"
ARGS=()
for i in $(seq 1 33); do ARGS+=(--allow "h$i.example.org"); done
OUT=$(ctl create --network allow "${ARGS[@]}" 2>&1); RC=$?
check_eq "33 allow patterns are refused before sending" 2 "$RC"
check_eq "no lane was left by the refusals" "" "$(ctl ls -q --all | while read -r x; do
	[ "$(json "$x" 'l["state"]')" = failed ] && echo "$x"; done)"
stop_daemon

# ---- The Lima version gate ----
LIMA_SIM_VERSION=2.1.0 start_daemon || exit 1
BEFORE=$(ctl ls -q --all | wc -l)
OUT=$(ctl create 2>&1); RC=$?
check_eq "Lima 2.1.0: a lane without guest root is refused" 1 "$RC"
check_match "as FAILED_PRECONDITION saying why" \
    'FAILED_PRECONDITION.*Lima 2\.1\.0 cannot drop guest root.*2\.2\.0' "$OUT"
check_eq "nothing was registered" "$BEFORE" "$(ctl ls -q --all | wc -l)"
S=$(ctl create --sudo 2>&1)
check_eq "a --sudo lane (advisory) is made on the old Lima" ready "$(lane_state "$S")"
check "its YAML keeps Lima 2.0" grep -qx 'minimumLimaVersion: 2.0.0' \
    "$(instance_dir "$S")/lima.yaml"
ctl rm "$S" >/dev/null
stop_daemon
check_eq "limactl --version ran once for the daemon's life" 1 \
    "$(grep -c 'limactl 2.1.0:' "$LOG")"

# ---- Allow lanes: the proxy, its records, the environment ----
python3 -c '
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"hello from the allowed host\n")
    def log_message(self, *a): pass
s = socketserver.TCPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' >"$T/srv.port" &
SRV=$!
SQ=
stop_helpers() { kill $SRV $SQ 2>/dev/null; wait 2>/dev/null; }
FINISH_HOOK=stop_helpers
wait_for 5 test -s "$T/srv.port"
SP=$(cat "$T/srv.port")
# proxy GET: an absolute-URI request through the lane's proxy port.
proxy_get() {	# proxy_get PORT HOST
	python3 - "$1" "$2" "$SP" <<'PY'
import socket, sys
port, host, sp = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(("GET http://%s:%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, sp, host)).encode())
data = b""
while True:
    try:
        b = s.recv(4096)
    except socket.timeout:
        break
    if not b:
        break
    data += b
print(data.decode("latin-1").split("\r\n")[0], "|", data.decode("latin-1").strip().splitlines()[-1])
PY
}
AGENT_LANED=$TESTD AGENT_LANED_TEST_RESOLVE="allowed.test=127.0.0.1,rebind.test=!127.0.0.1" \
    LANED=$TESTD start_daemon --proxy-http-ports "$SP" || exit 1
A=$(ctl create --network allow --allow allowed.test --allow '*.rebind.test' --allow rebind.test)
P=$(json "$A" 'l["proxy_port"]')
check "an allow lane has a proxy port" test "$P" -gt 0
check_eq "and its allow list, normalised" "allowed.test *.rebind.test rebind.test" \
    "$(json "$A" '" ".join(l["allow"])')"
check "its YAML lets through that port only" \
    grep -q "ip daddr 192.168.5.2 tcp dport $P accept" "$(instance_dir "$A")/lima.yaml"
check_match "an allowed name is served through the proxy" "200 OK | hello from the allowed host" \
    "$(proxy_get "$P" allowed.test)"
check_match "another name is refused" "403" "$(proxy_get "$P" denied.test)"
check_match "a name resolving to loopback is refused" "403" "$(proxy_get "$P" rebind.test)"
EV=$(ctl events "$A")
check_match "the allowed connection is in the lane's events" "proxy-allow +http allowed\.test:$SP via 127\.0\.0\.1" "$EV"
check_match "the refused one too" "proxy-deny +http denied\.test:$SP: host not in the allow list" "$EV"
check_match "and the rebinding" "proxy-deny +http rebind\.test:$SP: resolves to 127\.0\.0\.1" "$EV"
ENV=$(ctl exec "$A" -- env)
check_match "execs get HTTP_PROXY" "^HTTP_PROXY=http://192.168.5.2:$P\$" "$ENV"
check_match "and HTTPS_PROXY" "^HTTPS_PROXY=http://192.168.5.2:$P\$" "$ENV"
check_match "and NO_PROXY" "^NO_PROXY=localhost,127.0.0.1,::1\$" "$ENV"
check_match "a caller's -e overrides them" "^HTTP_PROXY=mine\$" \
    "$(ctl exec -e HTTP_PROXY=mine "$A" -- env)"

# The port is the lane's for its life: the same after restarts.
stop_daemon
check_nomatch "the proxy closes with the daemon" "200 OK" "$(proxy_get "$P" allowed.test 2>&1)"
AGENT_LANED_TEST_RESOLVE="allowed.test=127.0.0.1" LANED=$TESTD \
    start_daemon --proxy-http-ports "$SP" || exit 1
check_eq "after a restart the lane keeps its proxy port" "$P" "$(json "$A" 'l["proxy_port"]')"
check_match "and the proxy answers on it again" "200 OK" "$(proxy_get "$P" allowed.test)"
check_match "the rebinding is in the events" "proxy +bound again" "$(ctl events "$A")"
kill9_daemon
AGENT_LANED_TEST_RESOLVE="allowed.test=127.0.0.1" LANED=$TESTD \
    start_daemon --proxy-http-ports "$SP" || exit 1
check_match "after SIGKILL too" "200 OK" "$(proxy_get "$P" allowed.test)"
# A port someone else took meanwhile: that someone would be reachable from
# the guest, so the lane goes.
A2=$(ctl create --network allow --allow allowed.test)
P2=$(json "$A2" 'l["proxy_port"]')
stop_daemon
python3 -c "
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $P2)); s.listen(1); print('ok', flush=True); time.sleep(30)" >"$T/squat" &
SQ=$!
wait_for 5 grep -q ok "$T/squat"
LANED=$TESTD start_daemon --proxy-http-ports "$SP" || exit 1
wait_for "$(tw 10)" state_is "$A2" destroyed
check_eq "a lane whose proxy port was taken is destroyed" destroyed "$(lane_state "$A2")"
check_match "saying why" "proxy port $P2 cannot be bound again" "$(ctl events "$A2")"
kill "$SQ" 2>/dev/null; wait "$SQ" 2>/dev/null
check_eq "the other allow lane is still ready" ready "$(lane_state "$A")"
ctl rm "$A" >/dev/null
check_nomatch "a destroyed lane's proxy is closed" "200 OK" "$(proxy_get "$P" allowed.test 2>&1)"
stop_daemon
kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null

# ---- The warm pool keeps policies apart ----
start_daemon --pool-size 1 || exit 1
wait_for "$(tw 10)" has_pooled
POOLED=$(ctl ls --all --json | python3 -c 'import json,sys; print([l["name"] for l in json.load(sys.stdin) if l["state"]=="pooled"][0])')
check_eq "the pool lane has the configured policy" internet "$(json "$POOLED" 'l["network"]')"
N=$(ctl create --network none)
check "a create of another policy does not take it" test "$N" != "$POOLED"
check_eq "it stays pooled" pooled "$(lane_state "$POOLED")"
S=$(ctl create --sudo)
check "nor does a --sudo create" test "$S" != "$POOLED"
D=$(ctl create)
check_eq "a create of the pool's policy takes it" "$POOLED" "$D"
ctl rm "$N" "$S" "$D" >/dev/null
# A configuration of another policy does not keep the last run's pool
# lane. It is one of mode none: an internet or allow pool lane is never
# kept over a restart whatever the policy (its lane CA key is gone:
# tests/regress/pool-secrets.sh).
pooled() {
	ctl ls --all --json | python3 -c 'import json,sys; print(" ".join(l["name"] for l in json.load(sys.stdin) if l["state"]=="pooled"))'
}
stop_daemon
start_daemon --pool-size 1 --network none || exit 1
wait_for "$(tw 10)" has_pooled
POOLED=$(pooled)
wait_for "$(tw 10)" booted "$POOLED"
stop_daemon
start_daemon --pool-size 1 --network allow || exit 1
wait_for "$(tw 10)" state_is "$POOLED" destroyed
check_eq "a pool lane of the old policy is destroyed at start-up" destroyed "$(lane_state "$POOLED")"
check_match "as not the configured pool's" "not in the configured warm pool" "$(ctl events "$POOLED")"
finish
