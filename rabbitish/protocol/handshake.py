"""The 0-9-1 handshake, as RabbitMQ runs it: connection.start with the broker's server-properties
(the capability table RabbitMQ announces, plus one key of ours) and the SASL mechanisms this peer
may use; start-ok logs the client in (sasl.py) and is answered with tune; tune-ok must stay
within our limits; open enters a vhost the user may use. connection.py looks up which step a
frame is in states.py and calls the step here; each step sets what it negotiated on the
connection and moves its state on.

Refusals follow RabbitMQ: a malformed response, a mechanism not offered and a tune-ok outside
our limits close the socket without a word (the peer gets SILENT_CLOSE_DELAY to hang up first);
refused credentials too, unless the client announced authentication_failure_close, which gets
a 403; a missing or refused vhost gets a 530."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

from pamqp import commands

from rabbitish.engine.errors import ConnectionError_
from rabbitish.frontend.sasl import Refusal
from rabbitish.protocol import sasl
from rabbitish.protocol.framing import encode_start
from rabbitish.protocol.states import ConnectionEvent
from rabbitish.wire_names import HALF_TRANSACTIONS_CAPABILITY, PRODUCT

if TYPE_CHECKING:
    from rabbitish.protocol.connection import Connection

log = logging.getLogger("rabbitish.connection")

PLATFORM = "Python/asyncio"

MIN_FRAME_MAX = 4096  # the spec's minimum: the frame size until tune-ok
SILENT_CLOSE_DELAY = 3.0  # RabbitMQ's wait before closing after a refused handshake


def server_properties(version: str) -> dict[str, Any]:
    """connection.start's server-properties; the capability table (keys and order) is the one
    RabbitMQ announces, plus one key of ours at the end: clients such as rabbitish.spark use
    half transactions (x-half-txn) only where the broker says it has them."""
    return {
        "capabilities": {
            "publisher_confirms": True,
            "exchange_exchange_bindings": True,
            "basic.nack": True,
            "consumer_cancel_notify": True,
            "connection.blocked": True,
            "consumer_priorities": True,
            "authentication_failure_close": True,
            "per_consumer_qos": True,
            "direct_reply_to": True,
            HALF_TRANSACTIONS_CAPABILITY: True,
        },
        "cluster_name": "rabbitish@localhost",
        "copyright": "Copyright (c) rabbitish authors",
        "information": "rabbitish, a RabbitMQ-compatible broker; see its README",
        "platform": PLATFORM,
        "product": PRODUCT,
        "version": version,
    }


@functools.cache
def start_frame(version: str, mechanisms: tuple[str, ...] = sasl.PASSWORD_MECHANISMS) -> bytes:
    return encode_start(server_properties(version), " ".join(mechanisms), "en_US")


def start(conn: Connection) -> None:
    """The protocol header was accepted: send connection.start."""
    conn.write(start_frame(conn.version, sasl.offered(conn.peer_info)))


def start_ok(conn: Connection, method: commands.Connection.StartOk) -> None:
    """Log the client in; tune follows."""
    conn.client_properties = method.client_properties or {}
    caps = conn.client_properties.get("capabilities")
    conn.capabilities = caps if isinstance(caps, dict) else {}
    mechanism = method.mechanism
    try:
        login = sasl.login(
            conn.node.users, conn.peer_info, mechanism, method.response, conn.config.loopback_users
        )
    except sasl.MalformedResponse as err:
        conn.drop(str(err), linger=True)
        return
    if login.user is None:
        if login.refusal is Refusal.LOOPBACK_ONLY:
            log.warning(
                "%s login refused: user '%s' can only connect via localhost",
                mechanism,
                login.refused_user,
            )
        _refuse_login(conn, mechanism)
        return
    conn.user = login.user
    conn.auth_mechanism = mechanism
    conn.advance(ConnectionEvent.STARTED)
    conn.send_method(
        0,
        commands.Connection.Tune(
            channel_max=conn.config.channel_max,
            frame_max=conn.config.frame_max,
            heartbeat=conn.config.heartbeat,
        ),
    )


def _refuse_login(conn: Connection, mechanism: str) -> None:
    """403 for clients that asked to be told (then close-ok or 3 s), silence otherwise."""
    if conn.capabilities.get("authentication_failure_close"):
        conn.close_with(ConnectionError_(403, sasl.refused_text(mechanism)))
        conn.close_wait = SILENT_CLOSE_DELAY
        return
    conn.drop("authentication failed", linger=True)


def tune_ok(conn: Connection, method: commands.Connection.TuneOk) -> None:
    """The client's values must lie within ours; 0 (no limit) is refused because we have
    limits. RabbitMQ closes the socket silently on a refusal."""
    refusal = _out_of_range(
        "frame_max", method.frame_max, MIN_FRAME_MAX, conn.config.frame_max
    ) or _out_of_range("channel_max", method.channel_max, 1, conn.config.channel_max)
    if refusal is not None:
        conn.drop(refusal, linger=True)
        return
    conn.frame_max = method.frame_max
    conn.channel_max = method.channel_max
    conn.heartbeat = method.heartbeat
    conn.reader.frame_max = method.frame_max
    conn.advance(ConnectionEvent.TUNED)


def _out_of_range(field: str, value: int, minimum: int, maximum: int) -> str | None:
    if value == 0 or value > maximum:
        return f"negotiated {field} = {value} is above {maximum}"
    if value < minimum:
        return f"negotiated {field} = {value} is below {minimum}"
    return None


def open_vhost(conn: Connection, method: commands.Connection.Open) -> None:
    """Enter the vhost if it is there and the user may use it (530 otherwise)."""
    vhost = conn.node.vhost(method.virtual_host)
    if vhost is None:
        conn.close_with(ConnectionError_(530, f"vhost {method.virtual_host} not found").at(10, 40))
        return
    if not conn.node.users.may_access(conn.user or "", vhost.name):
        conn.close_with(
            ConnectionError_(
                530, f"access to vhost '{vhost.name}' refused for user '{conn.user}'"
            ).at(10, 40)
        )
        return
    conn.enter_vhost(vhost)
    conn.advance(ConnectionEvent.OPENED)
    conn.send_method(0, commands.Connection.OpenOk())
