"""The figures every surface shows, each defined once over ``llm_spans``.

LLM calls (``kind = 'llm'``) are the unit of calls, errors, error rate, latency, TTFT, tokens
and cost; other kinds (retrieval, rerank, tools, agents) are counted as spans of their kind and
never inflate the call figures. A page, the API, the digest, the report or an alert rule that
shows one of these figures asks :func:`call_figures` for it instead of writing its own SQL.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ._base import Store
from ._histogram import histogram_sql, percentiles
from ._kinds import KINDS, LLM

_IS_CALL = f"kind = '{LLM}'"
# A call whose cost is unknown, never shown as 0: tokens used of a model with no known price, or
# an answered call that reported no usage. (A failed call that reports no usage costs nothing.)
# Qualified names: the figures below alias sums as cost_usd and the token columns.
UNKNOWN_USAGE = (
    "llm_spans.input_tokens IS NULL AND llm_spans.output_tokens IS NULL AND llm_spans.status != 'error'"
)
UNPRICED = (
    "llm_spans.cost_usd IS NULL AND (llm_spans.input_tokens > 0 OR llm_spans.output_tokens > 0"
    f" OR ({UNKNOWN_USAGE}))"
)
# Name -> aggregate over llm_spans rows. Percentiles are of LLM calls only and None without any.
_FIGURES = {
    "spans": "count()",
    "llm_calls": f"countIf({_IS_CALL})",
    "llm_errors": f"countIf({_IS_CALL} AND status = 'error')",
    # Tokens of the calls whose usage is known (NULL: a stream without usage); those with none are
    # counted apart, never as 0 tokens.
    "input_tokens": f"sumIf(ifNull(input_tokens, 0), {_IS_CALL})",
    "output_tokens": f"sumIf(ifNull(output_tokens, 0), {_IS_CALL})",
    "unknown_usage_calls": f"countIf({_IS_CALL} AND {UNKNOWN_USAGE})",
    "cost_usd": f"sumIf(ifNull(cost_usd, 0), {_IS_CALL})",
    # Calls whose cost is unknown (UNPRICED): not 0, and not in cost_usd.
    "unpriced_calls": f"countIf({_IS_CALL} AND {UNPRICED})",
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
    ``llm_calls``, ``llm_errors``, ``llm_error_rate``, ``input_tokens``, ``output_tokens``,
    ``cost_usd`` (of priced calls), ``unpriced_calls`` (calls whose cost is unknown: a model
    with no known price, or no usage reported), ``unknown_usage_calls`` (no token counts
    reported: not in the token sums), ``latency_s`` and ``ttft_s`` (p50/p95/p99 in seconds of
    the store's latency histogram, the same estimate the pages' rollups give; ``None`` without
    calls or streams). Blocks on one query.
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
        + (f" GROUP BY {', '.join(by)} ORDER BY cost_usd DESC, {', '.join(by)}" if by else "")
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
        "input_tokens": int(row["input_tokens"]),
        "output_tokens": int(row["output_tokens"]),
        "cost_usd": float(row["cost_usd"]),
        "unpriced_calls": int(row["unpriced_calls"]),
        "unknown_usage_calls": int(row["unknown_usage_calls"]),
        "latency_s": _p50_p95_p99(row["latency_s"]),
        "ttft_s": _p50_p95_p99(row["ttft_s"]),
    }


def _p50_p95_p99(histogram: dict[Any, Any]) -> dict[str, float | None]:
    levels = percentiles(histogram)
    return {name: levels[name] for name in ("p50", "p95", "p99")}


def usd_text(value: float | None, unpriced_calls: int = 0) -> str:
    """Money as every surface shows it: cents from $1 up, three significant digits below (a
    $0.000012 call must not read "$0.0000"), and "unpriced" for calls of models with no known
    price, which are never shown as $0."""
    if value is None or not math.isfinite(value) or (value == 0 and unpriced_calls):
        return "unpriced" if unpriced_calls or value is None else "–"
    if value == 0:
        text = "$0"
    elif abs(value) >= 1:
        text = f"${value:,.2f}"
    else:
        text = f"${value:.{max(4, 2 - math.floor(math.log10(abs(value))))}f}"
    return f"{text} + {unpriced_calls:,} unpriced" if unpriced_calls else text
