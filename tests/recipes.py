"""Run the recipes of README.md and docs/*.md as written, in a fresh temporary directory.

Every fenced block labelled ``bash``/``sh``/``console``/``python`` is a recipe. The
blocks of one document run in order in one directory (a later block may use a file an
earlier one made), each in its own process; ``console`` blocks run their ``$ `` lines.
An HTML comment on the line before a fence says what a recipe needs:

- ``<!-- recipe: skip REASON -->`` — not run (the reason is required);
- ``<!-- recipe: needs postgres -->`` / ``needs mysql`` — run against a scratch
  database on the server (the documented default URL is replaced by the scratch
  database's; an unreachable server skips, or fails with PARADISE_REQUIRE_BACKENDS=1);
- ``<!-- recipe: server -->`` — the ``paradise serve`` line runs in the background
  until it listens, the lines after it run against it, then it is stopped; the
  documented ports (6543, 3307) are replaced by free ones.

Prompts read :data:`PASSWORD` from standard input, and ``PGPASSWORD`` carries it.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNABLE = {"bash": "shell", "sh": "shell", "shell": "shell", "console": "console",
            "python": "python", "py": "python"}
PASSWORD = "recipe-secret"
POSTGRES_DOC_URLS = ("postgresql://postgres@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1/test")
MYSQL_DOC_URLS = ("mysql+pymysql://root@127.0.0.1:3306/test", "mysql+pymysql://root@127.0.0.1/test")
PORTS = ("6543", "3307")
_MARKER = re.compile(r"^<!--\s*recipe:\s*(?P<kind>skip|needs|server)\b\s*(?P<arg>.*?)\s*-->$")
_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a document."""

    doc: str
    line: int
    lang: str
    code: str
    marker: tuple[str, str] | None

    @property
    def kind(self) -> str | None:
        """``shell``, ``console``, ``python`` or None (not a recipe: YAML, TOML, text)."""
        return RUNNABLE.get(self.lang)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` with the recipe marker in front of each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    number = 0
    while number < len(lines):
        fence = _FENCE.match(lines[number])
        if fence is None:
            number += 1
            continue
        start = number
        end = start + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        previous = next((lines[i].strip() for i in range(start - 1, -1, -1) if lines[i].strip()),
                        "")
        marked = _MARKER.match(previous)
        marker = (marked["kind"], marked["arg"]) if marked else None
        doc = str(path.relative_to(ROOT))
        blocks.append(Block(doc, start + 1, fence["lang"], "\n".join(lines[start + 1 : end]),
                            marker))
        number = end + 1
    return blocks


def console_commands(code: str) -> str:
    """The ``$ `` lines of a console block, as a script."""
    return "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ "))


def free_port() -> int:
    """A port nobody listens on right now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(workdir: Path) -> dict[str, str]:
    """The environment a recipe runs in: this interpreter's scripts first on PATH."""
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARADISE_DB",
                                                                    "PARADISE_POLICIES"))}
    env.update(PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}", PGPASSWORD=PASSWORD,
               HOME=str(workdir), PYTHONUNBUFFERED="1")
    return env


def run(kind: str, code: str, workdir: Path, where: str, timeout: float = 600) -> None:
    """Run one recipe; fail with its output when it exits non-zero."""
    if kind == "python":
        command = [sys.executable, "-c", code]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", code]
    done = subprocess.run(
        command, cwd=workdir, env=environment(workdir), input=f"{PASSWORD}\n{PASSWORD}\n",
        capture_output=True, text=True, timeout=timeout, start_new_session=True,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"recipe {where} failed with exit code {done.returncode}\n--- recipe ---\n{code}\n"
            f"--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}"
        )


def run_with_server(kind: str, code: str, workdir: Path, where: str) -> None:
    """Run the lines before ``paradise serve``, the server in the background, then the rest."""
    script = console_commands(code) if kind == "console" else code
    for port in PORTS:
        script = script.replace(port, str(free_port()))
    lines = script.splitlines()
    index = next(i for i, line in enumerate(lines) if line.strip().startswith("paradise serve"))
    before, serve, after = "\n".join(lines[:index]), lines[index], "\n".join(lines[index + 1 :])
    if before.strip():
        run("shell", before, workdir, f"{where} (before the server)")
    server = subprocess.Popen(
        ["bash", "-c", f"exec {serve.split('#')[0]}"], cwd=workdir, env=environment(workdir),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        assert server.stderr is not None
        deadline = time.monotonic() + 120
        seen = ""
        while "listening on" not in seen:
            line = server.stderr.readline()
            if not line or time.monotonic() > deadline:
                raise AssertionError(f"recipe {where}: the server did not start:\n{seen}")
            seen += line
        run("shell", after, workdir, f"{where} (against the server)")
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()


@contextmanager
def scratch_database(kind: str) -> Iterator[str]:
    """A database of its own on the server (dropped afterwards); its URL."""
    from sqlalchemy.engine import make_url
    from sqlglot import exp

    from paradise.backends import connect_backend

    if kind == "postgres":
        base = os.environ.get("PARADISE_POSTGRES_URL", POSTGRES_DOC_URLS[0])
    else:
        base = os.environ.get("PARADISE_MYSQL_URL", MYSQL_DOC_URLS[0])
    admin = connect_backend(base)  # BackendError when unreachable
    name = f"paradise_recipe_{os.getpid()}_{secrets.token_hex(3)}"
    ident = exp.to_identifier(name, quoted=True).sql(admin.dialect)
    admin.run(f"CREATE DATABASE {ident}")
    try:
        yield make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        drop = f"DROP DATABASE {ident}" + (" WITH (FORCE)" if kind == "postgres" else "")
        admin.run(drop)
        admin.close()


def substitute(code: str, urls: dict[str, str]) -> str:
    """``code`` with the documented server URLs replaced by the scratch databases'."""
    for kind, url in urls.items():
        for documented in POSTGRES_DOC_URLS if kind == "postgres" else MYSQL_DOC_URLS:
            code = code.replace(documented, url)
    return code
