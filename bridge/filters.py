"""A receiving client's source filter set (AMQP 1.0 3.5.8): the filters rabbitish applies are
echoed in the attach reply; one it does not know (or a property filter it cannot read) is left
out of the reply, so a client that needs it (Qpid JMS, a proton application reading
`remote_source.filter`) sees it missing and closes the link, as the spec intends. A selector
that does not parse refuses the link with `amqp:invalid-field` and the column of the fault.

Applied filters become the consumer's engine `Selection` (all must pass): the JMS selector
(`apache.org:selector-filter:string`, parsed by engine/selector.py) and RabbitMQ 4.1's property
filter expressions (`amqp:properties-filter`, `amqp:application-properties-filter`, AMQP Filter
Expressions working draft 09 as RabbitMQ implements it: exact values, `&p:` prefix and `&s:`
suffix on strings, `&&` for a leading `&`, null matching anything, at most 16 fields)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rabbitish.bridge import message as mapping
from rabbitish.bridge.addresses import INVALID_FIELD, RefusedAttach
from rabbitish.bridge.codec import Described, Symbol, Timestamp, UInt, ULong

from rabbitish.engine.consumer import Selection
from rabbitish.engine.message import Message, QueueEntry
from rabbitish.engine.selector import MessageSelector, SelectorError, parse

SELECTOR = (Symbol("apache.org:selector-filter:string"), ULong(0x0000468C_00000004))
PROPERTIES = (Symbol("amqp:properties-filter"), ULong(0x173))
APPLICATION_PROPERTIES = (Symbol("amqp:application-properties-filter"), ULong(0x174))
MAX_FIELDS = 16  # RabbitMQ's limit on one filter expression's fields

# What a 1.0 receiver holds more exactly than the engine's fields: JMS names read from the
# properties section it gets (the subject is JMSType, as Qpid JMS maps it).
JMS_FROM_PROPERTIES = {
    "JMSType": "subject",
    "JMSTimestamp": "creation_time",
    "JMSExpiration": "absolute_expiry_time",
    "JMSXGroupID": "group_id",
    "JMSXGroupSeq": "group_sequence",
}

Accepts = Callable[[QueueEntry], bool]


@dataclass(frozen=True)
class SourceFilters:
    """What a source's filter set comes to: the filters echoed (None: none applied) and the
    engine selection they make (None: every message)."""

    applied: dict[Any, Any] | None
    selection: Selection | None


def source_filters(filter_set: Any) -> SourceFilters:
    applied: dict[Any, Any] = {}
    checks: list[Accepts] = []
    for key, value in (filter_set or {}).items() if isinstance(filter_set, dict) else ():
        if not isinstance(value, Described):
            continue
        check = _filter(value.descriptor, value.value)
        if check is not None:
            applied[key] = value
            checks.append(check)
    if not checks:
        return SourceFilters(applied or None, None)
    if len(checks) == 1:
        return SourceFilters(applied, Selection(checks[0]))
    return SourceFilters(applied, Selection(lambda entry: all(c(entry) for c in checks)))


def _filter(descriptor: Any, value: Any) -> Accepts | None:
    if descriptor in SELECTOR:
        if not isinstance(value, str):
            return None
        try:
            selector = parse(value)
        except SelectorError as err:
            raise RefusedAttach(INVALID_FIELD, f"invalid selector {value!r}: {err}") from None
        return MessageSelector(selector, _jms_overlay, frozenset(JMS_FROM_PROPERTIES))
    if descriptor in PROPERTIES or descriptor in APPLICATION_PROPERTIES:
        if not isinstance(value, dict) or not 0 < len(value) <= MAX_FIELDS:
            return None
        try:
            if descriptor in PROPERTIES:
                return _properties_filter(value)
            return _application_properties_filter(value)
        except ValueError:
            return None  # RabbitMQ leaves a filter it cannot read out of its reply
    return None


def _jms_overlay(message: Message) -> dict[str, Any]:
    props = mapping.received_properties(message)
    values = {name: getattr(props, attr) for name, attr in JMS_FROM_PROPERTIES.items()}
    if values["JMSExpiration"] is None:
        del values["JMSExpiration"]  # the engine's creation time + ttl, or 0
    return {name: int(v) if isinstance(v, int) else v for name, v in values.items()}


# ---------------------------------------------------------------------- property filters
class _Affix:
    __slots__ = ("prefix", "text")

    def __init__(self, text: str, prefix: bool) -> None:
        self.text, self.prefix = text, prefix

    def matches(self, value: Any) -> bool:
        if isinstance(value, bytes):
            text = self.text.encode()
            return value.startswith(text) if self.prefix else value.endswith(text)
        if isinstance(value, str):
            return value.startswith(self.text) if self.prefix else value.endswith(self.text)
        return False


def _modified(text: str) -> Any:
    """A reference string with its modifier: `&p:` prefix, `&s:` suffix, `&&` a literal `&`;
    any other `&` is refused."""
    if text.startswith("&p:"):
        return _Affix(text[3:], prefix=True)
    if text.startswith("&s:"):
        return _Affix(text[3:], prefix=False)
    if text.startswith("&&"):
        return text[1:]
    if text.startswith("&"):
        raise ValueError(f"invalid reference field value {text!r}")
    return text


def _is_utf8(value: Any) -> bool:
    return isinstance(value, str) and not isinstance(value, Symbol)


def _id(value: Any) -> Any:
    if _is_utf8(value):
        return _modified(value)
    if isinstance(value, bytes | uuid.UUID) or (
        isinstance(value, int) and not isinstance(value, bool)
    ):
        return value
    raise ValueError("not a message id")


_PROPERTY_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "message-id": ("message_id", _id),
    "correlation-id": ("correlation_id", _id),
    "user-id": ("user_id", lambda v: v if isinstance(v, bytes) else _refuse()),
    "to": ("to", lambda v: _modified(v) if _is_utf8(v) else _refuse()),
    "subject": ("subject", lambda v: _modified(v) if _is_utf8(v) else _refuse()),
    "reply-to": ("reply_to", lambda v: _modified(v) if _is_utf8(v) else _refuse()),
    "content-type": ("content_type", lambda v: v if isinstance(v, Symbol) else _refuse()),
    "content-encoding": ("content_encoding", lambda v: v if isinstance(v, Symbol) else _refuse()),
    "absolute-expiry-time": (
        "absolute_expiry_time",
        lambda v: v if isinstance(v, Timestamp) else _refuse(),
    ),
    "creation-time": ("creation_time", lambda v: v if isinstance(v, Timestamp) else _refuse()),
    "group-id": ("group_id", lambda v: _modified(v) if _is_utf8(v) else _refuse()),
    "group-sequence": ("group_sequence", lambda v: v if isinstance(v, UInt) else _refuse()),
    "reply-to-group-id": (
        "reply_to_group_id",
        lambda v: _modified(v) if _is_utf8(v) else _refuse(),
    ),
}


def _refuse() -> Any:
    raise ValueError("a reference value of the wrong type")


def _properties_filter(value: dict[Any, Any]) -> Accepts:
    wanted: list[tuple[str, Any]] = []
    for key, reference in value.items():
        if not isinstance(key, Symbol) or str(key) not in _PROPERTY_FIELDS:
            raise ValueError(f"not a properties field: {key!r}")
        attr, read = _PROPERTY_FIELDS[str(key)]
        wanted.append((attr, None if reference is None else read(reference)))

    def accepts(entry: QueueEntry) -> bool:
        props = mapping.received_properties(entry.message)
        return all(_matches(reference, getattr(props, attr)) for attr, reference in wanted)

    return accepts


def _application_properties_filter(value: dict[Any, Any]) -> Accepts:
    wanted: list[tuple[str, Any]] = []
    for key, reference in value.items():
        if not _is_utf8(key):
            raise ValueError(f"not a string key: {key!r}")
        wanted.append((key, _modified(reference) if _is_utf8(reference) else reference))

    def accepts(entry: QueueEntry) -> bool:
        app = mapping.received_application_properties(entry.message)
        return all(key in app and _matches(reference, app[key]) for key, reference in wanted)

    return accepts


def _matches(reference: Any, value: Any) -> bool:
    """A reference value matches: null matches anything; an affix the start or end of a
    string; numbers equal as numbers whatever their types; anything else equal in value."""
    if reference is None:
        return True
    if isinstance(reference, _Affix):
        return reference.matches(value)
    if isinstance(reference, bool) or isinstance(value, bool):
        return type(reference) is type(value) and reference == value
    return bool(reference == value)
