"""Import rules the import contracts (``lint-imports``, ``pyproject.toml``) cannot see, because
they work on modules, not names: no package imports another package's private names."""

from __future__ import annotations

import ast
from pathlib import Path

PARADISE = Path(__file__).resolve().parents[1] / "paradise"


def _module(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    """The top-level part of paradise a module belongs to (``paradise.server``, ...)."""
    return ".".join(module.split(".")[:2])


def private_imports(root: Path = PARADISE) -> list[str]:
    """``importer: from module import _name`` for every private name imported from another
    top-level package of paradise (dunder names are not private)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        importer = _module(path, root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if not node.module.startswith("paradise."):
                continue
            if _package(node.module) == _package(importer):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{importer}: from {node.module} import {alias.name}")
    return found


def test_no_package_imports_another_packages_private_names() -> None:
    assert private_imports() == []


def test_the_check_finds_a_private_import(tmp_path: Path) -> None:
    package = tmp_path / "paradise"
    (package / "load").mkdir(parents=True)
    (package / "load" / "writer.py").write_text(
        "from paradise.backends.mysql import _query_error\n"
        "from paradise.load.staging import _inside\n"
        "from paradise.errors import __doc__\n",
        encoding="utf-8",
    )
    assert private_imports(package) == [
        "paradise.load.writer: from paradise.backends.mysql import _query_error"
    ]
