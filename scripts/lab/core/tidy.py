#!/usr/bin/env python3
"""The lab's one CSV schema, and the small operations the drivers do on it.

  tidy.py fill KEY=VALUE… FILE…  > schema rows (no header)
      Fills the columns the instrument did not print from the sweep point; rejects a row whose
      value is not a finite number or that lacks metric/value/unit (exit 3, names the line).
"""
import csv
import io
import math
import os
import sys

from lab.core.runfolder import LIMITS, RunFolderError, read_csv, write_atomic_text
from lab.errors import program, run

# `suspect` is empty for a clean repeat, else why the interference guard distrusts it ("steal 31% >
# 10%"). Runs made before it existed have ten columns: read() gives them an empty one.
COLUMNS = ["run_id", "experiment", "variant", "placement", "threads", "cpus", "repeat",
           "metric", "value", "unit", "suspect"]


# No instrument measures beyond this magnitude; a received run's 1.7e308 would overflow the
# statistics and the chart scales, so it is refused like NaN.
MAX_VALUE = 1e18


def measured(text):
    """A value cell (or number) as the float it measures, or ValueError saying why it is no measurement."""
    try:
        v = float(text)
    except (TypeError, ValueError, OverflowError):     # OverflowError: a 400-digit whole number
        raise ValueError(f"value {text!r} is not a number") from None
    if not math.isfinite(v):
        raise ValueError(f"value {text} is not finite")
    if abs(v) > MAX_VALUE:
        raise ValueError(f"value {text} is beyond ±{MAX_VALUE:g}")
    return v


def value_problem(text):
    """Why a value cell is no measurement, or "" when it is one."""
    try:
        measured(text)
    except ValueError as e:
        return str(e)
    return ""


def read(path):
    """Rows of a tidy CSV file as dicts (the lab's own files; header included)."""
    if not os.path.lexists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    rows = read_csv(path)       # a regular file of the run, bounded (runfolder.read_file)
    for r in rows:
        r["suspect"] = r.get("suspect") or ""
    return rows


def write_atomic(path, rows, header=True):
    """Write rows (dicts) so that a reader never sees half a file (runfolder's one atomic writer); never
    more than the readers accept (runfolder.LIMITS["csv"]): an import that would is refused (RunFolderError)."""
    out = io.StringIO()
    w = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    if header:
        w.writeheader()
    w.writerows(rows)
    text = out.getvalue()
    if len(text) > LIMITS["csv"]:
        raise RunFolderError(f"{path}: {len(text) >> 20} MiB of rows, more than the lab's readers accept "
                             f"({LIMITS['csv'] >> 20} MiB): not written")
    write_atomic_text(path, text)


def fill(point, text):
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines:
        raise ValueError("the command printed no CSV")
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    missing = {"metric", "value", "unit"} - set(reader.fieldnames or [])
    if missing:
        raise ValueError(f"CSV header {reader.fieldnames} lacks {sorted(missing)}")
    unknown = set(reader.fieldnames) - set(COLUMNS)
    if unknown:
        raise ValueError(f"CSV header has columns outside the schema: {sorted(unknown)}")
    out = []
    for n, row in enumerate(reader, start=2):
        why = value_problem(row["value"])
        if why:
            raise ValueError(f"line {n}: {why}")
        if not row["metric"]:
            raise ValueError(f"line {n}: empty metric")
        merged = dict(point)
        merged.update({k: v for k, v in row.items() if v not in (None, "")})
        out.append(merged)
    if not out:
        raise ValueError("the command printed a header but no rows")
    return out


@program("tidy")
def main(argv):
    if argv[:1] == ["fill"]:
        point = dict(a.split("=", 1) for a in argv[1:] if "=" in a)
        try:
            rows = []
            for path in (a for a in argv[1:] if "=" not in a):
                with open(path) as f:
                    rows += fill(point, f.read())
        except ValueError as e:
            print(f"tidy: {e}", file=sys.stderr)
            return 3
        w = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
        w.writerows({k: r.get(k, "") for k in COLUMNS} for r in rows)
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    run(main)
