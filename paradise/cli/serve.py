"""``paradise serve`` (the PostgreSQL-protocol proxy) and ``paradise user add``."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from paradise.cli.app import err_console, out_console, print_error
from paradise.errors import ParadiseError

if TYPE_CHECKING:
    from paradise.processor import Processor
    from paradise.server import ServerConfig
    from paradise.server.workers import WorkerSlot

__all__ = ["serve", "user"]


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML server configuration (listen addresses, TLS, users, backend, limits).",
)
@click.option("--backend", default=None, help="Database URL or DuckDB file (overrides the config).")
@click.option(
    "--policies",
    type=click.Path(file_okay=False),
    default=None,
    help="Policy directory (overrides the config; default: the bundled examples).",
)
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
def serve(
    config_path: str | None,
    backend: str | None,
    policies: str | None,
    listen: tuple[str, ...],
    mysql_listen: tuple[str, ...],
    demo: bool,
    workers: int | None,
) -> None:
    """Serve the PostgreSQL (and optionally MySQL) wire protocol through the pipeline."""
    from paradise.server import ServerConfig, load_config
    from paradise.server.config import parse_config

    config = load_config(config_path) if config_path else ServerConfig()
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
        raise ParadiseError(
            "no users configured",
            hint="create one with: paradise user add NAME --role ROLE --config FILE",
            sqlstate="28000",
        )
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
    # check the backend and policies once, here, before any worker starts
    preflight = _open(target, policy_dir, read_only=shared_file)
    roles = preflight.roles
    preflight.close()
    from paradise.anonymize.secret import process_secret
    from paradise.server.workers import run_workers

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


def _open(target: str, policy_dir: str | None, *, read_only: bool = False) -> Processor:
    from paradise.backends import connect_backend
    from paradise.processor import connect

    backend = connect_backend(target, read_only=read_only)
    try:
        return connect(backend, policies=policy_dir, read_dialect="postgres")
    except BaseException:
        backend.close()
        raise


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
    from paradise.server.pipeline_handler import PipelineHandler

    processor = _open(target, policy_dir, read_only=read_only)
    try:
        if demo:
            processor.load_demo()
        handler = PipelineHandler(processor)
        mysql = None
        if config.mysql_listen:  # the same users, roles and processor; queries read as MySQL
            from paradise.server.mysql import MysqlListener

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


@click.group()
def user() -> None:
    """Manage the proxy's users."""


@user.command("add")
@click.argument("name")
@click.option("--role", required=True, help="The policy role this user's queries run under.")
@click.option("--password", default=None, help="The password (prompted for when omitted).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Append the user to this TOML config instead of printing it.",
)
@click.option(
    "--auth",
    "auth_methods",
    multiple=True,
    default=("scram-sha-256",),
    show_default=True,
    type=click.Choice(["scram-sha-256", "md5", "password", "mysql-native"]),
    help="Allowed login methods (mysql-native: the MySQL listener, stores SHA1(SHA1(pw))).",
)
def add(
    name: str,
    role: str,
    password: str | None,
    config_path: str | None,
    auth_methods: tuple[str, ...],
) -> None:
    """Create a salted SCRAM-SHA-256 password entry for NAME mapped to ROLE."""
    from paradise.server import user_toml

    if password is None:
        password = click.prompt("password", hide_input=True, confirmation_prompt=True)
    block = user_toml(name, password, role, auth_methods=auth_methods)
    if config_path:
        path = Path(config_path)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if f'[users."{name}"]' in text or f"[users.{name}]" in text:
            raise ParadiseError(
                f"user {name!r} already exists in {path}",
                hint="choose another name",
                sqlstate="42710",
            )
        path.write_text(
            text + ("\n" if text and not text.endswith("\n") else "") + block + "\n",
            encoding="utf-8",
        )
        out_console.print(f"added user {name} (role {role}) to {path}", highlight=False)
    else:
        out_console.print(block, highlight=False, markup=False)
