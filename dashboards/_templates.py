"""The jinja2 environment every dashboard page and the weekly report render with (autoescaping
always on), and the number formats they share."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from infersight.collector.store import usd_text

from ._charts import fmt


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:,.0f} ms"


def _utc(unix: float | None, unit: str = "s") -> str:
    """A Unix time (``s``, ``ms`` or ``ns``) as ``YYYY-MM-DD HH:MM:SS`` UTC."""
    if unix is None:
        return "–"
    seconds = float(unix) / {"s": 1, "ms": 1e3, "ns": 1e9}[unit]
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _utc_date(unix: float | None) -> str:
    return "–" if unix is None else datetime.fromtimestamp(float(unix), tz=timezone.utc).strftime("%Y-%m-%d")


def safe_link(target: str | None) -> str:
    """A stored link (alert ``link``) if it is a path on this site, else ``#``.

    ``javascript:``, ``data:`` and other sites (``//evil``, ``/\\evil``) never become links.
    """
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "#"
    if any(ch in target for ch in "\r\n\t\x00"):
        return "#"
    return target


def _num(value: float | int | None) -> str:
    return "–" if value is None else f"{value:,}"


env = Environment(
    loader=PackageLoader("infersight.dashboards", "templates"),
    autoescape=select_autoescape(["html"], default_for_string=True, default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters["ms"] = _ms
env.filters["fmt"] = fmt
env.filters["utc"] = _utc
env.filters["utc_date"] = _utc_date
env.filters["safe_link"] = safe_link
env.filters["num"] = _num
env.globals["usd"] = usd_text  # usd(cost, unpriced_calls, estimated_usd): "unpriced" where no price is known


def spend(row: Mapping[str, Any]) -> str:
    """A row's spend (``store.spend_of``'s fields) as text: known, then "+ $x estimated", "+ N unpriced"."""
    return usd_text(row.get("cost_usd"), row.get("unpriced_calls") or 0, row.get("estimated_cost_usd"))


env.globals["spend"] = spend
