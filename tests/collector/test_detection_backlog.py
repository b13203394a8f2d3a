"""Analysis never hides spans: stored spans are queryable while their detections are pending, the
backlog is durable and bounded, and past the bound the detectors sample and say so."""

from __future__ import annotations

import threading
import time

from infersight.collector._counters import Counters, not_analysed, not_analysed_key
from infersight.collector.ingest import Decoder
from infersight.collector.ingest._otlp import JSON, day_range, parse_traces, span_keys, to_rows
from infersight.collector.spool import Entry, Spool, SpoolDepth, SpoolWriter
from infersight.collector.store import encode_rows
from infersight.collector.web._metrics import render
from tests.collector.test_detections import LOOP, _detections_of, _output_body
from tests.conftest import wait_for


def entry(project: str, spans: int) -> tuple[Entry, list[str]]:
    """A spooled request of ``spans`` chat spans whose output loops (one detection each)."""
    body, span_ids = _output_body(LOOP, spans=spans)
    rows = to_rows(parse_traces(body, JSON), project)
    return Entry.compress(project, encode_rows(rows), spans, days=day_range(rows), keys=span_keys(rows)), span_ids


def stored_span_ids(store, project: str) -> set[str]:
    rows = store.query("SELECT SpanId FROM otel_traces WHERE ResourceAttributes['infersight.project'] = {p:String}",
                       {"p": project})
    return {row["SpanId"] for row in rows}


class HeldDetector:
    """The real detectors, held at the gate until the test opens it: as slow as the test needs."""

    def __init__(self) -> None:
        self.decoder = Decoder(0, limit_bytes=1 << 20)
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.calls: list[int] = []  # sample_every of each call

    def __call__(self, rows: bytes, sample_every: int) -> tuple[bytes, dict[tuple[str, str], int]]:
        self.entered.set()
        assert self.gate.wait(120)
        self.calls.append(sample_every)
        return self.decoder.detect(rows, sample_every)


def test_spans_are_queryable_while_the_detections_of_earlier_batches_are_pending(store, tmp_path):
    project = f"backlog-{time.time_ns()}"
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    detector = HeldDetector()
    writer = SpoolWriter(spool, store, Counters(), detect=detector, min_interval_s=0.0)
    first, first_ids = entry(project, 3)
    spool.append(first)
    writer.start()
    try:
        assert detector.entered.wait(120)  # the first batch is stored and its analysis under way
        later, later_ids = entry(project, 4)
        spool.append(later)
        writer.wake()
        # the next batch is stored while the detectors still hold the first one
        assert wait_for(lambda: stored_span_ids(store, project) == set(first_ids + later_ids))
        assert not detector.gate.is_set() and _detections_of(store, project) == []
        # The writer records the batch in the spool just after the store has it: the spans can be
        # read a moment before the spool says so (1 entry, 3 rows at a load of 8).
        def recorded() -> SpoolDepth | None:
            depth = spool.depth()
            return depth if (depth.entries, depth.backlog_rows) == (0, 7) else None

        depth = wait_for(recorded)
        assert depth, spool.depth()
        assert not detector.gate.is_set()
        assert "infersight_detection_backlog_spans 7\n" in render({}, depth)
        detector.gate.set()
        assert wait_for(lambda: spool.depth().backlog_entries == 0)
    finally:
        writer.stop()
    assert {span_id for span_id, _ in _detections_of(store, project)} == set(first_ids + later_ids)


def test_the_backlog_survives_a_restart_and_is_analysed_then(store, tmp_path, monkeypatch):
    # The stop waits its grace for the held analysis, which never ends here: a 2 s grace makes
    # the same "death" with the analysis pending, without 10 s of waiting for it (the writer thread,
    # idle once the batch is analysed, leaves at once).
    monkeypatch.setattr("infersight.collector.spool._writer.INSERT_GRACE_S", 2.0)
    project = f"backlog-restart-{time.time_ns()}"
    path = tmp_path / "spool.db"
    spool = Spool(path, max_bytes=1 << 30)
    detector = HeldDetector()  # never opened: the process "dies" with the analysis pending
    writer = SpoolWriter(spool, store, Counters(), detect=detector, min_interval_s=0.0)
    added, span_ids = entry(project, 2)
    spool.append(added)
    writer.start()
    assert detector.entered.wait(120)
    writer.stop(drain_s=0.0)
    assert stored_span_ids(store, project) == set(span_ids)
    spool.close()

    spool = Spool(path, max_bytes=1 << 30)
    assert (spool.depth().entries, spool.depth().backlog_rows) == (0, 2)
    assert spool.next_batch(max_rows=100, max_bytes=1 << 30) is None  # stored: not inserted again
    writer = SpoolWriter(spool, store, Counters(), detect=Decoder(0, limit_bytes=1 << 20).detect,
                         min_interval_s=0.0)
    writer.start()
    try:
        assert wait_for(lambda: spool.depth().backlog_entries == 0)
    finally:
        writer.stop()
    assert {span_id for span_id, _ in _detections_of(store, project)} == set(span_ids)


def test_past_the_bound_the_detectors_sample_and_every_output_is_analysed_or_counted(store, tmp_path):
    project = f"backlog-sampled-{time.time_ns()}"
    spool = Spool(tmp_path / "spool.db", max_bytes=1 << 30)
    detector = HeldDetector()
    counters = Counters()
    # one request a batch, so the backlog builds up behind the held detectors
    writer = SpoolWriter(spool, store, counters, detect=detector, min_interval_s=0.0, max_rows=4,
                         backlog_bound_rows=8)
    span_ids: list[str] = []
    for _ in range(6):
        added, ids = entry(project, 4)
        spool.append(added)
        span_ids += ids
    writer.start()
    try:
        assert detector.entered.wait(120)
        assert wait_for(lambda: spool.depth().backlog_rows == 24)  # all stored, none analysed
        assert stored_span_ids(store, project) == set(span_ids)
        detector.gate.set()
        assert wait_for(lambda: spool.depth().backlog_entries == 0)
    finally:
        writer.stop()
    # The first batch was taken while the others were being stored; then 20 spans behind a bound
    # of 8: 1 in 3, 3, 2, 2, then all, as the backlog shrinks.
    assert detector.calls[1:] == [3, 3, 2, 2, 1]
    analysed = {span_id for span_id, _ in _detections_of(store, project)}
    sampled = counters.get(not_analysed_key("sampled", project))
    assert sampled > 0 and len(analysed) + sampled == len(span_ids)
    assert not_analysed(counters.snapshot(), project)["sampled"] == sampled


def test_the_decoder_analyses_one_output_in_n_and_counts_the_others_by_project():
    project = f"sampling-{time.time_ns()}"
    body, span_ids = _output_body(LOOP, spans=8)
    rows = encode_rows(to_rows(parse_traces(body, JSON), project))
    found, counted = Decoder(0, limit_bytes=1 << 20).detect(rows, 4)
    assert counted == {("sampled", project): 6}
    assert {line.split(b'"span_id":"')[1][:16].decode() for line in found.splitlines()} == {
        span_ids[0], span_ids[4]}


def test_metrics_show_the_backlog_gauge():
    text = render({}, SpoolDepth(0, 0, 0, 1, 0.0, backlog_entries=2, backlog_rows=40))
    assert "# TYPE infersight_detection_backlog_spans gauge\ninfersight_detection_backlog_spans 40\n" in text
    assert 'infersight_outputs_not_analysed_total{reason="sampled"} 0' in text
