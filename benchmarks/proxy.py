"""Proxy benchmark: what the PostgreSQL wire protocol adds to paradise's own pipeline.

In one run, against the bundled demo data in an embedded DuckDB:

* **latency** (median of repeated runs) of three queries, each measured three ways:
  the query's text straight on the backend (no policy: the floor), through the library
  (``Processor.query``: parse, check, rewrite, execute, verify) and through the proxy
  (psycopg over 127.0.0.1, the extended protocol psycopg uses for repeated queries);
* **throughput** of ``paradise serve --demo --workers W`` (a separate process; W = 1
  and 2 by default) with 1, 8 and 32 concurrent clients, each a separate process with
  its own psycopg connection, for a bounded time per level.

Queries: ``SELECT 1``; a point query (one row: a count for one age and sex, role
``auditor``); a 100-row sliced result (role ``analyst``, slicing over all of Adult).

Usage:
    python benchmarks/proxy.py                  # defaults: 2 s per throughput level
    python benchmarks/proxy.py --seconds 5 --repeat 200 --workers 1 2 4
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

import paradise
from paradise.server import PgServer
from paradise.server.auth import ScramVerifier, hash_password
from paradise.server.config import Limits, ServerConfig, UserConfig, user_toml
from paradise.server.pipeline_handler import PipelineHandler

PASSWORD = "bench"
QUERIES = (  # name, role (user), SQL, repeats factor
    ("SELECT 1", "auditor", "SELECT 1", 1.0),
    (
        "point query",
        "auditor",
        "SELECT count(*) AS n FROM adult WHERE age = 37 AND sex = 'Male'",
        1.0,
    ),  # noqa: E501
    ("100 sliced rows", "analyst", "SELECT age, workclass FROM adult LIMIT 100", 0.2),
)


def _config() -> ServerConfig:
    verifier = ScramVerifier.parse(hash_password(PASSWORD, iterations=4096))
    users = {role: UserConfig(role, role, verifier) for role in ("auditor", "analyst")}
    limits = Limits(max_concurrent_queries=8, max_connections=64, query_timeout_seconds=60)
    return ServerConfig(listen=(("127.0.0.1", 0),), users=users, limits=limits)


def _connect(port: int, user: str) -> psycopg.Connection:
    return psycopg.connect(
        host="127.0.0.1", port=port, user=user, password=PASSWORD, dbname="paradise",
        autocommit=True, connect_timeout=10,
    )  # fmt: skip


@contextmanager
def _serve_process(workers: int) -> Iterator[int]:
    """``paradise serve --demo --workers N`` on a free port; yields the port."""
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "serve.toml"
        blocks = [user_toml(role, PASSWORD, role) for role in ("auditor", "analyst")]
        config.write_text("[limits]\nmax_concurrent_queries = 8\n\n" + "\n".join(blocks))
        command = [sys.executable, "-m", "paradise", "serve", "--config", str(config), "--demo",
                   "--workers", str(workers), "--listen", "127.0.0.1:0"]  # fmt: skip
        child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        try:
            assert child.stderr is not None
            line = child.stderr.readline()
            match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if not match:
                raise SystemExit(f"paradise serve did not start: {line}{child.stderr.read()}")
            yield int(match[1])
        finally:
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()


def _median_ms(run: Callable[[], object], repeat: int) -> float:
    run()  # warm-up: caches, prepared statements
    times = []
    for _ in range(max(repeat, 3)):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _client(port: int, user: str, sql: str, seconds: float, go: Any, out: Any) -> None:
    with _connect(port, user) as conn:
        conn.execute(sql).fetchall()
        out.put(None)  # connected and warm
        if not go.wait(120):
            return
        count, stop = 0, time.perf_counter() + seconds
        while time.perf_counter() < stop:
            conn.execute(sql).fetchall()
            count += 1
    out.put(count)


def _throughput(port: int, user: str, sql: str, clients: int, seconds: float) -> float:
    ctx = multiprocessing.get_context("spawn")
    queue, go = ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(target=_client, args=(port, user, sql, seconds, go, queue))
        for _ in range(clients)
    ]
    for proc in procs:
        proc.start()
    for _ in procs:  # every client connected before the clock starts
        queue.get(timeout=120)
    go.set()
    total = sum(queue.get(timeout=seconds + 60) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    return total / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per throughput level")
    parser.add_argument("--repeat", type=int, default=100, help="latency samples per query")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                        help="worker processes of paradise serve (throughput)")  # fmt: skip
    args = parser.parse_args()

    processor = paradise.connect(":memory:", read_dialect="postgres")
    processor.load_demo()
    server = PgServer(_config(), PipelineHandler(processor))
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    if not ready.wait(10):
        raise SystemExit("the proxy did not start")
    port = server.port
    try:
        print(f"latency, median ms (proxy on 127.0.0.1:{port}, DuckDB in-process)")
        header = f"{'query':<18}{'backend':>10}{'library':>10}{'proxy':>10}{'proxy-lib':>11}"
        print(header)
        print("-" * len(header))
        for name, role, sql, factor in QUERIES:
            repeat = max(int(args.repeat * factor), 3)
            backend = _median_ms(lambda s=sql: processor.backend.execute(s), repeat)
            library = _median_ms(lambda s=sql, r=role: processor.query(s, role=r), repeat)
            with _connect(port, role) as conn:
                proxy = _median_ms(lambda s=sql, c=conn: c.execute(s).fetchall(), repeat)
            print(
                f"{name:<18}{backend:>10.2f}{library:>10.2f}{proxy:>10.2f}{proxy - library:>11.2f}"
            )
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(grace=1), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        processor.close()
    print()
    print(f"throughput of paradise serve --demo, queries/s ({args.seconds:g} s per level)")
    levels = (1, 8, 32)
    header = f"{'query':<18}{'workers':>8}" + "".join(f"{f'{n} clients':>12}" for n in levels)
    print(header)
    print("-" * len(header))
    for workers in args.workers:
        with _serve_process(workers) as serve_port:
            for name, role, sql, _ in QUERIES[:2]:
                rates = [_throughput(serve_port, role, sql, n, args.seconds) for n in levels]
                print(f"{name:<18}{workers:>8}" + "".join(f"{r:>12.0f}" for r in rates))


if __name__ == "__main__":
    main()
