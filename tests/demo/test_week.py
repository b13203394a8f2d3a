"""The demo's past week has the shape of a real service's, without a collector: what the charts and
the alert replay rely on."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

from infersight.demo import SEARCH_API, SUPPORT_BOT, Feedback, WeekOfTraffic, past_incident, requests_per_hour
from infersight.sdk import semconv

MONDAY = datetime(2026, 11, 23, tzinfo=timezone.utc).timestamp()
NOW = MONDAY + 10 * 86400 + 15 * 3600  # a Thursday afternoon, ten days on


def _week(**kwargs: object) -> WeekOfTraffic:
    return WeekOfTraffic(MONDAY, NOW, per_day=600, incident=past_incident(NOW), **kwargs)  # type: ignore[arg-type]


def test_afternoons_are_busier_than_nights_and_weekends_quieter_than_weekdays():
    hours = Counter(int(t.at_s % 86400 // 3600) for t in _week().turns())
    assert sum(hours[h] for h in range(13, 18)) > 3 * sum(hours[h] for h in range(0, 5))
    days = Counter(int((t.at_s - MONDAY) // 86400) for t in _week().turns())
    weekday, weekend = (days[0] + days[1] + days[2]) / 3, (days[5] + days[6]) / 2
    assert 0.3 * weekday < weekend < 0.7 * weekday


def test_both_services_every_day_and_the_mean_is_what_per_day_asks_for():
    week = _week()
    turns = list(week.turns())
    assert {t.service.name for t in turns} == {SUPPORT_BOT.name, SEARCH_API.name}
    assert len({int((t.at_s - MONDAY) // 86400) for t in turns}) == 11
    assert 0.9 * week.expected_requests() < len(turns) < 1.1 * week.expected_requests()
    assert requests_per_hour(SUPPORT_BOT, NOW, 600) > requests_per_hour(SEARCH_API, NOW, 600)


def test_sessions_have_several_turns_of_one_user_in_order():
    by_session: dict[str, list[tuple[float, str]]] = {}
    for turn in _week().turns():
        by_session.setdefault(turn.session, []).append((turn.at_s, turn.user))
    turns = [len(v) for v in by_session.values()]
    assert 1.8 < sum(turns) / len(turns) < 3.2
    assert all(len({user for _, user in v}) == 1 for v in by_session.values())


def test_a_request_is_one_trace_under_its_request_span():
    week = _week()
    turn = next(iter(week.turns()))
    spans = week.spans(turn)
    root = [s for s in spans if not s.parent_span_id]
    assert len(root) == 1 and len({s.trace_id for s in spans}) == 1
    assert all(s.parent_span_id in (b"", root[0].span_id) for s in spans)
    operations = {a.value.string_value for s in spans for a in s.attributes if a.key == semconv.OPERATION}
    assert operations == {"retrieval", "rerank", "chat"}
    sessions = {a.value.string_value for s in spans for a in s.attributes if a.key == semconv.CONVERSATION_ID}
    assert sessions == {turn.session}


def _errors(week: WeekOfTraffic, lo: float, hi: float) -> tuple[int, int]:
    calls = failed = 0
    for _, body in week.bodies():
        for resource in body.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    if span.name.startswith("chat ") and lo <= span.start_time_unix_nano / 1e9 < hi:
                        calls += 1
                        failed += span.status.code == span.status.STATUS_CODE_ERROR
    return calls, failed


def test_errors_are_rare_except_during_the_incident():
    incident = past_incident(NOW)
    calls, failed = _errors(_week(), MONDAY, incident.start_s - 3600)
    assert failed < 0.02 * calls
    calls, failed = _errors(_week(), incident.start_s, incident.end_s)
    assert calls >= incident.minutes * 2 and failed > 0.5 * calls  # enough failed requests to page on


def test_after_the_incident_its_users_come_back_and_every_call_is_answered():
    # What resolves its alert: calls in every ten minutes after it (silence resolves nothing, and
    # a service of a few requests a day can be silent for an hour), none failing.
    incident = past_incident(NOW)
    for lo in range(int(incident.end_s), int(incident.recovered_s), 600):
        week = WeekOfTraffic(MONDAY, NOW, per_day=150, incident=incident)  # the demo test's rate
        calls, failed = _errors(week, lo, lo + 600)
        assert calls >= 3 and failed == 0, lo


def test_the_same_arguments_make_the_same_spans_so_a_redone_backfill_is_stored_once():
    first = [s.span_id for _, b in _week().bodies() for r in b.resource_spans for c in r.scope_spans for s in c.spans]
    shorter = WeekOfTraffic(MONDAY, NOW - 6 * 3600, per_day=600, incident=past_incident(NOW))
    again = [s.span_id for _, b in shorter.bodies() for r in b.resource_spans for c in r.scope_spans for s in c.spans]
    assert again and set(again) <= set(first)


def test_a_few_percent_of_requests_get_thumbs_mostly_down_where_the_answer_failed():
    week = _week()
    failed: set[str] = set()
    ends: dict[str, float] = {}
    requests = 0
    for count, body in week.bodies():
        requests += count
        for resource in body.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    trace = span.trace_id.hex()
                    ends[trace] = max(ends.get(trace, 0.0), span.end_time_unix_nano / 1e9)
                    if span.status.code == span.status.STATUS_CODE_ERROR:
                        failed.add(trace)
    feedback = week.feedback
    assert 0.02 * requests < len(feedback) < 0.08 * requests
    assert {f.trace_id for f in feedback} <= set(ends)
    # given after the answer, within the hour, in time
    assert all(ends[f.trace_id] - 0.01 <= f.at_s <= min(ends[f.trace_id] + 3600, NOW) for f in feedback)

    def down_share(items: list[Feedback]) -> float:
        return sum(f.thumbs == "down" for f in items) / len(items)

    on_failed = [f for f in feedback if f.trace_id in failed]
    on_rest = [f for f in feedback if f.trace_id not in failed]
    assert len(on_failed) >= 10 and down_share(on_failed) > 0.6 > 0.3 > down_share(on_rest)
    assert all(f.item()["thumbs"] in ("up", "down") for f in feedback)
    # the same week gives the same items with the same ids: a redone backfill's are counted once
    again = _week()
    for _ in again.bodies():
        pass
    assert [f.item() for f in again.feedback] == [f.item() for f in feedback]


def test_the_incident_ends_two_hours_before_now_and_began_within_the_last_day_at_any_time_of_day():
    # Its alert fires a few minutes in and resolves a few after its end: the Alerts page's default
    # day must hold both, and the live rules' last hour neither (at 14:10-16:40 UTC a 14:10 incident
    # is either too recent today or more than a day old).
    for minute in range(0, 24 * 60, 5):
        now = MONDAY + 3 * 86400 + minute * 60
        incident = past_incident(now)
        assert incident.end_s <= now - 2 * 3600, minute
        assert incident.start_s > now - 86400 + 3600, minute
