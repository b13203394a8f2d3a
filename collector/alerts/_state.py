"""Alert lifecycle: firing -> (repeat) -> resolved, decided from what is active now and what was.

Pure logic: the evaluator loads the stored states, calls :func:`transition`, sends what it
returns and writes the new states back, so a restarted evaluator continues where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ._model import Alert

FIRING = "firing"
RESOLVED = "resolved"


@dataclass(frozen=True, slots=True)
class AlertState:
    """What the store remembers of one alert (one fingerprint)."""

    project: str
    fingerprint: str
    name: str
    status: str
    labels: dict[str, str]
    summary: str
    details: str
    numbers: dict[str, float]
    link: str
    starts_at: datetime
    ends_at: datetime | None = None
    last_notified_at: datetime | None = None

    @classmethod
    def firing(cls, alert: Alert, now: datetime) -> AlertState:
        return cls(
            project=alert.labels.get("project", ""), fingerprint=alert.fingerprint, name=alert.name,
            status=FIRING, labels=dict(alert.labels), summary=alert.summary, details=alert.details,
            numbers=dict(alert.numbers), link=alert.link, starts_at=min(alert.since, now),
        )


@dataclass(frozen=True, slots=True)
class Event:
    """A notification to send: ``firing`` (new), ``repeat`` (still firing) or ``resolved``."""

    kind: str
    state: AlertState


def transition(
    active: list[Alert], stored: dict[str, AlertState], now: datetime, repeat_interval: timedelta
) -> tuple[list[AlertState], list[Event]]:
    """New states to store and events to send, given the active alerts and the stored states."""
    updates: list[AlertState] = []
    events: list[Event] = []
    seen: set[str] = set()
    for alert in active:
        fp = alert.fingerprint
        seen.add(fp)
        old = stored.get(fp)
        if old is None or old.status != FIRING:
            state = AlertState.firing(alert, now)
            updates.append(state)
            events.append(Event(FIRING, state))
            continue
        state = replace(old, summary=alert.summary, details=alert.details, numbers=dict(alert.numbers), link=alert.link)
        due = old.last_notified_at is None or now - old.last_notified_at >= repeat_interval
        updates.append(state)
        if due:
            events.append(Event("repeat", state))
    for fp, old in stored.items():
        if old.status == FIRING and fp not in seen:
            state = replace(old, status=RESOLVED, ends_at=now)
            updates.append(state)
            events.append(Event(RESOLVED, state))
    return updates, events
