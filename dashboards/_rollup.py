"""One aggregate over a view, read from the hourly rollups where they cover it and from the raw
tables elsewhere.

A window rarely starts and ends on whole hours. The whole hours inside it come from a rollup,
the partial hours at its edges from ``llm_spans`` (and ``llm_span_extras``); each source yields
partial aggregates per key (sums, and latency histograms in the rollups' buckets) and one outer
``GROUP BY`` adds them up. So counts are exact for any window, and a percentile is the same
histogram estimate (within 4.4%) whichever source a span came from: the store's one histogram
(``infersight.collector.store.histogram_sql``), from which the rollup DDL is generated too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from infersight.collector.store import Store, histogram_sql, percentiles, spend_sql

from ._filters import NS, View, where

_TOKENS = ("input_tokens", "output_tokens")
# measure -> (expression over llm_spans, expression over llm_span_extras); None: not there.
_RAW: dict[str, tuple[str | None, str | None]] = {
    "requests": ("count()", None),
    "errors": ("countIf(status = 'error')", None),
    "transient_errors": ("countIf(status = 'error' AND error_class = 'transient')", None),
    "input_tokens": ("sum(input_tokens)", None),
    "output_tokens": ("sum(output_tokens)", None),
    # Tokens and money as store.spend_sql sums them: exact decimals, known, estimated and unknown apart.
    **{m: (sql, None) for m, sql in spend_sql("1", money_as_text=False).items() if m not in _TOKENS},
    "rerank_candidates": (None, "sum(rerank_candidates)"),
    "duration_s": (histogram_sql("duration_s"), None),
    "ttft_s": (histogram_sql("ttft_s"), None),
    "queue_wait_s": (histogram_sql("queue_wait_s"), None),
    "prefill_s": (None, histogram_sql("prefill_s")),
    "itl_p50_s": (histogram_sql("itl_p50_s"), None),
    "itl_p95_s": (histogram_sql("itl_p95_s"), None),
    "tpot_s": (histogram_sql("tpot_s"), None),
}
PERCENTILE_MEASURES = frozenset(m for m, (raw, extra) in _RAW.items() if "sumMap" in (raw or extra or ""))
MEASURES = tuple(_RAW)
_MONEY = frozenset({"cost_usd", "estimated_cost_usd"})
# Measures whose rollup column has another name (the rollups' float cost_usd predates exact sums).
_ROLLUP_COLUMNS = {"cost_usd": "priced_cost_usd"}
KEYS = ("bucket", "service", "service_version", "operation", "route", "tenant", "model")


def _empty(measure: str) -> str:
    if measure in PERCENTILE_MEASURES:
        return "CAST(map(), 'Map(UInt8, UInt64)')"
    return "toDecimal128(0, 12)" if measure in _MONEY else "toUInt64(0)"


def _outer(measure: str) -> str:
    if measure in _MONEY:  # decimal text: a float would round it before it is added up
        return f"toString(sum({measure})) AS {measure}"
    return f"{'sumMap' if measure in PERCENTILE_MEASURES else 'sum'}({measure}) AS {measure}"


def _rollup_column(measure: str) -> str:
    column = _ROLLUP_COLUMNS.get(measure)
    return f"{column} AS {measure}" if column else measure


def _rollup_table(view: View, keys: tuple[str, ...]) -> str | None:
    h0, h1 = view.hours
    if h0 >= h1 or ("bucket" in keys and view.bucket_s % 3600):
        return None
    return "llm_tenant_hourly" if "tenant" in keys or "tenant" in view.filters else "llm_hourly"


def aggregate(
    store: Store,
    project: str,
    view: View,
    keys: Iterable[str],
    measures: Iterable[str],
    *,
    match: Mapping[str, str | tuple[str, ...]] | None = None,
    histograms: bool = False,
) -> list[dict[str, Any]]:
    """``measures`` per distinct ``keys`` over ``view``, for one project.

    Args:
        keys: grouping keys from :data:`KEYS`; ``bucket`` is the start (Unix seconds) of the
            chart bucket of ``view.bucket_s``.
        measures: names from :data:`MEASURES`: sums come back as numbers (money as exact
            :class:`~decimal.Decimal` sums, for the caller to add up exactly), latency measures as
            ``{"p50", "p95", "p99", "p999"}`` dicts (values ``None`` without data).
        match: extra conditions on key columns, bound: a string for equality
            (``{"operation": "chat"}``), a tuple for membership.
        histograms: return latency measures as histograms (``{bucket: calls}``) instead of
            percentiles, for the caller to merge across rows first.

    Rows come back ordered by the keys. Blocks on the store.
    """
    keys, measures = tuple(keys), tuple(measures)
    unknown = [k for k in keys if k not in KEYS] + [m for m in measures if m not in _RAW]
    if unknown or not measures:
        raise ValueError(f"The 'keys'/'measures' parameters of aggregate must be known names; got {unknown or 'none'}.")
    params: dict[str, Any] = {"project": project, "bucket_s": view.bucket_s,
                              "start_ns": view.start_ns, "end_ns": view.end_ns}
    conditions = where(view, params)
    for i, (column, value) in enumerate(sorted((match or {}).items())):
        if column not in KEYS[1:]:
            raise ValueError(f"The 'match' parameter of aggregate must name key columns; got {column!r}.")
        params[f"m{i}"] = value if isinstance(value, str) else list(value)
        kind = "= {m%d:String}" if isinstance(value, str) else "IN {m%d:Array(String)}"
        conditions += f" AND {column} " + kind % i

    parts = []
    raw_time = "ts >= fromUnixTimestamp64Nano({start_ns:Int64}) AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"
    table = _rollup_table(view, keys)
    if table is not None:
        params["h0"], params["h1"] = view.hours
        params["h0_ns"], params["h1_ns"] = params["h0"] * NS, params["h1"] * NS
        raw_time += (" AND (ts < fromUnixTimestamp64Nano({h0_ns:Int64})"
                     " OR ts >= fromUnixTimestamp64Nano({h1_ns:Int64}))")
        columns = [_key(k, "period") for k in keys] + [_rollup_column(m) for m in measures]
        parts.append(
            f"SELECT {', '.join(columns)} FROM {table}"
            " WHERE project = {project:String} AND period >= toDateTime({h0:UInt32}, 'UTC')"
            f" AND period < toDateTime({{h1:UInt32}}, 'UTC'){conditions}"
        )
    for source, index in (("llm_spans", 0), ("llm_span_extras", 1)):
        if not any(_RAW[m][index] for m in measures):
            continue
        columns = [_key(k, "toDateTime(ts, 'UTC')") for k in keys]
        columns += [f"{_RAW[m][index] or _empty(m)} AS {m}" for m in measures]
        group = f" GROUP BY {', '.join(keys)}" if keys else ""
        parts.append(
            f"SELECT {', '.join(columns)} FROM {source}"
            f" WHERE project = {{project:String}} AND {raw_time}{conditions}{group}"
        )
    group = f" GROUP BY {', '.join(keys)} ORDER BY {', '.join(keys)}" if keys else ""
    outer_keys = "".join(f"{k}, " for k in keys)
    sql = f"SELECT {outer_keys}{', '.join(_outer(m) for m in measures)} FROM ({' UNION ALL '.join(parts)}){group}"
    return [_shape(row, measures, histograms) for row in store.query(sql, params)]


def _key(key: str, time_column: str) -> str:
    if key == "bucket":
        return f"toUnixTimestamp(toStartOfInterval({time_column}, INTERVAL {{bucket_s:UInt32}} SECOND)) AS bucket"
    return key


def _shape(row: dict[str, Any], measures: tuple[str, ...], histograms: bool) -> dict[str, Any]:
    out = dict(row)
    for m in measures:
        if m in PERCENTILE_MEASURES:
            histogram = {int(k): int(v) for k, v in (row[m] or {}).items()}
            out[m] = histogram if histograms else percentiles(histogram)
        elif m in _MONEY:
            out[m] = Decimal(row[m] or 0)
        else:
            out[m] = int(row[m] or 0)
    if "bucket" in out:
        out["bucket"] = int(out["bucket"])
    return out
