"""The session state machine driven with message bytes; handler calls run inline (no threads)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
from collections.abc import Sequence
from typing import Any

import pytest

from paradise.server.pg.calls import CallOutcome, CallToken, HandlerCall, perform_call
from paradise.server.pg.session import (
    CLOSE,
    NEED_DATA,
    CancelTarget,
    Phase,
    Session,
    SessionConfig,
    StartTLS,
)  # fmt: skip

pytestmark = pytest.mark.timeout(30)

# -- frontend message builders -----------------------------------------------------------------


def _msg(code: bytes, body: bytes) -> bytes:
    return code + struct.pack("!I", len(body) + 4) + body


def _z(text: str) -> bytes:
    return text.encode() + b"\x00"


def startup(user: str = "ana", minor: int = 0, **extra: str) -> bytes:
    body = struct.pack("!HH", 3, minor) + _z("user") + _z(user)
    for key, value in extra.items():
        body += _z(key.replace("_dot_", ".")) + _z(value)
    body += b"\x00"
    return struct.pack("!I", len(body) + 4) + body


SSL_REQUEST = b"\x00\x00\x00\x08\x04\xd2\x16\x2f"


def query(sql: str) -> bytes:
    return _msg(b"Q", _z(sql))


def parse(sql: str, name: str = "", oids: Sequence[int] = ()) -> bytes:
    return _msg(b"P", _z(name) + _z(sql) + struct.pack(f"!h{len(oids)}I", len(oids), *oids))


def bind(params: Sequence[bytes | None] = (), *, statement: str = "", portal: str = "",
         formats: Sequence[int] = (), result_formats: Sequence[int] = ()) -> bytes:  # fmt: skip
    body = _z(portal) + _z(statement) + struct.pack(f"!h{len(formats)}h", len(formats), *formats)
    body += struct.pack("!h", len(params))
    for p in params:
        body += struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p
    body += struct.pack(f"!h{len(result_formats)}h", len(result_formats), *result_formats)
    return _msg(b"B", body)


def describe(kind: str, name: str = "") -> bytes:
    return _msg(b"D", kind.encode() + _z(name))


def execute(portal: str = "", max_rows: int = 0) -> bytes:
    return _msg(b"E", _z(portal) + struct.pack("!i", max_rows))


def close(kind: str, name: str) -> bytes:
    return _msg(b"C", kind.encode() + _z(name))


SYNC = _msg(b"S", b"")
TERMINATE = _msg(b"X", b"")


def password(data: bytes) -> bytes:
    return _msg(b"p", data)


# -- backend message parsing -------------------------------------------------------------------


def split(data: bytes) -> list[tuple[str, bytes]]:
    out, pos = [], 0
    while pos < len(data):
        if data[pos : pos + 1] in (b"S", b"N") and pos == 0 and len(data) == 1:
            return [(chr(data[0]), b"")]
        code = chr(data[pos])
        (length,) = struct.unpack_from("!I", data, pos + 1)
        out.append((code, data[pos + 5 : pos + 1 + length]))
        pos += 1 + length
    return out


def fields(payload: bytes) -> dict[str, str]:
    return {p[:1].decode(): p[1:].decode() for p in payload.split(b"\x00") if p}


def row(payload: bytes) -> list[bytes | None]:
    (n,) = struct.unpack_from("!h", payload)
    pos, values = 2, []
    for _ in range(n):
        (size,) = struct.unpack_from("!i", payload, pos)
        pos += 4
        values.append(None if size < 0 else payload[pos : pos + size])
        pos += max(size, 0)
    return values


def columns(payload: bytes) -> list[tuple[str, int, int]]:
    (n,) = struct.unpack_from("!h", payload)
    pos, out = 2, []
    for _ in range(n):
        end = payload.index(b"\x00", pos)
        name = payload[pos:end].decode()
        _, _, oid, _, _, fmt = struct.unpack_from("!ihihih", payload, end + 1)
        out.append((name, oid, fmt))
        pos = end + 19
    return out


class Driver:
    """Feeds bytes to a Session and performs its handler calls inline, with bounded loops."""

    def __init__(self, handler: Any, users: Any, **config: Any) -> None:
        self.handler = handler
        self.session = Session(SessionConfig(users, **config), pid=42, peer_is_loopback=True)
        self.actions: list[object] = []

    def send(self, *chunks: bytes, outcome: CallOutcome | None = None) -> list[tuple[str, bytes]]:
        for chunk in chunks:
            self.session.receive_data(chunk)
        out = b""
        for _ in range(1000):
            action = self.session.next_action()
            if isinstance(action, HandlerCall):
                self.actions.append(action)
                self.session.complete(outcome or self._perform(action))
                continue
            out += self.session.data_to_send()
            self.actions.append(action)
            if action is NEED_DATA or action is CLOSE or isinstance(action, StartTLS):
                break
        return split(out)

    def _perform(self, call: HandlerCall) -> CallOutcome:
        try:
            return CallOutcome(value=perform_call(call, self.handler, CallToken()))
        except Exception as exc:
            return CallOutcome(error=exc)

    def login(self, user: str = "ana", **extra: str) -> list[tuple[str, bytes]]:
        assert self.send(startup(user, **extra)) == [
            ("R", b"\x00\x00\x00\x0aSCRAM-SHA-256\x00\x00")
        ]
        return scram_login(self, "pencil")

    def codes(self, *chunks: bytes) -> str:
        return "".join(code for code, _ in self.send(*chunks))


def scram_login(driver: Driver, secret: str) -> list[tuple[str, bytes]]:
    """The client side of SCRAM, computed here so the server is checked independently."""
    nonce = "clientnonce123"
    first_bare = f"n=,r={nonce}".encode()
    initial = b"SCRAM-SHA-256\x00" + struct.pack("!i", len(first_bare) + 3) + b"n,," + first_bare
    ((code, payload),) = driver.send(password(initial))
    assert code == "R" and payload[:4] == b"\x00\x00\x00\x0b"
    server_first = payload[4:]
    attrs = dict(part.split("=", 1) for part in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac("sha256", secret.encode(), base64.b64decode(attrs["s"]),
                                 int(attrs["i"]))  # fmt: skip
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored = hashlib.sha256(client_key).digest()
    without_proof = f"c=biws,r={attrs['r']}".encode()
    auth_message = first_bare + b"," + server_first + b"," + without_proof
    signature = hmac.new(stored, auth_message, hashlib.sha256).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return driver.send(password(without_proof + b",p=" + base64.b64encode(proof)))


@pytest.fixture
def driver(handler: Any, users: Any) -> Driver:
    return Driver(handler, users, max_result_rows=100)


@pytest.fixture
def ready(driver: Driver) -> Driver:
    driver.login()
    return driver


# -- startup and authentication ----------------------------------------------------------------


def test_scram_login(driver: Driver) -> None:
    out = driver.login(application_name="psql")
    assert [c for c, _ in out] == ["R", "R"] + ["S"] * 13 + ["K", "Z"]
    assert out[0][1].startswith(b"\x00\x00\x00\x0cv=")  # SASLFinal with server signature
    assert out[1][1] == b"\x00\x00\x00\x00"  # AuthenticationOk
    params = dict(p[1].rstrip(b"\x00").split(b"\x00") for p in out if p[0] == "S")
    assert params[b"server_version"] == b"16.4" and params[b"application_name"] == b"psql"
    assert params[b"client_encoding"] == b"UTF8" and params[b"session_authorization"] == b"ana"
    assert out[-2] == ("K", struct.pack("!i", 42) + driver.session.secret)
    assert len(driver.session.secret) == 4 and out[-1] == ("Z", b"I")
    assert driver.session.phase is Phase.READY and driver.session.role == "analyst"


def test_wrong_password_is_fatal(driver: Driver) -> None:
    driver.send(startup("ana"))
    out = scram_login(driver, "wrong")
    assert [c for c, _ in out] == ["E"]
    assert fields(out[0][1])["C"] == "28P01" and fields(out[0][1])["S"] == "FATAL"
    assert driver.actions[-1] is CLOSE


def test_unknown_user_gets_the_same_scram_challenge_and_error(driver: Driver) -> None:
    assert driver.send(startup("mallory")) == [("R", b"\x00\x00\x00\x0aSCRAM-SHA-256\x00\x00")]
    out = scram_login(driver, "pencil")
    assert fields(out[0][1]) == {
        "S": "FATAL", "V": "FATAL", "C": "28P01",
        "M": 'password authentication failed for user "mallory"',
    }  # fmt: skip
    assert driver.actions[-1] is CLOSE


def test_cleartext_only_on_loopback(handler: Any, users: Any) -> None:
    local = Driver(handler, users)
    assert local.send(startup("carl")) == [("R", b"\x00\x00\x00\x03")]
    assert [c for c, _ in local.send(password(b"pencil\x00"))][-1] == "Z"
    remote = Driver(handler, users)
    remote.session.peer_is_loopback = False
    ((code, payload),) = remote.send(startup("carl"))
    assert code == "E" and fields(payload)["C"] == "28P01"


def test_md5_login(driver: Driver) -> None:
    ((code, payload),) = driver.send(startup("mo"))
    assert code == "R" and payload[:4] == b"\x00\x00\x00\x05"
    inner = hashlib.md5(b"pencilmo").hexdigest().encode()
    answer = b"md5" + hashlib.md5(inner + payload[4:]).hexdigest().encode() + b"\x00"
    assert driver.codes(password(answer)).endswith("KZ")


def test_ssl_request_without_tls_answers_n(driver: Driver) -> None:
    assert driver.send(SSL_REQUEST) == [("N", b"")]
    assert driver.send(startup("ana"))[0][0] == "R"


def test_ssl_request_with_tls_asks_the_shell_to_upgrade(handler: Any, users: Any) -> None:
    d = Driver(handler, users, tls_available=True)
    assert d.send(SSL_REQUEST) == [("S", b"")]
    assert isinstance(d.actions[-1], StartTLS)


def test_plaintext_pipelined_after_ssl_request_is_refused(handler: Any, users: Any) -> None:
    d = Driver(handler, users, tls_available=True)
    assert d.send(SSL_REQUEST + startup("ana")) == []  # no 'S', nothing at all
    assert d.actions[-1] is CLOSE


def test_cancel_request_is_routed_then_closed(driver: Driver) -> None:
    assert driver.send(b"\x00\x00\x00\x10\x04\xd2\x16\x2e\x00\x00\x00\x07abcd") == []
    assert driver.actions[-2:] == [CancelTarget(7, b"abcd"), CLOSE]


def test_protocol_negotiation(driver: Driver) -> None:
    out = driver.send(startup("ana", minor=9, _pq__dot__grease="1"))
    assert out[0] == ("v", struct.pack("!ii", 0x30002, 1) + b"_pq_._grease\x00")
    scram_login(driver, "pencil")
    assert len(driver.session.secret) == 32  # protocol 3.2: long cancel key


def test_missing_user_and_garbage_are_fatal(driver: Driver, handler: Any, users: Any) -> None:
    ((code, payload),) = driver.send(struct.pack("!IHH", 9, 3, 0) + b"\x00")
    assert fields(payload)["C"] == "28000"
    other = Driver(handler, users)
    ((code, payload),) = other.send(query("select 1"))  # a typed message before startup
    assert code == "E" and fields(payload)["C"] == "08P01"


# -- simple query ------------------------------------------------------------------------------


def test_simple_query(ready: Driver) -> None:
    out = ready.send(query("select id, name from people order by id"))
    assert [c for c, _ in out] == ["N", "T", "D", "D", "D", "C", "Z"]
    assert columns(out[1][1]) == [("id", 23, 0), ("name", 1043, 0)]
    assert row(out[2][1]) == [b"1", b"ana"]
    assert out[5][1] == b"SELECT 3\x00" and out[6][1] == b"I"


def test_multiple_statements_run_one_by_one(ready: Driver, handler: Any) -> None:
    out = ready.send(query("select 1 as a; select 'x;y' as b"))
    assert "".join(c for c, _ in out) == "NTDCNTDCZ"
    assert handler.calls == ["select 1 as a", "select 'x;y' as b"]


def test_error_stops_the_rest_of_a_multi_statement_query(ready: Driver, handler: Any) -> None:
    out = ready.send(query("select 1; select secret from people; select 2"))
    assert "".join(c for c, _ in out) == "NTDCEZ"
    error = fields(out[4][1])
    assert error["C"] == "42501" and error["H"] == "remove it from the query"
    assert error["M"].startswith('query rejected: column "people.secret" is hidden (rule')
    assert handler.calls == ["select 1", "select secret from people"]


@pytest.mark.parametrize(
    "sql",
    ["COPY people FROM STDIN", "COPY people TO '/tmp/paradise_x'", "COPY (select 1) TO PROGRAM 'id'",
     "PREPARE p AS SELECT secret FROM people", "execute p", "listen x", "do $$ begin end $$"],
)  # fmt: skip
def test_routes_around_the_policy_are_refused_never_forwarded(
    ready: Driver, handler: Any, sql: str
) -> None:
    out = ready.send(query(f"select 1; {sql}"))
    assert fields(out[-2][1])["C"] == "0A000"
    assert handler.calls == ["select 1"]


def test_empty_query(ready: Driver) -> None:
    assert ready.send(query(" ; -- nothing")) == [("I", b""), ("Z", b"I")]


def test_syntax_error_position_counts_from_the_whole_query(ready: Driver, handler: Any) -> None:
    from paradise.errors import QuerySyntaxError

    original = handler.run

    def run(sql: str, **kwargs: Any) -> Any:
        if sql.startswith("selec "):
            raise QuerySyntaxError("bad", position=3)
        return original(sql, **kwargs)

    handler.run = run
    out = ready.send(query("select 1; selec 2"))
    assert fields(out[-2][1])["P"] == str(10 + 3)


def test_internal_errors_are_generic(ready: Driver, handler: Any) -> None:
    def run(sql: str, **kwargs: Any) -> Any:
        raise RuntimeError(f"boom in {sql}")

    handler.run = run
    out = ready.send(query("select name from people"))
    error = fields(out[0][1])
    assert error["C"] == "XX000" and "people" not in error["M"] and "boom" not in error["M"]
    assert out[-1] == ("Z", b"I")


def test_result_row_limit(handler: Any, users: Any) -> None:
    d = Driver(handler, users, max_result_rows=2)
    d.login()
    out = d.send(query("select * from range(5)"))
    assert fields(out[0][1])["C"] == "54000"


def test_interrupted_outcome_maps_to_57014(ready: Driver) -> None:
    out = ready.send(
        query("select 1"), outcome=CallOutcome(error=RuntimeError(), interrupted="cancel")
    )
    assert fields(out[0][1])["M"] == "canceling statement due to user request"


# -- local statements --------------------------------------------------------------------------


def test_set_show_reset(ready: Driver, handler: Any) -> None:
    out = ready.send(query("SET application_name = 'bi'; show application_name"))
    assert out[0] == ("S", b"application_name\x00bi\x00")
    assert [c for c, _ in out] == ["S", "C", "T", "D", "C", "Z"]
    assert row(out[3][1]) == [b"bi"]
    assert ready.send(query("show nope"))[0][0] == "E"
    out = ready.send(query("RESET ALL; SHOW application_name"))
    assert row(out[-3][1]) == [b""]
    assert handler.calls == []


def test_refused_settings(ready: Driver) -> None:
    for sql in ("SET ROLE admin", "SET client_encoding = 'LATIN1'", "SET server_version = '1'",
                "SET standard_conforming_strings = off", "SET DateStyle = 'German'"):  # fmt: skip
        (code, payload), _ = ready.send(query(sql))
        assert code == "E", sql


def test_version_and_current_setting_are_local(ready: Driver, handler: Any) -> None:
    out = ready.send(query("select version(), current_setting('server_version_num') as v"))
    assert columns(out[0][1]) == [("version", 25, 0), ("v", 25, 0)]
    version = b"PostgreSQL 16.4 (paradise privacy proxy) on x86_64-pc-linux-gnu, compiled by "
    assert row(out[1][1]) == [version + b"paradise, 64-bit", b"160004"]
    assert handler.calls == []


def test_transactions(ready: Driver) -> None:
    assert ready.send(query("BEGIN"))[-1] == ("Z", b"T")
    assert ready.send(query("select secret from people"))[-1] == ("Z", b"E")
    out = ready.send(query("select 1"))
    assert fields(out[0][1])["C"] == "25P02" and out[-1] == ("Z", b"E")
    out = ready.send(query("COMMIT"))
    assert out == [("C", b"ROLLBACK\x00"), ("Z", b"I")]
    out = ready.send(query("commit"))
    assert [c for c, _ in out] == ["N", "C", "Z"]  # WARNING: no transaction in progress


def test_catalog_query_sees_only_visible_empty_tables(ready: Driver) -> None:
    out = ready.send(query(
        "select table_name, column_name from information_schema.columns order by ordinal_position"
    ))  # fmt: skip
    names = [row(p)[1] for c, p in out if c == "D"]
    assert b"secret" not in names and b"name" in names
    out = ready.send(query("select count(*) from pg_catalog.pg_class, read_csv('/etc/passwd')"))
    assert fields(out[0][1])["C"] == "0A000"


# -- extended query ----------------------------------------------------------------------------


def test_extended_query_with_text_and_binary_params(ready: Driver, handler: Any) -> None:
    out = ready.send(
        parse("select name, age from people where id = $1 or id = $2 order by id", oids=(0, 23)),
        bind([b"1", struct.pack("!i", 2)], formats=(0, 1), result_formats=(0, 1)),
        describe("P"), execute(), SYNC,
    )  # fmt: skip
    assert "".join(c for c, _ in out) == "12NTDDCZ"
    assert columns(out[3][1]) == [("name", 1043, 0), ("age", 23, 1)]
    assert row(out[4][1]) == [b"ana", struct.pack("!i", 34)]
    assert len(handler.calls) == 1  # described by running once; Execute reuses the result


def test_named_statement_reused_and_described(ready: Driver, handler: Any) -> None:
    out = ready.send(parse("select income from people where id = $1", "s1", (20,)),
                     describe("S", "s1"), SYNC)  # fmt: skip
    assert "".join(c for c, _ in out) == "1tnZ"  # params but no describe(): NoData
    assert out[1][1] == struct.pack("!hI", 1, 20)
    for key in (b"1", b"2"):
        out = ready.send(bind([key], statement="s1", result_formats=(1,)), execute(), SYNC)
        assert "".join(c for c, _ in out) == "2NDCZ"
    out = ready.send(close("S", "s1"), bind([b"1"], statement="s1"), execute(), SYNC)
    assert "".join(c for c, _ in out) == "3EZ" and fields(out[1][1])["C"] == "26000"


def test_error_skips_until_sync(ready: Driver, handler: Any) -> None:
    out = ready.send(
        parse("select secret from people"), bind(), execute(),
        parse("select 1"), bind(), execute(), SYNC,
    )  # fmt: skip
    assert "".join(c for c, _ in out) == "12EZ"
    assert ready.codes(parse("select 1"), bind(), execute(), SYNC) == "12NDCZ"


def test_portal_suspension(ready: Driver) -> None:
    out = ready.send(parse("select * from range(5)"), bind(), execute(max_rows=2), SYNC)
    assert "".join(c for c, _ in out) == "12NDDsZ"
    # implicit transaction ended at Sync: the portal is gone
    assert fields(ready.send(execute(), SYNC)[0][1])["C"] == "34000"
    ready.send(query("BEGIN"))
    out = ready.send(parse("select * from range(5)"), bind(portal="p"), execute("p", 3),
                     execute("p", 3), execute("p"), SYNC)  # fmt: skip
    assert "".join(c for c, _ in out) == "12NDDDsDDCCZ"


def test_multiple_commands_in_parse_are_refused(ready: Driver, handler: Any) -> None:
    out = ready.send(parse("select 1; select secret from people"), SYNC)
    assert fields(out[0][1])["C"] == "42601" and handler.calls == []


def test_extended_local_statements(ready: Driver) -> None:
    out = ready.send(parse("SET extra_float_digits = 3"), bind(), describe("P"), execute(), SYNC)
    assert "".join(c for c, _ in out) == "12nCZ"
    out = ready.send(parse("show extra_float_digits"), bind(), describe("P"), execute(), SYNC)
    assert "".join(c for c, _ in out) == "12TDCZ" and row(out[3][1]) == [b"3"]


def test_bind_errors(ready: Driver) -> None:
    out = ready.send(parse("select $1::int", oids=(23,)), bind([b"x"]), SYNC)
    assert fields(out[1][1])["C"] == "22P02"
    out = ready.send(parse("select $1, $2"), bind([b"1"]), SYNC)
    assert fields(out[1][1])["C"] == "08P01"


def test_terminate_closes(ready: Driver) -> None:
    assert ready.send(TERMINATE) == []
    assert ready.actions[-1] is CLOSE
