"""Helpers for the queue tests: the RESOURCE_LOCKED text, short unique names, whether a queue
exists."""

from __future__ import annotations

import pika
import pika.exceptions
from pika.spec import Basic

from tests.support.clients import pika_channel as channel

LOCKED = (
    "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '{q}' in vhost '/'. It "
    "could be originally declared on another connection or the exclusive property value does "
    "not match that of the original declaration."
)


def short(uid: str) -> str:
    """A unique name short enough for the 405 text to fit in a reply (255 bytes)."""
    return "-".join(uid.split("-")[:2]) + "-x"


def queue_exists(url: str, name: str) -> bool:
    with channel(url) as ch:
        try:
            ch.queue_declare(name, passive=True)
        except pika.exceptions.ChannelClosedByBroker as error:
            assert error.reply_code in (404, 405)
            return error.reply_code == 405
        return True


def fill(url: str, name: str, count: int) -> None:
    """Declare a durable queue and put `count` messages m0, m1 ... on it with 0-9-1."""
    with channel(url) as ch:
        ch.queue_declare(name, durable=True)
        for i in range(count):
            ch.basic_publish("", name, b"m%d" % i)


def ready(url: str, name: str) -> int:
    """The queue's ready message count, as declare-ok reports it."""
    with channel(url) as ch:
        return ch.queue_declare(name, passive=True).method.message_count


def message_count(conn: pika.BlockingConnection, queue: str) -> int:
    """The queue's ready message count, as declare-ok reports it, on a channel of `conn`."""
    ch = conn.channel()
    try:
        return ch.queue_declare(queue, passive=True).method.message_count
    finally:
        ch.close()


def get_all(url: str, name: str) -> list[tuple[Basic.GetOk, pika.BasicProperties, bytes]]:
    """(get-ok, properties, body) of every ready message, taken off the queue with basic.get
    (auto-ack)."""
    got = []
    with channel(url) as ch:
        while True:
            method, properties, body = ch.basic_get(name, auto_ack=True)
            if method is None:
                return got
            got.append((method, properties, body))


def take_all(url: str, name: str) -> list[bytes]:
    """Every ready message's body, taken off the queue with basic.get."""
    return [body for _method, _properties, body in get_all(url, name)]
