"""The README documents every CLI command, operator and policy key."""

from __future__ import annotations

from pathlib import Path

import click

from paradise.anonymize.registry import OPERATORS
from paradise.cli import cli
from paradise.policy.model import (
    AggregateRules,
    CellSuppression,
    PrivacyModel,
    RolePolicy,
    TablePolicy,
)
from paradise.policy.release import ReleasePolicy

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = README + "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))


def _commands(group: click.Group, prefix: str = "paradise") -> list[str]:
    names = []
    for name, command in group.commands.items():
        full = f"{prefix} {name}"
        if isinstance(command, click.Group):
            names.extend(_commands(command, full))
        else:
            names.append(full)
    return names


def test_every_cli_command_is_documented() -> None:
    for command in _commands(cli):
        assert f"`{command}" in DOCS, command


def test_every_operator_is_documented() -> None:
    for name in OPERATORS:
        assert f"{name}:" in DOCS, name


def test_every_policy_key_is_documented() -> None:
    for model in (
        RolePolicy, TablePolicy, PrivacyModel, AggregateRules, CellSuppression, ReleasePolicy
    ):
        for name, field in model.model_fields.items():
            key = field.alias or name
            assert f"{key}:" in DOCS, key


def test_readme_has_exactly_two_setup_commands() -> None:
    block = README.split("## Set-up: two commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    assert [line for line in block.strip().splitlines() if line.strip()] == [
        'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && paradise demo',
        "python -m pytest",
    ]


def test_ci_runs_the_readme_test_command() -> None:
    assert "\npython -m pytest\n" in (ROOT / ".ci" / "run").read_text()
