"""Proxy benchmark on a PostgreSQL backend: paradise serve against PostgreSQL itself.

In one run:

1. Adult (32,561 rows) is loaded into a scratch schema of the PostgreSQL server
   (``PARADISE_POSTGRES_URL``, default ``postgresql://postgres@127.0.0.1:5432/test``;
   the schema is dropped at the end);
2. the corpus is the aggregate queries of ``tests/fixtures/security/realistic.sql``
   (what BI tools and analysts send) that a role is answered, per role of ``--roles``
   (default ``auditor``: k-anonymity verified on the answer; ``analyst``: Adult sliced
   live for every query, so the database does far more work than the raw query);
3. for 1, 8 and 32 concurrent clients (each a separate process with its own psycopg
   connection, cycling through the corpus for ``--seconds``), throughput and p50/p99
   latency are measured **directly on PostgreSQL** (the raw queries, no policy) and
   **through ``paradise serve``** with 1 and 2 worker processes (policy check, rewrite,
   anonymization pushed into PostgreSQL, verification, annotations);
4. the table prints the proxy's throughput as a share of direct, and its p50/p99 as
   multiples of direct.

Usage:
    python benchmarks/proxy.py                       # 5 s per level
    python benchmarks/proxy.py --seconds 10 --workers 1 2 4 --clients 1 8 32
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "security" / "realistic.sql"
ADULT = ROOT / "paradise" / "data" / "adult.csv.gz"
POSTGRES_URL = os.environ.get("PARADISE_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
PASSWORD = "bench"
AGGREGATE = re.compile(r"\b(count|sum|avg|min|max|percentile_cont|stddev\w*|corr)\s*\(", re.I)


def corpus() -> list[str]:
    """The aggregate queries of the realistic corpus written for analysts, in file order."""
    queries, role = [], "analyst"
    for block in CORPUS.read_text(encoding="utf-8").split(";\n"):
        lines = []
        for line in block.strip().splitlines():
            if line.startswith("# role:"):
                role = line.split(":", 1)[1].strip()
            elif not line.startswith("#"):
                lines.append(line)
        sql = " ".join(lines).strip().rstrip(";")
        if sql and role == "analyst" and AGGREGATE.search(sql):
            queries.append(sql)
        role = "analyst"
    return queries


@contextmanager
def scratch_schema() -> Iterator[str]:
    """A schema with Adult loaded; yields a backend URL whose search_path is that schema."""
    from paradise.backends import connect_backend
    from paradise.load import load_file

    name = f"paradise_bench_{os.getpid()}_{secrets.token_hex(3)}"
    admin = connect_backend(POSTGRES_URL)
    admin.run(f'CREATE SCHEMA "{name}"')
    url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={name}"})
    target = url.render_as_string(hide_password=False)
    try:
        loader = connect_backend(target)
        try:
            load_file(loader, ADULT, "adult", add_id="id", replace=True)
        finally:
            loader.close()
        yield target
    finally:
        admin.run(f'DROP SCHEMA "{name}" CASCADE')
        admin.close()


@contextmanager
def serve(backend_url: str, workers: int, backend_connections: int) -> Iterator[int]:
    """``paradise serve --workers N`` in front of the backend; yields its port."""
    from paradise.server.common.config import user_toml

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "serve.toml"
        access = Path(tmp) / "access.log"
        config.write_text(
            f"[limits]\nmax_concurrent_queries = 8\nmax_connections = 128\n"
            f"backend_connections = {backend_connections}\n\n"
            f'[log]\nlevel = "warning"\naccess = "{access}"\n\n'
            + "\n".join(user_toml(role, PASSWORD, role) for role in ("analyst", "auditor"))
        )
        command = [sys.executable, "-m", "paradise", "serve", "--config", str(config),
                   "--backend", backend_url, "--workers", str(workers),
                   "--listen", "127.0.0.1:0"]  # fmt: skip
        child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        try:
            assert child.stderr is not None
            seen = []
            while True:
                line = child.stderr.readline()
                seen.append(line)
                match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
                if match or not line:
                    break
            if not match:
                raise SystemExit("paradise serve did not start:\n" + "".join(seen))
            yield int(match[1])
        finally:
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()


def _client(target: dict[str, Any], queries: list[str], seconds: float, go: Any, out: Any) -> None:
    with psycopg.connect(**target, autocommit=True, connect_timeout=30) as conn:
        for sql in queries:  # warm: prepared plans, caches
            conn.execute(sql).fetchall()
        out.put(None)
        if not go.wait(300):
            return
        latencies: list[float] = []
        i, stop = 0, time.perf_counter() + seconds
        while time.perf_counter() < stop:
            start = time.perf_counter()
            conn.execute(queries[i % len(queries)]).fetchall()
            latencies.append(time.perf_counter() - start)
            i += 1
    out.put(latencies)


def measure(target: dict[str, Any], queries: list[str], clients: int, seconds: float) -> dict:
    """Throughput (queries/s) and p50/p99 latency (ms) of ``clients`` concurrent clients."""
    ctx = multiprocessing.get_context("spawn")
    queue, go = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_client, args=(target, queries, seconds, go, queue))
             for _ in range(clients)]  # fmt: skip
    for proc in procs:
        proc.start()
    for _ in procs:  # every client connected and warm before the clock starts
        queue.get(timeout=600)
    go.set()
    latencies = [x for _ in procs for x in queue.get(timeout=seconds + 600)]
    for proc in procs:
        proc.join(timeout=60)
    latencies.sort()
    return {
        "qps": len(latencies) / seconds,
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


def answered(port: int, queries: list[str], role: str) -> list[str]:
    """The queries the proxy answers for ``role`` (refusals are left out of the timed corpus)."""
    target = _proxy_target(port, role)
    kept = []
    with psycopg.connect(**target, autocommit=True) as conn:
        for sql in queries:
            try:
                conn.execute(sql).fetchall()
                kept.append(sql)
            except psycopg.Error as exc:
                print(f"  {role}: refused, left out: {sql[:50]}... ({exc.sqlstate})")
    return kept


def _proxy_target(port: int, role: str) -> dict[str, Any]:
    return {"host": "127.0.0.1", "port": port, "user": role, "password": PASSWORD,
            "dbname": "paradise"}  # fmt: skip


def _direct_target(url: str) -> dict[str, Any]:
    parsed = make_url(url)
    target: dict[str, Any] = {"host": parsed.host or "127.0.0.1", "port": parsed.port or 5432,
                              "user": parsed.username, "dbname": parsed.database}  # fmt: skip
    if parsed.password:
        target["password"] = parsed.password
    options = parsed.query.get("options")
    if isinstance(options, str):
        target["options"] = options
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--backend-connections", type=int, default=4)
    parser.add_argument("--roles", nargs="+", default=["auditor"], choices=["auditor", "analyst"])
    args = parser.parse_args()

    rows: list[tuple[str, str, int | None, int, dict]] = []
    direct: dict[tuple[str, int], dict] = {}
    with scratch_schema() as url:
        with serve(url, 1, args.backend_connections) as port:
            corpora = {role: answered(port, corpus(), role) for role in args.roles}
        for role, queries in corpora.items():
            print(f"{role}: {len(queries)} aggregate queries of {CORPUS.name} answered")
            for n in args.clients:
                direct[role, n] = measure(_direct_target(url), queries, n, args.seconds)
                rows.append((role, "direct", None, n, direct[role, n]))
        for workers in args.workers:
            with serve(url, workers, args.backend_connections) as port:
                for role, queries in corpora.items():
                    for n in args.clients:
                        m = measure(_proxy_target(port, role), queries, n, args.seconds)
                        rows.append((role, "proxy", workers, n, m))
    print(f"{args.seconds:g} s per level; backend_connections = {args.backend_connections}; "
          "direct: the raw queries on PostgreSQL (no policy)")
    header = (f"{'role':<9}{'path':<8}{'workers':>8}{'clients':>8}{'q/s':>9}{'p50 ms':>9}"
              f"{'p99 ms':>9}{'q/s vs direct':>15}{'p50 x':>8}{'p99 x':>8}")  # fmt: skip
    print(header)
    print("-" * len(header))
    for role, path, workers, n, m in sorted(rows, key=lambda r: (r[0], r[1], r[2] or 0, r[3])):
        base = direct[role, n]
        print(f"{role:<9}{path:<8}{workers or '-':>8}{n:>8}{m['qps']:>9.1f}{m['p50']:>9.2f}"
              f"{m['p99']:>9.2f}{m['qps'] / base['qps']:>14.0%} {m['p50'] / base['p50']:>8.1f}"
              f"{m['p99'] / base['p99']:>8.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
