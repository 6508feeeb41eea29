"""Codec and type tests from literal bytes: no sockets, no server."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paradise.server.pg import messages as m
from paradise.server.pg.codec import FrontendDecoder, ProtocolViolation, encode, encode_data_row
from paradise.server.pg.types import OID, ParamDecodeError, decode_param, pg_type, text_value

pytestmark = pytest.mark.timeout(30)

STARTUP = b"\x00\x00\x00\x1e\x00\x03\x00\x00user\x00ana\x00database\x00db\x00\x00"
PARSE = b"P\x00\x00\x00\x17s1\x00select $1\x00\x00\x01\x00\x00\x00\x17"
BIND = (
    b"B\x00\x00\x00\x1e"
    b"\x00s1\x00"  # portal "", statement "s1"
    b"\x00\x01\x00\x01"  # one format code: binary
    b"\x00\x02\x00\x00\x00\x04\x00\x00\x00\x07\xff\xff\xff\xff"  # 2 params: int4 7, NULL
    b"\x00\x01\x00\x01"  # one result format: binary
)


def decode_all(data: bytes, *, startup: bool = False) -> list[m.FrontendMessage]:
    dec = FrontendDecoder(startup=startup)
    dec.feed(data)
    out = []
    for _ in range(100):
        msg = dec.next_message()
        if msg is None:
            break
        out.append(msg)
    assert dec.buffered == 0
    return out


def test_startup_message() -> None:
    assert decode_all(STARTUP, startup=True) == [
        m.StartupMessage(196608, {"user": "ana", "database": "db"})
    ]


def test_startup_fed_byte_by_byte() -> None:
    dec = FrontendDecoder()
    results = []
    for i in range(len(STARTUP)):
        dec.feed(STARTUP[i : i + 1])
        results.append(dec.next_message())
    assert results[:-1] == [None] * (len(STARTUP) - 1)
    assert isinstance(results[-1], m.StartupMessage)
    assert dec.startup is False


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x00\x00\x00\x08\x04\xd2\x16\x2f", m.SSLRequest()),
        (b"\x00\x00\x00\x08\x04\xd2\x16\x30", m.GSSENCRequest()),
        (b"\x00\x00\x00\x10\x04\xd2\x16\x2e\x00\x00\x03\xe8\xde\xad\xbe\xef",
         m.CancelRequest(1000, b"\xde\xad\xbe\xef")),
        (b"\x00\x00\x00\x2c\x04\xd2\x16\x2e\x00\x00\x03\xe8" + bytes(range(32)),
         m.CancelRequest(1000, bytes(range(32)))),
    ],
    ids=["ssl", "gssenc", "cancel-3.0", "cancel-3.2"],
)  # fmt: skip
def test_startup_phase_requests(data: bytes, expected: m.FrontendMessage) -> None:
    dec = FrontendDecoder()
    dec.feed(data)
    assert dec.next_message() == expected
    assert dec.startup  # still expecting the startup packet


def test_ssl_request_then_startup_in_one_chunk_leaves_bytes_buffered() -> None:
    dec = FrontendDecoder()
    dec.feed(b"\x00\x00\x00\x08\x04\xd2\x16\x2f" + STARTUP)
    assert dec.next_message() == m.SSLRequest()
    assert dec.buffered == len(STARTUP)  # what the session checks (CVE-2021-23214)


def test_typed_messages() -> None:
    data = (
        b"Q\x00\x00\x00\x0dselect 1\x00"
        + PARSE
        + BIND
        + b"D\x00\x00\x00\x06P\x00"
        + b"E\x00\x00\x00\x09\x00\x00\x00\x00\x05"
        + b"C\x00\x00\x00\x08Ss1\x00"
        + b"H\x00\x00\x00\x04S\x00\x00\x00\x04X\x00\x00\x00\x04"
        + b"p\x00\x00\x00\x09pw\x00\x00x"
    )
    assert decode_all(data) == [
        m.Query("select 1"),
        m.Parse("s1", "select $1", (23,)),
        m.Bind("", "s1", (1,), (b"\x00\x00\x00\x07", None), (1,)),
        m.Describe("P", ""),
        m.Execute("", 5),
        m.Close("S", "s1"),
        m.Flush(),
        m.Sync(),
        m.Terminate(),
        m.PasswordMessage(b"pw\x00\x00x"),
    ]


def test_partial_typed_message_waits() -> None:
    dec = FrontendDecoder(startup=False)
    dec.feed(PARSE[:3])
    assert dec.next_message() is None
    dec.feed(PARSE[3:-1])
    assert dec.next_message() is None
    dec.feed(PARSE[-1:] + b"S\x00\x00")
    assert isinstance(dec.next_message(), m.Parse)
    assert dec.next_message() is None
    dec.feed(b"\x00\x04")
    assert dec.next_message() == m.Sync()


def test_copy_and_unknown_messages_are_surfaced_not_guessed() -> None:
    assert decode_all(b"d\x00\x00\x00\x06ab" + b"F\x00\x00\x00\x04") == [
        m.CopyFrontendMessage(b"d", b"ab"),
        m.UnsupportedMessage(b"F", b""),
    ]


@pytest.mark.parametrize(
    ("data", "startup"),
    [
        (b"Q\x00\x00\x00\x03", False),  # length < 4
        (b"Q\x7f\x00\x00\x00", False),  # larger than the limit
        (b"D\x00\x00\x00\x06X\x00", False),  # bad describe kind
        (b"S\x00\x00\x00\x05\x00", False),  # trailing bytes in Sync
        (b"Q\x00\x00\x00\x07ab\xff", False),  # unterminated string
        (b"Q\x00\x00\x00\x07\xff\xfe\x00", False),  # invalid UTF-8
        (b"\x00\x00\x00\x08\x00\x02\x00\x00", True),  # protocol 2.0
        (b"\x00\x00\x00\x04\x00\x03\x00\x00", True),  # startup length < 8
        (b"\x00\x00\x00\x0c\x00\x03\x00\x00user", True),  # unterminated parameter
    ],
)
def test_malformed_input_is_a_protocol_violation(data: bytes, startup: bool) -> None:
    dec = FrontendDecoder(startup=startup, max_message_size=1 << 20)
    dec.feed(data)
    with pytest.raises(ProtocolViolation):
        for _ in range(3):
            dec.next_message()


# -- encoding ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("msg", "wire"),
    [
        (m.SSLResponse(False), b"N"),
        (m.AuthenticationOk(), b"R\x00\x00\x00\x08\x00\x00\x00\x00"),
        (m.AuthenticationCleartextPassword(), b"R\x00\x00\x00\x08\x00\x00\x00\x03"),
        (m.AuthenticationMD5Password(b"salt"), b"R\x00\x00\x00\x0c\x00\x00\x00\x05salt"),
        (m.AuthenticationSASL(("SCRAM-SHA-256",)),
         b"R\x00\x00\x00\x17\x00\x00\x00\x0aSCRAM-SHA-256\x00\x00"),
        (m.AuthenticationSASLContinue(b"r=x"), b"R\x00\x00\x00\x0b\x00\x00\x00\x0br=x"),
        (m.AuthenticationSASLFinal(b"v=y"), b"R\x00\x00\x00\x0b\x00\x00\x00\x0cv=y"),
        (m.ParameterStatus("a", "b"), b"S\x00\x00\x00\x08a\x00b\x00"),
        (m.BackendKeyData(7, b"\x01\x02\x03\x04"),
         b"K\x00\x00\x00\x0c\x00\x00\x00\x07\x01\x02\x03\x04"),
        (m.NegotiateProtocolVersion(2, ("_pq_.x",)),
         b"v\x00\x00\x00\x13\x00\x03\x00\x02\x00\x00\x00\x01_pq_.x\x00"),
        (m.ReadyForQuery("T"), b"Z\x00\x00\x00\x05T"),
        (m.RowDescription((m.FieldDescription("n", 23, 4, -1, 0),)),
         b"T\x00\x00\x00\x1a\x00\x01n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x04"
         b"\xff\xff\xff\xff\x00\x00"),
        (m.DataRow((b"1", None, b"")),
         b"D\x00\x00\x00\x13\x00\x03\x00\x00\x00\x011\xff\xff\xff\xff\x00\x00\x00\x00"),
        (m.CommandComplete("SELECT 1"), b"C\x00\x00\x00\x0dSELECT 1\x00"),
        (m.EmptyQueryResponse(), b"I\x00\x00\x00\x04"),
        (m.ParseComplete(), b"1\x00\x00\x00\x04"),
        (m.BindComplete(), b"2\x00\x00\x00\x04"),
        (m.CloseComplete(), b"3\x00\x00\x00\x04"),
        (m.NoData(), b"n\x00\x00\x00\x04"),
        (m.PortalSuspended(), b"s\x00\x00\x00\x04"),
        (m.ParameterDescription((23, 25)),
         b"t\x00\x00\x00\x0e\x00\x02\x00\x00\x00\x17\x00\x00\x00\x19"),
        (m.ErrorResponse.error("42501", "no", hint="h"),
         b"E\x00\x00\x00\x21SERROR\x00VERROR\x00C42501\x00Mno\x00Hh\x00\x00"),
        (m.NoticeResponse.notice("k=5"),
         b"N\x00\x00\x00\x21SNOTICE\x00VNOTICE\x00C00000\x00Mk=5\x00\x00"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, object) and not isinstance(v, bytes) else "",
)  # fmt: skip
def test_encode_backend_messages(msg: m.BackendMessage, wire: bytes) -> None:
    assert encode(msg) == wire


def test_encode_data_row_matches_message() -> None:
    values = (b"abc", None, "é".encode())
    assert encode_data_row(values) == encode(m.DataRow(values))


# -- types -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "oid", "size", "modifier"),
    [
        ("INTEGER", 23, 4, -1), ("BIGINT", 20, 8, -1), ("SMALLINT", 21, 2, -1),
        ("TINYINT", 21, 2, -1), ("HUGEINT", 1700, -1, -1), ("VARCHAR", 1043, -1, -1),
        ("VARCHAR(20)", 1043, -1, 24), ("DOUBLE", 701, 8, -1), ("FLOAT", 700, 4, -1),
        ("DECIMAL(10,2)", 1700, -1, (10 << 16 | 2) + 4), ("DATE", 1082, 4, -1),
        ("TIMESTAMP", 1114, 8, -1), ("TIMESTAMP WITH TIME ZONE", 1184, 8, -1),
        ("BOOLEAN", 16, 1, -1), ("BLOB", 17, -1, -1), ("UUID", 2950, 16, -1), ("JSON", 114, -1, -1),
        ("INTEGER[]", 1007, -1, -1), ("VARCHAR[]", 1015, -1, -1), ("STRUCT(a INTEGER)", 25, -1, -1),
        ("\"NULL\"", 25, -1, -1), ("interval", 1186, 16, -1),
    ],
)  # fmt: skip
def test_type_names(name: str, oid: int, size: int, modifier: int) -> None:
    t = pg_type(name)
    assert (t.oid, t.size, t.modifier) == (oid, size, modifier)


UTC = UTC


@pytest.mark.parametrize(
    ("type_name", "value", "text", "binary"),
    [
        ("BOOLEAN", True, b"t", b"\x01"),
        ("SMALLINT", -2, b"-2", b"\xff\xfe"),
        ("INTEGER", 42, b"42", b"\x00\x00\x00\x2a"),
        ("BIGINT", 2**40, b"1099511627776", b"\x00\x00\x01\x00\x00\x00\x00\x00"),
        ("DOUBLE", 1.5, b"1.5", b"\x3f\xf8\x00\x00\x00\x00\x00\x00"),
        ("DOUBLE", 100.0, b"100", b"\x40\x59\x00\x00\x00\x00\x00\x00"),
        ("DOUBLE", float("nan"), b"NaN", b"\x7f\xf8\x00\x00\x00\x00\x00\x00"),
        ("REAL", 0.5, b"0.5", b"\x3f\x00\x00\x00"),
        ("DECIMAL(10,2)", Decimal("1234.50"), b"1234.50",
         b"\x00\x02\x00\x00\x00\x00\x00\x02\x04\xd2\x13\x88"),
        ("DECIMAL(10,4)", Decimal("0.0001"), b"0.0001",
         b"\x00\x01\xff\xff\x00\x00\x00\x04\x00\x01"),
        ("VARCHAR", "zürich", "zürich".encode(), "zürich".encode()),
        ("DATE", date(2000, 1, 2), b"2000-01-02", b"\x00\x00\x00\x01"),
        ("DATE", date(1999, 12, 31), b"1999-12-31", b"\xff\xff\xff\xff"),
        ("TIMESTAMP", datetime(2000, 1, 1, 0, 0, 1), b"2000-01-01 00:00:01",
         b"\x00\x00\x00\x00\x00\x0f\x42\x40"),
        ("TIMESTAMPTZ", datetime(2000, 1, 1, 1, 0, 1, tzinfo=timezone(timedelta(hours=1))),
         b"2000-01-01 01:00:01+01:00", b"\x00\x00\x00\x00\x00\x0f\x42\x40"),
        ("TIME", time(0, 0, 1, 5), b"00:00:01.000005", b"\x00\x00\x00\x00\x00\x0f\x42\x45"),
        ("INTERVAL", timedelta(days=1, seconds=1), b"1 days 00:00:01",
         b"\x00\x00\x00\x00\x00\x0f\x42\x40\x00\x00\x00\x01\x00\x00\x00\x00"),
        ("UUID", uuid.UUID(int=1), b"00000000-0000-0000-0000-000000000001", bytes(15) + b"\x01"),
        ("BLOB", b"\x00\xff", b"\\x00ff", b"\x00\xff"),
        ("JSON", '{"a": 1}', b'{"a": 1}', b'{"a": 1}'),
        ("INTEGER[]", [1, None], b"{1,NULL}",
         b"\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x17\x00\x00\x00\x02\x00\x00\x00\x01"
         b"\x00\x00\x00\x04\x00\x00\x00\x01\xff\xff\xff\xff"),
        ("VARCHAR[]", ["a b", "x"], b'{"a b",x}', None),
    ],
)  # fmt: skip
def test_value_encoders(type_name: str, value: object, text: bytes, binary: bytes | None) -> None:
    t = pg_type(type_name)
    assert t.text(value) == text
    if binary is not None:
        assert t.binary(value) == binary


def test_text_of_generalised_values_follows_the_python_type() -> None:
    assert text_value("20-29") == b"20-29"  # an INTEGER column generalised to ranges
    assert text_value({"a": 1}) == b'{"a": 1}'
    assert text_value(Decimal("1E+3")) == b"1000"


@pytest.mark.parametrize(
    ("oid", "fmt", "data", "value"),
    [
        (0, 0, b"abc", "abc"), (OID.TEXT, 1, b"abc", "abc"), (OID.BOOL, 0, b"t", True),
        (OID.BOOL, 1, b"\x00", False), (OID.INT2, 0, b"-5", -5),
        (OID.INT4, 1, b"\x00\x00\x01\x00", 256),
        (OID.INT8, 0, b"9000000000", 9000000000), (OID.FLOAT8, 0, b"Infinity", float("inf")),
        (OID.FLOAT8, 1, b"\x3f\xf8\x00\x00\x00\x00\x00\x00", 1.5),
        (OID.NUMERIC, 0, b"12.30", Decimal("12.30")),
        (OID.NUMERIC, 1, b"\x00\x02\x00\x00\x40\x00\x00\x02\x00\x0c\x0b\xb8", Decimal("-12.30")),
        (OID.DATE, 0, b"2024-02-29", date(2024, 2, 29)),
        (OID.TIMESTAMP, 0, b"2024-02-29 12:00:00", datetime(2024, 2, 29, 12)),
        (OID.TIMESTAMPTZ, 0, b"2024-02-29 12:00:00+00", datetime(2024, 2, 29, 12, tzinfo=UTC)),
        (OID.TIMESTAMP, 1, b"\x00\x00\x00\x00\x00\x0f\x42\x40", datetime(2000, 1, 1, 0, 0, 1)),
        (OID.BYTEA, 0, b"\\x00ff", b"\x00\xff"), (OID.UUID, 1, bytes(16), uuid.UUID(int=0)),
        (OID.JSONB, 1, b'\x01{"a":1}', '{"a":1}'),
    ],
)  # fmt: skip
def test_decode_param(oid: int, fmt: int, data: bytes, value: object) -> None:
    assert decode_param(oid, fmt, data) == value


@pytest.mark.parametrize(
    ("oid", "fmt", "data", "sqlstate"),
    [
        (OID.INT4, 0, b"abc", "22P02"), (OID.INT4, 1, b"\x00", "22P03"),
        (OID.BOOL, 0, b"maybe", "22P02"), (OID.DATE, 0, b"2024-13-01", "22P02"),
        (600, 1, b"\x00", "0A000"), (0, 1, b"\x00", "0A000"), (OID.TEXT, 0, b"\xff", "22021"),
        (OID.INT4, 2, b"1", "08P01"),
    ],
)  # fmt: skip
def test_decode_param_errors(oid: int, fmt: int, data: bytes, sqlstate: str) -> None:
    with pytest.raises(ParamDecodeError) as info:
        decode_param(oid, fmt, data)
    assert info.value.sqlstate == sqlstate


@settings(max_examples=300, deadline=None)
@given(
    st.decimals(
        allow_nan=False, allow_infinity=False, places=6, min_value=-(10**20), max_value=10**20
    )
)
def test_numeric_binary_round_trip(value: Decimal) -> None:
    encoded = pg_type("NUMERIC").binary(value)
    decoded = decode_param(OID.NUMERIC, 1, encoded)
    assert decoded == value
    assert str(decoded) == format(value, "f")
