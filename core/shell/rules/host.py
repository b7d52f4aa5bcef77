"""Host administration, long-running servers and privileged containers: reject. Pure.

These change or occupy the machine rather than the workspace:
network and storage administration (``ip``, ``zfs``, ``dmsetup``, ``kexec``,
LVM ...), system package managers (their read-only queries ask), servers that
run until the timeout (``python3 -m http.server`` is judged in
rules_interpreters), ``fuser -k`` (kills), and containers given host
privileges or host folders (``docker run --privileged``, ``-v /:/host``).
"""

from __future__ import annotations

from core.shell.options import is_version_query, long_hit, short_hit
from core.shell.programs import Handler
from core.shell.verdict import H_KILL, H_SYSTEM, J, ask, rej

_HOST = frozenset(
    "ip ifconfig route brctl bridge tc ethtool iw iwconfig nmcli networkctl resolvectl arp kexec dmsetup "
    "zfs btrfs lvm lvcreate lvextend lvresize lvreduce lvchange lvrename vgcreate vgchange vgextend "
    "vgreduce vgrename pvcreate pvmove pvresize partprobe kpartx blockdev mknod hwclock depmod kmod "
    "efibootmgr grub-install update-grub grub-mkconfig dracut mkinitramfs update-initramfs fstrim "
    "setfont loadkeys chvt nvram pmset diskutil hdiutil csrutil spctl tmutil scutil networksetup dscl "
    "systemsetup auditctl apparmor_parser aa-enforce aa-disable semanage setsebool quotaon quotaoff "
    "swaplabel e2label xfs_repair xfs_admin ntfsfix mkdosfs mkntfs snap flatpak emerge zypper apk "
    "pacman yum dnf aptitude dpkg-reconfigure sysupgrade".split()
)
_SERVERS = frozenset(
    "http-server live-server uvicorn gunicorn hypercorn daphne waitress-serve redis-server mongod postgres "
    "mysqld nginx httpd apache2 apachectl caddy lighttpd memcached rabbitmq-server webpack-dev-server "
    "jupyter-notebook jupyter-lab".split()
)
# program -> first words that start a server
_SERVING_SUBCOMMANDS = {
    "flask": ("run",), "jupyter": ("notebook", "lab", "server"), "hugo": ("server", "serve"),
    "jekyll": ("serve", "s"), "mkdocs": ("serve",), "rails": ("server", "s"), "next": ("dev", "start"),
    "ng": ("serve",), "webpack": ("serve",), "vite": ("", "dev", "serve", "preview"),
    "streamlit": ("run",), "gradio": ("",), "tensorboard": ("",),
}
# package manager -> first words that only query (ask); anything else changes the machine
_PKG_QUERIES = {
    "apt": ("list", "show", "search", "policy", "depends", "rdepends"),
    "apt-get": ("-s", "--simulate", "--dry-run", "check"),
    "apt-cache": ("show", "search", "policy", "depends", "rdepends", "showpkg", "madison", "pkgnames"),
    "dpkg": ("-l", "-L", "-s", "-S", "--list", "--listfiles", "--status", "--search", "--get-selections"),
    "dpkg-query": ("-l", "-L", "-s", "-S", "-W", "--list", "--listfiles", "--status", "--search", "--show"),
    "rpm": ("-q", "-qa", "-qi", "-ql", "-qf", "--query"),
}
_CONTAINER_RUNS = ("run", "create", "exec")
_CONTAINER_PRIV = ("privileged", "cap-add", "device", "security-opt", "device-cgroup-rule")
_HOST_NAMESPACES = ("pid", "net", "network", "ipc", "uts", "userns", "cgroupns")


def _h_host(name: str, args: list[str]) -> J:
    return rej(f"`{name}` administers the host (network, storage, boot, kernel or system packages)", H_SYSTEM)


def _h_server(name: str, args: list[str]) -> J:
    return rej(
        f"`{name}` starts a long-running server, which would only end at the timeout",
        "start servers yourself outside the agent, or ask the user to; run tests against them instead",
    )


def _h_serving(name: str, args: list[str]) -> J:
    first = next((a for a in args if not a.startswith("-")), "")
    if first in _SERVING_SUBCOMMANDS.get(name.lower(), ()):
        return _h_server(f"{name} {first}".strip(), args)
    return ask(f"`{name}` runs project code")


def _h_pkg(name: str, args: list[str]) -> J:
    if args and all(a.startswith("-") for a in args) and args[0] in ("--version", "-v", "-V"):
        return ask(f"`{name} {args[0]}` prints its version")
    if args and args[0] in _PKG_QUERIES.get(name.lower(), ()):
        return ask(f"`{name} {args[0]}` queries the system's packages")
    return rej(f"`{name}` installs or removes the machine's packages", H_SYSTEM)


def _h_fuser(name: str, args: list[str]) -> J:
    if any(long_hit(a, ("kill",)) or short_hit(a, "k") for a in args):
        return rej("`fuser -k` kills processes", H_KILL)
    return ask("`fuser` lists processes that use files")


# program -> (subcommand words that install outside the workspace, flags that make any install global)
_GLOBAL_INSTALLERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "npm": ((), ("-g", "--global", "--location=global")),
    "pnpm": ((), ("-g", "--global")),
    "yarn": (("global",), ()),
    "bun": ((), ("-g", "--global")),
    "uv": (("tool",), ()),
    "pipx": (("install", "uninstall", "upgrade", "inject", "ensurepath", "reinstall-all", "upgrade-all"), ()),
    "brew": (("install", "uninstall", "upgrade", "reinstall", "tap", "link", "unlink", "services", "cleanup"), ()),
    "corepack": (("enable", "disable", "prepare", "install", "use", "up"), ()),
    "cargo": (("install", "uninstall"), ()),
    "go": (("install",), ()),
    "gem": (("install", "uninstall", "update"), ()),
    "pip": ((), ("--user", "--target", "--prefix", "--root", "--break-system-packages")),
    "pip3": ((), ("--user", "--target", "--prefix", "--root", "--break-system-packages")),
    "rustup": (("install", "uninstall", "update", "toolchain", "default", "component", "target", "self"), ()),
}


def _installs_globally(name: str, args: list[str]) -> bool:
    subs, flags = _GLOBAL_INSTALLERS[name.lower()]
    first = next((a for a in args if not a.startswith("-")), "")
    return first in subs or any(a in flags or a.split("=", 1)[0] in flags for a in args)


def _h_installer(name: str, args: list[str]) -> J:
    """Only global installs are judged here; anything else goes to the family's own rule."""
    if _installs_globally(name, args):
        return rej(
            f"`{name} {' '.join(args[:2])}` installs outside the workspace (global tools, the user's home)",
            "install into the project instead (a virtualenv, node_modules), or ask the user to install it",
        )
    return _NEXT[name.lower()](name, args)


_NEXT: dict[str, Handler] = {}  # the rule each installer falls back to (filled by core/shell/__init__.py)


def default_rule(name: str, args: list[str]) -> J:
    return ask(f"`{name}` may change files or run code")


def _h_container(name: str, args: list[str]) -> J:
    sub = next((a for a in args if not a.startswith("-")), "")
    if sub in _CONTAINER_RUNS:
        for k, a in enumerate(args):
            hit = long_hit(a, _CONTAINER_PRIV)
            if hit:
                return rej(f"`{name} {sub} --{hit}` gives the container host privileges", H_SYSTEM)
            ns = long_hit(a, _HOST_NAMESPACES)
            value = a.partition("=")[2] if "=" in a else (args[k + 1] if k + 1 < len(args) else "")
            if ns and value == "host":
                return rej(f"`{name} {sub} --{ns}=host` shares the host's namespace", H_SYSTEM)
            mount = long_hit(a, ("volume", "mount")) or (a[:2] == "-v" and not a.startswith("--"))
            if mount:
                spec = a[2:] if a.startswith("-v") and len(a) > 2 else value
                parts = spec.split(",")
                source = next((q.split("=", 1)[1] for q in parts if q.startswith(("source=", "src="))), parts[0])
                source = source.split(":")[0]
                if source.startswith(("/", "~", ".")) or "docker.sock" in spec:
                    return rej(f"`{name} {sub}` mounts the host folder `{source}` into the container", H_SYSTEM)
    if is_version_query(args):
        return ask(f"`{name} {args[0]}` prints its version")
    return rej(
        f"`{name}` controls the host's containers (host administration)",
        "ask the user to run container commands; work with the files in the workspace",
    )


HANDLERS: dict[str, Handler] = dict.fromkeys(_HOST, _h_host)
HANDLERS.update(dict.fromkeys(_SERVERS, _h_server))
HANDLERS.update(dict.fromkeys(_SERVING_SUBCOMMANDS, _h_serving))
HANDLERS.update(dict.fromkeys(_PKG_QUERIES, _h_pkg))
HANDLERS.update(dict.fromkeys("docker podman nerdctl docker-compose kubectl minikube kind".split(), _h_container))
HANDLERS.update(dict.fromkeys(_GLOBAL_INSTALLERS, _h_installer))
HANDLERS["fuser"] = _h_fuser

# (command, verdict, substring of the reason or None), run by tests/shell/test_shell_rules.py
CASES: list[tuple[str, str, str | None]] = [
    ("ip link", "reject", "administers the host"),
    ("ip link set eth0 down", "reject", "administers the host"),
    ("zfs destroy tank/data", "reject", "administers the host"),
    ("dmsetup remove_all", "reject", "administers the host"),
    ("kexec -l /boot/vmlinuz", "reject", "administers the host"),
    ("lvcreate -L 1G vg", "reject", "administers the host"),
    ("mknod x c 1 1", "reject", "administers the host"),
    ("fuser -k 8080/tcp", "reject", "kills processes"),
    ("fuser -vk x", "reject", "kills processes"),
    ("fuser x.log", "ask", None),
    ("apt-get install -y ripgrep", "reject", "packages"),
    ("apt install ripgrep", "reject", "packages"),
    ("dpkg -i x.deb", "reject", "packages"),
    ("dpkg -l", "ask", "queries"),
    ("pacman -S x", "reject", "administers the host"),
    ("uvicorn app:app", "reject", "long-running server"),
    ("flask run", "reject", "long-running server"),
    ("jupyter notebook", "reject", "long-running server"),
    ("vite", "reject", "long-running server"),
    ("vite build", "ask", None),
    ("docker run --privileged alpine sh", "reject", "host privileges"),
    ("docker run --priv alpine sh", "reject", "host privileges"),
    ("docker run --cap-add=SYS_ADMIN alpine", "reject", "host privileges"),
    ("docker run --pid=host alpine", "reject", "namespace"),
    ("docker run --net host alpine", "reject", "namespace"),
    ("docker run -v /:/host alpine", "reject", "host folder"),
    ("docker run -v/var/run/docker.sock:/s alpine", "reject", "host folder"),
    ("docker run --mount type=bind,source=/etc,target=/e alpine", "reject", "host folder"),
    ("podman run --privileged x", "reject", "host privileges"),
    ("docker run --rm alpine echo hi", "reject", "containers"),
    ("docker ps", "reject", "host administration"),
    ("docker compose up -d", "reject", "host administration"),
    ("kubectl get pods", "reject", "host administration"),
    ("docker --version", "ask", "version"),
    # installs outside the workspace
    ("npm install -g typescript", "reject", "outside the workspace"),
    ("npm i --global x", "reject", "outside the workspace"),
    ("pnpm link --global", "reject", "outside the workspace"),
    ("uv tool install ruff", "reject", "outside the workspace"),
    ("pipx install black", "reject", "outside the workspace"),
    ("brew install git-filter-repo", "reject", "outside the workspace"),
    ("corepack enable", "reject", "outside the workspace"),
    ("cargo install ripgrep", "reject", "outside the workspace"),
    ("pip install --user requests", "reject", "outside the workspace"),
    ("npm install", "ask", None),
    ("npm test", "ask", None),
    ("cargo build", "ask", None),
    ("pip install -e .", "ask", None),
    ("uv run pytest", "ask", None),
]
