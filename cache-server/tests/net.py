"""Loopback helpers shared by the differential tests (diff.py, difffuzz.py)."""
import socket
import time


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
