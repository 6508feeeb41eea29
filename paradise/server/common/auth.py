"""Password authentication for the proxy: SCRAM-SHA-256 (RFC 5802 / RFC 7677), MD5, cleartext.

paradise keeps its own user table with salted SCRAM verifiers in PostgreSQL's
format ``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>``, so the
proxy never stores (and, with SCRAM, never sees) a password. Everything here is
pure computation; the session feeds client bytes in and sends the answers.

Example:
    >>> verifier = hash_password("pencil", salt=b"0123456789abcdef", iterations=4096)
    >>> verifier.startswith("SCRAM-SHA-256$4096:MDEyMzQ1Njc4OWFiY2RlZg==$")
    True
    >>> stored = ScramVerifier.parse(verifier)
    >>> verify_password("pencil", stored), verify_password("pen", stored)
    (True, False)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import stringprep
import unicodedata
from dataclasses import dataclass

__all__ = [
    "SCRAM_MECHANISM",
    "AuthFailed",
    "ScramExchange",
    "ScramVerifier",
    "check_md5_response",
    "hash_password",
    "md5_password_hash",
    "mock_verifier",
    "mysql_native_password_hash",
    "parse_sasl_initial_response",
    "saslprep",
    "verify_password",
]

SCRAM_MECHANISM = "SCRAM-SHA-256"
DEFAULT_ITERATIONS = 4096


class AuthFailed(Exception):
    """The client's credentials or SASL messages are wrong (reported as SQLSTATE 28P01)."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def saslprep(password: str) -> str:
    """Normalize a password with SASLprep (RFC 4013); like PostgreSQL, keep it raw if that fails.

    Example:
        >>> saslprep("I\\u00adX"), saslprep("\\u2168"), saslprep("a\\u0007")
        ('IX', 'IX', 'a\\x07')
    """
    mapped = "".join(
        " " if stringprep.in_table_c12(c) else c for c in password if not stringprep.in_table_b1(c)
    )
    text = unicodedata.normalize("NFKC", mapped)
    prohibited = (
        stringprep.in_table_c12, stringprep.in_table_c21_c22, stringprep.in_table_c3,
        stringprep.in_table_c4, stringprep.in_table_c5, stringprep.in_table_c6,
        stringprep.in_table_c7, stringprep.in_table_c8, stringprep.in_table_c9,
        stringprep.in_table_a1,
    )  # fmt: skip
    if any(check(c) for c in text for check in prohibited):
        return password
    if any(stringprep.in_table_d1(c) for c in text) and (
        any(stringprep.in_table_d2(c) for c in text)
        or not (stringprep.in_table_d1(text[0]) and stringprep.in_table_d1(text[-1]))
    ):
        return password
    return text


def _salted_password(password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", saslprep(password).encode("utf-8"), salt, iterations)


@dataclass(frozen=True, slots=True)
class ScramVerifier:
    """The stored secret of one user: enough to check a proof, not to log in."""

    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    @classmethod
    def parse(cls, text: str) -> ScramVerifier:
        """Read PostgreSQL's ``SCRAM-SHA-256$iter:salt$StoredKey:ServerKey`` form.

        Raises:
            ValueError: the text is not such a verifier.
        """
        try:
            mechanism, params, keys = text.split("$")
            iterations, salt = params.split(":")
            stored, server = keys.split(":")
            verifier = cls(int(iterations), _unb64(salt), _unb64(stored), _unb64(server))
        except (ValueError, TypeError) as exc:
            raise ValueError("not a SCRAM-SHA-256 verifier") from exc
        if (
            mechanism != SCRAM_MECHANISM
            or verifier.iterations < 1
            or len(verifier.stored_key) != 32
        ):
            raise ValueError("not a SCRAM-SHA-256 verifier")
        return verifier

    def __str__(self) -> str:
        return (
            f"{SCRAM_MECHANISM}${self.iterations}:{_b64(self.salt)}"
            f"${_b64(self.stored_key)}:{_b64(self.server_key)}"
        )

    @classmethod
    def from_password(cls, password: str, salt: bytes, iterations: int) -> ScramVerifier:
        salted = _salted_password(password, salt, iterations)
        stored = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
        return cls(iterations, salt, stored, _hmac(salted, b"Server Key"))


def hash_password(
    password: str, *, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> str:
    """A new salted SCRAM-SHA-256 verifier for ``paradise user add`` (16 random salt bytes)."""
    return str(ScramVerifier.from_password(password, salt or os.urandom(16), iterations))


def verify_password(password: str, verifier: ScramVerifier) -> bool:
    """Check a cleartext password against a stored verifier (constant-time compare)."""
    candidate = ScramVerifier.from_password(password, verifier.salt, verifier.iterations)
    return hmac.compare_digest(candidate.stored_key, verifier.stored_key)


def md5_password_hash(password: str, user: str) -> str:
    """PostgreSQL's legacy ``md5`` + md5(password + user) hash, for users allowed MD5 auth.

    Example:
        >>> md5_password_hash("pencil", "user")
        'md520c46e3762c864548e296b33c3406aa9'
    """
    return "md5" + hashlib.md5((password + user).encode("utf-8")).hexdigest()


def mysql_native_password_hash(password: str) -> str:
    """MySQL's ``mysql_native_password`` stored hash: ``*`` + upper-case hex SHA1(SHA1(password)).

    Only for users allowed to log in through the MySQL listener (``mysql-native``); like the
    stored hash of a MySQL server it suffices to check a login but not to log in.

    Example:
        >>> mysql_native_password_hash("pencil")
        '*7614BE58636C810A9D8970A50B3B2A78450413E4'
    """
    inner = hashlib.sha1(password.encode("utf-8")).digest()
    return "*" + hashlib.sha1(inner).hexdigest().upper()


def check_md5_response(response: bytes, md5_hash: str, salt: bytes) -> bool:
    """Check the client's ``md5`` + md5(md5hash + salt) answer to an MD5 challenge."""
    expected = "md5" + hashlib.md5(md5_hash[3:].encode("ascii") + salt).hexdigest()
    return hmac.compare_digest(response.rstrip(b"\x00"), expected.encode("ascii"))


def mock_verifier(user: str, secret: bytes) -> ScramVerifier:
    """A stable fake verifier for an unknown user, so SCRAM runs to the end and fails the same way.

    The salt depends only on the user name and a per-server secret, so repeated attempts
    cannot tell an unknown user from a known one (PostgreSQL's mock authentication).
    """
    digest = hmac.new(secret, b"mock-salt:" + user.encode("utf-8"), hashlib.sha256).digest()
    return ScramVerifier(DEFAULT_ITERATIONS, digest[:16], os.urandom(32), os.urandom(32))


def parse_sasl_initial_response(data: bytes) -> tuple[str, bytes]:
    """Split a SASLInitialResponse payload into (mechanism, client-first-message).

    Raises:
        AuthFailed: the payload is malformed.
    """
    end = data.find(b"\x00")
    if end < 0 or len(data) < end + 5:
        raise AuthFailed("malformed SASLInitialResponse")
    mechanism = data[:end].decode("ascii", "replace")
    length = int.from_bytes(data[end + 1 : end + 5], "big", signed=True)
    body = data[end + 5 :]
    if length != len(body):
        raise AuthFailed("malformed SASLInitialResponse")
    return mechanism, body


def _attributes(message: str) -> list[tuple[str, str]]:
    pairs = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise AuthFailed("malformed SCRAM message")
        pairs.append((part[0], part[2:]))
    return pairs


class ScramExchange:
    """Server side of one SCRAM-SHA-256 exchange (no channel binding), as a two-step object.

    Example (RFC 7677 section 3):
        >>> v = ScramVerifier.from_password("pencil", _unb64("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096)
        >>> x = ScramExchange(v, server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
        >>> x.server_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
        b'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096'
        >>> x.server_final(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        ...                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
        b'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4='
    """

    def __init__(
        self, verifier: ScramVerifier, *, server_nonce: str | None = None, mock: bool = False
    ) -> None:
        self._verifier = verifier
        self._server_nonce = server_nonce or _b64(os.urandom(18))
        self._mock = mock
        self._gs2_header = ""
        self._nonce = ""
        self._auth_prefix = ""

    def server_first(self, client_first: bytes) -> bytes:
        """Answer the client-first-message with the server-first-message."""
        try:
            text = client_first.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AuthFailed("malformed SCRAM message") from exc
        flag, authzid, bare = (text.split(",", 2) + ["", ""])[:3]
        if flag not in ("n", "y") or authzid:
            # "p" asks for channel binding, which is not offered; authzid is not supported.
            raise AuthFailed("unsupported SCRAM channel binding or authorization identity")
        attrs = _attributes(bare)
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise AuthFailed("malformed SCRAM client-first-message")
        if any(key == "m" for key, _ in attrs):
            raise AuthFailed("unsupported SCRAM extension")
        self._gs2_header = f"{flag},{authzid},"
        self._nonce = attrs[1][1] + self._server_nonce
        v = self._verifier
        server_first = f"r={self._nonce},s={_b64(v.salt)},i={v.iterations}"
        self._auth_prefix = f"{bare},{server_first},"
        return server_first.encode("ascii")

    def server_final(self, client_final: bytes) -> bytes:
        """Check the proof; return the server-final-message or raise :class:`AuthFailed`."""
        if not self._auth_prefix:
            raise AuthFailed("SCRAM messages out of order")
        try:
            text = client_final.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AuthFailed("malformed SCRAM message") from exc
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        attrs = dict(_attributes(without_proof)) if sep else {}
        if attrs.get("c") != _b64(self._gs2_header.encode()) or attrs.get("r") != self._nonce:
            raise AuthFailed("SCRAM channel binding or nonce mismatch")
        try:
            proof = _unb64(proof_b64)
        except ValueError as exc:
            raise AuthFailed("malformed SCRAM proof") from exc
        auth_message = (self._auth_prefix + without_proof).encode("utf-8")
        v = self._verifier
        signature = _hmac(v.stored_key, auth_message)
        if len(proof) != len(signature):
            raise AuthFailed("malformed SCRAM proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        valid = hmac.compare_digest(hashlib.sha256(client_key).digest(), v.stored_key)
        if self._mock or not valid:
            raise AuthFailed("password authentication failed")
        return b"v=" + _b64(_hmac(v.server_key, auth_message)).encode("ascii")
