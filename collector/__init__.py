"""infersight collector: OTLP receiver, ClickHouse store, read API and dashboards."""

from __future__ import annotations

from ._app import create_app
from ._errors import (
    BadRequest,
    DataDirLocked,
    InfersightError,
    PayloadTooLarge,
    StoreError,
    UnsupportedMediaType,
)
from ._settings import Settings
from ._store import ChdbStore, Store

__all__ = [
    "BadRequest",
    "ChdbStore",
    "DataDirLocked",
    "InfersightError",
    "PayloadTooLarge",
    "Settings",
    "Store",
    "StoreError",
    "UnsupportedMediaType",
    "create_app",
]
