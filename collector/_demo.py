"""``infersight demo``: a collector holding a past week of production traffic, then a live app feeding it.

The steps, each through the product's own paths:

1. the port is checked before anything starts or is sent;
2. a collector starts without alerts, and the past week (``demo.WeekOfTraffic``: two services,
   diurnal, sessions, one incident) is posted to its ``/v1/traces`` like any exporter's spans, so
   the view, rollups and inline detectors derive from them as from live ones;
3. that collector stops; the users' thumbs on the week (``WeekOfTraffic.feedback``) are stored
   as ``POST /api/v1/feedback`` stores them (``feedback_rows``, ``insert_feedback``) but with the
   clock at the minute each was given, which the route, stamping arrival, cannot take; and the
   alert evaluator is run over the incident's minutes with its clock set to them, so the history
   holds the page and the resolve the rules decided;
4. the collector starts again with alerts and a (fake) judge; a sample of the week is judged
   through ``POST /api/v1/judge/run``;
5. the synthetic app sends live traffic through the SDK at the week's own rate for this hour,
   conversations of a few turns with now and then a thumb (``sdk.feedback``); ``search-api``'s
   at its rate, as spans, its thumbs through ``POST /api/v1/feedback``; until ``stop`` is set.

A second run on the same data directory backfills only the gap since the last one.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from infersight import sdk
from infersight.demo import (
    SEARCH_API,
    SUPPORT_BOT,
    FakeJudge,
    Feedback,
    Incident,
    WeekOfTraffic,
    past_incident,
    post_feedback,
    post_week,
    requests_per_hour,
    run_traffic,
    start_fake_llm,
)

from ._server import CollectorProcess, check_port
from ._settings import Settings
from .alerts import Evaluator
from .store import ChdbStore, feedback_rows, insert_feedback

MARKER = "demo-backfill.json"
"""In the data directory: the end of the traffic already there, so a rerun fills only the gap."""

INGEST_DAYS_BACK = 30
JUDGE_MODEL = "demo-judge"
TIMED_FINISH_S = 30.0  # a request under way at the end of a timed run: a streamed answer on a loaded host
_JUDGE_PRICES = ("--judge-price-input-mtok", "0.15", "--judge-price-output-mtok", "0.6")


@dataclass(frozen=True)
class DemoOptions:
    port: int
    data_dir: Path
    per_day: float
    duration_s: float | None


def backfill_start(now_s: float) -> float:
    """Monday 00:00 UTC of the last complete ISO week: the weekly report's default week is all there."""
    today = datetime.fromtimestamp(now_s, timezone.utc).date()
    monday = today - timedelta(days=today.weekday() + 7)
    return datetime(monday.year, monday.month, monday.day, tzinfo=timezone.utc).timestamp()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def _post(url: str, body: dict[str, Any], timeout_s: float = 300) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read())


def wait_stored(url: str, since_s: float, calls: int, timeout_s: float = 300) -> None:
    """Block until the collector holds ``calls`` LLM calls since ``since_s`` (each request makes one)."""
    since = datetime.fromtimestamp(since_s, timezone.utc).isoformat()
    deadline = time.monotonic() + timeout_s
    while _get(f"{url}/api/v1/summary?since={urllib.parse.quote(since)}")["llm_calls"] < calls:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the collector did not store the backfill within {timeout_s:.0f} s")
        time.sleep(0.5)


def replay_alerts(data_dir: Path, incident: Incident) -> list[str]:
    """Run the alert evaluator minute by minute from just before the incident until what fired has
    resolved (at most an hour after it), its clock at those minutes, with no notifier; returns the
    events recorded (``firing``, ``resolved``)."""
    store = ChdbStore(data_dir)
    try:
        minute = datetime.fromtimestamp(incident.start_s, timezone.utc).replace(second=0, microsecond=0)
        minute -= timedelta(minutes=2)
        end = datetime.fromtimestamp(incident.end_s, timezone.utc)
        evaluator = Evaluator(store, clock=lambda: minute)
        evaluator.prepare(minute)
        events: list[str] = []
        firing: set[str] = set()
        while minute <= end or (firing and minute <= end + timedelta(hours=1)):
            for event in evaluator.run_once(minute).events:
                events.append(event.kind)
                if event.kind == "firing":
                    firing.add(event.state.fingerprint)
                elif event.kind == "resolved":
                    firing.discard(event.state.fingerprint)
            minute += timedelta(minutes=1)
        return events
    finally:
        store.close()


def store_feedback(data_dir: Path, feedback: list[Feedback], *, batch: int = 1000) -> int:
    """Store the past week's ``feedback`` in the (stopped) collector's store of ``data_dir``, each
    at the time it was given, under the project the collector serves without keys; returns how
    many. The rows are what ``POST /api/v1/feedback`` makes of the same items."""
    project = Settings().project
    store = ChdbStore(data_dir)
    try:
        for i in range(0, len(feedback), batch):
            rows = [row for f in feedback[i:i + batch]
                    for row in feedback_rows(f.item(), project, now_ns=int(f.at_s * 1e9), source="api")]
            insert_feedback(store, rows)
    finally:
        store.close()
    return len(feedback)


def _judge_run(url: str, judge_url: str, since_s: float, until_s: float) -> dict[str, Any]:
    """Judge a sample of the backfilled calls, as ``infersight judge run`` does against a collector."""
    body = {
        "judge": {"base_url": judge_url, "model": JUDGE_MODEL, "price_input_mtok": 0.15, "price_output_mtok": 0.6},
        "since_ns": int(since_s * 1e9), "until_ns": int(until_s * 1e9), "rubric_ids": ["helpfulness"],
        "rate": 0.03, "max_calls": 400, "max_usd": 1.0, "pace": False,
    }
    result: dict[str, Any] = _post(f"{url}/api/v1/judge/run", body)
    return result


def _ignore_interrupts() -> None:
    """A second Ctrl-C while the demo stops would break off its cleanup with a traceback and leave
    the collector running: the first one has been heard."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _read_marker(data_dir: Path) -> float | None:
    try:
        return float(json.loads((data_dir / MARKER).read_text())["end_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Demo:
    """One ``infersight demo`` run; :meth:`run` blocks until ``stop`` is set (Ctrl-C, ``--duration``)."""

    def __init__(self, options: DemoOptions, echo: Callable[[str], None],
                 progress: Callable[[int, int], Any]) -> None:
        self.options = options
        self.echo = echo
        self.progress = progress  # (expected requests, done) -> called as the backfill goes
        self.stop = threading.Event()
        self._collector: CollectorProcess | None = None
        self._judge: FakeJudge | None = None
        self._window = (0.0, 0.0)  # the backfilled span of time, judged once the live collector is up

    def run(self) -> None:
        options = self.options
        check_port("127.0.0.1", options.port)
        try:
            self._backfill()
            self._serve_live()
        finally:
            _ignore_interrupts()
            self.stop.set()
            self._close()

    def _start_collector(self, *args: str) -> str:
        self._collector = CollectorProcess(self.options.data_dir, self.options.port,
                                           extra_args=("--no-auth", *args), own_session=True)
        self._collector.start()
        return self._collector.url

    def _backfill(self) -> None:
        options, now = self.options, time.time()
        previous = _read_marker(options.data_dir)
        start = backfill_start(now) if previous is None else max(previous, now - (INGEST_DAYS_BACK - 1) * 86400)
        incident = past_incident(now) if previous is None else None
        url = self._start_collector("--no-alerts")
        week = WeekOfTraffic(start, now, per_day=options.per_day, incident=incident)
        expected = week.expected_requests()
        self.echo(f"Backfilling {(now - start) / 86400:.1f} days of traffic (~{expected} requests) into {url}")
        sent = post_week(url, week, progress=lambda n: self.progress(expected, n))
        wait_stored(url, start, sent)
        assert self._collector is not None
        self._collector.stop()
        self.echo(f"Storing {len(week.feedback)} users' thumbs on the backfilled answers")
        store_feedback(options.data_dir, week.feedback)
        if incident is not None:
            self.echo("Replaying the alert rules over the past incident (one page, then its resolve)")
            replay_alerts(options.data_dir, incident)
        # Only now: an interrupted first run is redone whole, and the seeded week repeats the same
        # span ids, which the collector stores once.
        (options.data_dir / MARKER).write_text(json.dumps({"end_s": now}))
        self._window = (start, now)

    def _serve_live(self) -> None:
        self._judge = FakeJudge().start()
        url = self._start_collector("--judge-base-url", self._judge.url, "--judge-model", JUDGE_MODEL,
                                    "--judge-rate", "0.05", "--judge-interval", "30", *_JUDGE_PRICES)
        self.echo("Judging a sample of the backfilled answers")
        _judge_run(url, self._judge.url, *self._window)
        self.echo(f"Dashboard: {url}/   (live traffic until Ctrl-C"
                  + (f" or {self.options.duration_s:.0f} s)" if self.options.duration_s else ")"))
        per_day = self.options.per_day
        sdk.init(service_name=SUPPORT_BOT.name, endpoint=url, service_version="1.5.0", metrics_interval_s=5)
        llm = start_fake_llm()
        spans = threading.Thread(target=self._search_api_live, args=(url,), name="demo-search-api", daemon=True)
        spans.start()
        try:
            # A timed run lets its last requests finish (a test reads them); Ctrl-C leaves within ~1 s.
            run_traffic(llm.url, self.stop, lambda t: requests_per_hour(SUPPORT_BOT, t, per_day) / 3600,
                        on_start=self._start_timer,
                        finish_s=1.5 if self.options.duration_s is None else TIMED_FINISH_S)
        finally:
            _ignore_interrupts()
            self.stop.set()
            sdk.shutdown()
            llm.stop()
            spans.join(timeout=2)

    def _start_timer(self) -> None:
        """``--duration`` counts from the first live request, not from the clients' start-up."""
        if self.options.duration_s is not None:
            timer = threading.Timer(self.options.duration_s, self.stop.set)
            timer.daemon = True
            timer.start()

    def _search_api_live(self, url: str) -> None:
        """``search-api`` keeps its own rate too: its spans for each elapsed ten seconds."""
        last, seed = time.time(), 100
        while not self.stop.wait(10):
            now = time.time()
            week = WeekOfTraffic(last, now, per_day=self.options.per_day, services=(SEARCH_API,), seed=seed)
            try:
                post_week(url, week)
                if week.feedback:
                    post_feedback(url, week.feedback)
            except Exception:  # noqa: BLE001 - the collector stopping under us ends the demo anyway
                return
            last, seed = now, seed + 1

    def _close(self) -> None:
        if self._collector is not None:
            self._collector.stop()
        if self._judge is not None:
            self._judge.stop()
