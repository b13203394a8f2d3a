"""infersight SDK: trace LLM, retrieval and rerank calls as OpenTelemetry spans.

    from infersight.sdk import current_trace_id, feedback, init, request, traced_llm

    init(service_name="support-bot", endpoint="http://localhost:4318", api_key="isk_...")

    @traced_llm(provider="openai", model="gpt-4o-mini")
    def answer(question): ...

    with request("acme", route="support.answer", user_id="u-1", session_id="chat-1"):  # one trace per request
        answer("hi")
        trace_id = current_trace_id()
    feedback(trace_id, thumbs="down", comment="wrong refund policy")  # later, when the user says so

The SDK never raises into the application: its own failures are counted
(:func:`failure_count`) and logged once.
"""

from __future__ import annotations

from ._attribution import mark_started, tenant
from ._content import redact_builtin
from ._decorators import span, traced_llm, traced_rerank, traced_retrieval
from ._errors import classify as classify_error
from ._feedback import current_trace_id, feedback
from ._guard import failure_count
from ._markers import mark_cache_hit, mark_fallback, mark_retry
from ._metrics import watch_queue
from ._pricing import cost_usd
from ._request import request
from ._setup import force_flush, init, initialised, shutdown

__all__ = [
    "classify_error",
    "cost_usd",
    "current_trace_id",
    "failure_count",
    "feedback",
    "force_flush",
    "init",
    "initialised",
    "mark_cache_hit",
    "mark_fallback",
    "mark_retry",
    "mark_started",
    "redact_builtin",
    "request",
    "shutdown",
    "span",
    "tenant",
    "traced_llm",
    "traced_rerank",
    "traced_retrieval",
    "watch_queue",
]
