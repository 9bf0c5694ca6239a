#!/usr/bin/env bash
# Lane secrets (create --secret NAME@HOST): every exec sees NAME set to a
# placeholder unique to the lane and the secret, never the value; the lane
# gets a proxy (internet and allow modes) and the trust variables; show,
# ls --json and the events name each secret, its hosts and its own
# headers (create --secret-header, the configured secret_header), which
# are checked and kept across a restart; the value is
# found nowhere on disk (state directory, registry, logs, YAML, the guest's
# files), in no host command line, and leaves the daemon's memory with the
# lane; aliases and prefixes get the environment full names get; the
# configured `secret` key; a warm-pool lane is handed to a create with
# secrets; a restart destroys a lane whose values it lost.
#
# The simulator's guests have no network, so nothing here reaches the
# proxy from a guest: the interception itself is the proxy's suites
# (tests/regress/proxy.sh and friends), and a guest's HTTPS call through it
# is client/sandcastle/test/secrets-e2e.test.mjs on real Lima. Under
# make check-lima (tests/lima/run.sh lane-secrets) this suite also runs on
# real guests, where the daemon checks the lane CA in the guest's bundle
# before ready.
. "$(dirname "$0")/lib.sh"

json() {	# json LANE EXPR: a field of show --json, printed by python
	ctl show --json "$1" 2>/dev/null | python3 -c "import json,sys; l=json.load(sys.stdin); print($2)"
}
val() { echo "sk-$1-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
PH='^AGENTLANE_SECRET_[0-9a-f]{48}$'
# The variable's value in an exec's environment (the lane's own variables).
guest_var() { ctl exec "$1" -- printenv "$2"; }
# Every file under a tree whose bytes hold $2 (the registry's WAL included).
files_with() { grep -rlaF -- "$2" "$1" 2>/dev/null; }
# Host processes whose command line holds $1.
cmdlines_with() {
	local p
	for p in /proc/[0-9]*; do
		tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -qF -- "$1" && echo "${p#/proc/}"
	done
}
scan() { python3 "$(dirname "$0")/memscan.py" "$1" "$2"; }

start_daemon || exit 1
KEY=$(val ant)
GH=$(val gh)
# Only the client's environment has the values: the daemon was started
# without them, so whatever it holds came over its socket.
L=$(ANTHROPIC_API_KEY=$KEY GH_TOKEN=$GH ctl create --name sec \
    --secret ANTHROPIC_API_KEY@api.anthropic.com \
    --secret 'GH_TOKEN@github.com,*.github.com'); RC=$?
check_eq "create --secret makes the lane" 0 "$RC"
check_eq "it is ready" ready "$(lane_state "$L")"

# ---- The exec environment ----
A=$(guest_var "$L" ANTHROPIC_API_KEY)
G=$(guest_var "$L" GH_TOKEN)
check_match "the guest's ANTHROPIC_API_KEY is a placeholder" "$PH" "$A"
check_match "and GH_TOKEN another" "$PH" "$G"
check "the two differ" test "$A" != "$G"
check "neither is a part of the other" python3 -c "import sys; a, b = sys.argv[1:]; sys.exit(a in b or b in a)" "$A" "$G"
check "the last 20 characters differ (Claude Code tells keys apart by them)" \
    test "${A: -20}" != "${G: -20}"
check_eq "every exec sees the same placeholder" "$A" "$(guest_var "$L" ANTHROPIC_API_KEY)"
ENV=$(ctl exec "$L" -- env)
check_nomatch "no exec sees the value" "$KEY|$GH" "$ENV"
P=$(json "$L" 'l["proxy_port"]')
check "an internet lane with secrets has a proxy" test "$P" -gt 0
check_match "execs get HTTPS_PROXY" "^HTTPS_PROXY=http://192.168.5.2:$P\$" "$ENV"
check_match "and https_proxy" "^https_proxy=http://192.168.5.2:$P\$" "$ENV"
check_match "and no_proxy" "^no_proxy=localhost,127.0.0.1,::1\$" "$ENV"
check_match "NODE_EXTRA_CA_CERTS names the lane CA" \
    "^NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/agent-lane.crt\$" "$ENV"
for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO; do
	check_match "$v names the whole system bundle" \
	    "^$v=/etc/ssl/certs/ca-certificates.crt\$" "$ENV"
done
OUT=$(ctl exec --env "ANTHROPIC_API_KEY=$KEY" "$L" -- true 2>&1); RC=$?
check_eq "an exec may not set a secret's variable (the daemon's INVALID_ARGUMENT: exit 2)" 2 "$RC"
check_match "INVALID_ARGUMENT, saying why" "INVALID_ARGUMENT: ANTHROPIC_API_KEY is a secret of lane $L" "$OUT"
check_nomatch "without the value" "$KEY" "$OUT"
check_match "other variables still go" "^x\$" "$(ctl exec -e OTHER=x "$L" -- printenv OTHER)"

# ---- Aliases and prefixes: the environment of the full name ----
lane_vars() { ctl exec "$1" -- env | grep -E '^(ANTHROPIC_API_KEY|GH_TOKEN|[A-Z_]*PROXY|[a-z_]*proxy|[A-Z_]*CA[A-Z_]*|SSL_CERT_FILE)=' | sort; }
FULL=$(lane_vars "$L")
check_eq "the alias gets the full name's environment" "$FULL" "$(lane_vars sec)"
check_eq "so does a prefix without al-" "$FULL" "$(lane_vars "${L:3:8}")"
check_eq "and with it" "$FULL" "$(lane_vars "${L:0:9}")"
check_eq "the variables are all there" 13 "$(printf '%s\n' "$FULL" | wc -l)"
AL=$(ctl create --network allow --allow example.org --name allowed)
check_eq "an allow lane's alias gets its proxy too" \
    "$(ctl exec "$AL" -- printenv HTTPS_PROXY)" "$(ctl exec allowed -- printenv HTTPS_PROXY)"
OUT=$(ctl exec --env "GH_TOKEN=$GH" sec -- true 2>&1)
check_match "the alias refuses a secret's variable as well" "INVALID_ARGUMENT" "$OUT"
ctl rm "$AL" >/dev/null

# ---- What the daemon reports: names and hosts ----
check_eq "show --json lists names and hosts (and no header of their own)" \
    "[{'name': 'ANTHROPIC_API_KEY', 'hosts': ['api.anthropic.com'], 'headers': []}, {'name': 'GH_TOKEN', 'hosts': ['github.com', '*.github.com'], 'headers': []}]" \
    "$(json "$L" 'l["secrets"]')"
SHOW=$(ctl show "$L")
check_match "show prints the proxy" "^proxy: +127.0.0.1:$P \\(guest: 192.168.5.2:$P\\)\$" "$SHOW"
check_match "show prints each secret" "^secret: +ANTHROPIC_API_KEY for api.anthropic.com\$" "$SHOW"
check_match "with its hosts" "^secret: +GH_TOKEN for github.com \*.github.com\$" "$SHOW"
LS=$(ctl ls --json)
check_match "ls --json has them" '"secrets":\[\{"name":"ANTHROPIC_API_KEY","hosts":\["api.anthropic.com"\],"headers":\[\]\}' "$LS"
EV=$(ctl events "$L")
check_match "the events name each secret and its hosts" "secret +ANTHROPIC_API_KEY for api.anthropic.com" "$EV"
check_match "both" "secret +GH_TOKEN for github.com,\*.github.com" "$EV"
for out in "$SHOW" "$LS" "$EV" "$(ctl ls --json --all)" "$(ctl events --json "$L")"; do
	check_nomatch "no report holds a value or a placeholder" "$KEY|$GH|$A|$G" "$out"
done

# ---- A secret's own headers (--secret-header NAME=HEADER[,HEADER...]) ----
HL=$(GITLAB_TOKEN=$GH ctl create --secret GITLAB_TOKEN@gitlab.example.org \
    --secret-header GITLAB_TOKEN=X-Gitlab-Key,x-other \
    --secret-header GITLAB_TOKEN=X-GITLAB-KEY); RC=$?
check_eq "create --secret-header makes the lane" 0 "$RC"
check_eq "show --json lists a secret's own headers, lower case, each once" \
    "[{'name': 'GITLAB_TOKEN', 'hosts': ['gitlab.example.org'], 'headers': ['x-gitlab-key', 'x-other']}]" \
    "$(json "$HL" 'l["secrets"]')"
check_match "show prints them after the hosts" \
    "^secret: +GITLAB_TOKEN for gitlab.example.org, also in headers x-gitlab-key,x-other\$" "$(ctl show "$HL")"
check_match "ls --json has them" \
    '\{"name":"GITLAB_TOKEN","hosts":\["gitlab.example.org"\],"headers":\["x-gitlab-key","x-other"\]\}' "$(ctl ls --json)"
check_match "the events name them" "secret +GITLAB_TOKEN for gitlab.example.org in headers x-gitlab-key,x-other" \
    "$(ctl events "$HL")"
check_eq "the registry keeps them beside the hosts" "GITLAB_TOKEN gitlab.example.org :x-gitlab-key :x-other" \
    "$(sqlite3 "$STATE/registry.db" "SELECT secrets FROM lanes WHERE name = '$HL'" 2>/dev/null)"
OUT=$(GITLAB_TOKEN=$GH ctl create --secret GITLAB_TOKEN@gitlab.example.org \
    --secret-header GITLAB_TOKEN=Host 2>&1); RC=$?
check_eq "a framing header is refused as a usage error" 2 "$RC"
check_match "saying which and why" \
    '^agent-lanectl: --secret-header GITLAB_TOKEN: "Host" cannot carry a credential: a header name is an HTTP token' "$OUT"
for bad in Content-Length Transfer-Encoding Connection Cookie 'x:y' 'x y' 'x-a,,Te'; do
	OUT=$(GITLAB_TOKEN=$GH ctl create --secret GITLAB_TOKEN@gitlab.example.org \
	    --secret-header "GITLAB_TOKEN=$bad" 2>&1); RC=$?
	check_eq "--secret-header GITLAB_TOKEN=$bad is refused (exit 2)" 2 "$RC"
done
OUT=$(GITLAB_TOKEN=$GH ctl create --secret GITLAB_TOKEN@gitlab.example.org \
    --secret-header GITLAB_TOKEN=h1,h2,h3,h4,h5,h6,h7,h8,h9 2>&1); RC=$?
check_eq "nine headers are refused" 2 "$RC"
check_match "at most 8" "GITLAB_TOKEN: at most 8 headers" "$OUT"
OUT=$(GITLAB_TOKEN=$GH ctl create --secret-header GITLAB_TOKEN=x-key 2>&1); RC=$?
check_eq "a header for a secret not given is refused" 2 "$RC"
check_match "naming it" "--secret-header GITLAB_TOKEN: no --secret GITLAB_TOKEN" "$OUT"
OUT=$(GITLAB_TOKEN=$GH ctl create --secret GITLAB_TOKEN@gitlab.example.org \
    --secret-header GITLAB_TOKEN 2>&1); RC=$?
check_eq "NAME without =HEADER is refused" 2 "$RC"
check_match "saying the syntax" "--secret-header needs NAME=HEADER\\[,HEADER...\\]" "$OUT"
check_nomatch "no refusal quoted the value" "$GH" "$OUT"
ctl rm "$HL" >/dev/null
# The daemon checks them itself, for a client that does not: a CreateLane
# by hand whose Secret (40) names Content-Length as its header (4).
raw_create_secret_header() {
	PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$1" <<'PY'
import socket, sys
from wire import HELLO, frame, split_frames, field
def uvarint(b, i):
    n = s = 0
    while True:
        n |= (b[i] & 0x7F) << s
        s += 7
        i += 1
        if b[i - 1] < 0x80:
            return n, i
sec = field(1, 2, b"K") + field(2, 2, b"sk-raw-value") + \
    field(3, 2, b"api.example.com") + field(4, 2, sys.argv[2].encode())
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.settimeout(20)
c.connect(sys.argv[1])
c.sendall(HELLO + frame(field(2, 2, field(40, 2, sec))))
data = b""
while len(split_frames(data)) < 2:
    got = c.recv(65536)
    if not got:
        break
    data += got
fr = split_frames(data)
r = fr[1] if len(fr) > 1 else b""
if r[:1] != bytes([2 << 3 | 2]):           # Response.error = 2
    print("no error:", r[:1].hex()); sys.exit(0)
n, i = uvarint(r, 1)
body, code, msg = r[i:i + n], 0, ""
j = 0
while j < len(body):
    k, j = uvarint(body, j)
    if k == 8:
        code, j = uvarint(body, j)
    else:
        ln, j = uvarint(body, j)
        msg = body[j:j + ln].decode("utf-8", "replace")
        j += ln
print("error", code, msg)
PY
}
OUT=$(raw_create_secret_header Content-Length)
check_match "the daemon refuses a framing header a client sent (INVALID_ARGUMENT)" \
    '^error 1 secret K: header "Content-Length" cannot carry a credential' "$OUT"
check_match "and one that is not a token" '^error 1 secret K: header "x y" cannot' \
    "$(raw_create_secret_header 'x y')"
check_eq "and made no lane" "" "$(ctl ls -q | grep -v "^$L\$")"

# ---- The YAML: the lane CA installed at boot, the proxy port let through ----
Y=$(instance_dir "$L")/lima.yaml
check "its YAML installs the lane CA as root at every boot" \
    grep -q '# agent-lane: the lane CA (secrets). Runs as root at every boot.' "$Y"
check "into the system trust store" grep -q '^    update-ca-certificates$' "$Y"
check "a certificate, never a key" sh -c "grep -q 'BEGIN CERTIFICATE' '$Y' && ! grep -q 'PRIVATE KEY' '$Y'"
check "its internet rules let the proxy port through" \
    grep -q "ip daddr 192.168.5.2 tcp dport $P accept" "$Y"

# ---- The value is nowhere but the daemon's memory ----
check_eq "no file of the state directory holds a value (registry, WAL, logs, YAML, guests)" "" \
    "$(files_with "$STATE" "$KEY"; files_with "$STATE" "$GH")"
check_eq "nor the daemon's log" "" "$(grep -aF -e "$KEY" -e "$GH" "$LOG")"
check_eq "nor any host command line" "" "$(cmdlines_with "$KEY"; cmdlines_with "$GH")"
check_eq "the registry has the names and hosts" \
    "$(printf 'ANTHROPIC_API_KEY api.anthropic.com\nGH_TOKEN github.com *.github.com')" \
    "$(sqlite3 "$STATE/registry.db" "SELECT secrets FROM lanes WHERE name = '$L'" 2>/dev/null)"
if [ ! -r /proc/self/mem ]; then
	ok "# SKIP no /proc/PID/mem here"
elif ! daemon_proc_readable; then
	ok "# SKIP $DAEMON_PROC_SKIP"
else
	check "while the lane lives, the daemon holds the value" \
	    test "$(scan "$DAEMON_PID" "$KEY")" -ge 1
fi

# ---- none and allow lanes ----
N=$(ANTHROPIC_API_KEY=$KEY ctl create --network none --secret ANTHROPIC_API_KEY@api.anthropic.com)
check_match "a none lane gets the placeholder" "$PH" "$(guest_var "$N" ANTHROPIC_API_KEY)"
check_nomatch "but no proxy (nothing leaves it)" "PROXY|CA_CERTS" "$(ctl exec "$N" -- env)"
check_eq "its proxy port is 0" 0 "$(json "$N" 'l["proxy_port"]')"
W=$(ANTHROPIC_API_KEY=$KEY ctl create --network allow --allow registry.npmjs.org \
    --secret ANTHROPIC_API_KEY@api.anthropic.com)
check_match "an allow lane gets the placeholder" "$PH" "$(guest_var "$W" ANTHROPIC_API_KEY)"
check_match "and the trust variables" "^NODE_EXTRA_CA_CERTS=" "$(ctl exec "$W" -- env)"
check_eq "its allow list is as given (the proxy lets a secret's hosts through)" \
    "['registry.npmjs.org']" "$(json "$W" 'l["allow"]')"
check "placeholders are unique to the lane" test "$(guest_var "$W" ANTHROPIC_API_KEY)" != "$A"

# ---- run, and a lane cloned from an image ----
OUT=$(ANTHROPIC_API_KEY=$KEY ctl run --secret ANTHROPIC_API_KEY@api.anthropic.com -- printenv ANTHROPIC_API_KEY)
check_match "run --secret gives the command the placeholder" "$PH" "$OUT"
printf '#!/bin/sh\necho provisioned > /etc/agent-lane-test\n' >"$T/p.sh"
ctl image build sectools --provision "$T/p.sh" >/dev/null 2>&1
I=$(ANTHROPIC_API_KEY=$KEY ctl create --image sectools --secret ANTHROPIC_API_KEY@api.anthropic.com)
check_match "a clone gets the placeholder" "$PH" "$(guest_var "$I" ANTHROPIC_API_KEY)"
check "and its rewritten YAML installs its CA" grep -q "BEGIN CERTIFICATE" "$(instance_dir "$I")/lima.yaml"
check "not the image's: the image has none" sh -c "! grep -rq 'BEGIN CERTIFICATE' '$STATE'/lima/ali-*/lima.yaml"
ctl rm "$I" >/dev/null

# ---- Refusals: typed, and never with the value ----
OUT=$(unset NOPE; ctl create --secret NOPE@api.example.com 2>&1); RC=$?
check_eq "a secret whose variable is not set is a usage error" 2 "$RC"
check_match "saying so" 'NOPE is not set' "$OUT"
OUT=$(ctl create --secret '1BAD@api.example.com' 2>&1); RC=$?
check_eq "a bad name is a usage error" 2 "$RC"
OUT=$(BAD=$'line\nbreak' ctl create --secret BAD@api.example.com 2>&1); RC=$?
check_eq "a value with a newline is refused before it is sent" 2 "$RC"
check_nomatch "without quoting it" "break" "$OUT"
OUT=$(ANTHROPIC_API_KEY=$KEY ctl create --secret 'ANTHROPIC_API_KEY@*.com' 2>&1); RC=$?
check_eq "a one-label wildcard is refused by the daemon (INVALID_ARGUMENT: exit 2)" 2 "$RC"
check_match "as INVALID_ARGUMENT" 'INVALID_ARGUMENT: secret ANTHROPIC_API_KEY: "\*\.com" is not a host name' "$OUT"
OUT=$(ANTHROPIC_API_KEY=$KEY ctl create --secret 'ANTHROPIC_API_KEY@203.0.113.7' 2>&1)
check_match "an address is refused (the proxy checks the name in the certificate)" "INVALID_ARGUMENT.*is an address, not a host name" "$OUT"
# Any spelling of an address, and loopback names, with the words --allow
# uses (hostrule.c); exit 2, INVALID_ARGUMENT.
OUT=$(ANTHROPIC_API_KEY=$KEY ctl create --secret 'ANTHROPIC_API_KEY@127.1' 2>&1); RC=$?
check_eq "127.1 is refused (exit 2)" 2 "$RC"
check_match "as an address, saying why" \
    'INVALID_ARGUMENT: secret ANTHROPIC_API_KEY: "127.1" is an address, not a host name: the proxy checks the name in the host.s certificate and refuses non-public addresses' "$OUT"
for a in 2130706433 0x7f.1 '*.1.2.3' '[::ffff:127.0.0.1]'; do
	OUT=$(ANTHROPIC_API_KEY=$KEY ctl create --secret "ANTHROPIC_API_KEY@$a" 2>&1); RC=$?
	check_eq "--secret NAME@$a: exit 2" 2 "$RC"
	check_match "--secret NAME@$a: an address" 'INVALID_ARGUMENT: secret ANTHROPIC_API_KEY: ".*" is an address' "$OUT"
done
OUT=$(ANTHROPIC_API_KEY=$KEY ctl create --secret 'ANTHROPIC_API_KEY@api.localhost' 2>&1); RC=$?
check_eq "a name under .localhost is refused (exit 2)" 2 "$RC"
check_match "as a loopback name" '"api.localhost" is a loopback name, not a host name' "$OUT"
# A wildcard over a public suffix (libpsl, private section included).
for a in '*.github.io' '*.co.uk' '*.herokuapp.com'; do
	OUT=$(ANTHROPIC_API_KEY=$KEY ctl create --secret "ANTHROPIC_API_KEY@$a" 2>&1); RC=$?
	check_eq "--secret NAME@$a: exit 2" 2 "$RC"
	check_match "--secret NAME@$a: a public suffix" \
	    "INVALID_ARGUMENT: secret ANTHROPIC_API_KEY: \"\\$a\" is a wildcard over the public suffix \"${a#\*.}\"" "$OUT"
done
OUT=$("$LANED" --check-config --secret 'X@api.example.org,*.github.io' 2>&1); RC=$?
check_eq "agent-laned.conf's secret key refuses it too (exit 2)" 2 "$RC"
check_match "with the same words" 'secret X: "\*.github.io" is a wildcard over the public suffix' "$OUT"
OUT=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY 2>&1)
check_match "no host and no configured one is refused" "INVALID_ARGUMENT: secret ANTHROPIC_API_KEY names no host" "$OUT"
ARGS=()
for i in $(seq 1 17); do ARGS+=(--secret "S$i@h$i.example.org"); done
OUT=$(for i in $(seq 1 17); do export "S$i=v$i"; done; ctl create "${ARGS[@]}" 2>&1); RC=$?
check_eq "17 secrets are refused before sending" 2 "$RC"
OUT=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY@a.example.org \
    --secret ANTHROPIC_API_KEY@b.example.org 2>&1); RC=$?
check_eq "a name given twice is refused" 2 "$RC"
check_nomatch "no refusal quoted the value" "$KEY" "$OUT"
check_eq "the refusals left no lane" 3 "$(ctl ls -q | wc -l)"

# ---- Rm: the value leaves the daemon's memory with the lane ----
ctl rm "$N" "$W" "$L" >/dev/null
check_eq "the lane is destroyed" destroyed "$(lane_state "$L")"
check_match "its ended row still names its secrets" "ANTHROPIC_API_KEY" "$(json "$L" 'l["secrets"]')"
if [ ! -r /proc/self/mem ]; then
	ok "# SKIP no /proc/PID/mem here"
elif ! daemon_proc_readable; then
	ok "# SKIP $DAEMON_PROC_SKIP"
else
	check_eq "no copy of the value is left in the daemon" 0 "$(scan "$DAEMON_PID" "$KEY")"
	check_eq "nor of the other" 0 "$(scan "$DAEMON_PID" "$GH")"
fi
check_eq "still no file holds a value" "" "$(files_with "$STATE" "$KEY"; files_with "$STATE" "$GH")"

# ---- A restart: the values are gone, and so are the lanes that had them ----
S=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY@api.anthropic.com \
    --secret-header ANTHROPIC_API_KEY=X-Custom-Auth)
K=$(ctl create)
SP=$(json "$S" 'l["proxy_port"]')
stop_daemon
start_daemon || exit 1
wait_for "$(tw 20)" sh -c "[ \"\$(\"$LANECTL\" --socket \"$SOCK\" show --json $S | grep -o '\"state\":\"[a-z]*\"')\" = '\"state\":\"destroyed\"' ]"
check_eq "after a restart the lane with secrets is destroyed" destroyed "$(lane_state "$S")"
check_match "the events say why" "destroying +its secrets were held in memory by the agent-laned that stopped" \
    "$(ctl events "$S")"
check_eq "a lane without secrets carries on" ready "$(lane_state "$K")"
check_eq "the ended lane still lists its secret's headers" "['x-custom-auth']" \
    "$(json "$S" 'l["secrets"][0]["headers"]')"
S2=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY@api.anthropic.com)
kill9_daemon
start_daemon || exit 1
wait_for "$(tw 20)" sh -c "[ \"\$(\"$LANECTL\" --socket \"$SOCK\" show --json $S2 | grep -o '\"state\":\"[a-z]*\"')\" = '\"state\":\"destroyed\"' ]"
check_eq "after SIGKILL too" destroyed "$(lane_state "$S2")"
check_eq "nothing the restarts wrote holds the value" "" "$(files_with "$STATE" "$KEY")"
ctl rm "$K" >/dev/null
stop_daemon

# ---- The configured secrets: names every create must bring ----
OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl "$SIM" \
    --secret-header ANTHROPIC_API_KEY=x-key --check-config 2>&1); RC=$?
check_eq "a configured secret_header without its secret line is refused" 2 "$RC"
check_match "saying so" "secret_header: ANTHROPIC_API_KEY has no .secret. line before it" "$OUT"
OUT=$("$LANED" --socket "$SOCK" --state-dir "$STATE" --limactl "$SIM" \
    --secret ANTHROPIC_API_KEY@api.anthropic.com --secret-header ANTHROPIC_API_KEY=Cookie \
    --check-config 2>&1); RC=$?
check_eq "a configured header that cannot carry a credential is refused" 2 "$RC"
check_match "saying which" '"Cookie" cannot carry a credential' "$OUT"
start_daemon --secret 'ANTHROPIC_API_KEY@api.anthropic.com,*.anthropic.com' \
    --secret-header ANTHROPIC_API_KEY=X-Custom-Auth || exit 1
OUT=$(ctl create 2>&1); RC=$?
check_eq "a create without a configured secret is refused" 1 "$RC"
check_match "FAILED_PRECONDITION, naming it" "FAILED_PRECONDITION: agent-laned.conf names secret ANTHROPIC_API_KEY" "$OUT"
C=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY)
check_eq "--secret NAME takes the configured hosts" "['api.anthropic.com', '*.anthropic.com']" \
    "$(json "$C" 'l["secrets"][0]["hosts"]')"
check_match "and the guest gets the placeholder" "$PH" "$(guest_var "$C" ANTHROPIC_API_KEY)"
check_eq "and the configured headers" "['x-custom-auth']" "$(json "$C" 'l["secrets"][0]["headers"]')"
C3=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY --secret-header ANTHROPIC_API_KEY=x-mine)
check_eq "headers given with the create are its own" "['x-mine']" "$(json "$C3" 'l["secrets"][0]["headers"]')"
ctl rm "$C3" >/dev/null
C2=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY@api.anthropic.com)
check_eq "hosts given with the create are its own" "['api.anthropic.com']" \
    "$(json "$C2" 'l["secrets"][0]["hosts"]')"
ctl rm "$C" "$C2" >/dev/null
stop_daemon

# ---- The warm pool serves lanes with secrets ----
# (tests/regress/pool-secrets.sh has the hand-over in full.)
start_daemon --pool-size 1 || exit 1
wait_for "$(bw 20 1)" sh -c "\"$LANECTL\" --socket \"$SOCK\" ls --all --json | grep -q '\"state\":\"pooled\",.*\"workspace\":\"/'"
POOLED=$(ctl ls --all --json | python3 -c 'import json,sys; print(" ".join(l["name"] for l in json.load(sys.stdin) if l["state"] == "pooled"))')
check "a pool lane is booted" test -n "$POOLED"
check_match "with a lane CA in its YAML" "BEGIN CERTIFICATE" "$(cat "$(instance_dir "$POOLED")/lima.yaml")"
PS=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY@api.anthropic.com)
check_eq "a create with secrets takes it" "$POOLED" "$PS"
check_match "its exec sees a placeholder" "$PH" "$(guest_var "$PS" ANTHROPIC_API_KEY)"
check_eq "still no file holds the value" "" "$(files_with "$STATE" "$KEY")"
check_match "its execs go through its proxy" "^HTTPS_PROXY=" "$(ctl exec "$PS" -- env)"
wait_for "$(bw 20 1)" sh -c "\"$LANECTL\" --socket \"$SOCK\" ls --all --json | grep -q '\"state\":\"pooled\",.*\"workspace\":\"/'"
PN=$(ctl create)
check_match "a create without secrets takes the next one" "taken-from-pool" "$(ctl events "$PN")"
check_nomatch "whose execs are not sent to its proxy (internet, no secret)" "HTTPS_PROXY|NODE_EXTRA_CA_CERTS" "$(ctl exec "$PN" -- env)"
ctl rm "$PS" "$PN" >/dev/null
stop_daemon

# ---- Through the lane's proxy, driven from the host ----
# The simulator's guests have no network: a host client plays the guest.
# The test daemon resolves the test names to a loopback upstream that has
# its own test CA, which it trusts (tests/proxy/testhooks.c).
TESTD=$(dirname "$LANED")/tests/agent-laned-test
UP=$T/up
mkdir -p "$UP"
python3 "$(dirname "$0")/secret_upstream.py" "$UP" >"$T/up.ports" 2>"$T/up.err" &
UPID=$!
stop_upstream() { kill "$UPID" 2>/dev/null; wait "$UPID" 2>/dev/null; }
FINISH_HOOK=stop_upstream
wait_for 20 test -s "$T/up.ports"
read -r HTTPS_PORT HTTP_PORT <"$T/up.ports"
AGENT_LANED_TEST_RESOLVE="api.test=127.0.0.1,other.test=127.0.0.1" \
    AGENT_LANED_TEST_TRUST=$UP/ca.pem LANED=$TESTD \
    start_daemon --proxy-connect-ports "$HTTPS_PORT" --proxy-http-ports "$HTTP_PORT" || exit 1
E=$(ANTHROPIC_API_KEY=$KEY ctl create --secret ANTHROPIC_API_KEY@api.test)
EP=$(json "$E" 'l["proxy_port"]')
PHE=$(guest_var "$E" ANTHROPIC_API_KEY)
# The lane CA as the guest's trust store gets it: from the lane's YAML.
sed -n '/BEGIN CERTIFICATE/,/END CERTIFICATE/p' "$(instance_dir "$E")/lima.yaml" |
    sed 's/^    //' >"$T/laneca.pem"
via() { curl -sS --max-time 20 --proxy "http://127.0.0.1:$EP" "$@"; }
OUT=$(via --cacert "$T/laneca.pem" -H "x-api-key: $PHE" "https://api.test:$HTTPS_PORT/v1/messages" 2>&1)
check_match "a client trusting only the lane CA reaches the secret's host through the proxy" \
    "hello from the test upstream" "$OUT"
check_eq "the upstream saw the real value" "api.test:$HTTPS_PORT $KEY" "$(tail -n 1 "$UP/seen" 2>/dev/null)"
check_nomatch "the client never saw it" "$KEY" "$OUT"
OUT=$(via -o /dev/null -w '%{http_code}' -H "x-api-key: $PHE" "http://other.test:$HTTP_PORT/" 2>&1)
check_eq "the placeholder sent to another host is refused" 403 "$OUT"
check "and never reached it" sh -c "! grep -q '^other.test' '$UP/seen'"
OUT=$(via --cacert "$UP/ca.pem" "https://other.test:$HTTPS_PORT/" 2>&1)
check_match "a host without a secret is an opaque tunnel (its own certificate reaches the client)" \
    "hello from the test upstream" "$OUT"
EV=$(ctl events "$E")
check_match "the use is in the lane's events" "secret-use +secret ANTHROPIC_API_KEY used for api.test" "$EV"
check_match "and the refusal" "secret-refused +secret ANTHROPIC_API_KEY sent to other.test: refused" "$EV"
check_nomatch "neither holds the value" "$KEY" "$EV"
check_eq "still no file holds the value" "" "$(files_with "$STATE" "$KEY")"
ctl rm "$E" >/dev/null
check "the proxy closed with the lane" sh -c "! curl -s --max-time 5 --proxy http://127.0.0.1:$EP http://other.test:$HTTP_PORT/ >/dev/null 2>&1"
stop_daemon
