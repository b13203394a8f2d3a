"""What the Alerts page and API show beside the alerts: the silences, which alert each mutes,
acknowledgements, and which notifications were held back and what became of them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from ..store import Store, clickhouse_time
from ._holds import hold_outcomes
from ._silences import Matcher, acks, alert_labels, project_silences, silenced_by


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def silencing(
    store: Store, project: str, firing: list[dict[str, Any]], now: datetime, events: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The silences and acknowledgements beside ``project``'s alerts. Blocks on four small reads.

    - ``silences``: the project's pending and active silences and those that expired in the last day.
    - ``marks``, by fingerprint of each ``firing`` alert (rows of ``history``: name, labels,
      fingerprint, since): the silence muting it, its firing's acknowledgement (``None`` when
      there is none) and its labels as matchers, one per line (what a silence of exactly this
      alert needs; the project is implied).
    - ``held``, for each of ``events`` (history rows: at, event, name, labels, fingerprint):
      ``None``, or the silence that held it back then (``silence``) and what became of it
      (``outcome``: ``sent`` when the silence lifted, ``dropped`` when it resolved first, with
      ``at``; ``None`` while still held). A resolve is never held by a silence alone.
    """
    oldest = min((_utc(e["at"]) for e in events), default=now)
    known = project_silences(store, project, now, expired_for=max(now - oldest, timedelta(days=1)))
    listed = [s for s in known if s.ends_at > now - timedelta(days=1)]
    acked = {(a.fingerprint, clickhouse_time(a.starts_at)): a for a in acks(store, project)}
    marks = {}
    for alert in firing:
        silence = silenced_by(listed, alert["name"], alert["labels"], now)
        ack = acked.get((alert["fingerprint"], alert["since"][:23]))
        labels = alert_labels(alert["name"], {k: v for k, v in alert["labels"].items() if k != "project"})
        marks[alert["fingerprint"]] = {"silence": silence.as_json(now) if silence else None,
                                       "ack": ack.as_json() if ack else None,
                                       "matchers": "\n".join(Matcher(k, v).text() for k, v in labels.items())}
    outcomes = hold_outcomes(store, project, oldest) if events else {}
    held: list[dict[str, Any] | None] = []
    for event in events:
        at = _utc(event["at"])
        by = None if event["event"] == "resolved" else silenced_by(known, event["name"], event["labels"], at)
        if by is None:
            held.append(None)
            continue
        later = [(when, what) for when, what in outcomes.get(event["fingerprint"], []) if when >= at]
        outcome = {"state": later[0][1], "at": clickhouse_time(later[0][0])[:19]} if later else None
        held.append({"silence": by.id, "outcome": outcome})
    return {"silences": [s.as_json(now) for s in listed], "marks": marks, "held": held}

