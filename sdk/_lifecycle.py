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

from . import _export, _setup, semconv
from ._attribution import current as current_attribution
from ._attribution import queue_wait_s
from ._errors import classify
from ._guard import is_instance, record_failure
from ._streams import StreamStats

# Hooks add a call's attributes to ``out``; they run on the export thread when the SDK owns the
# pipeline (see _setup.deferred), so they may be slow but must only read what the call left.
ResultHook = Callable[["Call", Any, dict[str, Any]], None]
ErrorHook = Callable[["Call", BaseException, dict[str, Any]], None]
StreamHook = Callable[["Call", StreamStats, dict[str, Any]], None]
Fill = Callable[["Call", dict[str, Any]], None]

_REQUEST_PARAMS = {
    "temperature": semconv.REQUEST_TEMPERATURE,
    "max_tokens": semconv.REQUEST_MAX_TOKENS,
    "top_p": semconv.REQUEST_TOP_P,
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
    on_error: ErrorHook | None = None
    # The decorated function's positional parameters and its *args parameter, set per function
    # (see _decorators._wrap): what names the arguments recorded when nothing else says the input.
    positional: tuple[str, ...] = ()
    rest: str | None = None

    def span_name(self, model: str | None) -> str:
        return f"{self.operation} {model}" if model else self.operation


class Call:
    """One traced invocation. Created by :func:`begin`; ended exactly once."""

    __slots__ = (
        "aborted",
        "args",
        "end_ns",
        "ended",
        "error",
        "fill",
        "input_tokens",
        "kwargs",
        "model",
        "opts",
        "output_tokens",
        "queue_source",
        "queue_wait",
        "request",
        "response_model",
        "result",
        "span",
        "spec",
        "start_ns",
        "stats",
        "token",
        "ttft_s",
    )

    def __init__(self, spec: Spec, span: trace.Span, kwargs: Mapping[str, Any], model: str | None,
                 args: tuple[Any, ...] = ()) -> None:
        self.spec = spec
        self.span = span
        self.kwargs = kwargs
        # The positional arguments too: read only when no argument names the model's input.
        self.args = args
        # The provider's HTTP request behind a stream, kept at wrap time (see _inputs).
        self.request: Any = None
        self.model = model
        self.token: object | None = None
        self.start_ns = time.perf_counter_ns()
        self.end_ns = self.start_ns
        self.ended = False
        self.queue_wait: float | None = None
        self.queue_source: str | None = None
        # filled in by the result hooks for the metrics recorded at the end
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.ttft_s: float | None = None
        self.response_model: str | None = None
        # How the call ended, kept on the call itself (no closures): while the export thread
        # catches up, every object a queued span holds is more work for the app's garbage collector.
        self.fill: Fill | None = None
        self.result: Any = None
        self.stats: StreamStats | None = None
        self.aborted = False
        self.error: BaseException | None = None
        self.opts: _setup.Options | None = None

    def detach(self) -> None:
        if self.token is None:
            return
        try:
            otel_context.detach(self.token)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
            record_failure("context detach", exc)
        self.token = None

    def end_result(self, result: Any) -> None:
        if self.ended:
            self.detach()
            return
        if _setup.deferred() and type(result) is list:
            result = list(result)  # the app may sort or trim its list in place before export
        self.result = result
        self._end(Call._fill_result, None)

    def end_stream(self, stats: StreamStats, error: BaseException | None, aborted: bool) -> None:
        """End after a stream: exhausted (``aborted=False``), failed, or closed/abandoned early."""
        if self.ended:
            self.detach()
            return
        self.stats, self.aborted = stats, aborted
        self._end(Call._fill_stream, error)

    def end_error(self, error: BaseException) -> None:
        self._end(Call._fill_error if self.spec.on_error is not None else None, error)

    def _fill_error(self, out: dict[str, Any]) -> None:
        if self.spec.on_error is not None and self.error is not None:
            self.spec.on_error(self, self.error, out)

    def _fill_result(self, out: dict[str, Any]) -> None:
        self.spec.on_result(self, self.result, out)

    def _fill_stream(self, out: dict[str, Any]) -> None:
        if self.aborted:
            out[semconv.STREAM_ABORTED] = True
        if self.spec.on_stream is not None and self.stats is not None:
            self.spec.on_stream(self, self.stats, out)

    def __call__(self) -> tuple[dict[str, Any], str | None]:
        """The deferred work (see :func:`_export.defer`), run on the export thread."""
        assert self.opts is not None
        return _setup.bound(self.opts, self._finish)

    def _finish(self) -> tuple[dict[str, Any], str | None]:
        return self._attributes(self.fill, self.error)

    def _end(self, fill: Fill | None, error: BaseException | None) -> None:
        """The one way a call ends: detach, record (if sampled), end the span, count metrics. Once.

        The status and exception are set here, before ``end``; the attributes too unless the
        export thread will compute them (then only references are kept until it does).
        """
        self.detach()
        if self.ended:
            return
        self.ended = True
        self.end_ns = time.perf_counter_ns()
        span = self.span
        deferred = False
        try:
            if not span.is_recording():
                self._record_metrics(error)
            else:
                if error is not None:
                    _record_error(span, error)
                self.error = error
                if _setup.deferred():
                    self.kwargs = _snapshot(self.kwargs)
                    self.fill, self.opts = fill, _setup.options()
                    if not self.opts.capture_content:
                        self.args = ()  # read only for content: a queued span holds no more than before
                    _export.defer(span.get_span_context().span_id, self)
                    deferred = True
                else:
                    out, name = self._attributes(fill, error)
                    span.set_attributes(out)
                    if name:
                        span.update_name(name)
        except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
            record_failure("span end", exc)
        finally:
            span.end()
            if deferred:
                _export.undefer(span.get_span_context().span_id)
                self.span = None  # type: ignore[assignment]  # ended: the queued snapshot is what counts

    def _attributes(self, fill: Fill | None, error: BaseException | None) -> tuple[dict[str, Any], str | None]:
        """What the result adds to the span, and its final name (from the model that answered)."""
        out: dict[str, Any] = {}
        if fill is not None:
            try:
                fill(self, out)
            except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
                record_failure("span attributes", exc)
        self._record_metrics(error)
        model = self.response_model
        return out, (self.spec.span_name(model) if model and model != self.model else None)

    def _record_metrics(self, error: BaseException | None) -> None:
        instruments = _setup.instruments()
        if instruments is None:
            return
        try:
            attributes = {semconv.OPERATION: self.spec.operation}
            if self.spec.provider:
                attributes[semconv.PROVIDER] = self.spec.provider
            if self.model:
                attributes[semconv.REQUEST_MODEL] = self.model
            if error is not None:
                attributes[semconv.ERROR_TYPE] = type(error).__qualname__
            instruments.record(
                attributes, self.elapsed_s(self.end_ns), self.input_tokens, self.output_tokens, self.ttft_s
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
        seconds = _seconds(wait)
        if seconds is not None and seconds >= 0:
            self.queue_wait, self.queue_source = seconds, "response"

    def elapsed_s(self, until_ns: int) -> float:
        return (until_ns - self.start_ns) / 1e9


def _seconds(value: Any) -> float | None:
    """A number from the app (numpy's included) as a float; ``None`` for anything else."""
    if not is_instance(value, (int, float)) or is_instance(value, bool):
        return None
    try:
        return float(value)
    except Exception:  # noqa: BLE001 - a number type whose __float__ raises is no number to the SDK
        return None


def _snapshot(kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The call's arguments as they were: chat loops append to ``messages`` right after a call."""
    messages = kwargs.get("messages")
    if type(messages) is list:
        return {**kwargs, "messages": list(messages)}
    return kwargs


def _record_error(span: trace.Span, error: BaseException) -> None:
    span.set_attribute(semconv.ERROR_TYPE, type(error).__qualname__)
    span.set_attribute(semconv.ERROR_CLASS, classify(error))
    try:
        message = f"{type(error).__name__}: {error}"[:512]
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises still gets its status
        message = type(error).__name__
    span.set_status(Status(StatusCode.ERROR, message))
    try:
        span.record_exception(error)
    except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
        record_failure("record exception", exc)


_warned_before_init = False


def _warn_before_init() -> None:
    global _warned_before_init
    if _warned_before_init or _setup.initialised():
        return
    _warned_before_init = True
    _setup.logger.warning(
        "infersight: a traced function ran before infersight.sdk.init(); its spans are not recorded. "
        "Call init(service_name=..., endpoint=..., api_key=...) once at startup, before the first call."
    )


def begin(
    spec: Spec, kwargs: Mapping[str, Any], *, make_current: bool = True, args: tuple[Any, ...] = ()
) -> Call | None:
    """Start the span (and make it current unless told not to); ``None`` if the SDK failed.

    ``kwargs`` holds the keyword arguments and the positional ones read by name; ``args`` all
    positional arguments, kept for content capture (see :mod:`._inputs`).
    """
    try:
        tracer = _setup.tracer()
        if tracer is None:
            _warn_before_init()
            return None
        model = kwargs.get("model")
        if type(model) is not str or not model:
            model = spec.model  # the decorator's model= is the default; the call's argument wins
        attributes = dict(spec.attributes)
        attributes[semconv.OPERATION] = spec.operation
        if spec.provider:
            attributes[semconv.PROVIDER] = spec.provider
        if model:
            attributes[semconv.REQUEST_MODEL] = model
        for arg, name in _REQUEST_PARAMS.items():
            value = kwargs.get(arg)
            if type(value) in (int, float):
                attributes[name] = value
        attributes.update(current_attribution().attributes())
        span = tracer.start_span(spec.span_name(model), kind=spec.span_kind, attributes=attributes)
        call = Call(spec, span, kwargs, model, args)
        queued_at = _seconds(kwargs.get("queued_at"))
        if queued_at is not None:
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
