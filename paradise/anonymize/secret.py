"""The server's secret, the per-role keys derived from it, and keyed hashes computed in SQL.

Every random draw that must repeat — seeded noise and PRAM, slicing's stable buckets —
and every keyed pseudonym is a function of a **server-side secret** that no querying
user can read. A draw that a user could recompute from values they see (a seed in the
policy plus the row's values, as ``MD5(seed|values)`` was) is no protection: PRAM
could be undone with certainty for most released rows.

Configuration (server side; the first one found wins):

1. ``paradise.connect(..., secret=...)``;
2. ``paradise.connect(..., secret_file=...)``: a file holding the secret (trailing
   whitespace and newlines are stripped; keep it readable only by the server);
3. the environment variable ``PARADISE_SECRET``;
4. the environment variable ``PARADISE_SECRET_FILE`` (a path, as in 2.);
5. the older, pseudonym-only names ``pseudonym_secret=`` and ``PARADISE_PSEUDONYM_SECRET``
   (they keep deciding the pseudonyms when given, so existing pseudonyms do not change).

A secret has at least :data:`MIN_SECRET_BYTES` bytes (e.g. ``openssl rand -hex 32``).

Without a secret (the decision, stated once): paradise generates a random secret once
per process and logs a warning the first time it is used. It serves only draws that
promise stability *within* a running server and nothing across runs — slicing's stable
buckets. Operators whose policy sets a ``seed`` label (noise, PRAM) promise the same
released values on every run, and pseudonyms promise the same pseudonym on every run;
both are refused without a configured secret, with a message naming ``PARADISE_SECRET``.

Keys. From the secret ``S`` each role gets its own keys, separated by purpose:

* pseudonyms: ``HMAC-SHA256(S, role)`` (:func:`paradise.anonymize.pseudonym.role_key`);
* draws: ``HMAC-SHA256(HMAC-SHA256(S, "paradise/draws"), role)`` (:func:`draw_key`).

A role's draw key therefore tells nothing about another role's, nor about pseudonyms.

The keyed hash in SQL is HMAC-SHA256 exactly as RFC 2104 defines it,
``H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m))``, built from each engine's own SHA-256
(DuckDB ``sha256``, PostgreSQL >= 11 ``sha256(bytea)``, MariaDB/MySQL ``SHA2(x, 256)``;
pgcrypto is not needed). The two key pads are computed here and travel in the
statement as hex literals. Why HMAC and not the cheaper ``H(K ‖ m)``: HMAC is a
pseudorandom function whenever SHA-256's compression function is one (Bellare 2006),
whatever the message format, and it is what pseudonyms (whose full digests are
released) need anyway; ``H(K ‖ m)`` admits length extension whenever a full digest
becomes visible. The cost on DuckDB is about 1 µs per row (30 ms on Adult's 32,561
rows), computed once per row for up to eight draws (:func:`keyed_uniforms`).

The pads are key material: :func:`redact` replaces them by ``<secret>`` wherever SQL is
shown (annotations, ``explain``, the CLI, the proxy's notices, error messages, the
annotations of a materialized copy). A policy may carry ``seed:`` only as a
non-secret *label*: it is mixed into the message, so that two labels give independent
draws, but knowing it does not help anyone compute a draw.

Example:
    >>> key = draw_key(b"0123456789abcdef0123456789abcdef", "analyst")
    >>> import duckdb, hashlib, hmac
    >>> sql = exp.select(hmac_sql(exp.Literal.string("m"), key, "duckdb")).sql("duckdb")
    >>> duckdb.sql(sql).fetchall()[0][0] == hmac.new(key.key, b"m", hashlib.sha256).hexdigest()
    True
    >>> "<secret>" in redact(sql, key.pads) and key.pads[0] not in redact(sql, key.pads)
    True
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import Field
from sqlglot import exp

from paradise.errors import PolicyError, UnsupportedQueryError

__all__ = [
    "MIN_SECRET_BYTES",
    "REDACTED",
    "SECRET_ENV",
    "SECRET_FILE_ENV",
    "DrawKey",
    "SeedLabel",
    "ServerSecret",
    "draw_key",
    "hmac_sql",
    "pads",
    "process_secret",
    "redact",
    "resolve_secret",
    "seeded_key",
    "stable_key",
]

SECRET_ENV = "PARADISE_SECRET"
"""Environment variable holding the server secret."""
SECRET_FILE_ENV = "PARADISE_SECRET_FILE"
"""Environment variable naming a file that holds the server secret."""
LEGACY_SECRET_ENV = "PARADISE_PSEUDONYM_SECRET"
"""The older, pseudonym-only environment variable (still honoured)."""
MIN_SECRET_BYTES = 16
"""Shortest secret accepted (bytes)."""
REDACTED = "<secret>"
"""What shown SQL carries in place of key material."""

SeedLabel = (
    Annotated[int, Field(ge=0, le=2**62)]
    | Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f]*$")]
)
"""A policy's ``seed``: a non-secret label (a number or a short text) mixed into keyed draws."""

_BLOCK = 64  # SHA-256 block size in bytes
_DRAWS = b"paradise/draws"
_HOW = f"set {SECRET_ENV} (or {SECRET_FILE_ENV}) to a random value of 32+ bytes"
_log = logging.getLogger("paradise.secret")


@dataclass(frozen=True)
class ServerSecret:
    """The server secret and where it came from.

    Attributes:
        value: the secret's bytes (never shown: not in ``repr``).
        source: where it came from (``argument``, ``PARADISE_SECRET``, a file path, ...).
        configured: False for the per-process secret paradise generated itself.
    """

    value: bytes = field(repr=False)
    source: str
    configured: bool = True


@dataclass(frozen=True)
class DrawKey:
    """One role's key for keyed draws.

    Attributes:
        key: 32 bytes, ``HMAC(HMAC(secret, "paradise/draws"), role)`` (not in ``repr``).
        configured: False when derived from the per-process generated secret.
    """

    key: bytes = field(repr=False)
    configured: bool = True

    @property
    def pads(self) -> tuple[str, str]:
        """The HMAC inner and outer key pads as hex: the key material in the SQL."""
        return pads(self.key)


def _checked(value: bytes, source: str) -> ServerSecret:
    if len(value) < MIN_SECRET_BYTES:
        raise PolicyError(
            f"server secret from {source}: shorter than {MIN_SECRET_BYTES} bytes; {_HOW}"
        )
    return ServerSecret(value, source)


def _from_file(path: str | Path, source: str) -> ServerSecret:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise PolicyError(
            f"server secret file named by {source}: cannot read it ({exc.strerror}); "
            "check the path and that the server may read it"
        ) from exc
    return _checked(data.rstrip(b" \t\r\n"), source)


def _as_bytes(value: str | bytes) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else value


def resolve_secret(
    secret: str | bytes | None = None,
    secret_file: str | Path | None = None,
    *,
    legacy: str | bytes | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServerSecret | None:
    """The configured server secret (see the module docstring for the order), or None.

    Raises:
        PolicyError: a configured secret is too short, or its file cannot be read.

    >>> resolve_secret(environ={}) is None
    True
    >>> resolve_secret(environ={"PARADISE_SECRET": "x" * 16}).source
    'PARADISE_SECRET'
    >>> resolve_secret(b"short", environ={})
    Traceback (most recent call last):
    ...
    paradise.errors.PolicyError: server secret from argument: shorter than 16 bytes; set PARADISE_SECRET (or PARADISE_SECRET_FILE) to a random value of 32+ bytes
    """  # noqa: E501
    env = os.environ if environ is None else environ
    if secret:
        return _checked(_as_bytes(secret), "argument")
    if secret_file:
        return _from_file(secret_file, "secret_file")
    if env.get(SECRET_ENV):
        return _checked(_as_bytes(env[SECRET_ENV]), SECRET_ENV)
    if env.get(SECRET_FILE_ENV):
        return _from_file(env[SECRET_FILE_ENV], SECRET_FILE_ENV)
    if legacy:
        return _checked(_as_bytes(legacy), "pseudonym_secret")
    if env.get(LEGACY_SECRET_ENV):
        return _checked(_as_bytes(env[LEGACY_SECRET_ENV]), LEGACY_SECRET_ENV)
    return None


_process: ServerSecret | None = None
_warned = False
_lock = threading.Lock()


def process_secret() -> ServerSecret:
    """The secret generated for this process (once; ``configured`` is False)."""
    global _process
    with _lock:
        if _process is None:
            _process = ServerSecret(secrets.token_bytes(32), "generated", configured=False)
        return _process


def draw_key(secret: ServerSecret | bytes, role: str) -> DrawKey:
    """The draw key of ``role``: ``HMAC(HMAC(secret, "paradise/draws"), role)``.

    >>> a, b = draw_key(b"s" * 16, "a"), draw_key(b"s" * 16, "b")
    >>> a.key != b.key and len(a.key) == 32 and "s" not in repr(a)
    True
    """
    if isinstance(secret, ServerSecret):
        value, configured = secret.value, secret.configured
    else:
        value, configured = secret, True
    root = hmac.new(value, _DRAWS, hashlib.sha256).digest()
    return DrawKey(hmac.new(root, role.encode("utf-8"), hashlib.sha256).digest(), configured)


def stable_key(key: DrawKey | None, role: str = "") -> DrawKey:
    """The key for draws that must be stable while the server runs (slicing's buckets).

    ``key`` itself, or — without a configured secret — the key derived from the
    per-process secret, with a warning logged once per process.
    """
    global _warned
    if key is None:
        key = draw_key(process_secret(), role)
    if not key.configured and not _warned:
        _warned = True
        _log.warning(
            "no server secret configured: stable random draws (slicing buckets) use a "
            "secret generated for this process and change when it restarts; %s",
            _HOW,
        )
    return key


def seeded_key(key: DrawKey | None, operator: str, rule: str) -> DrawKey:
    """The key for a policy's seeded draws; refused without a configured secret.

    >>> seeded_key(None, "noise", "tables.t.transform.noise.seed")
    Traceback (most recent call last):
    ...
    paradise.errors.UnsupportedQueryError: unsupported query: noise with a seed needs a server secret: seeded draws repeat on every run and must be keyed by a secret no user can read (rule tables.t.transform.noise.seed). Hint: set PARADISE_SECRET (or PARADISE_SECRET_FILE) to a random value of 32+ bytes, or remove the seed.
    """  # noqa: E501
    if key is None or not key.configured:
        raise UnsupportedQueryError(
            f"{operator} with a seed needs a server secret: seeded draws repeat on every run "
            "and must be keyed by a secret no user can read",
            policy_rule=rule,
            hint=f"{_HOW}, or remove the seed",
        )
    return key


def pads(key: bytes) -> tuple[str, str]:
    """The inner and outer HMAC key pads of ``key`` as hex (RFC 2104)."""
    block = key.ljust(_BLOCK, b"\0")
    inner = bytes(b ^ 0x36 for b in block).hex()
    outer = bytes(b ^ 0x5C for b in block).hex()
    return inner, outer


def _literal(hex_text: str) -> exp.Literal:
    literal = exp.Literal.string(hex_text)
    literal.meta["paradise"] = {"secret": True}
    return literal


def _duckdb(message: exp.Expr, inner: str, outer: str) -> exp.Expr:
    def sha(arg: exp.Expr) -> exp.Expr:
        return exp.Anonymous(this="SHA256", expressions=[arg])

    text = exp.Anonymous(this="ENCODE", expressions=[message])
    first = sha(exp.DPipe(this=exp.Unhex(this=_literal(inner)), expression=text))
    return sha(exp.DPipe(this=exp.Unhex(this=_literal(outer)), expression=exp.Unhex(this=first)))


def _postgres(message: exp.Expr, inner: str, outer: str) -> exp.Expr:
    def bytes_of(hex_text: str) -> exp.Expr:
        return exp.Anonymous(
            this="DECODE", expressions=[_literal(hex_text), exp.Literal.string("hex")]
        )

    text = exp.Anonymous(this="CONVERT_TO", expressions=[message, exp.Literal.string("UTF8")])
    first = exp.Anonymous(
        this="SHA256", expressions=[exp.DPipe(this=bytes_of(inner), expression=text)]
    )
    second = exp.Anonymous(
        this="SHA256", expressions=[exp.DPipe(this=bytes_of(outer), expression=first)]
    )
    return exp.Anonymous(this="ENCODE", expressions=[second, exp.Literal.string("hex")])


def _mysql(message: exp.Expr, inner: str, outer: str) -> exp.Expr:
    def sha(arg: exp.Expr) -> exp.Expr:
        return exp.Anonymous(this="SHA2", expressions=[arg, exp.Literal.number(256)])

    first = sha(exp.Concat(expressions=[exp.Unhex(this=_literal(inner)), message]))
    return sha(exp.Concat(expressions=[exp.Unhex(this=_literal(outer)), exp.Unhex(this=first)]))


_BUILDERS: dict[str, Callable[[exp.Expr, str, str], exp.Expr]] = {
    "duckdb": _duckdb,
    "postgres": _postgres,
    "mysql": _mysql,
}
"""dialect -> HMAC-SHA256 builder (text message, inner pad, outer pad) -> lower-case hex."""


def hmac_sql(message: exp.Expr, key: DrawKey | bytes, dialect: str) -> exp.Expr:
    """``HMAC-SHA256(key, message)`` as 64 lower-case hex digits, computed by the database.

    ``message`` is a text expression (UTF-8 bytes are hashed); NULL gives NULL.
    """
    builder = _BUILDERS.get(dialect)
    if builder is None:
        raise UnsupportedQueryError(
            f"keyed hashes cannot be computed in SQL on {dialect}",
            hint="use duckdb, postgres or mysql",
        )
    inner, outer = pads(key.key if isinstance(key, DrawKey) else key)
    return builder(message, inner, outer)


def redact(text: str, material: Iterable[str]) -> str:
    """``text`` with every piece of key material replaced by ``<secret>``.

    >>> redact("x = 'abc123' OR y = 'abc123'", ["abc123"])
    "x = '<secret>' OR y = '<secret>'"
    """
    for item in material:
        if item:
            text = text.replace(item, REDACTED)
    return text
