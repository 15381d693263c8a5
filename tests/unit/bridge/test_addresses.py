"""RabbitMQ 4's address forms as bridge/addresses.py reads them: which forms are RabbitMQ 4's,
the targets they name, and the refusals with RabbitMQ 4's texts."""

from __future__ import annotations

import pytest
from rabbitish.bridge.addresses import (
    Address,
    LinkError,
    RefusedAttach,
    is_v2,
    parse_address,
    parse_v2_target,
)


@pytest.mark.parametrize(
    ("address", "sending", "v2"),
    [
        (None, True, True),  # the anonymous terminus
        (None, False, False),
        ("/queues/q", False, True),
        ("/queues/q", True, True),
        ("/exchanges/x", True, True),
        ("/exchanges/x", False, False),  # a target-only form: RabbitMQ 4 reads it as 3.x
        ("/queue/q", True, False),
        ("q", True, False),
    ],
)
def test_which_forms_are_rabbitmq_4s(address, sending, v2):
    assert is_v2(address, sending) is v2


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("/queues/a%20b%2Fc", Address("", "a b/c", "a b/c", False, v2=True)),
        ("/queues/a/b", Address("", "a/b", "a/b", False, v2=True)),
        ("/exchanges/x", Address("x", "", None, False, v2=True)),
        ("/exchanges/x/", Address("x", "", None, False, v2=True)),
        ("/exchanges/x%2Fy/k%2Fl", Address("x/y", "k/l", None, False, v2=True)),
    ],
)
def test_v2_targets(address, parsed):
    assert parse_v2_target(address) == parsed
    assert parse_address(address, sending=True) == parsed


@pytest.mark.parametrize(
    "address",
    ["/queues/", "/exchanges/", "/exchanges/amq.default", "/exchanges/a/b/c", "/queues/%zz", "/q"],
)
def test_v2_targets_rabbitmq_4_cannot_parse(address):
    with pytest.raises(ValueError):
        parse_v2_target(address)


def test_a_bad_target_is_refused_alone_with_rabbitmq_4s_term():
    with pytest.raises(RefusedAttach) as refused:
        parse_address("/queues/", sending=True)
    assert refused.value.condition == "amqp:invalid-field"
    assert refused.value.description == 'Attach refused: {bad_address_string,<<"/queues/">>}'


def test_a_receiver_on_an_exchanges_address_is_refused_alone():
    with pytest.raises(RefusedAttach) as refused:
        parse_address("/exchanges/x/k", sending=False)
    text = 'Attach refused: {unknown_destination,"/exchanges/x/k"}'
    assert refused.value.description == text


def test_a_source_that_does_not_decode_is_refused_alone():
    with pytest.raises(RefusedAttach) as refused:
        parse_address("/queues/%FF", sending=False)
    text = 'Attach refused: {bad_address,{utf8,<<"/queues/%FF">>}}'
    assert refused.value.description == text


def test_3x_forms_keep_3xs_session_ending_refusal():
    with pytest.raises(LinkError) as rejected:
        parse_address("/foo", sending=True)
    assert not isinstance(rejected.value, RefusedAttach)
    assert rejected.value.description == 'Attach rejected: {unknown_destination,"/foo"}'
