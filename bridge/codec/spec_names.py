"""How the spec's names become Python names (``max-frame-size`` -> ``max_frame_size``, ``sasl-init``
-> ``SaslInit``, ``amqp:not-found`` -> ``NOT_FOUND``) and what a restricted type stands for: the
rules both the generator and the codec's tables follow, so the two cannot disagree."""

from __future__ import annotations

import re
from collections.abc import Mapping


def camel(name: str) -> str:
    """``sasl-mechanisms`` -> ``SaslMechanisms``."""
    return "".join(part.capitalize() for part in name.split("-"))


def snake(name: str) -> str:
    """``max-frame-size`` -> ``max_frame_size``."""
    return name.replace("-", "_")


def condition_constant(value: str) -> str:
    """``amqp:connection:framing-error`` -> ``CONNECTION_FRAMING_ERROR``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", value.removeprefix("amqp:")).upper()


def resolve_restricted(type_name: str, sources: Mapping[str, str]) -> str:
    """The primitive type behind a restricted type (``delivery-number`` -> ``uint``), given each
    restricted type's source; any other name (a primitive, a composite, ``*``) as it is."""
    seen = type_name
    while seen in sources:
        seen = sources[seen]
    return seen


def restricted_chain(type_name: str, sources: Mapping[str, str]) -> list[str]:
    """`type_name` and the restricted types it is built on, nearest first (``node-properties``
    -> ``[node-properties, fields]``); empty for a name that is not restricted."""
    chain = []
    while type_name in sources:
        chain.append(type_name)
        type_name = sources[type_name]
    return chain
