"""What ``infersight demo`` runs beside the product: a synthetic app, a fake model and a fake judge.

None of it is part of the product. The fakes are local HTTP servers speaking the providers'
protocols, so the demo (and the tests) drive the real ``openai`` and ``anthropic`` clients, the
real SDK and the real judge client against them:

    from infersight.demo import FakeLLM, run_traffic

    llm = FakeLLM(error_rate=0.03).start()
    stop = threading.Event()
    threading.Timer(10, stop.set).start()
    run_traffic(llm.url, stop, lambda now: 2.0)   # needs infersight.sdk.init(...) first to send anything
    llm.stop()

It also makes the past: :class:`WeekOfTraffic` is a week of two services' traces as OTLP, with
one incident, and :func:`post_week` sends it to a collector's ``/v1/traces``; the users' thumbs on
it (:class:`Feedback`) are its ``feedback``, filled as its spans are made.

This package uses only the SDK (the synthetic app is an SDK user like any other), so the
collector's ``infersight demo`` command can import it without a cycle.
"""

from __future__ import annotations

from ._app import run_traffic, start_fake_llm
from ._backfill import BackfillError, post_feedback, post_week
from ._fake_judge import FakeJudge
from ._fake_llm import FakeLLM
from ._week import (
    SEARCH_API,
    SERVICES,
    SUPPORT_BOT,
    Feedback,
    Incident,
    Service,
    WeekOfTraffic,
    past_incident,
    requests_per_hour,
)

__all__ = [
    "BackfillError",
    "FakeJudge",
    "FakeLLM",
    "Feedback",
    "Incident",
    "SEARCH_API",
    "SERVICES",
    "SUPPORT_BOT",
    "Service",
    "WeekOfTraffic",
    "past_incident",
    "post_feedback",
    "post_week",
    "requests_per_hour",
    "run_traffic",
    "start_fake_llm",
]
