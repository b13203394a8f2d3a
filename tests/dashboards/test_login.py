"""Dashboards behind a login with a project key: a signed HttpOnly cookie, one project per session."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient

from infersight.collector import Settings, create_app
from tests import http
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import wait_for_spans

JSON = {"content-type": "application/json"}


def login(url: str, key: str, next_path: str = "/", origin: str | None = None) -> httpx.Response:
    # A browser says where a form comes from; this collector's own login page is at `url`.
    return http.post(f"{url}/login", data={"key": key, "next": next_path}, headers={"origin": origin or url})


def test_pages_redirect_to_login_without_a_session(auth_collector):
    page = http.get(f"{auth_collector.url}/", params={"range": "24h"})
    assert page.status_code == 303
    assert page.headers["location"] == "/login?next=%2F%3Frange%3D24h"
    form = http.get(f"{auth_collector.url}/login")
    assert form.status_code == 200 and 'name="key"' in form.text and 'type="password"' in form.text


def test_a_bad_key_gets_the_form_again_and_no_cookie(auth_collector):
    response = login(auth_collector.url, "isk_" + "B" * 43)
    assert response.status_code == 401
    assert "unknown or revoked" in response.text
    assert "set-cookie" not in response.headers


def test_login_shows_only_the_keys_project(auth_collector):
    url = auth_collector.url
    for project, spans in (("alpha", 1), ("beta", 3)):
        body, _ = genai_spans_json(spans)
        headers = {**JSON, **auth_collector.headers(project)}
        assert http.post(f"{url}/v1/traces", content=body, headers=headers).status_code == 200
        wait_for_spans(url, spans, auth_collector.headers(project))

    for project, spans in (("alpha", 1), ("beta", 3)):
        response = login(url, auth_collector.keys[project], "/?range=24h")
        assert response.status_code == 303 and response.headers["location"] == "/?range=24h"
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
        assert auth_collector.keys[project] not in cookie
        page = http.get(f"{url}/", cookies=response.cookies)
        assert page.status_code == 200
        assert f'id="project">project {auth_collector.projects[project]}<' in page.text
        assert f'id="llm-calls">{spans}<' in page.text


def test_logout_and_a_tampered_cookie_end_the_session(auth_collector):
    url = auth_collector.url
    cookies = login(url, auth_collector.keys["alpha"]).cookies
    assert http.get(f"{url}/", cookies=cookies).status_code == 200

    value = cookies["infersight_session"]
    tampered = value[:-1] + ("0" if value[-1] != "0" else "1")
    assert http.get(f"{url}/", cookies={"infersight_session": tampered}).status_code == 303

    assert http.get(f"{url}/logout", cookies=cookies).status_code == 405  # a link or an <img> cannot log out
    out = http.post(f"{url}/logout", cookies=cookies, headers={"origin": url})
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert 'infersight_session=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]


def test_logout_ends_the_session_on_the_server_and_only_that_one(auth_collector):
    url, key = auth_collector.url, auth_collector.keys["alpha"]
    mine, colleagues = login(url, key).cookies, login(url, key).cookies
    copy = {"infersight_session": mine["infersight_session"]}  # taken before the logout, say by malware
    for cookies in (mine, colleagues, copy):
        assert http.get(f"{url}/latency", cookies=cookies).status_code == 200

    assert http.post(f"{url}/logout", cookies=mine, headers={"origin": url}).status_code == 303
    refused = http.get(f"{url}/latency", cookies=copy)
    assert refused.status_code == 303 and refused.headers["location"].startswith("/login")
    assert http.get(f"{url}/latency", cookies=colleagues).status_code == 200

    auth_collector.process.stop()  # the end is recorded with the keys, not in memory
    auth_collector.process.start()
    assert http.get(f"{url}/latency", cookies=copy).status_code == 303
    assert http.get(f"{url}/latency", cookies=colleagues).status_code == 200


def test_forms_must_show_they_come_from_the_collectors_own_pages_and_api_clients_need_not(auth_collector):
    url, key = auth_collector.url, auth_collector.keys["alpha"]
    host = url.removeprefix("http://")
    refused = [
        {},  # neither header: a form that cannot show where it comes from
        {"origin": "https://evil.example"},
        {"origin": "null"},  # a sandboxed frame, a data: URL
        {"origin": f"http://{host}.evil.example"},
        {"sec-fetch-site": "cross-site", "origin": url},  # the fetch metadata wins
        {"sec-fetch-site": "same-site"},  # a sibling subdomain is another site's page
    ]
    for headers in refused:
        answer = http.post(f"{url}/login", data={"key": key}, headers=headers)
        assert answer.status_code == 403 and "set-cookie" not in answer.headers, headers
        assert "own pages" in answer.text, headers
    for headers in ({"origin": url}, {"sec-fetch-site": "same-origin"}, {"sec-fetch-site": "none"}):
        assert http.post(f"{url}/login", data={"key": key}, headers=headers).status_code == 303, headers

    cookies = login(url, key).cookies
    for headers in ({}, {"origin": "https://evil.example"}):  # another site cannot log the browser out
        assert http.post(f"{url}/logout", cookies=cookies, headers=headers).status_code == 403
    assert http.get(f"{url}/", cookies=cookies).status_code == 200

    alpha = auth_collector.headers("alpha")
    for headers in (alpha, {**alpha, "origin": "https://evil.example"}):  # an API client, not a browser
        assert http.post(f"{url}/api/v1/dead_letters/replay", headers=headers).status_code == 200


def test_api_writes_without_keys_refuse_another_sites_page(store, tmp_path):
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, decode_workers=0, project="origin-no-auth")
    with TestClient(create_app(settings, store=store)) as client:
        assert client.post("/api/v1/dead_letters/replay").status_code == 200  # the CLI sends neither header
        for headers in ({"origin": "https://evil.example"}, {"sec-fetch-site": "cross-site"}):
            cross = client.post("/api/v1/dead_letters/replay", headers=headers)
            assert cross.status_code == 403 and "another site" in cross.json()["detail"]


def test_login_neither_redirects_off_site_nor_accepts_cross_site_posts(auth_collector):
    url, key = auth_collector.url, auth_collector.keys["alpha"]
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        assert login(url, key, target).headers["location"] == "/"
    cross = http.post(f"{url}/login", data={"key": key}, headers={"origin": "https://evil.example"})
    assert cross.status_code == 403 and "set-cookie" not in cross.headers


def test_no_auth_mode_has_no_login(collector):
    assert http.get(f"{collector.url}/").status_code == 200
    assert http.get(f"{collector.url}/login").headers["location"] == "/"
