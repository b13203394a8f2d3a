"""The ``infersight`` command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from infersight.dashboards import report_cli
from infersight.judges import background_options, judge_cli, judge_settings

from ._dead_letters import dead_letters_cli
from ._keys_cli import keys_cli
from ._settings import STOP_BOUND_S, IngestWindow, Settings
from .alerts import alerts_cli, channel_options
from .errors import InfersightError
from .store import LEASE_TTL_S


@click.group(invoke_without_command=True)
@click.pass_context
def main(ctx: click.Context) -> None:
    """infersight: LLM observability and quality monitoring."""
    if ctx.invoked_subcommand is None:  # a newcomer's first try: show what there is, and that is not an error
        click.echo(ctx.get_help())


_DATA_DIR_HELP = "Where the embedded store and the key file live."
_DATA_DIR = click.option(
    "--data-dir", default=".infersight", show_default=True, type=click.Path(path_type=Path), help=_DATA_DIR_HELP
)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", default=4318, show_default=True, type=int,
              help="Port for OTLP, the API and the dashboards (OTLP/HTTP's usual port).")
@_DATA_DIR
@click.option("--max-body-mib", default=64, show_default=True, type=int,
              help="Largest OTLP body accepted, after decompression.")
@click.option("--spool-max-mib", default=1024, show_default=True, type=int,
              help="Spool size (compressed) at which /v1/traces answers 503 until the store catches up.")
@click.option("--decode-workers", type=click.IntRange(min=0),
              help="Processes decoding OTLP before the ack (the inline detectors run after it, in one more) "
                   "[default: one per core but one, 1 to 4; 0: in the server process].")
@click.option("--ingest-days-back", default=30, show_default=True, type=int,
              help="Spans that started longer ago than this are rejected (OTLP partial_success).")
@click.option("--ingest-days-ahead", default=1, show_default=True, type=int,
              help="Spans that start further ahead of this machine's clock are rejected.")
@click.option("--body-timeout", default=30.0, show_default=True, type=float,
              help="Seconds a request body may take to arrive (408 after it).")
@click.option("--detect-deadline", default=10.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds the inline detectors may spend on one span; past it their worker is replaced and "
                   "the span is stored unanalysed (counted on /metrics).")
@click.option("--lease-ttl", default=LEASE_TTL_S, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds the lease of the alert evaluator and judge lasts unless renewed: how long collectors "
                   "sharing a ClickHouse server wait before one takes over from a collector that died.")
@click.option("--stop-bound", default=STOP_BOUND_S, show_default=True, type=click.IntRange(min=1),
              help="Seconds from SIGTERM to the end of the process, whatever hangs (keep it under the "
                   "orchestrator's grace period).")
@click.option("--no-auth", is_flag=True,
              help="Dev mode: no API keys, no login; everything goes to project 'default'.")
@click.option("--no-alerts", is_flag=True, help="Do not run the alert evaluator in this process.")
@click.option("--evaluation-interval", default=60.0, show_default=True, type=float,
              help="Seconds between alert evaluations.")
@click.option("--slo", default=0.995, show_default=True, type=float,
              help="Share of LLM calls expected to succeed: the usual error ratio of a service with under two "
                   "days of history.")
@click.option("--outage-burst-minutes", default=3, show_default=True, type=click.IntRange(1, 4),
              help="Minutes a provider's error burst may last before it pages as an outage: 4 pages two bursts "
                   "back to back less often, and a partial outage minutes later (on a quiet service, maybe "
                   "not at all).")
@click.option("--cost-ratio", default=2.0, show_default=True, type=float,
              help="A tenant's or route's last hour must reach this multiple of its seasonal baseline to page.")
@click.option("--cost-min-excess-share", default=0.5, show_default=True, type=float,
              help="...and its excess this share of its own mean hourly spend (small tenants on their own scale).")
@click.option("--cost-min-excess-usd", default=0.01, show_default=True, type=float,
              help="...and at least this many dollars.")
@click.option("--clickhouse-url", envvar="INFERSIGHT_CLICKHOUSE_URL",
              help="Store in a ClickHouse server: http://user:pass@host:8123/db (default: embedded chDB).")
@click.option("--cluster", envvar="INFERSIGHT_CLICKHOUSE_CLUSTER",
              help="With --clickhouse-url: create tables ON CLUSTER, Replicated, read and written via Distributed.")
@channel_options
@background_options
def collector(host: str, port: int, data_dir: Path, max_body_mib: int, spool_max_mib: int,
              decode_workers: int | None, ingest_days_back: int, ingest_days_ahead: int, body_timeout: float,
              detect_deadline: float, lease_ttl: float, stop_bound: int, no_auth: bool,
              no_alerts: bool, evaluation_interval: float, slo: float, outage_burst_minutes: int, cost_ratio: float,
              cost_min_excess_share: float, cost_min_excess_usd: float, alertmanager_url: str | None,
              alert_webhook_url: str | None, slack_webhook_url: str | None, public_url: str | None,
              clickhouse_url: str | None, cluster: str | None, **judge_options: object) -> None:
    """Receive OTLP on /v1/traces and serve the API and dashboards on one port."""
    from ._server import serve

    try:
        settings = Settings(
            data_dir=data_dir, host=host, port=port, max_body_bytes=max_body_mib << 20,
            auth=not no_auth, spool_max_bytes=spool_max_mib << 20, decode_workers=decode_workers,
            ingest_window=IngestWindow(ingest_days_back, ingest_days_ahead), body_timeout_s=body_timeout,
            detect_deadline_s=detect_deadline, alerts=not no_alerts, slo=slo,
            outage_burst_minutes=outage_burst_minutes, cost_ratio=cost_ratio,
            cost_min_excess_share=cost_min_excess_share, cost_min_excess_usd=cost_min_excess_usd,
            evaluation_interval_s=evaluation_interval, lease_ttl_s=lease_ttl, stop_bound_s=stop_bound,
            alertmanager_url=alertmanager_url, alert_webhook_url=alert_webhook_url,
            slack_webhook_url=slack_webhook_url, public_url=public_url,
            clickhouse_url=clickhouse_url, cluster=cluster, judge=judge_settings(judge_options),
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    mode = "no auth, project 'default'" if no_auth else "API keys required"
    from ._server import check_port

    try:
        check_port(host, port)
    except InfersightError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"infersight collector on http://{host}:{port} (data in {data_dir}; {mode})", err=True)
    try:
        serve(settings)
    except InfersightError as exc:
        raise click.ClickException(str(exc)) from exc


main.add_command(alerts_cli)
main.add_command(report_cli)
main.add_command(judge_cli)
main.add_command(dead_letters_cli)
main.add_command(keys_cli)


@main.command()
@click.option("--port", default=4318, show_default=True, type=int,
              help="Port of the demo's collector; a port in use is an error before anything starts.")
@click.option("--data-dir", default=".infersight-demo", show_default=True, type=click.Path(path_type=Path),
              help="The demo's store; a rerun on it backfills only the time since the last run.")
@click.option("--per-day", default=1500, show_default=True, type=click.IntRange(min=10),
              help="Requests on a weekday (weekends half), both services: sets the backfill and the live rate.")
@click.option("--duration", default=None, type=click.FloatRange(min=0, min_open=True),
              help="Stop after this many seconds of live traffic [default: at Ctrl-C].")
def demo(port: int, data_dir: Path, per_day: int, duration: float | None) -> None:
    """Start a collector holding a past week of two services' traffic (with one incident that paged
    and resolved), then keep a synthetic multi-tenant LLM app sending live traffic to it."""
    from ._demo import Demo, DemoOptions

    bar: list[Any] = []

    def progress(expected: int, done: int) -> None:
        if not bar:
            bar.append(click.progressbar(length=expected, label="backfill", file=sys.stderr,
                                         show_pos=True).__enter__())
        bar[0].update(min(done, expected) - bar[0].pos)
        if done >= expected:
            bar[0].render_finish()

    def echo(text: str) -> None:
        if bar:
            bar.pop().__exit__(None, None, None)
        click.echo(text, err=True)

    runner = Demo(DemoOptions(port=port, data_dir=data_dir, per_day=per_day, duration_s=duration), echo, progress)
    try:
        runner.run()
    except KeyboardInterrupt:
        click.echo("\nStopped.", err=True)
        _exit_now(130)
    except (InfersightError, RuntimeError, TimeoutError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo("Stopped.", err=True)
    _exit_now(0)


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown, once everything is stopped and flushed.

    After a demo the collector is stopped, the SDK shut down and the fakes closed; what is left is
    finalising the modules loaded on the way (the alert rules' scientific stack among them), which
    took 1.9 s of the 2.5 s between Ctrl-C and the shell prompt on the 2-core machine.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

