"""The source fingerprint on every backend: every kind of change moves it, nothing else does."""

from __future__ import annotations

import secrets

from sqlglot import exp

from paradise.release.fingerprint import fingerprint, prepare_source, settle
from tests.backends.conftest import Database


def _ident(name: str, dialect: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect)


def test_every_change_moves_the_fingerprint_and_nothing_else_does(
    database: Database, adult: str
) -> None:
    backend = database.connect()
    d = backend.dialect
    name = f"fp_{secrets.token_hex(3)}"
    t = _ident(name, d)
    backend.run(f"CREATE TABLE {t} AS SELECT * FROM {_ident(adult, d)}")
    schema = backend.schema()

    def rebuilt() -> str:
        """What a build records: the fingerprint after preparing and settling the source."""
        checksum = prepare_source(backend, schema, name)
        settle(backend, schema, name)
        return fingerprint(backend, schema, name, checksum=checksum)

    age, sex, ident = _ident("age", d), _ident("sex", d), _ident("id", d)
    changes = [
        [f"INSERT INTO {t} SELECT * FROM {t} WHERE {ident} < 10"],
        [f"DELETE FROM {t} WHERE {ident} < 5"],
        [f"UPDATE {t} SET {age} = {age} + 1 WHERE {ident} = 20"],
        # the same column of nearby rows again: a segment that had updates before
        [f"UPDATE {t} SET {age} = {age} + 1 WHERE {ident} = 21"],
        # one row deleted and one inserted: the row count stays
        [
            f"DELETE FROM {t} WHERE {ident} = 30",
            f"INSERT INTO {t} SELECT * FROM {t} WHERE {ident} = 31",
        ],
        [f"UPDATE {t} SET {sex} = 'x' WHERE {ident} = 40"],
    ]
    try:
        recorded = rebuilt()
        assert fingerprint(backend, schema, name) == recorded  # reading changes nothing
        backend.execute(f"SELECT {sex}, COUNT(*) FROM {t} GROUP BY {sex}")
        assert fingerprint(backend, schema, name) == recorded
        for change in changes:
            for statement in change:
                backend.run(statement)
            assert fingerprint(backend, schema, name) != recorded, change
            recorded = rebuilt()
            assert fingerprint(backend, schema, name) == recorded, change
    finally:
        backend.run(f"DROP TABLE {t}")
        backend.close()
