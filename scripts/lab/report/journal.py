"""A run's sweep journal as events: sweep/journal.jsonl (one JSON object per line, written by the
engine). The report reads events only from here; no other file parses journal wording."""
import os

from lab.engine.journal import JournalError  # noqa: F401  (JournalError: re-exported)
from lab.engine.journal import read as read_jsonl
from lab.topology.topo import POLICIES


def point_of(ev):
    """(experiment, variant, placement, threads, repeat) of a point event, as strings."""
    return tuple("" if ev.get(k) is None else str(ev[k])
                 for k in ("experiment", "variant", "placement", "threads", "repeat"))


class Journal:
    def __init__(self, rf):
        self.structured = os.path.exists(rf.journal_path)
        self.events = read_jsonl(rf.journal_path) if self.structured else []

    def of(self, kind, experiment=None):
        return [e for e in self.events if e.get("event") == kind
                and (experiment is None or e.get("experiment") == experiment)]

    def shared(self, experiment):
        """{(variant, placement, threads): the placement it was measured as} of points measured once for
        several placements (the engine's `skipped` events with `same_as`; plan.shared); text as written,
        matched against the data's own cells by the model."""
        out = {}
        for e in self.of("skipped", experiment):
            # placements are the policies' names: a received journal cannot add curves of its own
            if isinstance(e.get("same_as"), str) and e["same_as"] != e.get("placement") and \
                    e["same_as"] in POLICIES and e.get("placement") in POLICIES:
                out[(str(e.get("variant") or ""), str(e.get("placement")), str(e.get("threads")))] = e["same_as"]
        return out

    def skipped(self, experiment):
        """["PLACEMENT threads=N: reason", …] without repeats, in journal order."""
        seen = []
        for e in self.of("skipped", experiment):
            if e.get("same_as"):        # measured, as another placement: shown as a shared point, not skipped
                continue
            s = f"{e.get('placement', '?')} threads={e.get('threads', '?')}: {e.get('reason', 'no reason given')}"
            if s not in seen:
                seen.append(s)
        return seen

    def experiments_skipped(self):
        """{experiment: reason} of experiments not measured at all (missing tool, failed build/setup)."""
        out = {}
        for e in self.events:
            kind = e.get("event")
            if kind in ("experiment_skipped", "build_failed", "setup_failed"):
                why = e.get("reason", "no reason given")
                if kind != "experiment_skipped":
                    why = f"{kind.replace('_', ' ')} (exit {e.get('rc', '?')}): {why}"
                out[e.get("experiment", "?")] = why
        return out

    def by_point(self, kind, experiment):
        """{(variant, placement, threads, repeat): [event, …]} of one kind of point event."""
        out = {}
        for e in self.of(kind, experiment):
            out.setdefault(point_of(e)[1:], []).append(e)
        return out

    def last_done(self, experiment):
        """{(variant, placement, threads, repeat): the last "started"/"done" event with a key/command}."""
        out = {}
        for kind in ("started", "done"):
            for k, evs in self.by_point(kind, experiment).items():
                merged = out.setdefault(k, {})
                for e in evs:
                    merged.update({x: e[x] for x in ("key", "command", "seconds", "noise") if x in e})
        return out
