"""`AsyncTransactionProducer` on aio-pika: the asyncio twin of `TransactionProducer`. The local
transaction and the checker may be plain functions or coroutine functions. Checks are consumed
on a channel of their own, on the same connection."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import aio_pika
import aio_pika.abc
import aiormq

from rabbitish.transactional import common
from rabbitish.transactional.common import LocalTransactionState, SendResult
from rabbitish.wire_names import HALF_HEADER, TXN_EXCHANGE

LocalTransaction = Callable[[str, Any], Any | Awaitable[Any]]
Checker = Callable[[str], Any | Awaitable[Any]]


async def _outcome(value: Any) -> LocalTransactionState:
    return common.as_state(await value if inspect.isawaitable(value) else value)


async def _published(
    exchange: aio_pika.abc.AbstractExchange, message: aio_pika.Message, key: str, mandatory: bool
) -> bool:
    """Publish and wait for the confirm; False when a mandatory publish came back unroutable
    (aio-pika then answers with the returned message instead of basic.ack)."""
    result = await exchange.publish(message, key, mandatory=mandatory)
    return not mandatory or isinstance(result, aiormq.spec.Basic.Ack)


async def publish_decision(
    exchange: aio_pika.abc.AbstractExchange,
    txn_id: str,
    state: LocalTransactionState,
    mandatory: bool,
) -> None:
    """Publish the decision for `state` (nothing for UNKNOWN) and wait for its confirm, sent
    once the decision is durable. Mandatory: an ID the broker does not hold raises."""
    key = common.decision_key(state)
    if key is None:
        return
    message = aio_pika.Message(b"", headers={HALF_HEADER: txn_id})
    if not await _published(exchange, message, key, mandatory):
        raise common.not_held(txn_id)


class AsyncTransactionProducer:
    """Sends half messages and decides them (steps 1-4 of the flow); with a `checker`, answers
    the broker's status checks on the durable `check_queue` (steps 5-7). Give it a URL (it
    opens and closes its own connection) or an open aio-pika connection (left open). Use
    `async with` or `await start()` / `await close()`."""

    def __init__(
        self,
        connection: aio_pika.abc.AbstractConnection | str,
        check_queue: str,
        checker: Checker | None = None,
        check_immunity: float | None = None,
    ) -> None:
        self._target = connection
        self.check_queue = check_queue
        self.checker = checker
        self.check_immunity = check_immunity
        self.connection: aio_pika.abc.AbstractConnection | None = None
        self.channel: aio_pika.abc.AbstractChannel | None = None
        self._exchanges: dict[str, aio_pika.abc.AbstractExchange] = {}
        self._check_channel: aio_pika.abc.AbstractChannel | None = None
        self._check_decisions: aio_pika.abc.AbstractExchange | None = None

    async def start(self) -> AsyncTransactionProducer:
        if isinstance(self._target, str):
            self.connection = await aio_pika.connect(self._target)
        else:
            self.connection = self._target
        self.channel = await self.connection.channel(publisher_confirms=True)
        await self.channel.declare_queue(self.check_queue, durable=True)
        if self.checker is not None:
            self._check_channel = await self.connection.channel(publisher_confirms=True)
            queue = await self._check_channel.declare_queue(self.check_queue, durable=True)
            self._check_decisions = await self._check_channel.get_exchange(
                TXN_EXCHANGE, ensure=False
            )
            await queue.consume(self._on_check)
        return self

    async def _exchange(self, name: str) -> aio_pika.abc.AbstractExchange:
        assert self.channel is not None, "call start() first"
        if name not in self._exchanges:
            if name == "":
                self._exchanges[name] = self.channel.default_exchange
            else:
                self._exchanges[name] = await self.channel.get_exchange(name, ensure=False)
        return self._exchanges[name]

    async def send(
        self,
        exchange: str,
        routing_key: str,
        body: bytes | Sequence[bytes],
        local_transaction: LocalTransaction,
        properties: Mapping[str, Any] | None = None,
    ) -> SendResult:
        """Hold `body` (or each of several bodies) under a fresh ID, run
        `local_transaction(id, body)` and publish its outcome. `properties` are aio_pika.Message
        keyword arguments. A half message that reaches no queue rolls the ID back and raises
        HalfTransactionError; if the local transaction raises, nothing is decided."""
        txn_id = common.new_id()
        fields = dict(properties or {})
        fields["headers"] = common.half_headers(
            fields.get("headers"), txn_id, self.check_queue, self.check_immunity
        )
        fields.setdefault("delivery_mode", common.PERSISTENT)
        target = await self._exchange(exchange)
        for one in common.body_list(body):
            if not await _published(target, aio_pika.Message(one, **fields), routing_key, True):
                await self.decide(txn_id, LocalTransactionState.ROLLBACK, mandatory=False)
                raise common.unroutable(txn_id, exchange, routing_key)
        state = await _outcome(local_transaction(txn_id, body))
        await self.decide(txn_id, state)
        return SendResult(txn_id, state)

    async def decide(
        self, txn_id: str, state: LocalTransactionState, mandatory: bool = True
    ) -> None:
        """Commit or roll back `txn_id` (step 4 or 7) and wait until the broker has it durably."""
        await publish_decision(await self._exchange(TXN_EXCHANGE), txn_id, state, mandatory)

    async def _on_check(self, message: aio_pika.abc.AbstractIncomingMessage) -> None:
        """Answer one status check (UNKNOWN, or a checker that raises: no answer)."""
        assert self.checker is not None and self._check_decisions is not None
        txn_id = common.checked_id(message.headers)
        if txn_id is not None:
            try:
                state = await _outcome(self.checker(txn_id))
            except Exception:
                common.log.exception("checker failed for half transaction %r", txn_id)
            else:
                await publish_decision(self._check_decisions, txn_id, state, mandatory=False)
        await message.ack()

    async def close(self) -> None:
        """Stop answering checks and close the channels (and the connection, if it opened it);
        undecided IDs stay held."""
        for channel in (self._check_channel, self.channel):
            if channel is not None and not channel.is_closed:
                await channel.close()
        self._check_channel = self.channel = None
        self._exchanges.clear()
        if isinstance(self._target, str) and self.connection is not None:
            await self.connection.close()
        self.connection = None

    async def __aenter__(self) -> AsyncTransactionProducer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
