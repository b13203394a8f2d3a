"""Latency percentiles, defined once: a log-scale histogram and the nearest rank within it.

Every latency figure (duration, TTFT, queue wait, prefill, inter-token latency) on every surface
is a percentile of this histogram: the hourly rollups store it (``sql/040_rollups.sql`` is
generated with :func:`histogram_sql`), and the figures read from raw rows build the same one,
so a p95 is the same number on the Overview, the Latency page, the API and the digest. Buckets
are 2^(1/8) apart from 0.1 ms, so an estimate is within 4.4% of the true value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

LEVELS = (0.5, 0.95, 0.99, 0.999)
PERCENTILE_NAMES = ("p50", "p95", "p99", "p999")
BUCKETS_PER_DOUBLING = 8
SMALLEST_S = 1e-4


def bucket_sql(column: str) -> str:
    """The histogram bucket of ``column`` (seconds): 0 for zero, else 1..255 on a log scale."""
    return (
        f"toUInt8(if(ifNull({column}, 0) <= 0, 0, least(255, greatest(1,"
        f" round(log2(ifNull({column}, 0) / 1e-4) * {BUCKETS_PER_DOUBLING}) + 1))))"
    )


def histogram_sql(column: str, condition: str = "") -> str:
    """A ``Map(UInt8, UInt64)`` histogram (an aggregate) of the non-null values of ``column``,
    of the rows where ``condition`` (SQL) holds, when given."""
    where = f"{column} IS NOT NULL" + (f" AND ({condition})" if condition else "")
    return f"sumMapIf(map({bucket_sql(column)}, toUInt64(1)), {where})"


def bucket_value(bucket: int) -> float:
    """The value (seconds) a histogram bucket stands for."""
    return 0.0 if bucket <= 0 else SMALLEST_S * 2 ** ((bucket - 1) / BUCKETS_PER_DOUBLING)


def merge_histograms(histograms: Iterable[Mapping[int, int] | None]) -> dict[int, int]:
    """The sum of histograms."""
    out: dict[int, int] = {}
    for histogram in histograms:
        for bucket, count in (histogram or {}).items():
            out[bucket] = out.get(bucket, 0) + count
    return out


def percentiles(histogram: Mapping[Any, Any] | None) -> dict[str, float | None]:
    """p50/p95/p99/p999 (nearest rank) of a histogram; ``None`` each when it is empty."""
    counts = sorted((int(k), int(v)) for k, v in (histogram or {}).items() if int(v) > 0)
    total = sum(v for _, v in counts)
    out: dict[str, float | None] = {}
    for name, level in zip(PERCENTILE_NAMES, LEVELS, strict=True):
        if not total:
            out[name] = None
            continue
        rank, seen = max(math.ceil(level * total), 1), 0
        for bucket, count in counts:
            seen += count
            if seen >= rank:
                out[name] = bucket_value(bucket)
                break
    return out
