"""Keyed randomness on every backend (issue 13, item 5) and Kim's correlated noise.

* Shown SQL (annotations, notices, ``explain``) never carries the key material, which
  the statement that runs does carry.
* Seeded draws repeat for the same secret and label, and change with either.
* Knowing the seed label and a row's values does not let anyone recompute a draw: an
  attacker who recomputes ``MD5(label|values)``-, ``SHA-256(label|values)``- or
  HMAC-with-the-label-style draws, or uses another secret, does no better than chance,
  while the same attack *with* the server's key undoes PRAM for most rows — which shows
  the attack itself is sound and the test can fail.
* ``correlated2`` keeps the whole covariance matrix of the perturbed columns, checked
  against numpy on bmi/weight/height data.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import pytest

import paradise
from paradise.anonymize.secret import DrawKey, draw_key
from paradise.load import load_file
from paradise.pipeline import BackendAccess, prepare
from paradise.policy import RolePolicy
from tests.backends.conftest import Database

SECRET = "backend test secret: keyed draws, not for production"
OTHER = "another server's secret, also 32+ bytes long"
LABEL = "release-2024"
P_STAY = 0.8
CATEGORIES = ["Female", "Male"]
N_BODY = 20_000


def _policy(role: str, columns: dict[str, str], transform: list[dict], table: str = "adult"):
    return RolePolicy.model_validate(
        {
            "role": role,
            "tables": {
                table: {
                    "columns": columns,
                    "transform": transform,
                    # live: every answer computes the keyed draws in its own SQL (a release
                    # would compute them once, at build time)
                    "release": {"mode": "live", "acknowledge_averaging": True},
                }
            },
        }
    )


def _pram(label: str | None = LABEL) -> RolePolicy:
    matrix = [[P_STAY, 1 - P_STAY], [1 - P_STAY, P_STAY]]
    step: dict = {"columns": {"sex": {"categories": CATEGORIES, "matrix": matrix}}}
    if label is not None:
        step["seed"] = label
    return _policy(
        "pram_probe",
        {"id": "insensitive", "race": "insensitive", "sex": "quasi_identifier"},
        [{"pram": step}],
    )


def _noise(label: str = LABEL) -> RolePolicy:
    return _policy(
        "noise_probe",
        {"id": "insensitive", "age": "insensitive", "fnlwgt": "insensitive"},
        [{"noise": {"columns": ["fnlwgt"], "method": "correlated2", "alpha": 0.5, "seed": label}}],
    )


@pytest.fixture
def connect(database: Database, adult: str) -> Iterator[Callable[..., paradise.Processor]]:
    """Open processors over the session's backend with the given policies and secret."""
    opened: list[paradise.Processor] = []

    def open_(*policies: RolePolicy, secret: str = SECRET) -> paradise.Processor:
        proc = paradise.connect(
            database.connect(), policies={p.role: p for p in policies}, secret=secret
        )
        opened.append(proc)
        return proc

    yield open_
    for proc in opened:
        proc.close()


def _frame(proc: paradise.Processor, sql: str, role: str) -> pd.DataFrame:
    return proc.query(sql, role=role).to_pandas().set_index("id").sort_index()


def _stored(proc: paradise.Processor, columns: str) -> pd.DataFrame:
    rows = proc.backend.execute(f"SELECT {columns} FROM adult").rows
    frame = pd.DataFrame(rows, columns=[c.strip() for c in columns.split(",")])
    return frame.set_index("id").sort_index()


def _visible(proc: paradise.Processor, policy: RolePolicy) -> list[str]:
    """The anonymized relation's columns, in catalog order (the order draws hash them in)."""
    catalog = proc.catalog()["adult"]
    return list(policy.tables["adult"].visible_columns(catalog))


# --- shown SQL ---------------------------------------------------------------------------
def test_shown_sql_never_holds_key_material(connect) -> None:
    proc = connect(_pram(), _noise())
    for role, sql in (
        ("pram_probe", "SELECT id, race, sex FROM adult"),
        ("noise_probe", "SELECT id, fnlwgt FROM adult WHERE age > 30"),
    ):
        material = draw_key(SECRET.encode(), role).pads
        ran = prepare(sql, proc.context(role), database=BackendAccess(proc.backend)).sql
        assert all(m in ran for m in material)  # the statement itself is keyed
        result = proc.query(sql, role=role)
        explained = proc.explain(sql, role=role)
        shown = [
            result.annotations.sql,
            json.dumps(result.annotations.to_dict(), default=str),
            *result.annotations.notices(),
            explained.sql,
            repr(explained),
            "\n".join(explained.plan),
        ]
        for text in shown:
            for secret in (*material, SECRET, SECRET.encode().hex()):
                assert secret not in text
        assert "<secret>" in result.annotations.sql and "<secret>" in explained.sql
        assert LABEL in explained.sql  # the label is not a secret


# --- repeatability -----------------------------------------------------------------------
def test_draws_repeat_for_one_secret_and_label_and_change_with_either(connect) -> None:
    sql = "SELECT id, race, sex FROM adult"
    first = _frame(connect(_pram()), sql, "pram_probe")["sex"]
    again = _frame(connect(_pram()), sql, "pram_probe")["sex"]
    other_secret = _frame(connect(_pram(), secret=OTHER), sql, "pram_probe")["sex"]
    other_label = _frame(connect(_pram("release-2025")), sql, "pram_probe")["sex"]
    assert first.equals(again)
    # two independent PRAM draws with p = 0.8 disagree on 2·0.8·0.2 = 32 % of the rows
    for other in (other_secret, other_label):
        disagree = (first != other).mean()
        assert abs(disagree - 2 * P_STAY * (1 - P_STAY)) < 0.02
    noise = "SELECT id, fnlwgt FROM adult"
    a = _frame(connect(_noise()), noise, "noise_probe")["fnlwgt"]
    b = _frame(connect(_noise()), noise, "noise_probe")["fnlwgt"]
    c = _frame(connect(_noise(), secret=OTHER), noise, "noise_probe")["fnlwgt"]
    assert np.allclose(a, b, rtol=1e-12) and not np.allclose(a, c)


# --- attacks -----------------------------------------------------------------------------
Draw = Callable[[str], tuple[float, float]]
"""message -> the first two 32-bit uniforms an attacker derives from it."""


def _uniforms(digest: bytes) -> tuple[float, float]:
    first, second = int.from_bytes(digest[:4], "big"), int.from_bytes(digest[4:8], "big")
    return (first + 0.5) / 2**32, (second + 0.5) / 2**32


def _hex_uniforms(hex_digest: str) -> tuple[float, float]:
    return _uniforms(bytes.fromhex(hex_digest))


def _attackers(key: DrawKey) -> dict[str, Draw]:
    """Ways to compute a row's draws; only ``server key`` is what the database does."""
    other = draw_key(OTHER.encode(), "x")
    return {
        "server key": lambda m: _hex_uniforms(hmac.new(key.key, m.encode(), "sha256").hexdigest()),
        "md5(label|values)": lambda m: _uniforms(hashlib.md5(m.encode()).digest()),
        "sha256(label|values)": lambda m: _uniforms(hashlib.sha256(m.encode()).digest()),
        "hmac(label, values)": lambda m: _uniforms(
            hmac.new(LABEL.encode(), m.encode(), "sha256").digest()
        ),
        "another secret": lambda m: _uniforms(hmac.new(other.key, m.encode(), "sha256").digest()),
    }


def _pram_release(origin: str, u: float) -> str:
    """The released category for ``origin`` and uniform ``u`` (the operator's CASE)."""
    stay_first = CATEGORIES.index(origin) == 0
    threshold = P_STAY if stay_first else 1 - P_STAY
    return CATEGORIES[0] if u < threshold else CATEGORIES[1]


def test_pram_cannot_be_undone_without_the_secret(connect) -> None:
    """Per released row, the attacker tries both original categories and keeps those whose
    recomputed draw explains the release. With the server's key one candidate is left for
    about 68 % of the rows and it is always right (PRAM undone with certainty, as with the
    old public ``MD5(seed|values)``); with anything an attacker can know, the "certain"
    answers are no better than guessing the released value (80 %), and the rows claimed
    as changed are changed at the base rate (20 %)."""
    policy = _pram()
    proc = connect(policy)
    released = _frame(proc, "SELECT id, race, sex FROM adult", "pram_probe")
    stored = _stored(proc, "id, race, sex")
    columns = _visible(proc, policy)
    assert set(columns) == {"id", "race", "sex"}
    truth = stored.loc[released.index, "sex"]
    changed = released["sex"] != truth
    assert abs(changed.mean() - (1 - P_STAY)) < 0.01
    key = draw_key(SECRET.encode(), "pram_probe")
    n = len(released)
    rows = []  # (row id, released category, {candidate origin: message})
    for row_id, race, sex in zip(released.index, released["race"], released["sex"], strict=True):
        messages = {}
        for origin in CATEGORIES:
            values = {"id": str(row_id), "race": str(race), "sex": origin}
            messages[origin] = (
                f"{LABEL}|pram|sex|0" + "".join(f"|{values[c]}" for c in columns) + "|1"
            )
        rows.append((row_id, sex, messages))
    for name, draw in _attackers(key).items():
        certain = right = claims = hits = 0
        for row_id, sex, messages in rows:
            consistent = [
                origin
                for origin, message in messages.items()
                if _pram_release(origin, draw(message)[0]) == sex
            ]
            if len(consistent) != 1:
                continue
            certain += 1
            right += consistent[0] == truth.loc[row_id]
            if consistent[0] != sex:
                claims += 1  # "this row was changed"
                hits += bool(changed.loc[row_id])
        precision, changed_rate = right / certain, hits / claims
        if name == "server key":
            assert certain > 0.6 * n and precision == 1.0
            assert claims > 0.02 * n and changed_rate == 1.0
            continue
        assert precision < P_STAY + 5 * math.sqrt(P_STAY * (1 - P_STAY) / certain), name
        base = 1 - P_STAY
        assert claims > 0.02 * n
        assert abs(changed_rate - base) < 5 * math.sqrt(base * (1 - base) / claims), name


def test_noise_cannot_be_recomputed_without_the_secret(connect) -> None:
    """The standard normal of each row, recovered from the released value, correlates
    perfectly with the draw under the server key and not at all with the others."""
    policy = _noise()
    proc = connect(policy)
    released = _frame(proc, "SELECT id, age, fnlwgt FROM adult", "noise_probe")
    stored = _stored(proc, "id, age, fnlwgt")
    columns = _visible(proc, policy)
    x = stored["fnlwgt"].astype(float)
    alpha, d = 0.5, math.sqrt(1 - 0.25)
    z = (released["fnlwgt"] - d * x - (1 - d) * x.mean()) / (alpha * x.std(ddof=1))
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
    key = draw_key(SECRET.encode(), "noise_probe")
    for name, draw in _attackers(key).items():
        guesses = []
        for row_id, age, fnlwgt in zip(stored.index, stored["age"], stored["fnlwgt"], strict=True):
            values = {"id": str(row_id), "age": str(age), "fnlwgt": str(fnlwgt)}
            message = f"{LABEL}|noise|fnlwgt|0" + "".join(f"|{values[c]}" for c in columns) + "|1"
            u1, u2 = draw(message)
            guesses.append(math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2))
        r = np.corrcoef(z.to_numpy(), np.array(guesses))[0, 1]
        if name == "server key":
            assert r > 0.999
        else:
            assert abs(r) < 5 / math.sqrt(len(z)), name


# --- correlated2 keeps the covariance matrix ---------------------------------------------
@pytest.fixture
def body(database: Database, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """bmi/weight/height of 20,000 generated people (correlated, skewed), loaded as ``body``."""
    rng = np.random.default_rng(13)
    height = rng.normal(1.72, 0.09, N_BODY)
    bmi = np.exp(rng.normal(np.log(25.5), 0.16, N_BODY) + 0.8 * (height - 1.72))
    weight = bmi * height**2
    frame = pd.DataFrame(
        {
            "id": np.arange(1, N_BODY + 1),
            "height": height.round(3),
            "weight": weight.round(2),
            "bmi": bmi.round(3),
        }
    )
    path = tmp_path_factory.mktemp("body") / "body.csv"
    frame.to_csv(path, index=False)
    loader = database.connect()
    try:
        load_file(loader, path, "body", replace=True)
    finally:
        loader.close()
    return frame.set_index("id")


@pytest.mark.parametrize("alpha", [0.5, 0.9])
def test_correlated2_keeps_the_covariance_matrix(connect, body, alpha: float) -> None:
    columns = ["height", "weight", "bmi"]
    policy = _policy(
        "body_noise",
        {"id": "insensitive", **{c: "insensitive" for c in columns}},
        [{"noise": {"columns": columns, "method": "correlated2", "alpha": alpha}}],
        table="body",
    )
    proc = connect(policy)
    released = proc.query("SELECT * FROM body", role="body_noise").to_pandas().set_index("id")
    released = released.sort_index()[columns].astype(float).to_numpy()
    original = body.sort_index()[columns].to_numpy()
    before, after = np.cov(original, rowvar=False), np.cov(released, rowvar=False)
    scale = np.sqrt(np.outer(np.diag(before), np.diag(before)))
    # every entry, relative to sd_i·sd_j; per-column noise would shrink the off-diagonal
    # entries by 1 - alpha²: 0.25·corr (alpha 0.5) and 0.81·corr (alpha 0.9)
    assert np.abs((after - before) / scale).max() < 0.03
    assert np.allclose(released.mean(axis=0), original.mean(axis=0), rtol=0.005)
    corr = np.corrcoef(original[:, 1], original[:, 2])[0, 1]
    assert corr > 0.8 and alpha**2 * corr > 0.2  # the old method is outside the band
    # the values are perturbed: each one's correlation with its original is d
    d = math.sqrt(1 - alpha**2)
    for j in range(len(columns)):
        r = np.corrcoef(original[:, j], released[:, j])[0, 1]
        assert abs(r - d) < 0.02
