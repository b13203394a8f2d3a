"""infersight collector: OTLP receiver, ClickHouse store, read API and dashboards.

``create_app`` is loaded on first use: the subpackages that dashboards, judges and alerts read
through (``infersight.collector.store``) must be importable without the web app, and Python
imports this module first whenever one of them is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._settings import Settings
from .errors import (
    BadRequest,
    DataDirLocked,
    InfersightError,
    PayloadTooLarge,
    SpoolError,
    SpoolFull,
    StoreError,
    Unauthorized,
    UnsupportedMediaType,
)
from .store import ChdbStore, Store, encode_rows

if TYPE_CHECKING:
    from ._app import create_app

__all__ = [
    "BadRequest",
    "ChdbStore",
    "DataDirLocked",
    "InfersightError",
    "PayloadTooLarge",
    "Settings",
    "SpoolError",
    "SpoolFull",
    "Store",
    "StoreError",
    "Unauthorized",
    "UnsupportedMediaType",
    "create_app",
    "encode_rows",
]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from ._app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
