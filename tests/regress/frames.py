#!/usr/bin/env python3
"""Hostile framing against agent-laned: garbage, oversized and truncated
frames, wrong first frames. Each case opens its own connection; the daemon
must close that connection (with a typed error where it can still write)
and keep serving. Prints one line per case: NAME RESULT."""
import os
import socket
import struct
import sys

sys.dont_write_bytecode = True    # no wire.pyc in the source tree
from wire import HELLO, frame, split_frames

SOCK = sys.argv[1]


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(SOCK)
    return s


def read_all(s):
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    return data


def error_code(data):
    """Finds Response.error.code (field 2 -> field 1) in the last frame."""
    frames = split_frames(data)
    if not frames:
        return "closed"
    last = frames[-1]
    if last[:1] == b"\x12":  # field 2, LEN: Error
        body = last[2:]
        if body[:1] == b"\x08":
            return "error%d" % body[1]
    return "frames%d" % len(frames)


cases = {}

s = conn()
s.sendall(os.urandom(4096))
cases["garbage"] = error_code(read_all(s))

s = conn()
s.sendall(struct.pack(">I", 0x7FFFFFFF) + b"x" * 100)
cases["oversized"] = error_code(read_all(s))

s = conn()
s.sendall(HELLO + struct.pack(">I", 2 * 1024 * 1024))
cases["oversized_after_hello"] = error_code(read_all(s))

s = conn()
s.sendall(struct.pack(">I", 100) + b"\x0a\x02")
s.shutdown(socket.SHUT_WR)
cases["truncated"] = error_code(read_all(s))

s = conn()
# Request{get_lane: GetLane{name: "x"}} before any hello.
s.sendall(frame(b"\x1a\x03\x0a\x01x"))
cases["no_hello"] = error_code(read_all(s))

s = conn()
s.sendall(frame(b"\x0a\x02\x08\x07"))  # protocol version 7
cases["bad_version"] = error_code(read_all(s))

s = conn()
s.sendall(HELLO + frame(b""))  # a Request with no body
cases["empty_request"] = error_code(read_all(s))

s = conn()
# hello, then an ExecInput where a call must start.
s.sendall(HELLO + frame(b"\x42\x02\x10\x01"))
cases["input_without_call"] = error_code(read_all(s))

for name in sorted(cases):
    print(name, cases[name])
