"""The run's journal: sweep/journal.jsonl (one event per line, what the report reads) and
sweep/journal.log (the same events worded for people). Events and their keys: docs/design.md."""
import json
import os
import sys
import time

from lab.core.runfolder import EVENT_KEY, RunFolderError, read_file
from lab.core.term import visible
from lab.errors import LabError

POINT_KEYS = ("experiment", "variant", "placement", "threads", "cpus", "repeat", "key")


def drop_torn_tail(path):
    """A line cut short (kill -9, a full disk) ends the file without a newline: cut it off, so the
    next event starts on a line of its own. Returns the bytes dropped."""
    try:
        with open(path, "rb+") as f:
            size = f.seek(0, os.SEEK_END)
            if not size:
                return 0
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return 0
            keep = size
            while keep > 0:             # back to the last newline, a block at a time
                start = max(0, keep - 65536)
                f.seek(start)
                block = f.read(keep - start)
                nl = block.rfind(b"\n")
                if nl >= 0:
                    keep = start + nl + 1
                    break
                keep = start
            f.truncate(keep)
            return size - keep
    except FileNotFoundError:
        return 0


class Journal:
    def __init__(self, jsonl_path, log_path, quiet=False):
        torn = drop_torn_tail(jsonl_path)
        if torn:
            print(f"warning: {jsonl_path} ended in a line cut short ({torn} bytes): dropped", file=sys.stderr)
        # appended, not rewritten through runfolder.write_atomic_text: a journal grows by one event at a
        # time while the sweep runs (a whole rewrite per event is quadratic), and a line cut short is
        # dropped above, so a reader never takes half an event for one
        self.jsonl = open(jsonl_path, "a")
        self.log = open(log_path, "a")
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


class JournalError(LabError, ValueError):
    """A journal line that is not an event, named by file:line."""


def read(path):
    """Events of a journal.jsonl ([] when there is none). The last line cut short by kill -9 or a
    full disk is dropped with a warning (the sweep resumes from the rest), and so is a cut-short
    event that an older engine then appended to; any other bad line is a JournalError."""
    try:
        text = read_file(path, "journal")
    except RunFolderError as e:
        raise JournalError(str(e)) from None
    if text is None:
        return []
    lines = text.splitlines(keepends=True)
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except RecursionError:
            raise JournalError(f"{path}:{n}: nested too deeply to be an event") from None
        except ValueError as e:
            if n == len(lines) and not line.endswith("\n"):
                print(f"warning: {path}:{n}: a line cut short, left out", file=sys.stderr)
                break
            ev = joined(line)
            if ev is None:
                raise JournalError(f"{path}:{n}: not JSON ({e.msg})") from None
            print(f"warning: {path}:{n}: an event cut short before another, left out", file=sys.stderr)
        if not isinstance(ev, dict) or "event" not in ev:
            raise JournalError(f"{path}:{n}: not a journal event (no \"event\" key)")
        if ev.get("key") is not None and not EVENT_KEY.fullmatch(str(ev["key"])):
            # the key names a raw folder the report reads and links: a repeat's name, never `../`
            raise JournalError(f"{path}:{n}: event key {str(ev['key'])[:80]!r} is not a repeat's name")
        out.append(ev)
    return out


def joined(line):
    """The whole event at the end of a line that starts with a cut-short one, or None."""
    at = line.rfind('{"ts": ')
    if at <= 0:
        return None
    try:
        ev = json.loads(line[at:])
    except (ValueError, RecursionError):
        return None
    return ev if isinstance(ev, dict) else None
