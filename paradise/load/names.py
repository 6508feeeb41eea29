"""Column names as paradise stores them."""

from __future__ import annotations

__all__ = ["normalize_name"]


def normalize_name(name: str) -> str:
    """A column name as paradise stores it: lower case, ``-`` and spaces become ``_``.

    >>> normalize_name("Education-Num")
    'education_num'
    """
    return "_".join(name.strip().lower().replace("-", " ").split())
