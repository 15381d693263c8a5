"""`rabbitish serve`: run the broker in the foreground until SIGINT / SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from rabbitish.app import Broker
from rabbitish.config import Config

log = logging.getLogger("rabbitish")


async def serve(config: Config) -> int:
    broker = Broker(config)
    await broker.start()
    log.info(
        "rabbitish accepting AMQP 0-9-1 connections on %s:%s (data: %s)",
        config.host,
        broker.port,
        config.data_dir,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    await broker.stop()
    return 0


def run(config: Config) -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    return asyncio.run(serve(config))
