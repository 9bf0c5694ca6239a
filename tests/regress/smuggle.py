"""The differential request-smuggling suite (issue 29): every stream of
smuggle_corpus.py goes through the lane proxy (al-proxy-harness), plain
(absolute-URI http://) and intercepted (CONNECT, TLS with the lane CA), to
two independent upstream parsers: Node's http server (llhttp,
smuggle_node.js) and Python's h11 (smuggle_h11.py). Each upstream records
the requests it saw as JSON lines. For every (case, mode, upstream) four
TAP lines:
  1. boundaries: the upstream saw exactly the requests the proxy counted
     ("requests N" before and after), in order, with no parse error, no
     cut-off body and no unparsed bytes, unless the proxy refused;
  2. value: the secret's value (any 8 bytes of it) is in no body, trailer
     or header the upstream saw but Authorization, and nowhere in plain mode;
  3. response: no byte run of the value reaches the guest;
  4. verdict: refused (by the proxy, nothing upstream) or passed, where the
     corpus says which.
Each case has a connection of its own. An intercepted case ends with a
follow-up head carrying "Authorization: Bearer PLACEHOLDER" and
"Connection: close", as the issue's attack does; plain requests end the
connection after one request anyway. So a run ends when the proxy closes
the guest's connection; WAIT bounds it when it does not (an upstream
waiting for a body the proxy thinks ended). Then the suite waits for the
upstream's "close" record of every connection it accepted, and only then
asks the harness for its count. SMUGGLE_ONLY=NAME runs the cases whose
name holds NAME; SMUGGLE_TIME=1 prints each run's time.

    smuggle.py HARNESS
"""
import atexit
import json
import re
import shutil
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tlsup import make_certs  # noqa: E402
import proxyharness  # noqa: E402
import smuggle_corpus  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = sys.argv[1]
HOST = "api.anthropic.test"
PH = "AGENTLANE_PH_" + "5a4b3c2d1e0f99887766554433221100"
VALUE = "sk-SMUGGLE-5ecr3tVALUE-0123456789abcdef"
# A run the proxy does not end by itself is cut off after WAIT seconds
# (only a run where the two sides disagree waits that long; generous for
# the ASan build on a loaded machine). A next write waits at most HOLD for
# the answers to what went before: sending it sooner changes no verdict.
WAIT = float(os.environ.get("SMUGGLE_WAIT", "8"))
HOLD = min(WAIT / 3, 1.0)
FOLLOW_UP = (b"GET /final HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
             b"Connection: close\r\n\r\n" % (HOST.encode(), PH.encode()))
REFUSALS = (400, 403, 405, 413, 431, 501)
# The guest's connection broke (reset, broken pipe, TLS error): a proxy that
# refuses and closes while the guest's next bytes are unread resets it, and
# its answer may be lost.
RESET = False
n = 0
failed = 0


def uncaught(kind, value, tb):
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


def windows(s, k=8):
    """Every k-byte run of s: a part of the value counts as the value."""
    b = s.encode() if isinstance(s, str) else s
    return {b[i:i + k] for i in range(len(b) - k + 1)}


VALUE_RUNS = windows(VALUE)


def leaks(data):
    b = data.encode("latin-1") if isinstance(data, str) else data
    return any(w in b for w in VALUE_RUNS)


class Upstream:
    """One upstream process and the records it printed, as they come."""

    def __init__(self, name, argv):
        self.name = name
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.recs = []
        self.cond = threading.Condition()
        first = json.loads(self.p.stdout.readline())
        assert first["ev"] == "listen", first
        self.port = first["port"]
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            with self.cond:
                self.recs.append(json.loads(line))
                self.cond.notify_all()

    def mark(self):
        with self.cond:
            return len(self.recs)

    def since(self, mark):
        with self.cond:
            return list(self.recs[mark:])

    def wait(self, pred, timeout):
        with self.cond:
            return self.cond.wait_for(lambda: pred(self.recs), timeout)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


class Harness(proxyharness.Harness):
    """The proxy, its records, and "requests N" on demand."""

    def __init__(self, *args):
        self.cond = threading.Condition()
        self.counts = []
        super().__init__(HARNESS, *args)

    def _read(self):
        for line in self.p.stdout:
            line = line.rstrip("\n")
            with self.cond:
                if line.startswith("requests "):
                    self.counts.append(int(line.split()[1]))
                else:
                    self.events.append(line)
                self.cond.notify_all()

    def requests(self):
        with self.cond:
            k = len(self.counts)
        self.p.stdin.write("requests\n")
        self.p.stdin.flush()
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.counts) > k, 30):
                raise RuntimeError("the harness did not answer \"requests\"")
            return self.counts[k]

    def event_mark(self):
        with self.cond:
            return len(self.events)

    def events_since(self, m):
        with self.cond:
            return list(self.events[m:])


def guest_plain(h):
    return socket.create_connection(("127.0.0.1", h.port), timeout=WAIT)


def guest_tls(h, port, lane_ca):
    c = socket.create_connection(("127.0.0.1", h.port), timeout=WAIT)
    c.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
              (HOST.encode(), port, HOST.encode(), port))
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(1)
        if not d:
            break
        buf += d
    if not buf.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("CONNECT: %r" % buf[:60])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(lane_ca)
    # An EOF without close_notify raises: it may be a reset that lost data.
    t = ctx.wrap_socket(c, server_hostname=HOST, suppress_ragged_eofs=False)
    t.settimeout(WAIT)
    return t


def read_until(sock, deadline, stop=None):
    """What the guest gets until EOF, the deadline, or stop(buf)."""
    global RESET
    buf = b""
    eof = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or (stop is not None and stop(buf)):
            break
        sock.settimeout(left)
        try:
            d = sock.recv(65536)
        except (socket.timeout, TimeoutError):
            break
        except (OSError, ssl.SSLError):
            RESET = True
            eof = True
            break
        if not d:
            eof = True
            break
        buf += d
    return buf, eof


def responses(buf):
    """(status, from the upstream?) of each response in buf."""
    v = []
    while b"\r\n\r\n" in buf:
        hd, buf = buf.split(b"\r\n\r\n", 1)
        lines = hd.decode("latin-1").split("\r\n")
        parts = lines[0].split()
        if len(parts) < 2 or not parts[1].isdigit():
            break
        length, up = 0, False
        for ln in lines[1:]:
            k, _, val = ln.partition(":")
            if k.strip().lower() == "content-length" and val.strip().isdigit():
                length = int(val.strip())
            if k.strip().lower() == "x-upstream":
                up = True
        st = int(parts[1])
        if st >= 200:
            v.append((st, up))
            buf = buf[length:]
    return v


def visible(writes, prefix):
    """The targets of the requests a correct proxy forwards, in order: the
    request lines of the stream, but for those with "hidden" in them."""
    v = []
    for m in re.finditer(rb"(?:GET|POST|PUT|HEAD|DELETE|OPTIONS|PATCH) (\S+) HTTP/1\.[01]",
                         b"".join(writes)):
        if b"hidden" not in m.group(1):
            v.append(m.group(1).decode("latin-1")[len(prefix):])
    return v


def run(h, name, writes, mode, up, lane_ca):
    """One case through one mode to one upstream; returns what to judge."""
    prefix = ("http://%s:%d" % (HOST, up.port)) if mode == "plain" else ""
    writes = [w.replace(b"{T}", prefix.encode()) for w in writes]
    if mode == "tls":
        writes = writes + [FOLLOW_UP]
    want = visible(writes, prefix)
    global RESET
    RESET = False
    n0 = h.requests()
    um = up.mark()
    em = h.event_mark()
    c = guest_plain(h) if mode == "plain" else guest_tls(h, up.port, lane_ca)
    got = b""
    eof = False
    try:
        for i, w in enumerate(writes):
            if mode == "tls" and w is writes[-1]:
                # The follow-up once the case's own requests are answered
                # (or HOLD): a proxy that refused and closed would
                # otherwise reset the connection, and its answer with it.
                d, eof = read_until(c, time.monotonic() + HOLD,
                                    lambda b: len(responses(got + b)) >= len(want) - 1)
                got += d
                if eof:
                    break
            c.sendall(w)
            if b"Expect: 100-continue" in w and i + 1 < len(writes):
                # The body once someone answers the head (or HOLD).
                d, eof = read_until(c, time.monotonic() + HOLD,
                                    lambda b: b"\r\n\r\n" in b)
                got += d
                if eof:
                    break
    except (OSError, ssl.SSLError):
        RESET = True
    if not eof:
        d, eof = read_until(c, time.monotonic() + WAIT)
        got += d
    c.close()

    def settled(recs):
        r = recs[um:]
        acc = {x["conn"] for x in r if x["ev"] == "accept"}
        cl = {x["conn"] for x in r if x["ev"] == "close"}
        return acc <= cl
    up.wait(settled, 10)
    n1 = h.requests()
    # A head the proxy sent may still be on its way to the upstream (but a
    # refusal drops what was queued: then nothing more comes).
    if not any(not u and st >= 400 for st, u in responses(got)):
        up.wait(lambda recs: sum(1 for x in recs[um:] if x["ev"] == "head") >= n1 - n0, 3)
    if not settled(up.since(0)):
        up.wait(settled, 10)
    return {"writes": writes, "want": want, "proxy": n1 - n0, "recs": up.since(um),
            "got": got, "eof": eof, "events": h.events_since(em), "reset": RESET}


def judge(name, mode, up, expect, r):
    recs = r["recs"]
    heads = [x for x in recs if x["ev"] == "head"]
    reqs = [x for x in recs if x["ev"] == "req"]
    errors = [x for x in recs if x["ev"] == "error"]
    trailing = [x.get("trailing", "") for x in recs if x["ev"] == "close" and x.get("trailing")]
    resp = responses(r["got"])
    refused = [s for s, u in resp if not u and s >= 400]
    deny = [e for e in r["events"] if e.startswith(("proxy-deny", "secret-refused"))]
    if not refused and r["reset"] and deny:
        # The refusal's answer lost to the reset; the proxy recorded it.
        refused = ["reset"]
    targets = [x["target"] for x in heads]
    what = "%s [%s, %s]" % (name, mode, up)

    # 1. Boundaries.
    why = []
    # A refusal drops what the proxy had queued upstream: then the upstream
    # may have seen fewer than the proxy counted, never more or others.
    if len(heads) != r["proxy"] and not (refused and len(heads) < r["proxy"]):
        why.append("upstream saw %d requests, the proxy counted %d" % (len(heads), r["proxy"]))
    if targets != r["want"][:len(heads)] or len(heads) > r["proxy"]:
        why.append("upstream targets %s, expected %s" % (targets, r["want"][:r["proxy"]]))
    if not refused:
        if errors:
            why.append("upstream parse error: %s" % errors[0]["code"][:80])
        cut = [x["target"] for x in reqs if not x["complete"]]
        if cut:
            why.append("upstream still waiting for the body of %s" % cut)
        if trailing:
            why.append("upstream left %r unparsed" % trailing[0][:60])
    # No end, with nothing upstream on either count, is a proxy still
    # waiting for a head's end (a bare-LF head in plain mode): a note.
    note = ""
    if not r["eof"]:
        if heads or r["proxy"]:
            why.append("no end within %gs" % WAIT)
        else:
            note = " # no end within %gs, nothing forwarded" % WAIT
    report(not why, "%s: boundaries agree (%d requests)%s%s" %
           (what, r["proxy"], "; " + "; ".join(why) if why else "", note))

    # 2. Where the value went upstream.
    where = []
    for x in recs:
        if x["ev"] == "head":
            for k, v in x["headers"]:
                if leaks(v) and (mode == "plain" or k.lower() != "authorization"):
                    where.append("header %s of %s" % (k, x["target"]))
            if leaks(x["target"]):
                where.append("target")
        elif x["ev"] == "req":
            if leaks(x["body"]):
                where.append("body of %s" % x["target"])
            if any(leaks(v) for _, v in x["trailers"]):
                where.append("trailer of %s" % x["target"])
        elif x["ev"] in ("close", "error"):
            if leaks(x.get("trailing", "")) or leaks(x.get("code", "")):
                where.append("unparsed bytes")
    report(not where, "%s: the value is in no body or other header upstream%s" %
           (what, ": found in " + ", ".join(where) if where else ""))

    # 3. The guest's responses.
    report(not leaks(r["got"]), "%s: no byte run of the value reaches the guest%s" %
           (what, "" if not leaks(r["got"]) else " (it does: %d response bytes)" % len(r["got"])))

    # 4. The verdict.
    if isinstance(expect, dict):
        expect = expect.get(mode)
    if expect is None:
        return
    if expect == "refuse":
        # A body refused midway leaves its head upstream, never a request.
        done = [x for x in reqs if x["complete"]]
        ok = bool(refused) and refused[0] in REFUSALS + ("reset",) and not done
        got = "refused %s, %d complete upstream" % (refused, len(done))
    else:
        full = r["want"][:1] if mode == "plain" else r["want"][:-1]
        answered = [s for s, u in resp if u and s == 200]
        ok = not refused and targets[:len(full)] == full and len(answered) >= len(full)
        got = "%d of %d answered by the upstream, refused %s" % (len(answered), len(full),
                                                                  refused)
    report(ok, "%s: %s expected: %s%s" % (what, expect, got,
                                         " (%s)" % deny[0][:100] if deny and not ok else ""))


def main():
    tmp = tempfile.mkdtemp(prefix="al-smuggle.")
    atexit.register(shutil.rmtree, tmp, True)
    make_certs(tmp)
    cert, key = os.path.join(tmp, "good.pem"), os.path.join(tmp, "good.key")
    lane_ca = os.path.join(tmp, "lane-ca.pem")
    node = ["node", os.path.join(HERE, "smuggle_node.js")]
    h11 = [sys.executable, os.path.join(HERE, "smuggle_h11.py")]
    ups = {("plain", "node"): Upstream("node", node),
           ("plain", "h11"): Upstream("h11", h11),
           ("tls", "node"): Upstream("node", node + [cert, key]),
           ("tls", "h11"): Upstream("h11", h11 + [cert, key])}
    plain_ports = ",".join(str(ups["plain", u].port) for u in ("node", "h11"))
    tls_ports = ",".join(str(ups["tls", u].port) for u in ("node", "h11"))
    h = Harness("--allow", HOST, "--trust", "%s=127.0.0.1" % HOST,
                "--http-ports", plain_ports, "--connect-ports", tls_ports,
                "--secret", "SMUGGLE_KEY=%s=%s@%s" % (PH, VALUE, HOST),
                "--ca-out", lane_ca, "--upstream-ca", os.path.join(tmp, "ca.pem"))
    only = os.environ.get("SMUGGLE_ONLY")
    for case in smuggle_corpus.cases(HOST, PH):
        name, writes, expect = case[:3]
        if only and only not in name:
            continue
        for mode in case[3] if len(case) > 3 else ("plain", "tls"):
            for u in ("node", "h11"):
                t0 = time.monotonic()
                r = run(h, name, writes, mode, ups[mode, u], lane_ca)
                if os.environ.get("SMUGGLE_TIME"):
                    print("# %.2fs %s %s %s" % (time.monotonic() - t0, name, mode, u))
                judge(name, mode, u, expect, r)
    rc = h.close()
    report(rc == 0, "the harness exits cleanly (%s)" % rc)
    for u in ups.values():
        u.close()
    print("1..%d" % n)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
