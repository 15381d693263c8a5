"""Queue arguments by queue type: RabbitMQ 3.10.8's supported lists, its order of checks and
texts, the durability rules of quorum queues and streams, and what a queue parses to act on."""

from __future__ import annotations

from typing import Any

import pytest

from rabbitish.engine.errors import AMQPError
from rabbitish.engine.queue_args import (
    KNOWN_ARGUMENTS,
    SUPPORTED_ARGUMENTS,
    QueueArguments,
    check_args_equivalence,
    check_queue_properties,
    check_server_named,
    effective_arguments,
    equivalence_keys,
    queue_type_of,
    validate_queue_arguments,
)

Q = "queue 'q' in vhost '/'"


def refusal(args: dict[str, Any], types: dict[str, str] | None = None) -> str:
    with pytest.raises(AMQPError) as info:
        validate_queue_arguments(Q, args, types or {})
    assert info.value.reply_code == 406
    return info.value.text


def test_every_known_argument_belongs_to_some_type_and_x_queue_type_to_all():
    assert all("x-queue-type" in keys for keys in SUPPORTED_ARGUMENTS.values())
    assert "x-quorum-target-group-size" not in KNOWN_ARGUMENTS  # ignored, as RabbitMQ does


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "classic"),
        ({"x-queue-type": "quorum"}, "quorum"),
        ({"x-queue-type": b"stream"}, "stream"),
        ({"x-queue-type": "bogus"}, "classic"),
    ],
)
def test_queue_type_of(args, expected):
    assert queue_type_of(args) == expected


def test_a_quorum_queue_takes_quorum_arguments_and_ignores_unknown_ones():
    validate_queue_arguments(
        Q,
        {
            "x-queue-type": "quorum",
            "x-quorum-initial-group-size": 5,
            "x-delivery-limit": "any type",
            "x-dead-letter-strategy": "at-least-once",
            "x-queue-leader-locator": "client-local",
            "x-quorum-target-group-size": 5,
        },
        {},
    )


@pytest.mark.parametrize(
    ("args", "detail"),
    [
        (
            {"x-queue-type": "quorum", "x-max-priority": 5},
            f"invalid arg 'x-max-priority' for {Q} of queue type rabbit_quorum_queue",
        ),
        (
            {"x-queue-type": "stream", "x-dead-letter-exchange": "x"},
            f"invalid arg 'x-dead-letter-exchange' for {Q} of queue type rabbit_stream_queue",
        ),
        (
            {"x-delivery-limit": 1},
            f"invalid arg 'x-delivery-limit' for {Q} of queue type rabbit_classic_queue",
        ),
        (
            {"x-queue-type": "quorum", "x-dead-letter-strategy": "twice"},
            f"invalid arg 'x-dead-letter-strategy' for {Q}: invalid_dlx_strategy",
        ),
        (
            {"x-queue-type": "stream", "x-max-age": "0D"},
            f"invalid arg 'x-max-age' for {Q}: invalid_max_age",
        ),
        (
            {"x-queue-type": "stream", "x-initial-cluster-size": 0},
            f"invalid arg 'x-initial-cluster-size' for {Q}: {{value_zero,0}}",
        ),
        (
            {"x-max-priority": "x", "x-queue-type": 5},
            f"invalid arg 'x-queue-type' for {Q}: {{unacceptable_type,long}}",
        ),
    ],
)
def test_refusals_in_rabbitmqs_order(args, detail):
    assert refusal(args) == detail


@pytest.mark.parametrize("age", ["7D", "1Y", "30m", "12h"])
def test_stream_max_age_units(age):
    validate_queue_arguments(Q, {"x-queue-type": "stream", "x-max-age": age}, {})


@pytest.mark.parametrize(
    ("flags", "refused"),
    [
        ({"durable": False, "exclusive": False, "auto_delete": False}, "non-durable"),
        ({"durable": True, "exclusive": True, "auto_delete": False}, "exclusive-owner"),
        ({"durable": False, "exclusive": True, "auto_delete": True}, "auto-delete"),
    ],
)
def test_quorum_and_stream_queues_must_be_durable_and_shared(flags, refused):
    for queue_type in ("quorum", "stream"):
        with pytest.raises(AMQPError) as info:
            check_queue_properties(Q, {"x-queue-type": queue_type}, **flags)
        assert info.value.text == f"invalid property '{refused}' for {Q}"
    check_queue_properties(Q, {}, **flags)  # a classic queue may be any of these


def test_stream_segment_size_ceiling():
    args = {"x-queue-type": "stream", "x-stream-max-segment-size-bytes": 3_000_000_001}
    with pytest.raises(AMQPError, match="Exceeded max value"):
        check_queue_properties(Q, args, durable=True, exclusive=False, auto_delete=False)


def test_only_classic_queues_are_server_named():
    check_server_named({})
    with pytest.raises(AMQPError) as info:
        check_server_named({"x-queue-type": "quorum"})
    assert info.value.text == ("Cannot declare a server-named queue for type rabbit_quorum_queue")


def test_redeclare_compares_the_declared_types_arguments():
    current = {"x-queue-type": "quorum", "x-delivery-limit": 3}
    keys = equivalence_keys(current)
    assert keys == SUPPORTED_ARGUMENTS["quorum"]
    with pytest.raises(AMQPError) as info:
        check_args_equivalence(Q, current, {}, {**current, "x-delivery-limit": 4}, {}, keys)
    assert info.value.text == (
        f"inequivalent arg 'x-delivery-limit' for {Q}: received '4' but current is '3'"
    )


def test_an_explicit_classic_type_matches_none_but_not_another_type():
    classic = SUPPORTED_ARGUMENTS["classic"]
    check_args_equivalence(Q, {}, {}, {"x-queue-type": "classic"}, {}, classic)
    check_args_equivalence(Q, {"x-queue-type": "classic"}, {}, {}, {}, classic)
    with pytest.raises(AMQPError) as info:
        check_args_equivalence(
            Q, {"x-queue-type": "quorum"}, {}, {"x-queue-type": "classic"}, {}, classic
        )
    assert info.value.text == (
        f"inequivalent arg 'x-queue-type' for {Q}: received 'classic' but current is 'quorum'"
    )


@pytest.mark.parametrize(
    ("args", "limit", "counts", "overflow"),
    [
        ({"x-queue-type": "quorum", "x-delivery-limit": 2}, 2, True, "drop-head"),
        ({"x-queue-type": "quorum", "x-delivery-limit": "2"}, None, True, "drop-head"),
        ({"x-queue-type": "quorum", "x-overflow": "reject-publish-dlx"}, None, True, "drop-head"),
        ({"x-overflow": "reject-publish-dlx"}, None, False, "reject-publish-dlx"),
        ({"x-delivery-limit": 2}, None, False, "drop-head"),
    ],
)
def test_what_a_queue_acts_on(args, limit, counts, overflow):
    parsed = QueueArguments.parse(args)
    assert (parsed.delivery_limit, parsed.counts_returns, parsed.overflow) == (
        limit,
        counts,
        overflow,
    )


def test_a_delivery_limit_policy_and_argument_the_lower_wins():
    args = {"x-queue-type": "quorum", "x-delivery-limit": 5}
    assert (
        QueueArguments.parse(effective_arguments(args, {"delivery-limit": 2})).delivery_limit == 2
    )
    assert (
        QueueArguments.parse(effective_arguments(args, {"delivery-limit": 9})).delivery_limit == 5
    )
    policy_only = effective_arguments({"x-queue-type": "quorum"}, {"delivery-limit": 1})
    assert QueueArguments.parse(policy_only).delivery_limit == 1
