from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from infersight.collector import ChdbStore, StoreError
from infersight.collector.store import ClickHouseStore
from infersight.collector.web import ProjectKeys
from tests import http

ROOT = Path(__file__).resolve().parents[1]
SERVER_TIMEZONE = "America/New_York"
"""The test ClickHouse server's own time zone: not UTC, as a server may be configured. Its tables are
created by the tests' sessions (in UTC), so what it checks is how a session reads bound times and
``now()``; the columns of tables a server opens from disk keep its own zone (the note in
``store/_base.py``), which a test that restarts an endpoint checks."""


# Ports for servers a test names before starting them. A port from bind(0) lies in the kernel's
# ephemeral range (32768 and up on Linux), which it also hands out as the source port of outgoing
# connections: a client may take it between the pick and the server's bind. Below that range, one
# block for each xdist worker, nothing else takes them.
_PORTS_PER_WORKER = 1500
_worker_ports = itertools.cycle(range(_PORTS_PER_WORKER))
_FIRST_PORT = 20000 + _PORTS_PER_WORKER * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").lstrip("gw") or 0)


def free_port() -> int:
    """A port no server listens on and no other test worker will name (see ``_FIRST_PORT``)."""
    for _ in range(_PORTS_PER_WORKER):
        port = _FIRST_PORT + next(_worker_ports)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_FIRST_PORT}-{_FIRST_PORT + _PORTS_PER_WORKER - 1}")


def wait_for(check: Callable[[], object], timeout_s: float = 60.0, interval_s: float = 0.05) -> object:
    """Poll ``check`` until it returns something truthy; its last value is returned.

    The collector acknowledges spans once they are in its spool and stores them moments later,
    so a test reads its own writes by waiting for them. The deadline only ends a test that would
    fail anyway: a passing test waits as long as its machine needs, so it is generous (a loaded
    machine took over 15 s to store 900 spans after a restart).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)


# A collector process for tests about anything but decoding in workers or alerts: it decodes
# in its server process (no worker to spawn and stop, ~1 s a process) and evaluates no alert.
LEAN_COLLECTOR = ("--decode-workers", "0", "--no-alerts")


def wait_for_spans(url: str, count: int, headers: dict[str, str] | None = None, since: str = "1h") -> dict:
    """The ``/api/v1/summary`` once it counts ``count`` spans (or the last one after a timeout)."""
    last: dict = {}

    def check() -> bool:
        nonlocal last
        last = http.get(f"{url}/api/v1/summary", params={"since": since}, headers=headers).json()
        return last["spans"] >= count

    wait_for(check)
    return last


class LiveCollector:
    """The collector app served by uvicorn on a real socket, in a thread of this process, on the
    session's embedded store: what a client sees over HTTP, without a process and a store of its
    own to start (~2 s each). Where the process is the point (signals, kill -9, restarts, the
    decode workers, the data directory's lock) tests start a :class:`CollectorProcess` instead.

    In dev mode (no keys) every request belongs to ``settings.project``: each instance gets a
    project of its own, so tests sharing the store keep apart.
    """

    _made = 0

    def __init__(self, data_dir: Path, store: FlakyChdbStore, **settings: Any) -> None:
        from infersight.collector import Settings

        LiveCollector._made += 1
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.settings = Settings(**{
            "data_dir": data_dir, "port": self.port, "auth": False, "alerts": False, "decode_workers": 0,
            "project": f"live{LiveCollector._made}-{os.getpid()}", **settings,
        })
        self.project = self.settings.project
        self._store = store

    def start(self) -> LiveCollector:
        """Serve a new app (a restart, after :meth:`stop`: what it knows comes from disk and the store)."""
        from infersight.collector import create_app

        config = uvicorn.Config(create_app(self.settings, store=self._store), host="127.0.0.1", port=self.port,
                                log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="live-collector", daemon=True)
        self._thread.start()
        assert wait_for(lambda: self._server.started or not self._thread.is_alive()), "the app did not start"
        assert self._server.started, "the app failed to start"
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(60)


@pytest.fixture
def collector(tmp_path: Path, store: FlakyChdbStore) -> Iterator[LiveCollector]:
    """The collector in dev mode (no keys), decoding in its server thread, on a real socket."""
    live = LiveCollector(tmp_path / "data", store).start()
    yield live
    live.stop()


@dataclass
class AuthCollector:
    """A collector that requires keys, with one key for each of two projects, ``alpha`` and
    ``beta`` (``projects`` gives their names in the shared store, unique to the test)."""

    process: LiveCollector
    data_dir: Path
    keys: dict[str, str]
    projects: dict[str, str]

    @property
    def url(self) -> str:
        return self.process.url

    def headers(self, project: str) -> dict[str, str]:
        return {"authorization": f"Bearer {self.keys[project]}"}


@pytest.fixture
def auth_collector(tmp_path: Path, store: FlakyChdbStore) -> Iterator[AuthCollector]:
    data_dir = tmp_path / "data"
    key_file = ProjectKeys(data_dir)  # the CLI's code path, without a subprocess per key
    projects = {name: f"{name}-{tmp_path.name}"[:64] for name in ("alpha", "beta")}
    keys = {name: key_file.create(project)[0] for name, project in projects.items()}
    key_file.close()
    live = LiveCollector(data_dir, store, auth=True).start()
    yield AuthCollector(live, data_dir, keys, projects)
    live.stop()


# chDB opens one data path per process: every in-process test shares this one store and keeps
# apart from the others by writing its own projects.
class FlakyChdbStore(ChdbStore):
    """The real embedded store, except that inserts fail while ``failing`` is set: an outage.

    chDB opens one data path per process, so one instance serves the whole session: ``close``
    is a no-op for the apps and writers that think they own it.
    """

    failing = False

    def insert(self, table: str, rows: bytes, *, dedup_token: str | None = None) -> None:
        if self.failing:
            raise StoreError("simulated outage")
        super().insert(table, rows, dedup_token=dedup_token)

    def close(self) -> None:
        pass

    def close_for_real(self) -> None:
        super().close()


@pytest.fixture(scope="session")
def session_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlakyChdbStore]:
    store = FlakyChdbStore(tmp_path_factory.mktemp("chdb"), database="infersight_test")
    yield store
    store.close_for_real()


@pytest.fixture
def store(session_store: FlakyChdbStore) -> Iterator[FlakyChdbStore]:
    """The session's embedded store, healthy. Tests keep apart by writing distinct projects."""
    session_store.failing = False
    yield session_store
    session_store.failing = False


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Exporters of SDK tests that pointed at collectors which have since stopped keep retrying on
    # their daemon threads until the interpreter exits; their log lines after pytest's closing
    # line are noise, not results.
    import logging

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL + 1)


def start_clickhouse_http(data_dir: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """A ClickHouse HTTP endpoint (tests/collector/clickhouse_http.py, chDB behind it) on ``data_dir``,
    as a server whose own time zone is not UTC (chDB takes the process's TZ); its URL and process."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.collector.clickhouse_http", "--data-dir", str(data_dir), "--port", str(port)],
        cwd=ROOT, env={**os.environ, "TZ": SERVER_TIMEZONE},
    )
    url = f"http://127.0.0.1:{port}"
    assert wait_for(lambda: _ping(url), timeout_s=30), "the ClickHouse HTTP endpoint did not start"
    return url, process


@pytest.fixture(scope="session")
def clickhouse_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The session's ClickHouse HTTP endpoint for the server backend (:func:`start_clickhouse_http`)."""
    url, process = start_clickhouse_http(tmp_path_factory.mktemp("ch-server"))
    yield url
    process.terminate()
    process.wait(10)


@pytest.fixture(scope="session")
def server_stores(clickhouse_http: str) -> Iterator[Callable[[str], ClickHouseStore]]:
    """The session's store in database ``name`` of the ClickHouse HTTP endpoint, one per name.

    Opening one applies the schema, 60-odd DDL statements over HTTP (~1-2 s on a loaded
    machine): tests of a backend share it, and keep apart by writing projects of their own.
    """
    opened: dict[str, ClickHouseStore] = {}

    def server_store(name: str) -> ClickHouseStore:
        if name not in opened:
            opened[name] = ClickHouseStore(f"http://default:@{clickhouse_http[len('http://'):]}/{name}")
        return opened[name]

    yield server_store
    for store in opened.values():
        store.close()


def _ping(url: str) -> bool:
    try:
        return http.get(url + "/ping").status_code == 200
    except httpx.HTTPError:
        return False
