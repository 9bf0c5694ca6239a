"""Runs inside `unshare -rn` (see netpolicy.sh): this namespace is the
host side, a child network namespace is the guest."""
import os
import re
import socket
import subprocess
import sys
import time

REPO = sys.argv[1]
PROXY_PORT = 41234   # the port the allow golden file names
n = 0
failed = 0


def report(ok, what):
    global n, failed
    n += 1
    failed += 0 if ok else 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what), flush=True)


def sh(*args, ns=None):
    cmd = list(args)
    if ns is not None:
        cmd = ["nsenter", "-t", str(ns), "-n"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True)


def rules(mode):
    text = open(os.path.join(REPO, "tests/unit/golden/netpolicy-%s.yaml" % mode)).read()
    m = re.search(r"<<'AGENT_LANE_NFT'\n(.*?)\n    AGENT_LANE_NFT\n", text, re.S)
    return "\n".join(l[4:] for l in m.group(1).split("\n")) + "\n"


# Host side: the addresses a guest could aim at.
HOST_ADDRS = ["192.168.5.2/24", "192.168.5.3/24", "1.1.1.1/32", "10.0.0.1/32",
              "172.17.0.1/32", "169.254.169.254/32", "100.100.100.100/32",
              "192.168.1.1/32"]
sh("ip", "link", "set", "lo", "up")
guest = subprocess.Popen(["unshare", "-n", "sleep", "120"])
time.sleep(0.3)
G = guest.pid
setup = [
    ["ip", "link", "add", "v1", "type", "veth", "peer", "name", "v0"],
    ["ip", "link", "set", "v0", "netns", str(G)],
    ["ip", "link", "set", "v1", "up"],
] + [["ip", "addr", "add", a, "dev", "v1"] for a in HOST_ADDRS]
for c in setup:
    r = sh(*c)
    if r.returncode != 0:
        print("not ok 1 - setup %s: %s" % (" ".join(c), r.stderr.strip()))
        guest.kill()
        sys.exit(1)
for c in (["ip", "link", "set", "lo", "up"],
          ["ip", "addr", "add", "192.168.5.15/24", "dev", "v0"],
          ["ip", "link", "set", "v0", "up"],
          ["ip", "route", "add", "default", "via", "192.168.5.2"]):
    r = sh(*c, ns=G)
    if r.returncode != 0:
        print("not ok 1 - guest setup %s: %s" % (" ".join(c), r.stderr.strip()))
        guest.kill()
        sys.exit(1)

PROBE = r'''
import errno, socket, sys
for a in sys.argv[1:]:
    h, p, proto = a.split(",")
    if proto == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.sendto(b"x", (h, int(p))); r = "reachable"
        except OSError as e:
            r = "blocked" if e.errno == errno.EPERM else "error-%d" % e.errno
    else:
        s = socket.socket(); s.settimeout(0.7)
        try:
            s.connect((h, int(p))); r = "reachable"
        except ConnectionRefusedError:
            r = "reachable"
        except (socket.timeout, PermissionError):
            r = "blocked"
        except OSError as e:
            r = "error-%d" % e.errno
    print(a, r, flush=True)
'''

TARGETS = [
    ("192.168.5.2", 22, "tcp", "host loopback: a lane's ssh port"),
    ("192.168.5.2", 8080, "tcp", "host loopback: a dev server"),
    ("192.168.5.2", PROXY_PORT, "tcp", "host loopback: the lane's proxy port"),
    ("192.168.5.3", 53, "tcp", "DNS over tcp at 192.168.5.3"),
    ("192.168.5.3", 53, "udp", "DNS over udp at 192.168.5.3"),
    ("192.168.5.3", 80, "tcp", "another port at 192.168.5.3"),
    ("1.1.1.1", 443, "tcp", "the internet"),
    ("1.1.1.1", 53, "udp", "an outside resolver over udp"),
    ("10.0.0.1", 80, "tcp", "10/8"),
    ("172.17.0.1", 2375, "tcp", "172.16/12 (a Docker bridge)"),
    ("192.168.1.1", 80, "tcp", "192.168/16 beyond the lane network"),
    ("169.254.169.254", 80, "tcp", "169.254/16 (cloud metadata)"),
    ("100.100.100.100", 53, "udp", "100.64/10 (CGNAT, tailnets)"),
]
R, B = "reachable", "blocked"
EXPECT = {
    "internet": [B, B, B, R, R, B, R, R, B, B, B, B, B],
    "none":     [B] * 13,
    "allow":    [B, B, R, B, B, B, B, B, B, B, B, B, B],
}


def probe_all():
    args = ["%s,%d,%s" % (h, p, pr) for h, p, pr, _ in TARGETS]
    r = sh("python3", "-c", PROBE, *args, ns=G)
    got = {}
    for line in r.stdout.splitlines():
        a, res = line.split()
        got[a] = res
    return [got.get(a, "missing") for a in args]


# ssh arrives from 192.168.5.2: a guest server must still answer it.
SERVER = r'''
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.168.5.15", 22)); s.listen(1); s.settimeout(5)
try:
    c, _ = s.accept(); c.sendall(b"SSH-2.0-guest\r\n" + c.recv(100))
except OSError:
    pass
'''


def ssh_reply():
    srv = subprocess.Popen(["nsenter", "-t", str(G), "-n",
                            "python3", "-c", SERVER])
    time.sleep(0.3)
    got = b""
    try:
        c = socket.create_connection(("192.168.5.15", 22), timeout=3,
                                     source_address=("192.168.5.2", 0))
        c.sendall(b"hello")
        c.settimeout(3)
        while len(got) < 20:
            d = c.recv(100)
            if not d:
                break
            got += d
    except OSError:
        pass
    srv.wait(timeout=10)
    return got == b"SSH-2.0-guest\r\nhello"


base = probe_all()
report(all(x == R for x in base), "without rules every target is reachable (%s)" % base)
report(ssh_reply(), "without rules a connection from 192.168.5.2 gets the guest's reply")

# The trap (real-vm-notes.md): dropping output to 192.168.5.2 without
# accepting established traffic first also drops sshd's replies.
NAIVE = ("table inet agentlane {\n chain output {\n"
         "  type filter hook output priority 0; policy accept;\n"
         "  ip daddr 192.168.5.2 drop\n }\n}\n")
r = subprocess.run(["nsenter", "-t", str(G), "-n", "nft", "-f", "-"], input=NAIVE,
                   capture_output=True, text=True)
report(r.returncode == 0 and not ssh_reply(),
       "a naive rule set (no established-first) loses the reply to 192.168.5.2")
sh("nft", "delete", "table", "inet", "agentlane", ns=G)

for mode in ("internet", "none", "allow"):
    r = subprocess.run(
        ["nsenter", "-t", str(G), "-n", "nft", "-f", "-"],
        input=rules(mode), capture_output=True, text=True)
    report(r.returncode == 0, "%s: the rule set loads (%s)" % (mode, r.stderr.strip()[:200]))
    got = probe_all()
    for (h, p, pr, what), want, res in zip(TARGETS, EXPECT[mode], got):
        report(res == want, "%s: %s %s:%d/%s is %s" % (mode, what, h, p, pr, res))
    report(ssh_reply(), "%s: replies to a connection from 192.168.5.2 (forwarded ssh) still pass" % mode)
    # Loading again replaces the table (provisioning runs at every boot).
    r = subprocess.run(["nsenter", "-t", str(G), "-n",
                        "nft", "-f", "-"], input=rules(mode), capture_output=True, text=True)
    lst = sh("nft", "list", "ruleset", ns=G).stdout
    report(r.returncode == 0 and lst.count("table inet agentlane") == 1,
           "%s: a second load replaces the table" % mode)

guest.kill()
guest.wait()
print("# %d checks, %d failed" % (n, failed))
sys.exit(1 if failed else 0)
