"""``infersight keys`` and the key file behind it, without a collector."""

from __future__ import annotations

import hashlib
import re
import sqlite3

import pytest
from click.testing import CliRunner

from infersight.collector._cli import main as cli
from infersight.collector._keys_cli import ROLES as keys_cli_roles
from infersight.collector.errors import Forbidden, Unauthorized
from infersight.collector.web import ROLES, SESSION_MAX_AGE_S, Authenticator, ProjectKeys


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_create_prints_the_key_once_and_stores_its_hash(tmp_path):
    code, out, err = run("keys", "create", "--project", "shop-prod", "--data-dir", str(tmp_path))
    assert code == 0, err
    key = out.strip()
    assert re.fullmatch(r"isk_[A-Za-z0-9_-]{43}", key)
    assert "not shown again" in err and "OTEL_EXPORTER_OTLP_HEADERS" in err and key not in err

    with sqlite3.connect(tmp_path / "keys.db") as db:
        stored = db.execute("SELECT key_hash, prefix, project, revoked_s FROM project_keys").fetchall()
    assert stored == [(hashlib.sha256(key.encode()).hexdigest(), key[:12], "shop-prod", None)]

    code, out, _ = run("keys", "list", "--data-dir", str(tmp_path))
    assert code == 0
    assert key[:12] in out and "shop-prod" in out and "active" in out
    assert key not in out


def test_revoke_by_prefix(tmp_path):
    keys = [run("keys", "create", "--project", p, "--data-dir", str(tmp_path))[1].strip() for p in ("a", "b")]
    code, out, _ = run("keys", "revoke", keys[0][:12], "--data-dir", str(tmp_path))
    assert code == 0 and "Revoked" in out
    listing = run("keys", "list", "--data-dir", str(tmp_path))[1]
    assert re.search(rf"{re.escape(keys[0][:12])}\s+a\s+.*revoked", listing)
    assert re.search(rf"{re.escape(keys[1][:12])}\s+b\s+.*active", listing)
    assert run("keys", "revoke", keys[0][:12], "--data-dir", str(tmp_path))[0] == 0  # idempotent


@pytest.mark.parametrize(
    ("prefix", "message"),
    [("isk_nope0000", "no key"), ("isk_", "at least 8")],
)
def test_revoke_refuses_what_it_cannot_pin_to_one_key(tmp_path, prefix, message):
    run("keys", "create", "--project", "a", "--data-dir", str(tmp_path))
    code, _, err = run("keys", "revoke", prefix, "--data-dir", str(tmp_path))
    assert code != 0 and message in err


@pytest.mark.parametrize("project", ["", "has space", "../etc", "x" * 65, "-leading"])
def test_project_names_are_validated(tmp_path, project):
    code, _, err = run("keys", "create", "--project", project, "--data-dir", str(tmp_path))
    assert code != 0 and "project name" in err


def test_sessions_are_signed_expire_and_end_with_the_key(tmp_path):
    keys = ProjectKeys(tmp_path)
    key, info = keys.create("alpha")
    auth = Authenticator(keys, cache_s=0)
    cookie = auth.session_cookie(key)
    assert key not in cookie
    assert auth.project_for_session(cookie) == "alpha"

    prefix, issued, session_id, signature = cookie.split(".")
    forged = [
        f"{prefix}.{int(issued) + 1}.{session_id}.{signature}",
        f"{prefix}.{issued}.{'0' * len(session_id)}.{signature}",
        f"{prefix}.{issued}.{session_id}.{'0' * len(signature)}",
        f"{prefix}.{issued}.{signature}",
        "",
        None,
    ]
    assert [auth.project_for_session(c) for c in forged] == [None] * len(forged)
    assert auth.project_for_session(cookie, now_s=int(issued) + SESSION_MAX_AGE_S + 1) is None
    # A second collector start signs with the same secret, so sessions survive a restart.
    assert Authenticator(ProjectKeys(tmp_path)).project_for_session(cookie) == "alpha"

    keys.revoke(info.prefix)
    assert auth.project_for_session(cookie) is None
    with pytest.raises(Unauthorized):
        auth.session_cookie(key)


def test_an_ended_session_stays_ended_for_every_reader_until_its_cookie_expires(tmp_path):
    keys = ProjectKeys(tmp_path)
    key, _ = keys.create("alpha")
    auth = Authenticator(keys)  # with its cache: the logout must not wait for it
    now = 1_700_000_000
    mine, colleagues = auth.session_cookie(key, now_s=now), auth.session_cookie(key, now_s=now)
    assert mine != colleagues  # two logins in one second are two sessions
    assert auth.project_for_session(mine, now_s=now + 1) == "alpha"  # now cached as good

    auth.end_session(mine, now_s=now + 2)
    assert auth.project_for_session(mine, now_s=now + 3) is None
    assert auth.project_for_session(colleagues, now_s=now + 3) == "alpha"
    # Another process reading the same key file (a restart, the next replica) sees it too.
    other = Authenticator(ProjectKeys(tmp_path))
    assert other.project_for_session(mine, now_s=now + 3) is None
    assert other.project_for_session(colleagues, now_s=now + 3) == "alpha"

    # Forged or expired cookies are not recorded, and records go once their cookie has expired.
    auth.end_session("isk_x.1.2.3", now_s=now + 4)
    auth.end_session(colleagues, now_s=now + SESSION_MAX_AGE_S + 1)
    auth.end_session(auth.session_cookie(key, now_s=now + SESSION_MAX_AGE_S + 5), now_s=now + SESSION_MAX_AGE_S + 6)
    with sqlite3.connect(tmp_path / "keys.db") as db:
        assert db.execute("SELECT count(*) FROM ended_sessions").fetchone() == (1,)


def test_create_defaults_to_an_ingest_key_and_list_shows_each_keys_role(tmp_path):
    made = {}
    for role in (None, "read", "admin"):
        args = ["keys", "create", "--project", "shop", "--data-dir", str(tmp_path)]
        code, out, err = run(*args, *(["--role", role] if role else []))
        assert code == 0, err
        made[role or "ingest"] = out.strip()
        assert f"a {role or 'ingest'} key" in err
    code, out, err = run("keys", "list", "--data-dir", str(tmp_path))
    assert code == 0
    assert re.search(r"PREFIX\s+PROJECT\s+ROLE\s+CREATED", out)
    for role, key in made.items():
        assert re.search(rf"{re.escape(key[:12])}\s+shop\s+{role}\s", out), out
    assert "made before roles existed are admin keys" in err
    assert run("keys", "create", "--project", "shop", "--role", "owner", "--data-dir", str(tmp_path))[0] == 2


def test_keys_made_before_roles_stay_admin_keys(tmp_path):
    # The key file as the version without roles wrote it.
    key = "isk_" + "k" * 43
    with sqlite3.connect(tmp_path / "keys.db") as db:
        db.executescript("""
            CREATE TABLE project_keys (key_hash TEXT PRIMARY KEY, prefix TEXT NOT NULL UNIQUE,
                project TEXT NOT NULL, created_s REAL NOT NULL, revoked_s REAL);
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """)
        db.execute("INSERT INTO project_keys VALUES (?, ?, 'old', 1.0, NULL)",
                   (hashlib.sha256(key.encode()).hexdigest(), key[:12]))
    auth = Authenticator(ProjectKeys(tmp_path))
    assert auth.grant_for_key(key).role == "admin"
    assert auth.project_for_authorization(f"Bearer {key}", "ingest") == "old"
    assert auth.project_for_authorization(f"Bearer {key}", "admin") == "old"
    assert auth.project_for_session(auth.session_cookie(key)) == "old"
    assert re.search(rf"{re.escape(key[:12])}\s+old\s+admin\s", run("keys", "list", "--data-dir", str(tmp_path))[1])


def test_an_ingest_key_gets_no_dashboard_session_and_reads_nothing(tmp_path):
    keys = ProjectKeys(tmp_path)
    key, _ = keys.create("alpha", role="ingest")
    auth = Authenticator(keys)
    assert auth.project_for_authorization(f"Bearer {key}", "ingest") == "alpha"
    for needed in ("read", "admin"):
        with pytest.raises(Forbidden, match=f"--role {needed}"):
            auth.project_for_authorization(f"Bearer {key}", needed)
    with pytest.raises(Forbidden, match="read key"):
        auth.session_cookie(key)


@pytest.mark.parametrize("command", [["list"], ["revoke", "isk_12345678"]])
def test_reading_or_revoking_makes_no_directory_or_key_file(tmp_path, command):
    missing = tmp_path / "nowhere"
    code, _, err = run("keys", *command, "--data-dir", str(missing))
    assert code != 0 and "does not exist" in err
    assert not missing.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run("keys", *command, "--data-dir", str(empty))
    assert code != 0 and "no key file" in err
    assert list(empty.iterdir()) == []


def test_the_command_lines_roles_are_the_web_layers():
    assert keys_cli_roles == ROLES
