"""The daily digest: the day's numbers against the day before, sent once, never paging."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from infersight.collector.alerts import Ack, WebhookNotifier, build_digest, parse_matcher
from infersight.collector.alerts._evaluator import Evaluator
from infersight.collector.alerts._silences import new_silence, save_ack, save_silence
from infersight.collector.store import encode_rows
from tests import http

from .receiver import Receiver

DAY = date(2026, 11, 20)


def rows(project, day, n, *, cost, tenant="acme", route="support.answer", duration=0.5):
    start = datetime(day.year, day.month, day.day, 9, tzinfo=timezone.utc)
    return [
        {"project": project, "ts": (start + timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S"), "service": "bot",
         "tenant": tenant, "route": route, "model": "gpt-4o-mini", "operation": "chat", "cost_usd": cost,
         "duration_s": duration, "status": "error" if i % 50 == 0 else "ok", "span_id": f"{project}-{day}-{i}"}
        for i in range(n)
    ]


def test_digest_numbers_and_html(store):
    project = "digest-numbers"
    spans = rows(project, DAY, 200, cost=0.01) + rows(
        project, DAY, 20, cost=0.5, tenant="<i>bigco</i>", route="report", duration=4.0
    )
    spans += rows(project, DAY - timedelta(days=1), 100, cost=0.01)
    store.insert("llm_spans", encode_rows(spans))
    store.insert("detections", encode_rows([
        {"project": project, "ts": f"{DAY} 10:00:0{i}", "span_id": f"d{i}", "detector": "repetition",
         "version": "1.0", "label": "repetition.loop", "score": 1.0, "evidence": "again again"} for i in range(4)
    ]))
    digest = build_digest(store, project, DAY)
    assert digest.totals["llm_calls"] == 220 and digest.previous["llm_calls"] == 100
    assert abs(digest.totals["cost_usd"] - 12.0) < 1e-9
    assert digest.slowest_routes[0]["route"] == "report"
    assert digest.top_spenders[0]["tenant"] == "<i>bigco</i>"
    (loop,) = digest.detector_rates
    assert (loop["label"], loop["count"]) == ("repetition.loop", 4)
    assert abs(loop["per_1k"] - 1000 * 4 / 220) < 1e-9
    lines = digest.lines()
    assert lines[0].startswith(f"{project} on {DAY}: 220 calls (+120% vs the day before)")
    html = digest.html()
    assert "&lt;i&gt;bigco&lt;/i&gt;" in html and "<i>bigco" not in html
    assert 'id="calls">220<' in html


def test_digest_money_keeps_its_precision_and_says_unpriced(store):
    project = "digest-money"
    spans = rows(project, DAY, 10, cost=0.0000031, tenant="cheap") + rows(project, DAY, 5, cost=None, tenant="private")
    for span in spans:
        span["input_tokens"] = 12  # tokens used: a call without a price is unpriced, not free
    store.insert("llm_spans", encode_rows(spans))
    digest = build_digest(store, project, DAY)
    spenders = {r["tenant"]: r for r in digest.top_spenders}
    assert spenders["private"]["unpriced_calls"] == 5 and spenders["cheap"]["unpriced_calls"] == 0
    lines = digest.lines()
    assert "cost $0.0000310 + 5 unpriced" in lines[0]  # not "$0.00"
    top = next(line for line in lines if line.startswith("Top spenders"))
    assert "cheap $0.0000310" in top and "private unpriced" in top
    html = digest.html()
    assert 'id="cost">$0.0000310 + 5 unpriced<' in html
    assert ">unpriced</td>" in html and "$0.00<" not in html


def test_digest_goes_out_once_a_day_without_paging(store):
    project = "digest-send"
    store.insert("llm_spans", encode_rows(rows(project, DAY, 30, cost=0.02)))
    receiver = Receiver()
    try:
        notifier = WebhookNotifier(receiver.url + "/hook", external_url="http://dash")
        morning = datetime(DAY.year, DAY.month, DAY.day, 8, 5, tzinfo=timezone.utc) + timedelta(days=1)
        Evaluator(store, [notifier], digest_hour_utc=8).run_once(morning)
        Evaluator(store, [notifier], digest_hour_utc=8).run_once(morning + timedelta(minutes=1))  # a restart
        mine = [b for b in receiver.bodies("/hook") if b["alerts"][0]["labels"].get("project") == project]
        assert len(mine) == 1
        alert = mine[0]["alerts"][0]
        assert alert["labels"]["alertname"] == "DailyDigest" and alert["labels"]["severity"] == "info"
        assert alert["generatorURL"] == f"http://dash/digest?date={DAY.isoformat()}"
        assert "30 calls" in alert["annotations"]["summary"]
    finally:
        receiver.stop()


def test_digest_shows_each_services_error_rate_against_the_day_and_week_before(store):
    project = "digest-services"

    def calls(day, service, n, every):
        start = datetime(day.year, day.month, day.day, 9, tzinfo=timezone.utc)
        return [{"project": project, "ts": (start + timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S"),
                 "service": service, "operation": "chat", "status": "error" if i % every == 0 else "ok"}
                for i in range(n)]

    spans = calls(DAY, "rag", 1000, 40) + calls(DAY - timedelta(days=1), "rag", 1000, 100)
    spans += calls(DAY - timedelta(days=7), "rag", 1000, 100) + calls(DAY, "steady", 500, 100)
    spans += calls(DAY - timedelta(days=1), "steady", 500, 100)
    store.insert("llm_spans", encode_rows(spans))
    digest = build_digest(store, project, DAY)
    rag, steady = digest.service_errors
    assert (rag["service"], rag["error_rate"], rag["day_before"], rag["week_before"], rag["up"]) == (
        "rag", 0.025, 0.01, 0.01, True)
    assert steady["up"] is False and steady["week_before"] is None
    assert "Error rate up (under the pager): rag 2.50% (1.00% the day before, 1.00% a week before)" in digest.lines()
    assert "rag ▲" in digest.html()


def test_a_day_not_over_is_the_day_so_far_against_the_same_hours_before(store):
    project = "digest-so-far"
    morning, evening = rows(project, DAY - timedelta(days=1), 40, cost=0.01), rows(
        project, DAY - timedelta(days=1), 60, cost=0.01)
    for row in evening:
        row["ts"] = row["ts"].replace(" 09:", " 20:")
    store.insert("llm_spans", encode_rows(rows(project, DAY, 50, cost=0.01) + morning + evening))
    noon = datetime(DAY.year, DAY.month, DAY.day, 12, 30, tzinfo=timezone.utc)
    digest = build_digest(store, project, DAY, noon)
    assert digest.until == noon and digest.period == f"{DAY} until 12:30 UTC"
    assert (digest.totals["llm_calls"], digest.previous["llm_calls"]) == (50, 40)  # not yesterday's 100
    assert digest.lines()[0].startswith(f"{project} on {DAY} until 12:30 UTC: 50 calls (+25% vs the day before)")
    whole = build_digest(store, project, DAY, noon + timedelta(days=1))
    assert whole.until is None and whole.previous["llm_calls"] == 100


def test_the_digest_lists_the_days_silences_and_acknowledgements(store):
    project = "digest-silences"
    start = datetime(DAY.year, DAY.month, DAY.day, 10, tzinfo=timezone.utc)
    save_silence(store, new_silence(project, [parse_matcher("service=~check.*")], starts_at=start,
                                    ends_at=start + timedelta(hours=2), created_by="dana", comment="<b>deploy</b>",
                                    now=start))
    save_silence(store, new_silence(project, [parse_matcher("tenant=acme")], starts_at=start - timedelta(days=3),
                                    ends_at=start - timedelta(days=2), created_by="old", comment="over",
                                    now=start - timedelta(days=3)))
    save_ack(store, Ack(project, "0123456789abcdef", start, start + timedelta(minutes=5), "lee", "on it",
                        "ErrorRateSpike", "checkout: 40% errors"))
    digest = build_digest(store, project, DAY)
    (silence,) = digest.silences
    assert silence["createdBy"] == "dana" and silence["matchers"][0]["value"] == "check.*"
    (ack,) = digest.acks
    assert (ack["alertname"], ack["ackedBy"], ack["note"]) == ("ErrorRateSpike", "lee", "on it")
    lines = digest.lines()
    assert "Silenced: service=~check.* by dana (<b>deploy</b>)" in lines
    assert "Acknowledged: ErrorRateSpike by lee (on it)" in lines
    html = digest.html()
    assert "&lt;b&gt;deploy&lt;/b&gt;" in html and ">lee<" in html and ">old<" not in html


def test_the_digest_page_is_today_so_far_with_navigation_and_a_date_picker(collector):
    today = datetime.now(timezone.utc).date()
    page = http.get(f"{collector.url}/digest")
    assert page.status_code == 200
    assert f"Daily digest: {collector.project}, {today} (UTC)" in page.text and "so far, until" in page.text
    assert 'class="on" aria-current="page">Digest<' in page.text  # the dashboards' navigation
    assert f'<input type="date" name="date" value="{today}" max="{today}">' in page.text
    assert f'href="/digest?date={today - timedelta(days=1)}" id="previous-day"' in page.text
    assert 'id="next-day"' not in page.text
    past = http.get(f"{collector.url}/digest", params={"date": str(DAY)}).text
    assert f'href="/digest?date={DAY + timedelta(days=1)}" id="next-day"' in past and "so far" not in past
    assert http.get(f"{collector.url}/api/v1/digest").json()["day"] == str(today)
    assert http.get(f"{collector.url}/digest", params={"date": "tomorrow"}).status_code == 400
