"""The Sessions, Session and Users pages in headless Chromium: no console errors, a model's
``<script>`` shown as text (never run), the walk from a user to their sessions to one conversation
to a trace, and the empty states."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from infersight.collector import Settings, create_app
from tests.conftest import free_port
from tests.dashboards.data import NS, Call, insert_calls
from tests.dashboards.test_browser import CHROMIUM_FLAGS, chromium_binary

SCRIPT = "<script>document.title='pwned';window.__ran=1</script><img src=x onerror=\"window.__ran=2\">"


def _serve(store, tmp_path: Path, project: str) -> Iterator[str]:
    port = free_port()
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    server = uvicorn.Server(uvicorn.Config(create_app(settings, store=store), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline, "the app did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def served(store, tmp_path: Path) -> Iterator[tuple[str, list[Call]]]:
    """A conversation of four turns (the last answer a script) and one of another user."""
    project = f"sessions-{time.time_ns() % 10**9}"
    t0 = time.time_ns() - 2 * 3600 * NS
    calls = []
    for i in range(4):
        calls.append(Call(project=project, start_ns=t0 + i * 90 * NS, trace_id=f"{i + 1:02x}{t0:030x}"[:32],
                          prompt=f"question {i}", output=SCRIPT if i == 3 else f"answer {i}",
                          extra={"gen_ai.conversation.id": "conv-1"}))
    calls.append(Call(project=project, start_ns=t0, trace_id=f"ff{t0:030x}"[:32], tenant="globex", user="u-9",
                      extra={"gen_ai.conversation.id": "conv-2"}))
    insert_calls(store, calls)
    for url in _serve(store, tmp_path, project):
        yield url, calls


@pytest.fixture
def browser(tmp_path_factory):
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium binary (apt-get install chromium; make test does it where apt-get works)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=binary, headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def _watched(context) -> tuple[object, list[str]]:
    problems: list[str] = []
    page = context.new_page()
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    return page, problems


def test_from_a_user_to_their_conversation_to_a_trace(served, browser, tmp_path_factory):
    url, calls = served
    shots = Path(os.environ.get("INFERSIGHT_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    page, problems = _watched(browser)

    page.goto(url + "/users?range=24h", wait_until="load")
    assert page.locator("nav.pages a.on").inner_text() == "Users"
    assert page.locator("#users tbody tr").count() == 2
    page.screenshot(path=str(shots / "users.png"), full_page=True)
    page.locator("#users tbody tr", has_text="u-1").locator("a.sessions-link").click()
    page.wait_for_load_state("load")
    assert "tenant=acme" in page.url and "user=u-1" in page.url and page.url.startswith(url + "/sessions?")
    assert page.locator("#sessions tbody tr").count() == 1
    assert page.locator("#sessions td.turns").inner_text() == "4"
    page.screenshot(path=str(shots / "sessions.png"), full_page=True)

    page.click("a.session-link")
    page.wait_for_load_state("load")
    bubbles = page.locator("#conversation pre.bubble").all_inner_texts()
    assert bubbles == ["question 0", "answer 0", "question 1", "answer 1", "question 2", "answer 2",
                       "question 3", SCRIPT]  # the script as text, in order
    assert page.evaluate("window.__ran") is None and "pwned" not in page.title()
    page.screenshot(path=str(shots / "session.png"), full_page=True)

    page.locator("#conversation a.mono").nth(2).click()
    page.wait_for_load_state("load")
    assert page.url.startswith(f"{url}/traces/{calls[2].trace_id}")
    page.go_back()
    page.click("#session-traces")
    page.wait_for_load_state("load")
    assert "session=conv-1" in page.url and page.locator("#total").inner_text() == "4"
    assert not problems, problems
    print(f"\nscreenshots in {shots}")


def test_empty_pages_say_what_to_do(store, tmp_path, browser):
    for url in _serve(store, tmp_path, f"empty-{time.time_ns() % 10**9}"):
        page, problems = _watched(browser)
        page.goto(url + "/sessions", wait_until="load")
        assert "request(session_id=...)" in page.locator("#empty").inner_text()
        page.goto(url + "/users", wait_until="load")
        assert "user_id=...)" in page.locator("#empty").inner_text()
        assert not problems, problems
