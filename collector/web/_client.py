"""The CLI's way to a data directory: its store when no collector runs, else that collector's API.

One process owns an embedded store (``owner.lock`` in the data directory, held by the store).
The collector that owns it appends its URL to the lock file (:func:`record_collector_url`), so a
CLI command given only ``--data-dir`` finds the collector and asks it over HTTP, with the
project's API key, what it would otherwise have read from the store itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from ..errors import DataDirLocked, InfersightError
from ..store import ChdbStore, Store

LOCK_FILE = "owner.lock"
_URL = re.compile(r" at (https?://\S+)")
REQUEST_TIMEOUT_S = 3600.0
"""A judge run over the API answers when it is done: an hour's backfill is a normal request."""


class CollectorUnreachable(InfersightError):
    """The collector that owns a data directory cannot be asked (no URL recorded, down, or 401)."""


class CollectorAnswer(InfersightError):
    """The collector answered with an error status; ``status`` and the JSON ``body`` it sent."""

    def __init__(self, status: int, body: dict[str, Any], message: str) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


def record_collector_url(data_dir: Path, url: str) -> None:
    """Append `` at URL`` to the owner line the store wrote (``pid N``), for the CLI to find.

    Called once by the collector after it opened the store, so the line is the owner's own.
    """
    with open(Path(data_dir) / LOCK_FILE, "a", encoding="utf-8") as lock:
        lock.write(f" at {url}")


def collector_url(data_dir: Path) -> str | None:
    """The URL the owner of ``data_dir`` recorded, or ``None``."""
    try:
        text = (Path(data_dir) / LOCK_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    match = _URL.search(text)
    return match.group(1) if match else None


class CollectorClient:
    """A running collector's ``/api/v1``, with one project's API key (none in ``--no-auth`` mode).

    Blocking; one instance per command, not shared between threads.
    """

    def __init__(self, url: str, key: str | None) -> None:
        self.url = url.rstrip("/")
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=REQUEST_TIMEOUT_S)

    def get(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        """``GET path``; the response when 2xx, else :class:`CollectorAnswer` or :class:`CollectorUnreachable`."""
        return self._checked(self._send("GET", path, params=_present(params or {})))

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """``POST path`` with a JSON body; as :meth:`get`."""
        return self._checked(self._send("POST", path, json=body))

    def close(self) -> None:
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise CollectorUnreachable(f"cannot reach the collector at {self.url}: {exc}") from exc

    def _checked(self, response: httpx.Response) -> httpx.Response:
        if response.status_code < 400:
            return response
        try:
            body = response.json()
        except ValueError:
            body = {"detail": response.text[:500]}
        body = body if isinstance(body, dict) else {"detail": body}
        detail = body.get("detail")
        message = detail if isinstance(detail, str) else response.text[:500]
        if response.status_code == 401:
            raise CollectorUnreachable(
                f"the collector at {self.url} needs the project's API key ({message}): "
                "pass --key or set INFERSIGHT_API_KEY")
        raise CollectorAnswer(response.status_code, body, message)


def _present(params: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in params.items() if value is not None}


@contextmanager
def store_or_collector(data_dir: Path, key: str | None) -> Iterator[Store | CollectorClient]:
    """The embedded store in ``data_dir``, or a client of the collector that owns it. Closed on exit.

    Raises :class:`~infersight.collector.errors.StoreError` when the store cannot be opened,
    and :class:`CollectorUnreachable` when its owner recorded no URL (a collector older than this
    rule, or another process holding the store).
    """
    try:
        store = ChdbStore(data_dir)
    except DataDirLocked as exc:
        url = collector_url(data_dir)
        if url is None:
            raise CollectorUnreachable(f"{exc}; it recorded no URL to reach it at") from exc
        client = CollectorClient(url, key)
        try:
            yield client
        finally:
            client.close()
        return
    try:
        yield store
    finally:
        store.close()
