"""Message bodies of long queues live on disk, not in memory. Once a persistent message on a
durable queue is synced and its queue holds more than `keep_bytes` bytes of ready messages
(Config.page_out_bytes), its body is dropped; when a consumer reaches it, the body is read back,
together with the bodies of the next paged messages, up to READ_AHEAD of them or
READ_AHEAD_BYTES (queues drain in id order, so one read serves a run of deliveries). The bound is
in bytes only: a small body costs less memory than the message around it, which stays either
way, and paging small bodies out cost their consumers a read each run (as RabbitMQ, which keeps
a classic queue's messages in memory until memory runs short). At start-up, recovery reads back
the bodies of the first RECOVERED_BODIES messages of each queue (within `keep_bytes`); the rest
come in as consumers reach them."""

from __future__ import annotations

import sqlite3
import weakref
from pathlib import Path
from urllib.parse import quote

from rabbitish.engine.message import Message

RECOVERED_BODIES = 1000  # messages per queue whose bodies recovery reads back at start
KEEP_BYTES = 16 * 1024 * 1024  # default bytes of ready messages per queue kept in memory
READ_AHEAD = 256
READ_AHEAD_BYTES = 4 * 1024 * 1024  # bodies read back by one read, at most (about)


class Pager:
    def __init__(self, path: Path, keep_bytes: int = KEEP_BYTES) -> None:
        self.keep_bytes = keep_bytes
        # Reads only, on the event loop thread; WAL lets them run beside the writer.
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self.paged: weakref.WeakValueDictionary[int, Message] = weakref.WeakValueDictionary()
        self.reads = 0

    def page_out(self, message: Message) -> None:
        if message.id not in self.paged:
            message.loader = self.load
            if message.page_out():
                self.paged[message.id] = message

    def load(self, message: Message) -> bytes:
        """The body of `message`, reading ahead the bodies of the paged messages after it."""
        self.paged.pop(message.id, None)
        rows = self._db.execute(
            "SELECT id, body FROM messages WHERE id >= ? ORDER BY id LIMIT ?",
            (message.id, max(1, min(READ_AHEAD, READ_AHEAD_BYTES // max(1, message.size)))),
        ).fetchall()
        self.reads += 1
        body = None
        for mid, data in rows:
            if mid == message.id:
                body = bytes(data)
                continue
            other = self.paged.pop(mid, None)
            if other is not None:
                other.page_in(bytes(data))
        if body is None:
            raise LookupError(f"message {message.id} is paged out but not in the store")
        return body

    def close(self) -> None:
        self._db.close()
