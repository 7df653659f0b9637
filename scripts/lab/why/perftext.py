"""Reading perf's printed text (c2c report, stat --topdown, mem report): the hardware tier's parsers
(why/c2creport.py, why/topdown.py, why/perfmem.py) take a received run's raw text, which is hostile
input. Every refusal is one PerfTextError whose str() is one line `what:LINE: message`; no parser lets
another exception out. The bounds are far above what perf prints for one program (a c2c report of a
large server is a few MB) and far below what would slow a reader down."""
import re

from lab.errors import LabError

MAX_CHARS = 16 * 2 ** 20     # characters of one report
MAX_LINES = 200000
MAX_LINE = 4096              # characters of one line (a c2c Pareto row with a long C++ symbol is ~400)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class PerfTextError(LabError):
    """A perf text the parsers refuse; str() is one line, `what:line: message`."""

    def __init__(self, what, line, message):
        # whatever came from the input is shown short and printable: the message stays one line
        text = _CONTROL.sub("?", f"{what}:{int(line)}: {message}").replace("\n", " ").replace("\r", " ")
        super().__init__(text[:300])


def lines(text, what):
    """The text's lines, after the bounds: (1-based number, line) pairs."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        raise PerfTextError(what, 0, f"expected text, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise PerfTextError(what, 0, f"more than {MAX_CHARS} characters")
    if "\x00" in text:
        raise PerfTextError(what, text[:text.index("\x00")].count("\n") + 1, "a NUL byte: not perf's text")
    out = text.splitlines()
    if len(out) > MAX_LINES:
        raise PerfTextError(what, MAX_LINES + 1, f"more than {MAX_LINES} lines")
    for n, line in enumerate(out, 1):
        if len(line) > MAX_LINE:
            raise PerfTextError(what, n, f"a line over {MAX_LINE} characters")
    return list(enumerate(out, 1))


def short(token):
    """A token as an error message quotes it."""
    return repr(token[:40] + ("…" if len(token) > 40 else ""))


def integer(token, what, n):
    if not re.fullmatch(r"\d{1,20}", token):
        raise PerfTextError(what, n, f"expected a count, got {short(token)}")
    return int(token)


def hexnum(token, what, n):
    if not re.fullmatch(r"0x[0-9a-fA-F]{1,16}", token):
        raise PerfTextError(what, n, f"expected a hex address, got {short(token)}")
    return int(token, 16)


def percent(token, what, n):
    """'12.30%', '12.3' or a locale's '24,2' → 12.3 (perf prints percentages with the locale's comma)."""
    t = token.rstrip("%")
    if not re.fullmatch(r"-?\d{1,6}(?:[.,]\d{1,6})?", t):
        raise PerfTextError(what, n, f"expected a percentage, got {short(token)}")
    return float(t.replace(",", "."))
