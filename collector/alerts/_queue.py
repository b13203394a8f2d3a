"""Queues that do not drain, from depth samples (the SDK's ``watch_queue`` and the collector's spool).

Over the window the depth never reaches zero AND either it never changes (stalled: nothing is
dequeued) or it never falls (growing); or the oldest item is older than a limit. A busy queue
that goes up and down, even at a high level, is draining and stays quiet. A queue whose samples
stop arriving is reported separately: silence must not look like health.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
from urllib.parse import urlencode

from ._model import QUEUE_NOT_DRAINING, QUEUE_SILENT, Alert


@dataclass(frozen=True, slots=True)
class DepthSample:
    ts: datetime
    depth: float
    oldest_age_s: float | None = None


@dataclass(frozen=True, slots=True)
class QueueRule:
    window: timedelta = timedelta(minutes=10)
    min_samples: int = 10
    max_oldest_age_s: float = 900.0
    silent_after: timedelta = timedelta(minutes=5)

    def evaluate(
        self, project: str, service: str, queue: str, samples: Sequence[DepthSample], now: datetime
    ) -> Alert | None:
        """``samples`` in time order, covering at least the window before ``now``."""
        labels = {"project": project, "service": service, "queue": queue}
        link = "/latency?" + urlencode({"service": service, "queue": queue})
        if samples and now - samples[-1].ts > self.silent_after:
            return Alert(
                name=QUEUE_SILENT, labels=labels,
                summary=f"queue {queue} of {service} stopped reporting {_ago(now - samples[-1].ts)} ago",
                since=samples[-1].ts, numbers={"last_depth": samples[-1].depth}, link=link,
            )
        recent = [s for s in samples if s.ts >= now - self.window]
        if not recent:
            return None
        oldest = recent[-1].oldest_age_s
        if oldest is not None and oldest > self.max_oldest_age_s and recent[-1].depth > 0:
            return Alert(
                name=QUEUE_NOT_DRAINING, labels=labels,
                summary=f"queue {queue} of {service}: oldest item waiting {_ago(timedelta(seconds=oldest))}",
                since=now - timedelta(seconds=oldest),
                numbers={"depth": recent[-1].depth, "oldest_age_s": oldest, "limit_s": self.max_oldest_age_s},
                details="The oldest item is older than the limit: the consumer is not keeping up or is stuck.",
                link=link,
            )
        if len(recent) < self.min_samples or min(s.depth for s in recent) <= 0:
            return None
        depths = [s.depth for s in recent]
        stalled = all(d == depths[0] for d in depths)
        growing = all(b >= a for a, b in pairwise(depths)) and depths[-1] > depths[0]
        if not (stalled or growing):
            return None
        how = "stalled (nothing dequeued)" if stalled else f"growing ({depths[0]:,.0f} -> {depths[-1]:,.0f})"
        return Alert(
            name=QUEUE_NOT_DRAINING, labels=labels,
            summary=f"queue {queue} of {service} is {how} for {_ago(self.window)}",
            since=recent[0].ts,
            numbers={"depth": depths[-1], "depth_at_start": depths[0], "samples": float(len(recent)),
                     **({"oldest_age_s": oldest} if oldest is not None else {})},
            details=f"Depth never reached zero in {len(recent)} samples over {_ago(self.window)}.",
            link=link,
        )


def _ago(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"
