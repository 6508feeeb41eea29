"""``paradise examples``: the example data and policies shipped inside the package, copied
where a new user can see and change them."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import click

from paradise.cli.app import out_console
from paradise.errors import InputError

__all__ = ["EXAMPLE_FILES", "example_files", "examples"]

_DATA = Path(__file__).resolve().parents[1] / "data"

EXAMPLE_FILES: tuple[tuple[str, str], ...] = (
    ("adult.csv.gz", "UCI Adult, 32,561 rows (the seed paper's running example)"),
    ("district_counts.csv", "seed 002's counts per district and quarter, totals as rows"),
    ("policies", "the example role policies and their hierarchy files"),
)
"""Name in the target directory, and what it is."""


def example_files() -> dict[str, Path]:
    """Where each example lives inside the installed package."""
    return {
        "adult.csv.gz": _DATA / "adult.csv.gz",
        "district_counts.csv": _DATA / "examples" / "district_counts.csv",
        "policies": _DATA / "policies",
    }


@click.command()
@click.argument("directory", type=click.Path(file_okay=False), default=".")
@click.option("--force", is_flag=True, help="Overwrite example files that already exist.")
def examples(directory: str, force: bool) -> None:
    """Copy the bundled example data and policies into DIRECTORY (default: here):
    adult.csv.gz, district_counts.csv and policies/."""
    target = Path(directory)
    sources = example_files()
    changed = [
        name for name in sources
        if (target / name).exists() and not _same(sources[name], target / name)
    ]
    if changed and not force:
        raise InputError(
            f"{target}: {', '.join(changed)} already exist(s) and differ(s) from the examples",
            hint="pass --force to overwrite them, or choose another directory",
            sqlstate="42710",
        )
    target.mkdir(parents=True, exist_ok=True)
    for name, what in EXAMPLE_FILES:
        source, destination = sources[name], target / name
        if destination.exists() and _same(source, destination):
            note = " (unchanged)"
        elif source.is_dir():  # files of your own in the directory stay
            shutil.copytree(source, destination, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
            note = ""
        else:
            shutil.copyfile(source, destination)
            note = ""
        out_console.print(f"{destination}: {what}{note}", highlight=False, markup=False)


def _same(source: Path, destination: Path) -> bool:
    """Whether ``destination`` holds the shipped example unchanged (every shipped file)."""
    if source.is_dir():
        return destination.is_dir() and all(
            _same(item, destination / item.relative_to(source))
            for item in source.rglob("*") if item.is_file() and "__pycache__" not in item.parts
        )
    return destination.is_file() and filecmp.cmp(source, destination, shallow=False)
