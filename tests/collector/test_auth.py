"""Project API keys on a real collector: who may write, who sees what, revocation, storage."""

from __future__ import annotations

import json

from click.testing import CliRunner
from google.rpc import status_pb2

from infersight.collector._cli import main as cli
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
