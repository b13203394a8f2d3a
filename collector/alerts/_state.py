"""Alert lifecycle: firing -> (repeat) -> resolved, decided from what is active now and what was.

Pure logic: the evaluator loads the stored states, calls :func:`transition`, sends what it
returns and writes the new states back, so a restarted evaluator continues where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ._model import BREACH, CLEAR, HOLD, Alert, Verdict

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
    verdicts: list[Verdict], stored: dict[str, AlertState], now: datetime, repeat_interval: timedelta,
    resolvable: set[str] | None = None,
) -> tuple[list[AlertState], list[Event]]:
    """New states to store and events to send, given this evaluation's verdicts and the stored states.

    A BREACH fires a new alert (or refreshes a firing one); a HOLD only refreshes a firing one; a
    firing alert resolves only on a CLEAR verdict, and only if its fingerprint is in ``resolvable``
    (``None``: every clear one), which lets the caller ask for a clear that lasts. A firing alert
    without a verdict (its signal stopped arriving) stays firing.
    """
    updates: list[AlertState] = []
    events: list[Event] = []
    for verdict in verdicts:
        alert = verdict.alert
        fp = alert.fingerprint
        old = stored.get(fp)
        firing = old is not None and old.status == FIRING
        if verdict.state == BREACH and not firing:
            state = AlertState.firing(alert, now)
            updates.append(state)
            events.append(Event(FIRING, state))
        elif verdict.state in (BREACH, HOLD) and old is not None and firing:
            # a hold keeps the text the alert fired with; a breach refreshes its numbers
            state = old if verdict.state == HOLD else replace(
                old, summary=alert.summary, details=alert.details, numbers=dict(alert.numbers), link=alert.link
            )
            due = old.last_notified_at is None or now - old.last_notified_at >= repeat_interval
            if state is not old or due:
                updates.append(state)
            if due:
                events.append(Event("repeat", state))
        elif verdict.state == CLEAR and old is not None and firing and (resolvable is None or fp in resolvable):
            # a clear that says why (a queue reporter that stopped cleanly) replaces the firing text
            state = replace(old, status=RESOLVED, ends_at=now, summary=alert.summary or old.summary,
                            details=alert.details if alert.summary else old.details)
            updates.append(state)
            events.append(Event(RESOLVED, state))
    return updates, events
