"""``infersight report ...``: reports rendered from the store (registered by the collector CLI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

PROJECT_HEADER = "infersight-project"
"""Which project ``/api/v1/report/weekly`` reported on, beside the HTML file."""


@click.group("report")
def report_cli() -> None:
    """Reports rendered from the store into one self-contained HTML file."""


@report_cli.command("weekly")
@click.option("--week", default=None, metavar="YYYY-Www",
              help="ISO week, e.g. 2026-W48 (Monday to Monday, UTC). Default: the last complete week.")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The HTML file to write.")
@click.option("--data-dir", default=".infersight", show_default=True,
              type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="The collector's data directory: its store, or the collector that owns it.")
@click.option("--project", default=None,
              help="Whose data to report on [default: 'default'; through a running collector, the key's project].")
@click.option("--key", default=None, envvar="INFERSIGHT_API_KEY",
              help="The project's API key (env INFERSIGHT_API_KEY), used when a collector with API keys owns "
                   "DATA_DIR; not needed with --no-auth or when no collector runs.")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def weekly(week: str | None, out: Path, data_dir: Path, project: str | None, key: str | None,
           no_progress: bool) -> None:
    """The weekly quality report: eight weeks of trends, the biggest moves by tenant, route and
    model, week-over-week latency, cost per tenant, soft failures, judge scores per route and
    version, drift and alerts, each figure linked to the traces behind it.

    With no collector running, the report opens the store in DATA_DIR itself. While a collector
    owns DATA_DIR, the report asks that collector (at the URL it recorded in DATA_DIR/owner.lock)
    with --key; the file is the same either way. A week without the project's LLM calls is an
    error (exit 1) that lists the weeks and projects that have data.
    """
    from infersight.collector.errors import InfersightError
    from infersight.collector.web import CollectorAnswer, CollectorClient, store_or_collector

    from ._report import parse_week

    try:
        monday = parse_week(week)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--week") from exc
    if not (data_dir / "clickhouse").is_dir():
        raise click.ClickException(f"no infersight store in {data_dir} (expected {data_dir / 'clickhouse'})")
    label = f"{monday.isocalendar()[0]}-W{monday.isocalendar()[1]:02d}"
    try:
        with store_or_collector(data_dir, key) as source:
            if isinstance(source, CollectorClient):
                project, html = _from_collector(source, project, label)
            else:
                project = project or "default"
                html = _from_store(source, project, monday, progress=not no_progress)
    except CollectorAnswer as exc:
        raise click.ClickException(exc.body.get("detail") or str(exc)) from exc
    except InfersightError as exc:
        raise click.ClickException(str(exc)) from exc
    out.write_text(html, encoding="utf-8")
    click.echo(f"Wrote the weekly report for {project!r}, week of {monday:%Y-%m-%d}, to {out}", err=True)


def _from_store(store: Any, project: str, monday: Any, *, progress: bool) -> str:
    from ._report import check_report_data, weekly_report

    check_report_data(store, project, monday, all_projects=True)
    return weekly_report(store, project, monday, progress=progress)


def _from_collector(client: Any, project: str | None, week: str) -> tuple[str, str]:
    """(the key's project, the report file) from the collector that owns the data directory."""
    from infersight.collector.web import CollectorAnswer

    try:
        response = client.get("/api/v1/report/weekly", {"week": week, "format": "html"})
        served = response.headers.get(PROJECT_HEADER, "")
    except CollectorAnswer as exc:
        served = exc.body.get("project", "")
        if project is None or project == served:
            raise
        response = None
    if project is not None and project != served:
        raise click.ClickException(
            f"the collector at {client.url} owns the data directory and serves project {served!r} to this key, "
            f"not {project!r}: pass that project's key with --key")
    assert response is not None
    return served, response.text
