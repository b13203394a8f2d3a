"""``infersight demo``: the collector plus a synthetic multi-tenant LLM app sending real traffic.

The app is shaped like a real one: a front door queues requests, worker threads pick them up
(``mark_started`` splits the queue wait out), retrieve, then call a local fake LLM over HTTP with
the real ``openai`` and ``anthropic`` clients — streaming for the support route (with the stream
guard on), JSON mode for the email route. Its spans and queue gauges travel through the SDK's
real OTLP exporters to the collector, like any application's. The fake model sometimes loops,
truncates JSON and rate-limits, so the quality pages and detectors have something to show.
Users hold conversations of two to four turns (``session_id``) and now and then click a thumb
(``sdk.feedback``), more often down when their request failed.
"""

from __future__ import annotations

import heapq
import itertools
import json
import queue
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from infersight import sdk

from ._fake_llm import FakeLLM

if TYPE_CHECKING:
    from anthropic.types import Message, MessageParam
    from openai import Stream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam
    from openai.types.shared_params import ResponseFormatJSONObject

TENANTS = ("acme", "globex", "initech", "umbrella", "hooli")
ROUTES = ("support.answer", "search.summarize", "sales.email")
TURNS_PER_SESSION = (2, 4)  # a conversation's requests, at least and at most
TURN_GAP_S = 20.0  # the least time a user takes to read an answer and ask again
FEEDBACK_SHARE = 0.05  # of the requests that went well, those a user rates
TROUBLED_FEEDBACK_SHARE = 0.4  # of those that failed or came back unusable


@dataclass(frozen=True)
class Request:
    tenant: str
    user: str
    route: str
    session: str
    question: str
    queued_at: float
    feedback_roll: float  # drawn with the request, so a seed gives the same feedback


def _make_handler(llm_url: str) -> Callable[[Request], None]:
    import anthropic
    import openai

    oai = openai.OpenAI(base_url=llm_url + "/v1", api_key="demo", max_retries=0)
    claude = anthropic.Anthropic(base_url=llm_url, api_key="demo", max_retries=0)

    @sdk.traced_retrieval(data_source="kb-articles")
    def retrieve(query: str, top_k: int = 4) -> list[dict[str, object]]:
        time.sleep(0.004)
        return [{"text": f"article {i} about {query[:20]}", "score": 0.9 - i * 0.1} for i in range(top_k)]

    @sdk.traced_rerank(model="bge-reranker-v2")
    def rerank(query: str, documents: list[dict[str, object]]) -> list[dict[str, object]]:
        time.sleep(0.0005 * len(documents))  # a CPU hot spot that grows with candidates
        return documents[:2]

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini", stream_guard=True)
    def support(messages: list[ChatCompletionMessageParam]) -> Stream[ChatCompletionChunk]:
        return oai.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True,
                                           stream_options={"include_usage": True})

    @sdk.traced_llm(provider="anthropic", model="claude-3-5-haiku-latest")
    def summarize(messages: list[MessageParam]) -> Message:
        return claude.messages.create(model="claude-3-5-haiku-latest", max_tokens=300, messages=messages)

    @sdk.traced_llm(provider="openai", model="gpt-4o")
    def email(messages: list[ChatCompletionMessageParam], response_format: ResponseFormatJSONObject) -> ChatCompletion:
        return oai.chat.completions.create(model="gpt-4o", messages=messages, response_format=response_format)

    def handle(request: Request) -> None:
        # One trace per request: retrieval, rerank and the model call share the request's root span.
        with sdk.request(request.tenant, user_id=request.user, route=request.route, session_id=request.session):
            sdk.mark_started(request.queued_at)
            trace_id = sdk.current_trace_id()
            docs = rerank(request.question, documents=retrieve(request.question))
            context = " ".join(str(d["text"]) for d in docs)
            content = f"{request.question}\n\nContext: {context}"
            # the same one user message for each client, typed as that client's message type
            troubled = False
            try:
                if request.route == "support.answer":
                    for _ in support([{"role": "user", "content": content}]):
                        pass
                elif request.route == "search.summarize":
                    summarize([{"role": "user", "content": content}])
                else:
                    reply = email([{"role": "user", "content": content}], response_format={"type": "json_object"})
                    troubled = not _is_json(reply.choices[0].message.content)
            except (openai.APIError, anthropic.APIError):
                troubled = True  # the span has recorded it; a real app would retry or fall back
        # The user's click comes later, naming the trace the app kept with the answer it showed.
        if request.feedback_roll < (TROUBLED_FEEDBACK_SHARE if troubled else FEEDBACK_SHARE):
            down = troubled or request.feedback_roll < FEEDBACK_SHARE * 0.1
            sdk.feedback(trace_id, thumbs="down" if down else "up", user_id=request.user,
                         comment="that did not work" if troubled else None)

    return handle


def _is_json(text: str | None) -> bool:
    try:
        json.loads(text or "")
    except ValueError:
        return False
    return True


def run_traffic(llm_url: str, stop: threading.Event, rate_per_s: Callable[[float], float], *, workers: int = 4,
                seed: int = 7, turn_gap_s: float = TURN_GAP_S, on_start: Callable[[], None] | None = None,
                finish_s: float = 1.5) -> int:
    """Queue synthetic requests at ``rate_per_s(now)`` and serve them with ``workers`` threads until
    ``stop`` is set; returns how many were served. Blocks.

    Requests are turns of conversations: a session of 2-4 turns from one user on one route, the
    next turn at least ``turn_gap_s`` after the one before. The first conversation starts at
    once, so the live part shows in the first seconds.

    The arrival rate stays far under what the workers serve (a request takes ~0.5 s, four workers
    serve ~8 a second; the demo asks for a few a minute), so the queue wait stays milliseconds,
    as in a healthy service. ``on_start`` is called once the workers are up, just before the first
    request (a ``--duration`` counts from there, not from the clients' imports); at ``stop`` the
    requests under way get ``finish_s`` seconds to end. The queue is reported with
    ``watch_queue``; its series ends cleanly at the SDK's shutdown. Workers are daemon threads
    that stop on ``stop``: an interrupt never leaves a thread blocked in a request behind.
    """
    handle = _make_handler(llm_url)
    rng = random.Random(seed)
    requests: queue.Queue[Request] = queue.Queue()
    waiting: deque[float] = deque()  # queued_at of the requests in the queue, oldest first (FIFO)
    served = [0] * workers

    def oldest_age() -> float:
        try:
            return time.time() - waiting[0]
        except IndexError:
            return 0.0

    watch = sdk.watch_queue("demo-requests", requests.qsize, oldest_age)

    def worker(index: int) -> None:
        while not stop.is_set():
            try:
                request = requests.get(timeout=0.2)
            except queue.Empty:
                continue
            waiting.popleft()
            handle(request)
            served[index] += 1

    threads = [threading.Thread(target=worker, args=(i,), name=f"demo-worker-{i}", daemon=True)
               for i in range(workers)]
    for t in threads:
        t.start()
    if on_start is not None:
        on_start()
    later: list[tuple[float, int, Request]] = []  # (due, tiebreak, turn): the open sessions' next turns
    next_session = time.time()
    order = itertools.count()  # ties in due time go first come, first served
    try:
        while not stop.wait(max(0.0, min(next_session, later[0][0] if later else next_session) - time.time())):
            now = time.time()
            if later and later[0][0] <= now:
                request = heapq.heappop(later)[2]
            else:
                turns = _session(rng, now, turn_gap_s)
                for turn in turns[1:]:
                    heapq.heappush(later, (turn.queued_at, next(order), turn))
                request = turns[0]
                mean_turns = sum(TURNS_PER_SESSION) / 2  # sessions start at the request rate over their turns
                next_session = now + rng.expovariate(max(rate_per_s(now) / mean_turns, 1e-6))
            request = replace(request, queued_at=time.time())
            waiting.append(request.queued_at)
            requests.put(request)
    finally:
        stop.set()
        deadline = time.monotonic() + finish_s  # daemon threads still in a request past it are left
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        watch.stop()
    return sum(served)


def _session(rng: random.Random, now: float, turn_gap_s: float) -> list[Request]:
    """One conversation's turns, each with the time it is due."""
    tenant = rng.choices(TENANTS, weights=(8, 4, 2, 1, 1))[0]
    user, route = f"{tenant}-u{rng.randint(1, 40)}", rng.choice(ROUTES)
    session = f"live-{int(now):x}-{rng.getrandbits(32):08x}"  # the time in it: a rerun's seed starts new ones
    turns = []
    for _ in range(rng.randint(*TURNS_PER_SESSION)):
        words = rng.choices(("refund", "invoice", "plan", "login", "export", "api"), k=rng.randint(3, 30))
        turns.append(Request(tenant, user, route, session, " ".join(words), now, rng.random()))
        now += turn_gap_s * (1 + rng.expovariate(1 / 2))
    return turns


def start_fake_llm() -> FakeLLM:
    """The demo's model: about 0.8% of calls fail (429s and 500s), as on a healthy provider, under
    what the error-rate rule pages for; a few answers loop or come back as truncated JSON."""
    return FakeLLM(latency_s=(0.05, 0.4), error_rate=0.005, server_error_rate=0.003, stream_chunk_delay_s=0.004,
                   loop_rate=0.012, truncate_rate=0.03).start()
