"""Queue arguments: validation at declare time and RabbitMQ's equivalence check on redeclare, with
the same error texts. Values arrive with their wire type names ('long', 'longstr' ...) because
RabbitMQ's texts name them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rabbitish.engine.errors import precondition_failed

INT_TYPES = frozenset(
    {"long", "signedint", "short", "byte", "unsignedbyte", "unsignedshort", "unsignedint"}
)
OVERFLOW_MODES = ("drop-head", "reject-publish", "reject-publish-dlx")

# Arguments RabbitMQ compares on redeclare; anything else may differ freely.
EQUIVALENCE_CHECKED = (
    "x-expires",
    "x-message-ttl",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-max-length",
    "x-max-length-bytes",
    "x-max-in-memory-length",
    "x-max-in-memory-bytes",
    "x-max-priority",
    "x-overflow",
    "x-queue-mode",
    "x-single-active-consumer",
    "x-queue-type",
    "x-queue-master-locator",
)

MAX_TTL_MS = 0xFFFFFFFF * 1000 // 1000  # RabbitMQ's limit for x-message-ttl


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


def format_value(value: Any) -> str:
    """Erlang-ish rendering of a value, as RabbitMQ prints it in error texts."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None:
        return "undefined"
    return str(value)


def describe(typed: tuple[str, Any] | None) -> str:
    if typed is None:
        return "none"
    type_name, value = typed
    return f"the value '{format_value(value)}' of type '{type_name}'"


def _type_class(type_name: str) -> str:
    return "int" if type_name in INT_TYPES else type_name


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
        if (
            old is not None
            and new is not None
            and _type_class(old[0]) == _type_class(new[0])
            and old[1] == new[1]
        ):
            continue
        raise precondition_failed(
            f"inequivalent arg '{key}' for {resource}: received {describe(new)} "
            f"but current is {describe(old)}"
        )


def check_field_equivalence(resource: str, key: str, current: Any, requested: Any) -> None:
    if current != requested:
        raise precondition_failed(
            f"inequivalent arg '{key}' for {resource}: received '{format_value(requested)}' "
            f"but current is '{format_value(current)}'"
        )


def _typed(args: dict[str, Any], types: dict[str, str], key: str) -> tuple[str, Any] | None:
    if key not in args:
        return None
    value = args[key]
    return (types.get(key) or python_type_name(value), value)


def _invalid(key: str, resource: str, reason: str) -> Exception:
    return precondition_failed(f"invalid arg '{key}' for {resource}: {reason}")


def validate_queue_arguments(resource: str, args: dict[str, Any], types: dict[str, str]) -> None:
    """RabbitMQ's declare-time checks of x- arguments (406 `invalid arg ...`)."""

    def int_arg(key: str, *, positive: bool = False, maximum: int | None = None) -> None:
        if key not in args:
            return
        type_name = types.get(key) or python_type_name(args[key])
        value = args[key]
        if type_name not in INT_TYPES or isinstance(value, bool):
            raise _invalid(key, resource, f"{{unacceptable_type,{type_name}}}")
        if value < 0:
            raise _invalid(key, resource, f"{{value_negative,{value}}}")
        if positive and value == 0:
            raise _invalid(key, resource, f"{{value_zero,{value}}}")
        if maximum is not None and value > maximum:
            raise _invalid(key, resource, f"{{value_too_large,{value},{maximum}}}")

    def str_arg(key: str) -> None:
        if key not in args:
            return
        type_name = types.get(key) or python_type_name(args[key])
        if type_name != "longstr":
            raise _invalid(key, resource, f"{{unacceptable_type,{type_name}}}")

    int_arg("x-expires", positive=True)
    int_arg("x-message-ttl", maximum=MAX_TTL_MS)
    int_arg("x-max-length")
    int_arg("x-max-length-bytes")
    int_arg("x-max-priority", maximum=255)
    str_arg("x-dead-letter-exchange")
    str_arg("x-dead-letter-routing-key")
    if "x-dead-letter-routing-key" in args and "x-dead-letter-exchange" not in args:
        raise _invalid("x-dead-letter-routing-key", resource, "routing_key_but_no_dlx_defined")
    if "x-overflow" in args:
        str_arg("x-overflow")
        mode = format_value(args["x-overflow"])
        if mode not in OVERFLOW_MODES:
            raise _invalid("x-overflow", resource, f'{{invalid_overflow,<<"{mode}">>}}')


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

        return cls(
            message_ttl=as_int("x-message-ttl"),
            expires=as_int("x-expires"),
            max_length=as_int("x-max-length"),
            max_length_bytes=as_int("x-max-length-bytes"),
            overflow=_as_str(args.get("x-overflow")) or "drop-head",
            dead_letter_exchange=_as_str(args.get("x-dead-letter-exchange")),
            dead_letter_routing_key=_as_str(args.get("x-dead-letter-routing-key")),
            max_priority=as_int("x-max-priority"),
        )
