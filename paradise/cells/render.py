"""Turn a suppression result into columns and rows for display (CLI, SQL result, docs).

Two naming schemes: paradise's own (``published``, ``lower``, ``upper``,
``reason_code``, ``reason``) and seed 002's SAS names (``Wert_korr``,
``Wert_fallLang``, ``Wert_min``, ``Wert_max``, ``Wert_fall``). The original
value is only included on request (``with_value=True``), since it is exactly
what must not be released.

Example:
    >>> from paradise.cells.table import HierarchicalTable
    >>> from paradise.cells.suppress import suppress_cells
    >>> t = HierarchicalTable.from_rows([(0, 12), (1, 2), (2, 10)], ("g",), value="n")
    >>> columns, rows = to_rows(suppress_cells(t, min_value=1, max_value=3), language="en")
    >>> columns
    ('g', 'published', 'lower', 'upper', 'reason_code', 'reason')
    >>> rows[2]
    (2, '9-11', 9, 11, 'A11', 'Suppressed so that no inference can be drawn in g 2.')
"""

from __future__ import annotations

from typing import Literal

from paradise.cells.suppress import SuppressionResult
from paradise.cells.table import format_number

__all__ = ["to_markdown", "to_rows"]

Language = Literal["de", "en"]


def to_rows(
    result: SuppressionResult,
    *,
    language: Language = "de",
    sas_names: bool = False,
    with_value: bool = False,
) -> tuple[tuple[str, ...], list[tuple[object, ...]]]:
    """Columns and rows of the published table, one row per cell in table order.

    Args:
        result: The suppression result.
        language: Language of the reason text (``"de"`` as in seed 002, or ``"en"``).
        sas_names: Name the columns like seed 002's macro (``<value>_korr`` ...).
        with_value: Include the original value (for audits and tests, never for release).

    Returns:
        ``(columns, rows)``; bounds and reasons are ``None`` for cells published exactly.
    """
    table = result.table
    v = table.value_name
    if sas_names:  # the macro's column order
        names = (f"{v}_korr", f"{v}_fallLang", f"{v}_min", f"{v}_max", f"{v}_fall")
    else:
        names = ("published", "lower", "upper", "reason_code", "reason")
    columns = (*table.levels, *((v,) if with_value else ()), *names)
    rows: list[tuple[object, ...]] = []
    for cell in result.cells:
        reason = cell.reason
        text = None if reason is None else (reason.text_de if language == "de" else reason.text_en)
        code = None if reason is None else reason.code
        if sas_names:
            fields: tuple[object, ...] = (cell.published, text, cell.lower, cell.upper, code)
        else:
            fields = (cell.published, cell.lower, cell.upper, code, text)
        rows.append((*cell.key, *((cell.value,) if with_value else ()), *fields))
    return columns, rows


def to_markdown(result: SuppressionResult, **options: bool | str) -> str:
    """Render `to_rows` as a Markdown table (missing values shown as ``.``, like SAS).

    Example:
        >>> from paradise.cells.table import HierarchicalTable
        >>> from paradise.cells.suppress import suppress_cells
        >>> t = HierarchicalTable.from_rows([(0, 12), (1, 2), (2, 10)], ("g",), value="n")
        >>> print(to_markdown(suppress_cells(t, min_value=1, max_value=3), language="en"))
        | g | published | lower | upper | reason_code | reason |
        |---|---|---|---|---|---|
        | 0 | 12 | . | . | . | . |
        | 1 | 1-3 | 1 | 3 | primär | Small values are masked at the lowest level |
        | 2 | 9-11 | 9 | 11 | A11 | Suppressed so that no inference can be drawn in g 2. |
    """
    columns, rows = to_rows(result, **options)  # type: ignore[arg-type]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_show(x) for x in row) + " |")
    return "\n".join(lines)


def _show(x: object) -> str:
    if x is None:
        return "."
    if isinstance(x, int | float) and not isinstance(x, bool):
        return format_number(x)
    return str(x)
