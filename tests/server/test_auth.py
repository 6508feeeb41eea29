"""SCRAM-SHA-256 against RFC 7677's test vector, MD5, cleartext, verifiers and config."""

from __future__ import annotations

import base64
import tomllib

import pytest

from paradise.server.common.auth import (
    AuthFailed,
    ScramExchange,
    ScramVerifier,
    check_md5_response,
    hash_password,
    md5_password_hash,
    mock_verifier,
    parse_sasl_initial_response,
    saslprep,
    verify_password,
)
from paradise.server.common.config import ConfigError, load_config, parse_config, user_toml

pytestmark = pytest.mark.timeout(30)

# RFC 7677 section 3
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


@pytest.fixture
def verifier() -> ScramVerifier:
    return ScramVerifier.from_password("pencil", SALT, 4096)


def test_rfc7677_exchange(verifier: ScramVerifier) -> None:
    exchange = ScramExchange(verifier, server_nonce=SERVER_NONCE)
    assert exchange.server_first(CLIENT_FIRST) == SERVER_FIRST
    assert exchange.server_final(CLIENT_FINAL) == SERVER_FINAL


def test_rfc7677_exchange_from_stored_verifier_text(verifier: ScramVerifier) -> None:
    text = hash_password("pencil", salt=SALT, iterations=4096)
    assert text == str(verifier)
    assert text.startswith("SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$")
    exchange = ScramExchange(ScramVerifier.parse(text), server_nonce=SERVER_NONCE)
    exchange.server_first(CLIENT_FIRST)
    assert exchange.server_final(CLIENT_FINAL) == SERVER_FINAL


def test_wrong_password_fails(verifier: ScramVerifier) -> None:
    wrong = ScramVerifier.from_password("pencil2", SALT, 4096)
    exchange = ScramExchange(wrong, server_nonce=SERVER_NONCE)
    exchange.server_first(CLIENT_FIRST)
    with pytest.raises(AuthFailed):
        exchange.server_final(CLIENT_FINAL)


@pytest.mark.parametrize(
    "client_final",
    [
        CLIENT_FINAL.replace(b"c=biws", b"c=eSws"),  # gs2 header mismatch
        CLIENT_FINAL.replace(b"r=rOpr", b"r=xOpr"),  # nonce mismatch
        CLIENT_FINAL[:-4] + b"AAA=",  # proof tampered
        CLIENT_FINAL.replace(b"p=", b"q="),  # no proof
        b"garbage",
    ],
)
def test_tampered_client_final_fails(verifier: ScramVerifier, client_final: bytes) -> None:
    exchange = ScramExchange(verifier, server_nonce=SERVER_NONCE)
    exchange.server_first(CLIENT_FIRST)
    with pytest.raises(AuthFailed):
        exchange.server_final(client_final)


@pytest.mark.parametrize(
    "client_first",
    [
        b"p=tls-server-end-point,,n=user,r=abc",  # channel binding is not offered
        b"n,a=admin,n=user,r=abc",  # authzid
        b"n,,n=user",  # no nonce
        b"n,,m=ext,n=user,r=abc",  # mandatory extension
        b"\xff\xfe",
    ],
)
def test_bad_client_first_fails(verifier: ScramVerifier, client_first: bytes) -> None:
    with pytest.raises(AuthFailed):
        ScramExchange(verifier).server_first(client_first)


def test_client_supporting_channel_binding_is_accepted_without_it(verifier: ScramVerifier) -> None:
    exchange = ScramExchange(verifier, server_nonce="s")
    assert exchange.server_first(b"y,,n=,r=c").startswith(b"r=cs,")


def test_final_before_first_fails(verifier: ScramVerifier) -> None:
    with pytest.raises(AuthFailed):
        ScramExchange(verifier).server_final(CLIENT_FINAL)


def test_mock_exchange_for_unknown_user_always_fails_with_stable_salt() -> None:
    secret = b"k" * 32
    first, second = mock_verifier("nobody", secret), mock_verifier("nobody", secret)
    assert first.salt == second.salt and first.salt != mock_verifier("other", secret).salt
    exchange = ScramExchange(first, server_nonce=SERVER_NONCE, mock=True)
    exchange.server_first(CLIENT_FIRST)
    with pytest.raises(AuthFailed):
        exchange.server_final(CLIENT_FINAL)


def test_sasl_initial_response_parsing() -> None:
    payload = b"SCRAM-SHA-256\x00" + len(CLIENT_FIRST).to_bytes(4, "big") + CLIENT_FIRST
    assert parse_sasl_initial_response(payload) == ("SCRAM-SHA-256", CLIENT_FIRST)
    with pytest.raises(AuthFailed):
        parse_sasl_initial_response(b"SCRAM-SHA-256\x00\x00\x00\x00\x09short")


def test_cleartext_verification_and_salt_uniqueness() -> None:
    first, second = hash_password("s3cret"), hash_password("s3cret")
    assert first != second  # random salt
    assert verify_password("s3cret", ScramVerifier.parse(first))
    assert not verify_password("s3cret ", ScramVerifier.parse(first))


def test_md5() -> None:
    stored = md5_password_hash("pencil", "mo")
    salt = b"\x01\x02\x03\x04"
    import hashlib

    response = b"md5" + hashlib.md5(stored[3:].encode() + salt).hexdigest().encode() + b"\x00"
    assert check_md5_response(response, stored, salt)
    assert not check_md5_response(response, stored, b"\x00\x00\x00\x00")


def test_saslprep() -> None:
    assert saslprep("user\u00a0name") == "user name"  # non-ASCII space -> space
    assert saslprep("a\u200bb") == "ab"  # mapped to nothing
    assert saslprep("\u0627\u0031") == "\u0627\u0031"  # bidi failure: keep raw (PostgreSQL)


@pytest.mark.parametrize(
    "text",
    ["md5abc", "SCRAM-SHA-256$x:abc$def:ghi", "SCRAM-SHA-1$4096:YQ==$YQ==:YQ==", ""],
)
def test_invalid_verifiers(text: str) -> None:
    with pytest.raises(ValueError):
        ScramVerifier.parse(text)


def test_user_toml_round_trips_through_config(tmp_path: object) -> None:
    block = user_toml("ana", "pencil", "analyst", auth_methods=("scram-sha-256", "md5"))
    config = parse_config(tomllib.loads(block))
    user = config.users["ana"]
    assert user.role == "analyst" and user.auth_methods == ("scram-sha-256", "md5")
    assert user.scram is not None and verify_password("pencil", user.scram)
    assert user.md5_hash == md5_password_hash("pencil", "ana")


def test_load_config_file(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "paradise.toml"  # type: ignore[operator]
    path.write_text(
        'listen = ["127.0.0.1:6543", "[::1]:6544"]\nbackend = "duckdb:///x.duckdb"\n'
        'policies = "policies"\n[tls]\ncert = "c.pem"\nkey = "k.pem"\n'
        "[limits]\nmax_concurrent_queries = 4\nquery_timeout_seconds = 2.5\n"
        + user_toml("ana", "pw", "analyst")
    )
    config = load_config(path)
    assert config.listen == (("127.0.0.1", 6543), ("::1", 6544))
    assert config.tls_cert == path.parent / "c.pem" and config.tls_enabled
    assert config.limits.max_concurrent_queries == 4
    assert config.limits.query_timeout_seconds == 2.5


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"listen": "nohost"}, "listen"),
        ({"users": {"a": {"role": "r", "password": "plain"}}}, "users.a.password"),
        ({"users": {"a": {"role": "r"}}}, "required for scram"),
        ({"users": {"a": {"password": hash_password("x")}}}, "users.a.role"),
        ({"users": {"a": {"role": "r", "auth_methods": ["trust"]}}}, "auth_methods"),
        ({"limits": {"max_result_rows": -1}}, "limits.max_result_rows"),
        ({"tls": {"cert": "c.pem"}}, "together"),
        ({"bogus": 1}, "unknown keys"),
    ],
)
def test_config_errors_name_the_key(data: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="paradise.toml")
    assert fragment in str(info.value) and str(info.value).startswith("paradise.toml")


@pytest.mark.parametrize("password", ["pencil", "pässwört", "a" * 100])
def test_scram_interoperates_with_scramp(password: str) -> None:
    """The proxy's SCRAM-SHA-256 against scramp, an independent implementation.

    scramp's server refuses the empty user name libpq sends (``n=,``), so the proxy keeps
    its own exchange; scramp checks it from both sides: scramp derives the same stored
    keys from the password, and scramp's client logs in to the proxy's exchange.
    """
    from scramp import ScramClient, ScramMechanism

    salt = b"0123456789abcdef"
    verifier = ScramVerifier.from_password(password, salt, 4096)
    _salt, stored_key, server_key, iterations = ScramMechanism("SCRAM-SHA-256").make_auth_info(
        password, iteration_count=4096, salt=salt
    )
    assert (verifier.stored_key, verifier.server_key, verifier.iterations) == (
        stored_key, server_key, iterations,
    )  # fmt: skip
    client = ScramClient(["SCRAM-SHA-256"], "ana", password)
    exchange = ScramExchange(verifier)
    client.set_server_first(exchange.server_first(client.get_client_first().encode()).decode())
    final = exchange.server_final(client.get_client_final().encode())
    client.set_server_final(final.decode())  # raises if the server's signature is wrong
    wrong = ScramClient(["SCRAM-SHA-256"], "ana", password + "x")
    exchange = ScramExchange(verifier)
    wrong.set_server_first(exchange.server_first(wrong.get_client_first().encode()).decode())
    with pytest.raises(AuthFailed):
        exchange.server_final(wrong.get_client_final().encode())
