"""What the intercepting lane proxy adds to a request: the same loopback
TLS upstream, in the same run, reached directly and through al-proxy-harness
(intercepted, its placeholder replaced). Prints rows for bench/run.sh
(figure, baseline, measured, ratio, goal), tab-separated; never pass/fail.

  python3 bench/proxytls.py HARNESS [REQUESTS]
"""
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "regress"))
from tlsup import Upstream, make_certs  # noqa: E402

HARNESS = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 400
TMP = tempfile.mkdtemp(prefix="al-bench-tls.")
PH = "AGENTLANE_PH_" + "0" * 32
make_certs(TMP)
UP = Upstream(TMP, "good")
LANE_CA = os.path.join(TMP, "lane-ca.pem")
p = subprocess.Popen([HARNESS, "--connect-ports", str(UP.port),
                      "--upstream-ca", os.path.join(TMP, "ca.pem"),
                      "--ca-out", LANE_CA,
                      "--trust", "api.anthropic.test=127.0.0.1",
                      "--events-per-min", "100000",
                      "--secret", "K=%s=sk-bench@api.anthropic.test" % PH],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
PORT = int(p.stdout.readline().split()[1])
REQ = (b"GET / HTTP/1.1\r\nHost: api.anthropic.test\r\nx-api-key: %s\r\n\r\n"
       % PH.encode())


def direct():
    ctx = ssl.create_default_context(cafile=os.path.join(TMP, "ca.pem"))
    s = socket.create_connection(("127.0.0.1", UP.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(s, server_hostname="api.anthropic.test")


def proxied():
    s = socket.create_connection(("127.0.0.1", PORT))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"CONNECT api.anthropic.test:%d HTTP/1.1\r\n\r\n" % UP.port)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(1)
    ctx = ssl.create_default_context(cafile=LANE_CA)
    return ctx.wrap_socket(s, server_hostname="api.anthropic.test")


def one(t):
    t.sendall(REQ)
    buf = b""
    while not buf.endswith(b"\r\n\r\n") or b"ok" not in buf:
        buf += t.recv(4096)
        if b"\r\n\r\nok" in buf:
            break


def big(t, n):
    """One GET /big/n on t, read to the end of its body."""
    t.sendall(b"GET /big/%d HTTP/1.1\r\nHost: api.anthropic.test\r\n"
              b"x-api-key: %s\r\n\r\n" % (n, PH.encode()))
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += t.recv(65536)
    head, body = buf.split(b"\r\n\r\n", 1)
    left = n - len(body)
    while left > 0:
        left -= len(t.recv(min(left, 262144)))


def keepalive(make, n=None):
    t = make()
    one(t)
    lat = []
    for _ in range(N if n is None else max(8, N // 16)):
        t0 = time.perf_counter()
        if n is None:
            one(t)
        else:
            big(t, n)
        lat.append(time.perf_counter() - t0)
    t.close()
    return sorted(lat)


def fresh(make):
    lat = []
    for _ in range(N // 8):
        t0 = time.perf_counter()
        t = make()
        one(t)
        lat.append(time.perf_counter() - t0)
        t.close()
    return sorted(lat)


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] * 1000


# Interleaved, so that load on the machine falls on both sides alike.
d1, p1, d2, p2 = keepalive(direct), keepalive(proxied), fresh(direct), fresh(proxied)
# A 1 MiB response: every byte of it goes through the response scan.
MIB = 1 << 20
d3, p3 = keepalive(direct, MIB), keepalive(proxied, MIB)
for what, d, q in (("keep-alive request", d1, p1), ("request on a new connection", d2, p2),
                   ("1 MiB response (scanned)", d3, p3)):
    for name, x in (("p50", 0.5), ("p99", 0.99)):
        print("TLS %s %s via lane proxy\t%.3f ms direct\t%.3f ms\t%.2fx\t-" %
              (what, name, pct(d, x), pct(q, x), pct(q, x) / pct(d, x)))
p.stdin.close()
p.wait()
