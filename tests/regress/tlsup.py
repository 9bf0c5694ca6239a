"""Loopback TLS upstreams for the lane proxy's tests and bench: a test CA
made with openssl(1), leaves it signs, and a small HTTP/1.1 server.
Test code, never installed."""
import os
import socket
import ssl
import subprocess
import threading


def openssl(tmp, *args):
    subprocess.run(["openssl"] + list(args), check=True, cwd=tmp,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs(tmp):
    """ca.pem (the test CA); good (api.anthropic.test, b.anthropic.test,
    open.test) and wrongname (other.example) signed by it; self, which
    signs itself."""
    openssl(tmp, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=Test Upstream CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, san in (("good", "api.anthropic.test,DNS:b.anthropic.test,DNS:open.test"),
                      ("wrongname", "other.example")):
        openssl(tmp, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
                "-subj", "/CN=" + san.split(",")[0])
        with open(os.path.join(tmp, name + ".ext"), "w") as f:
            f.write("subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n"
                    "basicConstraints=critical,CA:FALSE\n" % san)
        openssl(tmp, "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey",
                "ca.key", "-CAcreateserial", "-out", name + ".pem", "-days", "1",
                "-extfile", name + ".ext")
    openssl(tmp, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", "self.key", "-out", "self.pem", "-days", "1",
            "-subj", "/CN=api.anthropic.test",
            "-addext", "subjectAltName=DNS:api.anthropic.test")


class Upstream:
    """A loopback HTTPS/1.1 server: keep-alive, Content-Length and chunked
    request bodies, 100-continue, and /stream (server-sent events, paced by
    the test). It records each request as (head dict, body bytes)."""

    def __init__(self, tmp, cert, tls=True):
        self.requests = []
        self.alpn = []
        self.lock = threading.Lock()
        self.go = threading.Event()
        self.ctx = None
        if tls:
            self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ctx.load_cert_chain(os.path.join(tmp, cert + ".pem"),
                                     os.path.join(tmp, cert + ".key"))
            self.ctx.set_alpn_protocols(["h2", "http/1.1"])
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(64)
        self.port = self.s.getsockname()[1]
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            c, _ = self.s.accept()
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            if self.ctx is not None:
                c = self.ctx.wrap_socket(c, server_side=True)
                with self.lock:
                    self.alpn.append(c.selected_alpn_protocol())
            f = c.makefile("rb")
            while self._one(c, f):
                pass
        except (OSError, ssl.SSLError, ValueError):
            pass
        try:
            c.close()
        except OSError:
            pass

    def _one(self, c, f):
        line = f.readline()
        if not line:
            return False
        head = {"_line": line.decode().rstrip("\r\n")}
        while True:
            h = f.readline().decode()
            if h in ("\r\n", ""):
                break
            k, v = h.split(":", 1)
            head.setdefault(k.strip().lower(), []).append(v.strip())
        if head.get("expect") == ["100-continue"]:
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = b""
        if "content-length" in head:
            body = f.read(int(head["content-length"][0]))
        elif head.get("transfer-encoding") == ["chunked"]:
            while True:
                size = int(f.readline().split(b";")[0], 16)
                if size == 0:
                    while f.readline() not in (b"\r\n", b""):
                        pass
                    break
                body += f.read(size)
                f.readline()
        with self.lock:
            self.requests.append((head, body))
        path = head["_line"].split()[1]
        if path.startswith("/big/"):
            # A response body of N bytes (the bench's scan cost per byte).
            n = int(path.split("/")[2])
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
            c.sendall(b"x" * n)
        elif path.startswith("/stream"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n")
            ev = b"data: first\n\n"
            c.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
            # The second event only once the client saw the first: a proxy
            # that buffers the response never gets there.
            self.go.wait(5)
            ev = b"data: second\n\n"
            c.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(ev), ev))
        else:
            msg = b"ok %d" % len(self.requests)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(msg), msg))
        return "close" not in head.get("connection", [""])[0]

    def last(self):
        with self.lock:
            return self.requests[-1] if self.requests else ({}, b"")
