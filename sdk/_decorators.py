"""``@traced_llm``, ``@traced_retrieval``, ``@traced_rerank``: one span lifecycle for every call shape.

The call shape (sync or async) is decided once, at decoration time. Every wrapper drives the
same three steps, :func:`_begin`, :func:`_end_ok`, :func:`_end_error`, each of which swallows and
counts the SDK's own failures, so the wrapped function's result or exception reaches the caller
unchanged whatever happens inside the SDK.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from . import _attrs, _setup
from ._attribution import current as current_attribution
from ._guard import record_failure
from ._pricing import lookup_rates
from ._usage import extract_usage

F = TypeVar("F", bound=Callable[..., Any])
_ResultHook = Callable[[trace.Span, "_Spec", Any, Mapping[str, Any]], None]


@dataclass(frozen=True, slots=True)
class _Spec:
    """What a decorator was told at decoration time."""

    operation: str
    span_kind: SpanKind
    on_result: _ResultHook
    provider: str | None = None
    model: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    def span_name(self, model: str | None) -> str:
        return f"{self.operation} {model}" if model else self.operation


def _begin(spec: _Spec, kwargs: Mapping[str, Any]) -> tuple[trace.Span, object] | None:
    try:
        model = spec.model
        if model is None and isinstance(kwargs.get("model"), str):
            model = kwargs["model"]
        attributes = dict(spec.attributes)
        attributes[_attrs.OPERATION] = spec.operation
        if spec.provider:
            attributes[_attrs.PROVIDER] = spec.provider
        if model:
            attributes[_attrs.REQUEST_MODEL] = model
        attributes.update(current_attribution().attributes())
        span = _setup.tracer().start_span(
            spec.span_name(model), kind=spec.span_kind, attributes=attributes
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        return span, token
    except Exception as exc:
        record_failure("span start", exc)
        return None


def _detach(token: object) -> None:
    try:
        otel_context.detach(token)  # type: ignore[arg-type]
    except Exception as exc:
        record_failure("context detach", exc)


def _end_ok(
    started: tuple[trace.Span, object] | None, spec: _Spec, result: Any, kwargs: Mapping[str, Any]
) -> None:
    if started is None:
        return
    span, token = started
    _detach(token)
    try:
        if span.is_recording():
            spec.on_result(span, spec, result, kwargs)
    except Exception as exc:
        record_failure("result attributes", exc)
    finally:
        span.end()


def _end_error(started: tuple[trace.Span, object] | None, exc: BaseException) -> None:
    if started is None:
        return
    span, token = started
    _detach(token)
    try:
        if span.is_recording():
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:512]))
            span.set_attribute(_attrs.ERROR_TYPE, type(exc).__qualname__)
    except Exception as inner:
        record_failure("error attributes", inner)
    finally:
        span.end()


def _wrap(spec: _Spec, func: F) -> F:
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            started = _begin(spec, kwargs)
            try:
                result = await func(*args, **kwargs)
            except BaseException as exc:
                _end_error(started, exc)
                raise
            _end_ok(started, spec, result, kwargs)
            return result

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(func)
    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        started = _begin(spec, kwargs)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            _end_error(started, exc)
            raise
        _end_ok(started, spec, result, kwargs)
        return result

    return sync_wrapper  # type: ignore[return-value]


def _llm_result(span: trace.Span, spec: _Spec, result: Any, kwargs: Mapping[str, Any]) -> None:
    usage = extract_usage(result)
    request_model = spec.model or kwargs.get("model")
    if usage.response_model:
        span.set_attribute(_attrs.RESPONSE_MODEL, usage.response_model)
    if usage.finish_reasons:
        span.set_attribute(_attrs.FINISH_REASONS, list(usage.finish_reasons))
    if usage.input_tokens is not None:
        span.set_attribute(_attrs.INPUT_TOKENS, usage.input_tokens)
    if usage.output_tokens is not None:
        span.set_attribute(_attrs.OUTPUT_TOKENS, usage.output_tokens)
    if usage.cache_read_tokens:
        span.set_attribute(_attrs.CACHE_READ_TOKENS, usage.cache_read_tokens)
    if usage.cache_creation_tokens:
        span.set_attribute(_attrs.CACHE_CREATION_TOKENS, usage.cache_creation_tokens)
    if usage.reasoning_tokens:
        span.set_attribute(_attrs.REASONING_TOKENS, usage.reasoning_tokens)
    if usage.input_tokens is None and usage.output_tokens is None:
        return
    rates = None
    for model in (usage.response_model, request_model):
        if isinstance(model, str) and model:
            rates = _setup.price_override(model) or lookup_rates(spec.provider, model)
            if rates is not None:
                break
    if rates is None:
        span.set_attribute(_attrs.COST_UNKNOWN_MODEL, True)
        return
    cost = rates.cost_usd(
        usage.input_tokens or 0,
        usage.output_tokens or 0,
        usage.cache_read_tokens,
        usage.cache_creation_tokens,
    )
    span.set_attribute(_attrs.COST_USD, cost)
    span.set_attribute(_attrs.COST_SOURCE, rates.source)


def _retrieval_result(span: trace.Span, spec: _Spec, result: Any, kwargs: Mapping[str, Any]) -> None:
    top_k = kwargs.get("top_k", kwargs.get("k"))
    if isinstance(top_k, int) and _attrs.TOP_K not in spec.attributes:
        span.set_attribute(_attrs.TOP_K, top_k)
    if isinstance(result, (list, tuple)):
        span.set_attribute(_attrs.RETRIEVAL_RETURNED, len(result))


def _rerank_result(span: trace.Span, spec: _Spec, result: Any, kwargs: Mapping[str, Any]) -> None:
    for name in ("documents", "candidates", "docs"):
        candidates = kwargs.get(name)
        if isinstance(candidates, (list, tuple)):
            span.set_attribute(_attrs.RERANK_CANDIDATES, len(candidates))
            break
    if isinstance(result, (list, tuple)):
        span.set_attribute(_attrs.RERANK_RETURNED, len(result))


def _decorator(spec: _Spec, func: Callable[..., Any] | None) -> Any:
    if func is not None:
        return _wrap(spec, func)
    return lambda f: _wrap(spec, f)


@overload
def traced_llm(func: F, /) -> F: ...
@overload
def traced_llm(
    *, provider: str | None = ..., model: str | None = ..., operation: str = ...
) -> Callable[[F], F]: ...
def traced_llm(
    func: Callable[..., Any] | None = None,
    /,
    *,
    provider: str | None = None,
    model: str | None = None,
    operation: str = "chat",
) -> Any:
    """Trace an LLM call: one CLIENT span with GenAI attributes, token usage and cost.

    Usable bare (``@traced_llm``) or configured (``@traced_llm(provider="openai", model="gpt-4o")``).
    When ``model`` is not given, a ``model=`` keyword argument of the call is read (not removed).
    Usage is read from the return value (OpenAI and Anthropic objects or dicts) and priced with
    genai-prices or the ``prices`` given to ``init``. Exceptions are recorded and re-raised unchanged.
    """
    spec = _Spec("chat" if not operation else operation, SpanKind.CLIENT, _llm_result, provider, model)
    return _decorator(spec, func)


def traced_retrieval(
    func: Callable[..., Any] | None = None,
    /,
    *,
    data_source: str | None = None,
    top_k: int | None = None,
) -> Any:
    """Trace a retrieval step: data source, ``top_k`` (or the call's ``top_k=``/``k=``) and hits returned."""
    attributes: dict[str, Any] = {}
    if data_source:
        attributes[_attrs.DATA_SOURCE] = data_source
    if top_k is not None:
        attributes[_attrs.TOP_K] = top_k
    spec = _Spec("retrieval", SpanKind.CLIENT, _retrieval_result, attributes=attributes)
    return _decorator(spec, func)


def traced_rerank(
    func: Callable[..., Any] | None = None,
    /,
    *,
    model: str | None = None,
) -> Any:
    """Trace a rerank step: model and candidate counts in (the call's ``documents=``) and out."""
    spec = _Spec("rerank", SpanKind.INTERNAL, _rerank_result, model=model)
    return _decorator(spec, func)
