"""Figures as people read them: counts with separators, shares as percentages, risks as odds.

Every number the HTML page and the command line show goes through one of these
functions, so no raw float (``0.0021358…``) reaches a reader.

Example:
    >>> count(32561), share(0.00213), odds(0.0021358), number(2.623e-05), days(15.2456)
    ('32,561', '0.21%', '1 in 468', '0.0000262', '15 days')
"""

from __future__ import annotations

import math

__all__ = ["change", "count", "days", "delta_share", "loss", "number", "odds", "share", "tick"]

DASH = "–"


def _missing(value: float | int | None) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def count(value: int | float | None) -> str:
    """A whole number with thousands separators.

    >>> count(1268), count(None)
    ('1,268', '–')
    """
    if _missing(value):
        return DASH
    assert value is not None
    return f"{round(value):,}"


def share(value: float | None) -> str:
    """A proportion (0..1) as a percentage with two significant digits, at most two decimals.

    Exact 0 and 1 stay ``0%`` and ``100%``; tiny non-zero shares are ``<0.01%``,
    and shares just below 1 never round up to ``100%``.

    >>> [share(v) for v in (0, 1, 0.5, 0.1186, 0.00003, 0.99999, 0.0213)]
    ['0%', '100%', '50%', '12%', '<0.01%', '>99.99%', '2.1%']
    """
    if _missing(value):
        return DASH
    assert value is not None
    pct = 100.0 * value
    if pct == 0:
        return "0%"
    if pct == 100:
        return "100%"
    if 0 < pct < 0.01:
        return "<0.01%"
    if 99.99 < pct < 100:
        return ">99.99%"
    text = _significant(pct, 2, max_decimals=2)
    if float(text.replace(",", "")) >= 100 and pct < 100:
        return ">99.99%"
    return f"{text}%"


def change(value: float | None) -> str:
    """A signed relative change as a percentage (``±0%`` below 0.005 %).

    >>> change(-1e-12), change(0.0312), change(-0.5), change(float("nan"))
    ('±0%', '+3.1%', '−50%', '–')
    """
    if _missing(value):
        return DASH
    assert value is not None
    pct = 100.0 * value
    if abs(pct) < 0.005:
        return "±0%"
    sign = "+" if pct > 0 else "−"
    return f"{sign}{_significant(abs(pct), 2, max_decimals=2)}%"


def tick(value: float, *, percent: bool = False) -> str:
    """An axis tick label: exact for round tick values (up to three significant digits).

    >>> [tick(v) for v in (0, 5000, 20000, 0.00002)], tick(0.001, percent=True)
    (['0', '5,000', '20,000', '0.00002'], '0.1%')
    """
    v = 100.0 * value if percent else value
    text = "0" if v == 0 else _significant(v, 3).replace("-", "−")
    return f"{text}%" if percent else text


def delta_share(value: float | None) -> str:
    """A signed change of a proportion in percentage points.

    >>> delta_share(-0.0912), delta_share(0.0), delta_share(0.004)
    ('−9.1 points', '±0 points', '+0.4 points')
    """
    if _missing(value):
        return DASH
    assert value is not None
    if value == 0:
        return "±0 points"
    text = _significant(abs(100.0 * value), 2, max_decimals=2)
    sign = "+" if value > 0 else "−"
    return f"{sign}{text} points"


def odds(value: float | None) -> str:
    """A probability as "1 in N" (the way a re-identification risk reads best).

    >>> odds(0.2), odds(1.0), odds(0.0), odds(0.66)
    ('1 in 5', '1 in 1', 'none', '1 in 1.5')
    """
    if _missing(value):
        return DASH
    assert value is not None
    if value <= 0:
        return "none"
    n = 1.0 / value
    if n >= 10:
        return f"1 in {round(n):,}"
    return f"1 in {_significant(n, 2, max_decimals=1)}"


def number(value: float | int | None, unit: str = "") -> str:
    """A measurement with three significant digits (and thousands separators), plus a unit.

    >>> number(0.76123), number(1234.5678, "kg"), number(0.0), number(-0.0004567)
    ('0.761', '1,235 kg', '0', '−0.000457')
    """
    if _missing(value):
        return DASH
    assert value is not None
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1:
        text = f"{round(value):,}"
    elif value == 0:
        text = "0"
    else:
        text = _significant(float(value), 3)
    text = text.replace("-", "−")
    return f"{text} {unit}".rstrip()


def loss(value: float | None) -> str:
    """A loss or distance on a 0-to-1-ish scale: three decimals, ``<0.001`` for tiny ones.

    >>> loss(0.0), loss(2.6e-05), loss(0.76123), loss(4.4444)
    ('0', '<0.001', '0.761', '4.44')
    """
    if _missing(value):
        return DASH
    assert value is not None
    if value == 0:
        return "0"
    if abs(value) < 0.001:
        return "<0.001" if value > 0 else "−<0.001"
    return number(value)


def days(value: float | None) -> str:
    """A duration in days (hours below one day).

    >>> days(169.4), days(0.25), days(1.0), days(0.0)
    ('169 days', '6 hours', '1 day', '0 days')
    """
    if _missing(value):
        return DASH
    assert value is not None
    if value == 0:
        return "0 days"
    if abs(value) < 1:
        hours = value * 24
        return f"{number(hours)} hour" + ("" if hours == 1 else "s")
    n = round(value) if abs(value) >= 10 else float(_significant(value, 2))
    label = f"{n:g}" if isinstance(n, float) else f"{n:,}"
    return f"{label} day" + ("" if n == 1 else "s")


def _significant(value: float, digits: int, *, max_decimals: int | None = None) -> str:
    """``value`` rounded to ``digits`` significant digits, with separators, no exponent."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    if max_decimals is not None:
        decimals = min(decimals, max_decimals)
    text = f"{round(value, decimals):,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text
