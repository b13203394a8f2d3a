"""``@traced_llm``, ``@traced_retrieval``, ``@traced_rerank`` and ``span``: the public decorators.

The call shape is decided once, at decoration time: sync function, coroutine function, sync
generator or async generator. A sync or async function that returns a provider stream (an
iterator such as ``openai.Stream``) gets it back wrapped, so the span lasts until the stream
ends. All shapes drive the same :class:`~._lifecycle.Call`.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Mapping
from typing import Any, ParamSpec, Protocol, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from . import _setup, semconv
from ._guard import plain_text
from ._inputs import request_of_result
from ._lifecycle import Call, Spec, begin
from ._results import llm_error, llm_result, llm_stream, rerank_result, retrieval_result
from ._stream_guard import loop_checker
from ._streams import StreamStats, TracedAsyncStream, TracedStream, is_async_stream, is_sync_stream

P = ParamSpec("P")
R = TypeVar("R")


class Decorator(Protocol):
    """What ``@traced_llm(...)`` with options returns: it keeps the decorated function's signature.

    A protocol, not a ``Callable`` alias, so the signature is bound when the decorator is applied
    (a type checker would otherwise bind it at the options call, where nothing is known).
    """

    def __call__(self, func: Callable[P, R], /) -> Callable[P, R]: ...

# Arguments the result hooks read, also when they are passed positionally.
_READ_ARGS = ("model", "messages", "input", "prompt", "system", "queued_at", "temperature",
              "max_tokens", "top_p", "top_k", "k", "documents", "candidates", "docs", "response_format",
              "query", "question", "q")


def _positional_picks(func: Callable[..., Any]) -> tuple[tuple[int, str], ...]:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return ()
    return tuple(
        (i, p.name) for i, p in enumerate(params)
        if p.name in _READ_ARGS and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )


def _parameters(func: Callable[..., Any]) -> tuple[tuple[str, ...], str | None]:
    """The names of ``func``'s positional parameters in order, and of its ``*args`` (``args`` when
    the signature cannot be read), for naming the arguments that content capture records."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return (), "args"
    positional = tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    rest = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    return positional, rest


def _arguments(picks: tuple[tuple[int, str], ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Mapping[str, Any]:
    if not picks or not args:
        return kwargs
    view = dict(kwargs)
    for index, name in picks:
        if index < len(args):
            view[name] = args[index]
    return view


def _observe(call: Call | None, result: Any, *, awaited: bool = False) -> Any:
    """End the call now, or hand back the result wrapped when it is a stream to observe.

    What a coroutine returned is checked for an async stream first: proxies (wrapt, used by
    other instrumentations) expose both ``__next__`` and ``__anext__`` whatever they wrap.
    """
    if call is None:
        return result
    call.read_queue_wait(result)
    if call.spec.on_stream is not None:
        if awaited and is_async_stream(result):
            return _wrap_stream(call, result, TracedAsyncStream)
        if is_sync_stream(result):
            return _wrap_stream(call, result, TracedStream)
        if is_async_stream(result):
            return _wrap_stream(call, result, TracedAsyncStream)
    call.end_result(result)
    return result


def _wrap_stream(call: Call, stream: Any, kind: type) -> Any:
    import weakref

    call.detach()
    if _setup.options().capture_content:  # the stream keeps its request: the prompt as sent
        call.request = request_of_result(stream)
    stats = StreamStats(call.start_ns, keep_text=True, guard=call.spec.guard)
    traced = kind(stream, stats, lambda error, aborted: call.end_stream(stats, error, aborted))
    # Abandoned without being closed: end the span when the wrapper is collected.
    weakref.finalize(traced, call.end_stream, stats, None, True)
    return traced


def _wrap(spec: Spec, func: Callable[P, R]) -> Callable[P, R]:
    picks = _positional_picks(func)
    positional, rest = _parameters(func)
    spec = dataclasses.replace(spec, positional=positional, rest=rest)

    if inspect.isasyncgenfunction(func):

        @functools.wraps(func)
        async def async_gen_wrapper(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[Any]:
            call = begin(spec, _arguments(picks, args, kwargs), make_current=False, args=args)
            inner = func(*args, **kwargs)
            if call is None:
                async for chunk in inner:
                    yield chunk
                return
            stats = StreamStats(call.start_ns, keep_text=True, guard=spec.guard)
            span_context = trace.set_span_in_context(call.span)
            try:
                while True:
                    token = otel_context.attach(span_context)
                    try:
                        chunk = await inner.__anext__()
                    finally:
                        otel_context.detach(token)
                    stats.observe(chunk)
                    yield chunk
                    if stats.loop_unit is not None:  # the stream guard found a loop: stop paying
                        call.end_stream(stats, None, False)
                        await inner.aclose()
                        return
            except StopAsyncIteration:
                call.end_stream(stats, None, False)
            except GeneratorExit:
                call.end_stream(stats, None, True)
                await inner.aclose()
                raise
            except BaseException as exc:
                call.end_stream(stats, exc, False)
                raise

        return cast("Callable[P, R]", async_gen_wrapper)

    if inspect.isgeneratorfunction(func):

        @functools.wraps(func)
        def gen_wrapper(*args: P.args, **kwargs: P.kwargs) -> Generator[Any, Any, Any]:
            call = begin(spec, _arguments(picks, args, kwargs), args=args)
            if call is None:
                return (yield from func(*args, **kwargs))
            # Each step of the inner generator runs in a context where the span is current, so
            # spans it starts are children. Context.run is one C call per chunk, about half the
            # cost of attaching and detaching the OTel context around every step.
            step_context = contextvars.copy_context()
            call.detach()
            inner = step_context.run(func, *args, **kwargs)
            stats = StreamStats(call.start_ns, keep_text=True, guard=spec.guard)
            try:
                while True:
                    chunk = step_context.run(next, inner)
                    stats.observe(chunk)
                    yield chunk
                    if stats.loop_unit is not None:  # the stream guard found a loop: stop paying
                        call.end_stream(stats, None, False)
                        inner.close()
                        return None
            except StopIteration as stop:
                call.end_stream(stats, None, False)
                return stop.value
            except GeneratorExit:
                call.end_stream(stats, None, True)
                inner.close()
                raise
            except BaseException as exc:
                call.end_stream(stats, exc, False)
                raise

        return cast("Callable[P, R]", gen_wrapper)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
            call = begin(spec, _arguments(picks, args, kwargs), args=args)
            try:
                result = await cast("Callable[P, Awaitable[Any]]", func)(*args, **kwargs)
            except BaseException as exc:
                if call is not None:
                    call.end_error(exc)
                raise
            return _observe(call, result, awaited=True)

        return cast("Callable[P, R]", async_wrapper)

    @functools.wraps(func)
    def sync_wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        call = begin(spec, _arguments(picks, args, kwargs), args=args)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            if call is not None:
                call.end_error(exc)
            raise
        # a returned provider stream comes back wrapped: a proxy with the stream's interface
        return cast(R, _observe(call, result))

    return sync_wrapper


def _decorator(spec: Spec, func: Callable[P, R] | None) -> Callable[..., Any]:
    # typed by the public overloads: the function itself, or a Decorator keeping its signature
    if func is not None:
        return _wrap(spec, func)

    def decorate(f: Callable[P, R]) -> Callable[P, R]:
        return _wrap(spec, f)

    return decorate


@overload
def traced_llm(func: Callable[P, R], /) -> Callable[P, R]: ...
@overload
def traced_llm(
    *,
    provider: str | None = ...,
    model: str | None = ...,
    operation: str = ...,
    queue_wait_from: Callable[[Any], float | None] | None = ...,
    expect_json: bool = ...,
    stream_guard: bool = ...,
) -> Decorator: ...
def traced_llm(
    func: Callable[P, R] | None = None,
    /,
    *,
    provider: str | None = None,
    model: str | None = None,
    operation: str = "chat",
    queue_wait_from: Callable[[Any], float | None] | None = None,
    expect_json: bool = False,
    stream_guard: bool = False,
) -> Callable[..., Any]:
    """Trace an LLM call: one CLIENT span with GenAI attributes, usage, cost and latency anatomy.

    Works on sync and async functions, sync and async generators, and functions returning a
    provider stream; a stream's span ends when it is exhausted, closed or abandoned (then
    ``infersight.stream.aborted=true``). Arguments named ``model``, ``messages``,
    ``queued_at`` (a ``time.time()`` from when the request was queued) and the like are read,
    never removed. ``queue_wait_from(result)`` may return a provider-reported queue time in
    seconds (e.g. from an ``x-queue-time`` header); it is then split out of TTFT.
    ``expect_json=True`` (or a JSON ``response_format=`` argument) marks the answer as JSON
    (``gen_ai.output.type``), so the collector checks it for broken JSON.
    ``stream_guard=True`` checks a streamed answer for a repetition loop every 16 chunks and
    ends the stream when it finds one (``infersight.stream.guard_stopped``), so a looping model
    stops generating tokens the app pays for.
    Exceptions are recorded, classified (transient/logic) and re-raised unchanged.
    """
    spec = Spec(operation or "chat", SpanKind.CLIENT, llm_result, llm_stream, provider, model,
                queue_wait_from=queue_wait_from, expect_json=expect_json,
                guard=loop_checker() if stream_guard else None, on_error=llm_error)
    return _decorator(spec, func)


@overload
def traced_retrieval(func: Callable[P, R], /) -> Callable[P, R]: ...
@overload
def traced_retrieval(*, data_source: str | None = ..., top_k: int | None = ...) -> Decorator: ...
def traced_retrieval(
    func: Callable[P, R] | None = None,
    /,
    *,
    data_source: str | None = None,
    top_k: int | None = None,
) -> Callable[..., Any]:
    """Trace a retrieval step: data source, ``top_k`` (or the call's ``top_k``/``k``), hits returned
    and their score min/mean/max (from ``score`` fields or ``(document, score)`` pairs)."""
    attributes: dict[str, Any] = {}
    if data_source:
        attributes[semconv.DATA_SOURCE] = data_source
    if top_k is not None:
        attributes[semconv.TOP_K] = top_k
    return _decorator(Spec("retrieval", SpanKind.CLIENT, retrieval_result, attributes=attributes), func)


@overload
def traced_rerank(func: Callable[P, R], /) -> Callable[P, R]: ...
@overload
def traced_rerank(*, model: str | None = ...) -> Decorator: ...
def traced_rerank(
    func: Callable[P, R] | None = None,
    /,
    *,
    model: str | None = None,
) -> Callable[..., Any]:
    """Trace a rerank step: model, candidates in (the call's ``documents``) and out, time per candidate."""
    return _decorator(Spec("rerank", SpanKind.INTERNAL, rerank_result, model=model), func)


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[trace.Span]:
    """A plain span for any other step (tool call, guardrail, parsing), with the current tenant.

    Exceptions are recorded and re-raised; attributes may be set on the yielded span.
    """
    from ._attribution import current

    tracer = _setup.tracer() or trace.get_tracer("infersight.sdk")
    attrs = {**current().attributes(), **{k: _attribute(v) for k, v in attributes.items()}}
    with tracer.start_as_current_span(plain_text(name, "span name") or "span", attributes=attrs) as s:
        yield s


_PLAIN = (str, bool, int, float)


def _attribute(value: Any) -> Any:
    """A value OpenTelemetry stores as given, else its text (an object whose type OpenTelemetry
    inspects could raise in there, inside the app's ``with`` statement)."""
    if type(value) in _PLAIN:
        return value
    if type(value) in (list, tuple) and all(type(v) in _PLAIN for v in value):
        return value
    return plain_text(value, "span attribute")
