"""A bulk request cannot hold back everyone's small ones: it is decoded in a lane of its own, and
projects share each lane by the work they bring (bytes), not by their number of requests."""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from infersight.collector.ingest import Decoder
from infersight.collector.ingest._decode import Decoded, _Lane, decoded_size_hint
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


class _GatedLane(_Lane):
    """A lane whose workers are threads running gated calls, so a test decides when each call ends and
    reads which request got a worker next (the pool's queue is first come, first served)."""

    def _new_pool(self) -> ThreadPoolExecutor:  # type: ignore[override]
        return ThreadPoolExecutor(self.workers)


def _dispatch_order(lane: _Lane, requests: list[tuple[str, int]]) -> list[str]:
    """Projects in the order their requests get a worker, when ``requests`` (project, decoded bytes)
    all arrive while the lane is busy with one request of project "busy"."""
    started: list[str] = []
    gate = threading.Event()

    def work(project: str) -> Decoded:
        started.append(project)
        gate.wait(30)
        return Decoded(None)

    async def scenario() -> None:
        busy = asyncio.ensure_future(lane.run("busy", partial(work, "busy"), 0))
        await asyncio.sleep(0)
        queued = [asyncio.ensure_future(lane.run(p, partial(work, p), size)) for p, size in requests]
        await asyncio.sleep(0)  # all of them wait for a turn
        gate.set()
        await asyncio.gather(busy, *queued)

    try:
        asyncio.run(scenario())
    finally:
        lane.pool.shutdown()
    return started


def test_projects_share_a_lane_by_bytes_not_by_requests():
    # "bulk" queued three 10 MiB requests before "small" queued three 1 KiB ones. Taken request by
    # request in turn, each small request would wait for a bulk one; by bytes, all three small ones
    # together are less work than one bulk request, so they all go first.
    mib = 1 << 20
    order = _dispatch_order(_GatedLane(1), [("bulk", 10 * mib)] * 3 + [("small", 1024)] * 3)
    assert order == ["busy", "bulk", "small", "small", "small", "bulk", "bulk"]


def test_a_project_that_arrives_late_is_not_owed_its_idle_time():
    # "late" waited nothing before; its share starts at the lane's present, so it alternates with
    # "early" by bytes from here on instead of taking every turn until it has caught up.
    mib = 1 << 20
    order = _dispatch_order(_GatedLane(1), [("early", mib)] * 3 + [("late", mib)] * 3)
    assert order == ["busy", "early", "late", "early", "late", "early", "late"]


def test_a_lane_hands_its_pool_one_more_request_than_workers_only_if_it_is_small():
    # The small request is handed to the pool while "busy" still runs, so it is ahead of anything that
    # arrives later whatever the shares; a large one waits for a free worker, so the later small
    # request of another project passes it.
    mib = 1 << 20
    lane = _GatedLane(1, prefetch_bytes=64 << 10)
    order = _dispatch_order(lane, [("a", 1024), ("b", 1024), ("a", 10 * mib), ("c", 1024)])
    assert order == ["busy", "a", "b", "c", "a"]


def test_a_gzip_body_goes_to_the_lane_of_its_decoded_size():
    # 4k spans compress to a few tens of KiB but decode to more than the 256 KiB fast-lane limit.
    bulky, _ = genai_spans_json(4_000)
    small, _ = genai_spans_json(1)
    decoder = Decoder(1, limit_bytes=1 << 30, large_bytes=256 << 10)
    assert len(gzip.compress(bulky)) < 256 << 10 < len(bulky)

    async def scenario() -> tuple[bool, int, bool]:
        one = await decoder.decode("a", gzip.compress(small), "gzip", JSON)
        bulk_after_small = decoder._large is not None
        many = await decoder.decode("a", gzip.compress(bulky), "gzip", JSON)
        assert one.spans == 1
        return bulk_after_small, many.spans, decoder._large is not None

    try:
        assert asyncio.run(scenario()) == (False, 4_000, True)
    finally:
        decoder.close()


def test_a_gzip_trailer_that_understates_the_size_costs_the_fast_lane_no_more_than_its_limit():
    # A second, empty gzip member makes the trailer say 0 bytes; the fast lane stops inflating at its
    # limit and the request is decoded, whole, in the bulk lane.
    bulky, _ = genai_spans_json(4_000)
    lying = gzip.compress(bulky) + gzip.compress(b"")
    assert decoded_size_hint(lying, "gzip") == len(lying)
    decoder = Decoder(1, limit_bytes=1 << 30, large_bytes=256 << 10)
    try:
        decoded = asyncio.run(decoder.decode("a", lying, "gzip", JSON))
        assert (decoded.spans, decoder._large is not None) == (4_000, True)
    finally:
        decoder.close()


def test_the_size_hint_reads_gzip_s_trailer():
    body = b"x" * 100_000
    assert decoded_size_hint(gzip.compress(body), "gzip") == 100_000
    assert decoded_size_hint(gzip.compress(body), None) < 1_000  # not declared gzip: the body as sent
    assert decoded_size_hint(body, "identity") == 100_000
