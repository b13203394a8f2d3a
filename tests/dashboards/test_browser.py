"""Real headless Chromium (Debian's ``chromium`` package) loads every page: no console errors,
and a screenshot of each for a person to look at.

Screenshots go to $INFERSIGHT_SCREENSHOT_DIR, or a pytest tmp dir whose path the test prints.
Skipped, with the reason, only when no chromium binary exists (``make test`` installs it with
apt-get where it can, as on CI).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from infersight.collector import Settings, create_app
from tests.conftest import free_port
from tests.dashboards.data import Call, demo_calls, demo_extras, insert, insert_calls

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


def chromium_binary() -> str | None:
    for candidate in (os.environ.get("INFERSIGHT_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@contextmanager
def chromium_page(profile_dir: Path, problems: list[str], *, failed_requests: bool = True) -> Iterator[Any]:
    """A page of headless Chromium (the test is skipped where none is installed) that appends its
    console errors, page errors and, with ``failed_requests``, failed requests to ``problems``."""
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium binary (apt-get install chromium; make test does it where apt-get works)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile_dir), executable_path=binary, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            page = context.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            if failed_requests:
                page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            yield page
        finally:
            context.close()


@pytest.fixture
def served(store, tmp_path: Path) -> Iterator[tuple[str, list[Call]]]:
    """The app on a real socket (uvicorn in a thread), with a week of demo data."""
    project = f"browser-{time.time_ns() % 10**9}"
    calls = demo_calls(project, time.time_ns(), count=300)
    insert_calls(store, calls)
    for table, rows in demo_extras(calls).items():
        insert(store, table, rows)
    port = free_port()
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    app = create_app(settings, store=store)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the app did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", calls
    server.should_exit = True
    thread.join(10)


def test_every_page_in_headless_chromium(served, tmp_path_factory):
    url, calls = served
    shots = Path(os.environ.get("INFERSIGHT_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    pages = {
        "overview": "/?range=7d", "latency": "/latency?range=7d", "cost": "/cost?range=7d",
        "quality": "/quality?range=7d", "alerts": "/alerts?range=7d", "traces": "/traces?range=7d",
        "trace": f"/traces/{calls[10].trace_id}", "latency-1h": "/latency?range=1h",
        "traces-search": "/traces?range=7d&status=error", "overview-1h": "/?range=1h",
        "traces-errors-first": "/traces?range=7d&sort=errors",
    }
    problems: list[str] = []
    with chromium_page(tmp_path_factory.mktemp("chromium-profile"), problems) as page:
        for name, path in pages.items():
            response = page.goto(url + path, wait_until="load")
            assert response is not None and response.status == 200, (path, response and response.status)
            assert page.locator("nav.pages a.on").count() == 1, path
            page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
            assert not problems, (path, problems)
        # No JavaScript needed: the filter form works by submitting.
        page.goto(url + "/cost?range=7d")
        page.select_option("select[name=tenant]", "acme")
        page.click("form.filters button[type=submit]")
        page.wait_for_load_state("load")
        assert "tenant=acme" in page.url
        assert page.locator("#tenants tbody tr").count() == 1
        assert not problems, problems
        _firing_banner_leads_to_the_failing_traces(page, url)
        _traces_page_through_and_filter(page, url, calls)
        assert not problems, problems
    print(f"\nscreenshots in {shots}")


def _trace_ids(page) -> list[str]:
    return [href.split("/traces/")[1].split("?")[0]
            for href in page.locator("#traces tbody a.mono").evaluate_all("els => els.map(e => e.href)")]


def _firing_banner_leads_to_the_failing_traces(page, url: str) -> None:
    page.goto(url + "/?range=24h")
    banner = page.locator("#firing")
    assert banner.count() == 1 and "error_spike" in banner.inner_text()
    banner.get_by_text("open the view that explains it").click()
    page.wait_for_load_state("load")
    assert page.url.startswith(url + "/traces?") and "status=error" in page.url


def _traces_page_through_and_filter(page, url: str, calls: list[Call]) -> None:
    """On-call's walk: a week of traces, 50 a page, the next page by its link, then one user."""
    page.goto(url + "/traces?range=7d")
    total = int(page.locator("#total").inner_text().replace(",", ""))
    assert total == len(calls)
    seen: list[str] = []
    for _ in range(10):
        ids = _trace_ids(page)
        assert ids and not set(ids) & set(seen)
        seen += ids
        if page.locator("#next-page").count() == 0:
            break
        page.click("#next-page")
        page.wait_for_load_state("load")
        assert "cursor=" in page.url
    assert seen == [c.trace_id for c in sorted(calls, key=lambda c: c.start_ns, reverse=True)]
    page.goto(url + "/traces?range=7d")
    page.fill("input[name=user]", "u-1")
    page.select_option("select[name=sort]", "cost")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state("load")
    assert "user=u-1" in page.url and "sort=cost" in page.url
    mine = sorted((c for c in calls if c.user == "u-1"), key=lambda c: c.cost_usd, reverse=True)
    assert int(page.locator("#total").inner_text()) == len(mine) > 0
    assert _trace_ids(page) == [c.trace_id for c in mine][:50]
