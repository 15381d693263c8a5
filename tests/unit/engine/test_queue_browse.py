"""Browsing (AMQP 1.0 distribution-mode copy), driven directly: a browser gets a copy of each
ready message once, in publication order, then of new ones as they arrive, within its credit;
the messages stay where they are for consumers."""

from __future__ import annotations

from rabbitish.engine.consumer import Consumer, Selection
from rabbitish.engine.delivery import Delivery, Outcome, settle
from tests.support.engine import Recorder, message


class Browser(Consumer):
    """Takes copies while `credit_left` lasts, as a 1.0 link spends its credit."""

    __slots__ = ("credit_left", "got")

    def __init__(self, queue, credit: int = 100) -> None:
        super().__init__(queue, "browser", settled_on_delivery=True)
        self.credit_left = credit
        self.got: list[Delivery] = []

    @property
    def credit(self) -> int:
        return self.credit_left

    def delivered(self, delivery: Delivery) -> None:
        self.credit_left -= 1
        self.got.append(delivery)

    def bodies(self) -> list[bytes]:
        return [d.entry.message.body for d in self.got]


def publish(vhost, *bodies: bytes) -> None:
    for body in bodies:
        vhost.publish("", "q", message(body))


def test_a_browser_sees_each_message_once_and_they_stay(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, b"1", b"2", b"3")
    browser = Browser(queue)
    queue.add_browser(browser)
    assert browser.bodies() == [b"1", b"2", b"3"]
    assert all(d.settled for d in browser.got)
    assert queue.message_count == 3 and not queue.outstanding
    assert [d.delivery_count for d in browser.got] == [1, 1, 1]  # as a first delivery reads
    publish(vhost, b"4")  # new arrivals as they come
    assert browser.bodies() == [b"1", b"2", b"3", b"4"]
    consumer = Recorder(queue)
    queue.add_consumer(consumer)  # everything is still there, in order
    assert [d.entry.message.body for d in consumer.got] == [b"1", b"2", b"3", b"4"]


def test_a_browser_goes_as_far_as_its_credit_and_says_when_it_is_dry(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, b"1", b"2", b"3")
    browser = Browser(queue, credit=0)
    queue.add_browser(browser)
    assert browser.got == []
    browser.credit_left = 2
    assert tuple(queue.browse(browser, 2)) == (2, False)
    browser.credit_left = 5
    assert tuple(queue.browse(browser, 5)) == (1, True)
    assert tuple(queue.browse(browser, 5)) == (0, True)
    assert browser.bodies() == [b"1", b"2", b"3"]


def test_a_message_back_from_a_consumer_is_seen_once(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, b"1", b"2")
    consumer = Recorder(queue, limit=1)
    queue.add_consumer(consumer)  # takes "1"
    browser = Browser(queue)
    queue.add_browser(browser)
    assert browser.bodies() == [b"2"]
    settle(consumer.got, Outcome.REQUEUE)  # "1" back, but the browser is past it
    assert browser.bodies() == [b"2"]
    browser2 = Browser(queue)
    queue.add_browser(browser2)
    assert browser2.bodies() == [b"2"]  # consumer took "1" again at once
    assert browser2.got[0].redelivered is False


def test_a_requeued_message_the_browser_had_not_reached_is_seen(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, b"1", b"2")
    consumer = Recorder(queue, limit=2)
    queue.add_consumer(consumer)
    browser = Browser(queue)
    queue.add_browser(browser)
    assert browser.got == []
    queue.remove_consumer(consumer)
    settle(consumer.got, Outcome.REQUEUE)
    assert browser.bodies() == [b"1", b"2"]
    assert browser.got[0].redelivered and browser.got[0].delivery_count == 2


def test_expired_messages_are_skipped(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, b"a")
    vhost.publish("", "q", message(b"old", expiration="60000"))
    publish(vhost, b"b")
    behind_the_head = list(queue.ready)[1]
    behind_the_head.expires_at = 0.0  # its time came; only the head is dropped at once
    browser = Browser(queue, credit=1)
    queue.add_browser(browser)
    browser.credit_left = 1
    assert tuple(queue.browse(browser, 1)) == (1, True)
    assert browser.bodies() == [b"a", b"b"]


def test_a_commit_holding_the_queue_shows_nothing_until_it_is_applied(vhost):
    queue = vhost.declare_queue("q", owner=None)
    browser = Browser(queue)
    queue.add_browser(browser)
    queue.suspend_dispatch()
    publish(vhost, b"1", b"2")
    assert browser.got == [] and tuple(queue.browse(browser, 5)) == (0, False)
    queue.resume_dispatch()
    assert browser.bodies() == [b"1", b"2"]


def test_removed_and_deleted(vhost):
    queue = vhost.declare_queue("q", owner=None)
    browser = Browser(queue)
    queue.add_browser(browser)
    queue.remove_browser(browser)
    publish(vhost, b"1")
    assert browser.got == []
    queue.add_browser(browser)
    cancelled = queue.mark_deleted()
    assert browser in cancelled and not queue.browsers


def test_a_browser_with_a_selection_sees_only_what_it_accepts_each_judged_once(vhost):
    queue = vhost.declare_queue("q", owner=None)
    publish(vhost, b"1", b"2", b"3", b"4")
    judged: list[bytes] = []

    def even(entry) -> bool:
        judged.append(entry.message.body)
        return int(entry.message.body) % 2 == 0

    browser = Browser(queue)
    browser.selection = Selection(even)
    queue.add_browser(browser)
    assert browser.bodies() == [b"2", b"4"]
    publish(vhost, b"5", b"6")
    assert browser.bodies() == [b"2", b"4", b"6"]
    publish(vhost, b"7")  # turned down, after the last copy: passed all the same
    publish(vhost, b"8")
    assert browser.bodies() == [b"2", b"4", b"6", b"8"]
    assert judged == [b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8"]
    assert queue.message_count == 8  # nothing taken
