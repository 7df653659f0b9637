"""A run folder in formats others read: the lab's own documented JSON (docs/run-format.md, schema
docs/run-format.schema.json), Bencher's Metric Format, and hyperfine's export. `document(run)` is the
one reading of the run (lab/report/model.py's numbers, never recomputed); bmf() and hyperfine() only
reshape it."""
from .bmf import bmf
from .document import FORMAT, VERSION, document
from .hyperfine import hyperfine

__all__ = ["FORMAT", "VERSION", "document", "bmf", "hyperfine", "FORMATS"]

FORMATS = {"json": document, "bmf": lambda run: bmf(document(run)), "hyperfine": lambda run: hyperfine(document(run))}
