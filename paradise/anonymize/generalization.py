"""Generalization / global recoding (seed 003 §3.1.1, seed 001; ARX hierarchies).

Every listed column is recoded on the whole table (global recoding: the same
value always becomes the same code), in one pushed-down ``CASE``/arithmetic
expression per column. One rule per column:

``width`` (+ ``offset``)
    intervals of equal width: 21 with width 10 becomes ``"20-29"`` (integer
    columns; other numeric columns get ``"[20,30)"``).
``breaks``
    explicit interval bounds ``[b0, b1, …, bn]``: values below ``b0`` are
    labelled ``"<b0"``, from ``bn`` on ``">=bn"``, otherwise like ``width``;
    ``labels`` overrides the labels (one more than there are breaks).
``top`` / ``bottom`` (top and bottom coding)
    values above ``top`` become ``top_value`` (default ``top``), values below
    ``bottom`` become ``bottom_value``; the column stays numeric.
``hierarchy`` / ``hierarchy_file`` with ``level``
    a categorical hierarchy, one row per original value listing its ancestors
    from specific to general (ARX's CSV format: ``value;level1;level2;…``,
    separated by ``;``). ``level: 0`` is the original value. Values not in the
    hierarchy become ``other`` (default ``*``), so an unforeseen value is never
    released. A file is read when the policy loads (a relative path is taken
    from the policy file's directory) and kept inline in the parameters.
``truncate``
    date/time truncation to ``year``, ``month``, ``day``, ``hour`` or ``minute``.
``round``
    rounding to a multiple of ``round`` (half up, the same on every backend:
    ``FLOOR(x / r + 0.5) * r``).

NULL stays NULL.

Example:
    >>> params = GeneralizationParams(columns={"age": {"width": 10}})
    >>> ctx = OperatorContext(
    ...     table="t", dialect="duckdb", columns=("age",), types={"age": "INTEGER"}
    ... )
    >>> rel = exp.select('"age"').from_("t")
    >>> import duckdb
    >>> sql = Generalization().apply(rel, params, ctx).sql("duckdb")
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (21), (35), (NULL)) v(age)")
    >>> con.sql(sql).fetchall()
    [('20-29',), ('30-39',), (None,)]
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, model_validator
from sqlglot import exp
from sqlglot.errors import SqlglotError

from paradise.anonymize.base import OperatorContext, OperatorParams, column, helper
from paradise.anonymize.microaggregation import check_named_columns
from paradise.anonymize.sqlfuncs import case_when, div, lit
from paradise.policy.operators import ParamsFileError

__all__ = [
    "ColumnRecoding",
    "Generalization",
    "GeneralizationParams",
    "HierarchyFileError",
    "interval_label",
    "read_hierarchy",
]

_INTEGER_TYPES = ("INT", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "INTEGER", "SERIAL")
Number = int | float


class ColumnRecoding(OperatorParams):
    """How one column is recoded (exactly one of the rule groups below).

    Attributes:
        width / offset: equal-width intervals starting at ``offset``.
        breaks / labels: explicit interval bounds and optional labels.
        top / top_value / bottom / bottom_value: top and bottom coding.
        hierarchy / hierarchy_file / level / other: a categorical hierarchy.
        truncate: date/time unit.
        round: rounding base.
    """

    width: float | None = Field(default=None, gt=0)
    offset: float = 0
    breaks: tuple[float, ...] | None = None
    labels: tuple[str, ...] | None = None
    top: float | None = None
    top_value: float | None = None
    bottom: float | None = None
    bottom_value: float | None = None
    hierarchy: tuple[tuple[str, ...], ...] | None = None
    hierarchy_file: str | None = None
    level: int | None = Field(default=None, ge=0)
    other: str = "*"
    truncate: Literal["year", "month", "day", "hour", "minute"] | None = None
    round: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> ColumnRecoding:
        groups = {
            "width": self.width is not None,
            "breaks": self.breaks is not None,
            "top/bottom": self.top is not None or self.bottom is not None,
            "hierarchy": self.hierarchy is not None or self.hierarchy_file is not None,
            "truncate": self.truncate is not None,
            "round": self.round is not None,
        }
        chosen = [name for name, used in groups.items() if used]
        if len(chosen) != 1:
            raise ValueError(
                "give exactly one recoding per column: width, breaks, top/bottom, "
                f"hierarchy (or hierarchy_file), truncate or round; got {chosen or 'none'}"
            )
        if self.breaks is not None:
            if len(self.breaks) < 1 or any(
                a >= b for a, b in zip(self.breaks, self.breaks[1:], strict=False)
            ):
                raise ValueError("breaks must be a non-empty, strictly increasing list")
            if self.labels is not None and len(self.labels) != len(self.breaks) + 1:
                raise ValueError(
                    f"labels needs {len(self.breaks) + 1} entries (one more than breaks), "
                    f"got {len(self.labels)}"
                )
        elif self.labels is not None:
            raise ValueError("labels applies to breaks only")
        if self.top is not None and self.bottom is not None and self.bottom > self.top:
            raise ValueError(f"bottom ({self.bottom}) is above top ({self.top})")
        if self.top_value is not None and self.top is None:
            raise ValueError("top_value needs top")
        if self.bottom_value is not None and self.bottom is None:
            raise ValueError("bottom_value needs bottom")
        if chosen == ["hierarchy"]:
            return self._load_hierarchy(info)
        if self.level is not None:
            raise ValueError("level applies to hierarchies only")
        return self

    def _load_hierarchy(self, info: ValidationInfo) -> ColumnRecoding:
        if self.hierarchy is not None and self.hierarchy_file is not None:
            raise ValueError("give hierarchy or hierarchy_file, not both")
        rows = self.hierarchy
        if rows is None:
            assert self.hierarchy_file is not None
            rows = read_hierarchy(self.hierarchy_file, (info.context or {}).get("policy_dir"))
            object.__setattr__(self, "hierarchy", rows)
        if not rows:
            raise ValueError("a hierarchy needs at least one row")
        if self.hierarchy_file is None:
            _check_inline(rows)
        depth = len(rows[0])
        if any(len(r) != depth for r in rows):
            raise ValueError("every hierarchy row must list the same number of levels")
        seen: set[str] = set()
        for r in rows:
            if r[0] in seen:
                raise ValueError(f"value {r[0]!r} appears twice in the hierarchy")
            seen.add(r[0])
        if self.level is None:
            raise ValueError("a hierarchy needs level: n (0 = original values)")
        if self.level >= depth:
            raise ValueError(
                f"level {self.level} does not exist; the hierarchy has levels 0..{depth - 1}"
            )
        return self


def _check_inline(rows: tuple[tuple[str, ...], ...]) -> None:
    """An inline hierarchy is monotone: every code has one parent (row numbers from 0)."""
    parents: dict[tuple[int, str], tuple[str, int]] = {}
    for number, cells in enumerate(rows):
        for level in range(1, len(cells) - 1):
            known = parents.setdefault((level, cells[level]), (cells[level + 1], number))
            if known[0] != cells[level + 1]:
                raise ValueError(
                    f"hierarchy row {number} is not monotone: level-{level} code "
                    f"{cells[level]!r} has parent {cells[level + 1]!r} but {known[0]!r} in row "
                    f"{known[1]}; every code needs one parent"
                )


class HierarchyFileError(ParamsFileError):
    """A problem in a hierarchy CSV, located by the file's own line (not the policy's)."""


def read_hierarchy(path: str, base: Path | None) -> tuple[tuple[str, ...], ...]:
    """Read an ARX hierarchy CSV (``;``-separated, one row per original value).

    Every row lists a value and its codes from specific to general; problems are
    :class:`HierarchyFileError` with the CSV line: rows with different numbers of
    levels, a value listed twice, a code with two parents (not monotone), or a
    comma-separated file.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "h.csv").write_text("Germany;Europe;*\\nBrazil;America;*\\n")
    >>> read_hierarchy("h.csv", d)
    (('Germany', 'Europe', '*'), ('Brazil', 'America', '*'))
    >>> _ = (d / "c.csv").write_text("Germany,Europe,*\\n")
    >>> read_hierarchy("c.csv", d)
    Traceback (most recent call last):
    ...
    paradise.anonymize.generalization.HierarchyFileError: ...c.csv:1: no ';' between the levels: the file looks comma-separated; ARX hierarchy files separate levels with ';'
    """  # noqa: E501
    file = Path(path)
    if not file.is_absolute() and base is not None:
        file = Path(base) / file
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise HierarchyFileError(file, None, f"cannot read hierarchy file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        line = text_line(exc.object, exc.start) if isinstance(exc.object, bytes) else None
        raise HierarchyFileError(file, line, "not valid UTF-8; save the file as UTF-8") from exc
    numbered: list[tuple[int, tuple[str, ...]]] = []
    reader = csv.reader(io.StringIO(text), delimiter=";")
    for row in reader:
        cells = tuple(cell.strip() for cell in row)
        if cells and any(cells):
            numbered.append((reader.line_num, cells))
    if not numbered:
        raise HierarchyFileError(file, None, "the hierarchy file has no rows")
    check_hierarchy_rows(numbered, file)
    return tuple(cells for _, cells in numbered)


def text_line(data: bytes, offset: int) -> int:
    """The 1-based line of byte ``offset`` in ``data``.

    >>> text_line(b"a\\nb\\nc", 4)
    3
    """
    return data.count(b"\n", 0, offset) + 1


def check_hierarchy_rows(rows: list[tuple[int, tuple[str, ...]]], file: Path) -> None:
    """Shape, uniqueness and monotonicity of hierarchy rows ``(line, cells)``."""
    first_line, first = rows[0]
    if len(first) == 1 and any("," in cells[0] for _, cells in rows):
        raise HierarchyFileError(
            file, first_line, "no ';' between the levels: the file looks comma-separated; "
            "ARX hierarchy files separate levels with ';'"
        )
    depth = len(first)
    seen: dict[str, int] = {}
    parents: list[dict[str, tuple[str, int]]] = [{} for _ in range(depth)]
    for line, cells in rows:
        if len(cells) != depth:
            raise HierarchyFileError(
                file, line, f"{len(cells)} levels where line {first_line} has {depth}"
            )
        if cells[0] in seen:
            raise HierarchyFileError(
                file, line, f"value {cells[0]!r} appears twice (first on line {seen[cells[0]]})"
            )
        seen[cells[0]] = line
        for level in range(1, depth - 1):
            code, parent = cells[level], cells[level + 1]
            known = parents[level].setdefault(code, (parent, line))
            if known[0] != parent:
                raise HierarchyFileError(
                    file, line,
                    f"not monotone: level-{level} code {code!r} has parent {parent!r} here but "
                    f"{known[0]!r} on line {known[1]}; every code needs one parent",
                )


class GeneralizationParams(OperatorParams):
    """Parameters of generalization (YAML key ``generalization``).

    Attributes:
        columns: column -> its recoding rule (:class:`ColumnRecoding`).
    """

    columns: dict[str, ColumnRecoding] = Field(min_length=1)

    def check_columns(self, classes: Mapping[str, Any]) -> None:
        check_named_columns("generalization", list(self.columns), classes)


def _is_integral(value: float) -> bool:
    return float(value).is_integer()


def _fmt(value: float) -> str:
    return str(int(value)) if _is_integral(value) else repr(float(value))


def interval_label(low: float, high: float, integer: bool) -> str:
    """The label of ``[low, high)``: ``"20-29"`` for integers, else ``"[20.5,30.5)"``.

    >>> interval_label(20, 30, True), interval_label(0.5, 1, False)
    ('20-29', '[0.5,1)')
    """
    if integer and _is_integral(low) and _is_integral(high):
        return f"{int(low)}-{int(high) - 1}"
    return f"[{_fmt(low)},{_fmt(high)})"


def _text(value: exp.Expr) -> exp.Expr:
    return exp.cast(value, exp.DataType.Type.TEXT)


def _recode(col: str, rule: ColumnRecoding, sql_type: str) -> exp.Expr:
    x = column(col)
    integer = sql_type.upper().split("(")[0].strip() in _INTEGER_TYPES
    if rule.width is not None:
        width, offset = rule.width, rule.offset
        shifted = x - lit(offset) if offset else x.copy()
        low: exp.Expr = exp.Floor(this=div(shifted, lit(width))) * lit(width)
        if offset:
            low = low + lit(offset)
        if integer and _is_integral(width) and _is_integral(offset):
            lo = exp.cast(low, exp.DataType.Type.BIGINT)
            hi = exp.cast(low.copy() + lit(int(width) - 1), exp.DataType.Type.BIGINT)
            label: exp.Expr = exp.func("CONCAT", _text(lo), lit("-"), _text(hi))
        else:
            digits = max(_decimals(width), _decimals(offset))
            num = exp.DataType.build(f"DECIMAL(38, {digits})")
            lo, hi = exp.cast(low, num), exp.cast(low.copy() + lit(width), num)
            label = exp.func("CONCAT", lit("["), _text(lo), lit(","), _text(hi), lit(")"))
        return case_when([(x.is_(exp.null()), exp.null())], label)
    if rule.breaks is not None:
        b = rule.breaks
        labels = rule.labels or (
            f"<{_fmt(b[0])}",
            *(interval_label(lo_, hi_, integer) for lo_, hi_ in zip(b, b[1:], strict=False)),
            f">={_fmt(b[-1])}",
        )
        whens: list[tuple[exp.Expr, exp.Expr]] = [(x.is_(exp.null()), exp.null())]
        whens += [(x < lit(bound), lit(labels[i])) for i, bound in enumerate(b)]
        return case_when(whens, lit(labels[-1]))
    if rule.top is not None or rule.bottom is not None:
        coding: list[tuple[exp.Expr, exp.Expr]] = []
        if rule.top is not None:
            top_value = rule.top if rule.top_value is None else rule.top_value
            coding.append((x > lit(rule.top), lit(top_value)))
        if rule.bottom is not None:
            bottom_value = rule.bottom if rule.bottom_value is None else rule.bottom_value
            coding.append((x < lit(rule.bottom), lit(bottom_value)))
        return case_when(coding, x.copy())
    if rule.hierarchy is not None:
        assert rule.level is not None
        if rule.level == 0:
            known = [lit(r[0]) for r in rule.hierarchy]
            return case_when(
                [(x.is_(exp.null()), exp.null()), (_text(x).isin(*known), x.copy())],
                lit(rule.other),
            )
        # group original values by their code at the chosen level: one WHEN per code
        codes: dict[str, list[str]] = {}
        for r in rule.hierarchy:
            codes.setdefault(r[rule.level], []).append(r[0])
        mapped: list[tuple[exp.Expr, exp.Expr]] = [(x.is_(exp.null()), exp.null())]
        mapped += [
            (_text(x).isin(*(lit(v) for v in values)), lit(code)) for code, values in codes.items()
        ]
        return case_when(mapped, lit(rule.other))
    if rule.truncate is not None:
        truncated = exp.TimestampTrunc(this=x, unit=exp.var(rule.truncate.upper()))
        if sql_type.upper().strip() == "DATE":
            return exp.cast(truncated, exp.DataType.Type.DATE)
        if _naive_timestamp(sql_type):
            # MySQL's truncation is DATE_ADD('0000-01-01 00:00:00', ...): text, not a DATETIME
            return exp.cast(truncated, exp.DataType.Type.TIMESTAMP)
        return truncated
    assert rule.round is not None
    return exp.Floor(this=div(x, lit(rule.round)) + lit(0.5)) * lit(rule.round)


def _naive_timestamp(sql_type: str) -> bool:
    """Whether ``sql_type`` is a timestamp without time zone (``TIMESTAMP``, ``DATETIME``).

    >>> _naive_timestamp("timestamp(6)"), _naive_timestamp("TIMESTAMPTZ"), _naive_timestamp("?")
    (True, False, False)
    """
    try:
        parsed = exp.DataType.build(sql_type)
    except (SqlglotError, ValueError):
        return False
    return parsed.is_type(exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME)


def _decimals(value: float) -> int:
    if _is_integral(value):
        return 0
    text = repr(float(value))
    return min(len(text.split(".")[1]), 12) if "." in text and "e" not in text else 12


class Generalization:
    """Global recoding of columns (see module docstring)."""

    name: ClassVar[str] = "generalization"
    Params: ClassVar[type[GeneralizationParams]] = GeneralizationParams

    def apply(
        self, relation: exp.Select, params: GeneralizationParams, ctx: OperatorContext
    ) -> exp.Select:
        src = helper("gen_src")
        out: list[exp.Expr] = []
        for c in ctx.columns:
            rule = params.columns.get(c)
            if rule is None:
                out.append(column(c))
            else:
                out.append(exp.alias_(_recode(c, rule, ctx.types.get(c, "")), c, quoted=True))
        return exp.select(*out).from_(relation.subquery(exp.to_identifier(src, quoted=True)))

    def describe(self, params: GeneralizationParams, ctx: OperatorContext) -> dict[str, Any]:
        described: dict[str, Any] = {}
        for c, rule in params.columns.items():
            if c not in ctx.columns:
                continue
            if rule.hierarchy is not None:
                depth = len(rule.hierarchy[0])
                entry: dict[str, Any] = {
                    "hierarchy": f"{len(rule.hierarchy)} values, levels 0..{depth - 1}",
                    "level": rule.level,
                }
                if rule.hierarchy_file:
                    entry["hierarchy_file"] = rule.hierarchy_file
            else:
                entry = rule.model_dump(
                    exclude_none=True, exclude={"hierarchy", "other", "offset", "level"}
                )
                if rule.width is not None and rule.offset:
                    entry["offset"] = rule.offset
            described[c] = entry
        return {"columns": described}

    def linkable_units(
        self, params: GeneralizationParams, ctx: OperatorContext
    ) -> tuple[tuple[str, ...], ...] | None:
        return None
