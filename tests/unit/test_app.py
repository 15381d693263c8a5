"""What a broker loads to accept its first 0-9-1 connection, and what it leaves for first use:
the management server, the AMQP 1.0 bridge and its codec, the Spark connector, the full command
line and (on :memory:) the store's journal are imported only when something needs them, and
serving the management API loads no aiohttp (start-up time: benchmarks/startup.py,
docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent

# Loaded on first use only: never by importing rabbitish.app and starting a broker without a
# management port that takes its first 0-9-1 connection.
LAZY = (
    "aiohttp",
    "rabbitish.management.server",
    "rabbitish.bridge",
    "rabbitish.server.amqp10",
    "rabbitish.spark",
    "pyspark",
    "typer",
    "rich",
    # an in-memory broker imports only the store's spill files (memory pressure), not the store
    "rabbitish.store.journal",
    "rabbitish.store.writer",
    "rabbitish.store.recovery",
    "rabbitish.store.access",
    "rabbitish.store.ops",
)

SCRIPT = """
import asyncio, json, sys
from rabbitish.app import Broker

async def main():
    broker = Broker(port=0, data_dir=":memory:")
    await broker.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
    writer.write(b"AMQP\\x00\\x00\\x09\\x01")
    await reader.read(7)  # the first bytes of connection.start
    writer.close()
    before_10 = sorted(sys.modules)
    reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
    writer.write(b"AMQP\\x00\\x01\\x00\\x00")
    await reader.read(8)  # the 1.0 header back
    writer.close()
    await broker.stop()
    print(json.dumps({"before_10": before_10, "after_10": sorted(sys.modules)}))

asyncio.run(main())
"""


def _loaded(modules: list[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


def test_the_first_connection_loads_no_management_bridge_spark_or_cli():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout)
    assert [m for m in LAZY if _loaded(modules["before_10"], m)] == []
    # the first 1.0 header loads the bridge, and only that
    assert _loaded(modules["after_10"], "rabbitish.bridge")
    assert not _loaded(modules["after_10"], "aiohttp")


SERVING_THE_API = """
import asyncio, base64, json, sys, urllib.request
from rabbitish.app import Broker

async def main():
    async with Broker(port=0, data_dir=":memory:") as broker:
        port = await broker.start_management(0)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/overview",
            headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
        )
        loop = asyncio.get_running_loop()
        status = await loop.run_in_executor(None, lambda: urllib.request.urlopen(request).status)
    print(json.dumps({"status": status, "modules": sorted(sys.modules)}))

asyncio.run(main())
"""


def test_serving_the_management_api_loads_no_aiohttp():
    done = subprocess.run(
        [sys.executable, "-c", SERVING_THE_API],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["status"] == 200
    assert _loaded(found["modules"], "rabbitish.management.server")
    assert not _loaded(found["modules"], "aiohttp")
