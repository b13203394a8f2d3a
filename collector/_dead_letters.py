"""``infersight dead-letters ...``: list and replay what the store refused, through a running
collector's API (the collector owns its store; this works on either backend)."""

from __future__ import annotations

from typing import Any

import click
import httpx

_URL = click.option("--url", default="http://127.0.0.1:4318", show_default=True, envvar="INFERSIGHT_URL",
                    help="The running collector.")
_KEY = click.option("--key", default=None, envvar="INFERSIGHT_API_KEY",
                    help="The project's API key (env INFERSIGHT_API_KEY); not needed with --no-auth.")


@click.group("dead-letters")
def dead_letters_cli() -> None:
    """Acknowledged requests the store refused (set aside whole, with the reason)."""


def _call(method: str, url: str, path: str, key: str | None) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.request(method, url.rstrip("/") + path, headers=headers, timeout=600)
    except httpx.HTTPError as exc:
        raise click.ClickException(f"cannot reach the collector at {url}: {exc}") from exc
    if response.status_code != 200:
        raise click.ClickException(f"the collector answered {response.status_code}: {response.text[:500]}")
    body: dict[str, Any] = response.json()  # the API answers a JSON object
    return body


@dead_letters_cli.command("list")
@_URL
@_KEY
def list_letters(url: str, key: str | None) -> None:
    """The project's dead letters not replayed yet, oldest first."""
    letters = _call("GET", url, "/api/v1/dead_letters", key)["dead_letters"]
    if not letters:
        click.echo("No dead letters.")
    for letter in letters:
        click.echo(f"{letter['received']}  {letter['spans']:>7,} spans  {letter['reason'][:200]}")


@dead_letters_cli.command("replay")
@_URL
@_KEY
def replay(url: str, key: str | None) -> None:
    """Insert the project's dead letters again, once their cause is fixed; those refused again stay."""
    outcome = _call("POST", url, "/api/v1/dead_letters/replay", key)
    click.echo(f"Replayed {outcome['replayed_requests']} requests ({outcome['replayed_spans']:,} spans).")
    for reason in outcome["refused"]:
        click.echo(f"Refused again: {reason[:300]}", err=True)
    if outcome["refused"]:
        raise SystemExit(1)
