"""Command strings for the differential test between real bash and the bash
tool's pipeline (tests/shell/against_bash/test_bash_differential.py).

Every command is built from programs whose output shows their argv and
working folder exactly (``printf '[%s]\\n'``, ``echo``, ``ls -1``, ``cat``,
``wc -c``, ``pwd``, ``basename``, ``test``/``[``, ``true``/``false``),
combined with the shell features whose meaning the validator must read as
bash does: quoting and escapes, known variables, tilde, globs, ``cd``,
pipes, lists, here-documents, redirections, ``--``, ``export``/``unset``
and assignments. A generator returns ``(tool, reference)``: the command
given to the tool, and the one given to ``bash -c``. They differ in one
documented way only: a glob word that starts with a glob character is
planned as ``./PATTERN`` (core/shell/compound.py), so that a file name can
never become an option word; the reference writes that prefix itself.
"""

from __future__ import annotations

import random
from pathlib import Path

# The workspace: dotfiles, names with spaces, a newline, quotes, glob
# characters, a leading dash, unicode, folders, symlinks inside it.
FILES: dict[str, str] = {
    "a.txt": "alpha\n",
    "b.txt": "bravo\nsecond line\n",
    "B.md": "upper\n",
    "_under": "",
    ".hidden": "dot\n",
    ".dotdir/inner.txt": "inner\n",
    "sub/one.txt": "one\n",
    "sub/two words.txt": "two words\n",
    "sub/.subhidden": "h\n",
    "sub/deep/three.txt": "three\n",
    "sub/deep/x.py": "print()\n",
    "name with spaces": "spaces\n",
    "new\nline": "newline\n",
    "quote'single": "sq\n",
    'dq"uote': "dq\n",
    "star*name": "star\n",
    "q?mark": "qm\n",
    "[br]": "brackets\n",
    "-dash": "dash\n",
    "--opt=x": "opt\n",
    "café.txt": "cafe\n",
    "数据.md": "data\n",
    "Zed": "z\n",
    "über": "u\n",
    "empty": "",
}
LINKS: dict[str, str] = {"link": "sub", "deeplink": "sub/deep", "alink": "a.txt"}


def build_workspace(root: Path) -> None:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for name, target in LINKS.items():
        (root / name).symlink_to(target)


FOLDERS = ["sub", "sub/deep", ".dotdir", "link", "deeplink", "sub/../sub"]
NAMES = [n for n in FILES if "/" not in n] + list(LINKS) + ["missing", "sub/one.txt", "sub/two words.txt",
                                                           "sub/deep/three.txt", "../outside", "."]
GLOBS = ["*", "*.txt", ".*", "*/", "sub/*", "sub/.*", "sub/*/*", "**", "**/*.py", "?", "??*", "[ab]*",
         "[!a]*", "[^a]*", "[a-c]*", "[[:upper:]]*", "[[:alpha:]]*", "*[0-9]*", "*name*", "*.nomatch",
         "s*/d*", "[]]*", "[b]r]*", "[.]*", "*e", "link/*", "deeplink/*", "sub/[!t]*", "*.[tm][xd]*",
         "[z-a]*", "[a-]*", "[-a]*", "sub/*/", "*/*/*", "[[]*", "*]", "[*]*", "[?]*"]
VARS = ["$HOME", "${HOME}", "$TMPDIR", "$TERM", "${LANG}", "$CI", "$GIT_ASKPASS", "$USER", "${SHELL}"]
_SAFE = "abcxyzABC019_.,:@%+=^-/"


def _quote_single(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _quote_double(text: str) -> str:
    return '"' + "".join("\\" + c if c in '"\\$`' else c for c in text) + '"'


def _escape(text: str) -> str:
    return "".join("\\" + c if not c.isalnum() and c not in "_./" else c for c in text)


class Gen:
    """One command at a time from a seeded ``random.Random``."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.bodies: list[str] = []  # here-document bodies, written after the current line

    def flush(self, line: str, keep: bool = True) -> str:
        """``line`` followed by the pending here-document bodies (``keep``:
        still pending, for the reference's copy of the same line)."""
        out = "".join(f"\n{body}" for body in self.bodies)
        if not keep:
            self.bodies = []
        return line + out

    def pick(self, items):  # type: ignore[no-untyped-def]
        return items[self.r.randrange(len(items))]

    # --- words ---------------------------------------------------------------
    def literal(self) -> str:
        return "".join(self.pick(_SAFE) for _ in range(self.r.randint(1, 6)))

    def name_word(self) -> str:
        """A file name, written so that bash reads it back as that name."""
        name = self.pick(NAMES)
        how = self.r.randrange(4)
        if how == 0:
            return _quote_single(name)
        if how == 1:
            return _quote_double(name)
        if how == 2 and "\n" not in name:
            return _escape(name)
        return name if all(c.isalnum() or c in "_.-/" for c in name) else _quote_single(name)

    def piece(self) -> str:
        """Part of a word: quotes, escapes, variables, tilde, literal text."""
        k = self.r.randrange(9)
        if k == 0:
            return _quote_single(self.pick(["a b", "*", "$HOME", "x\\y", "", "~", "a\nb", "'", "{a,b}", "-n"]))
        if k == 1:
            return _quote_double(self.pick(["a b", "*.txt", "", "~", "x'y", "$"])) if self.r.random() < .5 \
                else '"' + self.pick(["$HOME", "${TERM}", "x $USER y", "\\$HOME", "a\\\\b", "$GIT_ASKPASS"]) + '"'
        if k == 2:
            return self.pick(["a\\ b", "\\*", "\\'", '\\"', "\\$HOME", "\\~", "\\\\", "x\\-y", "\\{a,b\\}"])
        if k == 3:
            return self.pick(VARS)
        return self.literal()

    def word(self) -> str:
        k = self.r.randrange(10)
        if k == 0:
            return self.pick(["~", "~/x", "~/", "a~", "~a"])
        if k <= 2:
            return self.name_word()
        return "".join(self.piece() for _ in range(self.r.randint(1, 3)))

    def glob(self) -> tuple[str, str]:
        pattern = self.pick(GLOBS)
        prefix = self.pick(["", "", "./", "sub/"]) if pattern[0] in "*?[" else ""
        pattern = prefix + pattern
        reference = "./" + pattern if pattern[0] in "*?[" else pattern
        return pattern, reference

    def args(self, count: int, globs: bool = True) -> tuple[list[str], list[str]]:
        tool: list[str] = []
        ref: list[str] = []
        for _ in range(count):
            if globs and self.r.random() < 0.3:
                t, b = self.glob()
            else:
                t = b = self.word()
            tool.append(t)
            ref.append(b)
        return tool, ref

    # --- commands ------------------------------------------------------------
    def simple(self) -> tuple[str, str]:
        k = self.r.randrange(16)
        n = self.r.randint(0, 3)
        if k >= 14:
            return self.write()
        if k <= 3:
            t, b = self.args(n + 1)
            head = "printf '[%s]\\n'"
        elif k == 4:
            t, b = self.args(n)
            head = self.pick(["echo", "echo -n", "echo -e", "echo --"])
        elif k == 5:
            t, b = self.args(n)
            head = self.pick(["ls -1", "ls -1a", "ls -1d", "ls -1 --", "ls -1F"])
        elif k == 6:
            t, b = self.args(n + 1)
            head = self.pick(["cat", "cat --", "wc -c", "wc -c --", "head -c 3", "ls -1d --"])
        elif k == 7:
            return self.pick([("pwd", "pwd"), ("true", "true"), ("false", "false"), ("pwd -L", "pwd -L")])
        elif k == 8:
            w = self.name_word()
            return (f"basename {w}",) * 2  # type: ignore[return-value]
        elif k == 9:
            op = self.pick(["-e", "-f", "-d", "-L", "-s", "-n", "-z"])
            w = self.name_word() if op not in ("-n", "-z") else self.word()
            return self.pick([(f"test {op} {w}",) * 2, (f"[ {op} {w} ]",) * 2])  # type: ignore[return-value]
        elif k == 10:
            return self.heredoc()
        elif k == 11:
            w = self.name_word()
            redir = self.pick([f"cat < {w}", f"wc -c < {w}", f"cat {w} 2>/dev/null", f"cat {w} 2>&1",
                               f"ls -1 {w} >/dev/null", f"cat {w} 1>&2",
                               # the order of redirections matters: stderr to the old stdout, then stdout away
                               f"cat {w} missing 2>&1 >/dev/null", f"cat {w} missing >/dev/null 2>&1",
                               f"cat 2>/dev/null < {w} missing", f"wc -c {w} 2>&1 1>&2"])
            return redir, redir
        elif k == 12:
            t, b = self.args(n + 1, globs=False)
            pre = self.pick(["LC_ALL=C ", "TZ=UTC ", "NO_COLOR= ", "LANG=C.UTF-8 "])
            return pre + "printf '[%s]\\n' " + " ".join(t), pre + "printf '[%s]\\n' " + " ".join(b)
        else:
            t, b = self.args(n + 1)
            head = self.pick(["printf '%s|'", "printf '<%s>'", "printf -- '%s\\n'"])
        return " ".join([head, *t]), " ".join([head, *b])

    def write(self) -> tuple[str, str]:
        """A command that changes the workspace (asked, run on a copy)."""
        target = self.pick(["out.txt", "a.txt", "'new file'", "sub/new.txt", '"sub/two words.txt"', "new\\ x"])
        t, b = self.args(self.r.randint(1, 2))
        op = self.pick([">", ">>", "&>", "2>"])
        k = self.r.randrange(5)
        if k == 0:
            text = self.pick(["mkdir -p newdir/x", "touch new", "cp a.txt c.txt", "rm -f b.txt", "mv b.txt moved",
                              "mkdir d && touch d/f", "rm -f -- -dash"])
            return text, text
        if k == 1:
            self.bodies.append("body $HOME\nEOF")
            text = f"cat {op} {target} <<'EOF'"
            return text, text
        after = self.pick(["", f" && cat {target}", f"; wc -c {target}"])
        return (f"printf '[%s]\\n' {' '.join(t)} {op} {target}{after}",
                f"printf '[%s]\\n' {' '.join(b)} {op} {target}{after}")

    def heredoc(self) -> tuple[str, str]:
        body = self.pick(["plain text", "$HOME and ${TERM}", "a * b", "\\$x `y` \\\\", "  tab\tline", "",
                          "\tleading tab\n\t\tand two", "~ and 'quotes' \"here\"", "EOFX\n EOF"])
        delim = self.pick(["'EOF'", "EOF", '"EOF"', "E\\OF"])
        dash = self.pick(["<<", "<<-"])
        close = "\tEOF" if dash == "<<-" and self.r.random() < 0.5 else "EOF"  # `<<-` strips leading tabs
        # The body follows the command's line (after any pipe or list operator
        # on it), as bash reads it.
        self.bodies.append(f"{body}\n{close}")
        text = f"{self.pick(['cat', 'wc -c', 'cat -A'])} {dash}{delim}"
        return text, text

    def pipeline(self) -> tuple[str, str]:
        t, b = self.simple()
        if self.r.random() < 0.3:
            tail = self.pick(["sort", "sort -r", "wc -l", "cat", "head -n 2", "tr a-z A-Z", "cat -A"])
            t, b = f"{t} | {tail}", f"{b} | {tail}"
        return t, b

    def command(self) -> tuple[str, str]:
        t, b = self.pipeline()
        for _ in range(self.r.choice([0, 0, 1, 1, 2])):
            op = self.pick([" && ", " || ", "; ", "\n"])
            if op == "\n":
                t, b = self.flush(t), self.flush(b, keep=False)
            t2, b2 = self.pipeline()
            t, b = t + op + t2, b + op + b2
        k = self.r.randrange(8)
        if k == 0:
            folder = self.pick(FOLDERS)
            t, b = f"cd {folder} && {t}", f"cd {folder} && {b}"
        elif k == 1:
            change = self.pick(["export LC_ALL=C", "unset TERM", "export TZ=UTC", "unset CI NO_COLOR",
                                "export LANG=C.UTF-8", "cd sub", "cd deeplink", "cd link", "cd ..", "cd",
                                "cd deeplink && cd ..", "cd link && cd deep && cd ..", "cd sub && cd ../link"])
            self.bodies = []  # (the line built so far is dropped, its here-documents too)
            t2, b2 = self.pipeline()
            t, b = f"{change} && {t2}", f"{change} && {b2}"
            if self.r.random() < 0.5:
                after = self.pick(["pwd", "ls -1", "echo $TERM", "echo $CI", "echo $LC_ALL"])
                t, b = f"{t} && {after}", f"{b} && {after}"
        return self.flush(t), self.flush(b, keep=False)



def commands(seed: int, count: int) -> list[tuple[str, str]]:
    gen = Gen(seed)
    return [gen.command() for _ in range(count)]
