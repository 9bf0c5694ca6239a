"""al-proxy-harness driven from Python, for tests/regress/proxy.py and
proxytls.py (and bench/proxytls.py). Test code, never installed."""
import resource
import socket
import subprocess
import threading
import time


class Harness:
    """One al-proxy-harness: its port, and its records as they come."""

    def __init__(self, harness, *args, nofile=None, stderr=None):
        def limit():
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        self.p = subprocess.Popen([harness] + list(args), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=stderr,
                                  text=True, preexec_fn=limit)
        line = self.p.stdout.readline()
        assert line.startswith("port "), line
        self.port = int(line.split()[1])
        self.events = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            with self.lock:
                self.events.append(line.rstrip("\n"))

    def wait_event(self, needle, timeout=3.0):
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                for e in self.events:
                    if needle in e:
                        return e
            time.sleep(0.02)
        return None

    def conn(self):
        c = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        return c

    def ask(self, head, extra=b""):
        """Sends a head; returns (socket, status line)."""
        c = self.conn()
        c.sendall(head + extra)
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(4096)
            if not d:
                break
            buf += d
        status = buf.split(b"\r\n", 1)[0].decode("latin-1")
        return c, status, buf

    def count(self, needle):
        with self.lock:
            return sum(1 for e in self.events if needle in e)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)
        self.reader.join(timeout=5)
        return self.p.returncode
