from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from infersight import sdk


@pytest.fixture
def make_sdk() -> Iterator[Callable[..., InMemorySpanExporter]]:
    """``make_sdk(**init_options)``: the SDK on a provider that keeps finished spans in memory."""

    def make(**options: Any) -> InMemorySpanExporter:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "test-app"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        sdk.init(service_name="test-app", tracer_provider=provider, export=False, **options)
        return exporter

    yield make
    sdk.shutdown()


@pytest.fixture
def spans(make_sdk) -> InMemorySpanExporter:
    """The SDK with default options, keeping finished spans in memory."""
    return make_sdk()
