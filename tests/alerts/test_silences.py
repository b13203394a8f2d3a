"""Silences and acknowledgements on the real embedded store: Alertmanager's matchers, what every
channel is spared and when a held firing goes out, the evaluator with a webhook receiver on a
socket, and the API (Alertmanager's shapes included) over a real socket.

The evaluator holds back notifications of every project at once, so each test here leaves no
firing owed: it ends with the silence lifted and the firing sent, or with the firing resolved.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from infersight.collector._server import CollectorProcess
from infersight.collector.alerts import (
    Ack,
    Evaluator,
    EvaluatorConfig,
    Matcher,
    WebhookNotifier,
    parse_matcher,
    silencing,
)
from infersight.collector.alerts._holds import hold_back
from infersight.collector.alerts._model import fingerprint
from infersight.collector.alerts._routes import alert_history
from infersight.collector.alerts._silences import (
    acks,
    active_silences,
    expire_silence,
    new_silence,
    project_silences,
    save_ack,
    save_silence,
)
from infersight.collector.alerts._state import FIRING, RESOLVED, AlertState, Event
from infersight.collector.errors import BadRequest
from infersight.collector.store import ClickHouseStore, encode_rows
from tests import http
from tests.conftest import free_port, wait_for

from .receiver import Receiver
from .test_evaluator import span_rows

T0 = datetime(2026, 10, 7, 12, 0, tzinfo=timezone.utc)


def project_name(tag: str) -> str:
    return f"sil-{tag}-{uuid.uuid4().hex[:8]}"


# -- matchers ---------------------------------------------------------------------------------


def test_matchers_read_and_match_as_alertmanager_does():
    labels = {"alertname": "ErrorRateSpike", "service": "checkout", "tenant": "acme"}
    cases = {
        'service="checkout"': True, "service=checkout": True, "service!=checkout": False,
        "service=~check.*": True, "service=~check": False,  # anchored at both ends, as in Alertmanager
        'service!~"pay.*"': True, "route=": True,  # a missing label reads as the empty string
        "route!=": False, 'tenant=~"acme|globex"': True, 'tenant="ac\\u006de"': True,
    }
    for text, expected in cases.items():
        assert parse_matcher(text).matches(labels) is expected, text
    assert parse_matcher(' queue !~ "a b" ') == Matcher("queue", "a b", is_regex=True, is_equal=False)
    for m in (Matcher("tenant", 'a"b'), Matcher("x", "y.*", is_regex=True, is_equal=False)):
        assert parse_matcher(m.text()) == m


@pytest.mark.parametrize("text", ["service", "9x=1", "=x", "service=~(a", r"service=~(a)\1", "x=~a{1001}{1001}"])
def test_bad_matchers_are_refused_with_the_reason(text):
    with pytest.raises(BadRequest, match="matcher"):
        parse_matcher(text)


def test_a_regex_from_a_user_runs_in_linear_time():
    # (a+)+$ backtracks exponentially in Python's re; RE2 has no backtracking at all
    assert not parse_matcher("service=~(a+)+b").matches({"service": "a" * 50_000 + "c"})


def test_a_silence_must_be_narrow_end_later_and_say_who_and_why():
    def make(matchers, *, ends=T0 + timedelta(hours=1), who="ops", why="deploy"):
        return new_silence("p", matchers, starts_at=T0, ends_at=ends, created_by=who, comment=why, now=T0)

    make([parse_matcher("service=checkout")])
    for matchers in ([], [parse_matcher("service=~.*")], [parse_matcher("x!=y")]):
        with pytest.raises(BadRequest):
            make(matchers)
    with pytest.raises(BadRequest, match="endsAt"):
        make([parse_matcher("service=checkout")], ends=T0)
    with pytest.raises(BadRequest, match="comment"):
        make([parse_matcher("service=checkout")], why=" ")


# -- holding back, on both store backends ---------------------------------------------------


@pytest.fixture(params=["chdb", "clickhouse"])
def backend(request, store, clickhouse_http):
    """The embedded store, or a ClickHouse server (tests/collector/clickhouse_http.py) over HTTP."""
    if request.param == "chdb":
        yield store
    else:
        server = ClickHouseStore(f"http://default:@{clickhouse_http[len('http://'):]}/silences")
        yield server
        server.close()


def state(project: str, *, service: str = "checkout", starts: datetime = T0) -> AlertState:
    labels = {"project": project, "service": service}
    return AlertState(project=project, fingerprint=fingerprint({"alertname": "ErrorRateSpike", **labels}),
                      name="ErrorRateSpike", status=FIRING, labels=labels, summary=f"{service}: errors",
                      details="", numbers={"error_ratio": 0.5}, link="/traces", starts_at=starts)


def silence(store, project, *matchers, starts=T0 - timedelta(minutes=1), ends=T0 + timedelta(minutes=30)):
    made = new_silence(project, [parse_matcher(m) for m in matchers], starts_at=starts, ends_at=ends,
                       created_by="ops@example.com", comment="deploying a fix", now=starts)
    return save_silence(store, made)


def mine(events, project):
    return [(e.kind, e.state.labels["service"]) for e in events if e.state.project == project]


def test_a_silenced_firing_is_held_then_sent_once_when_the_silence_lifts(backend):
    project = project_name("lift")
    muted = silence(backend, project, "alertname=ErrorRateSpike", "service=~check.*")
    checkout, search = state(project), state(project, service="search")
    at = T0 + timedelta(minutes=1)
    assert mine(hold_back(backend, [Event(FIRING, checkout), Event(FIRING, search)], at), project) == [
        ("firing", "search")]
    assert mine(hold_back(backend, [Event("repeat", checkout)], at + timedelta(minutes=1)), project) == []
    assert mine(hold_back(backend, [], at + timedelta(minutes=2)), project) == []  # still silenced: still owed

    expire_silence(backend, project, muted.id, at + timedelta(minutes=3))
    assert active_silences(backend, at + timedelta(minutes=3)).get(project) is None
    released = [e for e in hold_back(backend, [], at + timedelta(minutes=4)) if e.state.project == project]
    assert [(e.kind, e.state.labels["service"], e.state.summary) for e in released] == [
        ("firing", "checkout", "checkout: errors")]
    assert released[0].state.starts_at == T0  # the firing it always was, not a new one
    assert mine(hold_back(backend, [], at + timedelta(minutes=5)), project) == []  # sent once


def test_a_firing_that_resolves_under_its_silence_is_never_sent(backend):
    project = project_name("resolve")
    silence(backend, project, "service=checkout")
    firing = state(project)
    assert mine(hold_back(backend, [Event(FIRING, firing)], T0), project) == []
    resolved = replace(firing, status=RESOLVED, ends_at=T0 + timedelta(minutes=5))
    assert mine(hold_back(backend, [Event(RESOLVED, resolved)], T0 + timedelta(minutes=5)), project) == []
    # the silence ends while nothing fires: nothing is owed
    assert mine(hold_back(backend, [], T0 + timedelta(hours=1)), project) == []


def test_a_resolve_of_a_firing_already_sent_goes_out_under_a_silence(backend):
    project = project_name("sent")
    firing = state(project)
    assert mine(hold_back(backend, [Event(FIRING, firing)], T0 - timedelta(minutes=5)), project) == [
        ("firing", "checkout")]
    silence(backend, project, "service=checkout")
    assert mine(hold_back(backend, [Event("repeat", firing)], T0), project) == []
    resolved = replace(firing, status=RESOLVED, ends_at=T0 + timedelta(minutes=1))
    assert mine(hold_back(backend, [Event(RESOLVED, resolved)], T0 + timedelta(minutes=1)), project) == [
        ("resolved", "checkout")]  # the page it opened gets closed


def test_silences_belong_to_their_project(backend):
    project, other = project_name("own"), project_name("other")
    silence(backend, project, "service=checkout")
    assert mine(hold_back(backend, [Event(FIRING, state(other))], T0), other) == [("firing", "checkout")]


def test_an_ack_stops_repeats_until_the_firing_resolves(backend):
    project = project_name("ack")
    firing = state(project)
    assert mine(hold_back(backend, [Event(FIRING, firing)], T0), project) == [("firing", "checkout")]
    save_ack(backend, Ack(project, firing.fingerprint, T0, T0 + timedelta(minutes=2), "dana", "on it"))
    assert mine(hold_back(backend, [Event("repeat", firing)], T0 + timedelta(hours=4)), project) == []
    resolved = replace(firing, status=RESOLVED, ends_at=T0 + timedelta(hours=5))
    assert mine(hold_back(backend, [Event(RESOLVED, resolved)], T0 + timedelta(hours=5)), project) == [
        ("resolved", "checkout")]
    again = state(project, starts=T0 + timedelta(hours=6))  # a new firing: the ack was of the last one
    assert mine(hold_back(backend, [Event(FIRING, again)], T0 + timedelta(hours=6)), project) == [
        ("firing", "checkout")]
    (ack,) = acks(backend, project)
    assert (ack.acked_by, ack.note, ack.starts_at) == ("dana", "on it", T0)


def test_a_silence_lives_from_start_to_expiry_and_edits_keep_its_id(backend):
    project = project_name("life")
    pending = silence(backend, project, "service=checkout", starts=T0 + timedelta(minutes=10),
                      ends=T0 + timedelta(hours=1))
    running = silence(backend, project, "tenant=~acme|globex", starts=T0 - timedelta(minutes=1))
    active = {s.id for s in active_silences(backend, T0).get(project, [])}
    assert active == {running.id}
    assert project_silences(backend, project, T0)[0].id == pending.id  # latest end first
    edited = save_silence(backend, replace(running, comment="longer", ends_at=T0 + timedelta(hours=3),
                                           updated_at=T0 + timedelta(seconds=1)))
    (found,) = [s for s in project_silences(backend, project, T0) if s.id == running.id]
    assert (found.comment, found.ends_at) == ("longer", edited.ends_at)
    assert expire_silence(backend, project, pending.id, T0).state(T0) == "expired"  # a pending one never starts
    assert active_silences(backend, T0 + timedelta(minutes=20)).get(project, []) == [found]
    assert expire_silence(backend, project, "no-such-id", T0) is None
    assert project_silences(backend, project, T0 + timedelta(hours=4)) == []
    assert len(project_silences(backend, project, T0 + timedelta(hours=4), expired_for=timedelta(days=1))) == 2


# -- the evaluator, a webhook on a socket ---------------------------------------------------


def test_the_evaluator_sends_nothing_while_silenced_and_pages_when_the_silence_expires(store):
    project = project_name("eval")
    now = T0 + timedelta(days=3)
    rows = span_rows(project, "checkout", now - timedelta(hours=2), 110, 30, 0.002)
    rows += span_rows(project, "checkout", now - timedelta(minutes=10), 10, 30, 0.9, seed=1)
    store.insert("llm_spans", encode_rows(rows))
    muted = silence(store, project, "alertname=ErrorRateSpike", "service=checkout",
                    starts=now - timedelta(minutes=5), ends=now + timedelta(hours=1))
    receiver = Receiver()
    clock = [now]
    evaluator = Evaluator(store, [WebhookNotifier(receiver.url + "/hook", external_url="http://dash")],
                          EvaluatorConfig(repeat_interval=timedelta(hours=4)), clock=lambda: clock[0])
    try:
        def pages() -> list[dict]:
            return [a for body in receiver.bodies("/hook") for a in body["alerts"]
                    if a["labels"].get("project") == project]

        fired = [e for e in evaluator.run_once().events if e.state.project == project]
        assert [e.kind for e in fired] == ["firing"]  # evaluated and stored ...
        clock[0] = now + timedelta(minutes=1)
        evaluator.run_once()
        assert pages() == []  # ... never sent
        events = alert_history(store, project, now - timedelta(hours=1), clock[0])["history"]
        # held is handled: no repeat written (and no failed delivery) every minute while silenced
        assert [(e["event"], e["held_by"], e["failed"]) for e in events] == [("firing", muted.id, [])]

        expire_silence(store, project, muted.id, now + timedelta(minutes=2))
        clock[0] = now + timedelta(minutes=2)
        evaluator.run_once()
        (page,) = pages()
        assert page["status"] == "firing" and page["labels"]["service"] == "checkout"
        clock[0] = now + timedelta(minutes=3)
        evaluator.run_once()
        assert len(pages()) == 1
        events = alert_history(store, project, now - timedelta(hours=1), clock[0])["history"]
        (held,) = silencing(store, project, [], clock[0], events)["held"]
        assert held == {"silence": muted.id, "outcome": {"state": "sent", "at": "2026-10-10 12:02:00"}}
    finally:
        receiver.stop()


# -- the API over a socket -------------------------------------------------------------------


def test_silences_api_in_alertmanager_shape_per_project(auth_collector):
    url, alpha, beta = auth_collector.url, auth_collector.headers("alpha"), auth_collector.headers("beta")
    ends = (datetime.now(timezone.utc) + timedelta(hours=2)).isoformat().replace("+00:00", "Z")
    body = {"matchers": [{"name": "alertname", "value": "CostAnomaly", "isRegex": False, "isEqual": True},
                         {"name": "tenant", "value": "acme|globex", "isRegex": True}],
            "endsAt": ends, "comment": "known migration"}
    created = http.post(f"{url}/api/v2/silences", json=body, headers=alpha)
    assert created.status_code == 200, created.text
    silence_id = created.json()["silenceID"]

    (listed,) = http.get(f"{url}/api/v2/silences", headers=alpha).json()
    assert listed["id"] == silence_id and listed["status"] == {"state": "active"}
    assert listed["createdBy"] == "key " + auth_collector.keys["alpha"][:12]  # nobody named: the key
    assert listed["matchers"][1] == {"name": "tenant", "value": "acme|globex", "isRegex": True, "isEqual": True}
    assert http.get(f"{url}/api/v1/silences", headers=beta).json() == {"silences": []}
    assert http.delete(f"{url}/api/v1/silences/{silence_id}", headers=beta).status_code == 404

    v1 = http.post(f"{url}/api/v1/silences", headers=alpha, json={
        "matchers": ["queue=ingest", 'service!~"batch-.*"'], "endsAt": ends, "createdBy": "dana", "comment": "x"})
    assert v1.status_code == 200 and v1.json()["silence"]["createdBy"] == "dana"

    assert http.delete(f"{url}/api/v2/silence/{silence_id}", headers=alpha).status_code == 200
    gone = http.get(f"{url}/api/v2/silence/{silence_id}", headers=alpha).json()
    assert gone["status"]["state"] == "expired"

    refused = {
        "no end": {"matchers": ["queue=x"], "comment": "x"},
        "bad regex": {"matchers": ["queue=~(x"], "endsAt": ends, "comment": "x"},
        "mutes all": {"matchers": ["queue=~.*"], "endsAt": ends, "comment": "x"},
    }
    for why, bad in refused.items():
        answer = http.post(f"{url}/api/v1/silences", headers=alpha, json=bad)
        assert answer.status_code == 400, (why, answer.text)
    assert http.post(f"{url}/api/v1/alerts/0123456789abcdef/ack", headers=alpha).status_code == 404


def test_forms_refuse_other_sites(collector):
    form = {"matchers": "service=checkout", "comment": "x"}
    for headers in ({}, {"origin": "https://evil.example"}, {"sec-fetch-site": "cross-site"}):
        assert http.post(f"{collector.url}/alerts/silences", data=form, headers=headers).status_code == 403
    mine_ = http.post(f"{collector.url}/alerts/silences", data=form, headers={"sec-fetch-site": "same-origin"},
                      follow_redirects=False)
    assert mine_.status_code == 303 and mine_.headers["location"] == "/alerts"
    api = http.post(f"{collector.url}/api/v1/silences", headers={"origin": "https://evil.example"},
                    json={"matchers": ["service=checkout"], "endsAt": "2099-01-01T00:00:00Z", "comment": "x"})
    assert api.status_code == 403
    (listed,) = http.get(f"{collector.url}/api/v1/silences").json()["silences"]
    assert listed["createdBy"] == "anonymous (no keys)" and listed["matchers"][0]["value"] == "checkout"


# -- a collector process, the SDK and a webhook -----------------------------------------------


def test_a_running_collector_holds_a_silenced_page_and_sends_it_when_the_silence_is_deleted(tmp_path):
    receiver = Receiver()
    process = CollectorProcess(tmp_path / "d", free_port(), extra_args=(
        "--no-auth", "--decode-workers", "0", "--evaluation-interval", "0.5",
        "--alert-webhook-url", receiver.url + "/hook",
    )).start()
    try:
        ends = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()
        created = http.post(f"{process.url}/api/v2/silences", json={
            "matchers": [{"name": "alertname", "value": "ErrorRateSpike", "isRegex": False, "isEqual": True},
                         {"name": "service", "value": "check.*", "isRegex": True, "isEqual": True}],
            "endsAt": ends, "createdBy": "dana", "comment": "provider incident, tracked elsewhere"})
        assert created.status_code == 200, created.text
        silence_id = created.json()["silenceID"]

        sdk.init(service_name="checkout", endpoint=process.url,
                 tracer_provider=TracerProvider(resource=Resource.create({"service.name": "checkout"})))

        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def ask():
            raise TimeoutError("provider timed out")

        for _ in range(150):
            with contextlib.suppress(TimeoutError):
                ask()
        sdk.force_flush(10_000)
        sdk.shutdown()

        def firing() -> list[dict]:
            return http.get(f"{process.url}/api/v1/alerts").json()["firing"]

        (alert,) = wait_for(firing, timeout_s=120)
        # the state is stored after its evaluation's delivery: a page would be here already
        assert alert["silenced_by"]["id"] == silence_id and alert["silenced_by"]["createdBy"] == "dana"
        assert receiver.bodies("/hook") == []

        assert http.delete(f"{process.url}/api/v1/silences/{silence_id}").status_code == 200
        (page,) = wait_for(lambda: receiver.bodies("/hook"), timeout_s=120)
        (sent,) = page["alerts"]
        assert sent["status"] == "firing" and sent["labels"]["service"] == "checkout"

        ack = http.post(f"{process.url}/api/v1/alerts/{alert['fingerprint']}/ack", json={"note": "mitigating"})
        assert ack.status_code == 200, ack.text
        (acked,) = firing()
        assert acked["ack"]["note"] == "mitigating" and acked["ack"]["ackedBy"] == "anonymous (no keys)"
        assert acked["silenced_by"] is None
    finally:
        process.stop()
        receiver.stop()
