"""Money as text, written by one function for every surface: pages, API texts, digest, alerts,
judge reports and the detectors' evidence.

It lives in this package, the lowest one (the SDK, the collector and the judges all import it),
so the detectors' evidence can use it too; ``infersight.collector.store`` serves the same function
beside the exact sums it formats.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def usd_text(
    value: float | Decimal | None, unpriced_calls: int = 0, estimated_usd: float | Decimal | None = None
) -> str:
    """Money as every surface shows it: cents from $1 up, three significant digits below (a
    $0.000012 call must not read "$0.0000"), rounded once, half up, from the exact value.

    Known cost first, then what is not in it: "$0.0012 + $0.00030 estimated + 2 unpriced".
    Nothing known reads "unpriced" (calls of unknown cost) or "–" (no call to price), never $0.
    """
    parts = []
    if value is not None and _finite(value):
        parts.append(_dollars(value))
    if estimated_usd is not None and _finite(estimated_usd):
        parts.append(f"{_dollars(estimated_usd)} estimated")
    if unpriced_calls:
        parts.append(f"{unpriced_calls:,} unpriced" if parts else "unpriced")
    return " + ".join(parts) if parts else "–"


def _finite(value: float | Decimal) -> bool:
    return value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)


def _dollars(value: float | Decimal) -> str:
    # repr is the shortest text of the float nearest the exact sum: the sum itself.
    exact = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    if exact == 0:
        return "$0"
    if abs(exact) >= 1:
        return f"${exact.quantize(Decimal('0.01'), ROUND_HALF_UP):,}"
    places = max(4, 2 - exact.adjusted())
    rounded = exact.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)
    if rounded.adjusted() > exact.adjusted():  # 0.0009995 -> 0.001000: keep three digits
        rounded = exact.quantize(Decimal(1).scaleb(-places + 1), ROUND_HALF_UP)
    return f"${rounded:f}"
