"""The server secret: where it comes from, the keys derived from it, and what it refuses."""

from __future__ import annotations

import hashlib
import hmac
import logging

import duckdb
import pytest
from sqlglot import exp

import paradise
from paradise.anonymize import secret as secret_module
from paradise.anonymize.secret import (
    DrawKey,
    draw_key,
    hmac_sql,
    process_secret,
    redact,
    resolve_secret,
    seeded_key,
    stable_key,
)
from paradise.errors import PolicyError, UnsupportedQueryError
from paradise.tools.demo_data import load_demo

S1 = "first server secret, 32 bytes ok"
S2 = "second server secret, different!"


def test_resolution_order(tmp_path) -> None:
    file = tmp_path / "secret"
    file.write_text(S2 + "\n")
    env = {"PARADISE_SECRET_FILE": str(file), "PARADISE_PSEUDONYM_SECRET": "legacy" * 4}
    assert resolve_secret(S1, environ=env).value == S1.encode()
    assert resolve_secret(secret_file=file, environ={}).value == S2.encode()  # newline stripped
    assert resolve_secret(environ={**env, "PARADISE_SECRET": S1}).source == "PARADISE_SECRET"
    assert resolve_secret(environ=env).source == "PARADISE_SECRET_FILE"
    legacy = resolve_secret(environ={"PARADISE_PSEUDONYM_SECRET": "legacy" * 4})
    assert legacy is not None and legacy.source == "PARADISE_PSEUDONYM_SECRET"
    assert resolve_secret(environ={}) is None


def test_bad_secrets_are_refused_without_showing_them(tmp_path) -> None:
    with pytest.raises(PolicyError, match="shorter than 16 bytes; set PARADISE_SECRET") as err:
        resolve_secret(environ={"PARADISE_SECRET": "tiny-secret"})
    assert "tiny-secret" not in str(err.value)
    with pytest.raises(PolicyError, match="cannot read it"):
        resolve_secret(environ={"PARADISE_SECRET_FILE": str(tmp_path / "missing")})


def test_keys_are_per_role_and_per_purpose() -> None:
    a, b = draw_key(S1.encode(), "analyst"), draw_key(S1.encode(), "auditor")
    assert a.key != b.key and a.key == draw_key(S1.encode(), "analyst").key
    assert a.key != draw_key(S2.encode(), "analyst").key
    # the draw key is not the pseudonym key (HMAC(secret, role)) of the same role
    assert a.key != hmac.new(S1.encode(), b"analyst", hashlib.sha256).digest()
    assert S1 not in repr(a) and a.key.hex() not in repr(a)


@pytest.mark.parametrize("message", ["", "m", "x" * 200, "Grüße|\\N|42"])
def test_hmac_in_duckdb_is_rfc_2104(message: str) -> None:
    key = draw_key(S1.encode(), "r")
    sql = exp.select(hmac_sql(exp.Literal.string(message), key, "duckdb")).sql("duckdb")
    want = hmac.new(key.key, message.encode("utf-8"), hashlib.sha256).hexdigest()
    assert duckdb.sql(sql).fetchall()[0][0] == want
    shown = redact(sql, key.pads)
    assert key.pads[0] not in shown and key.pads[1] not in shown and shown.count("<secret>") == 2


def test_seeded_draws_need_a_configured_secret() -> None:
    generated = draw_key(process_secret(), "r")
    assert not generated.configured
    for key in (None, generated):
        with pytest.raises(UnsupportedQueryError, match="PARADISE_SECRET") as err:
            seeded_key(key, "pram", "tables.t.transform.pram.seed")
        assert err.value.policy_rule == "tables.t.transform.pram.seed"
    configured = draw_key(S1.encode(), "r")
    assert seeded_key(configured, "pram", "x") is configured


def test_stable_draws_fall_back_to_the_process_secret_with_one_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secret_module, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="paradise.secret"):
        first = stable_key(None, "r")
        second = stable_key(None, "r")
    assert first.key == second.key and not first.configured
    warnings = [r for r in caplog.records if "PARADISE_SECRET" in r.getMessage()]
    assert len(warnings) == 1
    configured = DrawKey(b"k" * 32)
    assert stable_key(configured) is configured


def test_without_a_secret_seeded_policies_are_refused_and_slicing_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("PARADISE_SECRET", "PARADISE_SECRET_FILE", "PARADISE_PSEUDONYM_SECRET"):
        monkeypatch.delenv(name, raising=False)
    with paradise.connect(":memory:") as proc:
        load_demo(proc)
        with pytest.raises(UnsupportedQueryError, match="noise with a seed needs a server secret"):
            proc.query("SELECT age, fnlwgt FROM adult", role="statistics_office")
        sliced = proc.query("SELECT age, sex FROM adult", role="analyst")
        assert len(sliced) == 32561


def test_secret_file_through_connect(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PARADISE_SECRET", raising=False)
    file = tmp_path / "secret"
    file.write_bytes(S1.encode())
    with paradise.connect(":memory:", secret_file=file) as proc:
        assert proc.secret is not None and proc.secret.value == S1.encode()
        assert proc.draw_key("analyst") == draw_key(S1.encode(), "analyst")
