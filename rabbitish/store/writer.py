"""The store's single writer. Typed records (ops.py) are queued in order on the event loop; at the
next loop turn everything queued is written as one SQLite transaction on the writer's own
connection: a small batch someone waits for right there on the loop thread (a commit of a few
messages costs little more than its sync, and two thread wake-ups per round trip cost more than
that on a busy machine), a large one or one nobody waits for by the writer thread, so the loop
goes on reading, routing and delivering meanwhile. While a batch is being written the next one
gathers, so concurrent commits and confirms from many channels share one transaction and one
sync (group commit). Records nobody waits for (acks, ack-only commits, delivered marks) gather
for GATHER_SECONDS before they are written, until someone waits or GATHER_OPS are in: a
consumer acking in small transactions otherwise paid a whole SQLite transaction and sync per
commit, and the crash window this adds is the one ack-only commits already have
(docs/transactions.md). With fsync the database runs synchronous=FULL, so the COMMIT returns once
the batch is on disk; without it, synchronous=OFF. After each batch the waiters it covers are
woken and the pager drops the bodies of the messages just written that were offered to it
(pager.py reads them back, on the event loop thread).

A batch that cannot be written (disk full, I/O error) is rolled back and kept: its waiters are
told at once (confirms are nacked, commits fail), the reason is logged, and the writer tries it
again, with whatever came after, until a write succeeds. Meanwhile `on_failure` hears the
reason (the store raises the node's "store" alarm with it: front ends block publishing
connections, as RabbitMQ does on a disk alarm), and once the unwritten message bodies pass
`backlog_limit` bytes, `refusing` is set (durable queues refuse persistent messages), so retrying
cannot grow memory without bound.

The writer knows records, not the engine's events: journal.py maps those to records."""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rabbitish.engine.journal import Failed, Synced
from rabbitish.store import ops
from rabbitish.store.schema import CLEAN_STOP

if TYPE_CHECKING:
    from rabbitish.engine.message import Message
    from rabbitish.store.pager import Pager

log = logging.getLogger("rabbitish.store")

RETRY_DELAY = 1.0  # seconds between attempts while writes fail
BACKLOG_LIMIT = 64 * 1024 * 1024  # default bytes of unwritten messages kept while writes fail
OP_OVERHEAD = 256  # bytes counted per message record besides its body
INLINE_OPS = 128  # batches up to this many records (and INLINE_BYTES) are written on the loop
INLINE_BYTES = 256 * 1024
GATHER_SECONDS = 0.005  # a batch nobody waits for gathers more records this long...
GATHER_OPS = 4096  # ...unless it holds this many already

Waiter = tuple[int, Synced, Failed | None]
Job = tuple[list[ops.Op], int, list["Message"]]  # a batch, its last position, page candidates


def failure_reason(err: BaseException) -> str:
    """One line naming what went wrong, as logged, raised in the alarm and told to waiters."""
    return f"{type(err).__name__}: {err}".splitlines()[0]


class JournalWriter:
    """Writes records in order, in batches, and says when each position is on disk."""

    def __init__(
        self,
        path: Path,
        fsync: bool,
        *,
        backlog_limit: int = BACKLOG_LIMIT,
        retry_delay: float = RETRY_DELAY,
        pager: Pager | None = None,
        on_failure: Callable[[str | None], None] | None = None,
    ) -> None:
        self.path = path
        self.fsync = fsync
        self.backlog_limit = backlog_limit
        self.retry_delay = retry_delay  # seconds between attempts while writes fail
        self.pager = pager  # drops the bodies of messages offered by `page_out_when_written`
        # Called with the reason when writes start failing and with None when one succeeds.
        self.on_failure = on_failure
        # The failure seam (tests): run before each batch, on whichever thread writes it;
        # raising there fails the batch the way a full disk would.
        self.before_write: Callable[[], None] | None = None
        self.position = 0  # records added so far
        self.synced = 0  # records on disk so far
        self.batches = 0  # batches written
        self.failure: str | None = None  # why the last write failed, until one succeeds
        self.refusing = False  # writes fail and the unwritten backlog reached backlog_limit
        self._ops: list[ops.Op] = []
        self._page_candidates: list[Message] = []
        self._waiters: deque[Waiter] = deque()
        self._db: sqlite3.Connection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inbox: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._run_writer, name="rabbitish-journal", daemon=True
        )
        self._busy = False  # a batch is being written (inline or by the writer thread)
        self._kicked = False  # a _kick is scheduled for this loop turn
        self._retry: asyncio.TimerHandle | None = None  # the pause after a failed write
        self._gather: asyncio.TimerHandle | None = None  # a batch nobody waits for gathering
        self._idle: asyncio.Future[None] | None = None  # close() waits on it
        self._closing = False
        self._new_bytes = 0  # message bytes queued since the writer last took a batch
        self._batch_bytes = 0  # ...and in the batch being written (or failed and kept)

    def writing(self) -> bool:
        """A batch is being written (the busy-waiting event loop holds off meanwhile)."""
        return self._busy

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._db = self._connect()
        self._thread.start()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if self.fsync else 'OFF'}")
        # Debian's SQLite zeroes every freed page by default: a consumed 64 KiB message would
        # cost 64 KiB more of WAL and checkpoint writes. FAST zeroes only where it costs no
        # extra I/O (the freed cells; freed overflow pages go to the freelist as they are).
        db.execute("PRAGMA secure_delete=FAST")
        return db

    async def close(self) -> None:
        """Write what is pending (one more attempt if writes are failing), then stop."""
        self._closing = True
        if self._gather is not None:
            self._gather.cancel()
            self._gather = None
        if self._retry is not None:  # failing: try once more now instead of after the pause
            self._retry.cancel()
            self._retry = None
        if self._loop is not None:
            if self._busy or self._ops:
                self._idle = self._loop.create_future()
                self._submit()
                await self._idle
            self._inbox.put(None)
            await self._loop.run_in_executor(None, self._thread.join)
        if self._db is not None:
            if self.failure is None:
                self._mark_clean_stop()
            self._db.close()
            self._db = None

    def _mark_clean_stop(self) -> None:
        """Everything is written: the next start may trust the delivered marks (see
        schema.CLEAN_STOP). A failure here only makes that start more careful."""
        assert self._db is not None
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')", (CLEAN_STOP,)
            )
        except sqlite3.Error as err:
            log.warning("could not record the clean stop: %s", failure_reason(err))

    # ------------------------------------------------------------------ waiting
    def when_synced(self, position: int, callback: Synced, failed: Failed | None = None) -> None:
        """Call `callback` once every record up to `position` is on disk (at once if it is),
        or `failed(reason)` if the write covering it failed."""
        if position <= self.synced:
            callback()
            return
        self._waiters.append((position, callback, failed))
        if self._gather is not None:  # someone waits now: no more gathering
            self._gather.cancel()
            self._gather = None
            if not self._kicked and self._loop is not None:
                self._kicked = True
                self._loop.call_soon(self._kick)

    # ------------------------------------------------------------------ records
    def add(self, op: ops.Op) -> None:
        """Queue a record; it is written at the next loop turn, with whatever else this turn
        adds."""
        self._ops.append(op)
        self.position += 1
        if not self._busy and not self._kicked and self._loop is not None:
            self._kicked = True
            self._loop.call_soon(self._kick)

    def add_message(self, op: ops.Op, size: int) -> None:
        """A record carrying a body of `size` bytes: counted towards the backlog bound while
        writes fail."""
        self.add(op)
        self._new_bytes += size + OP_OVERHEAD
        if self.failure is not None and not self.refusing:
            self.refusing = self._batch_bytes + self._new_bytes >= self.backlog_limit

    def page_out_when_written(self, message: Message) -> None:
        """Once the batch holding `message`'s record is on disk, the pager may drop its body."""
        self._page_candidates.append(message)

    # ------------------------------------------------------------------ batches
    def _kick(self) -> None:
        self._kicked = False
        if self._retry is None:
            self._submit()

    def _submit(self, gather: bool = True) -> None:
        """Write everything pending, unless a batch is being written (then it goes when that
        one is done: that is the group commit). A small batch that someone waits for (a
        commit-ok, a confirm) is written right here on the event loop thread: a commit of a few
        messages costs little more than its sync, and handing it over would add two thread
        wake-ups to each commit's round trip, which on a busy machine cost more than the sync.
        A large one, or one nobody waits for (acks, delivered marks of a streaming consumer),
        goes to the writer thread, so the loop keeps reading and delivering meanwhile; one
        nobody waits for gathers more records first (`gather`)."""
        if self._busy or not self._ops or self._gather is not None:
            return
        if gather and not self._waiters and len(self._ops) < GATHER_OPS and not self._closing:
            assert self._loop is not None
            self._gather = self._loop.call_later(GATHER_SECONDS, self._gathered)
            return
        batch, self._ops = self._ops, []
        self._batch_bytes += self._new_bytes
        self._new_bytes = 0
        candidates, self._page_candidates = self._page_candidates, []
        self._busy = True
        if not self._waiters or len(batch) > INLINE_OPS or self._batch_bytes > INLINE_BYTES:
            self._inbox.put((batch, self.position, candidates))
            return
        upto = self.position
        try:
            written, error = self._write(batch), None
        except Exception as err:
            written, error = set(), err
        self._done(batch, upto, candidates, written, error, inline=True)

    def _gathered(self) -> None:
        self._gather = None
        if self._retry is None:
            self._submit(gather=False)

    def _run_writer(self) -> None:
        """The writer thread: one batch per call, one SQLite transaction each; the outcome goes
        back to the event loop in one call_soon_threadsafe."""
        inbox, loop = self._inbox, self._loop
        assert loop is not None
        while (job := inbox.get()) is not None:
            batch, upto, candidates = job
            try:
                written, error = self._write(batch), None
            except Exception as err:
                written, error = set(), err
            try:
                loop.call_soon_threadsafe(self._done, batch, upto, candidates, written, error)
            except RuntimeError:  # the loop is gone: nobody is waiting any more
                return

    def _done(
        self,
        batch: list[ops.Op],
        upto: int,
        candidates: list[Message],
        written: set[int],
        error: Exception | None,
        inline: bool = False,
    ) -> None:
        """On the event loop: a batch was written (or failed); wake its waiters, go on (after
        an inline write, at the next loop turn, so the loop reads what came meanwhile)."""
        loop = self._loop
        assert loop is not None
        self._busy = False
        if error is None:
            self._succeeded(upto, candidates, written)
        else:
            self._ops = batch + self._ops  # tried again with what came after
            self._page_candidates = candidates + self._page_candidates
            self._failed(error, upto)
            if self._closing:
                self._give_up()
                self._ops = []
            else:
                self._retry = loop.call_later(self.retry_delay, self._retry_now)
        if self._retry is None and self._ops:
            if inline and not self._closing:
                if not self._kicked:
                    self._kicked = True
                    loop.call_soon(self._kick)
            else:
                self._submit()
        if self._idle is not None and not self._busy and not self._idle.done():
            self._idle.set_result(None)

    def _retry_now(self) -> None:
        self._retry = None
        self._submit()

    def _write(self, batch: list[ops.Op]) -> set[int]:
        """The whole batch in one call and one SQLite transaction (on the writer thread, or on
        the loop thread for a small batch)."""
        if self.before_write is not None:
            self.before_write()
        assert self._db is not None
        return ops.write_batch(self._db, batch)

    def _succeeded(self, upto: int, candidates: list[Message], written: set[int]) -> None:
        if self.failure is not None:
            log.warning("journal writes succeed again after: %s", self.failure)
            self.failure = None
            self.refusing = False
            if self.on_failure is not None:
                self.on_failure(None)
        self._batch_bytes = 0
        self.synced = upto
        self.batches += 1
        if self.pager is not None:
            for message in candidates:  # on disk now: the body can leave memory
                if message.id in written:
                    self.pager.page_out(message)
        waiters = self._waiters
        while waiters and waiters[0][0] <= upto:
            waiters.popleft()[1]()

    def _failed(self, err: Exception, upto: int) -> None:
        """Tell every waiter the failed batch covers; log the reason once per failure spell."""
        reason = failure_reason(err)
        self.refusing = self._batch_bytes + self._new_bytes >= self.backlog_limit
        if self.failure is None:
            log.error(
                "journal write failed (%s) in %s: %d changes not on disk; publishes are "
                "nacked and commits fail until a write succeeds (retrying every %.0f s)",
                reason,
                self.path,
                len(self._ops),
                self.retry_delay,
            )
        if self.failure != reason and self.on_failure is not None:
            self.on_failure(reason)
        self.failure = reason
        waiters = self._waiters
        while waiters and waiters[0][0] <= upto:
            _position, _callback, failed = waiters.popleft()
            if failed is not None:
                failed(reason)

    def _give_up(self) -> None:
        log.error("journal closed with %d changes not on disk (%s)", len(self._ops), self.failure)
        while self._waiters:
            _position, _callback, failed = self._waiters.popleft()
            if failed is not None:
                failed(self.failure or "store closed")
