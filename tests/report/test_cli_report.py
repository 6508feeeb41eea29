"""``paradise report`` from the command line: the summary, --compare with --role/--variants."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import paradise
from paradise.cli import cli


@pytest.fixture(scope="module")
def policy_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two copies of the bundled policies; in the second, public asks for k = 20."""
    root = tmp_path_factory.mktemp("dirs")
    a, b = root / "strict" / "policies", root / "loose" / "policies"
    shutil.copytree(paradise.bundled_policies(), a)
    shutil.copytree(paradise.bundled_policies(), b)
    public = yaml.safe_load((b / "public.yaml").read_text())
    public["tables"]["adult"]["privacy"]["k"] = 20
    (b / "public.yaml").write_text(yaml.safe_dump(public, sort_keys=False))
    return a, b


def _invoke(*args: str):
    return CliRunner().invoke(cli, ["report", "--demo", "--table", "adult", *args])


def test_summary_has_one_verdict_per_figure(tmp_path: Path) -> None:
    res = _invoke("--role", "public", "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("adult as role public receives it: 32,561 rows; policy k = 10")
    m = re.fullmatch(r"ok   Smallest group of look-alike records: (\d+) records — every "
                     r"combination within each column group is shared by at least \1 records; "
                     r"the policy asks for 10", lines[1])
    assert m is not None and int(m.group(1)) >= 10, lines[1]
    assert len(lines) <= 20
    assert all(ln[:4] in ("ok  ", "FAIL", "info", "n/a ") for ln in lines[1:])
    assert not any(re.search(r"\d\.\d{5,}|\de-\d", ln) for ln in lines)
    assert (tmp_path / "adult-public.html").exists() and (tmp_path / "adult-public.json").exists()


def test_a_policy_that_is_not_met_says_why(tmp_path: Path, adult) -> None:
    res = _invoke("--role", "analyst", "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    k_line = next(ln for ln in res.stdout.splitlines() if "Smallest group" in ln)
    assert k_line.startswith("FAIL")
    # independent recomputation: slicing keeps each column group's combinations, so the
    # records in groups below k = 5 are counted per group on the original table
    groups = [["age", "workclass"], ["occupation", "relationship"], ["race"], ["sex"],
              ["education"], ["marital_status"], ["native_country"]]
    below = max(int((adult.groupby(g, dropna=False)[g[0]].transform("size") < 5).sum())
                for g in groups)
    assert f"{below:,} records" in k_line and "on violation: report" in k_line


def test_compare_honours_role(tmp_path: Path, policy_dirs) -> None:
    a, b = policy_dirs
    res = _invoke("--compare", str(a), "--compare", str(b), "--role", "public",
                  "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "adult-compare.json").read_text())
    labels = [v["label"] for v in data["variants"]]
    assert labels == ["original", "strict/policies:public", "loose/policies:public"]
    assert [v["policy_k"] for v in data["variants"]] == [None, 10, 20]
    assert "loose/policies:public: k = " in res.stdout


def test_compare_with_variants_adds_the_other_roles(tmp_path: Path, policy_dirs) -> None:
    a, _b = policy_dirs
    res = _invoke("--compare", str(a), "--role", "public", "--variants", "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    labels = [v["label"] for v in json.loads(
        (tmp_path / "adult-compare.json").read_text())["variants"]]
    roles = sorted(p.stem for p in a.glob("*.yaml")
                   if "adult" in (yaml.safe_load(p.read_text()).get("tables") or {}))
    assert labels == ["original", *(f"policies:{r}" for r in roles)]


def test_compare_with_a_role_a_directory_lacks_fails_in_one_line(tmp_path: Path,
                                                                 policy_dirs) -> None:
    a, _b = policy_dirs
    res = _invoke("--compare", str(a), "--role", "nobody", "--out", str(tmp_path))
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and 'no policy of role "nobody"' in res.stderr
    assert "Traceback" not in res.output
    assert not (tmp_path / "adult-compare.html").exists()
