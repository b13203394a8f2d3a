"""The windowed runner against the real embedded store: drift, loops and stuffing become rows."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from infersight import sdk
from infersight.collector import encode_rows
from infersight.detectors import ContextStuffingDetector, NumericDriftDetector, WindowedRunner

from .corpora import TEXT_BASE, numeric_window, text_corpus

NOW = datetime(2026, 11, 2, 12, 1, 10, tzinfo=timezone.utc)  # just after 12:00: drift for 11:00-12:00
HOUR = datetime(2026, 11, 2, 11, 0, tzinfo=timezone.utc)
S = 10**9


def _ns(moment: datetime) -> int:
    return int(moment.timestamp()) * S


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _span(project: str, i: int, ts_ns: int, *, route: str, input_tokens: int, output_tokens: int,
          duration_s: float, ttft_s: float, cost_usd: float, prompt: str, answer: str,
          trace: str | None = None, tenant: str = "acme", user: str = "") -> dict:
    attributes = {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": str(input_tokens), "gen_ai.usage.output_tokens": str(output_tokens),
        "infersight.cost.usd": repr(cost_usd), "infersight.tenant.id": tenant, "infersight.user.id": user,
        "infersight.route": route, "gen_ai.input.messages": _messages("user", prompt),
        "gen_ai.output.messages": _messages("assistant", answer),
    }
    if not math.isnan(ttft_s):
        attributes["gen_ai.response.time_to_first_chunk"] = repr(ttft_s)
    span_id = hashlib.sha256(f"{project}/{i}".encode()).hexdigest()[:16]
    return {
        "Timestamp": f"{ts_ns // S:010d}.{ts_ns % S:09d}", "TraceId": trace or span_id * 2, "SpanId": span_id,
        "ParentSpanId": "", "SpanName": "chat gpt-4o-mini", "SpanKind": "Client", "ServiceName": "support-bot",
        "ResourceAttributes": {"service.name": "support-bot", "infersight.project": project},
        "SpanAttributes": attributes, "Duration": int(duration_s * S), "StatusCode": "Unset",
    }


def _traffic(project: str, rng: np.random.Generator, times: list[int], *, route: str, mix: dict[str, float],
             first: int, **shift: float) -> list[dict]:
    numbers = numeric_window(rng, len(times), **shift)
    prompts = text_corpus(rng, len(times), mix)
    answers = text_corpus(rng, len(times), TEXT_BASE)
    return [
        _span(project, first + k, ts, route=route, input_tokens=int(numbers["input_tokens"][k]),
              output_tokens=int(numbers["output_tokens"][k]), duration_s=float(numbers["duration_s"][k]),
              ttft_s=float(numbers["ttft_s"][k]), cost_usd=float(numbers["cost_usd"][k]),
              prompt=prompts[k], answer=answers[k])
        for k, ts in enumerate(times)
    ]


@pytest.fixture(scope="module")
def seeded(session_store) -> str:
    """A week of normal traffic, then an hour with longer answers and a new topic in the prompts,
    a looping trace and one stuffed prompt in its last minute."""
    project = "windowed-e2e"
    rng = np.random.default_rng(11)
    start = _ns(HOUR - timedelta(days=7))
    # The reference comes in bursts inside 15 ten-minute blocks, so text sampling reads a few ranges.
    bursts = sorted(int(b) for b in rng.choice(1000, 15, replace=False))
    reference_times = sorted(start + b * 600 * S + int(rng.integers(0, 600 * S)) for b in bursts for _ in range(110))
    current_times = sorted(_ns(HOUR) + int(t) for t in rng.integers(0, 3540 * S, 700))
    quiet_times = sorted(_ns(HOUR) + int(t) for t in rng.integers(0, 3540 * S, 40))
    rows = _traffic(project, rng, reference_times, route="support.answer", mix=TEXT_BASE, first=0)
    rows += _traffic(project, rng, current_times, route="support.answer", first=10_000,
                     mix={"account": 0.35, "shipping": 0.35, "billing": 0.3}, output_scale=1.6)
    rows += _traffic(project, rng, quiet_times, route="quiet.route", mix=TEXT_BASE, first=20_000)
    last_minute = _ns(HOUR + timedelta(minutes=59))
    loop = {"route": "agent.step", "input_tokens": 1200, "output_tokens": 80, "duration_s": 1.0, "ttft_s": 0.3,
            "cost_usd": 0.0002, "prompt": "Call the search tool again with the same query.", "answer": "Calling."}
    rows += [_span(project, 30_000 + i, last_minute + (5 + 2 * i) * S, trace="ab" * 16, **loop) for i in range(8)]
    rows.append(_span(project, 40_000, last_minute + 30 * S, route="support.answer", input_tokens=60_000,
                      output_tokens=200, duration_s=4.0, ttft_s=2.0, cost_usd=0.0091,
                      prompt="Summarise this contract: " + "clause " * 500, answer="It says..."))
    session_store.insert("otel_traces", encode_rows(rows))
    return project


@pytest.fixture(scope="module")
def runner(session_store) -> WindowedRunner:
    return WindowedRunner(session_store, stuffing=ContextStuffingDetector(price=sdk.cost_usd))


@pytest.fixture(scope="module")
def first_run(runner, seeded):
    return runner.run(seeded, NOW)


def labels(rows: list[dict]) -> list[str]:
    return [r["label"] for r in rows]


def test_reports_drift_loops_and_stuffing_from_the_store(first_run):
    run = first_run
    assert (run.start, run.end) == (datetime(2026, 11, 2, 11, 59, tzinfo=timezone.utc),
                                    datetime(2026, 11, 2, 12, 0, tzinfo=timezone.utc))
    found = labels(run.rows)
    assert "drift.numeric.output_tokens" in found
    assert "drift.numeric.input_tokens" not in found
    assert "drift.text.prompts" in found
    assert "drift.text.outputs" not in found  # the answers' topics did not change
    assert found.count("cost_loop.trace") == 8
    assert found.count("context_stuffing.input_tokens") == 1
    by_label = {r["label"]: r for r in run.rows}
    numeric = by_label["drift.numeric.output_tokens"]
    assert numeric["route"] == "support.answer" and numeric["detector"] == "drift.numeric"
    assert numeric["ts"] == f"{_ns(HOUR) // S:010d}.000000000"
    assert numeric["evidence"].startswith("output_tokens up: median ")
    assert any(
        word in by_label["drift.text.prompts"]["evidence"] for word in ("refund", "invoice", "billing", "charge")
    )
    loop = by_label["cost_loop.trace"]
    assert loop["trace_id"] == "ab" * 16 and loop["route"] == "agent.step" and loop["tenant"] == "acme"
    assert run.loop_cost_usd == pytest.approx(8 * 0.0002)
    assert run.stuffing_cost_usd == pytest.approx((60_000 - 900) * 0.15e-6, rel=0.1)
    assert any(
        "quiet.route" in note and "and 40 requests in the current window" in note for note in run.notes
    ), run.notes
    routes = {(route, report.detector, getattr(report, "channel", "")) for route, report in run.drift}
    assert ("support.answer", "drift.text", "outputs") in routes


def test_the_same_window_gives_the_same_rows_and_token(session_store, seeded, first_run):
    # fresh: nothing cached
    runner = WindowedRunner(session_store, stuffing=ContextStuffingDetector(price=sdk.cost_usd))
    again = runner.run(seeded, NOW)
    assert again.batches == first_run.batches
    [batch] = first_run.batches  # everything was known in the minute 11:59
    assert batch.minute == datetime(2026, 11, 2, 11, 59, tzinfo=timezone.utc)
    assert len(batch.dedup_token) == 32 and int(batch.dedup_token, 16) >= 0
    assert runner.run(seeded, NOW + timedelta(seconds=40)).batches == first_run.batches  # cached: the same


def test_a_longer_catch_up_window_repeats_the_minute_with_the_same_token(runner, seeded, first_run):
    # After a failed insert the evaluator keeps its old ``since``: the next window is longer,
    # and the minute it already computed comes back identical, so a landed insert is dropped.
    caught_up = runner.run(seeded, NOW + timedelta(minutes=5), since=NOW - timedelta(minutes=3))
    assert (caught_up.start, caught_up.end) == (datetime(2026, 11, 2, 11, 57, tzinfo=timezone.utc),
                                                datetime(2026, 11, 2, 12, 5, tzinfo=timezone.utc))
    assert caught_up.batches == first_run.batches


def test_rows_go_into_detections_once(session_store, seeded, first_run):
    for _ in range(2):  # a retried insert is dropped by its token
        for batch in first_run.batches:
            session_store.insert("detections", encode_rows(batch.rows), dedup_token=batch.dedup_token)
    [count] = session_store.query("SELECT count() AS n FROM detections WHERE project = {p:String}", {"p": seeded})
    assert int(count["n"]) == len(first_run.rows)


def test_the_next_minute_reports_nothing_twice(session_store, seeded):
    runner = WindowedRunner(session_store, drift=False)
    later = runner.run(seeded, NOW + timedelta(minutes=1), since=NOW)
    assert (later.start, later.batches) == (datetime(2026, 11, 2, 12, 0, tzinfo=timezone.utc), [])
    before = runner.run(seeded, NOW - timedelta(minutes=1))
    assert before.end == datetime(2026, 11, 2, 11, 59, tzinfo=timezone.utc) and before.batches == []


def test_run_all_finds_the_project(session_store, seeded, first_run):
    runs = {run.project: run for run in WindowedRunner(session_store, drift=False).run_all(NOW)}
    assert seeded in runs
    assert labels(runs[seeded].rows) == [label for label in labels(first_run.rows) if not label.startswith("drift.")]


def test_windows_are_floored_to_the_minute_and_lag_behind():
    runner = WindowedRunner(store=None, lag=timedelta(minutes=2))  # type: ignore[arg-type]
    start, end = runner.window(datetime(2026, 1, 1, 10, 7, 59), since=datetime(2026, 1, 1, 10, 5, 1))
    assert (start, end) == (
        datetime(2026, 1, 1, 10, 3, tzinfo=timezone.utc), datetime(2026, 1, 1, 10, 5, tzinfo=timezone.utc)
    )
    start, end = runner.window(datetime(2026, 1, 1, 10, 7), since=datetime(2025, 1, 1))
    assert end - start == runner.max_catchup


def test_runner_parameters_are_validated():
    with pytest.raises(ValueError, match="The 'current' parameter of WindowedRunner must be a positive duration"):
        WindowedRunner(store=None, current=timedelta(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="The 'lag' parameter of WindowedRunner must be a duration >= 0"):
        WindowedRunner(store=None, lag=timedelta(seconds=-1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="whose features are llm_spans column names"):
        WindowedRunner(store=None, numeric=NumericDriftDetector(features=["cost_usd) OR (1"]))  # type: ignore[arg-type]
