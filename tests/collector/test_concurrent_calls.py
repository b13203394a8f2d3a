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
from infersight.dashboards._report import weekly_data
from infersight.demo import FakeLLM
from tests.collector.test_foreign_instrumentations import instrumentors, openai_restored
from tests.conftest import wait_for

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
