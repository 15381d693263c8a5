"""Direct reply-to over AMQP 1.0, as RabbitMQ 4.2 offers it: a receiver whose source is dynamic
with the capability `rabbitmq:volatile-queue` (sent settled, expiry-policy link-detach, durable
none, timeout 0) gets a direct reply-to name (`amq.rabbitmq.reply-to.<id>`, the engine's names)
and the address `/queues/<name>`, percent-encoded. Whatever is published to that name, from a
1.0 sender (that address, or the anonymous terminus' `to`) or from 0-9-1 (the default exchange,
keyed by the name a `reply_to` carries), goes straight to the receiver through the engine's
direct reply-to targets: no queue, nothing kept. As RabbitMQ's volatile queue does, a message
arriving while the receiver has no link credit is dropped."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rabbitish.bridge import message as mapping
from rabbitish.bridge.addresses import QUEUES, RefusedAttach
from rabbitish.bridge.codec import Symbol, UInt
from rabbitish.bridge.codec.definitions import Attach, DeleteOnClose, Flow, Source

from rabbitish.engine.message import Message
from rabbitish.engine.reply_to import new_reply_to_name

if TYPE_CHECKING:
    from rabbitish.bridge.session import Session

VOLATILE_QUEUE = Symbol("rabbitmq:volatile-queue")
NOT_IMPLEMENTED = "amqp:not-implemented"
LINK_DETACH = Symbol("link-detach")
MOVE = Symbol("move")
SETTLED = 1  # sender-settle-mode "settled"


def is_direct_reply(attach: Attach) -> bool:
    """A receiver asking for a volatile dynamic source."""
    source = attach.source
    if not isinstance(source, Source) or not source.dynamic or source.address is not None:
        return False
    capabilities: Any = source.capabilities
    listed = capabilities if isinstance(capabilities, list | tuple) else [capabilities]
    return VOLATILE_QUEUE in listed


class DirectReplyLink:
    """The client's receiver of direct replies: an engine direct reply-to target, which sends
    each reply settled while the client's credit lasts."""

    coordinator = False

    def __init__(self, session: Session, attach: Attach) -> None:
        source = attach.source
        assert isinstance(source, Source)
        if not (
            attach.snd_settle_mode == SETTLED
            and source.expiry_policy == LINK_DETACH
            and not source.durable
            and not source.timeout
        ):
            raise RefusedAttach(
                NOT_IMPLEMENTED,
                "Dynamic source not supported: rabbitmq:volatile-queue needs a settled link, "
                "expiry-policy link-detach, durable none and timeout 0",
            )
        vhost = session.conn.vhost
        assert vhost is not None
        self.session = session
        self.attach = attach
        self.handle = int(attach.handle)
        self.name = new_reply_to_name()
        # As every link: the termini its attach reply carries, and no dynamic node.
        self.source: Any = replace(
            source,
            address=QUEUES + quote(self.name, safe=""),
            timeout=UInt(0),
            dynamic_node_properties={Symbol("lifetime-policy"): DeleteOnClose()},
            distribution_mode=MOVE,
            capabilities=[VOLATILE_QUEUE],
        )
        self.target: Any = attach.target
        self.node: None = None
        self.delivery_count = 0
        self.link_credit = 0
        self.dropped = 0  # replies that came while the client had no credit
        self.targets = vhost.reply_to_targets
        self.targets[self.name] = self.deliver

    @property
    def credit(self) -> int:
        return self.link_credit

    def deliver(self, message: Message) -> None:
        """One reply, from any connection: sent now, or dropped without credit."""
        if self.link_credit <= 0 or self.session.ended:
            self.dropped += 1
            return
        self.link_credit -= 1
        self.delivery_count += 1
        self.session.send_settled(self.handle, mapping.from_engine(message, 0))

    def flow(self, flow: Flow) -> None:
        remote_count = int(flow.delivery_count) if flow.delivery_count is not None else 0
        self.link_credit = max(0, remote_count + int(flow.link_credit or 0) - self.delivery_count)
        if flow.drain:
            # Nothing is ever waiting: a drain uses the credit up at once.
            self.delivery_count += self.link_credit
            self.link_credit = 0
            self.session.send_link_flow(self.handle, self.delivery_count, 0, True)
        elif flow.echo:
            self.session.send_link_flow(self.handle, self.delivery_count, self.link_credit)

    def teardown(self) -> None:
        if self.targets.get(self.name) == self.deliver:
            del self.targets[self.name]
