"""Snapshot of the SQL paradise generates for every query corpus of the repository.

Prepares (parse, check, rewrite, generate; nothing runs) every query of:

* ``rejected``   — the rejection corpora ``tests/fixtures/rewrite/*.sql``;
* ``security``   — the adversarial corpora ``tests/fixtures/security/*.sql`` (not realistic);
* ``realistic``  — ``tests/fixtures/security/realistic.sql`` (``benchmarks/contributors.py``,
  ``tests/security/test_refusal_rate.py``);
* ``attacks``    — the query lists of ``tests/security/test_classes_*.py``;
* ``operators``  — the operator goldens (``tests/anonymize/golden_cases.py``), per operator;
* ``properties`` — the property tests' random worlds and queries
  (``tests/properties/strategies.py``), drawn with a fixed, derandomized seed;
* ``nodefuzz``   — the node-type fuzzer's queries (``tests/security/test_fuzz_node_types.py``),
  drawn the same way;

for the ``duckdb``, ``postgres`` and ``mysql`` dialects, under the role a case names (the
realistic corpus under every role of the security world: bundled policies, the security
suite's and the attacker's own roles; the attack lists under :data:`ATTACK_ROLES`; the
property worlds under their own ``fuzz`` role), and writes ``title [role] -> generated SQL`` (or
``! ErrorClass: message``) to ``OUT/<corpus>.<dialect>.txt``. No server is needed: the
catalog and the rewrite-time aggregates some operators need come from an in-memory DuckDB
holding the security world (Adult, the canary smart home, the shadow tables), whatever
dialect the SQL is generated for. The secrets are fixed, so the output is deterministic.
One gap: an operator whose rewrite-time query is written in the target dialect's own
functions (local suppression's row hash: ``statistics_office`` on ``postgres``/``mysql``)
cannot run it on DuckDB; those cases record the backend error (its random request id
replaced), so they still show when a change moves them.

Usage::

    python scripts/sql_snapshot.py OUT                 # write the snapshot
    python scripts/sql_snapshot.py OUT --compare BASE  # write it, print every difference
    python scripts/sql_snapshot.py --compare BASE      # the same into a temporary directory

``--compare`` exits 1 when anything differs (a corpus, a case or its output).
``--corpus NAME`` (repeatable) and ``--dialect NAME`` limit the run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import importlib
import io
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DIALECTS = ("duckdb", "postgres", "mysql")
CORPORA = ("rejected", "security", "realistic", "attacks", "operators", "properties", "nodefuzz")
SECRET = "sql snapshot secret: fixed, never used in production"
PSEUDONYM_SECRET = "sql snapshot pseudonym secret, fixed as well"
ATTACK_ROLES = (
    "analyst",
    "assistant",
    "auditor",
    "diverse",
    "guarded",
    "people",
    "people_refuse",
    "public",
    "residents_file",
    "tables",
)
"""Roles the attack lists run under: the world's roles but ``statistics_office`` (whose
rewrite-time suppression takes ~0.5 s per query; the realistic corpus runs under it)."""
PROPERTY_WORLDS = 80
NODE_QUERIES = 150

Case = tuple[str, str, str | None, tuple[str, ...]]
"""(title, sql, read dialect or None for the target dialect, roles)"""


# --- the world ------------------------------------------------------------------------------


def _first(*candidates: tuple[str, str]) -> Any:
    """The first of ``(module, attribute)`` that imports (modules move between versions)."""
    for module, attribute in candidates:
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"none of {candidates} found")


def security_world() -> tuple[Any, dict[str, Any]]:
    """An in-memory DuckDB with Adult, the canary smart home and the shadow tables, and the
    attacker's world's roles (bundled, security suite, attack)."""
    import pyarrow.parquet as pq
    from sqlglot import exp

    from paradise.backends.duckdb import DuckDBBackend
    from paradise.load import load_file
    from tests.backends.conftest import ADULT
    from tests.security import conftest  # noqa: F401  (imports attack in the right order)
    from tests.security.attack import HOMOGLYPH, SHADOW, attack_policies
    from tests.security.world import canary_tables

    backend = DuckDBBackend(":memory:")
    tables, _canaries = canary_tables()
    load_file(backend, ADULT, "adult", add_id="id", replace=True)
    with tempfile.TemporaryDirectory(prefix="paradise_snapshot_") as tmp:
        for name, table in tables.items():
            path = Path(tmp) / f"{name}.parquet"
            pq.write_table(table, path)
            load_file(backend, path, name, replace=True)
    for shadow in (HOMOGLYPH, "adult_private"):
        ident = exp.to_identifier(shadow, quoted=True).sql("duckdb")
        backend.run(
            f"CREATE TABLE {ident} (id INTEGER, age INTEGER, income VARCHAR(40), "
            "race VARCHAR(40), sex VARCHAR(40), secret VARCHAR(40))"
        )
        backend.run(
            f"INSERT INTO {ident} VALUES (1, 19, '{SHADOW}', '{SHADOW}', '{SHADOW}', "
            f"'{SHADOW}'), (2, 19, '{SHADOW}', 'Other', 'Male', '{SHADOW}')"
        )
    return backend, attack_policies()


class Preparer:
    """Prepares queries under a role for a target dialect over one DuckDB world."""

    def __init__(self, backend: Any, policies: dict[str, Any]) -> None:
        import paradise

        self.backend = backend
        self.proc = paradise.connect(
            backend, policies=policies, secret=SECRET, pseudonym_secret=PSEUDONYM_SECRET
        )
        self.proc.catalog()
        self.roles = tuple(sorted(policies))
        self._access = _first(("paradise.pipeline", "BackendAccess"))(backend)
        self._caches: dict[str, dict[Any, Any]] = {d: {} for d in DIALECTS}

    def prepare(self, sql: str, role: str, dialect: str, read: str | None) -> str:
        from paradise import pipeline

        try:
            ctx = dataclasses.replace(
                self.proc.context(role), dialect=dialect, read_dialect=read or dialect
            )
            prepared = pipeline.prepare(
                sql, ctx, database=self._access, plan_cache=self._caches[dialect]
            )
        except Exception as exc:  # noqa: BLE001 - the outcome is what is recorded
            return outcome_of(exc)
        return prepared.sql


def outcome_of(exc: Exception) -> str:
    """``! ErrorClass: message`` on one line, the random request id of a backend error
    replaced."""
    message = _REQUEST.sub("request <id>", str(exc)).replace("\n", "\\n")
    return f"! {type(exc).__name__}: {message}"


_REQUEST = re.compile(r"request [0-9a-f]{6,}")


# --- the corpora ----------------------------------------------------------------------------


def _fixture_cases(paths: Iterable[Path], default_read: str | None, prefix: bool) -> list[Case]:
    from tests.helpers import sql_statements

    cases = []
    for path in paths:
        for headers, sql in sql_statements(path):
            title = headers.get("title", sql[:60])
            if prefix:
                title = f"{path.stem}: {title}"
            role = headers.get("role", "analyst")
            cases.append((title, sql, headers.get("dialect", default_read), (role,)))
    return cases


def rejected_cases() -> list[Case]:
    paths = sorted((ROOT / "tests" / "fixtures" / "rewrite").glob("*.sql"))
    return _fixture_cases(paths, None, prefix=True)


def security_cases() -> list[Case]:
    folder = ROOT / "tests" / "fixtures" / "security"
    paths = sorted(p for p in folder.glob("*.sql") if p.name != "realistic.sql")
    return _fixture_cases(paths, "postgres", prefix=True)


def realistic_cases() -> list[Case]:
    """The realistic corpus, under every role of the world (``()``)."""
    path = ROOT / "tests" / "fixtures" / "security" / "realistic.sql"
    return [(t, sql, read, ()) for t, sql, read, _ in _fixture_cases([path], "postgres", False)]


_STATEMENT_START = (
    "select",
    "with",
    "(",
    "values",
    "table",
    "copy",
    "create",
    "pivot",
    "unpivot",
    "attach",
    "pragma",
    "call",
    "set",
    "handler",
    "from",
    "summarize",
    "describe",
    "show",
    "delete",
    "insert",
    "update",
    "explain",
    "load",
    "install",
    "export",
    "import",
)


def attack_cases() -> list[Case]:
    """Every tuple of a module-level list in ``tests/security/test_classes_*.py`` that holds
    a SQL statement: title first, a dialect name if any, the statement the longest string."""
    importlib.import_module("tests.security.conftest")  # imports attack in the right order
    cases = []
    for path in sorted((ROOT / "tests" / "security").glob("test_classes_*.py")):
        module = importlib.import_module(f"tests.security.{path.stem}")
        names = [
            n.targets[0].id
            for n in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
        ]
        for name in names:
            value = getattr(module, name, None)
            if not isinstance(value, list):
                continue
            for i, item in enumerate(value):
                if not isinstance(item, tuple) or not item or not isinstance(item[0], str):
                    continue
                strings = [s for s in item[1:] if isinstance(s, str)]
                read = next((s for s in strings if s in DIALECTS), None)
                sqls = [
                    s
                    for s in strings
                    if s not in DIALECTS
                    and s.strip().lower().startswith(_STATEMENT_START)
                    and " " in s.strip()
                ]
                if not sqls:
                    continue
                sql = max(sqls, key=len)
                title = f"{path.stem}.{name}[{i}] {item[0]}"
                cases.append((title, sql, read, ATTACK_ROLES))
    return cases


def _derandomized(strategy: Any, count: int) -> list[Any]:
    """``count`` examples of ``strategy``, the same ones every run (a fixed seed)."""
    from hypothesis import HealthCheck, Phase, given, settings

    drawn: list[Any] = []

    @settings(
        derandomize=True,
        database=None,
        max_examples=count,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(example: Any) -> None:
        drawn.append(example)

    collect()
    return drawn


# --- running --------------------------------------------------------------------------------


Output = dict[str, list[tuple[str, str]]]
"""``<corpus>.<dialect>`` -> [(title, outcome)] in corpus order."""


def run_cases(
    out: Output, corpus: str, cases: list[Case], prep: Preparer, dialects: tuple[str, ...]
) -> None:
    for dialect in dialects:
        entries = out.setdefault(f"{corpus}.{dialect}", [])
        for title, sql, read, roles in cases:
            for role in roles or prep.roles:
                entries.append((f"{title} [{role}]", prep.prepare(sql, role, dialect, read)))


def run_operators(out: Output, dialects: tuple[str, ...]) -> None:
    from paradise.anonymize.secret import redact
    from tests.anonymize.golden_cases import CASES
    from tests.anonymize.helpers import TEST_KEY, duckdb_with_tables, generate

    backend = duckdb_with_tables()
    for dialect in dialects:
        entries = out.setdefault(f"operators.{dialect}", [])
        for operator, cases in CASES.items():
            for title, table, params, _execute in cases:
                try:
                    sql = generate(operator, table, params, dialect, backend).sql(dialect=dialect)
                    outcome = redact(sql, TEST_KEY.pads)
                except Exception as exc:  # noqa: BLE001
                    outcome = outcome_of(exc)
                entries.append((f"{operator}: {title} ({table})", outcome))


def run_properties(out: Output, dialects: tuple[str, ...], count: int) -> None:
    from hypothesis import strategies as st

    from tests.properties.strategies import queries, worlds
    from tests.properties.test_invariants import load, policy_of

    @st.composite
    def world_and_queries(draw: Any) -> tuple[Any, list[str]]:
        world = draw(worlds())
        return world, [draw(queries(world)) for _ in range(3)]

    for i, (world, sqls) in enumerate(_derandomized(world_and_queries(), count)):
        prep = Preparer(load(world), {"fuzz": policy_of(world)})
        shape = "; ".join(
            f"{t.name}(k={t.k}, slicing={t.slicing}, rows={len(t.rows)}, "
            + ", ".join(f"{c.name} {c.type} {c.cls}" for c in t.columns)
            + ")"
            for t in world.tables
        )
        cases = [
            (f"world {i} query {j}: {shape}: {sql}", sql, None, ("fuzz",))
            for j, sql in enumerate(sqls)
        ]
        run_cases(out, "properties", cases, prep, dialects)
        prep.proc.close()


def run_nodefuzz(out: Output, prep: Preparer, dialects: tuple[str, ...], count: int) -> None:
    from hypothesis import strategies as st

    from tests.security.test_fuzz_node_types import PLACES, expressions

    drawn = _derandomized(st.tuples(expressions(), st.sampled_from(PLACES)), count)
    for dialect in dialects:
        cases = []
        for i, (expression, place) in enumerate(drawn):
            try:
                sql = place.format(e=expression.sql(dialect=dialect))
            except Exception:  # noqa: BLE001 - a node this dialect cannot render
                continue
            cases.append((f"{i}: {sql}", sql, None, ("auditor", "analyst", "public")))
        run_cases(out, "nodefuzz", cases, prep, (dialect,))


def snapshot(corpora: tuple[str, ...], dialects: tuple[str, ...]) -> Output:
    out: Output = {}
    needs_world = {"rejected", "security", "realistic", "attacks", "nodefuzz"} & set(corpora)
    prep = Preparer(*security_world()) if needs_world else None
    loaders: dict[str, Callable[[], list[Case]]] = {
        "rejected": rejected_cases,
        "security": security_cases,
        "realistic": realistic_cases,
        "attacks": attack_cases,
    }
    for corpus in corpora:
        start = time.perf_counter()
        if corpus in loaders:
            assert prep is not None
            cases = loaders[corpus]()
            run_cases(out, corpus, cases, prep, dialects)
        elif corpus == "operators":
            run_operators(out, dialects)
        elif corpus == "properties":
            run_properties(out, dialects, PROPERTY_WORLDS)
        elif corpus == "nodefuzz":
            assert prep is not None
            run_nodefuzz(out, prep, dialects, NODE_QUERIES)
        print(f"{corpus}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return out


# --- files ----------------------------------------------------------------------------------


def write(out: Output, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, entries in out.items():
        seen: dict[str, int] = {}
        lines = []
        for title, outcome in entries:
            seen[title] = seen.get(title, 0) + 1
            key = title if seen[title] == 1 else f"{title} #{seen[title]}"
            lines += [f"### {key}", outcome, ""]
        (folder / f"{name}.txt").write_text("\n".join(lines), encoding="utf-8")


def read(folder: Path) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for path in sorted(folder.glob("*.txt")):
        entries: dict[str, str] = {}
        lines = path.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            if line.startswith("### ") and i + 1 < len(lines):
                entries[line[4:]] = lines[i + 1]
        found[path.stem] = entries
    return found


def compare(new: Path, old: Path, only: set[str] | None = None) -> int:
    """Print every difference between two snapshot folders; return their number."""
    a, b = read(old), read(new)
    differences = 0
    for name in sorted(set(a) | set(b)):
        if only is not None and name not in only:
            continue
        if name not in b or name not in a:
            print(f"{name}: only in {'the baseline' if name in a else 'the new snapshot'}")
            differences += 1
            continue
        for title in a[name].keys() | b[name].keys():
            before, after = a[name].get(title), b[name].get(title)
            if before == after:
                continue
            differences += 1
            print(f"--- {name}: {title}")
            print(f"  before: {before}")
            print(f"  after:  {after}")
    return differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, help="folder to write (default: temporary)")
    parser.add_argument("--compare", type=Path, metavar="DIR", help="baseline folder")
    parser.add_argument("--corpus", action="append", choices=CORPORA)
    parser.add_argument("--dialect", action="append", choices=DIALECTS)
    args = parser.parse_args(argv)
    corpora = tuple(args.corpus or CORPORA)
    dialects = tuple(args.dialect or DIALECTS)
    with contextlib.ExitStack() as stack:
        folder = args.out or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        with contextlib.redirect_stdout(io.StringIO()):  # libraries that print
            write(snapshot(corpora, dialects), folder)
        total = sum(len(read(folder)[p.stem]) for p in folder.glob("*.txt"))
        print(f"wrote {total} outcomes to {folder}", file=sys.stderr)
        if args.compare is None:
            return 0
        only = {f"{c}.{d}" for c in corpora for d in dialects}
        differences = compare(folder, args.compare, only)
        print(f"{differences} difference(s) against {args.compare}")
        return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
