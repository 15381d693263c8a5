"""The two brokers the matrix compares, each restartable in place.

rabbitish runs as a real `python -m rabbitish serve` process with a data directory
(tests/support/broker_process.py), so a restart is what a user sees: the process stops
(SIGTERM) and starts again on the same port and data. RabbitMQ is Debian's rabbitmq-server as a
throwaway node (tests/support/real_rabbitmq.py)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from compat_matrix.runner import Target


def _rabbitish_version() -> str:
    try:
        from importlib.metadata import version

        return version("rabbitish")
    except Exception:
        return "dev"


@contextlib.contextmanager
def rabbitish_target() -> Iterator[Target]:
    """A fresh rabbitish process with its own data directory, removed afterwards."""
    from tests.support.broker_process import BrokerProcess

    base = Path(tempfile.mkdtemp(prefix="compat-rabbitish-"))
    process = BrokerProcess(data_dir=base / "data", log=base / "serve.log", keep_port=True)
    try:
        process.start()
        yield Target("rabbitish", _rabbitish_version(), process.url, process.restart)
    finally:
        process.close()
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def rabbitmq_target() -> Iterator[Target]:
    """A throwaway RabbitMQ node (needs Debian's rabbitmq-server)."""
    from tests.support.real_rabbitmq import real_rabbitmq

    with real_rabbitmq() as node:
        yield Target("RabbitMQ", node.version, node.url, node.restart)


def rabbitmq_installed() -> bool:
    from tests.support.real_rabbitmq import rabbitmq_available

    return rabbitmq_available()
