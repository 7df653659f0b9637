"""Loopback helpers shared by the differential and socket tests (diff.py, difffuzz.py, sockets.py, …)."""
import os
import socket
import subprocess
import time


def launch(argv, port_file, secs=10.0, **popen):
    """Starts a server whose argv asks for `-p 0 --port-file port_file` (a prefix such as prlimit may
    come first) and waits for the port it writes once listening (atomically: a temporary file, then
    rename). Returns (process, port); port is None when the process exited first or wrote none in secs."""
    if os.path.exists(port_file):
        os.unlink(port_file)
    p = subprocess.Popen(argv, **popen)
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if os.path.exists(port_file):
            with open(port_file) as f:
                return p, int(f.read())
        if p.poll() is not None:
            break
        time.sleep(0.05)
    return p, None


def must_launch(argv, port_file, **popen):
    """launch(), for a test that cannot go on without the server: its port, or an exception naming it."""
    p, port = launch(argv, port_file, **popen)
    if port is None:
        p.kill()
        p.wait()
        raise RuntimeError(f"{' '.join(argv)} did not start (exit {p.returncode})")
    return p, port


def talk(port, data):
    """Send data, half-close, and read every reply byte until the server closes (or 5 s pass)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    out = b""
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            out += d
    except (socket.timeout, ConnectionResetError):
        out += b"<timeout/reset>"
    s.close()
    return out


def wait_port(port, secs=5.0):
    t = time.time() + secs
    while time.time() < t:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def ask(port, data, until=b"\r\n", timeout=5):
    """Send data on a new connection and read until the reply ends with `until` (or timeout s)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    deadline = time.monotonic() + timeout
    while not out.endswith(until) and time.monotonic() < deadline:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        out += d
    s.close()
    return out


def stat_line(port, name):
    """One `stats` value of a running server as text, None when absent."""
    for line in ask(port, b"stats\r\n", b"END\r\n").split(b"\r\n"):
        p = line.split(b" ")
        if len(p) == 3 and p[1] == name.encode():
            return p[2].decode()
    return None


def stat(port, name):
    """One numeric `stats` value of a running server, -1 when absent."""
    v = stat_line(port, name)
    return -1 if v is None else int(v.split(".")[0])


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def server_args(spec):
    """A server variant as the tests name it, MODE or MODE+BACKEND (`sharded+io_uring`), as options."""
    mode, _, backend = spec.partition("+")
    return ["--lock-mode", mode] + (["--io-backend", backend] if backend else [])
