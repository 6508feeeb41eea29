"""``privilege_warnings``: the start-up check of ``paradise serve`` against real accounts.

On each server the test creates a login as ``docs/deployment.md`` shows (SELECT on
the protected table only), checks that it draws no warning and cannot read server
files, then grants it a write and checks the warning names the table. The test
superuser (``postgres``/``root``) draws a warning too.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import make_url
from sqlglot import exp

from paradise.backends import connect_backend
from paradise.backends.base import Backend
from paradise.backends.privileges import privilege_warnings, protected_tables
from paradise.errors import BackendError
from paradise.policy import load_policies
from paradise.processor import bundled_policies
from tests.backends.conftest import Database


@pytest.fixture
def protected(server: Database) -> Iterator[str]:
    assert server.admin is not None
    name = f"hb_protected_{secrets.token_hex(3)}"
    backend = server.connect()
    ident = exp.to_identifier(name, quoted=True).sql(backend.dialect)
    backend.run(f"CREATE TABLE {ident} (id INT, name VARCHAR(20))")
    backend.run(f"INSERT INTO {ident} VALUES (1, 'a')")
    try:
        yield name
    finally:
        backend.run(f"DROP TABLE {ident}")
        backend.close()


@pytest.fixture
def least_privilege_login(server: Database, protected: str) -> Iterator[tuple[str, Backend]]:
    """A login with SELECT on the protected table only; ``(role name, its backend)``."""
    admin = server.admin
    assert admin is not None
    user = f"hb_lp_{secrets.token_hex(4)}"
    table = exp.to_identifier(protected, quoted=True).sql(admin.dialect)
    if server.kind == "postgres":
        schema = exp.to_identifier(server.name, quoted=True).sql("postgres")
        admin.run(f'CREATE ROLE "{user}" LOGIN')
        admin.run(f'GRANT USAGE ON SCHEMA {schema} TO "{user}"')
        admin.run(f'GRANT SELECT ON {schema}.{table} TO "{user}"')
        url = make_url(server.url).set(username=user)
        drops = [f'DROP OWNED BY "{user}"', f'DROP ROLE "{user}"']
    else:
        database = exp.to_identifier(server.name, quoted=True).sql("mysql")
        admin.run(f"CREATE USER '{user}'@'%'")
        admin.run(f"GRANT SELECT ON {database}.{table} TO '{user}'@'%'")
        url = make_url(server.url).set(username=user, password=None)
        drops = [f"DROP USER '{user}'@'%'"]
    backend = connect_backend(url.render_as_string(hide_password=False))
    try:
        yield user, backend
    finally:
        backend.close()
        for statement in drops:
            admin.run(statement)


def test_superuser_account_is_flagged(server: Database, protected: str) -> None:
    backend = server.connect()
    try:
        warnings = privilege_warnings(backend, [protected])
    finally:
        backend.close()
    assert warnings
    text = " ".join(warnings)
    assert ("superuser" in text) if server.kind == "postgres" else ("*.*" in text)


def test_least_privilege_login_draws_no_warning_and_reads_no_files(
    server: Database, protected: str, least_privilege_login: tuple[str, Backend]
) -> None:
    admin = server.admin
    assert admin is not None
    user, backend = least_privilege_login
    assert privilege_warnings(backend, [protected]) == []
    t = exp.to_identifier(protected, quoted=True).sql(backend.dialect)
    assert backend.execute(f"SELECT name FROM {t}").rows == [("a",)]
    if server.kind == "postgres":
        with pytest.raises(BackendError) as info:
            backend.execute("SELECT pg_read_file('/etc/hostname')")
        assert info.value.sqlstate == "42501"
    else:  # without the FILE privilege MariaDB answers NULL
        assert backend.execute("SELECT LOAD_FILE('/etc/hostname') AS f").rows == [(None,)]
    with pytest.raises(BackendError):  # and its writable connection cannot write either
        backend.run(f"DELETE FROM {t}")

    if server.kind == "postgres":
        schema = exp.to_identifier(server.name, quoted=True).sql("postgres")
        admin.run(f'GRANT INSERT ON {schema}.{t} TO "{user}"')
    else:
        database = exp.to_identifier(server.name, quoted=True).sql("mysql")
        admin.run(f"GRANT INSERT ON {database}.{t} TO '{user}'@'%'")
    warnings = privilege_warnings(backend, [protected])
    assert len(warnings) == 1 and protected in warnings[0]


def test_protected_tables_are_every_policy_table() -> None:
    policies = load_policies(bundled_policies())
    tables = protected_tables(policies.values())
    assert "adult" in tables
    assert tables == sorted({t for p in policies.values() for t in p.tables} | set(tables))
