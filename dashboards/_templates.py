"""The jinja2 environment every dashboard page renders with (autoescaping always on)."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, select_autoescape


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:,.0f} ms"


env = Environment(
    loader=PackageLoader("infersight.dashboards", "templates"),
    autoescape=select_autoescape(["html"], default_for_string=True, default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters["ms"] = _ms
