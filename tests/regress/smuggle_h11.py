"""One upstream of the differential smuggling suite (smuggle.py): a small
threaded server on Python's h11 parser (Debian's python3-h11).

    python3 smuggle_h11.py [CERT KEY]    TLS with that leaf, else plain

Prints the same JSON lines as smuggle_node.js, in the order h11 parsed the
stream (listen, accept, head, req, error, close; strings are the bytes as
latin-1), and answers each request the same way: 200, "X-Upstream: h11",
"ok" or, under /echo, the request's headers and body. At close it also
records the bytes h11 left unparsed ("trailing"). Test code, never
installed.
"""
import json
import socket
import ssl
import sys
import threading

import h11

LOCK = threading.Lock()
NCONN = [0]


def out(o):
    with LOCK:
        sys.stdout.write(json.dumps(o) + "\n")
        sys.stdout.flush()


def s(b):
    return b.decode("latin-1")


def respond(conn, sock, target, headers, body):
    msg = b"ok"
    if target.startswith(b"/echo"):
        msg = json.dumps({"headers": [[s(k), s(v)] for k, v in headers],
                          "body": s(body)}).encode("latin-1")
    data = conn.send(h11.Response(status_code=200, headers=[
        ("X-Upstream", "h11"), ("Content-Length", str(len(msg))),
        ("Content-Type", "text/plain")]))
    data += conn.send(h11.Data(data=msg)) + conn.send(h11.EndOfMessage())
    sock.sendall(data)


def serve(sock, cid):
    conn = h11.Connection(h11.SERVER)
    req, body = None, b""
    try:
        while True:
            try:
                ev = conn.next_event()
            except h11.RemoteProtocolError as e:
                out({"ev": "error", "conn": cid, "code": str(e)})
                if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    sock.sendall(b"HTTP/1.1 400 Bad Request\r\nX-Upstream: h11\r\n"
                                 b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                break
            if ev is h11.NEED_DATA:
                if conn.they_are_waiting_for_100_continue:
                    sock.sendall(conn.send(h11.InformationalResponse(
                        status_code=100, headers=[])))
                conn.receive_data(sock.recv(65536))
                continue
            if ev is h11.PAUSED:
                if conn.our_state is h11.MUST_CLOSE or \
                        conn.their_state is not h11.DONE:
                    break
                conn.start_next_cycle()
                continue
            if isinstance(ev, h11.Request):
                req, body = ev, b""
                out({"ev": "head", "conn": cid, "method": s(ev.method),
                     "target": s(ev.target), "version": s(ev.http_version),
                     "headers": [[s(k), s(v)] for k, v in ev.headers.raw_items()]})
            elif isinstance(ev, h11.Data):
                body += bytes(ev.data)
            elif isinstance(ev, h11.EndOfMessage):
                out({"ev": "req", "conn": cid, "target": s(req.target),
                     "body": s(body), "complete": True,
                     "trailers": [[s(k), s(v)] for k, v in ev.headers.raw_items()]})
                respond(conn, sock, req.target, req.headers.raw_items(), body)
                req = None
                if conn.our_state is h11.MUST_CLOSE:
                    break
                conn.start_next_cycle()
            elif isinstance(ev, h11.ConnectionClosed):
                break
    except (OSError, ssl.SSLError, h11.LocalProtocolError):
        pass
    if req is not None:
        out({"ev": "req", "conn": cid, "target": s(req.target), "body": s(body),
             "complete": False, "trailers": []})
    out({"ev": "close", "conn": cid, "trailing": s(conn.trailing_data[0])})
    try:
        sock.close()
    except OSError:
        pass


def main():
    ctx = None
    if len(sys.argv) >= 3:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[1], sys.argv[2])
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    out({"ev": "listen", "port": ls.getsockname()[1]})

    def accept():
        while True:
            c, _ = ls.accept()
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=handshake, args=(c,), daemon=True).start()

    def handshake(c):
        if ctx is not None:
            try:
                c = ctx.wrap_socket(c, server_side=True)
            except (OSError, ssl.SSLError):
                c.close()
                return
        with LOCK:
            NCONN[0] += 1
            cid = NCONN[0]
        out({"ev": "accept", "conn": cid})
        serve(c, cid)

    threading.Thread(target=accept, daemon=True).start()
    # The driver closes our stdin to end us.
    sys.stdin.read()


if __name__ == "__main__":
    main()
