"""The pager simulation still runs end to end: traffic into a real embedded store, the evaluator
replayed over an incident's minutes, the score. A few seconds; the full replay is bench/pager."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.pager import creep_pages, incidents, outage_windows, queue_pages, replay, scale

ROOT = Path(__file__).resolve().parents[2]
SILENT = next(inc for inc in incidents.LIBRARY if inc.name == "queue reporter silent for good")


@pytest.mark.parametrize("entry", [replay, scale, outage_windows, creep_pages, queue_pages], ids=lambda m: m.__name__)
def test_every_entry_explains_itself_without_starting_a_run(entry, capsys):
    with pytest.raises(SystemExit) as exited:
        entry.main(["--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: python -m bench.pager")


def test_a_tiny_replay_pages_the_silent_reporter_and_nothing_in_the_normal_week(tmp_path):
    # Its own process: chDB opens one data path per process, and the replay owns its store.
    from_minute = int((SILENT.onset - incidents.FINAL).total_seconds() // 60)
    out = tmp_path / "score.json"
    subprocess.run(
        [sys.executable, "-m", "bench.pager", "--seeds", "1", "--scale", "0.001", "--history-days", "1",
         "--from-minute", str(from_minute), "--minutes", "10", "--data-dir", str(tmp_path / "store"),
         "--json", str(out)],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )
    score = json.loads(out.read_text())

    assert score["minutes"] == 10 and score["spans"] > 0
    [seed] = score["seeds"]
    assert seed["seed"] == 1
    assert seed["false_pages_normal_week"] == 0 and seed["what_paged_normal_week"] == []
    assert seed["false_pages_incident_week"] == 0
    by_name = {i["name"]: i for i in score["incidents"]}
    assert list(by_name) == [inc.name for inc in incidents.LIBRARY]
    silent = by_name[SILENT.name]
    assert silent["paged"] == 1 and silent["pages"] == [1] and silent["still_firing"] == [True]
    assert 0 < silent["first_page_min"][0] <= 10
    # Every other incident lies outside the replayed minutes, so none of them paged.
    assert all(i["paged"] == 0 for name, i in by_name.items() if name != SILENT.name)
