"""Hierarchical cell suppression: primary, secondary ("looking up"), tertiary ("looking down").

This follows seed 002 (the SAS macro ``%anon_aggregatdaten`` of Statistik Stadt
Zürich, ``ebenen = Quartier*Kreis``), generalised to any number of levels.
Levels are numbered from the bottom as in the macro: level 1 is the group of
lowest-level cells under their parent, level 2 the group of those parents under
theirs, and so on up to the grand total.

1. **Primary** (`suppress_primary`): lowest-level cells with ``min_value <= v <=
   max_value`` are published as the interval ``"min-max"`` (code ``primär``).
2. **Secondary** (`suppress_secondary`), bottom-up, level by level, for every
   group (a parent and its children) that contains suppressed children: if the
   parent, the published children and the intervals of the other suppressed
   children narrow some suppressed child's interval, one more cell is
   suppressed, "as low as possible": a sibling that is not yet suppressed and
   larger than ``max_value``, chosen by ``function`` (``max``: the largest value,
   as in the seed; ``min``: the smallest; ties go to the largest/smallest code),
   else the parent. Codes: ``A`` when the group holds one suppressed child
   (the macro's "Fall A"), ``B`` when it holds several ("Fall B"), then the level
   number, then ``1`` for a sibling or ``2`` for the parent: ``A11``, ``A12``,
   ``A21``, ``B12``, ...
3. **Tertiary** (`suppress_tertiary`), top-down: a suppressed total whose
   published children would pin it down more tightly than its own interval (e.g.
   a Kreis total chosen as a sibling while all its Quartier cells are published)
   gets one child suppressed, again chosen by ``function`` among children larger
   than ``max_value`` (else among the positive ones). Code ``C`` plus the level
   number of the child: ``C1``, ``C2``, ...

Published intervals are never centred on the true value. A sibling ``c`` chosen
under parent ``T`` is published as ``[T - P - sum(upper), T - P - sum(lower)]``
(``P`` = published siblings, sums over the other suppressed siblings, lower bound
clipped at 0): exactly what the table already tells a reader, so the interval
itself leaks nothing. A suppressed parent is published as ``P + [sum(lower),
sum(upper)]`` of its children, a tertiary child as its parent's interval minus
the published siblings. In seed 002 the masked cells hold 2, the midpoint of
``[1, 3]``, so these intervals look like ``v +- (max-min)/2`` (7 -> 6-8, 17 ->
16-18); an interval that really were centred on ``v`` would give the value away
as its midpoint.

Reason texts are the macro's. ``A?1`` names the *suppressed sibling itself*
("Anonymisiert, damit in Quartier 2 keine Rückschlüsse gezogen werden können."
for Quartier 2 of Kreis 1 — the macro inserts the chosen lower-level unit; the
inference it prevents is in Kreis 1). ``A?2``, ``B??`` and ``C?`` name the upper
unit whose group would allow the inference ("in Kreis 2", "in Kreis 3"). Units
are named by their deepest non-total level and code (`HierarchicalTable.label`);
the grand total is "im Total" (the macro would print its helper level "Einer 1").

Where this module deliberately departs from the macro's code (none of this
changes seed 002's output): a cell that is already suppressed is never chosen
again; the tertiary candidate uses ``max_value`` (the macro hard-codes 3); the
"Fall B" trigger is the exact local test above (the macro only reacts when all
masked children sit at their lower or all at their upper bounds); lower bounds
are clipped at 0 (the macro uses 1 in "Fall B" and nothing in "Fall A"); a
suppressed parent's interval adds the published siblings (the macro uses
``[min, max]``, which is only right when those are 0); tertiary runs for every
suppressed total whose children narrow it, including the grand total. The
local rules do not see interactions across groups; `paradise.cells.audit`
checks the whole table by linear programming and repairs what is left.

Example:
    >>> from paradise.cells.table import HierarchicalTable
    >>> rows = [(0, 0, 28), (1, 0, 9), (1, 1, 2), (1, 2, 7), (2, 0, 2), (2, 1, 2),
    ...         (2, 2, 0), (3, 0, 17), (3, 1, 17)]
    >>> table = HierarchicalTable.from_rows(rows, ("Kreis", "Quartier"), value="Wert")
    >>> result = suppress_cells(table, min_value=1, max_value=3, function="max")
    >>> for c in result.cells:
    ...     print(c.key, c.published, c.lower, c.upper, c.reason and c.reason.code)
    (0, 0) 28 None None None
    (1, 0) 9 None None None
    (1, 1) 1-3 1 3 primär
    (1, 2) 6-8 6 8 A11
    (2, 0) 1-3 1 3 A12
    (2, 1) 1-3 1 3 primär
    (2, 2) 0 None None None
    (3, 0) 16-18 16 18 A21
    (3, 1) 16-18 16 18 C1
    >>> result.summary()["secondary"], result.summary()["tertiary"]
    (3, 1)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from paradise.cells.audit_report import AuditReport
from paradise.cells.table import Code, HierarchicalTable, Number, format_number
from paradise.errors import PolicyError

__all__ = [
    "Function",
    "PublishedCell",
    "Reason",
    "Stage",
    "SuppressionResult",
    "suppress_cells",
    "suppress_primary",
    "suppress_secondary",
    "suppress_tertiary",
]

Function = Literal["max", "min"]
Stage = Literal["primary", "secondary", "tertiary", "additional"]
Role = Literal["primary", "sibling", "parent", "child"]

PRIMARY_CODE = "primär"
PRIMARY_TEXT_DE = "Kleine Werte werden auf der untersten Ebene maskiert"
PRIMARY_TEXT_EN = "Small values are masked at the lowest level"
_EPS = 1e-9


@dataclass(frozen=True)
class Reason:
    """Why a cell is suppressed.

    Attributes:
        code: ``primär``, or letter + level (+ ``1`` sibling / ``2`` upper cell /
            ``3`` child): ``A11``, ``A12``, ``B21``, ``C1``, ``D12``.
            ``A``/``B`` = secondary with one/several masked cells in the group,
            ``C`` = tertiary, ``D`` = added after the audit (see `paradise.cells.audit`).
        stage: ``primary``, ``secondary``, ``tertiary`` or ``additional``.
        role: What was masked and where its interval comes from: ``primary`` (the range
            ``[min, max]``), ``sibling`` (another cell of a leaking group) or ``child`` (a
            cell below a pinned total), both derived from their parent's group, or
            ``parent`` (an upper cell), derived from its children.
        level: Level counted from the bottom (1 = the lowest-level cells' group).
        unit: The unit the text names, e.g. ``"Quartier 2"`` or ``"Total"``.
        text_de: The German text, as seed 002 prints it.
        text_en: The English text.
    """

    code: str
    stage: Stage
    role: Role
    level: int
    unit: str
    text_de: str
    text_en: str


def primary_reason() -> Reason:
    """The reason of every primary suppression.

    Example:
        >>> primary_reason().text_de
        'Kleine Werte werden auf der untersten Ebene maskiert'
    """
    return Reason(PRIMARY_CODE, "primary", "primary", 1, "", PRIMARY_TEXT_DE, PRIMARY_TEXT_EN)


def make_reason(code: str, stage: Stage, role: Role, level: int, unit: str) -> Reason:
    """Build a non-primary reason with the seed's German text and an English one.

    Example:
        >>> make_reason("A12", "secondary", "parent", 1, "Kreis 2").text_de
        'Anonymisiert, damit in Kreis 2 keine Rückschlüsse gezogen werden können.'
        >>> make_reason("D21", "additional", "sibling", 2, "Total").text_en
        'Suppressed after the audit so that no inference can be drawn in the grand total.'
    """
    where_de = "im Total" if unit == "Total" else f"in {unit}"
    where_en = "in the grand total" if unit == "Total" else f"in {unit}"
    if stage == "additional":
        de = (
            f"Nach der Prüfung anonymisiert, damit {where_de} keine Rückschlüsse gezogen "
            "werden können."
        )
        en = f"Suppressed after the audit so that no inference can be drawn {where_en}."
    else:
        de = f"Anonymisiert, damit {where_de} keine Rückschlüsse gezogen werden können."
        en = f"Suppressed so that no inference can be drawn {where_en}."
    return Reason(code, stage, role, level, unit, de, en)


@dataclass(frozen=True)
class PublishedCell:
    """A cell as released: the original value, what is published, and why.

    Attributes:
        key: The cell's key (one code per level).
        value: The original value (never to be shown to the reader).
        depth: 0 for the grand total ... number of levels for the lowest level.
        is_total: True when the cell aggregates at least one level.
        published: The published text: the exact value (``"28"``) or an interval (``"6-8"``).
        lower: The interval's lower bound, ``None`` when the value is published exactly.
        upper: The interval's upper bound, ``None`` when the value is published exactly.
        reason: Why the cell is suppressed, ``None`` when it is not.
    """

    key: tuple[Code, ...]
    value: Number
    depth: int
    is_total: bool
    published: str
    lower: Number | None
    upper: Number | None
    reason: Reason | None

    @property
    def suppressed(self) -> bool:
        """True when the cell is published as an interval."""
        return self.reason is not None


@dataclass(frozen=True)
class SuppressionResult:
    """A suppression pattern over a table, ready to publish (and to audit).

    Attributes:
        table: The input table.
        cells: One `PublishedCell` per table cell, in the table's order.
        min_value: Lower end of the primary range.
        max_value: Upper end of the primary range.
        function: How candidates are chosen (``max`` or ``min`` value).
        audit: The audit of this pattern, when it was audited (`suppress_and_audit`).
    """

    table: HierarchicalTable
    cells: tuple[PublishedCell, ...]
    min_value: Number
    max_value: Number
    function: Function
    audit: AuditReport | None = None

    def count(self, stage: Stage) -> int:
        """Number of cells suppressed at this stage."""
        return sum(1 for c in self.cells if c.reason is not None and c.reason.stage == stage)

    def summary(self) -> dict[str, object]:
        """Annotation for a released result: counts per stage and the audit outcome.

        Example:
            >>> from paradise.cells.table import HierarchicalTable
            >>> t = HierarchicalTable.from_rows([(0, 0, 9), (1, 0, 9), (1, 1, 2), (1, 2, 7)],
            ...                                 ("k", "q"))
            >>> result = suppress_cells(t, min_value=1, max_value=3)
            >>> result.summary()  # doctest: +NORMALIZE_WHITESPACE
            {'cells': 4, 'suppressed': 2, 'primary': 1, 'secondary': 1, 'tertiary': 0,
             'additional': 0, 'min_value': 1, 'max_value': 3, 'function': 'max', 'audit': None}
        """
        return {
            "cells": len(self.cells),
            "suppressed": sum(1 for c in self.cells if c.suppressed),
            "primary": self.count("primary"),
            "secondary": self.count("secondary"),
            "tertiary": self.count("tertiary"),
            "additional": self.count("additional"),
            "min_value": self.min_value,
            "max_value": self.max_value,
            "function": self.function,
            "audit": None if self.audit is None else self.audit.summary(),
        }


def suppress_cells(
    table: HierarchicalTable,
    *,
    min_value: Number,
    max_value: Number,
    function: Function = "max",
    primary_separator: str = "-",
) -> SuppressionResult:
    """Run primary, secondary and tertiary suppression (seed 002's three stages).

    The result is not audited; use `paradise.cells.audit.suppress_and_audit` to get
    a pattern that is guaranteed to pass the audit.

    Args:
        table: The hierarchical table.
        min_value: Lowest value suppressed by primary suppression (>= 0).
        max_value: Highest value suppressed by primary suppression (> min_value).
        function: ``"max"`` (seed 002) or ``"min"``: which candidate value is masked next.
        primary_separator: Separator of primary intervals. Every published interval uses
            ``"-"``; seed 002's macro prints an en dash (``"1–3"``) on primary rows only,
            pass ``"–"`` to reproduce that byte for byte.

    Returns:
        The suppression pattern.

    Raises:
        PolicyError: Invalid ``min_value``/``max_value``/``function``.
    """
    result = suppress_primary(
        table,
        min_value=min_value,
        max_value=max_value,
        function=function,
        primary_separator=primary_separator,
    )
    return suppress_tertiary(suppress_secondary(result))


def suppress_primary(
    table: HierarchicalTable,
    *,
    min_value: Number,
    max_value: Number,
    function: Function = "max",
    primary_separator: str = "-",
) -> SuppressionResult:
    """Mask lowest-level cells with ``min_value <= value <= max_value`` as ``"min-max"``.

    Example:
        >>> from paradise.cells.table import HierarchicalTable
        >>> t = HierarchicalTable.from_rows([(0, 5), (1, 2), (2, 3)], ("g",))
        >>> [c.published for c in suppress_primary(t, min_value=1, max_value=2).cells]
        ['5', '1-2', '3']
    """
    _check_parameters(min_value, max_value, function)
    state = SuppressionState.empty(table, min_value, max_value, function)
    reason = primary_reason()
    label = f"{format_number(min_value)}{primary_separator}{format_number(max_value)}"
    for i, cell in enumerate(table.cells):
        if cell.depth == table.depth and min_value <= cell.value <= max_value:
            state.set(i, float(min_value), float(max_value), reason, label)
    return state.to_result()


def suppress_secondary(result: SuppressionResult) -> SuppressionResult:
    """Secure the masked cells "looking up", level by level from the bottom.

    Example:
        >>> from paradise.cells.table import HierarchicalTable
        >>> t = HierarchicalTable.from_rows([(0, 12), (1, 2), (2, 10)], ("g",))
        >>> r = suppress_secondary(suppress_primary(t, min_value=1, max_value=3))
        >>> [(c.published, c.reason and c.reason.code) for c in r.cells]
        [('12', None), ('1-3', 'primär'), ('9-11', 'A11')]
    """
    state = SuppressionState.from_result(result)
    table = state.table
    by_depth = _cells_by_depth(table)
    for level in range(1, table.depth + 1):
        child_depth = table.depth - level + 1
        for parent in by_depth[child_depth - 1]:
            state.secure_group(parent, level)
    return state.to_result()


def suppress_tertiary(result: SuppressionResult) -> SuppressionResult:
    """Secure suppressed totals "looking down", level by level from the top.

    Example:
        >>> from paradise.cells.table import HierarchicalTable
        >>> rows = [(0, 0, 30), (1, 0, 2), (1, 1, 2), (2, 0, 28), (2, 1, 20), (2, 2, 8)]
        >>> t = HierarchicalTable.from_rows(rows, ("k", "q"))
        >>> r = suppress_cells(t, min_value=1, max_value=3)
        >>> [(c.key, c.published, c.reason.code) for c in r.cells if c.reason]
        [((1, 0), '1-3', 'A12'), ((1, 1), '1-3', 'primär'), ((2, 0), '27-29', 'A21'), \
((2, 1), '19-21', 'C1')]
    """
    state = SuppressionState.from_result(result)
    table = state.table
    by_depth = _cells_by_depth(table)
    for depth in range(table.depth):
        for parent in by_depth[depth]:
            if state.is_suppressed(parent):
                state.protect_from_below(parent, "tertiary")
    return state.to_result()


class SuppressionState:
    """Mutable working copy of a pattern, used inside one suppression or repair step.

    Not part of the public API: stages build one from a frozen `SuppressionResult`,
    change it, and freeze it again with `to_result`.
    """

    def __init__(
        self,
        table: HierarchicalTable,
        min_value: Number,
        max_value: Number,
        function: Function,
        lower: list[float | None],
        upper: list[float | None],
        reasons: list[Reason | None],
        published: list[str],
    ) -> None:
        self.table = table
        self.min_value = min_value
        self.max_value = max_value
        self.function: Function = function
        self.lower = lower
        self.upper = upper
        self.reasons = reasons
        self.published = published
        self.values = [c.value for c in table.cells]
        self.integral = all(isinstance(v, int) for v in self.values)

    @classmethod
    def empty(
        cls, table: HierarchicalTable, min_value: Number, max_value: Number, function: Function
    ) -> SuppressionState:
        """A state with nothing suppressed."""
        n = len(table)
        return cls(
            table,
            min_value,
            max_value,
            function,
            [None] * n,
            [None] * n,
            [None] * n,
            [format_number(c.value) for c in table.cells],
        )

    @classmethod
    def from_result(cls, result: SuppressionResult) -> SuppressionState:
        """A working copy of a frozen result."""
        return cls(
            result.table,
            result.min_value,
            result.max_value,
            result.function,
            [None if c.lower is None else float(c.lower) for c in result.cells],
            [None if c.upper is None else float(c.upper) for c in result.cells],
            [c.reason for c in result.cells],
            [c.published for c in result.cells],
        )

    def to_result(self) -> SuppressionResult:
        """Freeze the state."""
        cells = tuple(
            PublishedCell(
                key=cell.key,
                value=cell.value,
                depth=cell.depth,
                is_total=cell.is_total,
                published=self.published[i],
                lower=_maybe(self._tidy, self.lower[i]),
                upper=_maybe(self._tidy, self.upper[i]),
                reason=self.reasons[i],
            )
            for i, cell in enumerate(self.table.cells)
        )
        return SuppressionResult(self.table, cells, self.min_value, self.max_value, self.function)

    def is_suppressed(self, i: int) -> bool:
        """True when cell ``i`` is published as an interval."""
        return self.reasons[i] is not None

    def is_primary(self, i: int) -> bool:
        """True when cell ``i`` is a primary suppression."""
        reason = self.reasons[i]
        return reason is not None and reason.stage == "primary"

    def bounds(self, i: int) -> tuple[float, float]:
        """Published bounds of cell ``i`` (its value twice when published exactly)."""
        lo, hi = self.lower[i], self.upper[i]
        if lo is None or hi is None:
            v = float(self.values[i])
            return v, v
        return lo, hi

    def set(self, i: int, lo: float, hi: float, reason: Reason | None, text: str = "") -> None:
        """Publish cell ``i`` as ``[lo, hi]`` for ``reason`` (``None``: publish it exactly)."""
        if reason is None:
            self.lower[i] = self.upper[i] = None
            self.reasons[i] = None
            self.published[i] = format_number(self.values[i])
            return
        self.lower[i], self.upper[i] = lo, hi
        self.reasons[i] = reason
        self.published[i] = text or f"{self._text(lo)}-{self._text(hi)}"

    def group(self, parent: int) -> tuple[float, float, float, list[int]]:
        """Published sum, lower-bound sum and upper-bound sum of a parent's children.

        Returns:
            ``(published, sum_lower, sum_upper, suppressed_children)``.
        """
        pub = lo_sum = hi_sum = 0.0
        masked: list[int] = []
        for k in self.table.children_of(parent):
            if self.is_suppressed(k):
                lo, hi = self.bounds(k)
                lo_sum += lo
                hi_sum += hi
                masked.append(k)
            else:
                pub += self.values[k]
        return pub, lo_sum, hi_sum, masked

    def secure_group(self, parent: int, level: int) -> None:
        """Secondary step for one group: mask a sibling or the parent if the group leaks."""
        pub, lo_sum, hi_sum, masked = self.group(parent)
        if not masked:
            return
        p_lo, p_hi = self.bounds(parent)
        r_lo, r_hi = p_lo - pub, p_hi - pub
        leaks = False
        for k in masked:
            lo, hi = self.bounds(k)
            eps = _EPS * max(1.0, abs(hi))
            if r_lo - (hi_sum - hi) > lo + eps or r_hi - (lo_sum - lo) < hi - eps:
                leaks = True
                break
        if not leaks:
            return
        case = "A" if len(masked) == 1 else "B"
        kids = self.table.children_of(parent)
        candidates = [
            k for k in kids if not self.is_suppressed(k) and self.values[k] > self.max_value
        ]
        if candidates:
            c = self.choose(candidates)
            unit = self.table.label(c) if case == "A" else self.table.label(parent)
            self.suppress_child(
                c, parent, make_reason(f"{case}{level}1", "secondary", "sibling", level, unit)
            )
        elif not self.is_suppressed(parent):
            reason = make_reason(
                f"{case}{level}2", "secondary", "parent", level, self.table.label(parent)
            )
            self.suppress_parent(parent, reason)

    def protect_from_below(self, parent: int, stage: Stage) -> int | None:
        """Tertiary step: if the children pin ``parent`` down, mask one child.

        Returns:
            The masked child, or None when the children do not pin the parent (or none fits).
        """
        pub, lo_sum, hi_sum, _ = self.group(parent)
        p_lo, p_hi = self.bounds(parent)
        eps = _EPS * max(1.0, abs(p_hi))
        if pub + lo_sum <= p_lo + eps and pub + hi_sum >= p_hi - eps:
            return None
        kids = [k for k in self.table.children_of(parent) if not self.is_suppressed(k)]
        candidates = [k for k in kids if self.values[k] > self.max_value]
        candidates = candidates or [k for k in kids if self.values[k] > 0]
        if not candidates:
            return None
        c = self.choose(candidates)
        level = self.table.depth - self.table.cells[c].depth + 1
        if stage == "tertiary":
            reason = make_reason(f"C{level}", stage, "child", level, self.table.label(parent))
        else:
            reason = make_reason(f"D{level}3", stage, "child", level, self.table.label(parent))
        self.suppress_child(c, parent, reason)
        return c

    def suppress_child(self, c: int, parent: int, reason: Reason) -> None:
        """Mask ``c`` with what its parent's group tells about it (lower bound >= 0)."""
        self.set(c, *self.from_parent(c, parent), reason)

    def from_parent(self, c: int, parent: int) -> tuple[float, float]:
        """What the parent's group tells about ``c``, given the other cells' intervals."""
        pub, lo_sum, hi_sum, _ = self.group(parent)
        p_lo, p_hi = self.bounds(parent)
        if self.is_suppressed(c):
            lo, hi = self.bounds(c)
            lo_sum, hi_sum = lo_sum - lo, hi_sum - hi
        else:
            pub -= self.values[c]
        return max(0.0, p_lo - pub - hi_sum), p_hi - pub - lo_sum

    def widen_below(self, cell: int) -> None:
        """After ``cell`` was masked, widen the intervals derived from it, recursively down.

        Masked siblings and children below ``cell`` were published with what their group
        told about them while ``cell`` was exact; re-derive them from its interval and
        publish the union (still containing the true value), so that stale intervals do
        not pin the cells that the new mask should free.
        """
        stack = [cell]
        while stack:
            parent = stack.pop()
            for k in self.table.children_of(parent):
                reason = self.reasons[k]
                if reason is None or reason.role not in ("sibling", "child"):
                    continue
                lo, hi = self.bounds(k)
                new_lo, new_hi = self.from_parent(k, parent)
                if new_lo < lo - _EPS * max(1.0, lo) or new_hi > hi + _EPS * max(1.0, hi):
                    self.set(k, min(lo, new_lo), max(hi, new_hi), reason)
                    stack.append(k)

    def suppress_parent(self, parent: int, reason: Reason) -> None:
        """Mask ``parent`` with what its children tell about it."""
        pub, lo_sum, hi_sum, _ = self.group(parent)
        self.set(parent, pub + lo_sum, pub + hi_sum, reason)

    def choose(self, candidates: Sequence[int]) -> int:
        """Pick the candidate with the max (or min) value; ties by max (min) code."""
        pick = max if self.function == "max" else min
        return pick(candidates, key=lambda k: (self.values[k], _code_key(self._own_code(k))))

    def _own_code(self, k: int) -> Code:
        cell = self.table.cells[k]
        return cell.key[cell.depth - 1] if cell.depth else None

    def _tidy(self, x: float) -> Number:
        if self.integral and float(x).is_integer():
            return int(x)
        return x

    def _text(self, x: float) -> str:
        return format_number(self._tidy(x))


def _maybe(f: Callable[[float], Number], x: float | None) -> Number | None:
    return None if x is None else f(x)


def _code_key(code: Code) -> tuple[int, float, str]:
    if isinstance(code, int | float) and not isinstance(code, bool):
        return (0, float(code), "")
    return (1, 0.0, str(code))


def _cells_by_depth(table: HierarchicalTable) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(table.depth + 1)]
    for i, cell in enumerate(table.cells):
        out[cell.depth].append(i)
    return out


def _check_parameters(min_value: Number, max_value: Number, function: str) -> None:
    numbers: Iterable[object] = (min_value, max_value)
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in numbers):
        raise PolicyError(
            f"cell suppression: min/max must be numbers, got {min_value!r}, {max_value!r}"
        )
    if not (math.isfinite(min_value) and math.isfinite(max_value)) or min_value < 0:
        raise PolicyError(f"cell suppression: min_value must be finite and >= 0, got {min_value!r}")
    if not min_value < max_value:
        raise PolicyError(
            f"cell suppression: min_value must be < max_value, got {min_value!r} >= {max_value!r}"
        )
    if function not in ("max", "min"):
        raise PolicyError(f"cell suppression: function must be 'max' or 'min', got {function!r}")
