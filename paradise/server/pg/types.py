"""SQL type names -> PostgreSQL type OIDs, and the value encoders/decoders of the wire.

Result columns arrive as :class:`~paradise.server.common.handler.ColumnSpec` with a type
name as DuckDB or PostgreSQL report it (``"INTEGER"``, ``"DECIMAL(10,2)"``,
``"TIMESTAMP WITH TIME ZONE"``, ``"INTEGER[]"``). :func:`pg_type` maps it to the
OID, length and modifier of the RowDescription and to the encoder of each
format. Bind parameters go the other way through :func:`decode_param`.

Example:
    >>> t = pg_type("DECIMAL(10,2)")
    >>> t.oid, t.size, t.modifier, t.binary(Decimal("-12.5"))
    (1700, -1, 655366, b'\\x00\\x02\\x00\\x00@\\x00\\x00\\x01\\x00\\x0c\\x13\\x88')
    >>> pg_type("INTEGER").text(42), pg_type("INTEGER").binary(42)
    (b'42', b'\\x00\\x00\\x00*')
    >>> decode_param(OID.INT4, 0, b"7"), decode_param(OID.DATE, 1, b"\\x00\\x00\\x00\\x01")
    (7, datetime.date(2000, 1, 2))
"""

from __future__ import annotations

import json
import math
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Context, Decimal, InvalidOperation
from enum import IntEnum
from functools import lru_cache
from typing import Any

__all__ = ["OID", "ParamDecodeError", "PgType", "decode_param", "pg_type", "text_value"]


class OID(IntEnum):
    """The PostgreSQL type OIDs paradise speaks."""

    BOOL = 16
    BYTEA = 17
    NAME = 19
    INT8 = 20
    INT2 = 21
    INT4 = 23
    TEXT = 25
    OID = 26
    JSON = 114
    FLOAT4 = 700
    FLOAT8 = 701
    UNKNOWN = 705
    BPCHAR = 1042
    VARCHAR = 1043
    DATE = 1082
    TIME = 1083
    TIMESTAMP = 1114
    TIMESTAMPTZ = 1184
    INTERVAL = 1186
    TIMETZ = 1266
    NUMERIC = 1700
    UUID = 2950
    JSONB = 3802


class ParamDecodeError(ValueError):
    """A Bind parameter does not decode as its declared type (SQLSTATE 22P02 / 22P03)."""

    def __init__(self, message: str, sqlstate: str = "22P02") -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


Encoder = Callable[[Any], bytes]

_EPOCH_DATE = date(2000, 1, 1)
_EPOCH = datetime(2000, 1, 1)
_EPOCH_TZ = datetime(2000, 1, 1, tzinfo=UTC)
_ORDINAL_EPOCH = _EPOCH_DATE.toordinal()
_WIDE = Context(prec=1000)
_B = struct.Struct("!b")
_H = struct.Struct("!h")
_I = struct.Struct("!i")
_Q = struct.Struct("!q")
_F = struct.Struct("!f")
_D = struct.Struct("!d")
_NUMERIC_HEAD = struct.Struct("!hhHH")
_INTERVAL = struct.Struct("!qii")
_TIMETZ = struct.Struct("!qi")
_ARRAY_HEAD = struct.Struct("!iiIii")

# ------------------------------------------------------------------------------------------
# Text format (by Python type: a generalised column may hold strings where numbers were)
# ------------------------------------------------------------------------------------------


def _float_text(v: float) -> bytes:
    if math.isnan(v):
        return b"NaN"
    if math.isinf(v):
        return b"Infinity" if v > 0 else b"-Infinity"
    r = repr(v)
    return (r[:-2] if r.endswith(".0") else r).encode()


def _decimal_text(v: Decimal) -> bytes:
    if v.is_nan():
        return b"NaN"
    if v.is_infinite():
        return b"Infinity" if v > 0 else b"-Infinity"
    return format(v, "f").encode()


def _interval_text(v: timedelta) -> bytes:
    days, secs, micros = v.days, v.seconds, v.microseconds
    if days < 0 and (secs or micros):  # PostgreSQL style: "-1 days +02:00:00"
        sign, total = "+", secs * 1_000_000 + micros
    else:
        sign, total = "", secs * 1_000_000 + micros
    hours, rest = divmod(total, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, micro = divmod(rest, 1_000_000)
    clock = f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}" + (f".{micro:06d}" if micro else "")
    return (f"{days} days {clock}" if days else clock).encode()


def _array_item(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, list | tuple):
        return _array_text(v).decode()
    s = text_value(v).decode()
    if s == "" or s.upper() == "NULL" or any(c in s for c in '{}," \\\t\n'):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


def _array_text(v: list[object] | tuple[object, ...]) -> bytes:
    return ("{" + ",".join(_array_item(x) for x in v) + "}").encode()


_TEXT_BY_TYPE: dict[type, Encoder] = {
    str: str.encode,
    int: lambda v: b"%d" % v,
    bool: lambda v: b"t" if v else b"f",
    float: _float_text,
    Decimal: _decimal_text,
    datetime: lambda v: v.isoformat(sep=" ").encode(),
    date: lambda v: v.isoformat().encode(),
    time: lambda v: v.isoformat().encode(),
    timedelta: _interval_text,
    uuid.UUID: lambda v: str(v).encode(),
    bytes: lambda v: b"\\x" + v.hex().encode(),
    bytearray: lambda v: b"\\x" + bytes(v).hex().encode(),
    memoryview: lambda v: b"\\x" + bytes(v).hex().encode(),
    list: _array_text,
    tuple: _array_text,
    dict: lambda v: json.dumps(v, default=str).encode(),
}


def text_value(v: object) -> bytes:
    """Text-format bytes of one non-NULL value, PostgreSQL style.

    Example:
        >>> [text_value(x) for x in (True, 1.0, Decimal("1E+2"), [1, None, "a b"], b"\\x01")]
        [b't', b'1', b'100', b'{1,NULL,"a b"}', b'\\\\x01']
    """
    enc = _TEXT_BY_TYPE.get(type(v))
    if enc is not None:
        return enc(v)
    for base, fn in _TEXT_BY_TYPE.items():  # subclasses (IntEnum, numpy-free str subclasses, ...)
        if isinstance(v, base):
            return fn(v)
    return str(v).encode()


# ------------------------------------------------------------------------------------------
# Binary format (by declared type)
# ------------------------------------------------------------------------------------------


def _numeric_binary(v: object) -> bytes:
    d = v if isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else str(v))
    if d.is_nan():
        return _NUMERIC_HEAD.pack(0, 0, 0xC000, 0)
    if d.is_infinite():
        return _NUMERIC_HEAD.pack(0, 0, 0xD000 if d > 0 else 0xF000, 0)
    sign, digit_tuple, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    dscale = max(-exponent, 0)
    if exponent > 0:
        digits += "0" * exponent
        exponent = 0
    split = len(digits) + exponent
    int_part, frac_part = (
        (digits[:split], digits[split:]) if split > 0 else ("", "0" * -split + digits)
    )
    int_part = int_part.zfill((len(int_part) + 3) // 4 * 4)
    frac_part = frac_part.ljust((len(frac_part) + 3) // 4 * 4, "0")
    groups = [int(int_part[i : i + 4]) for i in range(0, len(int_part), 4)]
    weight = len(groups) - 1
    groups += [int(frac_part[i : i + 4]) for i in range(0, len(frac_part), 4)]
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    head = _NUMERIC_HEAD.pack(len(groups), weight, 0x4000 if sign else 0, dscale)
    return head + struct.pack(f"!{len(groups)}H", *groups)


def _numeric_from_binary(data: bytes) -> Decimal:
    ndigits, weight, sign, dscale = _NUMERIC_HEAD.unpack_from(data)
    if sign == 0xC000:
        return Decimal("NaN")
    if sign in (0xD000, 0xF000):
        return Decimal("Infinity" if sign == 0xD000 else "-Infinity")
    groups = struct.unpack_from(f"!{ndigits}H", data, 8)
    digits = "".join(f"{g:04d}" for g in groups) or "0"
    value = Decimal(int(digits)).scaleb(4 * (weight - ndigits + 1), _WIDE)
    value = value.quantize(Decimal(1).scaleb(-dscale), context=_WIDE)
    return -value if sign == 0x4000 else value


def _micros(delta: timedelta) -> int:
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _timestamp_binary(v: datetime) -> bytes:
    if v.tzinfo is not None:
        return _Q.pack(_micros(v - _EPOCH_TZ))
    return _Q.pack(_micros(v - _EPOCH))


def _time_micros(v: time) -> int:
    return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond


def _timetz_binary(v: time) -> bytes:
    offset = v.utcoffset() or timedelta(0)
    return _TIMETZ.pack(_time_micros(v), -int(offset.total_seconds()))


def _uuid_binary(v: object) -> bytes:
    return v.bytes if isinstance(v, uuid.UUID) else uuid.UUID(str(v)).bytes


def _text_binary(v: object) -> bytes:
    return v.encode() if type(v) is str else text_value(v)


_BINARY: dict[int, Encoder] = {
    OID.BOOL: lambda v: b"\x01" if v else b"\x00",
    OID.BYTEA: bytes,
    OID.INT2: lambda v: _H.pack(v),
    OID.INT4: lambda v: _I.pack(v),
    OID.INT8: lambda v: _Q.pack(v),
    OID.OID: lambda v: struct.pack("!I", v),
    OID.FLOAT4: lambda v: _F.pack(v),
    OID.FLOAT8: lambda v: _D.pack(v),
    OID.NUMERIC: _numeric_binary,
    OID.DATE: lambda v: _I.pack(v.toordinal() - _ORDINAL_EPOCH),
    OID.TIME: lambda v: _Q.pack(_time_micros(v)),
    OID.TIMETZ: _timetz_binary,
    OID.TIMESTAMP: _timestamp_binary,
    OID.TIMESTAMPTZ: _timestamp_binary,
    OID.INTERVAL: lambda v: _INTERVAL.pack(v.seconds * 1_000_000 + v.microseconds, v.days, 0),
    OID.UUID: _uuid_binary,
    OID.JSONB: lambda v: b"\x01" + _text_binary(v),
}

# ------------------------------------------------------------------------------------------
# Type names
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PgType:
    """What a RowDescription says about a column, and how to encode its values."""

    oid: int
    size: int
    modifier: int
    text: Encoder
    binary: Encoder


# base oid, typlen, array oid
_BASE: dict[OID, tuple[int, int]] = {
    OID.BOOL: (1, 1000), OID.BYTEA: (-1, 1001), OID.NAME: (64, 1003), OID.INT8: (8, 1016),
    OID.INT2: (2, 1005), OID.INT4: (4, 1007), OID.TEXT: (-1, 1009), OID.OID: (4, 1028),
    OID.JSON: (-1, 199), OID.FLOAT4: (4, 1021), OID.FLOAT8: (8, 1022), OID.BPCHAR: (-1, 1014),
    OID.VARCHAR: (-1, 1015), OID.DATE: (4, 1182), OID.TIME: (8, 1183), OID.TIMESTAMP: (8, 1115),
    OID.TIMESTAMPTZ: (8, 1185), OID.INTERVAL: (16, 1187), OID.TIMETZ: (12, 1270),
    OID.NUMERIC: (-1, 1231), OID.UUID: (16, 2951), OID.JSONB: (-1, 3807),
}  # fmt: skip

_NAMES: dict[str, OID] = {
    **dict.fromkeys(("BOOLEAN", "BOOL", "LOGICAL"), OID.BOOL),
    **dict.fromkeys(("TINYINT", "INT1", "SMALLINT", "INT2", "SHORT", "UTINYINT"), OID.INT2),
    **dict.fromkeys(("INTEGER", "INT", "INT4", "SIGNED", "USMALLINT"), OID.INT4),
    **dict.fromkeys(("BIGINT", "INT8", "LONG", "UINTEGER"), OID.INT8),
    **dict.fromkeys(("UBIGINT", "HUGEINT", "UHUGEINT", "INT128", "VARINT", "BIGNUM"), OID.NUMERIC),
    **dict.fromkeys(("DECIMAL", "NUMERIC"), OID.NUMERIC),
    **dict.fromkeys(("REAL", "FLOAT4", "FLOAT"), OID.FLOAT4),
    **dict.fromkeys(("DOUBLE", "FLOAT8", "DOUBLE PRECISION"), OID.FLOAT8),
    **dict.fromkeys(("VARCHAR", "CHARACTER VARYING", "STRING"), OID.VARCHAR),
    **dict.fromkeys(("CHAR", "BPCHAR", "CHARACTER"), OID.BPCHAR),
    **dict.fromkeys(("BLOB", "BYTEA", "BINARY", "VARBINARY"), OID.BYTEA),
    **dict.fromkeys(("TIME", "TIME WITHOUT TIME ZONE"), OID.TIME),
    **dict.fromkeys(("TIMETZ", "TIME WITH TIME ZONE"), OID.TIMETZ),
    **dict.fromkeys(
        ("TIMESTAMP", "DATETIME", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMP_US",
         "TIMESTAMP WITHOUT TIME ZONE"),
        OID.TIMESTAMP,
    ),
    **dict.fromkeys(("TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"), OID.TIMESTAMPTZ),
    "TEXT": OID.TEXT, "DATE": OID.DATE, "INTERVAL": OID.INTERVAL, "UUID": OID.UUID,
    "JSON": OID.JSON, "JSONB": OID.JSONB, "NAME": OID.NAME, "OID": OID.OID,
}  # fmt: skip


def _modifier(oid: OID, args: str) -> int:
    try:
        numbers = [int(a) for a in args.split(",")]
    except ValueError:
        return -1
    if oid == OID.NUMERIC and len(numbers) in (1, 2):
        scale = numbers[1] if len(numbers) == 2 else 0
        return ((numbers[0] << 16) | scale) + 4
    if oid in (OID.VARCHAR, OID.BPCHAR) and len(numbers) == 1:
        return numbers[0] + 4
    return -1


def _array_binary(elem_oid: int, encode: Encoder) -> Encoder:
    def encode_array(v: list[object]) -> bytes:
        if any(isinstance(x, list | tuple) for x in v):
            raise ValueError("multi-dimensional arrays are only sent in text format")
        parts = [_ARRAY_HEAD.pack(1, int(None in v), elem_oid, len(v), 1)]
        for item in v:
            if item is None:
                parts.append(_I.pack(-1))
            else:
                data = encode(item)
                parts.append(_I.pack(len(data)) + data)
        return b"".join(parts)

    return encode_array


@lru_cache(maxsize=512)
def pg_type(type_name: str) -> PgType:
    """Map an SQL type name to its PostgreSQL type; unknown types travel as ``text``.

    Example:
        >>> [pg_type(n).oid for n in ("BIGINT", "VARCHAR(20)", "INTEGER[]", "STRUCT(a INTEGER)")]
        [20, 1043, 1007, 25]
    """
    name = " ".join(type_name.upper().split())
    if name.endswith("[]"):
        element = pg_type(name[:-2])
        array_oid = _BASE.get(OID(element.oid), (0, 0))[1] if element.oid in _BASE else 0
        if not array_oid:
            return pg_type("TEXT")
        return PgType(array_oid, -1, element.modifier, text_value,
                      _array_binary(element.oid, element.binary))  # fmt: skip
    base, _, args = name.partition("(")
    oid = _NAMES.get(base.strip(), OID.TEXT)
    modifier = _modifier(oid, args.rstrip(")")) if args else -1
    size = _BASE[oid][0]
    return PgType(int(oid), size, modifier, text_value, _BINARY.get(oid, _text_binary))


# ------------------------------------------------------------------------------------------
# Bind parameters
# ------------------------------------------------------------------------------------------

_TRUE = frozenset(("t", "true", "y", "yes", "on", "1"))
_FALSE = frozenset(("f", "false", "n", "no", "off", "0"))


def _bool_text(s: str) -> bool:
    low = s.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(s)


def _bytea_text(s: str) -> bytes:
    if s.startswith("\\x"):
        return bytes.fromhex(s[2:])
    return s.encode("latin-1").decode("unicode_escape").encode("latin-1")


def _float_param(s: str) -> float:
    return float({"infinity": "inf", "-infinity": "-inf"}.get(s.strip().lower(), s))


_TEXT_DECODERS: dict[int, Callable[[str], object]] = {
    OID.BOOL: _bool_text,
    OID.INT2: int, OID.INT4: int, OID.INT8: int, OID.OID: int,
    OID.FLOAT4: _float_param, OID.FLOAT8: _float_param,
    OID.NUMERIC: Decimal,
    OID.DATE: date.fromisoformat,
    OID.TIME: time.fromisoformat,
    OID.TIMETZ: time.fromisoformat,
    OID.TIMESTAMP: datetime.fromisoformat,
    OID.TIMESTAMPTZ: datetime.fromisoformat,
    OID.BYTEA: _bytea_text,
    OID.UUID: uuid.UUID,
}  # fmt: skip


def _interval_from_binary(data: bytes) -> timedelta:
    micros, days, months = _INTERVAL.unpack(data)
    if months:
        raise ParamDecodeError("intervals with months are only accepted in text format", "0A000")
    return timedelta(days=days, microseconds=micros)


_BINARY_DECODERS: dict[int, Callable[[bytes], object]] = {
    OID.BOOL: lambda b: b != b"\x00",
    OID.BYTEA: bytes,
    OID.INT2: lambda b: _H.unpack(b)[0],
    OID.INT4: lambda b: _I.unpack(b)[0],
    OID.INT8: lambda b: _Q.unpack(b)[0],
    OID.OID: lambda b: struct.unpack("!I", b)[0],
    OID.FLOAT4: lambda b: _F.unpack(b)[0],
    OID.FLOAT8: lambda b: _D.unpack(b)[0],
    OID.NUMERIC: _numeric_from_binary,
    OID.DATE: lambda b: date.fromordinal(_I.unpack(b)[0] + _ORDINAL_EPOCH),
    OID.TIME: lambda b: (datetime.min + timedelta(microseconds=_Q.unpack(b)[0])).time(),
    OID.TIMESTAMP: lambda b: _EPOCH + timedelta(microseconds=_Q.unpack(b)[0]),
    OID.TIMESTAMPTZ: lambda b: _EPOCH_TZ + timedelta(microseconds=_Q.unpack(b)[0]),
    OID.INTERVAL: _interval_from_binary,
    OID.UUID: lambda b: uuid.UUID(bytes=b),
    OID.JSONB: lambda b: b[1:].decode(),
}
_STRING_OIDS = frozenset((0, OID.TEXT, OID.VARCHAR, OID.BPCHAR, OID.NAME, OID.UNKNOWN, OID.JSON))


_ARRAY_ELEMENTS = {array: base for base, (_, array) in _BASE.items()}


def _array_from_binary(data: bytes) -> list[object]:
    """A one-dimensional array parameter in binary format (asyncpg sends ``oid[]`` so)."""
    ndim, _has_null, element = struct.unpack_from("!iiI", data)
    if ndim == 0:
        return []
    if ndim != 1:
        raise ParamDecodeError("only one-dimensional array parameters are supported", "0A000")
    count, _lower = struct.unpack_from("!ii", data, 12)
    decoder = _BINARY_DECODERS.get(element)
    if decoder is None and element not in _STRING_OIDS:
        raise ParamDecodeError(f"binary arrays of type OID {element} are not supported", "0A000")
    pos = 20
    items: list[object] = []
    for _ in range(count):
        (size,) = _I.unpack_from(data, pos)
        pos += 4
        if size < 0:
            items.append(None)
            continue
        raw = data[pos : pos + size]
        pos += size
        items.append(raw.decode("utf-8") if decoder is None else decoder(raw))
    return items


def decode_param(oid: int, fmt: int, data: bytes) -> object:
    """Decode one Bind parameter (``fmt`` 0 = text, 1 = binary) to a Python value.

    Parameters of unspecified type (OID 0) in text format stay strings, as PostgreSQL
    would treat an ``unknown`` literal; the handler casts them as the query needs.

    Raises:
        ParamDecodeError: the bytes do not fit the type, or the type has no binary decoder.

    Example:
        >>> decode_param(0, 0, b"abc"), decode_param(OID.BOOL, 0, b"t")
        ('abc', True)
        >>> decode_param(OID.INT8, 1, bytes(7) + b"\\x05")
        5
    """
    try:
        if fmt == 0:
            text = data.decode("utf-8")
            if oid in _STRING_OIDS:
                return text
            return _TEXT_DECODERS.get(oid, str)(text)
        if fmt != 1:
            raise ParamDecodeError(f"unsupported format code: {fmt}", "08P01")
        if oid in _STRING_OIDS and oid not in (0, OID.UNKNOWN):
            return data.decode("utf-8")
        if oid in _ARRAY_ELEMENTS:
            return _array_from_binary(data)
        decoder = _BINARY_DECODERS.get(oid)
        if decoder is None:
            raise ParamDecodeError(
                f"binary parameters of type OID {oid} are not supported; send them as text"
                " or declare their type",
                "0A000",
            )
        return decoder(data)
    except ParamDecodeError:
        raise
    except UnicodeDecodeError as exc:
        raise ParamDecodeError("invalid byte sequence for encoding UTF8", "22021") from exc
    except (ValueError, InvalidOperation, struct.error, OverflowError, IndexError) as exc:
        kind = "binary" if fmt else "text"
        raise ParamDecodeError(
            f"invalid {kind} representation for a parameter of type OID {oid}",
            "22P03" if fmt else "22P02",
        ) from exc
