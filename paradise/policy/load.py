"""Load role policies from YAML with errors located as ``file:line: key.path: problem``.

Example:
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "bad.yaml").write_text("role: r\\ntables:\\n  t:\\n    columns: {a: secret}\\n")
    >>> try:
    ...     load_policies(d)
    ... except PolicyError as e:
    ...     print(str(e).replace(str(d), "DIR"))
    DIR/bad.yaml:4: tables.t.columns.a.class: Input should be 'identifier', 'quasi_identifier', 'sensitive' or 'insensitive'
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from paradise.errors import PolicyError
from paradise.policy.model import RolePolicy
from paradise.policy.operators import ParamsFileError

__all__ = ["PolicySet", "locate_key", "load_policies", "load_policy_file"]

PolicySet = dict[str, RolePolicy]


def load_policies(directory: str | Path) -> PolicySet:
    """Load every ``*.yaml``/``*.yml`` file of ``directory``: one role per file.

    Raises:
        PolicyError: the first problem found, located by file and line.
    """
    path = Path(directory)
    if not path.is_dir():
        raise PolicyError(f"{path}: policy directory not found")
    files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
    if not files:
        raise PolicyError(f"{path}: no policy files (*.yaml) found")
    roles: PolicySet = {}
    where: dict[str, Path] = {}
    for file in files:
        policy = load_policy_file(file)
        if policy.role in roles:
            raise PolicyError(
                f"{file}:1: role: role {policy.role!r} is already defined in {where[policy.role]}"
            )
        roles[policy.role] = policy
        where[policy.role] = file
    return roles


def load_policy_file(file: str | Path) -> RolePolicy:
    """Load and validate one role policy file."""
    path = Path(file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read policy file: {exc.strerror}") from exc
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError(f"{path}:{line}: invalid YAML: {problem}") from exc
    if node is None or not isinstance(data, dict):
        raise PolicyError(f"{path}:1: a policy file must be a mapping with 'role' and 'tables'")
    duplicate = _find_duplicate_key(node, ())
    if duplicate is not None:
        loc, line = duplicate
        raise PolicyError(f"{path}:{line}: {_dotted(loc)}: duplicate key")
    try:
        return RolePolicy.model_validate(data, context={"policy_dir": path.parent})
    except ValidationError as exc:
        error = exc.errors()[0]
        line, loc = _locate(node, tuple(error["loc"]))
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, ParamsFileError):  # located in the file; the policy line after
            raise PolicyError(
                f"{cause} (hierarchy_file of {path}:{line}: {_dotted(loc)})"
            ) from exc
        message = error["msg"].removeprefix("Value error, ")
        raise PolicyError(f"{path}:{line}: {_dotted(loc) or '(top)'}: {message}") from exc


def locate_key(file: str | Path, loc: tuple[Any, ...]) -> int:
    """The 1-based line of key path ``loc`` (e.g. ``("tables", "adult", "columns", "age")``)
    in policy ``file`` (the deepest part of the path that exists)."""
    node = yaml.compose(Path(file).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    if node is None:
        return 1
    line, _ = _locate(node, loc)
    return line


def _dotted(loc: Iterable[Any]) -> str:
    parts = [str(p) for p in loc if not (isinstance(p, str) and p in _PYDANTIC_INTERNAL)]
    return ".".join(parts)


# pydantic puts these into locations of function/union validators; they are not YAML keys
_PYDANTIC_INTERNAL = {"function-after", "function-before", "function-wrap", "function-plain"}


def _locate(node: yaml.Node, loc: tuple[Any, ...]) -> tuple[int, tuple[Any, ...]]:
    """The 1-based line of the deepest YAML node ``loc`` reaches, and the YAML key path.

    A transform step ``{operator: params}`` is entered through its single key even
    though the validation location omits it.
    """
    line = node.start_mark.line + 1
    path: list[Any] = []
    current: yaml.Node | None = node
    for part in loc:
        if isinstance(part, str) and part in _PYDANTIC_INTERNAL:
            continue
        if isinstance(current, yaml.MappingNode):
            found = _child(current, part)
            if found is None and len(current.value) == 1 and part not in ("name", "params"):
                key, inner = current.value[0]
                path.append(str(key.value))
                current = inner
                found = _child(current, part) if isinstance(current, yaml.MappingNode) else None
            if found is None:
                if part in ("name", "params") and len(current.value) == 1:
                    key, found_value = current.value[0]
                    path.append(str(key.value))
                    line = key.start_mark.line + 1
                    current = found_value
                    continue
                path.append(part)
                break
            key, current = found
            line = key.start_mark.line + 1
            path.append(part)
        elif isinstance(current, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(current.value):
                path.append(part)
                break
            current = current.value[part]
            line = current.start_mark.line + 1
            path.append(part)
        else:
            path.append(part)
            break
    return line, tuple(path)


def _child(mapping: yaml.MappingNode, part: Any) -> tuple[yaml.Node, yaml.Node] | None:
    for key, value in mapping.value:
        if str(key.value) == str(part):
            return key, value
    return None


def _find_duplicate_key(
    node: yaml.Node, loc: tuple[Any, ...]
) -> tuple[tuple[Any, ...], int] | None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(key.value)
            if name in seen:
                return (*loc, name), key.start_mark.line + 1
            seen.add(name)
            found = _find_duplicate_key(value, (*loc, name))
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found = _find_duplicate_key(item, (*loc, i))
            if found:
                return found
    return None
