"""What the windowed detectors share: the not-fitted error and their parameter checks.

Pure Python on purpose: ``infersight.detectors`` is imported by the SDK's stream guard, where
numpy and scikit-learn are not installed.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Protocol

from ._base import check_param, positive_int


class NotFittedError(ValueError, AttributeError):
    """A windowed detector was asked to score before ``fit`` learned its reference.

    Subclasses ``ValueError`` and ``AttributeError``, as scikit-learn's error of the same name
    does, so code written for scikit-learn estimators catches it.
    """


def check_fitted(detector: object, attribute: str) -> None:
    """Raise :class:`NotFittedError` unless ``fit`` has set ``attribute`` on ``detector``."""
    if not hasattr(detector, attribute):
        raise NotFittedError(
            f"This {type(detector).__name__} is not fitted yet: call 'fit' with a reference "
            "window before using it."
        )


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_positive_int(owner: str, name: str, value: object, minimum: int = 1) -> None:
    ok = positive_int(value) and value >= minimum  # type: ignore[operator]
    check_param(owner, name, value, ok, "a positive int" if minimum == 1 else f"an int of at least {minimum}")


def check_probability(owner: str, name: str, value: object) -> None:
    ok = is_number(value) and 0 < value < 1  # type: ignore[operator]
    check_param(owner, name, value, ok, "a number strictly between 0 and 1")


def check_non_negative(owner: str, name: str, value: object) -> None:
    check_param(owner, name, value, is_number(value) and value >= 0, "a number >= 0")  # type: ignore[operator]


def check_duration(owner: str, name: str, value: object) -> None:
    ok = isinstance(value, timedelta) and value > timedelta(0)
    check_param(owner, name, value, ok, "a positive duration (datetime.timedelta)")


class _Sorted(Protocol):
    """Ascending numbers readable by position: a list, a tuple or a numpy array."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> float: ...


def quantile(sorted_values: _Sorted, q: float) -> float:
    """The ``q`` quantile of ascending ``sorted_values`` by linear interpolation between the
    closest ranks (numpy's default method); NaN when empty. Two reads, whatever the size."""
    if len(sorted_values) == 0:
        return math.nan
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return float(sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low))
