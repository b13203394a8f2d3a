"""The demo's embedded store, read from a child process.

chDB opens one data directory per process, and a test worker that already opened the session's
store cannot open the demo's: the child opens it and answers queries (and runs the alert rules)
over its stdin and stdout, one JSON line each way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

_SERVE = """
import json, sys
from datetime import datetime
from infersight.collector.alerts import Evaluator
from infersight.collector.store import ChdbStore
store = ChdbStore(sys.argv[1])
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    ask = json.loads(line)
    try:
        if "evaluate_at" in ask:
            done = Evaluator(store).run_once(datetime.fromisoformat(ask["evaluate_at"]))
            answer = {"events": [[e.kind, e.state.summary] for e in done.events], "active": len(done.active)}
        else:
            answer = {"rows": store.query(ask["sql"], ask.get("params") or {})}
    except Exception as exc:
        answer = {"error": repr(exc)}
    print(json.dumps(answer, default=str), flush=True)
store.close()
"""


class StoreProcess:
    """``query`` and ``evaluate`` against the store in ``data_dir``; :meth:`close` when done."""

    def __init__(self, data_dir: Path) -> None:
        self._child = subprocess.Popen([sys.executable, "-c", _SERVE, str(data_dir)], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
        assert self._read().get("ready"), "the store did not open"

    def _read(self) -> dict[str, Any]:
        assert self._child.stdout is not None
        line = self._child.stdout.readline()
        assert line, "the store's process ended"
        answer: dict[str, Any] = json.loads(line)
        assert "error" not in answer, answer["error"]
        return answer

    def _ask(self, question: dict[str, Any]) -> dict[str, Any]:
        assert self._child.stdin is not None
        self._child.stdin.write(json.dumps(question) + "\n")
        self._child.stdin.flush()
        return self._read()

    def query(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._ask({"sql": sql, "params": params})["rows"]
        return rows

    def evaluate(self, at_iso: str) -> dict[str, Any]:
        """One run of the alert rules at ``at_iso``: its ``events`` ([kind, summary]) and ``active`` count."""
        return self._ask({"evaluate_at": at_iso})

    def close(self) -> None:
        if self._child.stdin is not None:
            self._child.stdin.close()
        self._child.wait(60)
        if self._child.stdout is not None:
            self._child.stdout.close()
