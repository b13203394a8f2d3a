"""The evaluator: every minute, read the store, run the three rules, move alerts through their
lifecycle and notify. One evaluator per deployment (it is the collector process on the embedded
store; a singleton process beside stateless collectors on a ClickHouse cluster)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from typing import Any

from ..store import Store, encode_rows
from ..store import clickhouse_time as _ts
from ._channels import Notifier, NotifierError
from ._cost import CostRule
from ._digest import DIGEST, build_digest, projects_active
from ._error_rate import ErrorRateRule
from ._holds import hold_back
from ._model import BREACH, CLEAR, Alert, Verdict, fingerprint
from ._queue import QueueRule
from ._rules import CostRules, ErrorRule, forgotten_queue_alerts, queue_verdicts
from ._state import AlertState, Event, transition

logger = logging.getLogger("infersight.alerts")

_DT = "DateTime64(3)"


@dataclass
class EvaluatorConfig:
    error_rule: ErrorRateRule = field(default_factory=ErrorRateRule)
    queue_rule: QueueRule = field(default_factory=QueueRule)
    cost_rule: CostRule = field(default_factory=CostRule)
    repeat_interval: timedelta = timedelta(hours=4)
    clear_for: timedelta = timedelta(minutes=2)


@dataclass
class Evaluation:
    """What one evaluation found and did."""

    at: datetime
    active: list[Alert]
    events: list[Event]
    delivery_errors: list[str]


def _parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=timezone.utc)


class Evaluator:
    """Runs the paging rules over the store. ``run_once`` is blocking and not re-entrant; the
    collector's scheduler runs it every evaluation interval (see ``collector/_jobs.py``)."""

    def __init__(
        self,
        store: Store,
        notifiers: Sequence[Notifier] = (),
        config: EvaluatorConfig | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        own_queue: tuple[str, Callable[[], tuple[float, float]]] | None = None,
        digest_hour_utc: int | None = None,
        windowed: Any | None = None,
    ) -> None:
        """``own_queue`` is (project, fn returning (depth, oldest age s)): a queue of this process,
        sampled into ``queue_depth`` at every evaluation (the collector's spool). From
        ``digest_hour_utc`` on, each day's first evaluation sends yesterday's daily digest.
        ``windowed`` (a ``detectors.WindowedRunner``) runs drift, cost-loop and context-stuffing
        detection into ``detections`` at every evaluation."""
        self.own_queue = own_queue
        self.digest_hour_utc = digest_hour_utc
        self._digest_done: date | None = None
        self.windowed = windowed
        self._windowed_since: datetime | None = None
        self.store = store
        self.notifiers = list(notifiers)
        self.config = config or EvaluatorConfig()
        self.clock = clock
        self._errors = ErrorRule(self.config.error_rule)
        self._costs = CostRules(self.config.cost_rule)
        self._clear_since: dict[str, datetime] = {}

    def prepare(self, now: datetime | None = None) -> None:
        """Read what the rules keep in memory (the cost rule's hourly history and each key's
        noise, the services' usual error ratios) and load the statistics they use, so the first
        evaluation costs what any other does. The collector's alert job calls it half a minute
        after start, half a minute before its first evaluation; without it the first evaluation
        does this work."""
        now = now or self.clock()
        import scipy.special  # noqa: F401  - the rules' tails import it at their first use: ~0.2 s

        self._errors.prepare(self.store, now)
        self._costs.prepare(self.store, now)

    def verdicts(self, now: datetime) -> list[Verdict]:
        """Every rule's verdicts at ``now`` (reads the store; no side effects beyond caches)."""
        return (self._errors.verdicts(self.store, now) + queue_verdicts(self.store, self.config.queue_rule, now)
                + self._costs.verdicts(self.store, now))

    def _lasting_clears(self, verdicts: list[Verdict], now: datetime) -> set[str]:
        """Fingerprints clear for at least ``clear_for``: a single quiet minute inside an incident
        must not resolve it (and page again a minute later). Kept in memory: after a restart a
        resolve waits ``clear_for`` again, which only delays it."""
        clear = {v.alert.fingerprint for v in verdicts if v.state == CLEAR}
        self._clear_since = {fp: self._clear_since.get(fp, now) for fp in clear}
        return {fp for fp, since in self._clear_since.items() if now - since >= self.config.clear_for}

    # -- lifecycle ------------------------------------------------------------------------------

    def _stored(self) -> dict[str, AlertState]:
        rows = self.store.query(
            "SELECT project, fingerprint, name, status, labels, summary, details, numbers, link,"
            " toString(starts_at) AS starts, toString(ends_at) AS ends,"
            " toString(last_notified_at) AS notified FROM alerts FINAL WHERE status = 'firing'"
        )
        return {
            r["fingerprint"]: AlertState(
                project=r["project"], fingerprint=r["fingerprint"], name=r["name"], status=r["status"],
                labels=r["labels"], summary=r["summary"], details=r["details"], numbers=r["numbers"],
                link=r["link"], starts_at=_parse_ts(r["starts"]),
                ends_at=_parse_ts(r["ends"]) if r["ends"] else None,
                last_notified_at=_parse_ts(r["notified"]) if r["notified"] else None,
            )
            for r in rows
        }

    def run_once(self, now: datetime | None = None) -> Evaluation:
        """Evaluate every rule at ``now`` (default: the clock), notify, and store the new state."""
        now = now or self.clock()
        self._sample_own_queue(now)
        self._run_windowed(now)
        verdicts = self.verdicts(now)
        stored = self._stored()
        verdicts += forgotten_queue_alerts(stored.values(), verdicts, self.config.queue_rule)
        active = [v.alert for v in verdicts if v.state == BREACH]
        updates, events = transition(verdicts, stored, now, self.config.repeat_interval,
                                     self._lasting_clears(verdicts, now))
        delivered, errors = self._deliver(events)
        # Delivered anywhere counts as notified: retrying every channel because one failed would
        # page twice on the others. With no channel at all, the history is the notification.
        notified = {e.state.fingerprint for e in events} if delivered or not self.notifiers else set()
        states = [replace(s, last_notified_at=now) if s.fingerprint in notified else s for s in updates]
        self._write(states, events, now, delivered)
        if self.digest_hour_utc is not None and now.hour >= self.digest_hour_utc:
            errors += self.send_digests(now.date() - timedelta(days=1), now)
        return Evaluation(now, active, events, errors)

    def send_digests(self, day: date, now: datetime) -> list[str]:
        """Send ``day``'s digest of every project active that day, once (across restarts too)."""
        if self._digest_done == day:
            return []
        errors: list[str] = []
        for project in projects_active(self.store, day):
            fp = fingerprint({"alertname": DIGEST, "project": project, "day": day.isoformat()})
            if self.store.query("SELECT 1 AS sent FROM alert_events"
                                " WHERE project = {p:String} AND fingerprint = {fp:String}"
                                " LIMIT 1", {"p": project, "fp": fp}):
                continue
            digest = build_digest(self.store, project, day)
            state = replace(AlertState.firing(digest.as_alert(now), now), fingerprint=fp)
            event = Event("digest", state)
            delivered = []
            for notifier in self.notifiers:
                try:
                    notifier.send([event], paging=False)
                    delivered.append(notifier.name)
                except NotifierError as exc:
                    errors.append(str(exc))
            self._write([], [event], now, delivered)
        self._digest_done = day
        return errors

    def _run_windowed(self, now: datetime) -> None:
        """The windowed detectors; their failure must never stop the paging rules."""
        if self.windowed is None:
            return
        try:
            for run in self.windowed.run_all(now, since=self._windowed_since):
                for batch in run.batches:
                    # One token per project and minute: a retry after a failure stores nothing twice.
                    self.store.insert("detections", encode_rows(batch.rows), dedup_token=batch.dedup_token)
                for note in run.notes:
                    logger.debug("windowed detectors, %s: %s", run.project, note)
            self._windowed_since = now  # only once every insert succeeded
        except Exception:
            logger.exception("windowed detectors failed; retrying the same window next time")

    def _sample_own_queue(self, now: datetime) -> None:
        if self.own_queue is None:
            return
        project, depth_fn = self.own_queue
        depth, oldest_age_s = depth_fn()
        row = {"project": project, "service": "infersight-collector", "queue": "spool", "ts": _ts(now),
               "depth": depth, "oldest_age_s": oldest_age_s}
        self.store.insert("queue_depth", encode_rows([row]))

    def _deliver(self, events: list[Event]) -> tuple[list[str], list[str]]:
        delivered: list[str] = []
        errors: list[str] = []
        if not (events := hold_back(self.store, events, self.clock())):
            return [n.name for n in self.notifiers], errors  # all held back: handled, not to retry each minute
        for notifier in self.notifiers:
            try:
                notifier.send(events)
                delivered.append(notifier.name)
            except NotifierError as exc:
                logger.error("alert delivery failed: %s", exc)
                errors.append(str(exc))
        return delivered, errors

    def _write(self, states: list[AlertState], events: list[Event], now: datetime, delivered: list[str]) -> None:
        def row(s: AlertState) -> dict[str, Any]:
            return {
                "project": s.project, "fingerprint": s.fingerprint, "name": s.name, "status": s.status,
                "labels": s.labels, "summary": s.summary, "details": s.details, "numbers": s.numbers,
                "link": s.link, "starts_at": _ts(s.starts_at), "ends_at": _ts(s.ends_at) if s.ends_at else None,
                "last_notified_at": _ts(s.last_notified_at) if s.last_notified_at else None,
                "updated_at": _ts(now),
            }

        if states:
            self.store.insert("alerts", encode_rows([row(s) for s in states]))
        failed = [n.name for n in self.notifiers if n.name not in delivered]
        event_rows = [
            {
                "project": e.state.project, "ts": _ts(now), "fingerprint": e.state.fingerprint,
                "name": e.state.name, "event": e.kind, "labels": e.state.labels, "summary": e.state.summary,
                "details": e.state.details, "numbers": e.state.numbers, "link": e.state.link,
                "delivered": delivered, "failed": failed,
            }
            for e in events
        ]
        if event_rows:
            self.store.insert("alert_events", encode_rows(event_rows))


def history(store: Store, project: str, since: datetime) -> dict[str, list[dict[str, Any]]]:
    """Firing alerts and the event history since ``since`` for one project (the API's answer)."""
    firing = store.query(
        "SELECT fingerprint, name, labels, summary, details, numbers, link, toString(starts_at) AS since"
        " FROM alerts FINAL WHERE project = {project:String} AND status = 'firing' ORDER BY alerts.starts_at DESC",
        {"project": project},
    )
    events = store.query(
        "SELECT toString(ts) AS at, fingerprint, name, event, labels, summary, details, numbers, link,"
        " delivered, failed"
        f" FROM alert_events WHERE project = {{project:String}} AND ts >= {{since:{_DT}}} ORDER BY alert_events.ts DESC"
        " LIMIT 1000",
        {"project": project, "since": _ts(since)},
    )
    return {"firing": firing, "history": events}



