"""``infersight keys``: create, list and revoke project API keys, with their roles.

The keys live where the collector reads them: the data directory's key file for the embedded
store, the store itself with ``--clickhouse-url`` (every collector of the deployment sees a new
or revoked key within seconds). Either works while collectors run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .errors import StoreError

if TYPE_CHECKING:
    from .web import KeyBook, KeyInfo

# web.ROLES, copied (a test pins the copy): importing web loads the web stack, which
# `infersight --help` and the other commands must not pay for.
ROLES = ("ingest", "read", "admin")
LEGACY_ROLE = "admin"

_DATA_DIR = click.option(
    "--data-dir", default=".infersight", show_default=True, type=click.Path(path_type=Path),
    help="The collector's data directory, whose key file holds the keys of the embedded store.",
)
_CLICKHOUSE_URL = click.option(
    "--clickhouse-url", envvar="INFERSIGHT_CLICKHOUSE_URL",
    help="The keys of the collectors on this ClickHouse server (env INFERSIGHT_CLICKHOUSE_URL), not a key file.",
)
_CLUSTER = click.option(
    "--cluster", envvar="INFERSIGHT_CLICKHOUSE_CLUSTER",
    help="With --clickhouse-url: the cluster the collectors' tables are created on.",
)


@contextmanager
def _key_book(data_dir: Path, clickhouse_url: str | None, cluster: str | None, *, create: bool) -> Iterator[KeyBook]:
    """:func:`~infersight.collector.web.open_key_book`, its errors as the command line's."""
    from .web import open_key_book

    if not create and not clickhouse_url and not data_dir.is_dir():
        raise click.BadParameter(f"{data_dir} does not exist", param_hint="--data-dir")
    with ExitStack() as stack:
        try:
            book = stack.enter_context(open_key_book(data_dir, clickhouse_url, cluster, create=create))
        except FileNotFoundError as exc:
            raise click.ClickException(f"{exc}; create a key first with 'infersight keys create'") from exc
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--clickhouse-url") from exc
        try:
            yield book
        except StoreError as exc:
            raise click.ClickException(str(exc)) from exc


@click.group("keys")
def keys_cli() -> None:
    """Project API keys and their roles. Works whether or not the collector is running.

    \b
    ingest  what apps hold: sends traces, logs, metrics and feedback; reads nothing
    read    the dashboards and the read API
    admin   everything ingest and read keys do, and silences, acknowledgements,
            dead-letter replays, judge runs and panels
    Keys made before roles existed are admin keys: they did all of this.
    """


@keys_cli.command("create")
@click.option("--project", required=True, help="The project the key writes to and reads from.")
@click.option("--role", type=click.Choice(ROLES), default="ingest", show_default=True,
              help="What the key may do. ingest by default: the key most often made is the one pasted into "
                   "app configurations, which should not open the dashboards.")
@_DATA_DIR
@_CLICKHOUSE_URL
@_CLUSTER
def keys_create(project: str, role: str, data_dir: Path, clickhouse_url: str | None, cluster: str | None) -> None:
    """Create a key and print it, once: only its hash is stored."""
    with _key_book(data_dir, clickhouse_url, cluster, create=True) as book:
        try:
            key, info = book.create(project, role=role)  # type: ignore[arg-type]  # click.Choice(ROLES)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--project") from exc
    click.echo(key)
    use = ("Exporters send it with OTEL_EXPORTER_OTLP_HEADERS='Authorization=Bearer%20<key>'" if role != "read"
           else "Log in to the dashboards with it, or send it as 'Authorization: Bearer <key>' to /api/v1")
    click.echo(
        f"Created {info.prefix}, a {info.role} key for project {info.project!r}. Store the key now, it is not "
        f"shown again.\n{use}",
        err=True,
    )


@keys_cli.command("list")
@_DATA_DIR
@_CLICKHOUSE_URL
@_CLUSTER
def keys_list(data_dir: Path, clickhouse_url: str | None, cluster: str | None) -> None:
    """List keys (prefix, project, role, created, status); never the keys themselves."""
    with _key_book(data_dir, clickhouse_url, cluster, create=False) as book:
        rows = book.list()
    if not rows:
        click.echo("No keys yet; create one with 'infersight keys create --project NAME'.", err=True)
        return
    click.echo(f"{'PREFIX':<14}{'PROJECT':<24}{'ROLE':<8}{'CREATED (UTC)':<22}STATUS")
    for info in rows:
        click.echo(f"{info.prefix:<14}{info.project:<24}{info.role:<8}{_utc(info.created_s):<22}{_status(info)}")
    click.echo(f"(Keys made before roles existed are {LEGACY_ROLE} keys.)", err=True)


@keys_cli.command("revoke")
@click.argument("prefix")
@_DATA_DIR
@_CLICKHOUSE_URL
@_CLUSTER
def keys_revoke(prefix: str, data_dir: Path, clickhouse_url: str | None, cluster: str | None) -> None:
    """Revoke the key with this prefix (as 'keys list' shows it). Running collectors refuse it
    within a few seconds."""
    with _key_book(data_dir, clickhouse_url, cluster, create=False) as book:
        try:
            info = book.revoke(prefix)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
    click.echo(f"Revoked {info.prefix} ({info.role} key of project {info.project!r}).")


def _status(info: KeyInfo) -> str:
    return "active" if info.active else f"revoked {_utc(info.revoked_s)}"


def _utc(unix_s: float | None) -> str:
    return "" if unix_s is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(unix_s))
