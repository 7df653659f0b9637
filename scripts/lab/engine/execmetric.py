"""A spec's `exec` and `metric` keys: any program as an argument vector, and numbers read from its stdout.

`exec` holds the command as a JSON array of words. It goes to execve as it is, after the prefix
(perf, numactl, taskset): no shell ever sees a word, so `$(…)`, `;` or quotes in a word are just
characters for the program. `{name}` inside a word is replaced by the point's value as plain text
(`-T{threads}` → `-T4`); a `{name}` the engine does not know is an error before anything runs.

`metric = NAME:REGEX[:UNIT[:higher|lower]]` reads NAME from the command's stdout: the last match of
REGEX (multi-line mode: `^` and `$` match at every line), its first group if it has one, else the whole
match. A regex holding `:` must be followed by `:UNIT:higher|lower`, so the split is never a guess.
"""
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass

from lab.core.tidy import value_problem

WORD_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_WORDS = 256
MAX_WORD = 4096
MAX_REGEX = 300
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
UNIT = re.compile(r"[A-Za-z0-9/%._*^-]{0,16}")
DIRECTIONS = ("higher", "lower")
TIME_UNITS = ("s", "ms", "us", "µs", "ns", "min")


def parse_exec(text, known):
    """The words of an `exec` value; ValueError says what is wrong."""
    try:
        words = json.loads(text)
    except ValueError as e:
        raise ValueError(f"a JSON array of strings, e.g. [\"xz\", \"-T{{threads}}\"] ({e.msg})") from None
    if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
        raise ValueError("a non-empty JSON array of strings")
    if len(words) > MAX_WORDS or any(len(w) > MAX_WORD for w in words):
        raise ValueError(f"at most {MAX_WORDS} words of at most {MAX_WORD} characters")
    if not words[0] or WORD_PLACEHOLDER.search(words[0]):
        raise ValueError("a program name as its first word, without placeholders")
    if any("\0" in w for w in words):
        raise ValueError("words without NUL characters")
    unknown = sorted({m.group(1) for w in words for m in WORD_PLACEHOLDER.finditer(w)} - set(known))
    if unknown:
        raise ValueError(f"words whose placeholders are known: {{{unknown[0]}}} is not one of "
                         + " ".join(f"{{{k}}}" for k in known))
    return words


def substitute(words, values):
    """The words with each {name} replaced by its value, as plain text (never shell)."""
    return [WORD_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), w) for w in words]


def shown(words):
    """The command as a person would type it: for reports and the journal, never executed."""
    return shlex.join(words)


def program(word, root):
    """The executable a first word names (a path from the project root, or a name on PATH); ValueError
    when there is none or it is not executable."""
    if "/" in word:
        path = os.path.join(root, word)
        if not os.path.isfile(path):
            raise ValueError(f"{word}: no such file (a relative path starts at the project folder, {root})")
        if not os.access(path, os.X_OK):
            raise ValueError(f"{word}: not executable")
        return path
    found = shutil.which(word)
    if not found:
        raise ValueError(f"{word}: command not found on PATH")
    return found


@dataclass(frozen=True)
class Metric:
    name: str
    regex: str
    unit: str
    better: str          # higher | lower

    def spec_value(self):
        return f"{self.name}:{self.regex}:{self.unit}:{self.better}"


def better_for(unit):
    """Which way is better when metric= does not say: a time is better lower, anything else higher."""
    return "lower" if unit in TIME_UNITS else "higher"


def parse_metric(text):
    """NAME:REGEX[:UNIT[:higher|lower]] → Metric; ValueError says what is wrong."""
    parts = text.split(":")
    if len(parts) < 2 or not NAME.fullmatch(parts[0]):
        raise ValueError("NAME:REGEX[:UNIT[:higher|lower]] with NAME of letters, digits and '_'")
    name, rest = parts[0], parts[1:]
    if rest[-1] in DIRECTIONS and len(rest) >= 3:
        better, unit, regex = rest[-1], rest[-2], ":".join(rest[:-2])
    elif len(rest) >= 2:
        better, unit, regex = None, rest[-1], ":".join(rest[:-1])
    else:
        better, unit, regex = None, "", rest[0]
    if not UNIT.fullmatch(unit):
        raise ValueError(f"unit {unit!r} is not a unit (letters, digits, / % . _ * ^ -, at most 16); a regex "
                         "holding ':' needs the long form NAME:REGEX:UNIT:higher|lower")
    if not regex or len(regex) > MAX_REGEX:
        raise ValueError(f"a regular expression of 1 to {MAX_REGEX} characters")
    try:
        groups = re.compile(regex).groups
    except re.error as e:
        raise ValueError(f"regex {regex!r}: {e}") from None
    if groups > 1:
        raise ValueError(f"regex {regex!r} has {groups} groups: use one group around the number, "
                         "(?:…) for the others")
    if nested_repeat(regex):
        # (a+)+$ backtracks exponentially, in the engine itself and outside any timeout
        raise ValueError(f"regex {regex!r} repeats a repetition (like (a+)+): write it without nesting")
    if name in engine_rows() or name.startswith(("noise_", "perf_")):
        raise ValueError(f"metric name {name!r} is one of the engine's own rows (wall_s, cpu_*, noise_*, perf_*, "
                         "…): choose another")
    return Metric(name, regex, unit, better or better_for(unit))


def engine_rows():
    """Metric names the engine and its guard write themselves: a command's metric= must not mix into them."""
    from lab.engine.child import PER_CALL, RESOURCE_METRICS
    from lab.engine.guard import NOISE_METRICS
    return {m for m, _u in RESOURCE_METRICS} | set(NOISE_METRICS) | {PER_CALL}


def nested_repeat(regex):
    """Whether regex repeats (more than once) something that itself repeats more than once."""
    import re._constants as c
    import re._parser as parser

    def walk(items, inside):
        for op, av in items:
            if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                lo, hi, sub = av
                if inside and hi > 1 or walk(sub, inside or hi > 1):
                    return True
            elif op is c.SUBPATTERN and walk(av[-1], inside):
                return True
            elif op is c.BRANCH and any(walk(b, inside) for b in av[1]):
                return True
            elif op in (c.ASSERT, c.ASSERT_NOT) and walk(av[1], inside):
                return True
        return False
    return walk(parser.parse(regex), False)


def read_metrics(metrics, text):
    """[{metric, value, unit}] from stdout text; ValueError names the metric and regex that failed."""
    rows = []
    for m in metrics:
        found = None
        for found in re.finditer(m.regex, text, re.MULTILINE):
            pass
        if found is None:
            raise ValueError(f"metric {m.name}: regex {m.regex!r} never matched the command's stdout")
        got = found.group(1) if found.re.groups else found.group(0)
        try:
            value = float(got)
        except (TypeError, ValueError):
            raise ValueError(f"metric {m.name}: regex {m.regex!r} matched {str(got)[:40]!r}, not a number") from None
        if value_problem(got):      # what every reader refuses (tidy.py) fails the point, not the report
            raise ValueError(f"metric {m.name}: regex {m.regex!r} matched {got!r}: {value_problem(got)}")
        rows.append({"metric": m.name, "value": f"{value:.10g}", "unit": m.unit})
    return rows
