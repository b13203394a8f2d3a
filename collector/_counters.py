"""The collector's own counters, read by ``GET /metrics``."""

from __future__ import annotations

import threading
from collections import Counter


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
