"""Sessions and users on both backends: a session's figures are its traces' (the Traces page's,
digit for digit), its turns come in time order with their text, detections, judge scores and
feedback; users are keyed by (tenant, user) with the call figures' cost; pages escape what
the model wrote, page by cursor, and say what to do when empty."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

from infersight.collector.store import call_figures, usd_text
from tests.dashboards.data import NS, detection_row, judge_row, ms_text

HOSTILE = "<script>alert('x')</script> & <b>bold</b>"


def _session(call, session_id: str):
    call.extra = {**call.extra, "gen_ai.conversation.id": session_id}
    return call


def feedback_row(call, name: str, kind: str, value: float, *, comment: str = "") -> dict[str, Any]:
    return {"project": call.project, "id": f"fb-{call.trace_id}-{name}-{value}", "ts": ms_text(call.start_ns + 60 * NS),
            "trace_id": call.trace_id, "span_id": call.llm_span_id, "name": name, "kind": kind, "value": value,
            "comment": comment, "source": "api", "created_by": ""}


@pytest.fixture
def conversations(any_dash):
    """Two sessions of acme's u-1 (three turns, then two), one of globex's u-2, and calls of none."""
    dash = any_dash
    now = time.time_ns()
    t0 = now - 3 * 3600 * NS
    chat = [_session(dash.call(start_ns=t0 + i * 60 * NS, cost_usd=0.000123 * (i + 1), prompt=f"turn {i} question",
                               output=f"turn {i} answer", error=i == 1), "chat-1") for i in range(3)]
    chat[2].output = HOSTILE
    second = [_session(dash.call(start_ns=t0 + 3600 * NS + i * 60 * NS, cost_usd=0.00047), "chat-2") for i in range(2)]
    other = [_session(dash.call(start_ns=t0 + 1800 * NS, tenant="globex", user="u-2", cost_usd=0.0021,
                                model="gpt-4o"), "chat-3")]
    loose = [dash.call(start_ns=t0 + 120 * NS, cost_usd=0.5), dash.call(start_ns=t0, user="", cost_usd=0.25)]
    dash.add_calls([*chat, *second, *other, *loose])
    dash.add("detections", [detection_row(chat[0], "json", "json.truncated"),
                            detection_row(chat[2], "repetition", "repetition.loop")])
    dash.add("judge_scores", [judge_row(chat[0], 4), judge_row(chat[2], 2), judge_row(second[0], 5)])
    dash.add("feedback", [
        feedback_row(chat[0], "helpful", "thumbs", 1), feedback_row(chat[2], "helpful", "thumbs", 0),
        feedback_row(chat[2], "rating", "score", 0.4), feedback_row(second[1], "rating", "score", 0.8),
    ])
    return dash, {"chat-1": chat, "chat-2": second, "chat-3": other}


def _traces_cost(client, session_id: str) -> tuple[Decimal, list[dict[str, Any]]]:
    found = client.get("/api/v1/traces", params={"since": "24h", "session": session_id, "limit": 500}).json()
    return sum((Decimal(repr(t["cost_usd"])) for t in found["traces"]), Decimal(0)), found["traces"]


def test_a_sessions_figures_are_its_traces_figures(conversations):
    dash, sessions = conversations
    listed = dash.client.get("/api/v1/sessions", params={"since": "24h"}).json()
    assert [s["session_id"] for s in listed["sessions"]] == ["chat-2", "chat-3", "chat-1"]  # most recent turn first
    assert listed["total"] == 3
    for row in listed["sessions"]:
        cost, traces = _traces_cost(dash.client, row["session_id"])
        assert row["turns"] == len(traces) == len(sessions[row["session_id"]])
        assert Decimal(repr(row["cost_usd"])) == cost
        assert row["errors"] == sum(t["errors"] for t in traces)
        assert row["llm_calls"] == sum(t["llm_calls"] for t in traces)
    chat = next(s for s in listed["sessions"] if s["session_id"] == "chat-1")
    assert usd_text(chat["cost_usd"]) == usd_text(0.000123 * 6) == "$0.000738"
    assert chat["errors"] == 1 and chat["tenants"] == ["acme"] and chat["users"] == ["u-1"]
    assert chat["detections"] == 2 and chat["labels"] == ["json.truncated", "repetition.loop"]
    assert chat["judge_scores"] == [{"rubric_id": "helpfulness", "rubric_version": 1, "judge_model": "judge-small",
                                     "count": 2, "mean": 3.0}]
    assert chat["feedback"] == [{"name": "helpful", "kind": "thumbs", "count": 2, "up": 1, "down": 1},
                                {"name": "rating", "kind": "score", "count": 1, "mean": 0.4}]
    assert chat["latency_s"]["p50"] is not None
    other = next(s for s in listed["sessions"] if s["session_id"] == "chat-3")
    assert other["feedback"] == [] and other["judge_scores"] == []


def test_the_session_view_is_the_conversation_in_order(conversations):
    dash, sessions = conversations
    data = dash.client.get("/api/v1/sessions/chat-1", params={"since": "24h"}).json()
    chat = sessions["chat-1"]
    assert [t["trace_id"] for t in data["conversation"]] == [c.trace_id for c in chat]
    assert [t["input_text"] for t in data["conversation"]] == ["turn 0 question", "turn 1 question", "turn 2 question"]
    assert [t["output_text"] for t in data["conversation"]] == ["turn 0 answer", "turn 1 answer", HOSTILE]
    assert [t["errors"] for t in data["conversation"]] == [0, 1, 0]
    assert data["conversation"][2]["labels"] == ["repetition.loop"]
    assert data["conversation"][2]["feedback"] == [
        {"name": "helpful", "kind": "thumbs", "count": 1, "up": 0, "down": 1},
        {"name": "rating", "kind": "score", "count": 1, "mean": 0.4},
    ]
    listed = dash.client.get("/api/v1/sessions", params={"since": "24h"}).json()["sessions"]
    assert data["cost_usd"] == next(s for s in listed if s["session_id"] == "chat-1")["cost_usd"]
    assert dash.client.get("/api/v1/sessions/nope", params={"since": "24h"}).status_code == 404

    page = dash.client.get("/sessions/chat-1", params={"range": "24h"})
    assert page.status_code == 200
    assert HOSTILE not in page.text and "&lt;script&gt;alert(" in page.text
    assert page.text.index("turn 0 question") < page.text.index("turn 1 answer") < page.text.index("turn 2 question")
    # at the turn's first LLM span, which starts after the trace's retrieval: a second later than
    # the trace when the retrieval crosses a second
    assert 0 <= data["conversation"][1]["start_ns"] - chat[1].start_ns < NS
    link = f'/traces/{chat[1].trace_id}?at={data["conversation"][1]["start_ns"] // NS}'
    assert f'href="{link}"' in page.text
    followed = dash.client.get(link)  # a trace read near a time (it once asked for fromUnixts64Nano)
    assert followed.status_code == 200 and "turn 1 answer" in followed.text
    assert usd_text(data["cost_usd"]) in page.text
    assert dash.client.get("/sessions/nope", params={"range": "24h"}).status_code == 404


def test_filters_and_the_cursor_walk_every_session_once(conversations):
    dash, _ = conversations
    acme = dash.client.get("/api/v1/sessions", params={"since": "24h", "tenant": "acme"}).json()
    assert {s["session_id"] for s in acme["sessions"]} == {"chat-1", "chat-2"}
    by_user = dash.client.get("/api/v1/sessions", params={"since": "24h", "user": "u-2"}).json()
    assert [s["session_id"] for s in by_user["sessions"]] == ["chat-3"]
    seen, cursor = [], None
    while True:
        params = {"since": "24h", "limit": 1, **({"cursor": cursor} if cursor else {})}
        page = dash.client.get("/api/v1/sessions", params=params).json()
        seen += [s["session_id"] for s in page["sessions"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == ["chat-2", "chat-3", "chat-1"]
    other_search = {"since": "24h", "tenant": "acme", "cursor": page_cursor(dash)}
    refused = dash.client.get("/api/v1/sessions", params=other_search)
    assert refused.status_code == 400 and "cursor" in refused.text


def page_cursor(dash) -> str:
    return dash.client.get("/api/v1/sessions", params={"since": "24h", "limit": 1}).json()["next_cursor"]


def test_users_are_keyed_by_tenant_and_user_with_the_call_figures(conversations):
    dash, _ = conversations
    data = dash.client.get("/api/v1/users", params={"since": "24h"}).json()
    keys = [(u["tenant"], u["user_id"]) for u in data["users"]]
    assert sorted(keys) == [("acme", "u-1"), ("globex", "u-2")]  # spans without a user id are not a user
    start_ns = time.time_ns() - 86400 * NS
    figures = {(f["tenant"], f["user_id"]): f for f in call_figures(dash.store, dash.project, start_ns,
                                                                      by=("tenant", "user_id"))}
    for user in data["users"]:
        expected = figures[(user["tenant"], user["user_id"])]
        assert (user["cost_usd"], user["llm_calls"], user["llm_errors"]) == (
            expected["cost_usd"], expected["llm_calls"], expected["llm_errors"])
    acme = next(u for u in data["users"] if u["tenant"] == "acme")
    assert acme["sessions"] == 2 and acme["llm_errors"] == 1
    assert acme["feedback"] == [{"name": "helpful", "kind": "thumbs", "count": 2, "up": 1, "down": 1},
                                {"name": "rating", "kind": "score", "count": 2, "mean": pytest.approx(0.6)}]

    page = dash.client.get("/users", params={"range": "24h"})
    assert page.status_code == 200
    assert usd_text(acme["cost_usd"]) in page.text
    assert "/sessions?range=24h&amp;tenant=acme&amp;user=u-1" in page.text
    assert "/traces?range=24h&amp;tenant=globex&amp;user=u-2" in page.text
    assert "no feedback" in page.text


def test_the_sessions_page_links_each_session_to_its_turns_and_traces(conversations):
    dash, _ = conversations
    page = dash.client.get("/sessions", params={"range": "24h"})
    assert page.status_code == 200
    for sid in ("chat-1", "chat-2", "chat-3"):
        assert f'href="/sessions/{sid}?range=24h"' in page.text
        assert f"session={sid}" in page.text
    assert "repetition.loop" in page.text and "helpful" in page.text


def test_empty_pages_say_what_to_send(any_dash):
    for path in ("/sessions", "/users"):
        page = any_dash.client.get(path)
        assert page.status_code == 200
        assert 'id="empty"' in page.text
    assert "request(session_id=...)" in any_dash.client.get("/sessions").text
    assert "user_id=...)" in any_dash.client.get("/users").text
    assert any_dash.client.get("/api/v1/sessions").json()["sessions"] == []


def test_a_session_id_of_any_text_reaches_its_view(any_dash):
    odd = "a/b?c=<d> \"é\""
    call = _session(any_dash.call(), odd)
    any_dash.add_calls([call])
    page = any_dash.client.get("/sessions", params={"range": "24h"})
    assert "/sessions/a%2Fb%3Fc%3D%3Cd%3E%20%22%C3%A9%22?range=24h" in page.text
    view = any_dash.client.get("/sessions/a%2Fb%3Fc%3D%3Cd%3E%20%22%C3%A9%22", params={"range": "24h"})
    assert view.status_code == 200 and call.trace_id in view.text


def test_unusable_parameters_are_refused_by_name(any_dash):
    for path, params, named in [
        ("/api/v1/sessions", {"limit": 0}, "limit"), ("/api/v1/users", {"cursor": "x" * 2000}, "cursor"),
        ("/sessions", {"user": "a\x00b"}, "user"), ("/users", {"range": "2y"}, "range"),
        ("/api/v1/sessions", {"cursor": "not-a-cursor"}, "cursor"),
    ]:
        response = any_dash.client.get(path, params=params)
        assert response.status_code in (400, 422), (path, params, response.status_code)
        assert named in response.text
