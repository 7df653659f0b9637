"""A received JSON file, parsed within bounds, and the type checks every format's reader shares.

Bounds before parsing (a hostile file costs a stat and a scan of at most MAX_BYTES): size, objects,
values; while parsing: NaN/Infinity literals and numbers that overflow are refused, and nesting
beyond Python's recursion limit is refused by the decoder itself. Every refusal is one line naming
the file and, where there is one, the place in the document (`results[3].times[0]`)."""
import json
import math

from lab.core.runfolder import RunFolderError, read_given
from lab.core.tidy import MAX_VALUE
from lab.errors import LabError

MAX_BYTES = 64 << 20        # the largest real export seen is a few MB; a 64 MiB file is not a result file
MAX_OBJECTS = 200_000       # `{` in the text (an over-count: braces inside strings count too)
MAX_VALUES = 1_000_000      # `,` in the text: a bound on rows before any is built
MAX_TEXT = 4096             # characters of one name (a command, a benchmark's name)


class BadInput(LabError, ValueError):
    """A file the lab will not import; str() is the one line to print."""


def _constant(name):
    raise ValueError(f"{name} is not a finite number")


def _float(text):
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{text[:20]} is not a finite number")
    return v


def load(path):
    """The parsed document of a JSON file, or BadInput."""
    try:        # a regular file only (a FIFO never ends, /dev/zero never stops), at most MAX_BYTES
        data = read_given(path, MAX_BYTES, "result file")
    except RunFolderError as e:
        raise BadInput(str(e)) from None
    if data.count(b"{") > MAX_OBJECTS:
        raise BadInput(f"{path}: more than {MAX_OBJECTS} objects (benchmarks, commands, runs): not read")
    if data.count(b",") > MAX_VALUES:
        raise BadInput(f"{path}: more than {MAX_VALUES} values: not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text (byte {e.start}): not a JSON result file") from None
    try:
        return json.loads(text, parse_constant=_constant, parse_float=_float)
    except RecursionError:
        raise BadInput(f"{path}: nested too deeply: not a result file") from None
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}:{e.lineno}: not JSON ({e.msg}, column {e.colno})") from None
    except ValueError as e:      # from _constant / _float
        raise BadInput(f"{path}: {e}") from None


class Doc:
    """Type checks with the document's place in every message."""

    def __init__(self, path):
        self.path = path

    def bad(self, where, what):
        return BadInput(f"{self.path}: {where}: {what}")

    def obj(self, v, where):
        if not isinstance(v, dict):
            raise self.bad(where, f"expected an object, found {kind(v)}")
        return v

    def arr(self, v, where, most=MAX_VALUES):
        if not isinstance(v, list):
            raise self.bad(where, f"expected a list, found {kind(v)}")
        if len(v) > most:
            raise self.bad(where, f"more than {most} entries")
        return v

    def num(self, v, where, positive=False, signed=False):
        """A finite number within the tidy schema's bounds; negative only when signed (a tool's times,
        rates and sizes never are; the lab's own rows may be: a change in %)."""
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.bad(where, f"expected a number, found {kind(v)}")
        if isinstance(v, int) and abs(v) > MAX_VALUE:     # float() of a 400-digit integer overflows
            raise self.bad(where, f"a whole number of {v.bit_length()} bits is not a measurement "
                                  f"(at most {MAX_VALUE:g})")
        v = float(v)
        if not math.isfinite(v) or abs(v) > MAX_VALUE:
            raise self.bad(where, f"{v!r} is not a measurement (finite, at most {MAX_VALUE:g})")
        if (v < 0 and not signed) or (positive and v == 0):
            raise self.bad(where, f"{v!r} is not a {'positive' if positive else 'non-negative'} measurement")
        return v

    def text(self, v, where):
        if not isinstance(v, str):
            raise self.bad(where, f"expected a string, found {kind(v)}")
        if len(v) > MAX_TEXT:
            raise self.bad(where, f"longer than {MAX_TEXT} characters")
        return v

    def whole(self, v, where, lo=1, hi=4096):
        """A whole number in lo..hi given as a number or as digits (hyperfine's parameters are strings)."""
        if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) < 8:
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise self.bad(where, f"{str(v)[:20]!r} is not a whole number from {lo} to {hi}")
        return v


def kind(v):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(v), "a number")
