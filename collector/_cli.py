"""The ``infersight`` command line."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ._errors import InfersightError
from ._settings import Settings


@click.group()
def main() -> None:
    """infersight: LLM observability and quality monitoring."""


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=4318, show_default=True, type=int)
@click.option("--data-dir", default=".infersight", show_default=True, type=click.Path(path_type=Path))
@click.option("--max-body-mib", default=64, show_default=True, type=int,
              help="Largest OTLP body accepted, after decompression.")
def collector(host: str, port: int, data_dir: Path, max_body_mib: int) -> None:
    """Receive OTLP on /v1/traces and serve the API and dashboards on one port."""
    from ._server import serve

    try:
        settings = Settings(data_dir=data_dir, host=host, port=port, max_body_bytes=max_body_mib << 20)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    click.echo(f"infersight collector on http://{host}:{port} (data in {data_dir})", err=True)
    try:
        serve(settings)
    except InfersightError as exc:
        raise click.ClickException(str(exc)) from exc


@main.command()
@click.option("--port", default=4318, show_default=True, type=int)
@click.option("--data-dir", default=".infersight", show_default=True, type=click.Path(path_type=Path))
@click.option("--url", default=None, help="Send to a running collector instead of starting one.")
@click.option("--traffic", default=20.0, show_default=True, help="Seconds of synthetic traffic.")
@click.option("--duration", default=None, type=float, help="Stop after this many seconds (default: Ctrl-C).")
def demo(port: int, data_dir: Path, url: str | None, traffic: float, duration: float | None) -> None:
    """Start a collector and drive it with a synthetic multi-tenant LLM app."""
    from infersight import sdk

    from ._demo import run_traffic, start_fake_llm
    from ._server import CollectorProcess

    started = time.monotonic()
    collector_process = None
    if url is None:
        collector_process = CollectorProcess(data_dir, port)
        try:
            collector_process.start()
        except (RuntimeError, TimeoutError) as exc:
            raise click.ClickException(str(exc)) from exc
        url = collector_process.url
    llm = start_fake_llm()
    sdk.init(service_name="demo-support-bot", endpoint=url, service_version="demo-1")
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

if __name__ == "__main__":
    sys.exit(main())
