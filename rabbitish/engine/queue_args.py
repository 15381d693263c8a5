"""Queue arguments: validation at declare time and RabbitMQ's equivalence check on redeclare, with
the same error texts. Values arrive with their wire type names ('long', 'longstr' ...) because
RabbitMQ's texts name them, and error details are Erlang terms (engine/erlang_terms.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rabbitish.engine import erlang_terms
from rabbitish.engine.errors import precondition_failed

INT_TYPES = frozenset(
    {"long", "signedint", "short", "byte", "unsignedbyte", "unsignedshort", "unsignedint"}
)
FLOAT_TYPES = frozenset({"float", "double"})
OVERFLOW_MODES = ("drop-head", "reject-publish", "reject-publish-dlx")
QUEUE_MODES = ("default", "lazy")
QUEUE_TYPES = ("classic", "quorum", "stream")
QUEUE_VERSIONS = (1, 2)
MAX_PRIORITY = 255
MAX_EXPIRY_MS = 315_360_000_000  # ten years: RabbitMQ's ceiling for TTLs and x-expires
MAX_SEGMENT_SIZE = 3_000_000_000  # a stream's x-stream-max-segment-size-bytes ceiling

# The arguments each queue type supports, as RabbitMQ 3.10.8's queue type modules list them
# (`capabilities()`; the same lists in 3.13.7, 4.0.0 and 4.1.0, the versions the two front
# ends announce; later 4.x adds more). The order is RabbitMQ's: redeclare compares them in it.
# An argument some type supports and the declared one does not is refused at declare; one no
# type knows is ignored (so the 4.x clients' x-quorum-target-group-size is accepted, kept and
# not acted on). rabbitish backs every type with its one queue; the type decides which
# arguments apply and what a quorum queue does with returns (`QueueArguments`).
SUPPORTED_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "classic": (
        "x-expires",
        "x-message-ttl",
        "x-dead-letter-exchange",
        "x-dead-letter-routing-key",
        "x-max-length",
        "x-max-length-bytes",
        "x-max-priority",
        "x-overflow",
        "x-queue-mode",
        "x-queue-version",
        "x-single-active-consumer",
        "x-queue-type",
        "x-queue-master-locator",
    ),
    "quorum": (
        "x-dead-letter-exchange",
        "x-dead-letter-routing-key",
        "x-dead-letter-strategy",
        "x-expires",
        "x-max-length",
        "x-max-length-bytes",
        "x-max-in-memory-length",
        "x-max-in-memory-bytes",
        "x-overflow",
        "x-single-active-consumer",
        "x-queue-type",
        "x-quorum-initial-group-size",
        "x-delivery-limit",
        "x-message-ttl",
        "x-queue-leader-locator",
    ),
    "stream": (
        "x-max-length-bytes",
        "x-queue-type",
        "x-max-age",
        "x-stream-max-segment-size-bytes",
        "x-initial-cluster-size",
        "x-queue-leader-locator",
    ),
}
KNOWN_ARGUMENTS = frozenset(key for keys in SUPPORTED_ARGUMENTS.values() for key in keys)
# The names RabbitMQ's texts give the queue types.
QUEUE_TYPE_MODULES = {
    "classic": "rabbit_classic_queue",
    "quorum": "rabbit_quorum_queue",
    "stream": "rabbit_stream_queue",
}
# Arguments a classic queue compares on redeclare, in RabbitMQ's order; others may differ.
EQUIVALENCE_CHECKED = SUPPORTED_ARGUMENTS["classic"]
DLX_STRATEGIES = ("at-most-once", "at-least-once")
LEADER_LOCATORS = ("client-local", "balanced", "random", "least-leaders")
MAX_AGE_UNITS = ("Y", "M", "D", "h", "m", "s")


def queue_type_of(args: dict[str, Any]) -> str:
    """The declared queue type: classic unless x-queue-type names another (a value recovered
    from an older store that is no type at all counts as classic)."""
    value = args.get("x-queue-type")
    if value is None:
        return "classic"
    name = format_value(value)
    return name if name in SUPPORTED_ARGUMENTS else "classic"


def equivalence_keys(args: dict[str, Any]) -> tuple[str, ...]:
    """The arguments a redeclare must match for a queue declared with `args`: its type's."""
    return SUPPORTED_ARGUMENTS[queue_type_of(args)]


# ---------------------------------------------------------------------- rendering
def format_value(value: Any) -> str:
    """A value as RabbitMQ's equivalence texts print it: binaries raw, the rest with ``~p``."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    return erlang_terms.term(value)


# ---------------------------------------------------------------------- equivalence
def python_type_name(value: Any) -> str:
    """The wire type name for a value whose wire type is unknown (engine-internal callers)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str | bytes):
        return "longstr"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "void"
    return "longstr"


def describe(typed: tuple[str, Any] | None) -> str:
    if typed is None:
        return "none"
    type_name, value = typed
    return f"the value '{format_value(value)}' of type '{type_name}'"


def _type_class(type_name: str) -> str:
    if type_name in INT_TYPES:
        return "int"
    return "float" if type_name in FLOAT_TYPES else type_name


def _typed(args: dict[str, Any], types: dict[str, str], key: str) -> tuple[str, Any] | None:
    if key not in args:
        return None
    value = args[key]
    return (types.get(key) or python_type_name(value), value)


def _implicit_classic(key: str, typed: tuple[str, Any]) -> bool:
    """An explicit classic type matches none given (RabbitMQ's rabbit_misc special case; two
    given types are compared as they are)."""
    return key == "x-queue-type" and typed[0] == "longstr" and format_value(typed[1]) == "classic"


def check_args_equivalence(
    resource: str,
    current: dict[str, Any],
    current_types: dict[str, str],
    requested: dict[str, Any],
    requested_types: dict[str, str],
    keys: tuple[str, ...],
) -> None:
    """406 `inequivalent arg` if a checked argument differs (integer widths are one class)."""
    for key in keys:
        old = _typed(current, current_types, key)
        new = _typed(requested, requested_types, key)
        if old == new:
            continue
        if old is None or new is None:
            present = new if old is None else old
            if present is not None and _implicit_classic(key, present):
                continue
            raise precondition_failed(
                f"inequivalent arg '{key}' for {resource}: received {describe(new)} "
                f"but current is {describe(old)}"
            )
        if _type_class(old[0]) == _type_class(new[0]) and old[1] == new[1]:
            continue
        check_field_equivalence(resource, key, old[1], new[1])


def _erl_kind(value: Any) -> type:
    """Erlang compares exactly: 1, 1.0 and true are three different terms."""
    if isinstance(value, bool):
        return bool
    if isinstance(value, str | bytes):
        return bytes
    return type(value)


def check_field_equivalence(resource: str, key: str, current: Any, requested: Any) -> None:
    if current != requested or _erl_kind(current) is not _erl_kind(requested):
        raise precondition_failed(
            f"inequivalent arg '{key}' for {resource}: received '{format_value(requested)}' "
            f"but current is '{format_value(current)}'"
        )


# ---------------------------------------------------------------------- declare-time checks
Check = Callable[[str, Any, dict[str, Any]], str | None]


def _int(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    if type_name in INT_TYPES and not isinstance(value, bool):
        return None
    return f'"expected integer, got {type_name}"'


def _non_neg_int(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    error = _int(type_name, value, args)
    if error is None and value < 0:
        return f"{{value_negative,{value}}}"
    return error


def _expiry(value: int) -> str | None:
    if value > MAX_EXPIRY_MS:
        return f"{{value_too_large,{value}}}"
    if value < 0:
        return f"{{value_negative,{value}}}"
    return None


def _expires(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    error = _int(type_name, value, args)
    if error is None and value == 0:
        return f"{{value_zero,{value}}}"
    return error or _expiry(value)


def _message_ttl(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    return _int(type_name, value, args) or _expiry(value)


def _max_priority(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    error = _non_neg_int(type_name, value, args)
    if error is None and value > MAX_PRIORITY:
        return f"{{max_value_exceeded,{value}}}"
    return error


def _queue_version(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    error = _non_neg_int(type_name, value, args)
    if error is None and value not in QUEUE_VERSIONS:
        return f"\"unsupported queue version '{value}'\""
    return error


def _longstr(type_name: str) -> str | None:
    return None if type_name == "longstr" else f"{{unacceptable_type,{type_name}}}"


def _dlx_routing_key(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    error = _longstr(type_name)
    if error is None and "x-dead-letter-exchange" not in args:
        return "routing_key_but_no_dlx_defined"
    return error


def _one_of(allowed: tuple[str, ...], detail: Callable[[str], str]) -> Check:
    def check(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
        error = _longstr(type_name)
        if error is None and format_value(value) not in allowed:
            return detail(format_value(value))
        return error

    return check


def _bool(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    return None if type_name == "bool" else f"{{unacceptable_type,{type_name}}}"


def _dlx_strategy(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    error = _longstr(type_name)
    if error is None and format_value(value) not in DLX_STRATEGIES:
        return "invalid_dlx_strategy"
    return error


def _cluster_size(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    error = _non_neg_int(type_name, value, args)
    if error is None and value == 0:
        return f"{{value_zero,{value}}}"
    return error


def _max_age(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    """A stream's x-max-age: a positive whole number then one unit, as `7D` (RabbitMQ's
    check_max_age, whose pattern is anchored at the start only)."""
    error = _longstr(type_name)
    if error is not None:
        return error
    match = re.match(r"([0-9]+)(.*)", format_value(value))
    if match is None or int(match[1]) <= 0 or match[2] not in MAX_AGE_UNITS:
        return "invalid_max_age"
    return None


def _queue_type(type_name: str, value: Any, args: dict[str, Any]) -> str | None:
    error = _longstr(type_name)
    if error is None and format_value(value) not in QUEUE_TYPES:
        return f"\"unsupported queue type '{format_value(value)}'\""
    return error


# RabbitMQ's declare-time checks in its order (rabbit_amqqueue:declare_args/0); a queue runs
# those of the arguments its type supports. x-dead-letter-exchange is checked before these.
DECLARE_CHECKS: tuple[tuple[str, Check], ...] = (
    ("x-expires", _expires),
    ("x-message-ttl", _message_ttl),
    ("x-dead-letter-routing-key", _dlx_routing_key),
    ("x-dead-letter-strategy", _dlx_strategy),
    ("x-max-length", _non_neg_int),
    ("x-max-length-bytes", _non_neg_int),
    ("x-max-in-memory-length", _non_neg_int),
    ("x-max-in-memory-bytes", _non_neg_int),
    ("x-max-priority", _max_priority),
    ("x-overflow", _one_of(OVERFLOW_MODES, lambda _v: "invalid_overflow")),
    ("x-queue-mode", _one_of(QUEUE_MODES, lambda v: f"\"unsupported queue mode '{v}'\"")),
    ("x-queue-version", _queue_version),
    ("x-single-active-consumer", _bool),
    ("x-queue-type", _queue_type),
    ("x-quorum-initial-group-size", _cluster_size),
    ("x-max-age", _max_age),
    ("x-stream-max-segment-size-bytes", _non_neg_int),
    ("x-initial-cluster-size", _cluster_size),
    ("x-queue-leader-locator", _one_of(LEADER_LOCATORS, lambda _v: "invalid_queue_locator_arg")),
)


def validate_queue_arguments(resource: str, args: dict[str, Any], types: dict[str, str]) -> None:
    """RabbitMQ's declare-time checks of a new queue's x- arguments, in its order: the
    dead-letter exchange's type, the queue type, the checks of the arguments that type
    supports, then any argument another type supports refused by name."""

    def type_of(key: str) -> str:
        return types.get(key) or python_type_name(args[key])

    def refuse(key: str, error: str | None) -> None:
        if error is not None:
            raise precondition_failed(f"invalid arg '{key}' for {resource}: {error}")

    if "x-dead-letter-exchange" in args and type_of("x-dead-letter-exchange") != "longstr":
        raise precondition_failed(
            f"invalid type '{type_of('x-dead-letter-exchange')}' for arg "
            f"'x-dead-letter-exchange' in {resource}"
        )
    if "x-queue-type" in args:
        refuse("x-queue-type", _queue_type(type_of("x-queue-type"), args["x-queue-type"], args))
    queue_type = queue_type_of(args)
    supported = SUPPORTED_ARGUMENTS[queue_type]
    for key, check in DECLARE_CHECKS:
        if key in args and key in supported:
            refuse(key, check(type_of(key), args[key], args))
    for key in args:
        if key in KNOWN_ARGUMENTS and key not in supported:
            raise precondition_failed(
                f"invalid arg '{key}' for {resource} of queue type {QUEUE_TYPE_MODULES[queue_type]}"
            )


def check_queue_properties(
    resource: str, args: dict[str, Any], *, durable: bool, exclusive: bool, auto_delete: bool
) -> None:
    """What a quorum queue or a stream must be, checked in RabbitMQ's order after its
    arguments: durable, not exclusive, not auto-delete (rabbit_queue_type_util); a stream's
    segments at most MAX_SEGMENT_SIZE bytes."""
    queue_type = queue_type_of(args)
    if queue_type == "classic":
        return
    for refused, name in ((auto_delete, "auto-delete"), (exclusive, "exclusive-owner")):
        if refused:
            raise precondition_failed(f"invalid property '{name}' for {resource}")
    if not durable:
        raise precondition_failed(f"invalid property 'non-durable' for {resource}")
    segment = args.get("x-stream-max-segment-size-bytes")
    if queue_type == "stream" and isinstance(segment, int) and segment > MAX_SEGMENT_SIZE:
        raise precondition_failed("Exceeded max value for x-stream-max-segment-size-bytes")


def check_server_named(args: dict[str, Any]) -> None:
    """Only classic queues may be server-named (the other types' `server_named => false`)."""
    queue_type = queue_type_of(args)
    if queue_type != "classic":
        raise precondition_failed(
            f"Cannot declare a server-named queue for type {QUEUE_TYPE_MODULES[queue_type]}"
        )


def _as_str(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True, slots=True)
class QueueArguments:
    """The x- arguments the queue acts on, parsed once."""

    message_ttl: int | None = None
    expires: int | None = None
    max_length: int | None = None
    max_length_bytes: int | None = None
    overflow: str = "drop-head"
    dead_letter_exchange: str | None = None
    dead_letter_routing_key: str | None = None
    max_priority: int | None = None
    # Quorum queues count returns: a message returned more than `delivery_limit` times is
    # dead-lettered ("delivery_limit"), and redeliveries carry x-delivery-count.
    counts_returns: bool = False
    delivery_limit: int | None = None

    @property
    def rejects_overflow(self) -> bool:
        return self.overflow != "drop-head" and (
            self.max_length is not None or self.max_length_bytes is not None
        )

    @classmethod
    def parse(cls, args: dict[str, Any]) -> QueueArguments:
        def as_int(key: str) -> int | None:
            value = args.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        quorum = queue_type_of(args) == "quorum"
        overflow = _as_str(args.get("x-overflow")) or "drop-head"
        if quorum and overflow == "reject-publish-dlx":
            overflow = "drop-head"  # RabbitMQ's quorum queues log it and fall back so
        return cls(
            message_ttl=as_int("x-message-ttl"),
            expires=as_int("x-expires"),
            max_length=as_int("x-max-length"),
            max_length_bytes=as_int("x-max-length-bytes"),
            overflow=overflow,
            dead_letter_exchange=_as_str(args.get("x-dead-letter-exchange")),
            dead_letter_routing_key=_as_str(args.get("x-dead-letter-routing-key")),
            max_priority=as_int("x-max-priority"),
            counts_returns=quorum,
            # Any other type is no limit: Erlang orders every number below a binary or atom.
            delivery_limit=as_int("x-delivery-limit") if quorum else None,
        )


# ---------------------------------------------------------------------- policies
# How a classic queue combines a policy value with its own x- argument, as RabbitMQ 3.10 does:
# for these limits the lower of the two applies, for the rest the argument wins. A quorum
# queue's delivery limit is the lower one too (only a quorum queue reads it).
POLICY_LOWER_WINS = ("expires", "message-ttl", "max-length", "max-length-bytes", "delivery-limit")
POLICY_ARGUMENT_WINS = ("dead-letter-exchange", "dead-letter-routing-key", "overflow", "queue-mode")


def effective_arguments(arguments: dict[str, Any], definition: dict[str, Any]) -> dict[str, Any]:
    """The x- arguments a queue acts on: its own, with the (merged) policy `definition` folded
    in. The one place where arguments, policy and operator policy meet."""
    if not definition:
        return arguments
    effective = dict(arguments)
    for key in POLICY_LOWER_WINS + POLICY_ARGUMENT_WINS:
        if key not in definition:
            continue
        policy_value, arg_key = definition[key], "x-" + key
        if arg_key not in arguments:
            effective[arg_key] = policy_value
        elif key in POLICY_LOWER_WINS and isinstance(arguments[arg_key], int):
            effective[arg_key] = min(arguments[arg_key], policy_value)
    return effective
