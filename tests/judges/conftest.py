"""Fixtures for the judges: the suite's embedded store, a local judge server, span factories.

chDB opens one data path per process, so the judges share the session's store with every other
in-process test and keep apart by writing to a project of their own.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from infersight.collector.store import Store, encode_rows
from infersight.demo import FakeJudge
from infersight.judges import CircuitBreaker, JudgeClient

JUDGE_PRICES = {"input_mtok": 1.0, "output_mtok": 2.0}
# FakeJudge reports 1000 prompt and 50 completion tokens per answer.
COST_PER_CALL = 1000 * 1.0 / 1e6 + 50 * 2.0 / 1e6


@pytest.fixture
def judge_store(session_store: Store) -> Store:
    """The suite's one embedded store (tests/conftest.py). Tests keep apart by project."""
    return session_store


_projects = itertools.count()


@pytest.fixture
def project(request: pytest.FixtureRequest) -> str:
    """A project name no other test writes to, short enough to take a suffix (names are at most 64)."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[:48]
    return f"j{next(_projects)}-{name}"


@pytest.fixture(scope="session")
def _judge_server() -> Iterator[FakeJudge]:
    server = FakeJudge(slow_s=3.0).start()  # well past the client timeout, even on a loaded machine
    yield server
    server.stop()


@pytest.fixture
def fake_judge(_judge_server: FakeJudge) -> Iterator[FakeJudge]:
    """The session's local judge server, with no scripted failures and an empty request log."""
    _judge_server.reset()
    yield _judge_server
    _judge_server.reset()


def make_client(server: FakeJudge, **options: Any) -> JudgeClient:
    """A client for ``server`` with test-sized timeouts and back-off (and a seeded jitter)."""
    import random

    defaults: dict[str, Any] = {
        "base_url": server.url, "model": "fake-judge", "prices": JUDGE_PRICES, "timeout_s": 1.0,
        "max_retries": 3, "backoff_base_s": 0.001, "backoff_max_s": 0.01,
        "breaker": CircuitBreaker(failure_threshold=1000), "rng": random.Random(0),
    }
    defaults.update(options)
    return JudgeClient(**defaults)


@pytest.fixture
def judge_client(fake_judge: FakeJudge) -> Iterator[JudgeClient]:
    client = make_client(fake_judge)
    yield client
    client.close()


def trace_id_for(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:32]


def genai_messages(messages: Sequence[tuple[str, str]]) -> str:
    return json.dumps(
        [{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in messages],
        separators=(",", ":"),
    )


@dataclass
class Span:
    """One LLM span to store, as the SDK would have sent it."""

    trace_id: str
    tenant: str = "acme"
    route: str = "support.answer"
    version: str = "v1"
    question: str | None = None
    answer: str | None = None
    system: str | None = None
    tool: str | None = None
    ts_ns: int = field(default_factory=lambda: time.time_ns() - 60 * 10**9)
    status: str = "Unset"
    operation: str = "chat"
    output_type: str | None = None
    span_id: str = ""

    def __post_init__(self) -> None:
        if not self.span_id:
            self.span_id = self.trace_id[:16]


def _ts(ns: int) -> str:
    return f"{ns // 1_000_000_000:010d}.{ns % 1_000_000_000:09d}"


def insert_spans(store: Store, project: str, spans: Sequence[Span]) -> None:
    """Store ``spans`` as ``otel_traces`` rows; the materialized view fills ``llm_spans``."""
    rows = []
    for s in spans:
        attributes = {
            "gen_ai.operation.name": s.operation,
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.provider.name": "openai",
            "infersight.tenant.id": s.tenant,
            "infersight.route": s.route,
        }
        if s.question is not None:
            turns = ([("system", s.system)] if s.system else []) + [("user", s.question)]
            if s.tool:
                turns.append(("tool", s.tool))
            attributes["gen_ai.input.messages"] = genai_messages(turns)
        if s.answer is not None:
            attributes["gen_ai.output.messages"] = genai_messages([("assistant", s.answer)])
        if s.output_type is not None:
            attributes["gen_ai.output.type"] = s.output_type
        rows.append({
            "Timestamp": _ts(s.ts_ns),
            "TraceId": s.trace_id,
            "SpanId": s.span_id,
            "ParentSpanId": "",
            "SpanName": "chat gpt-4o-mini",
            "SpanKind": "Client",
            "ServiceName": "support-bot",
            "ResourceAttributes": {"service.name": "support-bot", "service.version": s.version,
                                   "infersight.project": project},
            "SpanAttributes": attributes,
            "Duration": 250_000_000,
            "StatusCode": s.status,
        })
    for start in range(0, len(rows), 5000):
        store.insert("otel_traces", encode_rows(rows[start:start + 5000]))
