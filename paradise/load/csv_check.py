"""One strict pass over a CSV file before it is loaded: encoding, delimiter and shape.

DuckDB's CSV sniffer is forgiving where a loader must not be: a file whose rows
have different numbers of fields can come out as one column named after a data
line, and its errors quote the offending line (data). This pass reads the file
once with Python's ``csv`` module and stops at the first problem with the file
name and the line number, never the line's content:

- bytes that are not valid in the given encoding (``--encoding``);
- an empty file, or (with a header) a file with a header and no data row;
- a record with more or fewer fields than the header (or the first record).

When the file is not UTF-8 it is written out as UTF-8 on the way (DuckDB reads
UTF-8), so the encoding is handled by Python's codecs, any of them.

Example:
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "t.csv").write_text("a;b\\n1;2\\n3;4\\n")
    >>> check_csv(d / "t.csv")
    CsvShape(delimiter=';', header=True, fields=2, rows=2, utf8_path=None)
    >>> _ = (d / "r.csv").write_text("a,b\\n1,2\\n3\\n")
    >>> try:
    ...     check_csv(d / "r.csv")
    ... except InputError as e:
    ...     print(e.message)
    r.csv:3: 1 field where the header (line 1) has 2
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from paradise.errors import InputError

__all__ = ["DELIMITERS", "CsvShape", "check_csv", "csv_encoding", "is_csv"]

DELIMITERS = (",", ";", "\t", "|")
"""Delimiters tried when none is given, in order of preference."""

_SNIFF_RECORDS = 50
_LARGE_FIELD = 1 << 30  # quoted fields may be long (free text); the csv default is 128 KiB


@dataclass(frozen=True)
class CsvShape:
    """What the pass found.

    Attributes:
        delimiter: the field separator (given or detected).
        header: whether the first record names the columns.
        fields: fields per record.
        rows: data records (the header not counted).
        utf8_path: a UTF-8 copy of the file written on the way (None: the file is UTF-8).
    """

    delimiter: str
    header: bool
    fields: int
    rows: int
    utf8_path: Path | None


def is_csv(path: Path) -> bool:
    """Whether ``path`` is read as CSV (everything but Parquet)."""
    return not path.name.lower().endswith((".parquet", ".pq"))


def csv_encoding(name: str) -> str:
    """The codec name Python uses for ``name``; an unknown name is an :class:`InputError`.

    >>> csv_encoding("Latin-1"), csv_encoding("UTF8")
    ('iso8859-1', 'utf-8')
    """
    try:
        return codecs.lookup(name).name
    except LookupError as exc:
        raise InputError(
            f"unknown encoding {name!r}",
            hint="--encoding takes a codec name such as utf-8, latin-1, cp1252 or utf-16",
        ) from exc


def check_csv(
    path: Path,
    *,
    delimiter: str | None = None,
    header: bool = True,
    encoding: str = "utf-8",
    strict: bool = True,
    workdir: Path | None = None,
) -> CsvShape:
    """Read ``path`` once; raise :class:`InputError` at the first problem (file:line).

    Args:
        path: a ``.csv`` file, gzip-compressed when its name ends in ``.gz``.
        delimiter: the separator; None detects one of :data:`DELIMITERS`.
        header: the first record holds the column names.
        encoding: the file's encoding (any Python codec).
        strict: check the shape; False only decodes (and converts to UTF-8 if needed).
        workdir: where the UTF-8 copy of a non-UTF-8 file is written (needed for those).
    """
    codec = csv_encoding(encoding)
    if delimiter is not None and len(delimiter) != 1:
        raise InputError(
            f"the delimiter must be one character, got {len(delimiter)}",
            hint=r"pass --delimiter ';' or --delimiter '\t'",
        )
    copy: Path | None = None
    sink: IO[str] | None = None
    if codec != "utf-8":
        if workdir is None:
            raise InputError(f"{path.name}: a {codec} file needs a working directory")
        copy = workdir / "utf8.csv"
        sink = copy.open("w", encoding="utf-8", newline="")
    try:
        with _open_binary(path) as raw:
            lines = _decoded_lines(raw, codec, path.name, sink)
            head = _peek(lines, _SNIFF_RECORDS * 4)
            chosen = delimiter or _detect_delimiter(head)
            records = csv.reader(_chain(head, lines), delimiter=chosen, strict=strict)
            shape = _walk(records, path.name, chosen, header, strict)
    finally:
        if sink is not None:
            sink.close()
    return CsvShape(chosen, header, shape[0], shape[1], copy)


# --- reading ----------------------------------------------------------------------------
def _open_binary(path: Path) -> IO[bytes]:
    if path.name.lower().endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return path.open("rb")


def _decoded_lines(
    raw: IO[bytes], codec: str, name: str, sink: IO[str] | None
) -> Iterator[str]:
    """The file's lines as text; a byte sequence the codec rejects stops with its line."""
    if codec.startswith(("utf-16", "utf-32")):  # not ASCII-compatible: let the codec split
        text = io.TextIOWrapper(raw, encoding=codec, newline="")
        number = 0
        try:
            for number, line in enumerate(text, 1):  # noqa: B007 - the count is used below
                if sink is not None:
                    sink.write(line)
                yield line
        except UnicodeDecodeError as exc:
            raise _decode_error(name, number + 1, codec) from exc
        return
    decoder = codecs.getincrementaldecoder(codec)()
    for number, data in enumerate(raw, 1):
        try:
            line = decoder.decode(data)
        except UnicodeDecodeError as exc:
            raise _decode_error(name, number, codec) from exc
        if number == 1 and line.startswith("\ufeff"):
            line = line[1:]
        if sink is not None:
            sink.write(line)
        yield line
    try:
        tail = decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise _decode_error(name, number, codec) from exc
    if tail:
        if sink is not None:
            sink.write(tail)
        yield tail


def _decode_error(name: str, line: int, codec: str) -> InputError:
    return InputError(
        f"{name}:{line}: bytes that are not valid {codec}: the file has another encoding",
        hint="pass --encoding with the file's encoding, e.g. --encoding latin-1 or cp1252",
    )


def _peek(lines: Iterator[str], count: int) -> list[str]:
    head: list[str] = []
    for line in lines:
        head.append(line)
        if len(head) >= count:
            break
    return head


def _chain(head: list[str], rest: Iterator[str]) -> Iterator[str]:
    yield from head
    yield from rest


def _detect_delimiter(head: list[str]) -> str:
    """The candidate giving the header the most fields (consistent ones first), else ','."""
    best, best_key = ",", (False, 1)
    for candidate in DELIMITERS:
        try:
            rows = [r for r in csv.reader(head, delimiter=candidate, strict=False) if r]
        except csv.Error:
            continue
        if not rows or len(rows[0]) < 2:
            continue
        # the last line of the sample may be cut inside a record: leave it out
        counts = {len(r) for r in rows[:-1]} if len(rows) > 1 else {len(rows[0])}
        key = (counts == {len(rows[0])}, len(rows[0]))
        if key > best_key:
            best, best_key = candidate, key
    return best


def _walk(
    records: Iterator[list[str]], name: str, delimiter: str, header: bool, strict: bool
) -> tuple[int, int]:
    """(fields per record, data records), checking every record against the first."""
    csv.field_size_limit(_LARGE_FIELD)
    reader = records
    expected = -1
    first_line = 0
    rows = 0
    line = 0  # the last physical line read
    try:
        for record in reader:
            start = line + 1
            line = reader.line_num  # type: ignore[attr-defined]
            if not record:  # a blank line
                continue
            if expected < 0:
                expected, first_line = len(record), start
                if not header:
                    rows += 1
                continue
            if strict and len(record) != expected:
                what = "the header" if header else "the first record"
                noun = "field" if len(record) == 1 else "fields"
                raise InputError(
                    f"{name}:{start}: {len(record)} {noun} where {what} (line {first_line}) "
                    f"has {expected}",
                    hint=_shape_hint(delimiter),
                )
            rows += 1
    except csv.Error as exc:
        raise InputError(
            f"{name}:{line + 1}: malformed CSV ({exc})", hint=_shape_hint(delimiter)
        ) from exc
    if expected < 0:
        raise InputError(f"{name}: the file is empty", hint="check the file name")
    if strict and rows == 0:
        raise InputError(
            f"{name}:{first_line}: the file has a header line and no data rows",
            hint="pass --lenient to create the empty table, or --no-header if line "
            f"{first_line} is data",
        )
    return expected, rows


def _shape_hint(delimiter: str) -> str:
    shown = {"\t": "tab"}.get(delimiter, repr(delimiter))
    return (
        f"fix the line; the delimiter used was {shown} (--delimiter to change it); "
        "--lenient pads short rows with NULL"
    )
