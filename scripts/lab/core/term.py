"""Text from a run folder on the terminal: a received run is someone else's data, and a control
sequence in it (ESC ] 0;… BEL retitles the terminal, ESC [2J clears it, a bidi override reorders
what follows) must be seen, not obeyed. One helper, used wherever such text is printed."""
import re

# C0 controls but tab and newline, DEL, C1 controls, and Unicode's bidi and line/paragraph separators.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_NL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(m):
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text, lines=False):
    """`text` with every control character written as \\xNN (\\uNNNN): a tab stays a tab, and a line
    break stays one only with lines=True (multi-line output such as a spec or a table)."""
    return (_CONTROL if lines else _CONTROL_NL).sub(_escape, str(text))
