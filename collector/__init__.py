"""infersight collector: OTLP receiver, ClickHouse store, read API and dashboards."""

from __future__ import annotations

from ._app import create_app
from ._errors import (
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
from ._settings import Settings
from ._store import ChdbStore, Store, encode_rows

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
