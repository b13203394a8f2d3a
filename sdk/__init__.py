"""infersight SDK: trace LLM, retrieval and rerank calls as OpenTelemetry spans.

    from infersight.sdk import init, tenant, traced_llm

    init(service_name="support-bot", endpoint="http://localhost:4318", api_key="...")

    @traced_llm(provider="openai", model="gpt-4o-mini")
    def answer(question): ...

    with tenant("acme", user_id="u-1"):
        answer("hi")

The SDK never raises into the application: its own failures are counted
(:func:`failure_count`) and logged once.
"""

from __future__ import annotations

from ._attribution import tenant
from ._decorators import traced_llm, traced_rerank, traced_retrieval
from ._guard import failure_count
from ._setup import force_flush, init, shutdown

__all__ = [
    "failure_count",
    "force_flush",
    "init",
    "shutdown",
    "tenant",
    "traced_llm",
    "traced_rerank",
    "traced_retrieval",
]
