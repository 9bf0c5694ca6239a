#!/usr/bin/env bash
# The credential broker against a hostile guest, on real Lima (make check,
# and make check-lima): from inside a lane, the lane user replays the
# request smuggle that once read a secret's value back (issue 29) with the
# guest's stock `openssl s_client`, through the lane proxy, to a loopback
# upstream that echoes every request it parses, heads and bodies, as
# Python's http.server parses them. The value must be read nowhere: not in
# what the guest gets back, not in any body the upstream parsed; the
# attempt is refused and recorded in the lane's events. A plain request
# with the placeholder in Authorization is the control: the upstream sees
# the real value there, and its echo of it reaches the guest redacted.
#
# The test build of the daemon (build/tests/agent-laned-test) resolves
# api.anthropic.com to the loopback upstream and trusts that upstream's
# test CA (tests/proxy/testhooks.h); agent-laned itself has no such switch.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "the credential broker on real Lima" "$0" "$@"
. "$HERE/../regress/lib.sh"
TESTD=$(dirname "$LANED")/tests/agent-laned-test
[ "$REAL_LIMA" = 1 ] || { echo "not ok 1 - not on real Lima (run it through tests/lima/run.sh)"; exit 1; }
[ -x "$TESTD" ] || { echo "not ok 1 - $TESTD is not built (make tests)"; exit 1; }

HOST=api.anthropic.com
# The test upstream's CA and its leaf for $HOST.
(
	cd "$T" || exit 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout ca.key -out ca.pem -days 2 -subj "/CN=agent-lane broker test CA" \
	    -addext basicConstraints=critical,CA:TRUE \
	    -addext keyUsage=critical,keyCertSign,cRLSign &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout up.key -out up.csr -subj "/CN=$HOST" &&
	printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$HOST" > ext.cnf &&
	openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
	    -out up.pem -days 2 -extfile ext.cnf
) >/dev/null 2>&1 || { echo "not ok 1 - openssl could not make the test CA"; exit 1; }

# The upstream: HTTP/1.1 keep-alive over TLS, Python's own parser. Every
# request it parses is one JSON line (path, headers, body) in seen.jsonl,
# and its answer echoes that request back, as a careless API would.
cat > "$T/up.py" <<'PY'
import http.server, json, socketserver, ssl, sys
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def handle_one_request(self):
        try:
            super().handle_one_request()
        except Exception:
            self.close_connection = True
    def do_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n > 0 else b""
        rec = {"path": self.path, "headers": str(self.headers),
               "body": body.decode("latin-1")}
        with open(d + "/seen.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")
        out = (rec["headers"] + "\n" + rec["body"]).encode("latin-1")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_any
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
s = S(("127.0.0.1", 0), H)
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(d + "/up.pem", d + "/up.key")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
: > "$T/seen.jsonl"
python3 "$T/up.py" "$T" > "$T/up.port" 2>"$T/up.err" &
UP=$!
stop_up() { kill "$UP" 2>/dev/null; wait "$UP" 2>/dev/null; }
FINISH_HOOK=stop_up
wait_for 10 test -s "$T/up.port" || { echo "not ok 1 - the test upstream did not start: $(cat "$T/up.err")"; exit 1; }
UPORT=$(cat "$T/up.port")

LANED=$TESTD AGENT_LANED_TEST_RESOLVE="$HOST=127.0.0.1" \
    AGENT_LANED_TEST_TRUST="$T/ca.pem" start_daemon --proxy-connect-ports "$UPORT" || exit 1
KEY="sk-ant-api03-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
L=$(ANTHROPIC_API_KEY=$KEY ctl create -q --timeout 30m --secret "ANTHROPIC_API_KEY@$HOST")
check_eq "a lane with a secret is ready on real Lima" ready "$(lane_state "$L")"
PH=$(ctl exec "$L" -- printenv ANTHROPIC_API_KEY)
check_match "the guest holds a placeholder" '^AGENTLANE_SECRET_[0-9a-f]{48}$' "$PH"
PPORT=$(ctl show --json "$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["proxy_port"])')
check_eq "openssl(1) is the guest's own" /usr/bin/openssl "$(ctl exec "$L" -- sh -c 'command -v openssl')"

# guest_tls NAME: the lane user sends $T/NAME.req (written in the guest
# from the script below) through the proxy with s_client, keeps the
# tunnel open a while for what comes back, and prints it all.
cat > "$T/smuggle.sh" <<'SH'
# $1 proxy port, $2 upstream port, $3 host; $ANTHROPIC_API_KEY: the placeholder.
H="$3:$2"
# B's body is C's head up to the value and the value's first 24 bytes: a
# proxy that drops A's framing hands the upstream C's bytes, value
# substituted, as B's body, and the echo of B carries them back.
P="GET /c HTTP/1.1\r\nHost: $H\r\nAuthorization: Bearer "
plen=$(printf "$P" | wc -c)
B="POST /smuggled HTTP/1.1\r\nHost: $H\r\nContent-Length: $((plen + 24))\r\n\r\n"
blen=$(printf "$B" | wc -c)
A="POST /a HTTP/1.1\r\nHost: $H\r\nConnection: content-length\r\nContent-Length: $blen\r\n\r\n$B"
C="$P$ANTHROPIC_API_KEY\r\n\r\n"
{ printf "$A"; sleep 2; printf "$C"; sleep 4; } |
    timeout 30 openssl s_client -quiet -proxy "192.168.5.2:$1" -connect "$H" \
    -servername "$3" -CAfile /etc/ssl/certs/ca-certificates.crt 2>&1
exit 0
SH
cat > "$T/plain.sh" <<'SH'
# The control, and a placeholder in a header that is not a credential's.
H="$3:$2"
R="GET /echo HTTP/1.1\r\nHost: $H\r\nAuthorization: Bearer $ANTHROPIC_API_KEY\r\nConnection: close\r\n\r\n"
if [ "$4" = reqid ]; then
	R="GET /echo HTTP/1.1\r\nHost: $H\r\nX-Request-Id: $ANTHROPIC_API_KEY\r\nConnection: close\r\n\r\n"
fi
{ printf "$R"; sleep 4; } |
    timeout 30 openssl s_client -quiet -proxy "192.168.5.2:$1" -connect "$H" \
    -servername "$3" -CAfile /etc/ssl/certs/ca-certificates.crt 2>&1
exit 0
SH
in_guest() {	# in_guest SCRIPT ARGS...: the lane user runs it
	local s=$1
	shift
	ctl exec "$L" -- sh -c "$(cat "$T/$s")" sh "$@"
}

# ---- The control: a credential where it belongs ----
OUT=$(in_guest plain.sh "$PPORT" "$UPORT" "$HOST")
check_match "the control request is answered" "HTTP/1.1 200" "$OUT"
check "the upstream parsed it with the real value in Authorization" \
    python3 -c 'import json,sys
rs = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(not any(r["path"] == "/echo" and ("Authorization: Bearer " + sys.argv[2]) in r["headers"] for r in rs))' \
    "$T/seen.jsonl" "$KEY"
check_nomatch "its echo of the value reaches the guest redacted" "$KEY" "$OUT"
check_nomatch "and the placeholder never went upstream" "$PH" "$(cat "$T/seen.jsonl")"
check_match "the redaction is in the lane's events" "secret-redacted.*ANTHROPIC_API_KEY" "$(ctl events "$L")"

# ---- The smuggle ----
: > "$T/seen.jsonl"
OUT=$(in_guest smuggle.sh "$PPORT" "$UPORT" "$HOST")
echo "# guest saw: $(printf '%s' "$OUT" | tr '\r\n' '  ' | cut -c1-300)"
check_match "Connection naming Content-Length is refused with 400" "HTTP/1.1 400" "$OUT"
# The leak would carry the value's first 24 bytes: "sk-ant-api03-" and 11
# of its random digits.
PART=${KEY:13:11}
check_nomatch "the guest reads no part of the value in what came back" "$PART" "$OUT"
check_eq "the upstream parsed no request of the attempt" "" "$(cat "$T/seen.jsonl")"
check_match "the refusal is recorded in the lane's events" \
    "proxy-deny.*Connection" "$(ctl events "$L")"

# ---- A placeholder in a header that is not a credential's ----
: > "$T/seen.jsonl"
OUT=$(in_guest plain.sh "$PPORT" "$UPORT" "$HOST" reqid)
check_match "a placeholder in X-Request-Id is refused with 403" "HTTP/1.1 403" "$OUT"
check_nomatch "and the value is not in the answer" "$KEY" "$OUT"
check_eq "nothing of it reached the upstream" "" "$(cat "$T/seen.jsonl")"
check_match "it is recorded" "secret-refused.*ANTHROPIC_API_KEY" "$(ctl events "$L")"

ctl rm "$L" >/dev/null
check_eq "nor the daemon's log holds the value" "" "$(grep -aF -e "$KEY" "$LOG")"
