"""The hierarchical table model: cells keyed by one code per level, with totals.

A hierarchical table has levels ordered from the top down, like the columns of
``GROUP BY ROLLUP(kreis, quartier)``. Each cell carries one code per level; a
level that is aggregated in that cell holds the *total marker* (``0`` in seed
002, ``None`` in ROLLUP results). A cell's *depth* is the number of leading
levels that are not totals: the grand total has depth 0, a Kreis total depth 1,
a Quartier cell depth 2. The lowest level is the depth that equals the number
of levels. Every cell except the grand total has a *parent* (its key with the
deepest non-total code replaced by the marker), and every parent equals the
sum of its children (additivity), which `HierarchicalTable.from_rows` checks.

Example:
    >>> rows = [(0, 0, 28), (1, 0, 9), (1, 1, 2), (1, 2, 7), (2, 0, 2), (2, 1, 2),
    ...         (2, 2, 0), (3, 0, 17), (3, 1, 17)]
    >>> table = HierarchicalTable.from_rows(rows, levels=("Kreis", "Quartier"), value="Wert")
    >>> len(table), table.depth
    (9, 2)
    >>> [table.cells[i].key for i in table.children_of(1)]
    [(1, 1), (1, 2)]
    >>> table.label(4), table.label(3), table.label(0)
    ('Kreis 2', 'Quartier 2', 'Total')
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from numbers import Integral, Real

from paradise.errors import UnsupportedQueryError, VerificationError

__all__ = ["Cell", "Code", "HierarchicalTable", "Number", "format_code", "format_number"]

Number = int | float
"""A cell value or bound: ``int`` when integral input stays integral, else ``float``."""

Code = Hashable
"""One level's code in a cell key (an int, a string, or the total marker)."""

_ADDITIVITY_RTOL = 1e-9


@dataclass(frozen=True)
class Cell:
    """One cell of a hierarchical table.

    Attributes:
        key: One code per level, top level first; aggregated levels hold the total marker.
        value: The cell's (non-negative) value.
        depth: Number of leading levels that are not totals (0 = grand total).
        is_total: True when the cell aggregates at least one level (depth < number of levels).

    Example:
        >>> Cell(key=(1, 0), value=9, depth=1, is_total=True).is_lowest
        False
    """

    key: tuple[Code, ...]
    value: Number
    depth: int
    is_total: bool

    @property
    def is_lowest(self) -> bool:
        """True for cells of the lowest level (no level aggregated)."""
        return not self.is_total


@dataclass(frozen=True)
class HierarchicalTable:
    """A validated hierarchical table: cells in input order plus parent/child links.

    Build it with `HierarchicalTable.from_rows`; the constructor expects already
    consistent cells (it still rebuilds and checks the links).

    Attributes:
        levels: Level names from the top down, e.g. ``("Kreis", "Quartier")``.
        cells: The cells, in the order of the input rows.
        value_name: Name of the value column (used in displays).
        total_marker: The code that marks an aggregated level (``0`` or ``None``).
    """

    levels: tuple[str, ...]
    cells: tuple[Cell, ...]
    value_name: str = "value"
    total_marker: Code = 0
    _parent: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _children: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    _index: dict[tuple[Code, ...], int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.levels:
            raise UnsupportedQueryError(
                "a hierarchical table needs at least one level",
                hint="name the hierarchy's columns from the top down, e.g. kreis,quartier",
            )
        index: dict[tuple[Code, ...], int] = {}
        for i, cell in enumerate(self.cells):
            if cell.key in index:
                raise UnsupportedQueryError(
                    f"duplicate cell {self._describe(cell.key)}",
                    hint="each combination of level codes may occur once; with ROLLUP, NULL "
                    "group values collide with the total marker (use GROUPING() or COALESCE)",
                )
            index[cell.key] = i
        parent: list[int] = [-1] * len(self.cells)
        children: list[list[int]] = [[] for _ in self.cells]
        for i, cell in enumerate(self.cells):
            if cell.depth == 0:
                continue
            pkey = cell.key[: cell.depth - 1] + (self.total_marker,) * (
                len(self.levels) - cell.depth + 1
            )
            p = index.get(pkey)
            if p is None:
                raise UnsupportedQueryError(
                    f"cell {self._describe(cell.key)} has no total row {self._describe(pkey)}",
                    hint="include the totals (GROUP BY ROLLUP(...)) or pass complete_totals=True",
                )
            parent[i] = p
            children[p].append(i)
        for i, cell in enumerate(self.cells):
            if cell.is_total and not children[i]:
                raise UnsupportedQueryError(
                    f"total {self._describe(cell.key)} has no cells at the level below",
                    hint="every total must be the sum of at least one cell one level down",
                )
        object.__setattr__(self, "_parent", tuple(parent))
        object.__setattr__(self, "_children", tuple(tuple(c) for c in children))
        object.__setattr__(self, "_index", index)

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[Sequence[object]],
        levels: Sequence[str],
        *,
        value: str = "value",
        columns: Sequence[str] | None = None,
        total_marker: Code = 0,
        complete_totals: bool = False,
        check_additivity: bool = True,
    ) -> HierarchicalTable:
        """Build and validate a table from rows of codes and a value.

        Args:
            rows: Row tuples. Without ``columns`` each row is ``(*codes, value)`` in level order.
            levels: Level names from the top down (``("kreis", "quartier")``).
            value: Name of the value column.
            columns: Names of the row fields, when rows hold more or differently ordered fields;
                ``levels`` and ``value`` then pick the fields by name.
            total_marker: Code that marks a total (``0`` as in seed 002, ``None`` for ROLLUP).
            complete_totals: Add missing total rows as sums of their children (for tables
                given at the lowest level only).
            check_additivity: Check that every total equals the sum of its children.

        Returns:
            The validated table.

        Raises:
            UnsupportedQueryError: Malformed rows (wrong width, negative or non-numeric value,
                a key with a code below a total, duplicates, missing totals).
            VerificationError: A total differs from the sum of its children.

        Example:
            >>> rows = [("a", "x", 1), ("a", "y", 4), ("b", "x", 5)]
            >>> t = HierarchicalTable.from_rows(rows, ("g", "h"), total_marker=None,
            ...                                 complete_totals=True)
            >>> [(c.key, c.value) for c in t.cells]  # doctest: +NORMALIZE_WHITESPACE
            [(('a', 'x'), 1), (('a', 'y'), 4), (('b', 'x'), 5), ((None, None), 10),
             (('a', None), 5), (('b', None), 5)]
            >>> HierarchicalTable.from_rows([(0, 3), (1, 1)], ("g",))
            Traceback (most recent call last):
            ...
            paradise.errors.VerificationError: verification failed: total Total is 3 but its \
cells sum to 1 (not additive). Hint: check the input; totals must be sums of their parts.
        """
        levels = tuple(levels)
        if columns is None:
            positions = list(range(len(levels)))
            vpos = len(levels)
            width = len(levels) + 1
        else:
            names = list(columns)
            missing = [n for n in (*levels, value) if n not in names]
            if missing:
                raise UnsupportedQueryError(
                    f"columns {missing} are not in the rows (have {names})",
                    hint="name the level and value columns of the table",
                )
            positions = [names.index(n) for n in levels]
            vpos = names.index(value)
            width = len(names)
        cells: list[Cell] = []
        for r, row in enumerate(rows):
            if len(row) != width:
                raise UnsupportedQueryError(f"row {r} has {len(row)} fields, expected {width}")
            key = tuple(row[p] for p in positions)
            cells.append(_make_cell(key, _to_number(row[vpos], r, value), total_marker))
        if complete_totals:
            cells = _complete_totals(cells, len(levels), total_marker)
        table = cls(levels=levels, cells=tuple(cells), value_name=value, total_marker=total_marker)
        if check_additivity:
            table.check_additivity()
        return table

    def __len__(self) -> int:
        return len(self.cells)

    @property
    def depth(self) -> int:
        """Number of levels (the depth of the lowest-level cells)."""
        return len(self.levels)

    def parent_of(self, i: int) -> int:
        """Index of cell ``i``'s parent, or -1 for the grand total."""
        return self._parent[i]

    def children_of(self, i: int) -> tuple[int, ...]:
        """Indices of the cells one level below cell ``i`` that sum up to it."""
        return self._children[i]

    def index_of(self, key: Sequence[Code]) -> int:
        """Index of the cell with this key.

        Raises:
            KeyError: No such cell.
        """
        return self._index[tuple(key)]

    @property
    def parents(self) -> tuple[int, ...]:
        """Parent index per cell (-1 for the grand total), aligned with `cells`."""
        return self._parent

    def label(self, i: int) -> str:
        """Name a cell by its deepest non-total level and code, e.g. ``"Quartier 2"``.

        This is how seed 002's reason texts name units; the grand total is ``"Total"``.
        """
        cell = self.cells[i]
        if cell.depth == 0:
            return "Total"
        return f"{self.levels[cell.depth - 1]} {format_code(cell.key[cell.depth - 1])}"

    def check_additivity(self) -> None:
        """Check that every total equals the sum of its children.

        Raises:
            VerificationError: Naming the first total that is not additive.
        """
        for i, kids in enumerate(self._children):
            if not kids:
                continue
            total = self.cells[i].value
            parts = math.fsum(self.cells[k].value for k in kids)
            if abs(total - parts) > _ADDITIVITY_RTOL * max(1.0, abs(total), parts):
                raise VerificationError(
                    f"total {self.label(i)} is {format_number(total)} but its cells sum to "
                    f"{format_number(parts)} (not additive)",
                    hint="check the input; totals must be sums of their parts",
                )

    def _describe(self, key: Sequence[Code]) -> str:
        return "(" + ", ".join(f"{n}={k!r}" for n, k in zip(self.levels, key, strict=False)) + ")"


def format_code(code: Code) -> str:
    """Render a level code the way seed 002's texts show it (``2``, ``2.0`` -> ``"2"``).

    Example:
        >>> format_code(2), format_code(2.0), format_code("Altstadt")
        ('2', '2', 'Altstadt')
    """
    if isinstance(code, float) and code.is_integer():
        return str(int(code))
    return str(code)


def format_number(x: float) -> str:
    """Render a value or bound: integral numbers without a decimal point.

    Example:
        >>> format_number(28), format_number(6.0), format_number(2.5)
        ('28', '6', '2.5')
    """
    if isinstance(x, int):
        return str(x)
    if math.isfinite(x) and float(x).is_integer() and abs(x) < 2**53:
        return str(int(x))
    return repr(float(x))


def _to_number(raw: object, row: int, name: str) -> Number:
    if isinstance(raw, bool) or raw is None:
        raise UnsupportedQueryError(f"row {row}: value {name}={raw!r} is not a number")
    out: Number
    if isinstance(raw, Integral):
        out = int(raw)
    elif isinstance(raw, Decimal):
        out = int(raw) if raw == raw.to_integral_value() else float(raw)
    elif isinstance(raw, Real):
        out = float(raw)
    else:
        raise UnsupportedQueryError(f"row {row}: value {name}={raw!r} is not a number")
    if not math.isfinite(out) or out < 0:
        raise UnsupportedQueryError(
            f"row {row}: value {name}={raw!r} must be finite and non-negative",
            hint="cell suppression applies to counts and sums of non-negative amounts",
        )
    return out


def _make_cell(key: tuple[Code, ...], value: Number, marker: Code) -> Cell:
    depth = 0
    while depth < len(key) and key[depth] != marker:
        depth += 1
    if any(k != marker for k in key[depth:]):
        raise UnsupportedQueryError(
            f"cell key {key!r} has a code below a total ({marker!r})",
            hint="a level can only be broken down if all levels above it are",
        )
    return Cell(key=key, value=value, depth=depth, is_total=depth < len(key))


def _complete_totals(cells: list[Cell], n: int, marker: Code) -> list[Cell]:
    present = {c.key for c in cells}
    sums: dict[tuple[Code, ...], Number] = {}
    order: list[tuple[Code, ...]] = []
    for c in cells:
        if c.depth != n:
            continue
        for d in range(n):
            pkey = c.key[:d] + (marker,) * (n - d)
            if pkey in present:
                continue
            if pkey not in sums:
                sums[pkey] = 0
                order.append(pkey)
            sums[pkey] += c.value
    order.sort(key=lambda k: sum(1 for x in k if x != marker))
    return cells + [_make_cell(k, sums[k], marker) for k in order]
