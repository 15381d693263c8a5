"""What every exchange type shares: identity, flags, arguments and its set of bindings. Each type
only says how a message picks bindings (`match`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rabbitish.engine.message import Message


def freeze(value: Any) -> Any:
    """A hashable form of a field-table value, so bindings with arguments can be compared."""
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, bytearray):
        return bytes(value)  # a byte array argument (0-9-1 'x')
    return value


@dataclass(eq=False)
class Binding:
    """source --routing_key/arguments--> destination (a queue or an exchange)."""

    source: Exchange
    destination: Any  # Queue | Exchange
    routing_key: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[int, str, Any]:
        return (id(self.destination), self.routing_key, freeze(self.arguments))


class Exchange:
    """Base exchange. Subclasses override `match` and may index bindings in `_added` and
    `_removed`."""

    type_name = ""
    uses_routing_key = True  # False: one match per message whatever its CC/BCC keys

    def __init__(
        self,
        vhost: str,
        name: str,
        *,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        self.vhost = vhost
        self.name = name
        self.durable = durable
        self.auto_delete = auto_delete
        self.internal = internal
        self.arguments = dict(arguments or {})
        self.bindings: dict[tuple[int, str, Any], Binding] = {}
        self.deleted = False
        self.policy: Any = None  # the vhost's policy that applies (engine/policies.py)
        # Statistics: messages published to this exchange, and queue deliveries routed from it.
        self.published_in = 0
        self.published_out = 0

    @property
    def alternate_exchange(self) -> str | None:
        """The argument when given, else the policy's (RabbitMQ's precedence)."""
        value = self.arguments.get("alternate-exchange")
        if value is None and self.policy is not None:
            value = self.policy.definition.get("alternate-exchange")
        if isinstance(value, bytes):
            value = value.decode()
        return value if isinstance(value, str) else None

    def add_binding(self, binding: Binding) -> bool:
        """Add; False when an identical binding already exists (binding is idempotent)."""
        if binding.key in self.bindings:
            return False
        self.bindings[binding.key] = binding
        self._added(binding)
        return True

    def remove_binding(self, binding_key: tuple[int, str, Any]) -> Binding | None:
        binding = self.bindings.pop(binding_key, None)
        if binding is not None:
            self._removed(binding)
        return binding

    def bindings_to(self, destination: Any) -> list[Binding]:
        return [b for b in self.bindings.values() if b.destination is destination]

    def validate_binding(
        self,
        destination: Any,
        routing_key: str,
        arguments: dict[str, Any],
        arg_types: dict[str, str],
    ) -> None:
        """Refuse a binding this type cannot use (406): its arguments, key or destination (a
        queue or an exchange); most types accept anything."""

    def _added(self, binding: Binding) -> None:
        pass

    def _removed(self, binding: Binding) -> None:
        pass

    def match(self, message: Message, routing_key: str) -> Iterable[Any]:
        """Destinations for a message (duplicates allowed; the vhost dedups)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} in {self.vhost!r}>"
