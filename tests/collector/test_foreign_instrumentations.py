"""Spans of other instrumentations are as complete as the SDK's own, and one model call seen by two
instrumentations is one row: the real packages instrument the real openai client (and LangChain)
against the local OpenAI-compatible server, exporting to a real collector."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from genai_prices import Usage, calc_price
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from infersight.collector._server import CollectorProcess
from infersight.demo import FakeLLM
from tests.conftest import LEAN_COLLECTOR, free_port, wait_for

MODEL = "gpt-4o-mini"


def price(i: int, o: int) -> float:
    return float(calc_price(Usage(input_tokens=i, output_tokens=o), MODEL, provider_id="openai").total_price)


@pytest.fixture(scope="module")
def collector(tmp_path_factory) -> Iterator[CollectorProcess]:
    # How spans map onto columns is the point, the same code in a decode worker or the server
    # process: decoding in the server process spares the module a worker to spawn and stop.
    process = CollectorProcess(tmp_path_factory.mktemp("foreign") / "data", free_port(),
                               extra_args=("--no-auth", *LEAN_COLLECTOR))
    yield process.start()
    process.stop()


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM(latency_s=(0, 0)).start()
    yield server
    server.stop()


def instrumentors(*names: str) -> list[Any]:
    out: list[Any] = []
    for name in names:
        if name == "openai-v2":
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as V2
            out.append(V2())
        elif name == "openinference":
            from openinference.instrumentation.openai import OpenAIInstrumentor as OI
            out.append(OI())
        elif name == "openllmetry":
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor as LL
            out.append(LL())
        elif name == "langchain":
            from openinference.instrumentation.langchain import LangChainInstrumentor
            out.append(LangChainInstrumentor())
    return out


@contextlib.contextmanager
def openai_restored() -> Iterator[None]:
    """The openai client's classes as they were before, after the instrumentors are gone.

    OpenLLMetry's ``uninstrument()`` leaves some of the client's methods wrapped: its spans, from
    a provider already shut down, then sit between the spans of later tests' instrumentations and
    break their parent-child chains (a later test saw a pair as two calls only after it ran).
    """
    import importlib
    import inspect
    import pkgutil

    import openai.resources

    classes = []
    for info in pkgutil.walk_packages(openai.resources.__path__, "openai.resources."):
        module = importlib.import_module(info.name)
        classes += [cls for _, cls in inspect.getmembers(module, inspect.isclass) if cls.__module__ == info.name]
    saved = [(cls, dict(vars(cls))) for cls in classes]
    try:
        yield
    finally:
        for cls, attributes in saved:
            for name, value in attributes.items():
                if vars(cls).get(name) is not value:
                    setattr(cls, name, value)


@contextlib.contextmanager
def app(collector: CollectorProcess, service: str, *names: str) -> Iterator[Any]:
    """An instrumented app exporting every span alone (SimpleSpanProcessor, as Phoenix's register()
    does); yields its tracer, for the request span an app opens."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector.url + "/v1/traces")))
    active = instrumentors(*names)
    with openai_restored():
        for inst in active:
            inst.instrument(tracer_provider=provider)
        try:
            yield provider.get_tracer("app")
        finally:
            for inst in reversed(active):
                inst.uninstrument()
            provider.shutdown()


def chat(url: str, mode: str) -> Any:
    client = openai.OpenAI(base_url=url + "/v1", api_key="test", max_retries=0)
    kwargs: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "hi there"}]}
    if mode == "stream":
        kwargs["stream"] = True
    elif mode == "stream_usage":
        kwargs.update(stream=True, stream_options={"include_usage": True})
    response = client.chat.completions.create(**kwargs)
    if mode.startswith("stream"):
        chunks = list(response)
        return next((c.usage for c in chunks if c.usage), None)
    return response.usage


def chat_spans(collector: CollectorProcess, trace_id: str, count: int) -> list[dict[str, Any]]:
    """The trace view's model-call spans of one trace, once ``count`` of them are stored."""
    def check() -> list[dict[str, Any]]:
        response = httpx.get(f"{collector.url}/api/v1/traces/{trace_id}")
        spans = [s for s in response.json()["spans"] if s["operation"] == "chat"] if response.status_code == 200 else []
        return spans if len(spans) >= count else []

    return wait_for(check) or []  # type: ignore[return-value]


def rows_of(collector: CollectorProcess, trace_ids: set[str], count: int) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]]:
        spans = httpx.get(f"{collector.url}/api/v1/spans", params={"limit": 500}).json()["spans"]
        found = [s for s in spans if s["trace_id"] in trace_ids]
        return found if len(found) >= count else []

    return wait_for(check) or []  # type: ignore[return-value]


@pytest.mark.parametrize("package", ["openai-v2", "openinference", "openllmetry"])
def test_a_foreign_call_has_usage_cost_ttft_finish_and_error_type(collector, llm, package):
    failing = FakeLLM(latency_s=(0, 0), server_error_rate=1.0).start()
    traces: dict[str, str] = {}
    usage: dict[str, Any] = {}
    with app(collector, f"{package}-app", package) as tracer:
        for mode in ("plain", "stream_usage", "stream", "error"):
            with tracer.start_as_current_span(f"request {mode}") as root:
                traces[mode] = format(root.get_span_context().trace_id, "032x")
                if mode == "error":
                    with pytest.raises(openai.InternalServerError):
                        chat(failing.url, "plain")
                else:
                    usage[mode] = chat(llm.url, mode)
    failing.stop()
    rows = rows_of(collector, set(traces.values()), 4)
    by_mode = {mode: next(r for r in rows if r["trace_id"] == trace_id) for mode, trace_id in traces.items()}
    assert len(rows) == 4  # the request spans are no GenAI work: one row per call

    for mode in ("plain", "stream_usage"):
        row, used = by_mode[mode], usage[mode]
        assert (row["kind"], row["model"], row["provider"]) == ("llm", MODEL, "openai")
        assert (row["input_tokens"], row["output_tokens"]) == (used.prompt_tokens, used.completion_tokens)
        assert row["cost_usd"] == pytest.approx(price(used.prompt_tokens, used.completion_tokens))
    assert by_mode["plain"]["finish_reason"] == "stop"
    assert by_mode["plain"]["ttft_s"] is None  # not streamed: no first chunk
    if package != "openai-v2":  # openai-v2 (2.x) records neither on a stream span: nothing to read
        for mode in ("stream_usage", "stream"):
            row = by_mode[mode]
            assert row["finish_reason"] == "stop"
            assert 0 < row["ttft_s"] <= row["duration_s"]

    unknown = by_mode["stream"]  # a stream without usage: unknown, never 0, and never priced
    assert (unknown["input_tokens"], unknown["output_tokens"], unknown["cost_usd"]) == (None, None, None)

    failed = by_mode["error"]
    assert (failed["status"], failed["error_type"]) == ("error", "InternalServerError")


def test_unknown_usage_is_counted_apart_and_unpriced(collector, llm):
    before = httpx.get(f"{collector.url}/api/v1/summary").json()
    with app(collector, "no-usage", "openinference") as tracer, tracer.start_as_current_span("request") as root:
        chat(llm.url, "stream")
    rows_of(collector, {format(root.get_span_context().trace_id, "032x")}, 1)
    after = httpx.get(f"{collector.url}/api/v1/summary").json()
    assert after["llm_calls"] - before["llm_calls"] == 1
    assert after["unknown_usage_calls"] - before["unknown_usage_calls"] == 1
    assert after["unpriced_calls"] - before["unpriced_calls"] == 1
    assert (after["input_tokens"], after["cost_usd"]) == (before["input_tokens"], pytest.approx(before["cost_usd"]))


def test_openinference_user_session_and_output_reach_every_reader(collector):
    from openinference.instrumentation import using_attributes

    looping = FakeLLM(latency_s=(0, 0), loop_rate=1.0).start()
    with (
        app(collector, "openinference-loop", "openinference") as tracer,
        tracer.start_as_current_span("request") as root,
        using_attributes(user_id="u-7", session_id="s-9"),
    ):
        chat(looping.url, "plain")
    looping.stop()
    trace_id = format(root.get_span_context().trace_id, "032x")
    (row,) = rows_of(collector, {trace_id}, 1)
    assert (row["user_id"], row["session_id"], row["finish_reason"]) == ("u-7", "s-9", "length")

    def repetition() -> list[dict[str, Any]]:
        found = httpx.get(f"{collector.url}/api/v1/detections").json()["detections"]
        return [d for d in found if d["trace_id"] == trace_id and d["detector"].startswith("repetition")]

    assert wait_for(repetition), "the inline detectors never saw the OpenInference output"

    trace = httpx.get(f"{collector.url}/api/v1/traces/{trace_id}").json()
    (span,) = [s for s in trace["spans"] if s["operation"] == "chat"]
    assert (span["model"], span["input_tokens"], span["output_tokens"]) == (MODEL, row["input_tokens"],
                                                                            row["output_tokens"])
    assert span["output_messages"], "the trace view shows the answer"


@pytest.mark.parametrize("mode", ["plain", "stream"])
def test_langchain_over_openai_is_one_call(collector, llm, mode):
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MODEL, base_url=llm.url + "/v1", api_key="test", max_retries=0,
                       streaming=mode == "stream", stream_usage=True)
    with app(collector, f"langchain-{mode}", "langchain", "openinference") as tracer, \
            tracer.start_as_current_span("request") as root:
        answer = "".join(str(c.content) for c in model.stream("hi there")) if mode == "stream" \
            else model.invoke("hi there").content
    assert answer
    trace_id = format(root.get_span_context().trace_id, "032x")
    llm_spans = chat_spans(collector, trace_id, 2)
    assert len(llm_spans) == 2  # both instrumentations' spans are kept in otel_traces
    rows = rows_of(collector, {trace_id}, 1)
    assert len(rows) == 1, "one model call, one row"
    (row,) = rows
    inner = next(s for s in llm_spans if s["name"] == "ChatCompletion")
    assert row["span_id"] == inner["span_id"]  # the client's span: its timings are the call's own
    assert row["input_tokens"] > 0 and row["cost_usd"] == pytest.approx(price(row["input_tokens"],
                                                                               row["output_tokens"]))
    if mode == "stream":
        assert row["ttft_s"] is not None


def test_openinference_over_genai_semconv_is_one_call(collector, llm):
    with app(collector, "two-clients", "openai-v2", "openinference") as tracer, \
            tracer.start_as_current_span("request") as root:
        used = chat(llm.url, "plain")
    trace_id = format(root.get_span_context().trace_id, "032x")
    assert len(chat_spans(collector, trace_id, 2)) == 2
    rows = rows_of(collector, {trace_id}, 1)
    assert len(rows) == 1
    assert (rows[0]["input_tokens"], rows[0]["output_tokens"]) == (used.prompt_tokens, used.completion_tokens)
