"""Dynamic nodes (AMQP 1.0 3.5.3-3.5.4: a source or target with `dynamic` set and no address):
rabbitish makes a server-named temporary queue (`amq.gen-...`, the engine's names), exclusive to
the connection, and answers with its address `/queue/amq.gen-...`, which works as a reply-to from
1.0 and, as `amq.gen-...`, from 0-9-1 through the default exchange.

When it goes: the lifetime policy of `dynamic-node-properties` (delete-on-close by default) and
the terminus' `expiry-policy` / `timeout`. delete-on-close: when the link that made it closes, or,
detached without closing, when its terminus expires (link-detach: at the detach; session-end: when
the session ends; connection-close and never: with the connection), `timeout` seconds later.
delete-on-no-links: when the last receiving link on it is gone (the engine's auto-delete), or
with its creating link if none ever consumed it. The engine cannot delete a queue when it
empties, so delete-on-no-messages and delete-on-no-links-or-messages are answered as
delete-on-close: the attach reply says which policy the node has. An exclusive queue never
outlives its connection, whatever the policy."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeGuard

from rabbitish.bridge.codec import Symbol
from rabbitish.bridge.codec.definitions import DeleteOnClose, DeleteOnNoLinks, Source, Target

from rabbitish.engine.auth import Authorize

if TYPE_CHECKING:
    from rabbitish.engine.queue import Queue
    from rabbitish.engine.vhost import VirtualHost

LIFETIME_POLICY = Symbol("lifetime-policy")
ADDRESS_PREFIX = "/queue/"
# When a link goes: closed (or ended by the broker), detached, or its session ended.
CLOSED, DETACHED, SESSION_ENDED = "closed", "link-detach", "session-end"
# Which expiry policies a terminus has expired under, by how the link went.
_EXPIRED_BY = {
    DETACHED: frozenset({"link-detach"}),
    SESSION_ENDED: frozenset({"link-detach", "session-end"}),
}


def is_dynamic(terminus: Any) -> TypeGuard[Source | Target]:
    return isinstance(terminus, Source | Target) and bool(terminus.dynamic)


class DynamicNode:
    """The temporary queue a dynamic terminus made, and when it goes."""

    def __init__(
        self,
        vhost: VirtualHost,
        owner: object,
        terminus: Source | Target,
        authorize: Authorize | None,
    ) -> None:
        properties = terminus.dynamic_node_properties or {}
        no_links = isinstance(properties.get(LIFETIME_POLICY), DeleteOnNoLinks)
        self.vhost = vhost
        self.no_links = no_links
        self.expiry_policy = str(terminus.expiry_policy or "session-end")
        self.timeout = int(terminus.timeout or 0)
        self.queue: Queue = vhost.declare_queue(
            "", owner=owner, exclusive=True, auto_delete=no_links, authorize=authorize
        )
        policy = DeleteOnNoLinks() if no_links else DeleteOnClose()
        answered = {**properties, LIFETIME_POLICY: policy}
        # The attach reply: the node's address and the policy it has.
        self.terminus = replace(
            terminus, address=ADDRESS_PREFIX + self.queue.name, dynamic_node_properties=answered
        )

    def link_gone(self, how: str) -> None:
        """The link that made the node went (`CLOSED`, `DETACHED` or `SESSION_ENDED`)."""
        if how != CLOSED and self.expiry_policy not in _EXPIRED_BY[how]:
            return  # kept until a later point (the connection's close at the latest)
        if self.no_links and self.queue.consumers:
            return  # other links still use it: the engine's auto-delete ends it
        if how != CLOSED and self.timeout:
            self.vhost.scheduler.call_later(float(self.timeout), self._delete)
        else:
            self._delete()

    def _delete(self) -> None:
        self.vhost.delete_queue_object(self.queue)
