"""Holding back what silences and acknowledgements mute, between the rules and every channel.

The evaluator passes each evaluation's events through :func:`hold_back` before any notifier
sees them, so every channel honours the same silences. The alerts are still evaluated and
stored (the Alerts page shows them, marked); only their notifications change:

1. An event of an alert that an active silence mutes is not sent, and its firing is remembered
   as owed (``alert_holds``, with what the alert said): a firing never sent, or a reminder of
   one that was sent before the silence began.
2. A repeat of an acknowledged firing is not sent: the acknowledgement lasts until it resolves.
3. An owed firing whose silences have all lifted while it still fires, and that nobody
   acknowledged, is sent then, once: as a firing if it was never sent, else as a repeat.
4. A resolve of a firing that was never sent is not sent either (it would close nothing), and
   the owed firing is dropped. A resolve of a firing that was sent goes out even under a
   silence, so the page it opened is closed.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..store import Store, clickhouse_time, encode_rows
from ._silences import ack_key, acks, active_silences, silenced_by
from ._state import FIRING, RESOLVED, AlertState, Event

OWED, REMIND, SENT, DROPPED = "owed", "remind", "sent", "dropped"
_Key = tuple[str, str, str]


def _owed(store: Store) -> dict[_Key, dict[str, Any]]:
    rows = store.query(
        "SELECT project, fingerprint, toString(starts_at) AS starts, argMax(name, ts) AS name,"
        " argMax(labels, ts) AS labels, argMax(summary, ts) AS summary, argMax(details, ts) AS details,"
        " argMax(numbers, ts) AS numbers, argMax(link, ts) AS link, argMax(state, ts) AS latest FROM alert_holds"
        " GROUP BY project, fingerprint, starts_at HAVING latest IN ({owed:String}, {remind:String})",
        {"owed": OWED, "remind": REMIND},
    )
    return {(r["project"], r["fingerprint"], r["starts"]): r for r in rows}


def _hold_row(state: AlertState, now: datetime, status: str, reason: str) -> dict[str, Any]:
    return {
        "project": state.project, "fingerprint": state.fingerprint, "starts_at": clickhouse_time(state.starts_at),
        "ts": clickhouse_time(now), "state": status, "reason": reason, "name": state.name, "labels": state.labels,
        "summary": state.summary, "details": state.details, "numbers": state.numbers, "link": state.link,
    }


def _owed_state(row: dict[str, Any]) -> AlertState:
    starts = datetime.fromisoformat(row["starts"]).replace(tzinfo=timezone.utc)
    return AlertState(
        project=row["project"], fingerprint=row["fingerprint"], name=row["name"], status=FIRING,
        labels=dict(row["labels"]), summary=row["summary"], details=row["details"],
        numbers=dict(row["numbers"]), link=row["link"], starts_at=starts,
    )


def hold_back(store: Store, events: list[Event], now: datetime) -> list[Event]:
    """The events to send now: ``events`` without what silences and acknowledgements mute, plus
    the owed firings whose silence lifted. Reads the active silences, the owed firings and the
    acknowledgements of the firings concerned (three small queries), and records what it held
    or released in one insert. Blocking; called from the evaluator's thread only."""
    silences = active_silences(store, now)
    owed = _owed(store)
    fingerprints = sorted({e.state.fingerprint for e in events} | {k[1] for k in owed})
    acked = {ack_key(a.project, a.fingerprint, a.starts_at) for a in acks(store, fingerprints=fingerprints)} \
        if fingerprints else set()
    send: list[Event] = []
    rows: list[dict[str, Any]] = []
    seen: set[_Key] = set()
    for event in events:
        state = event.state
        key = ack_key(state.project, state.fingerprint, state.starts_at)
        seen.add(key)
        silence = silenced_by(silences.get(state.project, []), state.name, state.labels, now)
        if event.kind == RESOLVED:
            if key in owed:
                rows.append(_hold_row(state, now, DROPPED, "resolved while held"))
            if owed.get(key, {}).get("latest") != OWED:
                send.append(event)
        elif silence is not None:
            if key not in owed:
                rows.append(_hold_row(state, now, OWED if event.kind == FIRING else REMIND, f"silence {silence.id}"))
        elif key not in acked:
            send.append(event)
            if key in owed:
                rows.append(_hold_row(state, now, SENT, "its silence lifted"))
    for key, row in owed.items():
        if key in seen or key in acked:
            continue
        state = _owed_state(row)
        if silenced_by(silences.get(state.project, []), state.name, state.labels, now) is None:
            send.append(Event(FIRING if row["latest"] == OWED else "repeat", state))
            rows.append(_hold_row(state, now, SENT, "its silence lifted"))
    if rows:
        store.insert("alert_holds", encode_rows(rows))
    return send


def hold_outcomes(store: Store, project: str, since: datetime) -> dict[str, list[tuple[datetime, str]]]:
    """What became of ``project``'s held firings since ``since``: by fingerprint, (when, 'sent'
    or 'dropped') in time order."""
    rows = store.query(
        "SELECT fingerprint, toString(ts) AS at, state FROM alert_holds WHERE project = {p:String}"
        " AND ts >= {since:DateTime64(3)} AND state IN ({sent:String}, {dropped:String}) ORDER BY ts",
        {"p": project, "since": clickhouse_time(since), "sent": SENT, "dropped": DROPPED},
    )
    out: dict[str, list[tuple[datetime, str]]] = {}
    for r in rows:
        out.setdefault(r["fingerprint"], []).append((datetime.fromisoformat(r["at"]).replace(tzinfo=timezone.utc),
                                                     r["state"]))
    return out
