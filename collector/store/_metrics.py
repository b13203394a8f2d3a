"""The figures every surface shows, each defined once over ``llm_spans``.

LLM calls (``kind = 'llm'``) are the unit of calls, errors, error rate, latency, TTFT, tokens
and cost; other kinds (retrieval, rerank, tools, agents) are counted as spans of their kind and
never inflate the call figures. A page, the API, the digest, the report or an alert rule that
shows one of these figures asks :func:`call_figures` for it instead of writing its own SQL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ._base import Store
from ._histogram import histogram_sql, percentiles
from ._kinds import KINDS, LLM
from ._money import USD_SCALE, spend_of, spend_sql

_IS_CALL = f"kind = '{LLM}'"
# Name -> aggregate over llm_spans rows. Percentiles are of LLM calls only and None without any.
_FIGURES = {
    "spans": "count()",
    "llm_calls": f"countIf({_IS_CALL})",
    "llm_errors": f"countIf({_IS_CALL} AND status = 'error')",
    # Tokens and money of the calls, known, estimated and unknown apart (._money).
    **spend_sql(_IS_CALL),
    # Percentiles come from the one latency histogram (._histogram), as the rollups store it.
    "latency_s": histogram_sql("duration_s", _IS_CALL),
    "ttft_s": histogram_sql("ttft_s", _IS_CALL),
    "kinds": "sumMap(map(kind, toUInt64(1)))",
}
_DIMENSION = re.compile(r"^[a-z_]{1,32}$")


def call_figures(
    store: Store, project: str, since_ns: int, *, by: Sequence[str] = (), until_ns: int | None = None
) -> list[dict[str, Any]]:
    """The call figures of ``project`` from ``since_ns`` (to ``until_ns``), one dict per value of
    the ``by`` columns (``llm_spans`` column names), largest cost first; one dict when ``by`` is
    empty. Each dict: the ``by`` columns, ``spans`` (all kinds), ``kinds`` (spans per kind),
    ``llm_calls``, ``llm_errors``, ``llm_error_rate``, the spend of :func:`~._money.spend_of`
    (``cost_usd`` of priced calls, ``estimated_cost_usd`` and ``estimated_calls``,
    ``unpriced_calls``, ``input_tokens``/``output_tokens`` of the calls that reported usage,
    ``unknown_usage_calls``; sums with no call behind them are ``None``), ``latency_s`` and
    ``ttft_s`` (p50/p95/p99 in seconds of the store's latency histogram, the same estimate the
    pages' rollups give; ``None`` without calls or streams). Blocks on one query.
    """
    for column in by:
        if not _DIMENSION.match(column):
            raise ValueError(f"The 'by' parameter of call_figures must name llm_spans columns; got {column!r}.")
    keys = "".join(f"{column}, " for column in by)
    figures = ", ".join(f"{sql} AS {name}" for name, sql in _FIGURES.items())
    sql = (
        f"SELECT {keys}{figures} FROM llm_spans"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        + (" AND ts < fromUnixTimestamp64Nano({until_ns:Int64})" if until_ns is not None else "")
        + (f" GROUP BY {', '.join(by)} ORDER BY toDecimal128(cost_usd, {USD_SCALE}) DESC, {', '.join(by)}"
           if by else "")
    )
    params: dict[str, Any] = {"project": project, "since_ns": since_ns}
    if until_ns is not None:
        params["until_ns"] = until_ns
    return [_shape(row, by) for row in store.query(sql, params)]


def _shape(row: dict[str, Any], by: Sequence[str]) -> dict[str, Any]:
    calls, errors = int(row["llm_calls"]), int(row["llm_errors"])
    kinds = {kind: int(row["kinds"].get(kind, 0)) for kind in KINDS if row["kinds"].get(kind)}
    return {
        **{column: row[column] for column in by},
        "spans": int(row["spans"]),
        "kinds": kinds,
        "llm_calls": calls,
        "llm_errors": errors,
        "llm_error_rate": errors / calls if calls else 0.0,
        **spend_of(row),
        "latency_s": _p50_p95_p99(row["latency_s"]),
        "ttft_s": _p50_p95_p99(row["ttft_s"]),
    }


def _p50_p95_p99(histogram: dict[Any, Any]) -> dict[str, float | None]:
    levels = percentiles(histogram)
    return {name: levels[name] for name in ("p50", "p95", "p99")}

