"""A route answered by two app versions, where the judge (by rule) prefers v2 by a known amount."""

from __future__ import annotations

import time

from tests.judges.conftest import Span, insert_spans, trace_id_for

QUESTIONS = 40
BETTER = 30  # v2 answers these at quality 4 where v1 answered 3; the rest tie at 3
EXPECTED_DIFF = BETTER / QUESTIONS


def seed_versions(store, project: str, route: str = "support.answer") -> None:
    now = time.time_ns()
    v1 = [
        Span(trace_id_for(project, "v1", i), route=route, version="v1", question=f"How do I do thing {i}?",
             system="You are a support bot.", answer=f"Do thing {i} like this. [[quality=3]]",
             ts_ns=now - 7200 * 10**9 + i)
        for i in range(QUESTIONS)
    ]
    # Old inputs v2 never saw, and trailing whitespace plus a new system prompt on what it did see:
    # matching is on the user's turns, so those still pair up.
    v2 = [
        Span(trace_id_for(project, "v2", i), route=route, version="v2", question=f"How do I do thing {i}?\n",
             system="You are a concise support bot.",
             answer=f"Thing {i}: step by step. [[quality={4 if i < BETTER else 3}]]", ts_ns=now - 600 * 10**9 + i)
        for i in range(QUESTIONS)
    ]
    extra_v1 = [
        Span(trace_id_for(project, "v1-only", i), route=route, version="v1", question=f"Legacy question {i}?",
             answer="Legacy. [[quality=2]]", ts_ns=now - 7000 * 10**9 + i)
        for i in range(5)
    ]
    other_route = [Span(trace_id_for(project, "other"), route="billing.refund", version="v2", question="Refund?",
                        answer="Yes. [[quality=1]]")]
    insert_spans(store, project, v1 + extra_v1 + other_route)
    insert_spans(store, project, v2)
