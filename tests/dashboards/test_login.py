"""Dashboards behind a login with a project key: a signed HttpOnly cookie, one project per session."""

from __future__ import annotations

import httpx

from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import wait_for_spans

JSON = {"content-type": "application/json"}


def login(url: str, key: str, next_path: str = "/") -> httpx.Response:
    return httpx.post(f"{url}/login", data={"key": key, "next": next_path})


def test_pages_redirect_to_login_without_a_session(auth_collector):
    page = httpx.get(f"{auth_collector.url}/", params={"range": "24h"})
    assert page.status_code == 303
    assert page.headers["location"] == "/login?next=%2F%3Frange%3D24h"
    form = httpx.get(f"{auth_collector.url}/login")
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
        assert httpx.post(f"{url}/v1/traces", content=body, headers=headers).status_code == 200
        wait_for_spans(url, spans, auth_collector.headers(project))

    for project, spans in (("alpha", 1), ("beta", 3)):
        response = login(url, auth_collector.keys[project], "/?range=24h")
        assert response.status_code == 303 and response.headers["location"] == "/?range=24h"
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
        assert auth_collector.keys[project] not in cookie
        page = httpx.get(f"{url}/", cookies=response.cookies)
        assert page.status_code == 200
        assert f'id="project">project {auth_collector.projects[project]}<' in page.text
        assert f'id="llm-calls">{spans}<' in page.text


def test_logout_and_a_tampered_cookie_end_the_session(auth_collector):
    url = auth_collector.url
    cookies = login(url, auth_collector.keys["alpha"]).cookies
    assert httpx.get(f"{url}/", cookies=cookies).status_code == 200

    value = cookies["infersight_session"]
    tampered = value[:-1] + ("0" if value[-1] != "0" else "1")
    assert httpx.get(f"{url}/", cookies={"infersight_session": tampered}).status_code == 303

    assert httpx.get(f"{url}/logout", cookies=cookies).status_code == 405  # a link or an <img> cannot log out
    out = httpx.post(f"{url}/logout", cookies=cookies)
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert 'infersight_session=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]


def test_login_neither_redirects_off_site_nor_accepts_cross_site_posts(auth_collector):
    url, key = auth_collector.url, auth_collector.keys["alpha"]
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        assert login(url, key, target).headers["location"] == "/"
    cross = httpx.post(f"{url}/login", data={"key": key}, headers={"origin": "https://evil.example"})
    assert cross.status_code == 403 and "set-cookie" not in cross.headers


def test_no_auth_mode_has_no_login(collector):
    assert httpx.get(f"{collector.url}/").status_code == 200
    assert httpx.get(f"{collector.url}/login").headers["location"] == "/"
