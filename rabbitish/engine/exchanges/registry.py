"""Exchange types by name."""

from __future__ import annotations

from rabbitish.engine.exchanges.base import Exchange
from rabbitish.engine.exchanges.direct import DirectExchange
from rabbitish.engine.exchanges.fanout import FanoutExchange
from rabbitish.engine.exchanges.headers import HeadersExchange
from rabbitish.engine.exchanges.topic import TopicExchange

EXCHANGE_TYPES: dict[str, type[Exchange]] = {
    "direct": DirectExchange,
    "fanout": FanoutExchange,
    "topic": TopicExchange,
    "headers": HeadersExchange,
}
