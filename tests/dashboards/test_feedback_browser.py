"""Feedback on the trace page in real headless Chromium: a hostile comment reads as text, and
the thumbs form stores a reviewer's verdict and shows it (skipped only without chromium)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from infersight.collector import Settings, create_app
from infersight.collector.store import feedback_rows, insert_feedback, trace_feedback
from tests.conftest import free_port, wait_for
from tests.dashboards.data import Call, insert_calls
from tests.dashboards.test_browser import CHROMIUM_FLAGS, chromium_binary

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(2)>'


@pytest.fixture
def trace_app(store, tmp_path: Path) -> Iterator[tuple[str, str, Call]]:
    """The app on a socket; its project holds one trace with hostile feedback on it and its LLM span."""
    project = f"feedback-ui-{time.time_ns() % 10**9}"
    call = Call(project=project, start_ns=time.time_ns() - 600 * 10**9, trace_id=f"{time.time_ns():032x}")
    insert_calls(store, [call])
    insert_feedback(store, feedback_rows(
        [{"trace_id": call.trace_id, "thumbs": "down", "comment": HOSTILE, "user_id": "<b>u-1</b>"},
         {"trace_id": call.trace_id, "span_id": call.llm_span_id, "score": 2, "name": "accuracy"}],
        project, now_ns=time.time_ns(), source="sdk",
    ))
    port = free_port()
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    server = uvicorn.Server(uvicorn.Config(create_app(settings, store=store), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert wait_for(lambda: server.started, timeout_s=60), "the app did not start"
    yield f"http://127.0.0.1:{port}", project, call
    server.should_exit = True
    thread.join(10)


def test_feedback_shows_as_text_and_the_thumbs_form_adds_a_verdict(trace_app, store, tmp_path):
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium binary (apt-get install chromium; make test does it where apt-get works)")
    from playwright.sync_api import sync_playwright

    url, project, call = trace_app
    problems: list[str] = []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=binary, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            page = context.new_page()
            page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
            response = page.goto(f"{url}/traces/{call.trace_id}", wait_until="load")
            assert response is not None and response.status == 200
            on_trace = page.locator("#feedback table.feedback tbody tr")
            assert on_trace.count() == 1
            row = on_trace.first.inner_text()
            assert HOSTILE in row and "<b>u-1</b>" in row and "thumbs down" in row and "via sdk" in row
            assert page.locator("#feedback script, #feedback img").count() == 0
            on_span = page.locator(f"#span-{call.llm_span_id} table.feedback tbody tr")
            assert on_span.count() == 1 and "accuracy" in on_span.inner_text() and "score 2" in on_span.inner_text()

            page.fill("form.feedback-form input[name=comment]", "right answer, slow")
            page.click("form.feedback-form button[value=up]")
            page.wait_for_load_state("load")
            assert page.url.endswith(f"/traces/{call.trace_id}#feedback")
            assert page.locator("#feedback table.feedback tbody tr").count() == 2
            assert "right answer, slow" in page.locator("#feedback").inner_text()
            page.goto(f"{url}/quality?range=24h", wait_until="load")
            assert page.locator("#feedback-groups tbody tr").count() == 3  # user_feedback, accuracy, reviewer
            assert page.locator("#feedback svg").count() == 3
            assert not problems, problems
        finally:
            context.close()
    stored = [(f["name"], f["shown"], f["source"]) for f in trace_feedback(store, project, call.trace_id)]
    assert ("reviewer", "up", "dashboard") in stored


def test_the_form_is_refused_from_another_site(trace_app):
    from tests import http

    url, _project, call = trace_app
    answer = http.post(f"{url}/traces/{call.trace_id}/feedback", content=b"thumbs=down",
                       headers={"content-type": "application/x-www-form-urlencoded", "origin": "https://evil.example"})
    assert answer.status_code == 403
