"""The spec's `clients` key: its grammar (load generators on other hosts, run by lab/fleet/clients.py).
The spec owns the value's shape, so the engine checks it before anything runs without importing the
fleet side."""
import re

from lab.errors import LabError

DEST = re.compile(r"(?:[a-z_][a-z0-9_-]{0,31}@)?[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MOST_CLIENTS = 16


class ClientError(LabError):
    """A client list or remote step that failed; str() is the one line to show (it names the host)."""


def parse(value):
    """The spec's `clients` value (DEST[,DEST…]) as a list; [] for none."""
    if not value:
        return []
    dests = value.split(",")
    if len(dests) > MOST_CLIENTS or not all(DEST.fullmatch(d) for d in dests) or len(set(dests)) != len(dests):
        raise ClientError(f"clients={value!r}: want DEST[,DEST…], at most {MOST_CLIENTS} different ssh "
                          "destinations ([user@]host: letters, digits, '.', '_', '-')")
    return dests
