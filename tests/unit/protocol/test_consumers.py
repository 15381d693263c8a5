"""The channel's global prefetch limiter (basic.qos global=true), as RabbitMQ's rabbit_limiter
counts: a volume that starts at the unacked deliveries when the limit is set, grows with each
consumer delivery that needs an ack, shrinks as they are settled, and is dropped with the
limit."""

from __future__ import annotations

from rabbitish.protocol.consumers import GlobalLimiter


def test_no_limit_counts_nothing():
    limiter = GlobalLimiter()
    limiter.delivered()
    limiter.settled(1)
    assert (limiter.prefetch, limiter.volume) == (0, 0)


def test_the_volume_starts_at_the_unacked_deliveries_and_follows_deliveries():
    limiter = GlobalLimiter()
    limiter.limit(10, unacked=3)
    assert (limiter.prefetch, limiter.volume) == (10, 3)
    limiter.delivered()
    limiter.delivered()
    assert limiter.volume == 5
    limiter.settled(4)
    assert limiter.volume == 1


def test_changing_the_limit_keeps_the_volume():
    limiter = GlobalLimiter()
    limiter.limit(10, unacked=3)
    limiter.limit(2, unacked=7)
    assert (limiter.prefetch, limiter.volume) == (2, 3)


def test_a_zero_volume_is_left_alone_when_deliveries_from_before_are_settled():
    limiter = GlobalLimiter()
    limiter.limit(5, unacked=0)
    limiter.settled(2)
    assert limiter.volume == 0


def test_a_limit_of_zero_or_a_per_consumer_qos_drops_the_limit():
    limiter = GlobalLimiter()
    limiter.limit(5, unacked=2)
    limiter.limit(0, unacked=2)
    assert (limiter.prefetch, limiter.volume) == (0, 0)
    limiter.limit(5, unacked=2)
    limiter.unlimit()
    assert (limiter.prefetch, limiter.volume) == (0, 0)
