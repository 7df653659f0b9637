"""The lab's one error type for bad input, and the one way every program ends.

LabError is what a program says in one line and exits 2 for: a spec, a run folder, an archive, an
inventory, a received file the lab will not use. Its message names `file:line` where there is one; each
part of the lab raises its own subclass (SpecError, RunFolderError, …) so a caller can catch just that.

Every program's `main(argv)` is decorated `@program("NAME")` and its `__main__` is `run(main)`: a LabError is
one line on stderr (`NAME: message`) and code 2, Ctrl-C is 130, whether main runs as the program or is called
in process (a test, another program); a closed pipe (`… | head`) is exit 1 and quiet; anything else is a bug
and keeps its traceback. This module sits at the package's root, below every layer: any of them may raise a
LabError (it imports only lab.core.term, a leaf, to show received text without obeying it).
"""
import functools
import os
import sys

from lab.core.term import visible


class LabError(Exception):
    """Bad input: str() is the one line to show (`file:line: message` where there is a file); exit 2."""
    code = 2


def say(prefix, message):
    """One line on stderr, `prefix: message`; the text may come from a received file: shown, not obeyed."""
    print(visible(f"{prefix}: {message}" if prefix else message), file=sys.stderr)


def program(prefix=None):
    """Decorate a program's main(argv): a LabError → its line on stderr, code 2; Ctrl-C → 130."""
    def wrap(main):
        @functools.wraps(main)
        def ended(argv):
            try:
                return main(argv)
            except LabError as e:
                say(prefix, e)
                return e.code
            except KeyboardInterrupt:
                say(prefix, "interrupted")
                return 130
        return ended
    return wrap


def run(main):
    """The one `__main__`: exit with main(argv)'s code (main decorated by program())."""
    try:
        code = main(sys.argv[1:])
    except BrokenPipeError:     # `topo.py pairs … | head`: the reader has what it wanted; no flush error at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)
