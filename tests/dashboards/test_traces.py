"""The traces list as on-call uses it in an incident: every filter narrows it, every sort orders it,
pages follow a cursor that holds under concurrent inserts, the total counts every match, and what
no call reported reads unknown. On both backends."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest

from tests.dashboards.data import NS, detection_row, judge_row

MINUTE_NS = 60 * NS


def iso(unix_ns: int) -> str:
    return datetime.fromtimestamp(unix_ns / NS, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def listed(client, **params) -> dict:
    response = client.get("/api/v1/traces", params={"since": "24h", **params})
    assert response.status_code == 200, response.text[:300]
    return response.json()


def every_page(client, limit: int, **params) -> tuple[list[str], list[int]]:
    """Trace ids over all pages, and the total each page reported."""
    ids, totals, cursor = [], [], None
    for _ in range(50):
        page = listed(client, limit=limit, **params, **({"cursor": cursor} if cursor else {}))
        ids += [t["trace_id"] for t in page["traces"]]
        totals.append(page["total"])
        cursor = page["next_cursor"]
        if cursor is None:
            return ids, totals
    raise AssertionError("the cursor never ended")


@pytest.fixture
def incident(any_dash):
    """Ten requests a minute apart, an hour ago: costs, sizes and durations all different, the
    last three failing with a rate limit, tagged, with users, sessions, detections and scores."""
    dash = any_dash
    t0 = (time.time_ns() // NS - 3600) * NS  # whole seconds: the ISO window bounds below are exact
    calls = [
        dash.call(
            start_ns=t0 + i * MINUTE_NS, user=f"u-{i % 3}", cost_usd=0.001 * ((i * 7) % 10 + 1),
            input_tokens=100 + (i * 37) % 500, output_tokens=50, decode_s=0.1 + (i * 3 % 10) / 10,
            error=i >= 7, tenant="acme" if i % 2 else "globex",
            extra={"gen_ai.conversation.id": f"s-{i // 5}", "infersight.tag.plan": "gold" if i < 4 else "free"},
        )
        for i in range(10)
    ]
    dash.add_calls(calls)
    dash.add("detections", [detection_row(calls[2], "json", "json.truncated")])
    dash.add("judge_scores", [judge_row(calls[i], score) for i, score in ((1, 1), (3, 2), (5, 5), (6, 4))])
    return dash, calls


def test_pages_follow_the_cursor_and_hold_under_concurrent_inserts(incident):
    dash, calls = incident
    newest_first = [c.trace_id for c in reversed(calls)]
    first = listed(dash.client, limit=4)
    assert first["total"] == 10 and [t["trace_id"] for t in first["traces"]] == newest_first[:4]
    # Stored between two pages: one newer than the last trace shown (with an OFFSET the fourth
    # trace would come again on page 2; it belongs above the cursor, so no later page shows it),
    # one older (it takes its place further down).
    above, below = dash.call(start_ns=calls[7].start_ns + NS), dash.call(start_ns=calls[2].start_ns + NS)
    dash.add_calls([above, below])
    rest, cursor = [], first["next_cursor"]
    while cursor:
        page = listed(dash.client, limit=4, cursor=cursor)
        assert page["total"] == 12  # what is stored now in the listing's window
        rest += [t["trace_id"] for t in page["traces"]]
        cursor = page["next_cursor"]
    assert rest == [*newest_first[4:7], below.trace_id, *newest_first[7:]]


def test_a_listings_window_is_the_first_pages(incident):
    dash, calls = incident
    first = listed(dash.client, limit=5, sort="time")
    dash.add_calls([dash.call(start_ns=time.time_ns())])  # after the first page's window ended
    second = listed(dash.client, limit=5, sort="time", cursor=first["next_cursor"])
    assert [t["trace_id"] for t in first["traces"] + second["traces"]] == [c.trace_id for c in calls]
    assert second["next_cursor"] is None and second["total"] == 10 and second["end"] == first["end"]
    assert listed(dash.client, sort="time")["total"] == 11


@pytest.mark.parametrize(("sort", "key", "reverse"), [
    ("-time", lambda c: c.start_ns, True),
    ("time", lambda c: c.start_ns, False),
    ("cost", lambda c: c.cost_usd, True),
    ("tokens", lambda c: c.input_tokens + c.output_tokens, True),
    ("duration", lambda c: c.prefill_s + c.decode_s, True),
    ("errors", lambda c: (c.error, c.start_ns), True),
])
def test_every_sort_orders_across_pages(incident, sort, key, reverse):
    dash, calls = incident
    ids, totals = every_page(dash.client, 3, sort=sort)
    assert ids == [c.trace_id for c in sorted(calls, key=key, reverse=reverse)]
    assert totals == [10] * 4


def test_each_filter_narrows_to_exactly_its_traces(incident):
    dash, calls = incident

    def ids(**params) -> set[str]:
        found, totals = every_page(dash.client, 4, **params)
        assert set(totals) <= {len(found)}
        return set(found)

    def of(*indices: int) -> set[str]:
        return {calls[i].trace_id for i in indices}

    assert ids(user="u-1") == of(1, 4, 7)
    assert ids(session="s-0") == of(0, 1, 2, 3, 4)
    assert ids(tag="plan=gold") == of(0, 1, 2, 3)
    assert ids(tag="plan") == of(*range(10))
    assert ids(tag="plan=none") == set()
    assert ids(error_type="RateLimitError") == of(7, 8, 9)
    assert ids(status="error", tenant="acme") == of(7, 9)
    assert ids(label="json.truncated") == ids(label="json") == of(2)
    assert ids(score_max="2") == of(1, 3)
    assert ids(score_min="4", rubric="helpfulness") == of(5, 6)
    assert ids(score_min="4", rubric="other") == set()
    assert ids(start=iso(calls[2].start_ns), end=iso(calls[5].start_ns)) == of(2, 3, 4)
    assert ids(start=iso(calls[8].start_ns)) == of(8, 9)
    # The alert's link: its service and window, failures first.
    link = {"service": "support-bot", "start": iso(calls[6].start_ns), "end": iso(calls[9].start_ns + NS),
            "sort": "errors"}
    found = listed(dash.client, **link)
    assert [t["trace_id"] for t in found["traces"]] == [calls[i].trace_id for i in (9, 8, 7, 6)]
    assert found["traces"][0]["error_types"] == ["RateLimitError"]
    page = dash.client.get("/traces", params=link).text
    assert re.findall(r'href="/traces/([0-9a-f]+)', page) == [calls[i].trace_id for i in (9, 8, 7, 6)]
    assert '<td class="error-type"><span class="tag bad">RateLimitError</span>' in page


def test_the_page_counts_sorts_and_pages_like_the_api(incident):
    dash, calls = incident
    page = dash.client.get("/traces", params={"sort": "cost", "user": "u-0"}).text
    api = listed(dash.client, sort="cost", user="u-0")
    assert re.search(r'id="total">(\d+)<', page).group(1) == str(api["total"]) == "4"
    assert re.findall(r'href="/traces/([0-9a-f]+)', page) == [t["trace_id"] for t in api["traces"]]
    assert 'value="cost" selected' in page and 'name="user" value="u-0"' in page
    # 60 traces: the page shows 50 and links to the rest with every filter kept.
    dash.add_calls([dash.call(start_ns=calls[0].start_ns - (i + 1) * NS, user="u-0") for i in range(56)])
    page = dash.client.get("/traces", params={"sort": "cost", "user": "u-0"}).text
    first = re.findall(r'href="/traces/([0-9a-f]+)', page)
    next_link = re.search(r'id="next-page" href="\?([^"]+)"', page).group(1).replace("&amp;", "&")
    assert "user=u-0" in next_link and "sort=cost" in next_link and "cursor=" in next_link
    second = dash.client.get("/traces?" + next_link).text
    rest = re.findall(r'href="/traces/([0-9a-f]+)', second)
    assert len(first) == 50 and len(rest) == 10 and not set(first) & set(rest)
    assert 'id="first-page"' in second and 'id="next-page"' not in second


def test_unknown_tokens_and_cost_read_unknown_not_zero(any_dash):
    dash = any_dash
    unknown = {"gen_ai.usage.input_tokens": "", "gen_ai.usage.output_tokens": "", "infersight.cost.usd": ""}
    failed = dash.call(error=True, extra=unknown)
    dash.add_calls([failed])
    (row,) = listed(dash.client)["traces"]
    assert row["input_tokens"] is None and row["output_tokens"] is None and row["cost_usd"] is None
    page = dash.client.get("/traces").text
    cells = re.search(r'<td class="num tokens">(.*?)</td>\s*<td class="num cost">(.*?)</td>', page, re.S)
    assert cells and cells.group(1).count(">unknown<") == 2 and ">unknown<" in cells.group(2)
    assert "$0" not in cells.group(2)


@pytest.mark.parametrize(("params", "named"), [
    ({"cursor": "not-a-cursor"}, "cursor"),
    ({"sort": "price"}, "sort"),
    ({"score_min": "high"}, "score_min"),
    ({"score_min": "4", "score_max": "2"}, "score_min"),
    ({"start": "2026-02-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}, "start"),
    ({"start": "15m"}, "start"),
    ({"user": "a\x00b"}, "user"),
])
def test_unusable_parameters_are_refused_by_name(any_dash, params, named):
    for path in ("/api/v1/traces", "/traces"):
        response = any_dash.client.get(path, params=params)
        assert response.status_code == 400, (path, params, response.text[:200])
        assert f"{named}" in response.text


def test_a_cursor_of_another_search_is_refused(incident):
    dash, _ = incident
    cursor = listed(dash.client, limit=2, sort="cost")["next_cursor"]
    assert listed(dash.client, limit=2, sort="cost", cursor=cursor)["traces"]
    for other in ({"sort": "tokens"}, {"sort": "cost", "user": "u-1"}):
        response = dash.client.get("/api/v1/traces", params={"limit": 2, "cursor": cursor, **other})
        assert response.status_code == 400 and "cursor" in response.text


def test_a_window_at_the_end_of_what_the_store_holds_is_answered(any_dash):
    # The day of context read past this window reaches beyond the last Int64 nanosecond.
    response = any_dash.client.get("/api/v1/traces", params={"start": "2262-04-09T00:00:00Z",
                                                            "end": "2262-04-10T23:59:59Z"})
    assert response.status_code == 200, response.text[:300]
    assert response.json()["total"] == 0
