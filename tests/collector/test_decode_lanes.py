"""A bulk request cannot hold back everyone's small ones: it is decoded in a lane of its own."""

from __future__ import annotations

import asyncio
import time

from infersight.collector.ingest import Decoder
from infersight.collector.ingest._otlp import JSON
from tests.collector.otlp_bodies import genai_spans_json


def test_a_small_request_is_decoded_while_a_bulk_one_is_still_running():
    bulk, _ = genai_spans_json(40_000)  # several seconds of decoding
    small, _ = genai_spans_json(1)
    decoder = Decoder(1, limit_bytes=1 << 30, large_bytes=1 << 20)

    async def scenario() -> tuple[float, bool]:
        await decoder.decode("warm", small, None, JSON)  # the usual lane's worker is up
        big = asyncio.ensure_future(decoder.decode("bulk", bulk, None, JSON))
        await asyncio.sleep(0.5)  # the bulk request is being decoded
        started = time.perf_counter()
        decoded = await decoder.decode("other", small, None, JSON)
        waited = time.perf_counter() - started
        still_running = not big.done()
        assert decoded.spans == 1 and (await big).spans == 40_000
        return waited, still_running

    try:
        waited, still_running = asyncio.run(scenario())
    finally:
        decoder.close()
    assert still_running, "the bulk request finished first: the test proves nothing"
    assert waited < 1.0
