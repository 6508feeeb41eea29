"""``paradise examples``: the example data and policies shipped inside the package, copied
where a new user can see and change them."""

from __future__ import annotations

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
    existing = [name for name in sources if (target / name).exists()]
    if existing and not force:
        raise InputError(
            f"{target}: {', '.join(existing)} already exist(s)",
            hint="pass --force to overwrite them, or choose another directory",
            sqlstate="42710",
        )
    target.mkdir(parents=True, exist_ok=True)
    for name, what in EXAMPLE_FILES:
        source, destination = sources[name], target / name
        if source.is_dir():
            if destination.exists():
                shutil.rmtree(destination)
            shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, destination)
        out_console.print(f"{destination}: {what}", highlight=False, markup=False)
