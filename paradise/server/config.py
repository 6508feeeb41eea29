"""Server configuration for ``paradise serve``, read from TOML with the standard library.

Example:
    >>> cfg = parse_config({
    ...     "listen": "127.0.0.1:6543",
    ...     "users": {"ana": {"password": hash_password("pw", salt=b"x" * 16), "role": "analyst"}},
    ...     "limits": {"query_timeout_seconds": 5},
    ... })
    >>> ana = cfg.users["ana"]
    >>> cfg.listen, ana.role, ana.auth_methods, cfg.limits.query_timeout_seconds
    ((('127.0.0.1', 6543),), 'analyst', ('scram-sha-256',), 5.0)
"""

from __future__ import annotations

import ssl
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paradise.errors import ParadiseError
from paradise.server.auth import (
    ScramVerifier,
    hash_password,
    md5_password_hash,
    mysql_native_password_hash,
)
from paradise.server.workers import MAX_WORKERS

__all__ = [
    "AUTH_METHODS",
    "ConfigError",
    "Limits",
    "ServerConfig",
    "UserConfig",
    "load_config",
    "make_ssl_context",
    "parse_config",
    "user_toml",
]

AUTH_METHODS = ("scram-sha-256", "md5", "password", "mysql-native")
"""Login methods; ``mysql-native`` is used only by the MySQL listener (``mysql_listen``)."""


class ConfigError(ParadiseError, ValueError):
    """The server configuration is invalid; the message names the file and key."""

    sqlstate = "F0000"
    prefix = "config error"
    exit_code = 2

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class UserConfig:
    """One login of the proxy and the policy role it maps to."""

    name: str
    role: str
    scram: ScramVerifier | None = None
    md5_hash: str | None = None
    auth_methods: tuple[str, ...] = ("scram-sha-256",)
    mysql_native_hash: str | None = None
    """``*`` + hex SHA1(SHA1(password)), for ``mysql-native`` logins on the MySQL listener."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource bounds; ``None`` means unlimited."""

    max_concurrent_queries: int = 8
    query_timeout_seconds: float | None = 60.0
    max_result_rows: int | None = 1_000_000
    max_connections: int = 256
    max_message_bytes: int = 64 * 1024 * 1024
    shutdown_grace_seconds: float = 10.0


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything ``paradise serve`` needs besides the query handler."""

    listen: tuple[tuple[str, int], ...] = (("127.0.0.1", 6543),)
    mysql_listen: tuple[tuple[str, int], ...] = ()
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_required: bool = False
    backend: str | None = None
    policies: Path | None = None
    users: Mapping[str, UserConfig] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    workers: int = 1
    """Server processes sharing the listen addresses (see :mod:`paradise.server.workers`)."""

    @property
    def tls_enabled(self) -> bool:
        return self.tls_cert is not None


_TOP_LEVEL = frozenset(
    {"listen", "mysql_listen", "tls", "backend", "policies", "users", "limits", "workers"}
)


def _fail(source: str, key: str, problem: str) -> ConfigError:
    return ConfigError(f"{source}: {key}: {problem}")


def _address(text: object, source: str, key: str = "listen") -> tuple[str, int]:
    if not isinstance(text, str) or ":" not in text:
        raise _fail(source, key, f"expected 'host:port', got {text!r}")
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise _fail(source, key, f"invalid port in {text!r}")
    return host, int(port)


def _addresses(raw: object, source: str, key: str) -> tuple[tuple[str, int], ...]:
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple):
        raise _fail(source, key, f"expected 'host:port' or a list of them, got {raw!r}")
    return tuple(_address(x, source, key) for x in items)


def _user(name: str, raw: object, source: str) -> UserConfig:
    key = f"users.{name}"
    if not isinstance(raw, Mapping):
        raise _fail(source, key, "expected a table")
    unknown = set(raw) - {
        "password",
        "md5_password",
        "mysql_native_password",
        "role",
        "auth_methods",
    }
    if unknown:
        top = unknown & _TOP_LEVEL
        note = (
            f"; {', '.join(sorted(top))} belong(s) at the top of the file, before the first "
            "[users...] table (TOML puts every key after a table header into that table)"
            if top
            else ""
        )
        raise _fail(source, key, f"unknown keys {sorted(unknown)}{note}")
    role = raw.get("role")
    if not isinstance(role, str) or not role:
        raise _fail(source, f"{key}.role", "a policy role is required")
    methods = tuple(raw.get("auth_methods", ("scram-sha-256",)))
    bad = [m for m in methods if m not in AUTH_METHODS]
    if bad or not methods:
        raise _fail(source, f"{key}.auth_methods", f"choose from {list(AUTH_METHODS)}, got {bad}")
    scram = None
    if "password" in raw:
        try:
            scram = ScramVerifier.parse(str(raw["password"]))
        except ValueError:
            raise _fail(
                source, f"{key}.password", "expected a SCRAM-SHA-256 verifier (paradise user add)"
            ) from None
    md5_hash = raw.get("md5_password")
    if md5_hash is not None and not (
        isinstance(md5_hash, str) and md5_hash.startswith("md5") and len(md5_hash) == 35
    ):
        raise _fail(source, f"{key}.md5_password", "expected 'md5' + 32 hex digits")
    if ("scram-sha-256" in methods or "password" in methods) and scram is None:
        raise _fail(source, f"{key}.password", "required for scram-sha-256 and password auth")
    if "md5" in methods and md5_hash is None:
        raise _fail(source, f"{key}.md5_password", "required for md5 auth")
    native = raw.get("mysql_native_password")
    if native is not None and not (
        isinstance(native, str)
        and len(native) == 41
        and native.startswith("*")
        and all(c in "0123456789abcdefABCDEF" for c in native[1:])
    ):
        raise _fail(source, f"{key}.mysql_native_password", "expected '*' + 40 hex digits")
    if "mysql-native" in methods and native is None:
        raise _fail(source, f"{key}.mysql_native_password", "required for mysql-native auth")
    return UserConfig(name, role, scram, md5_hash, methods, native.upper() if native else None)


def _backend(raw: object, base: Path, source: str) -> str | None:
    """The backend URL; a relative DuckDB path is taken from the config file's directory.

    >>> _backend("data/a.duckdb", Path("/etc/paradise"), "c"), _backend(":memory:", Path("/"), "c")
    ('/etc/paradise/data/a.duckdb', ':memory:')
    >>> _backend("duckdb:///a.duckdb", Path("/srv"), "c")
    '/srv/a.duckdb'
    """
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise _fail(source, "backend", f"expected a database URL or DuckDB file, got {raw!r}")
    from paradise.backends import duckdb_path

    path = duckdb_path(raw)
    if path is None or path == ":memory:" or Path(path).is_absolute():
        return raw
    return str(base / path)


def _limits(raw: object, source: str) -> Limits:
    if not isinstance(raw, Mapping):
        raise _fail(source, "limits", "expected a table")
    defaults = Limits()
    values: dict[str, Any] = {}
    for name in Limits.__dataclass_fields__:
        if name not in raw:
            continue
        value = raw[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise _fail(source, f"limits.{name}", f"expected a positive number, got {value!r}")
        default = getattr(defaults, name)
        values[name] = float(value) if isinstance(default, float) else int(value)
    unknown = set(raw) - set(Limits.__dataclass_fields__)
    if unknown:
        raise _fail(source, "limits", f"unknown keys {sorted(unknown)}")
    return Limits(**values)


def parse_config(
    data: Mapping[str, Any], *, base_dir: Path | None = None, source: str = "<config>"
) -> ServerConfig:
    """Validate a parsed TOML document; relative paths are resolved against ``base_dir``."""
    unknown = set(data) - _TOP_LEVEL
    if unknown:
        raise _fail(source, "(top level)", f"unknown keys {sorted(unknown)}")
    base = base_dir or Path.cwd()
    listen = _addresses(data.get("listen", "127.0.0.1:6543"), source, "listen")
    mysql_listen = _addresses(data.get("mysql_listen", []), source, "mysql_listen")
    tls = data.get("tls", {})
    if not isinstance(tls, Mapping) or set(tls) - {"cert", "key", "required"}:
        raise _fail(source, "tls", "expected a table with cert, key and optionally required")
    if ("cert" in tls) != ("key" in tls):
        raise _fail(source, "tls", "cert and key must be given together")
    cert = base / tls["cert"] if "cert" in tls else None
    key = base / tls["key"] if "key" in tls else None
    users_raw = data.get("users", {})
    if not isinstance(users_raw, Mapping):
        raise _fail(source, "users", "expected a table of users")
    users = {name: _user(name, raw, source) for name, raw in users_raw.items()}
    policies = data.get("policies")
    workers = data.get("workers", 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise _fail(
            source, "workers", f"expected an integer from 1 to {MAX_WORKERS}, got {workers!r}"
        )
    return ServerConfig(
        listen=listen,
        mysql_listen=mysql_listen,
        tls_cert=cert,
        tls_key=key,
        tls_required=bool(tls.get("required", False)),
        backend=_backend(data.get("backend"), base, source),
        policies=base / policies if policies else None,
        users=users,
        limits=_limits(data.get("limits", {}), source),
        workers=workers,
    )


def load_config(path: str | Path) -> ServerConfig:
    """Read and validate a TOML server configuration file."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    return parse_config(data, base_dir=path.absolute().parent, source=str(path))


def make_ssl_context(config: ServerConfig) -> ssl.SSLContext | None:
    """A server TLS context (TLS 1.2+) from the configured certificate, or ``None``."""
    if config.tls_cert is None or config.tls_key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(config.tls_cert, config.tls_key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"tls: cannot load certificate {config.tls_cert}: {exc}") from exc
    return context


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def user_toml(
    name: str,
    password: str,
    role: str,
    *,
    auth_methods: tuple[str, ...] = ("scram-sha-256",),
    iterations: int = 4096,
) -> str:
    """The ``[users.<name>]`` TOML block that ``paradise user add`` prints or appends.

    Example:
        >>> print(user_toml("ana", "pw", "analyst").splitlines()[0])
        [users."ana"]
    """
    lines = [
        f"[users.{_toml_string(name)}]",
        f"password = {_toml_string(hash_password(password, iterations=iterations))}",
        f"role = {_toml_string(role)}",
        "auth_methods = [" + ", ".join(_toml_string(m) for m in auth_methods) + "]",
    ]
    if "md5" in auth_methods:
        lines.insert(2, f"md5_password = {_toml_string(md5_password_hash(password, name))}")
    if "mysql-native" in auth_methods:
        native = mysql_native_password_hash(password)
        lines.insert(2, f"mysql_native_password = {_toml_string(native)}")
    return "\n".join(lines) + "\n"
