"""``infersight report ...``: reports rendered from the store (registered by the collector CLI)."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("report")
def report_cli() -> None:
    """Reports rendered from the store into one self-contained HTML file."""


@report_cli.command("weekly")
@click.option("--week", default=None, metavar="YYYY-Www",
              help="ISO week, e.g. 2026-W48 (Monday to Monday, UTC). Default: the last complete week.")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The HTML file to write.")
@click.option("--data-dir", default=".infersight", show_default=True, type=click.Path(path_type=Path),
              help="The collector's data directory; the report opens its store itself.")
@click.option("--project", default="default", show_default=True, help="Whose data to report on.")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def weekly(week: str | None, out: Path, data_dir: Path, project: str, no_progress: bool) -> None:
    """The weekly quality report: week-over-week latency, cost per tenant, soft failures, judge
    scores per route and version, drift, alerts, and the notable items of the week.

    The embedded store belongs to one process: stop the collector that owns DATA_DIR first
    (or point --data-dir at a copy of it).
    """
    from infersight.collector.errors import DataDirLocked, StoreError
    from infersight.collector.store import ChdbStore

    from ._report import parse_week, weekly_report

    try:
        monday = parse_week(week)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--week") from exc
    if not (data_dir / "clickhouse").is_dir():
        raise click.ClickException(f"no infersight store in {data_dir} (expected {data_dir / 'clickhouse'})")
    try:
        store = ChdbStore(data_dir)
    except DataDirLocked as exc:
        raise click.ClickException(f"{exc}. The report reads the store directly: stop the collector, "
                                   "or run the report on a copy of the data directory.") from exc
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        html = weekly_report(store, project, monday, progress=not no_progress)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        store.close()
    out.write_text(html, encoding="utf-8")
    click.echo(f"Wrote the weekly report for {project!r}, week of {monday:%Y-%m-%d}, to {out}", err=True)
