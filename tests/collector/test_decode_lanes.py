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


def test_a_projects_burst_does_not_queue_another_projects_request_behind_all_of_it():
    # One worker; project "burst" has ten requests queued when "other" sends one. First come,
    # first served would decode it eleventh; taken project by project in turn, it waits for the
    # two requests in the pool (one running, one queued) and the one whose turn was already due:
    # at most fourth, however long the burst.
    body, _ = genai_spans_json(2_000)
    small, _ = genai_spans_json(1)
    decoder = Decoder(1, limit_bytes=1 << 30, large_bytes=1 << 30)
    finished: list[str] = []

    async def decode(project: str, payload: bytes) -> None:
        await decoder.decode(project, payload, None, JSON)
        finished.append(project)

    async def scenario() -> None:
        await decoder.decode("warm", small, None, JSON)  # the worker is up
        burst = [asyncio.ensure_future(decode("burst", body)) for _ in range(10)]
        await asyncio.sleep(0)  # the burst is queued first
        await asyncio.gather(decode("other", small), *burst)

    try:
        asyncio.run(scenario())
    finally:
        decoder.close()
    assert finished.index("other") <= 3, finished


def test_a_request_cancelled_while_waiting_gives_its_turn_on():
    small, _ = genai_spans_json(1)
    body, _ = genai_spans_json(4_000)
    decoder = Decoder(1, limit_bytes=1 << 30, large_bytes=1 << 30)

    async def scenario() -> int:
        running = asyncio.ensure_future(decoder.decode("a", body, None, JSON))
        await asyncio.sleep(0)
        doomed = asyncio.ensure_future(decoder.decode("b", small, None, JSON))
        await asyncio.sleep(0)
        doomed.cancel()
        await running
        return (await asyncio.wait_for(decoder.decode("c", small, None, JSON), 30)).spans

    try:
        assert asyncio.run(scenario()) == 1  # the lane is not stuck one worker short
    finally:
        decoder.close()
