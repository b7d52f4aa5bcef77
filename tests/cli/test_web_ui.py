"""The Temporal Web UI as an approval console: a paused turn is approved by a
person clicking through the real Web UI of the embedded dev server (UI 2.54),
driven in headless Chromium with Playwright.

Path through the UI: workflow page → "User Metadata" shows the
"current details" the workflow publishes (the pending calls and the digest) →
"More Actions" → "Send a Signal" → signal name `approve` (the UI lists the
workflow's signals from its metadata query) → JSON in the "Data" editor →
"Submit" → toast "Workflow signaled.".

Needs Debian's Chromium (`apt-get install chromium`) at /usr/bin/chromium;
Playwright's own browser download is not used.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright, expect
from temporalio.worker import Worker

from core.contracts import (
    Policy,
    ToolStatus,
    TurnProgress,
    TurnResult,
    TurnStatus,
)
from runtime.connection import connect
from runtime.devserver import DevServer, free_port
from runtime.worker import build_worker
from tests.support import call
from tests.support import turn as make_turn
from workflows.turn import AgentTurnWorkflow

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
WAIT_MS = 20_000  # every single UI wait
WAIT_S = WAIT_MS / 1000
DEADLINE_S = 90.0  # the whole test after the server start; a pass takes ~10-15 s


async def _wait_paused(handle, timeout: float = WAIT_S) -> TurnProgress:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    progress = None
    while time.monotonic() < deadline:
        progress = await handle.query(
            AgentTurnWorkflow.status, result_type=TurnProgress, rpc_timeout=timedelta(seconds=5)
        )
        if progress.status == TurnStatus.PAUSED:
            return progress
        await asyncio.sleep(0.05)
    raise AssertionError(f"the turn never paused within {timeout:.0f} s; last status: {progress}")


async def _approve_in_browser(page: Page, workflow_url: str, digest: str, evidence: "_Evidence") -> None:
    """Click through the Web UI as an operator would."""
    page.set_default_timeout(WAIT_MS)
    evidence.step = f"open {workflow_url}"
    await page.goto(workflow_url, wait_until="domcontentloaded", timeout=WAIT_MS)  # it long-polls: no networkidle
    # The UI redirects /workflows/<id> to /workflows/<id>/<run id>/timeline.
    evidence.step = "wait for the workflow page to render"
    tab = page.get_by_role("tab", name="User Metadata")
    try:
        await expect(tab).to_be_visible(timeout=WAIT_MS)  # ~3-5 s here
    except AssertionError:
        # Once seen on a loaded machine: a blank page after 20 s. One reload.
        evidence.step = f"reload: no page after {WAIT_S:.0f} s (in flight: {evidence.in_flight()})"
        await page.reload(wait_until="domcontentloaded", timeout=WAIT_MS)
        await expect(tab).to_be_visible(timeout=WAIT_MS)

    # The workflow's "current details" tell the operator what waits and which digest to approve.
    evidence.step = "read the current details on the User Metadata tab"
    await tab.click()
    # The UI renders that markdown in a sandboxed iframe (src=/render?content=...).
    details = page.locator("iframe#user-metadata-current-details").content_frame
    await expect(details.get_by_text("Waiting for approval")).to_be_visible(timeout=WAIT_MS)
    await expect(details.locator("body")).to_contain_text(digest, timeout=WAIT_MS)

    # The page renders its action menus, dialogs and toasts twice (one copy
    # hidden); role locators and filter(visible=True) pick the visible one.
    evidence.step = "More Actions -> Send a Signal"
    await page.get_by_role("button", name="More Actions").click()
    await page.get_by_role("menuitem", name="Send a Signal").click()
    dialog = page.get_by_role("dialog", name="Send a Signal")
    await expect(dialog).to_be_visible(timeout=WAIT_MS)

    # The UI lists the workflow's signals (from its metadata query): pick `approve`.
    evidence.step = "choose the signal name `approve`"
    await dialog.get_by_test_id("signal-select-button").click()
    await dialog.get_by_role("option", name="approve", exact=True).click()
    await expect(dialog.get_by_test_id("signal-select")).to_have_value("approve", timeout=WAIT_MS)

    evidence.step = "type the decision into the Data editor"
    editor = dialog.get_by_role("textbox", name="Data")  # CodeMirror, contenteditable
    await editor.click()
    await page.keyboard.press("ControlOrMeta+A")
    await page.keyboard.type(
        json.dumps({"batch_digest": digest, "approver": "web-ui", "reason": "approved in browser"})
    )
    # The editor reformats its JSON on blur: leave it before submitting.
    await dialog.get_by_text("Single JSON payload supported.").click()
    await expect(editor).to_contain_text(digest, timeout=WAIT_MS)
    await expect(editor).to_contain_text('"approver": "web-ui"', timeout=WAIT_MS)

    evidence.step = "Submit and wait for the toast 'Workflow signaled.'"
    await dialog.get_by_role("button", name="Submit").click()
    toast = page.get_by_text("Workflow signaled.", exact=True).filter(visible=True).first
    await expect(toast).to_be_visible(timeout=WAIT_MS)
    await expect(dialog).to_be_hidden(timeout=WAIT_MS)


class _Evidence:
    """What a failure message points at: the steps taken and when, the
    browser's requests still in flight, a screenshot and the page's HTML."""

    def __init__(self, folder: Path) -> None:
        self.t0 = time.monotonic()
        self.steps: list[tuple[float, str]] = []
        self.screenshot = folder / "webui-failure.png"
        self.html = folder / "webui-failure.html"
        self._in_flight: dict[object, tuple[float, str]] = {}

    @property
    def step(self) -> str:
        return self.steps[-1][1] if self.steps else "start"

    @step.setter
    def step(self, name: str) -> None:
        self.steps.append((time.monotonic() - self.t0, name))

    def watch(self, page: Page) -> None:
        page.on("request", lambda r: self._in_flight.__setitem__(r, (time.monotonic(), r.url)))
        page.on("requestfinished", lambda r: self._in_flight.pop(r, None))
        page.on("requestfailed", lambda r: self._in_flight.pop(r, None))

    def in_flight(self) -> str:
        now = time.monotonic()
        slow = sorted(((now - t, url) for t, url in self._in_flight.values()), reverse=True)[:6]
        return "; ".join(f"{age:.1f} s {url[:140]}" for age, url in slow) or "none"

    async def capture(self, page: Page) -> None:
        try:
            await page.screenshot(path=str(self.screenshot), full_page=True, timeout=5_000)
            self.html.write_text(await asyncio.wait_for(page.content(), 5))
        except Exception:  # the evidence is best effort; the original failure matters
            pass

    def where(self) -> str:
        lines = ["steps (s since start): " + ", ".join(f"{t:.1f} {name}" for t, name in self.steps)]
        lines += [f"{label}: {path}" for label, path in (("screenshot", self.screenshot), ("page HTML", self.html))
                  if path.exists()]
        if self._in_flight:
            lines.append(f"browser requests still in flight: {self.in_flight()}")
        return "\n".join(lines)


async def _drive_browser(workflow_url: str, digest: str, evidence: _Evidence) -> None:
    evidence.step = "launch Chromium"
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS, timeout=WAIT_MS
        )
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            evidence.watch(page)
            try:
                await _approve_in_browser(page, workflow_url, digest, evidence)
            except BaseException as exc:  # a cancellation (our deadline) too: keep the picture
                await evidence.capture(page)
                if isinstance(exc, Exception):
                    raise AssertionError(
                        f"driving the Web UI failed at step {evidence.step!r} on {page.url}:\n"
                        f"{evidence.where()}\n{exc}"
                    ) from exc
                raise
        finally:
            try:
                await asyncio.wait_for(browser.close(), 10)
            except Exception:  # leaving async_playwright() stops the driver, and its browser with it
                pass


async def _stop_worker(worker: Worker | None, running: asyncio.Task[None] | None) -> None:
    if worker is None or running is None or running.done():
        return
    try:
        await asyncio.wait_for(worker.shutdown(), 20)
    except Exception:  # the server is stopped next, which ends a stuck worker too
        pass


@pytest.mark.browser
@pytest.mark.timeout(240)  # a backstop only: the test's own deadline (DEADLINE_S) fails it cleanly first
async def test_approve_a_paused_turn_from_the_web_ui(tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: install Debian's package (apt-get install chromium)")

    workspace = tmp_path / "ws"
    workspace.mkdir()
    app = workspace / "app.py"
    app.write_text("def f():\n    return 1\n\nprint('f() =', f())\n")
    task_queue = f"webui-{uuid.uuid4().hex[:10]}"
    turn = make_turn(
        workspace, task_queue,
        [call(0, "read_file", path="app.py"), call(1, "edit_file", path="app.py", old_string="return 1", new_string="return 2")],
        prefix="webui-approval",
        policy=Policy(),  # ask-writes: the edit asks, so the whole batch waits
    )
    evidence = _Evidence(tmp_path)
    server = DevServer(
        db_file=tmp_path / "temporal.sqlite",
        port=free_port(),
        ui_port=free_port(),
        log_file=tmp_path / "temporal-server.log",
    )
    evidence.step = "start the dev server"
    await asyncio.to_thread(server.start, 30.0)
    worker: Worker | None = None
    running: asyncio.Task[None] | None = None
    try:
        evidence.step = "connect and start the worker"
        client = await connect(server.address)
        worker = build_worker(client, task_queue=task_queue, workspace=str(workspace))
        running = asyncio.create_task(worker.run())
        # Our own deadline, so a stuck step cancels the test cleanly (and says
        # which step) instead of pytest-timeout's SIGALRM interrupting the
        # event loop at a random point (which can leave the worker's shutdown hanging).
        deadline = asyncio.timeout(DEADLINE_S)
        try:
            async with deadline:
                evidence.step = "start the turn and wait for the pause"
                handle = await client.start_workflow(
                    AgentTurnWorkflow.run, turn, id=turn.turn_id, task_queue=task_queue, result_type=TurnResult
                )
                progress = await _wait_paused(handle)
                assert [(p.index, p.name) for p in progress.pending] == [(1, "edit_file")]
                assert "return 1" in app.read_text()  # nothing ran yet

                await _drive_browser(
                    f"{server.ui_url}/namespaces/default/workflows/{turn.turn_id}", progress.batch_digest, evidence
                )

                evidence.step = "wait for the turn to finish after the signal"
                try:
                    result = await asyncio.wait_for(handle.result(), WAIT_S)
                except asyncio.TimeoutError:
                    now = await handle.query(
                        AgentTurnWorkflow.status, result_type=TurnProgress, rpc_timeout=timedelta(seconds=5)
                    )
                    raise AssertionError(
                        f"the UI said 'Workflow signaled.' but the turn did not finish within {WAIT_S:.0f} s: {now}"
                    ) from None
        except TimeoutError:
            if not deadline.expired():
                raise
            raise AssertionError(
                f"the test did not finish within {DEADLINE_S:.0f} s; stuck at: {evidence.step}\n"
                f"{evidence.where()}\nserver log: {server.log_file}"
            ) from None
    finally:
        await _stop_worker(worker, running)
        await asyncio.to_thread(server.stop)
        if running is not None and not running.done():
            running.cancel()
            await asyncio.wait({running}, timeout=5)

    assert running.cancelled() or running.exception() is None, f"the worker failed: {running.exception()!r}"
    assert result.status == TurnStatus.COMPLETED, result
    assert result.decision is not None
    assert result.decision.batch_digest == progress.batch_digest
    assert (result.decision.approver, result.decision.via, result.decision.approve) == ("web-ui", "signal", True)
    assert result.decision.reason == "approved in browser"
    assert [r.status for r in result.results] == [ToolStatus.OK, ToolStatus.OK], [r.output for r in result.results]
    assert "return 2" in app.read_text() and "return 1" not in app.read_text()
