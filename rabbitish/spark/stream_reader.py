"""Streaming reads of one queue: a tx consumer held by the query's planner on the driver,
offsets that number messages consecutively, message payloads carried inside the partitions,
acks committed once Spark has committed the batch. A driver that dies loses and repeats
nothing: on rabbitish each planned batch's messages are acked into a prepared transaction the
offsets name (stream_prepared), elsewhere a write-ahead log under the checkpoint (stream_log)
keeps them. The consumer's connection runs on a thread of its own (connection_thread), which
takes the next batch's deliveries in while Spark runs this one."""

from __future__ import annotations

import contextlib
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from rabbitish.spark.amqp_client import AmqpError, Channel, Connection, RawDelivery
from rabbitish.spark.broker import decide
from rabbitish.spark.connection_thread import ConnectionThread
from rabbitish.spark.options import AmqpOptions
from rabbitish.spark.schema import (
    SCHEMA,
    AmqpSchemaError,
    DeliveryRows,
    arrow_batch,
    arrow_batches,
    arrow_rows,
    ipc_stream,
    load_arrow,
)
from rabbitish.spark.stream_log import PlannedRange, StreamLog, fingerprint
from rabbitish.spark.stream_prepared import (
    BatchReader,
    decide_batches,
    prepare,
    stage_decisions,
    txn_name,
    txn_names,
)
from rabbitish.wire_names import HALF_TRANSACTIONS_CAPABILITY

LOG_DIRECTORY = "amqp-source"  # under the checkpoint, one subdirectory per queue
# Trigger.AvailableNow: how long to listen for deliveries already on their way once the queue
# reports nothing ready, before taking what has arrived as everything there is.
SETTLE_SECONDS = 0.2
# Body bytes of a micro-batch when maxBytes does not say (at least one message): a batch
# travels through the driver in one piece. Between Spark's calls the connection's thread takes
# deliveries in up to this much too (or prefetch messages); past it they wait in the socket.
BATCH_BYTES = 64 << 20
# Messages of a micro-batch when maxRows does not say (prepared batches: on rabbitish a batch is
# one or more prepared transactions of at most `prefetch` messages each, prepared while Spark
# runs the batch before; elsewhere `prefetch` bounds a batch): Spark's cost per micro-batch
# is about the same for 1 message as for 100,000, and the batch travels through the driver in
# one piece.
BATCH_ROWS = 100_000
IDLE_WAIT_SECONDS = 0.05  # one wait for deliveries by the idle thread (a call cuts it short)
# How long a staged commit decision waits for a prepare's tx.commit to carry it before the idle
# thread commits it alone (until then its messages stay locked on the broker, nothing more).
DECISION_LINGER_SECONDS = 1.0


@dataclass(slots=True)
class Delivery:
    """A message received and not yet given an offset."""

    tag: int
    fingerprint: str
    row: tuple[Any, ...]
    size: int


class AmqpStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark makes one on the driver's planner (which holds the consumer) and one per task
    (which only unpacks its partition): everything that touches the broker or the log is
    opened on first use, never in the constructor. Whether batches are prepared transactions
    (the broker announces half transactions) or logged is decided when the planner connects."""

    def __init__(self, options: AmqpOptions, schema: StructType) -> None:
        if schema != SCHEMA:
            raise AmqpSchemaError("the amqp source has a fixed schema (rabbitish.spark.SCHEMA)")
        self.options = options
        self.queue = options.require_queue()
        self.directory: Path | None = None  # the write-ahead log's, when batches are logged
        self._prepared: bool | None = None  # batches are prepared transactions (rabbitish)
        self._batches: BatchReader | None = None
        self._adopt_checked = False  # looked for a batch a dead run prepared but never named
        self._txns: dict[int, tuple[int, str]] = {}  # prepared: start -> (end, txn name)
        self._chunk_bytes: dict[int, int] = {}  # prepared by this run: start -> body bytes
        self._ahead: dict[int, str] = {}  # prepared ahead, not handed out: start -> txn name
        self._minted: str | None = None  # the reader id this run picked (a new query)
        self._target_count: int | None = None  # Trigger.AvailableNow: messages to take, prepared
        self._log: StreamLog | None = None
        self._connection: Connection | None = None
        self._consumer: Channel | None = None
        self._consuming = False
        self._rows_of = DeliveryRows()
        self._rows: dict[int, tuple[Any, ...]] = {}  # offset -> row, planned and not committed
        self._tags: dict[int, int] = {}  # offset -> delivery tag on this connection, unacked
        self._awaiting: set[int] = set()  # logged offsets whose message has not come back yet
        self._owed: dict[str, deque[int]] = {}  # fingerprint -> offsets in _awaiting
        self._ranges: dict[int, int] = {}  # start -> end of the ranges in the log
        self._pending: deque[Delivery] = deque()
        self._pending_bytes = 0
        self._decision_staged = False  # a batch's commit decision waits for the next tx.commit
        self._staged_at = 0.0
        self._commits: deque[dict[str, Any]] = deque()  # Spark's commits, for the thread
        self._last_decided: set[str] = set()  # the txn names of the last batch decided
        self._reader_id: str | None = None  # names this query's batches (prepared)
        self._caps_last: tuple[float, float] | None = None  # (rows, bytes) of the last plan
        self._handed_out = -1  # prepared: the end of the last batch latestOffset returned
        self._arrow: dict[int, tuple[int, Any]] = {}  # prepared ahead: start -> (end, batch)
        self._thread: ConnectionThread | None = None
        self._received = 0
        self._next = 0  # the offset the next planned message gets
        self._committed = 0  # Spark is done with every offset below this
        self._target: int | None = None  # Trigger.AvailableNow: offsets stop here

    # -- what Spark calls on the driver

    def initialOffset(self) -> dict[str, Any]:
        return self._on_thread(self._initial_offset)

    def prepareForTriggerAvailableNow(self) -> None:
        self._on_thread(self._prepare_for_trigger_available_now)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        return self._on_thread(lambda: self._latest_offset(start, limit))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        return self._on_thread(lambda: self._partitions(start, end))

    def commit(self, end: dict[str, Any]) -> None:
        """Prepared batches: only stages a decision, so it is queued and Spark goes on; the
        connection's thread takes it before its next step (and before any later call of
        Spark's), instead of Spark waiting for a prepare in progress there."""
        if self._prepared:
            self._commits.append(end)
            return
        self._on_thread(lambda: self._commit(end))

    def stop(self) -> None:
        """Closing the connection returns every unacked message to the queue; the log keeps
        what a restart needs."""
        if self._thread is not None:
            self._thread.close(self._close)

    # -- what Spark calls in tasks

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's rows as the Arrow batch the planner built (PySpark 4 takes Arrow
        record batches from Python data sources as they are)."""
        yield from arrow_batches(partition.value)

    # -- the driver's side, run on the connection's thread

    def _on_thread(self, work: Any) -> Any:
        """Spark's planner calls, run where the connection lives (created on the first call:
        tasks never get one)."""
        if self._thread is None:
            self._thread = ConnectionThread(f"amqp-stream-{self.queue}", self._take_in)

        def after_commits() -> Any:
            self._queued_commits()
            return work()

        return self._thread.call(after_commits)

    def _queued_commits(self) -> None:
        """The commits Spark made since the last step, in order (on the thread)."""
        while self._commits:
            self._commit(self._commits.popleft())

    def _close(self) -> None:
        """A commit decision still staged goes out first (it only frees messages Spark is done
        with; lost, the restarted query decides the batch again), and what was prepared ahead
        and never handed to Spark is rolled back: its messages go back to the queue, as they
        would have stayed there without the look-ahead (lost, the restarted query adopts it
        by its names)."""
        if self._connection is not None:
            consumer = self._consumer
            if consumer is not None and self._connection.is_open:
                ahead = [self._ahead[first] for first in sorted(self._ahead)]
                with contextlib.suppress(AmqpError):
                    self._queued_commits()
                    if ahead:
                        decide(consumer, ahead, "rollback")
                    if ahead or self._decision_staged:
                        consumer.tx_commit()
            self._connection.close()

    def _initial_offset(self) -> dict[str, Any]:
        if self._is_prepared():
            return {"seq": 0}
        return {"seq": self._opened().committed()}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_rows is not None:
            return ReadMaxRows(self.options.max_rows)
        if self.options.max_bytes is not None:
            return ReadMaxBytes(self.options.max_bytes)
        return ReadAllAvailable()

    def _prepare_for_trigger_available_now(self) -> None:
        """The target is every message delivered or ready now; a count that includes copies of
        logged messages or messages another consumer takes is lowered in latestOffset. Read
        before the consumer starts (as it has not, at a query's start), the queue's ready
        count is the exact number; once consuming, what has arrived is added."""
        prepared = self._is_prepared()
        if not prepared:
            self._opened()
        consuming = self._consuming
        ready = self._ready()
        if consuming:
            self._pump(math.inf, BATCH_BYTES)
        else:
            self._channel()  # from now on the ready messages come in while Spark plans
        if prepared:
            self._target_count = len(self._pending) + ready
        else:
            self._target = self._next + len(self._pending) + ready

    def _latest_offset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Acks what Spark committed (everything before `start`), then plans the next range:
        a range already in the log that starts at `start` (planned before a restart) is handed
        out again as it was; otherwise up to the limit's worth of received messages, logged
        before the offset is returned. Prepared batches: see `_plan_prepared`."""
        if self._is_prepared():
            return self._plan_prepared(start, limit)
        offset = int(start["seq"])
        self._opened()
        self._settle(offset)
        if offset in self._ranges:
            return {"seq": self._ranges[offset]}
        if offset < self._next:
            raise RuntimeError(
                f"offset {offset} is inside a range already planned (next {self._next}): "
                f"the write-ahead log in {self.directory} does not belong to this checkpoint"
            )
        self._next = offset
        rows, size = self._caps(limit)
        want = min(rows, self.options.prefetch)
        taken = self._take(offset, want, size)
        if not taken:
            return {"seq": offset}
        end = offset + len(taken)
        self._log_().write(PlannedRange(offset, end, [(d.fingerprint, d.row) for d in taken]))
        for seq, delivery in enumerate(taken, offset):
            self._rows[seq] = delivery.row
            self._tags[seq] = delivery.tag
        self._ranges[offset] = end
        self._next = end
        return {"seq": end}

    def _partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """One partition holding the rows themselves (as an Arrow batch): a retried task reads
        the very same rows, and so does a batch Spark replays after a restart (from the log,
        or read again from the broker by the name of the batch's prepared transaction)."""
        first, last = int(start["seq"]), int(end["seq"])
        if self._is_prepared():
            return self._prepared_partitions(start, end)
        self._opened()
        missing = [seq for seq in range(first, last) if seq not in self._rows]
        if missing:
            raise RuntimeError(
                f"offsets {first}..{last - 1}: {len(missing)} of them are not in the "
                f"write-ahead log {self.directory} (was it deleted or moved?)"
            )
        rows = [self._rows[seq] for seq in range(first, last)]
        return [InputPartition(arrow_rows(rows))] if rows else []

    def _commit(self, end: dict[str, Any]) -> None:
        """Prepared batches: the decision is staged, for the tx.commit that prepares the next
        batch (or alone, DECISION_LINGER_SECONDS later): Spark has recorded the batch as done,
        and a restart decides it again from the offsets, which name it."""
        if self._is_prepared():
            self._commit_prepared(end, at_once=False)
            return
        self._opened()
        self._settle(int(end["seq"]))

    # -- prepared batches (rabbitish)

    def _plan_prepared(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Commits the batch that ended at `start` (Spark is done with it), then plans the
        batch starting there: the first time, one named by a dead run that Spark never
        recorded is adopted as it is; otherwise up to the limit's worth of received messages
        are acked into a new prepared transaction, on disk before the offset is returned. The
        query's very first offset only names the query (an empty batch), so that every batch
        after it has a name a restarted driver can derive."""
        if self._consumer is not None:
            # What was prepared ahead is handed out only once it is on disk. Other calls need
            # not wait: what they write on the channel waits for it anyway.
            self._consumer.tx_commits_wait()
        offset = int(start["seq"])
        reader = start.get("reader")
        if reader is None:
            self._minted = uuid.uuid4().hex
            return {"seq": offset, "reader": self._minted}
        self._reader_id = str(reader)
        self._commit_prepared(start, at_once=False)
        planned = self._plan_batch(reader, offset, start, limit)
        if planned is start:
            if self._decision_staged:  # no batch is prepared to carry it: it goes alone
                self._channel().tx_commit()
                self._decision_staged = False
            return planned
        if start.get("txn") is not None:
            planned["prev"] = start["txn"]
        self._handed_out = int(planned["seq"])
        return planned

    def _plan_batch(
        self, reader: Any, offset: int, start: dict[str, Any], limit: ReadLimit
    ) -> dict[str, Any]:
        if offset in self._txns:
            return self._gathered(reader, offset, limit)
        name = txn_name(str(reader), offset)
        if not self._adopt_checked:
            # A dead run may have prepared batches Spark never recorded, one after the
            # other (one planned, the next prepared ahead): adopted until a name is free.
            rows = self._batch_reader().read(name)
            if rows:
                return self._planned(reader, offset, name, rows)
            self._adopt_checked = True
        rows_cap, size = self._caps(limit)
        self._caps_last = (rows_cap, size)
        want = min(rows_cap, self.options.prefetch)
        if self._target_count is not None and self._target is None:
            self._target = offset + self._target_count
        self._next = offset
        taken = self._take(offset, want, size)
        if not taken:
            return start
        # One tx.commit: the batch before is committed as this one is prepared.
        prepare(self._channel(), max(d.tag for d in taken), name)
        self._decision_staged = False
        self._chunk_bytes[offset] = sum(d.size for d in taken)
        return self._planned(reader, offset, name, [d.row for d in taken])

    def _gathered(self, reader: Any, offset: int, limit: ReadLimit) -> dict[str, Any]:
        """The batch starting at `offset` made of the prepared transactions already there
        (prepared ahead, or adopted), consecutive, as many as the batch's caps allow (at least
        one): the offset names them all, in order."""
        rows_cap, size = self._caps(limit)
        rows_cap = min(rows_cap, BATCH_ROWS) if rows_cap == math.inf else rows_cap
        names: list[str] = []
        end, total = offset, 0
        while end in self._txns:
            chunk_end, name = self._txns[end]
            chunk_bytes = self._chunk_bytes.get(end, 0)
            if names and (chunk_end - offset > rows_cap or total + chunk_bytes > size):
                break
            names.append(name)
            total += chunk_bytes
            self._ahead.pop(end, None)
            end = chunk_end
        return {"seq": end, "reader": reader, "txn": names[0] if len(names) == 1 else names}

    def _planned(
        self, reader: Any, offset: int, name: str, rows: list[tuple[Any, ...]]
    ) -> dict[str, Any]:
        end = offset + len(rows)
        for seq, row in enumerate(rows, offset):
            self._rows[seq] = row
        self._txns[offset] = (end, name)
        self._next = end
        return {"seq": end, "reader": reader, "txn": name}

    def _look_ahead_from_the_start(self, end: dict[str, Any]) -> None:
        """Spark plans the empty batch that names a new query: the name is in its offset log
        now, so the thread may prepare the query's first batches while Spark goes on with this
        one (its first, the slowest: it starts Python workers). A name this run picked holds
        nothing yet; the caps are the default read limit's, which Spark passes."""
        reader = end.get("reader")
        if reader is None or reader != self._minted or self._reader_id is not None:
            return
        offset = int(end["seq"])
        self._reader_id = str(reader)
        self._adopt_checked = True
        self._caps_last = self._caps(self.getDefaultReadLimit())
        self._handed_out = self._next = offset
        if self._target_count is not None and self._target is None:
            self._target = offset + self._target_count

    def _prepared_partitions(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> list[InputPartition]:
        """Rows planned by this run, or read again by name when Spark replays a batch the
        previous run planned (the batch before it is then done: committed here). Fewer rows
        than offsets come back only when the broker lost transient messages in a restart."""
        first, last = int(start["seq"]), int(end["seq"])
        if first == last:
            self._look_ahead_from_the_start(end)
            return []
        self._commit_prepared(start)
        prebuilt: list[Any] = []
        at = first
        while at < last and at in self._arrow:
            at, batch = self._arrow[at]
            prebuilt.append(batch)
        if at == last:
            return [InputPartition(ipc_stream(prebuilt))]
        if all(seq in self._rows for seq in range(first, last)):
            rows = [self._rows[seq] for seq in range(first, last)]
        else:
            rows = self._read_again(first, last, txn_names(end.get("txn")))
        return [InputPartition(arrow_rows(rows))] if rows else []

    def _read_again(self, first: int, last: int, names: list[str]) -> list[tuple[Any, ...]]:
        """A batch the previous run planned, read from the broker by its prepared
        transactions' names, in order."""
        rows: list[tuple[Any, ...]] = []
        chunks: list[tuple[str, int]] = []
        for name in names:
            read = self._batch_reader().read(name)
            if read is None or len(rows) + len(read) > last - first:
                found = "nothing" if read is None else f"{len(read)} messages"
                raise RuntimeError(
                    f"offsets {first}..{last - 1} are held by prepared transaction {name!r}, "
                    f"but the broker holds {found} under that name (was it decided by hand?)"
                )
            chunks.append((name, len(read)))
            rows.extend(read)
        for seq, row in enumerate(rows, first):
            self._rows[seq] = row
        at = first
        for name, count in chunks:
            self._txns[at] = (at + count, name)
            at += count
        self._next = max(self._next, last)
        return rows

    def _commit_prepared(self, end: dict[str, Any], at_once: bool = True) -> None:
        """Spark is done with every offset before `end`: commit the batch that ended there
        (its acks apply) and forget the rows. Not `at_once`: the decision is staged on the tx
        channel, for the next tx.commit (the one that prepares the next batch)."""
        offset = int(end["seq"])
        batch = txn_names(end.get("txn"))
        if batch and self._committed < offset:
            # `prev`, the batch before, was decided by this run, or by the dead one with the
            # tx that prepared a later batch, unless it died just before: deciding again is a
            # no-op on the broker.
            names = [*txn_names(end.get("prev")), *batch]
            names = [n for n in names if n not in self._last_decided]
            if at_once:
                decide_batches(self._channel(), names)
            else:
                stage_decisions(self._channel(), names)
                if not self._decision_staged:
                    self._staged_at = time.monotonic()
                self._decision_staged = True
            self._last_decided = set(batch)
        self._committed = max(self._committed, offset)
        for seq in [seq for seq in self._rows if seq < self._committed]:
            del self._rows[seq]
        for first in [first for first, (last, _) in self._txns.items() if last <= offset]:
            del self._txns[first]
            self._chunk_bytes.pop(first, None)
        for first in [first for first, (last, _) in self._arrow.items() if last <= offset]:
            del self._arrow[first]

    def _prepare_ahead(self) -> bool:
        """While Spark plans and runs the batch handed out last, the next one is prepared, a
        prepared transaction at a time, each as soon as a full one (by the last plan's caps: at
        most `prefetch` messages) has arrived, its Arrow batch built, until a whole batch's
        worth waits: the latestOffset that asks for it returns at once, with all of them. Each
        prepare's acks free the consumer's credit for the next messages. The tx.commit that
        prepares the first also carries the decision staged for the batch before. A driver
        that dies leaves them prepared under their deterministic names, and the restarted
        query adopts them."""
        reader, caps = self._reader_id, self._caps_last
        offset = self._next
        if reader is None or caps is None or not self._adopt_checked:
            return False
        if offset < self._handed_out or offset in self._txns:
            return False
        rows_cap, size = caps
        batch_rows = min(rows_cap, BATCH_ROWS) if rows_cap == math.inf else rows_cap
        ahead_bytes = sum(self._chunk_bytes.get(first, 0) for first in self._ahead)
        if offset - self._handed_out >= batch_rows or ahead_bytes >= size:
            return False  # a whole batch waits for Spark
        want = min(rows_cap, self.options.prefetch)
        if self._target is not None:
            want = min(want, self._target - offset)
        if want <= 0 or (len(self._pending) < want and self._pending_bytes < size):
            return False
        taken = self._take(offset, want, size)
        if not taken:
            return False
        name = txn_name(reader, offset)
        # Not waited for: the next messages come in (the prepare frees their credit) while
        # the broker writes it; Spark's next call waits for it first, and so does the channel
        # before it sends the next prepare (one in flight at a time).
        prepare(self._channel(), max(d.tag for d in taken), name, wait=False)
        self._decision_staged = False
        rows = [d.row for d in taken]
        self._planned(reader, offset, name, rows)
        self._arrow[offset] = (offset + len(rows), arrow_batch(rows))
        self._chunk_bytes[offset] = sum(d.size for d in taken)
        self._ahead[offset] = name
        return True

    def _batch_reader(self) -> BatchReader:
        if self._batches is None:
            self._channel()
            assert self._connection is not None
            self._batches = BatchReader(self._connection)
        return self._batches

    def _is_prepared(self) -> bool:
        """Connects on the first call: the broker's handshake says whether batches can be
        prepared transactions; otherwise the write-ahead log needs checkpointLocation. A query
        whose checkpoint already holds a log (started before the broker announced them, or by
        an older reader) goes on with the log, whose offsets it understands."""
        if self._prepared is None:
            capabilities = self._connect().server_capabilities
            prepared = capabilities.get(HALF_TRANSACTIONS_CAPABILITY) is True
            if self.options.checkpoint or not prepared:
                checkpoint = self.options.require_checkpoint()
                self.directory = Path(checkpoint, LOG_DIRECTORY, quote(self.queue, ""))
                prepared = prepared and not self.directory.exists()
            self._prepared = prepared
            # Every batch is built as Arrow here: its imports start now, beside the query's.
            threading.Thread(target=load_arrow, name="amqp-load-arrow", daemon=True).start()
        return self._prepared

    def _take(self, offset: int, want: float, size: float) -> list[Delivery]:
        """Up to `want` received messages (and `size` bytes, at least one message), waiting
        for them under Trigger.AvailableNow."""
        if self._target is not None:
            want = min(want, self._target - offset)
            self._await(want, size)
        else:
            self._pump(want, size)
        taken: list[Delivery] = []
        total = 0
        while self._pending and len(taken) < want:
            if taken and total + self._pending[0].size > size:
                break
            delivery = self._pending.popleft()
            taken.append(delivery)
            total += delivery.size
        self._pending_bytes -= total
        return taken

    # -- the log and the consumer

    def _log_(self) -> StreamLog:
        assert self._log is not None
        return self._log

    def _opened(self) -> StreamLog:
        """Loads the log on the first call: logged ranges become replayable rows, and their
        messages are expected back from the broker (unacked when the last driver died)."""
        if self._log is None:
            self._is_prepared()
            assert self.directory is not None
            self._log = StreamLog(self.directory)
            self._committed = self._next = self._log.committed()
            for planned in self._log.ranges():
                self._ranges[planned.start] = planned.end
                self._next = max(self._next, planned.end)
                for seq, (key, row) in enumerate(planned.entries, planned.start):
                    self._rows[seq] = row
                    self._awaiting.add(seq)
                    self._owed.setdefault(key, deque()).append(seq)
        return self._log

    def _channel(self) -> Channel:
        """The query's consumer: a tx channel, prefetch-bounded, heartbeats off unless the URL
        asks for them (the planner only runs when Spark calls it, and could miss them), its
        deliveries parsed at frame level by the client. A lost connection fails the query:
        its delivery tags are gone, and a restart from the checkpoint is what matches the
        redelivered messages to the log."""
        channel = self._tx_channel()
        if not self._consuming:
            channel.basic_consume(self.queue)
            self._consuming = True
        return channel

    def _tx_channel(self) -> Channel:
        """The consumer's channel, consuming or not yet; a channel the broker closed raises
        its code and text."""
        if self._connection is not None and not self._connection.is_open:
            raise RuntimeError(
                f"the connection consuming {self.queue!r} closed; restart the query from its "
                f"checkpoint ({self._connection.error!r})"
            )
        if self._consumer is None:
            connection = self._connect()
            channel = connection.channel()
            channel.basic_qos(prefetch_count=self.options.prefetch)
            channel.tx_select()
            self._consumer = channel
            if self._thread is not None:
                self._thread.set_waker(connection.wake)
        self._consumer.check()
        return self._consumer

    def _connect(self) -> Connection:
        """Heartbeats off unless the URL sets heartbeat=."""
        if self._connection is None:
            self._connection = Connection(self.options.url, heartbeat=0)
        return self._connection

    def _arrivals(self) -> None:
        """Deliveries that came in since the last look, made rows. A redelivered copy of a
        logged message settles that offset; anything else is new (always, with prepared
        batches: what a dead run prepared is never redelivered)."""
        if self._consumer is None:
            return
        arrived = self._consumer.take()
        if not arrived:
            return
        self._received += len(arrived)
        if self._prepared:
            row = self._rows_of.row
            for raw in arrived:
                body = raw[5]
                self._pending_bytes += len(body)
                self._pending.append(Delivery(raw[0], "", row(raw), len(body)))
            return
        for raw in arrived:
            self._logged_arrival(raw)

    def _logged_arrival(self, raw: RawDelivery) -> None:
        tag, redelivered, exchange, routing_key, encoded, body = raw
        props, _columns = self._rows_of.properties(encoded)
        key = fingerprint(exchange, routing_key, props, body)
        owed = self._owed.get(key)
        if redelivered and owed:
            seq = owed.popleft()
            if not owed:
                del self._owed[key]
            self._awaiting.discard(seq)
            self._tags[seq] = tag
            return
        self._pending_bytes += len(body)
        self._pending.append(Delivery(tag, key, self._rows_of.row(raw), len(body)))

    def _take_in(self) -> bool:
        """The connection thread's idle step: deliveries in (and made rows) while Spark runs
        a batch, up to prefetch messages or BATCH_BYTES. False when there is nothing to
        wait for: no consumer yet, enough waiting, or the connection is gone (the next call
        says so)."""
        connection = self._connection
        if not self._consuming or connection is None or not connection.is_open:
            return False
        self._queued_commits()
        if self._consumer is None or not self._consumer.is_open:
            return False
        if self._prepared:  # the next batch, while Spark plans and runs this one
            self._prepare_ahead()
        lingered = time.monotonic() - self._staged_at >= DECISION_LINGER_SECONDS
        if self._decision_staged and lingered:
            self._consumer.tx_commit()  # no prepare came to carry it: it goes alone
            self._decision_staged = False
        if len(self._pending) >= self.options.prefetch or self._pending_bytes >= BATCH_BYTES:
            return False
        try:
            connection.process(IDLE_WAIT_SECONDS)
        except AmqpError:
            return False
        self._arrivals()
        return True

    def _pump(self, want: float, size: float) -> None:
        """Takes in what the broker has sent, without waiting, until `want` messages or `size`
        body bytes are pending."""
        self._channel()
        assert self._connection is not None
        self._arrivals()
        while len(self._pending) < want and self._pending_bytes < size:
            before = self._received
            self._connection.process(0)
            self._arrivals()
            if self._received == before:
                return

    def _ready(self) -> int:
        """Messages ready on the queue (not counting those delivered to anyone)."""
        return self._tx_channel().queue_declare(self.queue, passive=True).message_count or 0

    def _await(self, want: float, size: float) -> None:
        """Trigger.AvailableNow: waits until `want` messages (or `size` body bytes) are
        pending, or until the queue has nothing ready and nothing more arrives; then the
        target shrinks to what came."""
        assert self._connection is not None or want <= 0

        def enough() -> bool:
            return len(self._pending) >= want or self._pending_bytes >= size

        while not enough():
            self._pump(want, size)
            if enough():
                return
            ready = self._ready()
            before = self._received
            deadline = time.monotonic() + SETTLE_SECONDS
            while time.monotonic() < deadline and not enough():
                assert self._connection is not None
                self._connection.process(SETTLE_SECONDS / 4)
                self._arrivals()
            if ready == 0 and self._received == before:
                self._target = self._next + len(self._pending)
                return

    def _caps(self, limit: ReadLimit) -> tuple[float, float]:
        """(rows, bytes) for this batch: the limit Spark passes, plus the other option when it
        passes the default one; BATCH_BYTES when no maxBytes says otherwise, also when Spark
        says to read everything (as prefetch bounds every batch)."""
        if isinstance(limit, ReadMaxRows):
            return limit.max_rows, self.options.max_bytes or BATCH_BYTES
        if isinstance(limit, ReadMaxBytes):
            return self.options.max_rows or math.inf, limit.max_bytes
        return math.inf, BATCH_BYTES

    def _settle(self, offset: int) -> None:
        """Everything below `offset` is committed by Spark: ack the messages behind it in one
        tx, then forget them and drop the log ranges whose messages are all acked."""
        self._committed = max(self._committed, offset)
        done = sorted(seq for seq in self._tags if seq < self._committed)
        if done:
            channel = self._channel()
            tags = sorted(self._tags.pop(seq) for seq in done)
            held = [*self._tags.values(), *(d.tag for d in self._pending)]
            if not held or tags[-1] < min(held):
                channel.basic_ack(tags[-1], multiple=True)
            else:
                for tag in tags:
                    channel.basic_ack(tag)
            channel.tx_commit()
        for first, last in list(self._ranges.items()):
            if last <= self._committed and self._awaiting.isdisjoint(range(first, last)):
                self._log_().drop(first, last)
                del self._ranges[first]
        for seq in [seq for seq in self._rows if seq < self._committed]:
            del self._rows[seq]
        self._log_().record_committed(self._committed)
