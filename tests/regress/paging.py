#!/usr/bin/env python3
"""ListLanes and GetEvents page by page, spoken by hand (so that the daemon's
paging is tested whatever the client library does).

  paging.py SOCK lanes ALL PAGE_SIZE NAMES_OUT
  paging.py SOCK events LANE PAGE_SIZE
  paging.py SOCK token KIND TOKEN        (one call with a given token)

Prints key=value lines for the shell test to check."""
import socket
import struct
import sys

sys.dont_write_bytecode = True    # no wire.pyc in the source tree
from wire import HELLO, field, frame, varint

SOCK = sys.argv[1]


def read_varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def decode(b):
    """{field: [values]}: ints for varints, bytes for length-delimited."""
    out, i = {}, 0
    while i < len(b):
        key, i = read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(b, i)
        elif wt == 2:
            n, i = read_varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.setdefault(num, []).append(v)
    return out


def call(req):
    """One call on its own connection: the answer's frame and its size."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(SOCK)
    s.sendall(HELLO + frame(req))
    data = b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    frames = []
    while len(data) >= 4:
        n = struct.unpack(">I", data[:4])[0]
        frames.append(data[4:4 + n])
        data = data[4 + n:]
    if len(frames) != 2:
        raise SystemExit("expected hello and one answer, got %d frames" %
                         len(frames))
    return decode(frames[1]), len(frames[1])


def error_of(resp):
    if 2 in resp:
        e = decode(resp[2][0])
        return "error=%d message=%s" % (e.get(1, [0])[0],
                                        e.get(2, [b""])[0].decode())
    return None


def list_req(all_, size, token):
    body = b""
    if all_:
        body += field(1, 0, varint(1))
    if size:
        body += field(2, 0, varint(size))
    if token:
        body += field(3, 2, token)
    return field(4, 2, body)


def events_req(lane, size, token):
    body = field(1, 2, lane.encode())
    if size:
        body += field(2, 0, varint(size))
    if token:
        body += field(3, 2, token)
    return field(13, 2, body)


def page_through(make, list_field):
    pages, items, maxframe, token = 0, [], 0, b""
    while True:
        resp, size = call(make(token))
        err = error_of(resp)
        if err:
            print(err)
            raise SystemExit(0)
        if list_field not in resp:
            print("error=none message=no list in the answer")
            raise SystemExit(0)
        lst = decode(resp[list_field][0])
        pages += 1
        maxframe = max(maxframe, size)
        items += [decode(x) for x in lst.get(1, [])]
        token = lst.get(2, [b""])[0]
        if not token or pages > 10000:
            break
    return pages, items, maxframe


kind = sys.argv[2]
if kind == "lanes":
    all_, size, out = sys.argv[3] == "1", int(sys.argv[4]), sys.argv[5]
    pages, lanes, maxframe = page_through(
        lambda t: list_req(all_, size, t), 4)
    names = [l[1][0].decode() for l in lanes]
    labels = sum(len(l.get(13, [])) for l in lanes)
    with open(out, "w") as f:
        f.write("\n".join(names) + "\n")
    print("pages=%d total=%d unique=%d labels=%d maxframe=%d" %
          (pages, len(names), len(set(names)), labels, maxframe))
elif kind == "events":
    lane, size = sys.argv[3], int(sys.argv[4])
    pages, events, maxframe = page_through(
        lambda t: events_req(lane, size, t), 14)
    times = [e.get(1, [0])[0] for e in events]
    print("pages=%d total=%d ordered=%d maxframe=%d" %
          (pages, len(events), int(times == sorted(times)), maxframe))
elif kind == "token":
    what, token = sys.argv[3], sys.argv[4].encode()
    if what == "lanes":
        resp, _ = call(list_req(False, 0, token))
    else:
        resp, _ = call(events_req(what, 0, token))
    print(error_of(resp) or "error=none")
