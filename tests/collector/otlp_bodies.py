"""OTLP request bodies with known, unique span ids, for tests that count spans one by one."""

from __future__ import annotations

import itertools
import json
import time

_ids = itertools.count(1)


def genai_spans_json(count: int, *, project_claim: str | None = None) -> tuple[bytes, list[str]]:
    """An OTLP/JSON body with ``count`` GenAI spans, and their span ids (hex)."""
    now = time.time_ns()
    trace_id = f"{next(_ids):032x}"
    span_ids = [f"{next(_ids):016x}" for _ in range(count)]
    resource = [{"key": "service.name", "value": {"stringValue": "spool-test"}}]
    if project_claim is not None:
        resource.append({"key": "infersight.project", "value": {"stringValue": project_claim}})
    spans = [
        {
            "traceId": trace_id,
            "spanId": span_id,
            "name": "chat gpt-4o-mini",
            "kind": 3,
            "startTimeUnixNano": str(now - 1_000_000),
            "endTimeUnixNano": str(now),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o-mini"}},
                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "10"}},
            ],
        }
        for span_id in span_ids
    ]
    body = {"resourceSpans": [
        {"resource": {"attributes": resource}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}
    ]}
    return json.dumps(body).encode(), span_ids
