"""Every AGENT_TOOLS_* variable is read in one place and a bad value is
refused with a message naming the variable and what it accepts."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

from activities import settings
from activities.sandbox.bwrap import bwrap_path
from activities.txn import overlay
from activities.workspace.artifacts import prune_artifacts
from core.config import VARIABLES, SettingError, ToolSettings
from runtime.config import DEFAULT_TASK_QUEUE, WorkerConfig
from tests.layout_support import ROOT, source_modules


def test_defaults_without_variables() -> None:
    assert ToolSettings.from_env({}) == ToolSettings()
    assert ToolSettings().sandbox == "auto" and ToolSettings().bash_max_procs == 512


def test_values_are_parsed_and_scaled() -> None:
    s = ToolSettings.from_env({
        "AGENT_TOOLS_SANDBOX": " Required ", "AGENT_TOOLS_BASH_MEMORY_MB": "10", "AGENT_TOOLS_ARTIFACTS_MAX_AGE_H": "2",
        "AGENT_TOOLS_SANDBOX_HIDE": "/a:/b/c", "AGENT_TOOLS_TXN": "off", "AGENT_TOOLS_BASH_MAX_PROCS": "0",
        "AGENT_TOOLS_BWRAP": "",  # empty: unset
    })
    assert (s.sandbox, s.bash_memory_bytes, s.artifacts_max_age_s, s.sandbox_hide, s.txn, s.bash_max_procs, s.bwrap) == (
        "required", 10 << 20, 7200, ("/a", "/b/c"), "off", 0, "",
    )


@pytest.mark.parametrize(
    "name, raw, says",
    [
        ("AGENT_TOOLS_SANDBOX", "of", "is not one of auto, required, off"),
        ("AGENT_TOOLS_TXN", "no", "is not one of auto, off"),
        ("AGENT_TOOLS_BASH_MAX_PROCS", "-1", "must be 0 (no limit) or more"),
        ("AGENT_TOOLS_BASH_MEMORY_MB", "4G", "is not a whole number of MiB"),
        ("AGENT_TOOLS_TXN_PREIMAGE_MB", "-5", "must be 0 (no limit) or more"),  # was read as a negative cap
        ("AGENT_TOOLS_ARTIFACTS_MAX_MB", "lots", "is not a whole number of MiB"),  # was a warning and the default
        ("AGENT_TOOLS_ARTIFACTS_MAX_AGE_H", "1.5", "is not a whole number of hours"),
        ("AGENT_TOOLS_SANDBOX_HIDE", "/ok:relative", "'relative' is not an absolute path"),  # was dropped silently
    ],
)
def test_a_bad_value_is_refused_by_name(name: str, raw: str, says: str) -> None:
    with pytest.raises(SettingError) as caught:
        ToolSettings.from_env({name: raw})
    assert str(caught.value).startswith(f"{name}={raw!r}") and says in str(caught.value)


def test_every_variable_the_code_names_is_read_by_the_config() -> None:
    named: dict[str, str] = {}
    for path in source_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"AGENT_TOOLS_[A-Z_]+", node.value):
                named.setdefault(node.value, str(path.relative_to(ROOT)))
    outside = {v: where for v, where in named.items() if where != "core/config.py"}
    assert outside == {}, "declare the variable in core/config.py and read it through ToolSettings"
    assert set(named) == set(VARIABLES) and len(VARIABLES) == 15


def test_tools_see_a_changed_environment_at_call_time(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("AGENT_TOOLS_BWRAP", "/opt/my-bwrap")
    assert bwrap_path() == "/opt/my-bwrap"
    monkeypatch.setenv("AGENT_TOOLS_ARTIFACTS_MAX_MB", "many")
    with pytest.raises(SettingError, match="AGENT_TOOLS_ARTIFACTS_MAX_MB"):
        prune_artifacts(tmp_path)


def test_fixed_settings_win_over_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("AGENT_TOOLS_TXN", "auto")
    settings.use(ToolSettings().replace(txn="off"))
    try:
        with pytest.raises(overlay.CaptureUnavailable, match="AGENT_TOOLS_TXN=off"):
            overlay.begin(str(tmp_path), "t1", "c1")
    finally:
        settings.use(None)
    assert settings.current().txn == "auto"


def test_replace_checks_like_the_variable() -> None:
    with pytest.raises(SettingError, match="AGENT_TOOLS_SANDBOX='maybe'"):
        ToolSettings().replace(sandbox="maybe")


def test_worker_config() -> None:
    assert WorkerConfig.from_env({}).task_queue == DEFAULT_TASK_QUEUE
    config = WorkerConfig.from_env({"AGENT_TASK_QUEUE": "q2", "AGENT_TOOLS_BASH_SHM_MB": "1"})
    assert (config.task_queue, config.tools.bash_shm_bytes) == ("q2", 1 << 20)


def test_the_worker_refuses_to_start_on_a_bad_value(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_TOOLS_BASH_MAX_PROCS": "lots"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "worker.py"), "--workspace", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "AGENT_TOOLS_BASH_MAX_PROCS='lots' is not a whole number" in done.stderr
