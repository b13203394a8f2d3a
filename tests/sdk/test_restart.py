"""The SDK under a collector restart: spans made while the collector is away are sent when it is back."""

from __future__ import annotations

import time

from infersight import sdk
from infersight.collector._server import CollectorProcess
from tests import http
from tests.conftest import LEAN_COLLECTOR, free_port, wait_for

# The SDK's side of an outage is the point: the collector decodes in its server process (no
# decode worker to spawn and stop) and evaluates no alert.
COLLECTOR = ("--no-auth", *LEAN_COLLECTOR)


def test_an_outage_longer_than_the_exporters_retries_loses_no_span(tmp_path):
    # 100 spans a second; the collector is away for 6 s, longer than one export's own retries
    # (5 s), after which a stock batch processor drops the batch. The SDK keeps it and tries again.
    port = free_port()
    data_dir = tmp_path / "data"
    collector = CollectorProcess(data_dir, port, extra_args=COLLECTOR).start()

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask(messages):
        return {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 9, "completion_tokens": 3}}

    def emit(seconds: float) -> int:
        made, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            ask(messages=[{"role": "user", "content": "hi"}])
            made += 1
            time.sleep(0.01)
        return made

    sdk.init(service_name="sdk-restart", endpoint=collector.url)
    dropped = sdk.failure_count("spans_dropped")  # counted over the process: other tests' too
    try:
        sent = emit(0.5)
        collector.stop()
        sent += emit(6.0)
        collector = CollectorProcess(data_dir, port, extra_args=COLLECTOR).start()
        sent += emit(0.5)
        assert sdk.force_flush(30_000)
        stored = wait_for(lambda: (n := http.get(f"{collector.url}/api/v1/summary").json()["llm_calls"]) >= sent
                          and n, timeout_s=30)
        assert stored == sent and sdk.failure_count("spans_dropped") == dropped
    finally:
        sdk.shutdown()
        collector.stop()
