"""Project API keys on a real collector: who may write, who sees what, which role reaches which
route, revocation, storage."""

from __future__ import annotations

import json

from click.testing import CliRunner
from fastapi.routing import APIRoute
from google.rpc import status_pb2

from infersight.collector import Settings, create_app
from infersight.collector._cli import main as cli
from infersight.collector.web import ProjectKeys, route_role
from tests import http
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import wait_for, wait_for_spans

JSON = {"content-type": "application/json"}
PROTOBUF = {"content-type": "application/x-protobuf"}
BAD_HEADERS = {
    "no header": {},
    "unknown key": {"authorization": "Bearer isk_" + "A" * 43},
    "not a key": {"authorization": "Bearer hunter2"},
    "bearer without a key": {"authorization": "Bearer"},
    "basic auth": {"authorization": "Basic YWxwaGE6YmV0YQ=="},
}


def test_without_a_valid_key_every_data_route_is_401(auth_collector):
    body, _ = genai_spans_json(2)
    for case, auth in BAD_HEADERS.items():
        sent = http.post(f"{auth_collector.url}/v1/traces", content=body, headers={**JSON, **auth})
        assert sent.status_code == 401, case
        assert sent.headers["www-authenticate"] == "Bearer"
        status = json.loads(sent.text)  # google.rpc.Status, as OTLP/JSON wants
        assert status["code"] == 16 and "key" in status["message"], case
        for path in ("/api/v1/summary", "/api/v1/spans"):
            read = http.get(f"{auth_collector.url}{path}", headers=auth)
            assert read.status_code == 401 and "key" in read.json()["detail"], (case, path)
    metrics = http.get(f"{auth_collector.url}/metrics").text
    assert f'infersight_otlp_rejected_requests_total{{code="401"}} {len(BAD_HEADERS)}' in metrics
    summary = http.get(f"{auth_collector.url}/api/v1/summary", headers=auth_collector.headers("alpha")).json()
    assert summary["spans"] == 0


def test_protobuf_clients_get_a_protobuf_status(auth_collector):
    response = http.post(f"{auth_collector.url}/v1/traces", content=b"", headers=PROTOBUF)
    assert response.status_code == 401
    assert status_pb2.Status.FromString(response.content).code == 16


def test_each_key_sees_only_its_own_project(auth_collector):
    url = auth_collector.url
    alpha, beta = auth_collector.headers("alpha"), auth_collector.headers("beta")
    body_a, ids_a = genai_spans_json(1)
    body_b, ids_b = genai_spans_json(2)
    assert http.post(f"{url}/v1/traces", content=body_a, headers={**JSON, **alpha}).status_code == 200
    assert http.post(f"{url}/v1/traces", content=body_b, headers={**JSON, **beta}).status_code == 200

    assert wait_for_spans(url, 1, alpha)["spans"] == 1
    assert wait_for_spans(url, 2, beta)["spans"] == 2
    spans_a = http.get(f"{url}/api/v1/spans", headers=alpha).json()["spans"]
    spans_b = http.get(f"{url}/api/v1/spans", headers=beta).json()["spans"]
    assert [s["span_id"] for s in spans_a] == ids_a
    assert sorted(s["span_id"] for s in spans_b) == sorted(ids_b)


def test_a_span_claiming_another_project_lands_in_the_keys_project(auth_collector):
    url = auth_collector.url
    alpha, beta = auth_collector.headers("alpha"), auth_collector.headers("beta")
    body, _ids = genai_spans_json(3, project_claim="beta")
    assert http.post(f"{url}/v1/traces", content=body, headers={**JSON, **alpha}).status_code == 200
    assert wait_for_spans(url, 3, alpha)["spans"] == 3
    assert http.get(f"{url}/api/v1/summary", headers=beta).json()["spans"] == 0


def test_a_revoked_key_is_refused_within_seconds(auth_collector):
    url, alpha = auth_collector.url, auth_collector.headers("alpha")
    assert http.get(f"{url}/api/v1/summary", headers=alpha).status_code == 200
    prefix = auth_collector.keys["alpha"][:12]
    result = CliRunner().invoke(cli, ["keys", "revoke", prefix, "--data-dir", str(auth_collector.data_dir)])
    assert result.exit_code == 0, result.output
    assert wait_for(lambda: http.get(f"{url}/api/v1/summary", headers=alpha).status_code == 401, timeout_s=60)
    body, _ = genai_spans_json(1)
    assert http.post(f"{url}/v1/traces", content=body, headers={**JSON, **alpha}).status_code == 401
    assert http.get(f"{url}/api/v1/summary", headers=auth_collector.headers("beta")).status_code == 200


def test_the_dead_letters_cli_speaks_to_the_running_collector_with_the_projects_key(auth_collector):
    # The replay itself is tested in test_writer; here the command, its key and its errors.
    url, key = auth_collector.url, auth_collector.keys["alpha"]
    listed = CliRunner().invoke(cli, ["dead-letters", "list", "--url", url, "--key", key])
    assert listed.exit_code == 0 and "No dead letters." in listed.output
    replayed = CliRunner().invoke(cli, ["dead-letters", "replay", "--url", url], env={"INFERSIGHT_API_KEY": key})
    assert replayed.exit_code == 0 and "Replayed 0 requests (0 spans)." in replayed.output
    refused = CliRunner().invoke(cli, ["dead-letters", "replay", "--url", url, "--key", "isk_" + "A" * 43])
    assert refused.exit_code == 1 and "answered 401" in refused.output


def test_keys_are_stored_only_as_hashes(auth_collector):
    url, alpha = auth_collector.url, auth_collector.headers("alpha")
    body, _ = genai_spans_json(2)
    assert http.post(f"{url}/v1/traces", content=body, headers={**JSON, **alpha}).status_code == 200
    wait_for_spans(url, 2, alpha)
    login = http.post(f"{url}/login", data={"key": auth_collector.keys["alpha"]}, headers={"origin": url})
    assert login.status_code == 303
    auth_collector.process.stop()

    files = [p for p in auth_collector.data_dir.rglob("*") if p.is_file()]
    assert any(p.name == "keys.db" for p in files)
    prefix = auth_collector.keys["alpha"][:12].encode()
    assert any(prefix in p.read_bytes() for p in files)  # the scan does find what is stored
    for key in auth_collector.keys.values():
        for path in files:
            assert key.encode() not in path.read_bytes(), path
    assert (auth_collector.data_dir / "keys.db").stat().st_mode & 0o077 == 0


# Routes that need no key: the collector's health, the login form and its two posts (the login
# checks the key it is given), and the schema FastAPI serves. Each is listed on purpose.
PUBLIC = {("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/openapi.json"), ("GET", "/login"),
          ("POST", "/login"), ("POST", "/logout")}
# The OTLP receivers are plain Starlette routes that call key_project(request) themselves, for
# ingest (tested over the socket below).
RECEIVERS = {("POST", "/v1/traces"), ("POST", "/v1/metrics"), ("POST", "/v1/logs")}


def _routes(routes, prefix=""):
    """(method, path, route) of every route, through the routers FastAPI includes lazily."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included.routes, prefix + route.include_context.prefix)
            continue
        for method in sorted(getattr(route, "methods", None) or ()):
            if method != "HEAD":
                yield method, prefix + route.path, route


def _roles(dependant):
    found = {route_role(dependant.call)} - {None}
    for sub in dependant.dependencies:
        found |= _roles(sub)
    return found


def route_roles(tmp_path):
    app = create_app(Settings(data_dir=tmp_path, alerts=False))
    return {(method, path): (_roles(route.dependant) if isinstance(route, APIRoute) else None)
            for method, path, route in _routes(app.routes)}


def test_every_route_states_the_role_it_needs(tmp_path):
    roles = route_roles(tmp_path)
    assert set(roles) >= RECEIVERS | PUBLIC
    unclassified = {route: found for route, found in roles.items()
                    if route not in PUBLIC | RECEIVERS and (found is None or len(found) != 1)}
    assert not unclassified, "each route needs exactly one of the role dependencies of collector.web"
    # A read key changes nothing: every write needs admin, or is what apps send.
    writes = {route: found for route, found in roles.items()
              if route[0] != "GET" and route not in PUBLIC | RECEIVERS}
    assert writes and all(found in ({"admin"}, {"ingest"}) for found in writes.values()), writes
    for route in [("POST", "/api/v1/silences"), ("POST", "/api/v1/alerts/{fingerprint}/ack"),
                  ("POST", "/api/v1/dead_letters/replay"), ("POST", "/api/v1/judge/run"),
                  ("POST", "/api/v1/judge/panels"), ("POST", "/alerts/silences")]:
        assert roles[route] == {"admin"}, route
    for route in [("GET", "/api/v1/summary"), ("GET", "/api/v1/spans"), ("GET", "/"), ("GET", "/traces"),
                  ("GET", "/api/v1/report/weekly"), ("GET", "/api/v1/silences")]:
        assert roles[route] == {"read"}, route


def _key(auth_collector, role):
    keys = ProjectKeys(auth_collector.data_dir)
    try:
        return keys.create(auth_collector.projects["alpha"], role=role)[0]
    finally:
        keys.close()


def _login(url, key):
    return http.post(f"{url}/login", data={"key": key, "next": "/"}, headers={"origin": url})


def test_each_role_reaches_its_routes_and_gets_403_naming_the_role_elsewhere(auth_collector):
    url = auth_collector.url
    keys = {role: _key(auth_collector, role) for role in ("ingest", "read", "admin")}

    def answers(role):
        bearer = {"authorization": f"Bearer {keys[role]}"}
        body, _ = genai_spans_json(1)  # a span of its own: a span sent twice is stored once
        sent = http.post(f"{url}/v1/traces", content=body, headers={**JSON, **bearer})
        read = http.get(f"{url}/api/v1/summary", headers=bearer)
        replay = http.post(f"{url}/api/v1/dead_letters/replay", headers=bearer)
        return {"ingest": sent, "read": read, "admin": replay}

    allowed = {"ingest": {"ingest"}, "read": {"read"}, "admin": {"ingest", "read", "admin"}}
    for role, needed_answers in {role: answers(role) for role in keys}.items():
        for needed, answer in needed_answers.items():
            if needed in allowed[role]:
                assert answer.status_code == 200, (role, needed, answer.text)
                continue
            assert answer.status_code == 403, (role, needed, answer.text)
            message = json.loads(answer.text).get("detail") or json.loads(answer.text)["message"]
            assert f"needs a {needed} key" in message or f"needs an {needed} key" in message, message
            assert f"this is an {role} key" in message or f"this is a {role} key" in message, message
            assert f"--role {needed}" in message
            if needed == "ingest":  # google.rpc.Status, as OTLP wants: PERMISSION_DENIED
                assert json.loads(answer.text)["code"] == 7
    # The read key's refused span was never stored: only the ingest and admin keys' two are.
    assert wait_for_spans(url, 2, auth_collector.headers("alpha"))["spans"] == 2


def test_the_dashboards_refuse_an_ingest_key_and_say_which_key_to_use(auth_collector):
    url = auth_collector.url
    login = _login(url, _key(auth_collector, "ingest"))
    assert login.status_code == 403 and "set-cookie" not in login.headers
    assert "ingest key" in login.text and "--role read" in login.text

    for role in ("read", "admin"):
        login = _login(url, _key(auth_collector, role))
        assert login.status_code == 303, role
        cookies = {"infersight_session": login.cookies["infersight_session"]}
        assert http.get(f"{url}/", cookies=cookies).status_code == 200, role
        # The Alerts page's silence form changes the project's setup: admin only.
        form = http.post(f"{url}/alerts/silences", cookies=cookies, headers={"origin": url},
                         data={"matchers": "alertname=x", "duration": "1h", "comment": "c"})
        if role == "read":
            assert form.status_code == 403 and "admin key" in form.text
        else:
            assert form.status_code != 403, form.text
