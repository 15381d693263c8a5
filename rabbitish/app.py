"""Composition root: builds the engine, the listener and (later) the store and bridge; starts and
stops them. `Broker` is also the embedding API: `async with Broker(port=0) as b: b.url`."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from rabbitish.config import Config
from rabbitish.engine.node import Node
from rabbitish.server.connection import AmqpServerProtocol
from rabbitish.server.scheduler import LoopScheduler

log = logging.getLogger("rabbitish")

SHUTDOWN_TEXT = "broker forced connection closure with reason 'shutdown'"
_ANY_ADDRESS = ("", "0.0.0.0", "::")


class Broker:
    """One broker: `await start()` / `await stop()`, or `async with`. Keyword arguments override
    fields of the Config (port=0 picks a free port; `port` then holds the real one)."""

    def __init__(self, config: Config | None = None, **overrides: Any) -> None:
        self.config = replace(config or Config(), **overrides)
        self.node: Node | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[AmqpServerProtocol] = set()
        self.port: int | None = None
        self.journal: Any = None  # the store's journal when data_dir is not :memory:
        self.recovery: Any = None

    @property
    def url(self) -> str:
        """An amqp:// URL for the default user and vhost."""
        user, password = next(iter(self.config.users.items()))
        host = "127.0.0.1" if self.config.host in _ANY_ADDRESS else self.config.host
        if ":" in host:
            host = f"[{host}]"
        return f"amqp://{quote(user)}:{quote(password)}@{host}:{self.port}/%2F"

    async def start(self) -> None:
        self.loop = loop = asyncio.get_running_loop()
        self.node = Node(LoopScheduler(loop), vhosts=self.config.vhosts, users=self.config.users)
        if not self.config.in_memory:
            from rabbitish.protocol.codec import CODEC
            from rabbitish.store import open_store

            self.journal, self.recovery = await open_store(
                self.config.data_dir, self.config.fsync == "always", self.node, CODEC
            )
        node, config, registry = self.node, self.config, self._connections
        self._server = await loop.create_server(
            lambda: AmqpServerProtocol(node, config, registry),
            host=self.config.host,
            port=self.config.port,
            reuse_address=True,
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self, grace: float = 1.0) -> None:
        """Close the listener, send connection.close 320 to every client, give them `grace`
        seconds to answer, then drop whoever is left."""
        if self._server is not None:
            self._server.close()
        for proto in list(self._connections):
            proto.force_close(320, SHUTDOWN_TEXT)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self._connections and loop.time() < deadline:
            await asyncio.sleep(0.01)
        for proto in list(self._connections):
            if proto.transport is not None:
                proto.transport.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        if self.journal is not None:
            await self.journal.close()
            self.journal = None

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
