from __future__ import annotations

import json

import httpx

from tests.collector.test_ingest import JSON, otlp_json
from tests.conftest import wait_for_spans


def test_overview_renders_without_data(collector):
    page = httpx.get(f"{collector.url}/")
    assert page.status_code == 200
    assert "No spans in the last hour" in page.text


def test_overview_numbers_match_the_api_and_untrusted_text_is_escaped(collector):
    body = otlp_json()
    attrs = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    for a in attrs:
        if a["key"] == "infersight.tenant.id":
            a["value"]["stringValue"] = hostile
    assert httpx.post(f"{collector.url}/v1/traces", content=json.dumps(body), headers=JSON).status_code == 200

    summary = wait_for_spans(collector.url, 1, since="24h")
    page = httpx.get(f"{collector.url}/", params={"range": "24h"}).text
    assert f'id="llm-calls">{summary["llm_calls"]:,}<' in page
    assert f'id="error-rate">{summary["llm_error_rate"] * 100:.1f}%<' in page
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_an_unknown_range_is_refused_and_none_is_the_last_hour(collector):
    page = httpx.get(f"{collector.url}/", params={"range": "'; DROP TABLE llm_spans --"})
    assert page.status_code == 400
    assert "The &#39;range&#39; parameter must be one of 1h, 24h, 7d" in page.text
    assert 'class="on">last hour' in httpx.get(f"{collector.url}/").text
