"""Small server-rendered SVG charts for the activity page: bars, stacked
bars and lines, each a <svg role="img"> with a <title> (the page puts a table
of the same numbers beside it).

Hand-made rather than a library: the charts are a few rectangles and lines,
so no dependency to vendor or keep up to date, no JavaScript at all (nothing
for the Content-Security-Policy to allow), and no inline style: colours come
from classes in site.css (``chart-s0`` … ``chart-s5``, ``chart-axis``), so
the charts follow dark mode with the rest of the page. The viewBox scales to
the width of a phone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 400, 180
LEFT, RIGHT, TOP, BOTTOM = 34, 6, 8, 30
SERIES_CLASSES = 6  # chart-s0 … chart-s5; more series reuse them


@dataclass
class Series:
    name: str
    values: list[float]


def _nice_max(value: float) -> float:
    if value <= 0:
        return 4.0  # four whole gridlines, not 0.25 steps
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 20000, 50000):
        if value <= step * 4:
            return float(step * 4) if step * 4 >= value else value
    return value


def _frame(title: str, labels: Sequence[str], top: float, fmt: str, body: list[str], chart_id: str) -> SafeString:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="{chart_id}-title" '
        f'preserveAspectRatio="xMidYMid meet" id="{chart_id}">',
        f'<title id="{chart_id}-title">{escape(title)}</title>',
    ]
    for n in range(5):  # four gridlines and the baseline
        y = TOP + plot_h - plot_h * n / 4
        value = top * n / 4
        parts.append(f'<line class="chart-grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(
            f'<text class="chart-axis" x="{LEFT - 4}" y="{y + 3:.1f}" text-anchor="end">'
            f"{escape(fmt.format(value))}</text>"
        )
    count = len(labels)
    if count:
        step = max(1, round(count / 6))
        for i in range(0, count, step):
            x = LEFT + plot_w * (i + 0.5) / count
            parts.append(
                f'<text class="chart-axis" x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">'
                f"{escape(labels[i])}</text>"
            )
    parts.extend(body)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text above is escaped


def stacked_bars(
    chart_id: str, title: str, labels: Sequence[str], series: Sequence[Series], *, fmt: str = "{:.0f}"
) -> SafeString:
    """One bar per label, its series stacked, in series order."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    top = _nice_max(max(totals, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(labels), 1)
    bar = max(slot * 0.7, 1.0)
    body = []
    for i in range(len(labels)):
        base = 0.0
        for k, s in enumerate(series):
            value = s.values[i]
            if value <= 0:
                continue
            h = plot_h * value / top
            y = TOP + plot_h - plot_h * (base + value) / top
            x = LEFT + slot * i + (slot - bar) / 2
            body.append(
                f'<rect class="chart-s{k % SERIES_CLASSES}" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" '
                f'height="{h:.1f}"><title>{escape(labels[i])}: {escape(s.name)} '
                f"{escape(fmt.format(value))}</title></rect>"
            )
            base += value
    return _frame(title, labels, top, fmt, body, chart_id)


def bars(
    chart_id: str, title: str, labels: Sequence[str], values: Sequence[float], *, fmt: str = "{:.0f}"
) -> SafeString:
    return stacked_bars(chart_id, title, labels, [Series(title, list(values))], fmt=fmt)


def lines(
    chart_id: str,
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    fmt: str = "{:.0f}",
    top: float | None = None,
    missing: float | None = None,
) -> SafeString:
    """One line per series; a value equal to ``missing`` leaves a gap (a
    week in which an agent had nothing decided has no rate)."""
    peak = max((v for s in series for v in s.values if v != missing), default=0)
    top = top if top is not None else _nice_max(peak)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    count = max(len(labels), 1)
    body = []
    for k, s in enumerate(series):
        points: list[list[str]] = [[]]
        for i, value in enumerate(s.values):
            if value == missing:
                points.append([])
                continue
            x = LEFT + plot_w * (i + 0.5) / count
            y = TOP + plot_h - plot_h * min(value, top) / top
            points[-1].append(f"{x:.1f},{y:.1f}")
            body.append(
                f'<circle class="chart-s{k % SERIES_CLASSES}" cx="{x:.1f}" cy="{y:.1f}" r="2.5">'
                f"<title>{escape(labels[i])}: {escape(s.name)} {escape(fmt.format(value))}</title></circle>"
            )
        for run in points:
            if len(run) > 1:
                body.append(f'<polyline class="chart-line chart-s{k % SERIES_CLASSES}" points="{" ".join(run)}"/>')
    return _frame(title, labels, top, fmt, body, chart_id)
