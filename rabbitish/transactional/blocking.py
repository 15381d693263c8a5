"""`TransactionProducer` on pika's BlockingConnection. Sends run on the caller's thread over
one confirming channel; status checks are answered by a consumer on a second connection, in a
daemon thread of its own (a BlockingConnection serves one thread only)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pika
import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel

from rabbitish.transactional import common
from rabbitish.transactional.common import LocalTransactionState, SendResult
from rabbitish.wire_names import HALF_HEADER, TXN_EXCHANGE

LocalTransaction = Callable[[str, Any], Any]  # (id, body) -> LocalTransactionState
Checker = Callable[[str], Any]  # id -> LocalTransactionState
STARTUP_TIMEOUT = 30.0


def _parameters(parameters: pika.connection.Parameters | str) -> pika.connection.Parameters:
    return pika.URLParameters(parameters) if isinstance(parameters, str) else parameters


def publish_decision(
    channel: BlockingChannel, txn_id: str, state: LocalTransactionState, mandatory: bool
) -> None:
    """Publish the decision for `state` (nothing for UNKNOWN) and wait for its confirm, which
    the broker sends once the decision is durable. Mandatory: an ID the broker does not hold
    raises HalfTransactionError."""
    key = common.decision_key(state)
    if key is None:
        return
    props = pika.BasicProperties(headers={HALF_HEADER: txn_id})
    try:
        channel.basic_publish(TXN_EXCHANGE, key, b"", props, mandatory=mandatory)
    except pika.exceptions.UnroutableError:
        raise common.not_held(txn_id) from None


class TransactionProducer:
    """Sends half messages and decides them (steps 1-4 of the flow); with a `checker`, answers
    the broker's status checks on `check_queue` (steps 5-7), also for IDs an earlier producer
    instance left undecided. `check_queue` is declared durable, so checks wait for whichever
    instance consumes it next."""

    def __init__(
        self,
        parameters: pika.connection.Parameters | str,
        check_queue: str,
        checker: Checker | None = None,
        check_immunity: float | None = None,
    ) -> None:
        self.parameters = _parameters(parameters)
        self.check_queue = check_queue
        self.check_immunity = check_immunity
        self.connection = pika.BlockingConnection(self.parameters)
        self.channel = self.connection.channel()
        self.channel.confirm_delivery()
        self.channel.queue_declare(check_queue, durable=True)
        self._checks: _CheckConsumer | None = None
        if checker is not None:
            self._checks = _CheckConsumer(self.parameters, check_queue, checker)
            try:
                self._checks.start_and_wait()
            except BaseException:
                self.connection.close()
                raise

    def send(
        self,
        exchange: str,
        routing_key: str,
        body: bytes | Sequence[bytes],
        local_transaction: LocalTransaction,
        properties: pika.BasicProperties | None = None,
    ) -> SendResult:
        """Hold `body` (or each of several bodies) under a fresh ID, run
        `local_transaction(id, body)` and publish its outcome. A half message that reaches no
        queue rolls the ID back and raises HalfTransactionError before the local transaction
        runs. If the local transaction raises, nothing is decided: the status check will ask."""
        txn_id = common.new_id()
        props = copy.copy(properties) if properties is not None else pika.BasicProperties()
        props.headers = common.half_headers(
            props.headers, txn_id, self.check_queue, self.check_immunity
        )
        if props.delivery_mode is None:
            props.delivery_mode = common.PERSISTENT
        for one in common.body_list(body):
            try:
                self.channel.basic_publish(exchange, routing_key, one, props, mandatory=True)
            except pika.exceptions.UnroutableError:
                self.decide(txn_id, LocalTransactionState.ROLLBACK, mandatory=False)
                raise common.unroutable(txn_id, exchange, routing_key) from None
        state = common.as_state(local_transaction(txn_id, body))
        self.decide(txn_id, state)
        return SendResult(txn_id, state)

    def decide(self, txn_id: str, state: LocalTransactionState, mandatory: bool = True) -> None:
        """Commit or roll back `txn_id` (step 4 or 7) and wait until the broker has it durably."""
        publish_decision(self.channel, txn_id, state, mandatory)

    def close(self) -> None:
        """Stop answering checks and close the connections (undecided IDs stay held)."""
        if self._checks is not None:
            self._checks.stop()
            self._checks = None
        if self.connection.is_open:
            self.connection.close()

    def __enter__(self) -> TransactionProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _CheckConsumer:
    """Consumes status checks on its own connection and thread, and answers each with the
    checker's outcome (UNKNOWN, or a checker that raises: no answer; the broker asks again)."""

    def __init__(self, parameters: pika.connection.Parameters, queue: str, checker: Checker):
        self.parameters = parameters
        self.queue = queue
        self.checker = checker
        self.connection: pika.BlockingConnection | None = None
        self.channel: BlockingChannel | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"checks:{queue}", daemon=True)

    def start_and_wait(self) -> None:
        self._thread.start()
        if not self._ready.wait(STARTUP_TIMEOUT):
            raise TimeoutError("the status check consumer did not start")
        if self._failure is not None:
            raise self._failure

    def _run(self) -> None:
        try:
            self.connection = pika.BlockingConnection(self.parameters)
            self.channel = self.connection.channel()
            self.channel.confirm_delivery()
            self.channel.queue_declare(self.queue, durable=True)
            self.channel.basic_consume(self.queue, self._on_check)
        except BaseException as exc:  # reported to the constructor's thread
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            self.channel.start_consuming()
        except pika.exceptions.AMQPError:
            common.log.exception("status check consumer on %r stopped", self.queue)
        finally:
            if self.connection.is_open:
                self.connection.close()

    def _on_check(self, channel: BlockingChannel, method: Any, props: Any, body: bytes) -> None:
        txn_id = common.checked_id(props.headers)
        if txn_id is not None:
            try:
                state = common.as_state(self.checker(txn_id))
            except Exception:
                common.log.exception("checker failed for half transaction %r", txn_id)
            else:
                publish_decision(channel, txn_id, state, mandatory=False)
        channel.basic_ack(method.delivery_tag)

    def stop(self) -> None:
        connection, channel = self.connection, self.channel
        if connection is not None and channel is not None and connection.is_open:
            try:
                connection.add_callback_threadsafe(channel.stop_consuming)
            except pika.exceptions.ConnectionWrongStateError:
                pass
        self._thread.join(STARTUP_TIMEOUT)
