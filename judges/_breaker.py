"""A circuit breaker: stop calling a judge that keeps failing, try again after a cool-down."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

CLOSED = "closed"
OPEN = "open"
HALF_OPEN = "half_open"


class CircuitBreaker:
    """Opens after ``failure_threshold`` consecutive failures; after ``cooldown_s`` it lets one
    trial call through (half-open): success closes it, failure opens it for another cool-down.

    Thread-safe; never blocks beyond a lock held for a few instructions. ``clock`` is for tests.
    """

    def __init__(self, *, failure_threshold: int = 5, cooldown_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(failure_threshold, int) or failure_threshold < 1:
            raise ValueError(
                "The 'failure_threshold' parameter of CircuitBreaker must be a positive integer; "
                f"got {failure_threshold!r}."
            )
        if not cooldown_s >= 0:
            raise ValueError(f"The 'cooldown_s' parameter of CircuitBreaker must be >= 0; got {cooldown_s!r}.")
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> str:
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return CLOSED
        if self._clock() - self._opened_at >= self.cooldown_s:
            return HALF_OPEN
        return OPEN

    def allow(self) -> bool:
        """Whether a call may go out now. In half-open state only one trial call at a time may."""
        with self._lock:
            state = self._state()
            if state == CLOSED:
                return True
            if state == HALF_OPEN and not self._trial_in_flight:
                self._trial_in_flight = True
                return True
            return False

    def retry_in_s(self) -> float:
        """Seconds until the cool-down ends (0 when closed or already half-open)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self.cooldown_s - (self._clock() - self._opened_at))

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_in_flight = False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._trial_in_flight or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._trial_in_flight = False
