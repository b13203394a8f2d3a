"""The weekly report as a reviewer opens it: a dashboard page in headless Chromium, with the
navigation, eight weeks of trends, the week's moves, and links that open the traces behind a figure."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.dashboards.test_browser import chromium_page, served  # noqa: F401 - the fixture


def iso_week(unix_ns: int) -> str:
    year, week, _ = datetime.fromtimestamp(unix_ns / 1e9, tz=timezone.utc).isocalendar()
    return f"{year}-W{week:02d}"


def test_the_weekly_report_page_in_headless_chromium(served, tmp_path_factory):  # noqa: F811 - the fixture
    url, calls = served
    week = iso_week(calls[len(calls) // 2].start_ns)
    shots = Path(os.environ.get("INFERSIGHT_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with chromium_page(tmp_path_factory.mktemp("chromium-profile"), problems) as page:

        response = page.goto(f"{url}/report/weekly?week={week}", wait_until="load")
        assert response is not None and response.status == 200
        assert page.locator("nav.pages a.on").inner_text() == "Weekly report"
        assert page.locator("#week").inner_text() == week
        assert page.locator("#trend-table thead th.num").count() == 8
        assert page.locator("#trends svg").count() >= 3 and page.locator("#moves table").count() == 3
        page.screenshot(path=str(shots / "report-weekly.png"), full_page=True)

        # The self-contained file the CLI writes, as a download of the session's project. Taken
        # from the page as first loaded: the download leaves the page where it is, and each load
        # of the report page renders the week again (~2 s on the 2-core test machine).
        with page.expect_download() as download:
            page.click("#download")
        saved = tmp_path_factory.mktemp("download") / "report.html"
        download.value.save_as(saved)
        text = saved.read_text()
        assert text.startswith("<!doctype html>") and f'<span id="week">{week}</span>' in text
        assert "<nav" not in text and 'id="trends"' in text
        # Chromium ends the navigation that turned into a download as a failed request.
        assert problems == [f"request failed: {download.value.url}"], problems
        problems.clear()

        # A tenant's spend links to that tenant's traces of the week.
        link = page.locator("#tenants tbody tr td a").first
        tenant = link.inner_text()
        link.click()
        page.wait_for_load_state("load")
        query = parse_qs(urlsplit(page.url).query)
        assert urlsplit(page.url).path == "/traces" and query["tenant"] == [tenant]
        assert query["start"][0].endswith("+00:00") and query["end"][0] > query["start"][0]
        assert page.locator("nav.pages a.on").inner_text() == "Traces"

        # The week picker: a week without calls says which weeks have them.
        page.goto(f"{url}/report/weekly?week={week}")
        page.fill("input[name=week]", "2020-W01")
        page.click("form.filters button[type=submit]")
        page.wait_for_load_state("load")
        assert "week=2020-W01" in page.url
        error = page.locator("#error").inner_text()
        assert "no LLM calls" in error and week in error
        assert problems == ["console error: Failed to load resource: the server responded with a status of 404"
                            " (Not Found)"]  # the page's own status, as asked
    print(f"\nscreenshots in {shots}")
