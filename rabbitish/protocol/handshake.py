"""What the broker says of itself in connection.start: its server-properties (the capability
table RabbitMQ announces, plus one key of ours) and the encoded start frame."""

from __future__ import annotations

import functools
from typing import Any

from rabbitish.protocol import sasl
from rabbitish.protocol.framing import encode_start
from rabbitish.wire_names import HALF_TRANSACTIONS_CAPABILITY

PRODUCT = "RabbitMQ"  # clients key features off the product name; rabbitish answers as RabbitMQ
PLATFORM = "Python/asyncio"


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
