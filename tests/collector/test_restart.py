from __future__ import annotations

import json

import httpx

from infersight.collector._server import CollectorProcess
from tests.collector.test_ingest import JSON, otlp_json
from tests.conftest import free_port, wait_for_spans


def test_data_survives_a_restart_on_the_same_data_dir(tmp_path):
    data_dir = tmp_path / "data"
    first = CollectorProcess(data_dir, free_port(), extra_args=("--no-auth",)).start()
    try:
        response = httpx.post(f"{first.url}/v1/traces", content=json.dumps(otlp_json()), headers=JSON)
        assert response.status_code == 200
    finally:
        first.stop()
    assert first.process.returncode in (0, -15)  # uvicorn re-raises SIGTERM after shutting down

    second = CollectorProcess(data_dir, free_port(), extra_args=("--no-auth",)).start()
    try:
        summary = wait_for_spans(second.url, 1)
        assert (summary["spans"], summary["input_tokens"]) == (1, 42)
    finally:
        second.stop()


def test_a_second_collector_on_the_same_data_dir_names_the_owner(tmp_path, capfd):
    data_dir = tmp_path / "data"
    first = CollectorProcess(data_dir, free_port()).start()
    try:
        second = CollectorProcess(data_dir, free_port())
        try:
            second.start(timeout_s=30)
            raise AssertionError("the second collector started")
        except RuntimeError:
            pass
        err = capfd.readouterr().err
        assert f"pid {first.process.pid}" in err
        assert "in use" in err
    finally:
        first.stop()
