#!/usr/bin/env python3
"""memscan.py PID NEEDLE...: how many times the NEEDLEs occur (summed) in the
writable mappings of process PID (Linux /proc): every rw mapping read through
/proc/PID/mem as it is, freed heap and the secure heap's arena included.
The caller must be allowed to read that memory: agent-laned makes itself
not dumpable, so it takes CAP_SYS_PTRACE (root, as CI runs); without it
this exits non-zero with a message, as it does when any part of a
mapping cannot be read. Used by the suites that check that a
secret left a daemon's memory."""
import re
import sys

pid = sys.argv[1]
needles = [a.encode() for a in sys.argv[2:]]
longest = max(len(n) for n in needles)
hits = 0
unread = []     # a mapping the scan could not see would make it blind
try:
    maps = open("/proc/%s/maps" % pid)
    mem = open("/proc/%s/mem" % pid, "rb", 0)
except PermissionError as e:
    # agent-laned is not dumpable (PR_SET_DUMPABLE 0): its /proc files
    # are root's and reading its memory takes CAP_SYS_PTRACE.
    sys.exit("memscan: %s (a process that is not dumpable needs "
             "CAP_SYS_PTRACE: run as root)" % e)
with maps, mem:
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
            except (OSError, ValueError, OverflowError) as e:
                unread.append("%x: %s" % (off, e))
                tail = b""
                continue
            hits += sum(chunk.count(n) for n in needles)
            # Whatever straddles the chunk's end is counted with the next.
            tail = chunk[-(longest - 1):] if longest > 1 else b""
if unread:
    sys.exit("memscan: could not read %d chunks of rw mappings: %s"
             % (len(unread), "; ".join(unread[:4])))
print(hits)
