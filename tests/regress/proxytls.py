"""The lane proxy's TLS interception and secrets, on loopback (issue 17).

al-proxy-harness runs one lane proxy with secrets and a lane CA. Loopback
TLS upstreams with certificates of their own test CA (made here with
openssl(1)) stand in for api.anthropic.com: the harness trusts that CA
(--upstream-ca, a test-only override) and resolves the test names to
127.0.0.1 (--trust). Clients trust the lane CA alone (--ca-out), strictly.
Each check prints one TAP line.
"""
import base64
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tlsup import Upstream, make_certs  # noqa: E402
import proxyharness  # noqa: E402

HARNESS = sys.argv[1]
# Upper bounds on waits for an answer: generous, since the ASan build runs
# on a loaded machine; the idle time the deadlines are told from is 300 s.
WAIT = 30
n = 0
failed = 0


def uncaught(kind, value, tb):
    """An exception is a failure with its reason, not a silent exit."""
    import traceback
    for line in traceback.format_exception(kind, value, tb):
        sys.stdout.write("# " + line.replace("\n", "\n# ").rstrip("# ") + "\n")
    print("not ok %d - uncaught %s: %s" % (n + 1, kind.__name__, value), flush=True)
    sys.exit(1)


sys.excepthook = uncaught


def report(ok, what):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what), flush=True)


TMP = tempfile.mkdtemp(prefix="al-ptls.")
PH = "AGENTLANE_PH_" + "a1b2c3d4e5f60718293a4b5c6d7e8f90"
PH_B = "AGENTLANE_PH_" + "ffeeddccbbaa99887766554433221100"
VALUE = "sk-ant-REAL-value-0123456789"
VALUE_B = "ghp_REALtokenB0123456789"


make_certs(TMP)
GOOD = Upstream(TMP, "good")
SELF = Upstream(TMP, "self")
WRONG = Upstream(TMP, "wrongname")
PLAIN = Upstream(TMP, None, tls=False)
PORTS = ",".join(str(u.port) for u in (GOOD, SELF, WRONG, PLAIN))
LANE_CA = os.path.join(TMP, "lane-ca.pem")
EXITS = []      # each harness's exit status: a sanitizer report is not 0


class Harness(proxyharness.Harness):
    """A harness with two secrets, the test CA trusted upstream, and the
    test names resolved to loopback."""

    def __init__(self, *args):
        super().__init__(
            HARNESS, "--connect-ports", PORTS, "--http-ports", PORTS,
            "--upstream-ca", os.path.join(TMP, "ca.pem"), "--ca-out", LANE_CA,
            "--trust", "api.anthropic.test=127.0.0.1",
            "--trust", "b.anthropic.test=127.0.0.1",
            "--trust", "other.test=127.0.0.1", "--allow", "other.test",
            "--trust", "open.test=127.0.0.1",
            "--secret", "ANTHROPIC_API_KEY=%s=%s@*.anthropic.test" % (PH, VALUE),
            "--secret", "GH_TOKEN=%s=%s@github.test" % (PH_B, VALUE_B), *args)

    def connect(self, host, port):
        """CONNECT; returns (socket, status line)."""
        c = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)
        c.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s\r\n\r\n" % (host.encode(), port, host.encode()))
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(1)
            if not d:
                break
            buf += d
        return c, buf.split(b"\r\n", 1)[0].decode()

    def tls(self, host="api.anthropic.test", port=None, sni=None, strict=True):
        """An intercepted connection as a guest makes it, trusting the lane
        CA only; returns the TLS socket."""
        c, st = self.connect(host, port or GOOD.port)
        if not st.startswith("HTTP/1.1 200"):
            c.close()
            raise OSError("CONNECT: " + st)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if strict:
            ctx.load_verify_locations(LANE_CA)
            ctx.verify_flags |= ssl.VERIFY_X509_STRICT
        else:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        t = ctx.wrap_socket(c, server_hostname=sni if sni is not None else host)
        t.settimeout(WAIT)
        return t

    def close(self):
        rc = super().close()
        EXITS.append(rc)
        return rc


def response(t):
    """Reads one response with a Content-Length body: (status line, body)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = t.recv(4096)
        if not d:
            return "", b""
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for l in lines[1:]:
        k, v = l.split(":", 1)
        if k.strip().lower() == "content-length":
            length = int(v)
    while len(rest) < length:
        d = t.recv(4096)
        if not d:
            break
        rest += d
    return lines[0], rest[:length]


def code(status):
    parts = status.split()
    return parts[1] if len(parts) > 1 else ""


def req(path="/", headers=(), body=None, host="api.anthropic.test", extra=b""):
    h = b"GET %s HTTP/1.1\r\nHost: %s\r\n" % (path.encode(), host.encode())
    if body is not None:
        h = b"POST" + h[3:] + b"Content-Length: %d\r\n" % len(body)
    for k, v in headers:
        h += b"%s: %s\r\n" % (k.encode(), v.encode())
    return h + extra + b"\r\n" + (body or b"")


h = Harness()

# ---- The lane CA's leaf, trusted strictly, and ALPN ----------------------
t = h.tls()
cert = t.getpeercert()
report(("DNS", "api.anthropic.test") in cert.get("subjectAltName", ()) and
       "Agent Lane CA" in str(cert.get("issuer")),
       "a client that trusts only the lane CA (strict) gets a leaf for the host (%s)" %
       (cert.get("subjectAltName"),))
report(t.selected_alpn_protocol() == "http/1.1",
       "ALPN to the guest is http/1.1 (offered h2 too): %s" % t.selected_alpn_protocol())

# ---- Replacement: x-api-key, Bearer, Basic ------------------------------
t.sendall(req("/v1/messages", [("x-api-key", PH)]))
st, body = response(t)
hd, _ = GOOD.last()
report(code(st) == "200" and hd.get("x-api-key") == [VALUE],
       "x-api-key: placeholder is replaced; the upstream sees the real value (%s)" % st)
report(VALUE.encode() not in body, "and the guest's response does not hold it")
report(GOOD.alpn and GOOD.alpn[-1] == "http/1.1",
       "ALPN upstream is http/1.1 only (the upstream offered h2 first): %s" % GOOD.alpn[-1:])
report(h.wait_event("secret-use secret ANTHROPIC_API_KEY used for api.anthropic.test") is not None,
       "the use is recorded, by name")
t.sendall(req("/", [("Authorization", "Bearer " + PH)]))
st, _ = response(t)
hd, _ = GOOD.last()
report(code(st) == "200" and hd.get("authorization") == ["Bearer " + VALUE],
       "Authorization: Bearer placeholder is replaced (keep-alive request 2)")
basic = base64.b64encode(("x-access-token:" + PH).encode()).decode()
t.sendall(req("/", [("Authorization", "Basic " + basic)]))
st, _ = response(t)
hd, _ = GOOD.last()
got = base64.b64decode(hd.get("authorization", ["Basic "])[0][6:]).decode()
report(code(st) == "200" and got == "x-access-token:" + VALUE,
       "the password of a decoded Authorization: Basic is replaced (%s)" % got.split(":")[0])
report(h.count("secret-use") == 1, "one use record per connection and secret (%d)" % h.count("secret-use"))

# ---- Never elsewhere: request line, non-whole credentials, bodies -------
t.sendall(req("/q?key=" + PH, [("x-api-key", "prefix-" + PH)],
              body=b'{"key": "%s"}' % PH.encode()))
st, _ = response(t)
hd, bd = GOOD.last()
report(code(st) == "200" and PH in hd["_line"] and hd.get("x-api-key") == ["prefix-" + PH]
       and bd == b'{"key": "%s"}' % PH.encode(),
       "the request line, non-whole credential values and bodies are never rewritten")
report(not any(VALUE in str(r) for r in GOOD.requests[-1:]), "no value went anywhere there")

# ---- Framing: pipelined keep-alive, chunked bodies, 100 Continue, SSE ----
before = len(GOOD.requests)
t.sendall(req("/p1", [("x-api-key", PH)]) + req("/p2", [("x-api-key", PH)]))
s1, _ = response(t)
s2, _ = response(t)
report(code(s1) == "200" and code(s2) == "200" and len(GOOD.requests) == before + 2 and
       [r[0].get("x-api-key") for r in GOOD.requests[-2:]] == [[VALUE], [VALUE]],
       "two pipelined requests in one write are both relayed and replaced")
chunks = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n"
t.sendall(b"POST /chunked HTTP/1.1\r\nHost: api.anthropic.test\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks)
st, _ = response(t)
hd, bd = GOOD.last()
report(code(st) == "200" and bd == b"hello, world", "a chunked request body is relayed whole (%r)" % bd)
t.sendall(req("/after-chunked"))
st, _ = response(t)
report(code(st) == "200" and GOOD.last()[0]["_line"].startswith("GET /after-chunked"),
       "and the request after it is found (keep-alive)")
t.sendall(b"POST /expect HTTP/1.1\r\nHost: api.anthropic.test\r\nContent-Length: 4\r\n"
          b"Expect: 100-continue\r\n\r\n")
buf = b""
while b"\r\n\r\n" not in buf:
    buf += t.recv(1)
report(buf.startswith(b"HTTP/1.1 100 Continue"), "100 Continue is relayed before the body (%r)" % buf[:25])
t.sendall(b"body")
st, _ = response(t)
report(code(st) == "200" and GOOD.last()[1] == b"body", "then the body and the final response")
t.sendall(req("/stream"))
buf = b""
while b"data: first" not in buf:
    d = t.recv(4096)
    if not d:
        break
    buf += d
report(b"data: first" in buf, "a streamed response's first event arrives before the stream ends")
GOOD.go.set()
while not buf.endswith(b"0\r\n\r\n"):
    d = t.recv(4096)
    if not d:
        break
    buf += d
report(b"data: second" in buf, "and the rest follows (server-sent events, unbuffered)")
t.close()

# ---- A placeholder split across two TCP writes --------------------------
t = h.tls()
whole = req("/split", [("x-api-key", PH)])
cut = whole.index(PH.encode()) + 10
t.sendall(whole[:cut])
time.sleep(0.2)     # two reads on the proxy's side, not one
t.sendall(whole[cut:])
st, _ = response(t)
report(code(st) == "200" and GOOD.last()[0].get("x-api-key") == [VALUE],
       "a placeholder split across two TCP writes is still replaced")
t.close()

# ---- Refusals: the placeholder to a host that is not its secret's -------
t = h.tls()
t.sendall(req("/", [("Authorization", "Bearer " + PH_B)]))
st, body = response(t)
report(code(st) == "403", "GH_TOKEN's placeholder in a header to api.anthropic.test gets 403 (%s)" % st)
report(h.wait_event("secret-refused secret GH_TOKEN sent to api.anthropic.test: refused") is not None,
       "and \"secret GH_TOKEN sent to api.anthropic.test: refused\" is recorded")
t.close()
c = socket.create_connection(("127.0.0.1", h.port), timeout=WAIT)
c.sendall(b"GET http://other.test:%d/x HTTP/1.1\r\nx-api-key: %s\r\n\r\n" % (PLAIN.port, PH.encode()))
st, _ = response(c)
report(code(st) == "403" and h.wait_event("secret ANTHROPIC_API_KEY sent to other.test: refused"),
       "plain HTTP to an unlisted host with the placeholder in a header: 403, recorded (%s)" % st)
c.close()
c = socket.create_connection(("127.0.0.1", h.port), timeout=WAIT)
c.sendall(b"GET http://other.test:%d/?k=%s HTTP/1.1\r\n\r\n" % (PLAIN.port, PH.encode()))
st, _ = response(c)
report(code(st) == "403", "in the request line: 403 too (%s)" % st)
c.close()
c = socket.create_connection(("127.0.0.1", h.port), timeout=WAIT)
basic = base64.b64encode(("u:" + PH).encode()).decode()
c.sendall(b"GET http://other.test:%d/ HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n" % (PLAIN.port, basic.encode()))
st, _ = response(c)
report(code(st) == "403", "inside a Basic credential: 403 too (%s)" % st)
c.close()
n_before = len(PLAIN.requests)
body = b'{"history": "...%s..."}' % PH.encode()
c = socket.create_connection(("127.0.0.1", h.port), timeout=WAIT)
half = len(body) // 2 + 5
c.sendall(b"POST http://other.test:%d/b HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (PLAIN.port, len(body)) + body[:half])
time.sleep(0.2)
c.sendall(body[half:])
st, _ = response(c)
report(code(st) == "200" and len(PLAIN.requests) == n_before + 1 and PLAIN.last()[1] == body,
       "in a body (split across writes) it passes unchanged (%s)" % st)
report(h.wait_event("secret-body secret ANTHROPIC_API_KEY seen in a request body to other.test: recorded") is not None,
       "and is recorded")
c.close()
c, st = h.connect("open.test", GOOD.port)
c.close()
report(code(st) == "403", "open.test is in no list: refused outside internet mode (%s)" % st)
h.close()

# ---- SNI, Host and the target must agree --------------------------------
h = Harness()
try:
    t = h.tls(sni="b.anthropic.test", strict=False)
    st, _ = response(t)
    t.close()
except (OSError, ssl.SSLError) as e:
    st = str(e)
report(code(st) == "421" and h.wait_event("TLS server name b.anthropic.test is not the CONNECT target"),
       "SNI other than the CONNECT target: refused (%s)" % st)
t = h.tls()
t.sendall(req("/", [("x-api-key", PH)], host="b.anthropic.test"))
st, _ = response(t)
report(code(st) == "421" and h.wait_event("Host b.anthropic.test is not the CONNECT target"),
       "Host other than the CONNECT target: refused, even for a listed host (%s)" % st)
t.close()
n_before = len(GOOD.requests)
t = h.tls()
t.sendall(b"GET / HTTP/1.1\r\nHost: api.anthropic.test:1\r\nx-api-key: %s\r\n\r\n" % PH.encode())
st, _ = response(t)
report(code(st) == "421" and len(GOOD.requests) == n_before,
       "Host with another port: refused, nothing sent upstream (%s)" % st)
t.close()

# ---- The upstream must verify: bad certificate, wrong name --------------
for up, why in ((SELF, "a self-signed certificate"), (WRONG, "a certificate for another name")):
    c, st = h.connect("api.anthropic.test", up.port)
    c.close()
    report(code(st) == "502" and h.wait_event("api.anthropic.test:%d: upstream TLS refused: certificate not verified" % up.port),
           "an upstream with %s is refused, never replaced (%s)" % (why, st))
h.close()

# ---- Bounds: head size, head deadline, certificate cache ----------------
h = Harness("--max-header", "2048", "--head-ms", "1000", "--max-leaves", "1")
t = h.tls()
t.sendall(b"GET / HTTP/1.1\r\nHost: api.anthropic.test\r\nX-Pad: " + b"a" * 4000)
st, _ = response(t)
report(code(st) == "431" and h.wait_event("request head over 2048 bytes"),
       "a head over its bound inside TLS: 431, recorded (%s)" % st)
t.close()
t = h.tls()
t.sendall(req("/first"))
response(t)
t0 = time.time()
t.sendall(b"GET / HTTP/1.1\r\n")
try:
    for _ in range(10):
        t.sendall(b"X")       # dripping: never extends the deadline
        time.sleep(0.15)
except OSError:
    pass
st, _ = response(t)
report(code(st) == "408" and time.time() - t0 < 10 and h.wait_event("request head not complete within 1000 ms"),
       "a slow head of a keep-alive request: 408 at its deadline, recorded (%s)" % st)
t.close()
t = h.tls()
t0 = time.time()
st, _ = response(t)      # nothing sent after the handshake
report(code(st) == "408" and time.time() - t0 < 10,
       "a tunnel whose first head never comes: 408 at the head deadline (%s)" % st)
t.close()
c, st = h.connect("b.anthropic.test", GOOD.port)
c.close()
report(code(st) == "503" and h.wait_event("the lane's certificate cache is full"),
       "a leaf over the cache's bound (max_leaves=1): 503, recorded (%s)" % st)
t = h.tls()
t.sendall(req("/"))
report(code(response(t)[0]) == "200", "the cached host is still served")
t.close()
h.close()

# ---- TRACE, and framings with two readings ------------------------------
h = Harness()
for bad, want in ((b"TRACE / HTTP/1.1\r\nHost: api.anthropic.test\r\n\r\n", "405"),
                  (b"POST / HTTP/1.1\r\nHost: api.anthropic.test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc", "400"),
                  (b"POST / HTTP/1.1\r\nHost: api.anthropic.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "501"),
                  (b"POST / HTTP/1.1\r\nHost: api.anthropic.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "400"),
                  (b"GET / HTTP/1.1\r\nHost: api.anthropic.test\r\n" + b"X-F: 1\r\n" * 100 + b"\r\n", "431")):
    t = h.tls()
    t.sendall(bad)
    st, _ = response(t)
    report(code(st) == want, "%r... is answered %s (%s)" % (bad[:28], want, st))
    t.close()
h.close()

# ---- internet mode: hosts without a secret are opaque tunnels -----------
h = Harness("--internet")
c, st = h.connect("open.test", GOOD.port)
ctx = ssl.create_default_context(cafile=os.path.join(TMP, "ca.pem"))
t = ctx.wrap_socket(c, server_hostname="open.test")
issuer = str(t.getpeercert().get("issuer"))
t.sendall(req("/tunnel", [("x-api-key", PH)], host="open.test"))
st2, _ = response(t)
report(code(st) == "200" and "Test Upstream CA" in issuer and GOOD.last()[0].get("x-api-key") == [PH],
       "internet mode: a host without a secret is an opaque tunnel (upstream's own certificate; nothing replaced)")
t.close()
h.close()

# ---- One view of every request (issue 29) --------------------------------


class RawUpstream:
    """A loopback TLS server with the good certificate whose connections
    go to handler(sock, raws), raws the list of raw bytes per connection;
    for what Upstream parses away (framing, trailers) and for responses of
    the test's own making."""

    def __init__(self, handler):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(os.path.join(TMP, "good.pem"), os.path.join(TMP, "good.key"))
        self.handler = handler
        self.raws = []
        self.done = threading.Event()
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.port = self.s.getsockname()[1]
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            c, _ = self.s.accept()
            threading.Thread(target=self._one, args=(c,), daemon=True).start()

    def _one(self, c):
        try:
            t = self.ctx.wrap_socket(c, server_side=True)
            raw = bytearray()
            self.raws.append(raw)
            self.handler(t, raw)
            t.close()
        except (OSError, ssl.SSLError):
            pass
        self.done.set()


def read_until(t, raw, marker):
    while marker not in raw:
        d = t.recv(65536)
        if not d:
            return False
        raw += d
    return True


def answer_after(marker, extra=b""):
    def handler(t, raw):
        if read_until(t, raw, marker):
            t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + extra + b"\r\nok")
    return handler


RAW_CHUNKED = RawUpstream(answer_after(b"0\r\n\r\n"))
RAW_CL = RawUpstream(answer_after(b"tail!"))
RPORTS = ",".join(str(u.port) for u in (GOOD, SELF, WRONG, PLAIN, RAW_CHUNKED, RAW_CL))
LONG = "L" * 16000     # near SECRET_VALUE_MAX


class Custom(Harness):
    """A harness with the arguments given, and Harness's helpers."""

    def __init__(self, *args):
        proxyharness.Harness.__init__(self, HARNESS, *args)


def H2(*args):
    return Custom(
        "--connect-ports", RPORTS, "--http-ports", RPORTS,
        "--upstream-ca", os.path.join(TMP, "ca.pem"), "--ca-out", LANE_CA,
        "--trust", "api.anthropic.test=127.0.0.1", "--trust", "b.anthropic.test=127.0.0.1",
        "--trust", "other.test=127.0.0.1", "--allow", "other.test",
        "--secret", "ANTHROPIC_API_KEY=%s=%s@*.anthropic.test" % (PH, VALUE),
        "--secret", "GH_TOKEN=%s=%s@github.test" % (PH_B, VALUE_B),
        "--secret-header", "ANTHROPIC_API_KEY=X-Custom-Key", *args)


h = H2()
for hdr in (b"content-length", b"Transfer-Encoding", b"close, Host", b"trailer", b"x-api-key"):
    before = len(GOOD.requests)
    t = h.tls()
    t.sendall(b"POST / HTTP/1.1\r\nHost: api.anthropic.test\r\nConnection: %s\r\n"
              b"Content-Length: 40\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n" % hdr)
    st, _ = response(t)
    t.close()
    report(code(st) == "400" and len(GOOD.requests) == before and
           h.wait_event("proxy-deny CONNECT api.anthropic.test:%d: bad request: Connection names" % GOOD.port),
           "intercepted: Connection: %s is refused 400, recorded, nothing upstream (%s)" % (hdr.decode(), st))
before = len(PLAIN.requests)
c = socket.create_connection(("127.0.0.1", h.port), timeout=WAIT)
c.sendall(b"POST http://other.test:%d/ HTTP/1.1\r\nConnection: content-length\r\nContent-Length: 60\r\n\r\n"
          b"GET /smuggled HTTP/1.1\r\nHost: evil.example\r\nx-api-key: %s\r\n\r\n" % (PLAIN.port, PH.encode()))
st, _ = response(c)
c.close()
report(code(st) == "400" and len(PLAIN.requests) == before and
       h.wait_event("proxy-deny bad request: Connection names a field the proxy frames or routes by"),
       "plain http://: Connection: content-length is refused 400, recorded, nothing upstream (%s)" % st)

# Content-Length normalised; chunked bodies framed by the proxy.
t = h.tls(port=RAW_CL.port)
t.sendall(b"POST /cl HTTP/1.1\r\nHost: api.anthropic.test\r\nContent-Length: 005\r\n"
          b"content-length: 5\r\nConnection: close\r\n\r\ntail!")
st, _ = response(t)
t.close()
raw = bytes(RAW_CL.raws[-1]) if RAW_CL.raws else b""
head = raw.split(b"\r\n\r\n", 1)[0].lower()
report(code(st) == "200" and head.count(b"content-length") == 1 and
       b"\r\ncontent-length: 5\r\n" in head + b"\r\n" and raw.endswith(b"\r\n\r\ntail!"),
       "two equal Content-Lengths (005, 5) go upstream as one \"Content-Length: 5\" (%r)" % head[-60:])
t = h.tls(port=RAW_CHUNKED.port)
t.sendall(b"POST /ch HTTP/1.1\r\nHost: api.anthropic.test\r\nTransfer-Encoding: chunked\r\n"
          b"Connection: close\r\n\r\n5;name=value\r\nhello\r\n0007\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n")
st, _ = response(t)
t.close()
raw = bytes(RAW_CHUNKED.raws[-1]) if RAW_CHUNKED.raws else b""
head, body = (raw.split(b"\r\n\r\n", 1) + [b""])[:2]
report(code(st) == "200" and head.lower().count(b"transfer-encoding: chunked") == 1 and
       body == b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n",
       "a chunked body goes upstream in the proxy's own chunks, no extensions, trailers dropped (%r)" % body)

# Values only in credential headers.
t = h.tls()
t.sendall(req("/", [("X-Request-Id", PH)]))
st, _ = response(t)
t.close()
report(code(st) == "403" and h.wait_event(
    "secret-refused secret ANTHROPIC_API_KEY in header X-Request-Id to api.anthropic.test: "
    "refused (not a credential header)"),
    "the placeholder in X-Request-Id to its own host: 403, recorded with the header (%s)" % st)
for hdr in (("Cookie", "k=" + PH), ("Origin", PH)):
    t = h.tls()
    t.sendall(req("/", [hdr]))
    st, _ = response(t)
    t.close()
    report(code(st) == "403", "and in %s: 403 (%s)" % (hdr[0], st))
t = h.tls()
t.sendall(req("/own", [("X-Custom-Key", PH)]))
st, _ = response(t)
report(code(st) == "200" and GOOD.last()[0].get("x-custom-key") == [VALUE],
       "a secret's own credential header (--secret-header X-Custom-Key) carries the value")
t.sendall(req("/twice", [("x-api-key", PH), ("X-API-Key", PH)]))
st, _ = response(t)
t.close()
report(code(st) == "400" and h.wait_event("a credential header sent twice"),
       "the same credential header twice: 400, recorded (%s)" % st)

# The tripwire: another secret's placeholder in base64 of any shape.
b64 = base64.b64encode(PH_B.encode()).decode()
for form, what in ((b64.rstrip("="), "unpadded"),
                   (base64.urlsafe_b64encode(b"u:" + PH_B.encode()).decode(), "URL-safe"),
                   (b64[:20] + " " + b64[20:], "split by a blank"),
                   ("Token " + base64.b64encode(b"xy" + PH_B.encode()).decode(), "behind a scheme")):
    before = len(GOOD.requests)
    t = h.tls()
    t.sendall(req("/", [("X-Data", form)]))
    st, _ = response(t)
    t.close()
    report(code(st) == "403" and len(GOOD.requests) == before,
           "GH_TOKEN's placeholder in %s base64 in X-Data to api.anthropic.test: 403 (%s)" % (what, st))
report(h.wait_event("secret GH_TOKEN sent to api.anthropic.test: refused") is not None,
       "and recorded")

# Trailers: a placeholder there is refused; the upstream never gets the end.
before = len(GOOD.requests)
t = h.tls()
t.sendall(b"POST /tr HTTP/1.1\r\nHost: api.anthropic.test\r\nTransfer-Encoding: chunked\r\n\r\n"
          b"2\r\nhi\r\n0\r\nX-Key: %s\r\n\r\n" % PH.encode())
st, _ = response(t)
t.close()
report(code(st) == "403" and len(GOOD.requests) == before and
       h.wait_event("secret ANTHROPIC_API_KEY in a chunk trailer to api.anthropic.test: refused"),
       "a placeholder in a chunk trailer: 403, recorded, no complete request upstream (%s)" % st)
h.close()

# No length oracle: only what the guest sent counts against the head bound;
# the grown head has none (the old one, 256 KiB, told a value's length).
h = Custom(
    "--connect-ports", PORTS, "--upstream-ca", os.path.join(TMP, "ca.pem"),
    "--ca-out", LANE_CA, "--trust", "api.anthropic.test=127.0.0.1", "--max-header", "270000",
    "--secret", "LONG_KEY=%s=%s@api.anthropic.test" % (PH, LONG))
t = h.tls()
pad = 262144 - 64 - len(req("/", [("x-api-key", PH), ("X-Pad", "")]))
t.sendall(req("/", [("x-api-key", PH), ("X-Pad", "p" * pad)]))
st, _ = response(t)
t.close()
report(code(st) == "200" and GOOD.last()[0].get("x-api-key") == [LONG],
       "a head just under the bound whose value makes it grow past it is sent (%s)" % st)
h.close()

# ---- Responses: values redacted, unscannable bodies refused, streams flow ---
SEEN_AE = []
SSE_GO = threading.Event()


def echo(t, raw):
    """Echoes the request's x-api-key in a header and in the body, the
    body in two writes (or chunks), one request per connection."""
    if not read_until(t, raw, b"\r\n\r\n"):
        return
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    fields = dict((l.split(":", 1)[0].strip().lower(), l.split(":", 1)[1].strip())
                  for l in head[1:])
    SEEN_AE.append(fields.get("accept-encoding"))
    v = fields.get("x-api-key", "").encode()
    body = b"echo:" + v + b":end"
    cut = 5 + len(v) // 2
    if head[0].split()[1] == "/sse":
        ev = b"data: " + v + b"\n\n"
        t.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(ev), ev))
        # The rest only once the guest saw the first event: a proxy that
        # buffers the response never gets there.
        SSE_GO.wait(WAIT)
        t.sendall(b"5\r\nlast\n\r\n0\r\n\r\n")
    elif head[0].split()[1] == "/gzip":
        t.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00")
    elif head[0].split()[1] == "/chunked":
        t.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (cut, body[:cut]))
        t.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body) - cut, body[cut:]))
    else:
        t.sendall(b"HTTP/1.1 200 OK\r\nX-Echo: %s\r\nContent-Length: %d\r\n\r\n%s" % (v, len(body), body[:cut]))
        t.sendall(body[cut:])


def chunked_body(t):
    """Reads one chunked response: (status line, head, data)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = t.recv(4096)
        if not d:
            return "", b"", b""
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    data = b""
    while True:
        while b"\r\n" not in rest:
            rest += t.recv(4096)
        size, rest = rest.split(b"\r\n", 1)
        size = int(size, 16)
        while len(rest) < size + 2:
            rest += t.recv(4096)
        data += rest[:size]
        rest = rest[size + 2:]
        if size == 0:
            return head.split(b"\r\n")[0].decode(), head, data


ECHO = RawUpstream(echo)
h = Custom(
    "--connect-ports", ",".join(str(u.port) for u in (GOOD, ECHO)),
    "--upstream-ca", os.path.join(TMP, "ca.pem"), "--ca-out", LANE_CA,
    "--trust", "api.anthropic.test=127.0.0.1",
    "--secret", "ANTHROPIC_API_KEY=%s=%s@*.anthropic.test" % (PH, VALUE))
t = h.tls(port=ECHO.port)
t.sendall(req("/echo", [("x-api-key", PH), ("Accept-Encoding", "gzip, br")]))
buf = b""
while b":end" not in buf:
    d = t.recv(4096)
    if not d:
        break
    buf += d
t.close()
head, body = (buf.split(b"\r\n\r\n", 1) + [b""])[:2]
echoed = [l[8:] for l in head.split(b"\r\n") if l.lower().startswith(b"x-echo: ")]
report(VALUE.encode() not in buf and echoed and len(echoed[0]) == len(VALUE) and
       len(set(echoed[0])) == 1 and body.startswith(b"echo:") and
       len(body) == len(b"echo:" + VALUE.encode() + b":end") and len(set(body[5:5 + len(VALUE)])) == 1,
       "a value echoed in a response header and body (split across writes) comes back "
       "redacted, same length (%r)" % body)
report(h.wait_event("secret-redacted secret ANTHROPIC_API_KEY redacted in a response from "
                    "api.anthropic.test (2 times)") is not None,
       "and the redaction is recorded, with its count")
report(SEEN_AE[-1:] == ["identity"],
       "the upstream was asked for Accept-Encoding: identity, not the guest's gzip (%s)" % SEEN_AE[-1:])
t = h.tls(port=ECHO.port)
t.sendall(req("/chunked", [("x-api-key", PH)]))
st, _, data = chunked_body(t)
t.close()
report(code(st) == "200" and VALUE.encode() not in data and len(data) == len(VALUE) + 9,
       "a value split across two chunks of a chunked response is redacted (%r)" % data)
t = h.tls(port=ECHO.port)
t.sendall(req("/sse", [("x-api-key", PH)]))
buf = b""
while b"data: " not in buf or not buf.endswith(b"\n\n\r\n"):
    d = t.recv(4096)
    if not d:
        break
    buf += d
first = buf
SSE_GO.set()
while not buf.endswith(b"0\r\n\r\n"):
    d = t.recv(4096)
    if not d:
        break
    buf += d
t.close()
report(b"data: " in first and VALUE.encode() not in buf and b"last" not in first and b"last" in buf,
       "a streamed (SSE) response flows unbuffered, its value redacted in the first event (%r)"
       % first[-50:])
t = h.tls(port=ECHO.port)
t.sendall(req("/gzip", [("x-api-key", PH)]))
st, _ = response(t)
t.close()
report(code(st) == "502" and h.wait_event("response refused (unscannable)") is not None,
       "a compressed response is refused (502) and recorded, never passed on (%s)" % st)
h.close()

report(EXITS and all(rc == 0 for rc in EXITS),
       "every harness exited cleanly, no sanitizer report (%s)" % EXITS)

# ---- The overrides are the test build's only ------------------------------
def holds(path, text):
    try:
        with open(path, "rb") as f:
            return text in f.read()
    except OSError:
        return False


report(not holds(sys.argv[2], b"AGENT_LANED_TEST_TRUST") and
       not holds(sys.argv[2], b"AGENT_LANED_TEST_RESOLVE"),
       "agent-laned itself has no trust store or resolver override")
report(holds(sys.argv[3], b"AGENT_LANED_TEST_TRUST"),
       "the test daemon (agent-laned-test) has the trust store override")

print("# %d checks, %d failed" % (n, failed))
sys.exit(1 if failed else 0)
