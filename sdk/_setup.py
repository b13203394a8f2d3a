"""One-time SDK setup: which tracer the decorators use, and where spans are exported.

Before :func:`init` the decorators use OpenTelemetry's global (proxy) tracer, so they work and
cost almost nothing. :func:`init` configures a provider once; a second call warns and changes
nothing, as OpenTelemetry's own global setters do.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanProcessor

from ._pricing import ModelRates, rates_from_mapping

logger = logging.getLogger("infersight.sdk")

_SCOPE = "infersight.sdk"
_DEFAULT_ENDPOINT = "http://localhost:4318"


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.initialised = False
        self.tracer: trace.Tracer | None = None
        self.provider: TracerProvider | None = None
        self.processor: SpanProcessor | None = None
        self.owns_provider = False
        self.price_overrides: dict[str, ModelRates] = {}


_state = _State()


def tracer() -> trace.Tracer:
    """The tracer decorators start spans with (the global proxy tracer before ``init``)."""
    t = _state.tracer
    if t is None:
        t = trace.get_tracer(_SCOPE)
    return t


def price_override(model: str) -> ModelRates | None:
    return _state.price_overrides.get(model)


def init(
    *,
    service_name: str,
    endpoint: str | None = None,
    api_key: str | None = None,
    tracer_provider: TracerProvider | None = None,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    service_version: str | None = None,
    export: bool = True,
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

    Never raises: a bad setting is logged once and the SDK carries on without exporting.
    """
    with _state.lock:
        if _state.initialised:
            warnings.warn("infersight.sdk.init() was already called; ignoring this call", stacklevel=2)
            return
        try:
            _state.price_overrides = {m: rates_from_mapping(dict(p)) for m, p in (prices or {}).items()}
        except (KeyError, TypeError, ValueError) as exc:
            logger.warning("infersight: ignoring the 'prices' setting of init(): %r", exc)
        provider = tracer_provider
        global_provider = trace.get_tracer_provider()
        if provider is None and isinstance(global_provider, TracerProvider):
            provider = global_provider
        owns = provider is None
        if provider is None:
            attrs = {"service.name": service_name}
            if service_version:
                attrs["service.version"] = service_version
            provider = TracerProvider(resource=Resource.create(attrs))
        if export:
            try:
                _state.processor = BatchSpanProcessor(_exporter(endpoint, api_key))
                provider.add_span_processor(_state.processor)
            except Exception as exc:  # a bad endpoint must not take the app down
                logger.warning("infersight: span export disabled: %r", exc)
        if owns:
            trace.set_tracer_provider(provider)
        _state.provider = provider
        _state.owns_provider = owns
        _state.tracer = provider.get_tracer(_SCOPE)
        _state.initialised = True


def _exporter(endpoint: str | None, api_key: str | None):  # -> OTLPSpanExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    base = endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or _DEFAULT_ENDPOINT
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    return OTLPSpanExporter(endpoint=base.rstrip("/") + "/v1/traces", headers=headers)


def force_flush(timeout_millis: int = 30_000) -> bool:
    """Export every finished span now. Blocks up to ``timeout_millis``; returns False on timeout."""
    processor = _state.processor
    if processor is None:
        return True
    return processor.force_flush(timeout_millis)


def shutdown() -> None:
    """Flush and stop the SDK's exporter (and the provider, if ``init`` created it)."""
    with _state.lock:
        if _state.owns_provider and _state.provider is not None:
            _state.provider.shutdown()  # also shuts down the processor
        elif _state.processor is not None:
            _state.processor.shutdown()
        _state.__init__()
