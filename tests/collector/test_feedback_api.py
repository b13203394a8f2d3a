"""``POST /api/v1/feedback`` on a real collector: stored and shown with the trace, refused with
a clear message when malformed, and scoped to the project of the caller's key."""

from __future__ import annotations

import json

from tests import http
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import wait_for, wait_for_spans

JSON = {"content-type": "application/json"}


def stored_trace(collector, project: str = "alpha") -> tuple[str, list[str]]:
    """A trace of two spans stored for ``project``: its id and span ids."""
    body, span_ids = genai_spans_json(2)
    headers = {**JSON, **collector.headers(project)}
    assert http.post(f"{collector.url}/v1/traces", content=body, headers=headers).status_code == 200
    wait_for_spans(collector.url, 2, headers=collector.headers(project))
    return json.loads(body)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"], span_ids


def post(collector, project: str, payload: object, **headers: str):
    return http.post(f"{collector.url}/api/v1/feedback", content=json.dumps(payload),
                     headers={**JSON, **collector.headers(project), **headers})


def trace_of(collector, project: str, trace_id: str):
    return http.get(f"{collector.url}/api/v1/traces/{trace_id}", headers=collector.headers(project))


def test_feedback_on_a_trace_and_a_span_is_shown_with_the_trace(auth_collector):
    trace_id, span_ids = stored_trace(auth_collector)
    answer = post(auth_collector, "alpha", [
        {"trace_id": trace_id, "thumbs": "down", "comment": "made up a refund policy", "user_id": "u-7"},
        {"trace_id": trace_id, "span_id": span_ids[1], "score": 2, "name": "accuracy"},
    ])
    assert answer.status_code == 200, answer.text
    assert answer.json()["stored"] == 2 and len(answer.json()["ids"]) == 2
    data = wait_for(lambda: (d := trace_of(auth_collector, "alpha", trace_id).json())["feedback"] and d)
    (on_trace,) = data["feedback"]
    assert (on_trace["kind"], on_trace["shown"], on_trace["comment"], on_trace["created_by"], on_trace["source"]) == (
        "thumbs", "down", "made up a refund policy", "u-7", "api")
    spans = {s["span_id"]: s for s in data["spans"]}
    assert [(f["name"], f["value"]) for f in spans[span_ids[1]]["feedback"]] == [("accuracy", 2.0)]
    assert spans[span_ids[0]]["feedback"] == []


def test_a_key_of_one_project_can_neither_write_onto_nor_read_another_projects_trace(auth_collector):
    trace_id, _ = stored_trace(auth_collector, "beta")
    # Accepted (feedback may precede its trace), but stored as alpha's: beta's trace never shows it.
    from_alpha = post(auth_collector, "alpha", {"trace_id": trace_id, "thumbs": "down", "comment": "from alpha"})
    assert from_alpha.status_code == 200
    assert post(auth_collector, "beta", {"trace_id": trace_id, "thumbs": "up"}).status_code == 200
    seen_by_beta = wait_for(lambda: trace_of(auth_collector, "beta", trace_id).json()["feedback"])
    assert [(f["shown"], f["comment"]) for f in seen_by_beta] == [("up", "")]
    # alpha holds no such trace: its feedback there is not a window onto beta's.
    assert trace_of(auth_collector, "alpha", trace_id).status_code == 404


def test_without_a_valid_key_nothing_is_stored(auth_collector):
    for headers in ({}, {"authorization": "Bearer isk_" + "A" * 43}):
        answer = http.post(f"{auth_collector.url}/api/v1/feedback", content=b'{"trace_id": "' + b"a" * 32 + b'",'
                           b' "thumbs": "up"}', headers={**JSON, **headers})
        assert answer.status_code == 401 and "key" in answer.json()["detail"]


def test_malformed_feedback_is_a_4xx_that_says_what_is_wrong(auth_collector):
    url, headers = f"{auth_collector.url}/api/v1/feedback", auth_collector.headers("alpha")
    cases = [
        (b"{not json", JSON, 400, "not valid JSON"),
        (b"trace=1", {"content-type": "application/x-www-form-urlencoded"}, 415, "JSON body"),
        (json.dumps({"trace_id": "a" * 32, "thumbs": "meh"}).encode(), JSON, 400, "'thumbs' must be 'up' or 'down'"),
        (json.dumps([{"trace_id": "a" * 32, "score": 1}, {"score": 1}]).encode(), JSON, 400,
         "item 1: 'trace_id' is required"),
        (b"[" + b" " * (1 << 20) + b"]", JSON, 413, "at most"),
    ]
    for body, content_type, status, message in cases:
        answer = http.post(url, content=body, headers={**headers, **content_type})
        assert answer.status_code == status, (message, answer.text)
        assert message in answer.json()["detail"], answer.text


def test_a_cross_site_browser_post_is_refused(collector):
    answer = http.post(f"{collector.url}/api/v1/feedback", content=json.dumps({"trace_id": "a" * 32, "thumbs": "up"}),
                       headers={**JSON, "sec-fetch-site": "cross-site"})
    assert answer.status_code == 403


def test_a_store_outage_is_a_503_to_retry_and_nothing_half_stored(auth_collector, store):
    item = {"trace_id": "ef" * 16, "thumbs": "up", "id": "retry-me"}
    store.failing = True
    try:
        answer = post(auth_collector, "alpha", item)
        assert answer.status_code == 503 and "retry-after" in answer.headers
    finally:
        store.failing = False
    assert post(auth_collector, "alpha", item).status_code == 200
    assert [f["id"] for f in trace_of_feedback(store, auth_collector, "ef" * 16)] == ["retry-me"]


def trace_of_feedback(store, collector, trace_id: str) -> list[dict]:
    from infersight.collector.store import trace_feedback

    return trace_feedback(store, collector.projects["alpha"], trace_id)


def test_apps_ingest_keys_send_feedback_and_read_keys_do_not(auth_collector):
    from infersight.collector.web import ProjectKeys

    keys = ProjectKeys(auth_collector.data_dir)
    try:
        ingest, read = (keys.create(auth_collector.projects["alpha"], role=role)[0] for role in ("ingest", "read"))
    finally:
        keys.close()
    body = json.dumps({"trace_id": "ab" * 16, "thumbs": "down"})
    sent = http.post(f"{auth_collector.url}/api/v1/feedback", content=body,
                     headers={**JSON, "authorization": f"Bearer {ingest}"})
    assert sent.status_code == 200, sent.text
    refused = http.post(f"{auth_collector.url}/api/v1/feedback", content=body,
                        headers={**JSON, "authorization": f"Bearer {read}"})
    assert refused.status_code == 403 and "needs an ingest key" in refused.json()["detail"]
    # What the ingest key sent, it cannot read back: apps' keys show no prompt and no feedback.
    assert http.get(f"{auth_collector.url}/api/v1/traces/{'ab' * 16}",
                    headers={"authorization": f"Bearer {ingest}"}).status_code == 403
