"""Receive and decode: the OTLP/HTTP routes, and OTLP bodies into ``otel_traces`` rows.

Authenticate, decompress and decode (protobuf or JSON), validate spans one by one (ids,
times, the ingest window), price what others left unpriced, run the inline detectors, and hand
the spool one compressed entry per request. Decoding runs in worker processes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._decode import Decoded, Decoder, decode_request, default_workers

if TYPE_CHECKING:
    from ._receivers import RETRY_AFTER_S, router

__all__ = ["Decoded", "Decoder", "RETRY_AFTER_S", "decode_request", "default_workers", "router"]


def __getattr__(name: str) -> Any:
    # the routes are loaded on first use: a decode worker imports this package for
    # decode_request, and the web framework would be a quarter of its start
    if name in ("RETRY_AFTER_S", "router"):
        from . import _receivers

        return getattr(_receivers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
