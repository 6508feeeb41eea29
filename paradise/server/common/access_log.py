"""What the proxy did, for operators: a JSON-lines access log and the server's log set-up.

One JSON object per line on the logger ``paradise.access``:

* ``connection`` — a client connected (``session``, ``peer``, ``protocol``);
* ``auth`` — a login succeeded or failed (``user``, ``method``, ``outcome``; failures
  also for unknown users, under the name the client gave);
* ``auth_timeout`` — a connection did not authenticate in time and was closed;
* ``statement`` — one per statement: ``request_id``, ``user``, ``role``, ``tables``
  (stored tables the answer read), ``outcome`` (``answered``/``refused``/``error``/
  ``cancelled``), ``sqlstate``, ``rows`` and ``ms``;
* ``disconnect`` — the connection closed.

No SQL text and no data value is ever logged: statements are identified by their
request id, which the client also sees in a data-free error message (see
:mod:`paradise.backends.errors`); the database's own (redacted) error text is
logged under the same id by the logger ``paradise.backend``.

Example:
    >>> import io, json, logging
    >>> stream = io.StringIO()
    >>> configure_logging("info", access=stream)
    >>> log_event("auth", session=7, user="ana", method="scram-sha-256", outcome="success")
    >>> record = json.loads(stream.getvalue())
    >>> record["event"], record["user"], record["outcome"], "ts" in record
    ('auth', 'ana', 'success', True)
    >>> configure_logging("warning", access="off")
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import IO, Any

from paradise.backends.request import Request
from paradise.errors import QueryError, VerificationError

__all__ = [
    "ACCESS_LOGGER",
    "JsonLinesFormatter",
    "configure_logging",
    "log_event",
    "log_statement",
    "outcome_of",
]

ACCESS_LOGGER = logging.getLogger("paradise.access")
_HANDLER_MARK = "_paradise_handler"


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record: ``ts``, ``event`` and the record's ``fields``."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        fields: Mapping[str, Any] = getattr(record, "fields", {})
        return json.dumps({"ts": stamp, "event": record.getMessage(), **fields},
                          default=str, separators=(",", ":"))  # fmt: skip


def configure_logging(level: str = "info", *, access: str | IO[str] = "stderr") -> None:
    """Set up ``paradise`` logging: text lines on stderr at ``level``, and the access log.

    ``access`` is ``"stderr"``, ``"off"``, a file path (appended to) or an open stream.
    Calling it again replaces the handlers it installed before.
    """
    root = logging.getLogger("paradise")
    root.setLevel(getattr(logging, level.upper()))
    text = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    _replace_handler(root, logging.StreamHandler(sys.stderr), text)
    ACCESS_LOGGER.propagate = False
    ACCESS_LOGGER.setLevel(logging.INFO)
    if access == "off":
        _replace_handler(ACCESS_LOGGER, None, None)
        return
    if isinstance(access, str):
        handler: logging.Handler = (
            logging.StreamHandler(sys.stderr)
            if access == "stderr"
            else logging.FileHandler(access, encoding="utf-8")
        )
    else:
        handler = logging.StreamHandler(access)
    _replace_handler(ACCESS_LOGGER, handler, JsonLinesFormatter())


def _replace_handler(
    logger: logging.Logger, handler: logging.Handler | None, formatter: logging.Formatter | None
) -> None:
    for old in [h for h in logger.handlers if getattr(h, _HANDLER_MARK, False)]:
        logger.removeHandler(old)
        old.close()
    if handler is not None:
        assert formatter is not None
        handler.setFormatter(formatter)
        setattr(handler, _HANDLER_MARK, True)
        logger.addHandler(handler)


def log_event(event: str, **fields: Any) -> None:
    """Write one access-log line (nothing if the access log is off)."""
    if ACCESS_LOGGER.isEnabledFor(logging.INFO):
        ACCESS_LOGGER.info(event, extra={"fields": fields})


def outcome_of(error: BaseException | None, interrupted: str | None = None) -> tuple[str, str]:
    """``(outcome, sqlstate)`` of a statement for the access log.

    >>> from paradise.errors import QueryRejected
    >>> outcome_of(None), outcome_of(QueryRejected("x")), outcome_of(ValueError(), "timeout")
    (('answered', '00000'), ('refused', '42501'), ('cancelled', '57014'))
    """
    if interrupted:
        return "cancelled", "57014"
    if error is None:
        return "answered", "00000"
    sqlstate = str(getattr(error, "sqlstate", "XX000"))
    if sqlstate == "57014":
        return "cancelled", sqlstate
    if isinstance(error, QueryError | VerificationError) or sqlstate in ("25006", "54000"):
        return "refused", sqlstate
    return "error", sqlstate


def log_statement(
    request: Request,
    *,
    started: float,
    error: BaseException | None = None,
    interrupted: str | None = None,
    kind: str = "query",
) -> None:
    """The ``statement`` line for a finished request (``started``: ``time.monotonic()``)."""
    outcome, sqlstate = outcome_of(error, interrupted)
    log_event(
        "statement",
        request_id=request.request_id,
        session=request.session,
        protocol=request.protocol,
        user=request.user,
        role=request.role,
        kind=kind,
        tables=list(request.tables),
        outcome=outcome,
        sqlstate=sqlstate,
        rows=request.rows if error is None and not interrupted else None,
        ms=round((time.monotonic() - started) * 1000, 3),
    )
