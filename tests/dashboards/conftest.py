from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from infersight.collector import Settings, Store, create_app
from infersight.collector.store import ClickHouseStore
from tests.dashboards.data import Call, insert, insert_calls

_projects = itertools.count(1)


@dataclass
class Dash:
    """The app on the session's store, in dev mode for one fresh project, with ways to fill it."""

    client: TestClient
    store: Store
    project: str

    def add_calls(self, calls: list[Call]) -> None:
        insert_calls(self.store, calls)

    def add(self, table: str, rows: list[dict]) -> None:
        insert(self.store, table, rows)

    def call(self, **kwargs: object) -> Call:
        """A :class:`Call` of this project, an hour ago unless ``start_ns`` says otherwise."""
        kwargs.setdefault("start_ns", time.time_ns() - 3600 * 10**9)
        kwargs.setdefault("trace_id", f"{next(_projects):08x}{time.time_ns():024x}"[:32])
        return Call(project=self.project, **kwargs)  # type: ignore[arg-type]


def _dash(store: Store, tmp_path: Path) -> Iterator[Dash]:
    project = f"dash-{next(_projects)}-{time.time_ns() % 10**9}"
    # Decoding in the server process: these tests read pages, and a spawned decode worker per app
    # cost ~0.6 s each (the workers are tested where they are the point: test_decode_lanes, test_crash).
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    with TestClient(create_app(settings, store=store)) as client:
        yield Dash(client, store, project)


@pytest.fixture
def dash(store: Store, tmp_path: Path) -> Iterator[Dash]:
    """The app on the session's embedded store."""
    yield from _dash(store, tmp_path)


@pytest.fixture(scope="session")
def server_store(clickhouse_http: str) -> Iterator[Store]:
    store = ClickHouseStore(f"http://default:@{clickhouse_http[len('http://'):]}/dashboards")
    yield store
    store.close()


@pytest.fixture(params=["chdb", "clickhouse"])
def any_dash(request: pytest.FixtureRequest, store: Store, tmp_path: Path) -> Iterator[Dash]:
    """The app on each backend: the embedded store, and a ClickHouse server through clickhouse-connect."""
    backend = store if request.param == "chdb" else request.getfixturevalue("server_store")
    yield from _dash(backend, tmp_path)
