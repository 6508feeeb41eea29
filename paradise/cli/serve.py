"""``paradise serve``: the PostgreSQL-protocol (and MySQL-protocol) proxy."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click

from paradise.cli.app import err_console, print_error
from paradise.cli.options import DB_ENV, policies_option, require_database
from paradise.errors import ParadiseError

if TYPE_CHECKING:
    from paradise.processor import Processor
    from paradise.server import ServerConfig
    from paradise.server.common.workers import WorkerSlot

__all__ = ["serve"]


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML server configuration (listen addresses, TLS, users, backend, limits).",
)
@click.option(
    "--backend",
    envvar=DB_ENV,
    show_envvar=True,
    default=None,
    help="Database URL or DuckDB file (overrides the config).",
)
@policies_option("Policy directory (overrides the config; default: the bundled examples).")
@click.option(
    "--listen", multiple=True, help="HOST:PORT to listen on (repeatable; overrides the config)."
)
@click.option(
    "--mysql-listen",
    multiple=True,
    help="HOST:PORT for the MySQL protocol (repeatable; overrides the config's mysql_listen).",
)
@click.option(
    "--demo", is_flag=True, help="Load the bundled demo data into the (DuckDB) backend first."
)
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Server processes sharing the ports, about one per CPU core "
    "(overrides the config's workers; default 1).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default=None,
    help="Server log level (overrides the config's [log] level; default warning). The JSON-lines "
    "access log goes to stderr unless [log] access names a file or 'off'.",
)
def serve(
    config_path: str | None,
    backend: str | None,
    policies: str | None,
    listen: tuple[str, ...],
    mysql_listen: tuple[str, ...],
    demo: bool,
    workers: int | None,
    log_level: str | None,
) -> None:
    """Serve the PostgreSQL (and optionally MySQL) wire protocol through the pipeline."""
    from paradise.server import ServerConfig, load_config
    from paradise.server.common.access_log import configure_logging
    from paradise.server.common.config import parse_config

    config = load_config(config_path) if config_path else ServerConfig()
    if log_level is not None:
        config = dataclasses.replace(config, log_level=log_level)
    configure_logging(config.log_level, access=config.access_log)
    if listen:
        config = dataclasses.replace(
            config, listen=parse_config({"listen": list(listen)}, source="--listen").listen
        )
    if mysql_listen:
        parsed = parse_config({"mysql_listen": list(mysql_listen)}, source="--mysql-listen")
        config = dataclasses.replace(config, mysql_listen=parsed.mysql_listen)
    if workers is not None:
        parsed = parse_config({"workers": workers}, source="--workers")
        config = dataclasses.replace(config, workers=parsed.workers)
    target = backend or config.backend or ":memory:"
    policy_dir = policies or (str(config.policies) if config.policies else None)
    if not config.users:
        from paradise.server.common.config import ConfigError

        raise ConfigError(
            f"{config_path or '(no --config)'}: no users configured; create one with: "
            "paradise user add NAME --role ROLE --config FILE"
        )
    if not demo:
        require_database(target)
    from paradise.backends import duckdb_path

    shared_file = duckdb_path(target) not in (None, ":memory:") and config.workers > 1
    if shared_file and demo:
        raise click.UsageError(
            "--demo with several workers needs the in-memory database: drop --backend "
            "(each worker then loads its own demo copy) or use --workers 1"
        )
    if config.workers == 1:
        _serve_process(config, target, policy_dir, demo)
        return
    if shared_file:
        # workers open the file read-only: build the releases they will read first
        from paradise.cli.release import refresh_materialized

        writable = _open(target, policy_dir)
        try:
            refresh_materialized(writable)
        finally:
            writable.close()
    # check the backend and policies once, here, before any worker starts
    preflight = _open(target, policy_dir, read_only=shared_file, pool_size=1)
    roles = preflight.roles
    _warn_privileges(preflight)
    preflight.close()
    from paradise.anonymize.secret import process_secret
    from paradise.server.common.workers import run_workers

    # without a configured secret, one generated secret for every worker: forked children
    # inherit it, so slicing's stable buckets agree between workers
    process_secret()

    def child(slot: WorkerSlot, pg: list[socket.socket], my: list[socket.socket],
              ready: Callable[[], None]) -> int:  # fmt: skip
        try:
            _serve_process(config, target, policy_dir, demo, slot=slot, pg_sockets=pg,
                           mysql_sockets=my, ready=ready, read_only=shared_file)  # fmt: skip
        except ParadiseError as exc:
            print_error(exc)  # the worker's own one line; the supervisor stops the rest
            return exc.exit_code
        return 0

    def started(pg_ports: list[int], mysql_ports: list[int]) -> None:
        _announce(config, target, pg_ports, mysql_ports, roles)

    code = run_workers(config.workers, config.listen, config.mysql_listen, child,
                       on_ready=started)  # fmt: skip
    if code:
        raise SystemExit(code)


def _open(
    target: str, policy_dir: str | None, *, read_only: bool = False, pool_size: int | None = None
) -> Processor:
    from paradise.backends import connect_backend
    from paradise.processor import connect

    backend = connect_backend(target, read_only=read_only, pool_size=pool_size)
    try:
        return connect(backend, policies=policy_dir, read_dialect="postgres")
    except BaseException:
        backend.close()
        raise


def _warn_privileges(processor: Processor) -> None:
    """Say loudly when the backend account could do more than read the protected tables."""
    from paradise.backends.privileges import privilege_warnings, protected_tables, warn_text

    try:
        lines = privilege_warnings(processor.backend, protected_tables(processor.policies.values()))
    except ParadiseError as exc:
        lines = [f"the backend account's privileges could not be checked ({exc.sqlstate})"]
    for line in warn_text(lines):
        err_console.print(f"[bold red]{line}[/]", highlight=False)


def _announce(
    config: ServerConfig,
    target: str,
    pg_ports: Sequence[int],
    mysql_ports: Sequence[int],
    roles: Sequence[str],
) -> None:
    addresses = ", ".join(f"{h}:{p}" for (h, _), p in zip(config.listen, pg_ports, strict=False))
    if config.mysql_listen:
        addresses += ", MySQL " + ", ".join(
            f"{h}:{p}" for (h, _), p in zip(config.mysql_listen, mysql_ports, strict=False)
        )
    workers = f"; {config.workers} workers" if config.workers > 1 else ""
    err_console.print(
        f"paradise serve: listening on {addresses}; backend {target}; "
        f"roles {', '.join(roles)}{workers}",
        highlight=False,
    )


def _serve_process(
    config: ServerConfig,
    target: str,
    policy_dir: str | None,
    demo: bool,
    *,
    slot: WorkerSlot | None = None,
    pg_sockets: Sequence[socket.socket] = (),
    mysql_sockets: Sequence[socket.socket] = (),
    ready: Callable[[], None] | None = None,
    read_only: bool = False,
) -> None:
    """One server process: the processor, the PostgreSQL and MySQL listeners, until stopped."""
    from paradise.server import PgServer
    from paradise.server import serve as run_server
    from paradise.server.common.pipeline_handler import PipelineHandler

    processor = _open(target, policy_dir, read_only=read_only,
                      pool_size=config.limits.backend_connections)  # fmt: skip
    try:
        if slot is None:
            _warn_privileges(processor)
        if demo:
            from paradise.tools.demo_data import load_demo

            load_demo(processor)
        handler = PipelineHandler(processor)
        mysql = None
        if config.mysql_listen:  # the same users, roles and processor; queries read as MySQL
            from paradise.server.mysql.listener import MysqlListener

            mysql = MysqlListener(config, PipelineHandler(processor, read_dialect="mysql"),
                                  sockets=mysql_sockets, worker=slot)  # fmt: skip

        def started(server: PgServer) -> None:
            if ready is not None:
                ready()
                return
            mysql_ports = mysql.ports if mysql is not None else []
            _announce(config, target, server.ports, mysql_ports, processor.roles)

        async def run_all() -> None:
            if mysql is not None:
                await mysql.start()
            try:
                await run_server(config, handler, on_started=started, sockets=pg_sockets,
                                 worker=slot)  # fmt: skip
            finally:
                if mysql is not None:
                    await mysql.stop()

        asyncio.run(run_all())
    finally:
        processor.close()
