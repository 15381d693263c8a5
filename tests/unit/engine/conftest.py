"""An engine node with no front end: the engine-level codec, time moved by the test."""

from __future__ import annotations

import pytest

from rabbitish.engine.clock import ManualScheduler
from rabbitish.engine.node import Node
from rabbitish.engine.vhost import VirtualHost
from tests.support.engine import CODEC


@pytest.fixture
def node() -> Node:
    return Node(ManualScheduler(), codec=CODEC)


@pytest.fixture
def vhost(node: Node) -> VirtualHost:
    return node.vhosts["/"]
