"""Server configuration for ``paradise serve``: TOML, validated with pydantic.

The document is checked against pydantic models (types, ranges, unknown keys) and
then for what depends on several keys (a user's auth methods and the secrets they
need); every problem is one line ``file:line: key.path: problem``, like the
policies' errors, and the result is the frozen :class:`ServerConfig`.

Example:
    >>> cfg = parse_config({
    ...     "listen": "127.0.0.1:6543",
    ...     "users": {"ana": {"password": hash_password("pw", salt=b"x" * 16), "role": "analyst"}},
    ...     "limits": {"query_timeout_seconds": 5},
    ... })
    >>> ana = cfg.users["ana"]
    >>> cfg.listen, ana.role, ana.auth_methods, cfg.limits.query_timeout_seconds
    ((('127.0.0.1', 6543),), 'analyst', ('scram-sha-256',), 5.0)
    >>> try:
    ...     parse_config({"limits": {"backend_connections": 0}}, source="p.toml")
    ... except ConfigError as exc:
    ...     print(exc)
    p.toml: limits.backend_connections: expected a positive ...
"""

from __future__ import annotations

import re
import ssl
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
)

from paradise.errors import ParadiseError
from paradise.server.common.auth import (
    ScramVerifier,
    hash_password,
    md5_password_hash,
    mysql_native_password_hash,
)
from paradise.server.common.workers import MAX_WORKERS

__all__ = [
    "AUTH_METHODS",
    "LOG_LEVELS",
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
LOG_LEVELS = ("debug", "info", "warning", "error")
"""Values of ``[log] level`` and ``paradise serve --log-level``."""


class ConfigError(ParadiseError, ValueError):
    """The server configuration is invalid; the message names the file, line and key."""

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
    max_result_megabytes: int | None = 512
    """The memory bound of one answer, enforced while it streams in from the database."""
    max_connections: int = 256
    max_message_bytes: int = 64 * 1024 * 1024
    shutdown_grace_seconds: float = 10.0
    backend_connections: int = 4
    """Query sessions each worker keeps open at most to a PostgreSQL/MariaDB backend."""
    authentication_timeout_seconds: float = 60.0
    """A connection that has not authenticated after this long is closed (PostgreSQL: 60 s)."""


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
    """Server processes sharing the listen addresses (see :mod:`paradise.server.common.workers`)."""
    log_level: str = "warning"
    access_log: str = "stderr"
    """Where the JSON-lines access log goes: ``stderr``, ``off`` or a file path."""

    @property
    def tls_enabled(self) -> bool:
        return self.tls_cert is not None


# --- the document's shape (pydantic) -------------------------------------------------------
class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _User(_Section):
    role: str = Field(min_length=1)
    password: str | None = None
    md5_password: str | None = None
    mysql_native_password: str | None = None
    auth_methods: list[Literal["scram-sha-256", "md5", "password", "mysql-native"]] = Field(
        default=["scram-sha-256"], min_length=1
    )

    @field_validator("password")
    @classmethod
    def _scram(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ScramVerifier.parse(value)
            except ValueError:
                raise ValueError("expected a SCRAM-SHA-256 verifier (paradise user add)") from None
        return value

    @field_validator("md5_password")
    @classmethod
    def _md5(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"md5[0-9a-fA-F]{32}", value):
            raise ValueError("expected 'md5' + 32 hex digits")
        return value

    @field_validator("mysql_native_password")
    @classmethod
    def _native(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\*[0-9a-fA-F]{40}", value):
            raise ValueError("expected '*' + 40 hex digits")
        return value


class _Limits(_Section):
    max_concurrent_queries: PositiveInt = 8
    query_timeout_seconds: PositiveFloat | None = 60.0
    max_result_rows: PositiveInt | None = 1_000_000
    max_result_megabytes: PositiveInt | None = 512
    max_connections: PositiveInt = 256
    max_message_bytes: PositiveInt = 64 * 1024 * 1024
    shutdown_grace_seconds: PositiveFloat = 10.0
    backend_connections: PositiveInt = Field(default=4, le=1000)
    authentication_timeout_seconds: PositiveFloat = 60.0


class _Tls(_Section):
    cert: str | None = None
    key: str | None = None
    required: bool = False


class _Log(_Section):
    level: Literal["debug", "info", "warning", "error"] = "warning"
    access: str = Field(default="stderr", min_length=1)


class _Document(_Section):
    listen: str | list[str] = "127.0.0.1:6543"
    mysql_listen: str | list[str] = []
    tls: _Tls = _Tls()
    backend: str | None = None
    policies: str | None = None
    users: dict[str, _User] = {}
    limits: _Limits = _Limits()
    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
    log: _Log = _Log()


# --- errors, located -----------------------------------------------------------------------
def _problem(error: Mapping[str, Any]) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        name = str(error["loc"][-1])
        note = ""
        if len(error["loc"]) > 1 and name in _Document.model_fields:
            note = (
                f"; {name} belongs at the top of the file, before the first [users...] table "
                "(TOML puts every key after a table header into that table)"
            )
        return f"unknown keys [{name!r}]{note}"
    if kind == "missing":
        return "required" + (" (a policy role)" if error["loc"][-1:] == ("role",) else "")
    if kind in ("greater_than", "greater_than_equal") or (
        kind in ("int_type", "float_type") and isinstance(value, int | float)
    ):
        if error["loc"] and error["loc"][0] == "workers":
            return f"expected an integer from 1 to {MAX_WORKERS}, got {value!r}"
        return f"expected a positive number, got {value!r}"
    if kind == "less_than_equal" and error["loc"] and error["loc"][0] == "workers":
        return f"expected an integer from 1 to {MAX_WORKERS}, got {value!r}"
    if kind == "literal_error" and error["loc"] and error["loc"][-2:-1] == ("auth_methods",):
        return f"choose from {list(AUTH_METHODS)}, got {[value]}"
    message = str(error["msg"]).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    return message if kind.startswith("value_error") else f"{message}, got {value!r}"


def _key(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc if not isinstance(p, int) and not str(p).startswith("list[")]
    parts = [p for p in parts if p not in ("str", "function-after[_scram(), str]")]
    return ".".join(parts) or "(top level)"


def _fail(source: str, key: str, problem: str, text: str | None = None) -> ConfigError:
    line = toml_line(text, key) if text else None
    where = f"{source}:{line}" if line else source
    return ConfigError(f"{where}: {key}: {problem}")


_HEADER = re.compile(r"^\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(r"^\s*(?P<key>(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
                     r"(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _dotted_parts(text: str) -> list[str]:
    return [p.strip().strip("\"'") for p in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", text)]


def toml_line(text: str, key: str) -> int | None:
    r"""The 1-based line of TOML ``text`` that sets ``key`` (``a.b.c``), or of its table.

    >>> toml_line('listen = "x"\n[users."ana"]\nrole = "r"\n', "users.ana.role")
    3
    >>> toml_line('[limits]\nmax_connections = 0\n', "limits.backend_connections")
    1
    """
    wanted = key.split(".")
    best: tuple[int, int] | None = None  # (matched parts, line)
    table: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header is not None:
            table = _dotted_parts(header["name"])
            path = table
        else:
            assign = _ASSIGN.match(line)
            if assign is None:
                continue
            path = table + _dotted_parts(assign["key"])
        matched = 0
        for a, b in zip(path, wanted, strict=False):
            if a != b:
                break
            matched += 1
        if matched == len(path) and (best is None or matched > best[0]):
            best = (matched, number)
    return best[1] if best else None


# --- building the configuration ------------------------------------------------------------
def _address(text: str, source: str, key: str, doc: str | None) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise _fail(source, key, f"expected 'host:port', got {text!r}", doc)
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise _fail(source, key, f"invalid port in {text!r}", doc)
    return host.strip("[]"), int(port)


def _addresses(
    raw: str | list[str], source: str, key: str, doc: str | None
) -> tuple[tuple[str, int], ...]:
    items = [raw] if isinstance(raw, str) else raw
    return tuple(_address(x, source, key, doc) for x in items)


def _user(name: str, raw: _User, source: str, doc: str | None) -> UserConfig:
    key = f"users.{name}"
    methods = tuple(raw.auth_methods)
    scram = ScramVerifier.parse(raw.password) if raw.password is not None else None
    if ("scram-sha-256" in methods or "password" in methods) and scram is None:
        raise _fail(source, f"{key}.password", "required for scram-sha-256 and password auth",
                    doc)  # fmt: skip
    if "md5" in methods and raw.md5_password is None:
        raise _fail(source, f"{key}.md5_password", "required for md5 auth", doc)
    native = raw.mysql_native_password
    if "mysql-native" in methods and native is None:
        raise _fail(source, f"{key}.mysql_native_password", "required for mysql-native auth",
                    doc)  # fmt: skip
    return UserConfig(name, raw.role, scram, raw.md5_password, methods,
                      native.upper() if native else None)  # fmt: skip


def parse_config(
    data: Mapping[str, Any],
    *,
    base_dir: Path | None = None,
    source: str = "<config>",
    text: str | None = None,
) -> ServerConfig:
    """Validate a parsed TOML document; relative paths are resolved against ``base_dir``.

    ``text`` (the document's source) lets errors name the line.
    """
    try:
        doc = _Document.model_validate(dict(data))
    except ValidationError as exc:
        error = exc.errors()[0]
        raise _fail(source, _key(error["loc"]), _problem(error), text) from None
    base = (base_dir or Path.cwd()).absolute()
    if (doc.tls.cert is None) != (doc.tls.key is None):
        raise _fail(source, "tls", "cert and key must be given together", text)
    return ServerConfig(
        listen=_addresses(doc.listen, source, "listen", text),
        mysql_listen=_addresses(doc.mysql_listen, source, "mysql_listen", text),
        tls_cert=base / doc.tls.cert if doc.tls.cert else None,
        tls_key=base / doc.tls.key if doc.tls.key else None,
        tls_required=doc.tls.required,
        backend=_backend(doc.backend, base),
        policies=base / doc.policies if doc.policies else None,
        users={name: _user(name, raw, source, text) for name, raw in doc.users.items()},
        limits=Limits(**doc.limits.model_dump()),
        workers=doc.workers,
        log_level=doc.log.level,
        access_log=doc.log.access,
    )


def _backend(raw: str | None, base: Path) -> str | None:
    """The backend URL; a relative DuckDB path is taken from the config file's directory.

    >>> _backend("data/a.duckdb", Path("/etc/paradise")), _backend(":memory:", Path("/"))
    ('/etc/paradise/data/a.duckdb', ':memory:')
    >>> _backend("duckdb:///a.duckdb", Path("/srv"))
    '/srv/a.duckdb'
    """
    if raw is None:
        return None
    from paradise.backends import duckdb_path

    path = duckdb_path(raw)
    if path is None or path == ":memory:" or Path(path).is_absolute():
        return raw
    return str(base / path)


def load_config(path: str | Path) -> ServerConfig:
    """Read and validate a TOML server configuration file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: {exc.reason}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    return parse_config(data, base_dir=path.parent, source=str(path), text=text)


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
