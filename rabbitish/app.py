"""Composition root: builds the engine, the store (recovering the data dir, unless it is
:memory:), the AMQP 0-9-1 listener and the management HTTP API (when it has a port); the API's
port accepts before the AMQP port does, AMQP is served first and the API loads right
after, and they stop in reverse. `Broker` is also the embedding API:
`async with Broker(port=0) as b: b.url`."""

from __future__ import annotations

import asyncio
import logging
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rabbitish.config import Config
from rabbitish.engine.half import HalfSettings
from rabbitish.engine.node import Node
from rabbitish.protocol.codec import CODEC
from rabbitish.server.listener import HeaderSniffer
from rabbitish.server.scheduler import LoopScheduler
from rabbitish.server.socket_protocol import ClientSocket

if TYPE_CHECKING:
    from rabbitish.management import ManagementPorts
    from rabbitish.management.server import ManagementServer

log = logging.getLogger("rabbitish")

SHUTDOWN_TEXT = "broker forced connection closure with reason 'shutdown'"
_ANY_ADDRESS = ("", "0.0.0.0", "::")


class Broker:
    """One broker: `await start()` / `await stop()`, or `async with`. Keyword arguments override
    fields of the Config (port=0 picks a free port; `port` then holds the real one). An embedded
    broker on an ephemeral AMQP port runs no management API unless a management_port is given,
    so test brokers never compete for 15672."""

    def __init__(self, config: Config | None = None, **overrides: Any) -> None:
        if overrides.get("port") == 0 and config is None:
            overrides.setdefault("management_port", 0)
            overrides.setdefault("prometheus_port", 0)
        self.config = replace(config or Config(), **overrides)
        self.node: Node | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._tls_server: asyncio.base_events.Server | None = None
        self.tls_port: int | None = None  # the AMQP TLS listener's port when it runs
        # Socket-level connections: a HeaderSniffer until the protocol header chose a front end,
        # then that front end's protocol (server.connection.AmqpServerProtocol for 0-9-1).
        self._connections: set[ClientSocket] = set()
        self.port: int | None = None
        self.journal: Any = None  # the store's journal when data_dir is not :memory:
        self.recovery: Any = None
        self.management: ManagementServer | None = None  # when the API runs
        self.management_port: int | None = None
        self.resources: Any = None  # engine.resources.ResourceMonitor once started
        self.spill: Any = None  # store.spill.SpillStore once started

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
        # TLS files are checked before anything starts: a bad option fails the start cleanly.
        tls = None
        if self.config.tls_port is not None or self.config.management_tls:
            from rabbitish.tls import server_context

            tls = server_context(self.config)
        self.node = Node(
            LoopScheduler(loop),
            vhosts=self.config.vhosts,
            users=self.config.users,
            codec=CODEC,
            half=HalfSettings(self.config.half_check_interval, self.config.half_check_max),
            transaction_timeout=self.config.transaction_timeout,
        )
        self.node.alarms.listen(self._alarms_changed)
        if not self.config.in_memory:
            from rabbitish.store import open_store

            self.journal, self.recovery = await open_store(
                self.config.data_dir,
                self.config.fsync == "always",
                self.node,
                CODEC,
                _recovery_progress(),
                self.config.store_backlog_limit,
                self.config.page_out_bytes,
            )
        self._start_limits()
        if self.config.definitions:
            from rabbitish.management.definitions import load_file

            try:
                load_file(self.node, self.config.definitions)
            except Exception:
                await self.stop()
                raise
        node, config, registry = self.node, self.config, self._connections
        # The AMQP port is bound first (its number is known) but accepts only once the
        # management API does, as in RabbitMQ: whoever sees 5672 open may call the API at once.
        self._server = await loop.create_server(
            lambda: HeaderSniffer(node, config, registry),
            host=self.config.host,
            port=self.config.port,
            reuse_address=True,
            start_serving=False,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        if self.config.tls_port is not None:
            assert tls is not None
            await self._start_tls(node, config, registry, tls)
        management = await self._open_management()
        await self._server.start_serving()
        if management is not None:
            await self._serve_management(management)

    async def _start_tls(
        self, node: Node, config: Config, registry: set[ClientSocket], context: ssl.SSLContext
    ) -> None:
        """The TLS listener: the same protocol sniffing as the plain one (0-9-1 and 1.0),
        behind the ssl module; a client certificate shows up as the peer's CN (EXTERNAL)."""
        assert self.loop is not None
        self._tls_server = await self.loop.create_server(
            lambda: HeaderSniffer(node, config, registry),
            host=self.config.host,
            port=self.config.tls_port,
            reuse_address=True,
            ssl=context,
            ssl_handshake_timeout=self.config.handshake_timeout,
        )
        self.tls_port = self._tls_server.sockets[0].getsockname()[1]

    def _start_limits(self) -> None:
        """The memory watermark and disk free limit (engine/resources.py), with the spill files
        that take message bodies under memory pressure (store/spill.py)."""
        from rabbitish import sysinfo
        from rabbitish.engine.resources import Probes, ResourceMonitor, parse_size, parse_watermark
        from rabbitish.store.spill import SpillStore

        assert self.node is not None
        config = self.config
        self.spill = spill = SpillStore(None if config.in_memory else f"{config.data_dir}/spill")
        disk = tempfile.gettempdir() if config.in_memory else config.data_dir
        probes = Probes(
            sysinfo.rss_bytes,
            lambda: sysinfo.disk_free_bytes(disk),
            sysinfo.release_free_memory,
        )
        self.resources = monitor = ResourceMonitor(
            self.node.alarms,
            self.node.scheduler,
            probes,
            parse_watermark(config.memory_high_watermark, sysinfo.total_memory_bytes()),
            config.memory_paging_ratio,
            parse_size(config.disk_free_limit),
        )
        monitor.on_paging = self._paging_changed
        monitor.after_sample = spill.collect
        self.node.use_limits(spill, monitor.published)
        monitor.start()

    def _paging_changed(self, paging: bool) -> None:
        """Memory passed the paging threshold (or fell back): bodies waiting in queues go to
        the spill files from now on (or stay in memory again)."""
        assert self.node is not None
        self.spill.paging = paging
        if paging:
            queues = [q for vhost in self.node.vhosts.values() for q in vhost.queues.values()]
            moved = self.spill.page_out_queues(queues)
            log.info("memory above the paging threshold: %d message bodies moved to disk", moved)

    def _alarms_changed(self) -> None:
        """Tell every connection; front ends that block publishers act on it."""
        for proto in list(self._connections):
            proto.alarms_changed()

    async def _open_management(self) -> ManagementPorts | None:
        """The management ports, accepting before the AMQP port does (as in RabbitMQ: whoever
        sees 5672 open may call the API at once); None when the API is off or its port is
        taken (logged: the broker runs without it)."""
        if not self.config.management_port:
            return None
        from rabbitish.management import open_management

        config = self.config
        try:
            return await open_management(config, config.management_port, config.prometheus_port)
        except OSError as err:
            log.warning(
                "management API not started on port %s: %s",
                config.management_port,
                err.strerror or err,
            )
            return None

    async def _serve_management(self, ports: ManagementPorts) -> None:
        """Load the API (in a worker thread while AMQP is already served) and serve
        it on its open ports."""
        from rabbitish.management import start_management

        assert self.node is not None and self.port is not None
        self.management = await start_management(self.node, self.config, self.port, ports)
        self.management_port = self.management.port
        self.management.api.tls_port = self.tls_port

    async def start_management(self, port: int = 0) -> int:
        """Serve the management HTTP API on `port` (0: any free port); returns the port."""
        if self.management is None:
            from rabbitish.management import open_management

            await self._serve_management(await open_management(self.config, port, 0))
        assert self.management is not None and self.management.port is not None
        return self.management.port

    async def stop(self, grace: float = 1.0) -> None:
        """Close the listener, send connection.close 320 to every client, give them `grace`
        seconds to answer, then drop whoever is left."""
        if self.management is not None:
            await self.management.stop()
            self.management = None
        for server in (self._server, self._tls_server):
            if server is not None:
                server.close()
        for proto in list(self._connections):
            proto.force_close(320, SHUTDOWN_TEXT)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self._connections and loop.time() < deadline:
            await asyncio.sleep(0.01)
        for proto in list(self._connections):
            if proto.transport is not None:
                proto.transport.abort()
        for server in (self._server, self._tls_server):
            if server is not None:
                await server.wait_closed()
        self._server = self._tls_server = None
        if self.resources is not None:
            self.resources.stop()
            self.resources = None
        if self.journal is not None:
            await self.journal.close()
            self.journal = None
        if self.spill is not None:
            self.spill.close()
            self.spill = None

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def _recovery_progress() -> Callable[[int, int], None]:
    """Log recovery progress of a large data dir: the first report, then at most one a second."""
    last = [float("-inf")]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0:
            last[0] = now
            log.info("recovering messages: %d of %d", done, total)

    return report
