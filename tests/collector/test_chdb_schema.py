"""The embedded store applies its schema when the store is new, damaged or of an older schema,
and skips the 60-odd DDL statements otherwise (they cost seconds an open on a loaded machine).

chDB opens one data directory per process, so each open is a child process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

OPEN = """
import json, sys
from infersight.collector import ChdbStore
store = ChdbStore(sys.argv[1])
tables = [r["name"] for r in store.query("SELECT name FROM system.tables WHERE database = currentDatabase()")]
for table in sys.argv[2:]:
    store.query(f"DROP TABLE {table}")
print(json.dumps(tables))
store.close()
"""


def open_store(data_dir: Path, *drop: str) -> set[str]:
    """The tables of the store in ``data_dir`` once opened (then ``drop`` is dropped)."""
    done = subprocess.run([sys.executable, "-c", OPEN, str(data_dir), *drop],
                          capture_output=True, text=True, timeout=300, check=True)
    return set(json.loads(done.stdout))


def test_the_schema_is_applied_when_new_damaged_or_older_and_only_then(tmp_path):
    marker = tmp_path / "clickhouse" / "schema-infersight.txt"
    tables = open_store(tmp_path)
    assert {"otel_traces", "llm_spans", "feedback", "alerts"} <= tables
    recorded = marker.read_text(), marker.stat().st_mtime_ns

    assert open_store(tmp_path, "feedback") == tables
    assert (marker.read_text(), marker.stat().st_mtime_ns) == recorded  # current: not applied again

    assert open_store(tmp_path) == tables  # a table gone since: the count differs, applied again

    marker.write_text("an-older-schema " + marker.read_text().split()[1])
    assert open_store(tmp_path) == tables
    assert marker.read_text() == recorded[0]  # applied, and recorded as current
