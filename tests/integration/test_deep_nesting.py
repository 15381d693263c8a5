"""Tables and arrays nested 15,000 levels deep, in the three places a client can put them: queue
arguments, message headers and (as deep as the pre-tune frame size allows) start-ok client
properties. RabbitMQ accepts them all; so must rabbitish, on rabbitish and RabbitMQ alike."""

from __future__ import annotations

import struct

import pytest
from pamqp import commands

from tests.support import deep_tables
from tests.support.broker_process import BrokerProcess
from tests.support.raw_amqp import PROTOCOL_HEADER, RawClient, raw_frame

DEPTH = 15_000
KINDS = ["F", "A"]  # nested tables, nested arrays


@pytest.mark.parametrize("kind", KINDS)
def test_deep_queue_arguments_are_accepted(amqp_url: str, uid: str, kind: str) -> None:
    arguments = deep_tables.table({"x-deep": deep_tables.nested_value(DEPTH, kind)})
    with RawClient(amqp_url, timeout=30).open() as c:
        c.open_channel(1)
        declare = deep_tables.queue_declare_payload(f"deep-{uid}", arguments, exclusive=True)
        c.send(raw_frame(1, 1, declare))
        assert c.expect("Queue.DeclareOk").queue == f"deep-{uid}"
        c.send(raw_frame(1, 1, declare))  # the same arguments again: equivalent
        c.expect("Queue.DeclareOk")


@pytest.mark.parametrize("kind", KINDS)
def test_deep_headers_go_through_byte_exact(amqp_url: str, uid: str, kind: str) -> None:
    headers = deep_tables.table({"deep": deep_tables.nested_value(DEPTH, kind)})
    queue = f"deep-headers-{uid}"
    with RawClient(amqp_url, timeout=30).open() as c:
        c.open_channel(1)
        c.send_method(1, commands.Queue.Declare(queue=queue, exclusive=True))
        c.expect("Queue.DeclareOk")
        c.send_method(1, commands.Basic.Publish(routing_key=queue))
        c.send(raw_frame(2, 1, deep_tables.content_header_payload(3, headers)))
        c.send(raw_frame(3, 1, b"abc"))
        c.send_method(1, commands.Basic.Get(queue=queue, no_ack=True))
        c.expect("Basic.GetOk")
        ftype, _channel, payload = c.read_raw_frame(30) or (0, 0, b"")
        assert ftype == 2
        assert payload[14:] == headers


@pytest.mark.parametrize("kind", KINDS)
def test_deep_client_properties_within_the_first_frame(amqp_url: str, kind: str) -> None:
    """Before tune-ok a frame holds 4096 octets, so start-ok's properties nest as deep as
    that allows (about 800 arrays, 680 tables): connection.tune comes back."""
    depth = (4096 - 100) // (5 if kind == "A" else 7)
    properties = deep_tables.table({"deep": deep_tables.nested_value(depth, kind)})
    with RawClient(amqp_url, timeout=30) as c:
        c.send(PROTOCOL_HEADER)
        c.expect("Connection.Start")
        c.send(raw_frame(1, 0, deep_tables.start_ok_payload(properties)))
        c.expect("Connection.Tune")


def test_deep_durable_arguments_survive_a_restart(tmp_path) -> None:
    """Stored and recovered as they came (the redeclare after the restart is equivalent),
    with a double no float32 holds."""
    arguments = deep_tables.table(
        {
            "x-deep": deep_tables.nested_value(DEPTH // 2, "F"),
            "x-arr": deep_tables.nested_value(DEPTH // 2, "A"),
            "x-double": b"d" + struct.pack(">d", 1e300),
        }
    )
    declare = deep_tables.queue_declare_payload("deep-durable", arguments, durable=True)
    with BrokerProcess(data_dir=tmp_path, keep_port=True) as broker:
        for _ in range(2):
            with RawClient(broker.url, timeout=30).open() as c:
                c.open_channel(1)
                c.send(raw_frame(1, 1, declare))
                c.expect("Queue.DeclareOk")
            broker.restart()
