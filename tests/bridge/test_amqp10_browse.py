"""Browsing over AMQP 1.0 (a source with distribution-mode `copy`), with qpid-proton over TCP:
the browser gets each message once, in order, and new ones as they arrive; the messages stay
for consumers. Tests taking `amqp_url` also run against RabbitMQ 3.10's plugin."""

from __future__ import annotations

import pytest

from tests.support.amqp10 import proton_url

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.reactor import Copy  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402


def bodies(receiver, count: int, accept: bool = False) -> list[str]:
    """A browser's copies come settled: nothing to accept (string bodies: proton frees a
    settled delivery's bytes before a binary body could be copied)."""
    got = []
    for _ in range(count):
        got.append(receiver.receive(timeout=5).body)
        if accept:
            receiver.accept()
    return got


def test_a_browser_sees_each_message_once_and_leaves_them(broker_url, uid):
    conn = BlockingConnection(proton_url(broker_url), timeout=5)
    sender = conn.create_sender(f"/queue/{uid}")
    for i in range(3):
        sender.send(Message(body=f"m{i}"))
    browser = conn.create_receiver(f"/queue/{uid}", credit=10, options=Copy())
    assert browser.link.remote_source.distribution_mode == proton.Terminus.DIST_MODE_COPY
    assert bodies(browser, 3) == ["m0", "m1", "m2"]
    sender.send(Message(body="m3"))  # new arrivals as they come
    assert bodies(browser, 1) == ["m3"]
    second = conn.create_receiver(f"/queue/{uid}", credit=10, options=Copy(), name="second")
    assert bodies(second, 4) == ["m0", "m1", "m2", "m3"]
    consumer = conn.create_receiver(f"/queue/{uid}", credit=10, name="consumer")
    assert bodies(consumer, 4, accept=True) == ["m0", "m1", "m2", "m3"]  # all still there, in order
    conn.close()


def test_a_draining_browser_stops_at_the_end_of_the_queue(broker_url, uid):
    conn = BlockingConnection(proton_url(broker_url), timeout=5)
    sender = conn.create_sender(f"/queue/{uid}")
    for i in range(2):
        sender.send(Message(body=f"m{i}"))
    browser = conn.create_receiver(f"/queue/{uid}", credit=0, options=Copy())
    link = browser.link
    link.drain(10)
    conn.wait(lambda: not link.draining(), msg="drain")
    assert bodies(browser, 2) == ["m0", "m1"]
    conn.close()


@pytest.mark.rabbitmq
def test_rabbitmq_3_10_echoes_copy_but_its_browser_acquires(rabbitmq_url, uid):
    """The difference docs/amqp10.md records: RabbitMQ 3.10's plugin answers distribution-mode
    copy yet acquires (the message comes unsettled, and is the browser's until it settles it)."""
    conn = BlockingConnection(proton_url(rabbitmq_url), timeout=5)
    conn.create_sender(f"/queue/{uid}").send(Message(body="m0"))
    browser = conn.create_receiver(f"/queue/{uid}", credit=10, options=Copy())
    assert browser.link.remote_source.distribution_mode == proton.Terminus.DIST_MODE_COPY
    assert bodies(browser, 1) == ["m0"]
    assert len(browser.fetcher.unsettled) == 1  # acquired: sent unsettled, for it to settle
    conn.close()
