"""``infersight alerts ...``: check the alert channels and read alert history."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import click

from ._channels import NotifierError
from ._model import Alert
from ._state import AlertState, Event


def channel_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The alert channel options, shared by ``collector`` and ``alerts test``."""
    for option in reversed((
        click.option("--alertmanager-url", envvar="INFERSIGHT_ALERTMANAGER_URL",
                     help="Prometheus Alertmanager base URL; alerts go to its /api/v2/alerts."),
        click.option("--alert-webhook-url", envvar="INFERSIGHT_ALERT_WEBHOOK_URL",
                     help="Webhook receiving Alertmanager's v4 JSON payload."),
        click.option("--slack-webhook-url", envvar="INFERSIGHT_SLACK_WEBHOOK_URL",
                     help="Slack incoming-webhook URL."),
        click.option("--public-url", envvar="INFERSIGHT_PUBLIC_URL",
                     help="Dashboard address for links in alerts (default http://HOST:PORT)."),
    )):
        command = option(command)
    return command


@click.group("alerts")
def alerts_cli() -> None:
    """Alert channels and history."""


@alerts_cli.command("test")
@channel_options
def alerts_test(alertmanager_url: str | None, alert_webhook_url: str | None, slack_webhook_url: str | None,
                public_url: str | None) -> None:
    """Send a test alert through each configured channel; exits 1 if any channel fails."""
    from .._settings import Settings
    from ._setup import notifiers_from

    settings = Settings(alertmanager_url=alertmanager_url, alert_webhook_url=alert_webhook_url,
                        slack_webhook_url=slack_webhook_url, public_url=public_url)
    notifiers = notifiers_from(settings)
    if not notifiers:
        raise click.UsageError(
            "no channel configured: give --alertmanager-url, --alert-webhook-url or --slack-webhook-url"
        )
    now = datetime.now(timezone.utc)
    alert = Alert(name="InfersightTestAlert", labels={"project": "_test", "service": "infersight"},
                  summary="test alert from 'infersight alerts test': this channel works", since=now,
                  details="Nothing is wrong; this message checks the delivery path.")
    event = Event("firing", AlertState.firing(alert, now))
    failed = 0
    for notifier in notifiers:
        try:
            notifier.send([event], paging=False)
            click.echo(f"{notifier.name}: delivered")
        except NotifierError as exc:
            failed += 1
            click.echo(f"{notifier.name}: FAILED: {exc}", err=True)
    if failed:
        raise SystemExit(1)
