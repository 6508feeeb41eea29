"""Small inline-SVG charts with labels that never overlap, for the offline HTML report.

Three chart shapes cover the report: grouped vertical bars (class sizes, risk
distribution), horizontal bars (changes of regression slopes) and a scatter
plot with hover details (risk against loss). Each returns one ``<svg>``
element with a ``viewBox``, so it scales with the page, and needs no script
to draw (the scatter's hover tooltip uses the page's small inline script; a
native ``<title>`` is the fallback).

Labels are placed, not just drawn: every text's box is estimated from its
length and font size and kept in a list; a point label tries several
positions around its point and is left out (its details stay in the hover
text and the table under the chart) when none is free. Axis ticks are thinned
until their labels fit. The headless-browser test measures the real boxes.

Example:
    >>> svg = bar_chart(["1", "2"], [("original", [3, 1], "#1f77b4")], "size", "records")
    >>> svg.startswith("<svg") and "original" in svg
    True
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["COLOURS", "Point", "bar_chart", "hbar_chart", "nice_ticks", "scatter_chart"]

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
_FONT = 12
_CHAR = 0.62  # a conservative average glyph width of sans-serif text, in em
_W = 760


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def text_width(text: str, size: float = _FONT) -> float:
    """Estimated width of ``text`` in pixels (slightly wide, never narrow, for Latin text).

    >>> text_width("abcd", 10)
    24.8
    """
    return len(text) * size * _CHAR


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle (x, y: top left)."""

    x: float
    y: float
    w: float
    h: float

    def overlaps(self, other: Box, pad: float = 1.0) -> bool:
        """Whether the two boxes intersect (with ``pad`` pixels of air).

        >>> Box(0, 0, 10, 10).overlaps(Box(10.5, 0, 5, 5)), Box(0, 0, 10, 10).overlaps(Box(20, 0, 5, 5))
        (True, False)
        """  # noqa: E501
        return not (self.x + self.w + pad <= other.x or other.x + other.w + pad <= self.x
                    or self.y + self.h + pad <= other.y or other.y + other.h + pad <= self.y)

    def inside(self, width: float, height: float) -> bool:
        """Whether the box lies within ``(0, 0, width, height)``."""
        return self.x >= 0 and self.y >= 0 and self.x + self.w <= width and \
            self.y + self.h <= height


@dataclass
class Canvas:
    """An SVG under construction that remembers where its texts are."""

    width: float
    height: float
    title: str
    parts: list[str] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)

    def add(self, element: str) -> None:
        self.parts.append(element)

    def text_box(self, x: float, y: float, text: str, size: float, anchor: str) -> Box:
        w = text_width(text, size)
        left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        return Box(left, y - size * 0.85, w, size * 1.1)  # y is the baseline

    def free(self, box: Box) -> bool:
        return box.inside(self.width, self.height) and not any(
            box.overlaps(b) for b in self.boxes)

    def text(self, x: float, y: float, text: str, *, size: float = _FONT,
             anchor: str = "start", cls: str = "", force: bool = True) -> bool:
        """Draw a text if it fits (``force``: draw anyway); return whether it was drawn."""
        box = self.text_box(x, y, text, size, anchor)
        if not force and not self.free(box):
            return False
        self.boxes.append(box)
        attr = f' class="{cls}"' if cls else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"'
                 f"{attr}>{_esc(text)}</text>")
        return True

    def svg(self) -> str:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width:.0f} '
                f'{self.height:.0f}" width="{self.width:.0f}" height="{self.height:.0f}" '
                f'role="img" aria-label="{_esc(self.title)}" class="chart">'
                f"<title>{_esc(self.title)}</title>" + "".join(self.parts) + "</svg>")


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering ``[lo, hi]``.

    >>> nice_ticks(0, 17478)
    [0.0, 5000.0, 10000.0, 15000.0, 20000.0]
    >>> nice_ticks(0, 0)
    [0.0, 1.0]
    """
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        base = float(lo) if math.isfinite(lo) else 0.0
        return [base, base + 1.0]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = float(math.floor(lo / step) * step)
    ticks = []
    v = start
    while v < hi + step * 0.999:
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _legend(c: Canvas, series: Sequence[tuple[str, str]], y: float, right: float) -> None:
    """A one-row legend ending at ``right`` (coloured squares and names)."""
    widths = [14 + 6 + text_width(name) + 16 for name, _ in series]
    x = right - sum(widths)
    for (name, colour), w in zip(series, widths, strict=True):
        c.add(f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="12" fill="{colour}"/>')
        c.boxes.append(Box(x, y - 10, 12, 12))
        c.text(x + 18, y, name)
        x += w


def _y_axis(c: Canvas, left: float, top: float, bottom: float, ticks: Sequence[float],
            scale: Callable[[float], float], label: Callable[[float], str], title: str) -> None:
    for t in ticks:
        y = scale(t)
        c.add(f'<line x1="{left:.1f}" x2="{c.width - 20:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
              'class="grid"/>')
        c.text(left - 6, y + 4, label(t), anchor="end")
    c.add(f'<line x1="{left:.1f}" x2="{left:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" class="axis"/>')
    c.text(14, top - 12, title, anchor="start", cls="axis-title")


def bar_chart(
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float], str]],
    x_title: str,
    y_title: str,
    *,
    title: str = "",
    marker: tuple[float, str] | None = None,
    value_label: Callable[[float], str] = lambda v: f"{v:,.0f}",
    tip: Callable[[str, str, float], str] | None = None,
    height: float = 320,
) -> str:
    """Grouped vertical bars: one group per category, one bar per series.

    Args:
        categories: the x-axis labels.
        series: ``(name, values, colour)`` per series.
        x_title / y_title: axis titles with units.
        marker: ``(position in category units, label)``: a dashed vertical line
            (e.g. the policy's k between two bins).
        value_label: formats y tick labels.
        tip: hover text of a bar from (series, category, value).
    """
    c = Canvas(_W, height, title or y_title)
    left, right, top, bottom = 78.0, _W - 20.0, 50.0, height - 52.0
    vmax = max((v for _n, vals, _c in series for v in vals), default=0.0)
    ticks = nice_ticks(0.0, max(vmax, 1.0), 5)
    top_v = ticks[-1]

    def sy(v: float) -> float:
        return bottom - (bottom - top) * (v / top_v if top_v else 0.0)

    _legend(c, [(n, col) for n, _v, col in series], 16, right)
    _y_axis(c, left, top, bottom, ticks, sy, value_label, y_title)
    n = max(len(categories), 1)
    group = (right - left) / n
    bar = group * 0.8 / max(len(series), 1)
    for i, cat in enumerate(categories):
        x0 = left + group * i + group * 0.1
        for j, (name, vals, colour) in enumerate(series):
            v = float(vals[i]) if i < len(vals) else 0.0
            y = sy(v)
            hover = tip(name, cat, v) if tip else f"{name}, {cat}: {value_label(v)}"
            c.add(f'<rect x="{x0 + j * bar:.1f}" y="{y:.1f}" width="{max(bar - 1, 1):.1f}" '
                  f'height="{bottom - y:.1f}" fill="{colour}" data-tip="{_esc(hover)}">'
                  f"<title>{_esc(hover)}</title></rect>")
    _x_labels(c, [left + group * (i + 0.5) for i in range(n)], categories, bottom + 18)
    c.add(f'<line x1="{left:.1f}" x2="{right:.1f}" y1="{bottom:.1f}" y2="{bottom:.1f}" '
          'class="axis"/>')
    c.text((left + right) / 2, height - 8, x_title, anchor="middle", cls="axis-title")
    if marker is not None:
        pos, text = marker
        x = left + group * pos
        c.add(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" class="marker"/>')
        for candidate, anchor in ((x + 5, "start"), (x - 5, "end")):
            if c.text(candidate, top + 14, text, anchor=anchor, force=False, cls="marker-label"):
                break
    return c.svg()


def _x_labels(c: Canvas, xs: Sequence[float], labels: Sequence[str], y: float) -> None:
    """Category labels under the axis; every s-th one when they would collide."""
    for step in range(1, len(labels) + 1):
        boxes = [c.text_box(x, y, t, _FONT, "middle")
                 for i, (x, t) in enumerate(zip(xs, labels, strict=True)) if i % step == 0]
        if all(not a.overlaps(b) for a, b in zip(boxes, boxes[1:], strict=False)) and \
                all(b.inside(c.width, c.height) for b in boxes):
            for i, (x, t) in enumerate(zip(xs, labels, strict=True)):
                if i % step == 0:
                    c.text(x, y, t, anchor="middle")
            return


def hbar_chart(
    labels: Sequence[str],
    values: Sequence[float],
    colours: Sequence[str],
    x_title: str,
    *,
    title: str = "",
    value_label: Callable[[float], str] = lambda v: f"{v:.0%}",
    tick_label: Callable[[float], str] | None = None,
    legend: Sequence[tuple[str, str]] = (),
    tips: Sequence[str] = (),
) -> str:
    """Horizontal bars from zero, one per label (labels cut to fit, full text on hover).

    ``value_label`` formats the value printed after each bar, ``tick_label`` the axis.
    """
    row = 24.0
    height = 70 + row * max(len(labels), 1) + 30
    c = Canvas(_W, height, title or x_title)
    label_w = 250.0
    left, right, top = label_w + 10, _W - 70.0, 44.0
    bottom = top + row * max(len(labels), 1)
    finite = [v for v in values if math.isfinite(v)]
    ticks = nice_ticks(0.0, max(max(finite, default=0.0), 1e-9), 5)
    vmax = ticks[-1]

    def sx(v: float) -> float:
        return left + (right - left) * (v / vmax if vmax else 0.0)

    if legend:
        _legend(c, legend, 18, _W - 20)
    for t in ticks:
        x = sx(t)
        c.add(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" class="grid"/>')
    _x_labels(c, [sx(t) for t in ticks], [(tick_label or value_label)(t) for t in ticks],
              bottom + 16)
    max_chars = int(label_w / (_FONT * _CHAR))
    for i, (label, v, colour) in enumerate(zip(labels, values, colours, strict=True)):
        y = top + row * i
        short = label if len(label) <= max_chars else label[: max_chars - 1] + "…"
        c.text(left - 8, y + row / 2 + 4, short, anchor="end")
        hover = tips[i] if i < len(tips) else f"{label}: {value_label(v)}"
        if math.isfinite(v):
            c.add(f'<rect x="{left:.1f}" y="{y + 4:.1f}" width="{max(sx(v) - left, 1):.1f}" '
                  f'height="{row - 8:.1f}" fill="{colour}" data-tip="{_esc(hover)}">'
                  f"<title>{_esc(hover)}</title></rect>")
            c.text(max(sx(v), left) + 4, y + row / 2 + 4, value_label(v), force=False)
    c.add(f'<line x1="{left:.1f}" x2="{left:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" class="axis"/>')
    c.text((left + right) / 2, height - 8, x_title, anchor="middle", cls="axis-title")
    return c.svg()


@dataclass(frozen=True)
class Point:
    """A point of the scatter chart: position, label, colour, hover lines."""

    x: float
    y: float
    label: str
    colour: str
    details: tuple[str, ...]
    shape: str = "circle"


def _log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    b = max(b, a + 1)
    return [10.0 ** e for e in range(a, b + 1)]


def scatter_chart(
    points: Sequence[Point],
    x_title: str,
    y_title: str,
    *,
    title: str = "",
    x_label: Callable[[float], str] = lambda v: f"{v:g}",
    y_label: Callable[[float], str] = lambda v: f"{v:g}",
    log_x: bool = False,
    height: float = 380,
) -> str:
    """A scatter plot; each point carries its details for the hover tooltip (``data-tip``).

    With ``log_x`` the x axis is logarithmic (points at x <= 0 are drawn at the
    axis's left end, hollow, and say so in their details).
    """
    c = Canvas(_W, height, title or f"{y_title} against {x_title}")
    left, right, top, bottom = 78.0, _W - 24.0, 30.0, height - 52.0
    xs = [p.x for p in points if math.isfinite(p.x) and (p.x > 0 or not log_x)]
    ys = [p.y for p in points if math.isfinite(p.y)]
    if log_x:
        lo = min(xs, default=0.001)
        hi = max(xs, default=1.0)
        xticks = _log_ticks(lo, hi)
        llo, lhi = math.log10(xticks[0]), math.log10(xticks[-1])

        def sx(v: float) -> float:
            v = max(v, xticks[0])
            return left + (right - left) * (math.log10(v) - llo) / (lhi - llo)
    else:
        xticks = nice_ticks(min(0.0, *xs) if xs else 0.0, max(xs, default=1.0), 6)

        def sx(v: float) -> float:
            return left + (right - left) * (v - xticks[0]) / (xticks[-1] - xticks[0])
    yticks = nice_ticks(min(0.0, *ys) if ys else 0.0, max(max(ys, default=1.0), 1e-9), 5)

    def sy(v: float) -> float:
        return bottom - (bottom - top) * (v - yticks[0]) / (yticks[-1] - yticks[0])

    _y_axis(c, left, top, bottom, yticks, sy, y_label, y_title)
    for t in xticks:
        x = sx(t)
        c.add(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" class="grid"/>')
    _x_labels(c, [sx(t) for t in xticks], [x_label(t) for t in xticks], bottom + 18)
    c.add(f'<line x1="{left:.1f}" x2="{right:.1f}" y1="{bottom:.1f}" y2="{bottom:.1f}" '
          'class="axis"/>')
    c.text((left + right) / 2, height - 8, x_title, anchor="middle", cls="axis-title")
    placed = []
    for i, p in enumerate(points):
        if not (math.isfinite(p.x) and math.isfinite(p.y)):
            continue
        px, py = sx(p.x), sy(p.y)
        placed.append((p, px, py))
        c.boxes.append(Box(px - 6, py - 6, 12, 12))
        tip = "\n".join((p.label, *p.details))
        attrs = (f'fill="{p.colour}" class="point" tabindex="0" data-tip="{_esc(tip)}" '
                 f'data-index="{i}"')
        if p.shape == "square":
            shape = f'<rect x="{px - 6:.1f}" y="{py - 6:.1f}" width="12" height="12" {attrs}>'
            end = "</rect>"
        else:
            shape = f'<circle cx="{px:.1f}" cy="{py:.1f}" r="6" {attrs}>'
            end = "</circle>"
        c.add(f"{shape}<title>{_esc(tip)}</title>{end}")
    for p, px, py in placed:  # labels after every point, so none covers a point
        for dx, dy, anchor in ((10, 4, "start"), (-10, 4, "end"), (0, -12, "middle"),
                               (0, 20, "middle"), (10, -10, "start"), (-10, -10, "end"),
                               (10, 18, "start"), (-10, 18, "end")):
            if c.text(px + dx, py + dy, p.label, anchor=anchor, force=False, cls="point-label"):
                break
    return c.svg()
