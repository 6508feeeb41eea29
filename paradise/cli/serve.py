"""``paradise serve`` (the PostgreSQL-protocol proxy) and ``paradise user add``."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import click

from paradise.cli.app import err_console, out_console
from paradise.errors import ParadiseError

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
def serve(
    config_path: str | None,
    backend: str | None,
    policies: str | None,
    listen: tuple[str, ...],
    mysql_listen: tuple[str, ...],
    demo: bool,
) -> None:
    """Serve the PostgreSQL (and optionally MySQL) wire protocol through the pipeline."""
    from paradise.processor import connect
    from paradise.server import PgServer, ServerConfig, load_config
    from paradise.server.config import parse_config
    from paradise.server.pipeline_handler import PipelineHandler

    config = load_config(config_path) if config_path else ServerConfig()
    if listen:
        config = dataclasses.replace(
            config, listen=parse_config({"listen": list(listen)}, source="--listen").listen
        )
    if mysql_listen:
        parsed = parse_config({"mysql_listen": list(mysql_listen)}, source="--mysql-listen")
        config = dataclasses.replace(config, mysql_listen=parsed.mysql_listen)
    target = backend or config.backend or ":memory:"
    policy_dir = policies or (str(config.policies) if config.policies else None)
    if not config.users:
        raise ParadiseError(
            "no users configured",
            hint="create one with: paradise user add NAME --role ROLE --config FILE",
            sqlstate="28000",
        )
    processor = connect(target, policies=policy_dir, read_dialect="postgres")
    if demo:
        processor.load_demo()
    handler = PipelineHandler(processor)
    mysql = None
    if config.mysql_listen:  # the same users, roles and processor; queries read as MySQL
        from paradise.server.mysql import MysqlListener

        mysql = MysqlListener(config, PipelineHandler(processor, read_dialect="mysql"))

    def started(server: PgServer) -> None:
        addresses = ", ".join(
            f"{h}:{p}" for (h, _), p in zip(config.listen, server.ports, strict=False)
        )
        if mysql is not None:
            addresses += ", MySQL " + ", ".join(
                f"{h}:{p}" for (h, _), p in zip(config.mysql_listen, mysql.ports, strict=False)
            )
        err_console.print(
            f"paradise serve: listening on {addresses}; backend {target}; "
            f"roles {', '.join(processor.roles)}",
            highlight=False,
        )

    from paradise.server import serve as run_server

    async def run_all() -> None:
        if mysql is not None:
            await mysql.start()
        try:
            await run_server(config, handler, on_started=started)
        finally:
            if mysql is not None:
                await mysql.stop()

    try:
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
