#!/usr/bin/env python3
"""Exec against limactl shell: RUNS alternating pairs of `limactl shell LANE
-- true` and `agent-lanectl exec LANE -- true`, each timed from here
(perf_counter around the run, no shell forks in the measurement), so that
drift hits both sides alike. Prints the two medians in ms: shell, then ours.

    execpairs.py LIMACTL LANE AGENT-LANECTL SOCKET RUNS   (LIMA_HOME set)
"""
import statistics
import subprocess
import sys
import time


def once(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) * 1000


def main():
    limactl, lane, ctl, sock, runs = sys.argv[1:6]
    direct = [limactl, "--tty=false", "shell", "--workdir=/", lane, "--", "true"]
    ours = [ctl, "--socket", sock, "exec", "-n", lane, "--", "true"]
    for argv in (direct, ours):     # warm both: caches, the exec channel
        once(argv)
    d, o = [], []
    for _ in range(int(runs)):
        d.append(once(direct))
        o.append(once(ours))
    print("%.2f %.2f" % (statistics.median(d), statistics.median(o)))


if __name__ == "__main__":
    main()
