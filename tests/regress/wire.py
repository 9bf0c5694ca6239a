"""Just enough protobuf encoding for the regress tests to speak
agentlane.v1 by hand (they test the daemon's framing, so they must not use
a library that would refuse to send what they need to send)."""
import struct


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    """A field: wire type 0 (payload already a varint) or 2 (bytes)."""
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


# Request{hello: Hello{protocol_version: 1}}
HELLO = frame(field(1, 2, field(1, 0, varint(1))))


def split_frames(data):
    """The payloads of the whole frames in data."""
    frames = []
    while len(data) >= 4:
        n = struct.unpack(">I", data[:4])[0]
        if len(data) < 4 + n:
            break
        frames.append(data[4:4 + n])
        data = data[4 + n:]
    return frames
