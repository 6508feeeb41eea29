"""``paradise user add|list|remove|passwd`` and the proxy configuration's own rules: unknown
roles refused, the file edited in place and replaced in one step, top-level keys after a
users table explained, relative paths taken from the configuration file."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from paradise.cli import cli
from paradise.server.common.auth import verify_password
from paradise.server.common.config import ConfigError, load_config, parse_config

HEAD = '# the proxy\nlisten = ["127.0.0.1:0"]\nbackend = "data/adult.duckdb"\n'


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_add_refuses_an_unknown_role_and_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "paradise.toml"
    result = _run("user", "add", "ana", "--role", "analist", "--password", "pw",
                  "--config", str(config))
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and 'unknown role "analist"' in lines[0] and "analyst" in lines[0]
    assert not config.exists()
    # the role is looked up where the proxy will look: --policies, else the config's policies
    policies = tmp_path / "own"
    policies.mkdir()
    (policies / "nurse.yaml").write_text("role: nurse\ntables:\n  t:\n    columns: {a: insensitive}\n")
    own = _run("user", "add", "bo", "--role", "nurse", "--password", "pw",
               "--policies", str(policies))
    assert own.exit_code == 0 and '[users."bo"]' in own.stdout
    config.write_text('policies = "own"\n')
    assert _run("user", "add", "cy", "--role", "analyst", "--password", "pw",
                "--config", str(config)).exit_code == 2
    assert _run("user", "add", "cy", "--role", "nurse", "--password", "pw",
                "--config", str(config)).exit_code == 0


def test_add_list_passwd_remove(tmp_path: Path) -> None:
    config = tmp_path / "paradise.toml"
    config.write_text(HEAD)
    for name, role in (("ana", "analyst"), ("bo", "public")):
        added = _run("user", "add", name, "--role", role, "--password", f"{name}-pw",
                     "--config", str(config))
        assert added.exit_code == 0, added.output
    assert config.read_text().startswith(HEAD)  # the rest of the file stays as it was
    twice = _run("user", "add", "ana", "--role", "analyst", "--password", "x", "--config",
                 str(config))
    assert twice.exit_code == 2 and "already exists" in twice.stderr
    listed = _run("user", "list", "--config", str(config), "--format", "json")
    assert json.loads(listed.stdout)["rows"] == [
        ["ana", "analyst", "scram-sha-256"], ["bo", "public", "scram-sha-256"]
    ]
    assert "SCRAM" not in listed.stdout  # never the verifiers
    changed = _run("user", "passwd", "ana", "--config", str(config), "--password", "new-pw")
    assert changed.exit_code == 0, changed.output
    users = load_config(config).users
    assert users["ana"].role == "analyst" and users["ana"].scram is not None
    assert verify_password("new-pw", users["ana"].scram)
    assert not verify_password("ana-pw", users["ana"].scram)
    assert users["bo"].scram is not None and verify_password("bo-pw", users["bo"].scram)
    removed = _run("user", "remove", "ana", "--config", str(config))
    assert removed.exit_code == 0
    assert set(load_config(config).users) == {"bo"} and config.read_text().startswith(HEAD)
    assert _run("user", "remove", "ana", "--config", str(config)).exit_code == 2
    assert _run("user", "passwd", "zed", "--config", str(config), "--password", "x").exit_code == 2
    assert [p.name for p in tmp_path.iterdir()] == ["paradise.toml"]  # no temporary files


def test_a_new_config_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    config = tmp_path / "new.toml"
    assert _run("user", "add", "ana", "--role", "analyst", "--password", "pw",
                "--config", str(config)).exit_code == 0
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_top_level_keys_after_a_users_table_are_explained(tmp_path: Path) -> None:
    config = tmp_path / "paradise.toml"
    assert _run("user", "add", "ana", "--role", "analyst", "--password", "pw",
                "--config", str(config)).exit_code == 0
    with config.open("a") as fh:  # the mistake the README's recipe used to make
        fh.write('listen = ["127.0.0.1:0"]\nbackend = "adult.duckdb"\n')
    result = _run("serve", "--config", str(config))
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "users.ana." in lines[0] and "unknown keys" in lines[0]
    assert "before the first [users...] table" in lines[0]


def test_relative_paths_are_relative_to_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "etc"
    here.mkdir()
    config = here / "paradise.toml"
    config.write_text('backend = "data/adult.duckdb"\npolicies = "policies"\n')
    monkeypatch.chdir(tmp_path)
    loaded = load_config("etc/paradise.toml")
    assert loaded.backend == str(here / "data" / "adult.duckdb")
    assert loaded.policies == here / "policies"
    assert parse_config({"backend": "postgresql://u@h/db"}, base_dir=here).backend == (
        "postgresql://u@h/db"
    )
    assert parse_config({"backend": "duckdb:///x.duckdb"}, base_dir=here).backend == str(
        here / "x.duckdb"
    )
    with pytest.raises(ConfigError):
        parse_config({"backend": 5}, base_dir=here)


def test_serve_refuses_a_missing_duckdb_backend(tmp_path: Path) -> None:
    config = tmp_path / "paradise.toml"
    config.write_text('listen = ["127.0.0.1:0"]\nbackend = "typo.duckdb"\n')
    assert _run("user", "add", "ana", "--role", "analyst", "--password", "pw",
                "--config", str(config)).exit_code == 0
    result = _run("serve", "--config", str(config))
    assert result.exit_code == 3
    assert f"database file '{tmp_path / 'typo.duckdb'}' does not exist" in result.stderr
    assert not (tmp_path / "typo.duckdb").exists()
