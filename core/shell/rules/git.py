"""git: read-only subcommands allow, changes ask, program-running options reject. Pure."""

from __future__ import annotations

import re

from core.shell.options import Opts, long_hit, opts, scan, short_hit
from core.shell.rules.git_changes import git_clean, git_destructive, git_grep, git_push
from core.shell.programs import Handler
from core.shell.verdict import ask_writes, H_GIT_STD, H_SEPARATE, H_SYSTEM, J, allow, ask, rej


_GIT_GLOBAL_FLAGS = frozenset(
    "--no-pager -P --no-replace-objects --literal-pathspecs --glob-pathspecs --noglob-pathspecs "
    "--icase-pathspecs --no-optional-locks --no-lazy-fetch --no-advice --bare".split()
)
_GIT_GLOBAL_INFO = frozenset("--version -v --html-path --man-path --info-path".split())

_LOG_DIFF_FLAGS = (
    "oneline stat shortstat numstat name-only name-status graph decorate no-decorate all patch "
    "no-patch follow reverse first-parent merges no-merges abbrev-commit no-abbrev-commit cached "
    "staged color no-color word-diff color-words ignore-space-change ignore-all-space "
    "ignore-blank-lines ignore-space-at-eol ignore-cr-at-eol summary raw function-context "
    "find-renames find-copies find-copies-harder relative no-relative no-renames check exit-code "
    "quiet pickaxe-all pickaxe-regex left-right cherry-pick cherry-mark cherry boundary topo-order "
    "date-order author-date-order no-walk simplify-by-decoration source histogram patience minimal "
    "dirstat compact-summary full-index binary abbrev no-abbrev no-ext-diff no-textconv "
    "irreversible-delete text ita-invisible-in-index ita-visible-in-index merge-base no-index "
    "branches tags remotes glob exclude not full-history dense sparse show-linear-break parents "
    "children log-size use-mailmap mailmap notes no-notes show-notes standard-notes "
    "no-standard-notes expand-tabs no-expand-tabs pretty format date encoding "
    "stat-width stat-name-width stat-count stat-graph-width dirstat-by-file cumulative "
    "unified inter-hunk-context diff-algorithm anchored diff-filter find-object break-rewrites "
    "src-prefix dst-prefix no-prefix default-prefix line-prefix indent-heuristic "
    "no-indent-heuristic color-moved no-color-moved color-moved-ws word-diff-regex ws-error-highlight "
    "submodule ignore-submodules rename-empty no-rename-empty remerge-diff diff-merges no-diff-merges "
    "combined-all-paths cc walk-reflogs show-pulls ancestry-path bisect "
    "since after until before author committer grep all-match invert-grep regexp-ignore-case "
    "basic-regexp extended-regexp fixed-strings perl-regexp max-count skip min-parents max-parents "
    "no-min-parents no-max-parents max-age min-age "
    "oneline-abbrev ignore-missing single-worktree reflog stdin alternate-refs remove-empty "
    "clear-decorations decorate-refs decorate-refs-exclude relative-date no-show-signature "
    "summary-only committer-date-order numbered"
)
_LOG_DIFF_ARG = (
    "max-count skip since after until before author committer grep format pretty date encoding "
    "decorate-refs decorate-refs-exclude diff-filter find-object stat-width stat-name-width "
    "stat-count stat-graph-width unified inter-hunk-context diff-algorithm anchored src-prefix "
    "dst-prefix line-prefix color-moved-ws word-diff-regex ws-error-highlight glob exclude "
    "branches tags remotes"
)
_GIT_OPTS: dict[str, Opts] = {
    "log": opts("pusrzRaDtcmwbWiEFPgq", "nSGL", _LOG_DIFF_FLAGS, _LOG_DIFF_ARG, short_opt="UMCBlOX", numeric=True),
    "status": opts(
        "sbvz", "", "short branch show-stash porcelain long verbose untracked-files ignore-submodules "
        "ignored column no-column ahead-behind no-ahead-behind renames no-renames find-renames", "",
        short_opt="u",
    ),
    "branch": opts(
        "arvlic", "", "all remotes verbose list show-current color no-color column no-column "
        "ignore-case abbrev no-abbrev omit-empty",
        "sort format points-at merged no-merged contains no-contains",
    ),
    "rev-parse": opts(
        "q", "", "abbrev-ref short verify quiet show-toplevel show-prefix show-cdup git-dir "
        "git-common-dir absolute-git-dir is-inside-work-tree is-inside-git-dir is-bare-repository "
        "is-shallow-repository symbolic symbolic-full-name all branches tags remotes sq sq-quote "
        "default show-object-format path-format local-env-vars since until not revs-only no-revs "
        "flags no-flags shared-index-path show-superproject-working-tree disambiguate glob exclude "
        "show-ref-format after before",
        "git-path resolve-git-dir default",
    ),
    "ls-files": opts(
        "cdmoiskuztvf", "xX", "cached deleted modified others ignored stage unmerged killed directory "
        "no-empty-directory eol exclude-standard error-unmatch full-name recurse-submodules abbrev "
        "debug deduplicate sparse resolve-undo exclude exclude-from exclude-per-directory with-tree "
        "format",
        "exclude exclude-from exclude-per-directory with-tree format",
    ),
    "blame": opts(
        "bltpcefsnwh", "LS", "root show-stats reverse first-parent porcelain line-porcelain "
        "incremental encoding date progress no-progress color-lines color-by-age abbrev show-email "
        "show-number show-name score-debug minimal",
        "contents ignore-rev ignore-revs-file", short_opt="MC",
    ),
}
_GIT_OPTS["diff"] = _GIT_OPTS["log"]
_GIT_OPTS["show"] = _GIT_OPTS["log"]
_GIT_OPTS["whatchanged"] = _GIT_OPTS["log"]
_GIT_OPTS["shortlog"] = opts("nsec", "w", "numbered summary email committer group format " + _LOG_DIFF_FLAGS,
                           _LOG_DIFF_ARG, short_opt="w", numeric=True)
_GIT_OPTS["annotate"] = _GIT_OPTS["blame"]

# read-only subcommands without an option table: allowed with any option that
# is not on the ask/reject lists below
_GIT_READ_ANY = frozenset(
    "describe rev-list ls-tree show-ref for-each-ref merge-base name-rev count-objects range-diff "
    "version var check-ignore check-attr diff-tree diff-files diff-index show-branch cherry "
    "check-ref-format verify-pack grep cat-file".split()
)
_GIT_ASK = frozenset(
    "add commit checkout switch restore reset stash merge rebase cherry-pick revert tag mv rm init "
    "apply am format-patch bundle gc prune repack fsck notes worktree sparse-checkout "
    "update-index update-ref symbolic-ref write-tree commit-tree hash-object mktree read-tree "
    "checkout-index fast-import fast-export mailinfo mailsplit replace pack-refs reflog bisect "
    "submodule remote config branch citool gui maintenance rerere request-pull "
    "stripspace interpret-trailers column fmt-merge-msg multi-pack-index commit-graph "
    "unpack-objects pack-objects index-pack prune-packed merge-file merge-tree "
    "show-index get-tar-commit-id backfill help verify-commit verify-tag diagnose bugreport refs".split()
)
_GIT_ASK_REASONS = {
    "help": "may start a manual viewer or a web browser",
    "verify-commit": "runs gpg to check signatures",
    "verify-tag": "runs gpg to check signatures",
    "fsck": "may write recovered objects (--lost-found)",
    "diagnose": "writes a diagnostics archive",
    "bugreport": "writes a report file",
    "format-patch": "writes patch files",
    "bisect": "moves HEAD between commits",
}
_GIT_NETWORK = frozenset("clone fetch pull push ls-remote archive".split())
_GIT_REJECT = {
    "difftool": "runs a configured external diff program",
    "mergetool": "runs a configured external merge program",
    "instaweb": "starts a web server and a browser",
    "daemon": "starts a git server",
    "send-email": "sends e-mail (network) and can run a configured program",
    "imap-send": "talks to an IMAP server",
    "filter-branch": "runs shell code given as arguments",
    "credential": "reads or stores credentials",
    "credential-cache": "reads or stores credentials",
    "credential-store": "reads or stores credentials",
    "upload-pack": "is a server-side transport program",
    "receive-pack": "is a server-side transport program",
    "upload-archive": "is a server-side transport program",
    "shell": "is a restricted login shell",
    "http-backend": "is a server program",
    "remote-ext": "runs an arbitrary program as a transport",
    "remote-fd": "is a raw transport helper",
    "hook": "runs repository hooks",
    "web--browse": "starts a web browser",
    "p4": "talks to a Perforce server",
    "svn": "talks to a Subversion server",
    "cvsimport": "talks to a CVS server",
    "cvsserver": "is a server program",
    "cvsexportcommit": "talks to a CVS checkout",
    "quiltimport": "imports patches via external tools",
    "merge-index": "runs a merge program for each file",
    "merge-one-file": "is a helper script run by merge programs",
}
_GIT_INTERACTIVE = {
    "add": ("-i", "--interactive", "-p", "--patch", "-e", "--edit"),
    "commit": ("--interactive", "-p", "--patch", "-e", "--edit"),
    "rebase": ("-i", "--interactive"),
    "checkout": ("-p", "--patch"),
    "reset": ("-p", "--patch"),
    "restore": ("-p", "--patch"),
    "stash": ("-p", "--patch"),
    "clean": ("-i", "--interactive"),
    "tag": ("-e", "--edit"),
    "merge": ("-e", "--edit"),
}
_GIT_ASK_OPTS = ("output", "ext-diff", "textconv", "show-signature", "filters")
_GIT_ASK_EXACT = frozenset(["text"])
_GIT_TRANSPORT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")
_GIT_CONFIG_SAFE = re.compile(
    r"(user\.(name|email)|core\.(autocrlf|filemode|ignorecase|eol|quotepath|whitespace|safecrlf|"
    r"longpaths|symlinks|precomposeunicode)|init\.defaultbranch|pull\.(rebase|ff)|"
    r"push\.(default|autosetupremote)|merge\.(ff|conflictstyle)|rebase\.(autostash|autosquash)|"
    r"fetch\.prune|color\.[a-z.]+|advice\.[a-z]+|log\.(date|decorate|abbrevcommit)|"
    r"diff\.(renames|algorithm|colormoved|mnemonicprefix)|status\.[a-z]+|"
    r"branch\.autosetup(merge|rebase)|branch\.[A-Za-z0-9._/-]+\.(merge|remote|rebase)|"
    r"remote\.[A-Za-z0-9._-]+\.(url|pushurl|fetch|prune)|commit\.verbose|rerere\.enabled|"
    r"gc\.auto|pager\.none-never)",
    re.IGNORECASE,
)


def _git_config(args: list[str]) -> J:
    setters = ("--add", "--replace-all", "--unset", "--unset-all", "--rename-section", "--remove-section")
    readers = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--get-color",
               "--get-colorbool")
    file_opts = ("--file", "-f", "--blob", "--type", "--default", "--comment")
    if any(a in ("-e", "--edit", "edit") for a in args):
        return rej("`git config --edit` opens an editor", "read settings with `git config --list`")
    pos: list[str] = []
    i = 0
    mode = None
    while i < len(args):
        a = args[i]
        i += 1
        if a in file_opts:
            i += 1
            continue
        if a in setters:
            mode = "set"
            continue
        if a in readers:
            mode = mode or "get"
            continue
        if a.startswith("-"):
            continue
        pos.append(a)
    if pos and pos[0] in ("list", "get"):
        return allow("`git config` only reads settings")
    if pos and pos[0] in ("set", "unset", "rename-section", "remove-section"):
        mode = "set"
        pos = pos[1:]
    if mode is None:
        mode = "set" if len(pos) >= 2 else "get"
    if mode == "get":
        return allow("`git config` only reads settings")
    if not pos:
        return ask("`git config` changes repository settings")
    key = pos[0]
    if not _GIT_CONFIG_SAFE.fullmatch(key):
        return rej(
            f"`git config {key}` is not on the list of plain preference keys; keys such as alias.*, "
            "core.pager, core.sshCommand, core.hooksPath, filters and credential helpers run programs",
            "tell the user which setting you need; they can set it themselves",
        )
    if any(_GIT_TRANSPORT.match(v) for v in pos[1:]):
        return rej("a `<transport>::` remote-helper URL runs an arbitrary program", H_GIT_STD)
    return ask(f"`git config {key}` changes repository settings")


def _h_git(name: str, args: list[str]) -> J:
    i, n = 0, len(args)
    cap = None
    while i < n and args[i].startswith("-"):
        a = args[i]
        i += 1
        if a == "-c" or a.startswith("-c") or a.startswith("--config-env"):
            return rej(
                f"`git {a}` sets configuration that can run programs (core.pager, alias.*, core.sshCommand ...)",
                "drop the -c / --config-env option; run plain `git SUBCOMMAND ...`",
            )
        if a.startswith("--exec-path"):
            return rej("`git --exec-path` changes where git finds the programs it runs", "drop the option")
        if a in ("-p", "--paginate"):
            return rej("`git -p/--paginate` runs a pager program", "drop the option; output is returned to you")
        if a in _GIT_GLOBAL_FLAGS:
            continue
        if a in _GIT_GLOBAL_INFO:
            if i == n:
                return allow(f"`git {a}` only prints information")
            continue
        if a == "-C" or a.startswith(("--git-dir", "--work-tree", "--namespace")):
            val = a.split("=", 1)[1] if "=" in a else (args[i] if i < n else "")
            if "=" not in a:
                i += 1
            # Any other folder is judged as a path (outside the workspace asks;
            # the facts read a workspace repository's config). Not the scratch
            # /tmp, which counts as inside but outside a sandbox is the host's.
            if a != "-C" or ".." in val.split("/") or not val or val == "/tmp" or val.startswith("/tmp/"):
                cap = f"`git {a}` points git at another repository or folder"
            continue
        if a in ("-h", "--help"):
            return ask("`git --help` may start a manual viewer")
        return rej(f"unknown git option `{a}` before the subcommand", H_GIT_STD)
    if i >= n:
        return allow("`git` without a subcommand only prints usage")
    sub = args[i]
    rest = args[i + 1 :]
    j = _git_sub(sub, rest)
    if cap and j[0] == "allow":
        return ask(cap)
    return j


def _git_sub(sub: str, rest: list[str]) -> J:
    if sub in _GIT_REJECT:
        return rej(f"`git {sub}` {_GIT_REJECT[sub]}", H_GIT_STD)
    interactive = _GIT_INTERACTIVE.get(sub, ())
    if sub == "stash" and rest[:1] and rest[0] in ("show", "list", "pop", "apply", "drop", "branch", "clear",
                                                    "create", "store"):
        interactive = ()  # `stash show -p` prints a patch
    for opt in interactive:
        for a in rest:
            if a == opt or (opt.startswith("--") and a.startswith(opt + "=")):
                return rej(
                    f"`git {sub} {a}` is interactive (needs a terminal / editor)",
                    "use the non-interactive form (e.g. `git add FILE`, `git commit -m MESSAGE`)",
                )
    for a in rest:
        hit = long_hit(a, ("upload-pack", "receive-pack", "exec", "template"))
        if hit and (hit != "exec" or sub in ("push", "ls-remote", "archive", "fetch", "pull", "clone", "rebase")):
            return rej(f"`git {sub} --{hit}` runs another program", H_GIT_STD)
    if sub == "rebase" and any(a == "-x" or a.startswith("-x") for a in rest):
        return rej("`git rebase -x/--exec` runs shell commands", H_GIT_STD)
    if sub == "bisect" and rest[:1] == ["run"]:
        return rej("`git bisect run` runs a command for each step", "run the bisect steps one by one")
    if sub == "submodule" and "foreach" in rest:
        return rej("`git submodule foreach` runs a shell command in each submodule", H_SEPARATE)
    if sub in ("clone", "ls-remote") and any(a == "-u" or short_hit(a, "u") for a in rest):
        return rej(f"`git {sub} -u` (--upload-pack) runs another program", H_GIT_STD)
    if sub == "clone" and any(a in ("-c", "--config") or a.startswith(("--config=", "-c")) for a in rest):
        return rej("`git clone -c/--config` sets configuration that can run programs", H_GIT_STD)
    if sub in _GIT_NETWORK or sub in ("remote", "submodule"):
        for a in rest:
            if _GIT_TRANSPORT.match(a):
                return rej(f"`{a}`: a `<transport>::` remote-helper URL runs an arbitrary program", H_GIT_STD)
    if sub == "maintenance" and rest[:1] in (["start"], ["register"]):
        return rej("`git maintenance start/register` schedules background jobs on the machine", H_SYSTEM)
    if sub == "clean":
        return git_clean(rest)
    if sub == "grep":
        return git_grep(rest)
    if sub == "push":
        pushed = git_push(rest)
        if pushed is not None:
            return pushed
    lost = git_destructive(sub, rest)
    if lost is not None:
        return lost
    if sub == "config":
        return _git_config(rest)
    if sub in _GIT_NETWORK:
        if sub == "archive" and not any(a.startswith("--remote") for a in rest):
            return ask("`git archive` writes an archive")
        return ask(f"`git {sub}` contacts the network")
    # read-only candidates
    ask_reason = None
    for a in rest:
        hit = long_hit(a, _GIT_ASK_OPTS, _GIT_ASK_EXACT)
        if hit:
            ask_reason = f"`git {sub} --{hit}` writes a file or runs a configured program"
            if hit == "output":
                return ask_writes(ask_reason)
            break
    spec = _GIT_OPTS.get(sub)
    if spec is not None:
        if ask_reason:
            return ask(ask_reason)
        bad, pos = scan(rest, spec)
        if bad is not None:
            return ask(f"`git {sub}` with option `{bad}`, which is not on the known read-only option list")
        if sub == "branch" and pos and not any(a in ("-l", "--list") or short_hit(a, "l") for a in rest):
            return ask("`git branch NAME` creates a branch")
        if sub == "branch":
            for a in rest:
                if a in ("-d", "-D", "-m", "-M", "-c", "-C", "-f", "-u", "--delete", "--move", "--copy",
                         "--force", "--set-upstream-to", "--unset-upstream", "--edit-description", "--track"):
                    return ask(f"`git branch {a}` changes branches")
        return allow(f"`git {sub}` only reads the repository")
    if sub in _GIT_READ_ANY:
        if ask_reason:
            return ask(ask_reason)
        return allow(f"`git {sub}` only reads the repository")
    listing = {
        "stash": ("list", "show"),
        "remote": ("", "-v", "--verbose", "get-url"),
        "worktree": ("list",),
        "reflog": ("", "show", "list"),
        "notes": ("list", "show"),
        "submodule": ("status", "summary"),
        "tag": ("", "-l", "--list", "-n"),
    }.get(sub)
    if listing is not None and (rest[:1] or [""])[0] in listing and not ask_reason:
        if sub == "tag" and any(a in ("-d", "-a", "-s", "-f", "-m", "-F", "-u", "--delete") for a in rest):
            return ask(f"`git {sub}` changes tags")
        if sub in ("remote",) and len(rest) > 1 and rest[0] != "get-url":
            return ask(f"`git {sub}` may change remotes")
        return allow(f"`git {sub}` only lists")
    if sub in _GIT_ASK or sub in _GIT_OPTS or sub in _GIT_READ_ANY:
        return ask(f"`git {sub}` {_GIT_ASK_REASONS.get(sub, 'changes the repository or working tree')}")
    return rej(
        f"unknown git subcommand `{sub}` (it could be an alias or a git-* program that runs anything)",
        H_GIT_STD,
    )

HANDLERS: dict[str, Handler] = {"git": _h_git}

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("git status", "allow", "only reads"),
    ("git log --oneline -5", "allow", None),
    ("git -C sub status", "allow", None),
    ("git -C /tmp/repo status", "ask", "another repository"),
    ("git -C /etc status", "ask", "outside the workspace"),  # an absolute folder is judged as a path
    ("git -c core.pager=sh log", "reject", "configuration"),
    ("git grep -O foo", "reject", "pager"),
    ("git fetch --upload-pack='sh -c id' origin", "reject", "runs another program"),
    ("git clone 'ext::sh -c id' x", "reject", "remote-helper"),
    ("git config core.pager 'sh -c id'", "reject", "plain preference"),
    ("git config user.name 'A B'", "ask", None),
    ("git rebase -i main", "reject", "interactive"),
    ("git foo", "reject", "unknown git subcommand"),
    ("git commit -m 'x'", "ask", None),
    ("git diff --output=patch.txt", "ask", "writes a file"),
]
