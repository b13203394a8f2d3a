"""Pages offer a form only to a session whose key's role may post it, over a real socket: a read
session sees the Alerts page's silences and acknowledgements and the trace's feedback without
the forms it would be refused; an admin session gets the forms. The login page says which key
to paste; the Alerts page says which collector evaluates the alerts."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest

from infersight.collector.alerts._model import fingerprint
from infersight.collector.store import Lease, clickhouse_time, encode_rows
from infersight.collector.web import ProjectKeys
from tests import http
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import wait_for_spans

JSON = {"content-type": "application/json"}
FORMS = ('action="/alerts/silences"', 'class="ack-form"', "/expire\"")


def _session(auth_collector, role: str) -> dict[str, str]:
    keys = ProjectKeys(auth_collector.data_dir)
    try:
        key = keys.create(auth_collector.projects["alpha"], role=role)[0]
    finally:
        keys.close()
    url = auth_collector.url
    login = http.post(f"{url}/login", data={"key": key, "next": "/"}, headers={"origin": url})
    assert login.status_code == 303, login.text
    return {"infersight_session": login.cookies["infersight_session"]}


def _fire(store, project: str) -> str:
    labels = {"project": project, "service": "checkout"}
    fp = fingerprint({"alertname": "ErrorRateSpike", **labels})
    now = datetime.now(timezone.utc)
    store.insert("alerts", encode_rows([{
        "project": project, "fingerprint": fp, "name": "ErrorRateSpike", "status": "firing", "labels": labels,
        "summary": "checkout: 40% of 200 calls failed", "details": "", "numbers": {"error_ratio": 0.4},
        "link": "/traces?service=checkout", "starts_at": clickhouse_time(now - timedelta(minutes=5)),
        "ends_at": None, "last_notified_at": None, "updated_at": clickhouse_time(now),
    }]))
    return fp


@pytest.fixture
def alerted(auth_collector, store):
    """alpha with one firing alert, silenced and acknowledged by an admin session through the page's
    own forms; yields (collector, read session, admin session, fingerprint)."""
    url = auth_collector.url
    fp = _fire(store, auth_collector.projects["alpha"])
    read, admin = _session(auth_collector, "read"), _session(auth_collector, "admin")
    origin = {"origin": url}
    silenced = http.post(f"{url}/alerts/silences", cookies=admin, headers=origin, data={
        "matchers": 'alertname="ErrorRateSpike"', "duration": "1h", "created_by": "dana", "comment": "INC-7"})
    assert silenced.status_code == 303, silenced.text
    acked = http.post(f"{url}/alerts/{fp}/ack", cookies=admin, headers=origin, data={"by": "lee", "note": "on it"})
    assert acked.status_code == 303, acked.text
    return auth_collector, read, admin, fp


def test_a_read_session_sees_silences_and_acks_but_no_forms(alerted):
    auth_collector, read, _, fp = alerted
    page = http.get(f"{auth_collector.url}/alerts", cookies=read)
    assert page.status_code == 200
    card = page.text[page.text.index(f'id="alert-{fp}"'):page.text.index('id="silences"')]
    assert "silenced" in card and "dana" in card and "INC-7" in card
    assert "acknowledged" in card and "lee" in card and "on it" in card
    silences = page.text[page.text.index('id="silences"'):page.text.index('id="history"')]
    assert "INC-7" in silences and "active" in silences
    for form in FORMS:
        assert form not in page.text, form
    assert 'id="read-only"' in page.text and "admin key" in page.text and "--role admin" in page.text


def test_an_admin_session_gets_the_silence_and_expire_forms(alerted):
    auth_collector, _, admin, fp = alerted
    page = http.get(f"{auth_collector.url}/alerts", cookies=admin)
    assert page.status_code == 200
    card = page.text[page.text.index(f'id="alert-{fp}"'):page.text.index('id="silences"')]
    assert 'action="/alerts/silences"' in card
    silences = page.text[page.text.index('id="silences"'):page.text.index('id="history"')]
    assert "/expire\"" in silences
    assert 'id="read-only"' not in page.text


def test_an_admin_session_gets_the_acknowledge_form_on_an_unacknowledged_alert(auth_collector, store):
    fp = _fire(store, auth_collector.projects["alpha"])
    url = auth_collector.url
    pages = {role: http.get(f"{url}/alerts", cookies=_session(auth_collector, role)).text for role in ("read", "admin")}
    assert f'action="/alerts/{fp}/ack"' in pages["admin"] and 'action="/alerts/silences"' in pages["admin"]
    assert f'id="alert-{fp}"' in pages["read"]
    for form in FORMS:
        assert form not in pages["read"], form


def test_the_trace_feedback_form_is_offered_to_admin_sessions_only(auth_collector):
    url = auth_collector.url
    body, _ = genai_spans_json(1)
    trace_id = json.loads(body)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    sent = http.post(f"{url}/v1/traces", content=body, headers={**JSON, **auth_collector.headers("alpha")})
    assert sent.status_code == 200
    wait_for_spans(url, 1, auth_collector.headers("alpha"))
    form = f'action="/traces/{trace_id}/feedback"'
    read = http.get(f"{url}/traces/{trace_id}", cookies=_session(auth_collector, "read"))
    assert read.status_code == 200 and form not in read.text
    assert 'id="feedback-read-only"' in read.text and "admin key" in read.text
    admin = http.get(f"{url}/traces/{trace_id}", cookies=_session(auth_collector, "admin"))
    assert admin.status_code == 200 and form in admin.text and 'id="feedback-read-only"' not in admin.text


def test_the_login_page_asks_for_a_read_or_admin_key_and_says_how_to_make_one(auth_collector):
    page = http.get(f"{auth_collector.url}/login")
    assert page.status_code == 200
    which = page.text[page.text.index('id="which-key"'):]
    assert "read key" in which and "admin key" in which and "ingest key" in which
    assert "infersight keys create --project NAME --role read" in page.text


def test_the_alerts_page_names_the_collector_holding_the_evaluator_lease(auth_collector, store):
    url, read = auth_collector.url, _session(auth_collector, "read")
    # This collector runs no evaluator (alerts off); one elsewhere in the deployment takes the lease.
    # Its claim lasts an hour, so however slow this machine is, the page reads it while it holds.
    elsewhere = Lease(store, "alerts", "collector-b:4242:abc123", ttl_s=3600, wall=time.time)
    assert elsewhere.renew(), "another evaluator holds the store's alerts lease"
    try:
        page = http.get(f"{url}/alerts", cookies=read).text
        line = page[page.index('id="evaluator"'):]
        line = line[:line.index("</p>")]
        assert "collector-b:4242:abc123" in line and "UTC" in line
        until = datetime.fromtimestamp(elsewhere.current().expires_ms / 1000, timezone.utc)  # type: ignore[union-attr]
        assert until.strftime("%Y-%m-%d %H:%M:%S") in line
    finally:
        elsewhere.release()
    page = http.get(f"{url}/alerts", cookies=read).text
    assert "No evaluator is running" in page and "collector-b" not in page
