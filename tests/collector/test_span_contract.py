"""The span contract: every typed row's kind is decided once, and LLM calls are the unit of the figures."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest
from fastapi.testclient import TestClient

from infersight.collector import Settings, create_app
from infersight.collector.ingest._otlp import JSON, parse_traces, to_rows
from infersight.collector.store import (
    KINDS,
    call_figures,
    encode_rows,
    kind_of,
    operations_of,
    statements,
    summary,
    usd_text,
)
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


def test_the_view_takes_its_llm_operations_from_the_table():
    (view,) = [s for s in statements() if s.startswith("CREATE MATERIALIZED VIEW IF NOT EXISTS llm_spans_mv_")]
    listed = view.split("infersight.parent_llm_span'] != '' AND operation IN (")[1].split(")")[0]
    assert tuple(op.strip(" '") for op in listed.split(",")) == operations_of("llm")  # completion too


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
    assert f'id="cost">{fmt(figures["cost_usd"], "usd")} + 1 unpriced<' in page and "$0.0000<" not in page


@pytest.mark.parametrize(("usd", "shown"), [(0.0000123, "$0.0000123"), (0.00345, "$0.00345"), (12.5, "$12.50")])
def test_cheap_calls_keep_three_significant_digits(usd, shown):
    assert fmt(usd, "usd") == shown


@pytest.mark.parametrize(
    ("value", "unpriced", "text"),
    [
        (0.0, 0, "$0"),  # a free model
        (None, 3, "unpriced"),  # not "$0": nothing known about its price
        (0.0, 3, "$0 + 3 unpriced"),  # a free model beside three of unknown price
        (None, 0, "–"),  # no call to price
        (0.000031, 0, "$0.0000310"),
        (0.1234, 0, "$0.1234"),
        (1234.5, 0, "$1,234.50"),
        (2.5, 4, "$2.50 + 4 unpriced"),
        # Rounded once, half up, from the exact value: the float nearest 0.0005055 is below it.
        (0.0005055, 0, "$0.000506"),
        (Decimal("0.0005055"), 0, "$0.000506"),
        (0.0009996, 0, "$0.00100"),
        (1.005, 0, "$1.01"),
    ],
)
def test_money_reads_the_same_on_every_surface(value, unpriced, text):
    assert usd_text(value, unpriced) == text


def test_estimated_cost_reads_apart_from_known_cost():
    assert usd_text(0.0012, 2, 0.0003) == "$0.00120 + $0.000300 estimated + 2 unpriced"
    assert usd_text(None, 0, 0.0003) == "$0.000300 estimated"
    assert usd_text(None, 1, 0.0003) == "$0.000300 estimated + 1 unpriced"
