"""The collector's own counters, read by ``GET /metrics``."""

from __future__ import annotations

import threading
from collections import Counter

# Why an LLM output was not (wholly) analysed by the inline detectors. One concept, one counter
# (``infersight_outputs_not_analysed_total`` by reason), kept per project for the Overview.
TOO_LARGE = "too_large"
DEADLINE = "deadline"
WORKER_LOST = "worker_lost"
FAILED = "failed"
SCHEMA_PATTERN = "schema_pattern"
SCHEMA_UNUSABLE = "schema_unusable"
SAMPLED = "sampled"
NOT_ANALYSED_REASONS = {
    TOO_LARGE: "over the detectors' budget of 1 Mi characters",
    DEADLINE: "its detectors ran past the deadline; their worker was killed and replaced",
    WORKER_LOST: "the detectors' worker died on it, or could not be started",
    FAILED: "the detection of its batch failed (every span of the batch is counted)",
    SCHEMA_PATTERN: "its JSON Schema was not checked: a pattern RE2 cannot run (backreference, lookaround)",
    SCHEMA_UNUSABLE: "its JSON Schema was not checked: not a valid schema",
    SAMPLED: "left out while the detectors were behind: past the backlog bound they analyse 1 output in N",
}

_NOT_ANALYSED = "not_analysed:"


def not_analysed_key(reason: str, project: str) -> str:
    """The counter of ``project``'s outputs not analysed for ``reason``."""
    return f"{_NOT_ANALYSED}{reason}:{project}"


def not_analysed(snapshot: dict[str, int], project: str | None = None) -> dict[str, int]:
    """Outputs not analysed by reason (every reason, 0 included), of ``project`` or of all."""
    out = dict.fromkeys(NOT_ANALYSED_REASONS, 0)
    for key, value in snapshot.items():
        if key.startswith(_NOT_ANALYSED):
            reason, _, owner = key[len(_NOT_ANALYSED):].partition(":")
            if project is None or owner == project:
                out[reason] = out.get(reason, 0) + value
    return out


class Counters:
    """Monotonic counters, thread-safe. ``add`` never blocks for long and never raises."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: Counter[str] = Counter()

    def add(self, name: str, value: int = 1) -> None:
        with self._lock:
            self._values[name] += value

    def get(self, name: str) -> int:
        with self._lock:
            return self._values[name]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._values)
