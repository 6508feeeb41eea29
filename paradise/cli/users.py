"""``paradise user add|list|remove|passwd``: the proxy's own user table in its TOML config.

The configuration file is edited as text, one ``[users."name"]`` table at a time,
so comments and the rest of the file stay as they are; every change is written
to a temporary file that replaces the config in one step.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from pathlib import Path

import click

from paradise.cli.app import out_console
from paradise.cli.options import policies_option
from paradise.cli.render import print_rows
from paradise.server.common.config import AUTH_METHODS, ConfigError, load_config, user_toml

__all__ = ["user"]

_config = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    required=True,
    help="The TOML server configuration holding the users.",
)


@click.group()
def user() -> None:
    """Manage the proxy's users (logins mapped to policy roles)."""


@user.command("add")
@click.argument("name")
@click.option("--role", required=True, help="The policy role this user's queries run under.")
@click.option("--password", default=None, help="The password (prompted for when omitted).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Append the user to this TOML config instead of printing it.",
)
@policies_option(
    "Policy directory the role must exist in (default: the config's policies, "
    "else the bundled examples)."
)
@click.option(
    "--auth",
    "auth_methods",
    multiple=True,
    default=("scram-sha-256",),
    show_default=True,
    type=click.Choice(list(AUTH_METHODS)),
    help="Allowed login methods (mysql-native: the MySQL listener, stores SHA1(SHA1(pw))).",
)
def add(
    name: str,
    role: str,
    password: str | None,
    config_path: str | None,
    policies: str | None,
    auth_methods: tuple[str, ...],
) -> None:
    """Create a salted SCRAM-SHA-256 password entry for NAME mapped to ROLE."""
    path = Path(config_path) if config_path else None
    _check_role(role, policies, path)
    text = ""
    if path is not None and path.exists():
        text = _read(path)
        if _find_user(text, name, path) is not None:
            raise ConfigError(
                f"{path}: user {name!r} already exists (change it with: paradise user passwd "
                f"{name} --config {path}, or remove it first)"
            )
    if password is None:
        password = click.prompt("password", hide_input=True, confirmation_prompt=True)
    block = user_toml(name, password, role, auth_methods=auth_methods)
    if path is None:
        out_console.print(block, highlight=False, markup=False)
        return
    separator = "\n" if text and not text.endswith("\n") else ""
    _write(path, text + separator + ("\n" if text.strip() else "") + block)
    out_console.print(f"added user {name} (role {role}) to {path}", highlight=False)


@user.command("list")
@_config
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True)
def list_(config_path: str, fmt: str) -> None:
    """List the users of a config: name, role and login methods (never the verifiers)."""
    config = load_config(config_path)
    rows = [(u.name, u.role, ", ".join(u.auth_methods)) for u in config.users.values()]
    print_rows(out_console, ("user", "role", "auth"), sorted(rows), fmt=fmt)


@user.command("remove")
@click.argument("name")
@_config
def remove(name: str, config_path: str) -> None:
    """Remove user NAME from the config."""
    path = Path(config_path)
    text = _read(path)
    span = _find_user(text, name, path)
    if span is None:
        raise ConfigError(f"{path}: no user {name!r}")
    lines = text.splitlines(keepends=True)
    start, end = span
    _write(path, "".join(lines[:start] + lines[end:]))
    out_console.print(f"removed user {name} from {path}", highlight=False)


@user.command("passwd")
@click.argument("name")
@_config
@click.option("--password", default=None, help="The new password (prompted for when omitted).")
def passwd(name: str, config_path: str, password: str | None) -> None:
    """Set a new password for NAME; the role and login methods stay as they are."""
    path = Path(config_path)
    config = load_config(path)
    if name not in config.users:
        raise ConfigError(f"{path}: no user {name!r}")
    current = config.users[name]
    text = _read(path)
    span = _find_user(text, name, path)
    if span is None:  # defined inline (users = {...}): not editable as a table
        raise ConfigError(f"{path}: user {name!r} is not a [users.{name}] table; edit it by hand")
    if password is None:
        password = click.prompt("new password", hide_input=True, confirmation_prompt=True)
    block = user_toml(name, password, current.role, auth_methods=current.auth_methods)
    lines = text.splitlines(keepends=True)
    start, end = span
    trailing = "\n" if end < len(lines) else ""
    _write(path, "".join([*lines[:start], block + trailing, *lines[end:]]))
    out_console.print(f"changed the password of {name} in {path}", highlight=False)


# --- helpers ------------------------------------------------------------------------------
def _check_role(role: str, policies: str | None, config: Path | None) -> None:
    """Refuse a role that no policy defines (where the proxy would look for it)."""
    from paradise.policy import load_policies
    from paradise.processor import bundled_policies

    directory: Path | None = Path(policies) if policies else None
    if directory is None and config is not None and config.exists():
        directory = load_config(config).policies
    if directory is None:
        directory = bundled_policies()
    roles = load_policies(directory)
    if role not in roles:
        raise ConfigError(
            f'unknown role "{role}" (policies in {directory}); known roles: '
            f"{', '.join(sorted(roles))}"
        )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc


def _write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (same permissions as before)."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600  # it holds verifiers
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _find_user(text: str, name: str, path: Path) -> tuple[int, int] | None:
    """The line span ``[start, end)`` of the ``[users.<name>]`` table, or None."""
    lines = text.splitlines()
    start: int | None = None
    for number, line in enumerate(lines):
        key = _table_header(line)
        if key is None:
            continue
        if start is not None:
            return start, _trim(lines, start, number)
        if key == ("users", name):
            start = number
    if start is not None:
        return start, _trim(lines, start, len(lines))
    return None


def _trim(lines: list[str], start: int, end: int) -> int:
    """Leave the blank lines and comments in front of the next table outside the span."""
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip()
                               .startswith("#")):
        end -= 1
    return end


def _table_header(line: str) -> tuple[str, ...] | None:
    """The key path of a ``[table]`` header line (None for any other line).

    >>> _table_header('[users."ana b"]  # x'), _table_header("listen = 1")
    (('users', 'ana b'), None)
    """
    stripped = line.strip()
    if not stripped.startswith("[") or stripped.startswith("[["):
        return None
    try:
        parsed = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    node: object = parsed
    while isinstance(node, dict) and len(node) == 1:
        ((key, node),) = node.items()
        path.append(key)
    return tuple(path)
