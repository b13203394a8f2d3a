"""The collector's exceptions.

    InfersightError
    ├── BadRequest            a client sent something we cannot accept (HTTP 4xx)
    │   ├── Unauthorized      no API key, or one that is unknown or revoked (401)
    │   ├── Forbidden         a browser form posted from another site, or from nowhere known (403)
    │   ├── RequestTimeout    the body did not arrive within the time allowed (408)
    │   ├── PayloadTooLarge   body above the size limit after decompression (413)
    │   └── UnsupportedMediaType  neither protobuf nor JSON (415)
    ├── SpoolError            the spool cannot take or give back entries (HTTP 503)
    │   └── SpoolFull         the spool is at its size limit; the exporter should retry later
    ├── WorkerLost            a decode worker died mid-request (HTTP 503; the exporter retries)
    ├── PortTaken             the address to serve on cannot be listened on: nothing was started
    └── StoreError            the store cannot be opened or used (``transient``: may pass by itself)
        └── DataDirLocked     another process owns the embedded store's data directory
"""

from __future__ import annotations


class InfersightError(Exception):
    """Root of every error the collector raises on purpose."""


class BadRequest(InfersightError):
    status_code = 400


class Unauthorized(BadRequest):
    status_code = 401


class Forbidden(BadRequest):
    status_code = 403


class RequestTimeout(BadRequest):
    status_code = 408


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


class PortTaken(InfersightError):
    pass


class StoreError(InfersightError):
    """The store did not do what was asked.

    ``transient`` tells the spool writer what to do with a failed insert: ``True`` when the
    store could not be reached or was overloaded (retry the same rows until it passes), ``False``
    when ClickHouse refused these rows themselves (retrying them alone will never succeed).
    """

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


class DataDirLocked(StoreError):
    pass
