"""One span lifecycle for every call shape: begin, then end once with a result, an error or a stream.

Every step swallows and counts the SDK's own failures, so the wrapped function's result or
exception reaches the caller unchanged whatever happens in here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from . import _attrs, _setup
from ._attribution import current as current_attribution
from ._attribution import queue_wait_s
from ._errors import classify
from ._guard import record_failure
from ._streams import StreamStats

ResultHook = Callable[["Call", Any], None]
StreamHook = Callable[["Call", StreamStats], None]

_REQUEST_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
}


@dataclass(frozen=True, slots=True)
class Spec:
    """What a decorator was told at decoration time."""

    operation: str
    span_kind: SpanKind
    on_result: ResultHook
    on_stream: StreamHook | None = None
    provider: str | None = None
    model: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    queue_wait_from: Callable[[Any], float | None] | None = None
    expect_json: bool = False
    # The stream guard's loop check (see _stream_guard), built once per decorated function.
    guard: Callable[[list[str]], str | None] | None = None

    def span_name(self, model: str | None) -> str:
        return f"{self.operation} {model}" if model else self.operation


class Call:
    """One traced invocation. Created by :func:`begin`; ended exactly once."""

    __slots__ = (
        "ended",
        "input_tokens",
        "kwargs",
        "model",
        "output_tokens",
        "queue_source",
        "queue_wait",
        "span",
        "spec",
        "start_ns",
        "token",
        "ttft_s",
    )

    def __init__(self, spec: Spec, span: trace.Span, kwargs: Mapping[str, Any], model: str | None) -> None:
        self.spec = spec
        self.span = span
        self.kwargs = kwargs
        self.model = model
        self.token: object | None = None
        self.start_ns = time.perf_counter_ns()
        self.ended = False
        self.queue_wait: float | None = None
        self.queue_source: str | None = None
        # filled in by the result hooks for the metrics recorded at the end
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.ttft_s: float | None = None

    def detach(self) -> None:
        if self.token is None:
            return
        try:
            otel_context.detach(self.token)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
            record_failure("context detach", exc)
        self.token = None

    def end_result(self, result: Any) -> None:
        self._end(lambda: self.spec.on_result(self, result), None, "result attributes")

    def end_stream(self, stats: StreamStats, error: BaseException | None, aborted: bool) -> None:
        """End after a stream: exhausted (``aborted=False``), failed, or closed/abandoned early."""

        def record() -> None:
            if aborted:
                self.span.set_attribute(_attrs.STREAM_ABORTED, True)
            if error is not None:
                _record_error(self.span, error)
            if self.spec.on_stream is not None:
                self.spec.on_stream(self, stats)

        self._end(record, error, "stream attributes")

    def end_error(self, error: BaseException) -> None:
        self._end(lambda: _record_error(self.span, error), error, "error attributes")

    def _end(self, record: Callable[[], None], error: BaseException | None, what: str) -> None:
        """The one way a call ends: detach, record (if sampled), end the span, count metrics. Once."""
        self.detach()
        if self.ended:
            return
        self.ended = True
        try:
            if self.span.is_recording():
                record()
        except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
            record_failure(what, exc)
        finally:
            self.span.end()
            self._record_metrics(error)

    def _record_metrics(self, error: BaseException | None) -> None:
        instruments = _setup.instruments()
        if instruments is None:
            return
        try:
            attributes = {_attrs.OPERATION: self.spec.operation}
            if self.spec.provider:
                attributes[_attrs.PROVIDER] = self.spec.provider
            if self.model:
                attributes[_attrs.REQUEST_MODEL] = self.model
            if error is not None:
                attributes[_attrs.ERROR_TYPE] = type(error).__qualname__
            instruments.record(
                attributes, self.elapsed_s(time.perf_counter_ns()), self.input_tokens, self.output_tokens, self.ttft_s
            )
        except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
            record_failure("metrics", exc)

    def read_queue_wait(self, result: Any) -> None:
        """Ask the decorator's ``queue_wait_from`` hook for a provider-reported queue time."""
        hook = self.spec.queue_wait_from
        if hook is None:
            return
        try:
            wait = hook(result)
        except Exception as exc:  # noqa: BLE001 - a user hook's failure is counted, never raised
            record_failure("queue_wait_from hook", exc)
            return
        if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait >= 0:
            self.queue_wait, self.queue_source = float(wait), "response"

    def elapsed_s(self, until_ns: int) -> float:
        return (until_ns - self.start_ns) / 1e9


def _record_error(span: trace.Span, error: BaseException) -> None:
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"[:512]))
    span.set_attribute(_attrs.ERROR_TYPE, type(error).__qualname__)
    span.set_attribute(_attrs.ERROR_CLASS, classify(error))


def begin(spec: Spec, kwargs: Mapping[str, Any], *, make_current: bool = True) -> Call | None:
    """Start the span (and make it current unless told not to); ``None`` if the SDK failed."""
    try:
        tracer = _setup.tracer()
        if tracer is None:
            return None
        model = spec.model
        if model is None and isinstance(kwargs.get("model"), str):
            model = kwargs["model"]
        attributes = dict(spec.attributes)
        attributes[_attrs.OPERATION] = spec.operation
        if spec.provider:
            attributes[_attrs.PROVIDER] = spec.provider
        if model:
            attributes[_attrs.REQUEST_MODEL] = model
        for arg, name in _REQUEST_PARAMS.items():
            value = kwargs.get(arg)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                attributes[name] = value
        attributes.update(current_attribution().attributes())
        span = tracer.start_span(spec.span_name(model), kind=spec.span_kind, attributes=attributes)
        call = Call(spec, span, kwargs, model)
        queued_at = kwargs.get("queued_at")
        if isinstance(queued_at, (int, float)) and not isinstance(queued_at, bool):
            call.queue_wait, call.queue_source = max(time.time() - queued_at, 0.0), "argument"
        else:
            wait = queue_wait_s()
            if wait is not None:
                call.queue_wait, call.queue_source = wait, "mark_started"
        if make_current:
            call.token = otel_context.attach(trace.set_span_in_context(span))
        return call
    except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
        record_failure("span start", exc)
        return None
