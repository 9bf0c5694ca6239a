#!/usr/bin/env python3
"""secret_upstream.py DIR: a loopback test upstream for lane secrets.

Makes a test CA and a leaf for api.test and other.test in DIR (openssl),
then serves HTTPS (that leaf) and plain HTTP on two free 127.0.0.1 ports,
answering every request 200 with a fixed body (never an echo of what came
in, but for the path /echo, which echoes the X-Api-Key header). Each request appends "HOST X-API-KEY" to DIR/seen (one line), so that
a test sees what reached the upstream. Prints "PORT_HTTPS PORT_HTTP" once
listening; runs until killed."""
import http.server
import os
import socketserver
import ssl
import subprocess
import sys
import threading

DIR = sys.argv[1]


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, cwd=DIR,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=Agent Lane test upstream CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", "up.key", "-out", "up.csr", "-subj", "/CN=api.test")
with open(os.path.join(DIR, "up.ext"), "w") as f:
    f.write("subjectAltName=DNS:api.test,DNS:other.test\n"
            "extendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n")
openssl("x509", "-req", "-in", "up.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "up.pem", "-days", "1", "-extfile", "up.ext")

lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        with lock, open(os.path.join(DIR, "seen"), "a") as f:
            f.write("%s %s\n" % (self.headers.get("Host", "-"),
                                 self.headers.get("X-Api-Key", "-")))
        body = b"hello from the test upstream\n"
        # Only on /echo, for secrets.sh: the value passes back through the
        # proxy's TLS and event buffers, whose wipes that suite checks,
        # 8 KiB deep, where a freed buffer's next user is slow to reach.
        if self.path == "/echo":
            body = ("echo %s%s\n" % ("." * 8192,
                    self.headers.get("X-Api-Key", "-"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_any

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


tls = Server(("127.0.0.1", 0), Handler)
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(os.path.join(DIR, "up.pem"), os.path.join(DIR, "up.key"))
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
plain = Server(("127.0.0.1", 0), Handler)
for s in (tls, plain):
    threading.Thread(target=s.serve_forever, daemon=True).start()
print(tls.server_address[1], plain.server_address[1], flush=True)
threading.Event().wait()
