"""The modules every message passes through, which `RABBITISH_COMPILE=1 pip install` compiles to
C with mypyc (docs/performance.md), and whether this install runs them compiled. setup.py reads
MODULES from this file without importing the package."""

from __future__ import annotations

MODULES = (
    "rabbitish/engine/delivery.py",
    "rabbitish/engine/queue.py",
    "rabbitish/engine/ready.py",
    "rabbitish/engine/routing.py",
    "rabbitish/engine/transactions.py",
    "rabbitish/frontend/lifecycle.py",
    "rabbitish/frontend/output.py",
    "rabbitish/protocol/basic.py",
    "rabbitish/protocol/channel.py",
    "rabbitish/protocol/connection.py",
    "rabbitish/protocol/codec.py",
    "rabbitish/protocol/confirms.py",
    "rabbitish/protocol/content.py",
    "rabbitish/protocol/framing.py",
    "rabbitish/protocol/outgoing.py",
    "rabbitish/protocol/properties.py",
    "rabbitish/protocol/states.py",
    "rabbitish/protocol/tx.py",
)


def compiled() -> bool:
    """True when the modules above run compiled (they are compiled together or not at all)."""
    from rabbitish.engine import queue

    return not (queue.__file__ or "").endswith(".py")
