"""Half messages from an AMQP 1.0 client: application-properties carry x-half-txn, and a
message to /exchange/amq.rabbitish.txn/commit decides, as with 0-9-1."""

from __future__ import annotations

import pytest

from tests.support.amqp10 import proton_url
from tests.support.clients import pika_channel
from tests.support.half import bodies, ready

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402


def test_a_1_0_client_publishes_half_messages_and_commits_them(broker_url, uid):
    conn = BlockingConnection(proton_url(broker_url), timeout=5)
    try:
        sender = conn.create_sender(f"/queue/{uid}")
        for n in range(2):
            props = {"x-half-txn": uid}
            sender.send(Message(body=str(n).encode(), properties=props, inferred=True))
        with pika_channel(broker_url) as ch:
            assert ready(ch, uid) == 0
        decision = conn.create_sender("/exchange/amq.rabbitish.txn/commit")
        decision.send(Message(body=b"", properties={"x-half-txn": uid}, inferred=True))
    finally:
        conn.close()
    with pika_channel(broker_url) as ch:
        assert bodies(ch, uid) == [b"0", b"1"]
