"""RabbitMQ-compatible management HTTP API (the subset tools and test code use), served by
aiohttp on the broker's event loop. `start_management` imports aiohttp in a worker thread, so
the AMQP listener, already open, keeps answering while it loads."""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rabbitish.config import Config
    from rabbitish.engine.node import Node
    from rabbitish.management.server import ManagementServer


async def start_management(
    node: Node, config: Config, amqp_port: int, port: int
) -> ManagementServer:
    """Serve the API on `config.host`:`port` (0: any free port); raises OSError when the port
    cannot be bound. Client connections are read from `node.connections`."""
    loop = asyncio.get_running_loop()
    server_module = await loop.run_in_executor(
        None, importlib.import_module, "rabbitish.management.server"
    )
    from rabbitish.management.api import Api

    server = server_module.ManagementServer(Api(node, config, amqp_port))
    context = None
    if config.management_tls:
        from rabbitish.tls import server_context

        context = server_context(config)
    await server.start(config.host, port, context)
    return server


__all__ = ["start_management"]
