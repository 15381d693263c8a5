"""Queue arguments RabbitMQ refuses (406 with its exact text) and the edge values it accepts.
One scenario per argument family; each declare runs on a channel of its own."""

from __future__ import annotations

from typing import Any

from compat_matrix.registry import scenario
from compat_matrix.session import Session

FAMILIES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "message_ttl": [
        ("negative", {"x-message-ttl": -1}),
        ("string", {"x-message-ttl": "1000"}),
        ("zero", {"x-message-ttl": 0}),
    ],
    "expires": [
        ("zero", {"x-expires": 0}),
        ("negative", {"x-expires": -5}),
        ("string", {"x-expires": "5"}),
        ("one", {"x-expires": 1000}),
    ],
    "max_length": [
        ("negative", {"x-max-length": -1}),
        ("zero", {"x-max-length": 0}),
        ("bytes negative", {"x-max-length-bytes": -1}),
        ("bytes string", {"x-max-length-bytes": "10"}),
    ],
    "overflow": [
        ("bogus", {"x-overflow": "bogus"}),
        ("drop-head", {"x-overflow": "drop-head"}),
        ("reject-publish-dlx", {"x-overflow": "reject-publish-dlx"}),
        ("integer", {"x-overflow": 1}),
    ],
    "dead_letter": [
        ("exchange integer", {"x-dead-letter-exchange": 5}),
        ("routing key integer", {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": 5}),
        ("routing key without exchange", {"x-dead-letter-routing-key": "k"}),
        ("missing exchange", {"x-dead-letter-exchange": "no-such-exchange"}),
    ],
    "max_priority": [
        ("300", {"x-max-priority": 300}),
        ("256", {"x-max-priority": 256}),
        ("255", {"x-max-priority": 255}),
        ("negative", {"x-max-priority": -1}),
        ("string", {"x-max-priority": "ten"}),
    ],
    "queue_type_and_mode": [
        ("type bogus", {"x-queue-type": "bogus"}),
        ("type classic", {"x-queue-type": "classic"}),
        ("mode bogus", {"x-queue-mode": "bogus"}),
        ("mode lazy", {"x-queue-mode": "lazy"}),
        ("single active consumer string", {"x-single-active-consumer": "yes"}),
        ("unknown argument", {"x-unknown-arg": "v"}),
    ],
}


def _family(key: str, cases: list[tuple[str, dict[str, Any]]]) -> None:
    def steps(s: Session) -> None:
        for label, arguments in cases:
            name = s.name(label.replace(" ", "-"))
            s.attempt(label, s.channel().queue_declare, name, arguments=arguments)

    steps.__doc__ = f"Invalid and edge values of the {key.replace('_', ' ')} arguments."
    features = ["args.validation", "error.406"]
    if key == "dead_letter":
        features.append("args.dlx")
    scenario(f"args.invalid.{key}", *features)(steps)


for _key, _cases in FAMILIES.items():
    _family(_key, _cases)
