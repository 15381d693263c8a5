"""rabbitish: a RabbitMQ-compatible AMQP 0-9-1 broker for tests and dev loops."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Broker", "running_broker"]


def __getattr__(name: str) -> Any:
    # Lazy, so importing a submodule (the CLI, the protocol) does not pull in the whole server.
    if name == "Broker":
        from rabbitish.app import Broker

        return Broker
    if name == "running_broker":
        from rabbitish.testing import running_broker

        return running_broker
    raise AttributeError(name)
