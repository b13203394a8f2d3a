"""The weekly report: a known week's numbers against the week before, in one self-contained file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from datetime import datetime, timezone

import pytest

from infersight.dashboards._report import parse_week, weekly_report
from tests.dashboards.data import detection_row

W10 = datetime(2026, 3, 2, tzinfo=timezone.utc)  # Monday of 2026-W10
NS = 10**9


def known_weeks(dash) -> None:
    """Week 10: acme 10 calls at $0.50, globex 5 at $0.20; week 9: acme 10 calls at $0.25."""
    base10, base9 = int(W10.timestamp()) * NS, int(W10.timestamp() - 7 * 86400) * NS
    calls = [dash.call(start_ns=base10 + (i * 3 + 1) * 3600 * NS, trace_id=f"{i + 1:032x}", tenant="acme",
                       cost_usd=0.5, error=i == 0) for i in range(10)]
    calls += [dash.call(start_ns=base10 + (i * 5 + 2) * 3600 * NS, trace_id=f"{i + 101:032x}", tenant="globex",
                        cost_usd=0.2) for i in range(5)]
    calls += [dash.call(start_ns=base9 + (i * 7 + 1) * 3600 * NS, trace_id=f"{i + 201:032x}", tenant="acme",
                        cost_usd=0.25) for i in range(10)]
    dash.add_calls(calls)
    dash.add("detections", [detection_row(calls[3], "repetition", "repetition.loop", evidence="loop loop loop")])


def row(html: str, label: str) -> str:
    match = re.search(rf"<tr[^>]*><td>(?:<a [^>]*>)?{re.escape(label)}(?:</a>)?</td>(.*?)</tr>", html, re.S)
    assert match, label
    return match.group(1)


def section(html: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}">(.*?)</section>', html, re.S)
    assert match, section_id
    return match.group(1)


def test_a_known_week_against_the_week_before(any_dash):
    dash = any_dash
    known_weeks(dash)
    html = weekly_report(dash.store, dash.project, W10)
    assert '<span id="week">2026-W10</span>' in html
    assert "2026-03-02 to 2026-03-09" in html
    calls = row(html, "LLM calls")
    assert ">15<" in calls and ">10<" in calls and "+50%" in calls
    spend = row(html, "Spend")
    assert ">$6.00<" in spend and ">$2.50<" in spend and "+140%" in spend
    assert "6.7%" in row(html, "Error rate")  # 1 of 15
    acme = row(section(html, "cost"), "acme")
    assert ">$5.00<" in acme and ">$2.50<" in acme and "+100%" in acme
    globex = row(section(html, "cost"), "globex")
    assert ">$1.00<" in globex and ">$0<" in globex
    assert "Tenant globex is new this week: $1.00" in html
    assert "Tenant acme spent $5.00, up $2.50 from $2.50" in html
    assert "repetition flagged 6.7% of calls (was 0.0%)" in html


def test_weeks_are_iso_weeks():
    assert parse_week("2026-W48") == datetime(2026, 11, 23, tzinfo=timezone.utc)
    assert parse_week(None, now=datetime(2026, 11, 29, 20, tzinfo=timezone.utc)) == datetime(
        2026, 11, 16, tzinfo=timezone.utc
    )
    for bad in ("2026-48", "2026-W54", "W48", ""):
        with pytest.raises(ValueError, match="ISO week like 2026-W48"):
            parse_week(bad)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infersight.collector", "report", "weekly", *args],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


_SEED = textwrap.dedent("""
    import sys
    from infersight.collector import ChdbStore
    from tests.dashboards.data import Call, insert_calls
    store = ChdbStore(sys.argv[1])
    start = 1772409600 * 10**9  # 2026-03-02 00:00 UTC
    insert_calls(store, [Call(project="shop", start_ns=start + i * 3600 * 10**9, trace_id=f"{i + 1:032x}",
                              tenant="acme", cost_usd=0.5, prompt="<script>alert(1)</script>") for i in range(4)])
    store.close()
""")


def test_the_cli_writes_one_self_contained_file(tmp_path):
    data_dir, out = tmp_path / "data", tmp_path / "report.html"
    seeded = subprocess.run([sys.executable, "-c", _SEED, str(data_dir)], capture_output=True, text=True, timeout=120)
    assert seeded.returncode == 0, seeded.stderr
    done = _cli("--week", "2026-W10", "--out", str(out), "--data-dir", str(data_dir), "--project", "shop")
    assert done.returncode == 0, done.stderr
    assert "weekly report" in done.stderr  # the progress bar, and the closing line
    html = out.read_text()
    assert html.startswith("<!doctype html>") and "<style>" in html and "<svg" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "an external asset"
    assert not re.search(r"<(script|link|img|iframe)\b", html, re.I)
    assert "@import" not in html and "url(" not in html
    assert ">$2.00<" in row(html, "Spend")
    bad = _cli("--week", "2026-48", "--out", str(out), "--data-dir", str(data_dir))
    assert bad.returncode == 2 and "ISO week like 2026-W48" in bad.stderr
    missing = _cli("--out", str(out), "--data-dir", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr and not (tmp_path / "nowhere").exists()


def test_feedback_per_week_sits_beside_the_judge_trends_never_mixed(any_dash):
    from infersight.collector.store import feedback_rows, insert_feedback
    from tests.dashboards.data import judge_row

    dash = any_dash
    known_weeks(dash)
    base10, base9 = int(W10.timestamp()) * NS, int(W10.timestamp() - 7 * 86400) * NS
    w10 = [{"trace_id": f"{i:032x}", "thumbs": t} for i, t in ((2, "down"), (3, "up"), (4, "down"), (5, "down"))]
    insert_feedback(dash.store, feedback_rows([*w10, {"trace_id": f"{2:032x}", "score": 4, "name": "stars"}],
                                              dash.project, now_ns=base10 + 50 * 3600 * NS))
    insert_feedback(dash.store, feedback_rows({"trace_id": f"{201:032x}", "thumbs": "up"}, dash.project,
                                              now_ns=base9 + 30 * 3600 * NS))
    trace_2 = dash.call(start_ns=base10 + 4 * 3600 * NS, trace_id=f"{2:032x}")
    dash.add("judge_scores", [judge_row(trace_2, 5)])  # the judge passes what the user turned down

    html = weekly_report(dash.store, dash.project, W10)
    trends = section(html, "trends")
    thumbs = row(trends, "user_feedback")
    assert "100.0%" in thumbs and "(0 down of 1)" in thumbs  # W09
    assert "25.0%" in thumbs and "(3 down of 4)" in thumbs  # W10
    stars = row(trends, "stars")
    assert "4.00" in stars and "n=1" in stars and "%" not in stars
    agreement = row(trends, "user_feedback</td><td>helpfulness v1 · judge-small")
    assert ">0.0%<" in agreement
