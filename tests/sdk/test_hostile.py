"""Never raises: hostile objects through every call shape behave exactly as without the SDK."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from infersight import sdk

DUNDERS = ("__getattr__", "__iter__", "__len__", "__repr__", "__eq__", "__bool__", "__str__", "__hash__",
           "__class__", "__getattribute__", "__format__", "__index__", "__float__", "__int__")
SHAPES = ("sync", "async", "generator", "async_generator", "returned_stream")


class Boom(Exception):
    pass


def hostile(raising: frozenset[str], error: type[BaseException]) -> Any:
    """An object whose chosen dunders raise ``error`` (lazy proxies, strict mocks)."""

    def raiser(*args: Any, **kwargs: Any) -> Any:
        raise error("hostile")

    namespace: dict[str, Any] = {name: raiser for name in raising}
    if "__class__" in raising:  # isinstance() reads it when the type alone does not answer
        namespace["__class__"] = property(raiser)
    if "__eq__" in raising:
        namespace.setdefault("__hash__", object.__hash__)
    return type("Hostile", (), namespace)()


class HostileStream:
    """A returned stream (it has __next__) whose other dunders and attributes raise."""

    def __init__(self, items: list[Any], fail_at: int | None) -> None:
        self._items = iter(items)
        self._n = 0
        self._fail_at = fail_at

    def __next__(self) -> Any:
        if self._n == self._fail_at:
            raise Boom("mid-stream")
        self._n += 1
        return next(self._items)

    def __iter__(self) -> Any:
        return self

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"strict mock: {name}")


def run_coroutine(coro: Any) -> Any:
    """``asyncio.run`` without its SIGINT handler: restoring that handler formats the task, and with
    it a result whose ``__repr__`` and ``__class__`` raise; CPython then raises and leaves the
    handler installed, failing every later ``asyncio.run`` in the process (with or without the SDK)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def run(shape: str, make: Any, decorate: bool) -> tuple[str, Any]:
    """What the caller sees: ("ok", result or chunks) or ("raised", the exception)."""
    if shape == "sync":
        def f(messages: Any = None, model: Any = None) -> Any:
            return make()
    elif shape == "async":
        async def f(messages: Any = None, model: Any = None) -> Any:
            return make()
    elif shape == "generator":
        def f(messages: Any = None, model: Any = None) -> Any:
            yield from make()
    elif shape == "async_generator":
        async def f(messages: Any = None, model: Any = None) -> Any:
            for item in make():
                yield item
    else:
        def f(messages: Any = None, model: Any = None) -> Any:
            return make()
    g = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(f) if decorate else f
    args = {"messages": make.messages, "model": make.model}
    try:
        if shape == "sync":
            return "ok", g(**args)
        if shape == "async":
            return "ok", run_coroutine(g(**args))
        if shape == "async_generator":
            async def consume() -> list[Any]:
                return [x async for x in g(**args)]
            return "ok", run_coroutine(consume())
        return "ok", list(g(**args))
    except BaseException as exc:  # noqa: BLE001 - comparing what the caller would see
        return "raised", exc


objects = st.builds(
    hostile,
    st.frozensets(st.sampled_from(DUNDERS), min_size=1),
    st.sampled_from((Boom, RuntimeError, ValueError, KeyError)),
)


@settings(max_examples=20, deadline=None)
@given(shape=st.sampled_from(SHAPES), items=st.lists(objects, max_size=3), result=objects,
       messages=st.one_of(objects, st.lists(objects, max_size=2)), model=st.one_of(objects, st.text(max_size=5)),
       fail_at=st.one_of(st.none(), st.integers(0, 3)), raise_error=st.booleans(), deferred=st.booleans())
def test_hostile_objects_behave_as_without_the_sdk(shape, items, result, messages, model, fail_at, raise_error,
                                                    deferred):
    error = Boom("from the app")

    def make() -> Any:
        if raise_error and shape in ("sync", "async"):
            raise error
        if shape in ("sync", "async"):
            return result
        if shape == "returned_stream":
            return HostileStream(items, fail_at)
        return HostileStream(items, fail_at)  # generators iterate it

    make.messages = messages  # type: ignore[attr-defined]
    make.model = model  # type: ignore[attr-defined]
    exporter = InMemorySpanExporter()
    if deferred:  # the SDK's own pipeline: the result is read on the export thread
        sdk.init(service_name="hostile", span_exporter=exporter)
    else:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        sdk.init(service_name="hostile", tracer_provider=provider, export=False)
    try:
        plain = run(shape, make, decorate=False)
        traced = run(shape, make, decorate=True)
        sdk.force_flush()
    finally:
        sdk.shutdown()
    assert len(exporter.get_finished_spans()) == 1  # the span still ends, whatever the objects did
    assert plain[0] == traced[0]
    if plain[0] == "raised":
        assert type(plain[1]) is type(traced[1])
        if shape in ("sync", "async"):
            assert traced[1] is error
    elif type(plain[1]) is list:
        assert len(plain[1]) == len(traced[1]) and all(a is b for a, b in zip(plain[1], traced[1], strict=True))
    else:
        assert traced[1] is plain[1]


class ClassRaises:
    """Its ``__class__`` raises: ``isinstance`` reads it for any type but its own (a broken proxy)."""

    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        raise Boom("__class__")

    def __repr__(self) -> str:
        raise Boom("__repr__")


def test_a_generator_yielding_an_object_whose_class_raises_reaches_the_app_unchanged(spans):
    chunk = ClassRaises()

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def stream(messages: Any = None) -> Any:
        yield "Hello"
        yield chunk

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    async def astream(messages: Any = None) -> Any:
        yield chunk

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def returns_stream(messages: Any = None) -> Any:
        return iter([chunk])

    async def consume() -> list[Any]:
        return [x async for x in astream(messages=[chunk])]

    got = list(stream(messages=chunk))
    assert got[0] == "Hello" and got[1] is chunk
    assert run_coroutine(consume())[0] is chunk
    (only,) = list(returns_stream(messages=chunk))
    assert only is chunk
    assert len(spans.get_finished_spans()) == 3


def test_context_helpers_take_hostile_values_without_raising(spans):
    hostile_value = ClassRaises()
    failures = sdk.failure_count("internal")
    with (
        sdk.request(hostile_value, route=hostile_value, user_id=hostile_value, tags={"k": hostile_value}),
        sdk.tenant("acme", tags=hostile_value),  # type: ignore[arg-type]
        sdk.span("step", detail=hostile_value, count=3),
    ):
        sdk.mark_started(hostile_value)  # type: ignore[arg-type]
    names = sorted(s.name for s in spans.get_finished_spans())
    assert names == ["request", "step"]
    assert sdk.failure_count("internal") > failures  # swallowed, and counted
