"""pgJDBC against the proxy: a small Java program compiled at test time with ``javac``.

Needs a JDK and the PostgreSQL JDBC driver (Debian: ``apt-get install -y default-jdk-headless
libpostgresql-jdbc-java``; or point ``PARADISE_PGJDBC_JAR`` at a driver jar).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.server.conftest import PASSWORD
from tests.server.test_pipeline_proxy import proxy  # noqa: F401  (the shared fixture)

pytestmark = pytest.mark.timeout(180)

SOURCE = Path(__file__).parent / "jdbc" / "ParadiseJdbcCheck.java"
JAR = Path(os.environ.get("PARADISE_PGJDBC_JAR", "/usr/share/java/postgresql.jar"))


@pytest.fixture(scope="module")
def jdbc_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK: apt-get install -y default-jdk-headless")
    if not JAR.is_file():
        pytest.skip(f"no pgJDBC jar at {JAR}: apt-get install -y libpostgresql-jdbc-java")
    out = tmp_path_factory.mktemp("jdbc")
    subprocess.run(
        ["javac", "-d", str(out), "-cp", str(JAR), str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def test_jdbc_statement_prepared_metadata_and_error(
    proxy: int,  # noqa: F811
    jdbc_classes: Path,
) -> None:
    run = subprocess.run(
        ["java", "-cp", f"{JAR}{os.pathsep}{jdbc_classes}", "ParadiseJdbcCheck"]
        + [str(proxy), "ana", PASSWORD],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    found: dict[str, list[str]] = {}
    for line in run.stdout.splitlines():
        key, _, value = line.partition("=")
        found.setdefault(key, []).append(value)
    assert found["product"] == ["PostgreSQL 16.4"]
    assert found["aggregate"] == ["Female:10771", "Male:21790"]
    assert any(n.startswith("table adult: operators: slicing") for n in found["notice"])
    counts = [int(v.split(":")[1]) for v in found["prepared"]]
    assert len(counts) == 7 and all(n > 0 for n in counts)  # slicing permutes: counts vary
    assert found["table"] == ["public.adult"]
    columns = dict(v.split(":") for v in found["column"])
    assert columns["age"] == "int8" and columns["workclass"] == "varchar"
    assert "id" not in columns  # hidden from the analyst
    (error,) = found["error"]
    assert error.startswith("42501:") and "hidden" in error
    assert found["after"] == ["1"]
