"""Where alerts go: an existing Prometheus Alertmanager, a webhook (Alertmanager's v4 payload),
and a Slack incoming webhook. Each is a small :class:`Notifier`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

import httpx

from ..errors import InfersightError
from ._state import RESOLVED, Event

_TIMEOUT_S = 10.0


class NotifierError(InfersightError):
    """A channel did not accept a notification."""


class Notifier(Protocol):
    """Delivers alert events to one channel.

    ``send`` blocks until the channel has answered (at most ~10 s), is called from the
    evaluator's thread only, and raises :class:`NotifierError` when delivery failed.
    """

    name: str

    def send(self, events: Sequence[Event], *, paging: bool = True) -> None: ...


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _labels(event: Event, paging: bool) -> dict[str, str]:
    severity = "page" if paging else "info"
    return {"alertname": event.state.name, "severity": severity, **event.state.labels}


def _annotations(event: Event) -> dict[str, str]:
    numbers = ", ".join(f"{k}={v:.6g}" for k, v in sorted(event.state.numbers.items()))
    return {"summary": event.state.summary, "description": event.state.details, "numbers": numbers}


def _post(name: str, url: str, payload: Any) -> None:
    try:
        response = httpx.post(url, json=payload, timeout=_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise NotifierError(f"{name}: cannot reach {url}: {exc}") from exc
    if response.status_code >= 300:
        raise NotifierError(f"{name}: {url} answered {response.status_code}: {response.text[:200]}")


class AlertmanagerNotifier:
    """Pushes to Alertmanager's ``POST /api/v2/alerts``, so its routing, silences and receivers apply.

    Firing alerts carry an ``endsAt`` a few evaluation intervals ahead: Alertmanager resolves them
    by itself if the evaluator dies, and the evaluator refreshes them while they last.
    """

    name = "alertmanager"

    def __init__(self, url: str, *, external_url: str, refresh: timedelta = timedelta(minutes=5)) -> None:
        self.url = url.rstrip("/") + "/api/v2/alerts"
        self.external_url = external_url.rstrip("/")
        self.refresh = refresh

    def send(self, events: Sequence[Event], *, paging: bool = True) -> None:
        now = datetime.now(timezone.utc)
        payload = []
        for event in events:
            state = event.state
            ends = state.ends_at if event.kind == RESOLVED and state.ends_at else now + 3 * self.refresh
            payload.append({
                "labels": _labels(event, paging),
                "annotations": _annotations(event),
                "startsAt": _iso(state.starts_at),
                "endsAt": _iso(ends),
                "generatorURL": self.external_url + state.link,
            })
        _post(self.name, self.url, payload)


class WebhookNotifier:
    """POSTs Alertmanager's webhook JSON (``"version": "4"``), one message per send."""

    name = "webhook"

    def __init__(self, url: str, *, external_url: str) -> None:
        self.url = url
        self.external_url = external_url.rstrip("/")

    def send(self, events: Sequence[Event], *, paging: bool = True) -> None:
        alerts: list[dict[str, Any]] = [
            {
                "status": "resolved" if e.kind == RESOLVED else "firing",
                "labels": _labels(e, paging),
                "annotations": _annotations(e),
                "startsAt": _iso(e.state.starts_at),
                "endsAt": _iso(e.state.ends_at) if e.kind == RESOLVED and e.state.ends_at else "0001-01-01T00:00:00Z",
                "generatorURL": self.external_url + e.state.link,
                "fingerprint": e.state.fingerprint,
            }
            for e in events
        ]
        common = _common_labels([a["labels"] for a in alerts])
        payload = {
            "version": "4",
            "groupKey": "{}:" + ",".join(f'{k}="{v}"' for k, v in sorted(common.items())),
            "truncatedAlerts": 0,
            "status": "firing" if any(a["status"] == "firing" for a in alerts) else "resolved",
            "receiver": "infersight",
            "groupLabels": {k: common[k] for k in ("alertname",) if k in common},
            "commonLabels": common,
            "commonAnnotations": _common_labels([a["annotations"] for a in alerts]),
            "externalURL": self.external_url,
            "alerts": alerts,
        }
        _post(self.name, self.url, payload)


def _common_labels(label_sets: list[dict[str, str]]) -> dict[str, str]:
    if not label_sets:
        return {}
    common = dict(label_sets[0])
    for labels in label_sets[1:]:
        common = {k: v for k, v in common.items() if labels.get(k) == v}
    return common


def slack_escape(text: str) -> str:
    """Slack mrkdwn treats ``&``, ``<`` and ``>`` as control characters; tenant names are untrusted."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackNotifier:
    """Posts a Slack incoming-webhook message: one line per alert with its numbers and a link."""

    name = "slack"

    def __init__(self, url: str, *, external_url: str) -> None:
        self.url = url
        self.external_url = external_url.rstrip("/")

    def send(self, events: Sequence[Event], *, paging: bool = True) -> None:
        lines = []
        for e in events:
            icon = {RESOLVED: ":white_check_mark:"}.get(e.kind, ":rotating_light:")
            if not paging:
                icon = ":memo:"
            word = "RESOLVED" if e.kind == RESOLVED else ("FIRING" if paging else "DIGEST")
            link = self.external_url + e.state.link
            lines.append(
                f"{icon} *{word}* {slack_escape(e.state.name)}: {slack_escape(e.state.summary)}"
                f" (<{link}|open dashboard>)"
            )
            if e.state.details and e.kind != RESOLVED:
                lines.append(f">{slack_escape(e.state.details)}")
        text = "\n".join(lines)
        section = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
        _post(self.name, self.url, {"text": text, "blocks": [section]})
