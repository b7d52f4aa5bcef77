"""Families that always reject: privilege, system, kill, wrappers, network, builtins, interactive. Pure."""

from __future__ import annotations

import re
from typing import Sequence

from core.shell.programs import Handler
from core.shell.verdict import H_BUILTIN_STATE, H_INTERACTIVE, H_KILL, H_NETWORK, H_PRIV, H_SYSTEM, H_WRAPPER, J, allow, rej


_PRIVILEGE = frozenset(
    "sudo su doas pkexec runuser chroot unshare nsenter capsh setpriv sudoedit visudo setcap gksudo "
    "gksu kdesu kdesudo run0 machinectl newuidmap newgidmap chcon setenforce".split()
)
_SYSTEM = frozenset(
    "shutdown reboot halt poweroff init telinit systemctl service mount umount swapon swapoff losetup "
    "sysctl modprobe insmod rmmod iptables ip6tables nft ufw firewall-cmd crontab at batch atrm "
    "useradd userdel usermod groupadd groupdel groupmod passwd chpasswd chsh chfn hostnamectl "
    "timedatectl localectl update-alternatives ldconfig launchctl chattr wall".split()
)
_KILL = frozenset("kill pkill killall killall5 skill xkill".split())
_WRAPPERS = frozenset(
    "env timeout nice renice ionice nohup setsid stdbuf time watch strace ltrace gdb lldb "
    "valgrind command builtin exec eval source . trap alias unalias script expect parallel flock "
    "chrt taskset sg newgrp busybox toybox unbuffer fakeroot proot firejail bwrap sshpass rlwrap "
    "catchsegv entr watchexec nodemon hyperfine chpst daemonize start-stop-daemon runcon cpulimit "
    "numactl prlimit xdg-open open run-parts dbus-run-session dbus-launch xvfb-run ssh-agent "
    "systemd-run torsocks proxychains proxychains4 with-contenv s6-setuidgid su-exec gosu "
    "tini dumb-init faketime nix-shell perf".split()
)
_NETWORK = frozenset(
    "nc ncat netcat socat telnet ssh scp sftp rsync ftp tftp lftp aria2c axel lynx links "
    "elinks w3m http https httpie xh curlie mosh ping ping6 traceroute tracepath mtr dig nslookup "
    "host whois nmap ssh-copy-id ssh-keyscan smbclient websocat wscat grpcurl tor mysql psql "
    "mongo mongosh redis-cli".split()
)
_BUILTINS = frozenset(
    "cd pushd popd dirs read declare typeset let local export readonly set shopt ulimit mapfile "
    "readarray hash enable unset shift return exit break continue wait jobs fg bg disown suspend "
    "logout times umask complete compgen compopt caller history fc bind help getopts type :".split()
)
_INTERACTIVE = frozenset(
    "yes top htop btop atop less more most vi vim nvim view vimdiff nano emacs emacsclient pico joe "
    "ed ex mc man info tmux screen irb ipython bpython ptpython pry ghci jshell iex erl ".split()
)
_WRAPPER_HINTS = {
    "xargs": "list the inputs first (e.g. with the glob or grep tool), then run the command with "
    "explicit arguments",
    "parallel": "run the commands one by one as separate bash calls",
    "eval": "run the command itself directly, one plain command per call",
    "source": "there is no shell to load a file into; run the script as a program (e.g. `bash script.sh`)",
    ".": "there is no shell to load a file into; run the script as a program (e.g. `bash script.sh`)",
    "env": "put the assignments before the program itself (`NAME=value program ...`), or run it directly; "
    "the tool already applies a clean environment",
    "alias": "aliases do not exist here; run the program by its real name",
    "unalias": "aliases do not exist here; run the program by its real name",
    "trap": "there is no shell to trap signals in; run the command directly",
    "xdg-open": "tell the user which file or URL to open",
    "open": "tell the user which file or URL to open",
}


def _h_privilege(name: str, args: list[str]) -> J:
    return rej(f"`{name}` changes privileges or isolation (privilege escalation is not allowed)", H_PRIV)


def _h_system(name: str, args: list[str]) -> J:
    return rej(f"`{name}` changes system state (services, mounts, users, schedules, kernel)", H_SYSTEM)


def _h_kill(name: str, args: list[str]) -> J:
    return rej(f"`{name}` kills processes", H_KILL)


def _h_wrapper(name: str, args: list[str]) -> J:
    return rej(
        f"`{name}` is a wrapper that runs another program or shell code",
        _WRAPPER_HINTS.get(name.lower(), H_WRAPPER),
    )


_ACTIVATE = ("activate", "activate.sh", "activate.bash", "activate.fish", "activate.csh")


def _h_source(name: str, args: list[str]) -> J:
    """``source FILE``: nothing keeps a shell's state between the parts. A
    virtualenv's activation is the common case, and needs no shell: its
    programs run by their path."""
    script = args[0] if args else ""
    folder, _, base = script.rpartition("/")
    if base in _ACTIVATE and folder.rstrip("/").endswith("bin"):
        env_bin = folder.rstrip("/")
        return rej(
            f"`{name} {script}` loads a virtual environment into a shell, and no shell keeps it for the later parts",
            f"run the environment's programs by their path instead: `{env_bin}/python -m pytest`, "
            f"`{env_bin}/pip list` (that is all activating does for them)",
        )
    return _h_wrapper(name, args)


# env's own options when it runs no program: they only change what it prints.
_ENV_PRINT_FLAGS = frozenset(["-0", "--null", "-i", "--ignore-environment", "-"])
_ENV_UNSET = ("-u", "--unset")


def _h_env(name: str, args: list[str]) -> J:
    """``env`` with no program prints the environment (as ``printenv``); with
    one, it is a wrapper (rejected, with a hint to put the assignments first)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a in _ENV_PRINT_FLAGS or a.startswith(("--unset=", "-u")) and a not in _ENV_UNSET:
            i += 1
        elif a in _ENV_UNSET:
            i += 2
        elif "=" in a and not a.startswith("-") and a.split("=", 1)[0].replace("_", "a").isalnum():
            i += 1  # NAME=VALUE: printed with the rest
        else:
            return _h_wrapper(name, args)
    return allow(f"`{name}` without a program only prints the environment")


def _h_network(name: str, args: list[str]) -> J:
    return rej(f"`{name}` talks to the network", H_NETWORK)


# `command -v|-V NAME...` and `type [-afptP] NAME...` only print how each name
# resolves (alias, function, builtin, or a file on PATH); `command` without -v / -V
# runs the program, a wrapper. The names must be literal program names: a path,
# a glob or an expansion is judged as before.
_LOOKUP_OPTIONS = {"command": frozenset("pvV"), "type": frozenset("afptP")}
_LOOKUP_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def lookup_only(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is a shell lookup that only prints how names resolve
    (the executor runs it as the bash builtin, never as a program)."""
    if not argv or argv[0] not in _LOOKUP_OPTIONS:
        return False
    allowed, seen, i = _LOOKUP_OPTIONS[argv[0]], set(), 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 1
        if argv[i - 1] == "--":
            break
        letters = set(argv[i - 1][1:])
        if not letters or not letters <= allowed:
            return False
        seen |= letters
    names = argv[i:]
    if argv[0] == "command" and not seen & {"v", "V"}:
        return False
    return bool(names) and all(_LOOKUP_NAME.fullmatch(n) for n in names)


def _h_lookup(name: str, args: list[str]) -> J:
    if lookup_only((name, *args)):
        return allow(f"`{name} {args[0]}` only prints how each name resolves (a shell builtin; runs nothing)")
    if name == "command":
        return _h_wrapper(name, args)
    return _h_builtin(name, args)


def _h_builtin(name: str, args: list[str]) -> J:
    lname = name.lower()
    if lname in ("cd", "pushd", "popd", "dirs"):
        hint = H_BUILTIN_STATE
    elif lname in ("type", "hash"):
        hint = "use `command -v NAME` or `type NAME` to see how a name resolves"
    elif lname == "ulimit":
        hint = "resource limits are set by the bash tool itself"
    elif lname == "help":
        hint = "use `PROGRAM --help`"
    else:
        hint = (
            "there is no shell and no state between calls: variables and options cannot be set; "
            "pass values as arguments instead"
        )
    return rej(f"`{name}` is a shell builtin and has no effect without a shell (or evaluates code hidden in words)", hint)


def _h_interactive(name: str, args: list[str]) -> J:
    if name.lower() == "yes":
        # Piped into a program that exits, `yes` ends too; but its common use, `yes | pip uninstall x`,
        # answers prompts nobody reads, and a rule for the few consumers that only count lines
        # (`yes | head -n 3`) would judge pipelines by their neighbours: kept rejected.
        return rej("`yes` never ends on its own, and piped into a program it answers every prompt unread",
                   "pass non-interactive flags such as --yes / -y to the program instead; "
                   "for repeated lines use `printf` or `seq`")
    return rej(f"`{name}` is interactive (needs a terminal) or never ends", H_INTERACTIVE)


# procps top's options in batch mode: flags, and options that take a value (in the
# same word, `-n1`, or the next). Any other option (`-w`, `-e`, `-E`, `-O`...) keeps
# `top` rejected: what it does is not modelled.
_TOP_FLAGS = frozenset("bcHiSs1")
_TOP_VALUES = frozenset("ndpuUo")


def _top_runs(args: list[str]) -> dict[str, str] | None:
    """``top``'s options by letter ("" for a flag), or None when a word is not one it models."""
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        word, i = args[i], i + 1
        if not word.startswith("-") or len(word) < 2:
            return None
        for k, letter in enumerate(word[1:], 1):
            if letter in _TOP_FLAGS:
                seen[letter] = ""
            elif letter in _TOP_VALUES:
                value = word[k + 1:]
                if not value:
                    if i >= len(args):
                        return None
                    value, i = args[i], i + 1
                seen[letter] = value
                break
            else:
                return None
    return seen


def _h_top(name: str, args: list[str]) -> J:
    """``top -b -n N`` prints N snapshots of the host's processes and ends: it
    reads host processes, as ``ps`` does (ask). Interactive or endless otherwise."""
    seen = _top_runs(args)
    if seen is not None and "b" in seen and seen.get("n", "").isdigit() and int(seen["n"]) > 0:
        return J("ask", f"`{name}` in batch mode with a count ends; it shows the host's processes", None)
    return rej(f"`{name}` is interactive (needs a terminal) or never ends",
               "use `top -b -n 1` (batch mode, one snapshot), or `ps aux`")


def _h_sleep(name: str, args: list[str]) -> J:
    if any(a.lower().startswith("inf") for a in args):
        return rej("`sleep infinity` never ends", "do not wait; run the next command directly")
    return allow("`sleep` only waits (the call's timeout bounds it)")

HANDLERS: dict[str, Handler] = {}
for _names, _fn in (
    (_PRIVILEGE, _h_privilege), (_SYSTEM, _h_system), (_KILL, _h_kill), (_WRAPPERS, _h_wrapper),
    (_NETWORK, _h_network), (_BUILTINS, _h_builtin), (_INTERACTIVE, _h_interactive),
):
    HANDLERS.update(dict.fromkeys(_names, _fn))
HANDLERS["sleep"] = _h_sleep
HANDLERS["top"] = _h_top
HANDLERS["env"] = _h_env
HANDLERS["command"] = HANDLERS["type"] = _h_lookup
HANDLERS["source"] = HANDLERS["."] = _h_source
# NAME=VALUE words and -u NAME are names and values, never files.
PATH_FINDERS = {"env": lambda args: [], "top": lambda args: [], "command": lambda args: [], "type": lambda args: []}

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("sudo ls", "reject", "privilege"),
    ("systemctl stop sshd", "reject", "system state"),
    ("kill -9 1", "reject", "kills processes"),
    ("env xargs rm", "reject", "xargs"),
    ("source venv/bin/activate && python -m pytest -q", "reject", "virtual environment"),
    (". .venv/bin/activate", "reject", "virtual environment"),
    ("source env.sh && make", "reject", "wrapper"),
    ("env -u HOME sh -c id", "reject", "unsetting"),
    ("env -S 'sh -c id'", "reject", "wrapper"),
    ("env --split-string='sh -c id'", "reject", "wrapper"),
    ("env -C /etc cat passwd", "reject", "wrapper"),
    ("env", "allow", "prints the environment"),
    ("env | grep -i path", "allow", None),
    ("env -0 | sort -z", "allow", None),
    ("env -u HOME -uPATH --unset=LANG FOO=/etc/passwd", "allow", None),  # names and values, not files
    ("env -i", "allow", None),
    ("nohup rm x", "reject", "wrapper"),
    ("ssh host id", "reject", "network"),
    ("cd src", "reject", "builtin"),
    ("vim x", "reject", "interactive"),
    ("sleep 1", "allow", "waits"),
    ("sleep 30 && echo done", "allow", None),
    ("sleep infinity", "reject", "never ends"),
    # `command -v|-V` and `type` only print how a name resolves (bash runs them as builtins)
    ("command -v git", "allow", "how each name resolves"),
    ("command -V git", "allow", "how each name resolves"),
    ("command -pv python3 node", "allow", None),
    ("command -v -- jq", "allow", None),
    ("command -v jq >/dev/null && echo yes", "allow", None),
    ("command -v uv || echo missing", "allow", None),
    ("type ls", "allow", "how each name resolves"),
    ("type -t ls", "allow", None),
    ("type -P python3", "allow", None),
    ("type -a python3 g++ docker-compose", "allow", None),
    ("if command -v jq >/dev/null; then jq . a.json; else cat a.json; fi", "ask", "every part only reads"),
    ("if command -v rg; then command rg x; fi", "reject", "command"),
    ("command ls -la", "reject", "wrapper"),  # runs the program
    ("command -p rm -rf x", "reject", "wrapper"),
    ("command -v", "reject", "wrapper"),  # no name
    ("command -x ls", "reject", "wrapper"),
    ("command -v ./run.sh", "reject", "wrapper"),  # a path, not a name
    ("command -v '*'", "reject", "wrapper"),
    ("command -v $X", "reject", None),  # a name the validator cannot read
    ("type -x ls", "reject", "builtin"),
    ("type", "reject", "builtin"),
    ("type '$(id)'", "reject", "builtin"),
    ("hash -t ls", "reject", "builtin"),  # the script runs programs by path: the table is always empty
    ("hash -p /tmp/x ls", "reject", "builtin"),
    # `top` in batch mode with a count prints and ends; it shows the host's processes, as `ps` does
    ("top -b -n 1", "ask", "batch mode"),
    ("top -bn1 | head -20", "ask", "batch mode"),
    ("top -b -n 1 -o %MEM -c", "ask", None),
    ("top -n 2 -b -d 0.5 -p 1,2", "ask", None),
    ("top", "reject", "interactive"),
    ("top -b", "reject", "interactive"),  # no count: it never ends
    ("top -n 1", "reject", "interactive"),  # not batch: it needs a terminal
    ("top -b -n 0", "reject", "interactive"),
    ("top -b -n x", "reject", "interactive"),
    ("top -b -n 1 -w 512", "reject", "interactive"),  # an option not modelled
    ("htop -n 1", "reject", "interactive"),
    ("yes | head -n 3", "reject", "never ends on its own"),
    ("yes | pip uninstall x", "reject", "answers every prompt"),
]
