"""The run's journal: sweep/journal.jsonl (one event per line, what the report reads) and
sweep/journal.log (the same events worded for people). Events and their keys: docs/design.md."""
import json
import sys
import time

from term import visible

POINT_KEYS = ("experiment", "variant", "placement", "threads", "cpus", "repeat", "key")


class Journal:
    def __init__(self, folder, quiet=False):
        self.jsonl = open(f"{folder}/journal.jsonl", "a")
        self.log = open(f"{folder}/journal.log", "a")
        self.quiet = quiet

    def event(self, event, text=None, **fields):
        """Append one event; `text` is the human line (also printed on stderr)."""
        rec = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "event": event, **fields}
        self.jsonl.write(json.dumps(rec, sort_keys=False) + "\n")
        self.jsonl.flush()
        if text:
            line = f"{time.strftime('%H:%M:%S', time.gmtime())} {text}"
            self.log.write(line + "\n")
            self.log.flush()
            if not self.quiet:
                print(visible(line), file=sys.stderr, flush=True)


class JournalError(ValueError):
    """A journal line that is not an event, named by file:line."""


def read(path):
    """Events of a journal.jsonl ([] when there is none). The last line cut short by kill -9 is
    dropped (the sweep resumes from the rest); any other bad line is a JournalError."""
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()
    except FileNotFoundError:
        return []
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except ValueError as e:
            if n == len(lines) and not line.endswith("\n"):
                break
            raise JournalError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(ev, dict) or "event" not in ev:
            raise JournalError(f"{path}:{n}: not a journal event (no \"event\" key)")
        out.append(ev)
    return out
