"""Runs inside `unshare -rn` (see netpolicy.sh): this namespace is the
host side, a child network namespace is the guest."""
import os
import re
import socket
import subprocess
import sys

REPO = sys.argv[1]
PRINT = sys.argv[2]
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


# The pre-ready check, run in the guest with a stand-in sudo on PATH: Lima's
# answer for a user without the sudoers entry, or a passwordless one.
BIN = "/run/np-bin"
HOME = "/run/np-home"
# The guest user's name, which Lima puts where the script says {{.User}}.
LANE_USER = "al-np-lane"


def set_sudo(passwordless, password=None):
    """passwordless: sudo -n works. password: what Lima 2.2 leaves for
    user.passwordlessSudo: false, a password in ~/password that sudo -S
    accepts (the stand-in succeeds when stdin carries it)."""
    os.makedirs(BIN, exist_ok=True)
    with open(BIN + "/sudo", "w") as f:
        if passwordless:
            f.write("#!/bin/sh\nexit 0\n")
        elif password is not None:
            f.write("#!/bin/sh\nfor a; do [ \"$a\" = -S ] && read -r p && "
                    "[ \"$p\" = '%s' ] && exit 0; done\n"
                    "echo 'sudo: a password is required' >&2; exit 1\n" % password)
        else:
            f.write("#!/bin/sh\necho 'sudo: a password is required' >&2; exit 1\n")
    os.chmod(BIN + "/sudo", 0o755)
    os.makedirs(HOME, exist_ok=True)
    if password is not None:
        with open(HOME + "/password", "w") as f:
            f.write(password + "\n")
    elif os.path.exists(HOME + "/password"):
        os.unlink(HOME + "/password")


def set_stamp(text):
    os.makedirs("/run/agent-lane", exist_ok=True)
    if text is None:
        if os.path.exists("/run/agent-lane/netpolicy"):
            os.unlink("/run/agent-lane/netpolicy")
    else:
        with open("/run/agent-lane/netpolicy", "w") as f:
            f.write(text + "\n")


def check(mode, probe=22):
    script = subprocess.run([PRINT, mode, "check", str(probe)], check=True,
                            capture_output=True, text=True).stdout
    env = dict(os.environ, HOME=HOME,
               PATH=BIN + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
    r = subprocess.run(["nsenter", "-t", str(G), "-n", "sh", "-c", script],
                       capture_output=True, text=True, env=env)
    return r.returncode, r.stdout.strip()


# Host side: the addresses a guest could aim at.
HOST_ADDRS = ["192.168.5.2/24", "192.168.5.3/24", "1.1.1.1/32", "10.0.0.1/32",
              "172.17.0.1/32", "169.254.169.254/32", "100.100.100.100/32",
              "192.168.1.1/32"]
# /run is this test's own (a tmpfs in the mount namespace of netpolicy.sh).
if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"]).returncode != 0:
    print("not ok 1 - cannot mount a private /run")
    sys.exit(1)
sh("ip", "link", "set", "lo", "up")
# Its pid is the guest's once it has said so from its own namespace.
guest = subprocess.Popen(["unshare", "-n", "sh", "-c", "echo in; exec sleep 120"],
                         stdout=subprocess.PIPE)
guest.stdout.readline()
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
# An internet lane with secrets has a proxy: its port, and only it, opens.
EXPECT_INTERNET_PROXY = [B, B, R, R, R, B, R, R, B, B, B, B, B]


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
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.168.5.15", 22)); s.listen(1); s.settimeout(5)
sys.stdout.write("listening\n"); sys.stdout.flush()
try:
    c, _ = s.accept(); c.sendall(b"SSH-2.0-guest\r\n" + c.recv(100))
except OSError:
    pass
'''


def ssh_reply():
    srv = subprocess.Popen(["nsenter", "-t", str(G), "-n",
                            "python3", "-c", SERVER], stdout=subprocess.PIPE, text=True)
    srv.stdout.readline()   # it listens: no race with a loaded machine
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
    srv.stdout.close()
    return got == b"SSH-2.0-guest\r\nhello"


base = probe_all()
report(all(x == R for x in base), "without rules every target is reachable (%s)" % base)
report(ssh_reply(), "without rules a connection from 192.168.5.2 gets the guest's reply")

set_sudo(False)
set_stamp("internet enforced")
rc, out = check("internet")
report(rc == 1 and "192.168.5.2:22 answered the guest (reachable)" in out,
       "check: without rules the probe reaches 192.168.5.2 and the check fails (%s)" % out)

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

def provision(mode, port=PROXY_PORT, *flags):
    """Runs the system provision script of the mode's lane YAML in the
    guest (port: its proxy's; an internet lane has one only with secrets;
    flags: al-netpolicy-print's, e.g. docker), with {{.User}} expanded as
    Lima does. The script edits sudoers: /etc/sudoers and /etc/sudoers.d
    are this test's own copies (bind mounts in this mount namespace), never
    the host's."""
    text = subprocess.run([PRINT, mode, "yaml", str(port)] + list(flags), check=True,
                          capture_output=True, text=True).stdout
    body = text.split("  script: |\n", 1)[1]
    script = "".join(l[4:] + "\n" for l in body.split("\n") if l)
    script = script.replace("{{.User}}", LANE_USER)
    return subprocess.run(["nsenter", "-t", str(G), "-n", "sh", "-c", script],
                          capture_output=True, text=True)


def private_sudoers():
    os.makedirs("/run/np-sudoers.d", exist_ok=True)
    with open("/run/np-sudoers", "w") as f:
        f.write("root ALL=(ALL:ALL) ALL\n")
    for src, dst in (("/run/np-sudoers.d", "/etc/sudoers.d"),
                     ("/run/np-sudoers", "/etc/sudoers")):
        if not os.path.exists(dst):
            if src.endswith(".d"):
                os.makedirs(dst)
            else:
                open(dst, "w").close()
        if subprocess.run(["mount", "--bind", src, dst]).returncode != 0:
            print("not ok 1 - cannot bind a private %s" % dst)
            sys.exit(1)


def plant(path, text):
    with open(path, "w") as f:
        f.write(text)


private_sudoers()
# User namespaces, first: every provision without Docker sets the limit
# to 0 for the rest of this test. The script writes this test's own user namespace's
# limit (/proc/sys/user is per user namespace), which stands for the guest
# kernel's; Debian's global kernel.unprivileged_userns_clone is not ours
# to write, so a stand-in file is mounted over it where it exists.
CLONE = "/proc/sys/kernel/unprivileged_userns_clone"
if os.path.exists(CLONE):
    with open("/run/np-userns-clone", "w") as f:
        f.write("1\n")
    sh("mount", "--bind", "/run/np-userns-clone", CLONE)


def userns_nft():
    """What `unshare -Urn nft add table ...` gives a user here."""
    r = subprocess.run(["unshare", "-Urn", "nft", "add", "table", "inet", "np-userns"],
                       capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


rc, err = userns_nft()
report(rc == 0, "control: before provisioning, unshare -Urn nft add table works (%s)" % err)
r = provision("internet", PROXY_PORT, "docker")
rc, err = userns_nft()
report(r.returncode == 0 and rc == 0,
       "a lane with Docker: the provision script keeps user namespaces (%s)" % (err or r.stderr.strip()[:200]))
r = provision("internet")
rc, err = userns_nft()
limit = open("/proc/sys/user/max_user_namespaces").read().strip()
report(r.returncode == 0 and rc != 0 and limit == "0",
       "a lane without Docker: unshare -Urn nft add table fails (limit %s: %s)" % (limit, err))
if os.path.exists(CLONE):
    report(open(CLONE).read().strip() == "0", "and kernel.unprivileged_userns_clone is 0")


# What cloud-init writes for Lima 2.2's passwordlessSudo: false.
plant("/etc/sudoers.d/90-cloud-init-users",
      "# Created by cloud-init\n\n# User rules for %s\n%s ALL=(ALL) ALL\n"
      % (LANE_USER, LANE_USER))
set_stamp(None)
r = provision("internet")
report(r.returncode == 0 and not os.path.exists("/etc/sudoers.d/90-cloud-init-users"),
       "the provision script removes cloud-init's sudo rule for the lane user (%s)"
       % r.stderr.strip()[:200])
plant("/etc/sudoers", "root ALL=(ALL:ALL) ALL\n%s ALL=(ALL) NOPASSWD: ALL\n" % LANE_USER)
set_stamp(None)
r = provision("internet")
report(r.returncode != 0 and not os.path.exists("/run/agent-lane/netpolicy")
       and "a sudo rule still names" in r.stderr,
       "a sudo rule for the lane user that it cannot remove fails it, with no stamp (%s)"
       % r.stderr.strip()[:200])
plant("/etc/sudoers", "root ALL=(ALL:ALL) ALL\n# %s is not allowed\n" % LANE_USER)
set_stamp(None)
r = provision("internet")
report(r.returncode == 0, "a comment naming the user is not a rule (%s)" % r.stderr.strip()[:200])
sh("nft", "delete", "table", "inet", "agentlane", ns=G)


# The rules load while a forwarded ssh session is open, and its next
# packet is the guest's (sshd answering a command that was already
# running): conntrack, which the rules switch on, picks the connection up
# mid-stream and calls that first packet new. Seen on real Lima 2.2: the
# hostagent's readiness probe hung until another session sent a packet.
MIDSTREAM = r'''
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.168.5.15", 22)); s.listen(1); s.settimeout(5)
sys.stdout.write("listening\n"); sys.stdout.flush()
c, _ = s.accept()
c.recv(10)
sys.stdout.write("accepted\n"); sys.stdout.flush()
sys.stdin.readline()          # the rules are loaded now
c.sendall(b"reply-after-load")
time.sleep(3)
'''


def midstream_reply(rules):
    srv = subprocess.Popen(["nsenter", "-t", str(G), "-n", "python3", "-c", MIDSTREAM],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    srv.stdout.readline()
    got = b""
    try:
        c = socket.create_connection(("192.168.5.15", 22), timeout=3,
                                     source_address=("192.168.5.2", 0))
        c.sendall(b"cmd")
        srv.stdout.readline()
        r = subprocess.run(["nsenter", "-t", str(G), "-n", "nft", "-f", "-"],
                           input=rules, capture_output=True, text=True)
        if r.returncode != 0:
            return "nft: " + r.stderr.strip()
        srv.stdin.write("go\n")
        srv.stdin.flush()
        c.settimeout(2.5)
        try:
            got = c.recv(100)
        except socket.timeout:
            got = b"(nothing)"
    finally:
        srv.kill()
        srv.wait()
        sh("nft", "delete", "table", "inet", "agentlane", ns=G)
    return got.decode(errors="replace")


def ruleset(mode):
    return subprocess.run([PRINT, mode, "rules", str(PROXY_PORT)], check=True,
                          capture_output=True, text=True).stdout


WITHOUT_SSHD = "".join(l + "\n" for l in ruleset("internet").splitlines()
                       if "tcp sport 22" not in l)
got = midstream_reply(WITHOUT_SSHD)
report(got == "(nothing)",
       "the control: without the sshd rule, a session open while the rules load loses its reply (%s)" % got)
for mode in ("internet", "none", "allow"):
    got = midstream_reply(ruleset(mode))
    report(got == "reply-after-load",
           "%s: a session open while the rules load still gets the guest's reply (%s)" % (mode, got))

# The internet lane with secrets first: its proxy port opens, nothing else.
set_stamp(None)
r = provision("internet", PROXY_PORT)
got = probe_all()
report(r.returncode == 0, "internet with secrets: the provision script loads (%s)" % r.stderr.strip()[:200])
for (h, p, pr, what), want, res in zip(TARGETS, EXPECT_INTERNET_PROXY, got):
    report(res == want, "internet with secrets: %s %s:%d/%s is %s" % (what, h, p, pr, res))
report(ssh_reply(), "internet with secrets: replies to a connection from 192.168.5.2 still pass")


for mode in ("internet", "none", "allow"):
    set_stamp(None)
    r = provision(mode, 0 if mode == "internet" else PROXY_PORT)
    stamp = open("/run/agent-lane/netpolicy").read().strip() if r.returncode == 0 else ""
    report(r.returncode == 0 and stamp == mode + " enforced",
           "%s: the provision script loads the rules and stamps '%s' (%s)" % (mode, stamp, r.stderr.strip()[:200]))
    got = probe_all()
    for (h, p, pr, what), want, res in zip(TARGETS, EXPECT[mode], got):
        report(res == want, "%s: %s %s:%d/%s is %s" % (mode, what, h, p, pr, res))
    report(ssh_reply(), "%s: replies to a connection from 192.168.5.2 (forwarded ssh) still pass" % mode)
    set_stamp(mode + " enforced")
    rc, out = check(mode)
    report(rc == 0 and out == "ok " + mode, "%s: the pre-ready check passes (%s)" % (mode, out))
    set_stamp(None)
    rc, out = check(mode)
    report(rc == 1 and "no policy stamp" in out, "%s: without the stamp the check fails (%s)" % (mode, out))
    set_stamp("internet advisory" if mode != "internet" else "none enforced")
    rc, out = check(mode)
    report(rc == 1 and "the stamp says" in out, "%s: another mode's stamp fails the check (%s)" % (mode, out))
    set_stamp(mode + " enforced")
    set_sudo(True)
    rc, out = check(mode)
    report(rc == 1 and "passwordless sudo" in out, "%s: passwordless sudo fails the check (%s)" % (mode, out))
    set_sudo(False, password="d2851dad932f71d0")
    rc, out = check(mode)
    report(rc == 1 and "~/password" in out,
           "%s: a password in ~/password that opens sudo fails the check (%s)" % (mode, out))
    set_sudo(False)
    # Loading again replaces the table (provisioning runs at every boot).
    r = provision(mode, 0 if mode == "internet" else PROXY_PORT)
    lst = sh("nft", "list", "ruleset", ns=G).stdout
    report(r.returncode == 0 and lst.count("table inet agentlane") == 1,
           "%s: a second load replaces the table" % mode)

guest.kill()
guest.wait()
print("# %d checks, %d failed" % (n, failed))
sys.exit(1 if failed else 0)
