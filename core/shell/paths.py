"""Which words of a command are paths, and where they lead. Pure.

Every positional argument and every value attached to an option
(``--file=/etc/x``, ``-f/etc/x``) is taken for a path, except the words a
program reads as a pattern or a script (grep's pattern, sed's script, awk's
program, find's ``-name`` values) and the arguments of programs that only
print them (echo). A path is judged after normalising (``/./etc`` is
``/etc``, ``a/../..`` leaves the workspace) and, when the workspace wrapper
supplied facts, after resolving symlinks with realpath:

* ``inside`` - within the workspace, the sandbox's scratch ``/tmp``, or a
  harmless device like /dev/null;
* ``outside`` - anywhere else: a read-only command asks, a writing one rejects;
* ``endless`` - a device that never ends or is not data (/dev/zero,
  /dev/urandom, /dev/tty ...): rejected, whatever reads it.
"""

from __future__ import annotations

import functools
import posixpath
from typing import Literal

from core.shell.facts import SANDBOX_HOME, WorkspaceFacts, workspace_key
from core.shell.options import Opts, attached_paths, long_hit, prefix_matches, short_hit

Where = Literal["inside", "outside", "endless"]

HARMLESS_DEVICES = frozenset(["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"])
ENDLESS = frozenset(
    "/dev/zero /dev/urandom /dev/random /dev/full /dev/tty /dev/console /dev/kmsg /dev/mem /dev/kmem "
    "/dev/port /proc/kmsg /proc/kcore".split()
)
_NO_PATHS = frozenset("echo printf true false which whoami id uname pwd nproc arch groups basename dirname sleep tr seq expr numfmt".split())
# Programs whose first positional is a pattern or a program unless an option gives it.
_PATTERN_FIRST = {
    "grep": (("regexp", "file"), "ef", "ABCDdm"),
    "egrep": (("regexp", "file"), "ef", "ABCDdm"),
    "fgrep": (("regexp", "file"), "ef", "ABCDdm"),
    "rg": (("regexp", "file", "files", "type-list"), "ef", "ABCgtTjmMrEd"),  # --files: no pattern
    "sed": (("expression", "file"), "ef", "l"),
    "gsed": (("expression", "file"), "ef", "l"),
    "awk": (("source", "file", "exec", "include"), "efEi", "Fv"),
}
_FIND_NOT_PATHS = frozenset(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -lname -ilname -type -xtype "
    "-maxdepth -mindepth -mtime -mmin -atime -amin -ctime -cmin -size -perm -user -group -uid -gid -links "
    "-inum -fstype -used -printf -context -D".split()
)
# Writers whose only written path is the destination (the last positional).
_DEST_ONLY = frozenset("cp ln install".split())


def in_git_folder(key: str, facts: WorkspaceFacts | None = None) -> bool:
    """Whether the workspace key lies in (or is) a ``.git`` folder, by name
    or, with facts, by where it really leads (``g -> .git``). Compared
    case-insensitively (a case-insensitive file system takes ``.GIT``)."""
    def named(path: str) -> bool:
        return any(p.lower().rstrip(". ") == ".git" for p in path.split("/"))

    if named(key):
        return True
    real = facts.realpaths.get(key) if facts is not None else None
    return real is not None and facts is not None and facts.inside(real) and named(real[len(facts.root):])


def _glob_base(word: str) -> str:
    """The literal folder a glob word lists (``src/*.py`` -> ``src``, ``/e*`` -> ``/``).
    A pattern with a ``..`` component is not expanded (activities.bash.executor):
    the program gets it as written, so it is that path (a folder named ``*``)."""
    if ".." in word.split("/"):
        return word
    cut = min((word.index(c) for c in "*?[" if c in word), default=len(word))
    head = word[:cut]
    return (head.rsplit("/", 1)[0] or "/") if "/" in head else "."


def path_words(fam: str, args: list[str], globs: tuple[bool, ...] = (), spec: Opts | None = None) -> list[str]:
    """The words of ``args`` taken for paths (as written; glob words by their
    folder). ``spec``, the program's option model, tells which options take
    the next word as their value and which values are data, never files."""
    if fam in _NO_PATHS:
        return []
    skip_first = False
    if fam in _PATTERN_FIRST or fam in ("gawk", "mawk", "nawk"):
        longs, letters, stop = _PATTERN_FIRST.get(fam, _PATTERN_FIRST["awk"])
        skip_first = not any(long_hit(a, longs) or short_hit(a, letters, stop) for a in args)
    out: list[str] = []
    after_dashdash = False
    prev = ""
    find = fam == "find"
    next_is: NextWord = None
    for k, a in enumerate(args):
        glob = bool(globs and k < len(globs) and globs[k])
        if next_is is not None:
            if next_is == "path":  # a file option's value: a path, never the pattern
                out.append(_glob_base(a) if glob else a)
            next_is = None
        elif not after_dashdash and a[:1] == "-" and len(a) > 1:
            if a == "--":
                after_dashdash = True
            elif spec is not None:
                paths, next_is = _option_values(a, spec)
                out.extend(paths)
            elif "/" in a or "." in a:
                out.extend(attached_paths(a))
        elif find and prev in _FIND_NOT_PATHS:
            pass
        elif skip_first:
            skip_first = False
        else:
            out.append(_glob_base(a) if glob else a)
        prev = a
    return out


# What the word after an option is: its data value, its path value, or a word of its own.
NextWord = Literal["data", "path", None]


def _option_values(arg: str, spec: Opts) -> tuple[list[str], NextWord]:
    """The paths inside one option word, and what the next word is when the
    option takes it as its value: data (``cut -d /``: ``/`` is a delimiter,
    not a folder) or a path (``grep --exclude-from FILE``: a file read, and
    not grep's pattern). Only a value the model says is data is left out; an
    option the model does not know keeps every path-like suffix
    (``attached_paths``)."""
    if arg.startswith("--"):
        name, eq, value = arg[2:].partition("=")
        names = prefix_matches(name, _long_names(spec))  # getopt_long takes any unambiguous prefix
        data = bool(names) and all(n in spec.data and n in spec.long_arg for n in names)
        if eq:
            return ([] if data or not value else [value]), None
        if names and all(n in spec.long_arg for n in names):
            return [], "data" if data else "path"
        return [], None
    for j in range(1, len(arg)):
        letter = arg[j]
        if letter in spec.short:
            continue
        if letter in spec.short_arg or letter in spec.short_opt:
            rest = arg[j + 1:]
            if rest or letter not in spec.short_arg:
                return ([] if letter in spec.data or not rest else [rest]), None
            return [], "data" if letter in spec.data else "path"
        break
    return list(attached_paths(arg)), None


@functools.lru_cache(maxsize=256)
def _long_names(spec: Opts) -> tuple[str, ...]:
    return tuple(sorted(spec.long | spec.long_arg))  # once per program: asked for every long option


def written_paths(fam: str, args: list[str], paths: list[str]) -> list[str]:
    """Of ``paths``, the ones a writing program writes (``cp SRC DEST``: DEST)."""
    if fam not in _DEST_ONLY:
        return paths
    for k, a in enumerate(args):
        if a in ("-t", "--target-directory") and k + 1 < len(args):
            return [args[k + 1]]
        if a.startswith("--target-directory="):
            return [a.partition("=")[2]]
    positional = [a for a in args if not a.startswith("-")]
    return positional[-1:]


def scratch(key: str, facts: WorkspaceFacts | None = None) -> bool:
    """Under ``/tmp``: inside the sandbox a private scratch folder (outside the
    workspace and its changeset), so reading and writing there is harmless.
    Not the sandbox's home (``~`` stands for it: a model that writes there
    means the user's home), and not the workspace when it lies under /tmp
    (``facts`` tell; without them a write there still asks, see compound)."""
    if not (key.startswith("/tmp/") or key == "/tmp") or key == SANDBOX_HOME or key.startswith(SANDBOX_HOME + "/"):
        return False
    if facts is None:
        return True
    real = facts.realpaths.get(key, key)
    if facts.inside(key) or facts.inside(real):
        return False
    return real.startswith("/tmp/") and not (real == SANDBOX_HOME or real.startswith(SANDBOX_HOME + "/"))


def physical_key(path: str, cwd: str | None = None) -> str | None:
    """``path`` with every ``..`` kept that follows a folder name, or None when
    none does. The kernel resolves ``link/..`` at the link's target (``/etc/..``
    is ``/``), not lexically like ``workspace_key``; the workspace facts resolve
    this form too, so a symlink on the way is seen."""
    if ".." not in path:
        return None
    joined = posixpath.join(cwd, path) if cwd and not path.startswith("/") else path
    parts = [p for p in joined.split("/") if p not in ("", ".")]
    if not any(p == ".." and any(q != ".." for q in parts[:k]) for k, p in enumerate(parts)):
        return None
    return ("/" if joined.startswith("/") else "") + "/".join(parts)


def where(path: str, cwd: str | None, facts: WorkspaceFacts | None) -> Where:
    return where_both(workspace_key(path, cwd), physical_key(path, cwd), facts)


def where_both(key: str, physical: str | None, facts: WorkspaceFacts | None) -> Where:
    """``where_key``, and where the path really leads when a ``..`` in it
    follows a folder the facts resolved (``physical_key``)."""
    w = where_key(key, facts)
    if w == "inside" and physical is not None and facts is not None and physical in facts.realpaths:
        return where_key(physical, facts)
    return w


def where_key(key: str, facts: WorkspaceFacts | None) -> Where:
    """``where`` for a path already turned into its workspace key."""
    if facts is None and key[:1] not in ("/", ".") :
        return "inside"  # relative without `..` (keys are normalised)
    real = facts.realpaths.get(key) if facts is not None else None
    for p in (key, real):
        if p is not None and p in ENDLESS:
            return "endless"
    if key in HARMLESS_DEVICES:
        return "inside"
    if real is not None and facts is not None:
        if facts.inside(real) or real in HARMLESS_DEVICES:
            return "inside"
        return "inside" if scratch(key, facts) else "outside"
    if facts is not None and key.startswith("/") and facts.inside(key):
        return "inside"  # lexically under the workspace root (not resolved)
    if scratch(key, facts):
        return "inside"  # the sandbox's own /tmp (see scratch)
    if key.startswith("/") or key == ".." or key.startswith("../"):
        return "outside"
    return "inside"
