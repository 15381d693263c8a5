"""The first eight bytes of a connection choose its front end. The listener's per-socket protocol
reads them (waiting as long as it takes, within the handshake timeout), looks the header up in
FRONT_ENDS and hands the socket over with the bytes that followed the header, the way hypercorn
upgrades a connection. A header with no front end gets the 0-9-1 header back and a close, as
RabbitMQ answers one.

A front end is a factory `(node, config, registry) -> protocol`; the protocol it builds takes the
socket over through `take_over(transport, header, rest, deadline)` and from then on is the
transport's asyncio protocol. AMQP 1.0, with or without its SASL layer, goes to the bridge
(server/amqp10.py), 0-9-1 and 0-9 to the 0-9-1 protocol."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Protocol, cast

from rabbitish.config import Config
from rabbitish.engine.node import Node
from rabbitish.protocol.framing import PROTOCOL_HEADER, PROTOCOL_HEADER_0_9
from rabbitish.server.connection import AmqpServerProtocol
from rabbitish.server.socket_protocol import ClientSocket

log = logging.getLogger("rabbitish.connection")

HEADER_SIZE = 8
AMQP_0_9_1 = PROTOCOL_HEADER
AMQP_0_9 = PROTOCOL_HEADER_0_9  # RabbitMQ speaks 0-9-1 to it
AMQP_1_0 = b"AMQP\x00\x01\x00\x00"
AMQP_1_0_SASL = b"AMQP\x03\x01\x00\x00"  # the SASL layer in front of 1.0
REFUSAL = PROTOCOL_HEADER  # what a header without a front end gets back before the close


class FrontEndProtocol(Protocol):
    """The asyncio protocol of one front end, before it has a socket."""

    def take_over(
        self, transport: asyncio.Transport, header: bytes, rest: bytes, deadline: float
    ) -> None: ...


class FrontEnd(Protocol):
    def __call__(
        self, node: Node, config: Config, registry: set[ClientSocket]
    ) -> FrontEndProtocol: ...


def amqp10_front_end(node: Node, config: Config, registry: set[ClientSocket]) -> FrontEndProtocol:
    """The AMQP 1.0 bridge, imported on the first 1.0 connection: its type tables are built
    from the spec XML at import, which a broker that only ever sees 0-9-1 need not wait for."""
    from rabbitish.server.amqp10 import Amqp10ServerProtocol

    return Amqp10ServerProtocol(node, config, registry)


FRONT_ENDS: dict[bytes, FrontEnd] = {
    AMQP_0_9_1: AmqpServerProtocol,
    AMQP_0_9: AmqpServerProtocol,
    AMQP_1_0: amqp10_front_end,
    AMQP_1_0_SASL: amqp10_front_end,
}


def front_end_for(
    header: bytes, front_ends: Mapping[bytes, FrontEnd] = FRONT_ENDS
) -> FrontEnd | None:
    return front_ends.get(header)


class HeaderSniffer(asyncio.Protocol):
    """A fresh socket until its protocol header is in. Lives in the broker's registry meanwhile
    (as a connection without a protocol Connection), so shutdown closes it too."""

    def __init__(
        self,
        node: Node,
        config: Config,
        registry: set[ClientSocket],
        front_ends: Mapping[bytes, FrontEnd] = FRONT_ENDS,
    ) -> None:
        self.node = node
        self.config = config
        self.registry = registry
        self.front_ends = front_ends
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self._buffer = b""
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio's
        self.registry.add(self)
        self._deadline = self.loop.time() + self.config.handshake_timeout
        self._timer = self.loop.call_later(self.config.handshake_timeout, self._timed_out)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) < HEADER_SIZE:
            return
        header, rest = self._buffer[:HEADER_SIZE], self._buffer[HEADER_SIZE:]
        self._buffer = b""
        front_end = front_end_for(header, self.front_ends)
        if front_end is None:
            self._refuse()
        else:
            self._hand_over(front_end, header, rest)

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._leave()

    def force_close(self, reply_code: int, text: str) -> None:
        """Broker shutdown before any protocol was chosen: just close."""
        if self.transport is not None:
            self.transport.close()

    def alarms_changed(self) -> None:
        """Nothing to lift: a socket without a protocol yet publishes nothing."""

    def _refuse(self) -> None:
        assert self.transport is not None
        self.transport.write(REFUSAL)
        self.transport.close()

    def _hand_over(self, front_end: FrontEnd, header: bytes, rest: bytes) -> None:
        transport = self.transport
        assert transport is not None
        self._leave()
        protocol = front_end(self.node, self.config, self.registry)
        transport.set_protocol(protocol)  # type: ignore[arg-type]
        protocol.take_over(transport, header, rest, self._deadline)

    def _leave(self) -> None:
        self.registry.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.transport is not None and not self.transport.is_closing():
            log.info("closing %s: handshake timeout", self.transport.get_extra_info("peername"))
            self.transport.close()
