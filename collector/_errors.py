"""The collector's exceptions.

    InfersightError
    ├── BadRequest            a client sent something we cannot accept (HTTP 4xx)
    │   ├── Unauthorized      no API key, or one that is unknown or revoked (401)
    │   ├── PayloadTooLarge   body above the size limit after decompression (413)
    │   └── UnsupportedMediaType  neither protobuf nor JSON (415)
    ├── SpoolError            the spool cannot take or give back entries (HTTP 503)
    │   └── SpoolFull         the spool is at its size limit; the exporter should retry later
    ├── WorkerLost            a decode worker died mid-request (HTTP 503; the exporter retries)
    └── StoreError            the store cannot be opened or used
        └── DataDirLocked     another process owns the embedded store's data directory
"""

from __future__ import annotations


class InfersightError(Exception):
    """Root of every error the collector raises on purpose."""


class BadRequest(InfersightError):
    status_code = 400


class Unauthorized(BadRequest):
    status_code = 401


class PayloadTooLarge(BadRequest):
    status_code = 413


class UnsupportedMediaType(BadRequest):
    status_code = 415


class SpoolError(InfersightError):
    pass


class SpoolFull(SpoolError):
    pass


class WorkerLost(InfersightError):
    pass


class StoreError(InfersightError):
    pass


class DataDirLocked(StoreError):
    pass
