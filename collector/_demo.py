"""``infersight demo``: the collector plus a synthetic multi-tenant LLM app sending real traffic.

The app calls a local fake LLM over HTTP through ``@traced_llm`` and ``@traced_retrieval``; its
spans travel through the SDK's real OTLP exporter to the collector, like any application's.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import httpx

from infersight import sdk

from ._fake_llm import FakeLLM

TENANTS = ("acme", "globex", "initech", "umbrella", "hooli")
ROUTES = ("support.answer", "search.summarize", "sales.email")
MODELS = (
    ("openai", "gpt-4o-mini", "/v1/chat/completions"),
    ("openai", "gpt-4o", "/v1/chat/completions"),
    ("anthropic", "claude-3-5-haiku-latest", "/v1/messages"),
)


class LLMError(Exception):
    """The fake provider answered with an HTTP error."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code


def _make_app(llm_url: str) -> Callable[[random.Random], None]:
    client = httpx.Client(base_url=llm_url, timeout=10)

    @sdk.traced_retrieval(data_source="kb-articles")
    def retrieve(query: str, top_k: int = 4) -> list[str]:
        time.sleep(0.005)
        return [f"article {i} about {query}" for i in range(top_k)]

    def call_model(provider: str, model: str, path: str, messages: list[dict[str, str]]) -> dict:
        @sdk.traced_llm(provider=provider, model=model)
        def chat() -> dict:
            response = client.post(path, json={"model": model, "messages": messages})
            if response.status_code != 200:
                raise LLMError(response.status_code, response.json()["error"]["message"])
            return response.json()

        return chat()

    def one_request(rng: random.Random) -> None:
        tenant_id = rng.choices(TENANTS, weights=(8, 4, 2, 1, 1))[0]
        route = rng.choice(ROUTES)
        provider, model, path = rng.choices(MODELS, weights=(6, 2, 2))[0]
        question = " ".join(rng.choices(("refund", "invoice", "plan", "login", "export", "api"), k=rng.randint(3, 30)))
        with sdk.tenant(tenant_id, user_id=f"u-{rng.randint(1, 40)}", route=route):
            docs = retrieve(question)
            try:
                call_model(provider, model, path, [{"role": "user", "content": question + " ".join(docs)}])
            except LLMError:
                pass  # the span has recorded it; a real app would retry or fall back

    return one_request


def run_traffic(llm_url: str, seconds: float, *, workers: int = 4, seed: int = 7) -> int:
    """Send synthetic requests for ``seconds`` from ``workers`` threads; returns how many were made."""
    one_request = _make_app(llm_url)
    deadline = time.monotonic() + seconds
    counts = [0] * workers

    def worker(index: int) -> None:
        rng = random.Random(seed + index)
        while time.monotonic() < deadline:
            one_request(rng)
            counts[index] += 1

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts)


def start_fake_llm() -> FakeLLM:
    return FakeLLM(latency_s=(0.03, 0.4), error_rate=0.03, server_error_rate=0.01).start()
