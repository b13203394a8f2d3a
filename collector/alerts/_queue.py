"""Queues that do not drain, per reporting instance (the SDK's ``watch_queue``, the collector's spool).

What is measured (``_reads.queue_series``): each (service, queue, instance) is its own series of
depth samples, with the age of the oldest item where the reporter knows it. Three replicas
reporting the same queue name are three queues, so one stalled replica is not averaged away by
two healthy ones. Names below are fields of :class:`QueueRule`.

Stopped reporting (``QueueStoppedReporting``), fires when all hold:

1. the last sample is older than ``silent_after`` (5 minutes); while it fires the series'
   not-draining alert neither fires nor resolves (silence is not health);
2. the last sample is not marked ended (the SDK's clean shutdown);
3. no successor reports: a series of the same service and queue (another instance) whose first
   sample came after this one's last, or up to ``successor_overlap`` (10 minutes) before it (a
   rolling deploy starts the new process first), and that reported after it; each series
   succeeds one other at most (see :func:`replaced`), so one dead replica of three still pages
   beside its two live siblings.

It resolves once samples arrive again, the series is marked ended (the reporter stopped
cleanly, or someone acknowledged the page: :func:`~._rules.retire_queue_series`), a successor
reports, or the series is older than ``forget_after`` (a day): a page nobody can act on must
not stay firing for ever. An ended or replaced series' not-draining alert resolves too: its
process is gone.

Not draining (``QueueNotDraining``), fires when either holds:

1. the oldest item is older than ``max_oldest_age_s`` (900 s), the queue is not empty, and it is
   not catching up;
2. over the last ``window`` (7 minutes), with at least ``min_samples`` (5) samples, the depth
   never reached zero and never fell between two samples (stalled if flat, growing if not). A
   sawtooth (batches in, consumers draining them) falls every few minutes, even at a high level,
   and stays quiet.

Catching up: with ``min_samples`` samples in the last ``window`` and before it, the oldest
item's age (without ages: the depth) peaked lower in the last than anywhere before it in the
samples read (the incident's peak, not the window before: a draining backlog's sawtooth can peak
higher than the window before it, and re-paged while it drained). Consumers are back and working
through the backlog, which ends the incident even while the backlog is still old. Peaks, because
the age is a sawtooth while a backlog of batches drains, and a slow consumer's peaks keep rising.

Hold and resolve, while the alert fires and neither condition holds:

1. it resolves once the queue is empty, catches up, or falls again with its oldest item younger
   than ``hold_age_share`` (half) of ``max_oldest_age_s`` (so an age hovering around the limit
   pages once);
2. otherwise it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from itertools import pairwise
from urllib.parse import urlencode

from ._model import BREACH, CLEAR, HOLD, QUEUE_NOT_DRAINING, QUEUE_SILENT, Alert, Verdict


@dataclass(frozen=True, slots=True)
class DepthSample:
    """One report of a queue: its depth and the age of its oldest item (``None``: not known)."""

    ts: datetime
    depth: float
    oldest_age_s: float | None = None
    ended: bool = False
    """The reporter's last point before a clean shutdown."""


@dataclass(frozen=True, slots=True)
class QueueRule:
    """The queue rule's settings (the module docstring says how each is used)."""

    window: timedelta = timedelta(minutes=7)
    """The stretch over which a queue that never fell nor emptied is not draining."""
    min_samples: int = 5
    """Samples a window needs before it says anything."""
    max_oldest_age_s: float = 900.0
    """An oldest item older than this (seconds) is not draining, unless the queue catches up."""
    hold_age_share: float = 0.5
    """A queue that falls again resolves only once its oldest item is younger than this share of the limit."""
    silent_after: timedelta = timedelta(minutes=5)
    """A series without a sample for this long has stopped reporting."""
    successor_overlap: timedelta = timedelta(minutes=10)
    """A new instance that began this long before an old one's last sample can be its successor."""
    forget_after: timedelta = timedelta(hours=24)
    """A series silent this long is no longer judged, and its pages resolve."""

    def evaluate(
        self, project: str, service: str, queue: str, samples: Sequence[DepthSample], now: datetime,
        instance: str = "", *, label: str = "", replaced: bool = False,
    ) -> list[Verdict]:
        """The verdicts on one series; ``samples`` in time order (the last ones before ``now``).
        ``label`` names the instance for people (pod, host, pid); ``replaced``: a successor
        reports (see :func:`replaced`)."""
        labels = {"project": project, "service": service, "queue": queue}
        if instance:
            labels["instance"] = instance
        named = label or instance
        where = f"queue {queue} of {service}" + (f" on {named}" if named else "")
        link = "/latency?" + urlencode({"service": service, "queue": queue})
        if not samples:
            return []
        last = samples[-1]
        if now - last.ts > self.silent_after:
            silent = Alert(QUEUE_SILENT, labels, f"{where} stopped reporting {_ago(now - last.ts)} ago",
                           since=last.ts, numbers={"last_depth": last.depth}, link=link,
                           details=_silent_details(instance, label))
            if last.ended or replaced or now - last.ts > self.forget_after:
                retired = replace(silent, summary=_retired(where, last, replaced, now - last.ts))
                return [Verdict(CLEAR, retired), Verdict(CLEAR, replace(retired, name=QUEUE_NOT_DRAINING))]
            return [Verdict(BREACH, silent)]  # and nothing on draining: no data
        out = [Verdict(CLEAR, Alert(QUEUE_SILENT, labels, "", now))]
        recent = [s for s in samples if s.ts >= now - self.window]
        draining = Alert(QUEUE_NOT_DRAINING, labels, "", now)
        age = last.oldest_age_s
        catching_up = self._catching_up(recent, samples, now)
        if age is not None and age > self.max_oldest_age_s and last.depth > 0 and not catching_up:
            return [*out, Verdict(BREACH, Alert(
                QUEUE_NOT_DRAINING, labels, f"{where}: oldest item waiting {_ago(timedelta(seconds=age))}",
                since=now - timedelta(seconds=age - self.max_oldest_age_s),
                numbers={"depth": last.depth, "oldest_age_s": age, "limit_s": self.max_oldest_age_s},
                details="The oldest item is older than the limit: the consumer is not keeping up or is stuck.",
                link=link,
            ))]
        depths = [s.depth for s in recent]
        never_empty = bool(depths) and min(depths) > 0
        never_fell = all(b >= a for a, b in pairwise(depths))
        if len(recent) >= self.min_samples and never_empty and never_fell:
            return [*out, Verdict(BREACH, self._not_draining(labels, where, samples, link))]
        young = age is None or age < self.max_oldest_age_s * self.hold_age_share
        recovered = last.depth == 0 or catching_up or (not never_fell and young)
        return [*out, Verdict(CLEAR if recovered else HOLD, draining)]

    def _catching_up(self, recent: Sequence[DepthSample], samples: Sequence[DepthSample], now: datetime) -> bool:
        """Whether the oldest age (without ages: the depth) peaked lower in the last window than
        in any before it that was read."""
        before = [s for s in samples if s.ts < now - self.window]
        if len(recent) < self.min_samples or len(before) < self.min_samples:
            return False
        if all(s.oldest_age_s is not None for s in (*recent, *before)):
            return max(s.oldest_age_s or 0.0 for s in recent) < max(s.oldest_age_s or 0.0 for s in before)
        return max(s.depth for s in recent) < max(s.depth for s in before)

    def _not_draining(self, labels: dict[str, str], where: str, samples: Sequence[DepthSample],
                      link: str) -> Alert:
        # the run of samples without a fall, back to where it began: the first breaching minute
        start = len(samples) - 1
        while start > 0 and samples[start - 1].depth <= samples[start].depth and samples[start - 1].depth > 0:
            start -= 1
        first, last = samples[start], samples[-1]
        stalled = first.depth == last.depth
        how = "stalled (nothing dequeued)" if stalled else f"growing ({first.depth:,.0f} -> {last.depth:,.0f})"
        numbers = {"depth": last.depth, "depth_at_start": first.depth, "samples": float(len(samples) - start)}
        if last.oldest_age_s is not None:
            numbers["oldest_age_s"] = last.oldest_age_s
        return Alert(
            name=QUEUE_NOT_DRAINING, labels=labels,
            summary=f"{where} is {how} since {first.ts:%H:%M} UTC",
            since=first.ts, numbers=numbers,
            details=f"Depth never fell and never reached zero in {len(samples) - start} samples.",
            link=link,
        )


@dataclass(frozen=True, slots=True)
class SeriesSpan:
    """When one series of a (project, service, queue) was seen: its first and last sample, and
    whether the last was marked ended."""

    key: tuple[str, ...]
    first_at: datetime
    last_at: datetime
    ended: bool = False


def replaced(series: Sequence[SeriesSpan], overlap: timedelta) -> set[tuple[str, ...]]:
    """The keys of the series a later one took over from, among ``series`` of one service and
    queue: each unended series, from the one that stopped first, is paired with the earliest
    unpaired series that began after it, at most ``overlap`` before its last sample, and
    reported after that last sample. A deploy replaces every replica with a new instance id; a
    replica that dies beside long-running siblings has no successor."""
    by_start = sorted(series, key=lambda s: s.first_at)
    taken: set[tuple[str, ...]] = set()
    out: set[tuple[str, ...]] = set()
    for old in sorted((s for s in series if not s.ended), key=lambda s: s.last_at):
        successor = next((s for s in by_start if s.key not in taken and s.first_at > old.first_at
                          and s.first_at >= old.last_at - overlap and s.last_at > old.last_at), None)
        if successor is not None:
            taken.add(successor.key)
            out.add(old.key)
    return out


def _silent_details(instance: str, label: str) -> str:
    if label and instance:
        return f"Instance {instance} ({label}): no sample since, and no other instance took its place."
    return "No sample since, and no other instance took its place."


def _retired(where: str, last: DepthSample, replaced: bool, silent_for: timedelta) -> str:
    if last.ended:
        return f"{where} stopped cleanly at {last.ts:%H:%M} UTC"
    if replaced:
        return f"{where} was replaced by a new instance after {last.ts:%H:%M} UTC"
    return f"{where} has not reported for {_ago(silent_for)}; no longer watched"


def _ago(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"
