"""The evaluator over the real embedded store, notifying local receivers in the real formats."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from infersight.collector.alerts import (
    AlertmanagerNotifier,
    ErrorRateRule,
    Evaluator,
    SlackNotifier,
    WebhookNotifier,
    history,
)
from infersight.collector.alerts._model import BREACH, CLEAR
from infersight.collector.alerts._rules import ErrorRule
from infersight.collector.store import encode_rows

from .receiver import Receiver

NOW = datetime(2026, 11, 25, 15, 30, tzinfo=timezone.utc)


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def span_rows(project, service, start, minutes, per_minute, error_rate, *, tenant="acme", cost=0.001,
              route="support.answer", model="gpt-4o-mini", seed=0):
    rng = random.Random(seed)
    rows = []
    for m in range(minutes):
        for i in range(per_minute):
            failed = rng.random() < error_rate
            rows.append({
                "project": project, "ts": ts(start + timedelta(minutes=m, seconds=i % 60)), "service": service,
                "tenant": tenant, "route": route, "model": model, "operation": "chat", "cost_usd": cost,
                "duration_s": 0.5, "status": "error" if failed else "ok",
                "error_class": "transient" if failed else "",
            })
    return rows


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.stop()


def notifiers(receiver):
    return [
        AlertmanagerNotifier(receiver.url, external_url="http://dash"),
        WebhookNotifier(receiver.url + "/hook", external_url="http://dash"),
        SlackNotifier(receiver.url + "/slack", external_url="http://dash"),
    ]


def mine(alerts, project):
    return [a for a in alerts if a["labels"].get("project") == project]


def test_error_spike_pages_once_survives_restart_and_resolves(store, receiver):
    project = "alerts-errors"
    rows = span_rows(project, "checkout", NOW - timedelta(hours=2), 110, 30, 0.002)
    rows += span_rows(project, "checkout", NOW - timedelta(minutes=10), 10, 30, 0.9, tenant="<b>globex</b>", seed=1)
    store.insert("llm_spans", encode_rows(rows))

    evaluator = Evaluator(store, notifiers(receiver))
    result = evaluator.run_once(NOW)
    fired = [e for e in result.events if e.state.project == project]
    assert [e.kind for e in fired] == ["firing"]
    assert fired[0].state.name == "ErrorRateSpike"
    assert "Most affected tenant: <b>globex</b>" in fired[0].state.details

    (am_batch,) = receiver.bodies("/api/v2/alerts")
    (am,) = mine(am_batch, project)
    assert am["labels"]["alertname"] == "ErrorRateSpike" and am["labels"]["service"] == "checkout"
    assert am["generatorURL"].startswith("http://dash/traces?service=checkout")
    assert am["startsAt"].endswith("Z") and am["endsAt"] > am["startsAt"]
    (hook,) = receiver.bodies("/hook")
    assert hook["version"] == "4" and hook["status"] == "firing"
    assert mine(hook["alerts"], project)[0]["annotations"]["summary"].startswith("checkout:")
    (slack,) = receiver.bodies("/slack")
    assert "FIRING" in slack["text"]
    assert "&lt;b&gt;globex&lt;/b&gt;" in slack["text"] and "<b>" not in slack["text"]  # untrusted tenant name

    # one minute later, and after a restart: still firing, no second page
    assert [e for e in evaluator.run_once(NOW + timedelta(minutes=1)).events if e.state.project == project] == []
    restarted = Evaluator(store, notifiers(receiver))
    assert [e for e in restarted.run_once(NOW + timedelta(minutes=2)).events if e.state.project == project] == []
    # (Only this project's: other tests' alerts in the shared store may resolve meanwhile.)
    assert len([b for b in receiver.bodies("/hook") if mine(b["alerts"], project)]) == 1

    # the failures age out of the windows: resolved once the clear has lasted, with a notification
    later = NOW + timedelta(minutes=45)
    store.insert("llm_spans", encode_rows(span_rows(project, "checkout", NOW, 47, 30, 0.0, seed=2)))
    assert [e for e in restarted.run_once(later).events if e.state.project == project] == []
    resolved = [e for e in restarted.run_once(later + timedelta(minutes=2)).events if e.state.project == project]
    assert [e.kind for e in resolved] == ["resolved"]
    assert receiver.bodies("/hook")[-1]["status"] == "resolved"

    h = history(store, project, NOW - timedelta(hours=1))
    assert h["firing"] == []
    assert [e["event"] for e in h["history"]] == ["resolved", "firing"]
    assert h["history"][0]["delivered"] == ["alertmanager", "webhook", "slack"]


def test_the_error_budget_is_of_llm_calls_not_of_the_steps_around_them(store):
    # A retrieval failing 90% of the time beside healthy LLM calls is no LLM error spike; the
    # same failures on the calls themselves are (the control).
    for project, operation in (("alerts-kind-retrieval", "retrieval"), ("alerts-kind-chat", "chat")):
        healthy = span_rows(project, "rag", NOW - timedelta(hours=2), 120, 30, 0.0)
        failing = span_rows(project, "rag", NOW - timedelta(minutes=10), 10, 30, 0.9, seed=3)
        for row in failing:
            row["operation"] = operation
        store.insert("llm_spans", encode_rows(healthy + failing))
    active = Evaluator(store).run_once(NOW).active
    paged = {a.labels["project"] for a in active if a.name == "ErrorRateSpike"}
    assert "alerts-kind-chat" in paged and "alerts-kind-retrieval" not in paged


def test_failed_delivery_is_retried_next_minute(store, receiver):
    project = "alerts-retry"
    rows = span_rows(project, "search", NOW - timedelta(minutes=70), 70, 20, 0.0)
    rows += span_rows(project, "search", NOW - timedelta(minutes=6), 6, 40, 1.0, seed=3)
    store.insert("llm_spans", encode_rows(rows))
    evaluator = Evaluator(store, [WebhookNotifier(receiver.url + "/hook", external_url="http://dash")])
    receiver.status = 503
    first = evaluator.run_once(NOW)
    assert first.delivery_errors and "503" in first.delivery_errors[0]
    receiver.status = 200
    second = [e for e in evaluator.run_once(NOW + timedelta(minutes=1)).events if e.state.project == project]
    assert [e.kind for e in second] == ["repeat"]  # not yet notified, so due at once


def test_stalled_queue_pages_and_draining_queue_does_not(store):
    project = "alerts-queues"
    rows = []
    for i in range(12):
        t = NOW - timedelta(minutes=11) + timedelta(minutes=i)
        rows.append({"project": project, "service": "worker", "queue": "stuck", "ts": ts(t), "depth": 25.0})
        rows.append({"project": project, "service": "worker", "queue": "busy", "ts": ts(t),
                     "depth": float(200 + (i % 3) * 40 - i)})
    store.insert("queue_depth", encode_rows(rows))
    active = [a for a in Evaluator(store).run_once(NOW).active if a.labels.get("project") == project]
    assert [(a.name, a.labels["queue"]) for a in active] == [("QueueNotDraining", "stuck")]


def test_cost_anomaly_pages_the_route_that_drove_it_once(store):
    # Two tenants on sales.email, one also on support.answer, a span every 5 minutes for three
    # weeks; for the last two hours sales.email costs 4x. The route pages; each tenant's excess is
    # that route's, so no tenant pages a second time. (Rows are LLM calls: cost is of kind 'llm'.)
    project = "alerts-cost"
    rows = []
    at = NOW - timedelta(weeks=3)
    while at < NOW:
        spike = at >= NOW - timedelta(hours=2)
        for tenant, route, usd in (("acme", "support.answer", 0.2), ("acme", "sales.email", 0.1),
                                   ("globex", "sales.email", 0.1)):
            usd = usd * (4 if spike and route == "sales.email" else 1)
            rows.append({"project": project, "ts": ts(at), "service": "app", "tenant": tenant, "route": route,
                         "model": "gpt-4o", "operation": "chat", "user_id": "u-1", "cost_usd": usd, "status": "ok"})
        at += timedelta(minutes=5)
    store.insert("llm_spans", encode_rows(rows))
    active = [a for a in Evaluator(store).run_once(NOW).active if a.labels.get("project") == project]
    assert [(a.name, a.labels) for a in active] == [("CostAnomaly", {"project": project, "route": "sales.email"})]
    alert = active[0]
    assert alert.numbers["cost_usd"] == pytest.approx(9.6) and alert.numbers["baseline_usd"] == pytest.approx(2.4)
    assert alert.details.startswith("Spent: the route's LLM calls of the last hour, $9.60. Usual: ")
    assert " Excess driven by tenants: " in alert.details  # spans without a trace are never left out
    assert "acme $4.80 ($1.20 a week earlier)" in alert.details and "globex $4.80" in alert.details
    assert alert.since == NOW.replace(second=0) - timedelta(hours=1)  # the window's reach, not later


class _Recording:
    """The real store, its queries recorded."""

    def __init__(self, store):
        self.store, self.sql = store, []

    def query(self, sql, params=None):
        self.sql.append(sql)
        return self.store.query(sql, params)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_prepared_a_minute_before_the_first_evaluation_reads_no_history_and_pages_the_same(store):
    # As the collector starts its alert job: prepare() reads the hourly history and the usual
    # error ratios; the first evaluation a minute later reads only its last hour, and pages as an
    # evaluator that read everything itself.
    project = "alerts-prepared"
    rows = []
    at = NOW - timedelta(weeks=3)
    while at < NOW:
        usd = 0.4 if at >= NOW - timedelta(hours=2) else 0.1
        rows.append({"project": project, "ts": ts(at), "service": "app", "tenant": "acme", "route": "sales.email",
                     "model": "gpt-4o", "operation": "chat", "cost_usd": usd, "status": "ok"})
        at += timedelta(minutes=5)
    store.insert("llm_spans", encode_rows(rows))
    recording = _Recording(store)
    prepared = Evaluator(recording)
    prepared.prepare(NOW - timedelta(minutes=1))
    history = [q for q in recording.sql if "toStartOfHour(ts)" in q or "toDate(minute, 'UTC')" in q]
    assert len(history) == 2  # the cost rule's hours and the services' days
    recording.sql.clear()
    first = {(a.name, tuple(sorted(a.labels.items()))) for a in prepared.run_once(NOW).active}
    assert not [q for q in recording.sql if "toStartOfHour(ts)" in q or "toDate(minute, 'UTC')" in q]
    alone = {(a.name, tuple(sorted(a.labels.items()))) for a in Evaluator(store).run_once(NOW).active}
    assert ("CostAnomaly", (("project", project), ("tenant", "acme"))) in first  # its route is all acme
    assert first == alone


@pytest.mark.parametrize(("sessions", "pages"), [(4, False), (20, True)])
def test_a_small_tenant_of_a_few_sessions_an_hour_pages_on_many_more_not_on_two(store, sessions, pages):
    # Two $0.10 sessions (traces) an hour for three weeks; the last hour has ``sessions``. Each
    # hour's costliest trace is trimmed, so every past hour's residual is 0: only the cost of one
    # trace says what two more sessions mean (nothing), while 20 is 19x beyond any chance.
    project = f"alerts-small-{sessions}"
    rows = []
    hour = (NOW - timedelta(weeks=3)).replace(minute=0)
    while hour < NOW:
        last = hour >= NOW - timedelta(hours=1)
        count = sessions if last else 2
        for k in range(count):
            at = hour + timedelta(seconds=(3600 if not last else (NOW - hour).total_seconds()) * k / count)
            rows.append({"project": project, "ts": ts(at), "trace_id": f"{project}-{at.timestamp():.0f}-{k}",
                         "service": "agent", "tenant": "small", "route": "agent.plan", "model": "gpt-4o",
                         "operation": "chat", "cost_usd": 0.1, "status": "ok"})
        hour += timedelta(hours=1)
    store.insert("llm_spans", encode_rows(rows))
    active = [a for a in Evaluator(store).run_once(NOW).active if a.labels.get("project") == project]
    assert bool([a for a in active if a.labels.get("tenant") == "small"]) is pages


def test_the_evaluator_runs_the_windowed_detectors_once_per_minute(store):
    from infersight.detectors import WindowedRunner
    from tests.detectors.test_windowed import _span

    project = "alerts-windowed"
    now = datetime(2026, 11, 26, 10, 5, 30, tzinfo=timezone.utc)
    start_ns = int((now - timedelta(minutes=3)).timestamp()) * 10**9
    loop = [
        _span(project, i, start_ns + i * 10**9, route="support.answer", input_tokens=900, output_tokens=40,
              duration_s=0.8, ttft_s=0.2, cost_usd=0.002, prompt="Summarise ticket 4417 again", answer="Working on it",
              trace="ab" * 16)
        for i in range(8)
    ]
    store.insert("otel_traces", encode_rows(loop))
    evaluator = Evaluator(store, windowed=WindowedRunner(store, drift=False))
    evaluator.run_once(now - timedelta(minutes=5))  # the first run only sets where to start
    evaluator.run_once(now)
    evaluator.run_once(now)  # same window again: nothing new
    rows = store.query("SELECT label, count() AS n FROM detections WHERE project = {p:String} GROUP BY label",
                       {"p": project})
    assert rows == [{"label": "cost_loop.trace", "n": 8}]


def test_a_route_surging_in_one_project_does_not_deflate_a_tenant_of_another(store):
    # Both projects have a route named sales.email that costs 4x for the last two hours. In
    # 'wide' two tenants share it, so the route pages and its tenants' spend is deflated by its
    # surge; in 'narrow' one tenant is all of it, so that tenant pages, whatever 'wide' does.
    rows = []
    at = NOW - timedelta(weeks=3)
    while at < NOW:
        usd = 0.4 if at >= NOW - timedelta(hours=2) else 0.1
        for project, tenant in (("alerts-wide", "acme"), ("alerts-wide", "globex"), ("alerts-narrow", "acme")):
            rows.append({"project": project, "ts": ts(at), "service": "app", "tenant": tenant, "route": "sales.email",
                         "model": "gpt-4o", "operation": "chat", "cost_usd": usd, "status": "ok"})
        at += timedelta(minutes=5)
    store.insert("llm_spans", encode_rows(rows))
    active = {(a.labels["project"], a.labels.get("route"), a.labels.get("tenant"))
              for a in Evaluator(store).run_once(NOW).active
              if a.labels.get("project") in ("alerts-wide", "alerts-narrow")}
    assert active == {("alerts-wide", "sales.email", None), ("alerts-narrow", None, "acme")}


def test_a_pricier_model_minutes_old_pages_for_its_route_not_first_for_a_tenant_all_on_it(store):
    # Two tenants send a $0.10 request a minute each to docs.summarize for three weeks; in the
    # last hour globex sends half as many. At ``switch`` the route's model turns 10x pricier.
    # Nine minutes on, acme (all on the route) has doubled its hour (2.2x) while the route,
    # diluted by globex's quiet hour, is at 1.7x: the new price is the route's, and acme must
    # not page for it, then or once the route pages.
    project, route = "alerts-pricier", "docs.summarize"
    switch, later = NOW - timedelta(minutes=9), NOW + timedelta(minutes=13)
    rows = []
    at = NOW - timedelta(weeks=3)
    while at < later:
        for tenant in ("acme", "globex"):
            if tenant == "globex" and at >= NOW - timedelta(hours=1) and at.minute % 2:
                continue
            rows.append({"project": project, "ts": ts(at), "trace_id": f"{tenant}-{at.timestamp():.0f}",
                         "service": "app", "tenant": tenant, "route": route, "model": "gpt-4o", "operation": "chat",
                         "cost_usd": 1.0 if at >= switch else 0.1, "status": "ok"})
        at += timedelta(minutes=1)
    store.insert("llm_spans", encode_rows(rows))

    def paged(now: datetime) -> set[tuple[str, str]]:
        return {(k, v) for a in Evaluator(store).run_once(now).active if a.labels.get("project") == project
                for k, v in a.labels.items() if k in ("tenant", "route")}

    assert paged(NOW) == set()
    assert paged(later) == {("route", route)}


def test_a_creep_that_cleared_does_not_page_again_for_the_errors_still_in_its_hour(store):
    # 13 calls a minute with no errors for an hour, then one in 13 failing for 30 minutes (a
    # creep: under the outage's 15%), then none but three stray errors 18-24 minutes after its
    # end. The hour still holds the creep's 30 errors; the strays lift the last 10 minutes to
    # 3.5x the usual, and those 30 errors paged once already.
    project, start = "alerts-creep-once", NOW - timedelta(days=2)
    onset, end = start + timedelta(hours=1), start + timedelta(hours=1, minutes=30)
    strays = {end + timedelta(minutes=m) for m in (18, 21, 24)}
    rows = []
    for m in range(150):
        minute = start + timedelta(minutes=m)
        for i in range(13):
            failed = (onset <= minute < end and i == 6) or (minute in strays and i == 0)
            rows.append({"project": project, "ts": ts(minute + timedelta(seconds=4 * i + 2)), "service": "rag",
                         "trace_id": f"{project}-{m}-{i}", "tenant": "acme", "route": "support.answer",
                         "model": "gpt-4o-mini", "operation": "chat", "cost_usd": 0.001,
                         "status": "error" if failed else "ok"})
    store.insert("llm_spans", encode_rows(rows))
    rule = ErrorRule(ErrorRateRule())
    states = []
    for m in range(61, 150):
        verdicts = [v for v in rule.verdicts(store, start + timedelta(minutes=m, seconds=30))
                    if v.alert.labels.get("project") == project]
        states.append(verdicts[0].state if verdicts else None)
    first_clear = states.index(CLEAR, states.index(BREACH))
    assert first_clear + 61 < 90 + 18  # it cleared before the strays came
    assert BREACH not in states[first_clear:]


def test_an_outage_is_labelled_one_and_dated_by_its_first_failed_call_on_every_channel(store, receiver):
    # a provider fails every call from 13:44:43; "checkout" (60 calls a minute) and "faq" (2, with
    # two stray errors half an hour before) both call it
    project = "ev-outage-text"
    start, outage = NOW - timedelta(hours=3), datetime(2026, 11, 25, 13, 44, 43, tzinfo=timezone.utc)
    rows = []
    for service, per_minute in (("checkout", 60), ("faq", 2)):
        at, step = start, timedelta(seconds=60 / per_minute)
        while at < outage + timedelta(minutes=8):
            failed = at >= outage
            rows.append({"project": project, "ts": ts(at), "service": service, "operation": "chat",
                         "status": "error" if failed else "ok", "error_class": "transient" if failed else ""})
            at += step
    for stray in (outage - timedelta(minutes=31), outage - timedelta(minutes=29, seconds=30)):
        rows.append({"project": project, "ts": ts(stray), "service": "faq", "operation": "chat", "status": "error",
                     "error_class": "transient"})
    store.insert("llm_spans", encode_rows(rows))
    evaluator = Evaluator(store, notifiers(receiver))
    now = outage + timedelta(minutes=8, seconds=17)
    for m in range(8, 0, -1):
        evaluator.run_once(now - timedelta(minutes=m))
    evaluator.run_once(now)
    pages = store.query("SELECT labels['service'] AS service, summary, link, toString(ts) AS at FROM alert_events"
                        " WHERE project = {p:String} AND event = 'firing'", {"p": project})
    assert {p["service"] for p in pages} >= {"checkout"}
    first_failure = {"checkout": "13:44:43", "faq": "13:45:00"}  # faq calls on the minute and half minute
    for page in pages:  # every page of this outage, whichever service: an outage, since its first failure
        assert "outage" in page["summary"] and "creeping" not in page["summary"], page
        assert f"since {first_failure[page['service']]} UTC" in page["summary"], page
    checkout = next(p for p in pages if p["service"] == "checkout")
    at = datetime.fromisoformat(checkout["at"]).replace(tzinfo=timezone.utc)
    assert checkout["link"] == (f"/traces?service=checkout&start=2026-11-25T13%3A44%3A43Z"
                                f"&end={at:%Y-%m-%dT%H}%3A{at:%M}%3A{at:%S}Z&status=error&sort=errors")
    am = [a for body in receiver.bodies("/api/v2/alerts") for a in body
          if a["labels"].get("project") == project and a["labels"]["service"] == "checkout"]
    assert am[0]["startsAt"].startswith("2026-11-25T13:44:43")
    assert am[0]["generatorURL"] == "http://dash" + checkout["link"]
