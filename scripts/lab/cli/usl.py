#!/usr/bin/env python3
"""Fit the Universal Scalability Law to a scaling curve measured anywhere.

  usl.py FILE.csv [metric=higher|lower]

FILE.csv has a header and two columns: `threads` and the metric (`throughput`, or any name), one
observation a row, in either order; a thread count may repeat (every repeat is used). Values are finite
positive numbers (at most 1e18, as every value the lab reads); at most 1,000,000 rows.
metric=lower: the values are lower-is-better (the wall time of
a fixed amount of work) and the model is fitted to 1/value.
Prints sigma, kappa, lambda and the peak, one a line with its 95% interval, then the words
(scripts/lab/why/usl.py says how the fit and its intervals are made).
Exit: 0 fitted (or no fit, with the reason and the efficiency at each step), 2 bad input (one line naming
FILE:LINE).
"""
import csv
import re
import sys

from lab.core.runfolder import RunFolderError, open_given
from lab.core.tidy import value_problem
from lab.errors import LabError, program, run
from lab.why import usl

MAX_ROWS, MAX_LINE = 1_000_000, 1024
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}$")


class InputError(LabError):
    pass


def number(path, line, column, text):
    """A measured positive number from one cell (tidy's rule for a value), or an InputError naming FILE:LINE."""
    text = text.strip()
    why = value_problem(text)
    if not why and float(text) <= 0:
        why = f"value {text[:40]} is not positive"
    if why:
        raise InputError(f"{path}:{line}: {why.replace('value', column, 1)[:200]}")
    return float(text)


def read(path):
    """(threads, values, metric name) from FILE.csv; InputError on the first bad line."""
    try:    # bytes: a line is decoded alone, so a bad byte is named on its own line; a regular file only
        f = open_given(path, "CSV file")
    except RunFolderError as e:
        raise InputError(str(e)) from None
    threads, values, header, no = [], [], None, 0
    with f:
        while True:
            no += 1
            raw = f.readline(MAX_LINE + 1)            # bounded: a line without an end is not read whole
            if not raw:
                break
            if len(raw) > MAX_LINE:
                raise InputError(f"{path}:{no}: line longer than {MAX_LINE} bytes")
            if no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]       # a UTF-8 byte order mark (a spreadsheet's "CSV UTF-8"): not part of the header
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{path}:{no}: not UTF-8 text") from None
            if not text.strip():
                continue
            cells = next(csv.reader([text]))
            if header is None:
                header = [c.strip() for c in cells]
                if (len(header) != 2 or "threads" not in header or header[0] == header[1]
                        or not all(NAME.match(c) for c in header)):
                    raise InputError(f"{path}:{no}: the header must name two columns, `threads` and the "
                                     f"metric (e.g. threads,throughput), not {text.strip()[:80]!r}")
                t_col = header.index("threads")
                continue
            if len(cells) != 2:
                raise InputError(f"{path}:{no}: {len(cells)} cells, 2 expected ({','.join(header)})")
            if len(threads) == MAX_ROWS:
                raise InputError(f"{path}:{no}: more than {MAX_ROWS} rows")
            threads.append(number(path, no, "threads", cells[t_col]))
            values.append(number(path, no, header[1 - t_col], cells[1 - t_col]))
    if header is None:
        raise InputError(f"{path}:1: empty: a header `threads,throughput` and rows are expected")
    if not threads:
        raise InputError(f"{path}:{no - 1}: no rows after the header")
    return threads, values, header[1 - t_col]


@program("usl")
def main(argv):
    files = [a for a in argv if "=" not in a]
    keys = dict(a.split("=", 1) for a in argv if "=" in a)
    bad = sorted(set(keys) - {"metric"})
    if len(files) != 1 or bad or keys.get("metric", "higher") not in ("higher", "lower"):
        why = (f"unknown key {bad[0]}=" if bad else "metric= is higher or lower" if len(files) == 1
               else "one FILE.csv is needed")
        print(f"usl: {why}\n{__doc__.strip()}", file=sys.stderr)
        return 2
    threads, values, _name = read(files[0])
    fit = usl.fit(threads, values, lower=keys.get("metric") == "lower")
    print("\n".join(usl.lines(fit)))
    return 0


if __name__ == "__main__":
    run(main)
