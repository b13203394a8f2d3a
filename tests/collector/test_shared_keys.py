"""Keys shared by every collector of a deployment: two collector apps on one ClickHouse server
(tests/collector/clickhouse_http.py), each with a data directory of its own, see the same keys,
revocations and logouts, a key file left in a data directory keeps its keys working, and a store
outage keeps the keys a collector last read."""

from __future__ import annotations

import hashlib
import time
import uuid

import pytest
from click.testing import CliRunner

from infersight.collector._cli import main as cli
from infersight.collector.errors import StoreError
from infersight.collector.store import ClickHouseStore
from infersight.collector.web import Authenticator, ProjectKeys, StoreKeys
from tests import http
from tests.conftest import LiveCollector, wait_for


@pytest.fixture
def deployment(tmp_path, clickhouse_http):
    """The URL of a fresh database on the ClickHouse endpoint, and a way to start collectors on it."""
    url = f"http://default:@{clickhouse_http[len('http://'):]}/keys_{uuid.uuid4().hex[:8]}"
    started: list[LiveCollector] = []

    def start(name: str) -> LiveCollector:
        live = LiveCollector(tmp_path / name, ClickHouseStore(url), auth=True, clickhouse_url=url)
        started.append(live.start())
        return live

    yield url, start
    for live in started:
        live.stop()


def keys(*args: str) -> str:
    result = CliRunner().invoke(cli, ["keys", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def summary_status(collector: LiveCollector, key: str) -> int:
    return http.get(f"{collector.url}/api/v1/summary", headers={"authorization": f"Bearer {key}"}).status_code


def test_a_key_made_for_the_deployment_works_on_every_collector_and_a_revocation_reaches_all(deployment):
    url, start = deployment
    one, two = start("one"), start("two")
    key = keys("create", "--project", "shared", "--role", "read", "--clickhouse-url", url).strip()
    assert wait_for(lambda: summary_status(one, key) == 200 and summary_status(two, key) == 200)
    listing = keys("list", "--clickhouse-url", url)
    assert key[:12] in listing and "read" in listing and "active" in listing

    keys("revoke", key[:12], "--clickhouse-url", url)
    assert wait_for(lambda: summary_status(one, key) == 401 and summary_status(two, key) == 401)
    assert "revoked" in keys("list", "--clickhouse-url", url)
    # Nothing about keys went to either data directory.
    assert not (one.data_dir / "keys.db").exists() and not (two.data_dir / "keys.db").exists()


def test_a_session_from_one_collector_works_on_the_other_until_logout_there(deployment):
    url, start = deployment
    one, two = start("one"), start("two")
    key = keys("create", "--project", "shared", "--role", "read", "--clickhouse-url", url).strip()
    # Each collector reads new keys from the store every few seconds: the session is made on one
    # once the other has read the key too, as a user's next request would find it.
    assert wait_for(lambda: summary_status(one, key) == 200 and summary_status(two, key) == 200)
    login = http.post(f"{one.url}/login", data={"key": key}, headers={"origin": one.url})
    assert login.status_code == 303
    cookies = {"infersight_session": login.cookies["infersight_session"]}
    assert http.get(f"{two.url}/", cookies=cookies).status_code == 200

    assert http.post(f"{two.url}/logout", cookies=cookies, headers={"origin": two.url}).status_code == 303
    assert wait_for(lambda: http.get(f"{one.url}/", cookies=cookies).status_code == 303)


def test_a_key_file_in_the_data_directory_is_copied_into_the_store_once(deployment, tmp_path):
    url, start = deployment
    file = ProjectKeys(tmp_path / "one")
    old, _ = file.create("legacy")  # a key of the version without shared keys: admin
    revoked, info = file.create("legacy")
    file.revoke(info.prefix)
    file.close()
    one = start("one")
    two = start("two")  # no key file of its own: it reads the store's copy
    assert wait_for(lambda: summary_status(two, old) == 200)
    assert summary_status(two, revoked) == 401

    store = ClickHouseStore(url)
    book = StoreKeys(store, background=False)
    try:
        assert sorted((k.project, k.role, k.active) for k in book.list()) == [
            ("legacy", "admin", False), ("legacy", "admin", True)]
    finally:
        book.close()
        store.close()
    one.stop()
    one.start()  # a restart copies nothing twice
    assert len([line for line in keys("list", "--clickhouse-url", url).splitlines() if "legacy" in line]) == 2


class OutageStore:
    """The real store, except that every call fails while ``down`` is set: a store outage."""

    def __init__(self, store) -> None:
        self.store, self.down = store, False

    def query(self, sql, params=None):
        if self.down:
            raise StoreError("simulated outage")
        return self.store.query(sql, params)

    def insert(self, table, rows, *, dedup_token=None):
        if self.down:
            raise StoreError("simulated outage")
        self.store.insert(table, rows, dedup_token=dedup_token)

    def close(self) -> None:
        pass


def test_a_store_outage_keeps_the_last_keys_and_the_refresh_resumes_after_it(store):
    outage = OutageStore(store)
    book = StoreKeys(outage, refresh_s=0.05)
    other = StoreKeys(store, background=False)  # another collector's CLI, on the same tables
    try:
        key, info = other.create(f"outage-{uuid.uuid4().hex[:8]}", role="ingest")
        auth = Authenticator(book, cache_s=0)
        assert wait_for(lambda: book.grant_for_hash(hash_of(key)) is not None)

        outage.down = True
        time.sleep(0.5)  # several failed refreshes
        assert auth.project_for_authorization(f"Bearer {key}", "ingest") == info.project

        other.revoke(info.prefix)
        outage.down = False
        assert wait_for(lambda: book.grant_for_hash(hash_of(key)) is None)
    finally:
        book.close()
        other.close()


def hash_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
