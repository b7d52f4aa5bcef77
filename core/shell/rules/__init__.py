"""One module per family of programs, each with its table of cases ``CASES``
beside its rules. Importing this package registers every family's handlers
with ``core.shell.programs.HANDLERS``, in an order where a specific rule wins
over a family."""

from __future__ import annotations

from core.shell import compound, environment, programs
from core.shell.programs import HANDLERS, OPTION_SPECS, PATH_FINDERS
from core.shell.rules import (
    awk,
    builds,
    destructive,
    fetch,
    git,
    git_changes,
    host,
    interpreters,
    jq,
    per_item,
    readonly,
    rejected,
    sed,
    wrappers,
)

# Later modules win where a name appears twice (a specific rule over a family).
RULE_MODULES = (rejected, destructive, builds, host, readonly, per_item, fetch, sed, awk, jq, interpreters, git)
# Every module with a CASES table (tests/shell/test_shell_rules.py runs them all).
CASE_MODULES = (*RULE_MODULES, git_changes, wrappers, programs, compound, environment)

for _module in RULE_MODULES:
    if _module is not host:
        HANDLERS.update(_module.HANDLERS)
    OPTION_SPECS.update(getattr(_module, "OPTION_SPECS", {}))
    PATH_FINDERS.update(getattr(_module, "PATH_FINDERS", {}))
# Global installs (npm -g, pipx install, cargo install ...) are checked before the
# family's own rule, which still judges every other use of the program.
host._NEXT.update({name: HANDLERS[name] for name in host._GLOBAL_INSTALLERS if name in HANDLERS})
for _name in host._GLOBAL_INSTALLERS:
    host._NEXT.setdefault(_name, host.default_rule)
HANDLERS.update(host.HANDLERS)

__all__ = ["CASE_MODULES", "RULE_MODULES"]
