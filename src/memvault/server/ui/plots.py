"""Charts as server-rendered SVG: line, stacked-bar and histogram plots.

Why SVG from the server instead of a vendored JavaScript chart library: the page is complete
when it arrives (no script has to run before a chart exists, so screenshots, printing and
browsers with scripts off all show it), nothing runs in the page that the CSP would have to
allow, the charts weigh a few kilobytes instead of a 50-200 KB library, and every label goes
through :func:`markupsafe.escape` like the rest of the page (series names can be tags or
categories that users chose). The cost is no zoom or tooltips beyond SVG ``<title>`` hover text,
which is enough for the few numbers each chart carries.

Only presentation attributes and classes style the SVG: ``style=""`` attributes would be
blocked by the dashboard's CSP (``style-src 'self'``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from markupsafe import Markup, escape

__all__ = ["PALETTE", "bar_chart", "histogram", "line_chart"]

#: Series colours (colour-blind friendly, Okabe-Ito).
PALETTE = (
    "#0072b2",
    "#e69f00",
    "#009e73",
    "#d55e00",
    "#cc79a7",
    "#56b4e9",
    "#f0e442",
    "#000000",
)

_W, _H = 640, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 12, 16, 44


def _num(value: float) -> str:
    """A coordinate with two decimals (short markup, exact enough for pixels)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _tick(value: float) -> str:
    """An axis label: integers plainly, small values with three significant digits."""
    if value == int(value) and abs(value) >= 1:
        return f"{int(value):,}"
    return f"{value:.3g}"


def _nice_max(value: float) -> float:
    """A round axis maximum at or above ``value``."""
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exp:
            return float(step * exp)
    return float(10 * exp)  # pragma: no cover - the loop always returns


def _frame(title: str, body: list[str], legend: Sequence[tuple[str, str]]) -> Markup:
    parts = [
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        *body,
    ]
    x = _LEFT
    for name, colour in legend:
        parts.append(
            f'<rect x="{x}" y="{_H - 14}" width="10" height="10" fill="{colour}"></rect>'
            f'<text class="legend" x="{x + 14}" y="{_H - 5}">{escape(name)}</text>'
        )
        x += 24 + 7 * len(name)
    parts.append("</svg>")
    return Markup("".join(parts))


def _y_axis(y_max: float, plot_h: float) -> list[str]:
    out = []
    for i in range(5):
        value = y_max * i / 4
        y = _TOP + plot_h - plot_h * i / 4
        out.append(
            f'<line class="grid" x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{_num(y)}" y2="{_num(y)}"'
            f' stroke="#ddd"></line><text class="tick" x="{_LEFT - 4}" y="{_num(y + 4)}"'
            f' text-anchor="end">{escape(_tick(value))}</text>'
        )
    return out


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: Callable[[float], str] = _tick,
    y_max: float | None = None,
) -> Markup:
    """Lines of ``(x, y)`` points, one colour per series, over shared axes.

    ``x_label`` formats the x ticks (e.g. epoch seconds as dates).
    """
    plot_w = _W - _LEFT - _RIGHT
    plot_h = _H - _TOP - _BOTTOM
    points = [p for pts in series.values() for p in pts]
    if not points:
        return _frame(title, [_empty()], ())
    xs = [p[0] for p in points]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    top = _nice_max(y_max if y_max is not None else max(p[1] for p in points))
    body = _y_axis(top, plot_h)

    def sx(x: float) -> float:
        return _LEFT + (x - x0) / (x1 - x0) * plot_w

    def sy(y: float) -> float:
        return _TOP + plot_h - min(y, top) / top * plot_h

    for i in range(4):
        x = x0 + (x1 - x0) * i / 3
        anchor = "start" if i == 0 else "end" if i == 3 else "middle"
        body.append(
            f'<text class="tick" x="{_num(sx(x))}" y="{_TOP + plot_h + 14}"'
            f' text-anchor="{anchor}">{escape(x_label(x))}</text>'
        )
    legend = []
    for n, (name, pts) in enumerate(series.items()):
        colour = PALETTE[n % len(PALETTE)]
        legend.append((name, colour))
        ordered = sorted(pts)
        path = " ".join(f"{_num(sx(x))},{_num(sy(y))}" for x, y in ordered)
        body.append(
            f'<polyline class="series" data-series="{escape(name)}" fill="none"'
            f' stroke="{colour}" stroke-width="2" points="{path}"></polyline>'
        )
        for x, y in ordered:
            body.append(
                f'<circle cx="{_num(sx(x))}" cy="{_num(sy(y))}" r="2.5" fill="{colour}">'
                f"<title>{escape(name)}: {escape(x_label(x))} = {escape(_tick(y))}</title>"
                "</circle>"
            )
    return _frame(title, body, legend)


def bar_chart(
    labels: Sequence[str],
    stacks: Mapping[str, Sequence[float]],
    *,
    title: str,
) -> Markup:
    """Stacked bars: one bar per label, one coloured segment per ``stacks`` entry."""
    plot_w = _W - _LEFT - _RIGHT
    plot_h = _H - _TOP - _BOTTOM
    if not labels:
        return _frame(title, [_empty()], ())
    totals = [sum(values[i] for values in stacks.values()) for i in range(len(labels))]
    top = _nice_max(max(totals, default=0.0))
    body = _y_axis(top, plot_h)
    slot = plot_w / len(labels)
    width = max(2.0, slot * 0.7)
    # At most ~6 x labels, each at most 10 characters wide: enough to place the bars in time.
    every = max(1, -(-len(labels) // 6))
    legend = [(name, PALETTE[n % len(PALETTE)]) for n, name in enumerate(stacks)]
    for i, label in enumerate(labels):
        x = _LEFT + slot * i + (slot - width) / 2
        base = 0.0
        for (name, values), (_, colour) in zip(stacks.items(), legend, strict=True):
            value = values[i]
            if value <= 0:
                continue
            h = value / top * plot_h
            y = _TOP + plot_h - (base + value) / top * plot_h
            body.append(
                f'<rect class="bar" data-series="{escape(name)}" x="{_num(x)}" y="{_num(y)}"'
                f' width="{_num(width)}" height="{_num(h)}" fill="{colour}">'
                f"<title>{escape(label)} · {escape(name)}: {escape(_tick(value))}</title></rect>"
            )
            base += value
        if i % every == 0:
            body.append(
                f'<text class="tick" x="{_num(x + width / 2)}" y="{_TOP + plot_h + 14}"'
                f' text-anchor="middle">{escape(label)}</text>'
            )
    return _frame(title, body, legend)


def histogram(
    values: Sequence[float],
    *,
    title: str,
    bins: int = 20,
    lo: float = 0.0,
    hi: float = 1.0,
    marker: float | None = None,
    marker_label: str = "",
) -> Markup:
    """A histogram of ``values`` over ``[lo, hi]``, with an optional vertical marker line."""
    plot_w = _W - _LEFT - _RIGHT
    plot_h = _H - _TOP - _BOTTOM
    counts = [0] * bins
    for v in values:
        i = int((min(max(v, lo), hi) - lo) / (hi - lo) * bins)
        counts[min(i, bins - 1)] += 1
    top = _nice_max(max(counts, default=0))
    body = _y_axis(top, plot_h)
    slot = plot_w / bins
    for i, count in enumerate(counts):
        if count:
            h = count / top * plot_h
            left = lo + (hi - lo) * i / bins
            body.append(
                f'<rect class="bar" x="{_num(_LEFT + slot * i + 1)}" y="{_num(_TOP + plot_h - h)}"'
                f' width="{_num(slot - 2)}" height="{_num(h)}" fill="{PALETTE[0]}">'
                f"<title>{escape(_tick(left))}–{escape(_tick(left + (hi - lo) / bins))}:"
                f" {count}</title></rect>"
            )
    for i in range(5):
        x = lo + (hi - lo) * i / 4
        body.append(
            f'<text class="tick" x="{_num(_LEFT + plot_w * i / 4)}" y="{_TOP + plot_h + 14}"'
            f' text-anchor="middle">{escape(_tick(x))}</text>'
        )
    legend: list[tuple[str, str]] = [("memories", PALETTE[0])]
    if marker is not None:
        x = _LEFT + (min(max(marker, lo), hi) - lo) / (hi - lo) * plot_w
        body.append(
            f'<line class="marker" x1="{_num(x)}" x2="{_num(x)}" y1="{_TOP}"'
            f' y2="{_TOP + plot_h}" stroke="{PALETTE[3]}" stroke-width="2"'
            f' stroke-dasharray="5,3"><title>{escape(marker_label)}</title></line>'
        )
        legend.append((marker_label, PALETTE[3]))
    return _frame(title, body, legend)


def _empty() -> str:
    return f'<text class="empty" x="{_W / 2}" y="{_H / 2}" text-anchor="middle">no data yet</text>'
