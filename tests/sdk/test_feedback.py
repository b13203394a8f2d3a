"""``sdk.feedback`` and ``sdk.current_trace_id``: feedback reaches the collector the spans go to,
with the SDK's key, and never raises into the app or waits on the collector."""

from __future__ import annotations

import time

from opentelemetry.sdk.metrics import MeterProvider

from infersight import sdk
from infersight.sdk._feedback import FeedbackSender
from tests import http
from tests.conftest import free_port, wait_for

from .otlp_server import HangingServer


def _no_metrics() -> MeterProvider:
    return MeterProvider(metric_readers=[])


def test_feedback_on_the_current_trace_reaches_the_collector_and_shows_on_the_trace(auth_collector):
    sdk.init(service_name="shop", endpoint=auth_collector.url, api_key=auth_collector.keys["alpha"],
             meter_provider=_no_metrics())
    try:
        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def answer(question: str) -> str:
            return "yes"

        with sdk.request("acme", route="support.answer"):
            answer("refund?")
            trace_id = sdk.current_trace_id()
        assert trace_id is not None and len(trace_id) == 32
        assert sdk.current_trace_id() is None  # outside the request
        first = sdk.feedback(trace_id, thumbs="down", comment="<script>alert(1)</script>", user_id="u-1")
        second = sdk.feedback(trace_id=trace_id, score=4, name="stars")
        assert first and second and first != second
    finally:
        sdk.shutdown()

    def shown():
        answer = http.get(f"{auth_collector.url}/api/v1/traces/{trace_id}", headers=auth_collector.headers("alpha"))
        return answer.status_code == 200 and len(answer.json()["feedback"]) == 2 and answer.json()

    data = wait_for(shown)
    assert data, "the trace with its two feedback items never showed"
    got = {(f["name"], f["kind"], f["shown"], f["source"]) for f in data["feedback"]}
    assert got == {("user_feedback", "thumbs", "down", "sdk"), ("stars", "score", "4", "sdk")}
    assert {f["id"] for f in data["feedback"]} == {first, second}


def test_with_the_collector_down_feedback_never_raises_and_exit_is_bounded():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    sdk.init(service_name="shop", endpoint=url, meter_provider=_no_metrics())
    before = sdk.failure_count("feedback_dropped")
    ids = [sdk.feedback("ab" * 16, thumbs="up") for _ in range(50)]
    assert all(ids)  # queued: the sender retries in the background
    assert wait_for(lambda: _failing(), timeout_s=30)
    started = time.monotonic()
    sdk.shutdown(timeout_s=30)
    # A failing collector is not waited for at exit (a bound of 30 s was allowed).
    assert time.monotonic() - started < 15
    assert sdk.failure_count("feedback_dropped") - before == 50


def _failing() -> bool:
    from infersight.sdk import _feedback

    sender = _feedback._sender
    return sender is not None and sender._failing


def test_a_hanging_collector_holds_the_exit_no_longer_than_the_bound():
    server = HangingServer()
    try:
        sdk.init(service_name="shop", endpoint=server.url, meter_provider=_no_metrics(), export=True)
        assert sdk.feedback("ab" * 16, score=1)
        started = time.monotonic()
        sdk.shutdown(timeout_s=0.5)
        assert time.monotonic() - started < 8  # the hanging request would hold it 10 s
    finally:
        server.stop()


def test_unusable_arguments_and_calls_before_init_are_counted_not_raised():
    before = sdk.failure_count("feedback_dropped")
    assert sdk.feedback("ab" * 16, thumbs="up") is None  # before init: nowhere to send it
    sdk.init(service_name="shop", endpoint=f"http://127.0.0.1:{free_port()}", meter_provider=_no_metrics())
    try:
        assert sdk.feedback("ab" * 16, thumbs="sideways") is None
        assert sdk.feedback("ab" * 16) is None  # neither score nor thumbs
        assert sdk.feedback("ab" * 16, score=float("nan")) is None
        assert sdk.feedback(thumbs="up") is None  # no trace given, none running
        assert sdk.feedback(object(), thumbs="up") is None  # type: ignore[arg-type]
    finally:
        sdk.shutdown(timeout_s=0)
    assert sdk.failure_count("feedback_dropped") - before == 6


def test_a_full_queue_drops_and_counts_instead_of_growing():
    sender = FeedbackSender(f"http://127.0.0.1:{free_port()}/api/v1/feedback", max_queued=2)
    before = sdk.failure_count("feedback_dropped")
    try:
        accepted = [sender.put({"id": str(i), "trace_id": "ab" * 16, "thumbs": "up"}) for i in range(5)]
    finally:
        sender.stop(0)
    # The thread may have taken the first item off already; at most 2 wait at once.
    assert accepted.count(True) <= 3 and accepted[:2] == [True, True]
    assert sdk.failure_count("feedback_dropped") - before == 5  # the refused ones, then the queued at stop


def test_feedback_the_collector_refuses_is_dropped_and_counted(auth_collector):
    sdk.init(service_name="shop", endpoint=auth_collector.url, api_key="isk_" + "A" * 43, meter_provider=_no_metrics())
    before = sdk.failure_count("feedback_dropped")
    try:
        assert sdk.feedback("ab" * 16, thumbs="up")
        assert wait_for(lambda: sdk.failure_count("feedback_dropped") > before)
    finally:
        sdk.shutdown(timeout_s=1)
    assert sdk.failure_count("feedback_dropped") - before == 1


def test_long_comments_are_sent_in_batches_the_collector_takes(auth_collector, store):
    from infersight.collector.store import trace_feedback

    sdk.init(service_name="shop", endpoint=auth_collector.url, api_key=auth_collector.keys["alpha"],
             meter_provider=_no_metrics())
    trace_id = "cd" * 16
    before = sdk.failure_count()
    try:
        # 300 comments of 5,000 characters, cut to the collector's 4,096: ~3.6 MB of JSON in all.
        ids = [sdk.feedback(trace_id, score=i, comment="é€😀" * 1666 + "x" * 2) for i in range(300)]
        assert all(ids)
        assert sdk.feedback(trace_id, score=1, name="not a name") is None  # refused here, not in a batch
    finally:
        sdk.shutdown(timeout_s=60)
    project = auth_collector.projects["alpha"]
    stored = wait_for(lambda: len(rows := trace_feedback(store, project, trace_id)) == 300 and rows)
    assert stored, "not every item was stored"
    assert {len(r["comment"]) for r in stored} == {4096}
    assert sdk.failure_count() - before == 1  # only the bad name


def test_feedback_sent_during_a_store_outage_arrives_once_it_ends(auth_collector, store):
    from infersight.collector.store import trace_feedback

    sdk.init(service_name="shop", endpoint=auth_collector.url, api_key=auth_collector.keys["alpha"],
             meter_provider=_no_metrics())
    trace_id = "ee" * 16
    store.failing = True  # the collector answers 503 with Retry-After
    try:
        item_id = sdk.feedback(trace_id, thumbs="down")
        assert wait_for(_failing)
    finally:
        store.failing = False
    try:
        stored = wait_for(lambda: trace_feedback(store, auth_collector.projects["alpha"], trace_id))
        assert [f["id"] for f in stored] == [item_id]
    finally:
        sdk.shutdown(timeout_s=5)
