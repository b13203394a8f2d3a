"""Money and token counts as every surface reads them: summed exactly, split by what is known,
and written as text by one function, ``usd_text`` (``infersight.detectors``, served by this
package too).

Each LLM call's cost is one of four things:

    known       a price applied to reported usage                       -> ``cost_usd``
    estimated   a price applied to estimated usage                      -> ``estimated_cost_usd``
                (``infersight.usage.estimated``: the SDK's own token count)
    unpriced    usage of a model without a known price, or an answer     -> ``unpriced_calls``
                that reported no usage
    nothing     a failed call that reported no usage

Sums never mix them: an estimate is summed apart, an unpriced call is counted, never taken as $0.
A sum with no call behind it is ``None`` (JSON null, shown "–" or "unpriced"), never 0, and so
are token sums of calls none of which reported usage.

Costs are summed as ``Decimal128(12)`` (picodollars), not floats: a float sum depends on the order
of its terms, and gpt-4o-mini's prices ($0.15 and $0.60 a million tokens) put totals on a half
cent-digit often enough that two surfaces summing the same calls in another order showed $0.000505
and $0.000506. Exact sums are the same whatever the order or the source (raw rows or rollups), and
``usd_text`` rounds them once.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

USD_SCALE = 12
# The conditions over llm_spans columns, written once, with qualified names: the figures alias
# their sums as cost_usd and the token columns. (The rollup views read `llm_spans AS llm_spans`,
# which the cluster schema makes `llm_spans_local AS llm_spans`.)
_CONDITIONS = {
    "KNOWN_COST": "{t}cost_usd IS NOT NULL AND NOT {t}usage_estimated",
    "ESTIMATED_COST": "{t}cost_usd IS NOT NULL AND {t}usage_estimated",
    # An answered call that reported no usage: its tokens are unknown, and so is its cost.
    "UNKNOWN_USAGE": "{t}input_tokens IS NULL AND {t}output_tokens IS NULL AND {t}status != 'error'",
    # A call whose cost is unknown: tokens of a model with no known price, or no usage reported.
    # (A failed call that reports no usage costs nothing.)
    "UNPRICED": "{t}cost_usd IS NULL AND ({t}input_tokens > 0 OR {t}output_tokens > 0 OR ({UNKNOWN_USAGE}))",
    "REPORTED_INPUT": "{t}input_tokens IS NOT NULL",
    "REPORTED_OUTPUT": "{t}output_tokens IS NOT NULL",
}


def _condition(name: str, t: str) -> str:
    return _CONDITIONS[name].format(t=t, UNKNOWN_USAGE=_CONDITIONS["UNKNOWN_USAGE"].format(t=t))


KNOWN_COST = _condition("KNOWN_COST", "llm_spans.")
ESTIMATED_COST = _condition("ESTIMATED_COST", "llm_spans.")
UNKNOWN_USAGE = _condition("UNKNOWN_USAGE", "llm_spans.")
UNPRICED = _condition("UNPRICED", "llm_spans.")


def exact_usd_sql(column: str = "llm_spans.cost_usd") -> str:
    """A cost column as the exact decimal every money sum adds up: the float rounded to the
    picodollar, by way of its shortest text, which is then that decimal exactly. (ClickHouse's
    float-to-decimal cast truncates the binary value, and a price computed in floats is often a
    hair under its decimal: 823 x $0.15/M read 0.000123449999, a picodollar short a call.) A
    value that is no number (NaN from a span) adds nothing."""
    return f"toDecimal128OrZero(toString(round(ifNull({column}, 0), {USD_SCALE})), {USD_SCALE})"


def money_ddl() -> dict[str, str]:
    """``$NAME`` -> SQL for the schema files: the same conditions and exact sum as the readers'."""
    return {f"${name}": _condition(name, "llm_spans.") for name in _CONDITIONS} | {"$EXACT_USD": exact_usd_sql()}


def spend_sql(calls: str, *, money_as_text: bool = True) -> dict[str, str]:
    """Name -> aggregate over ``llm_spans`` rows matching ``calls``: the parts :func:`spend_of`
    shapes. Money comes back as decimal text, so no float sum is ever taken (as ``Decimal128``
    sums for a caller that adds them up further, with ``money_as_text=False``)."""
    exact = exact_usd_sql()

    def money(condition: str) -> str:
        total = f"sumIf({exact}, {calls} AND {condition})"
        return f"toString({total})" if money_as_text else total

    return {
        "cost_usd": money(KNOWN_COST),
        "priced_calls": f"countIf({calls} AND {KNOWN_COST})",
        "estimated_cost_usd": money(ESTIMATED_COST),
        "estimated_calls": f"countIf({calls} AND {ESTIMATED_COST})",
        "unpriced_calls": f"countIf({calls} AND {UNPRICED})",
        "input_tokens": f"sumIf(ifNull(llm_spans.input_tokens, 0), {calls})",
        "output_tokens": f"sumIf(ifNull(llm_spans.output_tokens, 0), {calls})",
        "input_calls": f"countIf({calls} AND {_condition('REPORTED_INPUT', 'llm_spans.')})",
        "output_calls": f"countIf({calls} AND {_condition('REPORTED_OUTPUT', 'llm_spans.')})",
        "unknown_usage_calls": f"countIf({calls} AND {UNKNOWN_USAGE})",
    }


def spend_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of :func:`spend_sql` (from a row, or added up as decimals and ints) as every
    surface serves them: ``cost_usd`` (known), ``estimated_cost_usd``, ``estimated_calls``,
    ``unpriced_calls``, ``input_tokens``, ``output_tokens`` (of the calls that reported each;
    ``None`` when none did) and ``unknown_usage_calls``."""
    return {
        "cost_usd": usd(row["cost_usd"], int(row["priced_calls"])),
        "estimated_cost_usd": usd(row["estimated_cost_usd"], int(row["estimated_calls"])),
        "estimated_calls": int(row["estimated_calls"]),
        "unpriced_calls": int(row["unpriced_calls"]),
        "input_tokens": int(row["input_tokens"]) if int(row["input_calls"]) else None,
        "output_tokens": int(row["output_tokens"]) if int(row["output_calls"]) else None,
        "unknown_usage_calls": int(row["unknown_usage_calls"]),
    }


def usd(total: Decimal | str | float, calls: int) -> float | None:
    """An exact money sum of ``calls`` calls as served: a float, ``None`` when no call is in it."""
    return float(Decimal(str(total))) if calls else None
