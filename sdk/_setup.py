"""One-time SDK setup: which tracer the decorators use, and where spans are exported.

Before :func:`init` the decorators use OpenTelemetry's global (proxy) tracer, so they work and
cost almost nothing. :func:`init` configures a provider once; a second call warns and changes
nothing, as OpenTelemetry's own global setters do.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from . import _feedback
from ._content import Redactor, redact_builtin
from ._export import ANSWER_WAIT_S, SHUTDOWN_BOUND_S, ExportProcessor
from ._guard import record_failure
from ._metrics import Instruments, watching_queues
from ._pricing import ModelRates, rates_from_mapping
from ._processor import AttributionProcessor
from ._resource import with_instance

logger = logging.getLogger("infersight.sdk")

T = TypeVar("T")

_SCOPE = "infersight.sdk"
_DEFAULT_ENDPOINT = "http://localhost:4318"


class Options:
    """What the decorators capture and how a span is finished; read on every call, so plain attributes.

    One object per ``init``: a span finished on the export thread after ``shutdown`` (the queue
    drains then) is finished with the options of the ``init`` it was recorded under (see
    :func:`bound`), not with the defaults that ``shutdown`` restores.
    """

    def __init__(self) -> None:
        self.capture_content = True
        self.max_content_chars = 16_384
        self.redactors: tuple[Redactor, ...] = (redact_builtin,)
        self.stall_threshold_s = 1.0
        self.price_overrides: dict[str, ModelRates] = {}
        self.instruments: Instruments | None = None


class _State:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Back to the state before ``init``, the lock included."""
        self.options = Options()
        self.lock = threading.Lock()
        self.initialised = False
        self.tracer: trace.Tracer | None = None
        self.provider: TracerProvider | None = None
        self.processor: ExportProcessor | None = None
        self.owns_provider = False
        # True when every processor on the provider is the SDK's own: span work then moves to
        # the export thread. An app's provider may carry its own processors, which must see
        # finished attributes, so there the work stays on the caller's thread.
        self.deferred = False
        self.shutdown_timeout_s = SHUTDOWN_BOUND_S
        self.meter_provider: MeterProvider | None = None
        self.owns_meter_provider = False


_state = _State()
# Providers init() created: after shutdown() a new init() creates a fresh one rather than
# attaching to a stopped provider left behind as OpenTelemetry's global.
_created: weakref.WeakSet[TracerProvider] = weakref.WeakSet()


def tracer() -> trace.Tracer | None:
    """The tracer decorators start spans with, or ``None`` when nothing would record them.

    Before ``init`` this is the global tracer, but only once the app has set an SDK provider
    itself: until then a decorated call skips span work entirely.
    """
    t = _state.tracer
    if t is not None:
        return t
    global_provider = trace.get_tracer_provider()
    if isinstance(global_provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    if global_provider in _created:  # the SDK's own, left behind by shutdown(): stopped
        return None
    global _app_tracer
    known = _app_tracer
    if known is not None and known[0] is global_provider:
        return known[1]
    # OpenTelemetry's get_tracer builds a new tracer at every call (and sets up a warnings
    # filter): ~15 µs a call, a third of what the decorator costs on the app's provider.
    found = trace.get_tracer(_SCOPE)
    _app_tracer = (global_provider, found)
    return found


# The tracer on the app's own global provider, with that provider: OpenTelemetry sets the global
# provider once, but tests and frameworks may swap it, so it is checked by identity.
_app_tracer: tuple[trace.TracerProvider, trace.Tracer] | None = None


def deferred() -> bool:
    return _state.deferred


def initialised() -> bool:
    """Whether :func:`init` has run: a library that traces its own calls only when its host app
    set the SDK up asks this instead of triggering the warning for calls before ``init``."""
    return _state.initialised


_bound = threading.local()


def options() -> Options:
    bound: Options | None = getattr(_bound, "options", None)
    return _state.options if bound is None else bound


def bound(opts: Options, work: Callable[[], T]) -> T:
    """Run ``work`` (on the export thread) with ``opts`` as :func:`options`."""
    _bound.options = opts
    try:
        return work()
    finally:
        _bound.options = None


def price_override(model: str) -> ModelRates | None:
    return options().price_overrides.get(model)


def instruments() -> Instruments | None:
    """The GenAI histograms to record into, or ``None`` when they are not recorded."""
    inst = options().instruments
    return inst if inst is not None and inst.histograms else None


def init(
    *,
    service_name: str,
    endpoint: str | None = None,
    api_key: str | None = None,
    tracer_provider: TracerProvider | None = None,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    service_version: str | None = None,
    export: bool = True,
    sample_rate: float = 1.0,
    capture_content: bool = True,
    max_content_chars: int = 16_384,
    redact: Sequence[Redactor] = (),
    builtin_redaction: bool = True,
    stall_threshold_s: float = 1.0,
    meter_provider: MeterProvider | None = None,
    metrics_interval_s: float = 10.0,
    span_exporter: SpanExporter | None = None,
    shutdown_timeout_s: float = SHUTDOWN_BOUND_S,
    genai_metrics: bool | None = None,
) -> None:
    """Configure the SDK once per process.

    Args:
        service_name: ``service.name`` of the spans (ignored when attaching to an existing provider,
            whose resource already names the service).
        endpoint: collector base URL; spans go to ``{endpoint}/v1/traces``. Defaults to
            ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``http://localhost:4318``.
        api_key: project key, sent as ``Authorization: Bearer <key>``.
        tracer_provider: an OpenTelemetry SDK provider to attach to instead of creating one. When the
            app has already set a global SDK provider, it is used the same way.
        prices: per-model overrides in USD per million tokens, e.g.
            ``{"my-llama": {"input_mtok": 0.2, "output_mtok": 0.6}}``, for self-hosted or
            fine-tuned models that genai-prices cannot know.
        service_version: ``service.version`` of a provider created here.
        export: when False, no OTLP exporter is added (the app exports spans its own way).
        sample_rate: share of traces kept (head sampling on the trace id, so a trace is kept or
            dropped whole; errors cannot be chosen at the head). Only for a provider created here.
        capture_content: record prompts and completions as ``gen_ai.input.messages`` /
            ``gen_ai.output.messages``.
        max_content_chars: truncate captured content beyond this many characters per span side.
        redact: functions ``str -> str`` applied to captured content before it leaves the process,
            after the built-in patterns (emails, phone numbers, API keys, card numbers) unless
            ``builtin_redaction=False``.
        stall_threshold_s: an inter-chunk gap above this counts as a stall.
        meter_provider: an OpenTelemetry SDK meter provider for the GenAI histograms and the
            ``watch_queue`` gauges. Without one (and without a global SDK one), a provider
            exporting OTLP metrics to ``{endpoint}/v1/metrics`` every ``metrics_interval_s`` is
            created when ``export`` is on.
        genai_metrics: record the GenAI client histograms (``gen_ai.client.operation.duration``,
            ``gen_ai.client.token.usage``, ``gen_ai.client.operation.time_to_first_chunk``). By
            default they are recorded into a meter provider the app gave (or set globally) and
            not into the one created here: its metrics go to the infersight collector, which
            stores the spans (they carry the same numbers) and not these series.
        span_exporter: export spans with this instead of OTLP/HTTP (a console or in-memory exporter).
        shutdown_timeout_s: the most :func:`shutdown`, and the exit of a process that never calls
            it, waits for queued spans while they are still being sent (default 5 s: at a local
            collector's ~10 ms per 512-span batch, a full 8,192-span queue many times over). What
            is still queued then is counted as dropped and logged.

    Spans go out on a daemon thread. When the SDK creates the provider, usage, pricing, content
    redaction and serialisation run there too, off the application's thread.

    At exit (or :func:`shutdown`) the SDK waits while the export makes progress, so a script
    that ends right after its last call still delivers every span to a healthy collector, also
    on a loaded machine. It stops waiting as soon as the collector does not: a refused
    connection or a refusing answer (503, 401, ...) ends the wait at once, a request unanswered
    for 0.5 s ends it then, so against a dead, hanging or refusing collector a process exits
    within about half a second of its last line. The warning says which of these happened.

    Each batch is sent once per attempt with a 30 s answer timeout: a restarting collector
    replays its spool before it answers, which takes several seconds, and a shorter timeout
    re-sent batches it had in fact accepted (stored twice). A batch that failed is tried again
    after 1 s, doubling to 5 s, or after the collector's ``Retry-After`` when that is longer
    (capped at 60 s); never at exit, where the first failure ends the wait.

    Never raises: a bad setting is logged once and the SDK carries on without exporting.
    """
    with _state.lock:
        if _state.initialised:
            warnings.warn("infersight.sdk.init() was already called; ignoring this call", stacklevel=2)
            return
        _state.options.price_overrides = _price_overrides(prices)
        _state.shutdown_timeout_s = _positive("shutdown_timeout_s", shutdown_timeout_s, SHUTDOWN_BOUND_S)
        opts = _state.options
        opts.capture_content = bool(capture_content)
        opts.max_content_chars = _positive("max_content_chars", max_content_chars, 16_384)
        opts.stall_threshold_s = _positive("stall_threshold_s", stall_threshold_s, 1.0)
        opts.redactors = ((redact_builtin,) if builtin_redaction else ()) + tuple(redact)
        if not 0.0 <= sample_rate <= 1.0:
            logger.warning("infersight: 'sample_rate' must be within [0, 1]; got %r, using 1.0", sample_rate)
            sample_rate = 1.0
        provider = tracer_provider
        global_provider = trace.get_tracer_provider()
        if provider is None and isinstance(global_provider, TracerProvider) and global_provider not in _created:
            provider = global_provider
        owns = provider is None
        if provider is None:
            attrs = {"service.name": service_name}
            if service_version:
                attrs["service.version"] = service_version
            sampler = ParentBased(TraceIdRatioBased(sample_rate))
            # The SDK bounds exit itself (_exit below): the provider's own hook has no time limit.
            provider = TracerProvider(resource=with_instance(Resource.create(attrs)), sampler=sampler,
                                      shutdown_on_exit=False)
        provider.add_span_processor(AttributionProcessor())
        if export or span_exporter is not None:
            try:
                exporter = span_exporter or _exporter(endpoint, api_key)
                _state.processor = ExportProcessor(exporter, shutdown_timeout_s=_state.shutdown_timeout_s)
                provider.add_span_processor(_state.processor)
            except Exception as exc:  # noqa: BLE001 - a bad endpoint must not take the app down
                logger.warning("infersight: span export disabled: %r", exc)
        if export:
            _feedback.configure(_base_url(endpoint) + "/api/v1/feedback", _auth_headers(api_key))
        if owns:
            _created.add(provider)
            if not isinstance(global_provider, TracerProvider):  # OpenTelemetry allows setting it once
                trace.set_tracer_provider(provider)
        _state.provider = provider
        _state.owns_provider = owns
        _state.deferred = owns and _state.processor is not None
        _setup_metrics(meter_provider, endpoint, api_key, export, provider.resource, metrics_interval_s,
                       genai_metrics)
        _state.tracer = provider.get_tracer(_SCOPE)
        _state.initialised = True
        atexit.register(_exit)


def _setup_metrics(
    meter_provider: MeterProvider | None,
    endpoint: str | None,
    api_key: str | None,
    export: bool,
    resource: Resource,
    interval_s: float,
    genai_metrics: bool | None,
) -> None:
    global_provider = metrics.get_meter_provider()
    if meter_provider is None and isinstance(global_provider, MeterProvider):
        meter_provider = global_provider
    if meter_provider is None and export:
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            exporter = OTLPMetricExporter(
                endpoint=_base_url(endpoint) + "/v1/metrics", headers=_auth_headers(api_key), timeout=5
            )
            reader = PeriodicExportingMetricReader(
                exporter, export_interval_millis=_positive("metrics_interval_s", interval_s, 10.0) * 1000
            )
            # The app's tracer provider may lack them: the queue series need the instance's names.
            meter_provider = MeterProvider(resource=with_instance(resource), metric_readers=[reader],
                                           shutdown_on_exit=False)
            _state.owns_meter_provider = True
        except Exception as exc:  # noqa: BLE001 - a bad endpoint must not take the app down
            logger.warning("infersight: metrics export disabled: %r", exc)
    if meter_provider is not None:
        _state.meter_provider = meter_provider
        histograms = not _state.owns_meter_provider if genai_metrics is None else bool(genai_metrics)
        _state.options.instruments = Instruments(meter_provider.get_meter(_SCOPE), histograms=histograms)


_Number = TypeVar("_Number", int, float)


def _base_url(endpoint: str | None) -> str:
    return (endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or _DEFAULT_ENDPOINT).rstrip("/")


def _auth_headers(api_key: str | None) -> dict[str, str] | None:
    return {"Authorization": f"Bearer {api_key}"} if api_key else None


def _positive(name: str, value: _Number, default: _Number) -> _Number:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return value
    logger.warning("infersight: '%s' must be a positive number; got %r, using %r", name, value, default)
    return default


def _exporter(endpoint: str | None, api_key: str | None) -> SpanExporter:
    from ._otlp import OtlpSender

    return OtlpSender(_base_url(endpoint) + "/v1/traces", _auth_headers(api_key))


def _price_overrides(prices: Mapping[str, Mapping[str, float]] | None) -> dict[str, ModelRates]:
    """Each entry on its own: a bad one is refused with a warning and the others still apply."""
    out: dict[str, ModelRates] = {}
    try:
        entries = list((prices or {}).items())
    except Exception as exc:  # noqa: BLE001 - a bad setting is logged, never raised
        logger.warning("infersight: 'prices' of init() must map model names to rates; ignoring it: %r", exc)
        return out
    for model, rates in entries:
        try:
            if not isinstance(model, str):
                raise TypeError(f"the model name must be a string, got {model!r}")
            out[model] = rates_from_mapping(dict(rates))
        except Exception as exc:  # noqa: BLE001 - one bad entry must not drop the others
            logger.warning("infersight: ignoring the price of %r in init(prices=...): %r; expected "
                           "{'input_mtok': float, 'output_mtok': float, ...} in USD per million tokens", model, exc)
    return out


def force_flush(timeout_millis: int = 30_000) -> bool:
    """Export every finished span now. Blocks up to ``timeout_millis``; returns False on timeout."""
    processor = _state.processor
    if processor is None:
        return True
    return processor.force_flush(timeout_millis)


def shutdown(timeout_s: float | None = None) -> None:
    """Send what is queued and stop the SDK's exporter (and the providers ``init`` created).

    Waits while the spans are being sent, for at most ``timeout_s`` (default:
    ``init(shutdown_timeout_s=...)``, 5 s), and stops sooner when the collector refuses, fails
    or leaves a request unanswered for 0.5 s. Spans not exported then are counted in
    ``failure_count("spans_dropped")`` and logged once with the reason. A process that never
    calls this gets the same shutdown at exit. Blocks the calling thread; never raises.
    """
    with _state.lock:
        bound = _state.shutdown_timeout_s if timeout_s is None else timeout_s
        processor = _state.processor
        provider = _state.provider if _state.owns_provider else None
        meter_provider, owns_meters = _state.meter_provider, _state.owns_meter_provider
        instruments = _state.options.instruments
        _state.reset()
    atexit.unregister(_exit)
    started = time.monotonic()
    delivered = True
    if processor is not None:
        try:
            delivered = processor.stop(max(bound, 0.0))
        except Exception as exc:  # noqa: BLE001 - shutdown is best-effort; telemetry must never break the host
            record_failure("shutdown", exc)
    if provider is not None:  # its processors: the export one is stopped, the others return at once
        _stop(provider.shutdown)
    _feedback.stop(max(bound - (time.monotonic() - started), 0.0) if delivered else 0.0)
    if meter_provider is not None and (owns_meters or watching_queues()):
        # One last metrics export, each queue's point marked ended. It goes to the same collector:
        # when that just took every span, it is given as long as a span batch would be; when not,
        # it is not waited for.
        remaining = max(bound - (time.monotonic() - started), 0.0)
        worker = threading.Thread(target=_stop, args=(lambda: _last_metrics(meter_provider, owns_meters, instruments),),
                                  name="infersight-shutdown", daemon=True)
        worker.start()
        worker.join(min(ANSWER_WAIT_S, remaining) if delivered else 0.0)


def _last_metrics(meter_provider: MeterProvider, owned: bool, instruments: Instruments | None) -> None:
    """The last collection, with each watched queue's point marked ended; the provider ``init``
    created is shut down, an app's own is flushed and lives on, the SDK's queue series silent."""
    if instruments is not None:
        instruments.end_queues()
    try:
        if owned:
            meter_provider.shutdown()
        else:
            meter_provider.force_flush()
    finally:
        if instruments is not None:
            instruments.silence_queues()


def _stop(target: Callable[[], object]) -> None:
    try:
        target()
    except Exception as exc:  # noqa: BLE001 - shutdown is best-effort; telemetry must never break the host
        record_failure("shutdown", exc)


def _exit() -> None:
    """At interpreter exit: the bounded shutdown, so a dead or hanging collector never holds the process."""
    shutdown()
