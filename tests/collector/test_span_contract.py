"""The span contract: every typed row's kind is decided once, and LLM calls are the unit of the figures."""

from __future__ import annotations

import json
import uuid

import pytest
from fastapi.testclient import TestClient

from infersight.collector import Settings, create_app
from infersight.collector.ingest._otlp import JSON, parse_traces, to_rows
from infersight.collector.store import KINDS, call_figures, encode_rows, kind_of, operations_of, summary, usd_text
from infersight.collector.store._kinds import kind_sql
from infersight.dashboards._charts import fmt
from tests.collector.otlp_bodies import genai_spans_json


def _rag_request(project: str, store, *, llm_error: bool = False) -> None:
    """One RAG request as three instrumentations would send it: a GenAI retrieval span, an
    OpenInference reranker span, an OpenLLMetry embedding and a GenAI chat call; the retrieval
    failed, and the chat call too when ``llm_error``."""
    body, _ = genai_spans_json(5)
    document = json.loads(body)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    shapes = [
        {"gen_ai.operation.name": "retrieval"},
        {"openinference.span.kind": "RERANKER"},
        {"llm.request.type": "embedding"},
        {"gen_ai.operation.name": "chat"},
        {"gen_ai.operation.name": "execute_tool"},
    ]
    for i, (span, attributes) in enumerate(zip(spans, shapes, strict=True)):
        span["attributes"] = [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
        if attributes.get("gen_ai.operation.name") == "chat":
            span["attributes"] += [
                {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o-mini"}},
                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "100"}},
                {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "10"}},
            ]
            span["endTimeUnixNano"] = str(int(span["startTimeUnixNano"]) + 2 * 10**9)  # 2 s call
        if i == 0 or (llm_error and i == 3):
            span["status"] = {"code": 2}
    rows = to_rows(parse_traces(json.dumps(document).encode(), JSON), project)
    store.insert("otel_traces", encode_rows(rows))


def test_every_operation_has_one_kind_and_sql_agrees_with_python(store):
    operations = ["chat", "text_completion", "generate_content", "embeddings", "retrieval", "rerank",
                  "execute_tool", "invoke_agent", "something_new"]
    in_sql = [store.query(f"SELECT {kind_sql('{op:String}')} AS kind", {"op": op})[0]["kind"] for op in operations]
    assert in_sql == [kind_of(op) for op in operations]
    assert set(in_sql) <= set(KINDS) and in_sql[-1] == "other"
    assert operations_of("llm") == ("chat", "completion", "generate_content", "text_completion")


def test_a_rag_request_is_one_llm_call_whatever_the_other_spans(store):
    project = f"contract-{uuid.uuid4().hex[:8]}"
    _rag_request(project, store)
    _rag_request(project, store, llm_error=True)
    figures = summary(store, project, 0)
    assert figures["spans"] == 10
    assert figures["kinds"] == {"llm": 2, "embedding": 2, "retrieval": 2, "rerank": 2, "tool": 2}
    # The failed retrievals are not LLM errors; one of the two calls failed.
    assert (figures["llm_calls"], figures["llm_errors"], figures["llm_error_rate"]) == (2, 1, 0.5)
    assert (figures["input_tokens"], figures["output_tokens"]) == (200, 20)
    # Latency is the calls' (2 s each), not the 1 ms steps around them.
    assert figures["latency_s"]["p50"] == pytest.approx(2.0, rel=0.045)  # the latency histogram: within 4.4%
    (by_tenant,) = figures["tenants"]
    assert (by_tenant["llm_calls"], by_tenant["llm_errors"], by_tenant["spans"]) == (2, 1, 10)


def test_call_figures_group_by_any_column_and_refuse_anything_else(store):
    project = f"contract-{uuid.uuid4().hex[:8]}"
    _rag_request(project, store)
    by_kind = {row["kind"]: row for row in call_figures(store, project, 0, by=("kind",))}
    assert by_kind["llm"]["llm_calls"] == 1 and by_kind["retrieval"]["llm_calls"] == 0
    with pytest.raises(ValueError, match="must name llm_spans columns"):
        call_figures(store, project, 0, by=("kind; DROP TABLE llm_spans",))


def test_a_call_of_an_unpriced_model_is_unknown_cost_not_zero(store, tmp_path):
    project = f"contract-{uuid.uuid4().hex[:8]}"
    body, _ = genai_spans_json(3)
    document = json.loads(body)
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    for attribute in span["attributes"]:
        if attribute["key"] == "gen_ai.request.model":
            attribute["value"] = {"stringValue": "in-house-llm-7b"}
    store.insert("otel_traces", encode_rows(to_rows(parse_traces(json.dumps(document).encode(), JSON), project)))
    figures = summary(store, project, 0)
    assert (figures["llm_calls"], figures["unpriced_calls"]) == (3, 1)
    assert figures["cost_usd"] > 0  # the two priced calls

    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    with TestClient(create_app(settings, store=store)) as client:
        page = client.get("/", params={"range": "7d"}).text
    assert 'id="unpriced">1 calls of unknown cost (no known price, or no usage reported) are not in it<' in page
    assert f'id="cost">{fmt(figures["cost_usd"], "usd")}<' in page and "$0.0000<" not in page


@pytest.mark.parametrize(("usd", "shown"), [(0.0000123, "$0.0000123"), (0.00345, "$0.00345"), (12.5, "$12.50")])
def test_cheap_calls_keep_three_significant_digits(usd, shown):
    assert fmt(usd, "usd") == shown


@pytest.mark.parametrize(
    ("value", "unpriced", "text"),
    [
        (0.0, 0, "$0"),  # a free model
        (0.0, 3, "unpriced"),  # not "$0": nothing known about its price
        (None, 0, "unpriced"),
        (0.000031, 0, "$0.0000310"),
        (0.1234, 0, "$0.1234"),
        (1234.5, 0, "$1,234.50"),
        (2.5, 4, "$2.50 + 4 unpriced"),
    ],
)
def test_money_reads_the_same_on_every_surface(value, unpriced, text):
    assert usd_text(value, unpriced) == text
