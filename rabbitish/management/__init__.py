"""RabbitMQ-compatible management HTTP API (the subset tools and test code use), served by
http_server on the broker's event loop. `open_management` binds its ports at once (they accept
before the AMQP port does, listener.py); `start_management` then imports the API in a worker
thread, so the AMQP listener, already serving, keeps answering while it loads, and serves the
API on those ports."""

from __future__ import annotations

import asyncio
import importlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rabbitish.management.listener import EarlyListener

if TYPE_CHECKING:
    from rabbitish.config import Config
    from rabbitish.engine.node import Node
    from rabbitish.management.server import ManagementServer

log = logging.getLogger("rabbitish")


@dataclass
class ManagementPorts:
    """The API's port and, when it could be bound, the Prometheus `/metrics` port."""

    api: EarlyListener
    prometheus: EarlyListener | None = None


async def open_management(config: Config, port: int, prometheus_port: int) -> ManagementPorts:
    """Bind the API on `config.host`:`port` (0: any free port; raises OSError when it cannot
    be bound) and, when `prometheus_port` is set, `/metrics` on a port of its own (a port that
    cannot be bound is logged and skipped)."""
    context = None
    if config.management_tls:
        from rabbitish.tls import server_context

        context = server_context(config)
    ports = ManagementPorts(EarlyListener())
    await ports.api.open(config.host, port, context)
    if prometheus_port:
        metrics = EarlyListener()
        try:
            await metrics.open(config.host, prometheus_port)
        except OSError as err:
            log.warning("metrics not served on port %s: %s", prometheus_port, err.strerror or err)
        else:
            ports.prometheus = metrics
    return ports


async def start_management(
    node: Node, config: Config, amqp_port: int, ports: ManagementPorts
) -> ManagementServer:
    """Serve the API on `ports` (open_management's). Client connections are read from
    `node.connections`."""
    loop = asyncio.get_running_loop()
    server_module = await loop.run_in_executor(
        None, importlib.import_module, "rabbitish.management.server"
    )
    from rabbitish.management.api import Api

    server = server_module.ManagementServer(Api(node, config, amqp_port))
    await server.start(ports.api)
    if ports.prometheus is not None:
        await server.start_prometheus(ports.prometheus)
    return server


__all__ = ["ManagementPorts", "open_management", "start_management"]
