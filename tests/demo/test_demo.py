"""``infersight demo`` end to end, as a newcomer runs it: a real collector process, the week posted
over HTTP, the alert replay, the judge, live traffic through the SDK, then the store read back.

A small backfill (``--per-day 150``: ~1,600 requests over the 8-14 days since the last complete
week began) keeps the run under a minute on the 2-core test machine. The live part runs 1 s: what
the tests read of it is that it started, and the queue series the SDK's last metrics export at
shutdown carries, and neither needs longer. The second counts from the first live request, which a
waiting worker takes at once, and a timed run lets the requests under way finish, so a loaded
machine still stores that first conversation's turn.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.demo.store_process import StoreProcess

DEMO = [sys.executable, "-m", "infersight.collector", "demo", "--per-day", "150"]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str], float]:
    data_dir = tmp_path_factory.mktemp("demo") / "data"
    started = time.time()
    done = subprocess.run([*DEMO, "--port", str(free_port()), "--data-dir", str(data_dir), "--duration", "1"],
                          capture_output=True, text=True, timeout=600)
    return data_dir, done, started


class DemoStore:
    """The demo's store in one child process for every test that reads it; :meth:`release` frees
    the data directory for a test that needs it (the report, the rerun), and the next reader opens
    it again. A process each cost one interpreter and chDB start-up per test."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._open: StoreProcess | None = None

    def reader(self) -> StoreProcess:
        if self._open is None:
            self._open = StoreProcess(self.data_dir)
        return self._open

    def release(self) -> None:
        if self._open is not None:
            self._open.close()
            self._open = None


@pytest.fixture(scope="module")
def demo_store(demo_run: tuple[Path, subprocess.CompletedProcess[str], float]) -> Iterator[DemoStore]:
    keeper = DemoStore(demo_run[0])
    yield keeper
    keeper.release()


@pytest.fixture
def stored(demo_run: tuple[Path, subprocess.CompletedProcess[str], float], demo_store: DemoStore) -> StoreProcess:
    """The demo's store, open in the module's reader process."""
    assert demo_run[1].returncode == 0, demo_run[1].stderr
    return demo_store.reader()


def test_the_demo_runs_cleanly(demo_run: tuple[Path, subprocess.CompletedProcess[str], float]):
    _, done, _ = demo_run
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "Dashboard: http://127.0.0.1:" in done.stderr
    assert "backfill" in done.stderr  # the long step shows its progress


def test_every_day_of_the_reports_week_has_traffic_of_both_services(stored: StoreProcess):
    today = datetime.now(timezone.utc).date()
    monday = today - timedelta(days=today.weekday() + 7)  # the weekly report's default week
    rows = stored.query(
        "SELECT toString(toDate(Timestamp)) AS day, groupUniqArray(ServiceName) AS services FROM otel_traces"
        " WHERE Timestamp >= {monday:DateTime} AND Timestamp < {monday:DateTime} + INTERVAL 7 DAY GROUP BY day",
        {"monday": datetime(monday.year, monday.month, monday.day).strftime("%Y-%m-%d %H:%M:%S")},
    )
    days = {r["day"]: set(r["services"]) for r in rows}
    assert sorted(days) == [str(monday + timedelta(days=i)) for i in range(7)]
    assert all(services == {"support-bot", "search-api"} for services in days.values())


def test_the_past_incident_paged_and_resolved_and_nothing_fires_after_the_demo(
        stored: StoreProcess, demo_run: tuple[Path, subprocess.CompletedProcess[str], float]):
    started = demo_run[2]
    events = stored.query("SELECT name, event, toUnixTimestamp(ts) AS at FROM alert_events ORDER BY ts")
    assert [(e["name"], e["event"]) for e in events] == [("ErrorRateSpike", "firing"), ("ErrorRateSpike", "resolved")]
    # in the last day (the Alerts page's default range), and hours before the live part
    assert all(started - 86400 < e["at"] < started - 3600 for e in events)
    firing = stored.query("SELECT name, summary FROM alerts FINAL WHERE status = 'firing'")
    assert firing == []
    # The live collector's first evaluation comes a minute after its start, later than this short
    # run ends: the rules are run here, now, over what the demo left, as that evaluation would.
    evaluation = stored.evaluate(datetime.now(timezone.utc).isoformat())
    assert (evaluation["events"], evaluation["active"]) == ([], 0)
    # the live app's queue was watched (so the queue rule had a series to judge), and it drained
    queue = stored.query("SELECT count() AS points, max(depth) AS deepest FROM queue_depth"
                         " WHERE service = 'support-bot' AND queue = 'demo-requests'")[0]
    assert queue["points"] >= 1 and queue["deepest"] <= 1


def test_a_rag_request_is_one_trace(stored: StoreProcess):
    traces = stored.query(
        "SELECT TraceId, groupArray(SpanAttributes['gen_ai.operation.name']) AS operations,"
        " countIf(ParentSpanId = '') AS roots, uniq(SpanAttributes['infersight.route']) AS routes"
        " FROM otel_traces WHERE TraceId IN"
        " (SELECT TraceId FROM otel_traces WHERE SpanAttributes['gen_ai.operation.name'] = 'retrieval' LIMIT 200)"
        " GROUP BY TraceId"
    )
    assert len(traces) == 200
    for trace in traces:
        assert {"retrieval", "rerank", "chat"} <= set(trace["operations"]), trace
        assert trace["roots"] == 1 and trace["routes"] == 1, trace


def test_sessions_users_detections_and_judge_scores_are_there(stored: StoreProcess):
    def one(sql: str) -> dict[str, Any]:
        return stored.query(sql)[0]

    calls = one("SELECT count() AS calls, countIf(session_id != '') AS in_session, uniq(session_id) AS sessions,"
                " uniq(tenant, user_id) AS users FROM llm_spans WHERE kind = 'llm'")
    assert calls["in_session"] >= 0.9 * calls["calls"]
    assert calls["sessions"] < 0.7 * calls["calls"]  # sessions of several turns
    assert calls["users"] >= 20
    detectors = {r["detector"] for r in stored.query("SELECT DISTINCT detector FROM detections")}
    assert {"repetition", "json"} <= detectors
    assert one("SELECT count() AS n FROM judge_scores")["n"] > 0


def test_the_reports_week_has_users_feedback_mostly_down_on_failed_or_flagged_answers(stored: StoreProcess):
    today = datetime.now(timezone.utc).date()
    monday = today - timedelta(days=today.weekday() + 7)
    rows = stored.query(
        "SELECT f.trace_id AS trace_id, f.value AS up, f.kind AS kind,"
        " toUnixTimestamp64Milli(f.ts) / 1000 - t.answered AS after_s, t.troubled AS troubled FROM feedback AS f"
        " INNER JOIN (SELECT trace_id, max(toUnixTimestamp64Milli(ts) / 1000 + duration_s) AS answered,"
        "  max(error_type != '' OR trace_id IN (SELECT trace_id FROM detections)) AS troubled"
        "  FROM llm_spans WHERE kind = 'llm' GROUP BY trace_id) AS t ON f.trace_id = t.trace_id"
        " WHERE f.ts >= {monday:DateTime} AND f.ts < {monday:DateTime} + INTERVAL 7 DAY",
        {"monday": datetime(monday.year, monday.month, monday.day).strftime("%Y-%m-%d %H:%M:%S")},
    )
    assert len(rows) >= 15  # a few percent of the week's ~1,000 requests
    assert {r["kind"] for r in rows} == {"thumbs"}
    assert all(0 <= r["after_s"] < 3600 for r in rows)  # shortly after the answer it rates
    down = {flag: [1 - r["up"] for r in rows if r["troubled"] == flag] for flag in (0, 1)}
    assert down[1] and sum(down[1]) / len(down[1]) > 0.5 > sum(down[0]) / max(len(down[0]), 1)


def test_live_traffic_is_conversations(stored: StoreProcess):
    live = stored.query(
        "SELECT SpanAttributes['gen_ai.conversation.id'] AS session FROM otel_traces"
        " WHERE ServiceName = 'support-bot' AND ScopeName != 'infersight.demo.backfill'"
        " AND SpanAttributes['gen_ai.operation.name'] = 'chat'")
    assert live, "the first live conversation starts at once"
    assert all(r["session"].startswith("live-") for r in live)


def test_the_weekly_report_has_the_last_complete_week(
        demo_run: tuple[Path, subprocess.CompletedProcess[str], float], demo_store: DemoStore, tmp_path: Path):
    data_dir = demo_run[0]
    demo_store.release()
    out = tmp_path / "week.html"
    done = subprocess.run([sys.executable, "-m", "infersight.collector", "report", "weekly",
                           "--data-dir", str(data_dir), "--out", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "support-bot" in out.read_text() or "support.answer" in out.read_text()


def test_ctrl_c_ends_a_rerun_quickly_without_tracebacks(demo_run: tuple[Path, subprocess.CompletedProcess[str], float],
                                                        demo_store: DemoStore):
    data_dir = demo_run[0]
    demo_store.release()
    process = subprocess.Popen([*DEMO, "--port", str(free_port()), "--data-dir", str(data_dir)],
                               stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    serving = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if line.startswith("Dashboard:"):
                serving.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert serving.wait(300), "".join(lines)
        url = next(line for line in lines if line.startswith("Dashboard:")).split()[1].rstrip("/")
        # The Quality page's data holds the week's feedback beside the judge's scores.
        with urllib.request.urlopen(f"{url}/api/v1/quality?since=7d", timeout=60) as response:
            quality = json.loads(response.read())
        groups = {(g["name"], g["kind"]): g for g in quality["feedback"]["groups"]}
        thumbs = groups[("user_feedback", "thumbs")]
        assert thumbs["count"] >= 15 and 0 < thumbs["negative"] < thumbs["count"]
        time.sleep(2)  # the live part under way: workers, the SDK's exporter, the span sender
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        took = time.monotonic() - interrupted
    finally:
        if process.poll() is None:
            process.kill()
    reader.join(timeout=10)
    assert process.stderr is not None
    process.stderr.close()
    text = "".join(lines)
    assert "Traceback" not in text, text
    assert "Stopped." in text
    assert "Backfilling 0.0 days" in text  # a rerun fills only the gap since the last run
    # Stopping is the SDK's last export and the collector's clean shutdown: seconds, not the
    # collector's 30 s stop bound that a stuck part would take.
    assert took < 15, text


def test_a_taken_port_is_an_error_before_anything_starts(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([*DEMO, "--port", str(port), "--data-dir", str(tmp_path / "data")],
                              capture_output=True, text=True, timeout=120)
        taken.settimeout(0.5)
        with pytest.raises(TimeoutError):
            taken.accept()  # nothing connected to it: no span was sent to whoever holds the port
    assert done.returncode != 0
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists()
