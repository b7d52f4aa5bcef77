"""`agent-turn console`: the paused turns of a namespace on a local page, with
what each will change, approved with a click, in headless Chromium."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.async_api import async_playwright, expect
from temporalio.client import Client

from cli.console import Console
from core.contracts import Policy, TurnResult, TurnStatus
from runtime.api import TurnClient, build_turn_input
from runtime.worker import build_worker
from tests.cli.test_review_show import wait_paused
from tests.cli.test_web_ui import CHROMIUM, CHROMIUM_ARGS
from tests.support import call

WAIT_MS = 20_000


def _request(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def test_console_refuses_without_token_and_foreign_hosts(client: Client) -> None:
    console = await Console(client, port=0).start()
    try:
        base = f"http://127.0.0.1:{console.port}"
        body = json.dumps({"turn_id": "x", "digest": "y", "approve": True}).encode()
        code, text = await asyncio.to_thread(_request, base + "/api/decide", data=body,
                                             headers={"Content-Type": "application/json"})
        assert code == 403 and "token" in text  # another site's form post cannot approve
        code, text = await asyncio.to_thread(_request, base + "/", headers={"Host": "evil.example:80"})
        assert code == 403 and "Host" in text  # DNS rebinding
        code, page = await asyncio.to_thread(_request, base + "/")
        assert code == 200 and json.dumps(console.token) in page
    finally:
        await console.close()
    remote = Console(client, host="0.0.0.0", port=0)
    await remote.start()
    try:
        code, _ = await asyncio.to_thread(_request, f"http://127.0.0.1:{remote.port}/api/turns")
        assert code == 403
        code, _ = await asyncio.to_thread(_request, f"http://127.0.0.1:{remote.port}/api/turns?token={remote.token}")
        assert code == 200
    finally:
        await remote.close()


@pytest.mark.browser
@pytest.mark.timeout(240)
async def test_approve_a_paused_turn_on_the_console_page(
    client: Client, workspace: Path, task_queue: str, tmp_path: Path
) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    app = workspace / "app.py"
    app.write_text("def f():\n    return 1\n\nprint('f() =', f())\n")
    turn = build_turn_input(
        workspace_root=str(workspace), task_queue=task_queue, policy=Policy(mode="ask-writes"),
        tool_calls=[
            call(0, "read_file", path="app.py"),
            call(1, "edit_file", path="app.py", old_string="return 1", new_string="return 2\x1b[2J"),
            call(2, "bash", command="rm -rf build && python app.py"),
        ],
    )
    turns = TurnClient(client)
    console = await Console(client, port=0).start()
    try:
        async with build_worker(client, task_queue=task_queue, workspace=str(workspace)):
            handle = await turns.start_turn(turn)
            await wait_paused(turns, turn.turn_id)
            async with async_playwright() as p:
                browser = await p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
                try:
                    page = await browser.new_page(viewport={"width": 1200, "height": 1000})
                    page.set_default_timeout(WAIT_MS)
                    await page.goto(console.url)
                    box = page.locator(f"section[data-turn='{turn.turn_id}']")
                    await expect(box).to_contain_text("@@ -1,4 +1,4 @@")
                    await expect(box).to_contain_text("+    return 2\\x1b[2J")  # escaped, as text
                    await expect(box).to_contain_text("$ rm -rf build && python app.py")
                    await expect(box).to_contain_text("validator:")
                    await page.screenshot(path=str(tmp_path / "console-paused.png"), full_page=True)
                    await box.get_by_placeholder("reason").fill("looks right")
                    await box.get_by_role("button", name="Approve").click()
                    await expect(page.locator("#status")).to_contain_text("approved")
                    result: TurnResult = await asyncio.wait_for(handle.result(), 60)
                    await expect(page.get_by_text("No turn is waiting for approval.")).to_be_visible()
                    await page.screenshot(path=str(tmp_path / "console-after.png"), full_page=True)
                finally:
                    await browser.close()
    finally:
        await console.close()
    assert result.status == TurnStatus.COMPLETED
    assert result.decision is not None and result.decision.reason == "looks right"
    assert result.decision.approver.endswith("(console)")
    assert "return 2" in app.read_text()
