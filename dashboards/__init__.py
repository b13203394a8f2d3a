"""Server-rendered dashboards (jinja2, autoescaped, inline SVG, no JavaScript required)."""

from __future__ import annotations

from ._pages import router

__all__ = ["router"]
