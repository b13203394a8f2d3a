"""Concurrent calls through the real instrumentations are counted as the model server served
them, and a call two instrumentations describe is flagged once.

The reference is the local model server: every request it answered, with the status and the usage
it returned, is recorded as it is served; nothing the collector computes goes into it. Calls run
at once (LangChain ``batch``, ``asyncio.gather``, threads) inside one request span, so they
overlap in time and share a model; some fail, and a failed OpenInference call records no model.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import openai
import pytest
from genai_prices import Usage, calc_price
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from infersight import sdk
from infersight.collector.alerts._digest import build_digest
from infersight.collector.ingest import _nesting
from infersight.collector.ingest._nesting import MAX_COMPARED, _Recent, mark_same_calls
from infersight.dashboards._report import weekly_data
from infersight.demo import FakeLLM
from infersight.sdk import semconv
from tests.collector.test_foreign_instrumentations import instrumentors, openai_restored
from tests.collector.test_normalizer import T0, USAGE
from tests.collector.test_normalizer import llm as llm_row
from tests.conftest import LiveCollector, wait_for

MINI, FOUR_O = "gpt-4o-mini", "gpt-4o"
LOOP = "Let me check that for you. " + "I will now retry the lookup and report back. " * 12


class ServedLLM(FakeLLM):
    """The local OpenAI-compatible server, recording what it served. A prompt containing "fail"
    is answered 500, one containing "loop" with a repetition loop; every answer has its own id,
    as a provider's has."""

    def __init__(self) -> None:
        super().__init__(latency_s=(0.2, 0.2))  # long enough for the calls of one test to overlap
        self.served: list[tuple[int, str, dict[str, int] | None]] = []
        self._served_lock = threading.Lock()

    def answer(self, path: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, body = super().answer(path, request)
        prompt = str((request.get("messages") or [{}])[-1].get("content", ""))
        if "fail" in prompt:
            status, body = 500, {"error": {"type": "server_error", "message": "upstream failure"}}
        else:
            body["id"] = f"chatcmpl-{uuid.uuid4().hex}"
            if "loop" in prompt:
                body["choices"][0].update(message={"role": "assistant", "content": LOOP}, finish_reason="length")
        with self._served_lock:
            self.served.append((status, str(request.get("model", "")), body.get("usage")))
        return status, body

    def truth(self) -> dict[str, Any]:
        """What was served, in the summary's terms."""
        ok = [(model, usage) for status, model, usage in self.served if status == 200 and usage]
        return {
            "llm_calls": len(self.served),
            "llm_errors": sum(1 for status, _, _ in self.served if status != 200),
            "input_tokens": sum(u["prompt_tokens"] for _, u in ok),
            "output_tokens": sum(u["completion_tokens"] for _, u in ok),
            "cost_usd": pytest.approx(sum(price(m, u["prompt_tokens"], u["completion_tokens"]) for m, u in ok)),
        }


def price(model: str, i: int, o: int) -> float:
    return float(calc_price(Usage(input_tokens=i, output_tokens=o), model, provider_id="openai").total_price)


@pytest.fixture
def llm() -> Iterator[ServedLLM]:
    server = ServedLLM().start()
    yield server
    server.stop()


@contextlib.contextmanager
def app(collector: Any, *names: str, ours: bool = False, export: str = "simple") -> Iterator[Any]:
    """An app instrumented by ``names`` (and our SDK when ``ours``), exporting each span alone
    (``simple``) or all of them in one request at the end (``batch``); yields its tracer, for the
    request span around the calls."""
    provider = TracerProvider(resource=Resource.create({"service.name": "concurrent-app"}))
    exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces")
    provider.add_span_processor(SimpleSpanProcessor(exporter) if export == "simple" else BatchSpanProcessor(
        exporter, schedule_delay_millis=60_000))
    if ours:
        sdk.init(service_name="concurrent-app", tracer_provider=provider, export=False)
    active = instrumentors(*names)
    with openai_restored():
        for inst in active:
            inst.instrument(tracer_provider=provider)
        try:
            yield provider.get_tracer("app")
        finally:
            for inst in reversed(active):
                inst.uninstrument()
            if ours:
                sdk.shutdown()  # and the provider it was given
            else:
                provider.shutdown()


def at_once(*calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` on threads at the same moment, each in a copy of this context (so inside the
    current span); their results or exceptions."""
    start = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int, context: contextvars.Context) -> None:
        start.wait()
        try:
            results[i] = context.run(calls[i])
        except Exception as exc:  # noqa: BLE001 - a failed call is part of what is measured
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, contextvars.copy_context())) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def prompts(*words: str) -> list[str]:
    # lengths differ, so do the served prompt token counts: each call's usage is its own
    return [" ".join([word] * (i + 1)) for i, word in enumerate(words)]


def summary_when(collector: Any, spans: int) -> dict[str, Any]:
    """The summary's call figures once the trace's ``spans`` spans are stored (both halves of every
    pair: what is counted cannot move any more)."""
    assert wait_for(lambda: _stored(collector) >= spans), "the spans were not all stored"
    body = httpx.get(f"{collector.url}/api/v1/summary", params={"since": "1h"}).json()
    return {key: body[key] for key in ("llm_calls", "llm_errors", "input_tokens", "output_tokens", "cost_usd")}


def _stored(collector: Any) -> int:
    """Spans stored of the test's one trace (the trace view lists every span, counted or not)."""
    rows = httpx.get(f"{collector.url}/api/v1/spans", params={"since": "1h", "limit": 1}).json()["spans"]
    if not rows:
        return 0
    trace = httpx.get(f"{collector.url}/api/v1/traces/{rows[0]['trace_id']}")
    return len(trace.json()["spans"]) if trace.status_code == 200 else 0


@pytest.mark.parametrize("export", ["simple", "batch"])
def test_a_langchain_batch_over_openai_with_a_failure_is_what_was_served(collector, llm, export):
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MINI, base_url=llm.url + "/v1", api_key="test", max_retries=0)
    with app(collector, "langchain", "openinference", export=export) as tracer, \
            tracer.start_as_current_span("request"):
        answers = model.batch(prompts("hi", "fail", "billing", "refund"), return_exceptions=True)
    assert sum(isinstance(a, Exception) for a in answers) == 1
    # every call is two LLM spans (LangChain's over OpenInference-openai's sibling) and the request span
    assert summary_when(collector, spans=9) == llm.truth() | {"llm_calls": 4, "llm_errors": 1}


@pytest.mark.parametrize("export", ["simple", "batch"])
def test_async_langchain_calls_gathered_are_what_was_served(collector, llm, export):
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MINI, base_url=llm.url + "/v1", api_key="test", max_retries=0)

    async def gathered() -> list[Any]:
        return await asyncio.gather(*(model.ainvoke(p) for p in prompts("hi", "fail", "plan", "fail")),
                                    return_exceptions=True)

    with app(collector, "langchain", "openinference", export=export) as tracer, \
            tracer.start_as_current_span("request"):
        answers = asyncio.run(gathered())
    assert sum(isinstance(a, Exception) for a in answers) == 2
    assert summary_when(collector, spans=9) == llm.truth() | {"llm_calls": 4, "llm_errors": 2}


def test_a_call_beside_a_failing_openinference_call_without_a_model_is_kept(collector, llm):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai")
    def raw(model: str, messages: list[dict[str, str]]) -> dict[str, Any]:
        return httpx.post(f"{llm.url}/v1/chat/completions", json={"model": model, "messages": messages}).json()

    def failing(prompt: str) -> Any:
        return client.chat.completions.create(model=MINI, messages=[{"role": "user", "content": prompt}])

    with app(collector, "openinference", ours=True) as tracer, tracer.start_as_current_span("request"):
        results = at_once(*(lambda i=i: raw(FOUR_O, [{"role": "user", "content": f"ok {i}"}]) for i in range(5)),
                          *(lambda i=i: failing(f"fail {i}") for i in range(5)))
    assert sum(isinstance(r, openai.InternalServerError) for r in results) == 5
    got = summary_when(collector, spans=11)
    assert got == llm.truth() | {"llm_calls": 10, "llm_errors": 5}
    figures = httpx.get(f"{collector.url}/api/v1/latency", params={"since": "1h"}).json()["totals"]
    assert figures["error_rate"] == pytest.approx(0.5)
    models = {r["name"]: r for r in httpx.get(f"{collector.url}/api/v1/cost", params={"since": "1h", "by": "model"})
              .json()["models"]}
    assert models[FOUR_O]["requests"] == 5


def quality_rates(collector: Any, store: Any) -> dict[str, Any]:
    """The looping call as the Quality API, the daily digest and the weekly report read it: the
    share of calls each detector flagged, the loop label's detections, its rate in the digest, and
    the report's flags per call."""
    body = httpx.get(f"{collector.url}/api/v1/quality", params={"since": "1h"}).json()
    today = datetime.now(timezone.utc).date()
    digest = build_digest(store, collector.project, today)
    (loop_label,) = [r for r in digest.detector_rates if r["label"] == "repetition.loop"]
    monday = datetime(today.year, today.month, today.day, tzinfo=timezone.utc) - timedelta(days=today.weekday())
    week = weekly_data(store, collector.project, monday)
    (soft,) = [row for row in week["headline"] if row["label"].startswith("Soft failures")]
    labels = {row["label"]: row["detections"] for row in body["labels"]}
    return {"calls": body["calls"], "rates": {d["detector"]: d["rate"] for d in body["detectors"]},
            "loop_detections": labels["repetition.loop"], "digest_loop_rate": loop_label["per_1k"] / 1000,
            "weekly_flags_per_call": soft["current"]}


def flagged_once(calls: int) -> dict[str, Any]:
    """The truth for one looping call of ``calls``: a loop that ran to max tokens is a repetition
    loop and a truncation, each flagged once."""
    return {"calls": calls, "rates": {"repetition": pytest.approx(1 / calls), "truncation": pytest.approx(1 / calls)},
            "loop_detections": 1, "digest_loop_rate": pytest.approx(1 / calls),
            "weekly_flags_per_call": pytest.approx(2 / calls)}


def wait_for_detections(collector: Any, store: Any, spans: int, rows: int) -> None:
    """Until the trace's spans are stored and ``rows`` detections of them (both halves of a pair
    are analysed: their rows arrive apart)."""
    def seen() -> bool:
        (found,) = store.query("SELECT count() AS n FROM detections WHERE project = {p:String}",
                               {"p": collector.project})
        return _stored(collector) >= spans and int(found["n"]) >= rows

    assert wait_for(seen), "the inline detectors did not analyse both spans of the looping call"


def test_langchain_over_openai_is_flagged_once_per_call(collector, llm, store):
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MINI, base_url=llm.url + "/v1", api_key="test", max_retries=0)
    with app(collector, "langchain", "openinference") as tracer, tracer.start_as_current_span("request"):
        model.batch(prompts("loop", "hi", "plan", "bill", "refund", "tax"))
    wait_for_detections(collector, store, spans=13, rows=4)
    assert summary_when(collector, spans=13)["llm_calls"] == llm.truth()["llm_calls"] == 6
    # both spans of the looping call carry the loop; the call is one flagged call of six
    assert quality_rates(collector, store) == flagged_once(6)


def _other_apps(url: str, stop: threading.Event) -> None:
    """Requests of 300 spans that are no LLM call, sent back to back until ``stop``."""
    while not stop.is_set():
        now = time.time_ns()
        spans = [{"traceId": uuid.uuid4().hex, "spanId": uuid.uuid4().hex[:16], "name": "work", "kind": 1,
                  "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1000),
                  "attributes": [{"key": "note", "value": {"stringValue": "x" * 200}}]} for _ in range(300)]
        resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "other-app"}}]}
        body = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "other"}, "spans": spans}]}]}
        httpx.post(url + "/v1/traces", json=body, timeout=60)


def test_the_halves_of_a_call_decoded_by_two_workers_are_counted_once(tmp_path, store, llm):
    # Each span exported alone (as Phoenix's register() does) while other apps keep both decode
    # workers busy: the OpenAI span and LangChain's over it are mostly decoded by different workers.
    from langchain_openai import ChatOpenAI

    collector = LiveCollector(tmp_path / "data", store, decode_workers=2).start()
    stop = threading.Event()
    others = [threading.Thread(target=_other_apps, args=(collector.url, stop)) for _ in range(3)]
    try:
        for other in others:
            other.start()
        model = ChatOpenAI(model=MINI, base_url=llm.url + "/v1", api_key="test", max_retries=0)
        for _ in range(3):
            with app(collector, "langchain", "openinference") as tracer, tracer.start_as_current_span("request"):
                model.batch(prompts("hi", "plan", "bill", "refund", "tax", "fee"))
    finally:
        stop.set()
        for other in others:
            other.join()
    try:
        def stored() -> int:
            (row,) = store.query("SELECT count() AS n FROM otel_traces WHERE ServiceName = 'concurrent-app'"
                                 " AND ResourceAttributes['infersight.project'] = {p:String}", {"p": collector.project})
            return int(row["n"])

        assert wait_for(lambda: stored() >= 39), "the app's spans were not all stored"  # 3 x (request + 6 x 2)
        body = httpx.get(f"{collector.url}/api/v1/summary", params={"since": "1h"}).json()
        assert body["llm_calls"] == llm.truth()["llm_calls"] == 18
    finally:
        collector.stop()


def test_our_decorator_around_an_instrumented_client_is_flagged_once_per_call(collector, llm, store):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai")
    def ask(model: str, messages: list[dict[str, str]]) -> Any:
        return client.chat.completions.create(model=model, messages=messages)

    with app(collector, "openinference", ours=True) as tracer, tracer.start_as_current_span("request"):
        at_once(*(lambda p=p: ask(MINI, [{"role": "user", "content": p}]) for p in prompts("loop", *"bcdefg")))
    # each call: our span and OpenInference's under it (marked by the SDK); and the request span
    wait_for_detections(collector, store, spans=15, rows=4)
    assert summary_when(collector, spans=15) == llm.truth() | {"llm_calls": 7, "llm_errors": 0}
    assert quality_rates(collector, store) == flagged_once(7)


def test_our_decorator_on_raw_http_beside_openllmetry_threads_is_what_was_served(collector, llm):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai")
    def raw(model: str, messages: list[dict[str, str]]) -> dict[str, Any]:
        return httpx.post(f"{llm.url}/v1/chat/completions", json={"model": model, "messages": messages}).json()

    def instrumented(prompt: str) -> Any:
        return client.chat.completions.create(model=MINI, messages=[{"role": "user", "content": prompt}])

    words = prompts(*"abcdefghij")
    with app(collector, "openllmetry", ours=True) as tracer, tracer.start_as_current_span("request"):
        at_once(*(lambda p=p: raw(MINI, [{"role": "user", "content": p}]) for p in words[:5]),
                *(lambda p=p: instrumented(p) for p in words[5:]))
    assert summary_when(collector, spans=11) == llm.truth() | {"llm_calls": 10, "llm_errors": 0}


def stored_spans(store: Any, project: str) -> int:
    (row,) = store.query("SELECT count() AS n FROM otel_traces"
                         " WHERE ResourceAttributes['infersight.project'] = {p:String}", {"p": project})
    return int(row["n"])


def project_summary_when(collector: Any, store: Any, spans: int) -> dict[str, Any]:
    """The summary's call figures once the project's ``spans`` spans are stored, whatever their traces."""
    assert wait_for(lambda: stored_spans(store, collector.project) >= spans), "the spans were not all stored"
    body = httpx.get(f"{collector.url}/api/v1/summary", params={"since": "1h"}).json()
    return {key: body[key] for key in ("llm_calls", "llm_errors", "input_tokens", "output_tokens", "cost_usd")}


@pytest.mark.parametrize("export", ["simple", "batch"])
def test_langchain_over_openai_without_a_request_span_is_what_was_served(collector, llm, store, export):
    """Without a request span, LangChain's span and the client's are the roots of two traces each."""
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MINI, base_url=llm.url + "/v1", api_key="test", max_retries=0)
    # The same prompt twice (told apart by the response id) and two failures of different prompts.
    asked = ["hi", "hi", *prompts("fail", "billing", "refund", "fail", "plan")]
    with app(collector, "langchain", "openinference", export=export):
        answers = model.batch(asked, return_exceptions=True)
    assert sum(isinstance(a, Exception) for a in answers) == 2
    assert project_summary_when(collector, store, spans=14) == llm.truth() | {"llm_calls": 7, "llm_errors": 2}

    traces = httpx.get(f"{collector.url}/api/v1/traces", params={"since": "1h", "limit": 50}).json()["traces"]
    assert sum(t["llm_calls"] for t in traces) == 7
    # LangChain's trace keeps its span, shown as the same call as the client's span, with a link.
    (pair,) = store.query(
        "SELECT TraceId AS trace_id, SpanId AS span_id, SpanAttributes['infersight.same_call_trace'] AS other_trace,"
        " SpanAttributes['infersight.same_call_as'] AS other_span FROM otel_traces"
        " WHERE ResourceAttributes['infersight.project'] = {p:String} AND SpanName = 'ChatOpenAI'"
        " AND StatusCode != 'Error' ORDER BY Timestamp LIMIT 1", {"p": collector.project})
    trace = httpx.get(f"{collector.url}/api/v1/traces/{pair['trace_id']}").json()
    (span,) = [s for s in trace["spans"] if s["span_id"] == pair["span_id"]]
    assert span["same_call"] == {"trace_id": pair["other_trace"], "span_id": pair["other_span"]}
    assert (trace["input_tokens"], trace["cost_usd"]) == (None, None)  # the call is counted in the other trace
    page = httpx.get(f"{collector.url}/traces/{pair['trace_id']}").text
    assert f'href="/traces/{pair["other_trace"]}#span-{pair["other_span"]}"' in page
    other = httpx.get(f"{collector.url}/api/v1/traces/{pair['other_trace']}").json()
    assert [s["name"] for s in other["spans"]] == ["ChatCompletion"] and other["input_tokens"] > 0


def test_langchain_over_openai_without_a_request_span_is_flagged_once_per_call(collector, llm, store):
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MINI, base_url=llm.url + "/v1", api_key="test", max_retries=0)
    with app(collector, "langchain", "openinference"):
        model.batch(prompts("loop", "hi", "plan", "bill", "refund", "tax"))

    def analysed() -> bool:
        (found,) = store.query("SELECT count() AS n FROM detections WHERE project = {p:String}",
                               {"p": collector.project})
        return stored_spans(store, collector.project) >= 12 and int(found["n"]) >= 4

    assert wait_for(analysed), "the inline detectors did not analyse both spans of the looping call"
    assert project_summary_when(collector, store, spans=12)["llm_calls"] == llm.truth()["llm_calls"] == 6
    assert quality_rates(collector, store) == flagged_once(6)


def test_async_langchain_calls_gathered_without_a_request_span_are_what_was_served(collector, llm, store):
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MINI, base_url=llm.url + "/v1", api_key="test", max_retries=0)

    async def gathered() -> list[Any]:
        return await asyncio.gather(*(model.ainvoke(p) for p in prompts("hi", "fail", "plan", "refund")),
                                    return_exceptions=True)

    with app(collector, "langchain", "openinference"):
        answers = asyncio.run(gathered())
    assert sum(isinstance(a, Exception) for a in answers) == 1
    assert project_summary_when(collector, store, spans=8) == llm.truth() | {"llm_calls": 4, "llm_errors": 1}


@pytest.mark.parametrize("client", ["openai-v2", "openllmetry"])
def test_langchain_over_other_clients_without_a_request_span_is_what_was_served(collector, llm, store, client):
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MINI, base_url=llm.url + "/v1", api_key="test", max_retries=0)
    with app(collector, "langchain", client):
        model.batch(prompts("hi", "billing", "refund", "plan"))
    assert project_summary_when(collector, store, spans=8) == llm.truth() | {"llm_calls": 4, "llm_errors": 0}


# ---- the rules of pairing across traces, on hand-built rows -------------------------------------

PROMPT = {"gen_ai.input.messages": '[{"role": "user", "content": "hi"}]'}


def root(trace: str, span: str, scope: str, *, start: int = T0, duration: int = 10**9, project: str = "p",
         service: str = "app", status: str = "Unset", **attrs: str) -> dict[str, Any]:
    """An LLM span that is the root of its own trace, as a call without a request span has."""
    r = llm_row(span, start=start, duration=duration, scope=scope, status=status, **attrs)
    r.update(TraceId=trace, ServiceName=service, ResourceAttributes={semconv.PROJECT: project})
    return r


def marked(*rows: dict[str, Any], recent: _Recent | None = None) -> list[tuple[str, str] | None]:
    mark_same_calls(list(rows), recent or _Recent(16))
    return [(a.get(semconv.SAME_CALL_TRACE, ""), a[semconv.SAME_CALL_AS]) if semconv.SAME_CALL_AS in a else None
            for a in (r["SpanAttributes"] for r in rows)]


INSIDE = {"start": T0 + 10, "duration": 10**9 - 20}  # the client's call, inside the framework's span


def test_across_traces_a_response_id_pairs_the_framework_span_with_the_root_client_span():
    ids = {"gen_ai.response.id": "chatcmpl-1"}
    assert marked(root("t1", "f", "langchain", **ids), root("t2", "c", "openai", **INSIDE, **ids)) \
        == [("t2", "c"), None]


def test_across_traces_either_order_of_arrival_leaves_one_row():
    ids = {"gen_ai.response.id": "chatcmpl-1"}
    recent = _Recent(16)
    client, framework = root("t2", "c", "openai", **INSIDE, **ids), root("t1", "f", "langchain", **ids)
    assert marked(client, recent=recent) == [None]  # the client's span ends, so is exported, first
    assert marked(framework, recent=recent) == [("t2", "c")]
    recent = _Recent(16)
    framework, client = root("t1", "f", "langchain", **ids), root("t2", "c", "openai", **INSIDE, **ids)
    assert marked(framework, recent=recent) == [None]
    assert marked(client, recent=recent) == [("t1", "f")]  # the framework's row is counted already


def test_across_traces_prompt_and_usage_pair_only_together_and_with_the_ends_close():
    assert marked(root("t1", "f", "lc", **PROMPT, **USAGE), root("t2", "c", "oa", **INSIDE, **PROMPT, **USAGE)) \
        == [("t2", "c"), None]
    assert marked(root("t1", "f", "lc", **USAGE), root("t2", "c", "oa", **INSIDE, **USAGE)) == [None, None]
    assert marked(root("t1", "f", "lc", **PROMPT), root("t2", "c", "oa", **INSIDE, **PROMPT)) == [None, None]
    far = {"start": T0 + 10, "duration": 10**8}  # ends 0.9 s before the outer one ...
    assert marked(root("t1", "f", "lc", duration=10 * 10**9, **PROMPT, **USAGE),  # ... of a 10 s span: 9.9 s
                  root("t2", "c", "oa", **far, **PROMPT, **USAGE)) == [None, None]


def test_across_traces_failed_calls_pair_on_the_prompt_and_time_and_model_alone_never():
    assert marked(root("t1", "f", "lc", status="Error", **PROMPT),
                  root("t2", "c", "oa", status="Error", **INSIDE, **PROMPT)) == [("t2", "c"), None]
    assert marked(root("t1", "f", "lc", status="Error"), root("t2", "c", "oa", status="Error", **INSIDE)) \
        == [None, None]
    assert marked(root("t1", "f", "lc", status="Error", **PROMPT), root("t2", "c", "oa", **INSIDE, **PROMPT)) \
        == [None, None]


@pytest.mark.parametrize("differs", [{"project": "q"}, {"service": "other"}, {"scope": "lc"},
                                     {"start": T0 - 10}])
def test_across_traces_another_project_service_instrumentation_or_time_is_another_call(differs):
    ids = {"gen_ai.response.id": "chatcmpl-1"}
    inner = {"scope": "oa", **INSIDE, **differs}
    assert marked(root("t1", "f", "lc", **ids), root("t2", "c", **inner, **ids)) == [None, None]


def test_across_traces_the_inner_span_must_be_a_root_and_the_only_candidate():
    ids = {"gen_ai.response.id": "chatcmpl-1"}
    child = root("t2", "c", "oa", **INSIDE, **ids)
    child["ParentSpanId"] = "request"
    assert marked(root("t1", "f", "lc", **ids), child) == [None, None]
    # two clients answered with one id (a fake server's): which one is the call is a guess
    assert marked(root("t1", "f", "lc", **ids), root("t2", "c", "oa", **INSIDE, **ids),
                  root("t3", "d", "oa", **INSIDE, **ids)) == [None, None, None]


def test_across_traces_the_memory_stays_bounded_when_everyone_sends_one_prompt():
    recent = _Recent(64)
    for i in range(1_000):  # two instrumentations, so the prompt is evidence
        marked(root(f"t{i}", f"s{i}", ("oa", "lc")[i % 2], start=T0 + i * 10**10, **PROMPT, **USAGE), recent=recent)
    assert len(recent._by_evidence) == 1 and all(len(v) <= MAX_COMPARED for v in recent._by_evidence.values())
    assert sum(len(calls) for calls in recent.of_traces(("p", f"t{i}") for i in range(1_000)).values()) == 64


def test_a_prompt_is_hashed_only_once_another_instrumentation_of_its_service_is_seen(monkeypatch):
    hashed: list[str] = []
    real = _nesting.prompt_hash
    monkeypatch.setattr(_nesting, "prompt_hash", lambda text: hashed.append(text) or real(text))
    recent = _Recent(16)
    for i in range(5):  # one instrumentation: no prompt can tell its calls apart from another's
        assert marked(root(f"o{i}", f"s{i}", "oa", start=T0 + 10 + i * 10**10, **PROMPT, **USAGE),
                      recent=recent) == [None]
    assert hashed == []
    client = root("t2", "c", "oa", **INSIDE, **PROMPT, **USAGE)
    assert marked(client, recent=recent) == [None]
    # a framework's span arrives in a later request: the client's prompt, kept as it came, pairs it
    assert marked(root("t1", "f", "lc", **PROMPT, **USAGE), recent=recent) == [("t2", "c")]
    assert 0 < len(hashed) <= 7


def test_past_the_budget_of_kept_prompts_a_prompt_is_hashed_at_once_and_still_pairs(monkeypatch):
    monkeypatch.setattr(_nesting, "REMEMBERED_PROMPT_CHARS", 10)
    recent = _Recent(16)
    client = root("t2", "c", "oa", **INSIDE, **PROMPT, **USAGE)
    assert marked(client, recent=recent) == [None]
    (call,) = recent.of_traces([("p", "t2")])[("p", "t2")]
    assert call.hashed and call.messages == "" and recent._kept_chars == 0
    assert marked(root("t1", "f", "lc", **PROMPT, **USAGE), recent=recent) == [("t2", "c")]


def test_the_prompts_kept_unhashed_leave_with_the_spans_they_belong_to():
    recent = _Recent(16)
    for i in range(100):
        marked(root(f"t{i}", f"s{i}", "oa", start=T0 + i * 10**10, **PROMPT), recent=recent)
    assert recent._kept_chars == 16 * len(PROMPT["gen_ai.input.messages"])


def test_a_trace_id_in_another_project_is_another_trace():
    # Each project's trace ids are its own: a span of project b is never the repeat of project a's
    # span, whatever ids they share (the pairing memory once keyed traces by their id alone).
    recent = _Recent(16)
    assert marked(root("t1", "s1", "openai", project="a"), recent=recent) == [None]
    elsewhere = root("t1", "s2", "openai", project="b", **INSIDE)
    elsewhere["ParentSpanId"] = "s1"
    assert marked(elsewhere, recent=recent) == [None]
    here = root("t1", "s3", "openai", project="a", **INSIDE)
    here["ParentSpanId"] = "s1"
    assert marked(here, recent=recent) == [("", "s1")]  # in project a it is the call s1 counted already
