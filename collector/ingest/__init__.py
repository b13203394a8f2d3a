"""Receive and decode: the OTLP/HTTP routes, and OTLP bodies into ``otel_traces`` rows.

Authenticate, decompress and decode (protobuf or JSON), validate spans one by one (ids,
times, the ingest window), price what others left unpriced, run the inline detectors, and hand
the spool one compressed entry per request. Decoding runs in worker processes.
"""

from __future__ import annotations

from ._decode import Decoded, Decoder, decode_request, default_workers
from ._receivers import RETRY_AFTER_S, router

__all__ = ["Decoded", "Decoder", "RETRY_AFTER_S", "decode_request", "default_workers", "router"]
