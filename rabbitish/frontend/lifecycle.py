"""The life of a client connection, the same whatever protocol it speaks, sans-IO: who it is
(peer, user, mechanism), the vhost it entered (the node counts it among its connections from then
on), how it decides to hang up (`drop`: the I/O layer closes the socket once output is written),
and one teardown whichever way it ends: the client closes, the broker closes it, an error, or
the socket goes (`lost`). Each front end releases its own sessions and keeps its own state
machine; this class holds what both do alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mypy_extensions import mypyc_attr

from rabbitish.engine.auth import Authorize, Peer
from rabbitish.engine.sessions import ConnectionView, SocketStats
from rabbitish.frontend.output import BufferedOutput

if TYPE_CHECKING:
    from rabbitish.config import Config
    from rabbitish.engine.node import Node
    from rabbitish.engine.vhost import VirtualHost


@mypyc_attr(allow_interpreted_subclasses=True)  # the 1.0 bridge's connection is one
class ClientConnection(BufferedOutput):
    """What every front end's connection holds and how it ends; subclasses run the protocol.
    It is the broker's `FrontEndConnection` (engine/sessions.py) for both protocols."""

    protocol: str  # as RabbitMQ's management API names it, set by each protocol

    def __init__(
        self, node: Node, config: Config, peer: str, wake: Callable[[], None] | None
    ) -> None:
        super().__init__(config.max_pending_output, wake)
        self.node = node
        self.config = config
        self.peer = peer
        self.peer_info = Peer()  # set by the I/O layer before start(): address, TLS client cert
        self.user: str | None = None
        self.auth_mechanism = ""  # the SASL mechanism the client logged in with
        self.client_properties: dict[str, Any] = {}
        self.vhost: VirtualHost | None = None
        self.authorize: Authorize | None = None  # the user's permission check, once open
        self.socket = SocketStats()  # replaced by the I/O layer's, which it keeps counting
        self.should_close = False  # the I/O layer closes the socket once output is flushed
        self.close_reason: str | None = None

    def enter_vhost(self, vhost: VirtualHost) -> None:
        """The logged-in user may use `vhost`: work on it from now on, and be one of the node's
        connections (the management API lists it, shutdown closes it)."""
        self.vhost = vhost
        self.authorize = self.node.users.authorizer(self.user, vhost.name)
        self.node.connections.add(self)

    def drop(self, reason: str) -> None:
        """Hang up without a close performative: the I/O layer closes the socket once the
        output so far is written."""
        self.close_reason = reason
        self.should_close = True

    def lost(self) -> None:
        """The socket is gone (peer closed, heartbeat missed, error): release everything; nothing
        written from now on goes anywhere."""
        if self.output_closed:
            return
        self._teardown()
        self._socket_gone()
        self.close_output()

    def _teardown(self) -> None:
        """Release everything the connection holds: its sessions (requeueing their unsettled
        deliveries), exclusive queues and reply-to registrations, its place among the node's
        connections."""
        self.node.churn["channel_closed"] += self._release_sessions()
        if self.vhost is not None:
            self.vhost.owner_closed(self)
        self.node.connections.discard(self)

    def _release_sessions(self) -> int:
        """End every session (0-9-1 channel, 1.0 session) and forget them; how many there were."""
        raise NotImplementedError

    def _socket_gone(self) -> None:
        """Move the protocol's state machine to its final state."""
        raise NotImplementedError

    def view(self) -> ConnectionView:
        """Its state now, with its sessions and their links, as the protocol reports it."""
        raise NotImplementedError

    def server_close(self, reply_code: int, text: str) -> None:
        """Close from the broker's side (management API, shutdown), as the protocol says."""
        raise NotImplementedError

    def heartbeat_frame(self) -> None:
        """Write the protocol's keep-alive frame."""
        raise NotImplementedError
