#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets in tests/fuzz/corpus/.

    tests/fuzz/make-corpus.py

Each target gets a few small, valid-looking inputs (and a few hostile ones)
so that fuzzing starts from the shapes the code really sees. The output is
deterministic: rerunning rewrites the same files. Standard library only.
"""

import io
import os
import shutil
import struct
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- protobuf, by hand (proto/agentlane.proto) ----

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(num, v):
    return varint(num << 3) + varint(v)


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint((num << 3) | 2) + varint(len(b)) + b


def raw_frame(payload):
    return struct.pack(">I", len(payload)) + payload


def frame(body_field, msg):
    """A whole frame: Request{body_field: msg}."""
    return raw_frame(f_bytes(body_field, msg))


LANE = "al-0123456789abcdef"
HELLO = frame(1, f_varint(1, 1) + f_bytes(2, "agent-lanectl/0.1.0"))


def request_corpus():
    t = "fuzz_request"
    write(t, "hello", HELLO)
    label = f_bytes(1, "team") + f_bytes(2, "infra")
    write(t, "create", HELLO + frame(2, f_varint(1, 2) + f_varint(2, 4096) +
                                     f_varint(3, 30) + f_varint(4, 3600) +
                                     f_varint(5, 600) + f_bytes(6, label)))
    write(t, "get", HELLO + frame(3, f_bytes(1, LANE)))
    write(t, "list", HELLO + frame(4, f_varint(1, 1)))
    write(t, "destroy", HELLO + frame(5, f_bytes(1, LANE)))
    write(t, "extend", HELLO + frame(6, f_bytes(1, LANE) + f_varint(2, 600)))
    env = f_bytes(1, "TOKEN") + f_bytes(2, b"\xff\x00secret")
    write(t, "exec-argv", HELLO + frame(7, f_bytes(1, LANE) +
                                        f_bytes(2, "sh") + f_bytes(2, "-c") +
                                        f_bytes(2, b"echo \xff") +
                                        f_bytes(4, "/tmp") + f_bytes(5, env) +
                                        f_varint(6, 1) +
                                        f_varint(7, 30000)) +
          frame(8, f_bytes(1, "input\n")) + frame(8, f_varint(2, 1)))
    write(t, "exec-shell", HELLO + frame(7, f_bytes(1, LANE) +
                                         f_bytes(3, "ls -la | wc -l")))
    write(t, "copy-in", HELLO + frame(9, f_bytes(1, LANE) + f_bytes(2, "/x/y")) +
          frame(11, f_bytes(1, b"\0" * 512)) + frame(11, f_varint(2, 1)))
    write(t, "copy-out", HELLO + frame(10, f_bytes(1, LANE) +
                                       f_bytes(2, "/etc/hostname") +
                                       f_varint(3, 1 << 20)))
    write(t, "reap", HELLO + frame(12, f_varint(1, 1)))
    write(t, "events", HELLO + frame(13, f_bytes(1, LANE)))
    # Hostile shapes: empty body, oversized length, truncation, overlong
    # varints, unknown fields, a oneof given twice.
    write(t, "empty-body", struct.pack(">I", 0))
    write(t, "too-large", struct.pack(">I", (1 << 20) + 1) + b"\0" * 16)
    write(t, "truncated", HELLO[:-3])
    write(t, "overlong-varint", frame(4, b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
    write(t, "unknown-field", frame(3, f_bytes(1, LANE) + f_bytes(99, "x") +
                                    f_varint(100, 7)))
    # Field number 0 in an overlong tag: protobuf-c keeps it as unknown.
    write(t, "tag0-overlong", frame(4, b"\x80\x00\x00" + f_varint(1, 1)))
    write(t, "oneof-twice", raw_frame(f_bytes(3, f_bytes(1, LANE)) +
                                      f_bytes(5, f_bytes(1, LANE))))


# ---- guest helper stream (daemon/guestproto.h) ----

MAGIC = b"\0ALGX01\n"


def gframe(kind, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return kind.encode() + struct.pack(">I", len(payload)) + payload


def guest_corpus():
    t = "fuzz_guestproto"
    write(t, "exit0", MAGIC + gframe("P", "4242") + gframe("O", "hello\n") +
          gframe("X", "c0"))
    write(t, "motd", b"Welcome to Ubuntu\r\nLast login: today\n\0ALG" + MAGIC +
          gframe("P", "17") + gframe("E", "warning\n") + gframe("X", "s9"))
    write(t, "failed-cwd", MAGIC + gframe("F", b"cwd\x002\x00No such file"))
    write(t, "binary-out", MAGIC + gframe("P", "1") +
          gframe("O", bytes(range(256))) + gframe("O", "") +
          gframe("X", "c255"))
    write(t, "bad-type", MAGIC + gframe("Q", "x"))
    write(t, "oversized", MAGIC + b"O" + struct.pack(">I", 256 * 1024 + 1))
    write(t, "bad-exit", MAGIC + gframe("X", "c256"))
    write(t, "partial", MAGIC + gframe("O", "abcdef")[:7])


# ---- limactl output (daemon/lima.c) ----

def instance(name, status):
    return ('{"name":"%s","hostname":"lima-%s","status":"%s",'
            '"dir":"/Users/u/.agent-lane/lima/%s","vmType":"vz",'
            '"arch":"aarch64","cpus":2,"memory":4294967296,'
            '"disk":32212254720,"sshLocalPort":60022,"hostAgentPID":4242,'
            '"driverPID":4242,"config":{"cpus":2,"mounts":[],'
            '"ssh":{"forwardAgent":false}},"sshAddress":"127.0.0.1",'
            '"protected":false,"limaVersion":"2.0.3"}'
            % (name, name, status, name))


def listjson_corpus():
    t = "fuzz_listjson"
    write(t, "two", instance(LANE, "Running") + "\n" +
          instance("al-fedcba9876543210", "Stopped") + "\n")
    write(t, "crlf", "\r\n" + instance(LANE, "Broken") + "\r\n\n")
    write(t, "no-status", '{"name":"al-0000000000000000"}\n')
    write(t, "escapes", '{"name":"al-\\u001b[31m\\n","status":"\\u00e9"}\n')
    write(t, "array", "[" + instance(LANE, "Running") + "]\n")
    write(t, "logrus-json",
          '{"level":"info","msg":"Creating","time":"2025-01-01T00:00:00Z"}\n'
          '{"level":"fatal","msg":"instance \\"x\\" already exists",'
          '"time":"2025-01-01T00:00:01Z"}\n')
    write(t, "text", "limactl: must not run as the root user\n\n")
    write(t, "deep", '{"name":"x","config":' + "[" * 200 + "]" * 200 + "}\n")


# ---- tar streams (client/lib/tar.c) ----

def tar_bytes(members, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for info, data in members:
            info.mtime = 1700000000
            if data is not None:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
            else:
                tf.addfile(info)
    return buf.getvalue()


def ti(name, kind=tarfile.REGTYPE, mode=0o644, link=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.linkname = link
    return info


def ustar_header(name, size, typeflag=b"0"):
    """One raw ustar header; the size in GNU base-256 when octal is short."""
    h = bytearray(512)
    h[0:len(name)] = name.encode()
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    if size < 8 ** 11:
        h[124:136] = b"%011o\0" % size
    else:
        h[124:136] = b"\x80" + size.to_bytes(11, "big")
    h[136:148] = b"14535223000\0"
    h[156:157] = typeflag
    h[257:265] = b"ustar\x0000"
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def tar_corpus():
    t = "fuzz_tar_extract"
    write(t, "tree", tar_bytes([
        (ti("./", tarfile.DIRTYPE, 0o755), None),
        (ti("dir", tarfile.DIRTYPE, 0o755), None),
        (ti("dir/file.txt"), b"hello\n"),
        (ti("run.sh", mode=0o755), b"#!/bin/sh\necho hi\n"),
        (ti("dir/link", tarfile.SYMTYPE, 0o777, "../run.sh"), None),
        (ti("empty"), b""),
    ]))
    write(t, "ustar", tar_bytes([(ti("a/b/c", tarfile.REGTYPE), b"x" * 700)],
                                tarfile.USTAR_FORMAT))
    write(t, "gnu-longname", tar_bytes([(ti("d" * 150), b"long")],
                                       tarfile.GNU_FORMAT))
    write(t, "dotdot", tar_bytes([(ti("../escape"), b"pwned")]))
    write(t, "absolute", tar_bytes([(ti("/tmp/escape"), b"pwned")]))
    write(t, "symlink-through", tar_bytes([
        (ti("link", tarfile.SYMTYPE, 0o777, "/tmp"), None),
        (ti("link/pwned"), b"pwned"),
    ]))
    write(t, "hardlink", tar_bytes([
        (ti("t"), b"data"),
        (ti("h", tarfile.LNKTYPE, 0o644, "t"), None),
    ]))
    write(t, "fifo", tar_bytes([(ti("p", tarfile.FIFOTYPE), None)]))
    write(t, "chardev", tar_bytes([(ti("c", tarfile.CHRTYPE), None)]))
    # A header that declares a terabyte (base-256 size) with no data.
    write(t, "huge-size", ustar_header("big", 1 << 40) + b"\0" * 1024)


# ---- configuration file (daemon/config.c) ----

def config_corpus():
    t = "fuzz_config"
    write(t, "example",
          "# agent-laned configuration\n"
          "max_lanes = 8\n"
          "default_memory = 4GiB\n"
          "max_memory = 16GiB\n"
          "default-disk = 30G\n"
          "max_lifetime = 24h\n"
          "request_timeout = 30s\n"
          "max_copy_out_bytes = 1GiB\n"
          "debug = yes\n"
          "socket = /tmp/agent-laned.sock\n"
          "lima_template = template:_images/ubuntu-lts\n")
    write(t, "errors", "max_lanes = 99999\n")
    write(t, "no-equals", "\n\n   max_lanes\n")
    write(t, "crlf", "max_lanes = 2\r\ndefault_cpus=1\r\n")
    write(t, "long-line", "# " + "x" * 1100 + "\n")


# ---- lane proxy request heads (daemon/proxyreq.c) ----

def proxyreq_corpus():
    t = "fuzz_proxyreq"
    write(t, "connect", "CONNECT registry.npmjs.org:443 HTTP/1.1\r\n"
          "Host: registry.npmjs.org:443\r\nUser-Agent: npm\r\n\r\n")
    write(t, "http", "GET http://deb.debian.org/debian/dists?x=1 HTTP/1.1\r\n"
          "Host: other\r\nProxy-Authorization: Basic eA==\r\n"
          "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n")
    write(t, "ipv6", "CONNECT [2001:db8::1]:443 HTTP/1.0\r\n\r\n")
    write(t, "http-port", "POST http://Example.ORG.:8080 HTTP/1.1\r\n"
          "Content-Length: 3\r\n\r\nabc")
    write(t, "folded", "CONNECT a.b:443 HTTP/1.1\r\nX: 1\r\n 2\r\n\r\n")
    write(t, "userinfo", "GET http://u:p@a.b/ HTTP/1.1\r\n\r\n")
    write(t, "pattern", b"*.npmjs.org\0registry.npmjs.org")
    write(t, "pattern-self", b"*.npmjs.org\0npmjs.org")


# ---- intercepted requests (proxyreq origin form, proxysecret, bodies) ----

PH_A = "AGENTLANE_PH_" + "a" * 32
PH_B = "AGENTLANE_PH_" + "b" * 32


def proxyhttp_corpus():
    t = "fuzz_proxyhttp"
    write(t, "key", "POST /v1/messages HTTP/1.1\r\nHost: api.a.test\r\n"
          "x-api-key: " + PH_A + "\r\nContent-Length: 5\r\n\r\nhello")
    write(t, "bearer", "GET / HTTP/1.1\r\nHost: b.test\r\n"
          "Authorization: Bearer " + PH_B + "\r\nConnection: close, x-a\r\n"
          "X-A: 1\r\n\r\n")
    import base64
    basic = base64.b64encode(("x-access-token:" + PH_B).encode()).decode()
    write(t, "basic", "GET /repo.git/info/refs HTTP/1.1\r\nHost: b.test\r\n"
          "Authorization: Basic " + basic + "\r\n\r\n")
    write(t, "refused", "GET /?k=" + PH_B + " HTTP/1.1\r\nHost: x.a.test\r\n\r\n")
    write(t, "chunked", "POST / HTTP/1.1\r\nHost: api.a.test\r\n"
          "Transfer-Encoding: chunked\r\n\r\n"
          "5\r\nhello\r\n1a;x=y\r\n" + PH_A[:26] + "\r\n0\r\nT: 1\r\n\r\n"
          "GET /next HTTP/1.1\r\n\r\n")
    write(t, "body-ph", "POST / HTTP/1.1\r\nHost: b.test\r\nContent-Length: 60\r\n\r\n"
          '{"m": "' + PH_A + '"}')
    write(t, "two-lengths", "POST / HTTP/1.1\r\nHost: b.test\r\n"
          "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab")


    # Issue 29: framing fields in Connection, trailers, base64 tripwires.
    write(t, "conn-cl", "POST / HTTP/1.1\r\nHost: api.a.test\r\n"
          "Connection: content-length\r\nContent-Length: 40\r\n\r\n"
          "GET /s HTTP/1.1\r\nHost: api.a.test\r\n\r\n")
    write(t, "trailer-ph", "POST / HTTP/1.1\r\nHost: api.a.test\r\n"
          "Transfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n"
          "X-K: " + PH_A + "\r\n\r\n")
    b64 = base64.urlsafe_b64encode(("u:" + PH_B).encode()).decode().rstrip("=")
    write(t, "b64-header", "GET / HTTP/1.1\r\nHost: x.a.test\r\n"
          "X-Data: Token " + b64[:20] + " " + b64[20:] + "\r\n\r\n")
    write(t, "own-header", "GET / HTTP/1.1\r\nHost: b.test\r\n"
          "x-b-key: " + PH_B + "\r\nX-Request-Id: " + PH_B + "\r\n\r\n")


# ---- parse, forward, parse again (daemon/proxyfwd.c) ----

def proxyforward_corpus():
    t = "fuzz_proxyforward"
    write(t, "pipelined", "\0POST /a HTTP/1.1\r\nHost: x.a.test\r\n"
          "Content-Length: 5\r\nConnection: keep-alive\r\n\r\nhello"
          "GET /b HTTP/1.1\r\nHost: x.a.test\r\nx-api-key: " + PH_A +
          "\r\n\r\n")
    write(t, "chunked", "\0POST /c HTTP/1.1\r\nHost: x.a.test\r\n"
          "Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\n"
          "X-T: 1\r\n\r\nGET /d HTTP/1.1\r\nHost: x.a.test\r\n\r\n")
    write(t, "conn-cl", "\0POST /e HTTP/1.1\r\nHost: x.a.test\r\n"
          "Connection: content-length\r\nContent-Length: 40\r\n\r\n"
          "GET /smuggled HTTP/1.1\r\nHost: x.a.test\r\n\r\n")
    write(t, "plain", "\1POST http://h.test/p?q HTTP/1.1\r\n"
          "Content-Length: 3\r\nHost: evil\r\n\r\nabc"
          "GET http://h.test/ HTTP/1.1\r\n\r\n")
    write(t, "plain10", "\1GET http://h.test HTTP/1.0\r\n"
          "Content-Length: 0\r\n\r\n")


# ---- the proxy's policy (daemon/proxypolicy.c) ----

def proxypolicy_corpus():
    t = "fuzz_proxypolicy"
    ct = "CONNECT api.a.test:443 HTTP/1.1\r\nHost: api.a.test:443\r\n\r\n"
    req = "GET / HTTP/1.1\r\nHost: api.a.test\r\nx-api-key: " + PH_A + "\r\n\r\n"
    write(t, "intercept", "\0*.npmjs.org\0api.a.test\0" + ct + "\0" + req)
    write(t, "sni-other", "\0\0b.test.\0" + ct + "\0" + req.replace(
        "Host: api.a.test", "Host: b.test"))
    write(t, "tunnel", "\0*.npmjs.org\0\0CONNECT registry.npmjs.org:443 "
          "HTTP/1.1\r\n\r\n\0")
    write(t, "plain-foreign", "\1\0\0GET http://x.test/ HTTP/1.1\r\n"
          "x-api-key: " + PH_B + "\r\n\r\n\0")
    write(t, "plain-conn", "\0x.test\0\0POST http://x.test/ HTTP/1.1\r\n"
          "Connection: authorization\r\nContent-Length: 1\r\n\r\n\0")


# ---- the copy-out script's first line (daemon/copy.c) ----

def copyhead_corpus():
    t = "fuzz_copyhead"
    write(t, "file", "F1610612736 755")
    write(t, "file-nomode", "F42")
    write(t, "dir", "D300000")
    write(t, "unknown", "F")
    write(t, "huge", "F" + "9" * 30 + " 7777")
    write(t, "junk", "Fx 9")


def stats_corpus():
    t = "fuzz_stats"
    good = ("cpu 100 0 50 800 50 0 0 0\nncpu 2\nmem 4000000 3000000\n"
            "disk 30000000 1000000\nprocs 12\nuptime 1234.56\n"
            "init 1000 100\n")
    write(t, "good", good)
    write(t, "two", good + good.replace("cpu 100", "cpu 200"))
    write(t, "big", "cpu 72057594037927935 0 0 0 0 0 0 0\nncpu 65536\n"
          "mem 1 0\ndisk 1 1\nprocs 1\nuptime 72057594037927.999\n"
          "init 99999999999 1\n")
    write(t, "twice", good + "procs 3\n")
    write(t, "nul", good.replace("ncpu 2", "ncpu 2\0"))


def context_corpus():
    t = "fuzz_context"
    write(t, "full", "# agent-lane context: see agent-lanectl(1), CONTEXTS\n"
          "host=ssh://me@mini:2222\ndescription=the Mac mini\n"
          "remote-command=/opt/homebrew/bin/agent-lanectl\n")
    write(t, "unix", "host=unix:///run/x.sock\n")
    write(t, "utf8", "host=ssh://a\ndescription=b\u00fcro \u2014 desk\n")
    write(t, "dup", "host=ssh://a\nhost=ssh://b\n")


def hosturl_corpus():
    t = "fuzz_hosturl"
    write(t, "ssh", "ssh://me@mac-studio:2222")
    write(t, "v6", "ssh://u@[fe80::1]:22")
    write(t, "unix", "unix:///tmp/s.sock")
    write(t, "option", "ssh://-oProxyCommand=x")
    write(t, "cmd", "~/bin/agent-lanectl")


def hostrule_corpus():
    # The first byte's low bit picks the use: 0 allow, 1 secret.
    t = "fuzz_hostrule"
    for name, use, pat in (
            ("name", 1, "api.anthropic.com"), ("wild", 1, "*.anthropic.com"),
            ("case", 0, "API.Example.ORG."), ("psl", 1, "*.github.io"),
            ("psl-allow", 0, "*.github.io"), ("kawasaki", 1, "*.kawasaki.jp"),
            ("short", 0, "127.1"), ("number", 1, "2130706433"),
            ("hex", 0, "0x7f.1"), ("octal", 1, "0177.0.0.1"),
            ("v6", 0, "[::ffff:127.0.0.1]"), ("wild-addr", 1, "*.1.2.3"),
            ("localhost", 0, "*.app.localhost"), ("tld", 1, "*.com"),
            ("port", 0, "example.com:443")):
        write(t, name, bytes([use]) + pat.encode())


# ---- upstream responses (daemon/proxyresp.c) ----
#
# 4 bytes of HEAD flags, 1 byte: requests awaited, 4 bytes: read-size seed,
# then what upstream sends (tests/fuzz/fuzz_proxyresp.c).

def proxyresp_corpus():
    t = "fuzz_proxyresp"

    def resp(name, stream, heads=0, nreq=1, seed=0x9E3779B9):
        write(t, name, struct.pack("<IBI", heads, nreq, seed) + stream)

    resp("length", b"HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n"
         b"sk-ant-0123456789")
    resp("chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"5;x=y\r\nSECRE\r\n5\r\nT-tok\r\n0\r\nT: v\r\n\r\n")
    resp("close", b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
         b"aabaabaab tok-1234 zzz", seed=0)
    resp("header", b"HTTP/1.1 401 zz\r\nWWW-Authenticate: Bearer tok-1234\r\n"
         b"Content-Length: 0\r\n\r\n")
    resp("pipelined", b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
         b"HTTP/1.1 100 Continue\r\n\r\n"
         b"HTTP/1.1 204 No Content\r\n\r\n"
         b"HTTP/1.1 304 Not Modified\r\n\r\n"
         b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
         heads=1, nreq=4)
    resp("sse", b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n"
         b"12\r\ndata: SECRET-tok\n\n\r\n0\r\n\r\n", seed=7)
    resp("gzip", b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
         b"Content-Length: 3\r\n\r\nabc")
    resp("clte", b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    resp("http10", b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n"
         b"Content-Length: 1\r\n\r\nzHTTP/1.0 200 OK\r\n\r\nzz", nreq=2)


def main():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    request_corpus()
    guest_corpus()
    listjson_corpus()
    tar_corpus()
    config_corpus()
    proxyreq_corpus()
    proxyhttp_corpus()
    proxyforward_corpus()
    proxypolicy_corpus()
    copyhead_corpus()
    stats_corpus()
    context_corpus()
    hosturl_corpus()
    hostrule_corpus()
    proxyresp_corpus()


if __name__ == "__main__":
    main()
