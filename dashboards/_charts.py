"""Inline SVG charts rendered on the server: lines over time (p50/p95/p99 with a shaded band),
stacked bars over time, horizontal bars, and a trace waterfall.

Each function returns :class:`markupsafe.Markup` to drop into a template. Every piece of text
in it (series names, labels, tooltips) is escaped here, so a label can be anything a span said.
Charts scale with their container (``viewBox``) and need no JavaScript: hovering a bucket shows
a native tooltip (``<title>``) with its values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import pairwise
from typing import Any

from markupsafe import Markup, escape

from infersight.collector.store import usd_text

PALETTE = ("#3b6fd8", "#e08a1e", "#2f9e62", "#c8413b", "#7a5cc7", "#1c9fb0", "#b5577f", "#7d8a2e")
OTHER = "#a4abb8"
WIDTH = 960
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 16, 48, 26


@dataclass(frozen=True)
class Series:
    """One named line or stack of values, aligned with the chart's x values (``None``: no data)."""

    name: str
    values: Sequence[float | None]
    color: str = PALETTE[0]
    dashed: bool = False


def fmt(value: float | None, unit: str) -> str:
    """A number as a person reads it: ``ms`` (value in seconds), ``usd``, ``pct`` (0..1), ``count``."""
    if value is None or not math.isfinite(value):
        return "–"
    if unit == "ms":
        if abs(value) >= 100:
            return f"{value:,.0f} s"
        if abs(value) >= 1:
            return f"{value:.3g} s"
        return f"{value * 1000:,.0f} ms" if abs(value) >= 0.001 or value == 0 else f"{value * 1000:.2f} ms"
    if unit == "usd":
        return usd_text(value)
    if unit == "pct":
        return f"{value * 100:.1f}%" if value >= 0.001 or value == 0 else f"{value * 100:.2f}%"
    if unit == "score":
        return f"{value:.2f}"
    return f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:,.2f}"


def _nice_max(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        top: float = step * 10 ** exponent  # int ** int is typed Any: a negative power is a float
        if top >= value:
            return top
    last: float = 10 ** (exponent + 1)
    return last


def _time_label(unix_s: int, span_s: int, step_s: int = 0) -> str:
    moment = datetime.fromtimestamp(unix_s, tz=timezone.utc)
    if step_s >= 86400 or span_s > 8 * 86400:
        return moment.strftime("%Y-%m-%d" if step_s >= 7 * 86400 else "%m-%d")
    return moment.strftime("%H:%M") if span_s <= 2 * 86400 else moment.strftime("%m-%d %H:%M")


def _frame(title: str, height: int, legend: Sequence[tuple[str, str]], width: int = WIDTH) -> list[str]:
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}"'
        f' width="100%" xmlns="http://www.w3.org/2000/svg" font-size="12" font-family="system-ui, sans-serif">',
        f"<title>{escape(title)}</title>",
        f'<text x="4" y="14" font-weight="600" fill="#1d2330">{escape(title)}</text>',
    ]
    x = 4
    for name, color in legend:
        label = name if len(name) <= 28 else name[:27] + "…"
        if x + 20 + 7 * len(label) > width:
            break
        parts.append(f'<rect x="{x}" y="24" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{x + 14}" y="33" fill="#4a5262">{escape(label)}</text>')
        x += 28 + 7 * len(label)
    return parts


def _y_axis(parts: list[str], top: float, plot_h: float, y_max: float, unit: str, width: int) -> None:
    for i in range(5):
        value = y_max * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(f'<line x1="{_LEFT}" x2="{width - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e8ebf0"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#6b7385">'
                     f"{escape(fmt(value, unit))}</text>")


def _x_axis(
    parts: list[str], xs: Sequence[int], x_of: Callable[[int], float], bottom: float, step_s: int | None = None
) -> None:
    if not xs:
        return
    span, step = xs[-1] - xs[0], step_s or _step(xs)
    plot_w = x_of(len(xs) - 1) - x_of(0)
    ticks = max(min(6, len(xs), int(plot_w // 120) + 1), 1)
    for i in range(ticks):
        index = round(i * (len(xs) - 1) / max(ticks - 1, 1))
        x = x_of(index)
        anchor = "start" if i == 0 and ticks > 1 else "end" if i == ticks - 1 and ticks > 1 else "middle"
        parts.append(f'<text x="{x:.1f}" y="{bottom + 16:.1f}" text-anchor="{anchor}" fill="#6b7385">'
                     f"{escape(_time_label(xs[index], span, step))}</text>")


def _step(xs: Sequence[int]) -> int:
    return min((b - a for a, b in pairwise(xs)), default=0)


def _empty(title: str, height: int, width: int = WIDTH) -> Markup:
    parts = _frame(title, height, [], width)
    parts.append(f'<rect x="0" y="24" width="{width}" height="{height - 24}" fill="#fafbfc"/>')
    parts.append(f'<text x="{width / 2}" y="{height / 2 + 12}" text-anchor="middle" fill="#6b7385">'
                 "No data in this range</text></svg>")
    return Markup("".join(parts))


def line_chart(
    xs: Sequence[int], series: Sequence[Series], *, unit: str, title: str, height: int = 220,
    band: tuple[int, int] | None = None, y_max: float | None = None, width: int = WIDTH, step_s: int | None = None,
) -> Markup:
    """Lines over time. ``xs`` are bucket starts (Unix seconds); ``band`` shades the area
    between two of the series (by index), e.g. p50..p99. ``step_s`` is the bucket width when
    ``xs`` alone cannot tell it (one week's point is labelled with its date, not ``00:00``)."""
    values = [v for s in series for v in s.values if v is not None and math.isfinite(v)]
    if not xs or not values:
        return _empty(title, height, width)
    top, plot_h = _TOP, height - _TOP - _BOTTOM
    y_max = y_max or _nice_max(max(values))
    plot_w = width - _LEFT - _RIGHT
    step = plot_w / max(len(xs) - 1, 1)

    def x_of(i: int) -> float:
        return _LEFT + (i * step if len(xs) > 1 else plot_w / 2)

    def y_of(v: float) -> float:
        return top + plot_h - plot_h * min(v, y_max) / y_max

    parts = _frame(title, height, [(s.name, s.color) for s in series], width)
    _y_axis(parts, top, plot_h, y_max, unit, width)
    if band is not None:
        low, high = series[band[0]].values, series[band[1]].values
        for run in _runs([i for i in range(len(xs)) if low[i] is not None and high[i] is not None]):
            points = [f"{x_of(i):.1f},{y_of(high[i]):.1f}" for i in run]  # type: ignore[arg-type]
            points += [f"{x_of(i):.1f},{y_of(low[i]):.1f}" for i in reversed(run)]  # type: ignore[arg-type]
            parts.append(f'<polygon points="{" ".join(points)}" fill="{series[band[1]].color}" fill-opacity="0.12"/>')
    for s in series:
        present = [i for i, v in enumerate(s.values) if v is not None and math.isfinite(v)]
        dash = ' stroke-dasharray="5 4"' if s.dashed else ""
        for run in _runs(present):
            if len(run) == 1:
                i = run[0]
                parts.append(f'<circle cx="{x_of(i):.1f}" cy="{y_of(s.values[i]):.1f}" r="2.5" fill="{s.color}"/>')  # type: ignore[arg-type]
                continue
            line = " ".join(f"{x_of(i):.1f},{y_of(s.values[i]):.1f}" for i in run)  # type: ignore[arg-type]
            parts.append(f'<polyline points="{line}" fill="none" stroke="{s.color}" stroke-width="1.8"{dash}/>')
    span, step_s = xs[-1] - xs[0], step_s or _step(xs)
    for i, x0 in enumerate(xs):
        tip = f"{_time_label(x0, max(span, 1), step_s)} UTC — " + ", ".join(
            f"{s.name} {fmt(s.values[i], unit)}" for s in series
        )
        parts.append(f'<rect x="{x_of(i) - step / 2:.1f}" y="{top}" width="{max(step, 1):.1f}" height="{plot_h}"'
                     f' fill="transparent"><title>{escape(tip)}</title></rect>')
    _x_axis(parts, xs, x_of, top + plot_h, step_s)
    parts.append("</svg>")
    return Markup("".join(parts))


def _runs(indices: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def stacked_bars(
    xs: Sequence[int], series: Sequence[Series], *, unit: str, title: str, height: int = 220, width: int = WIDTH,
) -> Markup:
    """Bars over time, one stacked segment per series."""
    totals = [sum(s.values[i] or 0.0 for s in series) for i in range(len(xs))]
    if not xs or not any(totals):
        return _empty(title, height, width)
    top, plot_h = _TOP, height - _TOP - _BOTTOM
    y_max = _nice_max(max(totals))
    plot_w = width - _LEFT - _RIGHT
    slot = plot_w / len(xs)
    bar = max(slot * 0.8, 1.0)
    parts = _frame(title, height, [(s.name, s.color) for s in series], width)
    _y_axis(parts, top, plot_h, y_max, unit, width)
    span, step_s = max(xs[-1] - xs[0], 1), _step(xs)
    for i, x0 in enumerate(xs):
        base: float = top + plot_h
        x = _LEFT + i * slot + (slot - bar) / 2
        for s in series:
            value = s.values[i] or 0.0
            if value <= 0:
                continue
            h = plot_h * value / y_max
            base -= h
            tip = f"{_time_label(x0, span, step_s)} UTC — {s.name}: {fmt(value, unit)} (total {fmt(totals[i], unit)})"
            parts.append(f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{s.color}">'
                         f"<title>{escape(tip)}</title></rect>")
    _x_axis(parts, xs, lambda i: _LEFT + i * slot + slot / 2, top + plot_h)
    parts.append("</svg>")
    return Markup("".join(parts))


@dataclass(frozen=True)
class Bar:
    """One horizontal bar: a label and its stacked segments (name, value, color)."""

    label: str
    segments: Sequence[tuple[str, float, str]]
    note: str = ""


def hbars(
    bars: Sequence[Bar], *, unit: str, title: str, legend: Sequence[tuple[str, str]] = (), width: int = WIDTH,
) -> Markup:
    """Horizontal bars, in the order given; each bar's segments stack left to right."""
    row_h = 24
    label_w = min(220, width // 3)
    top = _TOP if legend else 26
    height = top + row_h * max(len(bars), 1) + 6
    totals = [sum(v for _, v, _ in b.segments) for b in bars]
    if not bars or not any(totals):
        return _empty(title, 80, width)
    x_max = max(totals)
    plot_w = width - label_w - 110
    parts = _frame(title, height, legend, width)
    for row, (b, total) in enumerate(zip(bars, totals, strict=True)):
        y = top + row * row_h
        chars = label_w // 7
        label = b.label if len(b.label) <= chars else b.label[: chars - 1] + "…"
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" fill="#1d2330">{escape(label)}</text>')
        x = float(label_w)
        for name, value, color in b.segments:
            if value <= 0:
                continue
            w = plot_w * value / x_max
            parts.append(f'<rect x="{x:.1f}" y="{y + 4}" width="{max(w, 0.5):.1f}" height="16" fill="{color}">'
                         f"<title>{escape(f'{b.label} — {name}: {fmt(value, unit)}')}</title></rect>")
            x += w
        text = b.note or fmt(total, unit)
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 16}" fill="#4a5262">{escape(text)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


SEGMENT_COLORS = {
    "queue": "#e08a1e",
    "prefill": "#7a5cc7",
    "decode": "#3b6fd8",
    "retrieval": "#2f9e62",
    "rerank": "#1c9fb0",
}


def waterfall(spans: Sequence[dict[str, Any]], total_s: float, *, link_prefix: str = "#span-") -> Markup:
    """A trace's spans as rows on one time axis, indented by depth.

    Each span needs ``name``, ``service``, ``depth``, ``offset_s`` (its start, from the trace
    start), ``status`` and ``segments`` (``kind``, ``from_s``, ``to_s`` relative to the span's
    start; a queue wait before the span has negative times). Rows link to ``link_prefix`` +
    span id.
    """
    row_h, label_w = 24, 300
    height = _TOP + row_h * max(len(spans), 1) + 24
    total_s = max(total_s, 1e-6)
    plot_w = WIDTH - label_w - 90
    kinds = []
    for span in spans:
        for seg in span["segments"]:
            if seg["kind"] not in kinds:
                kinds.append(seg["kind"])
    legend = [(k, SEGMENT_COLORS.get(k, "#8b93a3")) for k in kinds]
    parts = _frame("Spans on one time axis", height, legend)

    def x_of(t: float) -> float:
        return label_w + plot_w * max(t, 0.0) / total_s

    for i in range(5):
        x = label_w + plot_w * i / 4
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP - 4}" y2="{height - 20}" stroke="#e8ebf0"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 6}" text-anchor="middle" fill="#6b7385">'
                     f"{escape(fmt(total_s * i / 4, 'ms'))}</text>")
    for row, span in enumerate(spans):
        y = _TOP + row * row_h
        indent = min(span.get("depth", 0), 8) * 12
        name = f"{span['name']} · {span['service']}"
        label = name if len(name) <= 40 - indent // 8 else name[: 39 - indent // 8] + "…"
        color = "#c8413b" if span["status"] == "error" else "#1d2330"
        parts.append(f'<a href="{escape(link_prefix + span["span_id"])}">'
                     f'<text x="{8 + indent}" y="{y + 16}" fill="{color}">{escape(label)}</text></a>')
        end_x = x_of(span["offset_s"])
        for seg in span["segments"]:
            start = span["offset_s"] + seg["from_s"]
            width = plot_w * max(seg["to_s"] - seg["from_s"], 0.0) / total_s
            x = x_of(start)
            tip = f"{span['name']} — {seg['kind']}: {fmt(seg['to_s'] - seg['from_s'], 'ms')}"
            parts.append(f'<rect x="{x:.1f}" y="{y + 5}" width="{max(width, 1.5):.1f}" height="14"'
                         f' fill="{SEGMENT_COLORS.get(seg["kind"], "#8b93a3")}"><title>{escape(tip)}</title></rect>')
            end_x = max(end_x, x + max(width, 1.5))
        parts.append(f'<text x="{end_x + 5:.1f}" y="{y + 16}" fill="#4a5262">'
                     f'{escape(fmt(span["duration_s"], "ms"))}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def percentile_series(points: Sequence[dict[str, Any]], measure: str, colors: Sequence[str] = PALETTE) -> list[Series]:
    """p50, p95 and p99 lines of ``measure`` from rows of :func:`~._rollup.aggregate`."""
    return [
        Series(name, [p[measure][name] if p.get(measure) else None for p in points], colors[i], dashed=name == "p99")
        for i, name in enumerate(("p50", "p95", "p99"))
    ]
