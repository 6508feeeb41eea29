"""``paradise demo``: a short tour on embedded DuckDB with the bundled Adult data and a
synthetic smart home whose residents set their own preferences."""

from __future__ import annotations

import secrets

import click
from rich.markup import escape
from rich.rule import Rule

from paradise.anonymize.secret import resolve_secret
from paradise.cli.app import out_console
from paradise.cli.render import print_annotations, print_result
from paradise.errors import ParadiseError
from paradise.processor import connect
from paradise.tools.demo_data import load_demo, load_smart_home

__all__ = ["TOUR", "demo"]

TOUR: tuple[tuple[str, str, str], ...] = (
    (
        "analyst",
        "Sliced microdata: [age, workclass] stay together, links to other groups are permuted",
        "SELECT age, workclass, occupation, sex, income FROM adult LIMIT 8",
    ),
    (
        "analyst",
        "Aggregates over the sliced relation: group counts are exact within a column group",
        "SELECT workclass, count(*) AS n, round(avg(age), 1) AS mean_age FROM adult "
        "GROUP BY workclass ORDER BY n DESC",
    ),
    (
        "public",
        "Public role: classes smaller than k=10 (or not 2-diverse in income) are suppressed",
        "SELECT age, sex, income FROM adult WHERE age > 80 ORDER BY age DESC LIMIT 8",
    ),
    (
        "auditor",
        "Auditor role: untransformed, but a 5-anonymous answer is required",
        "SELECT sex, race, count(*) AS n FROM adult GROUP BY sex, race ORDER BY n DESC",
    ),
    (
        "analyst",
        "An identifier is never released, whatever the route (here: through a CTE alias)",
        "WITH people AS (SELECT id AS person FROM adult) SELECT person FROM people",
    ),
    (
        "assistant",
        "Smart home: residents who do not share their room count under NULL; others asked for "
        "a coarser room ('day area', 'night area')",
        "SELECT room, count(*) AS readings FROM sensor_readings GROUP BY room ORDER BY room",
    ),
    (
        "assistant",
        "Row-level readings: residents are keyed pseudonyms; aggregate-only residents are left "
        "out; timestamps coarsened where a resident asked for it",
        "SELECT subject_id, ts, room, sensor, value FROM sensor_readings "
        "WHERE sensor = 'temperature' ORDER BY ts LIMIT 8",
    ),
    (
        "assistant",
        "Residents counted in an aggregate: everyone except the resident who shares nothing",
        "SELECT count(DISTINCT subject_id) AS residents FROM sensor_readings",
    ),
    (
        "assistant",
        "The same residents listed row by row: those who allow aggregated use only are missing",
        "SELECT DISTINCT subject_id FROM sensor_readings",
    ),
    (
        "assistant",
        "Pseudonyms join across tables within a role; district and birth year stay 3-anonymous",
        "SELECT s.district, count(DISTINCT r.subject_id) AS residents, "
        "round(avg(r.value), 1) AS mean_temperature FROM sensor_readings AS r "
        "JOIN subjects AS s ON r.subject_id = s.subject_id WHERE r.sensor = 'temperature' "
        "GROUP BY s.district ORDER BY s.district",
    ),
)


@click.command()
@click.option(
    "--db",
    "target",
    default=":memory:",
    show_default=True,
    help="DuckDB file to load the demo data into.",
)
def demo(target: str) -> None:
    """Load the bundled Adult data into DuckDB and run a short tour of the example roles."""
    # pseudonyms and seeded draws need a server secret; the demo makes one per run unless
    # one is configured (paradise.anonymize.secret)
    secret = None if resolve_secret() is not None else secrets.token_hex(32)
    with connect(target, secret=secret) as proc:
        out_console.print("[bold]paradise demo[/]: loading UCI Adult (32,561 rows) into DuckDB ...")
        load_demo(proc)
        rows = load_smart_home(proc.backend)
        proc.refresh()
        out_console.print(
            f"... and a synthetic smart home: {rows['sensor_readings']} sensor readings of "
            f"{rows['subjects']} residents with {rows['subject_preferences']} preference rules"
        )
        whole = proc.query("SELECT * FROM adult", role="analyst")
        out_console.print(
            f"SELECT * FROM adult as analyst: {len(whole)} rows, "
            f"columns: {', '.join(whole.columns)}"
        )
        out_console.print(f"  hidden: {', '.join(whole.annotations.tables[0].hidden_columns)}")
        for role, title, sql in TOUR:
            out_console.print(Rule(f"[bold]{role}[/]: {escape(title)}"))
            out_console.print(f"[green]{sql}[/]", highlight=False)
            try:
                result = proc.query(sql, role=role)
            except ParadiseError as exc:
                out_console.print(f"[bold red]refused[/] ({exc.sqlstate}): {exc}", highlight=False)
                continue
            print_result(out_console, result, max_rows=10)
            print_annotations(out_console, result)
        out_console.print(Rule())
        out_console.print(
            'Next: paradise query --role analyst "SELECT ..." --db FILE, '
            "paradise explain ..., paradise policy validate policies/"
        )
