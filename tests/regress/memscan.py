#!/usr/bin/env python3
"""memscan.py PID NEEDLE: how many times NEEDLE occurs in the writable
mappings of process PID (Linux /proc; the caller must be allowed to read its
memory, as its parent is). Used by the suites that check that a secret left
a daemon's memory."""
import re
import sys

pid, needle = sys.argv[1], sys.argv[2].encode()
hits = 0
with open("/proc/%s/maps" % pid) as maps, \
        open("/proc/%s/mem" % pid, "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
        if not m.group(3).startswith("rw"):
            continue
        lo, hi = int(m.group(1), 16), int(m.group(2), 16)
        # Sanitizer shadow maps are terabytes of reservation, not heap.
        if hi - lo > (4 << 30):
            continue
        tail = b""
        for off in range(lo, hi, 16 << 20):
            try:
                mem.seek(off)
                chunk = tail + mem.read(min(16 << 20, hi - off))
            except (OSError, ValueError, OverflowError):
                tail = b""
                continue
            hits += chunk.count(needle)
            tail = chunk[-(len(needle) - 1):]
print(hits)
