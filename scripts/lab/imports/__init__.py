"""Result files of other tools (and the lab's own export) as runs of the lab.

`read(path, threads_name)` recognises a file by its content, never its name, and gives an `Imported`:
tidy rows per experiment, the charts its report draws, and what the file says of its machine. One
module per format (hyperfine, gbench, pyperf, labrun) turns a parsed document into that; `jsonfile`
bounds and parses the text; `runwriter` writes the run folder. A file is data: nothing in it is run.
"""
from . import gbench, hyperfine, labrun, pyperf
from .jsonfile import BadInput, load
from .model import Imported

__all__ = ["BadInput", "Imported", "read", "FORMATS"]

# Tried in this order: the first whose `recognise(doc)` is true reads the file.
FORMATS = (labrun, hyperfine, gbench, pyperf)


def read(path, threads_name=None):
    doc = load(path)
    for fmt in FORMATS:
        if fmt.recognise(doc):
            return fmt.parse(doc, path, threads_name)
    keys = ", ".join(sorted(doc)[:6]) if isinstance(doc, dict) else type(doc).__name__
    raise BadInput(f"{path}: not a result file this lab reads (hyperfine --export-json, Google Benchmark "
                   f"--benchmark_format=json, pyperf JSON, or ./lab export json); top level holds: {keys}")
