from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from infersight import sdk
from infersight.collector._server import CollectorProcess


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[CollectorProcess]:
    """A real collector process on a free port with a fresh embedded store."""
    process = CollectorProcess(tmp_path / "data", free_port()).start()
    yield process
    process.stop()
