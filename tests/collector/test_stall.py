"""A real collector process: one project's span never stops another's storage, and SIGTERM ends
the process within its stated bound while a detector is stuck and while the store hangs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from infersight.collector._server import CollectorProcess
from infersight.collector._settings import STOP_BOUND_S
from infersight.collector.spool._writer import INSERT_GRACE_S
from infersight.collector.web import ProjectKeys
from tests import http
from tests.collector.otlp_bodies import genai_spans_json
from tests.collector.test_detect_deadline import (
    POISON_OUTPUT,
    POISON_SCHEMA,
    SLOW_OUTPUT,
    SLOW_SCHEMA,
    output_body,
)
from tests.conftest import ROOT, free_port, wait_for

JSON = {"content-type": "application/json"}
POLL_S = 30.0  # generous: a loaded machine must not fail these
HANG_BOUND_S = 3  # the hanging store's test waits for the alarm: the bound, not the default 30 s


def keyed_collector(tmp_path: Path, *args: str) -> tuple[CollectorProcess, dict[str, dict[str, str]]]:
    """A collector with decode workers (so the detectors run in their own process) and a key for
    each of the projects ``alpha`` and ``beta``; their request headers."""
    data_dir = tmp_path / "data"
    keys = ProjectKeys(data_dir)
    headers = {project: {"authorization": f"Bearer {keys.create(project)[0]}", **JSON} for project in ("alpha", "beta")}
    keys.close()
    return CollectorProcess(data_dir, free_port(), extra_args=("--no-alerts", *args)).start(), headers


def spans_of(url: str, headers: dict[str, str]) -> int:
    return http.get(f"{url}/api/v1/summary", params={"since": "1h"}, headers=headers).json()["spans"]


def metric(url: str, line: str) -> bool:
    return line in http.get(f"{url}/metrics").text


def test_the_reported_span_is_checked_stored_and_stops_no_other_project(tmp_path):
    collector, headers = keyed_collector(tmp_path)
    try:
        body, (poison_id,) = output_body(POISON_OUTPUT, schema=POISON_SCHEMA)
        assert http.post(f"{collector.url}/v1/traces", content=body, headers=headers["alpha"]).status_code == 200
        for _ in range(4):
            body, _ = genai_spans_json(44)
            assert http.post(f"{collector.url}/v1/traces", content=body, headers=headers["beta"]).status_code == 200
        assert wait_for(lambda: spans_of(collector.url, headers["beta"]) == 176, timeout_s=POLL_S)
        assert wait_for(lambda: spans_of(collector.url, headers["alpha"]) == 1, timeout_s=POLL_S)  # stored itself

        def found() -> list[dict]:
            return http.get(f"{collector.url}/api/v1/detections", params={"since": "1h"},
                             headers=headers["alpha"]).json()["detections"]

        rows = wait_for(found, timeout_s=POLL_S)
        assert [(r["span_id"], r["label"]) for r in rows] == [(poison_id, "json.schema_invalid")]  # and checked
    finally:
        collector.stop()


def test_a_span_past_the_deadline_costs_other_projects_the_deadline_only(tmp_path):
    collector, headers = keyed_collector(tmp_path, "--detect-deadline", "2")
    try:
        body, _ = output_body(SLOW_OUTPUT, schema=SLOW_SCHEMA)
        assert http.post(f"{collector.url}/v1/traces", content=body, headers=headers["alpha"]).status_code == 200
        body, _ = genai_spans_json(20)
        assert http.post(f"{collector.url}/v1/traces", content=body, headers=headers["beta"]).status_code == 200
        assert wait_for(lambda: spans_of(collector.url, headers["beta"]) == 20, timeout_s=POLL_S)
        assert spans_of(collector.url, headers["alpha"]) == 1
        assert wait_for(lambda: metric(collector.url, 'infersight_outputs_not_analysed_total{reason="deadline"} 1'),
                        timeout_s=POLL_S)
        assert metric(collector.url, "infersight_store_errors_total 0")
    finally:
        collector.stop()


def test_sigterm_stops_within_the_bound_while_a_detector_is_stuck_and_the_restart_drains(tmp_path):
    collector, headers = keyed_collector(tmp_path, "--detect-deadline", "600")
    body, _ = output_body(SLOW_OUTPUT, schema=SLOW_SCHEMA)
    try:
        assert http.post(f"{collector.url}/v1/traces", content=body, headers=headers["alpha"]).status_code == 200
        # Stored, and still in the spool's analysis backlog: the detectors are stuck on it.
        assert wait_for(lambda: spans_of(collector.url, headers["alpha"]) == 1, timeout_s=POLL_S)
        assert wait_for(lambda: metric(collector.url, "infersight_detection_backlog_spans 1\n"), timeout_s=POLL_S)
        assert metric(collector.url, "infersight_spool_entries 0\n")
        exit_s = _terminate(collector.process, STOP_BOUND_S)
        print(f"stopped {exit_s:.1f} s after SIGTERM, exit code {collector.process.returncode}")
    finally:
        collector.stop()
    # The stuck run is cut short at once, not waited for through the analysis' grace.
    assert exit_s < INSERT_GRACE_S < STOP_BOUND_S
    assert collector.process.returncode in (0, -signal.SIGTERM)  # a clean stop, not the alarm

    # The batch's analysis was left in the spool; with a deadline now, it is analysed, and the
    # span is not stored twice.
    again = CollectorProcess(collector.data_dir, free_port(), extra_args=("--no-alerts", "--detect-deadline", "1"))
    again.start()
    try:
        assert wait_for(lambda: metric(again.url, "infersight_detection_backlog_spans 0\n"), timeout_s=POLL_S)
        assert metric(again.url, 'infersight_outputs_not_analysed_total{reason="deadline"} 1')
        assert spans_of(again.url, headers["alpha"]) == 1
    finally:
        again.stop()


def test_sigterm_stops_within_the_bound_while_the_store_hangs(tmp_path):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.collector.clickhouse_http", "--data-dir",
                               str(tmp_path / "ch"), "--port", str(port)], cwd=ROOT)
    collector = None
    try:
        assert wait_for(lambda: _up(port), timeout_s=POLL_S)
        url = f"http://default:@127.0.0.1:{port}/hang_{uuid.uuid4().hex[:6]}"
        collector = CollectorProcess(tmp_path / "data", free_port(), extra_args=(
            "--no-auth", "--decode-workers", "0", "--clickhouse-url", url, "--stop-bound", str(HANG_BOUND_S))).start()
        server.send_signal(signal.SIGSTOP)  # accepts connections, never answers
        body, _ = genai_spans_json(5)
        assert http.post(f"{collector.url}/v1/traces", content=body, headers=JSON).status_code == 200
        time.sleep(1.0)  # the writer is inside its insert now
        exit_s = _terminate(collector.process, HANG_BOUND_S)
        print(f"stopped {exit_s:.1f} s after SIGTERM, exit code {collector.process.returncode}")
        assert exit_s < HANG_BOUND_S + 5  # the alarm's bound, plus the time to notice the exit
    finally:
        server.send_signal(signal.SIGCONT)
        if collector is not None:
            collector.stop()
        server.terminate()
        server.wait(10)


def _terminate(process: subprocess.Popen[bytes], bound_s: int) -> float:
    """SIGTERM, then the seconds until the process is gone (killed past the bound and a minute)."""
    started = time.monotonic()
    process.terminate()
    try:
        process.wait(bound_s + 60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return time.monotonic() - started


def _up(port: int) -> bool:
    try:
        return http.get(f"http://127.0.0.1:{port}/ping").status_code == 200
    except httpx.HTTPError:
        return False
