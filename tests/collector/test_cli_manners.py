"""What a newcomer meets first at the command line: help without a command, help on every option,
reads that never create what they read, and a taken port refused at once."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from infersight.collector._cli import main


def _commands(group: click.Command, path: str = "infersight") -> list[tuple[str, click.Command]]:
    out = [(path, group)]
    if isinstance(group, click.Group):
        for name, command in sorted(group.commands.items()):
            out += _commands(command, f"{path} {name}")
    return out


def test_no_command_prints_the_help_and_is_no_error():
    result = CliRunner().invoke(main, [])
    assert result.exit_code == 0
    assert "Usage: " in result.output
    assert "collector" in result.output and "demo" in result.output


def test_every_option_of_every_command_says_what_it_is_for():
    undocumented = [
        f"{path} {'/'.join(param.opts)}"
        for path, command in _commands(main)
        for param in command.params
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert undocumented == []


def test_the_walk_reaches_every_command():
    # a control for the test above: the tree it walks holds the nested groups' commands
    paths = {path for path, _ in _commands(main)}
    assert {"infersight collector", "infersight demo", "infersight keys list", "infersight judge run",
            "infersight report weekly"} <= paths


@pytest.mark.parametrize("args", [
    ["keys", "list"], ["keys", "revoke", "isk_abc"], ["judge", "scores"], ["judge", "panel", "list"],
    ["report", "weekly", "--out", "week.html"],
])
def test_a_read_of_a_missing_data_dir_is_an_error_and_creates_nothing(tmp_path: Path, args: list[str],
                                                                       monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "nonexistent"
    result = CliRunner().invoke(main, [*args, "--data-dir", str(missing)])
    assert result.exit_code != 0
    assert "does not exist" in result.output
    assert not missing.exists()


def test_keys_list_still_reads_a_data_dir_that_exists(tmp_path: Path):
    result = CliRunner().invoke(main, ["keys", "create", "--project", "p1", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    listed = CliRunner().invoke(main, ["keys", "list", "--data-dir", str(tmp_path)])
    assert listed.exit_code == 0 and "p1" in listed.output


def test_a_collector_on_a_taken_port_fails_at_once_and_says_why(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "infersight.collector", "collector", "--no-auth", "--port", str(port),
             "--data-dir", str(tmp_path / "data")],
            capture_output=True, text=True, timeout=120,
        )
        elapsed = time.monotonic() - started
    assert done.returncode != 0
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert "infersight collector on" not in done.stderr  # no success line before the failure
    assert not (tmp_path / "data").exists()  # refused before the store opened
    # The refusal comes before the store and the decode workers start: a fraction of what the
    # interpreter alone takes to import the CLI, measured here as the baseline.
    baseline_started = time.monotonic()
    subprocess.run([sys.executable, "-m", "infersight.collector", "--help"], capture_output=True, timeout=120)
    baseline = time.monotonic() - baseline_started
    assert elapsed < 5 * baseline + 5
