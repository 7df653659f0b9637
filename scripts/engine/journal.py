"""The run's journal: sweep/journal.jsonl (one event per line, what the report reads) and
sweep/journal.log (the same events worded for people). Events and their keys: docs/design.md."""
import json
import sys
import time

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
                print(line, file=sys.stderr, flush=True)


def read(path):
    """Events of a journal.jsonl; a last line cut short by kill -9 is dropped, not an error."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    except FileNotFoundError:
        pass
    return out
