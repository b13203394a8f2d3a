"""A span processor for spans the SDK did not start: tenant attribution and nesting.

Provider SDKs (Anthropic's client traces its own calls) and other instrumentations
(OpenLLMetry, OpenInference) start GenAI spans too. Inside a ``tenant`` block they get the same
tenant, user, route and tags as the SDK's spans. A foreign span started directly under one of
the SDK's LLM spans describes the same call a second time: it is marked with
``infersight.parent_llm_span`` so the collector counts the call's tokens and cost once.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from . import semconv
from ._attribution import current as current_attribution
from ._guard import record_failure

SCOPE = "infersight.sdk"
# The operations of kind ``llm`` in the collector's one table (store/_kinds.py), which the SDK
# cannot import; tests/sdk/test_pricing_estimates.py fails when the two differ.
LLM_OPERATIONS = frozenset({"chat", "completion", "generate_content", "text_completion"})


def _scope(span: Any) -> str:
    scope = getattr(span, "instrumentation_scope", None)
    return getattr(scope, "name", "") or ""


class AttributionProcessor(SpanProcessor):
    """``on_start`` only; must not block or raise (it runs on the application's thread)."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            if _scope(span) == SCOPE:
                return
            existing = span.attributes or {}
            for key, value in current_attribution().attributes().items():
                if key not in existing:
                    span.set_attribute(key, value)
            parent = trace.get_current_span(parent_context)
            parent_attrs = getattr(parent, "attributes", None) or {}
            if _scope(parent) == SCOPE and parent_attrs.get(semconv.OPERATION) in LLM_OPERATIONS:
                span.set_attribute(semconv.PARENT_LLM_SPAN, format(parent.get_span_context().span_id, "016x"))
        except Exception as exc:  # noqa: BLE001 - on_start runs on the application's thread: must not raise
            record_failure("attribution processor", exc)

    def on_end(self, span: ReadableSpan) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
