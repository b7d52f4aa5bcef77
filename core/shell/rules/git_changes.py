"""git subcommands whose options decide between harmless and dangerous. Pure.

Parsed with git's own option rules (core.shell.options.git_parse: clusters,
abbreviations, ``--no-`` negations, last one wins), because a check that looks
at words one by one is fooled by ``-iO'sh x'`` or ``-n --no-dry-run -f``:

* ``git grep``: ``-O`` / ``--open-files-in-pager`` runs a program (reject),
  also inside a cluster; any option git's grep does not know: ask.
* ``git clean``: a dry run only when the *final* state is dry-run and every
  option is known; otherwise it deletes untracked files (destructive).
* ``git push``: force, delete, mirror, prune and ``+``/``:`` refspecs rewrite
  or delete remote history (reject); any other push asks.
* The destructive class (work lost for good): ``reset --hard``, ``checkout``
  of paths, ``restore`` of the worktree, ``stash drop|clear``, ``branch -D``,
  ``rm -f``, ``switch --discard-changes``, ``reflog expire|delete``,
  ``worktree remove --force``.
"""

from __future__ import annotations

from core.shell.options import GitOpts, final_state, git_parse, long_hit, short_hit
from core.shell.verdict import J, allow, ask, destructive, rej

_GREP_SHORT_NAMES = (
    "text ignore-case I word-regexp invert-match h H extended-regexp basic-regexp fixed-strings "
    "perl-regexp line-number files-with-matches files-without-match null only-matching count "
    "show-function function-context quiet recursive"
)
_GREP = GitOpts(
    short=dict(zip("aiIwvhHEGFPnlLzocpWqr", _GREP_SHORT_NAMES.split())),
    short_arg=dict(zip("ABCefm", "after-context before-context context regexp file max-count".split())),
    long=frozenset(
        "cached no-index untracked exclude-standard recurse-submodules text textconv ignore-case "
        "word-regexp invert-match full-name extended-regexp basic-regexp fixed-strings perl-regexp "
        "line-number column files-with-matches name-only files-without-match null only-matching count "
        "break heading show-function function-context quiet all-match and or not recursive "
        "index".split()
    ),
    long_arg=frozenset("max-depth after-context before-context context threads file regexp max-count".split()),
    short_opt={"O": "open-files-in-pager"},
    long_opt=frozenset(["open-files-in-pager", "color"]),
)


def git_grep(rest: list[str]) -> J:
    parsed = git_parse(rest, _GREP)
    for name, negated, _ in parsed.events:
        if name == "open-files-in-pager" and not negated:
            return rej("`git grep -O` opens files in a pager program", "drop -O; the matches are returned to you")
    if parsed.bad is not None:
        if long_hit(parsed.bad, ("open-files-in-pager",)) or short_hit(parsed.bad, "O", "ABCefm"):
            return rej("`git grep -O` opens files in a pager program", "drop -O; the matches are returned to you")
        return ask(f"`git grep` with option `{parsed.bad}`, which is not on the known read-only option list")
    if final_state(parsed.events, "textconv"):
        return ask("`git grep --textconv` runs configured conversion programs")
    return allow("`git grep` only reads the repository")


_CLEAN = GitOpts(
    short={"n": "dry-run", "f": "force", "q": "quiet", "i": "interactive", "d": "d", "x": "x", "X": "X"},
    short_arg={"e": "exclude"},
    long=frozenset("dry-run force quiet interactive".split()),
    long_arg=frozenset(["exclude"]),
)


def git_clean(rest: list[str]) -> J:
    parsed = git_parse(rest, _CLEAN)
    if parsed.bad is None and final_state(parsed.events, "interactive"):
        return rej("`git clean -i` is interactive (needs a terminal)", "use `git clean -n` to list the files")
    if parsed.bad is None and final_state(parsed.events, "dry-run"):
        return allow("`git clean -n` only lists what would be deleted")
    why = f" (option `{parsed.bad}` is not one git clean knows)" if parsed.bad else ""
    return destructive(f"`git clean` deletes untracked files permanently{why}")


_PUSH_DANGER = ("force", "force-with-lease", "force-if-includes", "delete", "mirror", "prune")


def git_push(rest: list[str]) -> J | None:
    """Reject history rewrites and deletions on a remote; None: judge as a plain push."""
    for a in rest:
        if a == "--":
            break
        hit = long_hit(a, _PUSH_DANGER)
        letter = short_hit(a, "fd", "o")
        if hit or letter:
            what = hit or {"f": "force", "d": "delete"}[letter or "f"]
            return rej(
                f"`git push --{what}` rewrites or deletes history on the remote",
                "push without force or delete options; tell the user if the remote must be rewritten",
            )
    for a in rest:
        if not a.startswith("-") and (a.startswith(("+", ":")) or ":+" in a):
            return rej(
                f"the refspec `{a}` force-pushes (`+`) or deletes (`:branch`) a remote branch",
                "push a plain branch name (e.g. `git push origin main`)",
            )
    return None


def _has(rest: list[str], longs: tuple[str, ...], letters: str = "", stop: str = "") -> bool:
    return any(long_hit(a, longs) or (letters and short_hit(a, letters, stop)) for a in rest if a != "--")


def _looks_like_a_file(word: str) -> bool:
    """`git checkout src/app.py` restores a file (destroying its changes) even
    without `--`. A branch name rarely has a dot in its last component; when
    one does (a tag like v1.2), asking for approval is the cheap mistake."""
    last = word.rstrip("/").rsplit("/", 1)[-1]
    return "." in last.strip(".") or word.endswith("/")


def git_destructive(sub: str, rest: list[str]) -> J | None:
    """The destructive class of git commands; None when ``sub rest`` is not in it."""
    first = rest[0] if rest else ""
    if sub == "reset" and _has(rest, ("hard", "merge", "keep")):
        return destructive("`git reset --hard` discards uncommitted changes for good")
    if sub == "checkout":
        opts = [a for a in rest if a.startswith("-")]
        pos = [a for a in rest if not a.startswith("-")]
        if "--" in rest or _has(opts, ("force", "ours", "theirs", "pathspec-from-file"), "f") or any(
            p in (".", ":/") or "*" in p for p in pos
        ) or len(pos) > 1 or any(_looks_like_a_file(p) for p in pos):
            return destructive("`git checkout` of paths overwrites uncommitted changes for good")
    if sub == "restore":
        staged_only = _has(rest, ("staged",), "S") and not _has(rest, ("worktree",), "W")
        if not staged_only:
            return destructive("`git restore` overwrites uncommitted changes in the working tree for good")
    if sub == "switch" and _has(rest, ("discard-changes", "force"), "f"):
        return destructive("`git switch --discard-changes` throws away uncommitted changes")
    if sub == "stash" and first in ("drop", "clear"):
        return destructive(f"`git stash {first}` deletes stashed changes for good")
    if sub == "branch" and (
        any(a == "-D" or (a.startswith("-") and not a.startswith("--") and "D" in a) for a in rest)
        or (_has(rest, ("delete",), "d") and _has(rest, ("force",), "f"))
    ):
        return destructive("`git branch -D` deletes a branch even if it is not merged")
    if sub == "rm" and _has(rest, ("force",), "f"):
        return destructive("`git rm -f` deletes files with uncommitted changes")
    if sub == "reflog" and first in ("expire", "delete"):
        return destructive(f"`git reflog {first}` deletes the history that recovers lost commits")
    if sub == "worktree" and first == "remove" and _has(rest, ("force",), "f"):
        return destructive("`git worktree remove --force` deletes a working tree with its changes")
    return None


CASES: list[tuple[str, str, str | None]] = [
    # -O inside a short-option cluster runs its value through sh
    ("git grep -iO'touch pwned' hello", "reject", "pager"),
    ("git grep -hO'sh s.sh' x", "reject", "pager"),
    ("git grep -nOsh x", "reject", "pager"),
    ("git -C . grep -iOsh x", "reject", "pager"),
    ("git grep --color -Osh x", "reject", "pager"),
    ("git grep --open=vim x", "reject", "pager"),
    ("git grep --no-index -O x", "reject", "pager"),
    ("git grep -e -O x", "allow", None),  # -O here is the pattern, the value of -e
    ("git grep -in 'def main' -- src", "allow", "only reads"),
    ("git grep --weird x", "ask", "--weird"),
    # options are parsed in order, negations included
    ("git clean -n --no-dry-run -f", "ask+destructive", "deletes untracked"),
    ("git clean -n --no-n -f", "ask+destructive", "deletes untracked"),
    ("git clean -n --no-dry -f", "ask+destructive", "deletes untracked"),
    ("git clean -nf", "allow", "only lists"),
    ("git clean -f -n -d", "allow", "only lists"),
    ("git clean --dry -x", "allow", "only lists"),
    ("git clean -fdx", "ask+destructive", "deletes untracked"),
    ("git clean -fi", "reject", "interactive"),
    # force pushes and remote deletions
    ("git push --force origin main", "reject", "rewrites or deletes"),
    ("git push -f origin main", "reject", "rewrites or deletes"),
    ("git push -uf origin main", "reject", "rewrites or deletes"),
    ("git push --forc origin main", "reject", "rewrites or deletes"),
    ("git push --force-with-lease origin main", "reject", "rewrites or deletes"),
    ("git push origin --delete old", "reject", "rewrites or deletes"),
    ("git push origin +main", "reject", "refspec"),
    ("git push origin :old", "reject", "refspec"),
    ("git push --mirror origin", "reject", "rewrites or deletes"),
    ("git -C . push -f", "reject", "rewrites or deletes"),
    ("git push -u origin main", "ask", "network"),
    # the destructive class
    ("git reset --hard HEAD~5", "ask+destructive", "discards"),
    ("git reset HEAD~1", "ask", None),
    ("git checkout -- .", "ask+destructive", "overwrites"),
    ("git checkout astroid/builder.py", "ask+destructive", "overwrites"),
    ("git checkout src/", "ask+destructive", "overwrites"),
    ("git checkout main", "ask", None),
    ("git checkout feature/login", "ask", None),
    ("git checkout .", "ask+destructive", "overwrites"),
    ("git checkout main -- src/app.py", "ask+destructive", "overwrites"),
    ("git checkout -f main", "ask+destructive", "overwrites"),
    ("git restore src/app.py", "ask+destructive", "overwrites"),
    ("git restore --staged src/app.py", "ask", None),
    ("git stash drop", "ask+destructive", "deletes stashed"),
    ("git stash clear", "ask+destructive", "deletes stashed"),
    ("git branch -D old", "ask+destructive", "not merged"),
    ("git branch -d --force old", "ask+destructive", "not merged"),
    ("git rm -f x.py", "ask+destructive", "uncommitted"),
    ("git switch --discard-changes main", "ask+destructive", "throws away"),
]
