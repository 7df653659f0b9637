"""The commands the lab's recipes and drivers call, read from the code itself: the justfiles' recipe
bodies, every shell driver (scripts/*.sh, */*.sh, */tests/*.sh), the specs' build/command lines, and
the argument lists the Python drivers hand to subprocess. A word counts as a command where bash would
run it: first word of a pipeline, after a keyword or a wrapper (timeout, flock, taskset, env…)."""
import ast
import glob
import os
import re

# Words in command position that are no program: bash keywords and builtins.
BASH = set("""if then else elif fi for while until do done case esac in function select time coproc
! { } [[ ]] [ . : source alias bg bind break builtin caller cd command compgen complete continue
declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill
let local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt suspend
test times trap true type typeset ulimit umask unalias unset wait""".split())

# Wrappers whose operand is itself a command: how many words (options aside) come before it.
WRAPPERS = {"timeout": 1, "flock": 1, "taskset": 1, "numactl": 0, "env": 0, "nice": 0, "exec": 0,
            "command": 0, "sudo": 0, "xargs": 0, "nohup": 0, "time": 0, "setsid": 0, "stdbuf": 0}
# Options of those wrappers that take a separate value.
WRAPPER_VALUE_OPTS = {"-s", "-k", "-n", "-w", "-E", "-c", "-C", "-N", "-m", "-p", "--signal",
                      "--kill-after", "--membind", "--cpunodebind", "--physcpubind", "--interleave"}
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+-]*$")
SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "{", "}", "then", "do", "else", "elif", "if",
              "while", "until", "!", "$(", "`", "|&", ";;"}


def _strip_heredocs(lines):
    """Drops heredoc bodies (python, awk or text fed to a command, not shell)."""
    out, end = [], None
    for line in lines:
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        m = re.search(r"<<-?\s*['\"]?([A-Za-z_]+)['\"]?", line)
        if m and "<<<" not in line:
            end = m.group(1)
        out.append(line)
    return out


def _tokens(text):
    """Shell words and separators; single-quoted text is opaque (awk/sed programs), double-quoted
    text is searched for $( … ) and backticks only; comments are dropped."""
    toks, i, n = [], 0, len(text)
    word = ""

    def flush():
        nonlocal word
        if word:
            toks.append(word)
            word = ""
    while i < n:
        c = text[i]
        if not word and toks and toks[-1] == "=~" and c not in " \t":
            # a [[ … =~ REGEX ]] word: its parentheses and bars are the regex's, not the shell's
            depth, j = 0, i
            while j < n and (depth or text[j] not in " \t\n"):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 2 if text[j] == "\\" else 1
            word, i = "\0", j
            continue
        if c == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                i += 2
                continue
            word += text[i:i + 2]
            i += 2
        elif c == "'":
            j = text.find("'", i + 1)
            j = n if j < 0 else j
            word += "\0"
            i = j + 1
        elif text.startswith('"$@"', i) and not word:
            toks.append("$@")
            i += 4
        elif c == '"':
            j, depth = i + 1, 0
            while j < n and not (text[j] == '"' and depth == 0 and text[j - 1] != "\\"):
                if text.startswith("$(", j) and not text.startswith("$((", j):
                    depth += 1
                    inner_start = j + 2
                    k, d = inner_start, 1
                    while k < n and d:
                        if text[k] == "\\":          # an escaped character is never a parenthesis
                            k += 2
                            continue
                        if text[k] == "'":           # nor is one inside a sed or awk program
                            q = text.find("'", k + 1)
                            k = n if q < 0 else q + 1
                            continue
                        if text.startswith("$(", k):
                            d += 1
                        elif text[k] == ")":
                            d -= 1
                        k += 1
                    flush()
                    toks.append("$(")
                    toks.extend(_tokens(text[inner_start:k - 1]))
                    toks.append(")")
                    j, depth = k, 0
                    continue
                j += 1
            word += "\0"
            i = j + 1
        elif c == "#" and not word:
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in " \t":
            flush()
            i += 1
        elif c == "\n":
            flush()
            toks.append(";")
            i += 1
        elif text.startswith("$((", i):
            j = text.find("))", i)
            word += "\0"
            i = n if j < 0 else j + 2
        elif text.startswith("((", i) and not word:
            # arithmetic command: no program in it
            j = text.find("))", i)
            toks.append(";")
            i = n if j < 0 else j + 2
        elif text.startswith("$(", i):
            flush()
            toks.append("$(")
            i += 2
        elif text.startswith("${", i):
            j = text.find("}", i)
            word += "\0"
            i = n if j < 0 else j + 1
        elif c in ";&|()`<>{}":
            two = text[i:i + 2]
            if two in ("&&", "||", ";;", "|&"):
                flush()
                toks.append(two)
                i += 2
            elif c in "<>":
                flush()
                j = i
                while j < n and text[j] in "<>&0123456789":
                    j += 1
                i = j
                while i < n and text[i] in " \t":
                    i += 1
                while i < n and text[i] not in " \t\n;|&)":
                    i += 1
            elif c == "(" and word.endswith("="):
                # array literal: its words are data
                depth, j = 1, i + 1
                while j < n and depth:
                    depth += {"(": 1, ")": -1}.get(text[j], 0)
                    j += 1
                word += "\0"
                i = j
            elif c == "{" and word:
                word += c
                i += 1
            elif c == "}" and word:
                word += c
                i += 1
            else:
                flush()
                toks.append(c)
                i += 1
        else:
            word += c
            i += 1
    flush()
    return toks


def _functions(toks):
    """name -> how many leading arguments the function shifts away before running "$@", or None
    when it never runs its arguments as a command."""
    out, i = {}, 0
    while i + 3 < len(toks):
        if toks[i + 1] == "(" and toks[i + 2] == ")" and toks[i + 3] == "{" and NAME.match(toks[i]):
            depth, j, shifts, runs = 1, i + 4, 0, None
            while j < len(toks) and depth:
                w = toks[j]
                depth += {"{": 1, "}": -1}.get(w, 0)
                if w == "shift" and runs is None:
                    nxt = toks[j + 1] if j + 1 < len(toks) else ""
                    shifts += int(nxt) if nxt.isdigit() else 1
                if w == "$@" and toks[j - 1] in SEPARATORS | {";", "$(", "if"} and runs is None:
                    runs = shifts
                j += 1
            out[toks[i]] = runs
            i = j
        else:
            i += 1
    return out


def shell_commands(text):
    """The names in command position of a shell text, and the functions it defines."""
    text = "\n".join(_strip_heredocs(text.split("\n")))
    toks = _tokens(text)
    funcs = _functions(toks)
    cmds = set()
    at_start, patterns = True, False
    i = 0
    while i < len(toks):
        t = toks[i]
        if patterns:                      # case labels up to ")": data, not commands
            if t == ")":
                patterns, at_start = False, True
            elif t == "esac":
                patterns = False
            i += 1
            continue
        if t == "case":
            while i < len(toks) and toks[i] != "in":
                i += 1
            patterns = True
            i += 1
            continue
        if t in (";;", ";&", ";;&"):
            patterns = True
            i += 1
            continue
        if t in ("for", "select"):        # the loop's word list is data
            while i < len(toks) and toks[i] not in (";", "do"):
                i += 1
            continue
        if t in SEPARATORS or t == "esac":
            at_start = True
            i += 1
            continue
        if not at_start:
            i += 1
            continue
        at_start = False
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", t):   # VAR=value prefix
            at_start = True
            i += 1
            continue
        if i + 2 < len(toks) and toks[i + 1] == "(" and toks[i + 2] == ")":   # name() { … }
            at_start = True
            i += 3
            continue
        skip = None
        if t in WRAPPERS:
            skip = WRAPPERS[t]
        elif funcs.get(t) is not None:
            skip = funcs[t]
        if skip is not None:
            if t not in BASH and t not in funcs:
                cmds.add(t)
            i += 1
            while i < len(toks) and toks[i] not in SEPARATORS:
                w = toks[i]
                if w.startswith("-") and t in WRAPPERS:
                    if t == "taskset" and w in ("-c", "--cpu-list"):
                        skip = 0          # the CPU list is -c's value, not a mask operand
                    i += 2 if w in WRAPPER_VALUE_OPTS else 1
                    continue
                if t == "env" and "=" in w:
                    i += 1
                    continue
                if skip:
                    skip -= 1
                    i += 1
                    continue
                at_start = True
                break
            continue
        if NAME.match(t) and t not in BASH and t not in funcs:
            cmds.add(t)
        i += 1
    return cmds, set(funcs)


def just_bodies(path):
    """The recipe bodies of a justfile, with {{ … }} interpolations made opaque."""
    body = []
    for line in open(path):
        if line.startswith((" ", "\t")) and line.strip():
            s = line.strip()
            s = re.sub(r"\{\{.*?\}\}", "X", s).lstrip("@-")
            body.append(s)
    return "\n".join(body)


def python_commands(path):
    """First words of the literal argument lists handed to subprocess/os.exec*."""
    cmds = set()
    tree = ast.parse(open(path).read(), path)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name not in ("run", "Popen", "check_output", "check_call", "call", "execvp", "execv"):
            continue
        if node.args and isinstance(node.args[0], (ast.List, ast.Tuple)) and node.args[0].elts:
            first = node.args[0].elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and NAME.match(first.value):
                cmds.add(first.value)
    return cmds


def sources(root):
    """Every file the commands are read from, by kind."""
    # Not ./lab: it is the Debian path's installer (apt, dpkg); under the Nix shell it only runs just.
    sh = sorted(set(glob.glob(os.path.join(root, "scripts", "*.sh")) + glob.glob(os.path.join(root, "*", "*.sh"))
                    + glob.glob(os.path.join(root, "*", "tests", "*.sh"))))
    just = [os.path.join(root, "justfile")] + sorted(glob.glob(os.path.join(root, "*", "lab.just")))
    py = sorted(glob.glob(os.path.join(root, "scripts", "*.py")) + glob.glob(os.path.join(root, "*", "*.py"))
                + glob.glob(os.path.join(root, "*", "tests", "*.py")))
    specs = sorted(glob.glob(os.path.join(root, "experiments", "*.spec")))
    return {"sh": sh, "just": just, "py": py, "spec": specs}


def called_commands(root):
    """{command: [files calling it]} over the lab's recipes and drivers (not the tests/ of the lab,
    which run under pytest and call what their subject calls)."""
    found, funcs = {}, set()
    src = sources(root)

    def add(cmds, where):
        for c in cmds:
            found.setdefault(c, []).append(os.path.relpath(where, root))
    for p in src["sh"]:
        c, f = shell_commands(open(p).read())
        funcs |= f
        add(c, p)
    for p in src["just"]:
        c, f = shell_commands(just_bodies(p))
        funcs |= f
        add(c, p)
    for p in src["spec"]:
        text = "\n".join(v for k, v in (l.split("=", 1) for l in open(p) if "=" in l and not l.startswith("#"))
                         if k.strip().split("[")[0] in ("build", "command"))
        add(shell_commands(text)[0], p)
    for p in src["py"]:
        add(python_commands(p), p)
    return {c: w for c, w in found.items() if c not in funcs}
