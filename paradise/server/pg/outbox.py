"""What a session has to send: encoded backend messages, queued until the shell writes them.

The session and its query flow both write here and never to each other, so the query flow
needs no reference to the session (h11's ``data_to_send`` style). Large answers are queued
as iterators and encoded only when the shell takes them, chunk by chunk.

Example:
    >>> from paradise.server.pg import messages as m
    >>> out = Outbox()
    >>> out.send(m.ReadyForQuery("I"))
    >>> out.send_stream(iter([b"a", b"b"]))
    >>> list(out.chunks_to_send(size=6)), out.data_to_send()
    ([b'Z\\x00\\x00\\x00\\x05I', b'ab'], b'')
"""

from __future__ import annotations

from collections.abc import Iterator

from paradise.server.pg import messages as m
from paradise.server.pg.codec import encode

__all__ = ["Outbox"]


class Outbox:
    """Bytes (or lazily encoded batches of bytes) waiting for the I/O shell."""

    __slots__ = ("_out",)

    def __init__(self) -> None:
        self._out: list[bytes | Iterator[bytes]] = []  # iterators: batches encoded lazily

    def send(self, msg: m.BackendMessage) -> None:
        self._out.append(encode(msg))

    def send_raw(self, data: bytes) -> None:
        self._out.append(data)

    def send_stream(self, batches: Iterator[bytes]) -> None:
        """Queue encoded messages produced only when the shell writes them (large answers)."""
        self._out.append(batches)

    def data_to_send(self) -> bytes:
        """Everything queued, as one buffer (lazily encoded batches are encoded now)."""
        return b"".join(self.chunks_to_send())

    def chunks_to_send(self, size: int = 1 << 16) -> Iterator[bytes]:
        """What is queued, in chunks of about ``size`` bytes, encoded as they are taken.

        The shell writes a large answer chunk by chunk with flow control, so only about
        one chunk of encoded rows exists at a time (see :meth:`send_stream`).
        """
        out, self._out = self._out, []
        pending: list[bytes] = []
        pending_size = 0
        for part in out:
            for piece in (part,) if isinstance(part, bytes) else part:
                pending.append(piece)
                pending_size += len(piece)
                if pending_size >= size:
                    yield b"".join(pending)
                    pending, pending_size = [], 0
        if pending:
            yield b"".join(pending)
