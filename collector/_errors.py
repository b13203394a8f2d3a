"""The collector's exceptions.

    InfersightError
    ├── BadRequest            a client sent something we cannot accept (HTTP 4xx)
    │   ├── PayloadTooLarge   body above the size limit after decompression (413)
    │   └── UnsupportedMediaType  neither protobuf nor JSON (415)
    └── StoreError            the store cannot be opened or used
        └── DataDirLocked     another process owns the embedded store's data directory
"""

from __future__ import annotations


class InfersightError(Exception):
    """Root of every error the collector raises on purpose."""


class BadRequest(InfersightError):
    status_code = 400


class PayloadTooLarge(BadRequest):
    status_code = 413


class UnsupportedMediaType(BadRequest):
    status_code = 415


class StoreError(InfersightError):
    pass


class DataDirLocked(StoreError):
    pass
