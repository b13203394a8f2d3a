"""``infersight judge ...`` while a collector owns the data directory: the same commands through the
collector's API, with the same output as against the store directly, scoped to the key's project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from infersight.collector._server import CollectorProcess
from infersight.collector.web import CollectorClient, ProjectKeys
from infersight.judges._cli import CANNOT_EVALUATE, judge
from tests.conftest import LEAN_COLLECTOR, LiveCollector, free_port
from tests.judges.conftest import Span, insert_spans, trace_id_for
from tests.judges.panel_data import seed_versions

COMMANDS = [
    ("run", "--since", "3h", "--rate", "1", "--no-progress", "--rubric", "helpfulness"),
    ("panel", "create", "--route", "support.answer", "--id", "panel-1"),
    ("panel", "list"),
    ("scores", "--since", "1d"),
    ("spend", "--since", "1d"),
    ("compare", "--panel", "panel-1", "--baseline", "v1", "--candidate", "v2", "--json"),
    ("gate", "--panel", "panel-1", "--baseline", "v2", "--candidate", "v1"),
    ("gate", "--panel", "no-such-panel", "--baseline", "v1", "--candidate", "v2"),
]
JUDGED = {"run", "compare", "gate"}


@pytest.fixture
def two_projects(judge_store, tmp_path, project):
    """Two projects with the same spans; a collector with a key for the second."""
    direct, served = f"{project}-a", f"{project}-b"
    for name in (direct, served):
        seed_versions(judge_store, name)
        insert_spans(judge_store, name, [Span(trace_id_for(name, "recent", i), route="support.answer",
                                              version="v2", question=f"Recent {i}?", answer="ok [[quality=5]]")
                                         for i in range(3)])
    keys = ProjectKeys(tmp_path / "data")
    key = keys.create(served)[0]
    keys.close()
    live = LiveCollector(tmp_path / "data", judge_store, auth=True).start()
    yield direct, served, live, key
    live.stop()


def invoke(args: tuple[str, ...], obj: dict, project: str | None, judge_url: str) -> tuple[int, str]:
    extra = ["--data-dir", "."] + (["--project", project] if project else [])
    if args[0] in JUDGED:
        extra += ["--base-url", judge_url, "--model", "fake-judge", "--price-input-mtok", "1",
                  "--price-output-mtok", "2"]
    result = CliRunner().invoke(judge, [*args, *extra], obj=obj)
    return result.exit_code, result.output


def test_every_operation_answers_the_same_through_the_collector(two_projects, judge_store, fake_judge):
    direct, served, live, key = two_projects
    client = CollectorClient(live.url, key)
    try:
        for args in COMMANDS:
            alone = invoke(args, {"store": judge_store}, direct, fake_judge.url)
            code, output = invoke(args, {"collector": client}, None, fake_judge.url)
            # Two panels made a second apart list different CREATED times: compare all but those.
            assert (code, _untimed(output.replace(served, direct))) == (alone[0], _untimed(alone[1])), args
            if args[0] == "run":
                assert code == 0 and re.search(r"\b[1-9]\d* scored", output), output
        assert invoke(COMMANDS[-1], {"collector": client}, None, fake_judge.url)[0] == CANNOT_EVALUATE
        assert invoke(COMMANDS[-2], {"collector": client}, None, fake_judge.url)[0] == 1  # v1 is worse: FAIL
        code, output = invoke(("scores",), {"collector": client}, direct, fake_judge.url)
        assert code == 1 and f"serves project {served!r} to this key, not {direct!r}" in output
    finally:
        client.close()


def _untimed(output: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<time>", output)


SEED = textwrap.dedent("""
    import sys
    from infersight.collector import ChdbStore
    from tests.judges.panel_data import seed_versions
    store = ChdbStore(sys.argv[1])
    seed_versions(store, "shop")
    store.close()
""")


def _cli(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "INFERSIGHT_API_KEY"}
    if key:
        env["INFERSIGHT_API_KEY"] = key
    return subprocess.run([sys.executable, "-m", "infersight.collector", "judge", *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_the_cli_finds_the_collector_that_owns_the_data_dir(tmp_path: Path, fake_judge):
    data_dir = tmp_path / "data"
    seeded = subprocess.run([sys.executable, "-c", SEED, str(data_dir)], capture_output=True, text=True, timeout=300)
    assert seeded.returncode == 0, seeded.stderr
    keys = ProjectKeys(data_dir)
    key = keys.create("shop")[0]
    keys.close()
    judge_args = ("--base-url", fake_judge.url, "--model", "fake-judge", "--price-input-mtok", "1",
                  "--price-output-mtok", "2")
    run = ("run", "--since", "3h", "--rate", "1", "--no-progress", "--data-dir", str(data_dir), *judge_args)
    before = _cli(*run, "--project", "shop")
    scores_before = _cli("scores", "--data-dir", str(data_dir), "--project", "shop")
    assert before.returncode == 0 and scores_before.returncode == 0, before.stderr + scores_before.stderr

    collector = CollectorProcess(data_dir, free_port(), extra_args=LEAN_COLLECTOR).start()
    try:
        scores = _cli("scores", "--data-dir", str(data_dir), key=key)
        again = _cli(*run, key=key)
        keyless = _cli("spend", "--data-dir", str(data_dir))
    finally:
        collector.stop()
    assert scores.returncode == 0, scores.stderr
    assert scores.stdout == scores_before.stdout and "helpfulness@v1" in scores.stdout
    assert again.returncode == 0, again.stderr
    assert "already judged" in again.stdout or "0 scored" in again.stdout  # the same spans, judged once
    assert keyless.returncode == 1 and "needs the project's API key" in keyless.stderr
