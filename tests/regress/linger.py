#!/usr/bin/env python3
"""A client still writing stdin when its command exits must read the exit
status, not a reset: the daemon lingers after its last frame. Sends 8 MiB of
ExecInput to `sh -c 'exit 3'` with blocking writes, then reads the answer.
Prints "exit 3 epipe=False" when all is well."""
import socket
import sys

sys.dont_write_bytecode = True    # no wire.pyc in the source tree
from wire import HELLO, field, frame, split_frames, varint

sock_path, lane = sys.argv[1], sys.argv[2].encode()


exec_msg = (field(1, 2, lane) + field(2, 2, b"sh") + field(2, 2, b"-c") +
            field(2, 2, b"exit 3") + field(6, 0, varint(1)))
request = field(7, 2, exec_msg)
chunk = field(8, 2, field(1, 2, b"\0" * 32768))

s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sock_path)
s.sendall(HELLO + frame(request))
epipe = False
try:
    for _ in range(256):
        s.sendall(frame(chunk))
except (BrokenPipeError, ConnectionResetError):
    epipe = True
data = b""
while True:
    try:
        b = s.recv(65536)
    except (ConnectionResetError, socket.timeout):
        break
    if not b:
        break
    data += b
code = None
for body in split_frames(data):
    if body[:1] == b"\x42" and body[2:3] == b"\x08":  # exec_exit{code}
        code = body[3]
print("exit %s epipe=%s" % (code, epipe))
