"""The weekly review on a live system: ``infersight report weekly`` while a collector owns the data
directory asks that collector, and writes the file it writes without one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from infersight.collector._server import CollectorProcess
from infersight.collector.web import ProjectKeys
from tests.conftest import LEAN_COLLECTOR, free_port

SEED = textwrap.dedent("""
    import sys
    from infersight.collector import ChdbStore
    from tests.dashboards.data import Call, detection_row, insert, insert_calls, judge_row
    store = ChdbStore(sys.argv[1])
    w10 = 1772409600 * 10**9  # 2026-03-02 00:00 UTC, Monday of 2026-W10
    h = 3600 * 10**9
    calls = [Call(project="shop", start_ns=w10 - 7 * 24 * h + i * 5 * h, trace_id=f"{i + 1:032x}",
                  tenant="acme", route="/chat", cost_usd=0.25) for i in range(10)]
    calls += [Call(project="shop", start_ns=w10 + i * 3 * h, trace_id=f"{i + 101:032x}", tenant="acme",
                   route="/chat", cost_usd=0.5, error=i < 3) for i in range(12)]
    calls += [Call(project="shop", start_ns=w10 + i * 4 * h + h, trace_id=f"{i + 201:032x}", tenant="globex",
                   route="/search", cost_usd=0.2) for i in range(6)]
    insert_calls(store, calls)
    insert(store, "detections", [detection_row(calls[12], "repetition", "repetition.loop", evidence="loop")])
    insert(store, "judge_scores", [judge_row(c, 4 if c.start_ns < w10 else 2) for c in calls[:16]])
    store.close()
""")


def cli(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "INFERSIGHT_API_KEY"}
    if key:
        env["INFERSIGHT_API_KEY"] = key
    return subprocess.run([sys.executable, "-m", "infersight.collector", *args],
                          capture_output=True, text=True, timeout=300, env=env)


def same_file(html: str) -> str:
    """The report without the minute it was generated in."""
    return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated (time)", html)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data_dir = tmp_path_factory.mktemp("live") / "data"
    done = subprocess.run([sys.executable, "-c", SEED, str(data_dir)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    keys = ProjectKeys(data_dir)
    key = keys.create("shop")[0]
    keys.close()
    return data_dir, key


# Nine CLI processes and a collector: on a host at a load average of 20, past the suite's 120 s.
@pytest.mark.timeout(600)
def test_the_report_is_the_same_file_with_and_without_a_running_collector(seeded, tmp_path):
    data_dir, key = seeded
    alone, live = tmp_path / "alone.html", tmp_path / "live.html"
    direct = cli("report", "weekly", "--week", "2026-W10", "--out", str(alone), "--data-dir", str(data_dir),
                 "--project", "shop", "--no-progress")
    assert direct.returncode == 0, direct.stderr
    nodata = cli("report", "weekly", "--week", "2026-W20", "--out", str(tmp_path / "x.html"),
                 "--data-dir", str(data_dir), "--project", "shop")
    unknown = cli("report", "weekly", "--week", "2026-W10", "--out", str(tmp_path / "x.html"),
                  "--data-dir", str(data_dir), "--project", "nosuch")

    collector = CollectorProcess(data_dir, free_port(), extra_args=LEAN_COLLECTOR).start()
    try:
        assert f"at {collector.url}" in (data_dir / "owner.lock").read_text()
        served = cli("report", "weekly", "--week", "2026-W10", "--out", str(live), "--data-dir", str(data_dir),
                     key=key)
        live_nodata = cli("report", "weekly", "--week", "2026-W20", "--out", str(tmp_path / "x.html"),
                          "--data-dir", str(data_dir), key=key)
        live_unknown = cli("report", "weekly", "--week", "2026-W10", "--out", str(tmp_path / "x.html"),
                           "--data-dir", str(data_dir), "--project", "nosuch", key=key)
        keyless = cli("report", "weekly", "--week", "2026-W10", "--out", str(tmp_path / "x.html"),
                      "--data-dir", str(data_dir))
    finally:
        collector.stop()

    assert served.returncode == 0, served.stderr
    assert "Wrote the weekly report for 'shop'" in served.stderr
    report = alone.read_text()
    assert same_file(live.read_text()) == same_file(report)
    assert "acme" in report and "/traces?" in report and 'id="trends"' in report

    for refused in (nodata, live_nodata):
        assert refused.returncode == 1
        assert "no LLM calls for project 'shop' in week 2026-W20" in refused.stderr
        assert "weeks with data: 2026-W09, 2026-W10" in refused.stderr
    assert unknown.returncode == 1
    assert "project 'nosuch' has no data; projects with data:" in unknown.stderr and "shop" in unknown.stderr
    assert live_unknown.returncode == 1 and "serves project 'shop' to this key, not 'nosuch'" in live_unknown.stderr
    assert keyless.returncode == 1 and "needs the project's API key" in keyless.stderr
