"""The ``infersight`` command line."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from infersight.dashboards import report_cli
from infersight.judges import background_options, judge_cli, judge_settings

from ._dead_letters import dead_letters_cli
from ._keys_cli import keys_cli
from ._settings import IngestWindow, Settings
from .alerts import alerts_cli, channel_options
from .errors import InfersightError


@click.group()
def main() -> None:
    """infersight: LLM observability and quality monitoring."""


_DATA_DIR = click.option(
    "--data-dir", default=".infersight", show_default=True, type=click.Path(path_type=Path)
)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=4318, show_default=True, type=int)
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
@click.option("--no-auth", is_flag=True,
              help="Dev mode: no API keys, no login; everything goes to project 'default'.")
@click.option("--no-alerts", is_flag=True, help="Do not run the alert evaluator in this process.")
@click.option("--evaluation-interval", default=60.0, show_default=True, type=float,
              help="Seconds between alert evaluations.")
@click.option("--slo", default=0.995, show_default=True, type=float,
              help="Share of LLM calls expected to succeed: the usual error ratio of a service with under two "
                   "days of history.")
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
              detect_deadline: float, no_auth: bool,
              no_alerts: bool, evaluation_interval: float, slo: float, cost_ratio: float,
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
            detect_deadline_s=detect_deadline, alerts=not no_alerts, slo=slo, cost_ratio=cost_ratio,
            cost_min_excess_share=cost_min_excess_share, cost_min_excess_usd=cost_min_excess_usd,
            evaluation_interval_s=evaluation_interval,
            alertmanager_url=alertmanager_url, alert_webhook_url=alert_webhook_url,
            slack_webhook_url=slack_webhook_url, public_url=public_url,
            clickhouse_url=clickhouse_url, cluster=cluster, judge=judge_settings(judge_options),
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    mode = "no auth, project 'default'" if no_auth else "API keys required"
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
@click.option("--port", default=4318, show_default=True, type=int)
@click.option("--data-dir", default=".infersight", show_default=True, type=click.Path(path_type=Path))
@click.option("--url", default=None,
              help="Send to a running collector instead of starting one "
                   "(set OTEL_EXPORTER_OTLP_HEADERS if it needs a key).")
@click.option("--traffic", default=20.0, show_default=True, help="Seconds of synthetic traffic.")
@click.option("--duration", default=None, type=float, help="Stop after this many seconds (default: Ctrl-C).")
def demo(port: int, data_dir: Path, url: str | None, traffic: float, duration: float | None) -> None:
    """Start a collector and drive it with a synthetic multi-tenant LLM app."""
    from infersight import sdk
    from infersight.demo import FakeJudge, run_traffic, start_fake_llm

    from ._server import CollectorProcess

    started = time.monotonic()
    collector_process = None
    fake_judge = None
    if url is None:
        # Dev mode: the demo app sends without a key, into project 'default'. A local judge
        # scores a fifth of the answers every 10 s, so the judge views fill up too.
        fake_judge = FakeJudge().start()
        judge_args = ("--judge-base-url", fake_judge.url, "--judge-model", "demo-judge", "--judge-rate", "0.2",
                      "--judge-interval", "10", "--judge-price-input-mtok", "0.15",
                      "--judge-price-output-mtok", "0.6")
        collector_process = CollectorProcess(data_dir, port, extra_args=("--no-auth", *judge_args))
        try:
            collector_process.start()
        except (RuntimeError, TimeoutError) as exc:
            raise click.ClickException(str(exc)) from exc
        url = collector_process.url
    llm = start_fake_llm()
    sdk.init(service_name="demo-support-bot", endpoint=url, service_version="demo-1", metrics_interval_s=5)
    try:
        click.echo(f"Dashboard: {url}/   (filling it with {traffic:.0f} s of synthetic traffic)")
        requests = run_traffic(llm.url, traffic)
        sdk.force_flush()
        click.echo(f"Sent {requests} synthetic requests. Dashboard: {url}/")
        if collector_process is not None:
            if duration is None:
                click.echo("Serving until Ctrl-C.")
            while duration is None or time.monotonic() - started < duration:
                time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        sdk.shutdown()
        llm.stop()
        if collector_process is not None:
            collector_process.stop()
        if fake_judge is not None:
            fake_judge.stop()


if __name__ == "__main__":
    sys.exit(main())
