"""The Alerts page's silence, acknowledge and expire forms, and the digest's navigation, in real
headless Chromium against the app on a socket (skipped only when no chromium binary exists)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import uvicorn

from infersight.collector import Settings, create_app
from infersight.collector.alerts._model import fingerprint
from infersight.collector.store import clickhouse_time, encode_rows
from tests.conftest import free_port, wait_for
from tests.dashboards.test_browser import chromium_page


@pytest.fixture
def firing_app(store, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The app on a socket, its project with one firing error spike; yields (url, fingerprint)."""
    project = f"silence-ui-{time.time_ns() % 10**9}"
    labels = {"project": project, "service": "checkout", "tenant": "<b>acme</b>"}
    fp = fingerprint({"alertname": "ErrorRateSpike", **labels})
    now = datetime.now(timezone.utc)
    store.insert("alerts", encode_rows([{
        "project": project, "fingerprint": fp, "name": "ErrorRateSpike", "status": "firing", "labels": labels,
        "summary": "checkout: 40% of 200 calls failed", "details": "", "numbers": {"error_ratio": 0.4},
        "link": "/traces?service=checkout", "starts_at": clickhouse_time(now - timedelta(minutes=5)),
        "ends_at": None, "last_notified_at": None, "updated_at": clickhouse_time(now),
    }]))
    port = free_port()
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    server = uvicorn.Server(uvicorn.Config(create_app(settings, store=store), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert wait_for(lambda: server.started, timeout_s=60), "the app did not start"
    yield f"http://127.0.0.1:{port}", fp
    server.should_exit = True
    thread.join(10)


def test_silence_acknowledge_and_expire_from_the_alerts_page(firing_app, tmp_path):
    url, fp = firing_app
    problems: list[str] = []
    with chromium_page(tmp_path / "profile", problems, failed_requests=False) as page:
        page.goto(url + "/alerts?range=7d", wait_until="load")
        card = page.locator(f"#alert-{fp}")
        assert card.locator(".badge").count() == 0

        card.locator("details.silence summary").click()
        matchers = card.locator("textarea[name=matchers]").input_value()
        assert matchers.splitlines() == [
            'alertname="ErrorRateSpike"', 'service="checkout"', 'tenant="<b>acme</b>"']
        card.locator("input[name=created_by]").fill("dana")
        card.locator("input[name=comment]").fill("provider incident, tracked in INC-7")
        card.locator("select[name=duration]").select_option("4h")
        card.locator(".silence-form button[type=submit]").click()
        page.wait_for_load_state("load")
        assert page.url.endswith("/alerts")
        card = page.locator(f"#alert-{fp}")
        badge = card.locator(".badge.silenced").inner_text()
        assert "dana" in badge and "provider incident, tracked in INC-7" in badge and "until" in badge
        (row,) = page.locator("#silences tbody tr").all()
        assert "active" in row.inner_text() and 'tenant=<b>acme</b>' in row.inner_text()

        card.locator(".ack-form input[name=note]").fill("mitigating")
        card.locator(".ack-form button[type=submit]").click()
        page.wait_for_load_state("load")
        acked = page.locator(f"#alert-{fp} .badge.acked").inner_text()
        assert "anonymous (no keys)" in acked and "mitigating" in acked
        assert page.locator(f"#alert-{fp} .ack-form").count() == 0

        page.locator("#silences tbody tr form button").click()
        page.wait_for_load_state("load")
        assert "expired" in page.locator("#silences tbody tr").inner_text()
        assert page.locator(f"#alert-{fp} .badge.silenced").count() == 0

        page.locator("nav.pages a", has_text="Digest").click()
        page.wait_for_load_state("load")
        today = datetime.now(timezone.utc).date()
        assert page.locator("input[name=date]").input_value() == str(today)
        page.locator("#previous-day").click()
        page.wait_for_load_state("load")
        assert page.url.endswith(f"/digest?date={today - timedelta(days=1)}")
        assert page.locator("#next-day").count() == 1
        assert not problems, problems
