"""A run folder in formats others read: the lab's own documented JSON (docs/run-format.md, schema
docs/run-format.schema.json), Bencher's Metric Format, and hyperfine's export. Each takes the Run the
model read once (lab/core/run.py, lab/report/model.py: its numbers, never recomputed): `document(run)`
is the Run as the JSON document, bmf(run) and hyperfine(run) the Run in theirs: each reads the Run, none
reshapes another's output."""
from .bmf import bmf
from .document import FORMAT, VERSION, document
from .hyperfine import hyperfine

__all__ = ["FORMAT", "VERSION", "document", "bmf", "hyperfine", "FORMATS"]

FORMATS = {"json": document, "bmf": bmf, "hyperfine": hyperfine}
